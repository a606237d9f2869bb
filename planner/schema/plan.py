"""A plan: one choice of every decision (mode, nodes, precision, H, Cr, ...) to evaluate.

`load_plan(path)` / `parse_plan(data)` check the plan on its own (types, ranges and the
per-mode rules); `planner.evaluate.check_plan_against(instance, plan)` checks it against an instance.
"""

from pathlib import Path
from typing import Any

from typing import Annotated

from pydantic import BeforeValidator, Field, ValidationError, model_serializer, model_validator

from planner.cost.assumptions import PIPELINE_SCHEDULES, PRECISIONS
from planner.schema.errors import InputError, Problem
from planner.schema.instance import EXPERT_PARALLEL, MODES, PIPELINE_MODES, Instance
from planner.schema.limits import (MAX_INNER_STEPS, MAX_MICRO_BATCHES, MAX_NODES, MAX_RATIO, MAX_REGIONAL_ROUNDS,
                                   MAX_SITES, MAX_STAGES)
from planner.schema.strict import (Bool, Choice, Int, List, Num, StrictModel, Text, fail, integer_error, load_file,
                                   problems_from, raise_problems, show)


def _check_pool_nodes(value: Any) -> Any:
    """{"pool name": nodes used >= 0, ...}: a non-empty object of whole counts."""
    if not isinstance(value, dict) or not value:
        fail(f"must be a non-empty object of pool name -> nodes used, e.g. {{\"a100\": 48, \"h100\": 16}}, "
             f"got {show(value)}")
    problems = [Problem(str(k), m) for k, v in value.items() if (m := integer_error(v, None, 0, None, "", MAX_NODES))]
    if problems:
        raise_problems(problems)
    return {k: int(v) for k, v in value.items()}


DTPLAN_DECISIONS = ("pipeline_schedule", "zero_shards")     # left out of a dump when unset
UNSET_NOT_DUMPED = DTPLAN_DECISIONS + ("pool_nodes", "sync_rule", "regions")   # likewise a uniform fleet's pool_nodes
# The decisions each mode does not have (docs/cost_model.md: a pipeline over the WAN never syncs replicas; only
# hierarchical DiLoCo has groups and regional rounds; only the pipeline modes have stages, micro-batches and
# activation compression). A dump leaves them out while they hold their default, so a plan reads as its mode;
# a value the user gave that differs from the default is kept (nothing given is lost).
NOT_IN_MODE = {
    "flat": ("group_size", "regional_rounds", "stages", "micro_batches", "activation_compression"),
    "hierarchical": ("stages", "micro_batches", "activation_compression"),
    "pp_group": ("group_size", "regional_rounds"),
    "pipeline_wan": ("inner_steps", "compression", "streaming", "group_size", "regional_rounds"),
}


