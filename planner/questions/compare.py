"""One workload on each hardware preset: `dtplan compare`.

Every variant is the user's instance with only `fleet.hardware` replaced by a preset id
(same model, fleet size, network, limits, search bounds and objective), built by
changing the raw instance data and validating it again with `parse_instance` (as the
`Instance` docstring asks: `model_copy` would skip validation and preset resolution).
Each variant is solved exactly with `planner.solve.solve` (under the dtplan profile, a variant with no
plan inside the evidence envelope is solved again beyond it, and its reason names the envelope bounds
that stop it: `planner.solve.with_beyond_evidence`), then the results are ranked
by the objective: least time (min_time), least cost (min_cost) or most compute
(max_compute); ties go to the smaller hardware id, and presets without a plan come last.

Two fields are hardware-specific and are not carried over blindly:
- `fleet.price_usd_per_accelerator` overrides the price of the instance's own hardware;
  it is kept for that preset and dropped for the others (each keeps its own price).
- A fleet of pools (`fleet.pools`, docs/fleet.md): the user's own fleet is solved as given (inline
  hardware included) and listed first, then each preset twice, as a replacement of every pool at
  its site (sites, links and fleet.sync_rule kept): at equal H100-equivalents (pool count x the
  pool's H100-eq per node / the preset's, rounded to the nearest node, at least 1) and at equal cost
  (pool count x the pool's node price / the preset's, rounded down: never above the pool's cost; a
  pool whose share buys no node is dropped). `Comparison.basis` says which row is which.
- `search.precisions` may name a precision a preset lacks; that preset is then reported
  as infeasible with the validation message as its reason (nothing is solved for it).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from planner.objectives import Objective, objective_named
from planner.schema.catalog import hardware_ids as preset_ids, load_hardware
from planner.cost.duration import SECONDS_PER_DAY
from planner.schema.errors import InputError, Problem
from planner.schema.instance import MODEL_SIZE_KEYS, Instance, parse_instance
from planner.schema.plan import Plan
from planner.solve import SUPPORTED_OBJECTIVES, SolveResult, solve
from planner.schema.strict import closest_first

@dataclass
class Comparison:
    """One hardware preset's optimum for the shared workload."""

    hardware: str                      # preset id; for a fleet of pools, the row's label (see `basis`)
    result: SolveResult
    rank: int = 0                      # 1 = best; presets without a plan rank after every feasible one
    notes: list[str] = field(default_factory=list)
    basis: str | None = None           # fleet of pools: "as given", "equal H100-eq" or "equal cost"
    preset: str | None = None          # the preset of a replacement row (None for the fleet as given)
    pools: list[dict[str, Any]] | None = None     # fleet of pools: the row's pools (name, hardware, count, site)

    @property
    def feasible(self) -> bool:
        """A plan was found (optimal, or the best within a time limit)."""
        return self.result.plan is not None

    @property
    def value(self) -> float | None:
        """The objective value: seconds (min_time), USD (min_cost), FLOP (max_compute)."""
        return self.result.objective_value

    @property
    def days(self) -> float | None:
        """Time to the target in days (None without a plan; inf when max_compute's plan misses it)."""
        e = self.result.evaluation
        return None if e is None else e.values["time_to_target_s"] / SECONDS_PER_DAY

    @property
    def nodes(self) -> int | None:
        return None if self.result.plan is None else self.result.plan.nodes

    @property
    def cost_usd(self) -> float | None:
        e = self.result.evaluation
        return None if e is None else float(e.values["cost_usd"])

    @property
    def bottleneck(self) -> str | None:
        e = self.result.evaluation
        return None if e is None else e.bottleneck

    @property
    def reason(self) -> str:
        """Why there is no plan, in one line ('' when there is one)."""
        if self.feasible:
            return ""
        if self.result.status == "time_limit":
            return "time limit reached before a plan was found"
        return "; ".join(self.result.infeasibility) or "no plan meets every limit"

    def to_dict(self) -> dict[str, Any]:
        """`SolveResult.to_dict()` with the hardware id, the rank and the notes."""
        pools = {} if self.basis is None else {"basis": self.basis, "preset": self.preset, "pools": self.pools}
        return {"rank": self.rank, "hardware": self.hardware, **pools, "notes": self.notes, **self.result.to_dict()}


