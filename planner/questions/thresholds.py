"""Policy questions: registration thresholds, what they leave possible, and whom they catch (issue 15).

A threshold regime (`Thresholds`) registers any node (a cluster networked to work together)
whose figures go *above* a limit; a node exactly at a limit is not caught (strict
inequality, as in the MIRI report's Covered Compute Cluster definition). The limits:

| limit | a node of n accelerators is caught when | unit |
|---|---|---|
| compute | n * fp16 TFLOP/s > T * 990 | H100-equivalents (dense FP16, 990 TFLOP/s each) |
| tpp | n * TPP > T | Total Processing Performance (below) |
| memory | n * accelerator memory > M | GB (every kind of accelerator memory, HBM or GDDR) |
| interconnect | the accelerator's chip-to-chip bandwidth > B (any n) | GB/s |

TPP, the US export-control metric (15 CFR 774, ECCN 3A090, technical note): 2 x MacTOPS x
bit length of the operation, maximised over the precisions the chip supports. One
multiply-accumulate is two operations, so 2 x MacTOPS is the dense tera-operation rate and
TPP = max over precisions p of (dense TFLOP/s at p) x (bits of p); e.g. H100 SXM
990 x 16 = 1,980 x 8 = 15,840 and A100 312 x 16 = 4,992.

`build_node` gives, for one accelerator, the largest node that stays under every limit:
n = min over the limits set of floor(limit / per-accelerator figure) (an interconnect cap
above the chip's bandwidth excludes the chip), with the rule that bound it. `answer` asks
the planner for the fewest such nodes that reach the target within the instance's limits
(verified: n nodes reach it, n - 1 do not). `stop_point` finds the threshold at which the
target stops being reachable within a node count or a budget, verified on both sides.
`caught` says which limits catch a deployment of the shipped catalog (models/deployments).
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable

from pydantic import Field, ValidationError

from planner.cost import physics
from planner.objectives import MIN_COST, MIN_TIME
from planner.schema.catalog import H100_FP16_TFLOPS, models_dir
from planner.schema.errors import InputError, Problem
from planner.schema.instance import MIN_PARAMS, parse_instance
from planner.schema.limits import MAX_ACCELERATORS_PER_NODE
from planner.schema.strict import Int, Num, StrictModel, load_file, problems_from
from planner.solve import SolveResult, solve
from planner.cost.duration import SECONDS_PER_DAY

BITS = {"fp16": 16, "fp8": 8, "fp4": 4}
NODE_CAP = 100_000            # the fewest-nodes search looks up to this many nodes unless limits.max_nodes is set
BANDWIDTH_STEP = 1.01         # the bandwidth-cap bisection stops when the bracket is within 1%
SCALE_FLOOR = 1e-6            # the bandwidth-cap search goes down to a millionth of the given cap
FIT_BISECTIONS = 60           # fit_params' bisection on P: 2^-60 of V / beta, far below its 3 significant digits
THRESHOLD_KINDS = ("compute", "tpp", "memory", "interconnect", "wan")


# -- catalogs ---------------------------------------------------------------------------


class AcceleratorSpec(StrictModel):
    """One accelerator (models/accelerators/ID.json). Units: TFLOP/s dense, GB (1e9 bytes), GB/s, USD."""

    id: str = Field(description="The file name without .json.")
    name: str = Field(description="Vendor name of the part.")
    memory_type: str = Field(description="HBM2, HBM3e, GDDR6, ...")
    peak_tflops: dict[str, Num(gt=0)] = Field(description="Dense peak TFLOP/s per precision; fp16 required.")
    hbm_gb: Num(gt=0) = Field(description="Accelerator memory per chip, GB (HBM or GDDR, see memory_type).")
    price_usd: Num(ge=0) = Field(description="Purchase price (or capital-equivalent estimate), USD.")
    interconnect_gb_s: Num(gt=0) | None = Field(description="Chip-to-chip bandwidth, GB/s bidirectional; "
                                                            "None = not published.")
    derived_from: str | None = Field(None, description="The models/hardware preset the figures come from.")
    tpp_published: Num(gt=0) | None = Field(None, description="TPP from the vendor's dense rates where the "
                                            "catalog's peak_tflops understate them (cited); None = computed.")
    sources: dict[str, str] = Field(description="Field -> citation.")

    @property
    def tpp(self) -> float:
        """`tpp_published` if given, else max over precisions of dense TFLOP/s x bit length
        (= 2 x MacTOPS x bits)."""
        if self.tpp_published is not None:
            return float(self.tpp_published)
        return max(t * BITS[p] for p, t in self.peak_tflops.items())

    @property
    def h100_equivalents(self) -> float:
        return self.peak_tflops["fp16"] / H100_FP16_TFLOPS


class Deployment(StrictModel):
    """A legitimate computing system (models/deployments/deployments.json)."""

    id: str
    name: str
    category: str
    accelerator: str = Field(description="An id of models/accelerators.")
    count: Int(ge=1) = Field(description="Accelerators networked together in the system.")
    source: str


def _load_model(cls, path: Path, key: str | None = None):
    def parse(data: Any, source: str):
        items = data[key] if key and isinstance(data, dict) and key in data else data
        try:
            if key:
                return [cls.model_validate(x) for x in items]
            return cls.model_validate(items)
        except (ValidationError, TypeError) as exc:
            problems = problems_from(exc, cls) if isinstance(exc, ValidationError) else [Problem(key or "", str(exc))]
            raise InputError(problems, source) from None
    return load_file(path, parse)


def load_accelerators(directory: Path | None = None) -> dict[str, AcceleratorSpec]:
    """Every accelerator of models/accelerators, by id (the file name must equal the id)."""
    directory = directory or models_dir() / "accelerators"
    out = {}
    for path in sorted(directory.glob("*.json")):
        spec = _load_model(AcceleratorSpec, path)
        if spec.id != path.stem:
            raise InputError([Problem("id", f"must match the file name {path.stem!r}, got {spec.id!r}")], str(path))
        out[spec.id] = spec
    return out


def load_deployments(path: Path | None = None) -> list[Deployment]:
    """The shipped catalog of legitimate deployments; every accelerator id must exist."""
    path = path or models_dir() / "deployments" / "deployments.json"
    items = _load_model(Deployment, path, key="deployments")
    known = load_accelerators()
    bad = [Problem(f"deployments[{i}].accelerator", f"unknown accelerator {d.accelerator!r}")
           for i, d in enumerate(items) if d.accelerator not in known]
    if bad:
        raise InputError(bad, str(path))
    return items


# -- thresholds and the node builder -------------------------------------------------------


@dataclass(frozen=True)
class Thresholds:
    """Registration limits; None = not set. `wan_mbps` caps each node's WAN link (a bandwidth cap,
    applied to the instance's network, not to the node's size)."""

    compute_h100e: float | None = None
    tpp: float | None = None
    memory_gb: float | None = None
    interconnect_gb_s: float | None = None
    wan_mbps: float | None = None

    def problems(self) -> list[Problem]:
        """Every limit that is set must be a finite number > 0 (named by its CLI flag)."""
        out = []
        for flag, value in (("--compute", self.compute_h100e), ("--tpp", self.tpp), ("--memory", self.memory_gb),
                            ("--interconnect", self.interconnect_gb_s), ("--wan-cap", self.wan_mbps)):
            if value is not None and not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
                out.append(Problem(flag, f"must be a number > 0, got {value!r}"))
        return out

    def scaled(self, factor: float, kinds: tuple[str, ...]) -> "Thresholds":
        names = {"compute": "compute_h100e", "tpp": "tpp", "memory": "memory_gb",
                 "interconnect": "interconnect_gb_s", "wan": "wan_mbps"}
        return replace(self, **{names[k]: getattr(self, names[k]) * factor for k in kinds})

    def describe(self) -> str:
        parts = [f"compute <= {self.compute_h100e:g} H100-eq" if self.compute_h100e else "",
                 f"TPP <= {self.tpp:,.6g}" if self.tpp else "",
                 f"memory <= {self.memory_gb:,.6g} GB" if self.memory_gb else "",
                 f"interconnect <= {self.interconnect_gb_s:,.6g} GB/s" if self.interconnect_gb_s else "",
                 f"WAN <= {self.wan_mbps:,.6g} Mb/s" if self.wan_mbps else ""]
        return ", ".join(p for p in parts if p) or "no threshold"


@dataclass
class NodeBuild:
    """The largest node of one accelerator under every limit; count 0 = no node (see `rule`)."""

    accelerator: AcceleratorSpec
    count: int
    binding: list[str]          # the limits that set the count (ties: all)
    rule: str                   # how the count was found, in words and numbers

    @property
    def memory_gb(self) -> float:
        return self.count * self.accelerator.hbm_gb

    @property
    def tflops_fp16(self) -> float:
        return self.count * self.accelerator.peak_tflops["fp16"]

    @property
    def h100_equivalents(self) -> float:
        return self.tflops_fp16 / H100_FP16_TFLOPS

    @property
    def price_usd(self) -> float:
        return self.count * self.accelerator.price_usd

    def hardware(self) -> dict:
        """The node as an inline `fleet.hardware` object the planner accepts."""
        a = self.accelerator
        return {"id": f"{self.count}x{a.id}", "name": f"{self.count}x {a.name}", "accelerator": a.name,
                "accelerators_per_node": self.count, "peak_tflops_per_accelerator": dict(a.peak_tflops),
                "hbm_gb_per_accelerator": a.hbm_gb, "price_usd_per_accelerator": a.price_usd,
                "notes": self.rule, "sources": {f"{k} (per accelerator)": v for k, v in a.sources.items()}}

    def to_dict(self) -> dict[str, Any]:
        return {"accelerator": self.accelerator.id, "count": self.count, "memory_gb": self.memory_gb,
                "tflops_fp16": self.tflops_fp16, "h100_equivalents": self.h100_equivalents,
                "tpp": self.count * self.accelerator.tpp, "price_usd": self.price_usd,
                "binding": self.binding, "rule": self.rule}


def _floor(x: float) -> int:
    """floor with a 1e-9 relative allowance, so that a node exactly at a limit is allowed."""
    return math.floor(x * (1 + 1e-9))


def build_node(acc: AcceleratorSpec, th: Thresholds) -> NodeBuild:
    """n = min over the limits set of floor(limit / per-accelerator figure); an interconnect cap below
    the chip's bandwidth (or a chip whose bandwidth is not published) leaves no node."""
    counts: dict[str, tuple[int, str]] = {}
    if th.compute_h100e is not None:
        n = _floor(th.compute_h100e * H100_FP16_TFLOPS / acc.peak_tflops["fp16"])
        counts["compute"] = (n, f"floor({th.compute_h100e:g} x 990 / {acc.peak_tflops['fp16']:g}) = {n}")
    if th.tpp is not None:
        n = _floor(th.tpp / acc.tpp)
        counts["tpp"] = (n, f"floor({th.tpp:,.6g} / TPP {acc.tpp:,.6g}) = {n}")
    if th.memory_gb is not None:
        n = _floor(th.memory_gb / acc.hbm_gb)
        counts["memory"] = (n, f"floor({th.memory_gb:,.6g} GB / {acc.hbm_gb:g} GB) = {n}")
    if th.interconnect_gb_s is not None:
        bw = acc.interconnect_gb_s
        if bw is None or bw > th.interconnect_gb_s:
            why = "not published" if bw is None else f"{bw:g} GB/s > {th.interconnect_gb_s:g} GB/s"
            counts["interconnect"] = (0, f"chip-to-chip bandwidth {why}: the chip is capped out")
    if not counts:
        raise ValueError("build_node needs at least one of compute, tpp, memory or interconnect "
                         "(the interconnect cap alone does not bound the count)")
    if set(counts) == {"interconnect"}:
        raise ValueError("an interconnect cap alone does not bound the node size; add --compute, --tpp or --memory")
    n = min(c for c, _ in counts.values())
    binding = [k for k, (c, _) in counts.items() if c == n]
    rule = f"{n} x {acc.id}: min of " + "; ".join(f"{k}: {r}" for k, r in counts.items())
    return NodeBuild(acc, max(n, 0), binding, rule)


