#!/usr/bin/env python3
"""Benchmark `dtplan solve` under the dtplan profile (issue 14): its decisions (ZeRO-3 shards, the
pipeline schedule) and terms make the space larger than the reference profile's, so this prints
the solve times of the same seeded random instances under both profiles, and checks the default
solver against the exhaustive oracle under dtplan on small ones.

Usage: scripts/bench_dtplan.py [--random 40] [--compare 20] [--seed 0]

Instances: scripts/bench_solve.py's generator (catalog hardware, 1B-2T parameters incl. MoE,
1 to 10^4 nodes, WAN 10 Mb/s-10 Gb/s, min_time and min_cost), each solved as generated (reference)
and with assumptions.profile = dtplan. The compare suite: <= 100 nodes, H <= 100, R <= 4, k in
{2, 4, 8, 16}. Last line: `dtplan_median_s=... dtplan_p95_s=... reference_median_s=...
ratio_median=... mismatches=...`. Run it with `nice` and report the load average with it.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_solve import same, stats, suite, timed  # noqa: E402
from planner.schema.instance import parse_instance  # noqa: E402


def under_dtplan(inst):
    """The instance with its assumption profile set to dtplan (every other field as it is)."""
    data = inst.model_dump(exclude_none=True)
    data["assumptions"] = {**data.get("assumptions", {}), "profile": "dtplan"}
    return parse_instance(data)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--random", type=int, default=40)
    p.add_argument("--compare", type=int, default=20)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    ref_times, dt_times, ratios, names = [], [], [], []
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for name, inst in suite("main", args.random, args.seed, (0, 4)):
        _, t_ref = timed(inst, "bnb")
        _, t_dt = timed(under_dtplan(inst), "bnb")
        ref_times.append(t_ref)
        dt_times.append(t_dt)
        ratios.append(t_dt / t_ref)
        names.append(f"{name} ({inst.objective}, {inst.fleet.nodes} nodes)")
    print(f"reference bnb: {stats(ref_times)}")
    print(f"dtplan bnb:    {stats(dt_times)}")
    slowest = np.argsort(dt_times)[::-1][:3]
    print("dtplan slowest: " + "; ".join(f"{names[i]} {dt_times[i]:.2f} s" for i in slowest))
    print(f"dtplan / reference per instance: median {np.median(ratios):.2f}x, max {max(ratios):.2f}x")
    mismatches, compared = 0, 0
    search = {"max_inner_steps": 100, "max_regional_rounds": 4, "group_sizes": [2, 4, 8, 16]}
    for name, inst in suite("compare", args.compare, args.seed, (0, 2), search):
        dt = under_dtplan(inst)
        r, _ = timed(dt, "bnb")
        oracle, _ = timed(dt, "exhaustive")
        compared += 1
        if not same(r, oracle):
            mismatches += 1
            print(f"mismatch {name}: {r.objective_value} vs exhaustive {oracle.objective_value}")
    print(f"dtplan bnb against the exhaustive oracle: {compared - mismatches} of {compared} agree")
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"dtplan_median_s={np.median(dt_times):.3f} dtplan_p95_s={np.percentile(dt_times, 95):.3f} "
          f"reference_median_s={np.median(ref_times):.3f} ratio_median={np.median(ratios):.2f} mismatches={mismatches}")
    return 0 if mismatches == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
