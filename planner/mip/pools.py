"""A fleet of pools in ONE mixed-integer model: which pools are used and how many nodes of each,
chosen with every other decision (docs/mip.md, "A fleet of pools"; docs/fleet.md section 4).

Under the synchronous straggler rule (`planner.fleet.replicas`) a plan on pools U is scored by
`mixed_setting(U, precision)`, which depends on U only through its **pattern**

    key = (precision, the slowest pool s of U, the least node memory V of U, the sites S(U)),

s = argmin_{p in U} (F_p u_p, p) (ties to the first listed, as `replicas.slowest`). A pattern
allows the pools that support its precision, are not slower than s (in that order), have memory
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
import re
import time
from dataclasses import dataclass, field
from itertools import combinations
from typing import Sequence

import numpy as np
import pyomo.environ as pyo

from planner.objectives import MIN_COST, MIN_TIME, Objective
from planner.cost.setting import PlanBatch, Setting
from planner.fleet.pools import PoolSetting
from planner.fleet.replicas import cheapest_fill, fleet_cost_usd, mixed_setting, node_price_usd
from planner.mip.pool_proportional import add_rule_rows, rho_max, rule_incumbent, rule_of, rule_space, rule_tables
from planner.mip.tables import (Tables, class_bounds, compute_bounds, compute_box_bounds, presolve,
                                 presolve_compute)
from planner.solvers import UnsupportedBySolver

FAMILIES = ("pool-key", "pool-count", "pool-total", "pool-allowed", "pool-required", "pool-links", "pool-spread",
            "pool-cost", "pool-budget")
COST_TOL = 1e-9          # min_cost: a plan must be cheaper than the incumbent by this much (relative) to be wanted
MAX_PATTERNS = 2048      # columns x of the model (PatternGroup) beyond which it is refused (exit 2)
MAX_SITE_SETS = 131072   # patterns (PoolKey: one per set of sites used) enumerated for the node ranges, beyond
                         # which the model is refused (exit 2): 12 pools in 12 cities have 8,190, 16 in 16 cities
                         # at two precisions 131,070 (whole solve 19 s, 316 MB, load 1.6); 17 cities are refused
LINK_FIELDS = ("wan_up_bps", "wan_down_bps", "wan_rtt_s", "regional_bps", "regional_rtt_s")
LINK_LEAST = (True, True, False, True, False)    # the field is the least over its items (bandwidth), else the largest


@dataclass(frozen=True)
class PoolKey:
    """A pattern of pools used: what `mixed_setting` depends on (module docstring)."""

    precision: str
    slowest: int
    memory_bytes: float
    sites: tuple[str, ...]            # S(U), () without sites
    allowed: tuple[int, ...]
    covers: tuple[tuple[int, ...], ...]     # the least sets of pools with this pattern (each a minimal cover)

    def label(self, pools: Sequence[PoolSetting]) -> str:
        parts = [self.precision, pools[self.slowest].label, f"m{self.memory_bytes / 1e9:g}GB"] + list(self.sites)
        return _name("_".join(parts))


def _name(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "", text.replace(".", "p").replace("-", "_").replace(" ", ""))


def _rank(pools: Sequence[PoolSetting], p: int, precision: str) -> tuple[float, int]:
    return pools[p].rate(precision), p


class DeadlinePassed(Exception):
    """The deadline came while the tables were built (`pool_tables`): no model, no plan, no bound."""


def _check(deadline: float) -> None:
    """DeadlinePassed once time.perf_counter() is past `deadline` (read before each pattern, each set
    of sites checked and each setting's tables: on 16 pools in 16 cities there are 131,071 patterns
    and building them all took ~100 s at load 8)."""
    if time.perf_counter() > deadline:
        raise DeadlinePassed()


def pool_keys(pools: Sequence[PoolSetting], precisions: Sequence[str], with_sites: bool,
              deadline: float = math.inf) -> list[PoolKey]:
    """Every pattern some set of pools has (module docstring), in a stable order."""
    keys = []
    for precision in precisions:
        runs = [p for p in range(len(pools)) if precision in pools[p].precisions]
        for s in runs:
            not_slower = [p for p in runs if _rank(pools, p, precision) >= _rank(pools, s, precision)]
            mem_s = pools[s].setting.memory_bytes
            for v in sorted({pools[p].setting.memory_bytes for p in not_slower if pools[p].setting.memory_bytes <= mem_s}):
                base = [p for p in not_slower if pools[p].setting.memory_bytes >= v]
                hosts = sorted({pools[p].site for p in base}) if with_sites else []
                others = [h for h in hosts if h != pools[s].site]
                site_sets = [()] if not with_sites else \
                    [tuple(sorted((pools[s].site,) + extra)) for r in range(len(others) + 1)
                     for extra in combinations(others, r)]
                for sites in site_sets:
                    _check(deadline)
                    allowed = tuple(p for p in base if not with_sites or pools[p].site in sites)
                    covers = _covers(pools, s, v, sites, allowed)
                    if covers:
                        keys.append(PoolKey(precision, s, v, sites, allowed, covers))
                    if len(keys) > MAX_SITE_SETS:
                        raise UnsupportedBySolver(
                            f"the one-model path for a fleet of pools enumerates at most {MAX_SITE_SETS} patterns of "
                            f"pools used (precision, slowest pool, least memory, sites used) for their node ranges; "
                            f"this fleet has more (its pools sit at many sites); use --solver bnb (at most 12 pools)")
    return keys


def _covers(pools, s: int, v: float, sites: tuple[str, ...], allowed: tuple[int, ...]) -> tuple[tuple[int, ...], ...]:
    """The minimal sets of allowed pools that hold s, a pool of memory v and a pool at every site, fewest
    pools first, then in listing order. Each is s, one pool at each other site (a pool there is needed,
    a second one would be redundant), and, when none of those has memory v, one pool of memory v at s's
    site (without sites: anywhere); a pool of memory v at another site would make that site's first
    pool redundant, so it is one of the choices of that site instead."""
    from itertools import product
    home = pools[s].site if sites else None
    choices = [[p for p in allowed if pools[p].site == site] for site in sites if site != home]
    extra_v = [p for p in allowed if p != s and pools[p].setting.memory_bytes == v and (not sites or pools[p].site == home)]
    found = set()
    for picked in product(*choices):
        if pools[s].setting.memory_bytes == v or any(pools[p].setting.memory_bytes == v for p in picked):
            found.add(tuple(sorted(picked)))
        else:
            found.update(tuple(sorted(picked + (p,))) for p in extra_v)
    return tuple((s,) + extra for extra in sorted(found, key=lambda e: (len(e), e)))


@dataclass(frozen=True)
class PatternGroup:
    """A column x of the model: the patterns of one (precision, slowest pool, least memory, links of the
    sites used), all of one setting. Without sites one pattern each. `allowed`: the pools that run the
    precision, are not slower and have at least that memory (sites are rows of their own: `pool_links`)."""

    precision: str
    slowest: int
    memory_bytes: float
    links: tuple[float, ...]          # LINK_FIELDS of the sites used, () without sites
    allowed: tuple[int, ...]
    keys: tuple[int, ...]             # positions in PoolTables.keys

    def label(self, pools: Sequence[PoolSetting], link_index: int | None) -> str:
        parts = [self.precision, pools[self.slowest].label, f"m{self.memory_bytes / 1e9:g}GB"]
        return _name("_".join(parts + ([f"L{link_index}"] if link_index is not None else [])))


def link_values(links) -> tuple[float, ...]:
    """The fields of a `planner.fleet.network.SiteLinks` that the setting takes (`network.with_links`)."""
    return tuple(float(getattr(links, f)) for f in LINK_FIELDS)


def pattern_groups(pools: Sequence[PoolSetting], keys: Sequence[PoolKey], sites) -> list[PatternGroup]:
    """The model's columns x: the patterns grouped by (precision, slowest, least memory, link values of
    their sites); refused (exit 2) beyond MAX_PATTERNS."""
    found: dict[tuple, list[int]] = {}
    for k, key in enumerate(keys):
        links = link_values(sites.links(key.sites)) if sites is not None and key.sites else ()
        found.setdefault((key.precision, key.slowest, key.memory_bytes, links), []).append(k)
    if len(found) > MAX_PATTERNS:
        raise UnsupportedBySolver(f"the one-model path for a fleet of pools takes at most {MAX_PATTERNS} columns of "
                                  f"pools used (precision, slowest pool, least memory, links of the sites used); this "
                                  f"fleet has {len(found)}; use --solver bnb")
    out = []
    for (q, s, v, links), ks in found.items():
        allowed = tuple(p for p in range(len(pools)) if q in pools[p].precisions and
                        _rank(pools, p, q) >= _rank(pools, s, q) and pools[p].setting.memory_bytes >= v)
        out.append(PatternGroup(q, s, v, links, allowed, tuple(ks)))
    return out


@dataclass
class SiteItems:
    """The sites holding pools, and the items whose links make those of any set S of them: each site
    alone and each pair. For every field of LINK_FIELDS, links(S) is the least (bandwidths) or the
    largest (RTTs) over the items within S of the item's own links (`planner.fleet.network`: the WAN
    route is the least bandwidth and largest RTT over the pairs of S, each site's LAN included, capped
    by the access link once S has two sites; the regions are each site's first candidate group, so
    the regional links are those over the pairs sharing a region). `site_items` checks this on every
    set of sites of the patterns (refused otherwise)."""

    hosts: list[str]
    items: list[tuple[int, ...]]      # (j,) and (i, j), i < j, positions in hosts
    values: np.ndarray                # items x LINK_FIELDS


def site_items(pools: Sequence[PoolSetting], keys: Sequence[PoolKey], sites, deadline: float = math.inf) -> SiteItems:
    """The items of the sites holding pools (`SiteItems`), checked against the links of every set of
    sites of `keys`."""
    hosts = sorted({p.site for p in pools})
    items = [(j,) for j in range(len(hosts))] + list(combinations(range(len(hosts)), 2))
    values = np.array([link_values(sites.links([hosts[i] for i in e])) for e in items], dtype=float)
    member = np.zeros((len(items), len(hosts)), dtype=bool)
    for a, e in enumerate(items):
        member[a, list(e)] = True
    where = {h: j for j, h in enumerate(hosts)}
    for site_set in {key.sites for key in keys}:
        _check(deadline)
        inside = np.zeros(len(hosts), dtype=bool)
        inside[[where[h] for h in site_set]] = True
        present = values[~(member & ~inside).any(axis=1)]
        got = tuple(float(present[:, c].min() if least else present[:, c].max()) for c, least in enumerate(LINK_LEAST))
        if got != link_values(sites.links(site_set)):
            raise UnsupportedBySolver(f"the links of the sites {', '.join(site_set)} are not the least / largest over "
                                      "their pairs' (the one-model path's rows need that); use --solver bnb")
    return SiteItems(hosts, items, values)


def key_counts(pools: Sequence[PoolSetting], key: PoolKey, nodes: int) -> list[int] | None:
    """The cheapest counts of `nodes` nodes with this pattern: a minimal cover one node each, the rest
    from the cheapest allowed pools (min over the covers); None if no cover fits."""
    best, best_cost = None, math.inf
    for cover in key.covers:
        if not len(cover) <= nodes <= sum(pools[p].count for p in key.allowed):
            continue
        counts = [0] * len(pools)
        for p in cover:
            counts[p] = 1
        left = nodes - len(cover)
        for p in sorted(key.allowed, key=lambda p: (node_price_usd(pools[p]), p)):
            take = min(left, pools[p].count - counts[p])
            counts[p] += take
            left -= take
        cost = fleet_cost_usd(pools, counts)
        if left == 0 and cost < best_cost:
            best, best_cost = counts, cost
    return best


def key_range(pools: Sequence[PoolSetting], key: PoolKey, min_nodes: int, cap: float,
              budget_usd: float | None) -> tuple[int, int] | None:
    """[lo, hi]: the node counts N a plan of this pattern can have (every N between is realisable within
    the node cap and the budget: the cheapest counts never cost less as N grows)."""
    lo = max(min_nodes, min(len(c) for c in key.covers))
    hi = int(min(sum(pools[p].count for p in key.allowed), cap))

    def within(n: int) -> bool:
        counts = key_counts(pools, key, n)
        return counts is not None and (budget_usd is None or fleet_cost_usd(pools, counts) <= budget_usd)

    if hi < lo or not within(lo):
        return None
    if budget_usd is not None:
        low, high = lo, hi
        while low < high:
            mid = (low + high + 1) // 2
            low, high = (mid, high) if within(mid) else (low, mid - 1)
        hi = low
    return lo, hi


@dataclass
class SettingPart:
    """One distinct setting of the patterns: its tables (after presolve) and where they sit in the merge."""

    setting: Setting
    keys: list[int]                   # positions in PoolTables.keys
    lo: int
    hi: int
    exact_range: bool                 # every N in [lo, hi] is realisable by one of its patterns
    tables: Tables | None = None
    node_bounds: tuple[np.ndarray, np.ndarray] | None = None   # (least nodes, lower bound) of its plans: `node_bounds`
    dropped: float = math.inf         # the presolves dropped only plans of value above this (model units)
    fixed: list = field(default_factory=list)    # its fixed plans before the presolves (`node_bounds`)
    sync_offset: int = 0
    fixed_offset: int = 0
    group_offset: int = 0


@dataclass
class PoolTables:
    """The patterns, the settings' tables and their merge (the tables the model is built on)."""

    pools: list[PoolSetting]
    keys: list[PoolKey]
    parts: list[SettingPart]
    merged: Tables
    min_nodes: int
    budget_usd: float | None
    ranges: list[tuple[int, int]] = field(default_factory=list)    # per key
    groups: list[PatternGroup] = field(default_factory=list)       # the model's columns x
    group_part: list[int] = field(default_factory=list)            # the setting part of each group
    sites: SiteItems | None = None
    solved: set = field(default_factory=set)                       # merged positions solved exactly
    incumbent: tuple | None = None    # (value in model units, MixedPlan) from the presolve
    classes_total: int = 0            # classes and fixed plans of the settings whose tables were built
    rule: str = "straggler"           # fleet.sync_rule; another rule adds its rows (`pool_proportional`)
    rule_rows: object = None          # `pool_proportional.RuleRows` under another rule

    def part_of_class(self, position: int) -> tuple[int, int]:
        """(setting part, position in its tables) of a merged class position."""
        for j, part in enumerate(self.parts):
            if part.tables is not None and part.sync_offset <= position < part.sync_offset + len(part.tables.sync):
                return j, position - part.sync_offset
        raise IndexError(position)

    def part_of_fixed(self, position: int) -> tuple[int, int]:
        for j, part in enumerate(self.parts):
            if part.tables is not None and part.fixed_offset <= position < part.fixed_offset + len(part.tables.fixed):
                return j, position - part.fixed_offset
        raise IndexError(position)


