"""The hierarchical figures the branch and bound computes once per class (issue 27 item 5,
`planner.cost.modes.hierarchical_class_parts`, `planner.solvers.bnb._corner_throughput`):

- the class parts read no n, H or R: computed at plans of other n, H and R they are the same, bit for bit
  (but under global expert parallelism, which the search never takes them for);
- `_corner_throughput`, which takes them per class and computes the rest, gives every field of
  `throughput` of the same plans, bit for bit and in the same order, on the shipped 10^24 instance
  beyond the envelope and on random settings (reference and dtplan terms, mixture-of-experts models).
"""

from __future__ import annotations

import numpy as np
import pytest

from planner.cost import modes
from planner.cost.modes import throughput
from planner.solvers import bnb
from tests.test_box_reuse import CASES, _case




def _hierarchical_groups(setting, space):
    return [c for c in bnb.batches(setting, space) if c.rows.mode == "hierarchical"]


def _random_plans(c, space, rng, size=300):
    idx = rng.integers(0, c.size, size)
    n = rng.integers(c.n_lo[idx], c.n_hi[idx] + 1)
    h = rng.integers(1, space.max_inner_steps + 1, size)
    r = rng.integers(1, space.max_regional_rounds + 1, size)
    return idx, c.plans(idx, n, h, r)


@pytest.mark.parametrize("case", CASES, ids=[f"{n}-{a}" for n, a in CASES])
def test_corner_throughput_is_throughput(case):
    setting, space = _case(*case)
    rng = np.random.default_rng(11)
    groups = _hierarchical_groups(setting, space)
    for c in groups:
        idx, b = _random_plans(c, space, rng)
        got, want = bnb._corner_throughput(setting, c, b, idx), throughput(setting, b)
        assert list(got) == list(want) == list(modes.hierarchical(setting, b))
        for key in want:
            np.testing.assert_array_equal(np.broadcast_to(got[key], b.nodes.shape),
                                          np.broadcast_to(want[key], b.nodes.shape), err_msg=key)


@pytest.mark.parametrize("case", CASES[:8], ids=[f"{n}-{a}" for n, a in CASES[:8]])
def test_class_parts_read_no_n_h_or_r(case):
    setting, space = _case(*case)
    rng = np.random.default_rng(12)
    for c in _hierarchical_groups(setting, space):
        if c.rows.expert_parallel == "global":
            continue
        idx, b = _random_plans(c, space, rng)
        at_rows = modes.hierarchical_class_parts(setting, c.rows)
        at_plans = modes.hierarchical_class_parts(setting, b)
        plan_parts = modes.hierarchical_plan_parts(setting, b, at_plans)
        assert not set(at_plans) & set(plan_parts)
        assert set(at_plans) | set(plan_parts) == set(modes.HIERARCHICAL_FIELDS)
        for key in at_plans:
            np.testing.assert_array_equal(np.broadcast_to(at_plans[key], b.nodes.shape), at_rows[key][idx],
                                          err_msg=key)


def test_the_shipped_case_takes_the_class_parts(monkeypatch):
    """On the shipped instance the search's hierarchical corners go through the class parts (a path never
    taken would pass the tests above), and the answer is the one scored without them."""
    from tests.test_box_reuse import _search, _shipped
    setting, space = _shipped(3000)
    taken = [0]
    real = modes.hierarchical_plan_parts

    def counting(s, b, fixed):
        taken[0] += isinstance(fixed, bnb._At)
        return real(s, b, fixed)

    with monkeypatch.context() as m:
        m.setattr(modes, "hierarchical_plan_parts", counting)
        found, evaluations, bound, visited = _search(setting, space, m, inherit=True)
    assert taken[0] > 0
    with monkeypatch.context() as m:
        m.setattr(bnb, "_corner_throughput", lambda s, c, b, idx: throughput(s, b))
        want = _search(setting, space, m, inherit=True)
    assert (found[1], evaluations, bound) == (want[0][1], want[1], want[2])
    assert len(visited) == len(want[3])
    for got, expected in zip(visited, want[3]):
        for x, y in zip(got[2:], expected[2:]):
            np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("case", CASES, ids=[f"{n}-{a}" for n, a in CASES])
def test_pipeline_probe_is_throughput(case):
    """The pipe rows' probe (`modes.pipeline_probe`, what `space.scored` computes for them) gives
    `throughput`'s fields, bit for bit, for pp_group and pipelines over the WAN."""
    from planner.cost.setting import PlanBatch
    from planner.space import scored
    setting, space = _case(*case)
    rng = np.random.default_rng(13)
    schedules = (0, 2, 3, 4, 5) if setting.assumptions.search_pipeline_schedules else (0,)
    for mode in ("pp_group", "pipeline_wan"):
        for precision in space.precisions:
            size = 500
            stages = rng.integers(2, 9, size)
            b = PlanBatch.of(mode, precision, nodes=2 * stages, stages=stages,
                             micro_batches=rng.integers(1, 17, size), schedule=rng.choice(schedules, size),
                             activation_compression=rng.choice([1.0, 2.0, 4.0, 10.0], size))
            want = throughput(setting, b)
            got = scored(setting, b, *modes.PIPELINE_PROBE)
            for key in modes.PIPELINE_PROBE:
                np.testing.assert_array_equal(got[key], np.broadcast_to(want[key], b.nodes.shape), err_msg=key)


