"""The solvers: the planner's exact search, the exhaustive oracle, the MIP backends, the pool solvers.

Layer: search (docs/architecture.md). May import schema, cost, the setting, evaluate, space and
objectives layers, and planner.mip (the MIP formulation it solves); never questions, present or the
interfaces.

Mixed-integer backends behind one small protocol (`planner.solvers.backend`), and the exact search
that certifies them. A backend solves a Pyomo model (`planner.mip.formulation`), loads the solution
into the model's variables and returns a `BackendResult`: its own status, objective, best bound,
gap, solve time and branch-and-bound nodes. `backends()` maps the names `dtplan solve --solver`
accepts to them:

    highs   HiGHS (highspy) reading the MPS Pyomo writes
    scip    SCIP as bundled in OR-Tools: Pyomo writes the model as MPS with its own names,
            OR-Tools' model_builder reads it and solves it

The planner's own exact search (`planner.solvers.bnb`) is the solver named "bnb" in
`planner.solve`; the exhaustive oracle (`planner.solvers.exhaustive`) is "exhaustive".
"""

from __future__ import annotations

from planner.solvers.backend import Backend, BackendResult, UnsupportedBySolver, installed, written_as_mps

__all__ = ["BACKEND_HELP", "BACKEND_NAMES", "Backend", "BackendResult", "UnsupportedBySolver", "backends",
           "installed", "written_as_mps"]


BACKEND_NAMES = ("highs", "scip")
BACKEND_HELP = {"highs": "HiGHS (highspy) reading the MPS Pyomo writes", "scip": "SCIP bundled in OR-Tools (model read as MPS)"}


def backends() -> dict[str, Backend]:
    """The backends that can be imported here, by name."""
    found: dict[str, Backend] = {}
    if installed("pyomo") and installed("highspy"):
        from planner.solvers.highs import HighsBackend
        found["highs"] = HighsBackend()
    if installed("pyomo") and installed("ortools"):
        from planner.solvers.ortools import OrToolsBackend
        found["scip"] = OrToolsBackend("scip")
    return found
