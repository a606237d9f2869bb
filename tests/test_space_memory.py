"""What the decision space keeps through a search (issue 27 item 5, peak memory of `max_compute` beyond the
evidence envelope): the pipe rows are remembered only by spaces that share them (`DecisionSpace.with_max_nodes`),
and the pp_group classes' n_lo is one broadcast value where every class has the same (`space._gather_or_one`).
Each must leave the classes exactly as they were: every field compared bit for bit with classes built by a
space that remembers the rows, and n_lo with its own computation from the classes' stages."""

from __future__ import annotations

import numpy as np

from planner.cost import stage_shards
from planner.space import _gather_or_one
from tests.test_box_reuse import _dtplan, _shipped

CLASS_FIELDS = ("n_lo", "n_hi", "unit", "min_nodes", "listed", "step_s", "eta_activation")


def _bits(x) -> np.ndarray:
    x = np.ascontiguousarray(x)
    return x.view(np.int64) if x.dtype == np.float64 else x


def _same(c, d) -> None:
    assert c.size == d.size
    for name in CLASS_FIELDS:
        x, y = getattr(c, name), getattr(d, name)
        assert (x is None) == (y is None), name
        if x is not None:
            assert x.dtype == y.dtype and np.array_equal(_bits(x), _bits(y)), name
    for name, x in vars(c.rows).items():
        if isinstance(x, np.ndarray):
            y = getattr(d.rows, name)
            assert x.dtype == y.dtype and np.array_equal(_bits(np.broadcast_to(x, c.rows.nodes.shape)),
                                                         _bits(np.broadcast_to(y, c.rows.nodes.shape))), name


def test_a_space_of_its_own_keeps_no_pipe_rows_and_lists_the_same_classes():
    setting, space = _shipped(3000)
    other = _shipped(3000)[1]
    shared = other.with_max_nodes(other.max_nodes)      # remembers the rows (a sweep's spaces share them)
    seen = 0
    for mode in ("pp_group", "pipeline_wan"):
        for precision in space.precisions:
            c, d = space.classes(setting, mode, precision), shared.classes(setting, mode, precision)
            assert (c is None) == (d is None)
            if c is not None:
                _same(c, d)
                seen += 1
    assert seen >= 2
    assert "_pipes" not in space.__dict__          # nothing held after the listing
    assert shared.__dict__["_pipes"]               # the sharing space still remembers them, and hands out the same
    key = next(iter(shared.__dict__["_pipes"]))
    assert shared._pipelines(setting, *key)[0] is shared._pipelines(setting, *key)[0]


def test_pp_group_n_lo_is_one_broadcast_value_where_all_agree():
    for setting, space in (_shipped(3000), _dtplan(5001), _dtplan(5003)):
        for precision in space.precisions:
            c = space.classes(setting, "pp_group", precision)
            if c is None:
                continue
            a = setting.assumptions
            own = np.maximum(np.maximum(2, space.min_nodes // c.rows.stages),
                             stage_shards.min_groups(a, setting.accelerators_per_node, setting.is_moe))
            assert c.n_lo.dtype == np.int64 and np.array_equal(c.n_lo, own)
            if (own == own[0]).all():
                assert c.n_lo.strides == (0,) and not c.n_lo.flags.writeable
            taken = c.take(np.arange(c.size) % 2 == 0)      # a new array, the same values
            assert taken.n_lo.flags.writeable and np.array_equal(taken.n_lo, own[::2])


def test_gather_or_one():
    idx = np.array([2, 0, 1, 1])
    varied = np.array([3, 5, 7], dtype=np.int64)
    assert np.array_equal(_gather_or_one(varied, idx), varied[idx]) and _gather_or_one(varied, idx).strides != (0,)
    one = np.array([4, 4, 4], dtype=np.int64)
    got = _gather_or_one(one, idx)
    assert got.dtype == np.int64 and got.shape == idx.shape and got.strides == (0,) and (got == 4).all()
    signed = np.array([0.0, -0.0])          # floats are gathered: -0.0 == 0.0, yet not the same bits
    assert np.array_equal(np.signbit(_gather_or_one(signed, np.array([1, 0]))), [True, False])
    assert _gather_or_one(np.zeros(0, np.int64), np.zeros(0, np.int64)).shape == (0,)