def check_thresholds(th: Thresholds, accelerators: list[AcceleratorSpec]) -> list[Problem]:
    """Bad thresholds, by flag: not > 0, or below one of every accelerator considered."""
    problems = th.problems()
    if problems:
        return problems
    cap = th.interconnect_gb_s
    if cap is not None and all(a.interconnect_gb_s is None or a.interconnect_gb_s > cap for a in accelerators):
        slowest = min((a for a in accelerators if a.interconnect_gb_s), key=lambda a: a.interconnect_gb_s, default=None)
        problems.append(Problem("--interconnect", f"{cap:g} GB/s is below the chip-to-chip bandwidth of every "
                                f"accelerator considered" + (f" (the lowest is {slowest.id}: "
                                                             f"{slowest.interconnect_gb_s:g} GB/s)" if slowest else "")))
    limits = (("--compute", th.compute_h100e, lambda a: a.h100_equivalents, "H100-eq"),
              ("--tpp", th.tpp, lambda a: a.tpp, "TPP"),
              ("--memory", th.memory_gb, lambda a: a.hbm_gb, "GB"))
    for flag, value, need, unit in limits:
        if value is not None and all(value / need(a) * (1 + 1e-9) < 1 for a in accelerators):   # _floor's < 1
            smallest = min(accelerators, key=need)
            problems.append(Problem(flag, f"{value:g} {unit} is below one accelerator of every kind considered "
                                          f"(the smallest is {smallest.id}: {need(smallest):,.4g} {unit})"))
    return problems or _too_large(limits, accelerators)


