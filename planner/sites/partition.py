"""Regions chosen by the planner: partitions of a plan's sites into sets meeting the regional tier.

A *region* is a set of sites every pair of which is joined by a route meeting the regional tier
(`network.regional`: at least its Mb/s on every link both ways, at most its RTT in total; the
relation of `planner.sites.graph._tier_pairs`). With `network.regions = "chosen"` a plan's used
sites S are split into regions by the planner: a *region partition* of S is a set partition of S
whose every block is a region (a clique of the tier relation). A plan's regional (and PP-group
pipeline) link is the slowest route inside any of its regions (`partition_link`).

The tier relation is not transitive (RTTs add up along a route), so the partitions are listed by a
search over set partitions that only ever extends blocks by sites meeting the tier with every site
already in the block (`region_partitions`): every listed partition is valid and every valid one is
listed (each set partition is produced once, as a restricted growth string).

Skipping partitions (`undominated`). Partition P2 *refines* P1 when every block of P2 lies inside a
block of P1. If P2 refines P1 and P1's link is at least as good (Mb/s >=, RTT <=), P2 can be
skipped: every placement of nodes that P2 admits P1 admits too (merging regions never breaks the
placement rule of `planner.fleet.regions`: (a + b) mod u <= a mod u + b mod u, and a merged region
holds at least as many nodes as each part), the cost of a plan depends on its node counts only,
and its time does not grow with the regional link's bandwidth nor fall with its RTT (the regional
sync, the pipeline step and ZeRO-3's gathers are nondecreasing in 1 / bandwidth and in RTT;
docs/cost_model.md sections 3-4). Widest-route bandwidth alone is an ultrametric (thresholds give
nested partitions), but RTT is not, so the listing cannot be reduced to a chain of thresholds;
tests/test_regions.py checks both listings against every set partition of up to 6 sites.
"""

from __future__ import annotations

import itertools
from typing import Iterable, Iterator, Sequence

import networkx as nx

from planner.sites.routes import route_table

Partition = tuple[tuple[str, ...], ...]

MAX_PARTITIONS = 1000       # region partitions of one set of sites listed at most (Bell(7) = 877)


def tier_relation(graph: nx.Graph) -> nx.Graph:
    """Sites joined when some route between them meets the regional tier (graph.graph["regional"])."""
    cached = graph.graph.get("tier_relation")
    if cached is not None and cached[0] is route_table(graph):
        return cached[1]
    from planner.sites.graph import _tier_pairs
    mbps, rtt_ms = graph.graph["regional"]
    pairs = _tier_pairs(graph, mbps, rtt_ms)
    graph.graph["tier_relation"] = (route_table(graph), pairs)
    return pairs


def region_partitions(graph: nx.Graph, sites: Iterable[str], limit: int = MAX_PARTITIONS) -> list[Partition]:
    """Every set partition of `sites` into regions (blocks that are cliques of the tier relation),
    each block sorted, blocks in order of their first site in sorted order (the restricted-growth
    order of the sorted sites: `clique_partitions`). InputError naming network.regions when there are
    more than `limit` (each is a part the planner solves: the count grows like the Bell numbers)."""
    names = sorted(set(sites))
    listed = clique_partitions(tier_masks(graph, names), range(len(names)), limit)
    if listed is None:
        from planner.schema.errors import InputError, Problem
        raise InputError([Problem("network.regions", f"'chosen': the sites {', '.join(names)} have more than "
                                                     f"{limit} partitions into regions, beyond the exact "
                                                     "search; use 'geography', or merge pools that share "
                                                     "a site")])
    return [tuple(tuple(n for i, n in enumerate(names) if block >> i & 1) for block in blocks) for blocks in listed]


def tier_masks(graph: nx.Graph, names: Sequence[str]) -> list[int]:
    """Per site of `names`, the mask of the others it meets the tier with (bit j: names[j];
    `tier_relation`)."""
    pairs = tier_relation(graph)
    return [sum(1 << j for j, b in enumerate(names) if j != i and pairs.has_edge(a, b)) for i, a in enumerate(names)]


