"""Solve the mixed-integer model with a backend by outer approximation, then certify its plan.

1. `planner.mip.tables` computes the model's numbers with the evaluator; `planner.mip.formulation`
   builds the compact model on a coarse grid (brackets of n, H, R one per octave, a few
   tangents of the convex sync terms). Its optimum is a valid lower bound (a relaxation).
2. The outer-approximation loop: the backend solves the model; the plan it chooses is
   re-scored by the evaluator (an upper bound when it meets every limit); if the two differ,
   the grid is refined at that plan (its n, H and R become grid points, tangents are added
   at its sync terms: there the model becomes exact, so that plan cannot come back with an
   optimistic value) and the model is solved again, until the bound meets the best plan
   found (gap 0 up to 1e-9 in ln T, or the node count for min_cost), or `MAX_ROUNDS`.
   Each round also solves exactly the class the model chose and the most promising others
   (`presolve.solve_promising`: 8, then growing batches while fewer than `EXACT_PLANS` plans were
   scored; min_cost: their fewest nodes within the duration limit, with a plan, fewest least nodes
   first): a logic cut, those classes leave the next models (y = 0).
   max_compute caps each backend round (`COMPUTE_GOING_ON_S`; a capped round still gives a plan and a
   bound) and the loop (`COMPUTE_ROUNDS` rounds).
   The loop's caps are work (rounds, plans scored), not seconds, so that its report does not depend
   on the machine's load; the two exceptions, both wall time, are the user's time limit (`deadline`)
   and the backend's time per max_compute round (docs/mip.md, "What is deterministic").
3. Certification: the exact search of `planner.solvers.bnb` runs with the best plan's value
   as its incumbent. It proves that no plan is better beyond the tie tolerance (1e-12),
   finds one if the solver's tolerances hid it, and breaks ties in the documented order.
   So every answer is the exact optimum of the cost model; `MipReport` says what the
   backend and the loop alone reported, and whether certification changed the plan.

An instance whose relaxation is infeasible is infeasible (a relaxation admits every plan);
it is confirmed by the exact search too.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field

import numpy as np

from planner.objectives import OBJECTIVES, Objective
from planner.cost.score import time_to_target, window_compute
from planner.cost.setting import Setting
from planner.mip.formulation import Grid, build
from planner.mip.presolve import NODES, presolve, presolve_compute, solve_promising
from planner.mip.table_bounds import node_promise
from planner.mip.tables import FormulationError, build_tables, outer_per_step, sync_terms
from planner.solvers.objective_search import max_compute, min_cost, min_time
from planner.solvers import UnsupportedBySolver, backends
from planner.space import DecisionSpace

MAX_ROUNDS = 12
LOG_TOL = 1e-9
COMPUTE_ROUND_S = 2.0    # max_compute: backend time per round of the pools loop (`mixed_mip`); past it that loop stops
                         # and the exact certification (fast from a good incumbent) answers: relaxations can be slow to close
COMPUTE_GOING_ON_S = 1.0  # ... of this module's loop, which goes on after a capped round (exact step, refinement)
COMPUTE_ROUNDS = 3       # max_compute: the loop's rounds before certification (in place of 4 s of wall time; the
                         # loops of bench_mip_build closed in 1 or 2 rounds at load 1.5-4, docs/mip.md)
EXACT_PLANS = 500_000    # the loop's exact step starts no batch beyond its first EXACT_CLASSES classes once this many
                         # plans were scored (`presolve.solve_promising`; in place of the last model round's time, which
                         # depended on the load; on bench_mip_build's 526 instances a step scores at most 210,837 plans,
                         # 115,056 before its last batch, docs/mip.md); 0: EXACT_CLASSES per round only
COMPUTE_LOG_TOL = 1e-4   # max_compute: the loop's gap in ln C (u is continuous: its refined brackets are
                         # U_STEP wide, above the backends' feasibility tolerance); the certification is exact


@dataclass
class MipReport:
    """What the mixed-integer backend did, before certification."""

    backend: str
    status: str                       # optimal (the loop closed its gap) | gap | time_limit | infeasible | error
    objective: float | None           # seconds (min_time), USD (min_cost) or FLOP (max_compute): best plan
                                      # the loop found, re-scored
    bound: float | None               # the proven bound of the last relaxation (upper for max_compute), same units
    gap: float | None                 # relative, |objective - bound| / objective
    time_s: float                     # backend time over all rounds
    nodes: int
    build_s: float                    # tables and models, all rounds
    rounds: int
    columns: int
    rows: int
    nonzeros: int
    backend_status: str = ""          # the backend's own status in the last round
    classes: int = 0                  # classes and fixed plans of the space
    classes_kept: int = 0             # ... left by the presolve (`planner.mip.presolve.presolve`)
    classes_solved: int = 0           # ... of which the loop solved exactly (`planner.mip.presolve.solve_promising`)
    families: dict[str, int] = field(default_factory=dict)
    certify_s: float = 0.0
    certified_changed_plan: bool = False   # the exact search chose another plan (better, or first in tie order)
    certified_improved: bool = False       # ... one better beyond 1e-9
    tables_s: float = 0.0             # of build_s: the tables and the presolve
    transfer_s: float = 0.0           # of time_s: handing each round's model to the backend (`BackendResult.transfer_s`)

    def to_dict(self) -> dict:
        return asdict(self)


def check_supported(setting: Setting, objective: Objective) -> None:
    """UnsupportedBySolver unless the formulation covers this question: min_time, min_cost and
    max_compute (every target kind and replica penalty)."""
    if objective not in OBJECTIVES:
        raise UnsupportedBySolver(f"the mixed-integer model covers min_time, min_cost and max_compute, "
                                  f"not {objective}; use --solver bnb")


def tables_or_refuse(setting: Setting, space: DecisionSpace):
    """The model's tables, or UnsupportedBySolver when the cost model does not factor as the model
    assumes (the check of `planner.mip.tables`): e.g. the blocking-sync overlap of the dtplan physics
    (docs/physics.md), whose exposed sync time is not a term of the log-space sum."""
    if setting.assumptions.search_zero_shards and "hierarchical" in space.modes:
        # dtplan's ZeRO-3 inside hierarchical groups: replicas of Z nodes, G = floor(n Z / k) groups,
        # which the formulation's parties floor(n / k) do not describe
        raise UnsupportedBySolver("the mixed-integer model does not cover these assumptions (ZeRO-3 sharding inside "
                                  "hierarchical groups: search_zero_shards under mode 'hierarchical'); use --solver bnb")
    try:
        return build_tables(setting, space)
    except FormulationError as err:
        raise UnsupportedBySolver(f"the mixed-integer model does not cover these assumptions ({err}); "
                                  f"use --solver bnb") from None


def incumbent_value(setting: Setting, plan, objective: Objective) -> float:
    """The objective of a plan in the model's units (ln T, nodes, or -ln C for max_compute: the
    loop minimises), inf if it misses the duration limit (or reaches no compute)."""
    if objective.maximise:
        c = float(window_compute(setting, plan, setting.target_kind)[setting.target_kind][0])
        return -math.log(c) if c > 0 and math.isfinite(c) else math.inf
    t = float(time_to_target(setting, plan)["time_to_target_s"][0])
    if not t <= setting.window_s:
        return math.inf
    return math.log(t) if objective.by_time else float(plan.nodes[0])


def incumbent_units(setting: Setting, objective: Objective, value: float) -> float:
    """A value in the model's units (ln T, nodes, -ln C) in the objective's (s, USD, FLOP)."""
    if objective.by_time:
        return math.exp(value)
    return math.exp(-value) if objective.maximise else value * setting.node_price_usd



def backend_round(solver, model, deadline: float, compute: bool, report: MipReport, rounds: int,
                  round_s: float | None = None):
    """One backend solve of an outer-approximation round (this module's loop and the pools loop of
    `planner.solvers.mixed_mip`): the time left, capped per round for max_compute (`round_s`, by default
    `COMPUTE_ROUND_S`; wall time: `Backend.solve` takes no work limit; the certification answers what is
    left), and the report's counters."""
    remaining = None if math.isinf(deadline) else max(deadline - time.perf_counter(), 0.01)
    if compute:
        remaining = min(remaining or math.inf, COMPUTE_ROUND_S if round_s is None else round_s)
    r = solver.solve(model, remaining)
    report.time_s += r.time_s
    report.transfer_s += r.transfer_s
    report.nodes += r.nodes
    report.rounds, report.backend_status = rounds, r.status
    return r


