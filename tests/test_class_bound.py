"""The pp_group classes' own bound under `max_compute` (planner.solvers.class_bound, issue 27 item 5):
its efficiency at the class's most efficient corner is the one the cost model scores there, it is never
above the first box's bound of `bnb._compute_box` nor above 1 / C of any plan of the class (scored plan by
plan), and the search that uses it answers what the search without it answers, with fewer plans scored."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from planner.cost import run
from planner.cost.modes import throughput
from planner.cost.score import window_compute
from planner.cost.straggler import throughput_fraction
from planner.objectives import MAX_COMPUTE
from planner.solvers import bnb, class_bound, monotone, objective_search
from tests.test_bnb import check_against_brute_force, random_case
from tests.test_physics import _dtplan_case

DTPLAN_SEEDS = range(6000, 6012)
REFERENCE_SEEDS = range(2000, 2012)


def _dtplan(seed: int):
    """A dtplan case (every micro-batch count under dp_overlap, the schedule a decision half the time),
    pp_group only, with streaming on and off, two compressions and room for many replicas."""
    setting, space, _ = _dtplan_case(seed)
    setting = setting.replace(assumptions=setting.assumptions.replace(activation_memory=False))
    space = dataclasses.replace(space, modes=("pp_group",), max_micro_batches=6, max_stages=5,
                                max_nodes=max(space.max_nodes, 400), compression=(1.0, 16.0), streaming=(True, False))
    return setting, space.for_objective(setting, MAX_COMPUTE)


def _reference(seed: int, kind: str = "c_local"):
    setting, space, _ = random_case(seed, target_kind=kind)
    return setting, space.for_objective(setting, MAX_COMPUTE)


def _groups(setting, space):
    """The pp_group class groups that have their own bound."""
    for precision in space.precisions:
        c = space.classes(setting, "pp_group", precision)
        if c is not None and class_bound.lower_bounds(setting, c, bnb.compute_measure(setting.target_kind)) is not None:
            yield c


def _cases():
    for seed in DTPLAN_SEEDS:
        yield _dtplan(seed)
    for seed in REFERENCE_SEEDS:
        yield _reference(seed, "c_quality" if seed % 2 else "c_local")


@pytest.mark.parametrize("case", range(len(DTPLAN_SEEDS) + len(REFERENCE_SEEDS)))
def test_the_bound_is_the_scored_corners_and_below_every_plan(case):
    setting, space = list(_cases())[case]
    measure = bnb.compute_measure(setting.target_kind)
    rng = np.random.default_rng(case)
    for c in _groups(setting, space):
        own = class_bound.lower_bounds(setting, c, measure)
        every = np.arange(c.size)
        # by hand from the corner plan (n_lo, H = 1) scored by the cost model itself
        corner = c.plans(every, c.n_lo, 1, 1)
        t = throughput(setting, corner)
        g_up = run.quality_terms(setting, corner, t, run.efficiency_without_replicas(setting, corner, t))[0]
        np.testing.assert_array_equal(t["t_step_s"], c.step_s)
        groups_hi = np.floor(c.nodes(every, c.n_hi) / c.rows.stages)
        tokens_up = setting.training_window_s * setting.local_batch_tokens * throughput_fraction(setting.assumptions) \
            * groups_hi / t["t_step_s"]
        with np.errstate(divide="ignore"):
            want = 1.0 / (g_up * 6.0 * setting.active_params * tokens_up * (1 + class_bound.MARGIN))
        np.testing.assert_allclose(own, np.where(c.n_lo >= 2, want, 0.0), rtol=1e-12)
        # never above the first box's bound (a class it cuts is one that box cuts too)
        h_max, r_max = bnb.h_r_max(c, space.max_inner_steps, space.max_regional_rounds)
        box = {"i": every, "n1": c.n_lo, "n2": c.n_hi, "h1": np.ones(c.size, np.int64),
               "h2": np.full(c.size, h_max), "r1": np.ones(c.size, np.int64), "r2": np.full(c.size, r_max)}
        first, _ = bnb.compute_box(setting, c, box, setting.target_kind, monotone.check(setting))
        assert np.all(own <= first)
        # never above 1 / C of a plan of the class (random n and H, and both ends)
        for n, h in ((c.n_lo, np.ones(c.size, np.int64)), (c.n_hi, np.full(c.size, h_max)),
                     (rng.integers(c.n_lo, c.n_hi + 1), rng.integers(1, h_max + 1, c.size))):
            with np.errstate(divide="ignore"):
                value = 1.0 / window_compute(setting, c.plans(every, n, h, 1), setting.target_kind)[setting.target_kind]
            assert np.all(own <= value)


def test_most_cases_have_bounded_classes():
    """The cases above check something: most have pp_group classes with their own bound."""
    assert sum(next(_groups(*case), None) is not None for case in _cases()) >= 12


def _search(setting, space):
    found, evaluations, bound = objective_search.max_compute(setting, space)
    return found, evaluations, bound


@pytest.mark.parametrize("seed_batch", [bnb.SEED_BATCH, 4])
@pytest.mark.parametrize("case", range(len(DTPLAN_SEEDS) + len(REFERENCE_SEEDS)))
def test_the_search_answers_as_without_the_bound(case, seed_batch, monkeypatch):
    """Also with seeds scored 4 at a time at first (the cases have fewer classes than SEED_BATCH)."""
    monkeypatch.setattr(bnb, "SEED_BATCH", seed_batch)
    setting, space = list(_cases())[case]
    with_bound = _search(setting, space)
    with monkeypatch.context() as m:
        m.setattr(class_bound, "lower_bounds", lambda s, c, measure: None)
        without = _search(setting, dataclasses.replace(space))
    assert with_bound[2] == without[2]
    if without[0] is None:
        assert with_bound[0] is None
        return
    (batch, value), (want_batch, want_value) = with_bound[0], without[0]
    assert value == want_value
    assert bnb.tie_key(setting, batch, 0) == bnb.tie_key(setting, want_batch, 0)
    assert with_bound[1] <= without[1]


def test_the_bound_cuts_the_plans_scored(monkeypatch):
    """Summed over the cases, with seeds scored 4 at a time at first, the bound spares scoring (a bound
    that cut nothing would pass the tests above)."""
    monkeypatch.setattr(bnb, "SEED_BATCH", 4)
    spared = 0
    for setting, space in _cases():
        if next(_groups(setting, space), None) is None:
            continue
        with_bound = _search(setting, space)[1]
        original = class_bound.lower_bounds
        try:
            class_bound.lower_bounds = lambda s, c, measure: None
            without = _search(setting, dataclasses.replace(space))[1]
        finally:
            class_bound.lower_bounds = original
        spared += without - with_bound
    assert spared > 0


@pytest.mark.parametrize("seed", range(5000, 5008))
def test_max_compute_matches_brute_force_with_the_bound(seed):
    """The dtplan cases of tests/test_physics.py with many replicas allowed to pp_group (the brute force
    scores every plan)."""
    setting, space, streaming = _dtplan_case(seed)
    space = dataclasses.replace(space, max_nodes=max(space.max_nodes, 24))
    check_against_brute_force(setting, space, streaming, "max_compute", rel=1e-12)


# -- the groups' order: pp_group classes seeded below the other groups' least seed (issue 27 item 5) ----------


def _mixed(seed: int):
    """A dtplan case of every mode (tests/test_physics.py), pp_group with room for many replicas and every
    micro-batch count: the other groups' least seed limits which pp_group classes the ordering seeds."""
    setting, space, _ = _dtplan_case(seed)
    setting = setting.replace(assumptions=setting.assumptions.replace(activation_memory=False))
    space = dataclasses.replace(space, max_micro_batches=6, max_stages=5, max_nodes=max(space.max_nodes, 400),
                                compression=(1.0, 16.0), streaming=(True, False))
    return setting, space.for_objective(setting, MAX_COMPUTE)


