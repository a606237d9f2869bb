"""timing.compute_time_s: its path for four Python floats gives numpy's float64, bit for bit."""

import warnings

import numpy as np

from planner.cost import timing


def _numpy(p, b, f, u):
    """The array formula of compute_time_s, as numpy computes it."""
    with np.errstate(all="ignore"):
        return (6.0 * np.asarray(p, dtype=float) * b) / (np.asarray(f, dtype=float) * u)


def _bits(x) -> int:
    return int(np.asarray(x, dtype=np.float64).view(np.uint64))


def _cases():
    rng = np.random.default_rng(27)
    ordinary = [float(x) for x in 10.0 ** rng.uniform(-3, 15, 400)]
    extreme = [0.0, -0.0, 5e-324, 2.2250738585072014e-308, 1e-300, 1e300, 1.7976931348623157e308,
               float(np.inf), float(np.nan), 1.0, 0.5, 3.0]
    for i in range(0, 400, 4):
        yield tuple(ordinary[i:i + 4])
    for p in extreme:
        for f in extreme:
            yield p, ordinary[0], f, 0.4
            yield ordinary[1], p, ordinary[2], f


def test_scalar_path_equals_numpy_bit_for_bit():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)      # the zero denominators go through numpy
        for p, b, f, u in _cases():
            got = timing.compute_time_s(p, b, f, u)
            want = _numpy(p, b, f, u)
            assert type(got) is np.float64
            assert _bits(got) == _bits(want) or (np.isnan(got) and np.isnan(want)), (p, b, f, u, got, want)


def test_arrays_still_broadcast():
    p = np.array([1e9, 2e9])
    got = timing.compute_time_s(p, 131072.0, 1.5e16, 0.4)
    assert got.shape == (2,) and np.array_equal(got, _numpy(p, 131072.0, 1.5e16, 0.4))
