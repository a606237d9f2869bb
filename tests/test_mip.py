"""The mixed-integer formulation (planner/mip) and its backends (planner/solvers).

1. Family by family: the chords of ln are exact at grid points and above ln elsewhere; the
   efficiency rows hold the evaluator's eta_H eta_R at the brackets' lower ends.
2. Plan by plan: with the class, n, H and R fixed, the model's optimum is at most the
   evaluator's ln(time to target) (a relaxation) and equal to it once the grid is refined at
   that plan (so the outer-approximation loop can close its gap).
3. Whole spaces: MIP (each backend, certified), branch and bound and the exhaustive oracle
   return the same optimum and the same plan as the brute force of tests/test_bnb.py.
4. The CLI, --write-model, and highspy and ortools imported in either order.
"""

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyomo.environ as pyo
import pytest

from planner.objectives import MAX_COMPUTE, MIN_COST, MIN_TIME, objective_named
from planner.cost.score import time_to_target
from planner.mip.formulation import Grid, build
from planner.mip.tables import build_tables
from planner.solvers import backends
from planner.solvers.bnb import tie_key
from planner.solvers.certified import optimise, outer_approximation
from tests.test_bnb import naive, random_case

BACKENDS = sorted(backends())


def test_both_backends_are_installed():
    assert BACKENDS == ["highs", "scip"]


@pytest.mark.parametrize("first, second", [("highspy", "ortools.linear_solver.python.model_builder"),
                                           ("ortools.linear_solver.python.model_builder", "highspy")])
def test_highspy_and_ortools_import_in_either_order(first, second):
    """google/or-tools issue 5246: the pins of pyproject.toml must let both live in one process."""
    code = (f"import {first}, {second}, highspy\n"
            "from ortools.linear_solver.python import model_builder as mb\n"
            "from planner.solvers.highs import quiet_highs\n"
            "h = quiet_highs(highspy); x = h.addVariable(0, 1); h.run()\n"
            "m = mb.Model(); y = m.new_int_var(0, 3, 'y'); m.add(y >= 2); m.minimize(y)\n"
            "s = mb.Solver('scip'); assert s.solve(m) == mb.SolveStatus.OPTIMAL and s.value(y) == 2\n"
            "print('ok')")
    assert _in_a_fresh_process(code).stdout.strip() == "ok"


def _in_a_fresh_process(code: str) -> subprocess.CompletedProcess:
    """Run `code` in a new Python process (imports and HiGHS' first-object banner start afresh)."""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return out


# -- families --------------------------------------------------------------------------------

def test_logarithm_chords_are_exact_at_grid_points_and_above_elsewhere():
    """The `logarithm` family alone: maximise ln_n at each integer n of 1..40 on a grid."""
    from planner.mip import formulation as F
    grid_points = {1, 2, 4, 8, 16, 32}
    for n in range(1, 41):
        m = pyo.ConcreteModel()
        br = Grid.brackets(grid_points, 40)
        m.n_brackets, m.H_brackets, m.R_brackets = br, [(1, 1)], [(1, 1)]
        for name, b in (("n", br), ("H", [(1, 1)]), ("R", [(1, 1)])):
            setattr(m, f"B{name}", pyo.Set(initialize=range(len(b))))
            setattr(m, f"b{name}", pyo.Var(getattr(m, f"B{name}"), within=pyo.Binary))
            setattr(m, name, pyo.Var(within=pyo.Integers, bounds=(1, b[-1][1])))
            setattr(m, f"ln_{name}", pyo.Var(bounds=(0, math.log(max(b[-1][1], 1)) + 1)))
        m.pick = pyo.ConstraintList()
        for name in ("n", "H", "R"):
            b = getattr(m, f"b{name}")
            m.pick.add(sum(b[k] for k in b) == 1)
        F.bracket(m, None, None)
        F.logarithm(m, None, None)
        m.n.fix(n)
        m.o = pyo.Objective(expr=m.ln_n, sense=pyo.maximize)
        r = backends()["highs"].solve(m)
        assert r.status == "optimal"
        if n in grid_points:
            assert r.objective == pytest.approx(math.log(n), abs=1e-7)
        else:
            assert r.objective >= math.log(n) - 1e-9


def _case_with_classes(seed, target_kind="c_local"):
    s, space, streaming = random_case(seed, target_kind=target_kind)
    t = build_tables(s, space)
    return s, space, streaming, t


@pytest.mark.parametrize("seed", [6, 7, 10, 11, 12])
def test_efficiency_rows_hold_the_evaluator_values_at_bracket_ends(seed):
    s, space, _, t = _case_with_classes(seed)
    f = build(t, Grid.initial(t))
    m = f.model
    h_lo = [lo for lo, _ in m.H_brackets]
    assert len(m.efficiency), "a DiLoCo class without any efficiency loss"
    from pyomo.repn import generate_standard_repn
    for i, (n_lo, _) in enumerate(m.n_brackets):
        for r, (r_lo, _) in enumerate(m.R_brackets):
            want = t.omega(np.full(len(h_lo), n_lo), np.array(h_lo, float) * math.sqrt(r_lo))
            if (0, i, r) not in m.efficiency:
                assert want.min() >= 0 or not any(e.mode == "hierarchical" for e in t.sync) and r > 0
                continue
            # the row of this (n, R) bracket: omega <= sum_j want_j bH_j + lifts of the other brackets
            repn = generate_standard_repn(m.efficiency[0, i, r].body)
            coef = {v.name: c for v, c in zip(repn.linear_vars, repn.linear_coefs)}
            got = [-coef.get(f"bH[{j}]", 0.0) for j in range(len(h_lo))]
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
            # omega never increases with n or R: no lift from a later bracket, none from its own
            assert all(f"bn[{k}]" not in coef for k in range(i, len(m.n_brackets)))
            assert all(f"bR[{k}]" not in coef for k in range(r, len(m.R_brackets)))


