#!/usr/bin/env python3
"""CPU time of the planner on the shipped fleets of pools, for comparing two trees of the planner
paired on one machine under load: the wall time follows the other processes, the process's CPU
time (`time.process_time`) much less.

    python scripts/bench_pools_cpu.py [--root DIR] [--repeats 3] [--solvers bnb,highs] [--rules straggler,auto]

`--root` (default: this tree) is the tree whose `planner` is imported, so one copy of this script
times another checkout. Each shipped instance with `fleet.pools` (instances/mixed-*.json) is solved
for its own objective under each of `--rules` (fleet.sync_rule) with each of `--solvers`,
`--repeats` times (the first solve of the process also pays the imports: run a warm-up first). Prints
per case the median CPU seconds and the status, then the total of the medians and the load average.

    python scripts/bench_pools_cpu.py --cities 16 --solvers highs [--root DIR]

times instead `bench_mixed.py`'s `pools_data(16)` (16 pools of 40 nodes in 16 European cities along a
chain of 1 Gb/s links), min_time, under the straggler rule: docs/mip.md's "16 pools in 16 cities".

    python scripts/bench_pools_cpu.py --profile dtplan [--constants '{"activation_memory": true}']

solves the shipped fleets under another assumption profile, with constants added to each instance's
(e.g. the dtplan profile with and without activation memory, docs/physics.md section 3).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=HERE, help="the tree whose planner is timed")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--solvers", default="bnb,highs")
    parser.add_argument("--rules", default="straggler,auto")
    parser.add_argument("--cities", type=int, default=0, help="time bench_mixed.pools_data(N), min_time, instead")
    parser.add_argument("--profile", default="", help="assumptions.profile for every instance (default: its own)")
    parser.add_argument("--constants", default="{}", help="JSON object added to every instance's constants")
    opts = parser.parse_args()
    sys.path.insert(0, str(opts.root.resolve()))
    from planner.schema.errors import InputError
    from planner.schema.instance import parse_instance
    from planner.solve import solve

    if opts.cities:
        return cities(opts, parse_instance, solve)
    paths = sorted((HERE / "instances").glob("mixed-*.json"))
    paths = [p for p in paths if not p.name.endswith(".expected.json")]
    first = parse_instance(json.loads(paths[0].read_text()))
    solve(first)                                  # warm-up: imports and first-use caches
    total = 0.0
    for path in paths:
        for rule in opts.rules.split(","):
            data = json.loads(path.read_text())
            data["fleet"]["sync_rule"] = rule
            a = data.setdefault("assumptions", {})
            a["profile"] = opts.profile or a.get("profile", "reference")
            a["constants"] = {**a.get("constants", {}), **json.loads(opts.constants)}
            instance = parse_instance(data)
            for solver in opts.solvers.split(","):
                times, status = [], None
                for _ in range(opts.repeats):
                    start = time.process_time()
                    try:
                        status = solve(instance, solver=solver).status
                    except InputError:    # a combination the solver refuses (exit 2), timed all the same
                        status = "refused"
                    times.append(time.process_time() - start)
                median = statistics.median(times)
                total += median
                print(f"{path.stem:26s} {rule:9s} {solver:6s} cpu median {median:7.3f} s  "
                      f"(min {min(times):.3f}, max {max(times):.3f}, {opts.repeats} runs)  {status}")
    print(f"root={opts.root} profile={opts.profile or 'own'} constants={opts.constants} total_cpu_s={total:.3f} "
          f"load={' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


def cities(opts, parse_instance, solve) -> int:
    """CPU seconds of `opts.repeats` solves of pools_data(opts.cities), min_time, each solver (a warm-up
    solve of 4 cities first: the imports)."""
    sys.path.insert(0, str(HERE / "scripts"))
    from bench_mixed import pools_data
    solve(parse_instance(pools_data(4)), "min_time", solver=opts.solvers.split(",")[0])
    for solver in opts.solvers.split(","):
        times, result = [], None
        for _ in range(opts.repeats):
            start = time.process_time()
            result = solve(parse_instance(pools_data(opts.cities)), "min_time", solver=solver)
            times.append(time.process_time() - start)
        days = result.objective_value / 86400 if result.objective_value is not None else None
        print(f"{opts.cities} pools in {opts.cities} cities min_time {solver}: cpu median "
              f"{statistics.median(times):.2f} s (min {min(times):.2f}, max {max(times):.2f}, {opts.repeats} runs)  "
              f"{result.status} {days} days  root={opts.root} load={' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
