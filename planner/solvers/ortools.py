"""OR-Tools backend: Pyomo writes the model as MPS with its own (symbolic) names, OR-Tools'
model_builder reads it and solves it with a solver bundled in the ortools wheel (SCIP).

Settings: relative gap 0, absolute gap 1e-9, one thread, a fixed seed, output off.
(ortools 9.15 bundles its own HiGHS under highspy's library name: with highspy 1.15 the
two cannot be imported in one process, google/or-tools issue 5246; pyproject.toml pins
highspy 1.16, which can, in either order: tests/test_mip.py checks both.)
"""

from __future__ import annotations

import time

from planner.solvers.backend import BackendResult, written_as_mps

PARAMETERS = {"scip": "limits/gap = 0\nlimits/absgap = 1e-9\nrandomization/randomseedshift = 0\nparallel/maxnthreads = 1"}


class OrToolsBackend:
    def __init__(self, solver: str = "scip"):
        self.solver = solver
        self.name = solver

    def solve(self, model, time_limit_s: float | None = None) -> BackendResult:
        from ortools.linear_solver.python import model_builder as mb
        start = time.perf_counter()
        with written_as_mps(model) as (path, smap):
            built = mb.Model()
            if not built.import_from_mps_file(path):
                return BackendResult(self.name, "error", None, None, None, time.perf_counter() - start, 0,
                                     message="OR-Tools could not read the model")
        transfer_s = time.perf_counter() - start
        solver = mb.Solver(self.solver)
        if time_limit_s is not None:
            solver.set_time_limit_in_seconds(max(float(time_limit_s), 0.01))
        if self.solver in PARAMETERS:
            solver.set_solver_specific_parameters(PARAMETERS[self.solver])
        status = solver.solve(built)
        elapsed = time.perf_counter() - start
        S = mb.SolveStatus
        result = lambda *args, **kw: BackendResult(self.name, *args, transfer_s=transfer_s, **kw)
        if status == S.INFEASIBLE:
            return result("infeasible", None, None, None, elapsed, 0)
        has = status in (S.OPTIMAL, S.FEASIBLE)
        objective = float(solver.objective_value) if has else None
        bound = float(solver.best_objective_bound) if has else None
        if has:
            for v in built.get_variables():
                var = smap.bySymbol.get(v.name)
                if var is not None:
                    var.set_value(float(solver.value(v)), skip_validation=True)
        gap = None if objective is None or bound is None else max(0.0, objective - bound)
        if status == S.OPTIMAL:
            return result("optimal", objective, bound, gap, elapsed, 0)
        if status == S.FEASIBLE:
            return result("time_limit", objective, bound, gap, elapsed, 0)
        if status == S.NOT_SOLVED and time_limit_s is not None:     # stopped by its time limit before any solution
            return result("time_limit", None, None, None, elapsed, 0)
        return result("error", None, None, None, elapsed, 0, message=str(status))