@dataclass
class MixedPlan:
    """A plan on pools: its batch (N nodes), counts per pool and the setting it is scored in."""

    batch: PlanBatch
    counts: list[int]
    setting: Setting
    part: int                         # setting part
    rule: str = "straggler"           # the sync rule it runs (`planner.fleet.proportional`)


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


# -- the families -------------------------------------------------------------------------

def build_pools(pt: "PoolTables", grid, objective: Objective, cutoff: float | None, solved=frozenset()):
    """The model: the class families (`formulation.build`) on the merged tables and the pool families;
    `cutoff` (ln T for min_time, cost units for min_cost): only plans better than it are wanted."""
    from planner.mip.formulation import build
    f = build(pt.merged, grid, objective, cutoff=cutoff if objective.by_time else None,
              solved=frozenset(solved))
    add_pool_families(f.model, pt, objective)
    if pt.rule_rows is not None:
        add_rule_rows(f.model, pt, objective, pt.rule_rows)
    if objective.by_cost and cutoff is not None and math.isfinite(cutoff):
        f.model.incumbent.add(f.model.cost <= cutoff - COST_TOL * max(1.0, abs(cutoff)))
    return f


def initial_grid(pt: "PoolTables", objective: Objective, cutoff: float | None):
    """The loop's first grid on the merged tables (`formulation.Grid`); under another sync rule, with u
    brackets up to the rule's most tokens (`pool_proportional.extend_grid`)."""
    from planner.mip.formulation import Grid
    from planner.mip.pool_proportional import extend_grid
    grid = Grid.initial_compute(pt.merged, cutoff) if objective.maximise else Grid.initial(pt.merged)
    if pt.rule != "straggler" and objective.maximise:
        extend_grid(grid, pt)
    return grid


