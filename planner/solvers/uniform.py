"""The search of one resolved setting by solver name, and what a solve returns.

Layer: search (docs/architecture.md). `optimise` runs the exact branch and bound (`bnb`, through the
objective's search in `planner.solvers.objective_search`), the exhaustive oracle, or a MIP backend certified by the
branch and bound (`planner.solvers.certified`) on one `Setting` and `DecisionSpace`; the solve of an
instance (`planner.solve.solve`: every candidate model size, a fleet of pools through
`planner.solvers.mixed`) and the pool solvers call it. `SolveResult` is the answer of a solve;
`plan_from_batch`, `binding_limits` and `explain_infeasible` build its parts.
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from planner.cost import envelope, physics
from planner.cost.assumptions import PIPELINE_SCHEDULES
from planner.cost.duration import SECONDS_PER_DAY
from planner.cost.setting import PlanBatch, Setting
from planner.evaluate import Evaluation
from planner.objectives import MAX_COMPUTE, MIN_TIME, Objective
from planner.schema.errors import InputError, Problem
from planner.schema.plan import Plan, parse_plan
from planner.solvers import bnb
from planner.solvers.objective_search import best_of, max_compute, search
from planner.space import DecisionSpace

SOLVERS = ("bnb", "highs", "scip", "exhaustive")
MIP_SOLVERS = ("highs", "scip")          # planner.mip + planner.solvers (HiGHS via Pyomo, SCIP via OR-Tools), certified
DEFAULT_SOLVER = "bnb"                   # chosen by scripts/bench_solve.py (docs/mip.md)
AGREEMENT_REL = 1e-9


@dataclass
class SolveResult:
    """What a solve found, how sure it is, and how long it took."""

    objective: Objective
    solver: str
    status: str                              # optimal | time_limit | infeasible
    objective_value: float | None            # seconds (min_time), USD (min_cost), FLOP (max_compute)
    best_bound: float | None                 # proven lower (min_*) or upper (max_compute) bound
    gap: float | None
    solve_time_s: float
    evaluations: int
    plan: Plan | None = None
    evaluation: Evaluation | None = None
    binding: list[str] = field(default_factory=list)
    infeasibility: list[str] = field(default_factory=list)
    space_size: int | None = 0               # plans in the space searched (every n, H, R; after exact reductions);
                                             # None: not counted (the time limit came first, or `space_size_why`)
    space_size_why: str = "many parts (docs/fleet.md)"   # why a space finished in time was not counted
    model_params: float | None = None        # total parameters of the model the plan trains
    candidates: list[dict[str, Any]] = field(default_factory=list)   # per candidate size (search.params)
    compute_kind: str | None = None          # max_compute: c_quality or c_local
    mip: list[dict[str, Any]] = field(default_factory=list)   # what a MIP backend reported, per size solved
    # infeasible only by the duration limit: the fastest plan's time to target (s), proven; else None
    fastest_time_s: float | None = None
    beyond_evidence: dict[str, Any] | None = None   # infeasible inside the evidence envelope: the answer beyond it

    def to_dict(self) -> dict[str, Any]:
        return {
            "objective": self.objective.key, "solver": self.solver, "status": self.status,
            "objective_value": self.objective_value, "best_bound": self.best_bound, "gap": self.gap,
            "solve_time_s": self.solve_time_s, "evaluations": self.evaluations, "space_size": self.space_size,
            "model_params": self.model_params, "compute_kind": self.compute_kind, "candidates": self.candidates,
            "mip": self.mip,
            "plan": self.plan.model_dump() if self.plan else None,
            "binding": self.binding, "infeasibility": self.infeasibility, "fastest_time_s": self.fastest_time_s,
            **({} if self.beyond_evidence is None else {"beyond_evidence": self.beyond_evidence}),
            "evaluation": self.evaluation.to_dict() if self.evaluation else None,
        }

    def to_frame(self):
        """One row (pandas DataFrame): status, objective, bound, gap, days, cost, plan fields."""
        from planner.frames import solve_frame
        return solve_frame(self)


def optimise(setting: Setting, space: DecisionSpace, objective: Objective, deadline: float = math.inf,
             solver: str = "bnb", reports: list | None = None):
    """((one-plan batch, objective value) or None, plans evaluated, proven bound from the part of
    the space left unsearched) for a resolved setting.

    min_time / min_cost: the value is seconds / USD and the bound a lower bound (inf when the
    search finished). max_compute: the value is FLOP (C_quality or C_local per
    `setting.target_kind`) and the bound an upper bound (0 when the search finished).
    The space's reductions are those exact for the objective (`DecisionSpace.for_objective`).

    `solver`: "bnb" (the exact branch and bound), "exhaustive" (every plan scored), or a
    MIP backend ("highs", "scip": min_time, min_cost and max_compute, C_local and C_quality targets;
    its answer is certified by the branch and bound, and what it reported is appended to `reports`).
    """
    space = space.for_objective(setting, objective)
    if solver != "exhaustive":
        solver, space = without_bounds_if_needed(setting, space, solver)
    if solver in MIP_SOLVERS:
        from planner.solvers import certified
        found, evaluations, bound, report = certified.optimise(setting, space, objective, solver, deadline)
        if reports is not None:
            reports.append(report)
        return found, evaluations, bound
    if solver == "exhaustive":
        from planner.solvers import exhaustive
        found, evaluations, complete = exhaustive.optimise_until(setting, space, objective, deadline)
        if not complete:              # plans left unscored at the deadline: no bound on them
            return found, evaluations, objective.unknown_bound
        return found, evaluations, objective.empty_bound
    return search(objective, setting, space, deadline)


def solver_used(solver: str, settings: list[Setting]) -> str:
    """The solver that answered: "exhaustive" where `without_bounds_if_needed` scored every
    plan because the branch and bound's bounds do not hold for the constants, else `solver`."""
    if solver == "exhaustive":
        return solver
    from planner.solvers import monotone
    return "exhaustive" if any(monotone.check(s).unsupported for s in settings) else solver


