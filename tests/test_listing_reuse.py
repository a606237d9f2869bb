"""What the class listing reuses instead of computing again (issue 27 item 5): the pipe rows' probe
scored once when the schedule is chosen (`DecisionSpace._probed_rows`) must be, row by row, what a
fresh scoring of those rows gives; a class's plans (`Classes.plans`, which takes from its row only the
fields it does not set) must be the row's plan with n, H and R set, field by field, as built from the
whole row (`PlanBatch.take`)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from planner.cost.setting import PlanBatch
from planner.objectives import MAX_COMPUTE
from planner.space import PROBED, DecisionSpace, pipe_probe, scored
from tests.test_physics import _dtplan_case

SEEDS = (6000, 6002, 6003, 6005, 6007, 6009, 6010, 6012)     # cases with pp_group and pipeline_wan classes


def _case(seed: int):
    """A dtplan case with the schedule a decision and no activation memory (the probe is kept), streaming
    on and off and two compressions, so that pp_group rows are expanded over both."""
    setting, space, _ = _dtplan_case(seed)
    setting = setting.replace(assumptions=setting.assumptions.replace(activation_memory=False,
                                                                      search_pipeline_schedules=True))
    space = dataclasses.replace(space, modes=("pp_group", "pipeline_wan"), max_micro_batches=8, max_stages=6,
                                compression=(1.0, 16.0), streaming=(True, False))
    return setting, space.for_objective(setting, MAX_COMPUTE)


def _groups(space, build):
    """(mode, precision, what `build(mode, precision)` gives) for every group where it gives something."""
    for mode in space.modes:
        for precision in space.precisions:
            if (got := build(mode, precision)) is not None:
                yield mode, precision, got


@pytest.mark.parametrize("seed", SEEDS)
def test_the_probe_kept_is_a_fresh_scoring_of_the_rows(seed):
    setting, space = _case(seed)
    checked = 0
    for mode, precision, (rows, _, probed) in _groups(space, lambda m, p: space._pipelines(setting, m, p)):
        assert set(probed) == set(PROBED)
        fresh = scored(setting, pipe_probe(mode, precision, rows), *PROBED)
        for key in PROBED:
            np.testing.assert_array_equal(probed[key], fresh[key])
        checked += rows.size
    assert checked > 0


@pytest.mark.parametrize("seed", SEEDS)
def test_a_class_plan_is_its_row_with_n_h_and_r_set(seed):
    setting, space = _case(seed)
    rng = np.random.default_rng(seed)
    checked = 0
    for _, _, c in _groups(space, lambda m, p: space.classes(setting, m, p)):
        idx = rng.integers(0, c.size, 50)
        n = rng.integers(c.n_lo[idx], c.n_hi[idx] + 1)
        h, r = rng.integers(1, 4, 50), np.ones(50, np.int64)
        got = c.plans(idx, n, h, r)
        checked += idx.size
        whole = c.rows.take(idx)
        for f in dataclasses.fields(PlanBatch):
            want = getattr(whole, f.name)
            if f.name == "nodes":
                want = np.maximum(n * c.unit[idx], c.min_nodes[idx])
            elif f.name == "inner_steps":
                want = h
            elif f.name == "regional_rounds":
                want = r
            value = getattr(got, f.name)
            if isinstance(want, np.ndarray):
                assert value.dtype == want.dtype, f.name
                np.testing.assert_array_equal(value, want, err_msg=f.name)
            else:
                assert value == want, f.name
    assert checked > 0


@pytest.mark.parametrize("seed", SEEDS[:4])
@pytest.mark.parametrize("mode", ["pp_group", "pipeline_wan"])
def test_rows_that_run_are_those_of_the_full_grid(seed, mode):
    """Which (S, Ca, schedule, M) rows run their schedule is worked on the (S, schedule, M) grid and broadcast over
    Ca (`DecisionSpace._schedule_runs`, h-maxc12): the rows `_probed_rows` lists must be those of
    `physics.schedule_allowed` on the whole grid (the code before), in its order, field by field, with
    activation memory on (every row probed afterwards) and DualPipe among the schedules (rows left out)."""
    from planner.cost import physics
    from planner.space import schedules_searched
    setting, space = _case(seed)
    setting = setting.replace(assumptions=setting.assumptions.replace(activation_memory=True))
    space = dataclasses.replace(space, max_stages=8, max_micro_batches=20)
    dropped = 0
    for precision in space.precisions:
        stages = space._stage_range(setting, precision, mode)
        got = space._probed_rows(setting, mode, precision)
        g = space._grid(stages=stages, activation_compression=space.activation_compression,
                        schedule=schedules_searched(setting.assumptions),
                        micro_batches=np.arange(1, space.max_micro_batches + 1))
        allowed = physics.schedule_allowed(setting.assumptions, g["stages"], g["micro_batches"], g["schedule"])
        dropped += int((~allowed).sum())
        want = PlanBatch.of(mode, precision, nodes=1, **{k: v[allowed] for k, v in g.items()})
        assert got is not None and got[1] is None and got[2] == {}
        for f in dataclasses.fields(PlanBatch):
            x, y = getattr(got[0], f.name), getattr(want, f.name)
            if isinstance(y, np.ndarray):
                assert x.dtype == y.dtype and np.array_equal(np.broadcast_to(x, y.shape), y), f.name
            else:
                assert x == y, f.name
    assert dropped
