"""The objectives a solve answers (docs/planner.md, "Objectives"), one object each.

- `MIN_TIME` (key `min_time`): least wall-clock until C_local (or C_quality) reaches the target,
  among plans that meet every limit (memory, nodes, structure, budget, run duration).
- `MIN_COST` (key `min_cost`): fewest dollars (= fewest nodes of the fleet's hardware) that reach
  the target within the run-duration limit; ties go to the faster plan.
- `MAX_COMPUTE` (key `max_compute`): the most C_quality (or C_local, per `training.target_kind`)
  reached within the run-duration limit W, in the window view (`planner.cost.run.window_view`).

An `Objective` carries what the rest of the planner asks of it: its key (the string users give
and `--json` prints), its sense and the bound the search prunes with (`measure`, `limit_s`,
`unknown_bound`, `empty_bound`, `tighter`), its tie-break (`rank_key`) and its presentation
(`title`, `heading`, `axis`, `better`, `unit`, `value_field`). The user's string is parsed once (`objective_named`, at the
CLI / API / web entry and `planner.solve.solve`); below that the object travels. The searches
themselves (`min_time`, `min_cost`, `max_compute`, the branch and bound behind them) are search
code: `planner.solvers.objective_search`.

Adding an objective: one `Objective` here (and its entry in `OBJECTIVES`), its search in the
search layer, and its tests. Layer: objectives; imports nothing of the planner (only the standard
library), so schema, cost, setting and space code below it may hold an objective without
importing this module (they read its attributes).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

TIME_MEASURE = "time"      # the branch and bound's measure names (planner.solvers.bnb.MEASURES)


@dataclass(frozen=True, eq=False)
class Objective:
    """One objective: key, sense, what its value is, how it is bounded, ranked and shown. An
    objective equals its key (and hashes as it), so a key read from user input finds it."""

    key: str                  # what users give (--objective, instance.objective) and --json prints
    title: str                # in words, e.g. "least time to target"
    heading: str              # the title a solved plan is shown under (text output, --report)
    axis: str                 # the value's axis label in plots ("time to target, days", ...)
    better: str               # which way is better, said on that axis
    unit: str                 # of the value: "s", "USD" or "FLOP"
    maximise: bool            # larger values are better (the bound is an upper bound)
    by_time: bool = False     # the value is the time to target (s): prunes by time
    by_cost: bool = False     # the value is the fleet's price (USD): the search counts nodes

    def __str__(self) -> str:
        return self.key

    def __eq__(self, other) -> bool:
        if isinstance(other, Objective):
            return self.key == other.key
        return isinstance(other, str) and self.key == other

    def __hash__(self) -> int:
        return hash(self.key)

    @property
    def by_compute(self) -> bool:
        """The value is the compute reached within the duration limit (FLOP)."""
        return not (self.by_time or self.by_cost)

    @property
    def within_window(self) -> bool:
        """Plans must reach the target within the run-duration limit W (min_time, min_cost);
        max_compute has no target: its run lasts W."""
        return not self.maximise

    def measure(self, target_kind: str) -> str:
        """The branch and bound's measure (planner.solvers.bnb.MEASURES): the time to target, or
        for max_compute the reciprocal of the compute (`1/c_quality`, `1/c_local`) per target kind."""
        return f"1/{target_kind}" if self.by_compute else TIME_MEASURE

    def limit_s(self, window_s: float) -> float:
        """The largest time to target a plan may take: W for the objectives within the window, else inf."""
        return window_s if self.within_window else math.inf

    def value_field(self, compute_kind: str | None) -> str:
        """The evaluation's field holding the objective's value (`planner.evaluate`): time_to_target_s,
        cost_usd, or the compute kind (c_quality / c_local) for max_compute."""
        return "time_to_target_s" if self.by_time else "cost_usd" if self.by_cost else str(compute_kind)

    @property
    def unknown_bound(self) -> float:
        """The bound when nothing is known of a part of the space: 0 (lower) or inf (upper)."""
        return math.inf if self.maximise else 0.0

    @property
    def empty_bound(self) -> float:
        """The bound of a part proven to hold no plan: inf (lower) or 0 (upper)."""
        return 0.0 if self.maximise else math.inf

    def tighter(self, bound: float, value: float) -> float:
        """The better of a bound and a value (max for maximise, else min)."""
        return max(bound, value) if self.maximise else min(bound, value)

    def best(self, values):
        """The best of values (max for maximise, else min)."""
        return max(values) if self.maximise else min(values)

    def rank_key(self, value: float, time_s: float | None = None) -> tuple:
        """The tie-break key, least first: the value (negated when maximising), then for min_cost
        the time to target (ties go to the faster plan)."""
        key = (-value if self.maximise else value,)
        return key + (time_s,) if self.by_cost and time_s is not None else key


MIN_TIME = Objective("min_time", "least time to target", "Fastest plan", "time to target, days",
                     "shorter is better", "s", maximise=False, by_time=True)
MIN_COST = Objective("min_cost", "least cost", "Cheapest plan reaching the target in time", "minimum cost, USD",
                     "lower is better", "USD", maximise=False, by_cost=True)
MAX_COMPUTE = Objective("max_compute", "most compute within the duration limit",
                        "Most compute within the duration limit", "compute within the duration limit, FLOP",
                        "larger is better", "FLOP", maximise=True)
OBJECTIVES = (MIN_TIME, MIN_COST, MAX_COMPUTE)
KEYS = tuple(o.key for o in OBJECTIVES)


class UnsupportedObjective(ValueError):
    """An objective the planner cannot answer yet."""


def objective_named(key: "str | Objective") -> Objective:
    """The objective of a key users give (an `Objective` passes through); raises
    `UnsupportedObjective` naming the keys supported."""
    if isinstance(key, Objective):
        return key
    for o in OBJECTIVES:
        if o.key == key:
            return o
    raise UnsupportedObjective(f"objective {key!r} is not supported by the planner yet; "
                               f"supported: {', '.join(KEYS)}")
