"""Robust plans: the best plan for the worst case, or a stated quantile, over a set of scenarios
(docs/robust.md): the search. A scenario is one `Setting`; the set is built by
`planner.questions.robust_scenarios` (the instance as given, and each uncertainty-file input at
each end of its interval).

The robust key of a plan p over scenarios s = 1..S is the k-th largest of its nominal measures
m_s(p) (time to target, or 1/compute for `max_compute`): k = 1 is the worst case; a quantile q in
(0, 1] means k = S - ceil(q S) + 1, the least value that at least ceil(q S) scenarios stay at or
below (`Statistic`). `RobustMeasure` is that key as a measure of the branch and bound
(`planner.solvers.bnb`: `values` scores plans, `box` bounds boxes), so the robust optimum is
proven by the same search as every other.

Why the bound holds. Let L_s <= m_s(p) for every plan p of a box and every s (each scenario's own
box bound, `bnb.box_bound` under that scenario's Setting). The k-th largest of a vector,
kth(x), is non-decreasing in each argument: raising one entry can move no entry of the sorted
vector down (the sorted vector of x' >= x is elementwise >= the sorted vector of x, since for
every threshold t the count of entries >= t can only grow). Hence kth(m(p)) >= kth(L) for every
plan of the box: kth(L) is a valid lower bound of the robust key. A scenario not (yet) bounded
may take L_s = 0, which is valid (m_s >= 0), so a box is pruned as soon as k of its scenario
bounds exceed the cutoff: the others need not be computed (`RobustMeasure.box`).

The decision space must be the same in every scenario searched: the space's reductions (the
micro-batch count of least pipeline step, the fastest schedule, streaming) and the member order of
pipeline classes are exact for a scenario only when it picks the same rows; `SpaceCheck` builds
the classes under the scenarios searched and requires them equal to the nominal ones (else the
micro-batch reduction is lifted and the member order checked per scenario; a scenario that still
lists other plans is refused). A plan dropped by a reduction is then dominated, in every scenario
searched, by the same kept plan, so its robust key over them is no better (kth is monotone).
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from planner.cost.score import time_to_target, window_compute
from planner.cost.setting import Setting
from planner.objectives import Objective
from planner.schema.errors import InputError, Problem
from planner.solvers import BACKEND_NAMES, bnb, exhaustive, monotone
from planner.solvers.certified import same_plan
from planner.solvers.objective_search import fewest_nodes, max_compute, min_time
from planner.space import DecisionSpace

ROBUST_OPTION = "--robust"


@dataclass(frozen=True)
class Statistic:
    """The k-th largest of S values (k = 1: the worst case)."""

    k: int
    count: int
    quantile: float | None = None      # as stated by the user (None: worst case)

    @classmethod
    def of(cls, count: int, quantile: float | None = None) -> "Statistic":
        """k = 1 (worst case), or k = S - ceil(q S) + 1 for a quantile q in (0, 1]."""
        if quantile is None:
            return cls(1, count)
        if not 0 < quantile <= 1:
            raise InputError([Problem("--quantile", f"must be in (0, 1], got {quantile:g}")])
        # ceil(q S), with a relative tolerance so that e.g. q = 0.9, S = 10 needs 9 scenarios, not 10
        needed = max(1, math.ceil(quantile * count - 1e-9))
        return cls(count - needed + 1, count, quantile)

    def of_values(self, values: np.ndarray) -> np.ndarray:
        """The statistic over axis 0 (scenarios) of `values` (NaN counts as inf: no meaning)."""
        v = np.nan_to_num(np.asarray(values, dtype=float), nan=np.inf)
        return np.sort(v, axis=0)[v.shape[0] - self.k]

    def describe(self) -> str:
        if self.k == 1:
            return f"worst case over {self.count} scenarios"
        return (f"quantile {self.quantile:g}: the {_ordinal(self.k)} largest of {self.count} scenarios "
                f"(met by at least {self.count - self.k + 1})")


def _ordinal(k: int) -> str:
    return f"{k}{'th' if 10 <= k % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(k % 10, 'th')}"


# -- the measure --------------------------------------------------------------------------


class RobustMeasure:
    """The robust key as a measure of `planner.solvers.bnb` (module docstring): `base` is the
    nominal measure (bnb.TIME, or bnb.compute_measure(kind)), `settings` the scenarios' Settings."""

    def __init__(self, base: str, settings: list[Setting], statistic: Statistic, labels: list[str] | None = None,
                 member_orders: dict | None = None):
        self.base = base
        self.ordering = base          # the order in which class groups are searched: the nominal measure's
        self.member_orders = member_orders or {}
        self.settings = list(settings)
        self.statistic = statistic
        self.labels = labels or [str(i) for i in range(len(settings))]
        problems = []
        for label, s in zip(self.labels, self.settings):
            problems += [Problem(f"{ROBUST_OPTION} scenario {label}: {p.path}", p.message)
                         for p in monotone.check(s).unsupported]
        if problems:
            raise InputError(problems)
        self.monos = [monotone.check(s) for s in self.settings]
        self._orders: dict[int, tuple[Any, np.ndarray]] = {}
        self.prunes = np.zeros(len(self.settings))     # boxes each scenario pruned: bounded first next time
        self.evaluations = 0                           # plan scores over every scenario (S per plan scored)

    def values(self, s: Setting, c, idx, n, h, r) -> np.ndarray:
        """The robust key of each plan (the statistic over the scenarios of the base measure)."""
        per = np.stack([bnb.measure_plans(t, c, idx, n, h, r, self.base) for t in self.settings])
        self.evaluations += per.size
        return self.statistic.of_values(per)

    def _member_order(self, c) -> np.ndarray:
        """(scenarios, classes): whether each scenario orders the class's members (micro-batch
        counts) by pipeline step as the nominal one does (`SpaceCheck`), which the box bound
        across members needs."""
        held = self._orders.get(id(c))
        if held is None or held[0] is not c:
            ok = np.ones((len(self.settings), c.size), bool)
            if self.member_orders:
                for row, key in enumerate(_member_keys(c)):
                    if key in self.member_orders:
                        ok[:, row] = self.member_orders[key]
            held = self._orders[id(c)] = (c, ok)
        return held[1]

    def box(self, s: Setting, c, box: dict, mono, cut) -> tuple[np.ndarray, list]:
        """(lower bound of the robust key on each box, corner plans with their robust keys): the
        statistic of the scenarios' own bounds, scenarios bounded one after the other (those that
        pruned most first) and a box dropped from the rest once k of them exceed `cut`."""
        size = box["i"].size
        count, k = len(self.settings), self.statistic.k
        cut = np.full(size, np.inf) if cut is None else np.broadcast_to(cut, (size,))
        lower = np.zeros((count, size))
        over = np.zeros(size, np.int64)
        corner_values = np.full((2, count, size), np.nan)
        aligned = True
        todo = np.arange(size)
        for j in np.argsort(-self.prunes, kind="stable"):
            if not todo.size:
                break
            sub = {key: v[todo] for key, v in box.items()}
            low, corners = bnb.box_bound(self.settings[j], c, sub, self.base, self.monos[j], cut[todo])
            low = np.nan_to_num(low, nan=0.0)
            if c.members is not None:    # member order not this scenario's: no bound across members
                unordered = ~self._member_order(c)[j]
                low = np.where(unordered[sub["i"]] & (sub["r1"] < sub["r2"]), 0.0, low)
            lower[j, todo] = low
            if len(corners) == 2 and all(x[0].size == todo.size for x in corners):
                corner_values[0, j, todo], corner_values[1, j, todo] = corners[0][4], corners[1][4]
            else:
                aligned = False
            self.evaluations += sum(x[0].size for x in corners)
            above = low > cut[todo]
            self.prunes[j] += int(above.sum())
            over[todo] += above
            todo = todo[over[todo] < k]
        bound = self.statistic.of_values(lower)
        alive = np.flatnonzero(over < k)          # every scenario bounded: their corners are scored
        r_fast, r_slow = bnb.fast_slow_r(c, box)
        plans = [(box["i"][alive], box["n1"][alive], box["h2"][alive], r_fast[alive]),
                 (box["i"][alive], box["n1"][alive], box["h1"][alive], r_slow[alive])]
        if aligned:
            keys = [self.statistic.of_values(corner_values[m][:, alive]) for m in range(2)]
        else:
            keys = [self.values(s, c, *p) for p in plans]
        return bound, [(*p, key) for p, key in zip(plans, keys)]


