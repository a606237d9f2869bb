"""The patterns of pools of the pools' MIP (`planner.mip.pools`, whose docstring is the model): the
patterns a set of pools used can have (`PoolKey`, `pool_keys`), their groups as the model's columns
(`PatternGroup`), the sites they use (`SiteItems`), the node ranges of a pattern (`key_range`,
`key_counts`), the tables the model is built on (`SettingPart`, `PoolTables`) and a model point
decoded as a plan on pools (`MixedPlan`, `canonical`, `mixed_plan`, in cost units of `price_scale`).

They are the data the model's rows (`planner.mip.pool_rows`), its tables (`planner.mip.pools`) and the
rows of the sync rules (`planner.sync.proportional.mip_rows`) and of chosen regions
(`planner.mip.pool_regions`) share, so they sit below all of them.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import math
import re
import time
from dataclasses import dataclass, field
from itertools import chain, combinations, product
from operator import attrgetter, mul
from typing import Sequence

import numpy as np

from planner.cost.setting import PlanBatch, Setting
from planner.fleet.pools import PoolSetting
from planner.fleet.replicas import cheapest_fill, node_price_usd
from planner.mip.tables import Tables
from planner.solvers import UnsupportedBySolver

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
        return safe_name("_".join(parts))


def safe_name(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "", text.replace(".", "p").replace("-", "_").replace(" ", ""))


def _rank(pools: Sequence[PoolSetting], p: int, precision: str) -> tuple[float, int]:
    return pools[p].rate(precision), p


class DeadlinePassed(Exception):
    """The deadline came while the tables were built (`pool_tables`): no model, no plan, no bound."""


def check_deadline(deadline: float) -> None:
    """DeadlinePassed once time.perf_counter() is past `deadline` (read before each pattern, each set
    of sites checked and each setting's tables: on 16 pools in 16 cities there are 131,071 patterns
    and building them all took ~100 s at load 8)."""
    if time.perf_counter() > deadline:
        raise DeadlinePassed()


@contextlib.contextmanager
def collector_paused():
    """Python's cyclic garbage collector paused for the block (or the decorated function), then restored as
    it was (`gc`). The pools' tables (`pools.pool_tables`) allocate about 10^6 objects that live on
    (131,070 patterns on 16 pools in 16 cities, the settings' classes) and the model's rows
    (`pool_rows.build_pools`) Pyomo's components, and each full collection the allocations trigger
    rescans every object of the process: about 0.8 of 5.5 s of CPU on 16 pools in 16 cities. Reference
    counting still frees what the block drops; a cycle it makes waits for the first collection after
    it. Values unchanged."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


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
                base_at: dict[str, list[int]] = {}          # the pools of base at each site, in listing order
                for p in base:
                    base_at.setdefault(pools[p].site, []).append(p)
                hosts = sorted({pools[p].site for p in base}) if with_sites else []
                home = pools[s].site
                others = [h for h in hosts if h != home]
                with_v = {p for p in base if pools[p].setting.memory_bytes == v}
                if not with_sites:
                    check_deadline(deadline)
                    covers = _covers(pools, s, v, (), tuple(base), base_at, with_v)
                    if covers:
                        keys.append(PoolKey(precision, s, v, (), tuple(base), covers))
                    continue
                # one pool of base at each other site (the usual case: a pool per city): a set of sites'
                # allowed pools are home's and one per other site, its `_covers` need not list the choices
                one = [base_at[h][0] for h in others] if all(len(base_at[h]) == 1 for h in others) else None
                s_has_v = pools[s].setting.memory_bytes == v
                for r in range(len(others) + 1):
                    # with one pool a site, its pools run alongside: combinations of the same positions
                    for extra, chosen in zip(combinations(others, r), combinations(one or others, r)):
                        check_deadline(deadline)
                        sites = tuple(sorted((home,) + extra))
                        if one is None:    # base is in listing order: its pools at the sites, in listing order
                            picked = None
                            allowed = tuple(sorted([p for h in sites for p in base_at[h]]))
                        else:
                            picked = tuple(sorted(chosen))
                            allowed = tuple(sorted(base_at[home] + list(picked)))
                        if picked is not None and (s_has_v or not with_v.isdisjoint(picked)):
                            covers = ((s,) + picked,)      # `_covers`' first case, without the call
                        else:
                            covers = _covers(pools, s, v, sites, allowed, base_at, with_v, picked)
                        if covers:
                            keys.append(PoolKey(precision, s, v, sites, allowed, covers))
                            if len(keys) > MAX_SITE_SETS:
                                raise UnsupportedBySolver(
                                    f"the one-model path for a fleet of pools enumerates at most {MAX_SITE_SETS} "
                                    f"patterns of pools used (precision, slowest pool, least memory, sites used) for "
                                    f"their node ranges; this fleet has more (its pools sit at many sites); use "
                                    f"--solver bnb (at most 12 pools)")
    return keys


def _covers(pools, s: int, v: float, sites: tuple[str, ...], allowed: tuple[int, ...],
            at_site: dict[str, list[int]] | None = None, with_v: set[int] | None = None,
            picked: tuple[int, ...] | None = None) -> tuple[tuple[int, ...], ...]:
    """The minimal sets of allowed pools that hold s, a pool of memory v and a pool at every site, fewest
    pools first, then in listing order. Each is s, one pool at each other site (a pool there is needed,
    a second one would be redundant), and, when none of those has memory v, one pool of memory v at s's
    site (without sites: anywhere); a pool of memory v at another site would make that site's first
    pool redundant, so it is one of the choices of that site instead. `at_site`: the allowed pools at
    each site of `sites`, in listing order (other sites may be keys too: only those of `sites` are
    read), and `with_v`: pools of memory v (a superset of the allowed
    ones is fine), when the caller holds them; `picked`: when each other site of `sites` has one allowed
    pool, those pools in ascending order (the caller's, `pool_keys`)."""
    home = pools[s].site if sites else None
    if at_site is None:
        at_site = {}
        for p in allowed:
            at_site.setdefault(pools[p].site, []).append(p)
    if with_v is None:
        with_v = {p for p in allowed if pools[p].setting.memory_bytes == v}
    s_has_v = pools[s].setting.memory_bytes == v
    if picked is not None:                     # one pool at each other site, given: the one cover of those sites
        if s_has_v or not with_v.isdisjoint(picked):
            return ((s,) + picked,)
        choices = [(p,) for p in picked]
    else:
        choices = [at_site.get(site, ()) for site in sites if site != home]
    if picked is None and all(len(c) == 1 for c in choices):      # one pool at each other site: the one cover
        picked = tuple(sorted(c[0] for c in choices))
        if s_has_v or not with_v.isdisjoint(picked):
            return ((s,) + picked,)
    extra_v = [p for p in (at_site.get(home, []) if sites else allowed)
               if p != s and pools[p].setting.memory_bytes == v]
    found = set()
    for picked in product(*choices):
        if s_has_v or not with_v.isdisjoint(picked):
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
        return safe_name("_".join(parts + ([f"L{link_index}"] if link_index is not None else [])))


def link_values(links) -> tuple[float, ...]:
    """The fields of a `planner.fleet.network.SiteLinks` that the setting takes (`network.with_links`)."""
    return tuple(float(getattr(links, f)) for f in LINK_FIELDS)


def pattern_groups(pools: Sequence[PoolSetting], keys: Sequence[PoolKey], sites,
                   key_links: Sequence[tuple[float, ...]] | None = None) -> list[PatternGroup]:
    """The model's columns x: the patterns grouped by (precision, slowest, least memory, link values of
    their sites: `key_links` per key when given, else `sites.links`); refused (exit 2) beyond MAX_PATTERNS."""
    found: dict[tuple, list[int]] = {}
    for k, key in enumerate(keys):
        if sites is None or not key.sites:
            links = ()
        else:
            links = key_links[k] if key_links is not None else link_values(sites.links(key.sites))
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
    the regional links are those over the pairs sharing a region). `site_items` checks this on the sets
    of one, two and three sites of the patterns (refused otherwise).

    `table[m]`: the links of the set of sites of bit mask m (bit j: hosts[j]) by that rule, every field
    negated where it is the largest so that all are least: table[m | 2^b] = min(table[m], item (b,),
    items (b, j) for j in m) for m < 2^b, built for all 2^H sets at once (`_set_table`), so a set of
    sites costs a row lookup instead of a route table block and its regions (`SiteNetwork.links`; 16
    pools in 16 cities: 65,535 sets). None beyond MAX_TABLE_HOSTS hosts (`links_of` then asks the network)."""

    hosts: list[str]
    items: list[tuple[int, ...]]      # (j,) and (i, j), i < j, positions in hosts
    values: np.ndarray                # items x LINK_FIELDS
    table: np.ndarray | None = None   # 2^H x LINK_FIELDS, largest fields negated
    network: object = None            # the SiteNetwork, for `links_of` without a table

    def key_links(self, keys: Sequence[PoolKey]) -> list[tuple[float, ...]]:
        """link_values(network.links(key.sites)) of every key, read from `table`: the row of each distinct
        set of sites once (the same row times the same signs for every key of that set)."""
        if self.table is None:
            return [self.links_of(key.sites) for key in keys]
        bit = {h: 1 << j for j, h in enumerate(self.hosts)}
        listed = [key.sites for key in keys]
        distinct = list(dict.fromkeys(listed))
        masks = np.array([sum(map(bit.__getitem__, set(site_set))) for site_set in distinct], dtype=np.int64)
        rows = dict(zip(distinct, map(tuple, (self.table[masks] * _SIGN).tolist())))
        return list(map(rows.__getitem__, listed))

    def links_of(self, site_set: Sequence[str]) -> tuple[float, ...]:
        """link_values(network.links(site_set)), from `table` when it is built."""
        if self.table is None:
            return link_values(self.network.links(site_set))
        where = {h: j for j, h in enumerate(self.hosts)}
        return tuple((self.table[sum(1 << where[h] for h in set(site_set))] * _SIGN).tolist())


MAX_TABLE_HOSTS = 20     # `SiteItems.table` holds 2^H rows of LINK_FIELDS: 40 MB at 20 sites (pool_keys refuses
                         # fleets whose sets of sites exceed MAX_SITE_SETS = 2^17 before that)
_SIGN = np.where(LINK_LEAST, 1.0, -1.0)


def _set_table(values: np.ndarray, items: list[tuple[int, ...]], count: int) -> np.ndarray:
    """SiteItems.table: the links of every set of `count` sites from its items' (negated where largest)."""
    signed = values * _SIGN
    at = {e: a for a, e in enumerate(items)}
    table = np.full((1 << count, len(LINK_FIELDS)), np.inf)
    for b in range(count):
        with_b = np.empty((1 << b, len(LINK_FIELDS)))        # [m]: item (b,) and the items (j, b), j in m
        with_b[0] = signed[at[(b,)]]
        for j in range(b):
            np.minimum(with_b[:1 << j], signed[at[(j, b)]], out=with_b[1 << j:2 << j])
        np.minimum(table[:1 << b], with_b, out=table[1 << b:2 << b])
    return table


