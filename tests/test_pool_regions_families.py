"""The search beyond 12 pools with regions chosen by the planner (planner.solvers.pool_regions_families)
against the full listing of every subset of pools and region partition (planner.solvers.pool_parts) and
against the brute-force oracle (planner.solvers.mixed_oracle: every assignment, every set partition);
its placements (planner.fleet.regions.ChoicePlacement) against every assignment; its partitions by
masks (planner.fleet.region_plans.SiteSets) against the listing's; what stays refused."""

import itertools
import json

import numpy as np
import pytest
from click.testing import CliRunner

from planner.cli import main
from planner.evaluate import evaluate
from planner.fleet.network import site_network
from planner.fleet.pools import pool_settings
from planner.fleet.region_plans import SiteSets, region_choices
from planner.fleet.regions import choice_placement, is_placeable
from planner.fleet.replicas import fleet_cost_usd
from planner.fleet.samples import add_sites, random_many_pools
from planner.schema.errors import InputError
from planner.schema.instance import parse_instance
from planner.sites.partition import partition_link
from planner.sites.samples import random_placement_instance, random_region_instance, random_tie_instance
from planner.solve import solve
from planner.solvers import decomposition
from planner.solvers.mixed_oracle import oracle
from tests.test_pool_families import agree


def by_choices(instance, monkeypatch, **kw):
    """The solve by the choices at any pool count (the listing's limit set to 0 pools)."""
    with monkeypatch.context() as m:
        m.setattr(decomposition, "MAX_EXACT_POOLS", 0)
        return solve(instance, **kw)


def many_pools_chosen(rng, count):
    """`random_many_pools` at 2 to 6 sites (`add_sites`) with chosen regions, most sites with a LAN faster
    than the tier (as `random_region_instance`), so that several pools share a site and a region."""
    data = random_many_pools(rng, count, max_count=3)
    add_sites(rng, data)
    data["network"]["regions"] = "chosen"
    for k, site in enumerate(data["network"]["sites"]):
        site.update({"lan_mbps": 40000.0, "lan_rtt_ms": 0.5} if k % 3 else {})
    if rng.random() < 0.5:
        data["search"]["modes"] = ["hierarchical", "pp_group"]
    return data


def check(instance, monkeypatch, where):
    listed, choices = solve(instance), by_choices(instance, monkeypatch)
    assert agree(choices, listed), (where, listed.status, listed.objective_value, choices.status,
                                    choices.objective_value)
    if choices.plan is not None:          # the plan and its regions re-scored, on the pools it names
        assert sum(choices.plan.pool_nodes.values()) == choices.plan.nodes
        assert evaluate(instance, choices.plan).values == choices.evaluation.values, where
    return choices


@pytest.mark.parametrize("seed", range(4))
def test_choices_equal_the_listing_on_many_pools_at_sites(seed, monkeypatch):
    rng = np.random.default_rng(5100 + seed)
    for k in range(3):
        check(parse_instance(many_pools_chosen(rng, int(rng.integers(2, 8)))), monkeypatch, (seed, k))


@pytest.mark.parametrize("draw", [random_region_instance, random_placement_instance, random_tie_instance])
@pytest.mark.parametrize("seed", range(3))
def test_choices_equal_the_listing_and_the_oracle_where_regions_matter(draw, seed, monkeypatch):
    """The oracle's families (several regions, placements that set the cost, ties across group sizes):
    the same value and cost as the listing, and as the oracle (its key: value, then cost)."""
    rng = np.random.default_rng(5200 + seed)
    for k in range(4):
        instance = parse_instance(draw(rng))
        as_the_oracle(instance, check(instance, monkeypatch, (draw.__name__, seed, k)))


def as_the_oracle(instance, result):
    """The result's value is the oracle's, and but for min_cost its cost (the oracle's key: value, then
    cost); no plan exactly when the oracle has none."""
    best = oracle(instance)
    value = result.objective_value if result.status == "optimal" else None
    assert (value is None) == (best is None)
    if value is not None:
        assert value == pytest.approx(best[0], rel=1e-9)
        if instance.objective != "min_cost":
            assert result.evaluation.values["cost_usd"] == pytest.approx(best[1][1], rel=1e-9)


