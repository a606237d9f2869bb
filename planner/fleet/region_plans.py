"""Chosen regions on an instance (docs/fleet.md, section 3): the regions a part of the planner must
try (`part_regions`) and its optimum's counts (`part_counts`), a plan's regions checked against the
instance (`plan_region_problems`) and shown (`region_rows`, `plan_regions`), the unit size of a
batch of plans (`units_of`, `batch_unit`), and the oracle's region choices (`oracle_regions`). The
placement rule and its costs are `planner.fleet.regions`; this module applies them to an instance's
pools and sites. Setting layer (docs/architecture.md).
"""

from __future__ import annotations

import itertools
import math
from typing import Sequence

import numpy as np

from planner.fleet.regions import (Partition, Placement, cheapest_placement, is_placeable, placement_of,
                                   plan_unit)
from planner.schema.errors import Problem


def units_of(batch, size: int) -> np.ndarray:
    """u of each of `size` plans of a PlanBatch of mode flat (ZeRO-3 shards: Z) or hierarchical (k)."""
    if batch.mode == "hierarchical":
        return np.broadcast_to(np.asarray(batch.group_size, dtype=np.int64), (size,))
    z = batch.zero_shards
    if batch.mode == "flat" and z is not None:
        return np.broadcast_to(np.maximum(np.asarray(z, dtype=np.int64), 1), (size,))
    return np.ones(size, dtype=np.int64)


def region_rows(pools, counts: Sequence[int], partition: Partition, unit: int) -> list[dict]:
    """Per region: its sites, the plan's nodes there, the units (groups, pipelines) it hosts and the
    cost of its nodes (sum over its pools of n_p x node price_p; the regions' costs add up to the plan's)."""
    from planner.fleet.replicas import node_price_usd
    rows = []
    for block in partition:
        inside = [(p, n) for p, n in zip(pools, counts) if p.site in block]
        c = sum(n for _, n in inside)
        rows.append({"sites": list(block), "nodes": c, "units": c // unit if unit > 1 else None,
                     "cost_usd": float(sum(n * node_price_usd(p) for p, n in inside))})
    return rows


def plan_region_problems(instance, plan, pools, counts: Sequence[int], sites) -> list[Problem]:
    """plan.regions against the instance and the plan's node counts (network.regions = "chosen"):
    a partition of exactly the sites the plan uses, each block a region of the tier, the nodes
    placeable; required when the plan has groups (hierarchical, PP-group, ZeRO-3) on several sites.
    Errors name plan.regions (or plan.pool_nodes for the placement)."""
    chosen = instance.network.regions == "chosen"
    if plan.regions is not None and (not chosen or sites is None):
        return [Problem("plan.regions", "only with network.regions = 'chosen' and a fleet of pools at sites "
                                        f"(network.regions is {instance.network.regions!r})")]
    if not chosen or sites is None:
        return []
    used_sites = sorted({p.site for p, n in zip(pools, counts) if n})
    unit = plan_unit(plan.mode, plan.group_size, plan.stages, getattr(plan, "zero_shards", None))
    if plan.regions is None:
        if len(used_sites) <= 1 or unit <= 1:      # one site, or a plan without groups: no regions needed
            return []
        return [Problem("plan.regions", "required with network.regions = 'chosen' when a plan with groups uses "
                                        f"several sites ({', '.join(used_sites)}): a list of regions, each a list of "
                                        "sites, e.g. " + str([[s] for s in used_sites]).replace("'", '"'))]
    problems = []
    seen: dict[str, int] = {}
    for i, block in enumerate(plan.regions):
        for site in block:
            if site in seen:
                problems.append(Problem(f"plan.regions[{i}]", f"site {site!r} is in two regions "
                                                              f"(also plan.regions[{seen[site]}])"))
            elif site not in used_sites:
                problems.append(Problem(f"plan.regions[{i}]", f"site {site!r} holds none of the plan's nodes; "
                                                              f"the plan uses {', '.join(used_sites)}"))
            seen[site] = i
    missing = [s for s in used_sites if s not in seen]
    if missing:
        problems.append(Problem("plan.regions", f"must hold every site the plan uses; missing {', '.join(missing)}"))
    if problems:
        return problems
    from planner.sites.partition import tier_relation
    pairs = tier_relation(sites.graph)
    regional = instance.network.regional
    for i, block in enumerate(plan.regions):
        for a, b in itertools.combinations(block, 2):
            if not pairs.has_edge(a, b):
                problems.append(Problem(f"plan.regions[{i}]", f"sites {a!r} and {b!r} have no route meeting the "
                                                              f"regional tier ({regional.mbps:g} Mb/s each way, "
                                                              f"<= {regional.rtt_ms:g} ms RTT); split them"))
                break
    if problems:
        return problems
    partition = tuple(tuple(sorted(b)) for b in plan.regions)
    per_region = [sum(n for p, n in zip(pools, counts) if p.site in block) for block in partition]
    if not is_placeable(per_region, unit):
        shown = ", ".join(f"{'+'.join(b)}: {c}" for b, c in zip(partition, per_region))
        problems.append(Problem("plan.pool_nodes", f"nodes per region ({shown}) cannot form the plan's "
                                                   f"{plan.nodes // unit} units of {unit} nodes inside regions: "
                                                   f"each region needs >= {unit} nodes and the remainders mod "
                                                   f"{unit} must add up to < {unit} (docs/fleet.md, section 3)"))
    return problems


