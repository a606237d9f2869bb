"""The box bound of one model size's most C_quality (planner/reference/size_bound.py) holds for
every real plan and for the branch and bound's optimum, on the reference's sweep settings with
other stragglers, replica penalties, links and node counts; the sweep answers as without it."""

import copy

import numpy as np
import pytest

from planner.cost import run
from planner.cost.score import score
from planner.cost.setting import PlanBatch
from planner.objectives import MAX_COMPUTE
from planner.reference import search, size_bound
from planner.solve import optimise

STRAGGLERS = ("synchronous", "relay", "threshold", "backup", "none")
CUT = 1 + 1e-9         # a cut this little below a value that exists: the bound must not claim it unreachable


def _sweep_cases() -> list[dict]:
    from tests.conftest import load_reference_cases
    return [c for c in load_reference_cases() if c["function"] == "sweep_model_sizes"]


def _instance(seed: int, modes=("flat", "pp_group")):
    """(setting, space) of one model size of a reference sweep case, with a random node count,
    straggler rule, replica penalty, scenario and WAN / regional / pipeline links."""
    cases = _sweep_cases()
    if not cases:
        pytest.skip("reference cases not found")
    rng = np.random.default_rng(seed)
    case = copy.deepcopy(cases[int(rng.integers(len(cases)))])
    ri = case["resolved_inputs"]
    ri["n_nodes"] = int(rng.integers(2, 3000))
    largest = search._largest_on_one_node_b(case)
    params_b = largest * float(rng.choice(search.FLAT_FRACTIONS + search.SWEEP_MULTIPLES))
    setting, precision = search._setting(case, params_b * 1e9, target_kind="c_quality")
    a = setting.assumptions.replace(straggler=str(rng.choice(STRAGGLERS)),
                                    replica_penalty=str(rng.choice(("chinchilla", "linear_v1", "none"))),
                                    scenario=str(rng.choice(("optimistic", "expected", "conservative"))))
    up = float(rng.choice((10e6, 100e6, 1e9)))
    setting = setting.replace(assumptions=a, wan_up_bps=up, wan_down_bps=up * float(rng.choice((1, 0.5, 2))),
                              wan_rtt_s=float(rng.uniform(0.01, 0.3)),
                              pipeline_bps=float(rng.choice((100e6, 1e9, 10e9))),
                              pipeline_rtt_s=float(rng.uniform(0.001, 0.05)),
                              regional_bps=float(rng.choice((100e6, 1e9, 10e9))),
                              regional_rtt_s=float(rng.uniform(0.001, 0.05)))
    space = search._space(precision, modes, ri["n_nodes"], ri["compression"])
    assert size_bound.applies(setting, space, search._reach_bounds(setting, space))
    return setting, space, rng


