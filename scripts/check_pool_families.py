#!/usr/bin/env python3
"""Compare the search by families beyond 12 pools (planner.solvers.pool_families) with the full
listing of every subset of pools (planner.solvers.pool_parts.parts_until) on seeded random fleets of
1 to 8 pools (`planner.fleet.samples.random_many_pools`, 1 to 5 nodes each): the same status, objective
value and plan cost (relative 1e-9). The families run at any pool count for the comparison (the
listing's limit set to 0 pools). `--sites`: the pools at 2 to 6 sites joined by a ring of links
(`planner.fleet.samples.add_sites`: regional groups, RTTs measured or estimated), 1 to 7 pools.
`--rule proportional|auto`: fleet.sync_rule that rule, the fleets the proportional rule's families take
(`planner.fleet.samples.random_rule_pools`: no budget, min_time or max_compute of C_quality or of
C_local under the linear v1 or no replica penalty; planner.solvers.proportional_families).
`--rule subsets`: 'proportional' or 'auto' in the cases the search over subsets of pools takes
(`planner.fleet.samples.random_subset_rule_pools`: min_time, min_cost, max_compute of C_local under the
Chinchilla penalty, half with a budget that binds; planner.solvers.proportional_subsets).

Under the proportional rule with `--sites` the search over subsets answers every case (the subsets'
sites give their links; planner.solvers.proportional_subsets).

`--regions chosen` (with `--sites`): network.regions "chosen", each site but one in three with a LAN
faster than the tier, so that regions matter (planner.solvers.pool_regions_families).

    python scripts/check_pool_families.py [--seed 100] [--count 150] [--sites] [--rule proportional|auto|subsets]
        [--regions chosen]

Prints each disagreement, then the number of instances, of disagreements, of instances the families
refuse (exit 2 naming fleet.pools: with sites under the proportional rule, a C_quality target), the
seconds each path took and the machine's load average; exit 1 on any disagreement.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=100)
    parser.add_argument("--count", type=int, default=150)
    parser.add_argument("--sites", action="store_true", help="the pools at 2 to 6 sites")
    parser.add_argument("--rule", choices=("straggler", "proportional", "auto", "subsets"), default="straggler",
                        help="fleet.sync_rule (subsets: proportional or auto, in the cases of the search over "
                             "subsets)")
    parser.add_argument("--regions", choices=("geography", "chosen"), default="geography",
                        help="network.regions with --sites")
    opts = parser.parse_args()
    import numpy as np
    from planner.fleet.samples import add_sites, random_many_pools, random_rule_pools, random_subset_rule_pools
    from planner.schema.errors import InputError
    from planner.schema.instance import parse_instance
    from planner.solve import solve
    from planner.solvers import decomposition
    bad, refused, spent = 0, 0, [0.0, 0.0]
    for seed in range(opts.seed, opts.seed + opts.count):
        rng = np.random.default_rng(seed)
        sample = {"straggler": random_many_pools, "subsets": random_subset_rule_pools}.get(opts.rule, random_rule_pools)
        data = sample(rng, int(rng.integers(1, 8 if opts.sites else 9)), max_count=int(rng.integers(1, 6)))
        if opts.rule not in ("straggler", "subsets"):
            data["fleet"]["sync_rule"] = opts.rule
        if opts.sites:
            add_sites(rng, data)
        if opts.sites and opts.regions == "chosen":
            data["network"]["regions"] = "chosen"
            for k, site in enumerate(data["network"]["sites"]):
                site.update({"lan_mbps": 40000.0, "lan_rtt_ms": 0.5} if k % 3 else {})
        instance = parse_instance(data)
        results = []
        for k, limit in enumerate((decomposition.MAX_EXACT_POOLS, 0)):
            saved, decomposition.MAX_EXACT_POOLS = decomposition.MAX_EXACT_POOLS, limit
            start = time.perf_counter()
            try:
                results.append(solve(instance))
            except InputError as err:        # the families refuse (exit 2): counted, not compared
                if k == 0 or err.problems[0].path != "fleet.pools":
                    raise
                results.append(None)
            finally:
                decomposition.MAX_EXACT_POOLS = saved
            spent[k] += time.perf_counter() - start
        listed, families = results
        if families is None:
            refused += 1
            continue
        values = [r.objective_value for r in results]
        costs = [r.evaluation.values["cost_usd"] if r.evaluation else None for r in results]
        same = listed.status == families.status and (
            values == [None, None] or (None not in values and abs(values[0] - values[1]) <= 1e-9 * abs(values[0])
                                       and abs(costs[0] - costs[1]) <= 1e-9 * max(costs[0], 1.0)))
        if not same:
            bad += 1
            print(f"seed {seed} {data['objective']}: listing {listed.status} {values[0]} (cost {costs[0]}), "
                  f"families {families.status} {values[1]} (cost {costs[1]})", flush=True)
    rule = {"straggler": "", "subsets": " under the proportional rule's search over subsets"}.get(
        opts.rule, f" under the {opts.rule} rule")
    print(f"{opts.count} instances{' with sites' if opts.sites else ''}{rule} (seeds {opts.seed}-{opts.seed + opts.count - 1}), {bad} disagreements, {refused} refused "
          f"beyond 12 pools (not compared); "
          f"listing {spent[0]:.1f} s, families {spent[1]:.1f} s; load {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
