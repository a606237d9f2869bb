"""A fleet of pools in ONE mixed-integer model: which pools are used and how many nodes of each,
chosen with every other decision (docs/mip.md, "A fleet of pools"; docs/fleet.md section 4).

Under the synchronous straggler rule (`planner.sync.straggler.rule`) a plan on pools U is scored by
`mixed_setting(U, precision)`, which depends on U only through its **pattern**

    key = (precision, the slowest pool s of U, the least node memory V of U, the sites S(U)),

s = argmin_{p in U} (F_p u_p, p) (ties to the first listed, as `planner.sync.straggler.rule.slowest`).
A pattern allows the pools that support its precision, are not slower than s (in that order), have memory
>= V and sit at a site of S: `PoolKey.allowed`. U has exactly that pattern iff U is a subset
of `allowed` that holds s, a pool of memory V and a pool at every site of S.

The model (`add_pool_families`) keeps the class formulation of `planner.mip.formulation` on the
**merged tables** of the distinct settings of the patterns (a class is tagged by its setting,
`PoolTables`), and adds compact rows over the pools:

    use_p in {0, 1}, cnt_p integer          pool p used, and its nodes
    x_k in {0, 1}                           pattern k chosen

    pool-key       sum_{k of setting j} x_k = sum_{c of setting j} y_c + sum_{f of j} lam_f   (one row per setting)
    pool-count     use_p <= cnt_p <= count_p use_p
    pool-total     sum_p cnt_p = nodes
    pool-allowed   use_p + sum_{k : p not allowed in k} x_k <= 1               (slower, smaller, no precision, off-site)
    pool-required  sum_{k : s_k = p} x_k <= use_p;  sum_{k : V_k = v} x_k <= sum_{p : V_p = v} use_p;
                   sum_{k : site j in S_k} x_k <= sum_{p at j} use_p               (the pattern is U's own)
    pool-spread    sum_p use_p <= unit_c n + unit_c - 1 for the chosen class (a plan of n replicas of
                   unit_c nodes uses N = max(n unit_c, min_nodes, |U|) nodes and n >= floor(|U| / unit_c),
                   as the decomposition's part of U has min_nodes >= |U|); <= 1 for a one-node plan
    pool-cost      cost = sum_p cnt_p price_p / price_max  (node prices, USD; exact, not a fill rule)
    pool-budget    cost <= budget / price_max

Rows: O(P + memory levels + sites + settings); columns: 2P + patterns. Nothing is indexed by a
subset of pools. The number of patterns is at most (precisions x P x memory levels) without sites,
times the subsets of the pools' sites that hold the slowest pool's site with sites; the tables
(the classes) are built once per distinct setting.

Why it is exact (a relaxation that becomes tight): every mixed plan (counts with U, a plan of N =
max(n unit, min_nodes, |U|) nodes) satisfies the rows with x at U's pattern, its class of that
pattern's setting and cost its own, so the model's optimum is a lower bound (the class rows are a
relaxation, docs/mip.md). Conversely the pattern rows make the chosen setting the one of the pools
the model uses, and a model point with idle nodes beyond N is the plan with N nodes of the same U
(`mixed_plan`: its time is the same, its cost not larger).
"""

from __future__ import annotations

import dataclasses
import math
from itertools import chain

import numpy as np

from planner.objectives import MIN_COST, MIN_TIME, Objective
from planner.fleet.pools import PoolSetting
from planner.fleet.replicas import fleet_cost_usd
from planner.sync.straggler.rule import mixed_setting
from planner.mip.pool_patterns import (FillOrder, PoolTables, SettingPart, check_deadline, check_site_items,
                                       collector_paused, fill_order, key_ranges, mixed_plan, PatternCosts,
                                       pattern_groups, pool_keys, price_scale, site_links)
from planner.sync.proportional.mip_rows import rho_max, rule_incumbent, rule_space, rule_tables
from planner.mip.presolve import beaten, presolve, presolve_compute
from planner.mip.table_bounds import class_bounds, compute_box_bounds
from planner.mip.tables import Tables, compute_bounds
from planner.solvers import UnsupportedBySolver
from planner.sync.rules import rule_of



