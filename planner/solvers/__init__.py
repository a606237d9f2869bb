"""Mixed-integer backends behind one small protocol, and the exact search that certifies them.

A backend takes a `planner.mip.model.Model` and returns a `BackendResult`: status,
objective, best bound, gap, solve time, branch-and-bound nodes and the solution.
`BACKENDS` maps the names `dtplan solve --solver` accepts to them; the planner's own
exact search (`planner.solvers.bnb`) is the solver named "bnb" in `planner.solve`; the exhaustive oracle
(`planner.solvers.exhaustive`, every plan scored) is "exhaustive".
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from planner.mip.model import Model


class UnsupportedBySolver(ValueError):
    """A question the chosen solver cannot answer, or an instance too large for it (another solver can)."""


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
    x: np.ndarray | None = None
    message: str = ""


class Backend(Protocol):
    name: str

    def solve(self, model: Model, time_limit_s: float | None = None,
              fixed: dict[int, tuple[float, float]] | None = None) -> BackendResult:
        """Solve `model` (with the column bounds in `fixed` overriding the model's)."""

    def write(self, model: Model, path: str) -> None:
        """Write the model to `path` in a format the file's suffix names."""


def installed(module: str) -> bool:
    """Whether a backend's Python package can be imported here (without importing it)."""
    return importlib.util.find_spec(module) is not None


def backends() -> dict[str, Backend]:
    """The backends that can be imported here, by name."""
    from planner.solvers.highs import HighsBackend
    from planner.solvers.scip import ScipBackend
    found: dict[str, Backend] = {}
    for cls in (HighsBackend, ScipBackend):
        if cls.available():
            found[cls.name] = cls()
    return found

