"""Points of a `solve` sweep that share their work: one branch and bound for the points of a chunk whose
search differs only in the node limit, each point searching only above the limit of the point before.

A sweep over `fleet.nodes` (or `limits.max_nodes`) and any other field gives points whose resolved
setting (`planner.setting.setting_from_instance`) is the same for every node count (the WAN
bandwidth, say, is one number of it; the node limit is not in it unless a failure model reads
the fleet's size) and whose decision spaces differ only in `max_nodes`. Such points form a group
and are answered together (`search_together`), min_time only:

1. Grouping is by equality, checked, not assumed: the points' `Setting`s compare equal, and so do
   their decision spaces once `max_nodes` is set aside. Each point's classes are built by its own
   space (`DecisionSpace.classes`, as a single solve builds them; the pipeline rows, which read no
   node limit, once for the group: `DecisionSpace.with_max_nodes`).
2. Bands. Order the group's points by node limit. Every plan of point b (limit N_b) that is also a
   plan of the point a just below it (a class with the same decisions, unit and node floor, at
   n in a's range of that class: `row_keys`, `above_limit`) takes at least T*_a, a's least time,
   since a's space holds it; a's answer takes T_a <= T*_a (1 + TIE_REL). So b's plans split into
   the band (what `above_limit` keeps: n above a's range, and classes a does not have) and plans
   no faster than T_a / (1 + TIE_REL). When the band's answer takes T with T (1 + TIE_REL)^2 < T_a,
   every plan outside the band is slower than (1 + TIE_REL) x the band's least time, so none is
   within TIE_REL of b's optimum (the band's least time) and the band's answer (the first in tie
   order among the plans within TIE_REL of it) is b's. Otherwise (no plan in the band, a without a plan, or a band no faster than
   a by more than the tie tolerance: extra nodes that do not help) b's whole space is searched. The
   lowest point of a group searches its whole space.
3. One search for all bands: the classes of the bands are joined per (mode, precision, expert-parallel
   scope) (`join_classes`), each class tagged with its point, and searched by one
   `bnb.minimise_time(..., parts=...)`, which keeps an incumbent per point and tests every box
   against its own point's incumbent only: per point, what `objective_search.least_measure` does
   on its classes alone (`least_times`). A point's incumbent starts at min(duration limit,
   (1 + TIE_REL) x the least time of its seed plans) (`bnb.seed_measures`: real plans of its
   classes, which a single search visits first), so at least its optimum: no plan within TIE_REL
   of the optimum is pruned (as with a MIP's incumbent, `objective_search.min_time(incumbent_s=...)`).
   The groups of classes are searched in the order of their least seed; the order changes what is
   pruned when, never the plans within TIE_REL of the optimum, from which `best_of` takes the first
   in tie order.

`tests/test_sweep_shared.py` checks rows against single solves field for field (whole small grids,
one where extra nodes stop helping, and a random sample of the benchmark's grid) and the parts of
`minimise_time` against separate searches. Everything else a single solve does with a plan (the
evaluator's re-scoring, which must agree, and the row's fields) is done per point. Points that
cannot share (another objective or solver, a time limit, candidate model sizes, a fleet of pools,
constants with no valid search bound), points without a plan (their row explains why: the single
solve's search for the limits that bind) and points whose instance is invalid are answered one by
one (`answer.run_point`), as before. A shared point's `time_s` is its own preparation and
re-scoring time plus an equal share of its group's search.
"""

from __future__ import annotations

import dataclasses
import json
import math
import time
from typing import Any, Sequence

import numpy as np

from planner.cost.setting import PlanBatch, Setting
from planner.evaluate import evaluate
from planner.objectives import MIN_TIME, objective_named
from planner.questions.sweep.answer import run_point, solve_columns
from planner.questions.sweep.fields import with_fields
from planner.questions.sweep.spec import TIME_COLUMN, Point
from planner.schema.instance import Instance, parse_instance
from planner.solvers import bnb, monotone
from planner.solvers.objective_search import best_of
from planner.solvers.uniform import AGREEMENT_REL, SolveResult, plan_from_batch
from planner.setting import setting_from_instance
from planner.space import Classes, DecisionSpace


