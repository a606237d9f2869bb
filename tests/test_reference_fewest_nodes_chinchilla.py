"""The reference's find_nodes_for_target under the Chinchilla replica penalty answered without the
branch and bound (planner/reference/fewest_nodes_chinchilla.py) agrees with brute force (every N,
every H, streaming on and off) and with the branch and bound (`fewest_nodes_in_window`) on random
instances; its Lemma T (C_local does not fall as the tokens grow) holds where it is checked."""

import numpy as np
import pytest

from planner.cost import chinchilla, quality
from planner.cost.modes import throughput
from planner.cost.score import window_compute
from planner.cost.setting import PlanBatch, Setting
from planner.reference import fewest_nodes_chinchilla as fc
from planner.reference.fewest_nodes import flat_batch
from planner.solvers.objective_search import fewest_nodes_in_window
from planner.space import DecisionSpace
from tests.test_reference_search_fast import _instance, _space, assert_same_plan

def _applying(seed: int, max_nodes=None, max_inner_steps=None) -> tuple[Setting, DecisionSpace]:
    """The first random instance from `seed` on which the proof applies (most do: 29 of 40 at full ranges)."""
    rng = np.random.default_rng(seed)
    for _ in range(50):
        s = _instance(rng, "chinchilla")      # report-v1's node and WAN under the Chinchilla penalty
        space = _space(max_nodes or int(rng.integers(50, 300)), max_inner_steps or int(rng.integers(20, 200)),
                       float(rng.choice((1, 16, 100, 150))))
        if fc.applies(s, space):
            return s, space
    raise AssertionError("no random instance the proof applies to")


def _h_top(s: Setting, space: DecisionSpace) -> int:
    """H_c(N_max): the inner steps searched are 1..H_c(N_max)."""
    return int(fc._h_c(space, throughput(s, flat_batch(space, np.array([space.max_nodes]), np.array([1]))))[0])


def _all_plans(space: DecisionSpace) -> PlanBatch:
    """Every plan: N in 1..N_max, H in 1..H_max, streaming on and off."""
    n, h, on = np.meshgrid(np.arange(1, space.max_nodes + 1), np.arange(1, space.max_inner_steps + 1),
                           np.array([True, False]), indexing="ij")
    return PlanBatch.of("flat", "fp16", nodes=n.ravel(), inner_steps=h.ravel(), compression=space.compression[0],
                        streaming=on.ravel())


@pytest.mark.parametrize("seed", range(10))
def test_fewest_nodes_equals_brute_force(seed):
    s, space = _applying(seed)
    b = _all_plans(space)
    c = window_compute(s, b, "c_local")["c_local"].reshape(space.max_nodes, -1)
    best = c.max(axis=1)
    rng = np.random.default_rng(1000 + seed)
    kind = seed % 5
    if kind == 0:
        target = best.max() * 1.001             # none reaches it
    elif kind == 1:
        target = best[0] * 0.999                # one node does
    else:
        target = best[int(rng.integers(1, best.size))] * float(rng.uniform(0.97, 1.0))
    s = s.replace(target_flop=float(target))
    found, _ = fc.answer(s, space)
    reached = np.flatnonzero(1.0 / best <= 1.0 / target)
    if reached.size == 0:
        assert found is None
        return
    want = int(reached[0]) + 1
    batch, cost = found
    assert int(batch.nodes[0]) == want
    assert cost == pytest.approx(want * s.node_price_usd, rel=1e-15)
    # the plan of most C_local at that count, ties to the smaller H, then streaming on
    rows = np.flatnonzero(b.nodes == want)
    measure = 1.0 / c[want - 1]
    tied = rows[measure <= measure.min() * (1 + 1e-12)]
    first = min(tied, key=lambda i: (int(b.inner_steps[i]), not bool(b.streaming[i])))
    assert (int(batch.inner_steps[0]), bool(batch.streaming[0])) == (int(b.inner_steps[first]), bool(b.streaming[first]))


