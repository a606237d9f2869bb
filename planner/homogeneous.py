"""The homogeneous evaluation: one plan on a fleet of identical nodes (one pool) -> an `Evaluation`.

Layer: evaluate (docs/architecture.md); imports the cost model, the schema and `planner.setting`.
Resolves the instance into a `Setting` (`planner.setting.setting_from_instance`: SI units, presets and
defaults applied), the plan into a one-plan `PlanBatch`, scores it with `planner.cost.score.score`
and collects what a person needs to read it: the figures, the limits it breaks, and warnings about
assumptions the result leans on. The evaluation of a fleet of pools (`planner.fleet.evaluate`)
composes the public functions here: `violation_messages`, `plan_warnings`, `plan_envelope`, `finite`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from planner.cost import envelope, physics, quality_fit
from planner.cost.duration import SECONDS_PER_DAY
from planner.cost.score import BOTTLENECKS, CONSTRAINTS, score
from planner.cost.setting import PlanBatch, Setting
from planner.schema.instance import Instance
from planner.schema.plan import Plan
from planner.schema.sites import ignored_wan_rtt
from planner.setting import batch_from_plan, max_days, setting_from_instance, with_params

VALIDATED_PARAMS = 72e9          # largest published DiLoCo-style run over the internet (Covenant-72B)
DEMONSTRATED_COMPRESSION = 150   # Covenant-72B used ~146x pseudo-gradient compression


@dataclass
class Evaluation:
    """One scored plan: every figure (floats, units in the names), broken limits and warnings."""

    instance: Instance
    plan: Plan
    setting: Setting
    batch: PlanBatch
    values: dict[str, float]
    violations: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    max_days_source: str = ""
    envelope: list[dict] | None = None     # fitted quality model: each way the plan leaves its evidence (envelope.py)

    @property
    def feasible(self) -> bool:
        return not self.violations

    @property
    def bottleneck(self) -> str:
        return BOTTLENECKS[int(self.values["bottleneck"])]

    def to_dict(self) -> dict[str, Any]:
        """The whole result as plain JSON-able data."""
        return {
            "instance": self.instance.name,
            "plan": self.plan.model_dump(),
            "resolved": {"params": self.setting.params, "active_params": self.setting.active_params,
                         "stages": int(self.batch.stages[0]), "expert_parallel": self.batch.expert_parallel,
                         "precision": self.batch.precision, "target_flop": self.setting.target,
                         "target_kind": self.setting.target_kind, "max_days": self.setting.window_s / SECONDS_PER_DAY,
                         "max_days_source": self.max_days_source, "goodput": self.setting.goodput,
                         "assumptions": _assumption_summary(self.setting)},
            "feasible": self.feasible,
            "violations": self.violations,
            "warnings": self.warnings,
            "bottleneck": self.bottleneck,
            "values": {k: finite(x) for k, x in self.values.items()},
            **({} if self.envelope is None else {"envelope": self.envelope,
                                                 "envelope_search": envelope.on(self.setting.assumptions)}),
        }

    def to_frame(self):
        """One row (pandas DataFrame): the plan's fields, verdict and every figure."""
        from planner.frames import evaluation_frame
        return evaluation_frame(self)


def evaluate_pool(instance: Instance, plan: Plan, params: float | None = None) -> Evaluation:
    """Score one plan of one instance whose fleet is one pool (the plan must have passed `check_plan_against`).

    `params`: score a dense model of this many total parameters instead of the instance's
    (one of `search.params`, the candidate sizes; hidden size 0.03 sqrt(P)). The instance's fleet is
    one pool of identical nodes (a fleet of pools: `planner.fleet.evaluate.evaluate_mixed`, which
    composes this module's public functions)."""
    setting = setting_from_instance(instance)
    if params is not None:
        setting = with_params(setting, params)
    batch = batch_from_plan(setting, plan)
    raw = score(setting, batch, fleet_nodes=instance.fleet.nodes)
    values = {k: float(np.asarray(v).ravel()[0]) for k, v in raw.items()}
    evaluation = Evaluation(instance, plan, setting, batch, values, max_days_source=max_days(instance)[1])
    evaluation.violations = violation_messages(evaluation)
    evaluation.warnings = plan_warnings(evaluation)
    if quality_fit.fitted(setting.assumptions):
        evaluation.envelope = plan_envelope(setting, batch, values)
    return evaluation


def plan_envelope(setting: Setting, batch: PlanBatch, values: dict[str, float]) -> list[dict]:
    """`envelope.leaves` of one scored plan (tokens per parameter at the target: C / (6 P_act) / P)."""
    a = setting.assumptions
    return envelope.leaves(a, setting.params, setting.target_tokens / setting.params, values,
                           float(batch.compression[0]), a.bits_per_value(batch.precision), bool(batch.streaming[0]),
                           float(batch.regional_rounds[0]) if batch.mode == "hierarchical" else 1.0,
                           float(batch.stages[0]), float(batch.activation_compression[0]))


def violation_messages(e: Evaluation) -> list[str]:
    v, s, b = e.values, e.setting, e.batch
    messages = []
    for name in CONSTRAINTS:
        if not v[f"violates:{name}"]:
            continue
        if name == "memory-cap":
            detail = (f"training state {v['state_bytes_per_node'] / 1e9:,.1f} GB per node exceeds node memory "
                      f"{s.memory_bytes / 1e9:,.1f} GB (at least {int(v['min_stages'])} pipeline stages needed)")
        elif name == "node-limit":
            cap = min(x for x in (e.instance.fleet.nodes, s.max_nodes) if x is not None)
            detail = f"{int(b.nodes[0])} nodes used, at most {cap} available"
        elif name == "structure":
            detail = _structure_message(b, v, s.assumptions)
        elif name == "duration-limit":
            detail = (f"target reached after {v['time_to_target_s'] / SECONDS_PER_DAY:,.1f} days"
                      + (f" ({v['training_time_s'] / SECONDS_PER_DAY:,.1f} training at goodput {s.goodput:g})"
                         if s.goodput < 1 else "") + f", limit {s.window_s / SECONDS_PER_DAY:,.1f} days")
        else:
            detail = f"hardware costs ${v['cost_usd']:,.0f}, budget ${s.budget_usd:,.0f}"
        messages.append(f"{name}: {detail}")
    return messages