def raised_bound(bound: float, r) -> float:
    """The loop's proven bound after a round: the backend's bound (its objective, when optimal, if lower)."""
    if r.bound is not None and r.status in ("optimal", "time_limit"):
        return max(bound, min(r.bound, r.objective) if r.status == "optimal" and r.objective is not None else r.bound)
    return bound

def outer_approximation(setting: Setting, space: DecisionSpace, objective: Objective, backend: str,
                        deadline: float = math.inf):
    """(best plan or None, its value in model units, MipReport) from the OA loop alone.

    The loop stops when its bound is within LOG_TOL of the best plan's ln T (min_time; each
    round's backend solves to that absolute gap) or within a node (min_cost)."""
    check_supported(setting, objective)
    solver = backends()[backend]
    start = time.perf_counter()
    full = tables_or_refuse(setting, space)
    compute = objective.maximise
    tables, best_plan, _, solved = presolve_compute(full) if compute else presolve(full, objective)
    best = incumbent_value(setting, best_plan, objective) if best_plan is not None else math.inf
    if not math.isfinite(best):
        best_plan = None
    grid = Grid.initial_compute(tables, best) if compute else Grid.initial(tables)
    build_s = time.perf_counter() - start
    report = MipReport(backend, "error", None, None, None, 0.0, 0, build_s, 0, 0, 0, 0,
                       classes=len(full.sync) + len(full.fixed), classes_kept=len(tables.sync) + len(tables.fixed),
                       tables_s=build_s)
    bound = -math.inf
    if not tables.sync and not tables.fixed:          # no plan meets the limits independent of n, H, R
        if best_plan is not None:                     # ... or none but the presolve's incumbent could beat it
            report.status = report.backend_status = "optimal"
            report.objective = report.bound = incumbent_units(setting, objective, best)
            report.gap = 0.0
            return best_plan, best, report
        report.status = report.backend_status = "infeasible"
        report.bound = 0.0 if compute else math.inf
        return None, math.inf, report
    tol = LOG_TOL if objective.by_time else COMPUTE_LOG_TOL if objective.maximise else 1e-6
    measure = NODES if objective.by_cost else objective.measure(setting.target_kind)
    promise = node_promise(tables.class_least_nodes, tables.class_lower) \
        if objective.by_cost and tables.class_least_nodes is not None else None   # None: by class_lower
    for rounds in range(1, (COMPUTE_ROUNDS if compute else MAX_ROUNDS) + 1):
        start = time.perf_counter()
        f = build(tables, grid, objective, cutoff=best, solved=frozenset(solved))
        report.build_s += time.perf_counter() - start
        r = backend_round(solver, f.model, deadline, compute, report, rounds, COMPUTE_GOING_ON_S)
        stop, bound = settle_round(r, report, best_plan is not None, best, bound)
        if stop and compute and r.status == "time_limit" and time.perf_counter() < deadline:
            # max_compute: the backend's own (wall) cap met before it had a plan, as on a loaded machine:
            # the exact step goes on from the most promising classes, as it would after a plan
            batch, best_plan, best, bound = exact_step(tables, None, solved, best_plan, best, bound, deadline,
                                                       measure, promise)
            report.classes_solved += len(batch)
            if bound >= best - tol:
                report.status = "optimal"
            if batch and bound < best - tol and rounds < COMPUTE_ROUNDS:
                continue
            break
        if stop:
            break
        plan, q, ab = f.decode()
        value = incumbent_value(setting, plan, objective)
        if value < best:
            best_plan, best = plan, value
        if round_ends_loop(r, report, bound, best - tol, compute):
            break
        newly_solved = f.chosen is not None and f.chosen not in solved
        if newly_solved:       # the chosen class and the next most promising ones, solved exactly
            batch, best_plan, best, bound = exact_step(tables, f.chosen, solved, best_plan, best, bound, deadline,
                                                       measure, promise)
            report.classes_solved += len(batch)
            if bound >= best - tol:
                report.status = "optimal"
                break
        n, h, rr = f.point
        u = None
        if compute and f.chosen is not None:      # the plan's own u = ln(window tokens): a top of a u bracket
            e = tables.sync[f.chosen]
            u = e.u_const + math.log(n) - float(outer_per_step(e, tables, n, h, rr))
            q, ab = sync_terms(e, tables, n, h, rr)     # the plan's own, not the model's (free when slack)
        refined = grid.refine(n, h, rr, q, ab, f.gain if tables.quality_target and not compute else None, u,
                              tables.sync[f.chosen].label if compute and f.chosen is not None else None)
        if time.perf_counter() >= deadline:
            report.status = "time_limit"
            break
        if not (refined or newly_solved):
            report.status = "gap"          # nothing left to refine at the model's plan (tolerances)
            break
    else:
        report.status = "gap"
    close_report(report, f.size(), f.families(), setting, objective, best, bound)
    return best_plan, best, report


