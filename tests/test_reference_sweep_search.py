"""sweep_model_sizes by the search built for it (planner/reference/sweep_search.py) answers exactly as
the general one (`max_compute` of every size by the branch and bound, `best_of_sizes`): the same
size, plan and value bit for bit, on the shipped cases and on perturbed ones (node count, links,
node memory and speed, straggler rule, scenario, compression, both profiles the search cases use);
its parts against brute force; and a dropped tie-break is caught."""

import copy
import math

import numpy as np
import pytest

from planner.cost import chinchilla, quality, timing
from planner.cost.score import window_compute
from planner.cost.setting import PlanBatch
from planner.reference import conformance, search, sweep_search

PROFILES = ("current", "v1_48xA100")
STRAGGLERS = ("relay", "synchronous", "threshold", "backup", "none")


def _sweep_cases() -> list[dict]:
    from tests.conftest import load_reference_cases
    cases = [c for c in load_reference_cases() if c["function"] == "sweep_model_sizes"]
    if not cases:
        pytest.skip("reference cases not found")
    return cases


def _general(case, monkeypatch) -> search.SearchOutcome:
    """The answer without the search built for the question (the branch and bound per size)."""
    with monkeypatch.context() as m:
        m.setattr(sweep_search, "best_size", lambda *args: None)
        return search.answer(case)


def _answered(case) -> tuple[search.SearchOutcome, bool]:
    """(the answer, whether `sweep_search` gave it rather than the general search)."""
    calls = []
    original = sweep_search.best_size

    def spy(*args):
        calls.append(original(*args))
        return calls[-1]
    sweep_search.best_size = spy
    try:
        return search.answer(case), any(c is not None for c in calls)
    finally:
        sweep_search.best_size = original


def _same(fast: search.SearchOutcome, plain: search.SearchOutcome) -> bool:
    return (fast.dtplan, fast.params, fast.plan, fast.status) == (plain.dtplan, plain.params, plain.plan, plain.status)


def _perturbed(seed: int) -> dict:
    """A shipped sweep case with a random node count, WAN links, node memory and speed, straggler
    rule, scenario, compression and profile."""
    rng = np.random.default_rng(seed)
    cases = _sweep_cases()
    case = copy.deepcopy(cases[int(rng.integers(len(cases)))])
    ri = case["resolved_inputs"]
    case["profile"] = PROFILES[seed % 2]
    ri["n_nodes"] = case["kwargs"]["n_nodes"] = int(rng.integers(2, 5000))
    up = float(rng.choice((10e6, 100e6, 1e9, 10e9)))
    ri["bw_up_bps"], ri["bw_down_bps"] = up, up * float(rng.choice((0.5, 1.0, 2.0)))
    ri["latency_s"] = float(rng.uniform(0.01, 0.3))
    ri["node"] = dict(ri["node"], vram_gb=ri["node"]["vram_gb"] * float(rng.uniform(0.3, 2.0)),
                      pflops=ri["node"]["pflops"] * float(rng.uniform(0.5, 2.0)))
    ri["straggler_mode"] = str(rng.choice(STRAGGLERS))
    ri["scenario"] = str(rng.choice(("optimistic", "expected", "conservative")))
    ri["compression"] = float(rng.choice((16, 100, 150, 500)))
    return case


def test_shipped_sweeps_answer_as_the_general_search(monkeypatch):
    """Every shipped sweep is answered by the search built for it, with the general search's size,
    plan and value (== on the floats)."""
    for case in _sweep_cases():
        fast, used = _answered(case)
        assert used, f"{case['id']}: the general search answered"
        plain = _general(case, monkeypatch)
        assert _same(fast, plain), (case["id"], fast.plan, plain.plan, fast.dtplan, plain.dtplan)
        assert fast.status == "passed"


@pytest.mark.parametrize("seed", range(12))
def test_perturbed_sweeps_answer_as_the_general_search(seed, monkeypatch):
    """Perturbed cases (both profiles; the v1 profile's linear replica penalty is outside the
    search's conditions and goes to the general search): the same answer either way."""
    case = _perturbed(seed)
    fast, used = _answered(case)
    plain = _general(case, monkeypatch)
    assert _same(fast, plain), (seed, used, fast.plan, plain.plan, fast.dtplan, plain.dtplan)
    if case["profile"] == "v1_48xA100":
        assert not used


def test_most_perturbed_current_profile_sweeps_are_answered_by_it():
    """The search is not a fallback in disguise: under the current profile it answers most
    perturbed cases itself (near ties and failed conditions go to the general search)."""
    used = [_answered(_perturbed(seed))[1] for seed in range(0, 24, 2)]
    assert sum(used) >= 8, used


def test_a_dropped_tie_break_is_caught(monkeypatch):
    """Mutation: a pipeline answer on all N_max nodes instead of K S (the same replicas where
    K = K_max, more nodes: the tie order's first key) differs from the general search on some
    case; the comparisons above would fail."""
    original = sweep_search._answer

    def more_nodes(rows, kept, one, best):
        found = original(rows, kept, one, best)
        if found is None or found[1].mode != "pp_group":
            return found
        j, b, r = found
        return j, PlanBatch.of("pp_group", b.precision, nodes=rows.space.max_nodes, inner_steps=b.inner_steps,
                               compression=b.compression, streaming=b.streaming, stages=b.stages,
                               micro_batches=b.micro_batches, activation_compression=b.activation_compression), r
    cases = [_perturbed(seed) for seed in range(0, 24, 2)]
    plain = [_general(case, monkeypatch) for case in cases]
    monkeypatch.setattr(sweep_search, "_answer", more_nodes)
    mutated = [search.answer(case) for case in cases]
    assert any(not _same(f, p) for f, p in zip(mutated, plain))


def _rows(seed: int):
    """The rows of a perturbed current-profile case; odd seeds recompute every layer (`full`)."""
    case = _perturbed(2 * seed)
    ri = case["resolved_inputs"]
    largest = search._largest_on_one_node_b(case)
    sizes = [f * largest for f in search.FLAT_FRACTIONS] + [x * largest for x in search.SWEEP_MULTIPLES]
    base, precision = search._setting(case, sizes[0] * 1e9, target_kind="c_quality")
    if seed % 2:
        base = base.replace(assumptions=base.assumptions.replace(activation_recompute="full"))
    space = search._space(precision, ("flat", "pp_group"), int(ri["n_nodes"]), ri["compression"])
    return sweep_search._Rows(base, space, np.asarray(sizes) * 1e9), base, space