def site_links(pools: Sequence[PoolSetting], sites) -> SiteItems:
    """The items of the sites holding pools and the links of every set of them (`SiteItems`), unchecked."""
    hosts = sorted({p.site for p in pools})
    items = [(j,) for j in range(len(hosts))] + list(combinations(range(len(hosts)), 2))
    values = np.array([link_values(sites.links([hosts[i] for i in e])) for e in items], dtype=float)
    table = _set_table(values, items, len(hosts)) if len(hosts) <= MAX_TABLE_HOSTS else None
    return SiteItems(hosts, items, values, table, sites)


def check_site_items(items: SiteItems, keys: Sequence[PoolKey], sites, deadline: float = math.inf) -> None:
    """Refused (exit 2) unless the links of the sets of one, two and three sites of `keys` are the least /
    largest over their items' (`SiteItems`). Larger sets follow: network.links takes the WAN route over
    the pairs of S and the LANs (the access cap a pair carries too), and puts each site in its first
    candidate group (or its block of chosen regions) whatever else S holds, so a pair shares a region in
    S iff it does alone; a third site is where a rule of regions depending on S would show. (Every set was
    checked before; on 16 pools in 16 cities that was 65,535 route blocks and region splits, most of the
    solve's CPU.)"""
    for site_set in {key.sites for key in keys if len(key.sites) <= 3}:
        check_deadline(deadline)
        if items.links_of(site_set) != link_values(sites.links(site_set)):
            raise UnsupportedBySolver(f"the links of the sites {', '.join(site_set)} are not the least / largest over "
                                      "their pairs' (the one-model path's rows need that); use --solver bnb")


