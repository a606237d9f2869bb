"""Patterns of pools whose covers differ in size, under a budget (planner/mip/pool_patterns.py,
`key_intervals`, `PatternCosts.least`), against a brute force over every count vector.

A pattern's cheapest counts can cost less at N = 3 than at N = 2: a cover of two pools, one of them dear,
against a cover of three cheap ones. `key_range` used to bisect the pattern's cheapest cost as if it never
fell, so it dropped such a pattern when its least cover broke the budget, and the min_cost bound took the
cost at the pattern's least N as a bound for every larger N. The one-model path (`--solver highs`) then
claimed a slower plan optimal (its certification by the exact decomposition corrected it; beyond 12 pools
the model's own bound is the proof)."""

from __future__ import annotations

import itertools
import json
import math
import random
from pathlib import Path

import numpy as np

from planner.fleet.pools import pool_settings
from planner.mip.pool_patterns import PatternCosts, fill_order, key_intervals, key_range, pool_keys
from planner.schema.instance import parse_instance
from planner.solve import solve


def _hardware(name: str, tflops: float, hbm_gb: float, price: float) -> dict:
    return {"name": name, "accelerators_per_node": 8, "peak_tflops_per_accelerator": {"fp16": tflops},
            "hbm_gb_per_accelerator": hbm_gb, "price_usd_per_accelerator": price}


def _data(pools: list[dict], budget_usd: float | None) -> dict:
    sites = sorted({p["site"] for p in pools})
    cities = ["Paris", "Berlin", "Madrid", "Rome"]
    limits = {"max_days": 365} | ({"budget_usd": budget_usd} if budget_usd is not None else {})
    return {"name": "cover sizes", "model": {"params": 1e9}, "training": {"target_flop": 1e21},
            "fleet": {"pools": pools},
            "network": {"wan": {"up_mbps": 100, "down_mbps": 100}, "regional": {"mbps": 1000, "rtt_ms": 20},
                        "sites": [{"name": s, "city": cities[i]} for i, s in enumerate(sites)],
                        "links": [{"a": a, "b": b, "up_mbps": 1000} for a, b in zip(sites, sites[1:])]},
            "limits": limits, "search": {"precisions": ["fp16"]}}


# s is the slowest pool; b1 (dear) and hv have the least memory; b2 and hv are cheap. The pattern (slowest s,
# least memory 320 GB, sites A and B) has the covers {s, b1} and {s, b2, hv}.
EXAMPLE = [{"name": "s", "count": 2, "site": "A", "hardware": _hardware("slow", 980, 80, 1000)},
           {"name": "b1", "count": 2, "site": "B", "hardware": _hardware("fast small dear", 990, 40, 100000)},
           {"name": "b2", "count": 2, "site": "B", "hardware": _hardware("fast big", 990, 80, 1000)},
           {"name": "hv", "count": 2, "site": "A", "hardware": _hardware("fast small cheap", 990, 40, 1000)}]


def _pattern(keys, slowest: int, memory_gb: float, sites: tuple[str, ...]):
    return next(k for k in keys if k.slowest == slowest and k.memory_bytes == memory_gb * 1e9 and k.sites == sites)


def test_the_three_pool_cover_keeps_its_pattern_under_the_budget():
    pools = pool_settings(parse_instance(_data(EXAMPLE, 100_000)))
    key = _pattern(pool_keys(pools, ["fp16"], True), 0, 320, ("A", "B"))
    assert key.covers == ((0, 1), (0, 2, 3))
    # node prices 8,000 / 800,000 / 8,000 / 8,000 USD: {s, b1} costs 808,000 at N = 2 (over the budget);
    # {s, b2, hv} 24,000 at N = 3, 48,000 at N = 6 (all six cheap nodes), the most the pools hold
    assert key_intervals(pools, key, 1, 8, 100_000, fill_order(pools)) == [(3, 6)]
    assert key_range(pools, key, 1, 8, 100_000) == (3, 6)
    assert key_intervals(pools, key, 1, 8, None) == [(2, 8)]          # no budget: from the least cover


def test_the_model_alone_finds_the_optimum_that_uses_the_three_pool_cover():
    """The loop's own answer (before certification, `mip[0]`), which beyond 12 pools is the answer."""
    result = solve(parse_instance(_data(EXAMPLE, 100_000)), "min_time", solver="highs")
    exact = solve(parse_instance(_data(EXAMPLE, 100_000)), "min_time", solver="bnb")
    assert exact.plan.pool_nodes == {"s": 2, "b2": 2, "hv": 2}
    loop = result.mip[0]
    assert loop["status"] == "optimal"
    assert math.isclose(loop["objective"], exact.objective_value, rel_tol=1e-9)
    assert not loop["certified_changed_plan"]