def add_pool_families(m, pt: PoolTables, objective: Objective) -> None:
    """The pool columns and rows (module docstring) on a model built by `formulation.build` on `pt.merged`."""
    from planner.mip.formulation import nodes_used
    if not hasattr(m, "nodes"):
        nodes_used(m, pt.merged, None)
    _pool_columns(m, pt)
    for family in (pool_key, pool_count, pool_total, pool_allowed, pool_required, pool_links, pool_spread, pool_cost,
                   pool_budget):
        family(m, pt)
    if objective.by_cost:
        m.objective.deactivate()
        m.pool_objective = pyo.Objective(expr=m.cost, sense=pyo.minimize)


def price_scale(pools: Sequence[PoolSetting]) -> float:
    """USD per cost unit of the model: the dearest node's price (1 when every pool is free)."""
    return max([node_price_usd(p) for p in pools] + [0.0]) or 1.0


def _pool_columns(m, pt: PoolTables) -> None:
    pools = pt.pools
    m.Pools = pyo.Set(initialize=[_name(p.label) for p in pools], ordered=True)
    m.use = pyo.Var(m.Pools, within=pyo.Binary)
    m.cnt = pyo.Var(m.Pools, within=pyo.NonNegativeIntegers, bounds=lambda m, p: (0, pools[list(m.Pools).index(p)].count))
    m.usev = [m.use[n] for n in m.Pools]
    m.cntv = [m.cnt[n] for n in m.Pools]
    link_index = {links: i for i, links in enumerate(dict.fromkeys(g.links for g in pt.groups if g.links))}
    labels = [g.label(pools, link_index.get(g.links)) for g in pt.groups]
    seen: dict[str, int] = {}
    for i, lab in enumerate(labels):
        seen[lab] = seen.get(lab, 0) + 1
        if seen[lab] > 1:
            labels[i] = f"{lab}_{seen[lab]}"
    m.Keys = pyo.Set(initialize=labels, ordered=True)
    m.x = pyo.Var(m.Keys, within=pyo.Binary)
    m.xv = [m.x[n] for n in m.Keys]
    m.cost = pyo.Var(bounds=(0.0, None))
    if pt.sites is not None:
        hosts, items = pt.sites.hosts, pt.sites.items
        m.Sites = pyo.Set(initialize=[_name(h) for h in hosts], ordered=True)
        m.site = pyo.Var(m.Sites, bounds=(0.0, 1.0))       # 1 iff a pool at the site is used (rows force it)
        m.sitev = [m.site[n] for n in m.Sites]
        pairs = [e for e in items if len(e) == 2]
        m.Pairs = pyo.Set(initialize=[f"{_name(hosts[i])}__{_name(hosts[j])}" for i, j in pairs], ordered=True)
        m.pair = pyo.Var(m.Pairs, bounds=(0.0, 1.0))       # at most 1 iff both sites are used
        m.pairv = dict(zip(pairs, (m.pair[n] for n in m.Pairs)))


