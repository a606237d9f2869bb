#!/usr/bin/env python3
"""Benchmark `dtplan solve` backends on the shipped instances and a seeded random suite.

Usage: scripts/bench_solve.py [--random 300] [--seed 0] [--solvers oracle,...]

Random instances: hardware from the catalog, model sizes 1B..2T (some MoE), node counts
log-uniform in 1..10^4, WAN 10 Mb/s..10 Gb/s, RTT 5..340 ms, targets 1e22..1e27 FLOP,
duration limits 30..1000 days, every mode, both objectives. For each solver prints the
median and p95 solve time, how many optima differ from the oracle's (value beyond 1e-9
relative, or a different plan), and its speed relative to the oracle; the last line is
`median_s=... p95_s=... mismatches=... speedup_vs_oracle=...` for the default solver.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from planner.catalog import hardware_ids  # noqa: E402
from planner.errors import InputError  # noqa: E402
from planner.instance import load_instance, parse_instance  # noqa: E402
from planner.solve import DEFAULT_SOLVER, SOLVERS, solve  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


def random_instance(rng: np.random.Generator, i: int) -> dict:
    params = float(10 ** rng.uniform(9, 12.3))
    model = {"params": params}
    if rng.random() < 0.15 and params > 5e10:
        model.update(active_params=params / float(rng.choice([4, 8, 16])), moe_layers=int(rng.choice([16, 32, 58])))
    up = float(10 ** rng.uniform(1, 4))
    return {
        "name": f"random {i}",
        "model": model,
        "training": {"target_flop": float(10 ** rng.uniform(22, 27))},
        "fleet": {"hardware": str(rng.choice(hardware_ids())), "nodes": int(np.round(10 ** rng.uniform(0, 4)))},
        "network": {"wan": {"up_mbps": up, "down_mbps": float(up * rng.choice([1, 2, 5])),
                            "rtt_ms": float(rng.uniform(5, 340))}},
        "limits": {"max_days": float(rng.choice([30, 180, 365, 548, 1000]))},
        "assumptions": {"straggler": str(rng.choice(["relay", "synchronous", "threshold"]))},
        "objective": str(rng.choice(["min_time", "min_cost"])),
    }


def instances(n_random: int, seed: int):
    for path in sorted((REPO / "instances").glob("*.json")):
        if path.name.endswith(".plan.json"):
            continue
        yield path.stem, load_instance(path)
    rng = np.random.default_rng(seed)
    for i in range(n_random):
        try:
            yield f"random-{i}", parse_instance(random_instance(rng, i))
        except InputError:
            continue


def summary(times: list[float]) -> tuple[float, float]:
    return float(np.median(times)), float(np.percentile(times, 95))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--random", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--solvers", default=",".join(SOLVERS))
    args = parser.parse_args(argv)
    solvers = args.solvers.split(",")
    times = {s: [] for s in solvers}
    oracle_times = []
    mismatches = {s: 0 for s in solvers}
    count = 0
    for name, inst in instances(args.random, args.seed):
        start = time.perf_counter()
        reference = solve(inst, solver="oracle")
        oracle_times.append(time.perf_counter() - start)
        for s in solvers:
            if s == "oracle":
                times[s].append(oracle_times[-1])
                continue
            start = time.perf_counter()
            r = solve(inst, solver=s)
            times[s].append(time.perf_counter() - start)
            same = (r.status == reference.status and (r.plan is None or (
                abs(r.objective_value - reference.objective_value) <= 1e-9 * abs(reference.objective_value)
                and r.plan == reference.plan)))
            if not same:
                mismatches[s] += 1
                print(f"mismatch {name} [{s}]: {r.objective_value} vs oracle {reference.objective_value}")
        count += 1
    print(f"{count} instances ({args.random} random, seed {args.seed})")
    for s in solvers:
        med, p95 = summary(times[s])
        speedup = float(np.sum(oracle_times) / np.sum(times[s]))
        print(f"{s:10s} median {med:.3f} s  p95 {p95:.3f} s  max {max(times[s]):.3f} s  "
              f"mismatches {mismatches[s]}  speedup vs oracle {speedup:.1f}x")
    med, p95 = summary(times[DEFAULT_SOLVER])
    speedup = float(np.sum(oracle_times) / np.sum(times[DEFAULT_SOLVER]))
    print(f"median_s={med:.3f} p95_s={p95:.3f} mismatches={mismatches[DEFAULT_SOLVER]} speedup_vs_oracle={speedup:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