def batch_unit(batch) -> int:
    """u of the first plan of a PlanBatch."""
    z = batch.zero_shards
    return plan_unit(batch.mode, np.ravel(batch.group_size)[0], np.ravel(batch.stages)[0],
                     None if z is None else np.ravel(z)[0])


def part_regions(instance, sites, pools, used: Sequence[int]) -> list[tuple[object, Placement | None]]:
    """The (site network view, placement) of every region partition the planner must try for the
    pools `used`: geography (or no sites): [(sites, None)]; chosen: each undominated partition of
    their sites (planner.sites.partition), best regional link first (plans of equal time and cost
    go to it), the placement None when it has a single region (with limits.budget_usd, its view
    within the budget)."""
    if sites is None or instance.network.regions != "chosen":
        return [(sites, None)]
    from planner.fleet.replicas import sites_of
    out = []
    for p in region_choices(sites, sites_of(pools, used)):
        placement = None
        if len(p) > 1:       # a budget lists only the (N, u) placed within it
            placement = placement_of(pools, used, p).within(instance.limits.budget_usd or math.inf)
        out.append((sites.with_regions(p), placement))
    return out


def region_choices(sites, names: Sequence[str]) -> list:
    """The undominated region partitions of the sites `names` (planner.sites.partition), best regional
    link first, then fewer regions (the planner's ties go to the earlier part)."""
    from planner.sites.partition import partition_link, region_partitions, undominated
    kept = undominated(sites.graph, region_partitions(sites.graph, names))
    kept.sort(key=lambda p: (-partition_link(sites.graph, p)[0], partition_link(sites.graph, p)[1], len(p)))
    return kept