def pool_key(m, pt: PoolTables) -> None:
    """The patterns of a setting are chosen with its classes (and fixed plans)."""
    m.pool_key = pyo.ConstraintList()
    for index, part in enumerate(pt.parts):
        chosen = 0
        if part.tables is not None:
            chosen = sum(m.yv[part.sync_offset + i] for i in range(len(part.tables.sync))) + \
                sum(m.lamv[part.fixed_offset + i] for i in range(len(part.tables.fixed)))
        m.pool_key.add(sum(m.xv[g] for g, j in enumerate(pt.group_part) if j == index) == chosen)


def pool_count(m, pt: PoolTables) -> None:
    """use_p <= cnt_p <= count_p use_p."""
    m.pool_count = pyo.ConstraintList()
    for p, pool in enumerate(pt.pools):
        m.pool_count.add(m.usev[p] <= m.cntv[p])
        m.pool_count.add(m.cntv[p] <= pool.count * m.usev[p])


def pool_total(m, pt: PoolTables) -> None:
    """The nodes of the pools are the plan's nodes."""
    m.pool_total = pyo.ConstraintList()
    m.pool_total.add(sum(m.cntv) == m.nodes)


def pool_allowed(m, pt: PoolTables) -> None:
    """A pool is not used under a pattern that does not allow it (slower than its slowest pool, less
    memory, precision not supported; the sites are `pool_links`)."""
    m.pool_allowed = pyo.ConstraintList()
    for p in range(len(pt.pools)):
        banned = [k for k, g in enumerate(pt.groups) if p not in g.allowed]
        if banned:
            m.pool_allowed.add(m.usev[p] + sum(m.xv[k] for k in banned) <= 1)


