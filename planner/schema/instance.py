"""The instance: what to train, on which fleet, over which network, within which limits.

`load_instance(path)` / `parse_instance(data)` validate strictly and report every
problem at once (`InputError`). Units are in the field names: `_mbps` megabits per
second, `_ms` milliseconds, `_gb` 1e9 bytes, `_usd` US dollars, `max_days` days;
parameter and token counts are raw counts (7e9, not 7).

One module of ~600 lines (issue 26: a module over ~500 lines says why): the instance is one
pydantic model tree whose sections check each other (`cross_problems`: fleet against limits and
search); the sections' leaf types live in `planner.schema.strict`, `limits` and `sites`.
"""

import json
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BeforeValidator, Field, ValidationError, model_validator

from planner.presets_dir import bundled_models_dir
from planner.schema.catalog import HardwareSpec, inline_hardware_hint, load_hardware, load_llm
from planner.cost.assumptions import (BOOL_CONSTANTS, CHOICE_CONSTANTS, NUMERIC_FIELDS, PHYSICS_ZERO_ALLOWED,
                                      PRECISIONS, SCENARIOS, SETTABLE_FIELDS,
                                      STRAGGLER_STRATEGIES, TABLE_FIELDS, Assumptions, apply_overrides, load_profile,
                                      profile_names)
from planner.schema.errors import InputError, Problem
from planner.schema.limits import MAX_SITE_LINKS, MAX_SITES
from planner.schema.sites import Site, SiteLink, pool_site_problems, with_site_references
from planner.schema.limits import (MAX_BATCH_TOKENS, MAX_BUDGET_USD, MAX_DAYS, MAX_EXPONENT, MAX_FLOP, MAX_GROWTH,
                                   MAX_HIDDEN_SIZE, MAX_LIST, MAX_MBPS, MAX_MOE_LAYERS, MAX_NODES, MAX_NUMBER,
                                   MAX_PARAMS, MAX_PRICE_USD, MAX_RATIO, MAX_RTT_MS, MAX_SIZES, MAX_TOKENS)
from planner.schema.strict import (Bool, Choice, Int, List, Num, StrictModel, Text, choice_error, did_you_mean, fail,
                                   fmt, load_file, made_by, number_error, problems_from, raise_problems, show)

MODES = ("flat", "hierarchical", "pp_group", "pipeline_wan")
PIPELINE_MODES = ("pp_group", "pipeline_wan")
EXPERT_PARALLEL = ("none", "regional", "global")
OBJECTIVES = ("min_time", "max_compute", "min_cost")
DEFAULT_MAX_DAYS = 547.875          # the calculator's 1.5 years of 365.25 days
DEFAULT_MOE_LAYERS = 32
MIN_PARAMS = 1e6                    # alpha(P) is singular at 1e4 and meaningless below ~1e6
_PARAMS_HINT = " (a raw parameter count, e.g. 7e9)"


# -- model ------------------------------------------------------------------------


def _known_llm(preset: str) -> str:
    try:
        load_llm(preset)
    except KeyError as exc:
        fail(exc.args[0])
    except InputError as exc:
        fail(f"preset {preset!r} has errors in its file: " + "; ".join(map(str, exc.problems)))
    return preset


