"""HiGHS backend: Pyomo's interface to highspy.

Options as measured in ../shared/spec/FORMULATION_NOTES.md: relative gap 0 and an
absolute gap of 1e-9 (the objective is ln T: the default 1e-4 would be a 0.01% error
in T), one thread, a fixed seed.
"""

from __future__ import annotations

import math
import time

from planner.solvers import BackendResult

OPTIONS = {"mip_rel_gap": 0.0, "mip_abs_gap": 1e-9, "threads": 1, "random_seed": 0}


class HighsBackend:
    name = "highs"

    def solve(self, model, time_limit_s: float | None = None) -> BackendResult:
        from pyomo.contrib.appsi.base import TerminationCondition as TC
        from pyomo.contrib.appsi.solvers import Highs
        start = time.perf_counter()
        solver = Highs()
        solver.config.stream_solver = False
        solver.config.load_solution = False
        if time_limit_s is not None:
            solver.config.time_limit = max(float(time_limit_s), 0.01)
        solver.highs_options = dict(OPTIONS)
        r = solver.solve(model)
        elapsed = time.perf_counter() - start
        nodes = int(getattr(solver._solver_model.getInfo(), "mip_node_count", 0)) if solver._solver_model else 0
        if r.termination_condition == TC.infeasible:
            return BackendResult(self.name, "infeasible", None, None, None, elapsed, nodes)
        objective = r.best_feasible_objective
        bound = r.best_objective_bound
        if objective is not None:
            r.solution_loader.load_vars()
        bound = bound if bound is not None and math.isfinite(bound) else None
        gap = None if objective is None or bound is None else max(0.0, objective - bound)
        if r.termination_condition == TC.optimal:
            return BackendResult(self.name, "optimal", objective, bound if bound is not None else objective,
                                 gap or 0.0, elapsed, nodes)
        if r.termination_condition in (TC.maxTimeLimit, TC.interrupted, TC.maxIterations):
            return BackendResult(self.name, "time_limit", objective, bound, gap, elapsed, nodes)
        return BackendResult(self.name, "error", objective, bound, gap, elapsed, nodes,
                             message=str(r.termination_condition))