def pool_required(m, pt: PoolTables) -> None:
    """The chosen pattern is the pools' own: its slowest pool is used, and a pool of its memory."""
    m.pool_required = pyo.ConstraintList()
    pools, groups = pt.pools, pt.groups
    for p in range(len(pools)):
        ks = [k for k, g in enumerate(groups) if g.slowest == p]
        if ks:
            m.pool_required.add(sum(m.xv[k] for k in ks) <= m.usev[p])
    for v in sorted({g.memory_bytes for g in groups}):
        ks = [k for k, g in enumerate(groups) if g.memory_bytes == v and pools[g.slowest].setting.memory_bytes != v]
        if ks:
            m.pool_required.add(sum(m.xv[k] for k in ks) <=
                                sum(m.usev[p] for p in range(len(pools)) if pools[p].setting.memory_bytes == v))


def pool_links(m, pt: PoolTables) -> None:
    """With sites: the chosen pattern's links are those of the sites the pools use (`SiteItems`).

        site_j >= use_p (p at j),  site_j <= sum_{p at j} use_p      site j used
        pair_ij <= site_i,  pair_ij <= site_j                        (at most 1 iff both used)
        per field f and item e (a site or a pair) of links v_e:
            sum_{k : f_k better than v_e} x_k + sum_{j in e} site_j <= |e|    (no better than a used item)
        per field f and value w of some column:
            sum_{e : v_e at least as bad as w} item_e >= sum_{k : f_k at least as bad as w} x_k
                                                                             (some used item is that bad)
    "better": larger bandwidth, smaller RTT. Both together make the chosen value the least (largest)
    over the used items, i.e. the links of the sites used: O(sites^2 x fields) rows, nothing indexed
    by a set of sites."""
    m.pool_links = pyo.ConstraintList()
    if pt.sites is None:
        return
    items, values, hosts = pt.sites.items, pt.sites.values, pt.sites.hosts
    for j, host in enumerate(hosts):
        here = [p for p, pool in enumerate(pt.pools) if pool.site == host]
        for p in here:
            m.pool_links.add(m.sitev[j] >= m.usev[p])
        m.pool_links.add(m.sitev[j] <= sum(m.usev[p] for p in here))
    for (i, j), var in m.pairv.items():
        m.pool_links.add(var <= m.sitev[i])
        m.pool_links.add(var <= m.sitev[j])
    present = [m.sitev[e[0]] if len(e) == 1 else m.pairv[e] for e in items]
    chosen = np.array([g.links for g in pt.groups], dtype=float)
    done, reached = set(), set()
    for f, least in enumerate(LINK_LEAST):
        sign = 1.0 if least else -1.0                 # compare -RTT as a bandwidth: larger is better
        col, val = sign * chosen[:, f], sign * values[:, f]
        for a, e in enumerate(items):
            better = tuple(np.flatnonzero(col > val[a]))
            if better and (better, e) not in done:
                done.add((better, e))
                m.pool_links.add(sum(m.xv[k] for k in better) + sum(m.sitev[j] for j in e) <= len(e))
        for w in np.unique(col):
            worse_items = tuple(np.flatnonzero(val <= w))
            worse_cols = tuple(np.flatnonzero(col <= w))
            if worse_cols and (worse_items, worse_cols) not in reached:
                reached.add((worse_items, worse_cols))
                m.pool_links.add(sum(present[a] for a in worse_items) >= sum(m.xv[k] for k in worse_cols))