@pytest.mark.parametrize("seed", range(5))
def test_fewest_nodes_equals_branch_and_bound(seed):
    """On the reference's full ranges (N <= 100,000, H <= 10,000), as `fewest_nodes_in_window`."""
    s, space = _applying(200 + seed, 100_000, 10_000)
    one = window_compute(s, PlanBatch.of("flat", "fp16", nodes=[1], compression=space.compression[0]), "c_local")
    s = s.replace(target_flop=float(one["c_local"][0] * 10 ** np.random.default_rng(seed).uniform(0.5, 3.5)))
    found, _ = fc.answer(s, space)
    want, _, _ = fewest_nodes_in_window(s, space)
    assert_same_plan(found, want)


@pytest.mark.parametrize("seed", range(4))
def test_lemma_t_holds_where_checked(seed):
    """Where `applies`, Q(T, m) = C_local / g does not fall as T grows, on a fine grid of T from the
    fewest tokens of any plan up and of m from 1 to the largest multiplier searched."""
    s, space = _applying(300 + seed, 100_000, 10_000)
    t = throughput(s, flat_batch(space, np.array([2]), np.array([1]), streaming=False))
    tokens_min = float(s.training_window_s * (t["tokens_per_outer"] / t["outer_time_s"])[0])
    tokens = tokens_min * np.geomspace(1.0, 1e6, 4000)
    h_top = float(_h_top(s, space))
    m_max = float(quality.replica_loss_multiplier(float(space.max_nodes), s.params, h_top, s.assumptions))
    c_thr = 6.0 * s.active_params * tokens
    plain = chinchilla.chi(s.active_params, tokens, c_thr, s.assumptions)
    for m in np.linspace(1.0, m_max, 7):
        q = c_thr * chinchilla.chi(s.active_params, tokens, c_thr, s.assumptions, m) / plain
        assert np.all(np.diff(q) >= -1e-12 * q[1:]), (m, float(np.min(np.diff(q) / q[1:])))


def test_bounds_are_the_cost_models_values_for_single_counts():
    """`_bounds` with lo = hi is C_local of the plan, bit for bit (`window_compute`)."""
    s, space = _applying(400, 100_000, 10_000)
    nodes = np.array([2, 3, 17, 1000, 99_999])
    h = np.arange(1, 12)
    c = fc._bounds(s, space, nodes, nodes, h)
    b = PlanBatch.of("flat", "fp16", nodes=np.repeat(nodes, h.size), inner_steps=np.tile(h, nodes.size),
                     compression=space.compression[0], streaming=True)
    assert np.array_equal(c.ravel(), window_compute(s, b, "c_local")["c_local"])


@pytest.mark.parametrize("seed", range(6))
def test_near_bounds_are_within_near_rel_of_the_exact_ones(seed):
    """`_bounds(near=True)` (eta_R from `_replica_efficiency_near`, C' started from the sweep's table) is
    within NEAR_REL of `_bounds` (the cost model's Newton solves) on random pieces [lo, hi] of random
    instances, at every H searched, and equals it where both are 0 or the loss leaves the table; taking
    the replica multiplier m out of the near chi (a mutation) or the plain chi's clip is caught."""
    s, space = _applying(600 + seed, 100_000, 10_000)
    rng = np.random.default_rng(700 + seed)
    lo = np.sort(rng.integers(2, 100_000, 64)).astype(np.int64)
    hi = np.minimum(lo + rng.integers(0, 5000, lo.size), 100_000)
    h = np.arange(1, _h_top(s, space) + 1)
    exact = fc._bounds(s, space, lo, hi, h)
    near = fc._bounds(s, space, lo, hi, h, near=True)
    both = (exact > 0) & np.isfinite(exact)
    assert both.mean() > 0.5
    assert np.array_equal(exact[~both], near[~both])
    gap = np.abs(near[both] - exact[both]) / exact[both]
    assert gap.max() <= fc.NEAR_REL, float(gap.max())
    # the proof's premise, that C' from the table is the cost model's to ~1e-14, on these losses
    a = s.assumptions
    losses = chinchilla.chinchilla_loss(s.active_params, np.geomspace(1e9, 1e14, 200), a) \
        * rng.uniform(1.0, 1.05, 200)
    from planner.reference import sweep_search
    got = sweep_search._c_eq(losses, a, sweep_search._c_eq_table(a))
    want = chinchilla.equivalent_optimal_compute(losses, a)
    assert np.max(np.abs(got / want - 1.0)) <= 1e-13


