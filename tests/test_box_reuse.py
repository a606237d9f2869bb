"""What the `max_compute` search scores once and reuses (issue 27 item 5, planner.solvers.bnb._compute_box):

- a box's two corners share the fields taken from their classes' rows (`Classes.corner_plans`): each
  batch equals the one `Classes.plans` builds for that corner;
- the corners' compute is computed from the very throughput (and, at the slow corner, efficiencies) the
  box was bounded with: equal, plan by plan and to the last bit, to the plans scored afresh;
- a box's plans are first bounded from the box it was cut from (that box's g_up and tokens per replica):
  the boxes that bound prunes are not scored, and the search visits exactly the plans, with the same
  values, in the same order, that it visits without it, and gives the same answer and count.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from planner.cost.modes import throughput
from planner.cost.score import window_compute
from planner.objectives import MAX_COMPUTE
from planner.schema.instance import Instance
from planner.setting import setting_from_instance
from planner.solvers import bnb, objective_search
from planner.space import DecisionSpace
from tests.test_bnb import random_case
from tests.test_physics import _dtplan_case

SHIPPED = Path(__file__).resolve().parents[1] / "instances" / "solve-1e24-64xh100.json"
INHERITED = bnb.INHERITED      # the fields a box hands on to the boxes cut from it


def _shipped(nodes: int):
    """The shipped 10^24 instance on `nodes` nodes under the dtplan profile beyond the evidence envelope
    (the case of scripts/bench_max_compute.py): thousands of hierarchical boxes per round."""
    data = json.loads(SHIPPED.read_text())
    data["fleet"]["nodes"] = nodes
    data["assumptions"] = {"profile": "dtplan", "constants": {"evidence_envelope": False}}
    instance = Instance.model_validate(data)
    setting = setting_from_instance(instance)
    return setting, DecisionSpace.from_instance(instance, setting).for_objective(setting, MAX_COMPUTE)


def _random(seed: int):
    kind = "c_quality" if seed % 3 == 0 else "c_local"
    setting, space, _ = random_case(seed, target_kind=kind)
    if seed % 2:      # room for many replicas: boxes are cut along n as well
        space = dataclasses.replace(space, max_nodes=max(space.max_nodes, 300))
    return setting, space.for_objective(setting, MAX_COMPUTE)


def _dtplan(seed: int):
    setting, space, _ = _dtplan_case(seed)
    space = dataclasses.replace(space, max_nodes=max(space.max_nodes, 300), max_micro_batches=4, max_stages=5)
    return setting, space.for_objective(setting, MAX_COMPUTE)


CASES = [("shipped", 3000)] + [("random", seed) for seed in range(2000, 2010)] + \
    [("dtplan", seed) for seed in range(5000, 5006)]


def _case(name, arg):
    return {"shipped": _shipped, "random": _random, "dtplan": _dtplan}[name](arg)


def _search(setting, space, monkeypatch, inherit: bool):
    """(answer, plans scored, every corner visited in order) of `max_compute`."""
    visited = []
    box_bound, compute_box = bnb._box_bound, bnb._compute_box

    def recording(s, c, box, measure, mono, cut=None):
        lower, corners = box_bound(s, c, box, measure, mono, cut)
        visited.extend((c.rows.mode, c.rows.precision, *corner) for corner in corners)
        return lower, corners

    def afresh(s, c, box, *args, **kwargs):
        return compute_box(s, c, {k: v for k, v in box.items() if k not in INHERITED}, *args, **kwargs)

    with monkeypatch.context() as m:
        m.setattr(bnb, "_box_bound", recording)
        if not inherit:
            m.setattr(bnb, "_compute_box", afresh)
        found, evaluations, bound = objective_search.max_compute(setting, dataclasses.replace(space))
    return found, evaluations, bound, visited


@pytest.mark.parametrize("case", CASES, ids=[f"{n}-{a}" for n, a in CASES])
def test_the_search_visits_what_it_visits_without_the_inherited_bound(case, monkeypatch):
    setting, space = _case(*case)
    found, evaluations, bound, visited = _search(setting, space, monkeypatch, inherit=True)
    want_found, want_evaluations, want_bound, want_visited = _search(setting, space, monkeypatch, inherit=False)
    assert (evaluations, bound) == (want_evaluations, want_bound)
    assert len(visited) == len(want_visited)
    for got, want in zip(visited, want_visited):
        assert got[:2] == want[:2]
        for x, y in zip(got[2:], want[2:]):
            np.testing.assert_array_equal(x, y)
    if want_found is None:
        assert found is None
        return
    assert found[1] == want_found[1]
    assert bnb.tie_key(setting, found[0], 0) == bnb.tie_key(setting, want_found[0], 0)


def test_the_inherited_bound_spares_scoring(monkeypatch):
    """On the shipped instance the inherited bound leaves boxes unscored (a bound that cut nothing would
    pass the test above): fewer plans go through the cost model's throughput."""
    setting, space = _shipped(3000)
    counts = []
    for inherit in (True, False):
        scored = [0]
        real = bnb.throughput

        def counting(s, b):
            scored[0] += b.size
            return real(s, b)

        with monkeypatch.context() as m:
            m.setattr(bnb, "throughput", counting)
            _search(setting, space, m, inherit)
        counts.append(scored[0])
    assert counts[0] < 0.95 * counts[1]


