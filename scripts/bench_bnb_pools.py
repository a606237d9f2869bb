#!/usr/bin/env python3
"""CPU time of the branch and bound beyond 12 pools (the search by families,
planner.solvers.pool_families) beside the pools' MIP (--solver highs) on the same fleets:
`bench_mixed.py`'s `pools_nosites_data(P)` (P pools without sites, four kinds of node, prices varying
by pool), each objective.

    python scripts/bench_bnb_pools.py [--pools 13,16] [--repeats 3] [--solvers bnb,highs]

Prints per case the median CPU seconds (`time.process_time`, parse and solve; a warm-up solve
first pays the imports), the status and objective value, then the machine's load average.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
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
    opts = parser.parse_args()
    from bench_mixed import pools_nosites_data
    from planner.schema.instance import parse_instance
    from planner.solve import solve
    solve(parse_instance(pools_nosites_data(2)), "min_time")          # warm-up: imports
    print(f"load before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for count in (int(c) for c in opts.pools.split(",")):
        data = pools_nosites_data(count)
        for objective in ("min_time", "min_cost", "max_compute"):
            for solver in opts.solvers.split(","):
                times, result = [], None
                for _ in range(opts.repeats):
                    start = time.process_time()
                    result = solve(parse_instance(data), objective, solver=solver)
                    times.append(time.process_time() - start)
                print(f"{count:2d} pools {objective:11s} {solver:5s} cpu median {statistics.median(times):6.3f} s "
                      f"(min {min(times):.3f}, max {max(times):.3f}, {opts.repeats} runs)  {result.status} "
                      f"{result.objective_value}", flush=True)
    print(f"load after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
