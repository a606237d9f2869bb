"""CPU of `dtplan solve` of the shipped 64-node instance, start-up included (issue 27 item 1).

Each run is a fresh `dtplan` process (the console script, as a user runs it); its CPU is the
user + system time of the finished child (resource.getrusage(RUSAGE_CHILDREN)), which other
work on a shared machine disturbs much less than wall time. Printed per command: every run,
the median and the minimum, and the load average (os.getloadavg) before and after. Then the
top entries of `python -X importtime` for the same command (cumulative microseconds of the
imports made by the package door, the command line and the command), and the CPU of
`python -c pass`, the interpreter's own start that no change to dtplan removes.

Bytecode caches: a user's installation has them (pip compiles a wheel's modules), but
PYTHONDONTWRITEBYTECODE=1 keeps a checkout without, and every run then compiles dtplan's
modules again; the benchmark first runs each command once with bytecode writing allowed.

With `--compare TREE` (another checkout of dtplan, e.g. `git archive main | tar -x -C /tmp/main`),
it measures instead, in alternating pairs (the order swapped every pair, so that a change of
the machine's load falls on both sides alike), the same command from this checkout and from
TREE, each a fresh `python -c` process that imports `planner` from its tree (the installed
editable finder is taken off sys.meta_path in both, so both start the same way), and prints
every pair, both medians and minima, their ratio and the load average.

    python scripts/bench_startup.py                 # 15 runs each of solve and solve --json
    python scripts/bench_startup.py --runs 30 --top 25
    python scripts/bench_startup.py --compare /tmp/main --runs 20
    python scripts/bench_startup.py --compare /tmp/main --instructions

With `--instructions` (valgrind installed), it counts instead the instructions of one run of the
command from each tree (valgrind's callgrind, `Collected`): a figure the machine's load does not
move, though it weighs a cache miss like any instruction (the collector's traversals are mostly
misses, so their share of CPU time is larger than their share of instructions).

With `--breakdown`, it splits the command's CPU into its parts, each measured as the growth of a
fresh `python -c` process (from this checkout, the start-up environment of planner/cli set in all)
as the steps are added one after another: python's own start, click, the command line's package,
numpy, the pydantic names the schema imports (and what pydantic loads to build a first model), the
assumptions' dataclass, the schema's modules and models, every other module the command loads
(listed from a run of the command), and the command itself (read, validate, solve, write). Every
step runs under the command's collector settings (`planner.cli.common.process_collector`: the
youngest generation collected after 100,000 new objects, what is alive frozen at the end), so that
no step pays an exit the command does not (without the freeze, the interpreter's final collections
trace every object the imports made: 65 million instructions for the solve's modules, more in CPU
time, the traversals being mostly cache misses). The steps run in rotation, `--runs` rounds, so
that a change of load falls on all of them alike; medians are printed with the load average. With
`--instructions` too, each step is counted once under callgrind instead.

With `--modules` (valgrind installed), it counts the instructions of each dtplan module the command
loads, in the order the command first imports them: each the growth of a fresh `python -c` process (the
same start-up environment and collector settings) that imports click, numpy, the pydantic names the
schema imports and a first model, then the command's modules one after another; a module's figure
includes what it imports that was not loaded yet (a package's `__init__` counts with its first module).
One callgrind run a module (~60 runs): callgrind's counts move by a few million from run to run.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
INSTANCE = REPO / "instances" / "solve-1e24-64xh100.json"
COMMANDS = (["solve", str(INSTANCE)], ["solve", str(INSTANCE), "--json"])
TARGET_CPU_S = 0.25      # issue 27 item 1 (stretch 0.15 s)


def child_cpu_s(cmd: list[str], env: dict[str, str] | None = None) -> tuple[float, subprocess.CompletedProcess]:
    """User + system CPU seconds of one finished child process, and its result."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, env=env)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), done