@pytest.mark.parametrize("case", CASES[:6], ids=[f"{n}-{a}" for n, a in CASES[:6]])
def test_corner_plans_and_the_figures_they_reuse(case):
    """Each corner batch is the batch `plans` builds; the compute of a subset of boxes from the figures of
    the whole batch is the compute scored afresh, bit for bit."""
    setting, space = _case(*case)
    rng = np.random.default_rng(7)
    for c in bnb.batches(setting, space):
        h_max, r_max = bnb.h_r_max(c, space.max_inner_steps, space.max_regional_rounds)
        idx = rng.integers(0, c.size, 400)
        n = rng.integers(c.n_lo[idx], c.n_hi[idx] + 1)
        h1, h2 = np.sort(rng.integers(1, h_max + 1, (2, idx.size)), axis=0)
        r1, r2 = np.sort(rng.integers(1, r_max + 1, (2, idx.size)), axis=0)
        corners = c.corner_plans(idx, n, (h2, r2), (h1, r1))
        for got, (h, r) in zip(corners, ((h2, r2), (h1, r1))):
            want = c.plans(idx, n, h, r)
            for field in dataclasses.fields(want):
                np.testing.assert_array_equal(getattr(got, field.name), getattr(want, field.name))
        k = np.flatnonzero(rng.random(idx.size) < 0.3)
        for b in corners:
            t = throughput(setting, b)
            got = window_compute(setting, b.take(k), setting.target_kind, t=bnb._At(t, k))
            want = window_compute(setting, b.take(k), setting.target_kind)
            for key in ("g", "mu", "tokens_per_s", setting.target_kind):
                np.testing.assert_array_equal(got[key], want[key])


def test_corner_plans_of_member_classes():
    """Pipeline classes whose micro-batch counts are members (r is the member index j): M per corner."""
    for seed in range(2000, 2040):
        setting, space = _random(seed)
        for c in bnb.batches(setting, space):
            if c.members is None or c.member_count < 2:
                continue
            idx = np.arange(c.size)
            hi, lo = c.corner_plans(idx, c.n_lo, (1, c.member_count), (1, 1))
            np.testing.assert_array_equal(hi.micro_batches, c.members[:, -1])
            np.testing.assert_array_equal(lo.micro_batches, c.members[:, 0])
            np.testing.assert_array_equal(hi.micro_batches, c.plans(idx, c.n_lo, 1, c.member_count).micro_batches)
            return
    pytest.fail("no pipeline class with members in the random cases")