def site_items(pools: Sequence[PoolSetting], keys: Sequence[PoolKey], sites, deadline: float = math.inf) -> SiteItems:
    """The items of the sites holding pools (`SiteItems`), checked against the links of the sets of
    sites of `keys` (`check_site_items`)."""
    items = site_links(pools, sites)
    check_site_items(items, keys, sites, deadline)
    return items


@dataclass(frozen=True)
class FillOrder:
    """The node price of each pool (`node_price_usd`) and the pools cheapest first (ties to the first
    listed): what `key_counts` reads for every pattern, computed once per fleet (`fill_order`)."""

    prices: tuple[float, ...]
    order: tuple[int, ...]
    counts: tuple[int, ...] = ()      # the nodes of each pool (`key_range` sums them per pattern)

    def cost_usd(self, counts: Sequence[int]) -> float:
        """`fleet_cost_usd`: sum_p n_p x node price_p, the same terms added in the same order from 0 (`sum`
        of the products `operator.mul` makes: n * price, as the generator did)."""
        return float(sum(map(mul, counts, self.prices)))


def fill_order(pools: Sequence[PoolSetting]) -> FillOrder:
    prices = tuple(node_price_usd(p) for p in pools)
    return FillOrder(prices, tuple(sorted(range(len(pools)), key=lambda p: (prices[p], p))),
                     tuple(p.count for p in pools))


