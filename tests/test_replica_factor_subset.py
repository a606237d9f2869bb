"""`quality_fit.replica_interval_factor` scores only the plans with K > 1 and H_eff > 1 when they are
fewer than half (issue 27 item 5: the search's corners at H = R = 1 and the pp_group classes' bound at
H_eff = 1 need none): every value is the double the formula gives scoring every plan
(`_replica_interval_factor`), NaN and infinite K or H_eff included, in every broadcast shape."""

from __future__ import annotations

import numpy as np
import pytest

from planner.cost import quality_fit
from tests.test_physics import _dtplan_case


@pytest.mark.parametrize("seed", range(60))
def test_the_subset_scores_every_plan_as_the_whole_formula(seed):
    rng = np.random.default_rng(seed)
    a = _dtplan_case(seed % 5)[0].assumptions
    size = int(rng.integers(1, 60))
    if seed % 2:
        k = rng.choice([0.0, 1.0, 2.0, 3.0, 7.0, 1e4, np.nan, np.inf], size)
    else:
        k = rng.integers(0, 6, size).astype(float)
    h = rng.choice([0.5, 1.0, 1.0, 1.0, 1.0, 2.0, 30.0, 1e3, np.nan, np.inf], size)
    params = float(rng.choice([1e8, 7e9, 1e12]))
    for kk, hh in ((k, h), (k, np.ones(1)), (k[:1], h), (3.0, h), (k, 2.0)):
        got = quality_fit.replica_interval_factor(kk, params, hh, a)
        want = quality_fit._replica_interval_factor(np.asarray(kk, float), params, np.asarray(hh, float), a)
        assert got.shape == want.shape
        np.testing.assert_array_equal(got, want)


def test_mostly_ones_takes_the_subset():
    """Where most plans have H_eff = 1 the result is still the formula's at the others (not all ones)."""
    a = _dtplan_case(0)[0].assumptions
    k, h = np.array([5.0, 5.0, 5.0, 5.0]), np.array([1.0, 1.0, 1.0, 100.0])
    got = quality_fit.replica_interval_factor(k, 1e10, h, a)
    assert got[:3].tolist() == [1.0, 1.0, 1.0]
    assert got[3] == quality_fit._replica_interval_factor(k[3:], 1e10, h[3:], a)[0] < 1.0