def same_efficiency(a: Tables, b: Tables) -> bool:
    """Whether two settings' tables share omega, psi and the straggler factor (the merged model reads them
    from one setting): compared on a grid of n, H_eff, gain and u."""
    sa, sb = a.setting, b.setting
    if (sa.window_s, sa.goodput, sa.target, sa.active_params, sa.params, sa.target_kind) != \
            (sb.window_s, sb.goodput, sb.target, sb.active_params, sb.params, sb.target_kind) or \
            a.eta_h_falls != b.eta_h_falls or sa.assumptions.replica_penalty != sb.assumptions.replica_penalty:
        return False
    n, h, g = np.meshgrid([1, 2, 3, 8, 64, 1000], [1, 2, 7, 50, 900], [0.3, 1.0], indexing="ij")
    u = np.log(1e9) + 3 * g
    return all(np.allclose(x, y, rtol=1e-12, atol=0) or np.array_equal(x, y) for x, y in (
        (a.omega(n, h, g), b.omega(n, h, g)), (a.psi(n, h, u), b.psi(n, h, u)),
        (a.ln_straggler(n), b.ln_straggler(n))))


def merge(parts: list[SettingPart], space) -> Tables:
    """One Tables of the settings' classes: groups concatenated, every class and fixed plan labelled by
    its setting (`s<j>_<class>`), the first setting's efficiency functions (`same_efficiency` checked)."""
    first = next(p.tables for p in parts if p.tables is not None)
    groups, sync, fixed, lower = [], [], [], []
    for j, part in enumerate(parts):
        t = part.tables
        if t is None:
            continue
        if not same_efficiency(first, t):
            raise UnsupportedBySolver("the pools' settings differ in their efficiency or straggler laws (e.g. per-pool "
                                      "assumptions); the one-model path needs them shared; use --solver bnb")
        part.group_offset, part.sync_offset, part.fixed_offset = len(groups), len(sync), len(fixed)
        groups += t.groups
        sync += [dataclasses.replace(e, group=e.group + part.group_offset, label=f"s{j}_{e.label}") for e in t.sync]
        fixed += [dataclasses.replace(f, group=f.group + part.group_offset, label=f"s{j}_{f.label}") for f in t.fixed]
        lower += list(t.class_lower) if t.class_lower is not None else [-math.inf] * len(t.sync)
    for listed in (sync, fixed):      # labels name the model's columns: one each (a class's label leaves out
        seen: dict[str, int] = {}     # decisions some profiles add, e.g. the ZeRO shards of a one-replica plan)
        for a, e in enumerate(listed):
            count = seen[e.label] = seen.get(e.label, 0) + 1
            if count > 1:
                listed[a] = dataclasses.replace(e, label=f"{e.label}_{count}")
    merged = Tables(first.setting, space, groups, sync, fixed, eta_h_falls=first.eta_h_falls)
    merged.n_max = max([e.n_hi for e in sync], default=1)
    merged.h_max = max([p.tables.h_max for p in parts if p.tables is not None], default=1)
    merged.r_max = max([p.tables.r_max for p in parts if p.tables is not None], default=1)
    merged.class_lower = np.array(lower, dtype=float) if sync else None
    return merged


