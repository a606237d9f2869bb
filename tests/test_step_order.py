"""The pipe rows' order by pipeline step found group by group (`planner.space._step_order`,
`_first_of_groups`; issue 27 item 5): `DecisionSpace._least_step` and `_window_front` give, for rows that
come grouped by (S, Ca) as the listing's grid lists them, exactly what one np.lexsort of every row by
(S, Ca, step, M, schedule) gives (the code before), NaN steps and tied steps included; rows that do not
come grouped take that one sort."""

from __future__ import annotations

import numpy as np
import pytest

from planner.cost.setting import PlanBatch
from planner.space import WINDOW_MARGIN, DecisionSpace


def _lexsort_least_step(pipes, t_step):
    """The mask of `_least_step` as computed before: one lexsort of every row."""
    order = np.lexsort((pipes.schedule, pipes.micro_batches, t_step, pipes.activation_compression, pipes.stages))
    key = np.stack([pipes.stages[order], pipes.activation_compression[order]])
    first = np.r_[True, (key[:, 1:] != key[:, :-1]).any(axis=0)]
    mask = np.zeros(pipes.size, bool)
    mask[order[first]] = True
    return mask


def _lexsort_window_front(pipes, t_step, compute):
    """`_window_front` as computed before: one lexsort of every row, then the records of c per group."""
    c = compute / pipes.micro_batches
    order = np.lexsort((pipes.schedule, pipes.micro_batches, t_step, pipes.activation_compression, pipes.stages))
    key = np.stack([pipes.stages[order], pipes.activation_compression[order]])
    starts = np.flatnonzero(np.r_[True, (key[:, 1:] != key[:, :-1]).any(axis=0)])
    ends = np.r_[starts[1:], order.size]
    keep, first = np.ones(order.size, bool), np.repeat(order[starts], ends - starts)
    c_sorted = c[order]
    for a, b in zip(starts, ends):
        before = np.maximum.accumulate(c_sorted[a:b])[:-1]
        keep[a + 1:b] = ~(before >= c_sorted[a + 1:b] * (1 + WINDOW_MARGIN))
    keep |= np.isnan(t_step[order])
    mask, out = np.zeros(pipes.size, bool), np.zeros(pipes.size, np.int64)
    mask[order], out[order] = keep, first
    return mask, out


def _grid_rows(rng, shuffle: bool):
    """Pipe rows of a (S, Ca, schedule, M) grid with some rows dropped (as DualPipe's and memory's cuts do),
    steps drawn from few values (ties), some NaN, and one group of NaN steps only."""
    stages, ca = np.arange(2, 2 + rng.integers(1, 5)), np.array([1.0, 2.0, 4.0])[:rng.integers(1, 4)]
    schedules, m = np.array([2, 3, 4, 5]), np.arange(1, 1 + rng.integers(1, 9))
    g = [x.ravel() for x in np.meshgrid(stages, ca, schedules, m, indexing="ij")]
    keep = rng.random(g[0].size) < 0.8
    keep[0] = True
    g = [x[keep] for x in g]
    if shuffle:
        p = rng.permutation(g[0].size)
        g = [x[p] for x in g]
    rows = PlanBatch.of("pp_group", "fp16", nodes=1, stages=g[0], activation_compression=g[1], schedule=g[2],
                        micro_batches=g[3])
    t_step = rng.choice([1.0, 1.5, 2.0, 2.5], rows.size) * (1 + rng.integers(0, 2, rows.size))
    t_step[rng.random(rows.size) < 0.1] = np.nan
    t_step[(rows.stages == stages[-1]) & (rows.activation_compression == ca[0])] = np.nan
    compute = rng.choice([1.0, 2.0, 3.0], rows.size) * rows.micro_batches
    return rows, t_step, compute


@pytest.mark.parametrize("shuffle", [False, True])
@pytest.mark.parametrize("seed", range(40))
def test_least_step_and_window_front_match_one_sort_of_every_row(seed, shuffle):
    rows, t_step, compute = _grid_rows(np.random.default_rng(seed), shuffle)
    probed = {"t_step_s": t_step, "step_compute_s": compute}
    got = DecisionSpace._least_step(None, "pp_group", "fp16", rows, probed)
    assert np.array_equal(got, _lexsort_least_step(rows, t_step))
    mask, first = DecisionSpace._window_front(None, "pp_group", "fp16", rows, probed)
    want_mask, want_first = _lexsort_window_front(rows, t_step, compute)
    assert np.array_equal(mask, want_mask) and np.array_equal(first, want_first)


def test_rows_with_a_repeated_micro_batch_and_schedule_take_the_one_sort():
    """Two rows of one group with the same (M, schedule) (no grid lists them): `_first_of_groups` would
    mark both, so `_least_step` sorts every row instead, and marks one."""
    rows = PlanBatch.of("pp_group", "fp16", nodes=1, stages=[2, 2, 2], activation_compression=1.0,
                        schedule=[2, 2, 3], micro_batches=[4, 4, 4])
    t_step = np.array([1.0, 1.0, 2.0])
    got = DecisionSpace._least_step(None, "pp_group", "fp16", rows, {"t_step_s": t_step})
    assert got.tolist() == [True, False, False] == _lexsort_least_step(rows, t_step).tolist()