def pool_spread(m, pt: PoolTables) -> None:
    """|U| <= n unit + unit - 1 for the chosen class (per distinct unit), |U| <= 1 for a one-node plan."""
    m.pool_spread = pyo.ConstraintList()
    t, count = pt.merged, len(pt.pools)
    if count == 1:
        return
    used = sum(m.usev)
    for unit in sorted({e.unit for e in t.sync}):
        chosen = sum(m.yv[i] for i, e in enumerate(t.sync) if e.unit == unit)
        m.pool_spread.add(used <= unit * m.n + unit - 1 + count * (1 - chosen))
    single = [f for f, p in enumerate(t.fixed) if p.label.endswith("_single")]
    if single:
        m.pool_spread.add(used <= 1 + count * (1 - sum(m.lamv[f] for f in single)))


def pool_cost(m, pt: PoolTables) -> None:
    """cost = sum_p cnt_p x node price_p, in units of the dearest node's price."""
    m.pool_cost = pyo.ConstraintList()
    scale = price_scale(pt.pools)
    m.pool_cost.add(m.cost == sum(node_price_usd(p) / scale * m.cntv[i] for i, p in enumerate(pt.pools)))


def pool_budget(m, pt: PoolTables) -> None:
    """cost <= limits.budget_usd."""
    m.pool_budget = pyo.ConstraintList()
    if pt.budget_usd is not None:
        m.pool_budget.add(m.cost <= pt.budget_usd / price_scale(pt.pools))


# -- the tables ---------------------------------------------------------------------------

def canonical(pools: Sequence[PoolSetting], batch: PlanBatch, counts: Sequence[int], unit: int, min_nodes: int,
              single: bool = False) -> tuple[PlanBatch, list[int]]:
    """The plan of a model point on pools U = {p : counts_p > 0}: N = max(n unit, min_nodes, |U|) nodes
    (1 for a one-node plan; n = N / unit of `batch` otherwise), the cheapest counts of U for N
    (`replicas.cheapest_fill`: the same time, the least cost)."""
    used = tuple(p for p, c in enumerate(counts) if c > 0)
    replicas = 1 if single or batch.mode == "pipeline_wan" else \
        int(batch.nodes[0]) // unit if unit > 1 else int(batch.nodes[0])
    n_nodes = 1 if single else max(replicas * unit, min_nodes, len(used))
    out = dataclasses.replace(batch, nodes=np.array([n_nodes], dtype=np.int64))
    return out, cheapest_fill(pools, used, n_nodes)


