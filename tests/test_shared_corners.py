"""Plans of the same classes at the same n share what reads neither H nor R (issue 27 item 5): pp_group plans
their pipeline (`modes.pp_group_pipeline`: a seed at H = 1 and at its own H, `bnb._seeds_measured`; the two
corners of a box, `bnb._bound_boxes`), a hierarchical box's two corners their WAN sync among the groups
(`modes.hierarchical_plan_parts`' `wan`). Each figure must be, bit for bit, the one computed without the
sharing: `modes.pp_group` / `hierarchical_plan_parts` of the plans alone, `_seeds` then `_measure`, and every
box bound and corner of whole searches with the sharing switched off."""

from __future__ import annotations

import numpy as np
import pytest

from planner.cost import modes
from planner.solvers import bnb, class_bound
from tests.test_box_reuse import _dtplan, _shipped


def _same_bits(x, y) -> bool:
    x, y = np.ascontiguousarray(x, dtype=float), np.ascontiguousarray(y, dtype=float)
    return x.shape == y.shape and bool((x.view(np.int64) == y.view(np.int64)).all())


def _cases():
    return [_shipped(3000), _dtplan(5000), _dtplan(5002), _dtplan(5004)]


def _pp_group(setting, space, mode="pp_group"):
    for precision in space.precisions:
        c = space.classes(setting, mode, precision)
        if c is not None:
            yield c


@pytest.mark.parametrize("case", range(4))
def test_pp_group_from_a_shared_pipeline_is_pp_group(case):
    setting, space = _cases()[case]
    rng = np.random.default_rng(case)
    checked = 0
    for c in _pp_group(setting, space):
        idx = rng.integers(0, c.size, 400)
        n = rng.integers(c.n_lo[idx], c.n_hi[idx] + 1)
        h = rng.integers(1, space.max_inner_steps + 1, idx.size)
        first = c.plans(idx, n, 1, 1)
        pipe = modes.pp_group_pipeline(setting, first)
        at_h = c.plans(idx, n, h, 1)
        some = np.flatnonzero(rng.random(idx.size) < 0.4)
        for b, p in ((first, pipe), (at_h, pipe), (c.plans(idx[some], n[some], h[some], 1),
                                                    modes.pp_group_pipeline_rows(pipe, some))):
            want, got = modes.pp_group(setting, b), modes.pp_group(setting, b, p)
            assert list(got) == list(want)
            for key in want:
                assert _same_bits(got[key], want[key]), key
        again = modes.pp_group(setting, at_h, pipe)       # the shared pipeline is not written by its readers
        assert _same_bits(again["outer_time_s"], modes.pp_group(setting, at_h)["outer_time_s"])
        checked += 1
    assert checked


@pytest.mark.parametrize("case", range(4))
def test_seeds_measured_are_seeds_then_their_measure(case):
    setting, space = _cases()[case]
    measure = bnb.compute_measure(setting.target_kind)
    h_max, r_max = space.max_inner_steps, space.max_regional_rounds
    for c in _pp_group(setting, space):
        h_max, r_max = bnb.h_r_max(c, space.max_inner_steps, space.max_regional_rounds)
        idx = np.arange(0, c.size, max(1, c.size // 700))
        got = bnb._seeds_measured(setting, c, h_max, r_max, idx, measure)
        seeds = bnb.seeds(setting, c, h_max, r_max, idx)
        want = (*seeds, bnb.measure_plans(setting, c, *seeds, measure))
        for x, y in zip(got, want):
            assert _same_bits(x, y)


@pytest.mark.parametrize("mode", ["pp_group", "hierarchical"])
@pytest.mark.parametrize("case", range(4))
def test_a_search_with_the_sharing_bounds_and_scores_as_without(case, mode, monkeypatch):
    """Every box bound and corner of the mode's classes' searches (first boxes, and later rounds whose slow
    corners are a subset of the boxes: `_bound_boxes`'s `m`) with and without the sharing."""
    setting, space = _cases()[case]
    measure = bnb.compute_measure(setting.target_kind)
    seen = {}
    original, corner = bnb._bound_boxes, bnb._corner_throughput

    def recording(tag):
        def bound(*args, **kwargs):
            got = original(*args, **kwargs)
            seen.setdefault(tag, []).append(got)
            return got
        return bound

    found = {}
    for tag, share in (("shared", True), ("alone", False)):
        monkeypatch.setattr(bnb, "_bound_boxes", recording(tag))
        if not share:
            monkeypatch.setattr(bnb, "_shared_pipeline", lambda *args: None)
            monkeypatch.setattr(bnb, "_corner_throughput", lambda s, c, b, idx, pipe=None, wan=None: corner(s, c, b, idx, pipe))
        found[tag] = [bnb.minimise_time(setting, c, space.max_inner_steps, space.max_regional_rounds, measure=measure)
                      for c in _pp_group(setting, space, mode)]
    assert len(seen.get("shared", [])) == len(seen.get("alone", [])) and (seen or case)   # the shipped case has boxes
    for (lower, corners), (lower2, corners2) in zip(seen.get("shared", []), seen.get("alone", [])):
        assert _same_bits(lower, lower2)
        for a, b in zip(corners, corners2):
            for x, y in zip(a, b):
                assert _same_bits(x, y)
    for f, g in zip(found["shared"], found["alone"]):
        assert f.evaluations == g.evaluations and _same_bits(f.time_s, g.time_s)


@pytest.mark.parametrize("case", range(4))
def test_hierarchical_plan_parts_from_the_other_corners_wan_sync(case):
    setting, space = _cases()[case]
    rng = np.random.default_rng(100 + case)
    checked = 0
    for c in _pp_group(setting, space, "hierarchical"):
        idx = rng.integers(0, c.size, 400)
        n = rng.integers(c.n_lo[idx], c.n_hi[idx] + 1)
        fast = c.plans(idx, n, rng.integers(1, space.max_inner_steps + 1, idx.size), space.max_regional_rounds)
        fixed = modes.hierarchical_class_parts(setting, c.rows.take(idx))
        other = modes.hierarchical_plan_parts(setting, fast, fixed)
        some = np.flatnonzero(rng.random(idx.size) < 0.5)
        slow = c.plans(idx[some], n[some], 1, 1)
        fixed_some = {k: np.broadcast_to(v, idx.shape)[some] for k, v in fixed.items()}
        want = modes.hierarchical_plan_parts(setting, slow, fixed_some)
        got = modes.hierarchical_plan_parts(setting, slow, fixed_some,
                                            tuple(other[k][some] for k in modes.WAN_SYNC_FIELDS))
        assert list(got) == list(want)
        for key in want:
            assert _same_bits(got[key], want[key]), key
        checked += 1
    assert checked or case      # the random dtplan cases may list no hierarchical class
