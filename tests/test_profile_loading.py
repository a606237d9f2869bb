"""Reading a profile (`load_profile`) and the quality tables' points (`Assumptions.quality_points`), made
cheaper for a process's first sweep (issue 27 item 3): the same values as before."""

import json

import numpy as np
import pytest

from planner.cost import assumptions as assumptions_module
from planner.cost.assumptions import TABLE_FIELDS, Assumptions, apply_overrides, load_profile, profile_names, table_points


@pytest.mark.parametrize("name", profile_names())
def test_a_profile_is_its_file_read_as_text(name):
    """The profile read as bytes is the one read as text by Path.read_text (the old path), field for field."""
    data = json.loads((assumptions_module.PROFILES_DIR / f"{name}.json").read_text())
    want = apply_overrides(Assumptions(profile=name), data.get("constants", {}))
    got = load_profile(name)
    assert got == want and repr(got) == repr(want)


def test_an_unknown_profile_is_refused_with_the_known_ones():
    """A KeyError naming the known profiles (mutation caught: FileNotFoundError let through)."""
    with pytest.raises(KeyError, match="unknown assumption profile 'no-such-profile'; known: .*reference"):
        load_profile("no-such-profile")


@pytest.mark.parametrize("order", [TABLE_FIELDS, tuple(reversed(TABLE_FIELDS))])
def test_each_tables_points_are_built_on_first_use(order):
    """Each field's points are `table_points` of that field, bit for bit, built when first asked for and then
    kept (the same arrays); a field that is no table is a KeyError. Mutations caught: the points kept under
    another field's name, every field built at the first call."""
    a = load_profile("reference").replace(scenario="optimistic")
    for j, name in enumerate(order):
        points = a.quality_points(name)
        want = table_points(getattr(a, name), a.scenario_index)
        assert all(x.tobytes() == y.tobytes() and x.dtype == y.dtype for x, y in zip(points, want))
        assert a.quality_points(name) is points
        assert sorted(vars(a)["_quality_points"]) == sorted(order[:j + 1])
    with pytest.raises(KeyError):
        a.quality_points("mfu")
    assert np.array_equal(a.quality_points(order[0])[0], table_points(getattr(a, order[0]), a.scenario_index)[0])