def _split_by_index(box, tied, c, compute):
    """`bnb._split` as it was written before (children gathered by index, issue 27 item 5): the oracle."""
    sides = ("n", "h", "r")
    ratios = np.stack([np.log(box[f"{d}2"] / box[f"{d}1"]) for d in sides])
    if compute:
        ratios[0] *= 2.0
    along = np.argmax(ratios, axis=0)
    if tied is not None:
        along = np.where(tied, np.argmax(ratios > 0, axis=0), along)
    lo = np.choose(along, [box[f"{d}1"] for d in sides])
    hi = np.choose(along, [box[f"{d}2"] for d in sides])
    width = hi - lo + 1
    parts = np.minimum(bnb.SPLIT, width)
    rep = np.repeat(np.arange(box["i"].size), parts)
    k = np.arange(rep.size) - np.repeat(np.cumsum(parts) - parts, parts)
    if compute:
        edges = bnb._geometric_edges(lo, hi, parts)
        start, end = edges[rep, k], edges[rep, k + 1] - 1
    else:
        start = lo[rep] + (width[rep] * k) // parts[rep]
        end = lo[rep] + (width[rep] * (k + 1)) // parts[rep] - 1
    out = {key: v[rep] for key, v in box.items()}
    for j, d in enumerate(sides):
        on = along[rep] == j
        out[f"{d}1"] = np.where(on, start, out[f"{d}1"])
        out[f"{d}2"] = np.where(on, end, out[f"{d}2"])
    return out


@pytest.mark.parametrize("compute", [False, True])
def test_split_is_split_by_index(compute):
    """The children `_split` makes (repeated fields, edges read row by row) are those gathered by index."""
    rng = np.random.default_rng(14)
    for _ in range(20):
        size = int(rng.integers(1, 400))
        box = {"i": rng.integers(0, 50, size)}
        for d, top in (("n", 10_000), ("h", 10_000), ("r", 1000)):
            a, b = np.sort(rng.integers(1, top + 1, (2, size)), axis=0)
            b = np.where(rng.random(size) < 0.2, a, b)
            box[f"{d}1"], box[f"{d}2"] = a, b
        box["g_up"], box["tokens_per_n"] = rng.random(size), rng.random(size)
        tied = rng.random(size) < 0.3
        got, want = bnb._split(dict(box), tied, None, compute), _split_by_index(box, tied, None, compute)
        assert list(got) == list(want)
        for key in want:
            np.testing.assert_array_equal(got[key], want[key], err_msg=key)


def _bounds_as_before(s, c, at):
    """`class_bound._bounds_of` as it was written before (every efficiency per class): the oracle."""
    from planner.cost import run
    from planner.cost.setting import PlanBatch
    from planner.cost.straggler import throughput_fraction
    from planner.solvers import class_bound
    rows = c.rows
    nodes_lo = c.nodes(at, c.n_lo[at])
    corner = PlanBatch.of("pp_group", rows.precision, nodes=nodes_lo, compression=rows.compression[at],
                          streaming=rows.streaming[at], stages=rows.stages[at], micro_batches=rows.micro_batches[at],
                          activation_compression=rows.activation_compression[at], schedule=rows.schedule[at])
    stages = np.asarray(corner.stages, dtype=float)
    groups_lo = np.floor(np.asarray(nodes_lo, dtype=float) / stages)
    groups_hi = np.floor(np.asarray(c.nodes(at, c.n_hi[at]), dtype=float) / stages)
    ones = np.ones(groups_lo.shape)
    t = {"synchronised": ones, "replicas": groups_lo, "h_eff": ones, "eta_activation": c.eta_activation[at]}
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        g_up = run.quality_terms(s, corner, t, run.efficiency_without_replicas(s, corner, t))[0]
        tokens_up = s.training_window_s * s.local_batch_tokens * throughput_fraction(s.assumptions) \
            * groups_hi / c.step_s[at]
        upper = g_up * 6.0 * s.active_params * tokens_up * (1.0 + class_bound.MARGIN)
        lower = np.nan_to_num(1.0 / upper, nan=0.0)
    return np.where(groups_lo >= 2, lower, 0.0)


def test_class_bounds_are_those_computed_per_class():
    """The pp_group classes' own bounds (eta_C per compression and streaming, H_eff = 1 once) are, bit for
    bit, those computed class by class, on the shipped instance (its ~130,000 classes per precision
    at 3,000 nodes) and on dtplan cases of every compressor."""
    from planner.solvers import class_bound
    from tests.test_class_bound import DTPLAN_SEEDS, _dtplan, _groups
    from tests.test_box_reuse import _shipped
    cases = [_shipped(3000)] + [_dtplan(seed) for seed in DTPLAN_SEEDS]
    checked = 0
    for setting, space in cases:
        for c in _groups(setting, space):
            got = class_bound._bounds_of(setting, c, slice(0, c.size))
            np.testing.assert_array_equal(got, _bounds_as_before(setting, c, slice(0, c.size)))
            checked += 1
    assert checked >= 8


def test_geometric_edges_are_those_of_every_column():
    """`_geometric_edges` computes the power only for the inner columns (the first and those at or past the
    parts are set apart): the edges of the formula applied to every column, bit for bit."""
    rng = np.random.default_rng(15)
    lo = rng.integers(1, 10_000_000, 5000)
    hi = lo + rng.integers(0, 10_000_000, lo.size)
    parts = np.minimum(bnb.SPLIT, hi - lo + 1)
    k = np.arange(bnb.SPLIT + 1)[None, :]
    lo_, hi_, parts_ = lo[:, None].astype(float), hi[:, None].astype(float), parts[:, None]
    a = np.floor(lo_ * ((hi_ + 1) / lo_) ** np.minimum(k / parts_, 1.0))
    a = np.where(k >= parts_, hi_ + 1, np.where(k == 0, lo_, a)).astype(np.int64)
    strictly = k + np.maximum.accumulate(a - k, axis=1)
    want = np.minimum(strictly, hi[:, None] + 1 - parts_ + k)
    np.testing.assert_array_equal(bnb._geometric_edges(lo, hi, parts), want)
