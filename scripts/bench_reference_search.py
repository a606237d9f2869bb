#!/usr/bin/env python3
"""The reference calculator's own searches beside dtplan's exact answers to the same
questions, in one process (issue 27 item 3).

Usage: scripts/bench_reference_search.py PATH_TO_REFERENCE [--cases FILE] [--repeat K] [--only FUNCTION] [--verbose]
       [--grouped] [--instructions] [--processes K]
(--cases defaults to ../shared/conformance/reference_cases.json, or $DTPLAN_SHARED_DIR/conformance/.)

PATH_TO_REFERENCE is a folder holding the public reference calculator's evasion_calculator.py
(github.com/robirahman/miri-decentralized-training-report; its code stays outside this
project, imported from that path). For each search case of the reference-case file
(find_nodes_for_target, find_optimal_config_for_target, sweep_model_sizes) the script calls
the reference's function with the case's arguments and `planner.reference.search.answer`
(dtplan's exact answer with its re-scoring check), each K times, keeping each side's least
CPU time (time.process_time). It prints, per function, both total times and their ratio,
the reference's answers (nodes, cost, C_quality) beside dtplan's, and the load average
(os.getloadavg) before and after.

`--grouped` runs every selected case with the reference first, then every case with dtplan (each
K times), instead of the two sides case by case: each side's calls then follow its own previous
case rather than the other program's, which shows whether a side's first calls (`--repeat 1`) pay
for following the other program (docs/planner.md, issue 27 item 3: on the sweeps they do not, a
first call pays about as much after dtplan's own other cases). The issue's figure is the default,
interleaved order.

`--instructions` prints instead, per side, the instructions (valgrind's callgrind, "Collected",
PYTHONHASHSEED=0) of a first pass over the selected cases in a process (first calls: the
`--repeat 1` figure) and of a second, repeated pass: the counts of processes that import
everything and run 0, 1 and 2 passes of one side (`--side`, `--passes`), subtracted. The machine's
load does not move them; each process runs 50-100 times slower under valgrind (minutes).

`--processes K` runs K fresh processes of this script, one after the other, each with `--repeat 1` (first
calls) in the chosen order, and prints per function and profile the median over the processes of each
side's total first-call CPU time and of their ratio (the ratio's median is taken per process, not the
ratio of the medians), with the lowest and highest ratio and the load average before and after: one
process's `--repeat 1` ratio moves by 0.2-0.4 between processes on this machine (the reference's own time
by up to 2x), so a first-call figure is a median over many.

The reference's code is the calculator as published (the `current` profile): on the
`v1_48xA100` cases (the report's older assumptions, which it no longer has) it runs the same
search on the same arguments under its current physics, so its time is comparable but its
answer is not that of the case; the answer shown for it is then the case's recorded one.
"""

from __future__ import annotations

import argparse
import collections
import importlib.util
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from planner.reference.conformance import SEARCH_FUNCTIONS  # noqa: E402
from planner.reference.search import answer  # noqa: E402

SHARED = Path(os.environ.get("DTPLAN_SHARED_DIR", Path(__file__).resolve().parents[2] / "shared"))
DEFAULT_CASES = SHARED / "conformance" / "reference_cases.json"   # beside the clone, as scripts/check_reference.py


