"""The protocol every mixed-integer backend follows, and what the backends share.

A backend (`planner.solvers.highs`, `planner.solvers.ortools`) solves a Pyomo model, loads the
solution into the model's variables and returns a `BackendResult`. This module imports nothing of
the planner, so that the backends and `planner.solvers.backends()`, which lists them, import it
without importing each other.
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
    transfer_s: float = 0.0       # of time_s: handing the model to the solver (writing and reading it, or passing arrays)

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