class ModelSpec(StrictModel):
    """The model to train: a preset (models/llm), explicit sizes, or a preset with overrides.

    After validation the sizes are resolved: `active_params` = `params` for a dense
    model, `moe_layers` = 0 for a dense model.
    """

    preset: Annotated[str, AfterValidator(_known_llm)] | None = Field(
        None, description="LLM preset id (models/llm); its sizes fill the fields not given.")
    params: Num(ge=MIN_PARAMS, hint=_PARAMS_HINT, cap=MAX_PARAMS) | None = Field(
        None, description="Total parameters P, raw count >= 1e6. Required unless preset.")
    active_params: Num(ge=MIN_PARAMS, hint=_PARAMS_HINT, cap=MAX_PARAMS) | None = Field(
        None, description="Parameters used per token (MoE), <= params. Default: params (dense).")
    moe_layers: Int(ge=0, cap=MAX_MOE_LAYERS) | None = Field(
        None, description="MoE layers (>= 1 for MoE). Default: 32 for MoE, 0 for dense.")
    hidden_size: Num(gt=0, cap=MAX_HIDDEN_SIZE) | None = Field(
        None, description="Hidden size h. Default None (the cost model uses 0.03 * sqrt(P)).")

    @model_validator(mode="before")
    @classmethod
    def _fill_from_preset(cls, data: Any) -> Any:
        """Copy the preset's sizes into the fields the user did not give."""
        if not (isinstance(data, dict) and isinstance(data.get("preset"), str)):
            return data
        try:
            spec = load_llm(data["preset"])
        except (KeyError, InputError):
            return data                      # reported by the `preset` field check
        sizes = {k: getattr(spec, k) for k in ("params", "active_params", "moe_layers", "hidden_size")}
        return {**{k: v for k, v in sizes.items() if v is not None}, **data}

    @model_validator(mode="after")
    def _resolve(self) -> "ModelSpec":
        if self.params is None:
            fail("required field missing (give params, or a preset)", "params")
        active = self.params if self.active_params is None else self.active_params
        problems = []
        if active > self.params:
            problems.append(Problem("active_params", f"must be <= params ({fmt(self.params)}), got {show(active)}"))
        is_moe = active < self.params
        if self.moe_layers == 0 and is_moe:
            problems.append(Problem("moe_layers", "must be >= 1 for a mixture-of-experts model, got 0"))
        if self.moe_layers and not is_moe:
            problems.append(Problem("moe_layers", f"only for a mixture-of-experts model (active_params < params), "
                                                  f"got {self.moe_layers} for a dense model"))
        if problems:
            raise_problems(problems)
        layers = self.moe_layers if self.moe_layers is not None else (DEFAULT_MOE_LAYERS if is_moe else 0)
        object.__setattr__(self, "active_params", active)    # resolve in place (frozen model)
        object.__setattr__(self, "moe_layers", layers)
        return self

    @property
    def is_moe(self) -> bool:
        """Mixture of experts: fewer parameters per token than in total."""
        return self.active_params < self.params


# -- training, fleet, network, limits ---------------------------------------------


class Training(StrictModel):
    """How much to train. Neither tokens nor target_flop: the cost model's default target."""

    local_batch_tokens: Int(ge=1, cap=MAX_BATCH_TOKENS) = Field(131072, description="Tokens per inner step per replica. Default 131072.")
    tokens: Num(gt=0, cap=MAX_TOKENS) | None = Field(None, description="Training tokens D. Default None. Not with target_flop.")
    target_flop: Num(gt=0, cap=MAX_FLOP) | None = Field(None, description="Target compute in FLOP. Default None. Not with tokens.")
    target_kind: Choice("c_local", "c_quality") = Field(
        "c_local", description="Whether target_flop counts local compute or quality-adjusted compute, and which of "
                   "them max_compute maximises. Default c_local.")

    @model_validator(mode="after")
    def _one_target(self) -> "Training":
        if self.tokens is not None and self.target_flop is not None:
            fail(f"give at most one of tokens and target_flop, got both "
                 f"(tokens={show(self.tokens)}, target_flop={show(self.target_flop)})")
        return self


def _hardware_ref(value: Any) -> Any:
    """A preset id becomes its HardwareSpec; an object is validated as an inline spec."""
    if isinstance(value, str):
        try:
            return load_hardware(value)
        except KeyError as exc:
            fail(f"{exc.args[0]}; {inline_hardware_hint()}")
        except InputError as exc:
            fail(f"preset {value!r} has errors in its file: " + "; ".join(map(str, exc.problems)))
    if isinstance(value, (dict, HardwareSpec)):
        return value
    fail(f"must be a hardware preset id (e.g. '16xH100-SXM') or an inline hardware object, got {show(value)}")


class Pool(StrictModel):
    """One pool of a mixed fleet: `count` nodes of one hardware type, at one site (optional)."""

    name: Text | None = Field(None, description="Pool name, unique in the fleet. Default: the hardware id "
                                                "(with '#i' appended when two unnamed pools share it).")
    hardware: Annotated[HardwareSpec, BeforeValidator(_hardware_ref, json_schema_input_type=str | HardwareSpec)] = Field(
        description="Hardware preset id (models/hardware) or an inline hardware object (required).")
    count: Int(ge=1, cap=MAX_NODES) = Field(description="Nodes of this pool available (required), >= 1.")
    price_usd_per_accelerator: Num(ge=0, cap=MAX_PRICE_USD) | None = Field(
        None, description="Overrides the hardware's price per accelerator for this pool, USD. Default None.")
    site: Text | None = Field(None, description="Site of the pool (a name of network.sites when sites are given). "
                                                "Default None (one site for the whole fleet).")

    @property
    def priced_hardware(self) -> HardwareSpec:
        """The pool's hardware with its price override applied."""
        price = self.price_usd_per_accelerator
        hw = self.hardware
        return hw if price is None else hw.model_copy(update={"price_usd_per_accelerator": price})