def test_choice_placement_against_every_assignment():
    """C_u(N) and the placeable N of a choice's placement against every assignment of nodes to its
    pools (the forced ones at least one node each, the others any number), and its counts' cost."""
    data = random_many_pools(np.random.default_rng(7), 5, max_count=3)
    for pool, count, price in zip(data["fleet"]["pools"], [3, 2, 2, 1, 3], [900.0, 500.0, 700.0, 300.0, 0.0]):
        pool["count"], pool["hardware"], pool["price_usd_per_accelerator"] = count, "8xH100-SXM", price
    pools = pool_settings(parse_instance(data))
    forced_in, pools_in = ((0,), (2, 3)), ((0, 1), (2, 3, 4))
    placement = choice_placement(pools, (("A",), ("B",)), forced_in, pools_in)
    for unit in (1, 2, 3):
        best = {}
        ranges = [range(1 if i in (0, 2, 3) else 0, pools[i].count + 1) for i in range(5)]
        for counts in itertools.product(*ranges):
            per_region = [counts[0] + counts[1], counts[2] + counts[3] + counts[4]]
            if unit > 1 and not is_placeable(per_region, unit):
                continue
            n = sum(counts)
            best[n] = min(best.get(n, np.inf), fleet_cost_usd(pools, counts))
        cost, mask = placement.cost(unit), placement.mask(unit)
        for n in range(placement.n_max + 1):
            assert bool(mask[n]) == (n in best), (unit, n)
            if n in best:
                assert cost[n] == pytest.approx(best[n], rel=1e-12), (unit, n)
                counts = placement.counts(pools, unit, n)
                assert sum(counts) == n and fleet_cost_usd(pools, counts) == pytest.approx(best[n], rel=1e-12)
                assert all(counts[i] >= 1 for i in (0, 2, 3))
    one = choice_placement(pools, (("A", "B"),), ((0, 2, 3),), ((0, 1, 2, 3, 4),))   # one region: no rule
    assert one.mask(3)[3:].all() and not one.mask(3)[:3].any()


@pytest.mark.parametrize("seed", range(8))
def test_site_sets_equal_the_listing_of_partitions(seed):
    """Every set of sites: the partitions by masks, in order, and their links, as `region_choices`."""
    rng = np.random.default_rng(5300 + seed)
    instance = parse_instance(many_pools_chosen(rng, 6))
    names = sorted({p.site for p in instance.fleet.pools})
    net = site_network(instance)
    sets = SiteSets(net, names) if net is not None else None
    for chosen in (c for size in range(1, len(names) + 1) for c in itertools.combinations(names, size)):
        expected = region_choices(net, list(chosen)) if sets is not None else []
        got = sets.partitions(sum(1 << names.index(n) for n in chosen)) if sets is not None else []
        assert [sets.named(b) for b in got] == [tuple(tuple(b) for b in p) for p in expected]
        for blocks, p in zip(got, expected):
            assert sets.link(blocks) == partition_link(net.graph, p)


def linked_cities(rng, count=7):
    """`bench_mixed.py`'s `count` cities with chosen regions, random LANs, extra links and link speeds and
    a regional tier of 15 to 60 ms: sets of sites whose partitions have several distinct links."""
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
    from bench_mixed import pools_data
    data = pools_data(count)
    net = data["network"]
    net["regions"] = "chosen"
    net["regional"].update(mbps=1000.0, rtt_ms=float(rng.uniform(15, 60)))
    for site in net["sites"]:
        if rng.random() < 0.7:
            site.update(lan_mbps=float(rng.choice([2000.0, 10000.0, 40000.0])), lan_rtt_ms=float(rng.uniform(0.2, 2)))
    names = [s["name"] for s in net["sites"]]
    for a, b in itertools.combinations(names, 2):
        if rng.random() < 0.3 and not any({link["a"], link["b"]} == {a, b} for link in net["links"]):
            net["links"].append({"a": a, "b": b, "up_mbps": 1000.0})
    for link in net["links"]:
        link["up_mbps"] = float(rng.choice([1000.0, 2000.0, 5000.0]))
    return data


