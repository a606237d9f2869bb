"""The reference's searches answered without the branch and bound (planner/reference/fewest_nodes.py)
agree with brute force (every N, every H, streaming on and off) and with the branch and bound
(`optimise`) on random instances."""

import numpy as np
import pytest

from planner.cost.assumptions import load_profile
from planner.cost.score import time_to_target, window_compute
from planner.cost.setting import PlanBatch, Setting
from planner.objectives import MIN_COST
from planner.reference import fewest_nodes
from planner.solve import optimise
from planner.space import DecisionSpace

STRAGGLERS = ("synchronous", "relay", "threshold", "backup", "none")


def _instance(rng: np.random.Generator, penalty: str = "linear_v1") -> Setting:
    """A random node and WAN under the report-v1 profile (or no replica penalty); the model is the
    largest one node holds, as the reference's question."""
    a = load_profile("report-v1").replace(straggler=str(rng.choice(STRAGGLERS)), replica_penalty=penalty,
                                          scenario=str(rng.choice(("optimistic", "expected", "conservative"))))
    vram_gb = float(rng.choice((256, 512, 1024, 2048, 3840, 4000)))
    up = float(rng.choice((10e6, 100e6, 1e9, 10e9)))
    return Setting(params=vram_gb / 16 * 1e9, active_params=vram_gb / 16 * 1e9, moe_layers=0, hidden_size=None,
                   local_batch_tokens=131072.0, peak_flops={"fp16": float(rng.uniform(1, 40)) * 1e15},
                   memory_bytes=vram_gb * 1e9, accelerators_per_node=8, price_usd_per_accelerator=15000.0,
                   h100_equivalents=1.0, wan_up_bps=up, wan_down_bps=up * float(rng.choice((1, 0.5, 2))),
                   wan_rtt_s=float(rng.uniform(0.01, 0.3)), target_kind="c_local", assumptions=a)


def _space(max_nodes: int, max_inner_steps: int, compression: float) -> DecisionSpace:
    return DecisionSpace(
        modes=("flat",), precisions=("fp16",), min_nodes=1, max_nodes=max_nodes, max_stages=64, group_sizes=(2,),
        max_inner_steps=max_inner_steps, max_regional_rounds=1, compression=(compression,), max_micro_batches=1,
        activation_compression=(1.0,), streaming=(True,), expert_parallel=None, streaming_off_allowed=True)


def _grid(space: DecisionSpace, nodes: int) -> PlanBatch:
    """Every plan with N = `nodes`: H in 1..H_max, streaming on and off."""
    h = np.arange(1, space.max_inner_steps + 1)
    return PlanBatch.of("flat", "fp16", nodes=np.full(2 * h.size, nodes), inner_steps=np.concatenate([h, h]),
                        compression=space.compression[0], streaming=np.repeat([True, False], h.size))


def _brute_best(s: Setting, space: DecisionSpace) -> np.ndarray:
    """Most C_local within the window at each N in 1..N_max, over every H and streaming."""
    h = np.arange(1, space.max_inner_steps + 1)
    n = np.arange(1, space.max_nodes + 1)
    nn, hh = np.meshgrid(n, h, indexing="ij")
    best = np.zeros(n.size)
    for streaming in (True, False):
        b = PlanBatch.of("flat", "fp16", nodes=nn.ravel(), inner_steps=hh.ravel(), compression=space.compression[0],
                         streaming=streaming)
        best = np.maximum(best, window_compute(s, b, "c_local")["c_local"].reshape(nn.shape).max(axis=1))
    return best


def _brute_plan(s: Setting, space: DecisionSpace, nodes: int) -> tuple[int, bool]:
    """(H, streaming) of the fastest plan at `nodes` (ties: smaller H, then streaming on)."""
    b = _grid(space, nodes)
    t = time_to_target(s, b)["time_to_target_s"]
    tied = np.flatnonzero(t <= t.min() * (1 + 1e-12))
    key = min(tied, key=lambda i: (b.inner_steps[i], not b.streaming[i]))
    return int(b.inner_steps[key]), bool(b.streaming[key])