class Fleet(StrictModel):
    """The nodes available: one hardware type and a count (optionally a price override), or a
    list of pools of different hardware (`pools`, docs/fleet.md). Exactly one of the two forms."""

    hardware: Annotated[HardwareSpec, BeforeValidator(_hardware_ref, json_schema_input_type=str | HardwareSpec)] | None = Field(
        None, description="Hardware preset id (models/hardware) or an inline hardware object. Required unless pools.")
    nodes: Int(ge=1, cap=MAX_NODES) | None = Field(
        None, description="Fleet size: nodes available. Required with hardware; with pools it is derived (the sum "
                          "of their counts) and must not be given.")
    pools: List(Pool) | None = Field(
        None, description="Pools of a mixed fleet (not with hardware, nodes or price_usd_per_accelerator); "
                          "the planner chooses how many nodes of each to use (docs/fleet.md). Default None.")
    price_usd_per_accelerator: Num(ge=0, cap=MAX_PRICE_USD) | None = Field(
        None, description="Overrides the hardware's price per accelerator, USD. Default None (keep it).")
    sync_rule: Choice("straggler", "proportional", "auto") = Field(
        "straggler", description="Pools only: how replicas of pools of unequal speed synchronise (docs/fleet.md): "
                                 "'straggler' (one H, the fast wait), 'proportional' (pool p runs H_p inner steps "
                                 "in proportion to its speed) or 'auto' (the planner picks the better). "
                                 "Default 'straggler'.")
    goodput: Num(gt=0, le=1, hint=" (the fraction of wall-clock spent training, e.g. 0.9)") = Field(
        1.0, description="Fraction of wall-clock the fleet spends making training progress, (0, 1]: "
                         "availability x (1 - restart, checkpoint and rollback overhead); downtime and node "
                         "churn the static model does not see. Wall-clock = training time / goodput. Default 1.")

    @model_validator(mode="after")
    def _one_form(self) -> "Fleet":
        """Exactly one of (hardware + nodes) or pools; with pools, nodes is their total."""
        if self.pools is None and self.sync_rule != "straggler":
            raise_problems([Problem("sync_rule", f"only for a fleet of pools (fleet.pools), got {self.sync_rule!r}")])
        if self.pools is None:
            hint = "" if self.hardware is not None or self.nodes is not None else " (give hardware and nodes, or pools)"
            problems = [Problem(k, "required field missing" + hint)
                        for k in ("hardware", "nodes") if getattr(self, k) is None]
            if problems:
                raise_problems(problems)
            return self
        problems = [Problem(k, f"not with pools: give it per pool (fleet.pools[i].{k})"
                            if k == "price_usd_per_accelerator" else
                            "not with pools (a fleet is one hardware and a count, or a list of pools)")
                    for k in ("hardware", "nodes", "price_usd_per_accelerator") if getattr(self, k) is not None]
        seen: dict[str, int] = {}
        for i, pool in enumerate(self.pools):
            if pool.name is not None and pool.name in seen:
                problems.append(Problem(f"pools[{i}].name", f"duplicate of fleet.pools[{seen[pool.name]}].name "
                                                            f"({pool.name!r}); pool names must be unique"))
            if pool.name is not None:
                seen.setdefault(pool.name, i)
        total = sum(p.count for p in self.pools)
        if total > MAX_NODES:
            problems.append(Problem("pools", f"the counts add up to {total:,} nodes, more than dtplan's bound "
                                             f"of {MAX_NODES:,}"))
        if problems:
            raise_problems(problems)
        object.__setattr__(self, "nodes", total)       # derived: the fleet size (frozen model)
        return self

    @property
    def is_mixed(self) -> bool:
        """A fleet given as pools (even of one pool): planned by planner.fleet / planner.solvers.mixed."""
        return self.pools is not None

    def pool_labels(self) -> list[str]:
        """Each pool's name: its own, else its hardware id (with '#i' when unnamed pools share an id
        or the id is another pool's name)."""
        if self.pools is None:
            return []
        named = {p.name for p in self.pools if p.name is not None}
        ids = [p.hardware.id for p in self.pools if p.name is None]
        return [p.name if p.name is not None else
                (p.hardware.id if ids.count(p.hardware.id) == 1 and p.hardware.id not in named else f"{p.hardware.id}#{i}")
                for i, p in enumerate(self.pools)]

    def precision_problems(self, precisions: list[str]) -> list[Problem]:
        """search.precisions the fleet's hardware cannot run (with pools: that no pool supports)."""
        if self.pools is None:
            hw = self.hardware
            return [Problem(f"search.precisions[{i}]", f"hardware {hw.id!r} does not support {p!r}; "
                                                       f"supported: {', '.join(hw.precisions)}")
                    for i, p in enumerate(precisions) if p not in hw.precisions]
        supported = sorted({q for pool in self.pools for q in pool.hardware.precisions})
        return [Problem(f"search.precisions[{i}]", f"no pool of fleet.pools supports {p!r}; supported by some "
                                                   f"pool: {', '.join(supported)}")
                for i, p in enumerate(precisions) if p not in supported]