def test_partition_links_are_the_links_of_every_partition():
    """`SiteSets.partition_links` (no partition listed) against brute force on every set of sites of 12
    random networks of 7 cities (`linked_cities`): the distinct links of every set partition into
    regions (`all_set_partitions`, blocks meeting the tier pairwise, `partition_link` on the route
    graph), most Mb/s then least RTT first; the distinct links of the undominated partitions
    `partitions` lists, in its order (first appearance); and `SiteSetViews.link_numbers` against the
    five numbers `partitions` gives them."""
    from planner.sites.partition import all_set_partitions, tier_relation
    from planner.solvers.pool_parts import SiteSetViews
    several = 0
    for seed in range(12):
        instance = parse_instance(linked_cities(np.random.default_rng(5400 + seed)))
        net = site_network(instance)
        names = sorted({p.site for p in instance.fleet.pools})
        sets, pairs = SiteSets(net, names), tier_relation(net.graph)
        views = SiteSetViews(net, pool_settings(instance))
        for mask in range(1, 1 << len(names)):
            chosen = [n for i, n in enumerate(names) if mask >> i & 1]
            every = {partition_link(net.graph, p) for p in all_set_partitions(chosen)
                     if all(pairs.has_edge(a, b) for block in p for a, b in itertools.combinations(block, 2))}
            got = sets.partition_links(mask)
            assert got == sorted(every, key=lambda link: (-link[0], link[1])), (seed, chosen)
            assert got == list(dict.fromkeys(sets.link(blocks) for blocks in sets.partitions(mask)))
            numbers = list(dict.fromkeys(numbers for _, _, numbers in views.partitions(mask)))
            assert views.link_numbers(mask) == numbers, (seed, chosen)
            several += len(got) > 1
    assert several >= 100


def test_partition_links_refuse_where_the_listing_does():
    """The 13 cities of `bench_mixed.py` at the shipped 40 ms regional tier: more than 1,000 partitions
    for the whole set (refused); `partition_links` is None exactly on the sets `partitions` refuses, and
    elsewhere the distinct links of the listing, on 200 random sets and the whole."""
    import sys
    from pathlib import Path
    from planner.solvers.pool_parts import SiteSetViews
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
    from bench_mixed import pools_data
    data = pools_data(13)
    data["network"]["regions"] = "chosen"
    instance = parse_instance(data)
    net = site_network(instance)
    names = sorted({p.site for p in instance.fleet.pools})
    sets = SiteSets(net, names)
    masks = [(1 << len(names)) - 1] + [int(m) for m in np.random.default_rng(7).integers(1, 1 << len(names), 200)]
    refused = 0
    for mask in masks:
        try:
            listed = list(dict.fromkeys(sets.link(blocks) for blocks in sets.partitions(mask)))
        except InputError as err:
            assert err.problems[0].path == "network.regions"
            listed = None
        assert sets.partition_links(mask) == listed, mask
        refused += listed is None
    assert sets.partition_links(masks[0]) is None and 0 < refused < len(masks)
    with pytest.raises(InputError):
        SiteSetViews(net, pool_settings(instance)).link_numbers(masks[0])


def test_thirteen_pools_with_chosen_regions_are_answered_and_a_quality_target_refused(tmp_path):
    """13 pools at random sites with chosen regions: answered (the plan's regions re-scored); under
    'proportional' with a C_quality target refused, exit 2 naming fleet.pools (the proportional rule with
    chosen regions: tests/test_proportional_regions.py)."""
    data = many_pools_chosen(np.random.default_rng(4), 13)
    data["objective"] = "min_time"
    instance = parse_instance(data)
    result = solve(instance)
    assert result.solver == "bnb" and result.status in ("optimal", "infeasible")
    if result.plan is not None:
        assert evaluate(instance, result.plan).values == result.evaluation.values
    data["fleet"]["sync_rule"], data["training"]["target_kind"] = "proportional", "c_quality"
    with pytest.raises(InputError) as err:
        solve(parse_instance(data))
    assert err.value.problems[0].path == "fleet.pools" and "C_quality" in err.value.problems[0].message
    path = tmp_path / "p.json"
    path.write_text(json.dumps(data))
    r = CliRunner().invoke(main, ["solve", str(path)])
    assert r.exit_code == 2 and "Traceback" not in r.output and "fleet.pools" in r.output


def test_thirteen_cities_with_chosen_regions():
    """`bench_mixed.py`'s 13 pools in 13 cities, the regional tier at 20 ms (the shipped 40 ms gives the
    13 cities more than 1,000 region partitions: refused as at 12 pools): the geography's optimum, a
    flat plan on every node (it has no units, so no placement rule binds)."""
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
    from bench_mixed import pools_data
    data = pools_data(13)
    data["network"]["regions"], data["network"]["regional"]["rtt_ms"] = "chosen", 20.0
    result = solve(parse_instance(data), "min_time")
    assert result.status == "optimal" and result.objective_value == pytest.approx(2660887.33747715, rel=1e-9)
    assert result.plan.nodes == 520
    data["network"]["regional"]["rtt_ms"] = 40.0
    with pytest.raises(InputError) as err:
        solve(parse_instance(data), "min_time")
    assert err.value.problems[0].path == "network.regions"
