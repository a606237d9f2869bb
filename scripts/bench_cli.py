"""Start-up benchmark of the CLI: how much of `dtplan solve` is importing, how much is solving.

Each repeat runs fresh interpreters (so nothing is cached in memory between them):

1. `dtplan ARGS` as a user runs it (the console script): wall time of the process;
2. the same command inside `python -X importtime`, with time.perf_counter around the
   import of the CLI and around the command; the command's own imports (made lazily
   by the command) are read from the importtime report and counted as import time,
   the rest of the command is the solve;
3. `python -c pass`: the interpreter's own start, which no change to dtplan can remove.

Printed: every repeat and the median of each figure, with the CPU time of the
children (less sensitive than wall time to other work on a shared machine) and the
load average. Also which heavy optional packages the command loaded (none should
be loaded for a plain solve).

Python bytecode caches: a user's installation has them (pip compiles a wheel's modules;
an editable checkout writes them on first run), but PYTHONDONTWRITEBYTECODE=1 keeps a
checkout without, and every run then compiles dtplan's modules again (~15 ms). The
benchmark first runs the command once with bytecode writing allowed, so that it measures
what a user sees, and says so.

Then the time limit (issue 10 item 7): `max_compute` on 10^7 nodes under the dtplan profile
(every micro-batch count a class of its own; about 3 s and 350 MB without a limit) with
`--time-limit 1`: the wall time of the whole command against the limit, and its peak memory.

    python scripts/bench_cli.py                      # solve of the shipped 1e24 instance, 5 repeats
    python scripts/bench_cli.py --repeats 3 -- solve instances/solve-1e24-64xh100.json --objective min_cost
    python scripts/bench_cli.py --no-limit-case      # start-up only
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_ARGS = ["solve", str(REPO / "instances" / "solve-1e24-64xh100.json")]
HEAVY = ("pydantic", "rich", "matplotlib", "scipy", "highspy", "ortools", "pandas", "pyarrow", "dask",
         "distributed", "networkx", "pyomo")
MARKER = "@@bench"

CHILD = r"""
import json, sys, time
args = json.loads(sys.argv[1])
t0 = time.perf_counter()
from planner.cli import main
t1 = time.perf_counter()
sys.stderr.write("@@bench-command\n")
sys.stderr.flush()
try:
    main(args, prog_name="dtplan")
except SystemExit:
    pass
t2 = time.perf_counter()
heavy = sorted({m.split(".")[0] for m in sys.modules} & set(json.loads(sys.argv[2])))
sys.stderr.write("@@bench " + json.dumps({"cli_import_s": t1 - t0, "command_s": t2 - t1, "heavy": heavy}) + "\n")
"""


def command_imports_s(stderr: str) -> float:
    """Seconds of imports made during the command: the cumulative times (microseconds) of the
    top-level entries of the `-X importtime` report that come after the marker."""
    total_us = 0
    after = False
    for line in stderr.splitlines():
        if line.startswith(MARKER + "-command"):
            after = True
        elif after and line.startswith("import time:"):
            parts = line.split("|")
            if len(parts) == 3 and parts[2].startswith(" ") and not parts[2][1:].startswith(" "):
                total_us += int(parts[1])
    return total_us / 1e6


def timed(cmd: list[str], **kw) -> tuple[float, float, subprocess.CompletedProcess]:
    """(wall s, children CPU s, result) of one process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, **kw)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done


def one_repeat(args: list[str]) -> dict:
    dtplan = Path(sys.executable).with_name("dtplan")
    wall, cpu, done = timed([str(dtplan), *args], cwd=REPO)
    if done.returncode not in (0, 1):
        sys.exit(f"dtplan {' '.join(args)} failed (exit {done.returncode}):\n{done.stderr}")
    _, _, probe = timed([sys.executable, "-X", "importtime", "-c", CHILD, json.dumps(args), json.dumps(HEAVY)],
                        cwd=REPO)
    line = next(l for l in probe.stderr.splitlines() if l.startswith(MARKER + " "))
    inner = json.loads(line[len(MARKER) + 1:])
    lazy_s = command_imports_s(probe.stderr)
    bare_wall, _, _ = timed([sys.executable, "-c", "pass"])
    return {"wall_s": wall, "cpu_s": cpu, "python_start_s": bare_wall,
            "import_s": inner["cli_import_s"] + lazy_s, "solve_s": inner["command_s"] - lazy_s,
            "heavy": inner["heavy"]}


