"""The robust mixed-integer model's presolve (docs/robust.md, "The robust MIP": "The presolve" and
"Every micro-batch count"): the classes that cannot hold a wanted plan, dropped by the k-th largest of
the active scenarios' class bounds (`Pruning`), and the space whose pipeline micro-batch counts are one
class each, without the groups those bounds drop (`EveryMember`). Used by `planner.mip.robust`."""

from __future__ import annotations

import dataclasses
import math
import re

import numpy as np

from planner.cost.setting import Setting
from planner.mip.table_bounds import class_bounds, compute_box_bounds, least_nodes
from planner.mip.tables import Tables, compute_bounds, labels
from planner.objectives import Objective
from planner.space import Classes, DecisionSpace


class EveryMember(DecisionSpace):
    """A space whose pipeline classes with a member axis (`Classes.members`: every micro-batch count of an
    (S, Ca) row, listed when the scenarios order them differently, `planner.robust.SpaceCheck`) are one
    class per member, M fixed: the model's tables list one M per class (its row), so that every plan of
    the space is a plan of one class of the model."""

    @classmethod
    def of(cls, space: DecisionSpace, dropped: frozenset = frozenset()) -> "EveryMember":
        """The space, without the classes whose `group_key` is in `dropped` (`Pruning.groups`)."""
        out = cls(**{f.name: getattr(space, f.name) for f in dataclasses.fields(space)})
        object.__setattr__(out, "_dropped", dropped)      # not a field: the space compares as `space` does
        return out

    def classes(self, setting: Setting, mode: str, precision: str, expert_parallel: str = "none") -> Classes | None:
        c = super().classes(setting, mode, precision, expert_parallel)
        if c is None:
            return c
        memo = self.__dict__.setdefault("_each", {})
        key = (mode, precision, expert_parallel)
        if key not in memo or memo[key][0] is not c:
            dropped = self.__dict__.get("_dropped", frozenset())
            kept = np.arange(c.size)
            if dropped:     # a row's members share its group (its label with the first member's M)
                kept = np.flatnonzero([group_key(x) not in dropped for x in labels(c, kept)])
            each = None
            if kept.size and c.members is None:
                each = c.take(kept)
            elif kept.size:
                row = np.repeat(kept, c.member_count)
                j = np.tile(np.arange(c.member_count), kept.size)
                rows = c.rows.take(row)
                rows.micro_batches = c.members[row, j]
                each = Classes(rows, c.n_lo[row], c.n_hi[row], c.unit[row], c.min_nodes[row])
            memo[key] = (c, each)
        return memo[key][1]


def group_key(label: str) -> str:
    """A class label (`tables.labels`) without its micro-batch count `_M<count>`: the class of the reduced
    space (one M per (S, Ca)) that the members of `EveryMember` come from."""
    return re.sub(r"_M\d+(?=_|$)", "", label)


