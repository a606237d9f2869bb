"""bnb.tie_limit: m (1 + TIE_REL) without overflow, compared exactly as the real product."""

import warnings
from fractions import Fraction

import numpy as np

from planner.solvers.bnb import TIE_REL, tie_limit

BIG = float(np.finfo(float).max)


def _tied(t: float, m: float) -> bool:
    """t <= m (1 + TIE_REL) in exact rational arithmetic (t, m finite)."""
    return Fraction(t) <= Fraction(m) * (1 + Fraction(TIE_REL))


def test_ordinary_values_are_the_product():
    m = np.array([1.0, 3.5e7, 2.0e-300, 1e300])
    assert np.array_equal(tie_limit(m), m * (1 + TIE_REL))


def test_near_the_largest_float_no_overflow_and_exact_comparisons():
    ms = [BIG, BIG * (1 - 1e-13), BIG * (1 - 1e-11), np.nextafter(BIG, 0)]
    ts = [BIG, np.nextafter(BIG, 0), BIG * (1 - 1e-13), BIG * (1 - 1e-11), BIG * (1 - 2e-12), 1.0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for m in ms:
            limit = tie_limit(np.array([m]))[0]
            assert np.isfinite(limit)
            for t in ts:
                assert (t <= limit) == _tied(t, m), (t, m)
            assert not (np.inf <= limit)        # an infeasible plan is never tied with a finite one


def test_infinite_and_nan_stay():
    out = tie_limit(np.array([np.inf, np.nan]))
    assert out[0] == np.inf and np.isnan(out[1])