@pytest.mark.parametrize("seed", range(4))
def test_micro_batches_are_the_least_step_of_every_m(seed):
    """M* of each pipeline row is the argmin over every M = 1..M_max of GPipe's step (ties to the
    smaller M), as the space's listing takes it; the first round's step is at most its step."""
    rows, base, space = _rows(seed)
    pp = np.flatnonzero(~rows.flat)
    low = rows.t[pp].copy()
    rows.make_exact(pp)
    a, precision = base.assumptions, space.precisions[0]
    p, s, ca = rows.p[pp], rows.stages[pp].astype(float), rows.ca[pp]
    t_comp = timing.compute_time_s(p, base.local_batch_tokens, base.peak_flops[precision], a.mfu_for(precision)) \
        * (4.0 / 3.0 if a.activation_recompute == "full" else 1.0)
    act = timing.activation_bits(base.local_batch_tokens, timing.hidden_size(p, a.hidden_size_coefficient),
                                 a.activation_bytes(precision), ca)
    from planner.cost.straggler import straggler_factor
    m = np.arange(1, space.max_micro_batches + 1, dtype=float)[None, :]
    step = timing.pipeline_parts_s(t_comp[:, None], s[:, None], m, act[:, None], base.pipeline_bps,
                                   base.pipeline_rtt_s, straggler_factor(s, a)[:, None])[0]
    assert rows.ok
    assert np.array_equal(rows.m[pp], np.argmin(step, axis=1) + 1)
    assert np.array_equal(rows.t[pp], step.min(axis=1))
    assert (low <= step.min(axis=1)).all()          # the bound the first round used


@pytest.mark.parametrize("seed", range(4))
def test_plan_values_are_the_evaluators(seed):
    """A reduced plan's value (`_Rows.bound` at a point) is the evaluator's C_quality to rounding."""
    rows, base, space = _rows(seed)
    rows.make_exact(np.arange(rows.j.size))
    rng = np.random.default_rng(seed)
    for r in rng.choice(rows.j.size, 25):
        k = float(rng.integers(2, rows.k_max[r] + 1))
        h = float(rng.integers(1, rows.h_hi[r] + 1))
        got = float(rows.bound(np.array([r]), np.array([k]), np.array([k]), np.array([h]), np.array([h]), 0.0)[0])
        s = base.replace(params=rows.p[r], active_params=rows.p[r])
        if rows.flat[r]:
            b = PlanBatch.of("flat", space.precisions[0], nodes=int(k), inner_steps=int(h),
                             compression=space.compression[0])
        else:
            b = PlanBatch.of("pp_group", space.precisions[0], nodes=int(k) * int(rows.stages[r]), inner_steps=int(h),
                             compression=space.compression[0], stages=int(rows.stages[r]),
                             micro_batches=int(rows.m[r]), activation_compression=float(rows.ca[r]))
        want = float(window_compute(s, b, "c_quality")["c_quality"][0])
        assert got == pytest.approx(want, rel=1e-11)


@pytest.mark.parametrize("seed", range(4))
def test_lemma_k_holds_where_it_is_claimed(seed):
    """Where `monotone_in_k` claims C_quality does not fall with K over [2, K_max] at H, the values
    at every K of a grid (and K_max) do not fall, to rounding."""
    rows, base, space = _rows(seed)
    rows.make_exact(np.arange(rows.j.size))
    rng = np.random.default_rng(50 + seed)
    claimed = 0
    for r in rng.choice(rows.j.size, 40):
        h = float(rng.integers(1, rows.h_hi[r] + 1))
        one = np.array([r])
        if not rows.monotone_in_k(one, np.array([2.0]), np.array([float(rows.k_max[r])]), np.array([h]))[0]:
            continue
        claimed += 1
        k = np.unique(np.round(np.geomspace(2, rows.k_max[r], 60)))
        i = np.full(k.size, r)
        value = rows.bound(i, k, k, np.full(k.size, h), np.full(k.size, h), 0.0)
        assert (np.diff(value) >= -1e-12 * value[1:]).all()
    assert claimed > 0


def test_full_recomputation_answers_as_the_general_search(monkeypatch):
    """Every layer recomputed (`activation_recompute` full: a step's compute times 4/3, flat and
    pipeline alike): the same answer either way, given by this search."""
    original = search._setting

    def full(*args, **kwargs):
        s, precision = original(*args, **kwargs)
        return s.replace(assumptions=s.assumptions.replace(activation_recompute="full")), precision
    monkeypatch.setattr(search, "_setting", full)
    for seed in (0, 2, 4):
        case = _perturbed(seed)
        fast, used = _answered(case)
        plain = _general(case, monkeypatch)
        assert used and _same(fast, plain), (seed, used, fast.plan, plain.plan)


def test_a_sure_tie_is_broken_as_the_branch_and_bound_breaks_it(monkeypatch):
    """Perturbed case 10: three activation compressions of the same quality at the same (S, K, H),
    the sync setting the pace, so the same C_quality to the last bits: answered here by the tie
    order (the smallest Ca), as the branch and bound answers; with the order reversed (a dropped
    tie-break) it would not be."""
    case = _perturbed(10)
    near = []
    original = sweep_search._answer

    def record(rows, kept, one, best):
        near.append(sum(v >= best * (1 - sweep_search.MARGIN) for v in {(r, k, h): v for r, k, h, v in kept}.values()))
        return original(rows, kept, one, best)
    monkeypatch.setattr(sweep_search, "_answer", record)
    fast, used = _answered(case)
    plain = _general(case, monkeypatch)
    assert used and near and near[0] >= 2
    assert _same(fast, plain)
    assert fast.plan["activation_compression"] == 1.0


def test_the_answers_limits_are_the_evaluators():
    """`search._limits` (the sweep answer's check from the throughput alone) finds the same broken
    limits as `search._rescore` (the whole `score`) on random plans of every mode, some breaking
    the node memory, the node cap, the budget or the shape; with the memory cap left out (a
    mutation) it would not."""
    rng = np.random.default_rng(7)
    case = _perturbed(2)
    ri = case["resolved_inputs"]
    largest = search._largest_on_one_node_b(case)
    base, precision = search._setting(case, largest * 1e9, target_kind="c_quality")
    base = base.replace(max_nodes=3000, budget_usd=2000 * base.node_price_usd)
    seen = set()

    def both(limits):
        for _ in range(120):
            s = base.replace(params=largest * 1e9 * float(rng.choice((0.5, 1.0, 3.0, 8.0))))
            s = s.replace(active_params=s.params)
            mode = str(rng.choice(("flat", "hierarchical", "pp_group")))
            b = PlanBatch.of(mode, precision, nodes=int(rng.integers(1, 4000)), inner_steps=int(rng.integers(1, 200)),
                             compression=float(ri["compression"]), stages=int(rng.integers(1, 12)),
                             group_size=int(rng.integers(1, 16)), regional_rounds=int(rng.integers(1, 8)),
                             micro_batches=int(rng.integers(1, 64)),
                             activation_compression=float(rng.choice((1.0, 2.0, 4.0, 10.0))))
            want = search._rescore(s, b, None, None)[1]
            seen.update(want)
            yield want, limits(s, b)
    assert all(want == got for want, got in both(search._limits))
    assert seen == set(search.LIMITS), seen
    original = search._limits

    def no_memory(s, b):
        return [x for x in original(s, b) if x != "memory-cap"]
    assert not all(want == got for want, got in both(no_memory))