def _random_pools(rng: random.Random) -> list[dict]:
    """3 to 5 pools of 1 or 2 nodes at two sites, the first the slowest (80 GB), the others faster, most of
    them one of the example's b1, b2, hv and the rest drawn: patterns whose covers differ in size with a
    dear small cover are common, with every other pattern of such fleets beside them."""
    out = [{"name": "p0", "count": rng.randint(1, 2), "site": "A",
            "hardware": _hardware("h0", 900, 80, rng.choice([100, 1000]))}]
    shapes = [("B", 40, 100000), ("B", 80, 1000), ("A", 40, 1000)]      # the example's b1, b2, hv
    for i in range(1, rng.randint(3, 5)):
        site, hbm_gb, price = rng.choice(shapes) if rng.random() < 0.7 else \
            (rng.choice("AB"), rng.choice([40, 80]), rng.choice([100, 1000, 100000]))
        out.append({"name": f"p{i}", "count": rng.randint(1, 2), "site": site,
                    "hardware": _hardware(f"h{i}", rng.choice([950, 990]), hbm_gb, price)})
    return out


def _vectors(sizes: list[int], allowed: tuple[int, ...]):
    """Every count vector over the allowed pools (0 <= n_p <= size_p), as full-length lists."""
    for counts in itertools.product(*(range(sizes[p] + 1) for p in allowed)):
        full = [0] * len(sizes)
        for p, c in zip(allowed, counts):
            full[p] = c
        yield full


def _brute(pools, key, budget_usd):
    """N -> the least cost of a count vector of the pattern with N nodes (its pools used contain a cover)."""
    sizes = [p.count for p in pools]
    prices = fill_order(pools).prices
    least: dict[int, float] = {}
    for counts in _vectors(sizes, key.allowed):
        used = {p for p, c in enumerate(counts) if c > 0}
        if not any(set(cover) <= used for cover in key.covers):
            continue
        n, cost = sum(counts), sum(c * price for c, price in zip(counts, prices))
        least[n] = min(least.get(n, math.inf), cost)
    return least


def test_intervals_and_cost_bound_against_every_count_vector():
    rng = random.Random(2611)
    seen_gaps = seen_larger_cover = checked = 0
    for _ in range(60):
        pools = pool_settings(parse_instance(_data(_random_pools(rng), None)))
        fill = fill_order(pools)
        keys = pool_keys(pools, ["fp16"], True)
        for key in keys:
            least = _brute(pools, key, None)
            costs = sorted(least.values())
            for budget in [None] + [costs[rng.randrange(len(costs))] * f for f in (1.0, 0.999)]:
                min_nodes, cap = rng.choice([1, 2]), rng.choice([4, 6, 100])
                want = sorted(n for n, c in least.items() if min_nodes <= n <= cap and (budget is None or c <= budget))
                spans = key_intervals(pools, key, min_nodes, cap, budget, fill)
                got = [n for a, b in spans for n in range(a, b + 1)]
                assert got == want, (key, budget, spans, least)
                seen_gaps += len(spans) > 1
                seen_larger_cover += bool(want) and want[0] > max(min_nodes, min(map(len, key.covers)))
                checked += 1
        # the min_cost bound: least cost of a plan of the patterns with N' >= nodes within their ranges
        ranges = [key_range(pools, key, 1, 100, None, fill) for key in keys]
        kept = [(k, r) for k, r in zip(keys, ranges) if r is not None]
        if not kept:
            continue
        costs = PatternCosts(pools, [k for k, _ in kept], fill)
        table = np.array([r for _, r in kept], dtype=np.int64)
        per_key = [_brute(pools, k, None) for k, _ in kept]
        alone = [PatternCosts(pools, [k], fill) for k, _ in kept]      # one pattern each (a part of one)
        for nodes in range(1, 10):
            wants = [min((c for n, c in least.items() if max(nodes, lo) <= n <= hi), default=math.inf)
                     for (_, (lo, hi)), least in zip(kept, per_key)]
            assert costs.least(nodes, table) == min(wants)
            for one, row, want in zip(alone, table, wants):
                assert one.least(nodes, row[None, :]) == want
    assert checked > 500 and seen_larger_cover > 0, (checked, seen_larger_cover, seen_gaps)


def test_shipped_instances_with_a_budget_keep_their_ranges(tmp_path: Path):
    """Where every pattern's cheapest cost never falls as N grows (the shipped fleets), the intervals are
    the ranges the bisection of the whole pattern gave: one interval from the least cover."""
    for name in ("mixed-regions-chosen", "mixed-six-sites", "mixed-a100-h100"):
        data = json.loads((Path(__file__).resolve().parents[1] / "instances" / f"{name}.json").read_text())
        instance = parse_instance(data)
        pools = pool_settings(instance)
        fill = fill_order(pools)
        total = sum(p.count for p in pools)
        for key in pool_keys(pools, list(instance.search.precisions or ["fp16"]), bool(data["network"].get("sites"))):
            for budget in (None, 1e7, 5e7):
                spans = key_intervals(pools, key, 1, total, budget, fill)
                assert len(spans) <= 1
                if spans and budget is None:
                    assert spans[0][0] == max(1, min(map(len, key.covers)))
