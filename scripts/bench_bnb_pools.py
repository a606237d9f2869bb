#!/usr/bin/env python3
"""CPU time of the branch and bound beyond 12 pools (the search by families,
planner.solvers.pool_families) beside the pools' MIP (--solver highs) on the same fleets:
`bench_mixed.py`'s `pools_nosites_data(P)` (P pools without sites, four kinds of node, prices varying
by pool), each objective; with `--sites`, `pools_data(P)` instead: P pools of 40 nodes of 16x H100, one
in each of P European cities, 1 Gb/s links along a chain, 100 Mb/s per node (the regions the
geography's).

    python scripts/bench_bnb_pools.py [--pools 13,16] [--repeats 3] [--solvers bnb,highs] [--sites]
        [--objectives min_time,min_cost,max_compute] [--rule proportional|auto] [--precisions fp16]
        [--replica-penalty linear_v1] [--budget 2e8] [--max-nodes 60]
        [--nodes-per-pool 2] [--kinds 16xH100-SXM,8xB200] [--regions chosen] [--regional-rtt-ms 20]
        [--cities 6] [--instructions]

`--rule`: fleet.sync_rule (the proportional rule's families, planner.solvers.proportional_families);
`--precisions`: search.precisions (fp16: every preset runs it, so the pools' speeds differ);
`--replica-penalty`: assumptions.constants.replica_penalty (max_compute under the proportional rule
where the fastest split is the best: linear_v1, fitted or none; Chinchilla's C_local, the default, is
the search over subsets, planner.solvers.proportional_subsets, as are `--budget` (limits.budget_usd)
and min_cost under the proportional rule); `--max-nodes`: limits.max_nodes; `--nodes-per-pool`: every
pool's count (Chinchilla's C_local compares the splits of a set of pools through a table of at most
200,000 prefixes, `split_table.MAX_PREFIXES`: a few nodes a pool); `--kinds`: the pools' hardware,
cycling through these presets (with `--sites`: pools of different speeds in the cities, so that under
the proportional rule some pools run more inner steps than the slowest). With `--sites`:
`--regions chosen` (network.regions: the planner chooses the regions, planner.solvers.pool_regions_families),
`--regional-rtt-ms` (network.regional.rtt_ms, 40 as shipped: with chosen regions 13 cities then have more
than 1,000 region partitions, refused), `--cities K` (the P pools in the first K cities in turn, several
pools a city).
A solver that refuses (exit 2) prints its message. `--instructions` also runs each case once as a fresh
`dtplan solve --json` process under valgrind (callgrind, PYTHONHASHSEED=0: `bench_max_compute.instructions`)
and prints the instructions it executed, a figure the machine's load does not move (start-up and the
explanations included; about 50 times the CPU seconds under valgrind).

Prints per case the median CPU seconds (`time.process_time`, parse and solve; a warm-up solve
first pays the imports; the solvers alternate run after run), the status and objective value, then the
machine's load average.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pools", default="13,16")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--solvers", default="bnb,highs")
    parser.add_argument("--sites", action="store_true", help="P pools in P cities (bench_mixed.pools_data)")
    parser.add_argument("--objectives", default="min_time,min_cost,max_compute")
    parser.add_argument("--rule", choices=("straggler", "proportional", "auto"), default="straggler")
    parser.add_argument("--precisions", default=None, help="search.precisions, comma-separated")
    parser.add_argument("--replica-penalty", default=None, help="assumptions.constants.replica_penalty")
    parser.add_argument("--budget", type=float, default=None, help="limits.budget_usd")
    parser.add_argument("--max-nodes", type=int, default=None, help="limits.max_nodes")
    parser.add_argument("--nodes-per-pool", type=int, default=None, help="every pool's count")
    parser.add_argument("--kinds", default=None, help="the pools' hardware presets, cycled, comma-separated")
    parser.add_argument("--regions", choices=("geography", "chosen"), default=None, help="network.regions (--sites)")
    parser.add_argument("--regional-rtt-ms", type=float, default=None, help="network.regional.rtt_ms (--sites)")
    parser.add_argument("--cities", type=int, default=None, help="the pools in this many cities, in turn (--sites)")
    parser.add_argument("--instructions", action="store_true",
                        help="also the instructions of one dtplan process per case (valgrind's callgrind)")
    opts = parser.parse_args()
    from bench_mixed import pools_data, pools_nosites_data
    from planner.schema.errors import InputError
    from planner.schema.instance import parse_instance
    from planner.solve import solve
    solve(parse_instance(pools_nosites_data(2)), "min_time")          # warm-up: imports
    print(f"fleet.sync_rule {opts.rule}; load before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for count in (int(c) for c in opts.pools.split(",")):
        data = pools_data(count) if opts.sites else pools_nosites_data(count)
        if opts.sites and opts.cities is not None:
            data = cities_data(data, opts.cities)
        if opts.sites and opts.regions is not None:
            data["network"]["regions"] = opts.regions
        if opts.sites and opts.regional_rtt_ms is not None:
            data["network"]["regional"]["rtt_ms"] = opts.regional_rtt_ms
        data["fleet"]["sync_rule"] = opts.rule
        if opts.precisions:
            data.setdefault("search", {})["precisions"] = opts.precisions.split(",")
        if opts.replica_penalty:
            data.setdefault("assumptions", {}).setdefault("constants", {})["replica_penalty"] = opts.replica_penalty
        if opts.budget is not None:
            data["limits"]["budget_usd"] = opts.budget
        if opts.max_nodes is not None:
            data["limits"]["max_nodes"] = opts.max_nodes
        for pool in data["fleet"]["pools"] if opts.nodes_per_pool is not None else ():
            pool["count"] = opts.nodes_per_pool
        kinds = opts.kinds.split(",") if opts.kinds else []
        for i, pool in enumerate(data["fleet"]["pools"] if kinds else ()):
            pool["hardware"] = kinds[i % len(kinds)]
        for objective in opts.objectives.split(","):
            solvers = opts.solvers.split(",")
            times, results = {k: [] for k in solvers}, {}
            for _ in range(opts.repeats):          # the solvers alternate, run after run
                for solver in solvers:
                    start = time.process_time()
                    try:
                        results[solver] = solve(parse_instance(data), objective, solver=solver)
                    except InputError as err:
                        results[solver] = err
                    times[solver].append(time.process_time() - start)
            for solver in solvers:
                t, result = times[solver], results[solver]
                if isinstance(result, InputError):
                    print(f"{count:2d} pools {objective:11s} {solver:5s} refused (exit 2): {result.problems[0].message}")
                    continue
                print(f"{count:2d} pools{' in cities' if opts.sites else ''} {objective:11s} {solver:5s} cpu median "
                      f"{statistics.median(t):6.3f} s (min {min(t):.3f}, max {max(t):.3f}, {opts.repeats} runs)  "
                      f"{result.status} {result.objective_value}; load {os.getloadavg()[0]:.2f}", flush=True)
                if opts.instructions:
                    found = instructions_of(data, objective, solver)
                    shown = "(no valgrind)" if found is None else f"{found / 1e9:.3f} G"
                    print(f"{'':9s} instructions {shown}; load {os.getloadavg()[0]:.2f}", flush=True)
    print(f"load after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


def instructions_of(data: dict, objective: str, solver: str) -> int | None:
    """Instructions of one `dtplan solve` process on the instance `data` (written to a temporary file),
    by `bench_max_compute.instructions` (valgrind's callgrind; None without valgrind)."""
    from bench_max_compute import instructions
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "instance.json"
        path.write_text(json.dumps(data))
        return instructions(["solve", str(path), "--objective", objective, "--solver", solver, "--json"])


def cities_data(data: dict, cities: int) -> dict:
    """`pools_data`'s P pools put in its first `cities` cities in turn (names kept, links along the chain)."""
    names = [site["name"] for site in data["network"]["sites"]][:cities]
    for i, pool in enumerate(data["fleet"]["pools"]):
        pool["name"], pool["site"] = f"{pool['site'].lower()}-{i}", names[i % len(names)]
    network = data["network"]
    network["sites"] = [s for s in network["sites"] if s["name"] in names]
    network["links"] = [link for link in network["links"] if link["a"] in names and link["b"] in names]
    return data


if __name__ == "__main__":
    raise SystemExit(main())
