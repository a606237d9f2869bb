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

from planner.cost.score import time_to_target
from planner.cost.setting import Setting
from planner.mip.formulation import build
from planner.solvers import backends
from planner.objectives import min_cost, min_time
from planner.space import DecisionSpace

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


def optimise(setting: Setting, space: DecisionSpace, objective: str, backend: str,
             deadline: float = math.inf):
    """((one-plan batch, value) or None, plans evaluated, proven bound, MipReport)."""
    from planner.solve import optimise as exact_optimise   # the exact search (solver dispatch)
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
    if objective == "min_time":
        best, evaluations, bound = min_time(setting, space, deadline, incumbent_s=t_plan)
        mine = t_plan
    else:
        within = t_plan <= setting.window_s
        best, evaluations, bound = min_cost(setting, space, deadline,
                                             incumbent_nodes=float(plan.nodes[0]) if within else math.inf)
        mine = float(plan.nodes[0] * setting.node_price_usd) if within else math.inf
    report.certify_s = time.perf_counter() - start
    if best is not None:
        b = best[0]
        same = b.mode == plan.mode and b.precision == plan.precision and b.expert_parallel == plan.expert_parallel \
            and all(np.array_equal(getattr(b, k), getattr(plan, k)) for k in
                    ("nodes", "inner_steps", "regional_rounds", "compression", "stages", "group_size",
                     "micro_batches", "activation_compression", "streaming"))
        report.certified_changed_plan = not same
        report.certified_improved = bool(best[1] < mine * (1 - 1e-9))
    return best, evaluations, bound, report
