"""The reference cases' assumptions (`conformance._profile_with`, issue 27 item 3): where a case restates
the profile's own values the profile itself, else the profile replaced; either way the value
`Assumptions.replace` gives, field for field (type, value and a float's sign)."""

import dataclasses
import math

import pytest

from planner.reference import conformance


def _fields(a):
    return [(f.name, type(getattr(a, f.name)), repr(getattr(a, f.name))) for f in dataclasses.fields(a)]


def _replaced(name, changes):
    """The old path: the profile replaced by every change."""
    return conformance.profile(name).replace(**dict(changes))


CHANGES = [
    (("error_feedback", True), ("mfu", 0.4), ("scenario", "expected"), ("straggler", "relay")),   # the sweeps'
    (("error_feedback", True), ("mfu", 0.4), ("straggler", "synchronous")),
    (("mfu", 0.3),),
    (("scenario", "optimistic"),),
    (("error_feedback", 1),),                 # equal to True, another type
    (("mfu_fp8", -0.0),),                     # equal to 0.0, another sign
    (("pipeline_chunks", 1),),                # equal to 1.0, an int
    (("mfu", math.nan),),
    (),
]


@pytest.mark.parametrize("name", sorted(set(conformance.PROFILES.values())))
@pytest.mark.parametrize("changes", CHANGES)
def test_the_profile_with_changes_is_the_replaced_profile(name, changes):
    """Field for field (type and repr: -0.0 and 1 vs 1.0 differ) the value `replace` gives; the profile
    itself exactly where every change restates its value. Mutations caught: no type check (True for 1,
    1 for 1.0), no sign check (-0.0 for 0.0)."""
    conformance._profile_with.cache_clear()
    got, want = conformance._profile_with(name, changes), _replaced(name, changes)
    assert _fields(got) == _fields(want)
    base = conformance.profile(name)
    same = all(type(getattr(base, k)) is type(v) and repr(getattr(base, k)) == repr(v) for k, v in changes)
    assert (got is base) == same


def test_an_unknown_field_is_refused_as_by_replace():
    conformance._profile_with.cache_clear()
    with pytest.raises(TypeError):
        conformance._profile_with("reference", (("no_such_field", 1.0),))