def pool_tables(instance, pools: list[PoolSetting], objective: Objective, params: float | None,
                deadline: float = math.inf) -> PoolTables:
    """The patterns of the fleet, the tables of their distinct settings (presolved: min_time drops the
    classes that cannot beat the best plan the presolves found; min_cost those that cannot meet the
    duration limit) and their merge. DeadlinePassed when `deadline` (time.perf_counter()) comes first."""
    from planner.setting import with_params
    from planner.mip.pool_regions import model_sites
    from planner.solvers.certified import check_supported, tables_or_refuse
    from planner.solvers.mixed import base_space, compute_bound_s, unit_price
    space = base_space(instance, pools)
    sites = model_sites(instance)          # chosen regions: each site its own region (a relaxation)
    cap = min(sum(p.count for p in pools), instance.limits.max_nodes or math.inf)
    budget = instance.limits.budget_usd
    keys, ranges, settings, known = [], [], [], {}
    for key in pool_keys(pools, space.precisions, sites is not None, deadline):
        _check(deadline)
        span = key_range(pools, key, space.min_nodes, cap, budget)
        if span is None:
            continue
        shape = (key.precision, key.slowest, key.memory_bytes,
                 link_values(sites.links(key.sites)) if sites is not None else ())   # what the setting depends on
        if shape not in known:
            s = mixed_setting(pools, key.covers[0], key.precision, sites)
            known[shape] = unit_price(s if params is None else with_params(s, params))
        keys.append(key)
        ranges.append(span)
        settings.append(known[shape])
    for s in settings[:1]:
        check_supported(s, objective)
    rule = rule_of(instance)
    parts, index, text = [], {}, {}
    for k, s in enumerate(settings):
        if id(s) not in text:                  # one repr per distinct setting object
            text[id(s)] = repr(s)
        j = index.setdefault(text[id(s)], len(parts))
        if j == len(parts):
            parts.append(SettingPart(s, [], ranges[k][0], ranges[k][1], True))
        part = parts[j]
        part.keys.append(k)
        part.lo, part.hi = min(part.lo, ranges[k][0]), max(part.hi, ranges[k][1])
    for part in parts:                         # the union of its patterns' ranges is [lo, hi] without a gap
        reach = part.lo - 1
        for lo, hi in sorted(ranges[k] for k in part.keys):
            if lo > reach + 1:
                part.exact_range = False
            reach = max(reach, hi)
    pt = PoolTables(pools, keys, parts, None, space.min_nodes, budget, ranges, rule=rule)
    pt.groups = pattern_groups(pools, keys, sites)
    part_of_key = {k: j for j, part in enumerate(parts) for k in part.keys}
    pt.group_part = [part_of_key[g.keys[0]] for g in pt.groups]
    if any(part_of_key[k] != j for g, j in zip(pt.groups, pt.group_part) for k in g.keys):
        raise AssertionError("the patterns of a group have different settings")
    pt.sites = site_items(pools, keys, sites, deadline) if sites is not None else None
    ln_w = math.log(parts[0].setting.window_s) if parts else 0.0
    best, best_plan, solved, least = math.inf, None, [None] * len(parts), [None] * len(parts)
    # settings of least compute-only bound first: once a plan is known, a setting whose bound cannot beat it
    # is skipped before its tables are built (`mixed.compute_bound_s`, 0 where it is not known to hold)
    floor_s = [compute_bound_s(part.setting, part.hi) for part in parts]
    if rule != "straggler":          # a replica of the rule steps up to rho_max times the pace
        floor_s = [f / rho_max(pt, part) for f, part in zip(floor_s, parts)]
    for j in sorted(range(len(parts)), key=lambda j: (floor_s[j], j)):
        _check(deadline)
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
            if _least_cost(pt, part, fewest) / price_scale(pools) > best * (1 + 1e-12):
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
            pruned, plan, value, done = presolve_compute(t) if objective.maximise else presolve(t, MIN_TIME)
            part.dropped = _cut(value)        # the presolves' own cut: classes bounded above it are dropped
            if plan is not None and value < best:
                best, best_plan = value, mixed_plan(pt, j, pruned, plan)
            solved[j] = done
        elif objective.maximise:      # no exact incumbent from a setting whose node counts have gaps
            pruned = _compute_bounded(t)
        else:
            if objective.by_cost and part.exact_range:       # its incumbent: the fewest nodes it scored
                _, plan, _, _ = presolve(t, MIN_COST)
                if plan is not None:
                    found = mixed_plan(pt, j, t, plan)
                    cost = fleet_cost_usd(pools, found.counts) / price_scale(pools)
                    if cost < best:
                        best, best_plan = cost, found
            pruned, least[j] = _feasible_classes(t, ln_w)
        part.tables = pruned
    if objective.by_cost and math.isfinite(best):      # drop what cannot cost less than the incumbent
        cut = best * (1 + 1e-12)
        for j, part in enumerate(parts):
            t, fewest = part.tables, least[j]
            if t is None:
                continue
            costs = lambda n: _least_cost(pt, part, int(n)) / price_scale(pools)
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
        from planner.mip.pool_proportional import RuleRows
        pt.rule_rows = RuleRows.of(pt, rule)
    return pt