NODE_FIELDS = ("fleet.nodes", "limits.max_nodes")    # swept fields whose points may share a search


def node_groups(points: Sequence[Point]) -> list[list[Point]]:
    """The points in groups whose inputs differ only in NODE_FIELDS (each group in point order, the groups
    in the order of their first point): the points that may share a search (`search_together`)."""
    groups: dict[str, list[Point]] = {}
    for p in points:
        rest = {k: v for k, v in p.inputs.items() if not set(k.split("+")) <= set(NODE_FIELDS)}
        groups.setdefault(json.dumps(rest, sort_keys=True, default=str), []).append(p)
    return list(groups.values())


@dataclasses.dataclass
class _Prepared:
    point: Point
    instance: Instance
    setting: Setting
    space: DecisionSpace          # reduced for the objective (`DecisionSpace.for_objective`)
    spent_s: float                # wall time of its own steps so far


def shares(payload: dict) -> bool:
    """Whether a sweep's points may be answered together: `solve` with the branch and bound and no time
    limit (the objective is checked per point)."""
    return payload["command"] == "solve" and payload["solver"] == "bnb" and payload["time_limit_s"] is None


def run_chunk(payload: dict, points: Sequence[Point]) -> list[dict[str, Any]]:
    """Rows of several points (one task of a pool or of a Dask cluster); the points of a `solve` sweep
    that can share their search are answered together (`solve_chunk`), any other one by one."""
    if shares(payload):
        return solve_chunk(payload, points)
    return [run_point(payload, p) for p in points]


def solve_chunk(payload: dict, points: Sequence[Point]) -> list[dict[str, Any]]:
    """Rows of the points of a `solve` sweep (`shares(payload)`), in order: those that can share their
    search answered together (module docstring), the others one by one."""
    rows: dict[int, dict[str, Any]] = {}
    prepared: list[_Prepared] = []
    for p in points:
        start = time.perf_counter()
        ready = _prepare(payload, p)
        if ready is None:
            rows[p.index] = run_point(payload, p)
        else:
            ready.spent_s = time.perf_counter() - start
            prepared.append(ready)
    for group in _groups(prepared):
        for item, row in zip(group, _solve_group(payload, group)):
            rows[item.point.index] = row if row is not None else run_point(payload, item.point)
    return [rows[p.index] for p in points]


def _prepare(payload: dict, point: Point) -> _Prepared | None:
    """The point's instance, setting and space when its search may be shared, else None (answered alone,
    which also gives an invalid point its error row)."""
    try:
        instance = parse_instance(with_fields(payload["base"], point.inputs), payload["source"])
        objective = objective_named(payload["objective"] or instance.objective)
        if objective != MIN_TIME or instance.fleet.is_mixed or instance.search.params:
            return None
        setting = setting_from_instance(instance)
        if monotone.check(setting).unsupported:          # a single solve scores every plan instead
            return None
        space = DecisionSpace.from_instance(instance, setting).for_objective(setting, MIN_TIME)
    except Exception:  # noqa: BLE001 - the point alone reports it, with the message a single solve gives
        return None
    if space.placement is not None:
        return None
    return _Prepared(point, instance, setting, space, 0.0)


def _groups(prepared: list[_Prepared]) -> list[list[_Prepared]]:
    """The points whose settings are equal and whose spaces are equal but for max_nodes, in order of
    their first point."""
    groups: list[tuple[Setting, DecisionSpace, list[_Prepared]]] = []
    for item in prepared:
        shape = dataclasses.replace(item.space, max_nodes=0)
        for setting, space, members in groups:
            if _equal(setting, item.setting) and _equal(space, shape):
                members.append(item)
                break
        else:
            groups.append((item.setting, shape, [item]))
    return [members for _, _, members in groups]


def _equal(a: Any, b: Any) -> bool:
    """a == b as a plain truth value; False where the comparison has none (e.g. arrays inside)."""
    try:
        return bool(a == b)
    except (ValueError, TypeError):
        return False


