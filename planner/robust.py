"""Robust plans: the best plan for the worst case, or a stated quantile, over a set of scenarios
(docs/robust.md).

A *scenario* is the instance with some assumption fields overridden: one `Setting` (one
`Assumptions` object) per scenario. The set (`scenarios`) is the instance as given plus, one input
at a time, each value an entry of the uncertainty files (models/assumptions/uncertainty/*.json,
read generically: every entry, whatever field it names) can take at the ends of its published
interval, or each of its choices (the optimistic / expected / conservative quality scenario is
such an entry); duplicates of the instance as given are dropped.

The robust key of a plan p over scenarios s = 1..S is the k-th largest of its nominal measures
m_s(p) (time to target, or 1/compute for `max_compute`): k = 1 is the worst case; a quantile q in
(0, 1] means k = S - ceil(q S) + 1, the least value that at least ceil(q S) scenarios stay at or
below (`Statistic`). `RobustMeasure` is that key as a measure of the branch and bound
(`planner.solvers.bnb`: `values` scores plans, `box` bounds boxes), so the robust optimum is
proven by the same search as every other.

Why the bound holds. Let L_s <= m_s(p) for every plan p of a box and every s (each scenario's own
box bound, `bnb._box_bound` under that scenario's Setting). The k-th largest of a vector,
kth(x), is non-decreasing in each argument: raising one entry can move no entry of the sorted
vector down (the sorted vector of x' >= x is elementwise >= the sorted vector of x, since for
every threshold t the count of entries >= t can only grow). Hence kth(m(p)) >= kth(L) for every
plan of the box: kth(L) is a valid lower bound of the robust key. A scenario not (yet) bounded
may take L_s = 0, which is valid (m_s >= 0), so a box is pruned as soon as k of its scenario
bounds exceed the cutoff: the others need not be computed (`RobustMeasure.box`).

The decision space must be the same in every scenario: the space's reductions (the micro-batch
count of least pipeline step, the fastest schedule, streaming) and the member order of pipeline
classes are exact for each scenario only when they pick the same rows; `check_space` builds the
classes under every scenario and requires them equal to the nominal ones (else the micro-batch
reductions are lifted, and if that does not make them equal the robust solve is refused).
A plan dropped by a reduction is then dominated, in every scenario, by the same kept plan, so its
robust key is no better (kth is monotone).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from planner.cost.setting import Setting
from planner.schema.errors import InputError, Problem
from planner.solvers import bnb, monotone
from planner.space import DecisionSpace

ROBUST_OPTION = "--robust"


@dataclass(frozen=True)
class Scenario:
    """One scenario: its label, the fields it overrides and their values."""

    label: str
    overrides: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {"label": self.label, "overrides": self.overrides}


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


# -- the scenario set ---------------------------------------------------------------------


def uncertainty_files(paths: list[str | Path] | None = None) -> list[Path]:
    """The uncertainty files read: `paths`, else every *.json of models/assumptions/uncertainty/."""
    if paths:
        return [Path(p) for p in paths]
    from planner.questions.uncertainty import default_uncertainty
    return sorted(default_uncertainty().parent.glob("*.json"))


def interval_ends(entry) -> list[Any]:
    """The values one uncertainty entry takes in the scenario set: each choice of a `choice`
    distribution, else the two ends of its published interval."""
    d = entry.distribution
    if d.kind == "choice":
        return list(d.args)
    low, high = d.bounds
    from planner.questions.sweep.fields import is_integer_field
    if is_integer_field(entry.field):
        return [math.ceil(low), math.floor(high)]
    return [low, high]


def scenarios(raw: dict, paths: list[str | Path] | None = None) -> list[tuple[Scenario, dict]]:
    """(scenario, raw instance data) of the scenario set (module docstring): the instance as given
    first, then each entry of each uncertainty file at each of its values, one at a time.
    InputError names the entry whose value the instance rejects."""
    from planner.questions.sweep.fields import with_fields
    from planner.questions.uncertainty import load_uncertainty
    out = [(Scenario("as given", {}), raw)]
    for path in uncertainty_files(paths):
        for entry in load_uncertainty(path):
            values = interval_ends(entry)
            for value, end in zip(values, ("low", "high") if entry.distribution.kind != "choice" else values):
                label = f"{entry.field.removeprefix('assumptions.')} = {value:g}" if isinstance(value, float) \
                    else f"{entry.field.removeprefix('assumptions.')} = {value}"
                if entry.distribution.kind != "choice":
                    label += f" ({end})"
                out.append((Scenario(label, {entry.field: value}), with_fields(raw, {entry.field: value})))
    return out


def scenario_settings(raw: dict, params: float | None = None, paths: list[str | Path] | None = None,
                      source: str = "<instance>") -> tuple[list[Scenario], list[Setting]]:
    """The scenarios and their Settings (with `params`: that model size), duplicates of an
    earlier scenario's Setting dropped (e.g. the choice equal to the instance's own value)."""
    from planner.evaluate import setting_from_instance, with_params
    from planner.schema.instance import parse_instance
    kept: list[Scenario] = []
    settings: list[Setting] = []
    for scenario, data in scenarios(raw, paths):
        try:
            instance = parse_instance(data, source)
        except InputError as err:
            raise InputError([Problem(f"{ROBUST_OPTION} scenario {scenario.label}", f"{p.path}: {p.message}")
                              for p in err.problems], source) from None
        s = setting_from_instance(instance)
        s = s if params is None else with_params(s, params)
        if any(_same_setting(s, t) for t in settings):
            continue
        kept.append(scenario)
        settings.append(s)
    return kept, settings


def _same_setting(a: Setting, b: Setting) -> bool:
    try:
        return bool(a == b)
    except (TypeError, ValueError):      # fields that do not compare (arrays): keep both
        return False


# -- the measure --------------------------------------------------------------------------


class RobustMeasure:
    """The robust key as a measure of `planner.solvers.bnb` (module docstring): `base` is the
    nominal measure (bnb.TIME, or bnb.compute_measure(kind)), `settings` the scenarios' Settings."""

    def __init__(self, base: str, settings: list[Setting], statistic: Statistic, labels: list[str] | None = None,
                 member_orders: dict | None = None):
        self.base = base
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
        per = np.stack([bnb._measure(t, c, idx, n, h, r, self.base) for t in self.settings])
        self.evaluations += per.size
        return self.statistic.of_values(per)

    def per_scenario(self, c, idx, n, h, r) -> np.ndarray:
        """(scenarios, plans): the base measure of each plan under each scenario."""
        return np.stack([bnb._measure(t, c, idx, n, h, r, self.base) for t in self.settings])

    def _member_order(self, c) -> np.ndarray:
        """(scenarios, classes): whether each scenario orders the class's members (micro-batch
        counts) by pipeline step as the nominal one does (`check_space`), which the box bound
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
            low, corners = bnb._box_bound(self.settings[j], c, sub, self.base, self.monos[j], cut[todo])
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
        r_fast, r_slow = bnb._fast_slow_r(c, box)
        plans = [(box["i"][alive], box["n1"][alive], box["h2"][alive], r_fast[alive]),
                 (box["i"][alive], box["n1"][alive], box["h1"][alive], r_slow[alive])]
        if aligned:
            keys = [self.statistic.of_values(corner_values[m][:, alive]) for m in range(2)]
        else:
            keys = [self.values(s, c, *p) for p in plans]
        return bound, [(*p, key) for p, key in zip(plans, keys)]


# -- the space ----------------------------------------------------------------------------


def _same_classes(a, b, member_order: bool = True) -> bool:
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


def _differs(space: DecisionSpace, settings: list[Setting], member_order: bool = True,
             orders: dict | None = None) -> str | None:
    """The first group whose classes differ between the nominal scenario and another (None: none).
    `orders`: filled, per pipeline class with members (`_member_key`), with whether each scenario
    orders its members as the nominal one does."""
    nominal = settings[0]
    for mode in space.modes:
        for precision in space.precisions:
            for ep in space.expert_scopes(nominal, mode):
                c = space.classes(nominal, mode, precision, ep)
                keys = _member_keys(c) if orders is not None and c is not None and c.members is not None else None
                for j, s in enumerate(settings[1:], 1):
                    other = space._classes_of(s, mode, precision, ep)     # not remembered: the nominal ones are
                    if tuple(space.expert_scopes(s, mode)) != tuple(space.expert_scopes(nominal, mode)) \
                            or not _same_classes(c, other, member_order):
                        return f"{mode} {precision}"
                    if keys is not None:
                        same = (c.members == other.members).all(axis=1)
                        for key in set(k for k, ok in zip(keys, same) if not ok):
                            orders.setdefault(key, np.ones(len(settings), bool))[j] = False
    return None


def check_space(space: DecisionSpace, objective: str, settings: list[Setting],
                labels: list[str]) -> tuple[DecisionSpace, dict]:
    """(the space searched robustly, the member orders of its pipeline classes for
    `RobustMeasure`): the objective's reductions under every scenario, which must agree (module
    docstring); InputError naming --robust when they cannot be made to."""
    spaces = [space.for_objective(s, objective) for s in settings]
    if any(x != spaces[0] for x in spaces[1:]):
        j = next(i for i, x in enumerate(spaces) if x != spaces[0])
        raise InputError([Problem(ROBUST_OPTION, f"scenario {labels[j]} changes which plans the space lists "
                                                 f"(its reductions for {objective}); not supported")])
    out, orders = spaces[0], {}
    group = _differs(out, settings)
    if group is not None:        # every M listed, as the member axis of its (S, Ca) class
        out = dataclasses.replace(out, all_micro_batches=True, faster_wins=False)
        group = _differs(out, settings, member_order=False, orders=orders)
    if group is not None:
        raise InputError([Problem(ROBUST_OPTION, f"the scenarios order the {group} pipeline rows (micro-batch "
                                                 f"counts, schedules) differently; a robust search of them is not "
                                                 f"supported")])
    return out, orders


def optimise(settings: list[Setting], space: DecisionSpace, objective: str, statistic: Statistic,
             labels: list[str], deadline: float = math.inf, solver: str = "bnb"):
    """((one-plan batch, robust value) or None, plans scored, proven bound) over the scenarios'
    `settings` (the first the instance as given): the robust counterpart of `planner.solve.optimise`.

    min_time: the least robust time to target (seconds) among plans whose robust time is within
    the duration limit; min_cost: the fewest nodes (USD) of such a plan, then the least robust
    time; max_compute: the most robust compute (FLOP), the statistic taken of 1/compute (the
    k-th largest of 1/C is 1/(the k-th smallest C)). `solver`: "bnb" or "exhaustive"."""
    from planner import objectives
    s = settings[0]
    windows = {t.window_s for t in settings}
    if len(windows) > 1:
        raise InputError([Problem(ROBUST_OPTION, "the scenarios change the duration limit; not supported")])
    space, orders = check_space(space, objective, settings, labels)
    base = bnb.compute_measure(s.target_kind) if objective == "max_compute" else bnb.TIME
    measure = RobustMeasure(base, settings, statistic, labels, orders)
    if solver == "exhaustive":
        from planner.solvers import exhaustive
        found, evaluations = exhaustive.optimise(s, space, objective, measure=measure)
        return found, evaluations, (0.0 if objective == "max_compute" else math.inf)
    if objective == "min_time":
        return objectives.min_time(s, space, deadline, measure=measure)
    if objective == "min_cost":
        return objectives.fewest_nodes(s, space, s.window_s, measure, deadline)
    return objectives.max_compute(s, space, deadline, measure=measure)