def _true_sync_terms(t, e, n, h, r):
    """q, (a, b) of the plan: the sync terms' arguments the tangents should touch (module tables)."""
    lnf = lambda parties: float(t.ln_straggler(parties))
    if e.mode == "hierarchical":
        a = e.ln_regional - e.ln_step - math.log(h)
        b = e.ln_sync_base + lnf(n // e.k) - e.ln_step - math.log(h) - math.log(r)
        return None, (a, b)
    return e.ln_sync_base + lnf(n) - e.ln_step - math.log(h), None


def _random_plan(t, rng):
    """(position in t.sync, class, n, H, R) of a random plan of the tables' space."""
    i = int(rng.integers(len(t.sync)))
    e = t.sync[i]
    n = int(rng.integers(e.n_lo, e.n_hi + 1))
    h = int(rng.integers(1, t.h_max + 1))
    r = int(rng.integers(1, t.r_max + 1)) if e.mode == "hierarchical" else 1
    return i, e, n, h, r


def _solve_at(backend, m, i, n, h, r):
    """The model solved with its class (position i), n, H and R fixed."""
    for j, y in enumerate(m.yv):
        y.fix(1 if j == i else 0)
    for lam in m.lamv:
        lam.fix(0)
    m.n.fix(n), m.H.fix(h), m.R.fix(r)
    return backend.solve(m)


@pytest.mark.parametrize("seed, target_kind", [(seed, "c_local") for seed in (6, 7, 10, 11, 12, 13)]
                         + [(seed, "c_quality") for seed in (102, 104, 110, 111, 112, 129)])
def test_model_is_a_relaxation_exact_once_refined_plan_by_plan(seed, target_kind):
    """(C_quality seeds: several gains, H_max > 3.)"""
    s, space, _, t = _case_with_classes(seed, target_kind)
    rng = np.random.default_rng(seed)
    backend = backends()["highs"]
    for _ in range(6):
        i, e, n, h, r = _random_plan(t, rng)
        want = float(np.log(time_to_target(s, t.plan(e.group, e.index, n, h, r))["time_to_target_s"][0]))
        if not (math.isfinite(want) and want <= math.log(s.window_s) - 1e-6):
            continue
        for refined in (False, True):
            grid = Grid.initial(t)
            if refined:
                q, ab = _true_sync_terms(t, e, n, h, r)
                grid.refine(n, h, r, q, ab, e.gain if target_kind == "c_quality" else None)
            res = _solve_at(backend, build(t, grid).model, i, n, h, r)
            assert res.status == "optimal"
            assert res.objective <= want + 1e-7
            if refined:
                assert res.objective == pytest.approx(want, abs=1e-6)


# -- whole spaces ----------------------------------------------------------------------------

@pytest.mark.parametrize("objective", ["min_time", "min_cost"])
@pytest.mark.parametrize("backend, seed, target_kind",
                         [("highs", seed, "c_local") for seed in range(24)]
                         + [("scip", seed, "c_local") for seed in range(8)]
                         + [("highs", seed, "c_quality") for seed in range(100, 112)]
                         + [("scip", seed, "c_quality") for seed in range(112, 116)])
def test_mip_bnb_and_oracle_agree_with_brute_force(seed, objective, backend, target_kind):
    _mip_bnb_and_oracle_agree_with_brute_force(seed, objective, backend, target_kind)


@pytest.mark.parametrize("objective", ["min_time", "min_cost"])
@pytest.mark.parametrize("seed, target_kind", [(seed, "c_local") for seed in range(8)]
                         + [(seed, "c_quality") for seed in range(100, 106)])
def test_model_rounds_alone_agree_with_brute_force(monkeypatch, seed, objective, target_kind):
    """The loop with no exact step beyond `EXACT_CLASSES` classes per round (`certified.EXACT_PLANS` 0,
    as before the step grew): the model's own rounds close the gap."""
    from planner.solvers import certified
    monkeypatch.setattr(certified, "EXACT_PLANS", 0)
    _mip_bnb_and_oracle_agree_with_brute_force(seed, objective, "highs", target_kind)


def _mip_bnb_and_oracle_agree_with_brute_force(seed, objective, backend, target_kind):
    from planner.solvers import objective_search
    from planner.solvers import exhaustive
    s, space, streaming = random_case(seed, target_kind=target_kind)
    expected = naive(s, space, objective, streaming)
    found, _, bound, report = optimise(s, space, objective_named(objective), backend)
    oracle, _ = exhaustive.optimise(s, space, objective_named(objective))
    exact, _, _ = objective_search.search(objective_named(objective), s, space)
    assert report.backend == backend
    if expected is None:
        assert found is None and oracle is None and exact is None
        assert report.status == "infeasible"
        return
    for got in (found, oracle, exact):
        assert got is not None
        assert got[1] == pytest.approx(expected[0][0], rel=1e-12)
        assert tie_key(s, got[0], 0) == tie_key(s, expected[1], 0)
    # the loop alone, before certification: gap closed, its bound below the optimum
    assert report.status == "optimal"
    assert report.objective == pytest.approx(expected[0][0], rel=1e-9)
    assert report.bound <= expected[0][0] * (1 + 1e-9)
    assert not report.certified_improved


@pytest.mark.parametrize("objective", ["min_time", "min_cost"])
@pytest.mark.parametrize("seed", [6, 7, 13, 33, 36, 38])
def test_mip_with_a_node_floor_agrees_with_brute_force(seed, objective):
    """search.min_nodes of 3 to 7, often not a multiple of S: a pipeline of n groups runs on
    N = max(n S, min_nodes) nodes, idle ones included (as `bnb` and the brute force count them).
    (Seeds where a model counting n S nodes left a gap or failed to decode its plan.)"""
    import dataclasses
    s, space, streaming = random_case(seed)
    space = dataclasses.replace(space, max_nodes=max(space.max_nodes, 12))
    space = dataclasses.replace(space, min_nodes=int(np.random.default_rng(seed).integers(3, 8)))
    expected = naive(s, space, objective, streaming)
    found, _, _, report = optimise(s, space, objective_named(objective), "highs")
    if expected is None:
        assert found is None and report.status == "infeasible"
        return
    assert found[1] == pytest.approx(expected[0][0], rel=1e-12)
    assert tie_key(s, found[0], 0) == tie_key(s, expected[1], 0)
    assert report.status == "optimal" and report.objective == pytest.approx(expected[0][0], rel=1e-9)
    assert not report.certified_improved


@pytest.mark.parametrize("objective", ["min_time", "min_cost"])
@pytest.mark.parametrize("seed, target_kind", [(5000 + seed, "c_local") for seed in (2, 5, 7, 9)]
                         + [(5100 + seed, "c_quality") for seed in (1, 3)])
@pytest.mark.parametrize("variant", ["eta_h_rises", "eta_h_above_one"])
def test_loop_alone_is_exact_when_efficiency_can_rise(seed, target_kind, objective, variant):
    """alpha(P) < 0 (eta_H rises with H_eff) or eta_H above 1: the loop's own answer and bound,
    before certification, against the brute force (a model with omega <= 0 cut off the
    optimum of seed 5007, eta_H above 1, min_cost)."""
    from tests import test_bnb
    s, space, streaming = random_case(seed, target_kind=target_kind)
    s = getattr(test_bnb, f"_{variant}")(s)
    expected = naive(s, space, objective, streaming)
    plan, value, report = outer_approximation(s, space, objective_named(objective), "highs")
    if expected is None:
        assert plan is None and report.status == "infeasible"
        return
    assert report.status == "optimal"
    assert report.objective == pytest.approx(expected[0][0], rel=1e-9)
    assert report.bound <= expected[0][0] * (1 + 1e-9)


# -- max_compute -----------------------------------------------------------------------------

COMPUTE_KINDS = [("c_quality", None), ("c_local", "linear_v1"), ("c_local", "none"), ("c_local", "chinchilla")]


def _compute_case(seed, target_kind, penalty):
    """A random case; penalty "chinchilla_x30": the Chinchilla penalty made 30 times stronger
    (`_strong_replica_penalty`: C_local falls with the tokens over part of the range)."""
    strong = penalty == "chinchilla_x30"
    s, space, streaming = random_case(seed, target_kind=target_kind, penalty="chinchilla" if strong else penalty)
    if strong:
        s = _strong_replica_penalty(s)
    return s, space.for_objective(s, MAX_COMPUTE), streaming


@pytest.mark.parametrize("target_kind, penalty", COMPUTE_KINDS + [("c_local", "chinchilla_x30")])
@pytest.mark.parametrize("seed", [5, 10, 14, 21])
def test_max_compute_model_over_estimates_and_is_tight_once_refined_plan_by_plan(seed, target_kind, penalty):
    """With the class, n, H and R fixed, the model's most ln C is at least the evaluator's (a
    relaxation of a maximisation) and, on the grid refined at that plan, within the loop's
    tolerance of it (C_local: exact; C_quality: the refined u bracket is U_STEP wide)."""
    from planner.mip.formulation import U_STEP
    from planner.mip.tables import outer_per_step, sync_terms
    s, space, _ = _compute_case(seed, target_kind, penalty)
    t = build_tables(s, space)
    rng = np.random.default_rng(seed)
    backend = backends()["highs"]
    checked = 0
    for _ in range(8):
        i, e, n, h, r = _random_plan(t, rng)
        want = float(t.log_compute(t.plan(e.group, e.index, n, h, r))[0])
        if not math.isfinite(want):
            continue
        for refined in (False, True):
            grid = Grid.initial_compute(t)
            if refined:
                q, ab = sync_terms(e, t, n, h, r)
                grid.refine(n, h, r, q, ab, None, e.u_const + math.log(n) - float(outer_per_step(e, t, n, h, r)),
                            e.label)
            res = _solve_at(backend, build(t, grid, MAX_COMPUTE).model, i, n, h, r)
            assert res.status == "optimal"
            assert -res.objective >= want - 1e-7
            if refined:
                exact = target_kind == "c_local" and not penalty.startswith("chinchilla")  # else U_STEP-wide u brackets
                assert -res.objective == pytest.approx(want, abs=1e-7 if exact else 10 * U_STEP)
        checked += 1
    assert checked


@pytest.mark.parametrize("backend, seed, target_kind, penalty",
                         [("highs", seed, kind, pen) for seed in range(16) for kind, pen in COMPUTE_KINDS]
                         + [("scip", seed, kind, pen) for seed in range(16, 20) for kind, pen in COMPUTE_KINDS])
def test_max_compute_mip_bnb_and_oracle_agree_with_brute_force(backend, seed, target_kind, penalty):
    """Every mode, random small spaces: the certified MIP answer, bnb and the exhaustive oracle
    equal the brute force (value and plan); the loop alone closes its gap (COMPUTE_LOG_TOL in
    ln C) with an upper bound at or above the optimum."""
    _max_compute_agrees_with_brute_force(backend, seed, target_kind, penalty)


@pytest.mark.parametrize("seed, target_kind, penalty", [(seed, kind, pen) for seed in range(4) for kind, pen in COMPUTE_KINDS])
def test_max_compute_model_rounds_alone_agree_with_brute_force(monkeypatch, seed, target_kind, penalty):
    """As above with no exact step beyond `EXACT_CLASSES` classes per round (`certified.EXACT_PLANS` 0)."""
    from planner.solvers import certified
    monkeypatch.setattr(certified, "EXACT_PLANS", 0)
    _max_compute_agrees_with_brute_force("highs", seed, target_kind, penalty)


def _max_compute_agrees_with_brute_force(backend, seed, target_kind, penalty):
    from planner.solvers import objective_search
    from planner.solvers import exhaustive
    from planner.solvers.certified import COMPUTE_LOG_TOL
    s, space, streaming = _compute_case(seed, target_kind, penalty)
    expected = naive(s, space, "max_compute", streaming)
    found, _, bound, report = optimise(s, space, MAX_COMPUTE, backend)
    oracle, _ = exhaustive.optimise(s, space, MAX_COMPUTE)
    exact, _, _ = objective_search.max_compute(s, space)
    assert report.backend == backend
    if expected is None or not expected[0][0] < math.inf:
        assert found is None and oracle is None and exact is None
        return
    most = 1.0 / expected[0][0]
    for got in (found, exact):
        assert got is not None
        assert got[1] == pytest.approx(most, rel=1e-12)
        assert tie_key(s, got[0], 0) == tie_key(s, expected[1], 0)
    assert oracle[1] == pytest.approx(most, rel=1e-12) and tie_key(s, oracle[0], 0) == tie_key(s, expected[1], 0)
    assert report.status == "optimal"
    assert math.log(report.objective) == pytest.approx(math.log(most), abs=COMPUTE_LOG_TOL)
    assert report.objective <= most * (1 + 1e-12)
    assert report.bound >= most * (1 - 1e-12)


@pytest.mark.parametrize("seed, objective", [(seed, obj) for seed in (6, 10, 17, 33)
                                             for obj in ("min_time", "max_compute", "min_cost")])
def test_solve_promising_counts_as_solved_only_classes_with_nothing_better(seed, objective):
    """`presolve.solve_promising` against each class solved alone (`solve_classes`): with a budget it
    returns the best plan of all classes, and the classes it leaves unsolved are bounded at or above
    it; without one it solves the first `EXACT_CLASSES` (most promising first, or the given class
    first) and returns their best; a batch stopped by the deadline is not counted."""
    from planner.mip.presolve import EXACT_CLASSES, NODES, solve_classes, solve_promising
    from planner.mip.table_bounds import class_bounds, least_nodes, node_promise
    from planner.mip.tables import compute_bounds
    from planner.solvers.bnb import TIME, compute_measure
    s, space, _ = random_case(seed)
    space = space.for_objective(s, objective_named(objective))
    t = build_tables(s, space)
    measure = {"max_compute": compute_measure(s.target_kind), "min_cost": NODES}.get(objective, TIME)
    lower = -compute_bounds(t) if objective == "max_compute" else class_bounds(t)[0].min(axis=1)
    if objective == "min_cost":      # fewest least nodes first (min_cost's promise), ties by the ln T bound
        lower = node_promise(least_nodes(t, *class_bounds(t)), lower)
    finite = np.flatnonzero(np.isfinite(lower))
    assert finite.size > EXACT_CLASSES
    alone = {int(a): solve_classes(t, [int(a)], math.inf, math.inf, measure)[1] for a in finite}
    plan, value, done = solve_promising(t, None, set(), math.inf, math.inf, measure, math.inf, lower)
    best = min(alone.values())
    assert math.isfinite(best) and plan is not None
    assert value == pytest.approx(best, rel=1e-12)
    assert sorted(done) == list(range(len(t.sync)))        # each solved, or bounded at or above the best
    # bounds that prune nothing (-inf, valid): batches of 8, 16, 32, ... search every class
    none = np.full(len(t.sync), -np.inf)
    plan, value, done = solve_promising(t, None, set(), math.inf, math.inf, measure, math.inf, none)
    assert sorted(done) == list(range(len(t.sync)))
    assert value == pytest.approx(best, rel=1e-12)
    # no budget: the EXACT_CLASSES most promising, then only those bounded at or above their best
    plan, value, done = solve_promising(t, None, set(), math.inf, math.inf, measure, 0.0, lower)
    assert done[:EXACT_CLASSES] == [int(a) for a in np.argsort(lower, kind="stable")[:EXACT_CLASSES]]
    assert value == pytest.approx(min(alone[a] for a in done[:EXACT_CLASSES]), rel=1e-12)
    assert all(lower[a] >= value for a in done[EXACT_CLASSES:])
    assert all(alone[a] >= value - 1e-12 * abs(value) for a in done if a in alone)
    first = int(finite[-1])
    plan, value, done = solve_promising(t, first, set(), math.inf, math.inf, measure, 0.0, lower)
    assert done[0] == first and len(done) >= EXACT_CLASSES
    plan, value, done = solve_promising(t, first, set(), math.inf, 0.0, measure, math.inf, lower)   # deadline past
    assert plan is None and all(lower[a] == math.inf for a in done)     # none searched
    # the budget is plans scored: a budget of exactly the first batch's plans stops after it, one more plan
    # lets the second batch run, where one is left (seeds 6, 10 and 17 with max_compute: the
    # classes solved do not depend on the clock)
    from planner.mip.presolve import most_promising, solve_classes_within
    batch = most_promising(t, set(), EXACT_CLASSES, lower)
    scored = solve_classes_within(t, batch, math.inf, math.inf, measure)[3]
    assert scored > 0
    _, first_value, one = solve_promising(t, None, set(), math.inf, math.inf, measure, scored, lower)
    assert one[:len(batch)] == batch and all(lower[a] >= first_value for a in one[len(batch):])
    _, _, two = solve_promising(t, None, set(), math.inf, math.inf, measure, scored + 1, lower)
    second = most_promising(t, set(batch), 2 * len(batch), lower, first_value)
    assert two[:len(batch) + len(second)] == batch + second if second else two == one


def _fewest_nodes_by_brute_force(t, e) -> float:
    """The fewest nodes of any plan of class `e` (every n of its range in its group, one node included
    where the space allows it, every H, every R or member index j) that reaches the target within the
    duration limit, each plan scored by the evaluator."""
    return _fewest_nodes_plan_by_brute_force(t, e)[0]


def _fewest_nodes_plan_by_brute_force(t, e):
    """(fewest nodes, n, H, R or member index j of a plan of them), inf and None if none (above)."""
    c = t.groups[e.group]
    r_top = c.member_count if c.members is not None else (t.space.max_regional_rounds if e.mode == "hierarchical" else 1)
    n_range = np.arange(c.n_lo[e.index], c.n_hi[e.index] + 1)
    n, h, r = (g.ravel() for g in np.meshgrid(n_range, np.arange(1, t.space.max_inner_steps + 1),
                                               np.arange(1, r_top + 1), indexing="ij"))
    plans = c.plans(np.full(n.size, e.index), n, h, r)
    ok = np.flatnonzero(time_to_target(t.setting, plans)["time_to_target_s"] <= t.setting.window_s)
    if not ok.size:
        return math.inf, None, None, None
    a = ok[np.argmin(plans.nodes[ok])]
    return float(plans.nodes[a]), int(n[a]), int(h[a]), int(r[a])


@pytest.mark.parametrize("seed", [6, 10, 30, 95, 163, 166, 186, 227, 232, 285])
def test_fewest_nodes_per_class_and_the_min_cost_presolve_against_brute_force(seed):
    """min_cost's exact step (`solve_classes` with `NODES`): per class, the fewest nodes within the
    duration limit and a plan of them, against every plan of the class scored; a class asked for fewer
    nodes than it can use gives nothing. The presolve's least nodes per class bound that count from
    below, the classes it drops cannot use fewer nodes than its incumbent, and the best of all classes
    (and fixed plans) is the brute force's min_cost optimum (tests/test_bnb.py `naive`)."""
    from planner.mip.presolve import NODES, presolve, solve_classes, solve_promising
    s, space, streaming = random_case(seed)
    t = build_tables(s, space)
    assert t.sync
    want = [_fewest_nodes_by_brute_force(t, e) for e in t.sync]
    for a, fewest in enumerate(want):
        plan, value = solve_classes(t, [a], math.inf, math.inf, NODES)
        assert value == fewest
        if math.isfinite(fewest):
            assert int(plan.nodes[0]) == fewest and plan.mode == t.sync[a].mode
            assert time_to_target(s, plan)["time_to_target_s"][0] <= s.window_s
            assert solve_classes(t, [a], fewest, math.inf, NODES) == (None, math.inf)     # none fewer
            assert solve_classes(t, [a], fewest + 1, math.inf, NODES)[1] == fewest
        else:
            assert plan is None
    pruned, plan, best, solved = presolve(t, MIN_COST)
    fixed = min([float(p.nodes) for p in t.fixed if p.log_time <= math.log(s.window_s)], default=math.inf)
    expected = naive(s, space, "min_cost", streaming)
    optimum = math.inf if expected is None else expected[0][0] / s.node_price_usd
    assert min(min(want), fixed) == pytest.approx(optimum, rel=1e-12)
    assert best >= optimum - 1e-9 and (plan is None) == (best == math.inf)
    kept = {e.label: i for i, e in enumerate(pruned.sync)}
    for e, fewest in zip(t.sync, want):
        if e.label in kept:
            i = kept[e.label]
            assert pruned.class_least_nodes[i] <= fewest
            if i in solved:                 # solved exactly: nothing fewer than the incumbent there
                assert fewest >= best
        else:
            assert fewest >= best
    _, value, done = solve_promising(pruned, None, solved, best, math.inf, NODES, math.inf,
                                     node_promise_of(pruned))
    assert min(value, best) == pytest.approx(optimum, rel=1e-12)
    assert sorted(set(done) | solved) == list(range(len(pruned.sync)))


@pytest.mark.parametrize("seed", [30, 95, 163, 166, 186])
def test_min_cost_model_with_least_nodes_is_a_relaxation_plan_by_plan(seed):
    """The `nodes-used` row with the least nodes per class (`table_bounds.least_nodes`): at every plan that
    meets the duration limit the model with its class, n, H and R fixed is feasible, and its nodes are
    the plan's own (the row never cuts off a plan, nor raises its count)."""
    from planner.mip.table_bounds import class_bounds, least_nodes
    s, space, _, t = _case_with_classes(seed)
    t.class_least_nodes = least_nodes(t, *class_bounds(t))
    assert (t.class_least_nodes[np.isfinite(t.class_least_nodes)] > max(1, space.min_nodes)).any()
    backend = backends()["highs"]
    checked = 0
    for i, e in enumerate(t.sync):     # at each class's plan of fewest nodes: where the row is tightest
        fewest, n, h, r = _fewest_nodes_plan_by_brute_force(t, e)
        if fewest == math.inf or e.n_lo > n:       # none, or one node alone (a fixed plan of the model)
            continue
        assert t.class_least_nodes[i] <= fewest
        r = r if t.groups[e.group].members is None else 1      # the model's R; j is part of the class
        res = _solve_at(backend, build(t, Grid.initial(t), MIN_COST).model, i, n, h, r)
        assert res.status == "optimal" and res.objective == pytest.approx(fewest, abs=1e-6)
        checked += 1
        if checked == 10:
            break
    assert checked >= 3


@pytest.mark.parametrize("objective", ["min_time", "min_cost"])
@pytest.mark.parametrize("seed", [30, 95, 163, 166, 186, 227, 232, 285])
def test_model_with_one_exact_class_per_round_agrees_with_brute_force(monkeypatch, seed, objective):
    """One class solved exactly by the presolve and one (the model's choice) per round (`EXACT_CLASSES`
    1, `EXACT_PLANS` 0): the model's own rounds, min_cost's least-nodes row included, close the gap.
    (Seeds whose presolve keeps three classes or more.)"""
    from planner.mip import presolve
    from planner.solvers import certified
    monkeypatch.setattr(presolve, "EXACT_CLASSES", 1)
    monkeypatch.setattr(certified, "EXACT_PLANS", 0)
    _mip_bnb_and_oracle_agree_with_brute_force(seed, objective, "highs", "c_local")


def node_promise_of(t):
    from planner.mip.table_bounds import node_promise
    return node_promise(t.class_least_nodes, t.class_lower)


def _strong_replica_penalty(s, factor=30.0):
    """The Chinchilla replica exponent's coefficient times `factor`: C_local then falls with the
    run's tokens over part of the range (psi not monotone in u), which the model must handle."""
    a = s.assumptions
    return s.replace(assumptions=a.replace(replica_beta_coefficient=a.replica_beta_coefficient * factor))


@pytest.mark.parametrize("factor", [1.0, 30.0])
@pytest.mark.parametrize("seed", [0, 3, 8, 13])
def test_psi_box_bounds_psi_over_its_bracket_and_is_psi_at_a_point(seed, factor):
    """C_local under the Chinchilla penalty: psi_box(n, H_eff, u_lo, u_hi) >= psi(n', H', u) for every
    u in [u_lo, u_hi], n' >= n, H' >= H_eff (sampled), and = psi(n, H_eff, u) when u_lo = u_hi = u;
    the strong penalty makes psi fall with u somewhere (checked), so the bound is not a monotone one."""
    s, space, _ = random_case(seed, target_kind="c_local")
    s = _strong_replica_penalty(s, factor)
    t = build_tables(s, space.for_objective(s, MAX_COMPUTE))
    assert t.tokens_scored_eta_r
    rng = np.random.default_rng(seed)
    grid_u = np.linspace(12.0, 45.0, 600)
    falls = False
    for _ in range(40):
        n, h_eff = int(rng.integers(2, 2000)), float(rng.uniform(1, 3000))
        lo = float(rng.uniform(12, 44))
        hi = lo + float(rng.choice([1e-5, 0.01, 0.5, 3.0]))
        bound = float(t.psi_box(n, h_eff, lo, hi))
        us = np.linspace(lo, hi, 41)
        for n2, h2 in ((n, h_eff), (n + 1, h_eff), (2 * n, 1.5 * h_eff)):
            got = t.psi(np.full(us.shape, n2), np.full(us.shape, h2), us)
            assert np.all(got <= bound + 1e-12), (n, h_eff, lo, hi, got.max(), bound)
        assert float(t.psi_box(n, h_eff, lo, lo)) == pytest.approx(float(t.psi(n, h_eff, lo)), rel=1e-12, abs=1e-12)
        # the presolve's rounded form (u_lo down, u_hi up to a grid; n per column) bounds it, within the rounding
        rounded = t.psi_box_rounded(np.array([n, n + 5]), h_eff, np.array([lo, lo]), np.array([hi, hi]),
                                    np.array([0, 0]), step=0.01)
        assert np.all(rounded >= bound - 1e-12) and np.all(rounded <= bound + 0.1)
        falls |= bool(np.any(np.diff(t.psi(np.full(grid_u.shape, n), np.full(grid_u.shape, h_eff), grid_u)) < -1e-9))
    assert falls or factor == 1.0


@pytest.mark.parametrize("seed", range(8))
def test_max_compute_under_a_strong_chinchilla_penalty_agrees_with_brute_force(seed):
    """C_local falling with the tokens in part of the space: the loop alone (pinned u at refined
    plans, `tokens-at-plan`) closes its gap, and the certified answer is the brute force's."""
    from planner.solvers.certified import COMPUTE_LOG_TOL
    s, space, streaming = _compute_case(seed, "c_local", "chinchilla_x30")
    expected = naive(s, space, "max_compute", streaming)
    found, _, _, report = optimise(s, space, MAX_COMPUTE, "highs")
    if expected is None or not expected[0][0] < math.inf:
        assert found is None
        return
    most = 1.0 / expected[0][0]
    assert found[1] == pytest.approx(most, rel=1e-12) and tie_key(s, found[0], 0) == tie_key(s, expected[1], 0)
    assert report.status == "optimal"
    assert math.log(report.objective) == pytest.approx(math.log(most), abs=COMPUTE_LOG_TOL)
    assert report.bound >= most * (1 - 1e-12)


@pytest.mark.parametrize("seed, target_kind, penalty", [(5000 + seed, "c_local", "none") for seed in (2, 5, 7, 9)]
                         + [(5200 + seed, "c_local", "chinchilla") for seed in (1, 2, 5)]
                         + [(5100 + seed, "c_quality", None) for seed in (1, 3, 4)])
@pytest.mark.parametrize("variant", ["eta_h_rises", "eta_h_above_one"])
def test_max_compute_loop_alone_when_efficiency_can_rise(seed, target_kind, penalty, variant):
    from planner.solvers.certified import COMPUTE_LOG_TOL
    from tests import test_bnb
    s, _, streaming = random_case(seed, target_kind=target_kind, penalty=penalty)
    s = getattr(test_bnb, f"_{variant}")(s)
    _, space, _ = random_case(seed, target_kind=target_kind, penalty=penalty)
    space = space.for_objective(s, MAX_COMPUTE)
    expected = naive(s, space, "max_compute", streaming)
    found, _, _, report = optimise(s, space, MAX_COMPUTE, "highs")
    if expected is None:
        assert found is None
        return
    most = 1.0 / expected[0][0]
    assert found[1] == pytest.approx(most, rel=1e-12)
    assert report.status == "optimal"
    assert math.log(report.objective) == pytest.approx(math.log(most), abs=COMPUTE_LOG_TOL)
    assert report.bound >= most * (1 - 1e-12)


def test_model_size_does_not_grow_with_n_max_times_h_max():
    """10^5 nodes, H up to 10^4, R up to 10^3: a few thousand non-zeros (one-hot n x H would be ~10^9)."""
    import dataclasses
    s, space, _ = random_case(10)
    big = dataclasses.replace(space, max_nodes=100_000, max_inner_steps=10_000, max_regional_rounds=1000)
    t = build_tables(s, big)
    f = build(t, Grid.initial(t))
    size = f.size()
    assert size["nonzeros"] < 60_000, size
    assert set(f.families()) >= {"choice", "structure", "node-limit", "sync-overlap", "efficiency",
                                 "time-to-target", "duration-limit", "logarithm"}


# -- through the CLI -------------------------------------------------------------------------

SMALL = {
    "name": "small", "model": {"params": 20e9}, "training": {"target_flop": 1e23},
    "fleet": {"hardware": "16xH100-SXM", "nodes": 12},
    "network": {"wan": {"up_mbps": 100, "down_mbps": 100, "rtt_ms": 100}},
    "limits": {"max_days": 365},
    "search": {"max_inner_steps": 60, "max_regional_rounds": 3, "group_sizes": [2, 3], "max_stages": 4,
               "compression": [1, 16, 500]},
}


def _cli(tmp_path, instance, *args):
    from click.testing import CliRunner
    from planner.cli import main
    path = tmp_path / "instance.json"
    path.write_text(json.dumps(instance))
    return CliRunner().invoke(main, ["solve", str(path), *[str(a) for a in args]])


def _cli_every_solver_agrees(tmp_path, instance, objective) -> dict:
    """Each solver's --json answer; the plan and value of every one equal bnb's."""
    results = {}
    for solver in ("bnb", "highs", "scip", "exhaustive"):
        r = _cli(tmp_path, instance, "--objective", objective, "--solver", solver, "--json")
        assert r.exit_code == 0, r.output
        results[solver] = json.loads(r.output)
    for solver in ("highs", "scip", "exhaustive"):
        assert results[solver]["plan"] == results["bnb"]["plan"]
        assert results[solver]["objective_value"] == pytest.approx(results["bnb"]["objective_value"], rel=1e-12)
    return results


@pytest.mark.parametrize("objective", ["min_time", "min_cost"])
def test_cli_backends_agree_with_the_default_solver(tmp_path, objective):
    results = _cli_every_solver_agrees(tmp_path, SMALL, objective)
    for solver in ("highs", "scip"):
        (mip,) = results[solver]["mip"]
        assert mip["backend"] == solver and mip["status"] == "optimal"
        assert mip["backend_status"] in ("optimal", "infeasible")
        assert mip["objective"] == pytest.approx(results["bnb"]["objective_value"], rel=1e-9)
        assert mip["families"]["duration-limit"] == 1
    assert results["bnb"]["mip"] == []


@pytest.mark.parametrize("objective", ["min_time", "min_cost"])
def test_cli_backends_answer_c_quality_with_a_choice_of_model_size(tmp_path, objective):
    """A C_quality target and two candidate model sizes (search.params): one model per size,
    the best kept, as the default solver does."""
    instance = dict(SMALL, model={}, training={"target_flop": 1e23, "target_kind": "c_quality"},
                    search=dict(SMALL["search"], params=[7e9, 20e9]))
    results = {}
    for solver in ("bnb", "highs", "scip"):
        r = _cli(tmp_path, instance, "--objective", objective, "--solver", solver, "--json")
        assert r.exit_code == 0, r.output
        results[solver] = json.loads(r.output)
    for solver in ("highs", "scip"):
        assert results[solver]["plan"] == results["bnb"]["plan"]
        assert results[solver]["model_params"] == results["bnb"]["model_params"]
        assert results[solver]["objective_value"] == pytest.approx(results["bnb"]["objective_value"], rel=1e-12)
        assert [m["status"] for m in results[solver]["mip"]] == ["optimal", "optimal"]


@pytest.mark.parametrize("target_kind, constants", [("c_quality", {}), ("c_local", {"replica_penalty": "linear_v1"}),
                                                    ("c_local", {})])
def test_cli_backends_answer_max_compute(tmp_path, target_kind, constants):
    """Every target kind and replica penalty (C_local's default is the chinchilla penalty)."""
    instance = dict(SMALL, training={"target_flop": 1e23, "target_kind": target_kind},
                    assumptions={"constants": constants})
    results = _cli_every_solver_agrees(tmp_path, instance, "max_compute")
    for solver in ("highs", "scip"):
        (mip,) = results[solver]["mip"]
        assert mip["backend"] == solver and mip["status"] == "optimal"
        assert mip["bound"] >= results["bnb"]["objective_value"] * (1 - 1e-12)
        assert set(mip["families"]) >= {"window-tokens", "compute-in-window", "efficiency"}
        assert "duration-limit" not in mip["families"] and "time-to-target" not in mip["families"]
    out = tmp_path / "model.lp"
    r = _cli(tmp_path, instance, "--objective", "max_compute", "--write-model", out)
    assert r.exit_code == 0, r.output
    text = out.read_text()
    assert "window_tokens" in text and "compute_in_window" in text and len(text.encode()) < 1_000_000


@pytest.mark.parametrize("suffix", [".lp", ".mps"])
def test_cli_writes_a_readable_model(tmp_path, suffix):
    out = tmp_path / f"model{suffix}"
    r = _cli(tmp_path, SMALL, "--write-model", out)
    assert r.exit_code == 0, r.output
    text = out.read_text()
    for name in ("time_to_target", "sync_overlap", "efficiency", "duration_limit", "logarithm",
                 "hier_fp8_k2_Cr500"):
        assert name in text, name
    assert len(text.encode()) < 1_000_000


def test_cli_refuses_what_a_backend_cannot_answer(tmp_path):
    blocking = dict(SMALL, assumptions={"profile": "dtplan"})    # a blocking sync: ln T is no log-space sum
    r = _cli(tmp_path, blocking, "--solver", "highs", "--objective", "max_compute")
    assert r.exit_code == 2
    assert "--solver" in r.output and "does not cover these assumptions" in r.output and "use --solver bnb" in r.output
    r = _cli(tmp_path, SMALL, "--write-model", tmp_path / "model.txt")
    assert r.exit_code == 2 and "unknown format '.txt'" in r.output
    r = _cli(tmp_path, SMALL, "--write-model", tmp_path / "missing" / "model.lp")
    assert r.exit_code == 2 and "--write-model" in r.output and "does not exist" in r.output
    assert "Traceback" not in r.output


def _split_pools(rule: str) -> dict:
    """14 pools (splits of an H100 and an A100 pool, tests/test_fleet_mip.py) under `rule`: beyond the 12 pools
    of the decomposition, answered when the loop's own bound proves it."""
    split = [{"name": f"h{i}", "hardware": "16xH100-SXM", "count": 2} for i in range(7)] + \
        [{"name": f"a{i}", "hardware": "48xA100-80GB", "count": 3} for i in range(7)]
    return {"model": {"params": 7e9}, "training": {"target_flop": 3e22}, "objective": "min_time",
            "network": {"wan": {"up_mbps": 500, "down_mbps": 500}}, "limits": {"max_days": 200},
            "search": {"max_inner_steps": 64, "precisions": ["fp16"]}, "fleet": {"pools": split, "sync_rule": rule}}


def _shipped(name: str, **changes) -> dict:
    data = json.loads((Path(__file__).resolve().parents[1] / "instances" / f"{name}.json").read_text())
    for key, value in changes.items():
        if isinstance(value, dict):
            data.setdefault(key, {}).update(value)
        else:
            data[key] = value
    return data


@pytest.mark.parametrize("name, data", [
    ("baseline-1e25 min_time", _shipped("baseline-1e25", objective="min_time")),
    ("baseline-1e25 max_compute", _shipped("baseline-1e25", objective="max_compute", training={"target_kind": "c_local"})),
    ("mixed-a100-h100 proportional", _shipped("mixed-a100-h100", fleet={"sync_rule": "proportional"})),
    ("14 pools proportional", _split_pools("proportional"))])
def test_the_mip_report_does_not_depend_on_the_clock(monkeypatch, name, data):
    """The loops' caps are work (rounds, plans scored), not seconds: with `time.perf_counter` running ten
    times fast (a machine ten times as loaded, as the project's own clock sees it) the answer and the MIP
    report (rounds, status, nodes, classes solved, bound, gap; not the times) are the same. Before, the
    max_compute loop (4 s), the certified pools loop under the rule (0.5 s), the loop beyond 12 pools (4 s)
    and the exact step (the model round's time) were wall time, and the 14 pools under the proportional rule
    missed their proof at load 12. The backend's own time per max_compute round (`certified.COMPUTE_GOING_ON_S`)
    is HiGHS's wall clock, out of reach of this clock: raised here so that the machine's real load cannot
    reach it (docs/mip.md, "What is deterministic")."""
    import time
    from planner.schema.instance import parse_instance
    from planner.solve import solve
    from planner.solvers import certified
    monkeypatch.setattr(certified, "COMPUTE_GOING_ON_S", 120.0)
    monkeypatch.setattr(certified, "COMPUTE_ROUND_S", 120.0)

    def run():
        result = solve(parse_instance(data), solver="highs")
        reports = [{k: v for k, v in m.items() if not k.endswith("_s")} for m in result.mip]
        return result.status, result.objective_value, reports

    normal = run()
    real, start = time.perf_counter, time.perf_counter()
    monkeypatch.setattr(time, "perf_counter", lambda: start + 10.0 * (real() - start))
    fast = run()
    monkeypatch.setattr(time, "perf_counter", real)
    assert normal[0] == "optimal" and normal[2] and normal[2][0]["rounds"] >= 1
    assert fast == normal


@pytest.mark.parametrize("name", ["baseline-1e25", "solve-1e24-64xh100"])
def test_max_compute_report_does_not_depend_on_the_backends_own_cap(monkeypatch, name):
    """The one wall-time cap left in the loop, the backend's time per max_compute round
    (`certified.COMPUTE_GOING_ON_S`, HiGHS's own clock), met before the backend has a plan (0.01 s; a loaded
    machine) or never (120 s): the exact step goes on either way and solves every class, so the answer and the
    report's status, rounds, classes solved, bound and gap are the same; only the backend's own status and
    nodes differ."""
    from planner.schema.instance import parse_instance
    from planner.solve import solve
    from planner.solvers import certified
    data = _shipped(name, objective="max_compute", training={"target_kind": "c_local"})

    def run(cap_s):
        monkeypatch.setattr(certified, "COMPUTE_GOING_ON_S", cap_s)
        result = solve(parse_instance(data), solver="highs")
        (report,) = result.mip
        return result.status, result.objective_value, {k: v for k, v in report.items()
                                                      if not k.endswith("_s") and k not in ("nodes", "backend_status")}

    capped, free = run(0.01), run(120.0)
    assert free[0] == "optimal" and free[2]["status"] == "optimal" and free[2]["classes_solved"] > 0
    assert capped == free


@pytest.mark.parametrize("backend", BACKENDS)
def test_time_limit_reports_a_valid_bound(backend):
    from planner.schema.instance import parse_instance
    from planner.solve import solve
    inst = parse_instance(dict(SMALL, fleet={"hardware": "16xH100-SXM", "nodes": 48},
                               search=dict(SMALL["search"], max_inner_steps=300)))
    exact = solve(inst, solver="bnb")
    r = solve(inst, solver=backend, time_limit_s=0.05)
    assert r.status in ("time_limit", "optimal")
    assert r.best_bound is not None and r.best_bound <= exact.objective_value * (1 + 1e-12)
    if r.objective_value is not None:
        assert r.objective_value >= exact.objective_value * (1 - 1e-12)
        assert r.best_bound <= r.objective_value * (1 + 1e-12)


@pytest.mark.parametrize("name", ["baseline-1e25", "solve-1e24-64xh100"])
def test_shipped_models_are_well_under_a_megabyte(tmp_path, name):
    from pathlib import Path
    from planner.mip.export import write_model
    from planner.schema.instance import load_instance
    inst = load_instance(Path(__file__).resolve().parents[1] / "instances" / f"{name}.json")
    for suffix in (".lp", ".mps"):
        (path,) = write_model(inst, objective_named(inst.objective), tmp_path / f"model{suffix}")
        assert path.stat().st_size < 500_000, (suffix, path.stat().st_size)
        assert "time_to_target" in path.read_text()


@pytest.mark.parametrize("target_kind", ["c_quality", "c_local"])
def test_largest_shipped_max_compute_model_is_under_a_megabyte(tmp_path, target_kind):
    """moe-600B-a100 as max_compute: the largest written model of the shipped instances (C_quality:
    0.94 MB as .mps when measured; C_local under its chinchilla penalty: 0.73 MB)."""
    from pathlib import Path
    from planner.mip.export import write_model
    from planner.schema.instance import load_instance, parse_instance
    data = load_instance(Path(__file__).resolve().parents[1] / "instances" / "moe-600B-a100.json").model_dump(
        exclude_none=True)
    data["training"]["target_kind"] = target_kind
    for suffix in (".lp", ".mps"):
        (path,) = write_model(parse_instance(data), MAX_COMPUTE, tmp_path / f"model{suffix}")
        text = path.read_text()
        assert len(text.encode()) < 1_000_000, (suffix, len(text.encode()))
        assert "window_tokens" in text and "compute_in_window" in text and "bU" in text


def test_a_model_proven_infeasible_by_the_presolve_is_written_small_and_infeasible(tmp_path):
    """pp-group-480B-h100 asked for min_cost: no plan meets its duration limit (bnb agrees);
    the model written is that of the class of least bound, and HiGHS finds it infeasible.

    HiGHS with the backend's options, one thread among them: a `Highs` run with the default `threads`
    sets up HiGHS's scheduler (one per process thread, kept after the object is gone) with as many
    threads as cores, and every later run with `threads` = 1 in that thread fails (status kNotset,
    "the scheduler has already been initialized to use 2 threads"): it made
    test_highs_presolve_finds_the_optimum_highs_1_14_missed fail when run after this test alone
    (`pytest tests/test_mip.py -k presolve`), and would make the backend report an error."""
    from pathlib import Path
    import highspy
    from planner.mip.export import write_model
    from planner.schema.instance import load_instance
    from planner.solve import solve
    from planner.solvers.highs import OPTIONS, quiet_highs
    inst = load_instance(Path(__file__).resolve().parents[1] / "instances" / "pp-group-480B-h100.json")
    assert solve(inst, "min_cost").status == "infeasible"
    (path,) = write_model(inst, MIN_COST, tmp_path / "model.mps")
    assert path.stat().st_size < 100_000
    h = quiet_highs(highspy)
    for key, value in OPTIONS.items():
        h.setOptionValue(key, value)
    h.readModel(str(path))
    h.run()
    assert h.getModelStatus() == highspy.HighsModelStatus.kInfeasible


def test_every_highs_object_is_made_by_quiet_highs():
    """A `Highs` run with the default `threads` leaves HiGHS's scheduler at one thread per core for the
    rest of the process thread, and every later run with the backend's `threads` = 1 then fails (the
    order dependence of test_highs_presolve_finds_the_optimum_highs_1_14_missed): no code of the project,
    its tests or its scripts makes a `Highs` but `planner.solvers.highs.quiet_highs` (the backend, and the
    tests that set the backend's `OPTIONS` on it)."""
    root = Path(__file__).resolve().parents[1]
    made = "highspy." + "Highs("
    found = sorted(str(p.relative_to(root)) for folder in ("planner", "tests", "scripts")
                   for p in (root / folder).rglob("*.py") if made in p.read_text())
    assert found == ["planner/solvers/highs.py"]


def test_the_backend_solves_after_a_default_threads_highs_run_in_the_same_thread():
    """After a `Highs` run with the default `threads` (one per core here), a run with the backend's
    `threads` = 1 in the same process thread fails with model status kNotset (HiGHS's per-thread
    scheduler); the backend resets the scheduler and runs again, so an API user's own HiGHS run does not
    turn every MIP round into an error. The model: max x + y, x + y <= 7.5, x, y integers in [0, 10]: 7,
    by hand. Run in a fresh process so that the scheduler state of this one is not changed."""
    code = (
        "import highspy, pyomo.environ as pyo\n"
        "from planner.solvers.highs import HighsBackend, quiet_highs\n"
        "h = quiet_highs(highspy); h.setOptionValue('threads', 2); x = h.addVariable(0, 1); h.run()\n"
        "m = pyo.ConcreteModel(); m.x = pyo.Var(domain=pyo.Integers, bounds=(0, 10))\n"
        "m.y = pyo.Var(domain=pyo.Integers, bounds=(0, 10))\n"
        "m.c = pyo.Constraint(expr=m.x + m.y <= 7.5); m.o = pyo.Objective(expr=-(m.x + m.y))\n"
        "r = HighsBackend().solve(m)\n"
        "print(r.status, r.objective, pyo.value(m.x) + pyo.value(m.y))\n")
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=root, timeout=120)
    assert done.returncode == 0, done.stderr
    status, objective, total = done.stdout.split()
    assert status == "optimal"
    assert float(objective) == -7.0 and float(total) == 7.0