class SiteSets:
    """The undominated region partitions of any set of an instance's sites, by bit masks over the sorted
    site names `names` (bit i: names[i]), with every set's slowest route from one table
    (`network.site_set_routes`) instead of the route graph per set: the partitions, their order and
    the refusal beyond `partition.MAX_PARTITIONS` are those of `region_choices` (the same search over
    set partitions in restricted-growth order, `partition.clique_partitions`, blocks grown only by sites
    meeting the tier with every site already in them; dominance by single merges; best regional link
    first, then fewer regions), each set's built from the undominated partitions of smaller sets
    (`_undominated`: the region holding its lowest site, then the rest's), so that listing every set of
    16 sites reads each partition once (0.9 s instead of 10 s on 16 cities at a 20 ms tier).
    tests/test_pool_regions_families.py compares them with `region_choices` on every set of sites,
    tests/test_choice_listing.py with the code before (`clique_partitions`, each partition's merges)."""

    def __init__(self, sites, names: Sequence[str]):
        from planner.fleet.network import site_set_routes
        from planner.sites.partition import MAX_PARTITIONS, tier_masks
        self.names = list(names)
        self.graph = sites.graph
        self.mbps, self.rtt_ms = site_set_routes(sites, self.names)
        self.tier = tier_masks(sites.graph, self.names)
        self._kept: dict[int, list] = {}
        self._linked: dict[int, list] = {}
        self._counts: dict[int, int] = {0: 1}
        self._limit = MAX_PARTITIONS             # partitions of one set listed at most
        self._every = (1 << len(self.names)) - 1
        self._base = max(1, len(self.names).bit_length())     # K = 2^_base > n - 1 (`_growth`)
        self._digits: dict[int, int] = {}
        self._names: dict[int, tuple[str, ...]] = {}
        self._free: dict[int, list] = {}
        self._common: dict[int, int] = {0: -1}
        self._links: dict[int, frozenset] = {0: frozenset([(math.inf, -math.inf)])}
        self._cliques: dict[int, bool] = {}
        self._route = (self.mbps.tolist(), self.rtt_ms.tolist())   # the same floats, as Python floats

    def link(self, blocks: Sequence[int]) -> tuple[float, float]:
        """(Mb/s, RTT ms) of the slowest route inside any of the blocks (`partition.partition_link`;
        the floats of `site_set_routes`, as Python floats)."""
        return min(self._route[0][b] for b in blocks), max(self._route[1][b] for b in blocks)

    def partitions(self, mask: int) -> list[tuple[int, ...]]:
        """The undominated region partitions of the sites of `mask`, each a tuple of block masks (blocks in
        the order of their lowest site), in the listing's order (`linked_partitions`)."""
        if mask not in self._kept:
            self._kept[mask] = [blocks for blocks, _ in self.linked_partitions(mask)]
        return self._kept[mask]

    def linked_partitions(self, mask: int) -> list[tuple[tuple[int, ...], tuple[float, float]]]:
        """(blocks, `link(blocks)`) of the undominated region partitions of the sites of `mask`, in the
        listing's order: best regional link (most Mb/s, then least RTT) first, then fewer regions, then
        the restricted-growth order of `clique_partitions` (its listing order, which the listing's
        stable sort keeps among ties; `_growth`). Refused (InputError naming network.regions) where the
        set has more than `partition.MAX_PARTITIONS` partitions into regions, undominated or not, as
        `clique_partitions` counts them (`_count`; not counted when the set of every site has no more:
        a set has at least as many partitions as any set inside it, each extended by single sites).
        The partitions and links are `_undominated`'s."""
        if mask not in self._linked:
            if self._count(self._every) > self._limit and self._count(mask) > self._limit:
                self.refuse([i for i in range(len(self.names)) if mask >> i & 1])
            kept = sorted(self._undominated(mask), key=lambda f: (-f[0], f[1], len(f[2])))
            if len(kept) > 1:           # ties of link and size: the listing's order
                out, start = [], 0
                for k in range(1, len(kept) + 1):
                    if k == len(kept) or kept[k][:2] != kept[start][:2] or len(kept[k][2]) != len(kept[start][2]):
                        out += sorted(kept[start:k], key=lambda f: self._growth(f[2])) if k - start > 1 else kept[start:k]
                        start = k
                kept = out
            self._linked[mask] = [(blocks, (mbps, rtt_ms)) for mbps, rtt_ms, blocks in kept]
        return self._linked[mask]

    def _growth(self, blocks: Sequence[int]) -> int:
        """The restricted-growth string of a partition whose blocks (masks) are in the order of their lowest
        site (each site's block index, sites ascending: `clique_partitions` lists the partitions, depth
        first, in the lexicographic order of these) as one number: sum over blocks j of j x `_digits(b)`,
        site i the digit of weight K^(n - 1 - i), K = `_base` > n - 1 >= any block index; the sites
        outside the set are zeros in every partition of it, so numbers order as the strings do."""
        digits = self._digits
        return sum(j * (digits.get(b) or self._digit(b)) for j, b in enumerate(blocks) if j)

    def _digit(self, block: int) -> int:
        """sum of K^(n - 1 - i) over the sites i of `block` (`_growth`), remembered."""
        n, out, rest = len(self.names), 0, block
        while rest:
            low = rest & -rest
            out += 1 << (self._base * (n - low.bit_length()))
            rest ^= low
        self._digits[block] = out
        return out

    def _count(self, mask: int) -> int:
        """The partitions of the sites of `mask` into regions (every clique partition, undominated or not),
        counted up to MAX_PARTITIONS + 1: the blocks B holding its lowest site, each with the partitions
        of the rest (a set has at least as many partitions as any set of sites inside it)."""
        found = self._counts.get(mask)
        if found is None:
            found = 0
            for _, left in self._first_blocks(mask):
                found += self._count(left)
                if found > self._limit:
                    break
            self._counts[mask] = found = min(found, self._limit + 1)
        return found

    def _first_blocks(self, mask: int):
        """(B, the rest of `mask`) of every region B (a clique of the tier) holding the lowest site of
        `mask`: that site with a subset of the others it meets the tier with (the tier relation is
        symmetric: an undirected graph), from the largest subset down."""
        low = mask & -mask
        rest = mask ^ low
        near = self.tier[low.bit_length() - 1] & rest
        sub = near
        while True:
            if self._clique(low | sub):
                yield low | sub, rest & ~sub
            if sub == 0:
                return
            sub = (sub - 1) & near

    def _undominated(self, mask: int) -> list[tuple[float, float, tuple[int, ...]]]:
        """(Mb/s, RTT ms, blocks) of each undominated region partition of the sites of `mask` (in no
        particular order; its link `link(blocks)`), built from the block B holding the lowest site of
        `mask` (a clique of the tier holding it; the tier relation is symmetric, an undirected graph)
        and an undominated partition P' of the rest, memoised per set.

        Dominance (`partition.undominated`, by single merges; `_merges` checks the pairs):
        P is dominated when two of its blocks a before b, every site of a meeting the tier with b
        (`_meets(a)` holds b), have mbps[a | b] >= mbps(P) and rtt[a | b] <= rtt(P). Only P' undominated
        can give P = (B,) + P' undominated: a pair of P' dominating P' dominates P, since P's link is
        no better (mbps(P) = min(mbps[B], mbps(P')) <= mbps(P'), rtt(P) >= rtt(P')), and the pair keeps
        its order in P. So every undominated P is built, and it is kept iff no pair of its blocks
        dominates it: the pairs (B, b) always, the pairs inside P' only when P's link differs from
        P''s (with the same link they fail as they failed for P').
        The link (m, r) is `link(blocks)` float for float: min(x, y) returns x unless y < x, so the
        nested min(mbps[B], min(...)) is the first least value in block order, as the flat min over
        the blocks is (likewise max; the schema's numbers are finite, no NaN), signed zeros included.
        tests/test_pool_regions_families.py compares `linked_partitions` with the listing
        (`region_choices`; and the code before this search: `clique_partitions`, each partition's
        pairs checked, a stable sort)."""
        found = self._free.get(mask)
        if found is not None:
            return found
        mbps, rtt = self._route
        out = []
        for block, left in self._first_blocks(mask):
            common, m_block, r_block = self._meets(block), mbps[block], rtt[block]
            for m_rest, r_rest, blocks in self._undominated(left) if left else [(math.inf, -math.inf, ())]:
                m, r = min(m_block, m_rest), max(r_block, r_rest)
                if any(common & b == b and mbps[block | b] >= m and rtt[block | b] <= r for b in blocks):
                    continue
                if (m != m_rest or r != r_rest) and self._merges(blocks, m, r):
                    continue
                out.append((m, r, (block,) + blocks))
        self._free[mask] = out
        return out

    def _meets(self, block: int) -> int:
        """The sites meeting the tier with every site of `block` (the AND of their `tier` masks)."""
        found = self._common.get(block)
        if found is None:
            low = block & -block
            found = self._common[block] = self.tier[low.bit_length() - 1] & self._meets(block ^ low)
        return found

    def _merges(self, blocks: tuple[int, ...], mbps: float, rtt_ms: float) -> bool:
        """Whether two of the blocks, a before b, meeting the tier pairwise, have a route of at least
        `mbps` and at most `rtt_ms` (a partition of that link with these blocks is dominated)."""
        route_mbps, route_rtt = self._route
        for i, a in enumerate(blocks):
            common = self._meets(a)
            for b in blocks[i + 1:]:
                if common & b == b and route_mbps[a | b] >= mbps and route_rtt[a | b] <= rtt_ms:
                    return True
        return False

    def partition_links(self, mask: int) -> list[tuple[float, float]] | None:
        """The distinct links (Mb/s, RTT ms) of the undominated partitions of the sites of `mask`, in the
        order `partitions` lists them (most Mb/s, then least RTT), without listing them: None where
        `partitions` refuses (more than `partition.MAX_PARTITIONS` partitions).

        Every partition's link is an undominated one's (so the links of every partition into regions
        are those of the undominated ones): if P is dominated, merging some two of its blocks a, b
        (meeting the tier pairwise) gives P' with mbps[a | b] >= link_mbps(P), rtt[a | b] <= link_rtt(P);
        a route's least Mb/s and largest RTT over a set of sites are a minimum and a maximum over its
        pairs and LANs (`site_set_routes`), so mbps[a | b] <= min(mbps[a], mbps[b]) and rtt[a | b] >=
        max(rtt[a], rtt[b]), and P''s link, min(mbps[a | b], the other blocks') and the max of the RTTs,
        is P's exactly (the same floats: a minimum and a maximum pick one of their arguments); P' has
        one block fewer, so merging on ends at an undominated partition of P's link. The links of every
        partition are found block by block (the block holding the lowest site, a clique of the tier
        holding it: the restricted-growth listing's blocks, once each), with the partitions counted for
        the refusal (a set has at least as many partitions as any set of sites inside it, so a set with
        a refused rest is refused). tests/test_pool_regions_families.py compares it with `partitions`."""
        found = self._partition_links(mask)
        return None if found is None else sorted(found, key=lambda link: (-link[0], link[1]))

    def _partition_links(self, mask: int) -> frozenset | None:
        """The set of the links of the partitions of `mask` into regions; None beyond MAX_PARTITIONS
        (`_count`)."""
        if self._count(mask) > self._limit:
            return None
        found = self._links.get(mask)
        if found is None:
            mbps, rtt = self._route
            links = set()
            for block, left in self._first_blocks(mask):
                links.update((min(mbps[block], m), max(rtt[block], r)) for m, r in self._partition_links(left))
            found = self._links[mask] = frozenset(links)
        return found

    def _clique(self, block: int) -> bool:
        """Whether the sites of `block` meet the tier pairwise (a region)."""
        if block not in self._cliques:
            top = 1 << (block.bit_length() - 1)
            rest = block ^ top
            self._cliques[block] = rest == 0 or (self.tier[top.bit_length() - 1] & rest == rest and self._clique(rest))
        return self._cliques[block]

    def refuse(self, members: Sequence[int]) -> None:
        """InputError naming network.regions, as `partition.region_partitions` beyond its limit."""
        from planner.sites.partition import MAX_PARTITIONS, region_partitions
        region_partitions(self.graph, [self.names[i] for i in members], MAX_PARTITIONS)
        raise AssertionError("more region partitions by masks than by the listing")

    def named(self, blocks: tuple[int, ...]) -> tuple[tuple[str, ...], ...]:
        """The partition as blocks of site names (sorted)."""
        return tuple(self._names.get(b) or self._name(b) for b in blocks)

    def _name(self, block: int) -> tuple[str, ...]:
        """The sites of `block`, sorted (`named`), remembered."""
        found = self._names[block] = tuple(n for i, n in enumerate(self.names) if block >> i & 1)
        return found


