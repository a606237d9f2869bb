"""The listing of the choices beyond 12 pools with chosen regions, built by blocks
(planner.solvers.pool_regions_families.choice_parts, planner.fleet.region_plans.SiteSets) against the
code it replaced: every set of sites' undominated partitions by `clique_partitions` with each
partition's pairs of blocks checked and a stable sort (the partitions, their links float for float,
their order, the refusals), and the choices keyed per (set of sites, partition) from the whole
partition (the parts, their order, placements and node ranges)."""

import math
import sys
from pathlib import Path

import numpy as np
import pytest

from planner.fleet.network import site_network
from planner.fleet.pools import pool_settings
from planner.fleet.region_plans import SiteSets
from planner.fleet.regions import choice_placement
from planner.fleet.replicas import node_price_usd
from planner.schema.errors import InputError
from planner.schema.instance import parse_instance
from planner.sites.partition import MAX_PARTITIONS, clique_partitions
from planner.solvers import pool_regions_families as families
from planner.solvers.pool_families import setting_classes
from planner.solvers.pool_parts import SiteSetViews, base_space, slowest_and_memory
from tests.test_pool_regions_families import linked_cities, many_pools_chosen

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))


def listed_before(sets: SiteSets, mask: int):
    """The partitions of `mask` as the code before listed them: every clique partition in restricted-growth
    order, those no merge of two blocks (a before b, every site of a meeting the tier with b) gives a
    link as good dropped, a stable sort by (most Mb/s, least RTT, fewer regions); None beyond
    MAX_PARTITIONS. Each with its link (numpy's floats, as Python floats)."""
    members = [i for i in range(len(sets.names)) if mask >> i & 1]
    listed = clique_partitions(sets.tier, members, MAX_PARTITIONS)
    if listed is None:
        return None

    def link(blocks):
        return float(min(sets.mbps[b] for b in blocks)), float(max(sets.rtt_ms[b] for b in blocks))

    def dominated(blocks):
        mbps, rtt = link(blocks)
        return any(all(sets.tier[s] & b == b for s in range(len(sets.names)) if a >> s & 1)
                   and sets.mbps[a | b] >= mbps and sets.rtt_ms[a | b] <= rtt
                   for i, a in enumerate(blocks) for b in blocks[i + 1:])

    kept = [(p, link(p)) for p in listed if not dominated(p)]
    kept.sort(key=lambda f: (-f[1][0], f[1][1], len(f[0])))
    return kept


def same_floats(a, b) -> bool:
    return [(x, math.copysign(1.0, x)) for x in a] == [(x, math.copysign(1.0, x)) for x in b]


def check_sets(instance, masks) -> int:
    """`linked_partitions` (and `partitions`, `partition_links`) against `listed_before` on `masks`;
    the number of sets with ties of link and size (the restricted-growth order deciding)."""
    names = sorted({p.site for p in instance.fleet.pools})
    net = site_network(instance)
    sets, ties = SiteSets(net, names), 0
    for mask in masks:
        expected = listed_before(sets, mask)
        if expected is None:
            with pytest.raises(InputError) as err:
                sets.linked_partitions(mask)
            assert err.value.problems[0].path == "network.regions"
            assert sets.partition_links(mask) is None
            continue
        got = sets.linked_partitions(mask)
        assert [p for p, _ in got] == [p for p, _ in expected] == sets.partitions(mask), mask
        for (blocks, link), (_, old) in zip(got, expected):
            assert same_floats(link, old) and same_floats(link, sets.link(blocks)), (mask, blocks)
        assert sets.partition_links(mask) == list(dict.fromkeys(link for _, link in got))
        keys = [(link, len(p)) for p, link in got]
        ties += len(set(keys)) < len(keys)
    return ties


def test_linked_partitions_equal_the_clique_listing_on_linked_cities():
    """Every set of sites of 10 random networks of 7 cities (`linked_cities`: several links per set)."""
    ties = 0
    for seed in range(10):
        instance = parse_instance(linked_cities(np.random.default_rng(5500 + seed)))
        ties += check_sets(instance, range(1, 1 << 7))
    assert ties >= 20