def parse_hardware_list(text: str) -> list[str]:
    """'all' or 'id,id,...' -> preset ids (in the order given, each once).

    InputError naming `--hardware` (with the closest known ids) for an unknown or empty entry.
    """
    known = preset_ids()
    if text.strip().lower() == "all":
        return known
    ids, problems = [], []
    for i, name in enumerate(part.strip() for part in text.split(",")):
        if not name:
            problems.append(Problem("--hardware", f"entry {i + 1} is empty; give 'all' or preset ids separated "
                                                  f"by commas (known: {', '.join(known)})"))
        elif name not in known:
            problems.append(Problem("--hardware", f"unknown hardware preset {name!r}; known (closest first): "
                                                  f"{', '.join(closest_first(name, known))}"))
        elif name not in ids:
            ids.append(name)
    if problems:
        raise InputError(problems)
    return ids


def raw_instance(instance: Instance | Mapping[str, Any]) -> dict[str, Any]:
    """Raw instance data to vary: a deep copy of a mapping, or the dump of a validated Instance
    (presets and defaults resolved; which re-validates to an equal Instance)."""
    if isinstance(instance, Mapping):
        return copy.deepcopy(dict(instance))
    data = instance.model_dump(mode="json", exclude_none=instance.fleet.is_mixed)
    if instance.fleet.is_mixed:          # the dump resolved nodes (their total) and presets (inline)
        data["fleet"].pop("nodes", None)
        for pool, given in zip(data["fleet"]["pools"], instance.fleet.pools):
            pool["hardware"] = given.hardware.id if given.hardware.id != "custom" else pool["hardware"]
    else:
        data["fleet"]["hardware"] = instance.fleet.hardware.id if instance.fleet.hardware.id != "custom" \
            else instance.fleet.hardware.model_dump(mode="json")
    if instance.search.params:          # the candidate sizes set the model; the dump resolved one
        for key in MODEL_SIZE_KEYS:
            data["model"].pop(key, None)
    return data


def variant(data: Mapping[str, Any], hardware: str) -> tuple[dict[str, Any], list[str]]:
    """The raw instance (a uniform fleet) with `fleet.hardware` replaced by the preset `hardware`,
    and notes on what else had to change (a price override of another hardware is dropped)."""
    out = copy.deepcopy(dict(data))
    fleet = dict(out.get("fleet") or {})
    own = fleet.get("hardware")
    notes = []
    if "price_usd_per_accelerator" in fleet and own != hardware:
        price = fleet.pop("price_usd_per_accelerator")
        notes.append(f"fleet.price_usd_per_accelerator ({price}) is for {_hardware_name(own)}; "
                     f"the other presets keep their own price")
    fleet["hardware"] = hardware
    out["fleet"] = fleet
    return out, notes


BASES = ("equal H100-eq", "equal cost")


def pool_variant(data: Mapping[str, Any], instance: Instance, hardware: str,
                 basis: str) -> tuple[dict[str, Any], list[str]]:
    """The raw instance of a fleet of pools with every pool replaced by nodes of the preset
    `hardware` at the pool's site, at equal H100-equivalents or at equal cost (module docstring),
    and notes on what changed."""
    preset = load_hardware(hardware)
    out = copy.deepcopy(dict(data))
    pools, notes = [], []
    for given, pool in zip(instance.fleet.pools, out["fleet"]["pools"]):
        if basis == "equal H100-eq":
            count = max(1, round(pool["count"] * given.hardware.h100_equivalents / preset.h100_equivalents))
        else:
            count = math.floor(pool["count"] * given.priced_hardware.node_price_usd / preset.node_price_usd + 1e-9)
        if count < 1:
            notes.append(f"at equal cost, a pool whose nodes cost less than one node of the preset is dropped")
            continue
        pool = {k: v for k, v in pool.items() if k != "price_usd_per_accelerator"} | {"hardware": hardware,
                                                                                     "count": count}
        pools.append(pool)
    if any("price_usd_per_accelerator" in p for p in out["fleet"]["pools"]):
        notes.append("a pool's price_usd_per_accelerator is for its own hardware; the presets keep their own price")
    out["fleet"]["pools"] = pools
    return out, notes