def setting_parts(pt: PoolTables, key_links: list[tuple[float, ...]], sites,
                  params: float | None) -> tuple[list[SettingPart], np.ndarray]:
    """The distinct settings of the patterns `pt.keys` (node ranges `pt.ranges`) as SettingParts, in the
    order their first pattern is listed, and each pattern's part (an array over the keys).

    A pattern's setting depends only on its shape (precision, slowest pool, least memory, links of its
    sites): `mixed_setting` of the shape's first pattern's first cover, with its unit price (`params`:
    the model's parameters when fixed). Shapes whose settings print alike (`repr`) are one part. A
    part's keys are its patterns in listing order, [lo, hi] the hull of their ranges, `exact_range`
    whether the ranges, sorted, leave no gap in [lo, hi]. (The loop over the patterns that did this one
    pattern at a time, ~0.6 s of 16 pools in 16 cities' 131,070, now works per shape and over arrays:
    the same parts; tests/test_pool_tables_vector.py compares them with that loop.)"""
    from planner.setting import with_params
    from planner.solvers.pool_parts import unit_price
    shape_of: dict[tuple, int] = {}
    shape = np.array([shape_of.setdefault((key.precision, key.slowest, key.memory_bytes, links), len(shape_of))
                      for key, links in zip(pt.keys, key_links)], dtype=np.int64)
    first = np.full(len(shape_of), len(pt.keys), dtype=np.int64)
    np.minimum.at(first, shape, np.arange(len(pt.keys)))
    parts, index, part_of_shape = [], {}, []
    for k in first.tolist():                  # shapes in order of their first pattern
        key = pt.keys[k]
        s = mixed_setting(pt.pools, key.covers[0], key.precision, sites)
        s = unit_price(s if params is None else with_params(s, params))
        j = index.setdefault(repr(s), len(parts))
        if j == len(parts):
            parts.append(SettingPart(s, [], 0, 0, True))
        part_of_shape.append(j)
    part_of_key = np.array(part_of_shape, dtype=np.int64)[shape] if pt.keys else np.zeros(0, np.int64)
    lo = np.array([r[0] for r in pt.ranges], dtype=np.int64)
    hi = np.array([r[1] for r in pt.ranges], dtype=np.int64)
    order = np.lexsort((hi, lo, part_of_key))         # by part, then by range (the gap check's order)
    starts = np.searchsorted(part_of_key[order], np.arange(len(parts)))
    ends = np.append(starts[1:], len(order))
    # reach before each pattern: the largest hi of the part's patterns before it (sorted), lo - 1 at the first;
    # offset by part so that one running maximum stays within each part (hi < offset: counts within the cap)
    offset = (int(hi.max()) + 2 if hi.size else 1) * part_of_key[order]
    reach = np.maximum.accumulate(hi[order] + offset) - offset
    before = np.concatenate(([0], reach[:-1])) if order.size else reach
    gap = lo[order] > before + 1
    gap[starts[starts < order.size]] = False
    for j, part in enumerate(parts):
        a, b = int(starts[j]), int(ends[j])
        part.keys = np.sort(order[a:b]).tolist()
        part.lo, part.hi = int(lo[order[a]]), int(hi[order[a:b]].max())
        part.exact_range = not bool(gap[a:b].any())
    return parts, part_of_key