def exact_step(tables, first: int | None, solved: set, best_plan, best: float, bound: float, deadline: float,
               measure: str, promise):
    """A round's exact step (`presolve.solve_promising` from class `first`, the model's choice, or None: the
    most promising): (the classes it solved, added to `solved`; the best plan and value; the bound, the best
    value once every class is solved exactly, since the presolve scored every fixed plan of a space with
    classes)."""
    plan_c, value_c, batch = solve_promising(tables, first, solved, best, deadline, measure, EXACT_PLANS, promise)
    solved.update(batch)
    if value_c < best:
        best_plan, best = plan_c, value_c
    if len(solved) == len(tables.sync):
        bound = max(bound, best)
    return batch, best_plan, best, bound


def settle_round(r, report: MipReport, found: bool, best: float, bound: float) -> tuple[bool, float]:
    """After a backend round of an outer-approximation loop: (whether the loop stops, its bound). An
    infeasible model (no plan better than the incumbent, or none at all when none was `found`) or a
    round without a solution stops it; else the bound is raised (`raised_bound`)."""
    if r.status == "infeasible":
        report.status = "infeasible" if not found else "optimal"
        return True, math.inf if not found else best
    bound = raised_bound(bound, r)
    if not r.has_solution:
        report.status = r.status
        return True, bound
    return False, bound


