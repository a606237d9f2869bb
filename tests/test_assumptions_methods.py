"""`Assumptions`' own methods (planner/cost/assumptions.py `_value_methods`) behave as those
`@dataclass(frozen=True)` writes: construction, repr, equality, hashing, frozen-ness, replace().

The reference is a class `@dataclass(frozen=True)` makes from the same fields (names, types,
defaults, default factories); every comparison is between the two classes' behaviour, not a
value written here by hand."""

from __future__ import annotations

import copy
import dataclasses
import pickle

import pytest

from planner.cost import assumptions as assumptions_module
from planner.cost.assumptions import Assumptions, apply_overrides, load_profile

FIELDS = dataclasses.fields(Assumptions)


def _reference_class() -> type:
    specs = []
    for f in FIELDS:
        if f.default_factory is not dataclasses.MISSING:
            specs.append((f.name, f.type, dataclasses.field(default_factory=f.default_factory)))
        else:
            specs.append((f.name, f.type, dataclasses.field(default=f.default)))
    return dataclasses.make_dataclass("Assumptions", specs, frozen=True)


Reference = _reference_class()
HASHABLE_TABLES = {name: ((1.0, (1.0, 1.0, 1.0)),) for name in assumptions_module.TABLE_FIELDS}


def _state(obj) -> list:
    return list(vars(obj).items())


def test_fields_are_the_dataclass_fields_in_order():
    assert len(FIELDS) > 100
    assert [f.name for f in FIELDS] == [f.name for f in dataclasses.fields(Reference)]
    assert Assumptions.__match_args__ == Reference.__match_args__


def test_default_construction_as_the_dataclass():
    mine, theirs = Assumptions(), Reference()
    assert _state(mine) == _state(theirs)          # the same values, in field order
    for name in assumptions_module.TABLE_FIELDS:    # each instance its own table (the default factory)
        assert getattr(mine, name) == getattr(theirs, name)
        assert getattr(mine, name) is not getattr(Assumptions(), name)


def test_keyword_and_positional_construction_as_the_dataclass():
    changes = {"mfu": 0.31, "straggler": "synchronous", "compression_quality_ef": {1.0: (1.0, 1.0, 1.0)},
               "tensor_parallel_utilisation": ((1.0, "fp16", 0.5),), "days_per_year": 360.0}
    assert _state(Assumptions(**changes)) == _state(Reference(**changes))
    values = [getattr(Assumptions(**changes), f.name) for f in FIELDS]
    for count in (0, 1, 7, len(values)):
        assert _state(Assumptions(*values[:count])) == _state(Reference(*values[:count]))
    given = Assumptions(*values[:3], days_per_year=1.0)
    assert _state(given) == _state(Reference(*values[:3], days_per_year=1.0))


@pytest.mark.parametrize("args, kwargs", [((), {"no_such_constant": 1}), (tuple(range(len(FIELDS) + 1)), {}),
                                          (("reference",), {"profile": "x"})])
def test_bad_arguments_raise_as_the_dataclass(args, kwargs):
    with pytest.raises(TypeError) as theirs:
        Reference(*args, **kwargs)
    with pytest.raises(TypeError) as mine:
        Assumptions(*args, **kwargs)
    assert str(mine.value) == str(theirs.value)


def test_repr_as_the_dataclass():
    assert repr(Assumptions()) == repr(Reference())
    assert repr(load_profile("dtplan")) == repr(Reference(**{f.name: getattr(load_profile("dtplan"), f.name)
                                                           for f in FIELDS}))
    assert Assumptions.__repr__.__qualname__ == "Assumptions.__repr__"


def test_repr_of_a_value_that_holds_itself():
    a = Assumptions()
    a.compression_quality_ef["self"] = a              # a table is a dict: nothing stops this
    r = Reference()
    r.compression_quality_ef["self"] = r
    assert "..." in repr(a) and repr(a) == repr(r)


def test_equality_as_the_dataclass():
    a, b = Assumptions(), Assumptions()
    assert a == b and not a != b
    assert Assumptions(mfu=0.3) != a and Reference(mfu=0.3) != Reference()
    assert a.replace(compression_quality_ef={1.0: (1.0, 1.0, 0.5)}) != a
    assert (a == Reference()) is False and (Reference() == a) is False     # another class: NotImplemented
    assert a.__eq__(Reference()) is NotImplemented and a.__eq__(1) is NotImplemented
    nan = float("nan")          # tuples compare their items by identity first, then by ==
    assert Assumptions(mfu=nan) == Assumptions(mfu=nan) and Reference(mfu=nan) == Reference(mfu=nan)
    assert Assumptions(mfu=nan) != Assumptions(mfu=float("nan"))
    assert Reference(mfu=nan) != Reference(mfu=float("nan"))


def test_hash_as_the_dataclass():
    with pytest.raises(TypeError) as theirs:       # the quality tables are dicts
        hash(Reference())
    with pytest.raises(TypeError) as mine:
        hash(Assumptions())
    assert str(mine.value) == str(theirs.value)
    assert hash(Assumptions(**HASHABLE_TABLES)) == hash(Reference(**HASHABLE_TABLES))
    assert hash(Assumptions(mfu=0.3, **HASHABLE_TABLES)) != hash(Assumptions(**HASHABLE_TABLES))


@pytest.mark.parametrize("action", [lambda x: setattr(x, "mfu", 0.1), lambda x: setattr(x, "not_a_field", 1),
                                    lambda x: delattr(x, "mfu"), lambda x: delattr(x, "not_a_field")])
def test_frozen_as_the_dataclass(action):
    with pytest.raises(dataclasses.FrozenInstanceError) as theirs:
        action(Reference())
    a = Assumptions()
    with pytest.raises(dataclasses.FrozenInstanceError) as mine:
        action(a)
    assert str(mine.value) == str(theirs.value)
    assert a.mfu == Assumptions().mfu


def test_replace_copy_and_pickle():
    a = load_profile("dtplan")
    b = a.replace(mfu=0.25, scenario="conservative")
    assert (b.mfu, b.scenario, b.straggler) == (0.25, "conservative", a.straggler)
    assert _state(b) == _state(dataclasses.replace(Reference(**vars(a)), mfu=0.25, scenario="conservative"))
    assert apply_overrides(a, {"mfu": 0.5}) == a.replace(mfu=0.5)
    for copied in (copy.copy(a), copy.deepcopy(a), pickle.loads(pickle.dumps(a))):
        assert copied == a and type(copied) is Assumptions
    with pytest.raises(TypeError, match="unexpected keyword argument 'nope'"):
        a.replace(nope=1)


def test_the_cached_quality_points_survive_the_frozen_setattr():
    a = Assumptions()
    first = a.quality_points("compression_quality_ef")
    assert a.quality_points("compression_quality_ef") is first