class Pruning:
    """The robust presolve (docs/robust.md, "The robust MIP"): the classes and fixed plans kept, by label.

    A first incumbent is the nominal presolve's plan (`presolve.presolve`, `presolve_compute`) of the first
    active scenario, scored under every scenario (`robust_value`). Each scenario's own box bounds per class
    (`table_bounds.class_bounds`: a lower bound on ln T of every plan of the class; max_compute `compute_bounds`
    and `compute_box_bounds`: an upper bound on ln C) give, by the statistic over the active scenarios A,
    a lower bound on the robust value of every plan of the class (the k-th largest is non-decreasing in
    each entry, and over A it never exceeds the one over all S): a class whose bound exceeds the
    incumbent, or (min_time) ln W, cannot hold a better plan within the duration limit and leaves every
    block. min_cost: a class whose least nodes
    (`table_bounds.least_nodes` per scenario, their k-th largest over A: a plan meeting the duration limit
    under the statistic meets it in at least |A| - k + 1 scenarios of A, so it uses at least the least
    nodes of each of those) exceed the incumbent's nodes, or whose bound on ln T exceeds ln W, leaves
    too; the k-th largest least nodes is the first block's `class_least_nodes` (`nodes-used`). Each
    block keeps its own scenario's class bounds as `class_lower` (the `time-to-target` cut)."""

    def __init__(self, objective: Objective, k: int):
        self.objective, self.k = objective, k
        self.sync: set[str] | None = None        # labels kept (None: not pruned yet)
        self.fixed: set[str] | None = None
        self.least: dict[str, float] = {}
        self._bounds: dict[int, tuple] = {}

    def bounds(self, t: Tables) -> tuple[np.ndarray, np.ndarray]:
        """`table_bounds.class_bounds` of the full tables t (remembered)."""
        if id(t) not in self._bounds:
            self._bounds[id(t)] = (t, class_bounds(t))
        return self._bounds[id(t)][1]

    def lower(self, t: Tables) -> np.ndarray:
        """Per class of the full tables t, a lower bound in model units of every plan's measure under t."""
        if not t.sync:
            return np.zeros(0)
        if self.objective.maximise:
            upper = np.minimum(compute_bounds(t), compute_box_bounds(t))
            return np.where(np.isfinite(upper), -upper, np.inf)
        return self.bounds(t)[0].min(axis=1)

    def own(self, t: Tables) -> np.ndarray:
        """Per fixed plan of t, its measure in model units."""
        return np.array([-p.log_compute if self.objective.maximise else p.log_time for p in t.fixed])

    def cut(self, best: float, t: Tables) -> float:
        """The largest lower bound (model units) a class may have and still hold a wanted plan: the incumbent
        (within 1e-9), and (min_time) ln W; min_cost: ln W on the time bound (the nodes apart)."""
        cut = best + 1e-9 * max(1.0, abs(best)) if math.isfinite(best) else math.inf
        if self.objective.by_cost:
            return math.log(t.setting.window_s) + 1e-12
        if not self.objective.maximise:
            cut = min(cut, math.log(t.setting.window_s) + 1e-12)
        return cut

    def groups(self, seeds: list[Tables], best: float) -> frozenset:
        """The `group_key`s whose classes cannot hold a wanted plan, from the active scenarios' tables of the
        reduced space (`seeds`): under a scenario, the class of least pipeline step of an (S, Ca) group is
        at least as fast as every other micro-batch count of it at every n and H (the space's reduction,
        exact under that scenario), so its bound bounds every member's; the k-th largest over the
        scenarios bounds every member's robust value. A group missing from a scenario is not bounded."""
        per = []
        for t in seeds:
            bound: dict[str, float] = {}
            names = [e.label for e in t.sync] + [p.label for p in t.fixed]
            for name, b in zip(names, np.concatenate([self.lower(t), self.own(t)])):
                key = group_key(name)
                bound[key] = min(bound.get(key, math.inf), float(b))
            per.append(bound)
        keys = sorted(set().union(*per))
        if not keys:
            return frozenset()
        lower = kth_largest_rows(np.array([[d.get(key, -math.inf) for key in keys] for d in per]),
                                 min(self.k, len(seeds)))
        cut = self.cut(best, seeds[0])
        return frozenset(key for key, b in zip(keys, lower) if b > cut)

    def prune(self, full: dict[int, Tables], best: float) -> None:
        """Decide the classes and fixed plans kept from the active scenarios' full tables."""
        ts = list(full.values())
        k = min(self.k, len(ts))
        lower = kth_largest_rows(np.stack([self.lower(t) for t in ts]), k)
        fixed = kth_largest_rows(np.stack([self.own(t) for t in ts]), k)
        first = ts[0]
        cut = self.cut(best, first)
        if self.objective.by_cost:
            ln_w = math.log(first.setting.window_s) + 1e-12
            least = kth_largest_rows(np.stack([least_nodes(t, *self.bounds(t)) if t.sync else np.zeros(0)
                                               for t in ts]), k)
            keep = (lower <= cut) & (least <= best)
            keep_fixed = (fixed <= ln_w) & (np.array([p.nodes for p in first.fixed]) <= best)
            self.least = {e.label: float(x) for e, x, on in zip(first.sync, least, keep) if on}
        else:
            keep, keep_fixed = (lower <= cut) & (lower < math.inf), (fixed <= cut) & (fixed < math.inf)
        self.sync = {e.label for e, on in zip(first.sync, keep) if on}
        self.fixed = {p.label for p, on in zip(first.fixed, keep_fixed) if on}

    def apply(self, t: Tables, first: bool) -> Tables:
        """The scenario's tables with only the kept classes, each with its own class bound (`class_lower`);
        the first block's with the least nodes of min_cost."""
        keep = [a for a, e in enumerate(t.sync) if e.label in self.sync]
        lower = None if self.objective.maximise or not t.sync else self.bounds(t)[0].min(axis=1)[keep]
        least = np.array([self.least[t.sync[a].label] for a in keep]) if self.objective.by_cost and first else None
        pruned = Tables(t.setting, t.space, t.groups, [t.sync[a] for a in keep],
                        [p for p in t.fixed if p.label in self.fixed], t.n_max, t.h_max, t.r_max, lower,
                        t.eta_h_falls, least)
        if pruned.sync:
            pruned.n_max = max(e.n_hi for e in pruned.sync)
        if not any(e.mode == "hierarchical" for e in pruned.sync):
            pruned.r_max = 1
        return pruned


def kth_largest_rows(values: np.ndarray, k: int) -> np.ndarray:
    """The k-th largest over axis 0 (NaN as inf)."""
    v = np.sort(np.nan_to_num(np.asarray(values, dtype=float), nan=np.inf), axis=0)
    return v[v.shape[0] - k] if v.shape[0] else v