def assert_same_plan(found, want):
    """Two answers ((one-plan batch, cost) or None) are the same plan (N, H, streaming) at the same cost."""
    assert (found is None) == (want is None)
    if want is not None:
        (batch, cost), (b_want, cost_want) = found, want
        assert (int(batch.nodes[0]), int(batch.inner_steps[0]), bool(batch.streaming[0])) == \
            (int(b_want.nodes[0]), int(b_want.inner_steps[0]), bool(b_want.streaming[0]))
        assert cost == cost_want


@pytest.mark.parametrize("seed", range(14))
def test_fewest_nodes_equals_brute_force(seed):
    rng = np.random.default_rng(seed)
    s = _instance(rng, "linear_v1" if seed % 3 else "none")
    space = _space(int(rng.integers(50, 400)), int(rng.integers(20, 300)), float(rng.choice((1, 16, 100, 150))))
    assert fewest_nodes.applies(s, space)
    best = _brute_best(s, space)
    # a target met first near a random node count (or by one node; or by none)
    kind = seed % 7
    if kind == 0:
        target = best.max() * 1.001
    elif kind == 1:
        target = best[0] * 0.999
    else:
        target = best[int(rng.integers(1, best.size))] * float(rng.uniform(0.97, 1.0))
    s = s.replace(target_flop=float(target))
    found, _ = fewest_nodes.fewest_nodes(s, space)
    reached = np.flatnonzero(best >= target)
    if reached.size == 0:
        assert found is None
        return
    batch, cost = found
    want = int(reached[0]) + 1
    assert int(batch.nodes[0]) == want
    assert cost == pytest.approx(want * s.node_price_usd, rel=1e-15)
    assert (int(batch.inner_steps[0]), bool(batch.streaming[0])) == _brute_plan(s, space, want)


@pytest.mark.parametrize("max_nodes", [1, 2, 3, 5])
def test_fewest_nodes_on_tiny_ranges(max_nodes):
    """The narrowing at its edges: every reachable node count of a tiny range, and one more target."""
    s = _instance(np.random.default_rng(max_nodes))
    space = _space(max_nodes, 40, 16.0)
    best = _brute_best(s, space)
    for target in list(best * 0.999999) + [best.max() * 1.000001]:
        found, _ = fewest_nodes.fewest_nodes(s.replace(target_flop=float(target)), space)
        reached = np.flatnonzero(best >= target)
        assert (None if found is None else int(found[0].nodes[0])) == (int(reached[0]) + 1 if reached.size else None)


@pytest.mark.parametrize("seed", range(6))
def test_fewest_nodes_equals_branch_and_bound(seed):
    """On the reference's full ranges (N <= 100,000, H <= 10,000), as the branch and bound's min_cost."""
    rng = np.random.default_rng(100 + seed)
    s = _instance(rng)
    space = _space(100_000, 10_000, float(rng.choice((16, 100, 150))))
    one = window_compute(s, PlanBatch.of("flat", "fp16", nodes=[1], compression=space.compression[0]), "c_local")
    s = s.replace(target_flop=float(one["c_local"][0] * 10 ** rng.uniform(0.5, 3.5)))
    assert fewest_nodes.applies(s, space)
    found, _ = fewest_nodes.fewest_nodes(s, space)
    want, _, _ = optimise(s, space, MIN_COST)
    assert_same_plan(found, want)


def test_closed_form_refuses_what_it_does_not_cover():
    """The Chinchilla replica penalty (eta_R scored at the run's tokens), other modes and ZeRO-3 go to the
    general search."""
    rng = np.random.default_rng(7)
    s = _instance(rng)
    space = _space(1000, 100, 16.0)
    assert fewest_nodes.applies(s, space)
    assert not fewest_nodes.applies(s.replace(assumptions=s.assumptions.replace(replica_penalty="chinchilla")), space)
    assert not fewest_nodes.applies(s.replace(assumptions=s.assumptions.replace(search_zero_shards=True)), space)
    too_big = s.memory_bytes / 16 * 1.01      # 16 bytes per parameter (fp16 training state)
    assert not fewest_nodes.applies(s.replace(params=too_big, active_params=too_big), space)
    from dataclasses import replace
    assert not fewest_nodes.applies(s, replace(space, modes=("flat", "hierarchical")))


