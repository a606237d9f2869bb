"""Benchmark the mixed-fleet planner: a 20-site, 3-pool, 2,000-node instance (issue 12 target:
median solve <= 5 s). Prints the median, min and max of the repeats, what was solved (parts,
plans scored) and the machine's load average, which the figures depend on (noisy while other
processes run).

    nice python scripts/bench_mixed.py [--repeats 5] [--objective min_time] [--sync-rule auto]

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


def instance_data(sync_rule: str = "straggler") -> dict:
    """The benchmark instance as raw JSON data."""
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
                    "sites": sites, "links": links},
        "limits": {"max_days": 365},
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--objective", default="min_time", choices=["min_time", "min_cost", "max_compute"])
    parser.add_argument("--sync-rule", default="straggler", choices=["straggler", "proportional", "auto"])
    args = parser.parse_args()
    times, result = [], None
    for _ in range(args.repeats):
        start = time.perf_counter()
        instance = parse_instance(instance_data(args.sync_rule))   # parsing and the site graph count too
        result = solve(instance, args.objective)
        times.append(time.perf_counter() - start)
    plan = result.plan
    print(f"20 sites, 3 pools, 2,000 nodes, {args.objective}, sync rule {args.sync_rule}: median {statistics.median(times):.2f} s "
          f"(min {min(times):.2f}, max {max(times):.2f}, {args.repeats} runs); {result.status}, "
          f"{result.evaluations:,} plans scored of {result.space_size:,}; load average {os.getloadavg()[0]:.2f}")
    if plan is not None:
        print(f"plan: {plan.mode}, {plan.nodes:,} nodes {plan.pool_nodes}, {plan.sync_rule or 'straggler'}, "
              f"{plan.precision}, H={plan.inner_steps}, "
              f"Cr={plan.compression:g}; value {result.objective_value:.6g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
