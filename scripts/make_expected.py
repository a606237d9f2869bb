"""Write the expected result beside each instance of an instance library (default instances/miri/).

The library's `index.json` lists each instance with the command that answers it (`solve` or
`feasible`) and the objective. For each entry this script answers the instance with the
planner and writes `<name>.expected.json`:

- solve: status, objective, objective value, plan, time to target (days; None for max_compute,
  whose run lasts the whole duration limit), nodes, cost (USD);
- feasible: the verdict, the plan and its time, nodes and cost when feasible, the limits that
  cannot be met together when not, the smallest single fixes (limit, fields, time to target,
  plan) and the limits no change of which alone suffices.

It prints one line per instance with the answer and the wall time of the answer, so that
"every instance answers in seconds" is measured, not assumed. tests/test_instances.py
recomputes every answer with `expected_result` and compares it with the stored file; only
this script writes the files.

    .venv/bin/python scripts/make_expected.py [LIBRARY_DIR] [--check]

`--check` writes nothing: it reports the entries whose answer differs from the stored one.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from planner.cost.duration import SECONDS_PER_DAY  # noqa: E402
from planner.questions.feasible import feasible  # noqa: E402
from planner.schema.instance import parse_instance  # noqa: E402
from planner.solve import SolveResult, solve  # noqa: E402

DEFAULT_LIBRARY = ROOT / "instances" / "miri"
COMMANDS = ("solve", "feasible")


def load_index(library: Path) -> list[dict[str, str]]:
    """The entries of `library/index.json`, checked: name, command (solve|feasible), objective."""
    entries = json.loads((library / "index.json").read_text())["instances"]
    for e in entries:
        if set(e) != {"name", "command", "objective"} or e["command"] not in COMMANDS:
            raise ValueError(f"{library / 'index.json'}: bad entry {e}")
        if e["command"] == "feasible" and e["objective"] != "min_time":
            raise ValueError(f"{e['name']}: feasible answers min_time, got objective {e['objective']}")
    return entries


def _finite(x: float | None) -> float | None:
    return x if x is not None and math.isfinite(x) else None


def _days(seconds: float | None) -> float | None:
    seconds = _finite(seconds)
    return None if seconds is None else seconds / SECONDS_PER_DAY


def _plan_figures(result: SolveResult) -> dict[str, Any]:
    """The plan and its time to target (days), nodes and cost, from the re-scored optimum.

    With max_compute the run lasts the whole duration limit and there is no target: the time
    to target is then None (the evaluator's figure would be the time to its default target)."""
    if result.plan is None:
        return {"plan": None, "time_to_target_days": None, "nodes": None, "cost_usd": None}
    values = result.evaluation.to_dict()["values"]
    days = None if result.objective.maximise else _days(values["time_to_target_s"])
    return {"plan": result.plan.model_dump(), "time_to_target_days": days,
            "nodes": result.plan.nodes, "cost_usd": values["cost_usd"]}


def expected_result(library: Path, entry: dict[str, str]) -> dict[str, Any]:
    """The answer to one index entry, as stored in `<name>.expected.json` (JSON-ready)."""
    path = library / f"{entry['name']}.json"
    raw = json.loads(path.read_text())
    out: dict[str, Any] = {"name": entry["name"], "command": entry["command"], "objective": entry["objective"]}
    if entry["command"] == "solve":
        result = solve(parse_instance(raw, str(path)), objective=entry["objective"])
        out |= {"status": result.status, "objective_value": _finite(result.objective_value),
                "compute_kind": result.compute_kind} | _plan_figures(result)
        return out
    answer = feasible(raw, str(path))
    out |= {"verdict": "feasible" if answer.feasible else "infeasible"} | _plan_figures(answer.result)
    out["binding"] = None if answer.feasible else answer.result.infeasibility
    out["fixes"] = [{"limit": f.limit, "fields": f.fields, "current": f.current,
                     "time_to_target_days": _days(f.result.objective_value),
                     "plan": f.result.plan.model_dump() if f.result.plan else None} for f in answer.fixes]
    out["no_fix"] = answer.no_fix
    return out


def expected_path(library: Path, name: str) -> Path:
    return library / f"{name}.expected.json"


def summary(r: dict[str, Any]) -> str:
    """One line: the answer in short."""
    p = r["plan"]
    plan = "" if p is None else f"{p['mode']} {p['precision']} H={p['inner_steps']} Cr={p['compression']:g}"
    days = "" if r["time_to_target_days"] is None else f"{r['time_to_target_days']:.1f} d"
    if r["command"] == "solve":
        value = r["objective_value"]
        head = f"{r['status']} {r['objective']}={value:.4g}" if value is not None else r["status"]
        return f"{head}  {days}  {r['nodes']} nodes  {plan}"
    if r["verdict"] == "feasible":
        return f"feasible  {days}  {r['nodes']} nodes  {plan}"
    fixes = "; ".join(f"{f['limit']}: " + ", ".join(f"{k}={json.dumps(v, separators=(',', ':'))}"
                                                     for k, v in f["fields"].items())
                      for f in r["fixes"])
    return f"infeasible  fixes: {fixes or 'none'}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("library", nargs="?", type=Path, default=DEFAULT_LIBRARY)
    ap.add_argument("--check", action="store_true", help="write nothing; report entries that differ")
    args = ap.parse_args(argv)
    entries = load_index(args.library)
    total, slowest, differ = 0.0, (0.0, ""), []
    print(f"{'instance':36} {'command':8} {'seconds':>7}  answer")
    for entry in entries:
        start = time.perf_counter()
        result = expected_result(args.library, entry)
        seconds = time.perf_counter() - start
        total += seconds
        slowest = max(slowest, (seconds, entry["name"]))
        text = json.dumps(result, indent=1) + "\n"
        target = expected_path(args.library, entry["name"])
        if args.check:
            if not target.exists() or json.loads(target.read_text()) != json.loads(text):
                differ.append(entry["name"])
        else:
            target.write_text(text)
        print(f"{entry['name']:36} {entry['command']:8} {seconds:7.2f}  {summary(result)}")
    print(f"{len(entries)} instances, {total:.1f} s in all; slowest {slowest[1]} ({slowest[0]:.2f} s)")
    if args.check:
        print("differ from the stored results: " + (", ".join(differ) or "none"))
        return 1 if differ else 0
    print(f"wrote {len(entries)} expected results to {args.library}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