def without_bounds_if_needed(setting: Setting, space: DecisionSpace, solver: str) -> tuple[str, DecisionSpace]:
    """("exhaustive", the space without its streaming and micro-batch reductions) when a
    monotonicity the branch and bound's bounds need fails with no fallback bound
    (`planner.solvers.monotone`; those reductions rest on the same facts) and that space is
    small enough to score every plan; raises `InputError` naming the constants when it is
    not; else (`solver`, `space`) unchanged."""
    from planner.solvers import monotone
    problems = monotone.check(setting).unsupported
    if not problems:
        return solver, space
    streaming = (True, False) if space.streaming == (True,) and space.streaming_off_allowed else space.streaming
    full = dataclasses.replace(space, streaming=streaming, all_micro_batches=True)
    if full.size(setting) <= monotone.EXHAUSTIVE_MAX_PLANS:
        return "exhaustive", full
    raise InputError([Problem(p.path, f"{p.message}; no exact search bound holds without it and the space "
                                      f"({full.size(setting):,} plans) is too large to score every plan")
                      for p in problems])


def plan_from_batch(b: PlanBatch, i: int, is_moe: bool) -> Plan:
    """A user-facing Plan from row i of a batch (only the fields its mode uses; the
    expert-parallel scope always stated for a MoE model, never for a dense one)."""
    data: dict[str, Any] = {"mode": b.mode, "nodes": int(b.nodes[i]), "precision": b.precision}
    if b.mode != "pipeline_wan":
        data.update(inner_steps=int(b.inner_steps[i]), compression=float(b.compression[i]),
                    streaming=bool(b.streaming[i]))
    if b.mode in ("flat", "hierarchical") and int(b.zero_shards[i]) > 1:     # ZeRO-3 replicas the planner chose (dtplan)
        data["zero_shards"] = int(b.zero_shards[i])
    if b.mode == "hierarchical":
        data.update(group_size=int(b.group_size[i]), regional_rounds=int(b.regional_rounds[i]))
    if b.mode in ("pp_group", "pipeline_wan"):
        data.update(stages=int(b.stages[i]), micro_batches=int(b.micro_batches[i]),
                    activation_compression=float(b.activation_compression[i]))
        if int(b.schedule[i]):      # a schedule the planner chose (dtplan), not the profile's
            data["pipeline_schedule"] = PIPELINE_SCHEDULES[int(b.schedule[i]) - 1]
    if is_moe:
        data["expert_parallel"] = b.expert_parallel
    return parse_plan(data, "<solver>")