def join_classes(parts: list[Classes]) -> Classes:
    """The classes of several points as one `Classes` (rows in the order given)."""
    first = parts[0].rows
    arrays = {f.name: np.concatenate([getattr(c.rows, f.name) for c in parts])
              for f in dataclasses.fields(first) if isinstance(getattr(first, f.name), np.ndarray)}
    rows = PlanBatch(mode=first.mode, precision=first.precision, expert_parallel=first.expert_parallel, **arrays)
    members = None if parts[0].members is None else np.concatenate([c.members for c in parts])
    step = None if parts[0].members is None else np.concatenate([c.member_step_s for c in parts])
    return Classes(rows, *(np.concatenate([getattr(c, f) for c in parts]) for f in ("n_lo", "n_hi", "unit", "min_nodes")),
                   members, step)


def row_keys(c: Classes) -> np.ndarray:
    """One key per class (bytes, as a numpy void array): every decision of its row, its unit, node floor
    and member axis; equal keys: the same plans at every n."""
    columns = [np.asarray(getattr(c.rows, f.name), dtype=float) for f in dataclasses.fields(c.rows)
               if isinstance(getattr(c.rows, f.name), np.ndarray)]
    columns += [c.unit.astype(float), c.min_nodes.astype(float)]
    if c.members is not None:
        columns += list(c.members.T.astype(float)) + list(c.member_step_s.T)
    table = np.ascontiguousarray(np.stack(columns, axis=1))
    return table.view(np.dtype((np.void, table.dtype.itemsize * table.shape[1]))).ravel()


def above_limit(c: Classes, below: Classes, keys: np.ndarray | None = None,
                known: np.ndarray | None = None) -> Classes | None:
    """The classes `c` of a point without the plans that are plans of the point of a smaller node limit
    whose classes are `below`: a class with the same key (`row_keys`) and n_lo at least that class's
    keeps only n above its n_hi; any other class is kept whole. None if nothing is left. `keys`,
    `known`: the row keys of `c` and `below` when already computed."""
    keys = row_keys(c) if keys is None else keys
    known = row_keys(below) if known is None else known
    order = np.argsort(known, kind="stable")
    at = np.minimum(np.searchsorted(known[order], keys), known.size - 1)
    match = np.where(known[order][at] == keys, order[at], -1)
    n_lo = c.n_lo.copy()
    inside = (match >= 0) & (c.n_lo >= below.n_lo[np.maximum(match, 0)])
    n_lo[inside] = np.maximum(n_lo[inside], below.n_hi[match[inside]] + 1)
    out = Classes(c.rows, n_lo, c.n_hi, c.unit, c.min_nodes, c.members, c.member_step_s)
    keep = n_lo <= c.n_hi
    return out.take(keep) if keep.any() else None


def least_times(s: Setting, h_max: int, r_max: int, groups: list[list[tuple[int, Classes]]],
                 count: int) -> list[tuple[PlanBatch, float] | None]:
    """Per part 0..count-1, the least-time plan of its classes within the duration limit (ties by
    `best_of`), or None: `objective_search.min_time` of each part, searched together. `groups`: per
    (mode, precision, EP scope), the (part, classes) pairs."""
    joined = []
    seed_best = np.full(count, math.inf)
    for built in groups:
        if not built:
            continue
        c = join_classes([c for _, c in built])
        parts = np.concatenate([np.full(part.size, k, np.int64) for k, part in built])
        seeds = bnb.seed_measures(s, c, h_max, r_max)
        seeds = np.where(np.isfinite(seeds), seeds, np.inf)
        np.minimum.at(seed_best, parts, seeds)
        joined.append((float(seeds.min()), len(joined), c, parts))
    bound = np.minimum(s.window_s, seed_best * (1 + bnb.TIE_REL))
    found: list[list[bnb.Found]] = [[] for _ in range(count)]
    for _, _, c, parts in sorted(joined, key=lambda x: (x[0], x[1])):
        f = bnb.minimise_time(s, c, h_max, r_max, bound, parts=parts)
        owner = parts[f.classes]
        for k in np.unique(owner):
            mine = owner == k
            times = f.time_s[mine]
            found[k].append(bnb.Found(f.batch.take(mine), times))
            bound[k] = min(bound[k], float(times.min()) * (1 + bnb.TIE_REL))
    out = []
    for k in range(count):
        best = best_of(s, found[k])
        out.append(best if best is not None and best[1] <= s.window_s else None)
    return out