def _cut(value: float) -> float:
    """The presolves' cut at a best value (`tables.presolve`, `presolve_compute`): classes bounded above it
    are dropped."""
    return value + 1e-9 * max(1.0, abs(value)) if math.isfinite(value) else math.inf


def node_bounds(t: Tables, fixed, objective: Objective) -> tuple[np.ndarray, np.ndarray]:
    """(least nodes, bound) of pieces that together hold every plan of a setting's space that the
    presolves kept (the rest is above `SettingPart.dropped`): per kept class and box of n
    (`tables.class_bounds`, two per octave) the box's least nodes n1 x unit and a lower bound on the
    objective in model units over the box (ln T for min_time; -ln C for max_compute), and each fixed
    plan (`fixed`: all of them, before the presolves) with its own nodes and value. So every plan of
    at most N nodes has a value >= the least of `dropped` and of the bounds of the pieces whose least
    nodes is <= N (`mixed_mip.SettingBounds`: a part of the decomposition whose pools hold at most N
    nodes is skipped when that is worse than the best plan known).

    max_compute: -ln C >= -(the class's bound over all its plans: `tables.compute_bounds`), and, where
    C T = C_target W holds for every plan (C_local without a tokens-scored replica penalty, as
    `tables.presolve_compute`), -ln C >= box bound on ln T - ln(C_target W)."""
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


def _feasible_classes(t: Tables, ln_w: float) -> tuple[Tables, np.ndarray]:
    """The classes (and fixed plans) that can meet the duration limit, with their box bounds on ln T, and
    the fewest nodes each kept class needs to meet it (the lower end of its first box that can, times its
    unit, as `tables.presolve` for min_cost)."""
    if not t.sync:
        return Tables(t.setting, t.space, t.groups, [], [f for f in t.fixed if f.log_time <= ln_w],
                      t.n_max, t.h_max, t.r_max, None, t.eta_h_falls), np.zeros(0)
    bound, boxes = class_bounds(t)
    lower = bound.min(axis=1)
    first_box = np.argmax(bound <= ln_w, axis=1)
    fewest = boxes[np.arange(len(t.sync)), first_box, 0] * np.array([e.unit for e in t.sync])
    keep = (lower <= ln_w + 1e-12) & np.isfinite(lower)
    return Tables(t.setting, t.space, t.groups, [e for e, k in zip(t.sync, keep) if k],
                  [f for f in t.fixed if f.log_time <= ln_w], t.n_max, t.h_max, t.r_max, lower[keep],
                  t.eta_h_falls), fewest[keep]


def _compute_bounded(t: Tables) -> Tables:
    """max_compute without an incumbent: every class that reaches some compute, with -(its upper bound on
    ln C) as its lower bound (`tables.compute_bounds`, `compute_box_bounds`), and the fixed plans."""
    if not t.sync:
        return t
    upper = np.minimum(compute_bounds(t), compute_box_bounds(t))
    keep = np.isfinite(upper)
    return Tables(t.setting, t.space, t.groups, [e for e, k in zip(t.sync, keep) if k], list(t.fixed),
                  t.n_max, t.h_max, t.r_max, -upper[keep], t.eta_h_falls)


def _least_cost(pt: "PoolTables", part: SettingPart, nodes: int) -> float:
    """USD: the least cost of a plan of the part's patterns with at least `nodes` nodes (the cheapest counts
    never cost less as N grows; a pattern's least N is its range's lower end); inf if none has that many."""
    costs = [fleet_cost_usd(pt.pools, key_counts(pt.pools, pt.keys[k], max(nodes, pt.ranges[k][0])))
             for k in part.keys if pt.ranges[k][1] >= nodes]
    return min(costs, default=math.inf)


def mixed_plan(pt: PoolTables, j: int, t: Tables, batch: PlanBatch) -> MixedPlan:
    """A plan of setting part j found by its own search (N in the part's exact range): the pattern whose
    range holds N, its cheapest counts, then the canonical plan of those pools."""
    part = pt.parts[j]
    n_nodes = int(batch.nodes[0])
    k = next(k for k in part.keys if pt.ranges[k][0] <= n_nodes <= pt.ranges[k][1])
    counts = key_counts(pt.pools, pt.keys[k], n_nodes)
    unit = int(batch.stages[0]) if batch.mode in ("pp_group", "pipeline_wan") else 1
    single = batch.mode == "flat" and n_nodes == 1
    plan, counts = canonical(pt.pools, batch, counts, unit, pt.min_nodes, single)
    return MixedPlan(plan, counts, part.setting, j)