def _random_plans(setting, space, rng, count=400):
    """Random plans of the space's modes (any N, H, R, k, S, M, Ca, streaming), scored by the evaluator."""
    n_max = space.max_nodes
    out = []
    for mode in space.modes:
        stages = rng.integers(2, min(64, max(2, n_max // 2)) + 1, count) if mode == "pp_group" else np.ones(count, int)
        k = rng.integers(2, min(64, max(2, n_max // 2)) + 1, count)
        least = {"pp_group": 2 * stages, "hierarchical": 2 * k}.get(mode, 1)
        nodes = np.minimum(n_max, np.maximum(np.exp(rng.uniform(0, np.log(n_max), count)).astype(int), least))
        h = np.exp(rng.uniform(0, np.log(space.max_inner_steps), count)).astype(int)
        r = np.exp(rng.uniform(0, np.log(space.max_regional_rounds), count)).astype(int)
        b = PlanBatch.of(mode, space.precisions[0], nodes=nodes, inner_steps=np.maximum(h, 1),
                         group_size=k, regional_rounds=np.maximum(r, 1),
                         compression=space.compression[0], streaming=rng.random(count) < 0.7, stages=stages,
                         micro_batches=rng.integers(1, space.max_micro_batches + 1, count),
                         activation_compression=rng.choice(space.activation_compression, count))
        out.append((b, score(setting, b)))
    return out


@pytest.mark.parametrize("seed", range(14))
def test_bound_holds_for_random_plans(seed):
    """No real plan reaches a cut the bound calls unreachable: the best feasible random plan's value
    (and each of a sample) is never proven out of reach, nor with N capped at that plan's nodes."""
    from dataclasses import replace
    setting, space, rng = _instance(seed, ("flat", "pp_group") if seed % 2 else ("flat", "hierarchical", "pp_group"))
    values = []
    for b, out in _random_plans(setting, space, rng):
        ok = ~np.any([out[f"violates:{name}"] for name in search.LIMITS], axis=0)
        values.extend(zip(out["c_quality"][ok & (b.nodes >= 2)].tolist(), b.nodes[ok & (b.nodes >= 2)].tolist()))
    assert values, "no feasible random plan"
    values = sorted(values)
    for v, n in [values[-1]] + [values[i] for i in rng.integers(0, len(values), 8)]:
        assert size_bound.skip_bound(setting, space, v / CUT) is None
        assert size_bound.skip_bound(setting, replace(space, max_nodes=int(n)), v / CUT) is None


@pytest.mark.parametrize("seed", range(100, 108))
def test_bound_holds_for_the_optimum_and_is_tight(seed):
    """The branch and bound's most C_quality is never proven out of reach; a cut 1% above it is,
    with a bound between the optimum and the cut."""
    setting, space, _ = _instance(seed)
    found, _, _ = optimise(setting, space, MAX_COMPUTE)
    assert found is not None
    best = found[1]
    assert size_bound.skip_bound(setting, space, best / CUT) is None
    bound = size_bound.skip_bound(setting, space, best * 1.01)
    assert bound is not None and best <= bound < best * 1.01


@pytest.mark.parametrize("seed", range(300, 304))
def test_fewest_nodes_reaching_a_target_are_never_proven_out_of_reach(seed):
    """min_cost (C_quality target, flat, hierarchical and pp_group): with N capped at the branch and
    bound's fewest nodes the target is never proven out of reach."""
    from dataclasses import replace
    from planner.objectives import MIN_COST
    setting, space, rng = _instance(seed, ("flat", "hierarchical", "pp_group"))
    found, _, _ = optimise(setting, space, MAX_COMPUTE)
    target = found[1] * float(rng.uniform(0.3, 0.95))
    setting = setting.replace(target_flop=target)
    fewest, _, _ = optimise(setting, space, MIN_COST)
    n = int(fewest[0].nodes[0])
    assert size_bound.skip_bound(setting, replace(space, max_nodes=n), target / CUT) is None


def test_bound_refuses_what_it_does_not_cover():
    """Other modes, a second precision or compression, ZeRO-3 and the dtplan overlap term go without it."""
    from dataclasses import replace
    setting, space, _ = _instance(3)
    ok = search._reach_bounds(setting, space)
    assert size_bound.applies(setting, space, ok)
    assert not size_bound.applies(setting, space, False)
    assert not size_bound.applies(setting, replace(space, modes=("flat", "pipeline_wan")), ok)
    assert not size_bound.applies(setting, replace(space, compression=(16.0, 150.0)), ok)
    zero = setting.replace(assumptions=setting.assumptions.replace(search_zero_shards=True))
    assert not size_bound.applies(zero, space, search._reach_bounds(zero, space))
    overlap = setting.replace(assumptions=setting.assumptions.replace(dp_overlap=True))
    assert not search._reach_bounds(overlap, space)


@pytest.mark.parametrize("function, seed", [("sweep_model_sizes", s) for s in range(3)]
                         + [("find_optimal_config_for_target", s) for s in range(3)])
def test_searches_answer_as_without_the_box_bound(function, seed, monkeypatch):
    """Sizes skipped by the box bound change nothing: the answer (value, size, plan) is that of the
    search that only has the reach to skip sizes (a random node count, or target)."""
    from tests.conftest import load_reference_cases
    cases = [c for c in load_reference_cases() if c["function"] == function]
    if not cases:
        pytest.skip("reference cases not found")
    rng = np.random.default_rng(200 + seed)
    case = copy.deepcopy(cases[int(rng.integers(len(cases)))])
    ri = case["resolved_inputs"]
    if function == "sweep_model_sizes":
        ri["n_nodes"] = int(rng.integers(2, 5000))
    else:
        ri["target_c_quality"] = float(ri["target_c_quality"] * 10 ** rng.uniform(-1, 1))
    fast = search.answer(case)
    monkeypatch.setattr(size_bound, "applies", lambda s, space, reach: False)
    plain = search.answer(case)
    assert (fast.dtplan, fast.params, fast.plan) == (plain.dtplan, plain.params, plain.plan)


def _refined(setting, space, cut):
    """`size_bound.FewestNodes` refined until done."""
    bound = size_bound.FewestNodes(setting, space, cut)
    while not bound.done:
        bound.refine()
    return bound


@pytest.mark.parametrize("seed", range(310, 316))
def test_fewest_nodes_bounds_hold_for_the_fewest_nodes(seed):
    """min_cost (C_quality target, flat, hierarchical and pp_group): neither the box bound on the
    nodes (`FewestNodes`, at its first round and refined) nor the reach's (`search._fewest_by_reach`)
    exceeds the branch and bound's fewest nodes."""
    from planner.objectives import MIN_COST
    setting, space, rng = _instance(seed, ("flat", "hierarchical", "pp_group"))
    found, _, _ = optimise(setting, space, MAX_COMPUTE)
    best = found[1]
    target = best * float(rng.uniform(0.05, 0.95))
    at = setting.replace(target_flop=target)
    fewest, _, _ = optimise(at, space, MIN_COST)
    n = int(fewest[0].nodes[0])
    first = size_bound.FewestNodes(at, space, target / CUT)
    assert first.least <= n
    assert _refined(at, space, target / CUT).least <= n
    assert search._fewest_by_reach(at, space) <= n


def test_fewest_nodes_bound_is_tight_on_the_shipped_cases():
    """On the reference's optimal-configuration cases whose cheapest plan is flat or pp_group, the
    refined box bound of the winning size is within 1% of its fewest nodes (where the order of
    `search._fewest_first` comes from); it never exceeds them, and the space narrowed to plans of
    at most the answer's nodes (`FewestNodes.narrowed`) keeps the answer's mode, group size, stage
    count and activation compression, and is narrower than the whole space in most of them."""
    from tests.conftest import load_reference_cases
    cases = [c for c in load_reference_cases() if c["function"] == "find_optimal_config_for_target"]
    if not cases:
        pytest.skip("reference cases not found")
    checked = narrowed = 0
    for case in cases:
        out = search.answer(case)
        if out.plan is None:
            continue
        ri = case["resolved_inputs"]
        setting, precision = search._setting(case, out.params, True, target_flop=float(ri["target_c_quality"]),
                                             target_kind="c_quality")
        space = search._space(precision, ("flat", "hierarchical", "pp_group"), search.MAX_NODES, ri["compression"])
        bound = _refined(setting, space, setting.target / (1 + search.REACH_MARGIN))
        least, plan = bound.least, out.plan
        assert least <= plan["nodes"], case["id"]
        narrow = bound.narrowed(plan["nodes"])
        assert plan["mode"] in narrow.modes, case["id"]
        if plan["mode"] == "hierarchical":
            assert plan["group_size"] in narrow.group_sizes, case["id"]
        if plan["mode"] == "pp_group":
            assert plan["stages"] <= narrow.max_stages, case["id"]
            assert plan["activation_compression"] in narrow.activation_compression, case["id"]
        narrowed += narrow != space
        if out.plan["mode"] in ("flat", "pp_group"):
            assert least >= 0.99 * out.plan["nodes"], case["id"]
            checked += 1
    assert checked >= 5 and narrowed >= 5


@pytest.mark.parametrize("seed", range(4))
def test_fewest_first_answers_as_each_size_alone(seed, monkeypatch):
    """find_optimal_config_for_target with a random target: the sizes ordered and skipped by their
    lower bounds on the nodes (`search._fewest_first`, with its trial cap on the first size's nodes)
    give the answer (cost, size and plan) of every size solved alone."""
    from tests.conftest import load_reference_cases
    from tests.test_reference_search_fast import _alone
    cases = [c for c in load_reference_cases() if c["function"] == "find_optimal_config_for_target"]
    if not cases:
        pytest.skip("reference cases not found")
    rng = np.random.default_rng(400 + seed)
    case = copy.deepcopy(cases[int(rng.integers(len(cases)))])
    ri = case["resolved_inputs"]
    ri["target_c_quality"] = float(ri["target_c_quality"] * 10 ** rng.uniform(-1.5, 1))
    ri["bw_up_bps"] = ri["bw_down_bps"] = float(rng.choice((10e6, 100e6, 1e9)))
    used = []
    real = search._fewest_first
    monkeypatch.setattr(search, "_fewest_first", lambda settings: used.append(1) or real(settings))
    fast = search.answer(case)
    assert used, "_fewest_first was not used"
    _alone(monkeypatch)
    alone = search.answer(case)
    assert (fast.dtplan, fast.params, fast.plan) == (alone.dtplan, alone.params, alone.plan)


@pytest.mark.parametrize("seed", range(4))
def test_node_floor_of_each_size_is_at_most_its_fewest_nodes(seed, monkeypatch):
    """`search._fewest_first` searches each size with N >= floor(its bound) (the space's
    `min_nodes`): on random targets and links the floor given to a size is above 1 and never
    exceeds the fewest nodes of that size's plans reaching the target (solved alone, floor 1)."""
    from dataclasses import replace
    from tests.conftest import load_reference_cases
    from planner.objectives import MIN_COST
    cases = [c for c in load_reference_cases()
             if c["function"] == "find_optimal_config_for_target" and "return" not in c["outputs"]]
    if not cases:
        pytest.skip("reference cases not found")
    rng = np.random.default_rng(500 + seed)
    case = copy.deepcopy(cases[int(rng.integers(len(cases)))])
    ri = case["resolved_inputs"]
    ri["target_c_quality"] = float(ri["target_c_quality"] * 10 ** rng.uniform(0, 0.5))
    ri["bw_up_bps"] = ri["bw_down_bps"] = float(rng.choice((100e6, 1e9)))
    searched = []
    real = search._solve_below
    monkeypatch.setattr(search, "_solve_below",
                        lambda s, space, objective, found: searched.append((s, space)) or real(s, space, objective, found))
    search.answer(case)
    monkeypatch.undo()
    assert searched, "no size was searched"
    for s, space in searched:
        assert space.min_nodes > 1
        found, _, _ = optimise(s, replace(space, min_nodes=1, max_nodes=search.MAX_NODES), MIN_COST)
        if found is not None:
            assert space.min_nodes <= int(found[0].nodes[0]), (s.params, space.min_nodes)


def _row_of(rows, mode: str, b, j: int) -> np.ndarray:
    """Whether each row of `rows` is that of plan j of batch b (flat; hierarchical k; pp_group S and Ca)."""
    if mode == "hierarchical":
        return rows.k == b.group_size[j]
    if mode == "pp_group":
        return (rows.k == 0) & (rows.unit == b.stages[j]) & (rows.ca == b.activation_compression[j])
    return (rows.k == 0) & (rows.unit == 1)


@pytest.mark.parametrize("seed", range(320, 328))
def test_rows_left_out_hold_no_plan_reaching_the_cut(seed):
    """`size_bound._rows_reaching` keeps the row of every feasible random plan (N >= 2) at a cut
    just below that plan's C_quality, and of the branch and bound's optimum over one row (and the
    rows of fewer stages, pp_group) at a cut just below it."""
    from dataclasses import replace
    setting, space, rng = _instance(seed, ("flat", "pp_group") if seed % 2 else ("flat", "hierarchical", "pp_group"))
    rows = size_bound._rows(setting, space)
    checked = 0
    for b, out in _random_plans(setting, space, rng, count=150):
        ok = ~np.any([out[f"violates:{name}"] for name in search.LIMITS], axis=0) & (b.nodes >= 2)
        for j in np.flatnonzero(ok)[:40]:
            kept, _ = size_bound._rows_reaching(setting, space, rows, float(out["c_quality"][j]) / CUT)
            assert kept is not None and _row_of(kept, b.mode, b, j).any(), (b.mode, j)
            checked += 1
    for j in rng.choice(rows.step.size, min(6, rows.step.size), replace=False):    # a row's own optimum
        if rows.k[j] > 0:
            one = replace(space, modes=("hierarchical",), group_sizes=(int(rows.k[j]),))
        elif rows.unit[j] > 1:
            one = replace(space, modes=("pp_group",), max_stages=int(rows.unit[j]),
                          activation_compression=(float(rows.ca[j]),))
        else:
            one = replace(space, modes=("flat",))
        found, _, _ = optimise(setting, one, MAX_COMPUTE)
        if found is None or int(found[0].nodes[0]) < 2:
            continue
        best = found[0]
        kept, _ = size_bound._rows_reaching(setting, space, rows, found[1] / CUT)
        assert kept is not None and _row_of(kept, best.mode, best, 0).any(), (best.mode, j)
        checked += 1
    assert checked >= 20


@pytest.mark.parametrize("seed", range(330, 334))
def test_narrowed_space_holds_the_fewest_node_plan(seed):
    """`FewestNodes.narrowed` (the space `search._fewest_first` searches), whole and for plans of at
    most the fewest nodes N_f, keeps the mode, group size, stage count and activation compression
    of the branch and bound's fewest-node plan reaching a random target, and min_cost over it
    (capped at N_f) answers as over the whole space."""
    from dataclasses import replace
    from planner.objectives import MIN_COST
    setting, space, rng = _instance(seed, ("flat", "hierarchical", "pp_group"))
    found, _, _ = optimise(setting, space, MAX_COMPUTE)
    target = found[1] * float(rng.uniform(0.3, 0.95))
    at = setting.replace(target_flop=target)
    fewest, _, _ = optimise(at, space, MIN_COST)
    plan, n = fewest[0], int(fewest[0].nodes[0])
    bound = _refined(at, space, target / CUT)
    for narrow in (bound.narrowed(), replace(bound.narrowed(n), max_nodes=n)):
        assert plan.mode in narrow.modes
        if plan.mode == "hierarchical":
            assert int(plan.group_size[0]) in narrow.group_sizes
        if plan.mode == "pp_group":
            assert int(plan.stages[0]) <= narrow.max_stages
            assert float(plan.activation_compression[0]) in narrow.activation_compression
        again, _, _ = optimise(at, narrow, MIN_COST)
        assert (search._plan_dict(again[0], at), again[1]) == (search._plan_dict(plan, at), fewest[1])



@pytest.mark.parametrize("seed", range(340, 346))
def test_reaching_keeps_the_boxes_the_bound_keeps(seed, monkeypatch):
    """`size_bound._reaching` (what a `FewestNodes` round keeps, mostly without the Newton solve of
    C') gives the same booleans as ~(`_bound` < cut), on the boxes of a first round and of a split,
    with cuts at, just above and just below box bounds (relative steps of 1e-15 to 1e-6), and on
    synthetic boxes near the cut (tokens a relative 1e-13 apart), with NaN, inf and zero terms and
    boxes where g 1e10 alone reaches the cut (`run.quality_compute`'s floor of C')."""
    setting, space, rng = _instance(seed, ("flat", "hierarchical", "pp_group"))
    rows = size_bound._rows(setting, space)
    boxes = size_bound._first_boxes(setting, space, rows)
    i, x1, x2, h1, h2 = boxes
    xs, hs = size_bound._halves(x1, x2, np.ones(i.shape, bool)), size_bound._halves(h1, h2, ~rows.hierarchical[i])
    split = tuple(np.concatenate(z) for z in zip(*[(i, xa, xb, ha, hb) for xa, xb in xs for ha, hb in hs]))
    real = (split[1] <= split[2]) & (split[3] <= split[4])
    boxes = tuple(np.concatenate((a, b[real])) for a, b in zip(boxes, split))

    def same(cut):
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            want = ~(size_bound._bound(setting, space, rows, boxes, cut) < cut)
            got = size_bound._reaching(setting, space, rows, boxes, cut)
        assert got.dtype == bool and (got == want).all(), cut
        return want

    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        values = size_bound._bound(setting, space, rows, boxes)
    finite = values[np.isfinite(values) & (values > 0)]
    kept = []
    for v in rng.choice(finite, 6):
        for rel in (0.0, 1e-15, -1e-15, 1e-13, -1e-13, 1e-11, -1e-11, 1e-9, -1e-9, 1e-6, -1e-6):
            kept.append(same(float(v) * (1 + rel)).sum())
    assert any(0 < k < values.size for k in kept)

    # synthetic boxes: tokens T0 (1 + j 1e-13), the cut at the bound of T0, g and mu at random
    n = 801
    t0 = float(np.exp(rng.uniform(np.log(1e6), np.log(1e14))))
    tokens = t0 * (1 + 1e-13 * np.arange(-(n // 2), n // 2 + 1))
    g = np.full(n, float(rng.uniform(0.2, 1.0)))
    mu = np.full(n, float(rng.uniform(1.0, 1.3)))
    tokens[:6], g[6:9], mu[9:11] = [np.nan, np.inf, 0.0, 1e2, 1e3, 1e4], [np.nan, 0.0, 1e-300], [np.nan, np.inf]
    terms = (tokens, g, mu)
    cut = float(run.quality_compute(setting, tokens[n // 2:n // 2 + 1], g[:1], mu[:1], True)[0])
    monkeypatch.setattr(size_bound, "_terms", lambda *args: terms)
    for c in (cut, cut * (1 + 1e-15), cut * (1 - 1e-15), 1e10 * g[20] * 0.999, 1e10 * g[20] * 1.001):
        same(c)
    assert 0 < same(cut).sum() < n