def search_together(s: Setting, spaces: list[DecisionSpace]) -> list[tuple[PlanBatch, float] | None]:
    """Per space (one per point, equal but for max_nodes), its least-time plan and its time, or None:
    `objective_search.min_time` of each (module docstring: searched together, each above the node
    limit of the point before it, and again whole where that does not settle it)."""
    first = spaces[0]
    order = sorted(range(len(spaces)), key=lambda k: spaces[k].max_nodes)
    spaces = [first.with_max_nodes(space.max_nodes) for space in spaces]    # equal to them; pipeline rows built once
    h_max, r_max = first.max_inner_steps, first.max_regional_rounds
    keys = [(mode, precision, ep) for mode in first.modes for precision in first.precisions
            for ep in first.expert_scopes(s, mode)]
    classes = [[space.classes(s, *key) for key in keys] for space in spaces]
    below = {k: order[i - 1] for i, k in enumerate(order) if i}
    banded = [[] for _ in keys]
    memo: dict[tuple[int, int], np.ndarray] = {}       # row keys per (point, group), each computed once

    def key_of(k: int, g: int) -> np.ndarray:
        if (k, g) not in memo:
            memo[(k, g)] = row_keys(classes[k][g])
        return memo[(k, g)]

    for k in range(len(spaces)):
        for g, c in enumerate(classes[k]):
            if c is not None and k in below and classes[below[k]][g] is not None:
                c = above_limit(c, classes[below[k]][g], key_of(k, g), key_of(below[k], g))
            if c is not None:
                banded[g].append((k, c))
    above = least_times(s, h_max, r_max, banded, len(spaces))
    answers: list[tuple[PlanBatch, float] | None] = [None] * len(spaces)
    for k in order:
        prev = answers[below[k]] if k in below else None
        if k not in below:
            answers[k] = above[k]
        elif prev is not None and above[k] is not None and above[k][1] * (1 + bnb.TIE_REL) ** 2 < prev[1]:
            answers[k] = above[k]
        else:       # not settled by the band above the point before: the whole space
            whole = [[(0, c)] if c is not None else [] for c in classes[k]]
            answers[k] = least_times(s, h_max, r_max, whole, 1)[0]
    return answers


def _solve_group(payload: dict, group: list[_Prepared]) -> list[dict[str, Any] | None]:
    """Rows of a group's points (None for a point without a plan: answered alone, with its explanation)."""
    start = time.perf_counter()
    s = group[0].setting
    answers = search_together(s, [item.space for item in group])
    share = (time.perf_counter() - start) / len(group)
    rows: list[dict[str, Any] | None] = []
    for item, answer in zip(group, answers):
        if answer is None:
            rows.append(None)
            continue
        begin = time.perf_counter()
        batch, value = answer
        plan = plan_from_batch(batch, 0, item.setting.is_moe)
        result = evaluate(item.instance, plan)
        rescored = result.values[MIN_TIME.value_field(None)]
        if not abs(rescored - value) <= AGREEMENT_REL * abs(value):     # as planner.solve.solve checks
            rows.append(None)
            continue
        r = SolveResult(MIN_TIME, "bnb", "optimal", value, value, 0.0, share, 0, plan, result,
                        model_params=item.setting.params)
        row: dict[str, Any] = {c: None for c in payload["columns"]}
        row.update(index=item.point.index, key=item.point.key, **item.point.inputs)
        row.update(solve_columns(r))
        row[TIME_COLUMN] = item.spent_s + share + time.perf_counter() - begin
        rows.append({c: row.get(c) for c in payload["columns"]})
    return rows