def load_reference(folder: Path):
    """The reference calculator's module, imported from `folder`/evasion_calculator.py."""
    path = folder / "evasion_calculator.py"
    spec = importlib.util.spec_from_file_location("evasion_calculator", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def reference_answer(case: dict, result) -> float | None:
    """The quantity the case compares (nodes, cost in USD, best C_quality) from the reference's result."""
    if result is None:
        return None
    if case["function"] == "find_nodes_for_target":
        return float(result["n_nodes"])
    if case["function"] == "sweep_model_sizes":
        return float(result[0]["c_quality"])
    return float(result["cost_usd"])


def least_cpu_s(call, repeat: int):
    """(result of the last call, least CPU seconds of `repeat` calls)."""
    best, result = float("inf"), None
    for _ in range(repeat):
        start = time.process_time()
        result = call()
        best = min(best, time.process_time() - start)
    return result, best


def run_side(ref, cases: list[dict], side: str, passes: int) -> None:
    """`passes` passes of one side over the cases (`--side`: what `--instructions` counts)."""
    for _ in range(passes):
        for case in cases:
            if side == "reference":
                getattr(ref, case["function"])(**case["kwargs"])
            else:
                answer(case)


def instructions(args, side: str, passes: int) -> int | None:
    """Instructions of a process of this script running `passes` passes of `side` (callgrind's
    "Collected"), or None without valgrind."""
    if shutil.which("valgrind") is None:
        return None
    command = [sys.executable, str(Path(__file__).resolve()), str(args.reference), "--cases", str(args.cases),
               "--side", side, "--passes", str(passes)]
    for fn in args.only or ():
        command += ["--only", fn]
    done = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *command],
                          capture_output=True, text=True, env={**os.environ, "PYTHONHASHSEED": "0"})
    found = re.search(r"Collected : (\d+)", done.stderr)
    return int(found.group(1)) if found and done.returncode == 0 else None


def print_instructions(args, cases: list[dict]) -> int:
    """`--instructions`: per side, a first and a repeated pass's instructions, and their ratio."""
    print(f"{len(cases)} cases ({', '.join(sorted({c['function'] for c in cases}))}); instructions (callgrind, "
          f"PYTHONHASHSEED=0)")
    passes = {}
    for side in ("reference", "dtplan"):
        counts = [instructions(args, side, k) for k in (0, 1, 2)]
        if None in counts:
            print("bench_reference_search.py: valgrind not found or its run failed", file=sys.stderr)
            return 1
        passes[side] = (counts[1] - counts[0], counts[2] - counts[1])
        print(f"{side:10} first pass {passes[side][0] / 1e6:10.1f} M   repeated pass {passes[side][1] / 1e6:10.1f} M")
    first, again = (passes["dtplan"][j] / passes["reference"][j] for j in (0, 1))
    print(f"{'ratio':10} first pass {first:10.2f}     repeated pass {again:10.2f}")
    return 0