class Wan(StrictModel):
    """Per-node wide-area link."""

    up_mbps: Num(gt=0, cap=MAX_MBPS) = Field(100.0, description="Upload bandwidth per node, Mbit/s. Default 100.")
    down_mbps: Num(gt=0, cap=MAX_MBPS) = Field(100.0, description="Download bandwidth per node, Mbit/s. Default 100.")
    rtt_ms: Num(ge=0, cap=MAX_RTT_MS) = Field(100.0, description="Round-trip time, ms. Default 100.")


class Link(StrictModel):
    """A symmetric link (regional between nodes of a group, or between pipeline stages)."""

    mbps: Num(gt=0, cap=MAX_MBPS) = Field(1000.0, description="Bandwidth, Mbit/s. Default 1000.")
    rtt_ms: Num(ge=0, cap=MAX_RTT_MS) = Field(20.0, description="Round-trip time, ms. Default 20.")


class Network(StrictModel):
    wan: Wan = Field(default_factory=made_by(Wan), description="Default 100/100 Mbit/s, 100 ms.")
    regional: Link = Field(default_factory=made_by(Link), description="Default 1000 Mbit/s, 20 ms.")
    pipeline: Link = Field(default_factory=made_by(Link), description="Default 1000 Mbit/s, 20 ms.")
    sites: List(Site, nonempty=False, max_len=MAX_SITES) = Field(
        default_factory=made_by(list), description="Where nodes sit (planner/schema/sites.py). Default []: one uniform network.")
    links: List(SiteLink, nonempty=False, max_len=MAX_SITE_LINKS) = Field(
        default_factory=made_by(list), description="Links between sites, Mbit/s each way and RTT. Default [].")
    regions: Choice("geography", "chosen") = Field(
        "geography", description="How a plan's sites form regions (groups, PP-group pipelines): 'geography' = the "
                                 "candidate regional groups, largest first; 'chosen' = the planner chooses the "
                                 "partition, with whole groups per region (docs/fleet.md section 3). Default 'geography'.")

    @model_validator(mode="wrap")
    @classmethod
    def _site_references(cls, data: Any, handler: Any) -> "Network":
        """Site names unique, links between known sites (planner/schema/sites.py)."""
        return with_site_references(cls, data, handler)


class Growth(StrictModel):
    """Growth factors per year (x/year) deriving the maximum run duration ('growth')."""

    hardware: Num(gt=1, cap=MAX_GROWTH) = Field(1.37, description="Hardware price-performance, x/year. Default 1.37.")
    software: Num(gt=1, cap=MAX_GROWTH) = Field(3.0, description="Algorithmic efficiency, x/year. Default 3.0.")
    investment: Num(gt=1, cap=MAX_GROWTH) = Field(3.5, description="Investment, x/year. Default 3.5.")


def _check_days(value: Any) -> Any:
    if value == "growth" and isinstance(value, str):
        return value
    message = number_error(value, gt=0, cap=MAX_DAYS)
    if message:
        fail(message.replace("a number > 0", "a number of days > 0 or 'growth'"))
    return float(value)


class Limits(StrictModel):
    max_days: Annotated[float | Literal["growth"], BeforeValidator(_check_days)] = Field(
        DEFAULT_MAX_DAYS, description="Longest run in days, or 'growth' (derived from growth rates). "
                                      "Default 547.875 (1.5 years of 365.25 days).")
    growth_x_per_year: Growth = Field(
        default_factory=made_by(Growth), description="Growth rates; those given override the assumption constants.")
    budget_usd: Num(gt=0, cap=MAX_BUDGET_USD) | None = Field(None, description="Spending cap, USD. Default None (no cap).")
    max_nodes: Int(ge=1, cap=MAX_NODES) | None = Field(None, description="At most this many nodes, <= fleet.nodes. Default None.")


# -- assumptions --------------------------------------------------------------------


_STRING_CONSTANTS = CHOICE_CONSTANTS


# Constants for which 0 is meaningful (switching a term off).
ZERO_ALLOWED_CONSTANTS = {"alpha_coefficient", "straggler_sync_coefficient", "straggler_relay_coefficient",
                          "straggler_backup_scale", "eta_h_floor", "linear_v1_coefficient", "linear_v1_cap_b",
                          *PHYSICS_ZERO_ALLOWED}