def _too_large(limits, accelerators: list[AcceleratorSpec]) -> list[Problem]:
    """The count limits that would build a node of more than MAX_ACCELERATORS_PER_NODE accelerators (the
    schema's bound on fleet.hardware.accelerators_per_node: beyond it the cost model cannot compute), each
    named by its flag with its largest valid value for the accelerators considered. A node's count is the
    smallest of the counts its limits allow, so a limit is too large only where it is the one binding
    (value / per-accelerator figure, compared as floats: 1e308 x 990 would overflow an integer count)."""
    out = []
    for flag, value, need, unit in limits:
        if value is None:
            continue
        over = [a for a in accelerators
                if value / need(a) * (1 + 1e-9) >= MAX_ACCELERATORS_PER_NODE + 1     # _floor's count > the bound
                and all(v is None or v / n(a) >= value / need(a) for _, v, n, _ in limits)]
        if over:
            a = min(over, key=need)
            out.append(Problem(flag, f"must be at most {MAX_ACCELERATORS_PER_NODE * need(a):.6g} {unit} with "
                                     f"{a.id} considered ({need(a):,.4g} {unit} each; a node holds at most "
                                     f"{MAX_ACCELERATORS_PER_NODE:,} accelerators, dtplan's bound), got {value:g}"))
    return out