def print_processes(args) -> int:
    """`--processes K`: K fresh processes with `--repeat 1`, each printing its rows (`--rows-json`); per
    function and profile the medians over processes of each side's first-call seconds and of the ratio."""
    command = [sys.executable, str(Path(__file__).resolve()), str(args.reference), "--cases", str(args.cases),
               "--repeat", "1", "--rows-json"] + (["--grouped"] if args.grouped else [])
    for fn in args.only or ():
        command += ["--only", fn]
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; {args.processes} processes, "
          f"--repeat 1{' --grouped' if args.grouped else ''}")
    runs = collections.defaultdict(list)        # (function, profile) -> [(reference s, dtplan s)] per process
    for _ in range(args.processes):
        done = subprocess.run(command, capture_output=True, text=True, check=True)
        for fn, profile, ref_s, dt_s in json.loads(done.stdout.splitlines()[-1]):
            runs[(fn, profile)].append((ref_s, dt_s))
    print(f"{'function':32} {'profile':11} {'reference ms':>12} {'dtplan ms':>10} {'ratio':>7} {'least':>6} {'most':>6}"
          f"   (medians over processes; ratio per process)")
    for (fn, profile), pairs in sorted(runs.items()):
        ratios = [dt / ref for ref, dt in pairs]
        print(f"{fn:32} {profile:11} {statistics.median(r for r, _ in pairs) * 1e3:12.2f} "
              f"{statistics.median(d for _, d in pairs) * 1e3:10.2f} {statistics.median(ratios):7.2f} "
              f"{min(ratios):6.2f} {max(ratios):6.2f}")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("reference", type=Path, help="folder holding the reference calculator's evasion_calculator.py")
    parser.add_argument("--cases", type=Path, default=DEFAULT_CASES, help="the reference-case file")
    parser.add_argument("--repeat", type=int, default=3, help="calls per case and side; the least CPU time is kept")
    parser.add_argument("--verbose", action="store_true", help="one line per case")
    parser.add_argument("--only", choices=SEARCH_FUNCTIONS, action="append",
                        help="only this search function's cases (repeatable; default: all three)")
    parser.add_argument("--grouped", action="store_true",
                        help="every case with the reference, then every case with dtplan (default: side by side per case)")
    parser.add_argument("--instructions", action="store_true",
                        help="instructions of a first and a repeated pass per side instead (valgrind; minutes)")
    parser.add_argument("--processes", type=int, default=0,
                        help="K fresh processes with --repeat 1: medians of first-call times and ratios (0: this one)")
    parser.add_argument("--rows-json", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--side", choices=("reference", "dtplan"), help=argparse.SUPPRESS)
    parser.add_argument("--passes", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if not args.cases.is_file():
        print(f"bench_reference_search.py: {args.cases}: no such file; give --cases or set DTPLAN_SHARED_DIR",
              file=sys.stderr)
        return 2
    if not (args.reference / "evasion_calculator.py").is_file():
        print(f"bench_reference_search.py: {args.reference / 'evasion_calculator.py'}: no such file; give the folder "
              f"of the reference calculator's evasion_calculator.py", file=sys.stderr)
        return 2
    ref = load_reference(args.reference)
    cases = [c for c in json.loads(args.cases.read_text()) if c["function"] in (args.only or SEARCH_FUNCTIONS)]
    if args.side is not None:
        run_side(ref, cases, args.side, args.passes)
        return 0
    if args.instructions:
        return print_instructions(args, cases)
    if args.processes > 0:
        return print_processes(args)
    if not args.rows_json:
        print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
          + ("; grouped: every reference call, then every dtplan call" if args.grouped else ""))
    totals = collections.defaultdict(lambda: [0, 0.0, 0.0, 0, 0])   # cases, ref s, dtplan s, passed, same answer
    def ref_call(case):
        return least_cpu_s(lambda: getattr(ref, case["function"])(**case["kwargs"]), args.repeat)

    def dtplan_call(case):
        return least_cpu_s(lambda: answer(case), args.repeat)

    if args.grouped:
        runs = zip([ref_call(case) for case in cases], [dtplan_call(case) for case in cases])
    else:
        runs = ((ref_call(case), dtplan_call(case)) for case in cases)
    for case, ((result, ref_s), (outcome, dt_s)) in zip(cases, runs):
        ref_value = reference_answer(case, result) if case["profile"] == "current" else outcome.reference
        key = (case["function"], case["profile"])
        row = totals[key]
        row[0] += 1
        row[1] += ref_s
        row[2] += dt_s
        row[3] += outcome.status == "passed"
        row[4] += ref_value == outcome.reference
        if args.verbose:
            print(f"{case['id']:45} reference {ref_value!s:>22} {ref_s * 1e3:8.2f} ms   dtplan {outcome.dtplan!s:>22} "
                  f"{dt_s * 1e3:8.2f} ms  {outcome.status}", flush=True)
    if args.rows_json:      # one line for `--processes`: [function, profile, reference s, dtplan s] per row
        print(json.dumps([[fn, profile, row[1], row[2]] for (fn, profile), row in sorted(totals.items())]))
        return 0
    print(f"{'function':32} {'profile':11} {'cases':>5} {'reference s':>12} {'dtplan s':>10} {'ratio':>7}  answers")
    for (fn, profile), (n, ref_s, dt_s, passed, same) in sorted(totals.items()):
        print(f"{fn:32} {profile:11} {n:5d} {ref_s:12.4f} {dt_s:10.4f} {dt_s / ref_s:7.2f}  "
              f"dtplan at least as good in {passed}/{n}; reference run = recorded answer in {same}/{n}")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