@pytest.mark.parametrize("seed", range(4))
def test_the_answers_throughput_is_modes_throughput(seed):
    """`sweep_search._throughput` (the answer's figures; a pp_group plan's without the step's parts beyond its
    compute) gives every field `modes.throughput` gives but `modes.PIPELINE_PARTS_LEFT`, bit for bit, and so
    the same window value and limits, on random flat and pp_group plans of perturbed cases of both profiles
    and recomputation rules. Mutations caught: a part left out that `PIPELINE_PARTS_LEFT` does not name,
    the lean step's compute taken as c for M c."""
    from planner.cost import modes
    from planner.cost.score import window_compute
    rows, base, space = _rows(seed)
    rng = np.random.default_rng(seed)
    precision, checked = space.precisions[0], 0
    for _ in range(60):
        s = base.replace(params=float(rng.choice(rows.params)))
        s = s.replace(active_params=s.params)
        mode = str(rng.choice(("flat", "pp_group")))
        b = PlanBatch.of(mode, precision, nodes=int(rng.integers(1, 5000)), inner_steps=int(rng.integers(1, 300)),
                         compression=float(space.compression[0]),
                         stages=int(rng.integers(2, 40)) if mode != "flat" else 1,
                         micro_batches=int(rng.integers(1, 65)), streaming=True,
                         activation_compression=float(rng.choice((1.0, 2.0, 4.0, 10.0))) if mode != "flat" else 1.0)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            want, got = modes.throughput(s, b), sweep_search._throughput(s, b)
            left = modes.PIPELINE_PARTS_LEFT if mode == "pp_group" else ()
            assert set(got) == set(want) - set(left)
            for k in got:
                assert got[k].dtype == want[k].dtype and got[k].tobytes() == want[k].tobytes(), k
            value = window_compute(s, b, "c_quality", t=got)["c_quality"]
            assert value.tobytes() == window_compute(s, b, "c_quality", t=want)["c_quality"].tobytes()
            assert search._limits(s, b, got) == search._limits(s, b, want)
        checked += mode == "pp_group"
    assert checked >= 15


def _losses(seed: int, draw: int, least: float, count: int):
    """(assumptions of `_rows(seed)`, excess losses, losses, the cost model's C' of each): random excess
    losses from `least` to 50 (in, below and beyond the table), 0, a negative one, the table's ends,
    then NaN and inf."""
    a = _rows(seed)[1].assumptions
    rng = np.random.default_rng(draw)
    excess = np.concatenate([np.exp(rng.uniform(np.log(least), np.log(50.0), count)), [0.0, -0.1, 1e-3, 10.0]])
    loss = np.append(a.chinchilla_e + excess, [np.nan, np.inf])
    return a, excess, loss, chinchilla.equivalent_optimal_compute(loss, a)


def test_the_table_bounds_c_eq_from_above(monkeypatch):
    """`_c_eq_above` is at least the Newton solve's C' on random losses (in and beyond the table,
    below it, at the floor E, NaN) and within 1.2% of it inside the table's range; a table whose
    values are taken one loss too far (a mutation) bounds some loss from below."""
    a, excess, loss, exact = _losses(0, 3, 1e-4, 4000)
    up = sweep_search._c_eq_above(loss, a)
    assert np.all((up >= exact) | np.isnan(loss)), loss[~(up >= exact)]
    inside = (excess >= sweep_search.TABLE_EXCESS[0]) & (excess <= sweep_search.TABLE_EXCESS[1])
    assert np.all(up[:excess.size][inside] <= exact[:excess.size][inside] * 1.012)
    key = sweep_search._table_key(a)
    losses, values, *grid = sweep_search._TABLES[key]
    assert losses[0] <= a.chinchilla_e + 1e-3 and losses[-1] >= a.chinchilla_e + 10.0     # covers TABLE_EXCESS
    monkeypatch.setitem(sweep_search._TABLES, key, (losses, np.append(values[1:], 0.0), *grid))
    assert not np.all(sweep_search._c_eq_above(loss, a)[:excess.size] >= exact[:excess.size])


def test_c_eq_from_the_table_is_the_newton_solve(monkeypatch):
    """`_c_eq` (Newton started from the table) gives the cost model's C' to 1e-13 on random losses
    in, below and beyond the table, at the floor E, infinite and NaN (the same special values), a
    repeated call the same bits; with no step from the table's start (a mutation), it is off by more."""
    a, _, loss, want = _losses(1, 8, 1e-5, 3000)
    table = sweep_search._c_eq_table(a)
    got = sweep_search._c_eq(loss, a, table)
    finite = np.isfinite(want) & (want > 0)
    assert np.array_equal(np.isnan(got), np.isnan(want)) and np.array_equal(got[~finite], want[~finite])
    assert np.allclose(got[finite], want[finite], rtol=1e-13, atol=0.0)
    small = loss[:40]
    assert sweep_search._c_eq(small, a, table).tobytes() == sweep_search._c_eq(small, a, table).tobytes()
    monkeypatch.setattr(sweep_search, "NEWTON_ITERATIONS", 0)
    monkeypatch.setattr(sweep_search, "_SOLVED", {})
    early = sweep_search._c_eq(loss, a, table)
    assert not np.allclose(early[finite], want[finite], rtol=1e-13, atol=0.0)


def _newton_as_written(loss, a, table):
    """`_c_eq`'s Newton iteration from the table restated with every constant worked out on the spot
    from the assumptions (as `chinchilla._equivalent_optimal_compute` builds them), for losses inside
    the table: what `_newton_constants` must not change."""
    e, a_coef, a_exp, b, b_exp, r = (a.chinchilla_e, a.chinchilla_a, a.chinchilla_alpha, a.chinchilla_b,
                                     a.chinchilla_beta, chinchilla.tokens_per_param(a))
    losses, _, u_grid, log_excess = table[:4]
    at = np.searchsorted(losses, loss, side="right")
    k = loss - e
    x0, u0 = log_excess[at - 1], u_grid[at - 1]
    u = u0 + (np.log(k) - x0) / (log_excess[at] - x0) * (u_grid[at] - u0)
    exps = np.array([[a_exp], [b_exp]])
    coefs = np.array([[a_coef], [b * r ** (-b_exp)]])
    for _ in range(sweep_search.NEWTON_ITERATIONS):
        terms = coefs * np.exp(-exps * u)
        slopes = exps * terms
        step = (terms[0] + terms[1] - k) / (slopes[0] + slopes[1])
        u = u + step
        if (step * step * max(a_exp, b_exp) <= 1e-15 * np.maximum(1.0, np.abs(u))).all():
            break
    n_opt = np.exp(u)
    return 6.0 * r * n_opt * n_opt