# -- the planner questions -------------------------------------------------------------------


@dataclass
class Answer:
    """For one accelerator: the node, and the fewest such nodes reaching the target within the limits."""

    node: NodeBuild
    reachable: bool
    nodes: int | None = None
    cost_usd: float | None = None
    time_to_target_days: float | None = None
    model_params: float | None = None
    result: SolveResult | None = None
    binding: list[str] = field(default_factory=list)
    verified: str = ""

    def to_dict(self) -> dict[str, Any]:
        plan = self.result.plan.model_dump() if self.result is not None and self.result.plan else None
        return {"node": self.node.to_dict(), "reachable": self.reachable, "nodes": self.nodes,
                "cost_usd": self.cost_usd, "time_to_target_days": self.time_to_target_days,
                "model_params": self.model_params, "binding": self.binding, "verified": self.verified,
                "plan": plan}


def fit_params(raw: dict, node: NodeBuild) -> float:
    """The largest dense model a node can train (the report's 'max model'): the largest P whose training
    state, P x bytes per parameter (the assumption profile's value for fp16, or for the one precision
    `search.precisions` allows), plus the least activation memory any plan of the space can have on the
    node holding it whole (`physics.least_whole_model_activation_bytes`: 0 unless the profile or the
    instance turns `activation_memory` on) fits the node's memory V; rounded down to 3 significant digits.
    Without activations that is V / beta, as the report computes it; with them the state plus activations
    grows with P, so P is found by bisection below V / beta (docs/thresholds.md, "The fitted model")."""
    probe = copy.deepcopy(raw)
    probe["model"] = {"params": MIN_PARAMS}           # any valid size: only the assumptions are read
    probe["fleet"] = {"hardware": node.hardware(), "nodes": node_cap(raw)}
    if isinstance(probe.get("search"), dict):
        probe["search"].pop("params", None)
    instance = parse_instance(probe, "<fit>")
    precisions = instance.search.precisions or ["fp16"]
    precision = precisions[0] if len(precisions) == 1 else "fp16"
    a = instance.resolved_assumptions()
    bytes_per_param = a.bytes_per_param(precision)
    memory = node.memory_gb * 1e9
    p = memory / bytes_per_param
    if a.activation_memory:
        def fits(x: float) -> bool:
            return x * bytes_per_param + physics.least_whole_model_activation_bytes(a, x, precision,
                                                                                     node.count) <= memory
        lo, hi = 0.0, p                   # state and activations both grow with P: fits(lo), and hi is the state alone
        for _ in range(FIT_BISECTIONS):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if fits(mid) else (lo, mid)
        p = lo
    scale = 10 ** (math.floor(math.log10(p)) - 2)
    return math.floor(p / scale * (1 + 1e-12)) * scale