def test_near_replica_efficiency_reads_the_multiplier():
    """A near eta_R without the multiplier m (1 everywhere: a mutation of `_replica_efficiency_near`)
    would differ from the cost model's by far more than NEAR_REL at many replicas; the real one does not."""
    s, space = _applying(650, 100_000, 10_000)
    replicas, h_eff = np.array([2.0, 64.0, 5000.0]), np.array([1.0, 20.0, 50.0])
    tokens = np.array([1e11, 3e11, 1e12])
    c = 6.0 * s.active_params * tokens
    from planner.cost import run
    exact = run.replica_efficiency(s, replicas, h_eff, tokens, c)
    near = fc._replica_efficiency_near(s, replicas, h_eff, tokens, c)
    assert np.all(np.abs(near / exact - 1.0) <= fc.NEAR_REL)
    assert np.any(np.abs(fc._replica_efficiency_near(s, np.ones(3), h_eff, tokens, c) / exact - 1.0) > 1e-6)


def test_refuses_what_its_proof_does_not_cover():
    s, space = _applying(500, 1000, 100)
    a = s.assumptions
    assert not fc.applies(s.replace(assumptions=a.replace(replica_penalty="linear_v1")), space)
    assert not fc.applies(s.replace(assumptions=a.replace(search_zero_shards=True)), space)
    from dataclasses import replace
    assert not fc.applies(s, replace(space, modes=("flat", "hierarchical")))
    too_big = s.memory_bytes / 16 * 1.01      # 16 bytes per parameter (fp16 training state)
    assert not fc.applies(s.replace(params=too_big, active_params=too_big), space)
    # Lemma T's check fails where a large multiplier m meets few tokens: a large model, uncompressed
    # pseudo-gradients over a WAN that makes H_c(N_max) about 100 (the grid itself is small enough)
    big = 250e9
    hard = s.replace(params=big, active_params=big, memory_bytes=big * 16, wan_up_bps=5e9, wan_down_bps=5e9)
    full = _space(100_000, 10_000, 1.0)
    assert _h_top(hard, full) <= fc.H_GRID_MAX
    t = throughput(hard, flat_batch(full, np.array([2]), np.array([1]), False))
    tokens_min = float(hard.training_window_s * (t["tokens_per_outer"] / t["outer_time_s"])[0])
    assert not fc._lemma_t(hard, 100_000, _h_top(hard, full), tokens_min) and not fc.applies(hard, full)
    # and where the sync is so slow that the inner steps to search exceed H_GRID_MAX
    slow = s.replace(wan_up_bps=1e6, wan_down_bps=1e6)
    assert _h_top(slow, full) > fc.H_GRID_MAX and not fc.applies(slow, full)


