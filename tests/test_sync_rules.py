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

