"""Variants of one instance, solved before one deadline: the machinery the fixes of `feasible` share.

`planner.questions.feasible` (one limit changed at a time) and `planner.questions.pool_fixes` (a pool
grown or added) both search the smallest change that makes an instance feasible: they solve edited
copies of the raw instance with a `VariantSolver` and keep a change as a `Fix` once `verified` has
checked it is feasible and one step less is not.
"""

from __future__ import annotations

import copy
import json
import time
from dataclasses import dataclass
from typing import Any, Callable

from planner.objectives import MIN_TIME, Objective
from planner.schema.instance import parse_instance
from planner.solve import SolveResult, solve


@dataclass
class Fix:
    """The smallest change of one limit that makes the instance feasible (verified)."""

    limit: str                     # nodes | wan-bandwidth | duration | budget | goodput
    fields: dict[str, Any]         # instance fields and their new values
    current: dict[str, Any]        # the same fields' values now
    summary: str
    result: SolveResult            # the solve with the fix applied
    added_cost_usd: float | None = None    # nodes fixes of a fleet of pools: added nodes x node price

    def set_args(self) -> list[str]:
        """The fix as `--set FIELD=VALUE` arguments that `dtplan solve ... --set` accepts: each value
        as compact JSON (no thousands separators; a float with every digit)."""
        return [f"{k}={json.dumps(v, separators=(',', ':'))}" for k, v in self.fields.items()]

    def to_dict(self) -> dict[str, Any]:
        return {"limit": self.limit, "fields": self.fields, "current": self.current, "summary": self.summary,
                "set": self.set_args(),
                **({"added_cost_usd": self.added_cost_usd} if self.added_cost_usd is not None else {}),
                "time_to_target_s": self.result.objective_value,
                "plan": self.result.plan.model_dump() if self.result.plan else None}


class TimeUp(Exception):
    """The deadline passed before a solve could answer."""


class VariantSolver:
    """Solve variants of one raw instance, counting the solves, all before one deadline."""

    def __init__(self, raw: dict, source: str, progress: Callable[[str], None] | None,
                 deadline: float | None = None):
        self.raw, self.source, self.count, self.deadline = raw, source, 0, deadline
        self.progress = progress or (lambda message: None)

    def variant(self, edit: Callable[[dict], None]) -> dict:
        data = copy.deepcopy(self.raw)
        edit(data)
        return data

    def solve(self, data: dict, objective: Objective = MIN_TIME, exact: bool = True) -> SolveResult:
        """The solve of a variant; TimeUp if the deadline cut it short (when `exact`: an answer
        found in time but not proven optimal is no answer for a fix)."""
        if exact and self.deadline is not None and time.perf_counter() >= self.deadline:
            raise TimeUp
        self.count += 1
        result = solve(parse_instance(data, self.source), objective=objective, deadline=self.deadline)
        if exact and result.status == "time_limit":
            raise TimeUp
        return result

    def feasible(self, data: dict) -> bool:
        return self.solve(data).status == "optimal"


def verified(s: VariantSolver, limit: str, fixed: dict, smaller: dict | None, fields: dict, current: dict,
              summary: str) -> tuple[Fix | None, str | None]:
    """The fix if the instance with it is feasible and with the next smaller step is not."""
    r = s.solve(fixed)
    if r.status != "optimal":
        raise AssertionError(f"{limit}: the fix {fields} does not make the instance feasible")
    if smaller is not None and s.feasible(smaller):
        raise AssertionError(f"{limit}: the fix {fields} is not the smallest (one step less is feasible)")
    return Fix(limit, fields, current, summary, r), None