# replica_h_ref > 1 keeps the replica exponent ln(H) / ln(H_ref) growing with H (the planner's
# bounds rely on efficiency never rising with H); growth factors below 1 are not growth.
GREATER_THAN_ONE_CONSTANTS = {"replica_h_ref", "growth_hardware_x_per_year", "growth_software_x_per_year",
                              "growth_investment_x_per_year"}
# Exponents of power laws: beyond MAX_EXPONENT in magnitude, P ** e overflows.
EXPONENT_CONSTANTS = {"replica_beta_exponent", "chinchilla_alpha", "chinchilla_beta"}
AT_LEAST_ONE_CONSTANTS = {"backup_spare_factor", "threshold_eta_divisor", "chi_search_high_factor", "stage_state_shards"}


def _numeric_bounds(key: str) -> dict[str, float]:
    if key == "replica_beta_exponent":
        return {}
    if key in ZERO_ALLOWED_CONSTANTS:
        return {"ge": 0}
    if key in ("mfu", "mfu_per_hfu", "backward_share"):
        return {"gt": 0, "le": 1}
    if key in GREATER_THAN_ONE_CONSTANTS:
        return {"gt": 1}
    if key in AT_LEAST_ONE_CONSTANTS:
        return {"ge": 1}
    return {"gt": 0}


def _check_table(key: str, value: Any) -> tuple[dict[str, list[float]], list[Problem]]:
    """{"16": [opt, exp, cons], ...}: ratio >= 1, values in [0, 1]."""
    if not isinstance(value, dict) or not value:
        return {}, [Problem(key, f"must be a non-empty object like {{\"16\": [1.0, 0.98, 0.95]}}, got {show(value)}")]
    if len(value) > MAX_LIST:
        return {}, [Problem(key, f"must hold at most {MAX_LIST} rows, got {len(value):,}")]
    table, problems = {}, []
    for ratio, row in value.items():
        try:
            ok = float(ratio) >= 1
        except ValueError:
            ok = False
        if not ok:
            problems.append(Problem(f"{key}.{ratio}", f"key must be a compression ratio >= 1, got {ratio!r}"))
        elif float(ratio) > MAX_RATIO:
            ok = False
            problems.append(Problem(f"{key}.{ratio}", f"key must be a compression ratio of at most {MAX_RATIO:g} "
                                                      f"(dtplan's bound), got {ratio!r}"))
        if (not isinstance(row, list) or len(row) != 3
                or any(number_error(x, ge=0, le=1) for x in row)):
            problems.append(Problem(f"{key}.{ratio}", "must be [optimistic, expected, conservative], "
                                                      f"three numbers in [0, 1], got {show(row)}"))
        elif ok:
            table[ratio] = [float(x) for x in row]
    return table, problems


def _check_constant(key: str, given: Any) -> tuple[Any, list[Problem]]:
    """One entry of `assumptions.constants`: its normalised value and its problems."""
    if key == "profile":
        return given, [Problem(key, "not a constant: set assumptions.profile instead")]
    if key not in SETTABLE_FIELDS:
        return given, [Problem(key, f"unknown assumption constant{did_you_mean(key, SETTABLE_FIELDS)}")]
    if key in TABLE_FIELDS:
        return _check_table(key, given)
    if key in _STRING_CONSTANTS:
        message = choice_error(given, _STRING_CONSTANTS[key])
    elif key in BOOL_CONSTANTS:
        message = None if isinstance(given, bool) else f"must be true or false, got {show(given)}"
    else:  # NUMERIC_FIELDS (test_every_settable_constant_has_a_check keeps this exhaustive)
        message = number_error(given, **_numeric_bounds(key),
                               cap=MAX_EXPONENT if key in EXPONENT_CONSTANTS else MAX_NUMBER)
    if message:
        return given, [Problem(key, message)]
    return (float(given) if key in NUMERIC_FIELDS else given), []


def _check_constants(value: Any) -> dict[str, Any]:
    """Overrides of planner.cost.assumptions.Assumptions fields, checked and normalised."""
    if not isinstance(value, dict):
        fail(f"must be an object of assumption constants, got {show(value)}")
    checked = {key: _check_constant(key, given) for key, given in value.items()}
    problems = [p for _, found in checked.values() for p in found]
    if problems:
        raise_problems(problems)
    return {key: normalised for key, (normalised, _) in checked.items()}


