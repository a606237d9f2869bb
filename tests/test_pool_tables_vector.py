"""The pools' tables worked over arrays against the per-pattern loops they replace, value for value:
`pool_patterns.key_ranges` against `key_range` per pattern, `SiteItems.key_links` against the network's
links of each pattern's sites, `pools.setting_parts` against the loop over the patterns that built the
setting parts one pattern at a time (written out below as it stood, lead46), and
`tables.Tables.log_time_and_compute` against `Tables.log_time` and `Tables.log_compute` (each scoring the
plans afresh), on random fleets of pools at sites."""

from __future__ import annotations

import math
from itertools import chain

import numpy as np
import pytest

from planner.cost.modes import throughput
from planner.fleet.network import site_network
from planner.fleet.pools import pool_settings
from planner.fleet.samples import random_instance
from planner.mip.pool_patterns import (SettingPart, fill_order, key_range, key_ranges, link_values, pool_keys,
                                       site_links)
from planner.mip.pools import setting_parts
from planner.mip.tables import build_tables
from planner.schema.instance import parse_instance
from planner.sync.straggler.rule import mixed_setting

CITIES = ["London", "Paris", "Frankfurt", "Amsterdam", "Madrid", "Milan", "Warsaw", "Stockholm"]
KINDS = ["16xH100-SXM", "48xA100-80GB", "7xB200", "17xTPU-v6e"]


def site_fleet(rng) -> dict:
    """3 to 8 pools in 2 to 8 cities (some sharing one), random kinds, counts and prices, links along a chain
    with random speeds, sometimes a budget or a node cap."""
    cities = CITIES[:int(rng.integers(2, 9))]
    pools = [{"name": f"p{i}", "hardware": KINDS[int(rng.integers(0, 2 if rng.random() < 0.5 else 4))],
              "count": int(rng.integers(1, 6)), "site": cities[i % len(cities)],
              "price_usd_per_accelerator": float(rng.choice([1000, 2500, 9000]))}
             for i in range(int(rng.integers(len(cities), len(cities) + 3)))]
    links = [{"a": a, "b": b, "up_mbps": float(rng.choice([100, 1000, 10000]))} for a, b in zip(cities, cities[1:])]
    data = {"model": {"params": 7e9}, "training": {"target_flop": 1e22},
            "fleet": {"pools": pools},
            "network": {"wan": {"up_mbps": 1000, "down_mbps": 1000}, "regional": {"mbps": 1000, "rtt_ms": 30},
                        "sites": [{"name": c, "city": c} for c in cities], "links": links},
            "limits": {"max_days": 365}}
    if rng.random() < 0.4:
        data["limits"]["budget_usd"] = float(rng.choice([2e6, 2e7, 2e8]))
    if rng.random() < 0.3:
        data["limits"]["max_nodes"] = int(rng.integers(2, 12))
    return data


def fleets(count: int, seed: int):
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < count:
        data = site_fleet(rng) if len(out) % 3 else random_instance(rng)
        if not data.get("network", {}).get("sites"):
            continue
        try:
            instance = parse_instance(data)
        except Exception:           # a random_instance the schema refuses: draw another
            continue
        out.append((instance, pool_settings(instance)))
    return out


def old_setting_parts(pools, keys, key_links, ranges, sites):
    """The parts as `pool_tables` built them before, one pattern at a time (lead46)."""
    from planner.solvers.pool_parts import unit_price
    known, settings = {}, []
    for key, links in zip(keys, key_links):
        shape = (key.precision, key.slowest, key.memory_bytes, links)
        if shape not in known:
            known[shape] = unit_price(mixed_setting(pools, key.covers[0], key.precision, sites))
        settings.append(known[shape])
    parts, index, text = [], {}, {}
    for k, s in enumerate(settings):
        if id(s) not in text:
            text[id(s)] = repr(s)
        j = index.setdefault(text[id(s)], len(parts))
        if j == len(parts):
            parts.append(SettingPart(s, [], ranges[k][0], ranges[k][1], True))
        part = parts[j]
        part.keys.append(k)
        part.lo, part.hi = min(part.lo, ranges[k][0]), max(part.hi, ranges[k][1])
    for part in parts:
        reach = part.lo - 1
        for lo, hi in sorted(ranges[k] for k in part.keys):
            if lo > reach + 1:
                part.exact_range = False
            reach = max(reach, hi)
    return parts


