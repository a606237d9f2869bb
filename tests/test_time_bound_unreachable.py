"""The branch and bound's time bound on boxes whose fastest corner never reaches the target.

`planner.solvers.bnb._time_box` bounds a box by T >= T(n1, H2, R2) (n1 / n2) e(n1, H2 sqrt R2) /
e(n1, H1 sqrt R1). For a C_quality target a plan of large H_eff can be unable to reach the target at
all: its replica loss multiplier m = K ** beta(H_eff) puts the loss it must reach below what the
model can reach with any number of tokens (T = inf, e = 0). The product T e of that corner is its
time at e = 1, C_target / (6 P_act * tokens per second * goodput), which is finite; computed as
inf * 0 it was NaN, a bound that prunes nothing, so every such box was split down to single plans
(main-60-quality of `scripts/bench_solve.py --only-mip`: 1.8e8 plans scored, 49 s; docs/mip.md).

Here the targets are drawn between the reachability edges of the space's own plans, so that many
boxes have an unreachable fastest corner and a reachable most efficient one: the bound of such a box
is finite and at most every plan's time in it (plan by plan), and the search's answers equal the
naive brute force's (every plan scored, tests/test_bnb.py) for min_time and min_cost.
"""

import dataclasses

import numpy as np
import pytest

from planner.cost import chinchilla
from planner.cost.modes import throughput
from planner.cost.run import efficiency_without_replicas, quality_terms
from planner.cost.score import time_to_target
from planner.objectives import objective_named
from planner.solve import optimise
from planner.solvers import bnb, monotone
from tests.test_bnb import check_against_brute_force, random_case


def _reach_edges(s, space):
    """Per class, the largest C_quality target its plan of most replicas, largest H and R can reach, and
    the one its plan of fewest replicas (at least 2), H = R = 1 can: target = g C'(m L_floor) (a plan
    reaches a target iff m L(P_act, inf) < L*(C_target / g), `planner.cost.run._time_to_quality_target`)."""
    a = s.assumptions
    floor = a.chinchilla_e + a.chinchilla_a * s.active_params ** (-a.chinchilla_alpha)
    fast, slow = [], []
    sp = space.for_objective(s, objective_named("min_time"))
    for c in bnb.batches(s, sp):
        h_max, r_max = bnb.h_r_max(c, sp.max_inner_steps, sp.max_regional_rounds)
        i = np.flatnonzero(c.n_hi >= np.maximum(c.n_lo, 2))
        for n, h, r, out in ((c.n_hi[i], h_max, r_max, fast), (np.maximum(c.n_lo[i], 2), 1, 1, slow)):
            b = c.plans(i, n, h, r)
            t = throughput(s, b)
            g, mu, _ = quality_terms(s, b, t, efficiency_without_replicas(s, b, t))
            out.append(g * chinchilla.equivalent_optimal_compute(mu * floor, a))
    return np.concatenate(fast) if fast else np.zeros(0), np.concatenate(slow) if slow else np.zeros(0)


def edge_case(seed: int):
    """A C_quality case of tests/test_bnb.py (at least 4 nodes, H up to 8 or more) whose target lies
    between the reach of its fastest plans and that of its most efficient ones, with a replica exponent
    up to 20 times the published one (m rises faster with H_eff), or None if its space has no such
    interval."""
    s, space, streaming = random_case(7300 + seed, target_kind="c_quality")
    rng = np.random.default_rng(7300 + seed)
    space = dataclasses.replace(space, max_nodes=max(space.max_nodes, 4), max_inner_steps=max(space.max_inner_steps, 8))
    a = s.assumptions.replace(replica_beta_coefficient=s.assumptions.replica_beta_coefficient
                              * float(rng.choice([1.0, 5.0, 20.0])))
    s = s.replace(assumptions=a)
    fast, slow = _reach_edges(s, space)
    if not fast.size:
        return None
    lo, hi = float(np.min(fast)), float(np.max(slow))
    if not (0 < lo < hi and np.isfinite(hi)):
        return None
    return s.replace(target_flop=float(np.exp(rng.uniform(np.log(lo), np.log(hi))))), space, streaming