def node_instance(raw: dict, node: NodeBuild, th: Thresholds, nodes: int, fit: bool) -> dict:
    """`raw` with the node as fleet.hardware, `nodes` nodes, the WAN cap applied, the model fitted if asked."""
    data = copy.deepcopy(raw)
    data.setdefault("fleet", {})
    data["fleet"]["hardware"] = node.hardware()
    data["fleet"]["nodes"] = nodes
    data["fleet"].pop("price_usd_per_accelerator", None)
    limits = data.get("limits")
    if isinstance(limits, dict) and isinstance(limits.get("max_nodes"), int) and limits["max_nodes"] > nodes:
        limits["max_nodes"] = nodes            # the schema wants max_nodes <= fleet.nodes; n nodes is the tighter cap
    if th.wan_mbps is not None:
        wan = data.setdefault("network", {}).setdefault("wan", {})
        for k in ("up_mbps", "down_mbps"):
            wan[k] = min(float(wan.get(k, 100.0)), th.wan_mbps)
    if fit:
        data["model"] = {"params": fit_params(raw, node)}
    return data


def node_cap(raw: dict) -> int:
    return int(raw.get("limits", {}).get("max_nodes") or NODE_CAP)


def node_case(raw: dict, node: NodeBuild, th: Thresholds, fit: bool = False):
    """(instance data, Instance, model parameters or None, node cap) of the node's question, or the
    Answer when there is none (no node, or an instance the node cannot form)."""
    if node.count < 1:
        return Answer(node, False, binding=[f"no node: {node.rule}"])
    cap = node_cap(raw)
    try:
        data = node_instance(raw, node, th, cap, fit)
        instance = parse_instance(data, "<thresholds>")
    except InputError as err:                # e.g. search.precisions asks for fp8 and the chip has none
        return Answer(node, False, binding=[f"not applicable: {p}" for p in err.problems])
    return data, instance, float(data["model"]["params"]) if "params" in data.get("model", {}) else None, cap


