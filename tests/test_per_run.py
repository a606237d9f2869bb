"""`modes._per_run`: an elementwise function computed once per run of equal rows and repeated over the run
gives every element the bits it gives that element computed alone (issue 27 item 5: the straggler factor of
the branch and bound's groups, the probe's f(S) and eta_A)."""

from __future__ import annotations

import numpy as np
import pytest

from planner.cost import modes, quality
from planner.cost.straggler import straggler_factor
from tests.test_physics import _dtplan_case


def _runs(rng, n, pool):
    """n values drawn from `pool` in runs of random length (at most n)."""
    lengths = rng.integers(1, 40, n)
    values = rng.choice(pool, n)
    return np.repeat(values, lengths)[:n]


def _same_bits(got, want):
    assert got.shape == want.shape and got.dtype == want.dtype
    assert (np.asarray(got).view(np.uint8) == np.asarray(want).view(np.uint8)).all()


@pytest.mark.parametrize("seed", range(30))
def test_per_run_is_every_row_computed(seed):
    rng = np.random.default_rng(seed)
    a = _dtplan_case(seed % 5)[0].assumptions
    n = int(rng.integers(1, 3000))
    pool = np.array([-0.0, 0.0, 0.5, 1.0, 2.0, 3.0, 7.0, 64.0, 1e4, np.nan, np.inf])
    g = _runs(rng, n, pool) if seed % 3 else rng.uniform(0.0, 1e4, n)
    _same_bits(modes._per_run(lambda x: straggler_factor(x, a), g), straggler_factor(g, a))
    stages = _runs(rng, n, np.array([1.0, 2.0, 4.0, 8.0, 63.0]))
    ca = np.array([1.0, 2.0, 4.0, 16.0])
    eta = lambda c, x: quality.activation_quality(c, x, a)
    # columns of plans against a row of compressions (the probe over Ca), a (1, k) row, and per-plan pairs
    _same_bits(modes._per_run(eta, ca, stages[:, None]), eta(ca, stages[:, None]))
    _same_bits(modes._per_run(eta, ca[None, :], stages[:, None]), eta(ca[None, :], stages[:, None]))
    per_plan = _runs(rng, n, ca) if seed % 2 else np.full(n, 4.0)
    _same_bits(modes._per_run(eta, per_plan, stages), eta(per_plan, stages))
    _same_bits(modes._per_run(eta, 2.0, stages), eta(2.0, stages))


def test_runs_are_told_apart_by_every_varying_operand():
    """A run ends where any operand that varies along the rows changes (here only the second)."""
    x = np.full(200, 3.0)
    y = np.repeat([1.0, 2.0], 100)
    seen = []
    got = modes._per_run(lambda p, q: seen.append(p.shape) or p * 10.0 + q, x, y)
    assert seen == [(2,)] and (got == x * 10.0 + y).all()


def test_signed_zero_and_nan_payloads_keep_their_own_runs():
    """Rows equal under == but not bit for bit (0.0 and -0.0) are not shared."""
    x = np.repeat([0.0, -0.0], 100)
    with np.errstate(divide="ignore"):
        _same_bits(modes._per_run(lambda v: 1.0 / v, x), 1.0 / x)


def test_short_or_mostly_distinct_rows_are_computed_whole():
    calls = []
    fn = lambda v: calls.append(v.size) or v + 1.0
    modes._per_run(fn, np.ones(modes.RUN_MIN - 1))
    modes._per_run(fn, np.arange(1000.0))
    assert calls == [modes.RUN_MIN - 1, 1000]
