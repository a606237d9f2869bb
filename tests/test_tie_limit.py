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


def _bits(x) -> int:
    return int(np.asarray(x, dtype=float).view(np.uint64))


def test_single_numbers_take_python_floats_bit_identical_to_the_array_path():
    """The scalar path (python float arithmetic) gives the very double the numpy path gives, for
    every class of double: random bit patterns (all exponents, both signs, subnormals, nan payloads)
    and the edges (zeros, the largest and smallest floats, infinities, values within TIE_REL of
    the largest float, where the product overflows)."""
    rng = np.random.default_rng(27)
    edges = [0.0, -0.0, 1.0, -1.0, BIG, -BIG, np.nextafter(BIG, 0), BIG * (1 - 1e-13), 5e-324, -5e-324,
             2.2250738585072014e-308, np.inf, -np.inf, np.nan, -np.nan, 3.5e7, 0.17]
    randoms = rng.integers(0, 2**64, size=20_000, dtype=np.uint64).view(float)
    values = np.concatenate([np.array(edges), randoms, rng.uniform(1e-3, 1e3, 2_000)])
    with np.errstate(invalid="ignore"):
        expected = tie_limit(values)          # the numpy path, one array
    assert isinstance(tie_limit(1.0), np.float64)
    for m, want in zip(values, expected):
        for single in (float(m), np.float64(m)):
            got = tie_limit(single)
            assert isinstance(got, np.float64)
            assert _bits(got) == _bits(want), (m, got, want)


def test_empty_batches_give_an_empty_float_array_of_their_shape():
    for empty in (np.zeros(0), np.zeros(0, np.int64), np.zeros((0, 3)), []):
        got = tie_limit(empty)
        want = np.where(np.isfinite(np.zeros(np.shape(empty))), 0.0, 0.0)     # what the numpy path returns
        assert got.dtype == want.dtype == np.float64 and got.shape == want.shape
    source = np.zeros(0)
    assert tie_limit(source) is not source      # a new array, as np.where gives