def part_counts(pools, used: Sequence[int], placement: Placement | None, batch) -> list[int] | None:
    """Counts per pool of a part's optimum: the cheapest fill, or with several regions the cheapest
    placement of its unit size."""
    from planner.fleet.replicas import cheapest_fill
    n = int(np.ravel(batch.nodes)[0])
    if placement is None:
        return cheapest_fill(pools, used, n)
    return cheapest_placement(pools, placement, batch_unit(batch), n)


def plan_regions(sites) -> list[list[str]] | None:
    """plan.regions of a part's plan: its view's partition under chosen regions, else None."""
    partition = getattr(sites, "partition", None)
    return None if partition is None else [list(b) for b in partition]


class FixedCounts:
    """The oracle's placement: the nodes per region of one assignment, checked by the rule itself
    (`is_placeable`) at that assignment's N only."""

    def __init__(self, region_nodes: Sequence[int]):
        self.region_nodes = list(region_nodes)
        self.nodes = sum(region_nodes)

    def mask(self, unit: int) -> np.ndarray:
        mask = np.zeros(self.nodes + 1, dtype=bool)
        mask[self.nodes] = is_placeable(self.region_nodes, int(unit))
        return mask


def oracle_regions(instance, sites, pools, counts: Sequence[int]) -> list[tuple[object, FixedCounts | None]]:
    """The oracle's region choices for one assignment: every set partition of its sites whose
    blocks meet the tier pairwise (no dominance, no capacity reasoning); geography: [(sites, None)]."""
    if sites is None or instance.network.regions != "chosen":
        return [(sites, None)]
    from planner.sites.partition import all_set_partitions, tier_relation
    names = sorted({p.site for p, n in zip(pools, counts) if n})
    pairs = tier_relation(sites.graph)
    out = []
    for p in all_set_partitions(names):
        if all(pairs.has_edge(a, b) for block in p for a, b in itertools.combinations(block, 2)):
            region_nodes = [sum(n for q, n in zip(pools, counts) if q.site in block) for block in p]
            out.append((sites.with_regions(p), FixedCounts(region_nodes)))
    return out
