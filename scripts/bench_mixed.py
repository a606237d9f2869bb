"""Benchmark the mixed-fleet planner: a 20-site, 3-pool, 2,000-node instance (issue 12 target:
median solve <= 5 s). Prints the median, min and max of the repeats, what was solved (parts,
plans scored) and the machine's load average, which the figures depend on (noisy while other
processes run).

    nice python scripts/bench_mixed.py [--repeats 5] [--objective min_time] [--solvers bnb,highs] [--sync-rule auto]
    nice python scripts/bench_mixed.py --pools 8 [--pools-repeats 1]

`--solvers` (default bnb,highs): each solver's figures, the one-model MIP path (`--solver highs|scip`,
planner.solvers.mixed_mip: the loop, then the certification by the exact decomposition) beside the
branch and bound's decomposition. `--pools P` times instead two fleets of P pools, min_time, a 70B
model to 10^25 FLOP: 40 nodes of 16x H100 in each of P European cities (1 Gb/s links between
neighbours, 100 Mb/s per node), and P pools of four presets without sites (`pools_nosites_data`).
Beyond 12 pools the decomposition refuses (exit 2) and the MIP path answers alone, its own bound the
proof (`planner.solvers.mixed_mip`); with a pool per site its columns group the 2^P sets of sites by
their links, which are still listed for the node ranges: refused beyond `planner.mip.pool_patterns.MAX_SITE_SETS`
(17 pools in 17 cities; 16 are answered). The MIP lines show the model's columns (groups of patterns) and the sets of
sites listed.

The instance (built here, seeded by nothing: fixed): 20 cities on four continents joined by a
ring of 1-10 Gb/s links and a few long-haul chords (RTTs from the measured pairs or the distance
rule); pools of 1,000 H100, 600 A100 and 400 B200 nodes in Frankfurt, New York and Tokyo; a 70B
model to 10^25 FLOP within a year; the default search space; fleet.sync_rule as given (default
straggler; max_compute of this C_local target under the Chinchilla penalty refuses the others).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from planner.schema.instance import parse_instance  # noqa: E402
from planner.solve import solve  # noqa: E402

CITIES = ["London", "Paris", "Frankfurt", "Amsterdam", "Madrid", "Milan", "Warsaw", "Stockholm", "New York",
          "Chicago", "Toronto", "Dallas", "Los Angeles", "Miami", "Tokyo", "Seoul", "Hong Kong", "Singapore",
          "Mumbai", "Sydney"]
CHORDS = [("London", "New York", 1000), ("Los Angeles", "Tokyo", 1000), ("Frankfurt", "Mumbai", 400),
          ("Singapore", "Sydney", 400), ("Miami", "Madrid", 400)]


def instance_data(sync_rule: str = "straggler", regions: str = "geography") -> dict:
    """The benchmark instance as raw JSON data (`regions`: network.regions)."""
    sites = [{"name": c, "city": c} for c in CITIES]
    ring = [{"a": a, "b": b, "up_mbps": 10000 if i % 3 else 1000}
            for i, (a, b) in enumerate(zip(CITIES, CITIES[1:] + CITIES[:1]))]
    links = ring + [{"a": a, "b": b, "up_mbps": mbps} for a, b, mbps in CHORDS]
    return {
        "name": "bench: 20 sites, 3 pools, 2,000 nodes",
        "model": {"params": 70e9}, "training": {"target_flop": 1e25},
        "fleet": {"pools": [{"name": "h100", "hardware": "16xH100-SXM", "count": 1000, "site": "Frankfurt"},
                            {"name": "a100", "hardware": "48xA100-80GB", "count": 600, "site": "New York"},
                            {"name": "b200", "hardware": "7xB200", "count": 400, "site": "Tokyo"}],
                  "sync_rule": sync_rule},
        "network": {"wan": {"up_mbps": 1000, "down_mbps": 1000}, "regional": {"mbps": 5000, "rtt_ms": 30},
                    "sites": sites, "links": links, "regions": regions},
        "limits": {"max_days": 365},
    }


def speed_gap_data(data: dict) -> dict:
    """The instance with the A100 pool as nodes of 16 A100 (the preset with a third of its accelerators)
    and fp16 only: its nodes are about a third as fast as the others, so with fleet.sync_rule
    'proportional' or 'auto' the faster pools run about three times its inner steps."""
    import json
    hardware = json.loads((ROOT / "models" / "hardware" / "48xA100-80GB.json").read_text())
    hardware.update(id="16xA100-80GB", name="16x A100 80GB", accelerators_per_node=16)
    hardware.pop("notes", None)
    hardware.pop("sources", None)
    pools = [dict(p) for p in data["fleet"]["pools"]]
    pools[1]["hardware"] = hardware
    return {**data, "fleet": {**data["fleet"], "pools": pools}, "search": {**data.get("search", {}), "precisions": ["fp16"]}}


EUROPE = ["London", "Paris", "Frankfurt", "Amsterdam", "Madrid", "Milan", "Warsaw", "Stockholm", "Zurich", "Vienna",
          "Dublin", "Brussels", "Prague", "Copenhagen", "Oslo", "Helsinki", "Lisbon"]


def pools_data(count: int) -> dict:
    """`count` pools of 40 nodes of 16x H100, one per European city, 1 Gb/s links along a chain."""
    cities = EUROPE[:count]
    links = [{"a": a, "b": b, "up_mbps": 1000} for a, b in zip(cities, cities[1:])]
    return {
        "name": f"bench: {count} pools in {count} cities",
        "model": {"params": 70e9}, "training": {"target_flop": 1e25},
        "fleet": {"pools": [{"name": c.lower(), "hardware": "16xH100-SXM", "count": 40, "site": c} for c in cities]},
        "network": {"wan": {"up_mbps": 100, "down_mbps": 100}, "regional": {"mbps": 1000, "rtt_ms": 40},
                    "sites": [{"name": c, "city": c} for c in cities], "links": links},
        "limits": {"max_days": 365},
    }


def pools_nosites_data(count: int) -> dict:
    """`count` pools without sites: hardware cycling through four presets, 20 to 110 nodes each, prices
    varying by pool (bought at different times), a 70B model to 10^25 FLOP on a 1 Gb/s WAN."""
    presets = ["16xH100-SXM", "48xA100-80GB", "7xB200", "17xTPU-v6e"]
    return {
        "name": f"bench: {count} pools, no sites",
        "model": {"params": 70e9}, "training": {"target_flop": 1e25},
        "fleet": {"pools": [{"name": f"p{i}", "hardware": presets[i % 4], "count": 20 + 30 * (i % 4),
                             "price_usd_per_accelerator": 10000 + 2500 * i} for i in range(count)]},
        "network": {"wan": {"up_mbps": 1000, "down_mbps": 1000}},
        "limits": {"max_days": 365},
    }


def timed(data: dict, objective: str, solver: str, repeats: int):
    """(times in s, last result or the error) of `repeats` parses and solves."""
    from planner.schema.errors import InputError
    from planner.solvers import UnsupportedBySolver
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        try:
            instance = parse_instance(data)           # parsing and the site graph count too
            result = solve(instance, objective, solver=solver)
        except (InputError, UnsupportedBySolver) as err:
            return [time.perf_counter() - start], f"refused (exit 2): {err}"
        times.append(time.perf_counter() - start)
    return times, result


def report(label: str, solver: str, times: list[float], result) -> None:
    if isinstance(result, str):
        print(f"{label}, {solver}: {result} ({times[0]:.2f} s); load average {os.getloadavg()[0]:.2f}")
        return
    size = f" of {result.space_size:,}" if result.space_size else ""
    mip = ""
    if result.mip:
        m = result.mip[0]
        mip = (f"; MIP loop {m['status']} in {m['rounds']} rounds (tables {m['build_s']:.2f} s, backend "
               f"{m['time_s']:.2f} s, {m['columns']} columns, {m['rows']} rows, {m.get('patterns')} pattern groups, "
               f"{m.get('site_sets')} patterns), certification {m['certify_s']:.2f} s by {m.get('certified_by', '?')}")
    print(f"{label}, {solver}: median {statistics.median(times):.2f} s (min {min(times):.2f}, max {max(times):.2f}, "
          f"{len(times)} runs); {result.status}, {result.evaluations:,} plans scored{size}{mip}; "
          f"load average {os.getloadavg()[0]:.2f}")
    plan = result.plan
    if plan is not None:
        print(f"  plan: {plan.mode}, {plan.nodes:,} nodes {plan.pool_nodes}, {plan.sync_rule or 'straggler'}, {plan.precision}, H={plan.inner_steps}, "
              f"Cr={plan.compression:g}; value {result.objective_value:.6g}"
              + (f"; regions {plan.regions}" if plan.regions else ""))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--objective", default="min_time", choices=["min_time", "min_cost", "max_compute"])
    parser.add_argument("--sync-rule", default="straggler", choices=["straggler", "proportional", "auto"])
    parser.add_argument("--solvers", default="bnb,highs", help="comma-separated: bnb, highs, scip")
    parser.add_argument("--regions", default="geography", choices=["geography", "chosen"],
                        help="network.regions of the 20-site instance: chosen = the planner picks the regions "
                             "(bnb)")
    parser.add_argument("--budget", type=float, help="limits.budget_usd of the 20-site instance")
    parser.add_argument("--europe", action="store_true",
                        help="the pools in London, Paris and Frankfurt, every site with a 100 Gb/s LAN (regions "
                             "chosen: the partitions of three sites in reach of each other differ)")
    parser.add_argument("--modes", help="comma-separated search.modes of the 20-site instance (default: all)")
    parser.add_argument("--max-days", type=float, help="limits.max_days of the 20-site instance (default 365)")
    parser.add_argument("--pools", type=int, action="append", help="time the P-pool city fleet instead (repeatable)")
    parser.add_argument("--speed-gap", action="store_true",
                        help="the A100 pool as nodes of 16 A100 and fp16 only: H100 nodes 3.2x as fast, B200 "
                             "nodes 3.2x, so the proportional rule runs its own plans (speed_gap_data)")
    args = parser.parse_args()
    solvers = [s for s in args.solvers.split(",") if s]
    if args.pools:
        for count in args.pools:
            for solver in solvers:
                report(f"{count} pools in {count} cities, min_time", solver,
                       *timed(pools_data(count), "min_time", solver, args.repeats))
                report(f"{count} pools without sites, min_time", solver,
                       *timed(pools_nosites_data(count), "min_time", solver, args.repeats))
        return 0
    data = instance_data(args.sync_rule, args.regions)
    if args.speed_gap:
        data = speed_gap_data(data)
    if args.budget is not None:
        data["limits"]["budget_usd"] = args.budget
    if args.europe:
        for pool, city in zip(data["fleet"]["pools"], ["London", "Paris", "Frankfurt"]):
            pool["site"] = city
        for site in data["network"]["sites"]:
            site.update(lan_mbps=100000, lan_rtt_ms=0.1)
    if args.modes:
        data["search"] = {**data.get("search", {}), "modes": args.modes.split(",")}
    if args.max_days is not None:
        data["limits"]["max_days"] = args.max_days
    extra = ", speed gap" if args.speed_gap else ""
    extra += f", budget {args.budget:,.0f} USD" if args.budget is not None else ""
    extra += ", pools in London, Paris, Frankfurt" if args.europe else ""
    extra += f", modes {args.modes}" if args.modes else ""
    extra += f", max_days {args.max_days:g}" if args.max_days is not None else ""
    for solver in solvers:
        report(f"20 sites, 3 pools, 2,000 nodes, {args.objective}, sync rule {args.sync_rule}, regions {args.regions}"
               f"{extra}", solver, *timed(data, args.objective, solver, args.repeats))
    return 0


if __name__ == "__main__":
    sys.exit(main())
