"""HiGHS backend: the model is handed to highspy as arrays (`planner.solvers.mps_arrays`: the linear
program of the MPS file Pyomo would write of it, column for column and row for row, passed with
`Highs.passModel`), solved, and the solution loaded back into the Pyomo variables by column.

(Measured: writing MPS and reading it took as long as HiGHS's own run on the pools' models,
docs/mip.md "16 pools in 16 cities"; Pyomo's persistent HiGHS interface, on the shipped baseline
instance, twice as long as the MPS, the model being rebuilt every round of the outer-approximation
loop anyway.)

Options as measured (docs/mip.md): relative gap 0 and an absolute gap
of 1e-9 (the objective is ln T: the default 1e-4 would be a 0.01% error in T), one thread, a
fixed seed; the RINS and RENS sub-MIP heuristics off (they took most of the time of these small
models, and the loop supplies an incumbent as cutoff).

Version: highspy >= 1.16 (pyproject.toml). HiGHS 1.14.0's MIP presolve returned a suboptimal point
as "optimal" (HiGHS issues 3043, 3073, 3094; fixed by HiGHS pull request 2961, first released in
1.15.0); one of our pools models met it (tests/data/highs_1_14_presolve.mps, tests/test_mip.py).
From 1.16 the library prints its banner on stdout when the first `Highs` object of a process is
made, before any option can be set, which would corrupt `--json` output: `quiet_highs` makes that
object with the process's standard output (file descriptor 1) pointed at /dev/null.
"""

from __future__ import annotations

import contextlib
import math
import os
import sys
import time

from planner.solvers.backend import BackendResult
from planner.solvers.mps_arrays import model_arrays

OPTIONS = {"mip_rel_gap": 0.0, "mip_abs_gap": 1e-9, "threads": 1, "random_seed": 0,
           "mip_heuristic_run_rins": False, "mip_heuristic_run_rens": False}


class HighsBackend:
    name = "highs"

    def solve(self, model, time_limit_s: float | None = None) -> BackendResult:
        import highspy
        start = time.perf_counter()
        arrays = model_arrays(model)
        h = quiet_highs(highspy)
        for key, value in OPTIONS.items():
            h.setOptionValue(key, value)
        h.passModel(arrays.highs_lp(highspy))
        # the matrix as the backend holds it: the report's model size without walking Pyomo's expressions
        model.matrix_size = {"columns": h.getNumCol(), "rows": h.getNumRow(), "nonzeros": h.getNumNz()}
        if time_limit_s is not None:    # after passing the model (as when it was read from a file)
            h.setOptionValue("time_limit", max(float(time_limit_s), 0.01))
        transfer_s = time.perf_counter() - start
        run_status = h.run()
        if run_status == highspy.HighsStatus.kError and h.getModelStatus() == highspy.HighsModelStatus.kNotset:
            # HiGHS keeps one task scheduler per process thread, set up by the thread's first run with that
            # run's `threads`; a later run with another value fails before solving (status kNotset), e.g.
            # after a user of the API ran a `Highs` of their own with the default threads in this thread.
            # Resetting the scheduler and running again solves the same model with OPTIONS' one thread.
            highspy.Highs.resetGlobalScheduler(True)
            h.run()
        elapsed = time.perf_counter() - start
        S = highspy.HighsModelStatus
        status, info = h.getModelStatus(), h.getInfo()
        nodes = int(getattr(info, "mip_node_count", 0))
        result = lambda *args, **kw: BackendResult(self.name, *args, transfer_s=transfer_s, **kw)
        if status == S.kInfeasible:
            return result("infeasible", None, None, None, elapsed, nodes)
        has = info.primal_solution_status == 2
        objective = float(info.objective_function_value) if has else None
        bound = float(info.mip_dual_bound) if math.isfinite(info.mip_dual_bound) else None
        if has:
            values = h.getSolution().col_value
            for var, x in zip(arrays.variables, values):
                if var is not None:                 # None: the objective's constant column
                    var.set_value(float(x), skip_validation=True)
        gap = None if objective is None or bound is None else max(0.0, objective - bound)
        if status == S.kOptimal:
            return result("optimal", objective, bound if bound is not None else objective, gap or 0.0, elapsed, nodes)
        if status in (S.kTimeLimit, S.kInterrupt, S.kIterationLimit, S.kSolutionLimit):
            return result("time_limit", objective, bound, gap, elapsed, nodes)
        return result("error", objective, bound, gap, elapsed, nodes, message=h.modelStatusToString(status))


def quiet_highs(highspy):
    """A `highspy.Highs` with output off, made without letting the library's banner reach stdout."""
    with _stdout_to_devnull():
        h = highspy.Highs()
        h.setOptionValue("output_flag", False)
    return h


@contextlib.contextmanager
def _stdout_to_devnull():
    """File descriptor 1 to /dev/null for the block (C++ writes bypass `sys.stdout`); restored after."""
    sys.stdout.flush()
    try:
        saved = os.dup(1)
    except OSError:                  # no stdout to protect
        yield
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 1)
        yield
    finally:
        os.dup2(saved, 1)
        os.close(saved)
        os.close(devnull)