def binding_limits(e: Evaluation, space: DecisionSpace, objective: Objective = MIN_TIME) -> list[str]:
    """Limits and search bounds the optimum sits on (where relaxing them could help)."""
    b, v, s = e.batch, e.values, e.setting
    out = []
    n = int(b.nodes[0])
    if n == space.max_nodes:
        out.append(f"node-limit: uses all {n} nodes available")
    if s.budget_usd is not None and (n + 1) * s.node_price_usd > s.budget_usd:
        out.append(f"budget-limit: one more node would exceed ${s.budget_usd:,.0f}")
    if not objective.within_window:
        out.append(f"duration-limit: the run lasts the whole {s.window_s / SECONDS_PER_DAY:,.1f} days")
    elif v["time_to_target_s"] > 0.999 * s.window_s:
        out.append(f"duration-limit: {v['time_to_target_s'] / SECONDS_PER_DAY:,.1f} of "
                   f"{s.window_s / SECONDS_PER_DAY:,.1f} days")
    if b.mode in ("pp_group", "pipeline_wan") and int(b.stages[0]) == int(v["min_stages"]):
        out.append(f"memory-cap: {int(b.stages[0])} stages, the fewest that hold the model")
    if v["synchronised"] and int(b.inner_steps[0]) == space.max_inner_steps:
        out.append(f"search bound: H = max_inner_steps = {space.max_inner_steps}")
    if v["synchronised"] and float(b.compression[0]) == max(space.compression):
        out.append(f"search bound: compression {float(b.compression[0]):g}x, the largest allowed")
    if b.mode == "hierarchical" and int(b.regional_rounds[0]) == space.max_regional_rounds:
        out.append(f"search bound: R = max_regional_rounds = {space.max_regional_rounds}")
    if envelope.on(s.assumptions):      # the search kept inside the evidence (docs/quality.md)
        out += envelope.binding(v, float(b.compression[0]), s.assumptions.bits_per_value(b.precision),
                                s.assumptions.compressor) + [envelope.ENVELOPE_NOTE]
    return out


def whole_model_memory(s: Setting, space: DecisionSpace) -> list[str]:
    """With activation memory on (dense models), the memory bound a node holding the whole model breaks, and by
    how much: its state in the lightest precision searched plus the least activations any plan can hold with
    it (`physics.least_whole_model_activation_bytes`) against the node's memory; [] when that fits or the
    activations are off. Such plans (flat and hierarchical replicas) are then out, and only pipeline stages
    or ZeRO-3 over several nodes can hold the model."""
    a = s.assumptions
    if not a.activation_memory or s.is_moe:
        return []
    lightest = min(space.precisions, key=a.bytes_per_param)
    state = s.params * a.bytes_per_param(lightest)
    act = physics.least_whole_model_activation_bytes(a, s.params, lightest, s.accelerators_per_node, s.hidden_size)
    if state + act <= s.memory_bytes:
        return []
    return [f"memory-cap: a node holding the whole model (a flat or hierarchical replica) needs {state / 1e9:,.1f} GB "
            f"of training state in {lightest} and at least {act / 1e9:,.1f} GB of activations (one sequence per "
            f"micro-batch, activation_recompute {a.activation_recompute}), {(state + act) / 1e9:,.1f} GB on a "
            f"{s.memory_bytes / 1e9:,.1f} GB node: {(state + act - s.memory_bytes) / 1e9:,.1f} GB over, so only "
            f"pipeline stages or ZeRO-3 over several nodes hold it"]


