"""The pipe rows that fit their node (`DecisionSpace._fitting`, issue 27 item 5): where every row fits, the rows
and their probed fields are handed back as they are instead of taken. Checked against the take it replaces
(the code before): the same values, the rows that do not fit left out where some do not, and every class the
listing builds from them bit for bit the same on the shipped instance and dtplan cases with activation memory."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest

from planner.cost.setting import PlanBatch
from planner.objectives import MAX_COMPUTE
from planner.schema.instance import Instance
from planner.setting import setting_from_instance
from planner.space import DecisionSpace, scored, pipe_probe, PROBED
from tests.test_box_reuse import SHIPPED, _dtplan, _shipped
from tests.test_space_memory import _bits, _same


def _taken(s, mode, precision, pipes, probed):
    """`_fitting` as before: always the take of the rows that fit."""
    probed = probed or scored(s, pipe_probe(mode, precision, pipes), *PROBED)
    fits = probed["state_bytes_per_node"] <= s.memory_bytes
    return pipes.take(fits), {k: v[fits] for k, v in probed.items()}


def _rows():
    rows = PlanBatch.of("pp_group", "fp16", nodes=1, stages=[2, 2, 3, 4], activation_compression=1.0,
                        schedule=[2, 3, 2, 2], micro_batches=[1, 2, 3, 4])
    probed = {"t_step_s": np.array([1.0, 2.0, np.nan, 4.0]), "step_compute_s": np.array([1.0, 1.0, 2.0, 3.0]),
              "state_bytes_per_node": np.array([5.0, 7.0, 6.0, 9.0]), "eta_activation": np.array([1.0, -0.0, 1, 1])}
    return rows, probed


def _fields_equal(a: PlanBatch, b: PlanBatch) -> None:
    assert a.size == b.size and (a.mode, a.precision, a.expert_parallel) == (b.mode, b.precision, b.expert_parallel)
    for name, x in vars(a).items():
        if isinstance(x, np.ndarray):
            y = getattr(b, name)
            assert x.dtype == y.dtype and np.array_equal(_bits(np.broadcast_to(x, (a.size,))),
                                                         _bits(np.broadcast_to(y, (b.size,)))), name


@pytest.mark.parametrize("memory", [4.0, 5.0, 6.5, 8.0, 9.0, 100.0])
def test_fitting_equals_the_take_of_the_rows_that_fit(memory):
    s = SimpleNamespace(memory_bytes=memory)
    rows, probed = _rows()
    got_rows, got = DecisionSpace._fitting(s, "pp_group", "fp16", rows, probed)
    want_rows, want = _taken(s, "pp_group", "fp16", rows, probed)
    _fields_equal(got_rows, want_rows)
    assert got.keys() == want.keys()
    for k in want:
        assert got[k].dtype == want[k].dtype and np.array_equal(_bits(got[k]), _bits(want[k])), k
    assert (got_rows is rows) == (memory >= 9.0)       # handed back as they are only where every row fits


@pytest.mark.parametrize("case", [("shipped", 3000)] + [("dtplan", seed) for seed in range(5000, 5008)])
def test_listing_is_the_same_as_with_the_take(case, monkeypatch):
    name, arg = case
    build = {"shipped": _shipped, "dtplan": _dtplan}[name]
    setting, space = build(arg)
    got = {(m, p): space.classes_of(setting, m, p) for m in ("pp_group", "pipeline_wan") for p in space.precisions}
    monkeypatch.setattr(DecisionSpace, "_fitting", staticmethod(_taken))
    setting, space = build(arg)
    for (m, p), c in got.items():
        d = space.classes_of(setting, m, p)
        assert (c is None) == (d is None), (m, p)
        if c is not None:
            _same(c, d)


def _larger_model(params: float):
    """The shipped instance's setting (`_shipped`, 3,000 nodes) with a model of `params`: at 3e11 and 6e11 some of
    the WAN pipeline's rows do not fit their node (200 and 208 of the fp16 rows, 12 of fp8's at 6e11)."""
    data = json.loads(SHIPPED.read_text())
    data["fleet"]["nodes"], data["model"]["params"] = 3000, params
    data["assumptions"] = {"profile": "dtplan", "constants": {"evidence_envelope": False}}
    instance = Instance.model_validate(data)
    setting = setting_from_instance(instance)
    return setting, DecisionSpace.from_instance(instance, setting).for_objective(setting, MAX_COMPUTE)


@pytest.mark.parametrize("case", [("shipped", 3000), ("larger", 3e11), ("larger", 6e11), ("dtplan", 5002),
                                  ("dtplan", 5003)])
def test_wan_classes_marked_checked_are_those_finish_checks(case, monkeypatch):
    """A pipeline over the WAN's classes from the rows `_fitting` kept are marked memory-checked (h-maxc12), so
    `_finish` does not score their memory again: the same classes as when `_finish` checks them (the code
    before), on cases where some rows do not fit (the larger models; dtplan 5002 without the least-step cut)."""
    name, arg = case
    build = {"shipped": _shipped, "dtplan": _dtplan, "larger": _larger_model}[name]
    setting, space = build(arg)
    got = {p: space.classes_of(setting, "pipeline_wan", p) for p in space.precisions}
    listed = DecisionSpace._pipeline_wan

    def unchecked(self, *args):
        c = listed(self, *args)
        if c is not None:
            c.memory_checked = False
        return c

    monkeypatch.setattr(DecisionSpace, "_pipeline_wan", unchecked)
    setting, space = build(arg)
    for p, c in got.items():
        d = space.classes_of(setting, "pipeline_wan", p)
        assert (c is None) == (d is None), p
        if c is not None:
            _same(c, d)