@pytest.mark.parametrize("name", sorted(set(conformance.PROFILES.values())))
def test_c_eq_constants_worked_once_give_the_same_bits(monkeypatch, name):
    """`_c_eq` with the table's `_newton_constants` gives, bit for bit, the iteration whose constants
    are worked out on every call, on random arrays of 1 to 64 losses inside the table (the sweeps'
    sizes) under each profile; a coefficient off by one unit in the last place (a mutation) does not."""
    a = conformance.profile(name)
    table = sweep_search._c_eq_table(a)
    rng = np.random.default_rng(27)
    arrays = [a.chinchilla_e + 10.0 ** rng.uniform(-2.9, 0.9, rng.integers(1, 65)) for _ in range(200)]
    monkeypatch.setattr(sweep_search, "_SOLVED", {})
    for loss in arrays:
        assert sweep_search._c_eq(loss, a, table).tobytes() == _newton_as_written(loss, a, table).tobytes()
    e, r, exps, neg_exps, coefs, curve = table[4]
    off = (e, r, exps, neg_exps, np.array([[coefs[0, 0]], [np.nextafter(coefs[1, 0], np.inf)]]), curve)
    monkeypatch.setattr(sweep_search, "_SOLVED", {})
    changed = (*table[:4], off)
    assert any(sweep_search._c_eq(loss, a, changed).tobytes() != _newton_as_written(loss, a, table).tobytes()
               for loss in arrays)


def _boxes(rows, rng, count: int):
    """Random small boxes [K1, K2] x [H1, H2] of random rows, sync- and compute-paced alike."""
    for r in rng.choice(rows.j.size, count):
        k1 = float(rng.integers(2, rows.k_max[r] + 1))
        k2 = float(min(rows.k_max[r], k1 + rng.integers(0, 30)))
        h1 = float(rng.integers(1, rows.h_hi[r] + 1))
        h2 = float(min(rows.h_hi[r], h1 + rng.integers(0, 80)))
        yield r, k1, k2, h1, h2


def _most_in_box(rows, r, k1, k2, h1, h2) -> float:
    """Brute force: the most C_quality of the plans of row r in the box (every K and H)."""
    k, h = (x.ravel() for x in np.meshgrid(np.arange(k1, k2 + 1), np.arange(h1, h2 + 1)))
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        return float(np.nanmax(rows.bound(np.full(k.size, r), k, k, h, h, 0.0)))


@pytest.mark.parametrize("seed", range(4))
def test_box_bound_holds_over_every_plan_of_the_box(seed, monkeypatch):
    """`_Rows.bound` of a box (the loss multiplier and loss at the real h of least product,
    `least_loss_h`) is at least every plan's C_quality in it, by brute force over every (K, H) of
    random boxes; and `least_loss_h` finds that least product: no integer H of the box has a smaller
    one. With the product taken at H2 instead (a mutation: K1^beta(H2) L(T(K2, H2)), not the least
    where the loss multiplier sets the pace) the bound falls below some box's best plan."""
    rows, base, space = _rows(seed)
    rows.make_exact(np.arange(rows.j.size))
    a = base.assumptions
    boxes = list(_boxes(rows, np.random.default_rng(90 + seed), 60))
    for r, k1, k2, h1, h2 in boxes:
        one = [np.array([x]) for x in (r, k1, k2, h1, h2)]
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
            upper = float(rows.bound(*one, 0.0)[0])
        assert upper >= _most_in_box(rows, r, k1, k2, h1, h2) * (1 - 1e-12), (r, k1, k2, h1, h2)
        # the least product over the box's H, brute force, against the one at the h found
        i, t, sync2 = one[0], rows.t[one[0]], rows.sync(one[0], one[2])
        hm = rows.least_loss_h(*one, t, sync2)
        h = np.arange(h1, h2 + 1)

        def product(x):
            tokens = rows.wbt * (k2 * x) / np.maximum(x * t, sync2)
            mu = k1 ** (rows.row_beta0[i] * (np.log(x) / rows.log_h_ref))
            return (rows.row_loss0[i] + a.chinchilla_b * tokens ** (-a.chinchilla_beta)) * mu
        assert h1 <= hm[0] <= h2
        assert product(hm)[0] <= product(h).min() * (1 + 1e-13)
    monkeypatch.setattr(sweep_search._Rows, "least_loss_h", lambda self, i, k1, k2, h1, h2, t, sync2: h2)
    broken = []
    for r, k1, k2, h1, h2 in boxes:
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
            upper = float(rows.bound(*[np.array([x]) for x in (r, k1, k2, h1, h2)], 0.0)[0])
        broken.append(upper < _most_in_box(rows, r, k1, k2, h1, h2) * (1 - 1e-12))
    assert any(broken)


def test_least_loss_h_without_sync_time_is_the_box_start():
    """At K1 = 1 and t_sync = 0 the product K1^beta(h) L(T(K2, h)) is the same for every h (tokens
    wbt K2 h / (h t) do not depend on h), and the closed form's h* is inf x 0 = NaN: `least_loss_h`
    returns H1, a finite h of the box, so the box bound stays a number (with np.maximum / np.minimum
    the NaN would pass through)."""
    rows, _base, _space = _rows(0)
    rows.make_exact(np.arange(rows.j.size))
    one = [np.array([x]) for x in (0, 1.0, 4.0, 3.0, 40.0)]
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        hm = rows.least_loss_h(*one, rows.t[one[0]], np.array([0.0]))
    assert hm[0] == 3.0


@pytest.mark.parametrize("boxes", [3, 8, 30])
def test_split_children_cover_each_box_once(boxes):
    """`_split`'s children (pieces of H, single values of H when at most ENUM_BOXES boxes of at most
    ENUM_H values are left) hold every (K, H) of their box exactly once, by brute force; with one
    piece fewer than the widest box's values (a mutation) some child holds more than one H while
    the split claims single values."""
    rng = np.random.default_rng(boxes)
    k1 = rng.integers(2, 40, boxes).astype(float)
    k2 = k1 + rng.integers(0, 12, boxes)
    h1 = rng.integers(1, 300, boxes).astype(float)
    h2 = h1 + rng.integers(0, 64, boxes)
    collapsed = rng.random(boxes) < 0.5
    i = np.arange(boxes)
    ci, a1, a2, b1, b2, _ = sweep_search._split(i, k1, k2, h1, h2, collapsed)
    for r in range(boxes):
        want = sorted((k, h) for k in range(int(k1[r]), int(k2[r]) + 1) for h in range(int(h1[r]), int(h2[r]) + 1))
        got = sorted((k, h) for c in (ci == r).nonzero()[0] for k in range(int(a1[c]), int(a2[c]) + 1)
                     for h in range(int(b1[c]), int(b2[c]) + 1))
        assert got == want
    if boxes <= sweep_search.ENUM_BOXES:
        assert np.all(b1 == b2)                      # single values of H: the next round bounds them at once
        widest = int((h2 - h1).max()) + 1
        s1, s2 = sweep_search._pieces(h1, h2, widest - 1)
        assert not np.all((s1 == s2) | (s1 > s2))
    else:
        assert np.any(b1 < b2)


