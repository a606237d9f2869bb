"""Mixed-integer backends behind one small protocol, and the exact search that certifies them.

A backend solves a Pyomo model (`planner.mip.formulation`), loads the solution into the
model's variables and returns a `BackendResult`: its own status, objective, best bound,
gap, solve time and branch-and-bound nodes. `backends()` maps the names `dtplan solve
--solver` accepts to them:

    highs   HiGHS (highspy) reading the MPS Pyomo writes
    scip    SCIP as bundled in OR-Tools: Pyomo writes the model as MPS with its own names,
            OR-Tools' model_builder reads it and solves it

The planner's own exact search (`planner.solvers.bnb`) is the solver named "bnb" in
`planner.solve`; the exhaustive oracle (`planner.solvers.exhaustive`) is "exhaustive".
"""

from __future__ import annotations

import importlib.util
import os
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Protocol


class UnsupportedBySolver(ValueError):
    """A question the chosen solver cannot answer (another solver can)."""


@dataclass
class BackendResult:
    """What one backend run reports (objective and bound in the model's own units)."""

    backend: str
    status: str                   # optimal | time_limit | infeasible | error
    objective: float | None
    bound: float | None
    gap: float | None
    time_s: float
    nodes: int
    message: str = ""

    @property
    def has_solution(self) -> bool:
        return self.objective is not None


class Backend(Protocol):
    name: str

    def solve(self, model, time_limit_s: float | None = None) -> BackendResult:
        """Solve the Pyomo `model`, loading the solution (if any) into its variables."""


def installed(module: str) -> bool:
    """Whether a package can be imported here (without importing it)."""
    return importlib.util.find_spec(module) is not None


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


@contextmanager
def written_as_mps(model):
    """The Pyomo `model` written to a temporary MPS file with its own symbolic names (so that a
    backend's solution maps back to the Pyomo variables); yields (path, Pyomo's symbol map) and
    removes the file afterwards."""
    import tempfile      # here, not at the top: a plain solve never writes a model (start-up time)
    fd, path = tempfile.mkstemp(suffix=".mps")
    os.close(fd)
    try:
        _, symbol_map_id = model.write(path, io_options={"symbolic_solver_labels": True})
        yield path, model.solutions.symbol_map[symbol_map_id]
    finally:
        os.unlink(path)
