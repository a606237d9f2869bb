"""The seeds of the branch and bound's ordering (issue 27 item 5, h-maxc12): a hierarchical class's seed is
scored from its class's own parts (`bnb._corner_throughput`), not by `throughput` afresh, and the seeds of a
pipeline over the WAN scored by the ordering are handed to its search instead of being scored again. Each
must be, bit for bit, what the previous code computed: seeds and measures against the same functions with
`_corner_throughput` replaced by `throughput` itself (the path before the change), and the seeds handed on
against the seeds the search computes for itself over its own H and R ranges (`_h_r_max`)."""

from __future__ import annotations

import numpy as np
import pytest

from planner.cost import modes
from planner.solvers import bnb
from tests.test_box_reuse import _dtplan, _random, _shipped
from tests.test_shared_corners import _same_bits

MODES = ("hierarchical", "flat", "pp_group", "pipeline_wan")


def _cases():
    return [_shipped(3000), _shipped(10_000), _dtplan(5000), _dtplan(5003), _random(2001), _random(2003)]


def _throughput_afresh(s, c, b, idx, pipe=None, wan=None):
    """`_corner_throughput` as the seeds read it before the change: `throughput`, or a pp_group's plans from
    their shared pipeline."""
    return modes.throughput(s, b) if pipe is None else modes.pp_group(s, b, pipe)


def _groups(setting, space):
    for mode in MODES:
        if mode not in space.modes:
            continue
        for precision in space.precisions:
            for ep in space.expert_scopes(setting, mode):
                c = space.classes(setting, mode, precision, ep)
                if c is not None:
                    yield c


@pytest.mark.parametrize("case", range(6))
def test_seeds_are_those_scored_by_throughput(case, monkeypatch):
    setting, space = _cases()[case]
    measure = bnb.compute_measure(setting.target_kind)
    checked = set()
    for c in _groups(setting, space):
        h_max, r_max = bnb.h_r_max(c, space.max_inner_steps, space.max_regional_rounds)
        idx = np.arange(0, c.size, max(1, c.size // 500))
        got = (bnb._seeds_within(setting, c, h_max, r_max, measure, None),
               bnb._seeds_measured(setting, c, h_max, r_max, idx, measure))
        with monkeypatch.context() as m:
            m.setattr(bnb, "_corner_throughput", _throughput_afresh)
            seeds = bnb.seeds(setting, c, h_max, r_max)
            want = ((*seeds, bnb.measure_plans(setting, c, *seeds, measure)),
                    bnb._seeds_measured(setting, c, h_max, r_max, idx, measure))
        for x, y in zip(got, want):
            assert len(x) == len(y) == 5
            for a, b in zip(x, y):
                assert _same_bits(a, b), c.rows.mode
        checked.add(c.rows.mode)
    assert checked and (case > 1 or "hierarchical" in checked)


@pytest.mark.parametrize("case", range(6))
def test_the_ordering_hands_on_the_seeds_the_search_would_score(case):
    setting, space = _cases()[case]
    measure = bnb.compute_measure(setting.target_kind)
    batches = bnb.batches_most_promising_first(setting, space, measure)
    handed = set()
    for c in batches:
        if c.rows.mode not in ("hierarchical", "flat", "pipeline_wan"):      # no bounds of their own: every seed
            continue
        seeded = batches.seeded.get(id(c))
        assert seeded is not None, c.rows.mode
        h_max, r_max = bnb.h_r_max(c, space.max_inner_steps, space.max_regional_rounds)
        want = bnb._seeds_within(setting, c, h_max, r_max, measure, None)     # what `minimise_time` scores
        assert len(seeded) == len(want) == 5
        for a, b in zip(seeded, want):
            assert _same_bits(a, b), c.rows.mode
        handed.add(c.rows.mode)
    assert handed
    if "pipeline_wan" in space.modes and any(c.rows.mode == "pipeline_wan" for c in batches):
        assert "pipeline_wan" in handed
