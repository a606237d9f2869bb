"""The rows over the pools that the pools' MIP adds to the class formulation (the families
pool-key ... pool-budget of `planner.mip.pools`' docstring, which states each and why the model is
exact), and the model built on a fleet's `PoolTables` (`build_pools`, `initial_grid`).
"""

from __future__ import annotations

import math

import numpy as np
import pyomo.environ as pyo

from planner.objectives import Objective
from planner.fleet.replicas import node_price_usd
from planner.mip.formulation import linear_expression
from planner.mip.pool_patterns import COST_TOL, LINK_LEAST, PoolTables, collector_paused, price_scale, safe_name
from planner.sync.proportional.mip_rows import add_rule_rows

FAMILIES = ("pool-key", "pool-count", "pool-total", "pool-allowed", "pool-required", "pool-links", "pool-spread",
            "pool-cost", "pool-budget")


@collector_paused()
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
    brackets up to the rule's most tokens (`mip_rows.extend_grid`)."""
    from planner.mip.formulation import Grid
    from planner.sync.proportional.mip_rows import extend_grid
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




def _pool_columns(m, pt: PoolTables) -> None:
    pools = pt.pools
    m.Pools = pyo.Set(initialize=[safe_name(p.label) for p in pools], ordered=True)
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
        m.Sites = pyo.Set(initialize=[safe_name(h) for h in hosts], ordered=True)
        m.site = pyo.Var(m.Sites, bounds=(0.0, 1.0))       # 1 iff a pool at the site is used (rows force it)
        m.sitev = [m.site[n] for n in m.Sites]
        pairs = [e for e in items if len(e) == 2]
        m.Pairs = pyo.Set(initialize=[f"{safe_name(hosts[i])}__{safe_name(hosts[j])}" for i, j in pairs], ordered=True)
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
                terms = [m.xv[k] for k in better] + [m.sitev[j] for j in e]
                m.pool_links.add(linear_expression([1] * len(terms), terms) <= len(e))
        for w in np.unique(col):
            worse_items = tuple(np.flatnonzero(val <= w))
            worse_cols = tuple(np.flatnonzero(col <= w))
            if worse_cols and (worse_items, worse_cols) not in reached:
                reached.add((worse_items, worse_cols))
                # sum_e item_e >= sum_k x_k held as Pyomo holds it, sum_k x_k - sum_e item_e <= 0 (the body
                # `>=` makes, term for term), built at once: the model written is the same
                terms = [m.xv[k] for k in worse_cols] + [present[a] for a in worse_items]
                m.pool_links.add(linear_expression([1] * len(worse_cols) + [-1] * len(worse_items), terms) <= 0)


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