def _pool_rows(data: dict, base: Instance, ids: list[str], objective: Objective, progress, deadline) -> list["Comparison"]:
    """The fleet as given, then each preset at equal H100-eq and at equal cost (a fleet of pools)."""
    total = 1 + 2 * len(ids)
    if progress:
        progress(0, total, "your fleet")
    rows = [Comparison("your fleet (as given)", solve(base, objective=objective, deadline=deadline,
                                                      explain_envelope=True),
                       basis="as given", pools=_pools_of(data))]
    for i, hw in enumerate(ids):
        for j, basis in enumerate(BASES):
            if progress:
                progress(1 + 2 * i + j, total, f"{hw} ({basis})")
            raw, notes = pool_variant(data, base, hw, basis)
            label, fields = f"{hw} ({basis})", dict(basis=basis, preset=hw, pools=_pools_of(raw))
            if raw["fleet"]["pools"]:
                rows.append(_solved(raw, label, objective, deadline, notes, **fields))
                continue
            cost = sum(p.count * p.priced_hardware.node_price_usd for p in base.fleet.pools)
            why = (f"at equal cost no pool buys one {hw} node (${load_hardware(hw).node_price_usd:,.0f}); "
                   f"the fleet as given costs ${cost:,.0f}")
            rows.append(Comparison(label, SolveResult(objective, "bnb", "infeasible", None, None, None, 0.0, 0,
                                                      infeasibility=[why]), notes=notes, **fields))
    if progress:
        progress(total, total, "")
    return rows


def _pools_of(raw: dict) -> list[dict[str, Any]]:
    return [{k: p.get(k) for k in ("name", "hardware", "count", "site") if k in p} for p in raw["fleet"]["pools"]]


def _solved(raw: dict, label: str, objective: Objective, deadline, notes: list[str], **fields) -> "Comparison":
    """The row of one variant: solved, or infeasible with the validation message as its reason."""
    try:
        inst = parse_instance(raw)
    except InputError as err:                # e.g. search.precisions the preset lacks; no pool left
        result = SolveResult(objective, "bnb", "infeasible", None, None, None, 0.0, 0,
                             infeasibility=["; ".join(map(str, err.problems))])
    else:
        result = solve(inst, objective=objective, deadline=deadline, explain_envelope=True)
    return Comparison(label, result, notes=notes, **fields)


