"""HiGHS (highspy) backend: the model passed as one sparse row-wise matrix.

Options as measured in ../shared/spec/FORMULATION_NOTES.md: relative gap 0 and an
absolute gap of 1e-9 (the objective is ln T, so the default 1e-4 would be a 0.01%
error in T), one thread, a fixed seed. (ortools 9.15 bundles its own HiGHS and
cannot be imported in the same process as highspy 1.15: dtplan does not use ortools.)
"""

from __future__ import annotations

import time

import numpy as np

from planner.mip.model import Model
from planner.solvers import BackendResult, installed


class HighsBackend:
    name = "highs"

    @staticmethod
    def available() -> bool:
        return installed("highspy")

    def _highs(self, model: Model, fixed=None, time_limit_s=None):
        import highspy
        h = highspy.Highs()
        h.setOptionValue("output_flag", False)
        h.setOptionValue("threads", 1)
        h.setOptionValue("random_seed", 0)
        h.setOptionValue("mip_rel_gap", 0.0)
        h.setOptionValue("mip_abs_gap", 1e-9)
        if time_limit_s is not None:
            h.setOptionValue("time_limit", max(float(time_limit_s), 0.01))
        lp = highspy.HighsLp()
        lp.model_name_ = model.name
        lp.num_col_, lp.num_row_ = model.n_cols, model.n_rows
        lp.col_cost_ = model.objective_vector()
        lp.offset_ = model.objective_offset
        lo, hi = np.array(model.col_lo), np.array(model.col_hi)
        for j, (a, b) in (fixed or {}).items():
            lo[j], hi[j] = a, b
        lp.col_lower_, lp.col_upper_ = lo, hi
        lp.row_lower_, lp.row_upper_ = np.array(model.row_lo), np.array(model.row_hi)
        starts, cols, vals = model.csr()
        lp.a_matrix_.format_ = highspy.MatrixFormat.kRowwise
        lp.a_matrix_.num_col_, lp.a_matrix_.num_row_ = model.n_cols, model.n_rows
        lp.a_matrix_.start_, lp.a_matrix_.index_, lp.a_matrix_.value_ = starts, cols, vals
        lp.integrality_ = [highspy.HighsVarType.kInteger if i else highspy.HighsVarType.kContinuous
                           for i in model.col_integer]
        h.passModel(lp)
        for j, name in enumerate(model.col_names):
            h.passColName(j, name)
        for i, name in enumerate(model.row_names):
            h.passRowName(i, name)
        return h

    def solve(self, model: Model, time_limit_s: float | None = None, fixed=None) -> BackendResult:
        import highspy
        start = time.perf_counter()
        h = self._highs(model, fixed, time_limit_s)
        h.run()
        elapsed = time.perf_counter() - start
        status = h.getModelStatus()
        info = h.getInfo()
        S = highspy.HighsModelStatus
        nodes = int(getattr(info, "mip_node_count", 0))
        if status == S.kInfeasible:
            return BackendResult(self.name, "infeasible", None, None, None, elapsed, nodes)
        has_solution = info.primal_solution_status == 2      # feasible
        x = np.array(h.getSolution().col_value) if has_solution else None
        objective = float(info.objective_function_value) if has_solution else None
        bound = float(info.mip_dual_bound) if np.isfinite(info.mip_dual_bound) else None
        if status == S.kOptimal:
            return BackendResult(self.name, "optimal", objective, bound if bound is not None else objective,
                                 0.0, elapsed, nodes, x)
        if status in (S.kTimeLimit, S.kInterrupt, S.kIterationLimit, S.kSolutionLimit):
            gap = float(info.mip_gap) if has_solution else None
            return BackendResult(self.name, "time_limit", objective, bound, gap, elapsed, nodes, x)
        return BackendResult(self.name, "error", objective, bound, None, elapsed, nodes, x,
                             message=h.modelStatusToString(status))

    def write(self, model: Model, path: str) -> None:
        """LP or MPS (by suffix)."""
        self._highs(model).writeModel(str(path))