def _cases(function: str) -> list[dict]:
    from tests.conftest import load_reference_cases
    return [c for c in load_reference_cases() if c["function"] == function]


def _perturbed(function: str, seed: int) -> dict:
    """A reference search case with a random node count (sweep) or target (optimal configuration)."""
    import copy
    rng = np.random.default_rng(seed)
    cases = _cases(function)
    case = copy.deepcopy(cases[int(rng.integers(len(cases)))])
    ri = case["resolved_inputs"]
    if function == "sweep_model_sizes":
        ri["n_nodes"] = int(rng.integers(2, 3000))
    else:
        ri["target_c_quality"] = float(ri["target_c_quality"] * 10 ** rng.uniform(-1, 1))
    return case


@pytest.mark.parametrize("function, seed", [("sweep_model_sizes", s) for s in range(3)]
                         + [("find_optimal_config_for_target", s) for s in range(2)])
def test_sizes_sharing_what_they_proved_answer_as_each_size_alone(function, seed, monkeypatch):
    """`_solve_sizes` lets a size stop where it can neither beat nor tie the best plan of the sizes
    before it; the answer (value, model size and plan) is that of solving every size alone."""
    from planner.reference import search
    if not _cases(function):
        pytest.skip("reference cases not found")
    case = _perturbed(function, seed)
    shared = search.answer(case)
    _alone(monkeypatch)
    alone = search.answer(case)
    assert (shared.dtplan, shared.params, shared.plan) == (alone.dtplan, alone.params, alone.plan)


def _alone(monkeypatch) -> None:
    """Every size solved alone: no bound shared between sizes, none skipped (no box bound, no
    `_fewest_first`, `_solve_below` the plain `optimise`)."""
    from planner.reference import search, size_bound
    monkeypatch.setattr(size_bound, "applies", lambda s, space, reach: False)
    monkeypatch.setattr(search, "_solve_below", lambda s, space, objective, found: optimise(s, space, objective))


@pytest.mark.parametrize("function, seed", [("sweep_model_sizes", 11), ("find_optimal_config_for_target", 12)])
def test_sizes_solved_in_any_order_answer_as_each_size_alone(function, seed, monkeypatch):
    """`_solve_sizes` solves the sizes most promising first; the order only changes what is
    searched: sizes solved in a random order (each cut by the sizes before it) give the answer of
    every size solved alone. (find_optimal_config_for_target: the order of the reach, used where
    the box bound does not apply; where it does, `_fewest_first` orders the sizes, tested below.)"""
    from planner.reference import search, size_bound
    if not _cases(function):
        pytest.skip("reference cases not found")
    case = _perturbed(function, seed)
    rng = np.random.default_rng(seed)
    order = []
    if function == "find_optimal_config_for_target":
        monkeypatch.setattr(size_bound, "applies", lambda s, space, reach: False)
    else:       # the general search over sizes (the sweep's own search, sweep_search.py, is tested elsewhere)
        monkeypatch.setattr(search.sweep_search, "best_size", lambda *args: None)
    monkeypatch.setattr(search, "_promising_first",
                        lambda settings, objective, max_nodes: order.append(len(settings))
                        or [settings[i] for i in rng.permutation(len(settings))])
    shuffled = search.answer(case)
    assert order, "the shuffled order was not used"
    _alone(monkeypatch)
    alone = search.answer(case)
    assert (shuffled.dtplan, shuffled.params, shuffled.plan) == (alone.dtplan, alone.params, alone.plan)