LIMIT_S = 1.0
LIMIT_ARGS = ["solve", str(REPO / "instances" / "solve-1e24-64xh100.json"), "--objective", "max_compute",
              "--set", "fleet.nodes=10000000", "--set", "assumptions.profile=dtplan", "--time-limit", str(LIMIT_S)]
RSS_CHILD = r"""
import json, resource, subprocess, sys, time
t0 = time.perf_counter()
done = subprocess.run(json.loads(sys.argv[1]), capture_output=True, text=True)
wall = time.perf_counter() - t0
use = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"wall_s": wall, "cpu_s": use.ru_utime + use.ru_stime, "peak_mb": use.ru_maxrss / 1024,
                  "exit": done.returncode, "head": done.stdout.splitlines()[:2]}))
"""


def limit_case(repeats: int) -> None:
    """The whole command's wall time under --time-limit on the large max_compute case."""
    dtplan = str(Path(sys.executable).with_name("dtplan"))
    runs = []
    for _ in range(repeats):
        done = subprocess.run([sys.executable, "-c", RSS_CHILD, json.dumps([dtplan, *LIMIT_ARGS])],
                              capture_output=True, text=True, cwd=REPO)
        runs.append(json.loads(done.stdout))
    print(f"\ndtplan {' '.join(LIMIT_ARGS[:1] + ['solve-1e24-64xh100.json'] + LIMIT_ARGS[2:])}   "
          f"({repeats} repeats, load average {os.getloadavg()[0]:.2f})")
    for i, r in enumerate(runs, 1):
        print(f"{i:>2}  wall {r['wall_s']:.3f} s  CPU {r['cpu_s']:.3f} s  peak {r['peak_mb']:.0f} MB  exit {r['exit']}  "
              f"| {r['head'][1] if len(r['head']) > 1 else ''}")
    wall = statistics.median(r["wall_s"] for r in runs)
    print(f"med wall {wall:.3f} s for a {LIMIT_S:g} s limit (start-up included); "
          f"peak {max(r['peak_mb'] for r in runs):.0f} MB")


def warm_bytecode(args: list[str]) -> str:
    """Run the command once with bytecode writing allowed; what the benchmark then measures with."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run([str(Path(sys.executable).with_name("dtplan")), *args], cwd=REPO, capture_output=True, env=env)
    cached = any((REPO / "planner").glob("__pycache__/*.pyc"))
    return "present (written by a warm-up run)" if cached else "absent (modules compiled on every run)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5, help="fresh runs of each measurement (default 5)")
    parser.add_argument("--no-limit-case", action="store_true", help="skip the --time-limit case")
    parser.add_argument("args", nargs="*", help="dtplan arguments (after --); default: " + " ".join(DEFAULT_ARGS))
    ns = parser.parse_args()
    args = ns.args or DEFAULT_ARGS
    bytecode = warm_bytecode(args)
    rows = [one_repeat(args) for _ in range(ns.repeats)]
    keys = ("wall_s", "cpu_s", "python_start_s", "import_s", "solve_s")
    print(f"dtplan {' '.join(args)}   ({ns.repeats} repeats, load average {os.getloadavg()[0]:.2f})")
    print("  " + "".join(f"{k:>16}" for k in keys))
    for i, row in enumerate(rows, 1):
        print(f"{i:>2}" + "".join(f"{row[k]:>16.3f}" for k in keys))
    print("med" + "".join(f"{statistics.median(r[k] for r in rows):>16.3f}" for k in keys)[1:])
    print("wall_s: the console script, end to end; cpu_s: its user+system CPU; python_start_s: `python -c pass`;")
    print("import_s: importing the CLI plus the command's lazy imports (-X importtime); solve_s: the command minus those")
    print("heavy packages loaded by the command: " + (", ".join(rows[0]["heavy"]) or "none"))
    print("bytecode caches of planner/: " + bytecode)
    if not ns.no_limit_case:
        limit_case(max(1, min(ns.repeats, 3)))


if __name__ == "__main__":
    main()