# -- the space ----------------------------------------------------------------------------


def same_classes(a, b, member_order: bool = True) -> bool:
    """Whether two Classes list the same plans (`member_order` False: the members of a pipeline
    class in any order, and its placeholder M, the first member, free)."""
    if (a is None) != (b is None):
        return False
    if a is None:
        return True
    for name in ("n_lo", "n_hi", "unit", "min_nodes", "members"):
        x, y = getattr(a, name), getattr(b, name)
        if name == "members" and not member_order and x is not None and y is not None:
            x, y = np.sort(x, axis=1), np.sort(y, axis=1)
        if (x is None) != (y is None) or (x is not None and not np.array_equal(x, y)):
            return False
    for f in dataclasses.fields(a.rows):
        if f.name == "micro_batches" and a.members is not None and not member_order:
            continue
        x, y = getattr(a.rows, f.name), getattr(b.rows, f.name)
        if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
            if not np.array_equal(np.asarray(x), np.asarray(y)):
                return False
        elif x != y:
            return False
    return True


def _member_keys(c) -> list[tuple]:
    """Per class of a pipeline Classes with members, what fixes its members: (mode, precision,
    EP scope, S, Ca, schedule)."""
    r = c.rows
    schedule = np.zeros(c.size, np.int64) if r.schedule is None else np.broadcast_to(r.schedule, (c.size,))
    return list(zip([(r.mode, r.precision, r.expert_parallel)] * c.size, np.broadcast_to(r.stages, (c.size,)).tolist(),
                    np.broadcast_to(r.activation_compression, (c.size,)).tolist(), schedule.tolist()))


