"""Time a robust solve (planner.questions.robust.robust_optimum: the scenario set built, the space
checked under every scenario, the branch and bound over the robust key) against a nominal one
(planner.solve.solve) on shipped instances (six uniform fleets, one fleet of pools), each the best
of `--repeat` runs; prints the ratio (issue 24: within 3x), the scenario count and the machine's
load. Each instance
runs under each `--profiles` variant: `given` (the instance's own profile), `dtplan` (the dtplan
profile, searched inside its evidence envelope) and `dtplan-beyond` (the dtplan profile with the
envelope off, as `--beyond-evidence`: the largest spaces, 33 scenarios).

    python scripts/bench_robust.py [--repeat 3] [--profiles given,dtplan,dtplan-beyond] [INSTANCE ...]
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
           "sites-seven-cities", "mixed-a100-h100")        # the last a fleet of pools (planner.robust_pools)


def best_of(repeat: int, run) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        out = run()
        times.append(time.perf_counter() - start)
    return min(times), out


def variant(raw: dict, name: str) -> dict:
    """The instance under a profile variant (module docstring)."""
    if name == "given":
        return raw
    data = json.loads(json.dumps(raw))
    assumptions = data.setdefault("assumptions", {})
    assumptions["profile"] = "dtplan"
    if name == "dtplan-beyond":
        assumptions.setdefault("constants", {})["evidence_envelope"] = False    # as --beyond-evidence
    return data


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("instances", nargs="*")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--profiles", default="given,dtplan,dtplan-beyond")
    args = parser.parse_args()
    paths = [Path(p) for p in args.instances] or [ROOT / "instances" / f"{n}.json" for n in SHIPPED]
    worst = 0.0
    print(f"load average at start {os.getloadavg()[0]:.2f}")
    for path in paths:
        for name in args.profiles.split(","):
            raw = variant(json.loads(path.read_text()), name)
            instance = parse_instance(raw)
            nominal_s, nominal = best_of(args.repeat, lambda: solve(instance))
            robust_s, (robust, chosen, _, _) = best_of(
                args.repeat, lambda: robust_optimum(instance, raw, objective_named(instance.objective)))
            ratio = robust_s / nominal_s
            worst = max(worst, ratio)
            print(f"{path.stem:<20} {name:<13} {instance.objective:<11} nominal {nominal_s:6.2f} s "
                  f"({nominal.status}), robust {robust_s:6.2f} s ({robust.status}, {len(chosen)} scenarios): "
                  f"{ratio:5.2f}x; load {os.getloadavg()[0]:.2f}", flush=True)
    print(f"largest ratio {worst:.2f}x (target: within 3x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