class AssumptionSettings(StrictModel):
    """Which constants the cost model uses: a profile, then `constants`, then the explicit fields."""

    profile: Choice(dynamic=profile_names) = Field(
        "reference", description="Assumption profile (models/assumptions). Default 'reference'.")
    scenario: Choice(*SCENARIOS) | None = Field(None, description="Quality-table column. Default: the profile's.")
    straggler: Choice(*STRAGGLER_STRATEGIES) | None = Field(None, description="Straggler strategy. Default: the profile's.")
    error_feedback: Bool | None = Field(None, description="Error feedback on compression. Default: the profile's.")
    mfu: Num(gt=0, le=1) | None = Field(None, description="Model FLOP utilisation, (0, 1]. Default: the profile's.")
    constants: Annotated[dict[str, Any], BeforeValidator(_check_constants)] = Field(
        default_factory=made_by(dict), description="Overrides of any settable constant (planner.cost.assumptions). Default {}.")


# -- search and the instance ----------------------------------------------------------


def _distinct_sizes(sizes: list[float]) -> list[float]:
    """Candidate sizes, each once, smallest first (the solver's tie order)."""
    seen: dict[float, int] = {}
    problems = []
    for i, p in enumerate(sizes):
        if p in seen:
            problems.append(Problem(f"[{i}]", f"duplicate of search.params[{seen[p]}] ({show(p)})"))
        seen.setdefault(p, i)
    if problems:
        raise_problems(problems)
    return sorted(sizes)


MODEL_SIZE_KEYS = ("params", "preset", "active_params", "moe_layers", "hidden_size")


SEARCH_PRESETS_DIR = bundled_models_dir() / "search"     # checkout or wheel; see planner/presets_dir.py


def search_preset_names() -> list[str]:
    return sorted(p.stem for p in SEARCH_PRESETS_DIR.glob("*.json"))


class Search(StrictModel):
    """Bounds on the planner's decision space (shapes and ranges only)."""

    preset: Choice(dynamic=search_preset_names) | None = Field(
        None, description="Named ranges from models/search (e.g. 'demonstrated': settings shown at scale); "
                          "fields given here override the preset's. Default None.")

    @model_validator(mode="before")
    @classmethod
    def _fill_from_preset(cls, data: Any) -> Any:
        """Copy the preset's ranges into the fields the user did not give (docs/physics.md, section 8)."""
        if not (isinstance(data, dict) and data.get("preset") in search_preset_names()):
            return data
        spec = json.loads((SEARCH_PRESETS_DIR / f"{data['preset']}.json").read_text())["search"]
        return {**spec, **data}

    modes: List(Choice(*MODES)) = Field(list(MODES), description="Modes to consider. Default all four.")
    min_nodes: Int(ge=1, cap=MAX_NODES) = Field(1, description="Fewest nodes to use. Default 1.")
    max_stages: Int(ge=1, le=64) = Field(64, description="Most pipeline stages S. Default 64.")
    group_sizes: List(Int(ge=2, cap=MAX_NODES)) | None = Field(None, description="Hierarchical group sizes. Default None = 2..64.")
    max_inner_steps: Int(ge=1, le=10000) = Field(10000, description="Largest H. Default 10000.")
    max_regional_rounds: Int(ge=1, le=1000) = Field(1000, description="Largest R. Default 1000.")
    compression: List(Num(ge=1, cap=MAX_RATIO)) = Field(
        [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 100.0, 150.0, 250.0, 500.0],
        description="Pseudo-gradient compression ratios Cr. Default 1..500 (11 values).")
    precisions: List(Choice(*PRECISIONS)) | None = Field(
        None, description="Precisions to consider. Default None = all the hardware supports.")
    max_micro_batches: Int(ge=1, le=64) = Field(64, description="Most micro-batches M. Default 64.")
    activation_compression: List(Num(ge=1, cap=MAX_RATIO)) = Field(
        [1.0, 2.0, 4.0, 10.0], description="Activation compression ratios Ca. Default [1, 2, 4, 10].")
    streaming: List(Bool) = Field([True, False], description="Streaming overlap on/off. Default both.")
    expert_parallel: List(Choice(*EXPERT_PARALLEL)) | None = Field(
        None, description="Expert-parallel scopes (MoE). Default None = all that apply.")
    params: Annotated[List(Num(ge=MIN_PARAMS, hint=_PARAMS_HINT, cap=MAX_PARAMS), max_len=MAX_SIZES), AfterValidator(_distinct_sizes)] | None = Field(
        None, description="Candidate model sizes: total parameters of a dense model, raw counts >= 1e6 "
                          "(e.g. [7e9, 70e9]). The planner solves every size and keeps the best (ties to the "
                          "smaller). The model section then gives no size (model.params defaults to the "
                          "smallest candidate; the hidden size is 0.03 sqrt(P) for each), and min_time / "
                          "min_cost need training.target_flop. Default None: the model's own size.")