def recording(a):
    """A copy of the Assumptions `a` that records the name of every attribute read from it (its
    methods' reads included: they read through `self`). It compares unequal to `a` (another
    class), so no cache keyed by assumptions answers for it unread."""
    read: set[str] = set()

    class Recording(type(a)):
        def __getattribute__(self, name):
            if not name.startswith("__"):
                read.add(name)
            return object.__getattribute__(self, name)

    copy = object.__new__(Recording)
    for f in dataclasses.fields(a):
        object.__setattr__(copy, f.name, getattr(a, f.name))
    return copy, read


def _reads(space: DecisionSpace, nominal: Setting) -> set[str]:
    """The assumption fields the class listing of `space` reads under the nominal Setting (its
    classes, built with a recording copy of the assumptions, are remembered as the nominal ones:
    the same values)."""
    copy, read = recording(nominal.assumptions)
    probe = nominal.replace(assumptions=copy)
    memo = space.class_memo()
    for mode in space.modes:
        for precision in space.precisions:
            for ep in space.expert_scopes(probe, mode):
                memo[(mode, precision, ep)] = (nominal, space.classes_of(probe, mode, precision, ep))
    return read & {f.name for f in dataclasses.fields(nominal.assumptions)}     # methods read fields through self


class SpaceCheck:
    """The space searched over a subset of the scenarios (module docstring): the objective's
    reductions where every scenario of the subset lists the nominal classes, else every M listed
    (the member axis of its (S, Ca) class) with, per scenario, whether it orders the members as
    the nominal one does. The classes are a function of the Setting and the listing is
    deterministic, so a scenario that differs from the nominal one only in assumption fields the
    nominal listing never read (`_reads`) lists the same classes and is not rebuilt."""

    def __init__(self, space: DecisionSpace, objective: Objective, settings: list[Setting], labels: list[str]):
        spaces = [space.for_objective(s, objective) for s in settings]
        if any(x != spaces[0] for x in spaces[1:]):
            j = next(i for i, x in enumerate(spaces) if x != spaces[0])
            raise InputError([Problem(ROBUST_OPTION, f"scenario {labels[j]} changes which plans the space lists "
                                                     f"(its reductions for {objective}); not supported")])
        self.reduced = spaces[0]
        self.full = dataclasses.replace(spaces[0], all_micro_batches=True, faster_wins=False)
        self.settings, self.labels = settings, labels
        self._read: dict[int, set[str]] = {}
        self._unordered: dict[int, set] = {}      # scenario -> member keys it orders otherwise (full space)
        self._same_reduced: dict[int, bool] = {}  # scenario -> whether it lists the nominal reduced classes

    def _may_differ(self, space: DecisionSpace, j: int) -> bool:
        nominal, s = self.settings[0], self.settings[j]
        if j == 0:
            return False
        if id(space) not in self._read:
            self._read[id(space)] = _reads(space, nominal)
        return s.replace(assumptions=nominal.assumptions) != nominal or \
            any(getattr(s.assumptions, name) != getattr(nominal.assumptions, name) for name in self._read[id(space)])

    def _compare(self, j: int) -> None:
        """Scenario j's classes of the full space against the nominal ones (InputError if they differ
        other than in member order, which is recorded)."""
        space, nominal, s = self.full, self.settings[0], self.settings[j]
        unordered = self._unordered[j] = set()
        mine = dataclasses.replace(space)        # a copy: its own memo, under scenario j
        for mode in space.modes:
            for precision in space.precisions:
                for ep in space.expert_scopes(nominal, mode):
                    c = space.classes(nominal, mode, precision, ep)
                    other = mine.classes(s, mode, precision, ep)
                    if tuple(space.expert_scopes(s, mode)) != tuple(space.expert_scopes(nominal, mode)) \
                            or not same_classes(c, other, member_order=False):
                        raise InputError([Problem(ROBUST_OPTION, f"scenario {self.labels[j]} lists other {mode} "
                                                                 f"{precision} plans (memory, micro-batch counts, "
                                                                 f"schedules); a robust search of them is not "
                                                                 f"supported")])
                    if c is not None and c.members is not None:
                        same = (c.members == other.members).all(axis=1)
                        unordered |= {k for k, ok in zip(_member_keys(c), same) if not ok}

    def prime(self) -> None:
        """List the nominal classes of the reduced space once, recording the assumption fields the
        listing reads (`_reads`); the search then finds them remembered."""
        if id(self.reduced) not in self._read:
            self._read[id(self.reduced)] = _reads(self.reduced, self.settings[0])

    def _lists_reduced(self, j: int) -> bool:
        """Whether scenario j lists the nominal classes of the reduced space, reductions included (the
        same plans, the same member order): then the reductions, exact in scenario j by the space's
        own proofs under j's Setting, drop no plan that j's own listing would keep."""
        if j not in self._same_reduced:
            nominal, s = self.settings[0], self.settings[j]
            mine = dataclasses.replace(self.reduced)        # a copy: its own memo, under scenario j
            self._same_reduced[j] = all(
                tuple(mine.expert_scopes(s, mode)) == tuple(self.reduced.expert_scopes(nominal, mode))
                and all(same_classes(self.reduced.classes(nominal, mode, precision, ep),
                                      mine.classes(s, mode, precision, ep))
                        for ep in self.reduced.expert_scopes(nominal, mode))
                for mode in self.reduced.modes for precision in self.reduced.precisions)
        return self._same_reduced[j]

    def space_for(self, group: list[int]) -> tuple[DecisionSpace, dict]:
        """(space, member orders: key -> per scenario of `group` whether it orders the members as the
        nominal scenario does) for a search over the scenarios `group`: the reduced space when every
        scenario of `group` lists its nominal classes (those that differ from the nominal one only in
        fields the listing never reads do, unlisted), else the full one."""
        if all(self._lists_reduced(j) for j in group if self._may_differ(self.reduced, j)):
            return self.reduced, {}
        for j in group:
            if j not in self._unordered and self._may_differ(self.full, j):
                self._compare(j)
        keys = set().union(*(self._unordered.get(j, set()) for j in group))
        return self.full, {k: np.array([k not in self._unordered.get(j, set()) for j in group]) for k in keys}