def _root_boxes(s, space):
    """(classes, box of each class over its whole n, H, R range from n >= 2) per class group."""
    sp = space.for_objective(s, objective_named("min_time"))
    for c in bnb.batches(s, sp):
        h_max, r_max = bnb.h_r_max(c, sp.max_inner_steps, sp.max_regional_rounds)
        i = np.flatnonzero(c.n_hi >= np.maximum(c.n_lo, 2))
        if i.size:
            yield c, {"i": i, "n1": np.maximum(c.n_lo[i], 2), "n2": c.n_hi[i], "h1": np.ones(i.size, np.int64),
                      "h2": np.full(i.size, h_max, np.int64), "r1": np.ones(i.size, np.int64),
                      "r2": np.full(i.size, r_max, np.int64)}


SEEDS = range(24)


@pytest.mark.parametrize("seed", SEEDS)
def test_bound_of_boxes_with_an_unreachable_fast_corner_holds_plan_by_plan(seed):
    case = edge_case(seed)
    if case is None:
        pytest.skip("no target between the reach of the fastest and the most efficient plans")
    s, space, _ = case
    mono = monotone.check(s)
    for c, box in _root_boxes(s, space):
        lower, corners = bnb.time_box(s, c, box, mono)
        assert not np.isnan(lower).any()
        for j in range(box["i"].size):
            grid = np.meshgrid(np.arange(box["n1"][j], box["n2"][j] + 1), np.arange(1, box["h2"][j] + 1),
                               np.arange(1, box["r2"][j] + 1), indexing="ij")
            n, h, r = (x.ravel() for x in grid)
            times = time_to_target(s, c.plans(np.full(n.size, box["i"][j]), n, h, r))["time_to_target_s"]
            assert np.all(times >= lower[j] * (1 - 1e-12)), (seed, j)


def test_the_cases_have_boxes_whose_fast_corner_never_reaches_the_target():
    """The case the tests above are about is common among them: a box whose fastest corner never
    reaches the target (t = inf) while its most efficient one does, bounded by a finite time."""
    found = 0
    for seed in SEEDS:
        case = edge_case(seed)
        if case is None:
            continue
        s, space, _ = case
        mono = monotone.check(s)
        for c, box in _root_boxes(s, space):
            lower, corners = bnb.time_box(s, c, box, mono)
            fast_t, slow_t = corners[0][4], corners[1][4]
            found += int((np.isinf(fast_t) & np.isfinite(slow_t) & np.isfinite(lower) & (lower > 0)).sum())
    assert found >= 20


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("objective", ["min_time", "min_cost"])
def test_bnb_matches_brute_force_on_targets_at_the_edge_of_reach(seed, objective):
    case = edge_case(seed)
    if case is None:
        pytest.skip("no target between the reach of the fastest and the most efficient plans")
    check_against_brute_force(*case, objective, rel=1e-9)


def test_exhaustive_oracle_agrees_on_targets_at_the_edge_of_reach():
    """The exhaustive oracle (every plan of the space scored) gives the branch and bound's answers."""
    from planner.solvers.exhaustive import optimise as exhaustive
    compared = 0
    for seed in SEEDS[:8]:
        case = edge_case(seed)
        if case is None:
            continue
        s, space, _ = case
        for objective in ("min_time", "min_cost"):
            found, _, _ = optimise(s, space, objective_named(objective))
            oracle = exhaustive(s, space, objective_named(objective))[0]
            assert (found is None) == (oracle is None)
            if found is not None:
                assert found[1] == pytest.approx(oracle[1], rel=1e-12)
                assert bnb.tie_key(s, found[0], 0) == bnb.tie_key(s, oracle[0], 0)
            compared += 1
    assert compared >= 8
