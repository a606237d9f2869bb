"""`strict.number_error` and `strict.integer_error` describe the bounds only when a value fails them
(a valid field builds no text): the verdicts and messages are those of the checks as written before
(the bounds' description built first), on every combination of bounds and a spread of values,
valid and not."""

from __future__ import annotations

import itertools
import math

from planner.schema.strict import _cap_error, _describe, _got, integer_error, number_error, show


def _number_before(value, gt=None, ge=None, le=None, hint="", cap=None):
    """The number check as it was written before: the description first, then the verdict."""
    want = _describe("a number", gt, ge, le, integer=False)
    is_number = isinstance(value, (int, float)) and not isinstance(value, bool)
    try:
        ok = is_number and math.isfinite(value) and (gt is None or value > gt) and (ge is None or value >= ge) \
            and (le is None or value <= le)
    except OverflowError:
        ok = False
    return _cap_error(value, cap, hint) if ok else f"must be {want}{hint}, {_got(value)}"


def _integer_before(value, gt=None, ge=None, le=None, hint="", cap=None):
    """The integer check as it was written before (through the number check's verdict)."""
    want = _describe("an integer", gt, ge, le, integer=True)
    if isinstance(value, float) and math.isfinite(value) and not value.is_integer():
        return f"must be {want}{hint}, got {show(value)} (not a whole number)"
    if _number_before(value, gt, ge, le) is None:
        return _cap_error(value, cap, hint)
    return f"must be {want}{hint}, {_got(value)}"


VALUES = [0, 1, -1, 2, 72, 72.0, 72.5, 0.5, -0.0, 1e6, 7.2e10, -8, 10 ** 400, -(10 ** 400), math.inf, -math.inf,
          math.nan, True, False, None, "72", [1], {"a": 1}, 1e308, 5e-324]
BOUNDS = [None, 0, 1, 0.5, 100]


def test_the_messages_are_those_of_the_checks_as_written_before():
    checked = failed = 0
    for gt, ge, le in itertools.product(BOUNDS, BOUNDS, [None, 1, 100, 1e9]):
        for hint, cap in (("", None), (" (e.g. 8)", 1e12)):
            for value in VALUES:
                now, before = number_error(value, gt, ge, le, hint, cap), _number_before(value, gt, ge, le, hint, cap)
                assert now == before, (value, gt, ge, le, hint, cap)
                now, before = integer_error(value, gt, ge, le, hint, cap), _integer_before(value, gt, ge, le, hint, cap)
                assert now == before, (value, gt, ge, le, hint, cap)
                checked += 1
                failed += before is not None
    assert checked == len(BOUNDS) ** 2 * 4 * 2 * len(VALUES)
    assert 0 < failed < checked                    # both verdicts occur


def test_hand_examples():
    assert number_error(3.0, gt=0) is None
    assert number_error(-8, gt=0) == "must be a number > 0, got -8"
    assert integer_error(72.5, ge=1, le=100) == "must be an integer in 1..100, got 72.5 (not a whole number)"
    assert integer_error(72.0, ge=1, le=100) is None
    assert integer_error(True, ge=1) == number_error(True, ge=1).replace("a number", "an integer")
    assert number_error(10 ** 400, le=1e9).startswith("must be a number <= 1e9, got ")