def plan_measures(settings: list[Setting], base: str, batch) -> np.ndarray:
    """The base measure (time to target, or 1/compute) of a one-plan batch under each scenario."""
    if base == bnb.TIME:
        return np.array([time_to_target(s, batch)["time_to_target_s"][0] for s in settings])
    kind = base[2:]
    with np.errstate(divide="ignore"):
        return np.array([1.0 / window_compute(s, batch, kind)[kind][0] for s in settings])


def optimise(settings: list[Setting], space: DecisionSpace, objective: Objective, statistic: Statistic,
             labels: list[str], deadline: float = math.inf, solver: str = "bnb", incumbent: float | None = None,
             reports: list | None = None, space_check: "SpaceCheck | None" = None):
    """((one-plan batch, robust value) or None, plans scored, proven bound) over the scenarios'
    `settings` (the first the instance as given): the robust counterpart of `planner.solve.optimise`.

    min_time: the least robust time to target (seconds) among plans whose robust time is within
    the duration limit; min_cost: the fewest nodes (USD) of such a plan, then the least robust
    time; max_compute: the most robust compute (FLOP), the statistic taken of 1/compute (the
    k-th largest of 1/C is 1/(the k-th smallest C)). `solver`: "bnb", "exhaustive" (every plan
    scored under every scenario), or a MIP backend ("highs", "scip": the robust model of
    `planner.mip.robust`, its plan certified by this branch and bound, `_mip_certified`; what it
    reported is appended to `reports`).

    The branch and bound runs over an active subset A of the scenarios, grown until its optimum
    holds for all (scenario generation): the k-th largest over A never exceeds the k-th largest
    over all S (dropping entries moves no order statistic up), so the problem over A is a
    relaxation (its optimum and bound are at most those over S; infeasible over A, infeasible
    over S). When the optimum p over A has kth_S(p) = kth_A(p), no plan does better over S:
    p is optimal over S, first in tie order among the optima (an optimum over S is one over A).
    The space is checked for the scenarios of A only (`SpaceCheck.space_for`): a plan q the
    reductions drop is dominated in every scenario of A by a kept plan q', so kth_A(q') <=
    kth_A(q) <= kth_S(q) and the relaxation's optimum still does not exceed the optimum over S.
    Else the scenario in which p is worst, among those not in A, joins A and the search runs again.
    A starts with the k scenarios in which a good seed plan fares worst (`_first_scenarios`); the
    scenarios that bind are few (often one), so the searches cost about that many nominal ones, not S.

    `space_check`: the `SpaceCheck` of these settings and space if one was built (its class listings are
    reused). `incumbent` (min_time: seconds, max_compute: FLOP, min_cost: nodes; not the exhaustive oracle): the robust value
    of a plan known to exist elsewhere (another part of a fleet of pools); boxes that cannot come
    within the tie tolerance of it are pruned from the start, and None is returned when no plan
    does. Exact: a plan whose key over all S is as good has its key over A as good (kth_A <= kth_S),
    so no search over A prunes it."""
    s = settings[0]
    windows = {t.window_s for t in settings}
    if len(windows) > 1:
        raise InputError([Problem(ROBUST_OPTION, "the scenarios change the duration limit; not supported")])
    if solver in BACKEND_NAMES:
        return _mip_certified(settings, space, objective, statistic, labels, deadline, solver, incumbent, reports)
    check = space_check or SpaceCheck(space, objective, settings, labels)
    base = objective.measure(s.target_kind)
    if solver == "exhaustive":
        full, orders = check.space_for(list(range(len(settings))))
        measure = RobustMeasure(base, settings, statistic, labels, orders)
        found, evaluations = exhaustive.optimise(s, full, objective, measure=measure)
        return found, evaluations, objective.empty_bound
    RobustMeasure(base, settings, statistic, labels)      # every scenario's bounds hold (else InputError)
    check.prime()
    active, evaluations = _first_scenarios(s, check.reduced, base, settings, statistic), 0
    while True:
        searched, orders = check.space_for(active)
        sub = RobustMeasure(base, [settings[j] for j in active], Statistic(statistic.k, len(active)),
                            [labels[j] for j in active], orders)
        found, count, bound = _search(s, searched, objective, sub, deadline, incumbent)
        evaluations += count
        if found is None:
            return None, evaluations, bound
        per = plan_measures(settings, base, found[0])
        key_all = float(statistic.of_values(per))
        key_active = float(sub.statistic.of_values(per[active]))
        value = found[1] if objective.by_cost else (1.0 / key_all if objective.maximise else key_all)
        # past the deadline: this plan, and the bound over A, a bound over all scenarios too
        if key_all <= key_active or len(active) == len(settings) or time.perf_counter() > deadline:
            return (found[0], value), evaluations, bound
        worst = max((j for j in range(len(settings)) if j not in active), key=lambda j: (per[j], -j))
        active = sorted(set(active) | {worst})


