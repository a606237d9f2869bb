"""The hierarchical figures the branch and bound computes once per class (issue 27 item 5,
`planner.cost.modes.hierarchical_class_parts`, `planner.solvers.bnb._corner_throughput`):

- the class parts read no n, H or R: computed at plans of other n, H and R they are the same, bit for bit
  (but under global expert parallelism, which the search never takes them for);
- `_corner_throughput`, which takes them per class and computes the rest, gives every field of
  `throughput` of the same plans, bit for bit and in the same order, on the shipped 10^24 instance
  beyond the envelope and on random settings (reference and dtplan terms, mixture-of-experts models).
"""

from __future__ import annotations

import math

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

    def counting(s, b, fixed, wan=None):
        taken[0] += isinstance(fixed, bnb._At)
        return real(s, b, fixed, wan)

    with monkeypatch.context() as m:
        m.setattr(modes, "hierarchical_plan_parts", counting)
        found, evaluations, bound, visited = _search(setting, space, m, inherit=True)
    assert taken[0] > 0
    with monkeypatch.context() as m:
        m.setattr(bnb, "_corner_throughput", lambda s, c, b, idx, pipe=None, wan=None: throughput(s, b))
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


@pytest.mark.parametrize("case", CASES, ids=[f"{n}-{a}" for n, a in CASES])
def test_scored_hierarchical_memory_is_throughput(case):
    """A hierarchical plan's class fields as `space.scored` gives them (from `modes.hierarchical_class_parts`
    alone where no tensor-parallel degree is to be chosen: `DecisionSpace._finish`'s memory check) are
    `throughput`'s, bit for bit, at random n, H and R (global expert parallelism included: its memory reads n);
    the fields split as `hierarchical_plan_parts` gives them."""
    from planner.space import scored
    setting, space = _case(*case)
    rng = np.random.default_rng(16)
    for c in _hierarchical_groups(setting, space):
        idx, b = _random_plans(c, space, rng)
        fixed = modes.hierarchical_class_parts(setting, b)
        assert set(modes.hierarchical_plan_parts(setting, b, fixed)) == set(modes.HIERARCHICAL_PLAN_FIELDS)
        assert set(fixed) == set(modes.HIERARCHICAL_CLASS_FIELDS)
        want = throughput(setting, b)
        for keys in (("state_bytes_per_node",), modes.HIERARCHICAL_CLASS_FIELDS):
            got = scored(setting, b, *keys)
            for key in keys:
                np.testing.assert_array_equal(got[key], np.broadcast_to(want[key], b.nodes.shape), err_msg=key)


def test_scored_hierarchical_memory_with_the_degree_searched_is_throughput():
    """Where a tensor-parallel degree is chosen per plan (`search_tensor_parallel`), `scored` keeps `throughput`
    (the class parts alone are those of one degree): the node's memory at the degree `throughput` chose."""
    from planner.cost import tensor_parallel
    from planner.space import scored
    setting, space = _case("shipped", 3000)
    setting = setting.replace(assumptions=setting.assumptions.replace(search_tensor_parallel=True))
    assert len(tensor_parallel.choices(setting.assumptions, setting.accelerators_per_node, setting.is_moe)) > 1
    rng = np.random.default_rng(17)
    differs = 0
    for c in _hierarchical_groups(setting, space):
        idx, b = _random_plans(c, space, rng)
        want = throughput(setting, b)["state_bytes_per_node"]
        np.testing.assert_array_equal(scored(setting, b, "state_bytes_per_node")["state_bytes_per_node"],
                                      np.broadcast_to(want, b.nodes.shape))
        differs += int((modes.hierarchical_class_parts(setting, b)["state_bytes_per_node"] != want).any())
    assert differs      # the degree chosen moves the memory: a test that can fail


