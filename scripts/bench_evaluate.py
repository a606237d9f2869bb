#!/usr/bin/env python3
"""Benchmark the vectorised evaluator: evaluations per second on a batch of plans.

Usage: scripts/bench_evaluate.py [--plans 1000000] [--repeat 3]

Scores a seeded random batch of flat and PP-group plans (nodes 2..10^4, H 1..10^4,
the default compression set, streaming on and off) for the 10^25 baseline setting
with `planner.cost.score.score`, the same function the CLI calls for one plan,
and prints the best wall time, evaluations per second and peak memory.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from planner.cost.score import score  # noqa: E402
from planner.cost.setting import PlanBatch, Setting  # noqa: E402

COMPRESSION = np.array([1, 2, 4, 8, 16, 32, 64, 100, 150, 250, 500], dtype=float)


def batches(n: int, seed: int = 0) -> list[PlanBatch]:
    rng = np.random.default_rng(seed)
    half = n // 2
    flat = PlanBatch.of("flat", "fp16", nodes=rng.integers(2, 10_001, half), inner_steps=rng.integers(1, 10_001, half),
                        compression=rng.choice(COMPRESSION, half), streaming=rng.random(half) < 0.5)
    rest = n - half
    pp = PlanBatch.of("pp_group", "fp16", nodes=rng.integers(4, 10_001, rest), inner_steps=rng.integers(1, 10_001, rest),
                      compression=rng.choice(COMPRESSION, rest), streaming=rng.random(rest) < 0.5,
                      stages=rng.integers(2, 5, rest), micro_batches=rng.integers(1, 65, rest),
                      activation_compression=rng.choice([1.0, 2.0, 4.0, 10.0], rest))
    return [flat, pp]


def baseline_setting(**changes) -> Setting:
    """The 10^25 baseline setting (144B dense on nodes of 16 H100), with `changes` (e.g. assumptions)."""
    return Setting(params=144e9, active_params=144e9, moe_layers=0, hidden_size=None, local_batch_tokens=131072,
                   peak_flops={"fp16": 15.84e15}, memory_bytes=2304e9, accelerators_per_node=16,
                   price_usd_per_accelerator=28000.0, h100_equivalents=16.0, target_flop=1e25, **changes)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--plans", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    setting = baseline_setting()
    plans = batches(args.plans)
    best = float("inf")
    for _ in range(args.repeat):
        start = time.perf_counter()
        for batch in plans:
            out = score(setting, batch)
            assert np.isfinite(out["time_to_target_s"]).any()
        best = min(best, time.perf_counter() - start)
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"plans={args.plans} best_s={best:.3f} evals_per_s={args.plans / best:,.0f} peak_rss_mb={peak_mb:.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