@pytest.mark.parametrize("boxes", [1, 3, 8, 30])
def test_split_children_in_order(boxes):
    """`_split`'s children, array for array (dtype, bits) and in order, are those listed by loops over the
    K child (low half, high half), the piece of H and the box (np.nonzero's C order, which the search's path
    follows), each kept where its K and H ranges are not empty: the pieces from `_pieces`, the K middle as
    the docstring says. Mutations caught: the piece and box taken as the flat place mod boxes, the box
    as the flat place mod pieces x boxes."""
    rng = np.random.default_rng(100 + boxes)
    for _ in range(20):
        k1 = rng.integers(2, 400, boxes).astype(float)
        k2 = k1 + rng.integers(0, 900, boxes) * (rng.random(boxes) < 0.8)
        h1 = rng.integers(1, 50, boxes).astype(float)
        h2 = h1 + rng.integers(0, 3000 if rng.random() < 0.5 else 40, boxes)
        collapsed = (rng.random(boxes) < 0.4) & (k1 < k2)
        i = rng.permutation(5 * boxes)[:boxes]
        got = sweep_search._split(i, k1, k2, h1, h2, collapsed)
        widest = int((h2 - h1).max()) + 1
        pieces = sweep_search.H_PIECES
        if boxes <= sweep_search.ENUM_BOXES and widest <= sweep_search.ENUM_H:
            pieces = max(pieces, widest)
        s1, s2 = sweep_search._pieces(h1, h2, pieces)
        want = []
        for child in (0, 1):
            for p in range(pieces):
                for r in range(boxes):
                    if collapsed[r]:
                        mid = k2[r] - 1.0 if s1[p, r] == s2[p, r] else k2[r]
                    else:
                        mid = min(max(math.floor(math.sqrt(k1[r] * k2[r])), k1[r]), max(k1[r], k2[r] - 1.0))
                    lo, hi = (k1[r], mid) if child == 0 else (mid + 1.0, k2[r])
                    if lo <= hi and s1[p, r] <= s2[p, r]:
                        want.append((i[r], lo, hi, s1[p, r], s2[p, r], bool(collapsed[r] and lo < hi)))
        columns = [np.array([w[n] for w in want], dtype=x.dtype) for n, x in enumerate(got)]
        for x, y in zip(got, columns):
            assert x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes()


def _table_as_written(a):
    """`_c_eq_table`'s losses, C' above them (+inf first), grid u and ln(L - E) by its formulas as
    expressions, a new array at each step (as before they were worked in place): what `_in_place`,
    the in-place products and the skipped copy where every loss rises must not change."""
    e, a_coef, a_exp, b, b_exp, r = sweep_search._table_key(a)
    b_coef = b * r ** (-b_exp)
    lo, hi = sweep_search.TABLE_EXCESS
    u_lo = max(math.log(a_coef / hi) / a_exp, math.log(b_coef / hi) / b_exp)
    u_hi = max(math.log(2.0 * a_coef / lo) / a_exp, math.log(2.0 * b_coef / lo) / b_exp)
    u = u_hi - sweep_search.TABLE_DU * np.arange(math.ceil((u_hi - u_lo) / sweep_search.TABLE_DU) + 1.0)
    excess = a_coef * np.exp(-a_exp * u) + b_coef * np.exp(-b_exp * u)
    losses = e + excess
    rising = np.concatenate(([True], losses[1:] > losses[:-1]))
    u, excess, losses = u[rising], excess[rising], losses[rising]
    n_opt = np.exp(u)
    return (losses, np.append(np.inf, 6.0 * r * n_opt * n_opt * (1.0 + sweep_search.TABLE_SLACK)), u,
            np.log(excess)), not rising.all()


def _random_chinchilla(a, rng):
    """`a` with random Chinchilla constants (E up to 1e12, where neighbouring losses of the table
    round to the same double and the table drops them)."""
    return a.replace(chinchilla_e=float(rng.choice((1.0, 1.69, 2.5, 1e12))) * float(rng.uniform(0.8, 1.2)),
                     chinchilla_a=float(rng.uniform(50.0, 1500.0)), chinchilla_b=float(rng.uniform(50.0, 3000.0)),
                     chinchilla_alpha=float(rng.uniform(0.15, 0.6)), chinchilla_beta=float(rng.uniform(0.15, 0.6)))


@pytest.mark.parametrize("name", sorted(set(conformance.PROFILES.values())))
def test_the_table_worked_in_place_gives_the_same_bits(monkeypatch, name):
    """`_c_eq_table` gives, array for array and bit for bit (dtype, shape, bytes), the table of its
    formulas written as expressions (`_table_as_written`), under each profile and 60 random sets of
    Chinchilla constants (some with losses that round together); with coef e^(x u) worked as
    e^(x u + ln coef) (a mutation: the same value in real numbers, other roundings) it does not."""
    base = conformance.profile(name)
    rng = np.random.default_rng(31)
    settings = [base] + [_random_chinchilla(base, rng) for _ in range(60)]
    monkeypatch.setattr(sweep_search, "_TABLES", {})
    dropped = 0
    for a in settings:
        got, (want, some_dropped) = sweep_search._c_eq_table(a)[:4], _table_as_written(a)
        for x, y in zip(got, want):
            assert x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes()
        dropped += some_dropped
    assert 1 <= dropped < len(settings)                     # the branch that drops losses which do not rise is exercised

    def other_roundings(coef, exponent, u, out=None):
        return np.exp(exponent * u + math.log(coef))
    monkeypatch.setattr(sweep_search, "_in_place", other_roundings)
    monkeypatch.setattr(sweep_search, "_TABLES", {})
    assert any(sweep_search._c_eq_table(a)[0].tobytes() != _table_as_written(a)[0][0].tobytes() for a in settings)