def clique_partitions(tier: Sequence[int], members: Iterable[int], limit: int) -> list[tuple[int, ...]] | None:
    """Every set partition of the sites `members` (bit indices, ascending) into cliques of the relation
    `tier` (tier[i]: the mask of the sites related to site i), each a tuple of block masks, in
    restricted-growth order: depth first over the members, each joining every block it is related to
    with every site of (in the blocks' order), then a block of its own; each set partition into
    cliques is produced once. None when there are more than `limit` (the listing stops there).
    `region_partitions` names the sites; `region_plans.SiteSets` lists every set of an instance's
    sites by masks."""
    members = list(members)
    listed: list[tuple[int, ...]] = []
    stack: list[tuple[int, tuple[int, ...]]] = [(0, ())]
    while stack:                        # depth first: a node's children pushed in reverse, popped in order
        depth, blocks = stack.pop()
        if depth == len(members):
            listed.append(blocks)
            if len(listed) > limit:
                return None
            continue
        site = members[depth]
        grown = [blocks[:j] + (b | 1 << site,) + blocks[j + 1:] for j, b in enumerate(blocks) if tier[site] & b == b]
        for nxt in reversed(grown + [blocks + (1 << site,)]):
            stack.append((depth + 1, nxt))
    return listed


def partition_link(graph: nx.Graph, partition: Partition) -> tuple[float, float]:
    """(mbps, rtt_ms) of the slowest route inside any region of the partition (each site's LAN
    included): min over regions of `slowest_link`'s Mb/s, max of its RTT."""
    from planner.sites.graph import slowest_link
    inner = [slowest_link(graph, block) for block in partition]
    return min(m for m, _ in inner), max(r for _, r in inner)


def refines(fine: Partition, coarse: Partition) -> bool:
    """Whether every block of `fine` lies inside a block of `coarse`."""
    home = {site: k for k, block in enumerate(coarse) for site in block}
    return all(len({home[s] for s in block}) == 1 for block in fine)


def undominated(graph: nx.Graph, partitions: Sequence[Partition]) -> list[Partition]:
    """The partitions no other partition dominates (module docstring): P2 is dropped when some P1
    != P2 that it refines has a link at least as good. Order kept.

    Checked by single merges: P2 is dominated iff merging two of its blocks gives a partition of
    regions whose link is as good. (If P1 dominates P2, merge two blocks of P2 lying in one block of
    P1: the result P2' is a partition of regions, coarser than P2 and finer than P1, so its link is
    no better than P2's and no worse than P1's, which is at least P2's: equal.) So each partition
    costs the pairs of its blocks, not a comparison with every other partition."""
    pairs = tier_relation(graph)
    from planner.sites.graph import slowest_link
    keep = []
    for p in partitions:
        mbps, rtt_ms = partition_link(graph, p)
        dominated = False
        for i, j in itertools.combinations(range(len(p)), 2):
            if all(pairs.has_edge(a, b) for a in p[i] for b in p[j]):
                merged_mbps, merged_rtt = slowest_link(graph, p[i] + p[j])
                if merged_mbps >= mbps and merged_rtt <= rtt_ms:
                    dominated = True
                    break
        if not dominated:
            keep.append(p)
    return keep


def undominated_by_definition(graph: nx.Graph, partitions: Sequence[Partition]) -> list[Partition]:
    """`undominated` by its definition, every pair of partitions compared (for the tests)."""
    links = [partition_link(graph, p) for p in partitions]
    return [p2 for j, p2 in enumerate(partitions)
            if not any(i != j and links[i][0] >= links[j][0] and links[i][1] <= links[j][1] and refines(p2, p1)
                       for i, p1 in enumerate(partitions))]


def all_set_partitions(items: Sequence[str]) -> Iterator[Partition]:
    """Every set partition of `items` (Bell number many; for the oracle and the tests)."""
    items = list(items)
    if not items:
        yield ()
        return
    first, rest = items[0], items[1:]
    for smaller in all_set_partitions(rest):
        for k in range(len(smaller)):
            yield smaller[:k] + ((first,) + smaller[k],) + smaller[k + 1:]
        yield ((first,),) + smaller
