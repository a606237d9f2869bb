"""The pp_group rows a blocking sync under `dp_overlap` leaves out (`DecisionSpace._window_front`,
issue 27 item 5): each left-out row is never faster than a row kept (scored plan by plan), the searches
stay exact (branch and bound against the brute force of tests/test_bnb.py over spaces with many
micro-batch counts and H of 1 to 3, where the window decides: seed 5017 answers another plan when
only the row of least pipeline step is kept) and the declared space's size counts every row as before."""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pytest

from planner.cost.score import time_to_target
from planner.cost.setting import PlanBatch
from planner.objectives import MAX_COMPUTE, MIN_COST, MIN_TIME
from planner.space import DecisionSpace
from tests.test_bnb import check_against_brute_force
from tests.test_physics import _dtplan_case

SEEDS = range(5000, 5020)


def _front_case(seed: int):
    """A dtplan case (dp_overlap on) without activation memory (the front applies: `_reduces_to_least_step`),
    pp_group only with blocking syncs, up to 8 micro-batches, H of 1 to 3 and pipeline links 10x faster:
    the sync then sets the pace and the window behind the last micro-batch matters."""
    setting, space, _ = _dtplan_case(seed)
    space = dataclasses.replace(space, modes=("pp_group",), max_micro_batches=8, max_stages=4,
                                max_nodes=min(space.max_nodes, 12), max_inner_steps=1 + seed % 3,
                                compression=(1.0, 16.0), streaming=(False,))
    setting = setting.replace(assumptions=setting.assumptions.replace(activation_memory=False),
                              pipeline_bps=10 * setting.pipeline_bps)
    return setting, space, (False,)


def _without_front(monkeypatch):
    """Switch the front off: every blocking row listed (the space before issue 27 item 5)."""
    monkeypatch.setattr(DecisionSpace, "_window_front",
                        staticmethod(lambda s, mode, precision, pipes, probed=None: (np.ones(pipes.size, bool),
                                                                                      np.zeros(pipes.size, np.int64))))


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("objective", ["min_time", "min_cost", "max_compute"])
def test_bnb_matches_brute_force_where_the_front_leaves_rows_out(seed, objective):
    check_against_brute_force(*_front_case(seed), objective, rel=1e-12)


def _rows(c) -> set[tuple]:
    r = c.rows
    return set(zip(r.stages.tolist(), r.activation_compression.tolist(), r.micro_batches.tolist(),
                   r.schedule.tolist(), r.compression.tolist(), r.streaming.tolist()))


def test_a_left_out_row_is_never_faster_than_a_kept_one(monkeypatch):
    """For every row the front leaves out, at every n and H and each compression, the time to target of
    its plan is at least that of some kept row of the same (S, Ca) (scored by `time_to_target`)."""
    checked = 0
    for seed in SEEDS:
        setting, space, _ = _front_case(seed)
        mine = space.for_objective(setting, MIN_TIME)
        with monkeypatch.context() as m:
            _without_front(m)
            every = dataclasses.replace(space).for_objective(setting, MIN_TIME)
            full = {p: every.classes(setting, "pp_group", p) for p in space.precisions}
        for p, c_all in full.items():
            c = mine.classes(setting, "pp_group", p)
            if c_all is None:
                continue
            kept = _rows(c)
            for s_, ca, m_, sched, cr, st in sorted(_rows(c_all) - kept):
                peers = [k for k in kept if k[0] == s_ and k[1] == ca and k[4] == cr]
                for n, h in itertools.product(range(2, space.max_nodes // s_ + 1), range(1, space.max_inner_steps + 1)):
                    def time_of(row):
                        b = PlanBatch.of("pp_group", p, nodes=n * s_, inner_steps=h, stages=s_,
                                         activation_compression=ca, micro_batches=row[2], schedule=row[3],
                                         compression=cr, streaming=False)
                        return float(time_to_target(setting, b)["time_to_target_s"][0])
                    assert time_of((s_, ca, m_, sched)) >= min(time_of(k) for k in peers)
                    checked += 1
    assert checked > 0


def test_the_front_leaves_rows_out_and_the_size_counts_them(monkeypatch):
    """Across the seeds above the front drops blocking rows (so the brute-force cases reach it), and
    for each objective the declared space's size equals that of the listing without the front."""
    dropped = 0
    for seed in SEEDS:
        setting, space, _ = _front_case(seed)
        for objective in (MIN_TIME, MIN_COST, MAX_COMPUTE):
            mine = space.for_objective(setting, objective)
            classes = sum(c.size for p in mine.precisions if (c := mine.classes(setting, "pp_group", p)) is not None)
            with monkeypatch.context() as m:
                _without_front(m)
                every = dataclasses.replace(space).for_objective(setting, objective)
                all_classes = sum(c.size for p in every.precisions
                                  if (c := every.classes(setting, "pp_group", p)) is not None)
                all_size = every.size(setting)
            assert mine.size(setting) == all_size
            assert classes <= all_classes
            dropped += all_classes - classes
    assert dropped > 0