def warm_bytecode(args: list[str]) -> None:
    """One run with bytecode writing allowed, so that the measured runs load cached bytecode."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    child_cpu_s([str(Path(sys.executable).with_name("dtplan")), *args], env=env)


def measure(args: list[str], runs: int) -> list[float]:
    dtplan = str(Path(sys.executable).with_name("dtplan"))
    cpus = []
    for _ in range(runs):
        cpu, done = child_cpu_s([dtplan, *args])
        if done.returncode != 0:
            sys.exit(f"dtplan {' '.join(args)} failed (exit {done.returncode}):\n{done.stderr}")
        cpus.append(cpu)
    return cpus


def importtime_top(args: list[str], top: int) -> list[tuple[int, int, str]]:
    """(cumulative us, self us, module) of the `top` largest cumulative entries of -X importtime."""
    code = "import sys; from planner.cli import main; main(sys.argv[1:], prog_name='dtplan')"
    _, done = child_cpu_s([sys.executable, "-X", "importtime", "-c", code, *args])
    rows = []
    for line in done.stderr.splitlines():
        parts = line.split("|")
        if line.startswith("import time:") and len(parts) == 3 and parts[1].strip().isdigit():
            rows.append((int(parts[1]), int(parts[0].split(":")[1]), parts[2].rstrip()))
    return sorted(rows, reverse=True)[:top]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=15, help="fresh processes per command (default 15)")
    parser.add_argument("--top", type=int, default=20, help="-X importtime entries shown (default 20)")
    parser.add_argument("--compare", type=Path, metavar="TREE",
                        help="another checkout of dtplan: alternating pairs against it (module docstring)")
    parser.add_argument("--instructions", action="store_true",
                        help="count instructions under valgrind's callgrind instead (module docstring)")
    parser.add_argument("--breakdown", action="store_true",
                        help="the command's CPU (or instructions) split into its parts (module docstring)")
    parser.add_argument("--modules", action="store_true",
                        help="the instructions of each dtplan module the command loads (module docstring)")
    ns = parser.parse_args()
    if ns.compare is not None and not (ns.compare / "planner" / "cli" / "__init__.py").is_file():
        parser.error(f"--compare: {ns.compare} holds no planner/cli/__init__.py; give a checkout of dtplan")
    if ns.breakdown and ns.compare is not None:
        parser.error("--breakdown: measures this checkout only; not with --compare")
    if ns.instructions and shutil.which("valgrind") is None:
        parser.error("--instructions: valgrind is not installed")
    if ns.modules and (ns.compare is not None or ns.breakdown):
        parser.error("--modules: measures this checkout's modules only; not with --compare or --breakdown")
    if ns.modules and shutil.which("valgrind") is None:
        parser.error("--modules: valgrind is not installed")
    if ns.modules:
        module_instructions()
        return
    if ns.breakdown:
        breakdown(ns.runs, ns.instructions)
        return
    if ns.instructions:
        trees = {"this checkout": REPO, **({str(ns.compare): ns.compare.resolve()} if ns.compare else {})}
        instructions(trees)
        return
    if ns.compare is not None:
        compare(ns.compare, ns.runs)
        return
    bare = measure_bare(ns.runs)
    print(f"python -c pass: median {statistics.median(bare):.3f} s CPU, min {min(bare):.3f} s")
    for args in COMMANDS:
        warm_bytecode(args)
        load_before = os.getloadavg()[0]
        cpus = measure(args, ns.runs)
        load_after = os.getloadavg()[0]
        shown = " ".join(a if a != str(INSTANCE) else INSTANCE.relative_to(REPO).as_posix() for a in args)
        print(f"\ndtplan {shown}   ({ns.runs} runs, load average {load_before:.2f} -> {load_after:.2f})")
        print("  CPU s: " + " ".join(f"{c:.3f}" for c in cpus))
        print(f"  median {statistics.median(cpus):.3f} s, min {min(cpus):.3f} s  "
              f"(target {TARGET_CPU_S} s of CPU, start-up included)")
    print(f"\n-X importtime, top {ns.top} by cumulative time (dtplan {' '.join(COMMANDS[0][:1])}; "
          f"load average {os.getloadavg()[0]:.2f}):")
    print(f"{'cumulative ms':>14} {'self ms':>8}  module")
    for cumulative, own, name in importtime_top(COMMANDS[0], ns.top):
        print(f"{cumulative / 1e3:>14.1f} {own / 1e3:>8.1f}  {name}")


_FROM_TREE = ("import sys; sys.meta_path[:] = [f for f in sys.meta_path "
              "if not type(f).__module__.startswith('__editable__')]; sys.path.insert(0, sys.argv[1]); "
              "from planner.cli import main; main(sys.argv[2:], prog_name='dtplan')")


def compare(tree: Path, runs: int) -> None:
    """Alternating pairs: `dtplan solve INSTANCE` from this checkout and from `tree` (module docstring)."""
    sides = {"this checkout": REPO, str(tree): tree.resolve()}
    args = COMMANDS[0]
    for root in sides.values():
        warm = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        child_cpu_s([sys.executable, "-c", _FROM_TREE, str(root), *args], env=warm)
    cpus: dict[str, list[float]] = {name: [] for name in sides}
    load_before = os.getloadavg()
    for i in range(runs):
        order = list(sides.items()) if i % 2 == 0 else list(sides.items())[::-1]
        pair = {}
        for name, root in order:
            cpu, done = child_cpu_s([sys.executable, "-c", _FROM_TREE, str(root), *args])
            if done.returncode != 0:
                sys.exit(f"{name}: dtplan {' '.join(args)} failed (exit {done.returncode}):\n{done.stderr}")
            cpus[name].append(cpu)
            pair[name] = cpu
        print("  pair %2d: " % (i + 1) + "   ".join(f"{name} {pair[name]:.3f} s" for name in sides), flush=True)
    load_after = os.getloadavg()
    print(f"\ndtplan solve {INSTANCE.relative_to(REPO).as_posix()}, {runs} alternating pairs, CPU seconds "
          f"(load average {' '.join(f'{x:.2f}' for x in load_before)} -> {' '.join(f'{x:.2f}' for x in load_after)}):")
    for name in sides:
        print(f"  {name:>20}: median {statistics.median(cpus[name]):.3f} s, min {min(cpus[name]):.3f} s")
    mine, other = (statistics.median(v) for v in cpus.values())
    print(f"  this checkout / other: {mine / other:.3f} (median), "
          f"{min(cpus['this checkout']) / min(cpus[str(tree)]):.3f} (min); target {TARGET_CPU_S} s")


def instructions(trees: dict[str, Path]) -> None:
    """Instructions of `dtplan solve INSTANCE` from each tree, one callgrind run each (bytecode warmed first)."""
    args = COMMANDS[0]
    warm = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    counts = {}
    for name, root in trees.items():
        child_cpu_s([sys.executable, "-c", _FROM_TREE, str(root), *args], env=warm)
        done = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable,
                               "-c", _FROM_TREE, str(root), *args], capture_output=True, text=True, cwd=REPO)
        found = re.search(r"Collected\s*:\s*(\d+)", done.stderr)
        if done.returncode != 0 or not found:
            sys.exit(f"{name}: callgrind run failed (exit {done.returncode}):\n{done.stderr[-2000:]}")
        counts[name] = int(found.group(1))
        print(f"  {name:>20}: {counts[name] / 1e9:.3f} billion instructions", flush=True)
    bare = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, "-c",
                           "pass"], capture_output=True, text=True)
    found = re.search(r"Collected\s*:\s*(\d+)", bare.stderr)
    if found:
        print(f"  {'python -c pass':>20}: {int(found.group(1)) / 1e9:.3f} billion instructions")
    if len(counts) == 2:
        mine, other = counts.values()
        print(f"  this checkout / other: {mine / other:.3f}")


# The steps of --breakdown: each adds one part to the previous step's code (module docstring).
_SCHEMA_PYDANTIC = ("from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, "
                    "ValidationError, model_serializer, model_validator; from pydantic_core import PydanticCustomError")
_FIRST_MODEL = "type('M', (BaseModel,), dict(__annotations__=dict(x=int), __module__='__main__'))"
_STEPS = (
    ("python's start", "pass"),
    ("click", "import click"),
    ("the command line's package (planner.cli, without the commands)", "import planner.cli"),
    ("numpy", "import numpy"),
    ("pydantic: the names the schema imports, and what building a first model loads",
     f"{_SCHEMA_PYDANTIC}; {_FIRST_MODEL}"),
    ("the cost model's assumptions (planner.cost.assumptions)", "import planner.cost.assumptions"),
    ("the schema's modules and models", "import planner.schema.instance, planner.schema.plan"),
    ("the other modules the command loads", "{modules}"),
    ("the command (read, validate, solve, write)", "from planner.cli import main; main({args!r}, prog_name='dtplan')"),
)


def _loaded_modules(args: list[str]) -> list[str]:
    """The dtplan modules a run of `dtplan ARGS` loads, in the order they were first imported."""
    code = ("import sys; from planner.cli import main\ntry:\n    main(sys.argv[1:], prog_name='dtplan')\n"
            "except SystemExit:\n    pass\n"
            "sys.stderr.write('\\nMODULES ' + ' '.join(m for m in sys.modules if m.split('.')[0] == 'planner'))")
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=REPO)
    found = re.search(r"^MODULES (.*)$", done.stderr, re.MULTILINE)
    if not found:
        sys.exit(f"dtplan {' '.join(args)}: could not list its modules:\n{done.stderr[-2000:]}")
    return found.group(1).split()


def breakdown(runs: int, count_instructions: bool) -> None:
    """The parts of `dtplan solve INSTANCE`, each the growth of a fresh process as steps are added."""
    # imported here, not at the top: importing planner.cli sets its start-up environment in this
    # process, which the other modes must not pass on to a compared tree that does not set it
    from planner.cli import STARTUP_ENVIRONMENT
    from planner.cli.common import PROCESS_GC_THRESHOLD0
    args = COMMANDS[0]
    modules = _loaded_modules(args)
    collector = f"import gc; gc.set_threshold({PROCESS_GC_THRESHOLD0}, *gc.get_threshold()[1:])"
    codes, lines = [], [collector]
    for _, step in _STEPS:
        lines.append(step.replace("{modules}", "import " + ", ".join(modules)).replace("{args!r}", repr(args)))
        codes.append("\n".join(lines + ["gc.freeze()"]))     # the exit as the command's (process_collector)
    env = {**os.environ, **STARTUP_ENVIRONMENT}
    warm = {k: v for k, v in env.items() if k != "PYTHONDONTWRITEBYTECODE"}
    child_cpu_s([sys.executable, "-c", codes[-1]], env=warm)
    load_before = os.getloadavg()
    if count_instructions:
        totals = []
        for code in codes:
            done = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable,
                                   "-c", code], capture_output=True, text=True, cwd=REPO, env=env)
            found = re.search(r"Collected\s*:\s*(\d+)", done.stderr)
            if not found:
                sys.exit(f"callgrind run failed (exit {done.returncode}):\n{done.stderr[-2000:]}")
            totals.append(int(found.group(1)) / 1e9)
        unit, digits = "billion instructions", 3
    else:
        cpus: list[list[float]] = [[] for _ in codes]
        for i in range(runs):
            order = list(enumerate(codes))
            order = order[i % len(order):] + order[:i % len(order)]      # a rotation: no step always first
            for k, code in order:
                cpu, done = child_cpu_s([sys.executable, "-c", code], env=env)
                if done.returncode != 0:
                    sys.exit(f"step {_STEPS[k][0]!r} failed (exit {done.returncode}):\n{done.stderr[-2000:]}")
                cpus[k].append(cpu * 1e3)
        totals = [statistics.median(c) for c in cpus]
        unit, digits = f"ms of CPU, medians of {runs} rounds", 1
    load_after = os.getloadavg()
    print(f"dtplan solve {INSTANCE.relative_to(REPO).as_posix()}, in parts ({unit}; load average "
          f"{' '.join(f'{x:.2f}' for x in load_before)} -> {' '.join(f'{x:.2f}' for x in load_after)}):")
    previous = 0.0
    for (name, _), total in zip(_STEPS, totals):
        print(f"  {total - previous:>9.{digits}f}  {name}   (cumulative {total:.{digits}f})")
        previous = total
    print(f"  ({len(modules)} dtplan modules loaded by the command)")


def _callgrind_count(code: str, env: dict[str, str]) -> int:
    """Instructions of `python -c CODE` under callgrind (`Collected`)."""
    done = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, "-c", code],
                          capture_output=True, text=True, cwd=REPO, env=env)
    found = re.search(r"Collected\s*:\s*(\d+)", done.stderr)
    if done.returncode != 0 or not found:
        sys.exit(f"callgrind run failed (exit {done.returncode}):\n{done.stderr[-2000:]}")
    return int(found.group(1))


def module_instructions() -> None:
    """Each dtplan module the command loads, in load order: the growth of a process importing them one by one."""
    from planner.cli import STARTUP_ENVIRONMENT
    from planner.cli.common import PROCESS_GC_THRESHOLD0
    modules = _loaded_modules(COMMANDS[0])
    env = {**os.environ, **STARTUP_ENVIRONMENT}
    warm_bytecode(COMMANDS[0])                      # no module compiled inside a counted run
    lines = [f"import gc; gc.set_threshold({PROCESS_GC_THRESHOLD0}, *gc.get_threshold()[1:])", "import click, numpy",
             f"{_SCHEMA_PYDANTIC}; {_FIRST_MODEL}"]
    load_before = os.getloadavg()
    previous = _callgrind_count("\n".join(lines + ["gc.freeze()"]), env)
    print(f"  {previous / 1e9:.3f} billion instructions: python's start, click, numpy, pydantic and a first model",
          flush=True)
    rows = []
    for name in modules:
        lines.append(f"import {name}")
        total = _callgrind_count("\n".join(lines + ["gc.freeze()"]), env)
        rows.append((total - previous, name))
        print(f"  {(total - previous) / 1e6:>8.1f} M  {name}", flush=True)
        previous = total
    load_after = os.getloadavg()
    print(f"dtplan solve {INSTANCE.relative_to(REPO).as_posix()}: its {len(modules)} dtplan modules' imports, "
          f"{sum(r[0] for r in rows) / 1e9:.3f} billion instructions in all (load average "
          f"{' '.join(f'{x:.2f}' for x in load_before)} -> {' '.join(f'{x:.2f}' for x in load_after)}); largest first:")
    for count, name in sorted(rows, reverse=True)[:15]:
        print(f"  {count / 1e6:>8.1f} M  {name}")


def measure_bare(runs: int) -> list[float]:
    return [child_cpu_s([sys.executable, "-c", "pass"])[0] for _ in range(runs)]


if __name__ == "__main__":
    main()