def stage_expert_problems(constants: dict, model, fleet) -> list[Problem]:
    """`stage_expert_parallel` (planner/cost/stage_shards.py): a mixture-of-experts model on one kind of node, its
    expert_parallel_degree whole servers (E = degree / A)."""
    if not constants.get("stage_expert_parallel"):
        return []
    name = "assumptions.constants.stage_expert_parallel"
    if not model.is_moe:
        return [Problem(name, "is for a mixture-of-experts model (model.active_params below model.params); "
                              "the model is dense: set it false")]
    if fleet.pools:
        return [Problem(name, "is for a fleet of one kind of node; with fleet.pools set it false")]
    a, degree = fleet.hardware.accelerators_per_node, constants.get("expert_parallel_degree", 0)
    if not degree or degree % a:
        return [Problem("assumptions.constants.expert_parallel_degree",
                        f"must be a multiple of the node's accelerators ({a}) with stage_expert_parallel (a stage's "
                        f"experts over degree / {a} servers), got {show(degree)}")]
    return []


class Instance(StrictModel):
    """A planning problem. See the module docstring for units.

    Validated once, then immutable. To vary a field (sweeps), change the raw dict and
    call `parse_instance` again: `model_copy(update=...)` skips validation and the
    resolution of presets and defaults (e.g. `model.active_params` of a dense model).
    """

    name: Text = Field("", description="Default ''.")
    description: Text = Field("", description="Default ''.")
    model: ModelSpec = Field(description="The model to train (required).")
    training: Training = Field(default_factory=made_by(Training), description="Default: batch 131072, no explicit target.")
    fleet: Fleet = Field(description="The hardware and fleet size (required).")
    network: Network = Field(default_factory=made_by(Network), description="Default: see Network.")
    limits: Limits = Field(default_factory=made_by(Limits), description="Default: 547.875 days, no budget, no node cap.")
    assumptions: AssumptionSettings = Field(default_factory=made_by(AssumptionSettings), description="Default: 'reference'.")
    search: Search = Field(default_factory=made_by(Search), description="Default: the whole decision space.")
    objective: Choice(*OBJECTIVES) = Field("min_time", description="Default 'min_time'.")

    @model_validator(mode="before")
    @classmethod
    def _model_from_size_set(cls, data: Any) -> Any:
        """With search.params (candidate sizes) the model section gives no size: the model is
        dense, its size the smallest candidate until the planner picks one."""
        if not isinstance(data, dict) or not isinstance(data.get("search"), dict):
            return data
        sizes = data["search"].get("params")
        if not isinstance(sizes, list) or not sizes:
            return data
        model = data.get("model", {})
        if not isinstance(model, dict):
            return data
        given = [k for k in MODEL_SIZE_KEYS if k in model]
        if given:
            raise_problems([Problem(f"model.{k}", "not with search.params: the candidate sizes set the model "
                                                  "(dense, hidden size 0.03 sqrt(P)); remove it or remove "
                                                  "search.params") for k in given])
        valid = [x for x in sizes if isinstance(x, (int, float)) and not isinstance(x, bool) and x >= MIN_PARAMS]
        if not valid:
            return data
        return {**data, "model": {**model, "params": min(valid)}}

    @model_validator(mode="after")
    def _cross_checks(self) -> "Instance":
        problems = cross_problems(self.fleet, self.limits, self.search) + size_set_problems(self, self.objective)
        tp = self.assumptions.constants.get("tensor_parallel", 0)
        hw = self.fleet.hardware
        if hw is not None and tp > hw.accelerators_per_node:      # dtplan's TP term runs inside one node
            problems.append(Problem("assumptions.constants.tensor_parallel",
                                    f"must be <= the node's accelerators ({hw.accelerators_per_node}), got {show(tp)}"))
        for i, pool in enumerate(self.fleet.pools or ()):           # with pools: inside every pool's node
            if tp > pool.hardware.accelerators_per_node:
                problems.append(Problem("assumptions.constants.tensor_parallel",
                                        f"must be <= every pool's accelerators per node (fleet.pools[{i}]: "
                                        f"{pool.hardware.accelerators_per_node}), got {show(tp)}"))
        if self.assumptions.constants.get("search_tensor_parallel") and self.fleet.pools:   # its u is one setting's
            problems.append(Problem("assumptions.constants.search_tensor_parallel",
                                    "is for a fleet of one kind of node; with fleet.pools set it false"))
        if self.assumptions.constants.get("stage_state_shards", 1) > 1 and self.fleet.pools:  # planner/cost/stage_shards.py
            problems.append(Problem("assumptions.constants.stage_state_shards",
                                    "is for a fleet of one kind of node; with fleet.pools set it to 1"))
        problems += stage_expert_problems(self.assumptions.constants, self.model, self.fleet)
        problems += pool_site_problems(self.fleet, self.network)
        if problems:
            raise_problems(problems)
        return self

    @property
    def hardware(self) -> HardwareSpec:
        """The fleet's hardware with `fleet.price_usd_per_accelerator` applied (None for a fleet of pools)."""
        price = self.fleet.price_usd_per_accelerator
        hw = self.fleet.hardware
        return hw if price is None else hw.model_copy(update={"price_usd_per_accelerator": price})

    def resolved_assumptions(self) -> Assumptions:
        """Profile, then `assumptions.constants`, then the explicit fields (scenario, straggler,
        error_feedback, mfu and the growth rates given in limits.growth_x_per_year)."""
        a = self.assumptions
        explicit = {k: getattr(a, k) for k in ("scenario", "straggler", "error_feedback", "mfu")
                    if getattr(a, k) is not None}
        growth = self.limits.growth_x_per_year
        explicit |= {f"growth_{k}_x_per_year": getattr(growth, k) for k in growth.model_fields_set}
        return apply_overrides(apply_overrides(_profile(a.profile), a.constants), explicit)


