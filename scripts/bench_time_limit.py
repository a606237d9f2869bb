"""Wall time of every command with `--time-limit 1` on the largest instances (issue 23 item 6: a
1-second limit took 14-79 s on 12 pools with chosen regions and minutes for the exhaustive solver
on 10^5 nodes). For each: the exit code, the wall time, the start-up it includes (`dtplan validate`
of the same instance: python, imports, reading and validating) and the load average; a limit is
kept when wall - start-up is about 1 s (plus one step's granularity, docs/cli.md "Time limits").

Instances (written to a temporary folder):
- 12 pools at the five sites of instances/mixed-regions-chosen.json, regions chosen (4,095 subsets);
- 16 pools in 16 European cities (scripts/bench_mixed.py pools_data; bnb takes at most 12 pools,
  so `--solver highs`, the one-model path with 131,071 patterns);
- instances/baseline-1e25.json with 10^5 nodes (`--solver exhaustive`).

`thresholds` has no --time-limit (it is timed without one, for reference). Output is --json
throughout (one document, whatever the renderer does).

Usage: python scripts/bench_time_limit.py [--repeats N]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT / "tests"))

from bench_mixed import pools_data  # noqa: E402
from test_deadline_loops import twelve_pools_chosen_regions  # noqa: E402

DTPLAN = [sys.executable, "-c", "from planner.cli import main; main()"]


def instances(folder: Path) -> dict[str, Path]:
    big = json.loads((ROOT / "instances" / "baseline-1e25.json").read_text())
    big["fleet"]["nodes"] = 100_000
    out = {"12 pools, chosen regions": twelve_pools_chosen_regions(), "16 pools in 16 cities": pools_data(16),
           "10^5 nodes": big}
    paths = {}
    for label, data in out.items():
        paths[label] = folder / (label.replace(" ", "_").replace(",", "").replace("^", "") + ".json")
        paths[label].write_text(json.dumps(data))
    return paths


def runs(paths: dict[str, Path], folder: Path) -> list[tuple[str, Path, list[str]]]:
    p12, p16, n5 = paths["12 pools, chosen regions"], paths["16 pools in 16 cities"], paths["10^5 nodes"]
    limit = ["--time-limit", "1", "--json"]
    return [
        ("solve 12 pools chosen", p12, ["solve", str(p12)] + limit),
        ("solve 16 pools --solver highs", p16, ["solve", str(p16), "--solver", "highs"] + limit),
        ("solve 10^5 --solver exhaustive", n5, ["solve", str(n5), "--solver", "exhaustive"] + limit),
        ("feasible 12 pools chosen", p12, ["feasible", str(p12)] + limit),
        ("feasible 10^5 nodes", n5, ["feasible", str(n5)] + limit),
        ("compare 12 pools chosen", p12, ["compare", str(p12)] + limit),
        ("compare 10^5 nodes", n5, ["compare", str(n5)] + limit),
        ("sweep 12 pools chosen (2 points)", p12, ["sweep", str(p12), "--grid", "limits.max_days=100,200",
                                                   "--workers", "1", "--time-limit", "1", "--json"]),
        ("thresholds (no --time-limit)", None, ["thresholds", "--compute", "16", "--target-flop", "1e25",
                                                "--accelerator", "H100-SXM", "--json"]),
    ]


def wall(args: list[str]) -> tuple[float, int]:
    t0 = time.perf_counter()
    p = subprocess.run(DTPLAN + args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
    return time.perf_counter() - t0, p.returncode


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        paths = instances(folder)
        print(f"{'command':36} {'exit':>4} {'wall s':>7} {'start-up s':>10} {'wall - start-up':>15}  load")
        for label, instance, command in runs(paths, folder):
            startup = statistics.median(wall(["validate", str(instance)])[0] for _ in range(args.repeats)) \
                if instance is not None else float("nan")
            times, code = [], None
            for _ in range(args.repeats):
                t, code = wall(command)
                times.append(t)
            w = statistics.median(times)
            print(f"{label:36} {code:>4} {w:>7.2f} {startup:>10.2f} {w - startup:>15.2f}  "
                  f"{os.getloadavg()[0]:.1f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
