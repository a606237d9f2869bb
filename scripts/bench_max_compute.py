"""CPU and peak memory of `max_compute` under the dtplan profile beside the reference profile (issue 27 item 5).

Each case is one fresh `dtplan solve ... --objective max_compute --json` process per profile:
`report-v1` (the reference calculator's assumptions) and `dtplan`, the latter inside the evidence
envelope of the fitted quality model (the default) and beyond it (`--beyond-evidence`, where
every micro-batch count of a pipeline is a class of its own). Printed per case and profile: the
child's CPU (user + system, resource.getrusage(RUSAGE_CHILDREN)) and peak resident memory
(ru_maxrss of a fresh intermediate process, so that one child's peak is not hidden by another's),
the median over the runs, the ratio to report-v1, and the load average. Start-up is included
(about 0.3 s of CPU and 50 MB on the project machine: scripts/bench_startup.py). Compare trees
with their bytecode current (`python -m compileall planner`): under PYTHONDONTWRITEBYTECODE a module
edited since its .pyc was written is compiled again in every process (~0.04 s of CPU for
planner/space.py and planner/solvers/bnb.py on the project machine).

    python scripts/bench_max_compute.py               # 3 runs of each case
    python scripts/bench_max_compute.py --runs 5 --nodes 64 10000
    python scripts/bench_max_compute.py --instructions --nodes 10000   # also valgrind's instruction counts

`--instructions` also runs each process once under valgrind (callgrind) and prints the instructions it
executed, a figure the load of the machine does not move (a few minutes per process under valgrind).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import re
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
INSTANCE = "instances/solve-1e24-64xh100.json"
MIRI = "instances/miri/evasion-72x48xA100.json"     # the reference's own max_compute question
PROFILES = (("report-v1", []), ("dtplan", []), ("dtplan", ["--beyond-evidence"]))
TARGET_RATIO = 2.0       # issue 27 item 5: within 2x of the reference profile's time and memory

# One fresh process that runs dtplan and reports its child's CPU and peak RSS.
CHILD = r"""
import json, resource, subprocess, sys
done = subprocess.run(json.loads(sys.argv[1]), capture_output=True, text=True)
use = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"cpu_s": use.ru_utime + use.ru_stime, "peak_mb": use.ru_maxrss / 1024, "exit": done.returncode,
                  "value": json.loads(done.stdout).get("objective_value") if done.stdout.startswith("{") else None}))
"""


def run(args: list[str]) -> dict:
    dtplan = str(Path(sys.executable).with_name("dtplan"))
    done = subprocess.run([sys.executable, "-c", CHILD, json.dumps([dtplan, *args])], capture_output=True, text=True,
                          cwd=REPO)
    return json.loads(done.stdout)


def instructions(args: list[str]) -> int | None:
    """Instructions executed by one dtplan process (valgrind --tool=callgrind's "Collected"), or None
    without valgrind."""
    if shutil.which("valgrind") is None:
        return None
    dtplan = str(Path(sys.executable).with_name("dtplan"))
    done = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", dtplan, *args],
                          capture_output=True, text=True, cwd=REPO, env={**os.environ, "PYTHONHASHSEED": "0"})
    found = re.search(r"Collected : (\d+)", done.stderr)
    return int(found.group(1)) if found else None


def cases(nodes: list[int]) -> list[tuple[str, list[str]]]:
    out = [(f"{Path(INSTANCE).stem}, {n:,} nodes", [INSTANCE, "--set", f"fleet.nodes={n}"]) for n in nodes]
    return out + [(Path(MIRI).stem, [MIRI])]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="fresh processes per case and profile (default 3)")
    parser.add_argument("--nodes", type=int, nargs="+", default=[64, 10_000, 10_000_000],
                        help="fleet sizes of the 10^24 instance (default 64 10000 10000000)")
    parser.add_argument("--instructions", action="store_true",
                        help="also the instructions of one process per case and profile (valgrind's callgrind)")
    ns = parser.parse_args()
    print(f"max_compute, CPU and peak RSS per dtplan process (median of {ns.runs}); ratio to report-v1; "
          f"target <= {TARGET_RATIO:g}x")
    for name, args in cases(ns.nodes):
        load = os.getloadavg()[0]
        print(f"\n{name}   (load average {load:.2f})")
        reference = None
        for profile, extra in PROFILES:
            command = ["solve", *args, "--objective", "max_compute", "--json", "--set", f"assumptions.profile={profile}",
                       *extra]
            rows = [run(command) for _ in range(ns.runs)]
            cpu = statistics.median(r["cpu_s"] for r in rows)
            peak = statistics.median(r["peak_mb"] for r in rows)
            reference = reference or (cpu, peak)
            label = profile + (" " + " ".join(extra) if extra else "")
            value = rows[0]["value"]
            print(f"  {label:<28} CPU {cpu:6.2f} s ({cpu / reference[0]:4.2f}x)   peak {peak:6.0f} MB "
                  f"({peak / reference[1]:4.2f}x)   exit {rows[0]['exit']}   "
                  f"value {value if value is None else format(value, '.4e')}")
            if ns.instructions:
                count = instructions(command)
                print(f"  {'':<28} instructions {'(no valgrind)' if count is None else format(count / 1e9, '.3f') + ' G'}")


if __name__ == "__main__":
    main()