@pytest.mark.parametrize("rtt_ms", [20.0, 40.0])
def test_linked_partitions_equal_the_clique_listing_on_thirteen_cities(rtt_ms):
    """`bench_mixed.py`'s 13 cities with chosen regions: at 20 ms every set of sites; at 40 ms (the whole
    set refused, more than 1,000 partitions) 400 random sets and the whole."""
    from bench_mixed import pools_data
    data = pools_data(13)
    data["network"]["regions"], data["network"]["regional"]["rtt_ms"] = "chosen", rtt_ms
    every = (1 << 13) - 1
    masks = range(1, every + 1) if rtt_ms == 20.0 else \
        [every] + [int(m) for m in np.random.default_rng(11).integers(1, every, 400)]
    assert check_sets(parse_instance(data), masks) >= 1


def keyed_before(instance, pools):
    """`choice_parts` as the code before keyed the choices (no keep, no twin): per (q, s, v, forced pools),
    set of sites and partition, the regions of the whole partition from its pools that must and may
    hold nodes; (key of its setting, the part's pools, node range and placement) of each first key."""
    space = base_space(instance, pools)
    net = site_network(instance)
    views = SiteSetViews(net, pools)
    classes = setting_classes(pools)
    seen, out = set(), []
    for q, s, v, eligible, lows in slowest_and_memory(pools, space.precisions):
        cheapest, every = families.site_cheapest(pools, views.bit, eligible)
        for forced in [(s,)] if lows == (s,) else [(s, m) for m in lows]:
            required = views.mask(forced)
            free = every & ~required
            sub = free
            while True:
                mask = required | sub
                extra = tuple(p for b, p in cheapest.items() if mask & b and not required & b)
                must = tuple(sorted(set(forced) | set(extra)))
                may = tuple(p for p in eligible if mask & views.bit[p])
                for partition, blocks, links in views.partitions(mask):
                    forced_in = tuple(tuple(p for p in must if views.bit[p] & b) for b in blocks)
                    pools_in = tuple(tuple(p for p in may if views.bit[p] & b) for b in blocks)
                    regions = tuple(sorted(
                        (tuple(sorted(node_price_usd(pools[p]) for p in f)),
                         tuple(sorted((node_price_usd(pools[p]), pools[p].count - (p in f)) for p in e)))
                        for f, e in zip(forced_in, pools_in)))
                    key = (q, classes[s], v, links, regions)
                    if key not in seen:
                        seen.add(key)
                        out.append((key[:4], must, partition, choice_placement(pools, partition, forced_in, pools_in)))
                if sub == 0:
                    break
                sub = (sub - 1) & free
    return out


def described(placement):
    return (placement.partition, placement.lo, placement.cap, placement.pools_in, placement.forced_in,
            placement.whole.tolist(), [c.tolist() for c in placement.curves])


def check_choices(data) -> int:
    instance = parse_instance(data)
    pools = pool_settings(instance)
    got = families.choice_parts(instance, pools, None)
    expected = [(k, must, partition, placement) for k, must, partition, placement in keyed_before(instance, pools)
                if families.choice_part(instance, pools, None, base_space(instance, pools),
                                        instance.limits.max_nodes or math.inf, instance.limits.budget_usd,
                                        k[0], must, None, placement, {k: None}, k) is not None]
    assert [k for k, _ in got] == [k for k, *_ in expected]
    for (_, part), (_, must, partition, placement) in zip(got, expected):
        assert part.used == must and part.sites.partition == partition
        assert described(part.placement) == described(placement)
    return len(got)


@pytest.mark.parametrize("seed", range(6))
def test_choice_parts_equal_the_keys_of_whole_partitions(seed):
    """Random fleets of 13 to 16 pools at 2 to 6 sites (`many_pools_chosen`), without a budget and with
    one (half to all of every node's price): the same parts in the same order as keyed by whole
    partitions."""
    rng = np.random.default_rng(5600 + seed)
    data = many_pools_chosen(rng, int(rng.integers(13, 17)))
    data["limits"].pop("budget_usd", None)
    if seed % 2:               # a budget of 50% to 100% of every node's price
        pools = pool_settings(parse_instance(data))
        data["limits"]["budget_usd"] = float(rng.uniform(0.5, 1.0)) * sum(node_price_usd(p) * p.count for p in pools)
    assert check_choices(data) >= 1


def test_choice_parts_on_thirteen_cities_of_two_kinds():
    """`bench_mixed.py`'s 13 cities at 20 ms, the pools alternating 16x H100 and 8x B200."""
    from bench_mixed import pools_data
    data = pools_data(13)
    data["network"]["regions"], data["network"]["regional"]["rtt_ms"] = "chosen", 20.0
    for i, pool in enumerate(data["fleet"]["pools"]):
        pool["hardware"] = ("16xH100-SXM", "8xB200")[i % 2]
    assert check_choices(data) > 1000