def test_classes_that_never_reach_the_target_leave_no_rows(tmp_path):
    """compare-1e27 with a C_quality target: no class reaches it even at its most efficient
    plan (infinite bound), so none is kept without an incumbent (each used to keep a row
    'y = 0': an 11.8 MB model)."""
    from pathlib import Path
    from planner.mip.export import write_model
    from planner.schema.instance import load_instance, parse_instance
    data = load_instance(Path(__file__).resolve().parents[1] / "instances" / "compare-1e27.json").model_dump(
        exclude_none=True)
    data["training"]["target_kind"] = "c_quality"
    (path,) = write_model(parse_instance(data), MIN_TIME, tmp_path / "model.mps")
    assert path.stat().st_size < 100_000


# -- the HiGHS version -----------------------------------------------------------------------

MODEL_1_14 = Path(__file__).parent / "data" / "highs_1_14_presolve.mps"
OPTIMUM_1_14 = 8.035644556489467     # ln T: HiGHS with presolve off and SCIP; HiGHS 1.14.0 said 8.143669435019465


def test_highs_presolve_finds_the_optimum_highs_1_14_missed():
    """A pools model with chosen regions on which HiGHS 1.14.0's MIP presolve returned ln T = 8.1437 as
    optimal (HiGHS issues 3073, 3094); the pinned HiGHS, with the backend's options, and SCIP find 8.0356."""
    import highspy
    from ortools.linear_solver.python import model_builder as mb
    from planner.solvers.highs import OPTIONS, quiet_highs
    h = quiet_highs(highspy)
    for key, value in OPTIONS.items():
        h.setOptionValue(key, value)
    h.readModel(str(MODEL_1_14))
    h.run()
    assert h.getModelStatus() == highspy.HighsModelStatus.kOptimal
    assert h.getInfo().objective_function_value == pytest.approx(OPTIMUM_1_14, abs=1e-7)
    m = mb.Model()
    m.import_from_mps_file(str(MODEL_1_14))
    s = mb.Solver("scip")
    assert s.solve(m) == mb.SolveStatus.OPTIMAL
    assert s.objective_value == pytest.approx(OPTIMUM_1_14, abs=1e-7)