def key_counts(pools: Sequence[PoolSetting], key: PoolKey, nodes: int,
               fill: FillOrder | None = None) -> list[int] | None:
    """The cheapest counts of `nodes` nodes with this pattern: a minimal cover one node each, the rest
    from the cheapest allowed pools (min over the covers); None if no cover fits. `fill`: the fleet's
    `fill_order` when the caller holds it. (The allowed pools in fill order are listed once per call.)"""
    fill = fill_order(pools) if fill is None else fill
    sizes, order = _fill_of(pools, key, fill)
    total = sum([sizes[p] for p in key.allowed])
    best, best_cost = None, math.inf
    for cover in key.covers:
        if not len(cover) <= nodes <= total:
            continue
        counts = cover_counts(sizes, order, cover, nodes)
        if counts is None:
            continue
        cost = fill.cost_usd(counts)
        if cost < best_cost:
            best, best_cost = counts, cost
    return best


def _fill_of(pools: Sequence[PoolSetting], key: PoolKey, fill: FillOrder) -> tuple[Sequence[int], list[int]]:
    """(the nodes of each pool, the pattern's allowed pools in fill order: cheapest first)."""
    allowed = set(key.allowed)
    return (fill.counts if fill.counts else tuple(p.count for p in pools)), [p for p in fill.order if p in allowed]


def cover_counts(sizes: Sequence[int], order: Sequence[int], cover: Sequence[int], nodes: int) -> list[int] | None:
    """The cheapest counts of `nodes` nodes that use every pool of `cover`: one node each, the rest taken
    from the pools of `order` (the pattern's allowed pools, cheapest first) up to their sizes; None where
    they hold fewer. Greedy by price is the least cost of any counts with n_p >= 1 on the cover, n_p <=
    size_p on the allowed pools and sum n_p = nodes, and as prices are >= 0 (the schema's ge=0) that cost
    never falls as `nodes` grows: the next node costs the price of the next pool in `order`. (Over the
    covers together it can fall: a larger cover of cheap pools first fits at a larger N, `key_intervals`.)"""
    counts = [0] * len(sizes)
    for p in cover:
        counts[p] = 1
    left = nodes - len(cover)
    for p in order:
        if left == 0:
            break
        take = min(left, sizes[p] - counts[p])
        counts[p] += take
        left -= take
    return counts if left == 0 else None