def _hardware_name(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        return str(value.get("id") or value.get("name") or "the inline hardware")
    return "the instance's hardware"


def compare(instance: Instance | Mapping[str, Any], hardware_ids: Iterable[str] | str = "all",
            objective: Objective | str | None = None,
            progress: Callable[[int, int, str], None] | None = None,
            deadline: float | None = None) -> list[Comparison]:
    """Solve the workload of `instance` on each preset of `hardware_ids` ('all' or ids) and rank them.

    `instance` is raw instance data (parsed JSON; it is validated here as given) or a validated
    `Instance`. `objective` defaults to the instance's. `progress(done, total, hardware)` is
    called before each preset is solved and once at the end (done == total). `deadline`
    (time.perf_counter()) bounds the whole comparison: presets not solved by then keep the
    best plan found in time, or none (status time_limit).
    Returns one `Comparison` per preset, best first (rank 1), presets without a plan last.
    Raises InputError for bad input (the instance itself, an unknown preset id or objective).
    """
    data = raw_instance(instance)
    base = parse_instance(data)                  # the instance as given must be valid on its own
    objective = objective or base.objective
    if not isinstance(objective, Objective) and objective not in SUPPORTED_OBJECTIVES:    # parsing the user's key
        raise InputError([Problem("--objective", f"must be one of {', '.join(SUPPORTED_OBJECTIVES)}, "
                                                 f"got {objective!r}")])
    objective = objective_named(objective)
    ids = parse_hardware_list(hardware_ids) if isinstance(hardware_ids, str) else list(dict.fromkeys(hardware_ids))
    unknown = [h for h in ids if h not in preset_ids()]
    if unknown:
        parse_hardware_list(",".join(unknown))   # raises, naming the field and the closest ids
    if base.fleet.is_mixed:
        return rank(_pool_rows(data, base, ids, objective, progress, deadline), objective)
    rows = []
    for i, hw in enumerate(ids):
        if progress:
            progress(i, len(ids), hw)
        raw, notes = variant(data, hw)
        rows.append(_solved(raw, hw, objective, deadline, notes))
    if progress:
        progress(len(ids), len(ids), "")
    return rank(rows, objective)


def rank(rows: list[Comparison], objective: Objective) -> list[Comparison]:
    """Sort best first by the objective (most compute first for max_compute), ties to a fleet of pools
    as given, then by hardware id;
    presets without a plan after them (by hardware id). Sets `rank` (1-based) and returns the list,
    a fleet of pools as given first (at its own rank), the others in rank order."""
    def key(row: Comparison):
        if not row.feasible:
            return (1, 0.0, row.hardware)
        value = row.value
        return (0, -value if objective.maximise else value, row.basis != "as given", row.hardware)
    rows = sorted(rows, key=key)
    for i, row in enumerate(rows, 1):
        row.rank = i
    return sorted(rows, key=lambda row: row.basis != "as given")     # the fleet as given first, at its rank


def plan_short(plan: Plan | None) -> str:
    """One line: mode, precision, then the mode's decisions (H, Cr, S/M/Ca, k/R, EP scope)."""
    if plan is None:
        return "-"
    parts = [{"hierarchical": "hier"}.get(plan.mode, plan.mode), plan.precision]
    if plan.mode != "pipeline_wan":
        parts += [f"H={plan.inner_steps}", f"Cr={plan.compression:g}"]
        if not plan.streaming:
            parts.append("no-stream")
    if plan.mode == "hierarchical":
        parts += [f"k={plan.group_size}", f"R={plan.regional_rounds}"]
    if plan.mode in ("pp_group", "pipeline_wan"):
        parts += [f"S={plan.stages}", f"M={plan.micro_batches}"]
        if plan.activation_compression and plan.activation_compression != 1:
            parts.append(f"Ca={plan.activation_compression:g}")
    if plan.expert_parallel:
        parts.append(f"EP={plan.expert_parallel}")
    return " ".join(parts)


def comparison_table(rows: list[Comparison], objective: Objective):
    """A rich table of the ranking: rank, hardware, status, days, nodes, cost, (compute), plan, bottleneck."""
    from rich.table import Table
    table = Table()
    table.add_column("#", justify="right")
    table.add_column("hardware", no_wrap=True, style="cyan")
    table.add_column("status", no_wrap=True)
    table.add_column("days to target", justify="right")
    table.add_column("nodes", justify="right")
    table.add_column("cost USD", justify="right")
    if objective.maximise:
        table.add_column("compute FLOP", justify="right")
    table.add_column("plan")
    table.add_column("bottleneck", no_wrap=True)
    for row in rows:
        if not row.feasible:
            cells = [str(row.rank), row.hardware, f"[red]{row.result.status}[/red]", "-", "-", "-"]
            cells += ["-"] if objective.maximise else []
            table.add_row(*cells, "[red]see below[/red]", "-")
            continue
        days = row.days
        cells = [str(row.rank), row.hardware,
                 "[green]optimal[/green]" if row.result.status == "optimal" else f"[yellow]{row.result.status}[/yellow]",
                 "not reached" if days is None or not math.isfinite(days) else f"{days:,.1f}",
                 f"{row.nodes:,}", f"{row.cost_usd:,.0f}"]
        if objective.maximise:
            cells.append(f"{row.value:.3e}")
        table.add_row(*cells, plan_short(row.result.plan), row.bottleneck)
    return table


def comparison_notes(rows: list[Comparison]) -> list[str]:
    """Every note of the rows, each once and whole; for a fleet of pools, what the rows are."""
    notes = list(dict.fromkeys(n for r in rows for n in r.notes))
    if any(r.basis is not None for r in rows):
        notes.insert(0, "your fleet is solved as given; each preset then replaces every pool at its site (sites, "
                        "links and fleet.sync_rule kept): '(equal H100-eq)' rows hold as many H100-equivalents per "
                        "pool (rounded to the nearest node, at least 1), '(equal cost)' rows cost at most as much "
                        "per pool (rounded down)")
    return notes