@pytest.mark.parametrize("seed", range(4))
def test_flat_batch_is_the_batch_plan_batch_of_builds(seed):
    """`fewest_nodes.flat_batch` builds without `PlanBatch.of` the batch `of` builds: every field of the
    same type, dtype, shape and values, on random node counts, H and streaming (scalars, lists, 0-d,
    1-d and 2-d arrays, broadcast against each other) and compression; and the cost model's figures
    of both batches are the same doubles (changing a default, a dtype or the broadcast fails it)."""
    from dataclasses import fields

    rng = np.random.default_rng(seed)
    s = _instance(rng, "chinchilla")
    shapes = [(), (1,), (5,), (3, 4), (1, 4)]
    for _ in range(30):
        space = _space(int(rng.integers(2, 1000)), 50, float(rng.choice((1.0, 16.0, 100.0, 150.0, rng.uniform(1, 9)))))
        n_shape, h_shape = (shapes[i] for i in rng.integers(len(shapes), size=2))
        if {n_shape, h_shape} in ({(5,), (3, 4)}, {(5,), (1, 4)}):
            h_shape = n_shape                                   # shapes that do not broadcast: not a batch
        nodes = rng.integers(1, space.max_nodes + 1, size=n_shape)
        h = rng.integers(1, 51, size=h_shape)
        shape = np.broadcast_shapes(n_shape, h_shape)
        streaming = bool(rng.integers(2)) if rng.integers(2) else rng.integers(2, size=shape).astype(bool)
        as_given = [(nodes, h), (nodes.tolist(), h.tolist()), (nodes.astype(float), h.astype(np.int32))][rng.integers(3)]
        mine = flat_batch(space, *as_given, streaming)
        theirs = PlanBatch.of("flat", space.precisions[0], nodes=as_given[0], inner_steps=as_given[1],
                              compression=space.compression[0], streaming=streaming)
        for f in fields(PlanBatch):
            a, b = getattr(mine, f.name), getattr(theirs, f.name)
            assert type(a) is type(b), f.name
            if isinstance(b, np.ndarray):
                assert a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b), f.name
            else:
                assert a == b, f.name
        with np.errstate(divide="ignore", invalid="ignore"):
            ours, ref = throughput(s, mine), throughput(s, theirs)
        for key, value in ref.items():
            assert np.asarray(ours[key]).tobytes() == np.asarray(value).tobytes(), key


@pytest.mark.parametrize("seed", range(6))
def test_the_one_node_plans_figures_are_its_row_of_the_first_evaluation(seed, monkeypatch):
    """The one-node plan's throughput figures that `_inner_steps_searched` hands to `fewest_nodes` (its row of
    the three-plan evaluation) are those of the plan alone, key for key bit for bit, and the answer (batch,
    cost, plans scored) with them is the answer without them, at targets one node reaches and misses; a row
    taken from the N_max plan instead (a mutation) differs."""
    s, space = _applying(seed)
    h_top, one = fc._inner_steps_searched(s, space)
    with np.errstate(divide="ignore", invalid="ignore"):
        alone = throughput(s, flat_batch(space, [1], [1]))
    assert one.keys() == alone.keys()
    for name, x in alone.items():
        assert np.asarray(one[name]).tobytes() == np.asarray(x).tobytes() and np.shape(one[name]) == np.shape(x), name
    first = float(window_compute(s, flat_batch(space, [1], [1]), "c_local")["c_local"][0])
    for target in (first * 0.999, first * 1.001):
        t = s.replace(target_flop=target)
        got, want = fc.answer(t, space), fc.fewest_nodes(t, space, h_top)
        assert got[1] == want[1] and (got[0] is None) == (want[0] is None)
        if got[0] is not None:
            assert got[0][1] == want[0][1] and _plan_bits(got[0][0]) == _plan_bits(want[0][0])
    original = fc._h_c

    def row_of_n_max(space, t):          # mutation: the row of N_max handed on as the one-node plan's
        for name in list(t):
            if np.ndim(t[name]):
                t[name] = t[name][1:2].repeat(3)
        return original(space, t)
    monkeypatch.setattr(fc, "_h_c", row_of_n_max)
    mutated = fc._inner_steps_searched(s, space)
    assert mutated is None or any(np.asarray(mutated[1][k]).tobytes() != np.asarray(x).tobytes()
                                  for k, x in alone.items())


def _plan_bits(b: PlanBatch) -> list:
    from dataclasses import fields
    return [b.mode, b.precision] + [np.asarray(getattr(b, f.name)).tobytes() for f in fields(b)
                                    if isinstance(getattr(b, f.name), np.ndarray)]
