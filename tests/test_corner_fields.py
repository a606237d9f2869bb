"""`Classes.corner_plans` gives a field that is the same in every row (a mode's placeholders) as a broadcast
of that value instead of taking it row by row (issue 27 item 5): each corner batch is, field by field and
bit for bit (dtype and sign of zero included), the rows taken at the classes with n, H and R set, which is
what the search scored before."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from planner.cost.setting import PlanBatch
from planner.solvers import bnb
from planner.space import Classes
from tests.test_box_reuse import CASES, _case


def _taken(c: Classes, idx, n, h, r) -> PlanBatch:
    """The plans of classes `idx` built from `rows.take`, independently of `corner_plans`."""
    b = c.rows.take(idx)
    shape = b.nodes.shape
    return dataclasses.replace(b, nodes=np.broadcast_to(c.nodes(idx, n), shape).astype(np.int64),
                               inner_steps=np.broadcast_to(np.asarray(h, np.int64), shape),
                               regional_rounds=np.broadcast_to(np.asarray(r, np.int64), shape))


def _same_bits(got: PlanBatch, want: PlanBatch):
    for field in dataclasses.fields(want):
        x, y = getattr(got, field.name), getattr(want, field.name)
        if isinstance(y, np.ndarray):
            assert x.dtype == y.dtype and x.shape == y.shape, field.name
            assert np.ascontiguousarray(x).tobytes() == np.ascontiguousarray(y).tobytes(), field.name
        else:
            assert x == y, field.name


@pytest.mark.parametrize("case", CASES[:8], ids=[f"{n}-{a}" for n, a in CASES[:8]])
def test_corner_plans_are_the_rows_taken(case):
    setting, space = _case(*case)
    rng = np.random.default_rng(17)
    for c in bnb.batches(setting, space):
        if c.members is not None:
            continue
        h_max, r_max = bnb.h_r_max(c, space.max_inner_steps, space.max_regional_rounds)
        idx = rng.integers(0, c.size, 300)
        n = rng.integers(c.n_lo[idx], c.n_hi[idx] + 1)
        h1, h2 = np.sort(rng.integers(1, h_max + 1, (2, idx.size)), axis=0)
        r1, r2 = np.sort(rng.integers(1, r_max + 1, (2, idx.size)), axis=0)
        for got, (h, r) in zip(c.corner_plans(idx, n, (h2, r2), (h1, r1)), ((h2, r2), (h1, r1))):
            _same_bits(got, _taken(c, idx, n, h, r))
        _same_bits(c.plans(np.int64(3 % c.size), 2, 1, 1), _taken(c, np.int64(3 % c.size), 2, 1, 1))


def test_a_field_equal_but_for_the_sign_of_zero_is_taken_row_by_row():
    """-0.0 == 0.0, yet a row's -0.0 stays -0.0 (a broadcast of the first row's 0.0 would not be its bits)."""
    rows = PlanBatch.of("flat", "fp16", nodes=1, compression=np.array([0.0, -0.0, 0.0]), streaming=True)
    c = Classes(rows, np.ones(3, np.int64), np.full(3, 9, np.int64), np.ones(3, np.int64))
    idx = np.array([1, 0, 2])
    got = c.plans(idx, np.array([2, 3, 4]), 1, 1)
    assert np.signbit(got.compression).tolist() == [True, False, False]
    _same_bits(got, _taken(c, idx, np.array([2, 3, 4]), 1, 1))
