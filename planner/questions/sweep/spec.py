"""What a sweep asks: the base instance, the fields varied, the question; its points and columns.

Point i's Monte Carlo draws come from `numpy.random.default_rng([seed, i])`; its key hashes the
question, the index and the inputs, so a resumed sweep recognises finished points."""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from planner.cost.envelope import BEYOND_COLUMNS
from planner.frames import PLAN_FIELDS
from planner.questions.sweep.distributions import Distribution
from planner.questions.sweep.fields import check_field, is_integer_field, value_problems
from planner.schema.errors import InputError, Problem
from planner.schema.instance import parse_instance

COMMANDS = ("solve", "feasible", "evaluate", "reach", "robust")
# solve, feasible, reach: a point with no plan inside the evidence envelope (dtplan profile) is answered again
# beyond it, as `dtplan solve` does (planner.solve.with_beyond_evidence): BEYOND_COLUMNS (docs/quality.md, 6)
RESULT_COLUMNS = {
    "solve": ("objective", "objective_value", "best_bound", "gap", "time_to_target_days", "cost_usd",
              "model_params", "bottleneck") + PLAN_FIELDS + ("infeasibility",) + BEYOND_COLUMNS,
    "feasible": ("feasible", "time_to_target_days", "cost_usd", "bottleneck") + PLAN_FIELDS + ("binding", "fixes")
    + BEYOND_COLUMNS,
    "evaluate": ("feasible", "time_to_target_days", "cost_usd", "bottleneck", "violations"),
    "reach": ("reachable", "days", "limit_days", "cost_usd") + PLAN_FIELDS + ("infeasibility",) + BEYOND_COLUMNS,
    # solve --robust (planner.questions.robust.sweep_row): the robust value, the scenarios' count
    "robust": ("objective", "objective_value", "best_bound", "gap", "statistic", "time_to_target_days", "cost_usd",
               "model_params")
    + PLAN_FIELDS + ("infeasibility",),
}
TIME_COLUMN = "time_s"             # wall time of the point: the one column two runs do not share


@dataclass(frozen=True)
class Point:
    """One point: its index, the fields it sets and their values, and its key (a hash of both
    and of the question) that a resumed sweep matches against its output."""

    index: int
    inputs: dict[str, Any]
    key: str


@dataclass
class SweepSpec:
    """What to sweep: a base instance (raw JSON), the fields to vary and the question asked."""

    base: dict
    source: str = "<instance>"
    grid: dict[str, list[Any]] = field(default_factory=dict)
    vary: dict[str, Distribution] = field(default_factory=dict)
    samples: int = 0
    seed: int = 0
    command: str = "solve"
    objective: str | None = None
    solver: str = "bnb"
    time_limit_s: float | None = None
    plan: dict | None = None

    def check(self) -> None:
        """Every field path, grid value, distribution and option checked; one InputError for all."""
        problems: list[Problem] = []
        try:
            parse_instance(copy.deepcopy(self.base), self.source)
        except InputError as err:
            raise InputError(err.problems, self.source) from None
        if self.command not in COMMANDS:
            problems.append(Problem("--command", f"must be one of {', '.join(COMMANDS)}, got {self.command!r}"))
        if self.command == "evaluate" and self.plan is None:
            problems.append(Problem("--plan", "required with --command evaluate"))
        if self.plan is not None:
            from planner.schema.plan import parse_plan
            try:
                parse_plan(copy.deepcopy(self.plan), "--plan")
            except InputError as err:
                problems += [Problem(f"--plan: {p.path}", p.message) for p in err.problems]
        from planner.solve import SOLVERS, SUPPORTED_OBJECTIVES
        if self.objective is not None and self.objective not in SUPPORTED_OBJECTIVES:
            problems.append(Problem("--objective", f"must be one of {', '.join(SUPPORTED_OBJECTIVES)}, "
                                                   f"got {self.objective!r}"))
        if self.solver not in SOLVERS:
            problems.append(Problem("--solver", f"must be one of {', '.join(SOLVERS)}, got {self.solver!r}"))
        if self.vary and self.samples < 1:
            problems.append(Problem("--monte-carlo", "give the number of draws (>= 1) with --vary"))
        if self.samples and not self.vary:
            problems.append(Problem("--vary", "give at least one FIELD=DIST(...) with --monte-carlo"))
        for path in set(self.grid) & set(self.vary):
            problems.append(Problem(path, "both in --grid and in --vary"))
        for path, values in self.grid.items():
            bad = check_field(path)
            if bad:
                problems.append(bad)
                continue
            if not values:
                problems.append(Problem(path, "--grid: give at least one value"))
            for v in values:
                problems += value_problems(self.base, path, v, "--grid value")
        for path, dist in self.vary.items():
            bad = check_field(path)
            if bad:
                problems.append(bad)
                continue
            for v in dist.support():
                v = round(v) if is_integer_field(path) and isinstance(v, float) else v
                problems += value_problems(self.base, path, v, f"--vary {dist}: value")
        if not self.grid and not self.vary:
            problems.append(Problem("--grid", "give at least one --grid FIELD=v1,v2,... or --vary FIELD=DIST(...)"))
        if problems:
            raise InputError(problems)

    def fingerprint(self) -> str:
        """A hash of the question (base instance, command, objective, solver, limit, plan)."""
        data = {"base": self.base, "command": self.command, "objective": self.objective, "solver": self.solver,
                "time_limit_s": self.time_limit_s, "plan": self.plan}
        return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()

    def points(self) -> list[Point]:
        """Every point in order: grid combinations (first field slowest), each `samples` times."""
        fp = self.fingerprint()
        grid_points = [dict(zip(self.grid, combo)) for combo in itertools.product(*self.grid.values())] \
            if self.grid else [{}]
        reps = max(self.samples, 1) if self.vary else 1
        out = []
        integer = {p: is_integer_field(p) for p in self.vary}
        for g, gp in enumerate(grid_points):
            for r in range(reps):
                i = g * reps + r
                inputs = dict(gp)
                if self.vary:
                    rng = np.random.default_rng([self.seed, i])
                    for path, dist in self.vary.items():
                        v = dist.draw(rng)
                        inputs[path] = int(round(v)) if integer[path] and isinstance(v, float) else v
                key = hashlib.sha256(json.dumps([fp, i, inputs], sort_keys=True, default=str).encode()).hexdigest()
                out.append(Point(i, inputs, key[:16]))
        return out

    def columns(self) -> list[str]:
        return (["index", "key"] + list(self.grid) + list(self.vary) + ["status"]
                + list(RESULT_COLUMNS[self.command]) + [TIME_COLUMN, "error"])

    def payload(self) -> dict:
        """What a worker needs to answer points (plain data, cheap to send)."""
        return {"base": self.base, "source": self.source, "command": self.command, "objective": self.objective,
                "solver": self.solver, "time_limit_s": self.time_limit_s, "plan": self.plan,
                "columns": self.columns()}