def test_the_winning_size_is_solved_first_on_the_shipped_sweeps():
    """The order of `_promising_first` on the reference's sweep cases: the size whose plan wins
    comes first, so every other size searches under the final bound from the start (where the
    speed of `sweep_model_sizes` comes from, docs/planner.md)."""
    from planner.objectives import MAX_COMPUTE
    from planner.reference import search
    cases = _cases("sweep_model_sizes")
    if not cases:
        pytest.skip("reference cases not found")
    for case in cases:
        ri = case["resolved_inputs"]
        largest = search._largest_on_one_node_b(case)
        sizes = [f * largest for f in search.FLAT_FRACTIONS] + [x * largest for x in search.SWEEP_MULTIPLES]
        pairs = []
        for params_b in sizes:
            s, precision = search._setting(case, params_b * 1e9, target_kind="c_quality")
            pairs.append((s, search._space(precision, ("flat", "pp_group"), int(ri["n_nodes"]), ri["compression"])))
        ordered = search._promising_first(pairs, MAX_COMPUTE, int(ri["n_nodes"]))
        assert sorted(s.params for s, _ in ordered) == sorted(s.params for s, _ in pairs)
        assert ordered[0][0].params == search.answer(case).params, case["id"]


@pytest.mark.parametrize("function, seed", [("sweep_model_sizes", 21), ("find_optimal_config_for_target", 22),
                                            ("sweep_model_sizes", 23), ("find_optimal_config_for_target", 24)])
def test_no_plan_of_any_mode_passes_the_reach(function, seed):
    """`search._reach_bounds`' proof, checked: random plans of every mode (flat, hierarchical,
    pp_group; any N, H, R, k, S, M, Ca, streaming, ZeRO-3 shards) of random model sizes, under the
    reference cases' hardware, links and assumptions (scenario and straggler varied), never reach
    more C_quality within the window than `_most_within` at their node count (with a hand check of
    one node: W gamma F u)."""
    from planner.reference import search
    cases = _cases(function)
    if not cases:
        pytest.skip("reference cases not found")
    rng = np.random.default_rng(seed)
    checked = 0
    for _ in range(6):
        case = cases[int(rng.integers(len(cases)))]
        params = search._largest_on_one_node_b(case) * 1e9 * float(rng.choice((0.1, 0.25, 1.0, 1.5, 3.0, 8.0)))
        s, precision = search._setting(case, params, bool(rng.integers(2)), target_kind="c_quality")
        a = s.assumptions.replace(scenario=str(rng.choice(("optimistic", "expected", "conservative"))),
                                  straggler=str(rng.choice(STRAGGLERS)))
        s = s.replace(assumptions=a, goodput=float(rng.choice((1.0, 0.8))))
        space = search._space(precision, ("flat", "hierarchical", "pp_group"), 100_000, 16.0)
        assert search._reach_bounds(s, space)
        size = 400
        nodes = rng.integers(1, 100_001, size) // rng.choice([1, 10, 100, 1000], size) + 1
        nodes[:40] = 1            # one node trains locally at W gamma F u: the bound is tight there
        common = dict(inner_steps=rng.integers(1, 2000, size), compression=rng.choice([1.0, 16.0, 100.0, 500.0], size),
                      streaming=rng.integers(0, 2, size).astype(bool))
        batches = [
            PlanBatch.of("flat", precision, nodes=nodes, zero_shards=rng.choice([1, 1, 2, 4], size), **common),
            PlanBatch.of("hierarchical", precision, nodes=nodes * 8, group_size=rng.choice([2, 4, 8], size),
                         regional_rounds=rng.integers(1, 50, size), **common),
            PlanBatch.of("pp_group", precision, nodes=nodes * 16, stages=rng.choice([2, 4, 8, 16], size),
                         micro_batches=rng.integers(1, 65, size), activation_compression=rng.choice([1.0, 2.0, 4.0, 10.0], size),
                         **common),
        ]
        for b in batches:
            with np.errstate(all="ignore"):
                c = window_compute(s, b, "c_quality")["c_quality"]
            bound = np.array([search._most_within(s, space, int(n)) for n in b.nodes])
            ok = np.isfinite(c)
            assert np.all(c[ok] <= bound[ok]), (b.mode, float(np.max(c[ok] / bound[ok])))
            checked += int(ok.sum())
        one = s.training_window_s * s.peak_flops[precision] * a.mfu_for(precision)
        assert search._most_within(s, space, 1) == pytest.approx(max(one, float(search._reach(s, precision, [1])[0])))
    assert checked > 3000


