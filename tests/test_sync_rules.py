"""planner.sync.rules: which sync rules the planner searches for each fleet.sync_rule (docs/fleet.md
section 2: 'straggler' and 'proportional' alone, 'auto' both, straggler first so that ties go to it;
a fleet not given as pools has the straggler rule only)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from planner.schema.instance import parse_instance
from planner.sync.rules import rule_of, rules_searched

REPO = Path(__file__).resolve().parents[1]


def _pools(sync_rule: str):
    data = json.loads((REPO / "instances" / "mixed-a100-h100.json").read_text())
    data["fleet"]["sync_rule"] = sync_rule
    return parse_instance(data)


@pytest.mark.parametrize("sync_rule, searched", [("straggler", ("straggler",)),
                                                 ("proportional", ("proportional",)),
                                                 ("auto", ("straggler", "proportional"))])
def test_the_rules_searched_for_each_sync_rule(sync_rule, searched):
    instance = _pools(sync_rule)
    assert rule_of(instance) == sync_rule
    assert rules_searched(instance) == searched


def test_a_fleet_without_pools_runs_the_straggler_rule():
    instance = parse_instance(json.loads((REPO / "instances" / "baseline-1e25.json").read_text()))
    assert not instance.fleet.is_mixed
    assert rule_of(instance) == "straggler" and rules_searched(instance) == ("straggler",)



def _choices(annotation) -> tuple[str, ...]:
    """The strings a `Choice` field takes (its Literal, inside Annotated and an optional union)."""
    from typing import Literal, get_args, get_origin
    if get_origin(annotation) is Literal:
        return get_args(annotation)
    for arg in get_args(annotation):
        if found := _choices(arg):
            return found
    return ()


def test_every_rule_of_the_schema_has_one_interface_and_its_searches():
    """The rules behind the interface (planner.sync.rules.RULES, planner.sync.searches.SEARCHES) are
    exactly the schema's plan.sync_rule choices, in the order 'auto' compares them, and each rule's
    searches carry that same rule: a rule added in one place only fails here."""
    from planner.schema.instance import Fleet
    from planner.schema.plan import Plan
    from planner.sync.rules import RULES, rule_named
    from planner.sync.searches import SEARCHES, search_of
    assert tuple(RULES) == ("straggler", "proportional")
    assert _choices(Plan.model_fields["sync_rule"].annotation) == tuple(RULES)
    assert _choices(Fleet.model_fields["sync_rule"].annotation) == tuple(RULES) + ("auto",)
    assert tuple(SEARCHES) == tuple(RULES)
    for name in RULES:
        assert rule_named(name).name == name and search_of(name).rule is rule_named(name)
    assert rule_named(None) is rule_named("straggler")
    assert rules_searched(_pools("auto")) == tuple(RULES)


def test_the_straggler_rule_keeps_every_step_and_its_fast_pool_waits():
    """Through the interface: the straggler rule's timing leaves the step alone (no adjustment) and
    gives every pool used the plan's H; the pool that does not set the pace waits
    1 - (F_slow u_slow) / (F_fast u_fast) of every step (a100 and h100 at fp16 by their peaks and MFUs),
    the pacing pool none; a pool not used has no entry."""
    from planner.fleet.pools import pool_settings
    from planner.sync.rules import rule_named
    from planner.sync.straggler.rule import mixed_setting
    instance = _pools("straggler")
    pools = pool_settings(instance)
    rule = rule_named("straggler")
    s = mixed_setting(pools, (0, 1), "fp16")
    assert rule.timing(s, pools, [3, 2], "fp16", 7) == (None, {0: 7, 1: 7})
    assert rule.timing(s, pools, [0, 2], "fp16", 5) == (None, {1: 5})
    rates = [p.setting.peak_flops["fp16"] * p.setting.assumptions.mfu_for("fp16") for p in pools]
    slow, fast = (0, 1) if rates[0] < rates[1] else (1, 0)
    idle = rule.idle(s, pools, (0, 1), "fp16", {0: 7, 1: 7}, 7)
    assert idle[slow] == 0.0 and idle[fast] == pytest.approx(1 - rates[slow] / rates[fast], rel=1e-12)
    assert rule.problems(None, False) == []
