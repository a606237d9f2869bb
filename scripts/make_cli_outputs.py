"""Store the `--json` output of every shipped instance through every command (issue 26 item 2).

The guard of the refactorings: moving code between modules must change no output. For every
instance file under instances/ (the rule of tests/test_shipped_instances_cli.py: not an index, a
plan or a stored answer) this script runs `solve`, `feasible`, `compare` and, where a plan is
stored beside the instance, `evaluate` with `--json`; and every stored threshold question
(instances/thresholds/*.expected.json) through `thresholds --json`. Each output is written as it
was printed to tests/data/cli_outputs/<command>/<instance path, '/' as '__'>.json.

One field is not a function of the input: `solve_time_s`, the wall time of a solve (it appears in
`solve` and `compare` outputs). Its value is replaced by 0 before storing and comparing
(`normalise`).

Two more are functions of the input but not of it alone: they also depend on the machine's
floating-point library. numpy's vectorised exp, log and power differ in the last bits between
CPUs (an AVX-512 machine and an AVX2 one give values 1e-16 to 2e-14 apart, relative, on the
shipped instances: measured 2026-11-29, 25 of the 178 outputs), and the count of plans a search
scores (`evaluations`) moves with such last-bit differences where a bound meets the incumbent
to the last bit (by up to 2% on the shipped instances). So an output is the same as the stored
one when the two parse to the same JSON structure with every string, integer and boolean equal,
every float within a relative 1e-12 (`FLOAT_REL_TOL`) and the `evaluations` counters ignored
(`differences`); `--check` prints `same` for a byte-equal output and `same~` for one equal only
so, and a stored file is rewritten only when the output differs. A change of any answer (a plan,
a verdict, a figure beyond the twelfth digit) still shows.

The runs are in-process (click's CliRunner, the command objects the `dtplan` entry point calls),
as in tests/test_shipped_instances_cli.py and tests/test_threshold_instances.py, which compare
their own `--json` runs with these files (`stored_output`), so the guard adds no run to the suite.

    .venv/bin/python scripts/make_cli_outputs.py [--check] [--only SUBSTRING]

`--check` writes nothing: it lists every output that differs from the stored one (exit 1 if any;
`same~`: equal within the tolerance below, not byte for byte).
A change meant to change output (a model change) regenerates the files with this script and says
which changed.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
INSTANCES = ROOT / "instances"
STORE = ROOT / "tests" / "data" / "cli_outputs"

# The wall time of a solve, the one field that differs between two runs of the same input.
_WALL_TIME = re.compile(r'("solve_time_s": )-?[0-9][0-9.eE+-]*')


# Floats equal to this relative tolerance are the same (the machines' last-bit differences,
# measured at most 2.2e-14, are 45 times below it); see the module's docstring.
FLOAT_REL_TOL = 1e-12
# Counters of a search's work, not of its answer (the module's docstring).
WORK_COUNTERS = frozenset({"evaluations"})


def normalise(stdout: str) -> str:
    """The printed `--json` output with every `solve_time_s` value set to 0."""
    return _WALL_TIME.sub(r"\g<1>0", stdout)


def differences(produced: str, stored: str) -> list[str]:
    """Where the `--json` output `produced` and the stored one differ, one line per place ([] when
    the same): the same JSON structure, every string, integer and boolean equal, floats within
    FLOAT_REL_TOL relative, WORK_COUNTERS ignored."""
    return json_differences(json.loads(produced), json.loads(stored))


def json_differences(a, b, rel_tol: float = FLOAT_REL_TOL, ignore: frozenset = WORK_COUNTERS,
                     path: str = "") -> list[str]:
    """Where two parsed JSON values differ, one line per place: keys `ignore` skipped, floats within
    `rel_tol` relative, every other value equal and of the same type."""
    if isinstance(a, dict) and isinstance(b, dict):
        if set(a) != set(b):
            return [f"{path}: keys {sorted(set(a) ^ set(b))}"]
        return [m for k in a if k not in ignore for m in json_differences(a[k], b[k], rel_tol, ignore, f"{path}.{k}")]
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{path}: length {len(a)} != {len(b)}"]
        return [m for i, (x, y) in enumerate(zip(a, b)) for m in json_differences(x, y, rel_tol, ignore, f"{path}[{i}]")]
    if isinstance(a, float) or isinstance(b, float):
        numbers = all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in (a, b))
        return [] if numbers and math.isclose(a, b, rel_tol=rel_tol, abs_tol=0.0) else [f"{path}: {a!r} != {b!r}"]
    return [] if a == b and type(a) is type(b) else [f"{path}: {a!r} != {b!r}"]


def _is_instance(path: Path) -> bool:
    return not (path.name == "index.json" or path.name.endswith((".plan.json", ".expected.json")))


def instance_files() -> list[Path]:
    """Every shipped instance file, sorted."""
    return sorted(p for p in INSTANCES.rglob("*.json") if _is_instance(p))


def threshold_questions() -> list[Path]:
    """Every stored threshold question, sorted."""
    return sorted((INSTANCES / "thresholds").glob("*.expected.json"))


def stored_path(command: str, path: Path) -> Path:
    """Where the `--json` output of `command` on the instance (or threshold question) `path` is stored."""
    name = str(path.relative_to(INSTANCES)).removesuffix(".expected.json").removesuffix(".json")
    return STORE / command / (name.replace("/", "__") + ".json")


def stored_output(command: str, path: Path) -> str:
    """The stored, normalised `--json` output of `command` on `path`."""
    return stored_path(command, path).read_text()


def runs() -> list[tuple[str, Path, list[str]]]:
    """Every (command, instance or question file, argument list) whose `--json` output is stored."""
    out = []
    for path in instance_files():
        out += [("solve", path, ["solve", str(path)]), ("feasible", path, ["feasible", str(path)])]
        plan = path.with_name(path.name.replace(".json", ".plan.json"))
        if plan.exists():
            out.append(("evaluate", path, ["evaluate", str(path), str(plan)]))
        out.append(("compare", path, ["compare", str(path)]))
    for stored in threshold_questions():
        question = json.loads(stored.read_text())
        out.append(("thresholds", stored, ["thresholds", str(INSTANCES / question["instance"]), *question["args"]]))
    return out


def run_json(args: list[str]) -> str:
    """The normalised stdout of `dtplan ARGS --json`, run in-process."""
    from click.testing import CliRunner

    from planner.cli import main

    result = CliRunner().invoke(main, [*args, "--json"])
    if result.exit_code not in (0, 1):
        raise RuntimeError(f"dtplan {' '.join(args)} --json: exit {result.exit_code}\n{result.output[-2000:]}")
    return normalise(result.stdout)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="write nothing; list the outputs that differ")
    parser.add_argument("--only", default="", help="only the runs whose command/instance contains this text")
    opts = parser.parse_args()
    os.environ.setdefault("DTPLAN_QUIET", "1")  # no progress lines (planner/cli/progress.py)
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    differ = []
    for command, path, args in runs():
        target = stored_path(command, path)
        if opts.only not in f"{command}/{path.relative_to(INSTANCES)}":
            continue
        start = time.perf_counter()
        text = run_json(args)
        wall = time.perf_counter() - start
        exact = target.exists() and target.read_text() == text
        same = exact or (target.exists() and differences(text, target.read_text()) == [])
        label = "same" if exact else "same~" if same else "DIFFERS"
        print(f"{label:8s} {wall:6.2f} s  {target.relative_to(STORE)}", flush=True)
        if not same:
            differ.append(target)
            if not opts.check:
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(text)
    if opts.check and differ:
        print(f"{len(differ)} outputs differ from the stored ones", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
