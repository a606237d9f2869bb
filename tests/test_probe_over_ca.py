"""The pipe rows' probe worked once per (S, schedule, M) for every activation compression Ca
(`modes.pipeline_probe_over_ca`, `DecisionSpace._probe_over_ca`, issue 27 item 5) must give, row by row
and bit for bit, what `pipeline_probe` (through `space.scored`) gives each (S, Ca, schedule, M) row on its
own: with activation memory (the listing then probes every row), the schedule a decision, the chunk count
of interleaved plans the planner's (chosen per plan by its step, which reads Ca) or fixed, both pipeline
modes."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from planner.cost import modes
from planner.cost.setting import PlanBatch
from planner.objectives import MAX_COMPUTE
from planner.space import PROBED, pipe_probe, scored
from tests.test_physics import _dtplan_case

SEEDS = (6000, 6002, 6003, 6005, 6007, 6009, 6010, 6012)
CA = (1.0, 2.0, 4.0, 10.0)


def _case(seed: int, chunks: float, penalty: str = "chinchilla"):
    """A dtplan case with activation memory, the schedule a decision, four activation compressions (the
    Chinchilla replica penalty under a C_local target keeps every row of a pipeline over the WAN unprobed:
    nothing reads its probe there; the linear one cuts them to the least step, which reads it)."""
    setting, space, _ = _dtplan_case(seed)
    setting = setting.replace(assumptions=setting.assumptions.replace(
        activation_memory=True, search_pipeline_schedules=True, pipeline_chunks=chunks, replica_penalty=penalty))
    space = dataclasses.replace(space, modes=("pp_group", "pipeline_wan"), max_micro_batches=12, max_stages=8,
                                activation_compression=CA)
    return setting, space.for_objective(setting, MAX_COMPUTE)


def _same_bits(x, y) -> bool:
    x, y = np.ascontiguousarray(x, dtype=float), np.ascontiguousarray(y, dtype=float)
    return x.shape == y.shape and bool((x.view(np.int64) == y.view(np.int64)).all())


@pytest.mark.parametrize("penalty", ["chinchilla", "linear_v1"])
@pytest.mark.parametrize("chunks", [0.0, 2.0])
@pytest.mark.parametrize("seed", SEEDS)
def test_the_rows_probe_over_ca_is_each_rows_own_probe(seed, chunks, penalty):
    setting, space = _case(seed, chunks, penalty)
    checked = 0
    for mode in space.modes:
        for precision in space.precisions:
            built = space._pipelines(setting, mode, precision)
            if built is None:
                continue
            rows, _, probed = built
            if not probed:      # nothing reads it (`DecisionSpace._pipelines`)
                assert mode == "pipeline_wan" and not space._reduces_to_least_step(setting)
                continue
            assert set(probed) == set(PROBED)
            fresh = scored(setting, pipe_probe(mode, precision, rows), *PROBED)
            for key in PROBED:
                assert _same_bits(probed[key], fresh[key]), (mode, precision, key)
            checked += rows.size
    assert checked > 0


@pytest.mark.parametrize("seed", SEEDS[:4])
def test_pipeline_probe_over_ca_is_pipeline_probe_of_each_ca(seed):
    setting, space = _case(seed, 0.0)
    rng = np.random.default_rng(seed)
    n = 200
    for mode in ("pp_group", "pipeline_wan"):
        b = PlanBatch.of(mode, "fp16", nodes=1, stages=rng.integers(2, 9, n), micro_batches=rng.integers(1, 13, n),
                         schedule=rng.choice([2, 3, 4, 5], n))
        got = modes.pipeline_probe_over_ca(setting, pipe_probe(mode, "fp16", b), np.array(CA))
        for j, ca in enumerate(CA):
            one = modes.pipeline_probe(setting, pipe_probe(mode, "fp16", dataclasses.replace(
                b, activation_compression=np.full(n, ca))))
            for key in PROBED:
                assert _same_bits(got[key][:, j], one[key]), (mode, ca, key)


@pytest.mark.parametrize("seed", SEEDS[:2])
def test_the_probe_over_ca_in_chunks_is_the_same(seed, monkeypatch):
    """Worked CHUNK plans (each at every Ca) at a time when there are more (`_probe_over_ca`): the same values."""
    import planner.space
    setting, space = _case(seed, 0.0, "linear_v1")
    monkeypatch.setattr(planner.space, "CHUNK", 7)
    for mode in space.modes:
        rows, _, probed = space._pipelines(setting, mode, "fp16")
        fresh = scored(setting, pipe_probe(mode, "fp16", rows), *PROBED)
        for key in PROBED:
            assert _same_bits(probed[key], fresh[key]), (mode, key)


@pytest.mark.parametrize("seed", SEEDS[:4])
def test_interleaved_plans_in_one_run_are_taken_as_a_slice(seed, monkeypatch):
    """Plans listed by schedule code (the interleaved ones one run of consecutive plans, as
    `DecisionSpace._probe_over_ca` lists them) are tried at each chunk count through a slice (`modes._pipeline`:
    views, no copies) and get, bit for bit, what the same plans get listed in random order (their interleaved
    rows scattered: taken by an index array), in both pipeline modes; and the listing takes the slice."""
    setting, space = _case(seed, 0.0)
    rng = np.random.default_rng(seed)
    n = 300
    taken = []
    real = modes._take_rows
    monkeypatch.setattr(modes, "_take_rows", lambda b, rows, ndim: taken.append(type(rows)) or real(b, rows, ndim))
    for mode in ("pp_group", "pipeline_wan"):
        b = PlanBatch.of(mode, "fp16", nodes=1, stages=rng.integers(2, 9, n), micro_batches=rng.integers(1, 13, n),
                         schedule=rng.choice([0, 2, 3, 4, 5], n))
        order = np.argsort(modes.physics.schedule_codes(setting.assumptions, b.schedule), kind="stable")
        taken.clear()
        scattered = modes.pipeline_probe_over_ca(setting, pipe_probe(mode, "fp16", b), np.array(CA))
        assert taken == [np.ndarray]
        taken.clear()
        in_run = modes.pipeline_probe_over_ca(setting, pipe_probe(mode, "fp16", b.take(order)), np.array(CA))
        assert taken == [slice]
        for key in PROBED:
            assert _same_bits(in_run[key], scattered[key][order]), (mode, key)
    taken.clear()
    for mode in space.modes:
        space._pipelines(setting, mode, "fp16")
    assert slice in taken
