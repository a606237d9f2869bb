"""The pp_group pipe rows bounded before they are listed under `max_compute` (issue 27 item 5):
`class_bound.row_lower_bounds` is never above the class bound (`class_bound.lower_bounds`) of any class
of its row nor above 1 / C of any sampled plan of them; the listing of every row is the listing of
`DecisionSpace.classes`, and the plans counted per row are the ones `size` counts from the classes; the
search that lists only the rows within U's tie limit (`bnb.batches_most_promising_first(prune_rows=True)`)
answers the same plan, value and bound as the search that lists every row, with the same plans scored, and
as the brute force. Cases: the reference terms and the dtplan terms, beyond the evidence envelope and inside
it (the fitted quality model), C_quality and C_local under the Chinchilla penalty, budgets and node memory
that bind in some."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from planner.cost.score import window_compute
from planner.objectives import MAX_COMPUTE
from planner.solvers import bnb, class_bound, objective_search
from planner.space import DecisionSpace
from tests.test_bnb import check_against_brute_force, random_case
from tests.test_physics import _dtplan_case

SEEDS = range(7000, 7040)


def _inside(setting):
    """The setting under the fitted quality model, inside the evidence envelope (`envelope.on`)."""
    return setting.replace(assumptions=setting.assumptions.replace(replica_penalty="fitted", evidence_envelope=True))


def _case(seed: int):
    """A space of every mode (the other modes' least seed U is what the rows are bounded against): the
    reference or the dtplan terms (every micro-batch count under dp_overlap), C_quality or C_local (under
    the Chinchilla penalty), beyond or inside the envelope, pp_group with room for many replicas."""
    kind = "c_quality" if seed % 2 else "c_local"
    if seed % 4 < 2:
        setting, space, _ = random_case(seed, target_kind=kind)
    else:
        setting, space, _ = _dtplan_case(seed)
        setting = setting.replace(target_kind=kind)
    if seed % 8 >= 4:
        setting = _inside(setting)
    space = dataclasses.replace(space, max_micro_batches=4, max_stages=5, max_nodes=max(space.max_nodes, 300),
                                compression=(1.0, 4.0, 16.0), streaming=(True, False))
    return setting, space.for_objective(setting, MAX_COMPUTE)


def _row_of(rows, c) -> np.ndarray:
    """Per class of `c`, the index of its pipe row among `rows.pipes` (by S, Ca, M and the schedule)."""
    p = rows.pipes
    where = {(int(p.stages[k]), float(p.activation_compression[k]), int(p.micro_batches[k]), int(p.schedule[k])): k
             for k in range(p.size)}
    r = c.rows
    return np.array([where[(int(r.stages[k]), float(r.activation_compression[k]), int(r.micro_batches[k]),
                            int(r.schedule[k]))] for k in range(c.size)], dtype=np.int64)


def _bounded(setting, space):
    """(precision, rows, row bounds, classes of every row, their class bounds) of each precision whose rows
    have bounds, on a fresh copy of the space."""
    measure = bnb.compute_measure(setting.target_kind)
    for precision in space.precisions:
        fresh = dataclasses.replace(space)
        rows = fresh.pp_group_rows(setting, precision)
        if rows is None or not class_bound.rows_bounded(setting, rows, measure):
            continue
        bounds = class_bound.row_lower_bounds(setting, rows, fresh.compression_shown(setting, precision), measure)
        c = dataclasses.replace(space).classes(setting, "pp_group", precision)
        own = None if c is None else class_bound.lower_bounds(setting, c, measure)
        yield precision, rows, bounds, c, own


@pytest.mark.parametrize("seed", SEEDS)
def test_the_row_bound_is_below_every_class_bound_and_plan_of_the_row(seed):
    setting, space = _case(seed)
    rng = np.random.default_rng(seed)
    h_max = space.max_inner_steps
    for precision, rows, bounds, c, own in _bounded(setting, space):
        assert bounds.shape == (rows.size,)
        assert np.all(np.isinf(bounds[~rows.keep.any(axis=1)]))       # a row with no class bounds nothing
        if c is None:
            continue
        at = _row_of(rows, c)
        assert np.all(bounds[at] <= own)
        every = np.arange(c.size)
        for n, h in ((c.n_lo, np.ones(c.size, np.int64)), (c.n_hi, np.full(c.size, h_max)),
                     (rng.integers(c.n_lo, c.n_hi + 1), rng.integers(1, h_max + 1, c.size))):
            with np.errstate(divide="ignore"):
                value = 1.0 / window_compute(setting, c.plans(every, n, h, 1), setting.target_kind)[setting.target_kind]
            assert np.all(bounds[at] <= value)


@pytest.mark.parametrize("seed", SEEDS)
def test_the_listing_of_every_row_is_the_classes_and_the_count_is_size(seed):
    setting, space = _case(seed)
    for precision, rows, _, c, _ in _bounded(setting, space):
        fresh = dataclasses.replace(space)
        listed = fresh.classes_of_rows(setting, precision, rows, None)
        assert (listed is None) == (c is None)
        if c is None:
            continue
        for name in ("n_lo", "n_hi", "unit", "min_nodes", "step_s", "eta_activation", "listed"):
            a, b = getattr(listed, name), getattr(c, name)
            assert (a is None) == (b is None)
            if a is not None:
                np.testing.assert_array_equal(a, b)
        for name in ("stages", "micro_batches", "schedule", "activation_compression", "compression", "streaming"):
            np.testing.assert_array_equal(getattr(listed.rows, name), getattr(c.rows, name))
        per_class = (c.n_hi - c.n_lo + 1) * (1 if c.listed is None else c.listed)
        assert fresh._pp_group_plans(setting, precision, rows) == int(per_class.sum())


def _without_pruning(monkeypatch, setting, space):
    """max_compute with every pipe row listed (`pp_group_rows` asked of no space: `classes` instead)."""
    with monkeypatch.context() as m:
        m.setattr(DecisionSpace, "pp_group_rows", lambda self, s, precision: None)
        fresh = dataclasses.replace(space)
        return objective_search.max_compute(setting, fresh), fresh.size(setting)


def _pruned(setting, space):
    """max_compute as the solver runs it, the rows left out counted (via `classes_of_rows`)."""
    dropped = []
    original = DecisionSpace.classes_of_rows

    def counting(self, s, precision, rows, kept):
        dropped.append(0 if kept is None else int((rows.keep.any(axis=1) & ~kept).sum()))
        return original(self, s, precision, rows, kept)

    DecisionSpace.classes_of_rows = counting
    try:
        fresh = dataclasses.replace(space)
        found = objective_search.max_compute(setting, fresh)
    finally:
        DecisionSpace.classes_of_rows = original
    return found, fresh.size(setting), sum(dropped)


def _same(setting, got, want):
    """The same plan (`tie_key`), value and bound; plans scored the same or fewer (`bnb.batches_most_promising_first`:
    the same in every case here)."""
    (found, evaluations, bound), (want_found, want_evaluations, want_bound) = got, want
    assert bound == want_bound and evaluations <= want_evaluations
    assert (found is None) == (want_found is None)
    if found is not None:
        assert found[1] == want_found[1]
        assert bnb.tie_key(setting, found[0], 0) == bnb.tie_key(setting, want_found[0], 0)


@pytest.mark.parametrize("seed", SEEDS)
def test_the_pruned_search_answers_as_the_search_of_every_row(seed, monkeypatch):
    setting, space = _case(seed)
    got, size, _ = _pruned(setting, space)
    want, want_size = _without_pruning(monkeypatch, setting, space)
    _same(setting, got, want)
    assert size == want_size


def test_rows_are_left_out():
    """The cases above check something: in several the search lists fewer rows than there are."""
    assert sum(_pruned(*_case(seed))[2] > 0 for seed in SEEDS) >= 8


@pytest.mark.parametrize("seed", range(7100, 7108))
def test_the_pruned_search_matches_brute_force(seed):
    """The reference terms beyond the envelope (brute force: every plan of every mode scored), C_quality and
    C_local under the Chinchilla penalty, budgets that bind in some (`random_case`)."""
    setting, space, streaming = random_case(seed, target_kind="c_quality" if seed % 2 else "c_local")
    space = dataclasses.replace(space, max_nodes=max(space.max_nodes, 24))
    check_against_brute_force(setting, space, streaming, "max_compute", rel=1e-12)


@pytest.mark.parametrize("seed", range(5000, 5006))
def test_the_pruned_search_matches_brute_force_under_dtplan_terms(seed):
    setting, space, streaming = _dtplan_case(seed)
    space = dataclasses.replace(space, max_nodes=max(space.max_nodes, 24))
    setting = setting.replace(target_kind="c_quality" if seed % 2 else "c_local")
    check_against_brute_force(setting, space, streaming, "max_compute", rel=1e-12)


def _least(t) -> float:
    return float(np.nanmin(t)) if np.isfinite(t).any() else np.inf


@pytest.mark.parametrize("seed", [7006, 7011, 7017, 7023])
def test_rows_tied_with_u_are_listed(seed, monkeypatch):
    """The rows listed are those whose bound is within U's tie limit (ties kept: a row bounded at U (1 +
    TIE_REL / 2) or at U's tie limit is listed, one just above it is not), U the least seed of the groups
    without bounds of their own (computed here from every class's seed). The row bounds are set by hand."""
    setting, space = _case(seed)
    measure = bnb.compute_measure(setting.target_kind)
    h_max, r_max = space.max_inner_steps, space.max_regional_rounds
    u = min(_least(bnb.measure_plans(setting, c, *bnb.seeds(setting, c, h_max, r_max), measure))
            for c in bnb.batches(setting, dataclasses.replace(space)) if c.rows.mode != "pp_group")
    limit = float(bnb.tie_limit(u))
    assert np.isfinite(limit)
    original = DecisionSpace.classes_of_rows
    for value, listed in ((u * (1 + bnb.TIE_REL / 2), True), (limit, True), (np.nextafter(limit, np.inf), False)):
        kept = []      # per pp_group listing: every row with classes listed (True), none (False), or some (None)

        def recording(self, s, precision, rows, mask):
            has = rows.keep.any(axis=1)
            kept.append(True if mask is None or mask[has].all() else False if not mask[has].any() else None)
            return original(self, s, precision, rows, mask)

        monkeypatch.setattr(class_bound, "row_lower_bounds",
                            lambda s, rows, shown, m: np.where(rows.keep.any(axis=1), value, np.inf))
        monkeypatch.setattr(DecisionSpace, "classes_of_rows", recording)
        bnb.batches_most_promising_first(setting, dataclasses.replace(space), measure, prune_rows=True)
        assert kept and all(k is listed for k in kept), (value, kept)
