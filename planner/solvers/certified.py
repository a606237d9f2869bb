"""Solve the mixed-integer model with a backend, then certify its plan with the exact search.

1. `planner.mip.formulation.build` writes the space as a MILP (tables from the evaluator).
2. The backend solves it: a plan, its objective and a bound, up to the solver's
   tolerances (feasibility 1e-6 on log-time rows, integrality 1e-6).
3. The plan is re-scored by the evaluator, and the exact search of `planner.solvers.bnb`
   runs with that value as its incumbent: it proves that no plan is better beyond the
   tie tolerance (1e-12), finds one if the solver's tolerances hid it, and breaks ties
   in the documented order. So every answer is the exact optimum of the cost model,
   whichever backend produced the incumbent; `MipReport` says what the backend alone
   reported and whether certification changed its plan.

An instance the backend finds infeasible is confirmed by the exact search too.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field

import numpy as np

from planner.solvers import bnb
from planner.cost.score import time_to_target
from planner.cost.setting import Setting
from planner.mip.formulation import build, estimate_size
from planner.solvers import UnsupportedBySolver, backends
from planner.space import DecisionSpace

MAX_NONZEROS = 20_000_000     # above this the model is not built (memory and build time): say so


class ModelTooLarge(UnsupportedBySolver):
    """The model would be too large to build here."""


@dataclass
class MipReport:
    """What the mixed-integer backend did, before certification."""

    backend: str
    status: str
    objective: float | None           # seconds (min_time) or USD (min_cost), as the backend reported it
    bound: float | None               # the backend's proven bound, same units
    gap: float | None
    time_s: float
    nodes: int
    build_s: float
    columns: int
    rows: int
    nonzeros: int
    families: dict[str, int] = field(default_factory=dict)
    certify_s: float = 0.0
    certified_changed_plan: bool = False   # the exact search chose another plan (better, or first in tie order)
    certified_improved: bool = False       # ... one better beyond 1e-9 (the backend's tolerances hid it)

    def to_dict(self) -> dict:
        return asdict(self)


def check_size(setting: Setting, space: DecisionSpace) -> dict[str, int]:
    size = estimate_size(setting, space)
    if size["nonzeros"] > MAX_NONZEROS:
        raise ModelTooLarge(
            f"the mixed-integer model would have about {size['nonzeros']:,} non-zeros ({size['binaries']:,} "
            f"binaries; eta_R couples n and H, so it grows as n_max x R_max x H_max); narrow the search "
            f"(search.max_inner_steps, fleet.nodes) or use --solver bnb")
    return size


def optimise(setting: Setting, space: DecisionSpace, objective: str, backend: str,
             deadline: float = math.inf):
    """((one-plan batch, value) or None, plans evaluated, proven bound, MipReport)."""
    from planner.solve import optimise as exact_optimise, _best   # the exact search and its tie-break
    check_size(setting, space)
    solver = backends()[backend]
    start = time.perf_counter()
    formulation = build(setting, space, objective)
    build_s = time.perf_counter() - start
    remaining = None if math.isinf(deadline) else max(deadline - time.perf_counter(), 0.01)
    r = solver.solve(formulation.model, remaining)
    m = formulation.model
    to_units = (lambda v: None if v is None else math.exp(v)) if objective == "min_time" else (lambda v: v)
    report = MipReport(backend, r.status, to_units(r.objective), to_units(r.bound), r.gap, r.time_s, r.nodes,
                       build_s, m.n_cols, m.n_rows, m.n_nonzeros, m.families())
    start = time.perf_counter()
    if r.x is None:
        found, evaluations, bound = exact_optimise(setting, space, objective, deadline)
        report.certify_s = time.perf_counter() - start
        report.certified_changed_plan = found is not None
        return found, evaluations, bound, report
    plan = formulation.decode(r.x)
    t_plan = float(time_to_target(setting, plan)["time_to_target_s"][0])
    h_max, r_max = space.max_inner_steps, space.max_regional_rounds
    groups = bnb.batches_most_promising_first(setting, space)
    evaluations = 0
    if objective == "min_time":
        bound = min(t_plan, setting.window_s) * (1 + bnb.TIE_REL) if np.isfinite(t_plan) else setting.window_s
        found = []
        for c in groups:
            f = bnb.minimise_time(setting, c, h_max, r_max, bound, deadline)
            evaluations += f.evaluations
            if f.time_s.size:
                found.append(f)
                bound = min(bound, float(f.time_s.min()) * (1 + bnb.TIE_REL))
        best = _best(setting, found)
        if best is not None and best[1] > setting.window_s:
            best = None
    else:
        sentinel = float(plan.nodes[0]) + 1 if t_plan <= setting.window_s else math.inf   # at_most is exclusive
        fewest = sentinel
        for c in groups:
            n, count, _ = bnb.fewest_nodes_within(setting, c, h_max, r_max, setting.window_s,
                                                     at_most=fewest, deadline=deadline)
            fewest, evaluations = min(fewest, n), evaluations + count
        if fewest == sentinel:       # the backend's plan was not within the limit after all: search it all
            found, count, bound = exact_optimise(setting, space, objective, deadline)
            report.certify_s = time.perf_counter() - start
            report.certified_changed_plan = True
            return found, evaluations + count, bound, report
        best = None
        if math.isfinite(fewest):
            found = []
            for c in groups:
                at = bnb.with_nodes(c, int(fewest))
                if at is not None:
                    f = bnb.minimise_time(setting, at, h_max, r_max, setting.window_s)
                    evaluations += f.evaluations
                    found.append(f)
            best = _best(setting, found)
            if best is not None:
                best = (best[0], float(best[0].nodes[0] * setting.node_price_usd))
    report.certify_s = time.perf_counter() - start
    if best is not None:
        same = all(np.array_equal(getattr(best[0], k), getattr(plan, k)) for k in
                   ("nodes", "inner_steps", "regional_rounds", "compression", "stages", "group_size",
                    "micro_batches", "activation_compression", "streaming")) and best[0].mode == plan.mode \
            and best[0].precision == plan.precision and best[0].expert_parallel == plan.expert_parallel
        report.certified_changed_plan = not same
        mine = t_plan if objective == "min_time" else float(plan.nodes[0] * setting.node_price_usd)
        report.certified_improved = bool(best[1] < mine * (1 - 1e-9))
    return best, evaluations, math.inf, report