def _structure_message(b: PlanBatch, v: dict[str, float], a) -> str:
    if b.mode in ("pp_group", "pipeline_wan") and not physics.schedule_allowed(a, b.stages, b.micro_batches, b.schedule)[0]:
        field = "plan.pipeline_schedule" if int(b.schedule[0]) else "the profile's pipeline_schedule"
        return f"{field}: " + physics.dualpipe_problem(int(b.stages[0]), int(b.micro_batches[0]))
    if b.mode == "flat":
        return (f"a replica sharded over zero_shards = {int(b.zero_shards[0])} nodes needs at least that many, "
                f"got {int(b.nodes[0])}")
    if b.mode == "pipeline_wan":
        return f"a pipeline over the WAN needs at least 2 stages and {int(b.stages[0])} nodes, got {int(b.nodes[0])}"
    unit = "group_size" if b.mode == "hierarchical" else "stages"
    size = int((b.group_size if b.mode == "hierarchical" else b.stages)[0])
    return f"{b.mode} needs at least 2 groups: floor(nodes / {unit}) = floor({int(b.nodes[0])} / {size}) = {int(v['groups'])}"


def plan_warnings(e: Evaluation) -> list[str]:
    a, b, v, s = e.setting.assumptions, e.batch, e.values, e.setting
    out = [w for w in [ignored_wan_rtt(e.instance)] if w]
    cr = float(b.compression[0])
    if v["synchronised"] and cr > 100 and not a.error_feedback:
        out.append(f"compression {cr:g}x without error feedback: quality beyond 100x is poorly supported")
    if v["synchronised"] and cr > DEMONSTRATED_COMPRESSION:
        out.append(f"compression {cr:g}x is beyond what has been demonstrated at scale (~146x, Covenant-72B)")
    if a.mfu > 0.6:
        out.append(f"MFU {a.mfu:.2f} is above 0.6, beyond what large runs report")
    if a.demonstrated_warnings and v["synchronised"]:
        out += physics.extrapolation_warnings(float(b.inner_steps[0]), cr, v["replicas"],
                                              float(b.regional_rounds[0]) if b.mode == "hierarchical" else 1.0)
    for accelerator in _accelerators(e):
        if b.precision in physics.compute_model_precisions(a, accelerator, s.active_params < s.params):
            continue                                            # u from the compute model
        row = physics.table_mfu(accelerator) if a.mfu_from_table else {}
        if row is None:
            out.append(f"no achieved-MFU entry in models/mfu.json for {accelerator or 'this hardware'!r}: "
                       f"MFU {a.mfu:g} (the profile's) is used")
        elif a.mfu_from_table and b.precision not in row:      # e.g. B200: an fp8 figure only
            out.append(f"no {b.precision} achieved-MFU figure in models/mfu.json for {accelerator!r}: MFU "
                       f"{a.mfu:g} (the profile's) is used at {b.precision}")
    if a.failures and s.goodput <= physics.MIN_GOODPUT:
        out.append("failures and churn leave no time for training (goodput 0): the fleet fails faster than it "
                   "can checkpoint and restart")
    if b.mode == "pipeline_wan":
        out.append("pipeline over the WAN: every micro-batch pays WAN latency; a last resort")
    if s.params > VALIDATED_PARAMS:
        out.append(f"model of {s.params / 1e9:,.0f}B parameters is beyond validated scale (largest decentralized "
                   "DiLoCo run: 72B); the efficiency and replica laws are extrapolated")
    n = int(b.nodes[0])
    if b.mode == "hierarchical" and n % int(b.group_size[0]):
        out.append(f"{n % int(b.group_size[0])} of {n} nodes belong to no regional group; as in the reference, "
                   "they still count towards throughput and replicas")
    if b.mode == "pp_group" and n % int(b.stages[0]):
        out.append(f"{n % int(b.stages[0])} of {n} nodes are idle: {n} is not a multiple of {int(b.stages[0])} stages")
    if b.mode == "pipeline_wan" and n > int(b.stages[0]):
        out.append(f"{n - int(b.stages[0])} of {n} nodes are idle in a single pipeline")
    return out


def _accelerators(e: Evaluation) -> list[str]:
    """The accelerator models the plan runs on: the fleet's, or those of the pools it uses, each once."""
    if getattr(e, "pool_rows", None):
        return list(dict.fromkeys(r["accelerator"] for r in e.pool_rows if r["nodes_used"]))
    return [e.instance.hardware.accelerator]


def finite(x: float) -> float | str | None:
    """JSON has no infinity or NaN: infinity becomes "inf", NaN (no meaning) null."""
    if x != x:
        return None
    if x in (float("inf"), float("-inf")):
        return "inf" if x > 0 else "-inf"
    return x


def _assumption_summary(s: Setting) -> dict[str, Any]:
    a = s.assumptions
    return {"profile": a.profile, "scenario": a.scenario, "straggler": a.straggler,
            "error_feedback": a.error_feedback, "replica_penalty": a.replica_penalty, "mfu": a.mfu,
            **({"mfu_fp8": a.mfu_fp8} if a.mfu_fp8 else {})}