def test_scored_hierarchical_memory_takes_the_class_parts(monkeypatch):
    """The class-parts path of `scored` is taken for the shipped instance's hierarchical memory (a path never
    taken would pass the test above), and not for a field that reads n."""
    from planner import space as space_module
    setting, space = _case("shipped", 3000)
    c = _hierarchical_groups(setting, space)[0]
    b = c.plans(np.arange(min(c.size, 50)), c.n_hi[:50], 1, 1)
    calls = []
    monkeypatch.setattr(modes, "hierarchical_class_parts",
                        lambda s, b, real=modes.hierarchical_class_parts: calls.append(1) or real(s, b))
    monkeypatch.setattr(space_module, "throughput", lambda s, b: calls.append(2) or throughput(s, b))
    space_module.scored(setting, b, "state_bytes_per_node")
    assert calls == [1]
    space_module.scored(setting, b, "outer_time_s")
    assert calls[1] == 2


def _split_box_by_box(box, tied, compute):
    """The children of `bnb._split`, box by box in python (the oracle): the side of largest log ratio (n's and
    H's counted twice under `compute`, R's once; a tied box the first side longer than one), cut into
    min(SPLIT, width) parts, geometric (`_geometric_edges`) or equal."""
    out = {key: [] for key in box}
    for j in range(box["i"].size):
        logs = [math.log(box[f"{d}2"][j] / box[f"{d}1"][j]) for d in "nhr"]
        if compute:
            logs[0] *= 2.0
            logs[1] *= 2.0
        side = next((x for x in range(3) if logs[x] > 0), 0) if tied[j] else logs.index(max(logs))
        lo, hi = int(box["nhr"[side] + "1"][j]), int(box["nhr"[side] + "2"][j])
        parts = min(bnb.SPLIT, hi - lo + 1)
        if compute:
            edges = bnb._geometric_edges(np.array([lo]), np.array([hi]), np.array([parts]))[0]
            cuts = [(int(edges[x]), int(edges[x + 1]) - 1) for x in range(parts)]
        else:
            width = hi - lo + 1
            cuts = [(lo + width * x // parts, lo + width * (x + 1) // parts - 1) for x in range(parts)]
        for start, end in cuts:
            for key in box:
                out[key].append(box[key][j])
            out["nhr"[side] + "1"][-1], out["nhr"[side] + "2"][-1] = start, end
    return {key: np.array(v) for key, v in out.items()}


@pytest.mark.parametrize("compute", [False, True])
def test_split_is_split_box_by_box(compute):
    """The children `_split` makes (repeated fields, edges read row by row) are those made box by box."""
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
        got, want = bnb._split(dict(box), tied, None, compute), _split_box_by_box(box, tied, compute)
        assert list(got) == list(want)
        for key in want:
            np.testing.assert_array_equal(got[key], want[key], err_msg=key)


def test_class_bounds_take_the_per_class_efficiencies():
    """The pp_group classes' own bounds take eta_C per (compression, streaming) pair (`class_bound._eta_c`) and
    H_eff = 1 as one value: the same doubles as eta_C and the quality terms computed class by class, on the
    shipped instance (its ~130,000 classes per precision at 3,000 nodes) and on dtplan cases of every compressor."""
    from planner.cost import run
    from planner.solvers import class_bound
    from tests.test_class_bound import DTPLAN_SEEDS, _dtplan, _groups
    from tests.test_box_reuse import _shipped
    checked = 0
    for setting, space in [_shipped(3000)] + [_dtplan(seed) for seed in DTPLAN_SEEDS]:
        for c in _groups(setting, space):
            every = np.arange(c.size)
            corner = c.plans(every, c.n_lo, 1, 1)
            eta_c = run.compression_efficiency(setting, corner)
            np.testing.assert_array_equal(class_bound._eta_c(setting, corner), eta_c)
            groups = np.floor(corner.nodes / corner.stages)
            each = {"synchronised": np.ones(c.size), "replicas": groups, "h_eff": np.ones(c.size),
                    "eta_activation": c.eta_activation}
            once = {**each, "h_eff": np.ones(1)}
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                want = run.quality_terms(setting, corner, each, run.efficiency_without_replicas(setting, corner, each))
                got = run.quality_terms(setting, corner, once, run.efficiency_without_replicas(setting, corner, once,
                                                                                                 eta_c))
            np.testing.assert_array_equal(got[0], want[0])
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
