"""The sync rules of a fleet of pools behind one interface (fleet.sync_rule, docs/fleet.md section 2):
each rule's setting-layer part as a `SyncRule`, looked up by name (`rule_named`), and which rules an
instance's plans are searched under (`rule_of`, `rules_searched`).

A plan on a fleet of pools runs one rule (plan.sync_rule):

- straggler: every replica runs the plan's H inner steps and the faster pools wait; the mixed setting
  is paced by the slowest pool used (`planner.sync.straggler.rule`);
- proportional: a replica of pool p runs H_p = floor(H t_pace / t_p) inner steps in the time the
  pacing pool runs H (`planner.sync.proportional.rule`), in the straggler rule's setting.

fleet.sync_rule 'auto' searches both and keeps the better plan (ties to the straggler rule). With one
pool every rule is the straggler rule. A rule's searches (its part of the decomposition and of the
exhaustive oracle) are its `planner.sync.searches.RuleSearch`, on the search layer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from planner.sync.proportional import rule as proportional
from planner.sync.straggler import rule as straggler


@dataclass(frozen=True)
class SyncRule:
    """What a rule changes in the score of one plan on pools (`planner.fleet.evaluate`).

    - `timing(s, pools, counts, precision, h)`: (adjust, H_p per pool used): `adjust` the change to
      the mode's throughput for `planner.cost.score.score` (None: none), in the plan's mixed setting
      `s` at inner steps H = `h`;
    - `idle(s, pools, used, precision, steps, h)`: per pool used, the share of each compute block its
      nodes wait, given the H_p of `timing` (`steps`);
    - `problems(plan, is_moe)`: why a plan cannot run under the rule, as messages ([] if it can).
    """

    name: str
    timing: Callable
    idle: Callable
    problems: Callable


STRAGGLER = SyncRule("straggler", straggler.plan_timing, straggler.idle_share, straggler.rule_problems)
PROPORTIONAL = SyncRule("proportional", proportional.plan_adjust, proportional.idle_share, proportional.rule_problems)
RULES = {r.name: r for r in (STRAGGLER, PROPORTIONAL)}     # in the order 'auto' compares them


def rule_named(name: str | None) -> SyncRule:
    """The rule of plan.sync_rule (None: straggler)."""
    return RULES[name or "straggler"]


def rule_of(instance) -> str:
    """fleet.sync_rule of a fleet of pools (straggler for one pool)."""
    return instance.fleet.sync_rule if instance.fleet.is_mixed else "straggler"


def rules_searched(instance) -> tuple[str, ...]:
    """The rules the planner compares for `fleet.sync_rule`: straggler, proportional or both (auto)."""
    rule = rule_of(instance)
    if rule == "straggler":
        return ("straggler",)
    return tuple(RULES) if rule == "auto" else ("proportional",)