def old_key_counts(pools, key, nodes):
    """`key_counts` worked independently: per cover, each allowed pool in order of (node price, position)
    takes what is left after the pools before it took all they could, clip(left - before, 0, capacity);
    the first cover of least `fleet_cost_usd`; None where the nodes do not fit a cover."""
    from planner.fleet.replicas import fleet_cost_usd, node_price_usd
    ranked = sorted(key.allowed, key=lambda p: (node_price_usd(pools[p]), p))
    found = []
    for cover in key.covers:
        if len(cover) > nodes or nodes > sum(pools[p].count for p in key.allowed):
            continue
        counts = [int(p in cover) for p in range(len(pools))]
        before = 0
        for p in ranked:
            capacity = pools[p].count - counts[p]
            counts[p] += min(capacity, max(0, nodes - len(cover) - before))
            before += capacity
        found.append((fleet_cost_usd(pools, counts), len(found), counts))
    return min(found)[2] if found else None


class _Pt:
    def __init__(self, pools, keys, ranges):
        self.pools, self.keys, self.ranges = pools, keys, ranges


@pytest.mark.parametrize("seed", range(6))
def test_ranges_links_and_parts_are_those_of_the_loop(seed):
    checked = 0
    for instance, pools in fleets(5, 4100 + seed):
        sites = site_network(instance)
        precisions = sorted({q for p in pools for q in p.precisions})
        listed = pool_keys(pools, precisions, True)
        cap = min(sum(p.count for p in pools), instance.limits.max_nodes or math.inf)
        budget, fill = instance.limits.budget_usd, fill_order(pools)
        for min_nodes in (1, 3):
            spans = key_ranges(pools, listed, min_nodes, cap, budget, fill)
            assert spans == [key_range(pools, key, min_nodes, cap, budget, fill) for key in listed]
            assert all(type(x) is int for span in spans if span is not None for x in span)
        items = site_links(pools, sites)
        links = items.key_links(listed)
        assert links == [link_values(sites.links(key.sites)) for key in listed]
        spans = key_ranges(pools, listed, 1, cap, budget, fill)
        kept = [k for k, span in enumerate(spans) if span is not None]
        keys, ranges = [listed[k] for k in kept], [spans[k] for k in kept]
        key_links = [links[k] for k in kept]
        want = old_setting_parts(pools, keys, key_links, ranges, sites)
        got, part_of_key = setting_parts(_Pt(pools, keys, ranges), key_links, sites, None)
        assert [(repr(p.setting), p.keys, p.lo, p.hi, p.exact_range) for p in got] == \
            [(repr(p.setting), p.keys, p.lo, p.hi, p.exact_range) for p in want]
        assert all(type(x) is int for p in got for x in chain(p.keys, (p.lo, p.hi)))
        assert part_of_key.tolist() == [next(j for j, p in enumerate(want) if k in p.keys) for k in range(len(keys))]
        checked += len(keys)
    assert checked > 0


@pytest.mark.parametrize("seed", range(4))
def test_least_cost_with_the_fill_order_is_that_of_fleet_cost(seed):
    """min_cost's cut at the incumbent: `PatternCosts.least` of a part's patterns (`pools._part_costs`; the
    patterns' costs worked over arrays, `PatternCosts`) equals the least over the part's patterns of
    `fleet_cost_usd` of the counts of `key_counts` as it stood (`old_key_counts`), bit for bit, at every n;
    and `key_counts` of every pattern at every n are those counts."""
    from planner.fleet.replicas import fleet_cost_usd
    from planner.mip.pool_patterns import key_counts
    from planner.mip.pools import _part_costs
    compared = 0
    for instance, pools in fleets(4, 4400 + seed):
        sites = site_network(instance)
        listed = pool_keys(pools, sorted({q for p in pools for q in p.precisions}), True)
        cap = min(sum(p.count for p in pools), instance.limits.max_nodes or math.inf)
        fill = fill_order(pools)
        spans = key_ranges(pools, listed, 1, cap, instance.limits.budget_usd, fill)
        kept = [k for k, span in enumerate(spans) if span is not None]
        pt = _Pt(pools, [listed[k] for k in kept], [spans[k] for k in kept])
        links = site_links(pools, sites).key_links(pt.keys)
        for key in listed:
            for n in range(1, int(min(cap, 40)) + 2):
                counts = old_key_counts(pools, key, n)
                assert key_counts(pools, key, n, fill) == counts and key_counts(pools, key, n) == counts
        for part in setting_parts(pt, links, sites, None)[0]:
            (held, ranges), (fresh, _) = _part_costs(pt, part, fill), _part_costs(pt, part, fill_order(pools))
            for n in range(1, part.hi + 2):
                want = min([fleet_cost_usd(pools, old_key_counts(pools, pt.keys[k], max(n, pt.ranges[k][0])))
                            for k in part.keys if pt.ranges[k][1] >= n], default=math.inf)
                assert held.least(n, ranges) == want and fresh.least(n, ranges) == want
                compared += want < math.inf
    assert compared > 0