class Plan(StrictModel):
    """One plan. Symbols as in docs/cost_model.md: H, Cr, S, k, R, M, Ca."""

    mode: Choice(*MODES) = Field(description="flat | hierarchical | pp_group | pipeline_wan (required).")
    nodes: Int(ge=1, cap=MAX_NODES) = Field(description="Nodes used N (required).")
    precision: Choice(*PRECISIONS) = Field("fp16", description="Training precision. Default fp16.")
    inner_steps: Int(ge=1, cap=MAX_INNER_STEPS) = Field(1, description="Inner steps between syncs H. Default 1.")
    compression: Num(ge=1, cap=MAX_RATIO) = Field(1.0, description="Pseudo-gradient compression ratio Cr. Default 1.")
    streaming: Bool = Field(True, description="Overlap sync with compute (streaming DiLoCo). Default true.")
    stages: Int(ge=1, cap=MAX_STAGES) | None = Field(
        None, description="Pipeline stages S (pp_group, pipeline_wan only). Default None = fewest that fit.")
    group_size: Int(ge=2, cap=MAX_NODES) | None = Field(None, description="Nodes per group k (hierarchical only, required there).")
    regional_rounds: Int(ge=1, cap=MAX_REGIONAL_ROUNDS) = Field(1, description="Regional rounds per global sync R (hierarchical). Default 1.")
    micro_batches: Int(ge=1, cap=MAX_MICRO_BATCHES) = Field(8, description="Pipeline micro-batches M. Default 8.")
    activation_compression: Num(ge=1, cap=MAX_RATIO) = Field(4.0, description="Activation compression Ca (pipelines). Default 4.")
    pipeline_schedule: Choice(*PIPELINE_SCHEDULES) | None = Field(
        None, description="gpipe | 1f1b | interleaved | zero_bubble | dualpipe (pipeline modes). Default None = the assumption "
                          "profile's pipeline_schedule (the dtplan profile's planner chooses it).")
    zero_shards: Int(ge=1, cap=MAX_NODES) | None = Field(
        None, description="Co-located nodes Z over which one flat replica shards its training state (ZeRO-3/FSDP; "
                          "flat only, dense models). Default None = 1, no sharding (the dtplan profile's planner "
                          "chooses it).")
    expert_parallel: Choice(*EXPERT_PARALLEL) | None = Field(
        None, description="none | regional | global (MoE only). Default None = 'global' for MoE in flat and "
                          "hierarchical modes, 'none' in pipeline modes (experts across nodes are not modelled there; "
                          "assumptions.constants.stage_expert_parallel spreads a pp_group stage's experts over its "
                          "groups' servers).")
    description: Text = Field("", description="Free text. Default ''.")
    pool_nodes: Annotated[dict[str, int], BeforeValidator(_check_pool_nodes)] | None = Field(
        None, description="Nodes used of each pool, by pool name (fleet.pools; docs/fleet.md); they add up to "
                          "nodes. Required for a fleet of pools, not for a uniform fleet. Default None.")
    regions: List(List(Text, max_len=MAX_SITES), max_len=MAX_SITES) | None = Field(
        None, description="The plan's regions, each a list of sites (network.regions = 'chosen'; docs/fleet.md "
                          "section 3): a partition of the sites the plan uses. Default None.")
    sync_rule: Choice("straggler", "proportional") | None = Field(
        None, description="Fleet of pools: 'straggler' (every replica runs H inner steps, the fast wait) or "
                          "'proportional' (pool p runs H_p = floor(H t_slowest / t_p), docs/fleet.md). "
                          "Default None = 'straggler'.")

    @model_serializer(mode="wrap")
    def _without_unset_dtplan_decisions(self, handler):
        """The dtplan decisions (pipeline_schedule, zero_shards) and a uniform fleet's pool_nodes
        appear in a plan's dump only when set; the decisions the plan's mode does not have
        (NOT_IN_MODE) only when given a value other than their default."""
        data = handler(self)
        if isinstance(data, dict):
            for key in UNSET_NOT_DUMPED:
                if data.get(key, 0) is None:
                    del data[key]
            for key in NOT_IN_MODE.get(self.mode, ()):
                if key in data and data[key] == type(self).model_fields[key].default:
                    del data[key]
        return data

    @model_validator(mode="after")
    def _mode_rules(self) -> "Plan":
        problems = mode_problems(self)
        if problems:
            raise_problems(problems)
        return self

    @property
    def schedule_code(self) -> int:
        """The evaluator's schedule code: 0 for the profile's, else 1 + its place in PIPELINE_SCHEDULES."""
        return 0 if self.pipeline_schedule is None else PIPELINE_SCHEDULES.index(self.pipeline_schedule) + 1

    def expert_parallel_for(self, is_moe: bool) -> str:
        """The scope in effect: 'none' for a dense model or a pipeline mode unless given, else 'global'."""
        if not is_moe:
            return "none"
        if self.expert_parallel is None:
            return "none" if self.mode in PIPELINE_MODES else "global"
        return self.expert_parallel