def test_the_highs_backend_solves_a_small_mip_right_and_prints_nothing():
    """min 2x + 3z, x + z >= 4.5, 0 <= x <= 10, z in {0..10}: z = 0, x = 4.5, 9 by hand (HiGHS 1.14.0
    returned 15, HiGHS issue 3043). Run in a fresh process, where HiGHS 1.16 prints its banner on the
    first `Highs` object: the backend's stdout must stay empty."""
    code = ("import pyomo.environ as pyo\n"
            "from planner.solvers import backends\n"
            "m = pyo.ConcreteModel(); m.x = pyo.Var(bounds=(0, 10)); m.z = pyo.Var(within=pyo.Integers, bounds=(0, 10))\n"
            "m.c = pyo.Constraint(expr=m.x + m.z >= 4.5); m.obj = pyo.Objective(expr=2 * m.x + 3 * m.z)\n"
            "r = backends()['highs'].solve(m)\n"
            "import sys; sys.stderr.write(f'{r.status} {r.objective} {pyo.value(m.z)}')\n")
    out = _in_a_fresh_process(code)
    assert out.stdout == ""
    status, objective, z = out.stderr.split()[-3:]
    assert status == "optimal" and float(objective) == pytest.approx(9.0, abs=1e-5) and abs(float(z)) < 1e-6   # HiGHS feasibility tolerance 1e-7
