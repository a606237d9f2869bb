"""SCIP (pyscipopt) backend: the same linear model, row by row.

Settings: relative gap 0, absolute gap 1e-9, a fixed random seed, output off.
Writes CIP, LP or MPS (by suffix).
"""

from __future__ import annotations

import time

import numpy as np

from planner.mip.model import Model
from planner.solvers import BackendResult, installed


class ScipBackend:
    name = "scip"

    @staticmethod
    def available() -> bool:
        return installed("pyscipopt")

    def _scip(self, model: Model, fixed=None, time_limit_s=None):
        import pyscipopt
        s = pyscipopt.Model(model.name)
        s.hideOutput()
        s.setParam("limits/gap", 0.0)
        s.setParam("limits/absgap", 1e-9)
        s.setParam("randomization/randomseedshift", 0)
        if time_limit_s is not None:
            s.setParam("limits/time", max(float(time_limit_s), 0.01))
        lo, hi = list(model.col_lo), list(model.col_hi)
        for j, (a, b) in (fixed or {}).items():
            lo[j], hi[j] = a, b
        obj = model.objective_vector()
        xs = []
        for j, name in enumerate(model.col_names):
            vtype = "B" if model.col_integer[j] and lo[j] >= 0 and hi[j] <= 1 else ("I" if model.col_integer[j] else "C")
            xs.append(s.addVar(name=name, vtype=vtype, lb=None if lo[j] == -np.inf else lo[j],
                               ub=None if hi[j] == np.inf else hi[j], obj=float(obj[j])))
        for i, name in enumerate(model.row_names):
            expr = pyscipopt.quicksum(float(c) * xs[j] for j, c in zip(model.row_cols[i], model.row_coefs[i]))
            lhs = None if model.row_lo[i] == -np.inf else model.row_lo[i]
            rhs = None if model.row_hi[i] == np.inf else model.row_hi[i]
            if lhs is not None and rhs is not None and lhs == rhs:
                s.addCons(expr == lhs, name=name)
            else:
                if lhs is not None:
                    s.addCons(expr >= lhs, name=name if rhs is None else name + ".lo")
                if rhs is not None:
                    s.addCons(expr <= rhs, name=name if lhs is None else name + ".hi")
        if model.objective_offset:
            s.addObjoffset(model.objective_offset)
        return s, xs

    def solve(self, model: Model, time_limit_s: float | None = None, fixed=None) -> BackendResult:
        start = time.perf_counter()
        s, xs = self._scip(model, fixed, time_limit_s)
        s.optimize()
        elapsed = time.perf_counter() - start
        status = s.getStatus()
        nodes = int(s.getNNodes())
        if status == "infeasible":
            return BackendResult(self.name, "infeasible", None, None, None, elapsed, nodes)
        has_solution = s.getNSols() > 0
        x = np.array([s.getVal(v) for v in xs]) if has_solution else None
        objective = float(s.getObjVal()) if has_solution else None
        bound = float(s.getDualbound())
        if status == "optimal":
            return BackendResult(self.name, "optimal", objective, bound, 0.0, elapsed, nodes, x)
        if status in ("timelimit", "userinterrupt", "nodelimit", "gaplimit"):
            return BackendResult(self.name, "time_limit", objective, bound,
                                 float(s.getGap()) if has_solution else None, elapsed, nodes, x)
        return BackendResult(self.name, "error", objective, bound, None, elapsed, nodes, x, message=status)

    def write(self, model: Model, path: str) -> None:
        s, _ = self._scip(model)
        s.writeProblem(str(path), trans=False, verbose=False)