class PatternCosts:
    """The cost of each cover's cheapest counts (`cover_counts`, `fleet_cost_usd` of the counts) of a set of
    patterns at any node count, worked over arrays: one row per (pattern, cover). `least(nodes, ranges)`: a
    lower bound on the cost of any plan of the patterns with at least `nodes` nodes (min_cost's cut).

    The same counts: `key_counts` gives the cover one node each, then takes from the allowed pools in fill
    order min(left, the pool's nodes less the cover's one) until none is left; in a row that is, per pool
    i in fill order, clip(left0 - (capacity before i), 0, capacity_i), capacity 0 where not allowed. The
    same double: the cost sums n_p x node price_p from 0 over the pools in listing order, one product and
    one addition per pool for every row at once (numpy's float64 multiply and add of an exactly converted
    int: `FillOrder.cost_usd`'s operations on every row, not a pairwise `sum`), inf where the cover does not
    fit (left over, or fewer nodes than the cover). (On 16
    pools in 16 cities, min_cost, the patterns filled one at a time took 26 of 42 s.)"""

    def __init__(self, pools: Sequence[PoolSetting], keys: Sequence[PoolKey], fill: FillOrder):
        sizes = np.array(fill.counts if fill.counts else [p.count for p in pools], dtype=np.int64)
        order = np.array(fill.order, dtype=np.int64)
        rows, covers, lengths = [], [], []
        for a, key in enumerate(keys):
            for cover in key.covers:
                rows.append(a)
                covers.append(cover)
                lengths.append(len(cover))
        self.pattern = np.array(rows, dtype=np.int64)
        self.cover_len = np.array(lengths, dtype=np.int64)
        self.total = np.array([sum([int(sizes[p]) for p in key.allowed]) for key in keys], dtype=np.int64)
        self.cover = np.zeros((len(rows), len(pools)), dtype=np.int64)      # pool order
        allowed = np.zeros((len(keys), len(pools)), dtype=bool)
        for a, key in enumerate(keys):
            allowed[a, list(key.allowed)] = True
        for r, cover in enumerate(covers):
            self.cover[r, list(cover)] = 1
        self.capacity = np.where(allowed[self.pattern][:, order], (sizes[None, :] - self.cover)[:, order], 0)
        self.before = np.cumsum(self.capacity, axis=1) - self.capacity      # capacity ahead in fill order
        self.order = order
        self.prices = [float(x) for x in fill.prices]

    def row_costs(self, n: np.ndarray) -> np.ndarray:
        """USD per (pattern, cover) row: fleet_cost_usd of the cover's cheapest counts (`cover_counts`) at
        n[row] nodes, inf where they do not fit (fewer nodes than the cover, or more than the pattern's)."""
        left = n - self.cover_len
        take = np.clip(left[:, None] - self.before, 0, self.capacity)
        counts = self.cover.copy()
        counts[:, self.order] += take
        cost = np.zeros(len(n))
        for p, price in enumerate(self.prices):
            cost = cost + counts[:, p] * price
        fits = (self.cover_len <= n) & (n <= self.total[self.pattern]) & (take.sum(axis=1) == left)
        return np.where(fits, cost, math.inf)

    def least(self, nodes: int, ranges: np.ndarray) -> float:
        """USD: the least cost of a plan of these patterns with at least `nodes` nodes within their ranges
        [lo, hi] (`ranges`, one row a pattern): per (pattern, cover) row the cost of its cover's cheapest
        counts (`cover_counts`) at n = max(nodes, lo, |cover|) where n <= hi, the least over the rows; inf
        if none. A lower bound on every such plan, and the least cost where one exists at n: a plan of the
        pattern with N >= nodes nodes uses every pool of one of its covers c, so it costs at least c's
        cheapest counts at N, which never cost less at a smaller N >= |c| (`cover_counts`). Not the least
        cost of the pattern's cheapest counts at max(nodes, lo) (`key_counts`): a cover larger than that
        n may be cheaper at its own size (`key_intervals`)."""
        lo, hi = ranges[self.pattern, 0], ranges[self.pattern, 1]
        n = np.maximum(np.maximum(nodes, lo), self.cover_len)
        cost = np.where(n <= hi, self.row_costs(n), math.inf)
        return float(cost.min(initial=math.inf))


def key_range(pools: Sequence[PoolSetting], key: PoolKey, min_nodes: int, cap: float,
              budget_usd: float | None, fill: FillOrder | None = None) -> tuple[int, int] | None:
    """[lo, hi]: the least and most node counts N a plan of this pattern can have within the node cap and
    the budget (the hull of `key_intervals`), None where it has none. Every N between is realisable
    unless `key_intervals` has more than one interval (only under a budget). `fill`: as `key_counts`."""
    spans = key_intervals(pools, key, min_nodes, cap, budget_usd, fill)
    return (spans[0][0], spans[-1][1]) if spans else None


