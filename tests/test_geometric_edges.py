"""The split's geometric edges computed once per distinct (lo, hi, parts) and taken for each row
(`bnb._geometric_edges`, issue 27 item 5) must be, row by row, the edges of that row computed alone
(`bnb._geometric_edges_of` of the one row), whatever the mix of repeated and distinct rows."""

from __future__ import annotations

import numpy as np
import pytest

from planner.solvers import bnb


def _alone(lo, hi, parts) -> np.ndarray:
    return np.concatenate([bnb._geometric_edges_of(lo[j:j + 1], hi[j:j + 1], parts[j:j + 1]) for j in range(lo.size)])


def _rows(rng, distinct: int, size: int, top: int):
    lo = rng.integers(1, top, distinct)
    hi = lo + rng.integers(0, top, distinct)
    parts = np.minimum(rng.integers(1, bnb.SPLIT + 1, distinct), hi - lo + 1)
    pick = rng.integers(0, distinct, size)
    return lo[pick], hi[pick], parts[pick]


@pytest.mark.parametrize("distinct, size, top", [(1, 50, 10), (7, 400, 30), (40, 300, 10_000_000), (300, 400, 1000),
                                                 (5, 5, 100)])
def test_edges_shared_by_triple_are_each_rows_own(distinct, size, top):
    rng = np.random.default_rng(distinct * 1000 + size)
    lo, hi, parts = _rows(rng, distinct, size, top)
    got = bnb._geometric_edges(lo, hi, parts)
    assert got.dtype == np.int64 and got.shape == (size, bnb.SPLIT + 1)
    np.testing.assert_array_equal(got, _alone(lo, hi, parts))


def test_rows_that_differ_only_in_parts_or_in_one_end_keep_their_own_edges():
    lo = np.array([3, 3, 3, 3, 4, 3, 3, 3] * 3)
    hi = np.array([90, 90, 91, 90, 90, 90, 90, 90] * 3)
    parts = np.array([8, 5, 8, 8, 8, 2, 8, 8] * 3)
    np.testing.assert_array_equal(bnb._geometric_edges(lo, hi, parts), _alone(lo, hi, parts))


def test_wide_ranges_are_computed_row_by_row():
    lo = np.array([1, 1, 1, 1], dtype=np.int64)
    hi = np.array([1 << 40, 1 << 40, 1 << 40, 1 << 40], dtype=np.int64)      # the key would overflow: not shared
    parts = np.full(4, bnb.SPLIT)
    np.testing.assert_array_equal(bnb._geometric_edges(lo, hi, parts), _alone(lo, hi, parts))