@pytest.mark.parametrize("seed", range(6))
def test_rows_k_max_and_h_hi_are_the_expressions(seed):
    """`_Rows`' K_max (floor(N_max / S) worked per (S, Ca) and taken per row) and H_hi (with log2 K_max
    taken the same way) are, bit for bit, floor(N_max / S) and min(H_max, ceil(t_sync(K_max) / t) + 1)
    worked on every row as before; the flat rows' K_max is N_max."""
    rows, base, space = _rows(seed)
    pipe = ~rows.flat
    assert rows.k_max_f[pipe].tobytes() == (space.max_nodes // rows.stages[pipe].astype(float)).tobytes()
    assert np.all(rows.k_max_f[rows.flat] == float(space.max_nodes))
    assert rows.k_max.tobytes() == rows.k_max_f.astype(np.int64).tobytes()
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        h_c = np.ceil(rows.row_base * (1.0 + rows.c * np.log2(rows.k_max_f)) / rows.t) + 1.0
    want = np.maximum(np.fmin(h_c, space.max_inner_steps), 1).astype(np.int64)
    assert rows.h_hi.dtype == want.dtype and rows.h_hi.tobytes() == want.tobytes()


class _RowsAsBefore(sweep_search._Rows):
    """`_Rows` with its pipeline rows built as before `sweep_search._grid` (the test's oracle): the (S, Ca)
    grid worked on every sweep, the rows listed by repeat and remainder over every (size, S, Ca) and the
    fitting ones kept by a mask."""

    def _pipes(self, s, space, params, t_comp, beta, top):
        from planner.cost import memory, quality, tensor_parallel
        from planner.cost.straggler import straggler_factor
        a, precision = self.a, space.precisions[0]
        stages = np.arange(2, top + 1, dtype=float)
        ca = np.asarray(space.activation_compression, dtype=float)
        grid_s, grid_ca = np.repeat(stages, ca.size), np.tile(ca, stages.size)
        grid_f, grid_eta = straggler_factor(grid_s, a), quality.activation_quality(grid_ca, grid_s, a)
        j, g = np.repeat(np.arange(params.size), grid_s.size), np.tile(np.arange(grid_s.size), params.size)
        state = memory.state_bytes_per_node(params[j], beta, grid_s[g]) * tensor_parallel.state_factor(
            a, precision, s.accelerators_per_node)
        keep = state <= s.memory_bytes
        j, g, tc = j[keep], g[keep], t_comp[j[keep]]
        S, Ca, f = grid_s[g], grid_ca[g], grid_f[g]
        hidden = timing.hidden_size(params, a.hidden_size_coefficient)[j]
        act = timing.activation_bits(s.local_batch_tokens, hidden, a.activation_bytes(precision), Ca)
        self.pipe = (tc, act, f)
        low = sweep_search._least_step_bound(tc, S, act, f, s.pipeline_bps, s.pipeline_rtt_s, space.max_micro_batches)
        k_max = space.max_nodes // S
        return (j, low, quality.activation_quality(Ca, S, a), k_max, S, Ca, np.log2(k_max))


def _row_fields(rows) -> dict:
    """Every array `_Rows` holds (its pipeline rows' (t_comp, act, f) too), by name."""
    out = {name: x for name, x in vars(rows).items() if isinstance(x, np.ndarray)}
    out.update({f"pipe{n}": x for n, x in enumerate(rows.pipe)})
    out.update({f"lemma{n}": np.asarray(x) for n, x in enumerate(rows.lemma)})
    return out


@pytest.mark.parametrize("seed", range(8))
def test_rows_from_the_cached_grid_are_the_rows_as_before(seed, monkeypatch):
    """`_Rows` built from the (S, Ca) grid of `_grid` (cached per process) and the 2-D fit test holds, array
    for array (dtype, shape, bits), what the per-sweep construction holds, on perturbed cases of both
    recomputation rules, built twice (the second from the cache) and with another straggler rule and
    scenario in between (other keys). Mutations caught: a cache key without the straggler coefficient,
    and one without the activation-quality points."""
    rows, base, space = _rows(seed)
    sizes = rows.params

    def same(a, b):
        fa, fb = _row_fields(a), _row_fields(b)
        return fa.keys() == fb.keys() and all(
            fa[k].dtype == fb[k].dtype and fa[k].shape == fb[k].shape and fa[k].tobytes() == fb[k].tobytes()
            for k in fa)

    a = base.assumptions
    other_c = base.replace(assumptions=a.replace(straggler="relay" if a.straggler == "synchronous" else "synchronous"))
    other_points = base.replace(assumptions=a.replace(scenario="optimistic" if a.scenario != "optimistic"
                                                      else "conservative"))
    for s in (base, other_c, other_points, base):
        assert same(sweep_search._Rows(s, space, sizes), _RowsAsBefore(s, space, sizes))

    original = sweep_search._grid_key
    for drop, other in (((2,), other_c), ((3, 4), other_points)):  # mutations: the key without c, without the points
        with monkeypatch.context() as m:
            sweep_search._grid_of.cache_clear()
            m.setattr(sweep_search, "_grid_key",
                      lambda *args, drop=drop: tuple(x for n, x in enumerate(original(*args)) if n not in drop))
            sweep_search._Rows(base, space, sizes)
            assert not same(sweep_search._Rows(other, space, sizes), _RowsAsBefore(other, space, sizes))
        sweep_search._grid_of.cache_clear()      # the grids cached under the mutated keys


def _batch_bits(b) -> list:
    """(mode, precision, expert_parallel, then per array field its name, dtype, shape and bits) of a batch."""
    from dataclasses import fields
    out = [b.mode, b.precision, b.expert_parallel]
    for f in fields(b):
        x = getattr(b, f.name)
        if isinstance(x, np.ndarray):
            out.append((f.name, x.dtype, x.shape, x.tobytes()))
    return out


@pytest.mark.parametrize("seed", range(4))
def test_one_plan_is_plan_batch_of(seed, monkeypatch):
    """`fewest_nodes.one_plan` (the sweep's answer batch) is `PlanBatch.of` of the same scalars, field for field
    (dtype, shape, bits), on random flat and pp_group plans and with defaults left out; a changed dtype or
    default (mutations) fails it."""
    from planner.reference import fewest_nodes
    rng = np.random.default_rng(seed)
    for _ in range(50):
        given = dict(nodes=int(rng.integers(1, 100_000)), inner_steps=int(rng.integers(1, 10_000)),
                     compression=float(rng.choice((1.0, 16.0, 150.0, 500.0))), streaming=bool(rng.integers(2)))
        mode = "flat"
        if rng.integers(2):
            mode = "pp_group"
            given.update(stages=int(rng.integers(2, 65)), micro_batches=int(rng.integers(1, 65)),
                         activation_compression=float(rng.choice((1.0, 2.0, 4.0, 10.0))))
        for name in [k for k in given if k != "nodes" and rng.integers(3) == 0]:
            del given[name]
        precision = str(rng.choice(("fp16", "fp8")))
        assert _batch_bits(fewest_nodes.one_plan(mode, precision, **given)) == \
            _batch_bits(PlanBatch.of(mode, precision, **given))
    changed = ((("nodes", float),) + fewest_nodes._FIELDS[1:], fewest_nodes._FIELDS[:-1] + (("zero_shards", float),))
    for fields in changed:
        monkeypatch.setattr(fewest_nodes, "_FIELDS", fields)
        assert _batch_bits(fewest_nodes.one_plan("flat", "fp16", nodes=3)) != \
            _batch_bits(PlanBatch.of("flat", "fp16", nodes=3))
    monkeypatch.undo()
    monkeypatch.setattr(fewest_nodes, "_OF_DEFAULTS", dict(fewest_nodes._OF_DEFAULTS, micro_batches=_Default(4)))
    assert _batch_bits(fewest_nodes.one_plan("pp_group", "fp16", nodes=8, stages=2)) != \
        _batch_bits(PlanBatch.of("pp_group", "fp16", nodes=8, stages=2))


class _Default:
    """A signature parameter's stand-in with another default (a mutation of `one_plan`'s defaults)."""

    def __init__(self, default):
        self.default = default


def _first_bound_exact(rows) -> np.ndarray:
    """`_Rows.first_bound` as it was, with the exact C' (Newton) of each size's loss (the test's oracle)."""
    a = rows.a
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        tokens = rows.wbt * rows.k_max_f / rows.t
        most = np.zeros(rows.params.size)
        np.maximum.at(most, rows.j, tokens)
        loss = chinchilla.chinchilla_loss(rows.params, most, a)
        q = np.minimum(6.0 * rows.params * most, np.maximum(chinchilla.equivalent_optimal_compute(loss, a),
                                                             a.chi_search_low_flop))
        out = rows.eta_c * rows.eta_a * np.minimum(6.0 * rows.p * tokens, q[rows.j])
    return np.where(np.isnan(out), np.inf, out)


@pytest.mark.parametrize("seed", range(6))
def test_first_bound_from_the_table_bounds_every_rows_box(seed, monkeypatch):
    """The first bound (C' from the table) is at least the first bound with the exact C' (within 1.2% of it)
    and at least every row's box bound over its whole box [2, K_max] x [1, H_hi] (exact steps); a table
    bound 2% below (a mutation) falls under the exact one somewhere."""
    rows = _rows(seed)[0]
    first, exact = rows.first_bound(), _first_bound_exact(rows)
    assert np.all(first >= exact) and np.all(first <= exact * 1.012)
    i = np.arange(rows.j.size)
    rows.make_exact(i)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        box = rows.bound(i, np.full(i.size, 2.0), rows.k_max_f, np.ones(i.size), rows.h_hi.astype(float), 0.0)
    assert np.all(first >= np.where(np.isnan(box), -np.inf, box))
    original = sweep_search._c_eq_above
    monkeypatch.setattr(sweep_search, "_c_eq_above", lambda *args: original(*args) * 0.98)
    assert not np.all(_rows(seed)[0].first_bound() >= exact)


@pytest.mark.parametrize("seed", range(4))
def test_newton_only_at_one_k_and_h(seed, monkeypatch):
    """`_Rows.bound` solves C' exactly (Newton) only at one (K, H): a box of more than one keeps the table's
    bound, which is at least the bound with the exact C' (the oracle: the table bound replaced by the
    Newton solve) and within 1.2% of it; at a plan both are the same double. Mutation caught: no exact
    solve (a plan then keeps the table's bound, above its value)."""
    rows = _rows(seed)[0]
    rows.make_exact(np.arange(rows.j.size))
    boxes = [np.array(x) for x in zip(*_boxes(rows, np.random.default_rng(300 + seed), 80))]
    r, k1, k2, h1, h2 = boxes
    r = r.astype(np.int64)
    point = (k1 == k2) & (h1 == h2)
    k2[:10], h2[:10] = k1[:10], h1[:10]           # some plans among them
    point[:10] = True

    def bounds():
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
            return rows.bound(r, k1, k2, h1, h2, 0.0)
    got = bounds()
    with monkeypatch.context() as m:
        m.setattr(sweep_search, "_c_eq_above", lambda loss, a, table=None: sweep_search._c_eq(loss, a, table))
        exact = bounds()
    assert np.array_equal(got[point], exact[point])
    assert np.all(got[~point] >= exact[~point]) and np.all(got[~point] <= exact[~point] * 1.012)
    assert np.any(got[~point] > exact[~point])
    monkeypatch.setattr(sweep_search, "_c_eq", lambda loss, a, table: sweep_search._c_eq_above(loss, a, table))
    assert not np.array_equal(bounds()[point], exact[point])      # no exact solve at the plans: caught


class _RowsPerRow(sweep_search._Rows):
    """`_Rows` with the per-row arrays of P's values built in `__init__` and read per row, as before
    `_Rows` kept them per size (the test's oracle): `sync`, `bound`, `least_loss_h`, `first_bound` and
    `monotone_in_k` as they were written then."""

    def __init__(self, *args):
        super().__init__(*args)
        a, params, j = self.a, self.params, self.j
        self.old_p = params[j]
        self.old_base = self.base[j]
        self.old_alpha = quality_alpha(params, a)[j]
        self.old_beta0 = (a.replica_beta_coefficient * params ** a.replica_beta_exponent)[j]
        self.old_loss0 = (a.chinchilla_e + a.chinchilla_a * params ** (-a.chinchilla_alpha))[j]
        self.old_six_p = 6.0 * self.old_p

    def sync(self, i, k):
        return self.old_base[i] * (1.0 + self.c * np.log2(k))

    def bound(self, i, k1, k2, h1, h2, cut):
        a = self.a
        t, sync2 = self.t[i], self.sync(i, k2)
        tokens = self.wbt * (k2 * h2) / np.maximum(h2 * t, sync2)
        g = np.maximum(a.eta_h_floor, (1.0 - self.old_alpha[i] * np.log10(h1)) / self.div) * self.eta_c * self.eta_a[i]
        six_p_t = self.old_six_p[i] * tokens
        out = g * six_p_t
        need = (~(out < cut)).nonzero()[0]
        if need.size:
            if need.size < i.size:
                i, six_p_t, t, sync2, k1, k2, h1, h2 = (x[need] for x in (i, six_p_t, t, sync2, k1, k2, h1, h2))
            hm = self.least_loss_h(i, k1, k2, h1, h2, t, sync2)
            tokens = self.wbt * (k2 * hm) / np.maximum(hm * t, sync2)
            mu = k1 ** (self.old_beta0[i] * (np.log(hm) / self.log_h_ref))
            loss = (self.old_loss0[i] + a.chinchilla_b * tokens ** (-a.chinchilla_beta)) * mu
            out[need] = g[need] * np.minimum(six_p_t, np.maximum(sweep_search._c_eq_above(loss, a, self.table),
                                                                 a.chi_search_low_flop))
            exact = (~(out[need] < cut) & (k1 == k2) & (h1 == h2)).nonzero()[0]
            if exact.size:
                c_eq = sweep_search._c_eq(loss[exact], a, self.table)
                need = need[exact]
                out[need] = g[need] * np.minimum(six_p_t[exact], np.maximum(c_eq, a.chi_search_low_flop))
        return out

    def least_loss_h(self, i, k1, k2, h1, h2, t, sync2):
        gamma = self.old_beta0[i] * (np.log(k1) / self.log_h_ref)
        b = self.a.chinchilla_beta
        star = ((b - gamma) * self.a.chinchilla_b / (gamma * self.old_loss0[i])) ** (1.0 / b) * sync2 / (self.wbt * k2)
        star = np.where(gamma < b, star, h1)
        return np.fmin(np.fmax(star, h1), np.fmax(h1, np.fmin(h2, sync2 / t)))

    def first_bound(self):
        a = self.a
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
            tokens = self.wbt * self.k_max_f / self.t
            j = self.j
            starts = np.concatenate(([True], j[1:] != j[:-1]))[:j.size].nonzero()[0]
            most = np.zeros(self.params.size)
            np.maximum.at(most, self.j[starts], np.maximum.reduceat(tokens, starts))
            loss = chinchilla.chinchilla_loss(self.params, most, a)
            q = np.minimum(6.0 * self.params * most,
                           np.maximum(sweep_search._c_eq_above(loss, a, self.table), a.chi_search_low_flop))
            out = self.eta_c * self.eta_a * np.minimum(6.0 * self.old_p * tokens, q[self.j])
        return np.where(np.isnan(out), np.inf, out)

    def monotone_in_k(self, i, k1, k2, h2):
        a = self.a
        beta = self.old_beta0[i] * (np.log(h2) / self.log_h_ref)
        tokens = self.tokens(i, k1, k2, h2)
        right = (self.lemma_be - beta) * a.chinchilla_b * tokens ** (-a.chinchilla_beta)
        return beta * self.old_loss0[i] * (1.0 + sweep_search.MARGIN) <= right * (1.0 - sweep_search.MARGIN)


def quality_alpha(params, a):
    from planner.cost import quality
    return quality.alpha(params, a)


def _bits(x) -> tuple:
    x = np.asarray(x)
    return x.dtype.str, x.shape, x.tobytes()


def _per_row_outputs(rows, rng) -> list[tuple]:
    """`sync`, `tokens`, `least_loss_h`, `bound` (cuts 0, the boxes' median value and inf: every branch),
    `monotone_in_k` and `first_bound` of random boxes of every kind (wide, one K, one H, plans), as bits."""
    out = [_bits(rows.first_bound())]
    boxes = [np.array(x) for x in zip(*_boxes(rows, rng, 300))]
    r, k1, k2, h1, h2 = boxes
    r = r.astype(np.int64)
    k1p, h1p = np.where(rng.random(r.size) < 0.3, k2, k1), np.where(rng.random(r.size) < 0.3, h2, h1)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        sync2 = rows.sync(r, k2)
        out += [_bits(sync2), _bits(rows.tokens(r, k1p, k2, h2)),
                _bits(rows.least_loss_h(r, k1p, k2, h1p, h2, rows.t[r], sync2)),
                _bits(rows.monotone_in_k(r, k1p, k2, h2))]
        middle = float(np.median(rows.bound(r, k1p, k2, h1p, h2, 0.0)))
        for cut in (0.0, middle, np.inf):
            out.append(_bits(rows.bound(r, k1p, k2, h1p, h2, cut)))
    return out


@pytest.mark.parametrize("seed", range(6))
def test_per_size_values_give_the_per_row_results(seed, monkeypatch):
    """`_Rows` keeps P's values per size and takes them per row when asked (size_x[j[i]]) instead of
    per-row arrays: `sync`, `tokens`, `least_loss_h`, `bound` (every cut's branch), `monotone_in_k` and
    `first_bound` are, bit for bit, those of the methods as written before on the per-row arrays
    (`_RowsPerRow`), before and after the rows are made exact; the per-row views (`row_*`, `p`, `k_max`,
    `lemma`) are the expressions taken per row. Mutations caught (of sweep_search.py, by hand): `bound`'s
    size index not cut with its rows (`need`), `least_loss_h` or `monotone_in_k` indexing by the rows
    instead of their sizes' index, `first_bound` with 6 P taken by row instead of by size."""
    rows, base, space = _rows(seed)
    old = _RowsPerRow(base, space, rows.params)
    a, j = base.assumptions, rows.j
    assert _bits(rows.p) == _bits(old.old_p) and _bits(rows.row_base) == _bits(old.old_base)
    assert _bits(rows.row_alpha) == _bits(old.old_alpha) and _bits(rows.row_beta0) == _bits(old.old_beta0)
    assert _bits(rows.row_loss0) == _bits(old.old_loss0) and _bits(rows.row_six_p) == _bits(old.old_six_p)
    assert _bits(rows.lemma[0]) == _bits(old.old_loss0) and rows.lemma[1] == a.chinchilla_beta * (
        1.0 - sweep_search.straggler_coefficient(a) / math.log(2.0))
    assert rows.k_max.dtype == np.int64 and np.array_equal(rows.k_max, rows.k_max_f.astype(np.int64))
    for exact in (False, True):
        if exact:
            rows.make_exact(np.arange(j.size))
            old.make_exact(np.arange(j.size))
        assert _per_row_outputs(rows, np.random.default_rng(700 + seed)) == \
            _per_row_outputs(old, np.random.default_rng(700 + seed))


@pytest.mark.parametrize("seed", range(4))
def test_alpha_worked_once_is_the_one_each_worked(seed, monkeypatch):
    """`best_size` works `quality.alpha` of the sizes once (`size_alpha`) for `applies` and `_Rows`, which each
    worked it: the same array bit for bit as `quality.alpha` of the sizes (list or array), `applies` the
    same answer given it or not (sizes at and below the singular 1e4 too), `_Rows` the same size_alpha and
    first bounds; one call of `quality.alpha` of the sizes for both (`monotone.check` makes its own of the
    setting's P). Mutation caught: `_Rows` given alpha of the sizes
    reversed; `applies` reading its own `alpha` only when none is given (inverted test)."""
    rows, base, space = _rows(seed)
    sizes = list(rows.params)
    a = base.assumptions
    alpha = sweep_search.size_alpha(sizes, a)
    assert _bits(alpha) == _bits(quality.alpha(np.asarray(sizes), a))
    assert _bits(sweep_search.size_alpha(rows.params, a)) == _bits(alpha)
    given = sweep_search._Rows(base, space, rows.params, alpha)
    assert _bits(given.size_alpha) == _bits(rows.size_alpha) and _bits(given.first_bound()) == _bits(rows.first_bound())
    rng = np.random.default_rng(seed)
    for odd in ([1e4], [5e3, 1e9], [1e9, 1e4 * (1 + 1e-16)], list(10.0 ** rng.uniform(3.5, 13, 6))):
        assert sweep_search.applies(base, space, odd, sweep_search.size_alpha(odd, a)) == \
            sweep_search.applies(base, space, odd)
    calls = []
    real = quality.alpha
    monkeypatch.setattr(quality, "alpha", lambda *args: calls.append(np.size(args[0])) or real(*args))
    monkeypatch.setattr(sweep_search, "_search", lambda rows: None)       # the sweep up to its rows
    assert sweep_search.best_size(base, space, sizes) is None and calls.count(len(sizes)) == 1    # (and P's own)