@collector_paused()
def pool_tables(instance, pools: list[PoolSetting], objective: Objective, params: float | None,
                deadline: float = math.inf) -> PoolTables:
    """The patterns of the fleet, the tables of their distinct settings (presolved: min_time drops the
    classes that cannot beat the best plan the presolves found; min_cost those that cannot meet the
    duration limit) and their merge. DeadlinePassed when `deadline` (time.perf_counter()) comes first."""
    from planner.mip.pool_regions import model_sites
    from planner.solvers.certified import check_supported, tables_or_refuse
    from planner.solvers.pool_parts import base_space
    from planner.sync.straggler.search import compute_bound_s
    space = base_space(instance, pools)
    sites = model_sites(instance)          # chosen regions: each site its own region (a relaxation)
    cap = min(sum(p.count for p in pools), instance.limits.max_nodes or math.inf)
    budget = instance.limits.budget_usd
    listed = pool_keys(pools, space.precisions, sites is not None, deadline)
    fill = fill_order(pools)                                          # node prices, cheapest pools first
    items = site_links(pools, sites) if sites is not None else None      # the links of every set of sites
    listed_links = items.key_links(listed) if items is not None else [()] * len(listed)
    gapped: set[int] = set()             # patterns whose node counts within the budget are not one interval
    spans = key_ranges(pools, listed, space.min_nodes, cap, budget, fill, deadline, gapped)
    kept = [k for k, span in enumerate(spans) if span is not None]
    keys, key_links, ranges = [listed[k] for k in kept], [listed_links[k] for k in kept], [spans[k] for k in kept]
    pt = PoolTables(pools, keys, [], None, space.min_nodes, budget, ranges, rule=rule_of(instance))
    pt.parts, part_of_key = setting_parts(pt, key_links, sites, params)
    parts, rule = pt.parts, pt.rule
    for k in (a for a, k in enumerate(kept) if k in gapped):      # a range with a gap inside: not every N
        parts[int(part_of_key[k])].exact_range = False
    if parts:
        check_supported(parts[0].setting, objective)
    pt.groups = pattern_groups(pools, keys, sites, key_links)
    pt.group_part = [int(part_of_key[g.keys[0]]) for g in pt.groups]
    if pt.groups:
        of_group = np.fromiter(chain.from_iterable(g.keys for g in pt.groups), dtype=np.int64, count=len(keys))
        if np.any(part_of_key[of_group] != np.repeat(pt.group_part, [len(g.keys) for g in pt.groups])):
            raise AssertionError("the patterns of a group have different settings")
    if items is not None:
        check_site_items(items, keys, sites, deadline)
    pt.sites = items
    ln_w = math.log(parts[0].setting.window_s) if parts else 0.0
    best, best_plan, solved, least = math.inf, None, [None] * len(parts), [None] * len(parts)
    held_costs: dict[int, tuple[PatternCosts, np.ndarray]] = {}     # min_cost: each part's patterns laid out once
    # settings of least compute-only bound first: once a plan is known, a setting whose bound cannot beat it
    # is skipped before its tables are built (`straggler.search.compute_bound_s`, 0 where it is not known to hold)
    floor_s = [compute_bound_s(part.setting, part.hi) for part in parts]
    if rule != "straggler":          # a replica of the rule steps up to rho_max times the pace
        floor_s = [f / rho_max(pt, part) for f, part in zip(floor_s, parts)]
    for j in sorted(range(len(parts)), key=lambda j: (floor_s[j], j)):
        check_deadline(deadline)
        part = parts[j]
        solved[j], least[j] = set(), np.zeros(0)
        if not objective.maximise and floor_s[j] > part.setting.window_s:
            continue                  # no plan of the setting meets the duration limit
        if objective.by_time and floor_s[j] > 0 and math.log(floor_s[j]) > best + 1e-9 * max(1.0, abs(best)):
            continue                  # ... or none beats the best plan found
        if objective.maximise and floor_s[j] > 0 and math.isfinite(best) and \
                math.log(part.setting.target * part.setting.window_s / floor_s[j]) < -best - 1e-9 * max(1.0, abs(best)):
            continue                  # C <= N F u W gamma = C_target W / floor_s (same facts): below the best
        if objective.by_cost and math.isfinite(best) and floor_s[j] > 0:
            fewest = math.ceil(part.hi * floor_s[j] / part.setting.window_s - 1e-9)    # N T >= N_hi floor_s
            costs, ranges = held_costs[j] = _part_costs(pt, part, fill)     # kept for the cut (`_least_costs`)
            if costs.least(fewest, ranges) / price_scale(pools) > best * (1 + 1e-12):
                continue
        key = keys[part.keys[0]]
        part_space = rule_space(dataclasses.replace(space, precisions=(key.precision,), min_nodes=part.lo,
                                                    max_nodes=part.hi), rule)
        if part_space is None:
            continue                  # the rule applies to none of the modes searched
        t = tables_or_refuse(part.setting, part_space.for_objective(part.setting, objective))
        pt.classes_total += len(t.sync) + len(t.fixed)
        part.fixed = list(t.fixed)
        if rule != "straggler":       # bounds of the rule; the presolve's plan scored under the rule
            pruned, least[j] = rule_tables(t, objective, rule, rho_max(pt, part))
            found = rule_incumbent(pt, j, pruned, objective)
            if found is not None and found[0] < best:
                best, best_plan = found
        elif not objective.by_cost and part.exact_range:
            pruned, plan, value, done = presolve_compute(t) if objective.maximise else _presolve_time(t, best)
            part.dropped = _cut(value)        # the presolves' own cut: classes bounded above it are dropped
            if plan is not None and value < best:
                best, best_plan = value, mixed_plan(pt, j, pruned, plan)
            solved[j] = done
        elif objective.maximise:      # no exact incumbent from a setting whose node counts have gaps
            pruned = _compute_bounded(t)
        else:
            bounds = class_bounds(t) if t.sync else None      # once for both (the same arrays: neither writes them)
            if objective.by_cost and part.exact_range:       # its incumbent: the fewest nodes it scored
                _, plan, _, _ = presolve(t, MIN_COST, bounds)
                if plan is not None:
                    found = mixed_plan(pt, j, t, plan)
                    cost = fleet_cost_usd(pools, found.counts) / price_scale(pools)
                    if cost < best:
                        best, best_plan = cost, found
            pruned, least[j] = _feasible_classes(t, ln_w, bounds)
        part.tables = pruned
    if objective.by_cost and math.isfinite(best):      # drop what cannot cost less than the incumbent
        cut = best * (1 + 1e-12)
        for j, part in enumerate(parts):
            t, fewest = part.tables, least[j]
            if t is None:
                continue
            costs = _least_costs(pt, part, held_costs.get(j))
            keep = np.array([costs(x) <= cut for x in fewest], dtype=bool)
            part.tables = Tables(t.setting, t.space, t.groups, [e for e, k in zip(t.sync, keep) if k],
                                 [f for f in t.fixed if costs(f.nodes) <= cut], t.n_max, t.h_max, t.r_max,
                                 t.class_lower[keep] if t.class_lower is not None else None, t.eta_h_falls)
    if not objective.by_cost and math.isfinite(best):   # the best of all presolves cuts them all
        cut = _cut(best)
        for j, part in enumerate(parts):
            t = part.tables
            if t is None:
                continue
            part.dropped = min(part.dropped, cut)
            keep = np.array([lb <= cut for lb in t.class_lower], dtype=bool) if t.class_lower is not None else \
                np.ones(len(t.sync), bool)
            at = np.cumsum(keep) - 1
            solved[j] = {int(at[a]) for a in solved[j] if keep[a]}
            part.tables = Tables(t.setting, t.space, t.groups, [e for e, k in zip(t.sync, keep) if k],
                                 [f for f in t.fixed if (f.log_time if objective.by_time else -f.log_compute) <= cut],
                                 t.n_max, t.h_max, t.r_max,
                                 t.class_lower[keep] if t.class_lower is not None else None, t.eta_h_falls)
    for part in parts:
        if not objective.by_cost and part.tables is not None and rule == "straggler":
            part.node_bounds = node_bounds(part.tables, part.fixed, objective)
        if part.tables is not None and not (part.tables.sync or part.tables.fixed):
            part.tables = None
    merged_space = dataclasses.replace(space, max_nodes=int(cap))
    live = [p for p in parts if p.tables is not None]
    pt.merged = merge(parts, merged_space) if live else Tables(parts[0].setting if parts else None, merged_space, [])
    pt.solved = {part.sync_offset + a for part, done in zip(parts, solved) if part.tables is not None for a in done}
    pt.incumbent = (best, best_plan) if best_plan is not None else None
    if rule != "straggler":
        from planner.sync.proportional.mip_rows import RuleRows
        pt.rule_rows = RuleRows.of(pt, rule)
    return pt