@lru_cache(maxsize=None)
def _profile(name: str) -> Assumptions:
    return load_profile(name)


def cross_problems(fleet: Fleet | None, limits: Limits | None, search: Search | None) -> list[Problem]:
    """Checks across sections; a section that did not parse is None and its checks are skipped."""
    problems = []
    if fleet and limits and limits.max_nodes is not None and limits.max_nodes > fleet.nodes:
        problems.append(Problem("limits.max_nodes", f"must be <= fleet.nodes ({fleet.nodes}), got {limits.max_nodes}"))
    if fleet and search and search.min_nodes > fleet.nodes:
        problems.append(Problem("search.min_nodes", f"must be <= fleet.nodes ({fleet.nodes}), got {search.min_nodes}"))
    if limits and search and limits.max_nodes is not None and search.min_nodes > limits.max_nodes:
        problems.append(Problem("search.min_nodes",
                                f"must be <= limits.max_nodes ({limits.max_nodes}), got {search.min_nodes}"))
    if fleet and search and search.precisions:
        problems += fleet.precision_problems(search.precisions)
    return problems


def size_set_problems(instance: "Instance", objective: str) -> list[Problem]:
    """Why a set of candidate model sizes (search.params) cannot be solved for `objective`:
    min_time and min_cost compare sizes by a fixed FLOP target (6 P D would differ per size)."""
    if not instance.search.params or objective == "max_compute" or instance.training.target_flop is not None:
        return []
    given = ("training.tokens sets 6 P D, which differs per size" if instance.training.tokens is not None
             else "the default target is compute-optimal for each size")
    return [Problem("training.target_flop", f"required with search.params for objective {objective} "
                                            f"(a fixed FLOP target to compare model sizes; {given}); "
                                            "or use objective max_compute")]


def _section(data: dict, name: str) -> Any:
    """The section `name` of raw instance data on its own, or None if missing or invalid."""
    field = Instance.model_fields[name]
    if name not in data:
        return None if field.is_required() else field.get_default(call_default_factory=True)
    try:
        return field.annotation.model_validate(data[name])
    except ValidationError:
        return None


def parse_instance(data: Any, source: str = "<dict>") -> Instance:
    """Validate raw instance data (parsed JSON); InputError listing every problem."""
    try:
        return Instance.model_validate(data)
    except ValidationError as exc:
        problems = problems_from(exc, Instance)
        if isinstance(data, dict) and all(err["loc"] for err in exc.errors()):
            # Field errors kept the cross checks from running; run those whose sections parsed.
            problems += cross_problems(*(_section(data, name) for name in ("fleet", "limits", "search")))
        raise InputError(problems, source) from None


def instance_json_schema() -> dict[str, Any]:
    """The JSON Schema of an instance file (pydantic's, from the field types and descriptions)."""
    schema = Instance.model_json_schema(mode="validation")
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    return schema


def load_instance(path: str | Path) -> Instance:
    """Read and validate an instance JSON file; InputError (prefixed by the file) on any problem."""
    return load_file(path, parse_instance)
