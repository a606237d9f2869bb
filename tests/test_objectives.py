"""The objectives as objects (planner/objectives.py, issue 26 item 3): each carries its key, its
sense, the measure and limit the search prunes with, its bounds, its tie-break and its
presentation; the user's key is parsed once, and no planner module compares the key."""

import ast
import math
from pathlib import Path

import pytest

from planner.objectives import (KEYS, MAX_COMPUTE, MIN_COST, MIN_TIME, OBJECTIVES, UnsupportedObjective,
                                objective_named)
from planner.solvers import bnb

PLANNER = Path(__file__).resolve().parents[1] / "planner"


def test_keys_parse_to_their_objects_and_print_as_the_key():
    assert KEYS == ("min_time", "min_cost", "max_compute")
    for o in OBJECTIVES:
        assert objective_named(o.key) is o and objective_named(o) is o
        assert str(o) == o.key and f"{o}" == o.key and o == o.key and hash(o) == hash(o.key)
    with pytest.raises(UnsupportedObjective, match="'fastest'.*supported: min_time, min_cost, max_compute"):
        objective_named("fastest")


def test_sense_value_and_what_the_search_prunes_with():
    # min_time: seconds to target, within W; min_cost: USD (nodes), within W; max_compute: FLOP, no target
    assert (MIN_TIME.maximise, MIN_TIME.by_time, MIN_TIME.by_cost, MIN_TIME.by_compute) == (False, True, False, False)
    assert (MIN_COST.maximise, MIN_COST.by_time, MIN_COST.by_cost, MIN_COST.by_compute) == (False, False, True, False)
    assert (MAX_COMPUTE.maximise, MAX_COMPUTE.by_time, MAX_COMPUTE.by_cost, MAX_COMPUTE.by_compute) == \
        (True, False, False, True)
    # the branch and bound's measure names (bnb.MEASURES): time, or 1/C of the target kind
    assert MIN_TIME.measure("c_local") == MIN_COST.measure("c_quality") == bnb.TIME
    assert MAX_COMPUTE.measure("c_quality") == bnb.compute_measure("c_quality") == "1/c_quality"
    assert {o.measure(k) for o in OBJECTIVES for k in ("c_local", "c_quality")} <= set(bnb.MEASURES)
    assert MIN_TIME.limit_s(86400.0) == MIN_COST.limit_s(86400.0) == 86400.0
    assert MAX_COMPUTE.limit_s(86400.0) == math.inf
    assert [o.value_field("c_quality") for o in OBJECTIVES] == ["time_to_target_s", "cost_usd", "c_quality"]


def test_bounds_and_tie_break():
    # nothing known of a part: lower bound 0 (min_*), upper bound inf (max); a part proven empty: the reverse
    assert (MIN_TIME.unknown_bound, MIN_TIME.empty_bound) == (0.0, math.inf)
    assert (MAX_COMPUTE.unknown_bound, MAX_COMPUTE.empty_bound) == (math.inf, 0.0)
    assert MIN_COST.tighter(5.0, 3.0) == 3.0 and MAX_COMPUTE.tighter(5.0, 3.0) == 5.0
    assert MIN_TIME.best([4.0, 2.0, 9.0]) == 2.0 and MAX_COMPUTE.best([4.0, 2.0, 9.0]) == 9.0
    # least key first: the value (negated when maximising), then for min_cost the faster plan
    assert MIN_TIME.rank_key(7.0, 3.0) == (7.0,)
    assert MAX_COMPUTE.rank_key(7.0) == (-7.0,)
    assert sorted([MIN_COST.rank_key(100.0, 9.0), MIN_COST.rank_key(100.0, 2.0)]) == [(100.0, 2.0), (100.0, 9.0)]


def test_presentation_as_the_commands_show_it():
    assert [o.heading for o in OBJECTIVES] == ["Fastest plan", "Cheapest plan reaching the target in time",
                                               "Most compute within the duration limit"]
    assert [o.title for o in OBJECTIVES] == ["least time to target", "least cost",
                                             "most compute within the duration limit"]
    assert [o.axis for o in OBJECTIVES] == ["time to target, days", "minimum cost, USD",
                                            "compute within the duration limit, FLOP"]
    assert [o.unit for o in OBJECTIVES] == ["s", "USD", "FLOP"]


def test_objectives_import_nothing_of_the_planner():
    tree = ast.parse((PLANNER / "objectives.py").read_text())
    imported = [n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)] + \
        [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    assert not [m for m in imported if m and m.startswith("planner")], imported


def _key_comparisons(path: Path) -> list[str]:
    """`x == "min_time"`-like comparisons (==, !=, in, not in) of an objective key in a module."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Compare):
            consts = [c for c in [node.left, *node.comparators] for c in ast.walk(c)
                      if isinstance(c, ast.Constant) and c.value in KEYS]
            if consts and any(isinstance(op, (ast.Eq, ast.NotEq, ast.In, ast.NotIn)) for op in node.ops):
                out.append(f"{path.relative_to(PLANNER.parent)}:{node.lineno}")
    return out


def test_no_module_compares_the_objective_key():
    """Only user input's keys are compared: the schema's own check of an instance and the random
    instance generators reading back the key they wrote into the instance data."""
    found = [site for path in sorted(PLANNER.rglob("*.py")) if path.name != "objectives.py"
             for site in _key_comparisons(path)]
    assert sorted({s.split(":")[0] for s in found}) == ["planner/fleet/samples.py", "planner/schema/instance.py",
                                                        "planner/sites/samples.py"], found