def mode_problems(plan: Plan) -> list[Problem]:
    """The per-mode rules (paths relative to the plan)."""
    problems = []
    mode = plan.mode
    if mode == "hierarchical":
        if plan.group_size is None:
            problems.append(Problem("group_size", "required for mode 'hierarchical'"))
        elif plan.nodes // plan.group_size < 2:
            problems.append(Problem("group_size", f"mode 'hierarchical' needs at least 2 groups, got nodes // "
                                                  f"group_size = {plan.nodes} // {plan.group_size} = "
                                                  f"{plan.nodes // plan.group_size}"))
    elif plan.group_size is not None:
        problems.append(Problem("group_size", f"only for mode 'hierarchical', not {mode!r}"))
    if plan.stages is not None and mode not in PIPELINE_MODES:
        problems.append(Problem("stages", f"only for modes 'pp_group' and 'pipeline_wan', not {mode!r}"))
    if plan.pipeline_schedule is not None and mode not in PIPELINE_MODES:
        problems.append(Problem("pipeline_schedule", f"only for modes 'pp_group' and 'pipeline_wan', not {mode!r}"))
    if plan.zero_shards not in (None, 1) and mode not in ("flat", "hierarchical"):
        problems.append(Problem("zero_shards", f"only for modes 'flat' and 'hierarchical', not {mode!r}"))
    if plan.zero_shards not in (None, 1) and mode == "hierarchical" and plan.group_size is not None \
            and (plan.group_size % plan.zero_shards or plan.group_size // plan.zero_shards < 2):
        problems.append(Problem("zero_shards", f"must divide group_size ({plan.group_size}) into at least 2 "
                                               f"replicas, got {plan.zero_shards}"))
    if plan.expert_parallel == "regional" and mode != "hierarchical":
        problems.append(Problem("expert_parallel", f"'regional' needs mode 'hierarchical' (its groups are the "
                                                   f"regions), not {mode!r}"))
    return problems


def model_plan_problems(instance: Instance, plan: Plan) -> list[Problem]:
    """Problems of `plan` with the instance's model (MoE rules); [] if none."""
    problems = []
    if not instance.model.is_moe and plan.expert_parallel is not None:
        problems.append(Problem("plan.expert_parallel", f"only for a mixture-of-experts model; the model is dense, "
                                                        f"got {show(plan.expert_parallel)}"))
    if instance.model.is_moe and plan.zero_shards not in (None, 1):
        problems.append(Problem("plan.zero_shards", f"ZeRO-3 sharding is modelled for dense models only; the model "
                                                    f"is a mixture of experts, got {plan.zero_shards}"))
    if plan.zero_shards is not None and plan.zero_shards > plan.nodes:
        problems.append(Problem("plan.zero_shards", f"must be <= plan.nodes ({plan.nodes}), got {plan.zero_shards}"))
    c = instance.assumptions.constants      # planner/cost/stage_shards.py: K, and E servers of a stage's experts
    shards, name = c.get("stage_state_shards", 1), "stage_state_shards"
    if c.get("stage_expert_parallel") and instance.model.is_moe and instance.hardware is not None:
        servers = c.get("expert_parallel_degree", 0) / instance.hardware.accelerators_per_node
        if servers > max(shards, 1):
            shards, name = servers, "expert_parallel_degree / accelerators_per_node"
    if shards > 1 and plan.mode == "pp_group" and plan.inner_steps != 1:
        problems.append(Problem("plan.inner_steps", f"must be 1 with assumptions.constants.{name} = "
                                                    f"{show(shards)} (the groups share their optimizer state or "
                                                    f"experts, so they sync every step), got {plan.inner_steps}"))
    if shards > 1 and plan.mode == "pp_group" and plan.stages and plan.nodes // plan.stages < shards:
        problems.append(Problem("plan.nodes", f"must hold at least assumptions.constants.{name} = "
                                              f"{show(shards)} pipeline groups of plan.stages ({plan.stages}) nodes, "
                                              f"got {plan.nodes} ({plan.nodes // plan.stages} groups)"))
    if instance.model.is_moe and plan.mode in PIPELINE_MODES and plan.expert_parallel not in (None, "none"):
        problems.append(Problem("plan.expert_parallel", "'regional' and 'global' spread the experts across the "
                                                        "plan's nodes, which pipeline modes do not model: set it to "
                                                        "'none' or leave it unset (to spread each stage's experts "
                                                        "over the servers of its data-parallel groups in pp_group, "
                                                        "set assumptions.constants.stage_expert_parallel and "
                                                        f"expert_parallel_degree), got {plan.expert_parallel!r}"))
    return problems


def parse_plan(data: Any, source: str = "<dict>") -> Plan:
    """Validate raw plan data (parsed JSON); InputError listing every problem."""
    try:
        return Plan.model_validate(data)
    except ValidationError as exc:
        raise InputError(problems_from(exc, Plan), source) from None


def load_plan(path: str | Path) -> Plan:
    """Read and validate a plan JSON file; InputError (prefixed by the file) on any problem."""
    return load_file(path, parse_plan)