def test_the_reach_is_refused_where_its_proof_does_not_hold():
    from planner.reference import search
    cases = _cases("sweep_model_sizes")
    if not cases:
        pytest.skip("reference cases not found")
    s, precision = search._setting(cases[0], 1e11, target_kind="c_quality")
    space = search._space(precision, ("flat", "pp_group"), 1000, 16.0)
    assert search._reach_bounds(s, space)
    a = s.assumptions
    for changes in ({"replica_penalty": "fitted"}, {"dp_overlap": True}, {"pipeline_schedule": "1f1b"},
                    {"mfu_from_table": True}, {"streaming_fragments": 4.0},
                    {"activation_quality": {1.0: (1.0, 1.0, 1.0), 4.0: (1.2, 1.0, 1.0)}}):
        assert not search._reach_bounds(s.replace(assumptions=a.replace(**changes)), space), changes
    assert not search._reach_bounds(s.replace(target_kind="c_local"), space)


def test_distinct_is_np_unique():
    """`fewest_nodes.distinct` (np.unique without its first call's import of numpy.ma) gives np.unique's
    values, dtype and order on random integer and float arrays with repeats, unsorted, sorted, of one
    value and empty; without its sort (a mutation) the unsorted ones differ."""
    rng = np.random.default_rng(5)
    arrays = [rng.integers(0, 20, 50), rng.integers(0, 3, 7).astype(float), np.sort(rng.integers(0, 9, 30)),
              np.geomspace(2, 100_000, 400).round(), np.array([4.0]), np.array([], dtype=np.int64),
              rng.uniform(0, 1, 10).round(1), np.linspace(2, 50, 512).astype(np.int64)]
    for x in arrays:
        got, want = fewest_nodes.distinct(x), np.unique(x)
        assert got.dtype == want.dtype and got.tolist() == want.tolist()

    def unsorted(values):
        x = np.asarray(values).ravel()
        return x[np.concatenate(([True], x[1:] != x[:-1]))] if x.size else x
    assert any(unsorted(x).tolist() != np.unique(x).tolist() for x in arrays)


@pytest.mark.parametrize("function", ["find_nodes_for_target", "find_optimal_config_for_target"])
def test_the_answers_check_is_the_evaluators(function, monkeypatch):
    """`search._check` (an answer's check without the figures `score` adds that it does not read)
    gives the problems of `search._rescore` (the whole `score`) on random plans of the case's modes,
    some breaking limits, with targets at each plan's value and one double either side of it; a check
    that reads the compute from `window_compute` (another order of the same products) or compares
    with `>` instead of `>=` (mutations) would not."""
    from planner.reference import search
    rng = np.random.default_rng(11)
    cases = _cases(function)
    if not cases:
        pytest.skip("reference cases not found")
    modes = ("flat",) if function == "find_nodes_for_target" else ("flat", "hierarchical", "pp_group")
    kind = "c_local" if function == "find_nodes_for_target" else "c_quality"
    plans = []
    for case in [cases[int(i)] for i in rng.integers(len(cases), size=12)]:
        largest = search._largest_on_one_node_b(case)
        s, precision = search._setting(case, largest * 1e9 * float(rng.choice((0.5, 1.0, 3.0))),
                                       function == "find_optimal_config_for_target", target_kind=kind)
        s = s.replace(max_nodes=int(rng.integers(50, 5000)))
        for _ in range(4):
            mode = str(rng.choice(modes))
            b = PlanBatch.of(mode, precision, nodes=int(rng.integers(1, 6000)), inner_steps=int(rng.integers(1, 300)),
                             compression=float(case["resolved_inputs"]["compression"]),
                             stages=int(rng.integers(1, 12)), group_size=int(rng.integers(2, 16)),
                             regional_rounds=int(rng.integers(1, 8)), micro_batches=int(rng.integers(1, 64)),
                             activation_compression=float(rng.choice((1.0, 2.0, 4.0, 10.0))))
            value = float(search._rescore(s, b, kind, 0.0)[0][kind])
            plans += [(s, b, t) for t in (value, np.nextafter(value, 0), np.nextafter(value, np.inf))]

    def agree(check):
        return all(search._rescore(s, b, kind, t)[1] == check(s, b, kind, t) for s, b, t in plans)

    assert agree(search._check)
    assert any(search._rescore(s, b, kind, t)[1] for s, b, t in plans)
    assert any(not search._rescore(s, b, kind, t)[1] for s, b, t in plans)

    def strict(s, b, kind, t):          # `_check` comparing with > (the same message where value == target)
        value = search._rescore(s, b, kind, 0.0)[0][kind]
        return search._check(s, b, kind, t) + ([f"{kind} within the window {value:.6e} < target {t:.6e}"]
                                               if value == t else [])
    assert not agree(strict)