def _presolve_time(t: Tables, best: float):
    """`presolve(t, MIN_TIME)`, or, when nothing of the setting survives the cut at the best plan found
    so far (ln T `best`; `presolve.beaten` by the coarse box bounds the presolve starts from), the
    tables emptied with no plan: the presolve would find no better plan and the cut at the best plan
    of all settings would drop whatever it kept. Skipping it leaves the tables merged, the model
    and the settings' `dropped` (then the cut at the best of all) as they were."""
    bounds = class_bounds(t) if t.sync else None
    if bounds is not None and math.isfinite(best) and beaten(t, _cut(best), bounds):
        return Tables(t.setting, t.space, t.groups, [], [], t.n_max, t.h_max, 1, np.zeros(0), t.eta_h_falls), \
            None, math.inf, set()
    return presolve(t, MIN_TIME, bounds)


def _cut(value: float) -> float:
    """The presolves' cut at a best value (`presolve.presolve`, `presolve_compute`): classes bounded above it
    are dropped."""
    return value + 1e-9 * max(1.0, abs(value)) if math.isfinite(value) else math.inf


def node_bounds(t: Tables, fixed, objective: Objective) -> tuple[np.ndarray, np.ndarray]:
    """(least nodes, bound) of pieces that together hold every plan of a setting's space that the
    presolves kept (the rest is above `SettingPart.dropped`): per kept class and box of n
    (`table_bounds.class_bounds`, two per octave) the box's least nodes n1 x unit and a lower bound on the
    objective in model units over the box (ln T for min_time; -ln C for max_compute), and each fixed
    plan (`fixed`: all of them, before the presolves) with its own nodes and value. So every plan of
    at most N nodes has a value >= the least of `dropped` and of the bounds of the pieces whose least
    nodes is <= N (`mixed_mip.SettingBounds`: a part of the decomposition whose pools hold at most N
    nodes is skipped when that is worse than the best plan known).

    max_compute: -ln C >= -(the class's bound over all its plans: `tables.compute_bounds`), and, where
    C T = C_target W holds for every plan (C_local without a tokens-scored replica penalty, as
    `presolve.presolve_compute`), -ln C >= box bound on ln T - ln(C_target W)."""
    least, value = [np.array([f.nodes for f in fixed], dtype=float)], \
        [np.array([f.log_time if objective.by_time else -f.log_compute for f in fixed], dtype=float)]
    if t.sync:
        bound, boxes = class_bounds(t)
        units = np.array([e.unit for e in t.sync], dtype=float)[:, None]
        if objective.maximise:
            upper = compute_bounds(t)[:, None]
            lower = np.broadcast_to(np.where(np.isfinite(upper), -upper, np.inf), bound.shape)
            if not t.quality_target and not t.tokens_scored_eta_r:     # an empty box: inf, no plan
                lower = np.maximum(lower, bound - math.log(t.setting.target * t.setting.window_s))
            bound = lower
        least.append((boxes[:, :, 0] * units).ravel())
        value.append(bound.ravel())
    return np.concatenate(least), np.concatenate(value)