def _first_scenarios(s: Setting, space: DecisionSpace, base: str, settings: list[Setting],
                     statistic: Statistic) -> list[int]:
    """The scenarios of the first search: the k in which a good plan fares worst (the best seed plan of
    the nominal search's first boxes, `bnb.seeds`), likely those that bind; the first k when no seed
    has a finite measure. A heuristic: any subset keeps the search exact (`optimise`)."""
    best, plan = math.inf, None
    for c in bnb.batches(s, space):
        idx, n, h, r = bnb.seeds(s, c, space.max_inner_steps, space.max_regional_rounds)
        values = bnb.measure_plans(s, c, idx, n, h, r, base)
        if np.isfinite(values).any() and float(np.nanmin(values)) < best:
            i = int(np.nanargmin(np.where(np.isfinite(values), values, np.inf)))
            best, plan = float(values[i]), c.plans(idx[i:i + 1], n[i:i + 1], h[i:i + 1], r[i:i + 1])
    if plan is None:
        return list(range(statistic.k))
    per = np.nan_to_num(plan_measures(settings, base, plan), nan=np.inf)
    return sorted(np.argsort(-per, kind="stable")[:statistic.k].tolist())


def _search(s: Setting, space: DecisionSpace, objective: Objective, measure: RobustMeasure, deadline: float,
            incumbent: float | None = None):
    if objective.by_time:
        return min_time(s, space, deadline, math.inf if incumbent is None else incumbent, measure=measure)
    if objective.by_cost:
        return fewest_nodes(s, space, s.window_s, measure, deadline, math.inf if incumbent is None else incumbent)
    return max_compute(s, space, deadline, 0.0 if incumbent is None else incumbent, measure=measure)


