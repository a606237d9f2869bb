"""The sync rules' searches behind one interface (search layer): each rule's `RuleSearch`, looked up
by name (`search_of`, the names of `planner.sync.rules`).

The exact planner over pools (`planner.solvers.decomposition`) lists the parts of each model size
once (`planner.solvers.pool_parts.parts_until`) and runs, for each rule `rules_searched` names, in
that order (straggler first, so that ties go to it), the rule's `solve_parts` on the shared
`PartsRun`; the exhaustive oracle (`planner.solvers.mixed_oracle`) scores every assignment of nodes to
pools with each rule's `oracle`. A rule's bounds sit in its own search modules, beside the search
that uses them (`planner.sync.straggler.search.compute_bound_s`,
`planner.sync.proportional.search.lower_bound_s`); its rows in the pools' MIP are the straggler
model (`planner.mip.pool_rows`) plus, for another rule, its own (`planner.sync.proportional.mip_rows`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from planner.sync import rules
from planner.sync.proportional import oracle as proportional_oracle, parts as proportional_parts
from planner.sync.straggler import oracle as straggler_oracle, search as straggler_search


@dataclass(frozen=True)
class RuleSearch:
    """A rule's searches.

    - `rule`: its setting-layer part (`planner.sync.rules.SyncRule`);
    - `solve_parts(run)`: its part of the decomposition of one model size: its plans of every part of
      `run.listed` into `run` (`planner.solvers.pool_parts.PartsRun`: plans found, proven bound,
      incumbent, plans scored, completeness);
    - `oracle(pools, counts, s, space, precision, objective)`: (value, key) of its best plan on
      exactly these counts, scored one by one in `s` (the counts' mixed setting at unit price), or
      None; keys as the planner's (time then cost; cost then time; -compute then cost).
    """

    rule: rules.SyncRule
    solve_parts: Callable
    oracle: Callable


STRAGGLER = RuleSearch(rules.STRAGGLER, straggler_search.solve_parts, straggler_oracle.best_on_counts)
PROPORTIONAL = RuleSearch(rules.PROPORTIONAL, proportional_parts.solve_parts, proportional_oracle.best_on_counts)
SEARCHES = {s.rule.name: s for s in (STRAGGLER, PROPORTIONAL)}


def search_of(name: str) -> RuleSearch:
    """The searches of the rule `name` ('straggler' or 'proportional')."""
    return SEARCHES[name]