def test_node_grid_is_the_grid_it_stands_for():
    """`search._node_grid` (the geometric node grid, once per process and range) holds the values the
    searches worked out per size before (np.unique of the rounded np.geomspace), and is read-only."""
    from planner.reference import search
    for first, n in [(1, 1), (2, 2), (1, 37), (2, 500), (1, 4000), (2, 100_000), (2, 1)]:
        want = np.unique(np.geomspace(first, max(first, n), search.ORDER_NODE_GRID).round())
        got = search._node_grid(first, n)
        assert got.tolist() == want.tolist() and not got.flags.writeable
        assert search._node_grid(first, n) is got


def test_descend_nodes_takes_the_distinct_classes_as_np_unique():
    """`bnb._descend_nodes` sorts its feasible classes and keeps each once, as np.unique did (written
    without it: np.unique's first call imports numpy.ma, 23 ms of a process's first
    find_optimal_config_for_target answer): on the classes of a reference case's space, a feasible
    array shuffled and with repeats scores the same plans, in the same order, and the same count as
    np.unique of it; keeping the repeats or leaving the array unsorted (mutations) would not."""
    from planner.reference import search
    from planner.solvers import bnb
    cases = _cases("find_optimal_config_for_target")
    if not cases:
        pytest.skip("reference cases not found")
    rng = np.random.default_rng(3)
    s, precision = search._setting(cases[0], 1e11, True, target_flop=1e23, target_kind="c_quality")
    space = search._space(precision, ("flat", "hierarchical", "pp_group"), 2000, 16.0)
    checked = 0
    for mode in space.modes:
        c = space.classes(s, mode, precision)
        h_max, r_max = bnb._h_r_max(c, space.max_inner_steps, space.max_regional_rounds)
        idx, n, h, r = bnb._seeds(s, c, h_max, r_max)
        t = bnb._measure(s, c, idx, n, h, r, bnb.TIME)
        if not np.isfinite(t).sum() > 1:
            continue
        limit = float(np.quantile(t[np.isfinite(t)], 0.7))
        feasible = idx[t <= limit]
        shuffled = rng.permutation(np.concatenate((feasible, feasible[rng.integers(feasible.size, size=feasible.size)])))

        def run(classes):
            seen = []
            count = bnb._descend_nodes(s, c, h_max, r_max, limit, bnb.TIME, classes,
                                       lambda *plan: seen.append([np.asarray(x).tolist() for x in plan]))
            return count, seen
        want = run(np.unique(shuffled))
        assert run(shuffled) == want
        assert run(np.unique(feasible)) == want
        checked += want[0] > feasible.size
    assert checked      # some descent scored plans beyond the seeds


def test_no_search_imports_numpy_ma():
    """No reference search imports numpy.ma (np.unique's first call does: 23 ms of CPU), here a
    process's first find_optimal_config_for_target answer, which goes through the branch and bound."""
    import subprocess
    import sys
    if not _cases("find_optimal_config_for_target"):
        pytest.skip("reference cases not found")
    code = ("import sys; from tests.conftest import load_reference_cases; from planner.reference.search import answer; "
            "answer(next(c for c in load_reference_cases() if c['function'] == 'find_optimal_config_for_target')); "
            "print('numpy.ma' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
