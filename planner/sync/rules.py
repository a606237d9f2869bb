"""The sync rules' names and which of them a fleet's plans are searched under (fleet.sync_rule,
docs/fleet.md section 2).

A plan on a fleet of pools runs one rule (plan.sync_rule):

- straggler: every replica runs the plan's H inner steps and the faster pools wait; the mixed setting
  is paced by the slowest pool used (`planner.fleet.replicas.mixed_setting`);
- proportional: a replica of pool p runs H_p = floor(H t_pace / t_p) inner steps in the time the
  pacing pool runs H (`planner.sync.proportional.rule`).

fleet.sync_rule 'auto' searches both and keeps the better plan (ties to the straggler rule). With one
pool every rule is the straggler rule.
"""

from __future__ import annotations

RULES = ("straggler", "proportional")       # the rules a plan runs, in the order 'auto' compares them


def rule_of(instance) -> str:
    """fleet.sync_rule of a fleet of pools (straggler for one pool)."""
    return instance.fleet.sync_rule if instance.fleet.is_mixed else "straggler"


def rules_searched(instance) -> tuple[str, ...]:
    """The rules the planner compares for `fleet.sync_rule`: straggler, proportional or both (auto)."""
    rule = rule_of(instance)
    if rule == "straggler":
        return ("straggler",)
    return RULES if rule == "auto" else ("proportional",)