def _mip_certified(settings: list[Setting], space: DecisionSpace, objective: Objective, statistic: Statistic,
                   labels: list[str], deadline: float, solver: str, incumbent: float | None, reports: list | None):
    """`optimise` by a MIP backend: the robust model's outer-approximation loop (`planner.mip.robust`) over the
    space the branch and bound searches for every scenario (`SpaceCheck.space_for`: the reduced space where
    each scenario lists the nominal classes, else every micro-batch count, one class each in the model:
    `EveryMember`), then its plan certified as
    `planner.solvers.certified` certifies the nominal one: the robust branch and bound runs with the plan's
    robust value as its incumbent, proves that no plan is better beyond the tie tolerance, finds one if the
    backend's tolerances hid it, and breaks ties in the documented order."""
    from planner.mip import robust as robust_mip     # here: Pyomo is loaded only when a backend is asked for
    from planner.mip.robust_presolve import EveryMember
    s = settings[0]
    check = SpaceCheck(space, objective, settings, labels)
    base = objective.measure(s.target_kind)
    RobustMeasure(base, settings, statistic, labels)      # every scenario's bounds hold (else InputError)
    check.prime()
    searched, _ = check.space_for(list(range(len(settings))))
    if searched is not check.reduced:       # every micro-batch count listed: one class each in the model
        searched = EveryMember.of(searched)
    first = _first_scenarios(s, check.reduced, base, settings, statistic)
    plan, value, report = robust_mip.outer_approximation(settings, searched, objective, statistic.k, solver, first,
                                                         deadline, check.reduced)
    if reports is not None:
        reports.append(report)
    mine = None
    if plan is not None:       # the plan's robust value in the units of `incumbent`
        mine = value if objective.by_cost else math.exp(-value) if objective.maximise else math.exp(value)
    known = [x for x in (mine, incumbent) if x is not None]
    best_known = (max(known) if objective.maximise else min(known)) if known else None
    start = time.perf_counter()
    found, evaluations, bound = optimise(settings, space, objective, statistic, labels, deadline, "bnb", best_known,
                                         space_check=check)
    report.certify_s = time.perf_counter() - start
    report.certified_changed_plan = (found is None) != (plan is None) or \
        (plan is not None and found is not None and not same_plan(found[0], plan))
    if found is not None and mine is not None:
        better = found[1] > mine * (1 + 1e-9) if objective.maximise else found[1] < \
            (mine * s.node_price_usd if objective.by_cost else mine) * (1 - 1e-9)
        report.certified_improved = bool(better)
    return found, evaluations, bound
