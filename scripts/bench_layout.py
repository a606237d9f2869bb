#!/usr/bin/env python3
"""Benchmark the per-plan cost of pipeline plans under the dtplan profile (issue 25: the interleaved chunk
count chosen per plan in the cost layer evaluates each interleaved batch at up to four chunk counts).

Usage: scripts/bench_layout.py [--plans 200000] [--repeat 3] [--instances]

Scores a seeded random batch of PP-group plans (nodes 4..10^4, H 1..10^4, S 2..16, M 1..64, the three
schedules dtplan decides, a third of them interleaved) for the 10^25 baseline setting under the dtplan
profile with `planner.cost.score.score`, and prints the best CPU time (time.process_time), plans per
CPU-second and the load average (os.getloadavg) when it ran. With --instances, also the CPU time of
`solve` (min_time) on each uniform shipped instance of instances/ (index.json) with its profile set to dtplan,
inside the quality fit's evidence envelope (the profile's; most are then infeasible) and beyond it.
Run it from two checkouts in alternating pairs to compare them on the same machine.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from planner.cost.assumptions import load_profile  # noqa: E402
from planner.cost.score import score  # noqa: E402
from planner.cost.setting import PlanBatch  # noqa: E402
from bench_evaluate import baseline_setting  # noqa: E402
from planner.schema.instance import parse_instance  # noqa: E402
from planner.solve import solve  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def instance_solves() -> None:
    """CPU seconds of min_time on each uniform shipped instance under the dtplan profile."""
    for entry in json.loads((ROOT / "instances" / "index.json").read_text())["instances"]:
        raw = json.loads((ROOT / "instances" / f"{entry['name']}.json").read_text())
        if entry["command"] != "solve" or "pools" in raw.get("fleet", {}) or "sites" in raw:
            continue
        for envelope in (True, False):          # as the profile has it, and beyond the evidence envelope
            a = raw.get("assumptions", {})
            raw["assumptions"] = {**a, "profile": "dtplan",
                                  "constants": {**a.get("constants", {}), "evidence_envelope": envelope}}
            start = time.process_time()
            result = solve(parse_instance(raw), "min_time")
            print(f"{entry['name']:24} envelope={envelope!s:5} cpu_s={time.process_time() - start:.3f} "
                  f"status={result.status} load={os.getloadavg()[0]:.2f}")


def batch(n: int, seed: int = 0) -> PlanBatch:
    rng = np.random.default_rng(seed)
    return PlanBatch.of("pp_group", "fp16", nodes=rng.integers(4, 10_001, n), inner_steps=rng.integers(1, 10_001, n),
                        compression=rng.choice([1.0, 16.0, 100.0, 500.0], n), streaming=rng.random(n) < 0.5,
                        stages=rng.integers(2, 17, n), micro_batches=rng.integers(1, 65, n),
                        activation_compression=1.0, schedule=rng.integers(2, 5, n))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--plans", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--instances", action="store_true")
    args = parser.parse_args(argv)
    setting = baseline_setting(assumptions=load_profile("dtplan"))
    plans = batch(args.plans)
    best = float("inf")
    for _ in range(args.repeat):
        start = time.process_time()
        out = score(setting, plans)
        assert np.isfinite(out["time_to_target_s"]).any()
        best = min(best, time.process_time() - start)
    print(f"plans={args.plans} best_cpu_s={best:.3f} plans_per_cpu_s={args.plans / best:,.0f} "
          f"load={os.getloadavg()[0]:.2f}")
    if args.instances:
        instance_solves()
    return 0


if __name__ == "__main__":
    sys.exit(main())