def answer(raw: dict, node: NodeBuild, th: Thresholds, fit: bool = False) -> Answer:
    """The fewest nodes (min_cost) reaching the target within every limit of `raw` (the node cap is
    limits.max_nodes, else NODE_CAP; fleet.nodes of `raw` is replaced); verified by re-solving min_time
    with n nodes (feasible: its plan, the fastest with n nodes, is the one reported) and n - 1 nodes
    (infeasible)."""
    case = node_case(raw, node, th, fit)
    if isinstance(case, Answer):
        return case
    data, instance, params, cap = case
    r = solve(instance, objective=MIN_COST, explain_envelope=True)   # dtplan: the envelope bounds that stop it
    if r.status != "optimal":
        return Answer(node, False, model_params=params, result=r,
                      binding=r.infeasibility or [f"no plan with up to {cap:,} nodes reaches the target"])
    n = int(r.plan.nodes)
    at_n = solve(parse_instance(node_instance(raw, node, th, n, fit), "<verify>"), objective=MIN_TIME)
    if at_n.status != "optimal":
        raise AssertionError(f"{node.accelerator.id}: {n} nodes do not reach the target on re-solving")
    if n > 1 and solve(parse_instance(node_instance(raw, node, th, n - 1, fit), "<verify>"),
                       objective=MIN_TIME).status == "optimal":
        raise AssertionError(f"{node.accelerator.id}: {n - 1} nodes also reach the target (not the fewest)")
    return Answer(node, True, n, n * node.price_usd, at_n.objective_value / SECONDS_PER_DAY, params, at_n, r.binding,
                  f"{n:,} nodes reach the target, " + (f"{n - 1:,} do not" if n > 1 else "1 is the least"))


def answer_all(raw: dict, accelerators: list[AcceleratorSpec], th: Thresholds, fit: bool = False,
               progress: Callable[[str], None] | None = None) -> list[Answer]:
    out = []
    for acc in accelerators:
        if progress:
            progress(acc.id)
        out.append(answer(raw, build_node(acc, th), th, fit))
    return out


# -- where the target stops being reachable -----------------------------------------------------


@dataclass
class StopPoint:
    """The thresholds at which the target stops being reachable within a node count and/or budget."""

    accelerator: str
    kinds: tuple[str, ...]
    within: str
    status: str                      # found | never-stops | never-reachable
    reachable_at: Thresholds | None = None       # the lowest thresholds (on the ray) still reachable
    unreachable_at: Thresholds | None = None     # just below: not reachable
    count_reachable: int | None = None
    count_unreachable: int | None = None
    nodes_reachable: int | None = None
    summary: str = ""
    solves: int = 0

    def to_dict(self) -> dict[str, Any]:
        as_dict = lambda t: t and {k: v for k, v in t.__dict__.items() if v is not None}   # noqa: E731
        return {"accelerator": self.accelerator, "kinds": list(self.kinds), "within": self.within,
                "status": self.status, "reachable_at": as_dict(self.reachable_at),
                "unreachable_at": as_dict(self.unreachable_at), "count_reachable": self.count_reachable,
                "count_unreachable": self.count_unreachable, "nodes_reachable": self.nodes_reachable,
                "summary": self.summary, "solves": self.solves}


def within_limits(raw: dict, max_nodes: int | None, budget_usd: float | None) -> tuple[dict, str]:
    """`raw` with the countermeasure's success criterion as limits: at most `max_nodes` nodes
    (limits.max_nodes) and/or at most `budget_usd` dollars (limits.budget_usd)."""
    if max_nodes is None and budget_usd is None:
        raise ValueError("give a node count and/or a budget")
    data = copy.deepcopy(raw)
    limits = data.setdefault("limits", {})
    words = []
    if max_nodes is not None:
        limits["max_nodes"] = int(max_nodes)
        words.append(f"{max_nodes:,} nodes")
    if budget_usd is not None:
        limits["budget_usd"] = float(budget_usd)
        words.append(f"${budget_usd:,.0f}")
    return data, " and ".join(words)