MIXED_SEEDS = range(5000, 5016)


def _least(t) -> float:
    return float(np.nanmin(t)) if np.isfinite(t).any() else np.inf


@pytest.mark.parametrize("seed", MIXED_SEEDS)
def test_the_order_seeds_bounded_groups_below_the_others_least_seed(seed):
    """`batches_most_promising_first` seeds the groups with bounds of their own after the others, and only
    their classes whose bound is within the tie limit of U, the others' least seed: each such group's key
    (its least seed scored, as handed to the search) is its least seed over every class (all seeded, by hand)
    when that is within U's tie limit, else above U's tie limit; the groups come in the order of their keys."""
    setting, space = _mixed(seed)
    measure = bnb.compute_measure(setting.target_kind)
    h_max, r_max = space.max_inner_steps, space.max_regional_rounds
    full, bounded = {}, set()
    for c in bnb.batches(setting, space):
        full[id(c)] = _least(bnb.measure_plans(setting, c, *bnb.seeds(setting, c, h_max, r_max), measure))
        if class_bound.lower_bounds(setting, c, measure) is not None:
            bounded.add(id(c))
    u = min((v for k, v in full.items() if k not in bounded), default=np.inf)
    limit = float(bnb.tie_limit(u)) if np.isfinite(u) else np.inf
    ordered = bnb.batches_most_promising_first(setting, space, measure)
    assert sorted(map(id, ordered)) == sorted(full)
    keys = []
    for c in ordered:
        seeded = ordered.seeded.get(id(c))
        key = _least(seeded[4]) if seeded is not None else full[id(c)]
        if id(c) in bounded:
            assert seeded is not None
            if full[id(c)] <= limit:
                assert key == full[id(c)]
            else:
                assert key > limit
        else:
            assert key == full[id(c)]
        keys.append(key)
    assert keys == sorted(keys)


def test_the_order_limits_some_seeds():
    """The cases above check something: in some, a group's least seed over every class is above U's tie limit
    and fewer of its classes are seeded than the ordering without the limit seeds."""
    limited = 0
    for seed in MIXED_SEEDS:
        setting, space = _mixed(seed)
        measure = bnb.compute_measure(setting.target_kind)
        ordered = bnb.batches_most_promising_first(setting, space, measure)
        for c in ordered:
            own = class_bound.lower_bounds(setting, c, measure)
            if own is not None:
                unlimited = bnb._seeds_within(setting, c, space.max_inner_steps, space.max_regional_rounds,
                                              measure, own)[0].size
                limited += ordered.seeded[id(c)][0].size < unlimited
    assert limited >= 3