def explain_infeasible(s: Setting, space: DecisionSpace,
                       deadline: float = math.inf) -> tuple[list[str], float | None]:
    """Which limits cannot be met together, in words, and the fastest plan's time to target in
    seconds when only the duration limit is missed (proven fastest; else None). Past `deadline`
    (time.perf_counter()) the searches for the closest plan stop; the limits that do not depend
    on H and R are then stated."""
    from planner.solvers import exhaustive, monotone
    batches = [] if time.perf_counter() >= deadline else list(bnb.batches(s, space))
    full = None           # constants with no valid search bound: every plan scored, as `optimise` does
    if batches and monotone.check(s).unsupported:
        try:
            _, full = without_bounds_if_needed(s, space, "bnb")
        except InputError:
            batches = []  # too many plans to score: state what each limit allows
    if batches and s.target_kind == "c_quality":
        # C_quality grows with the run: the target is missed exactly when the most C_quality
        # within the limit falls short (and the time bound is weak near the loss floor).
        if full is not None:
            most, _ = exhaustive.optimise(s, full, MAX_COMPUTE)
            upper = most[1] if most is not None else 0.0
        else:
            most, _, upper = max_compute(s, space.for_objective(s, MAX_COMPUTE), deadline)
        if most is not None and upper <= most[1] * (1 + bnb.TIE_REL):
            at_goodput = f" at goodput {s.goodput:g}" if s.goodput < 1 else ""
            return [f"duration-limit: the most C_quality any plan reaches in {s.window_s / SECONDS_PER_DAY:,.1f} "
                    f"days{at_goodput} is {most[1]:.3e} FLOP, the target is {s.target:.3e} FLOP"], None
    elif batches:
        if full is not None:      # the fastest plan whatever the duration limit, every plan scored
            fastest, _ = exhaustive.optimise(s.replace(window_s=math.inf), full, MIN_TIME)
            found = []
        else:
            found = [bnb.minimise_time(s, b, space.max_inner_steps, space.max_regional_rounds, deadline=deadline)
                     for b in batches]
            fastest = best_of(s, found)
        if fastest is not None and all(f.open_bound == math.inf for f in found):
            at_goodput = f" at goodput {s.goodput:g}" if s.goodput < 1 else ""
            return [f"duration-limit: the fastest plan reaches the target in {fastest[1] / SECONDS_PER_DAY:,.1f} "
                    f"days{at_goodput}, the limit is {s.window_s / SECONDS_PER_DAY:,.1f} days",
                    *whole_model_memory(s, space)], float(fastest[1])
    reasons = whole_model_memory(s, space)
    # No plan meets the limits that do not depend on H and R: say what each allows.
    a = s.assumptions
    lightest = min(space.precisions, key=a.bytes_per_param)
    state_gb = s.params * a.bytes_per_param(lightest) / 1e9
    stages = int(np.ceil(s.params * a.bytes_per_param(lightest) / s.memory_bytes))
    affordable = (math.inf if s.budget_usd is None or s.node_price_usd == 0
                  else math.floor(s.budget_usd / s.node_price_usd))
    reasons.insert(0, f"memory-cap: the training state is {state_gb:,.0f} GB in {lightest}; a node holds "
                   f"{s.memory_bytes / 1e9:,.0f} GB, so a copy of the model needs at least {stages} pipeline stages"
                   + (f" (search.max_stages = {space.max_stages})" if stages > space.max_stages else ""))
    reasons.append(f"node-limit: at most {space.max_nodes} nodes" + (
        f"; one pipeline of {stages} stages needs {stages}, two DiLoCo groups of them {2 * stages}"
        if stages > 1 else ""))
    if math.isfinite(affordable):
        reasons.append(f"budget-limit: ${s.budget_usd:,.0f} buys {affordable} nodes at ${s.node_price_usd:,.0f} each")
    if s.is_moe:
        reasons.append("mixture of experts: expert parallelism can cut the state per node in flat and "
                       "hierarchical modes (search.expert_parallel)")
    if time.perf_counter() >= deadline:
        reasons.append("time limit: reached while explaining, so the closest plan to the limits was not "
                       "searched for; the lines above say what each limit allows")
    return reasons, None