def round_ends_loop(r, report: MipReport, bound: float, wanted: float, compute: bool) -> bool:
    """Whether the loop ends after a round whose plan was scored: its bound reached `wanted` (the best
    value less the tolerance: optimal), or the backend stopped short. max_compute: a round stopped at its
    own cap (`COMPUTE_GOING_ON_S`) still chose a plan of the model and proved a bound; the loop goes on
    (exact step, refinement) up to its last round (`COMPUTE_ROUNDS`)."""
    if bound >= wanted:
        report.status = "optimal"
        return True
    if r.status != "optimal" and not (compute and r.status == "time_limit"):
        report.status = r.status
        return True
    return False


def close_report(report: MipReport, size: dict, families: dict, setting: Setting, objective: Objective,
                 best: float, bound: float) -> None:
    """The loop's last model's size and families, its best value and bound in the objective's units, the gap."""
    report.columns, report.rows, report.nonzeros = size["columns"], size["rows"], size["nonzeros"]
    report.families = families
    to_units = lambda v: incumbent_units(setting, objective, v)
    if math.isfinite(best):
        report.objective = to_units(best)
    if math.isfinite(bound):
        report.bound = to_units(min(bound, best)) if math.isfinite(best) else to_units(bound)
    elif objective.maximise and bound == math.inf:      # proven: no plan reaches any compute
        report.bound = 0.0
    if report.objective is not None and report.bound is not None and report.objective > 0:
        report.gap = max(0.0, abs(report.objective - report.bound) / report.objective)


def optimise(setting: Setting, space: DecisionSpace, objective: Objective, backend: str, deadline: float = math.inf):
    """((one-plan batch, value) or None, plans evaluated, proven bound, MipReport)."""
    plan, value, report = outer_approximation(setting, space, objective, backend, deadline)
    start = time.perf_counter()
    if plan is None:
        # the exact search confirms: the objective's branch and bound (as `planner.solvers.uniform.optimise`
        # runs it with solver "bnb"; a MIP backend is used only where its bounds hold)
        exact = max_compute if objective.maximise else min_time if objective.by_time else min_cost
        found, evaluations, bound = exact(setting, space.for_objective(setting, objective), deadline)
        report.certify_s = time.perf_counter() - start
        report.certified_changed_plan = found is not None
        return found, evaluations, bound, report
    if objective.by_time:
        best, evaluations, bound = min_time(setting, space, deadline, incumbent_s=math.exp(value))
    elif objective.maximise:
        best, evaluations, bound = max_compute(setting, space, deadline, incumbent_compute=math.exp(-value))
    else:
        best, evaluations, bound = min_cost(setting, space, deadline, incumbent_nodes=value)
    mine = incumbent_units(setting, objective, value)
    report.certify_s = time.perf_counter() - start
    if best is not None:
        report.certified_changed_plan = not same_plan(best[0], plan)
        report.certified_improved = bool(best[1] > mine * (1 + 1e-9) if objective.maximise
                                         else best[1] < mine * (1 - 1e-9))
    return best, evaluations, bound, report


def same_plan(a, b) -> bool:
    """Whether two one-plan batches hold the same plan (every decision)."""
    return a.mode == b.mode and a.precision == b.precision and a.expert_parallel == b.expert_parallel \
        and all(np.array_equal(getattr(a, k), getattr(b, k)) for k in
                ("nodes", "inner_steps", "regional_rounds", "compression", "stages", "group_size",
                 "micro_batches", "activation_compression", "streaming"))