def key_intervals(pools: Sequence[PoolSetting], key: PoolKey, min_nodes: int, cap: float,
                  budget_usd: float | None, fill: FillOrder | None = None) -> list[tuple[int, int]]:
    """The node counts N >= `min_nodes` at which a plan of this pattern fits the node cap and the budget,
    as disjoint intervals in order (none: an empty list).

    Without a budget: [max(min_nodes, fewest pools of a cover), min(nodes of the allowed pools, cap)]
    (a cover of at most that many pools, one node each, the rest from the allowed pools: every N between).
    Under a budget, per cover c: its cheapest counts (`cover_counts`) cost f_c(N), which never falls as N
    grows, so the N of c within the budget are [a_c, h_c] with a_c = max(min_nodes, |c|) when f_c(a_c) is
    within it, h_c found by bisection; the pattern's N are the union over its covers. The union need not
    be one interval, nor start at its least cover: a cover of two pools, one of them dear, can exceed the
    budget at N = 2 where a cover of three cheap pools meets it at N = 3 (and the cheapest counts of the
    pattern then cost less at N = 3 than at N = 2)."""
    counts = fill.counts if fill is not None and fill.counts else [p.count for p in pools]
    hi = int(min(sum([counts[p] for p in key.allowed]), cap))
    if budget_usd is None:
        lo = max(min_nodes, min(map(len, key.covers)))
        return [(lo, hi)] if lo <= hi else []
    fill = fill_order(pools) if fill is None else fill
    sizes, order = _fill_of(pools, key, fill)
    spans = []
    for cover in key.covers:

        def within(n: int) -> bool:
            found = cover_counts(sizes, order, cover, n)
            return found is not None and fill.cost_usd(found) <= budget_usd

        low = max(min_nodes, len(cover))
        if low > hi or not within(low):
            continue
        a, high = low, hi
        while low < high:
            mid = (low + high + 1) // 2
            low, high = (mid, high) if within(mid) else (low, mid - 1)
        spans.append((a, low))
    merged: list[tuple[int, int]] = []
    for a, b in sorted(spans):
        if merged and a <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], b))
        else:
            merged.append((a, b))
    return merged


def key_ranges(pools: Sequence[PoolSetting], keys: Sequence[PoolKey], min_nodes: int, cap: float,
               budget_usd: float | None, fill: FillOrder | None = None,
               deadline: float = math.inf, gapped: set[int] | None = None) -> list[tuple[int, int] | None]:
    """`key_range` of every key, in order; the indices of the keys whose node counts within the budget are
    not one interval (`key_intervals`: its hull is their range, and not every N of it has a plan) are added
    to `gapped` where given (only under a budget). Without a budget `key_range` is lo = max(min_nodes, fewest pools
    of a cover), hi = min(nodes of the allowed pools, cap), None when hi < lo: here worked for all keys
    at once, the nodes of each key's allowed pools summed as int64 prefix sums over the keys' allowed
    pools laid end to end (integers: exact, the same numbers as `key_range`'s Python sum; on 16 pools in
    16 cities 131,070 calls were ~0.3 s). With a budget, `key_intervals` per key (its bisections read each
    cover's cheapest counts). `deadline` read before the batch (and per key with a budget), as `check_deadline`."""
    check_deadline(deadline)
    if budget_usd is not None or not keys:
        out = []
        for k, key in enumerate(keys):
            check_deadline(deadline)
            spans = key_intervals(pools, key, min_nodes, cap, budget_usd, fill)
            out.append((spans[0][0], spans[-1][1]) if spans else None)
            if len(spans) > 1 and gapped is not None:
                gapped.add(k)
        return out
    counts = np.array(fill.counts if fill is not None and fill.counts else [p.count for p in pools], dtype=np.int64)
    sizes = np.fromiter(map(len, map(attrgetter("allowed"), keys)), dtype=np.int64, count=len(keys))
    flat = np.fromiter(chain.from_iterable(map(attrgetter("allowed"), keys)), dtype=np.int64, count=int(sizes.sum()))
    prefix = np.concatenate(([0], np.cumsum(counts[flat])))
    ends = np.cumsum(sizes)
    total = (prefix[ends] - prefix[ends - sizes]).tolist()
    fewest = [min(map(len, key.covers)) for key in keys]
    out = []
    for nodes, least in zip(total, fewest):
        lo, hi = max(min_nodes, least), int(min(nodes, cap))
        out.append(None if hi < lo else (lo, hi))
    return out


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
    rule: str = "straggler"           # fleet.sync_rule; another rule adds its rows (`proportional.mip_rows`)
    rule_rows: object = None          # `planner.sync.proportional.mip_rows.RuleRows` under another rule

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
    rule: str = "straggler"           # the sync rule it runs (`planner.sync.proportional.rule`)


def price_scale(pools: Sequence[PoolSetting]) -> float:
    """USD per cost unit of the model: the dearest node's price (1 when every pool is free)."""
    return max([node_price_usd(p) for p in pools] + [0.0]) or 1.0


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