def _feasible_classes(t: Tables, ln_w: float,
                      bounds: tuple[np.ndarray, np.ndarray] | None = None) -> tuple[Tables, np.ndarray]:
    """The classes (and fixed plans) that can meet the duration limit, with their box bounds on ln T, and
    the fewest nodes each kept class needs to meet it (the lower end of its first box that can, times its
    unit, as `presolve.presolve` for min_cost). `bounds`: `class_bounds(t)` when the caller holds them
    already (min_cost's `pool_tables` computes them once for `presolve.presolve` and for this: the same
    arrays, read and never written by either, so the same answer; on 16 pools in 16 cities that was
    ~1/6 of min_cost's solve)."""
    if not t.sync:
        return Tables(t.setting, t.space, t.groups, [], [f for f in t.fixed if f.log_time <= ln_w],
                      t.n_max, t.h_max, t.r_max, None, t.eta_h_falls), np.zeros(0)
    bound, boxes = class_bounds(t) if bounds is None else bounds
    lower = bound.min(axis=1)
    first_box = np.argmax(bound <= ln_w, axis=1)
    fewest = boxes[np.arange(len(t.sync)), first_box, 0] * np.array([e.unit for e in t.sync])
    keep = (lower <= ln_w + 1e-12) & np.isfinite(lower)
    return Tables(t.setting, t.space, t.groups, [e for e, k in zip(t.sync, keep) if k],
                  [f for f in t.fixed if f.log_time <= ln_w], t.n_max, t.h_max, t.r_max, lower[keep],
                  t.eta_h_falls), fewest[keep]


def _compute_bounded(t: Tables) -> Tables:
    """max_compute without an incumbent: every class that reaches some compute, with -(its upper bound on
    ln C) as its lower bound (`tables.compute_bounds`, `table_bounds.compute_box_bounds`), and the fixed plans."""
    if not t.sync:
        return t
    upper = np.minimum(compute_bounds(t), compute_box_bounds(t))
    keep = np.isfinite(upper)
    return Tables(t.setting, t.space, t.groups, [e for e, k in zip(t.sync, keep) if k], list(t.fixed),
                  t.n_max, t.h_max, t.r_max, -upper[keep], t.eta_h_falls)


def _least_costs(pt: "PoolTables", part: SettingPart, laid_out: tuple[PatternCosts, np.ndarray] | None = None):
    """n -> `PatternCosts.least` of the part's patterns at n (a lower bound on the cost of its plans of at
    least n nodes) in units of the dearest node's price, each n computed once: the
    kept classes of a setting share few least node counts, and each call fills every pattern
    of the setting (on 13 pools in 13 cities, min_cost, recomputing it per class was most of the solve).
    The part's patterns are laid out for `PatternCosts` once, on the first n asked, unless the caller
    holds them (`laid_out`: `_part_costs(pt, part, fill_order(pt.pools))`, which `pool_tables`' skip test
    built; a PatternCosts is never written after it is built, so the same costs)."""
    known: dict[int, float] = {}
    scale = price_scale(pt.pools)
    held: list = [] if laid_out is None else [laid_out]

    def costs(nodes) -> float:
        n = int(nodes)
        if n not in known:
            if not held:
                held.append(_part_costs(pt, part, fill_order(pt.pools)))
            known[n] = held[0][0].least(n, held[0][1]) / scale
        return known[n]
    return costs


def _part_costs(pt: "PoolTables", part: SettingPart, fill: FillOrder) -> tuple[PatternCosts, np.ndarray]:
    """The part's patterns as `PatternCosts` and their node ranges (one row each)."""
    ranges = np.array([pt.ranges[k] for k in part.keys], dtype=np.int64).reshape(len(part.keys), 2)
    return PatternCosts(pt.pools, [pt.keys[k] for k in part.keys], fill), ranges