def _count_need(acc: AcceleratorSpec, kind: str) -> float:
    return {"compute": acc.h100_equivalents, "tpp": acc.tpp, "memory": acc.hbm_gb}[kind]


def threshold_value(th: Thresholds, kind: str) -> float | None:
    """The threshold `th` sets on `kind` (compute in H100-equivalents, tpp, memory_gb, wan_mbps,
    interconnect_gb_s), None where it sets none."""
    return {"compute": th.compute_h100e, "tpp": th.tpp, "memory": th.memory_gb, "wan": th.wan_mbps,
            "interconnect": th.interconnect_gb_s}[kind]


def stop_point(raw: dict, acc: AcceleratorSpec, th: Thresholds, kinds: tuple[str, ...],
               max_nodes: int | None = None, budget_usd: float | None = None, fit: bool = False) -> StopPoint:
    """Lower the thresholds named in `kinds` together (all multiplied by one factor s <= 1) until the
    target is no longer reachable within `max_nodes` nodes and/or `budget_usd`.

    Count limits (compute, tpp, memory) act only through the count n per node, so the search runs
    over n and the answer is exact: a bisection proposes n*, then every count below n* is solved (no
    monotonicity assumed; a smaller count that reaches the target restarts the search below it), so
    n* is the smallest count that reaches the target; s* = max over kinds of n* x need / threshold,
    the thresholds at s* allow n* (reachable) and any lower ones at most n* - 1 (none reachable).
    With a WAN cap among the kinds the search runs over s (bisection to 1%, assuming more bandwidth
    never hurts); both sides of the bracket are re-solved."""
    if not kinds or any(k not in ("compute", "tpp", "memory", "wan") for k in kinds):
        raise ValueError(f"kinds must be among compute, tpp, memory, wan; got {kinds}")
    if any(threshold_value(th, k) is None for k in kinds):
        raise ValueError(f"every threshold searched must be set: {kinds}")
    data, within = within_limits(raw, max_nodes, budget_usd)
    out = StopPoint(acc.id, tuple(kinds), within, "found")

    def reachable(t: Thresholds) -> tuple[bool, NodeBuild, Answer | None]:
        node = build_node(acc, t)
        out.solves += 1
        if node.count < 1:
            return False, node, None
        a = _reach(data, node, t, fit)
        return a is not None, node, a

    ok, node, a = reachable(th)
    if not ok:
        out.status, out.summary = "never-reachable", f"not reachable within {within} even at {th.describe()}"
        return out
    count_kinds = [k for k in kinds if k != "wan"]
    if "wan" not in kinds:
        known: dict[int, bool] = {node.count: True}

        def reach_count(c: int) -> bool:
            if c not in known:
                s = max(c * _count_need(acc, k) / threshold_value(th, k) for k in count_kinds)
                known[c] = reachable(th.scaled(s, tuple(count_kinds)))[0]
            return known[c]

        hi = node.count                                   # reachable with hi per node
        while True:
            lo = 0                                        # not reachable with lo per node
            while hi - lo > 1:
                mid = (lo + hi) // 2
                if reach_count(mid):
                    hi = mid
                else:
                    lo = mid
            # the proof that no lower threshold reaches it: every smaller count is re-solved (no
            # monotonicity assumed); a smaller count that reaches it restarts the search below it
            lower = next((c for c in range(hi - 1, 0, -1) if reach_count(c)), None)
            if lower is None:
                break
            hi = lower
        s_hi = max(hi * _count_need(acc, k) / threshold_value(th, k) for k in count_kinds)
        t_hi, t_lo = th.scaled(s_hi, tuple(count_kinds)), th.scaled(s_hi * (1 - 1e-6), tuple(count_kinds))
    else:
        s_lo, s_hi = SCALE_FLOOR, 1.0
        if reachable(th.scaled(s_lo, kinds))[0]:
            out.status = "never-stops"
            out.summary = f"still reachable within {within} at {th.scaled(s_lo, kinds).describe()}"
            return out
        while s_hi / s_lo > BANDWIDTH_STEP:
            mid = math.sqrt(s_lo * s_hi)
            if reachable(th.scaled(mid, kinds))[0]:
                s_hi = mid
            else:
                s_lo = mid
        t_hi, t_lo = th.scaled(s_hi, kinds), th.scaled(s_lo, kinds)
    node_hi = build_node(acc, t_hi)
    a_hi = answer(data, node_hi, t_hi, fit) if node_hi.count >= 1 else None   # fewest nodes, verified n / n - 1
    ok_hi = a_hi is not None and a_hi.reachable
    ok_lo, node_lo, _ = reachable(t_lo)
    out.solves += 1
    if not ok_hi or ok_lo:
        raise AssertionError(f"{acc.id}: the stop point is not verified (reachable at {t_hi.describe()}: {ok_hi}; "
                             f"at {t_lo.describe()}: {ok_lo})")
    out.reachable_at, out.unreachable_at = t_hi, t_lo
    out.count_reachable, out.count_unreachable = node_hi.count, node_lo.count
    out.nodes_reachable = a_hi.nodes
    if "wan" not in kinds and node_lo.count < 1:
        out.status = "never-stops"
        out.summary = (f"{acc.id}: even one accelerator per node reaches the target within {within} "
                       f"({a_hi.nodes:,} nodes); no {'/'.join(kinds)} threshold stops it")
    else:
        out.summary = (f"{acc.id}: reachable within {within} at {t_hi.describe()} ({node_hi.count} per node, "
                       f"{a_hi.nodes:,} nodes); not below it")
    return out


