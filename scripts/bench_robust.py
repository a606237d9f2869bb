"""Time a robust solve (planner.questions.robust.robust_optimum: the scenario set built, the space
checked under every scenario, the branch and bound over the robust key) against a nominal one
(planner.solve.solve) on the shipped uniform-fleet instances, each the best of `--repeat` runs;
prints the ratio (issue 24: within 3x), the scenario count and the machine's load.

    python scripts/bench_robust.py [--repeat 3] [INSTANCE ...]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from planner.objectives import objective_named
from planner.questions.robust import robust_optimum
from planner.schema.instance import parse_instance
from planner.solve import solve

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = ("solve-1e24-64xh100", "baseline-1e25", "compare-1e27", "moe-600B-a100", "pp-group-480B-h100",
           "sites-seven-cities")


def best_of(repeat: int, run) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        out = run()
        times.append(time.perf_counter() - start)
    return min(times), out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("instances", nargs="*")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    paths = [Path(p) for p in args.instances] or [ROOT / "instances" / f"{n}.json" for n in SHIPPED]
    worst = 0.0
    print(f"load average at start {os.getloadavg()[0]:.2f}")
    for path in paths:
        raw = json.loads(path.read_text())
        instance = parse_instance(raw)
        nominal_s, nominal = best_of(args.repeat, lambda: solve(instance))
        robust_s, (robust, chosen, _, _) = best_of(args.repeat, lambda: robust_optimum(instance, raw, objective_named(instance.objective)))
        ratio = robust_s / nominal_s
        worst = max(worst, ratio)
        print(f"{path.stem:<22} {instance.objective:<11} nominal {nominal_s:7.2f} s ({nominal.status}), robust "
              f"{robust_s:7.2f} s ({robust.status}, {len(chosen)} scenarios): {ratio:5.2f}x; load {os.getloadavg()[0]:.2f}")
    print(f"largest ratio {worst:.2f}x (target: within 3x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