def test_a_gap_in_a_settings_ranges_is_found():
    """Ranges with and without a gap between a setting's patterns (made up: two settings, keys in
    listing order interleaved), against the loop."""
    instance, pools = fleets(1, 4200)[0]
    sites = site_network(instance)
    listed = pool_keys(pools, sorted({q for p in pools for q in p.precisions}), True)
    shapes = [link_values(sites.links(key.sites)) for key in listed]
    other = next(j for j in range(1, len(listed))          # a pattern of another setting than the first's
                 if len(old_setting_parts(pools, [listed[0], listed[j]], [shapes[0], shapes[j]], [(1, 1)] * 2,
                                          sites)) == 2)
    keys, links = [listed[k % 2 and other] for k in range(6)], [shapes[k % 2 and other] for k in range(6)]
    exact = set()
    for ranges in ([(1, 2), (5, 6), (3, 4), (9, 9), (1, 1), (2, 3)], [(4, 6), (1, 2), (3, 3), (7, 8), (2, 2), (1, 9)],
                   [(1, 1)] * 6, [(3, 5), (1, 1), (1, 2), (6, 8), (1, 3), (2, 2)],
                   [(1, 3), (1, 2), (2, 2), (4, 4), (3, 3), (5, 5)], [(2, 2), (5, 5), (1, 1), (4, 4), (2, 3), (1, 2)]):
        want = old_setting_parts(pools, keys, links, ranges, sites)
        got, _ = setting_parts(_Pt(pools, keys, ranges), links, sites, None)
        assert len(want) == 2
        exact |= {p.exact_range for p in want}
        assert [(p.keys, p.lo, p.hi, p.exact_range) for p in got] == [(p.keys, p.lo, p.hi, p.exact_range) for p in want]
    assert exact == {True, False}


@pytest.mark.parametrize("seed", range(6))
def test_time_and_compute_scored_once_are_the_two_methods(seed):
    """`log_time_and_compute` (one throughput, one efficiency) equals `log_time` and `log_compute`, bit for
    bit, at random plans of every class group of random cases (`tests.test_bnb.random_case`; C_local and
    C_quality targets), and so do the tables built from it (`build_tables`) and their factorisation check."""
    from tests.test_bnb import random_case
    rng = np.random.default_rng(4300 + seed)
    for kind in ("c_local", "c_quality"):
        s, space, _ = random_case(seed, target_kind=kind)
        t = build_tables(s, space)
        for c in t.groups:
            ks = np.arange(c.size)
            n = np.maximum(c.n_lo, np.minimum(c.n_hi, rng.integers(1, 64, ks.size)))
            for h, r in ((1, 1), (int(rng.integers(1, space.max_inner_steps + 1)), 1),
                         (space.max_inner_steps, space.max_regional_rounds)):
                plans = c.plans(ks, n, h, r)
                got_t, got_c = t.log_time_and_compute(plans)
                assert got_t.tobytes() == t.log_time(plans).tobytes()
                assert got_c.tobytes() == t.log_compute(plans).tobytes()
        for e in t.sync:       # the class constants at (n_lo, H = R = 1), worked as before from the two methods
            c = t.groups[e.group]
            plans = c.plans(np.array([e.index]), np.array([e.n_lo]), 1, 1)
            at = throughput(s, plans)
            z1 = np.log(at["outer_time_s"])
            n_lo = np.array([e.n_lo])
            kappa = t.log_time(plans) + np.log(n_lo) - z1 + t.omega(n_lo, np.ones(1), np.array([e.gain]))
            u1 = np.log(s.training_window_s * at["tokens_per_outer"] / at["outer_time_s"])
            with np.errstate(invalid="ignore"):
                const = t.log_compute(plans) - t.psi(n_lo, np.ones(1), u1)
            assert np.array([e.kappa, e.compute_const]).tobytes() == np.array([kappa[0], const[0]]).tobytes()