def _reach(data: dict, node: NodeBuild, th: Thresholds, fit: bool) -> Answer | None:
    """The min_cost answer if the target is reachable under `data`'s limits, else None."""
    try:
        instance = parse_instance(node_instance(data, node, th, node_cap(data), fit), "<stop>")
    except InputError:                        # the node does not suit the instance (a precision it lacks)
        return None
    r = solve(instance, objective=MIN_COST)
    if r.status != "optimal":
        return None
    return Answer(node, True, int(r.plan.nodes), int(r.plan.nodes) * node.price_usd, result=r)


# -- collateral damage ---------------------------------------------------------------------------


def caught(d: Deployment, acc: AcceleratorSpec, th: Thresholds) -> list[str]:
    """The limits under which deployment `d` (count x acc) would have to register (strictly above)."""
    out = []
    if th.compute_h100e is not None and d.count * acc.peak_tflops["fp16"] > th.compute_h100e * H100_FP16_TFLOPS * (1 + 1e-9):
        out.append("compute")
    if th.tpp is not None and d.count * acc.tpp > th.tpp * (1 + 1e-9):
        out.append("tpp")
    if th.memory_gb is not None and d.count * acc.hbm_gb > th.memory_gb * (1 + 1e-9):
        out.append("memory")
    if th.interconnect_gb_s is not None and (acc.interconnect_gb_s is None
                                              or acc.interconnect_gb_s > th.interconnect_gb_s):
        out.append("interconnect")
    return out


def collateral(th: Thresholds, deployments: list[Deployment] | None = None,
               accelerators: dict[str, AcceleratorSpec] | None = None) -> list[tuple[Deployment, list[str]]]:
    """Each deployment of the catalog with the limits that catch it ([] = not caught)."""
    accelerators = accelerators or load_accelerators()
    deployments = deployments if deployments is not None else load_deployments()
    return [(d, caught(d, accelerators[d.accelerator], th)) for d in deployments]
