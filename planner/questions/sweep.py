"""Sweeps: one instance answered at many points of its input space (`dtplan sweep`).

A sweep varies instance fields named by dotted JSON paths (`network.wan.up_mbps`,
`fleet.nodes`, `assumptions.constants.mfu`, `assumptions.scenario`, ...):

- a grid: every combination of the listed values (`--grid FIELD=v1,v2,...`, the first
  field varying slowest);
- Monte Carlo: `samples` draws from distributions (`--vary FIELD=DIST(...)`, see
  `Distribution`); point i's draws come from `numpy.random.default_rng([seed, i])`, so
  they depend only on the seed and the point's index (a resumed or parallel sweep draws
  the same values);
- both: every grid point repeated `samples` times with fresh draws.

Each point is the base instance's raw JSON with the fields set, validated again by
`parse_instance` (never `model_copy`, which skips validation), then answered by a full
solve (`command="solve"`), the feasibility verdict and smallest fixes
(`"feasible"`), a fixed plan's evaluation (`"evaluate"`), or the reachability question
of `dtplan feasible --monte-carlo` (`"reach"`: the fastest plan with the duration limit
lifted, its days, and whether they fit the limit). A point whose instance is invalid or
whose answer raises is a row with status `error` and the message: never lost.

Points run in a pool of processes that stays up for the whole sweep (chunks of points
per task), in this process (`workers=1`), or on a Dask distributed cluster
(`scheduler=ADDRESS`). Rows are written to the output as they arrive (JSON Lines, CSV;
Parquet through a JSON Lines journal beside it), so a killed sweep resumes from its
output: finished points (same index and same key, a hash of the point's inputs and of
the question) are skipped, and none is computed twice.
"""

from __future__ import annotations

import copy
import csv
import hashlib
import io
import itertools
import json
import math
import os
import re
import time
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from planner.present.frames import PLAN_FIELDS, _plan as _plan_columns
from planner.schema.errors import InputError, Problem
from planner.schema.instance import Instance, parse_instance
from planner.schema.strict import _field_paths, _is_model, _unwrap

COMMANDS = ("solve", "feasible", "evaluate", "reach")
OUTPUT_SUFFIXES = (".parquet", ".csv", ".jsonl")
MAX_CHUNK = 50                     # points per task at most (progress and load balance)
CHUNKS_PER_WORKER = 4
UNLIMITED_DAYS = 1e6               # "reach": the duration limit lifted (as feasible's duration fix)
RESULT_COLUMNS = {
    "solve": ("objective", "objective_value", "best_bound", "gap", "time_to_target_days", "cost_usd",
              "model_params", "bottleneck") + PLAN_FIELDS + ("infeasibility",),
    "feasible": ("feasible", "time_to_target_days", "cost_usd", "bottleneck") + PLAN_FIELDS + ("binding", "fixes"),
    "evaluate": ("feasible", "time_to_target_days", "cost_usd", "bottleneck", "violations"),
    "reach": ("reachable", "days", "limit_days", "cost_usd") + PLAN_FIELDS + ("infeasibility",),
}
CONNECT_TIMEOUT_S = 20            # --scheduler: seconds to reach the Dask scheduler
TIME_COLUMN = "time_s"             # wall time of the point: the one column two runs do not share


# -- fields ---------------------------------------------------------------------------


def _leaf(path: str) -> tuple[Any, str | None]:
    """(the annotation of the field at `path`, None) or (None, what is wrong with the path)."""
    tp: Any = Instance
    parts = path.split(".")
    for i, part in enumerate(parts):
        inner = _unwrap(tp)
        if _is_model(inner):
            if part not in inner.model_fields:
                prefix = ".".join(parts[:i])
                known = [p for p in _field_paths(Instance) if p.startswith(prefix + ".")] if prefix \
                    else list(Instance.model_fields)
                from planner.schema.strict import did_you_mean
                return None, f"unknown field {part!r}{did_you_mean('.'.join(parts[:i + 1]), known)}"
            tp = inner.model_fields[part].annotation
        elif path.startswith("assumptions.constants.") and i == 2 and len(parts) == 3:
            from planner.cost.assumptions import SETTABLE_FIELDS
            from planner.schema.strict import did_you_mean
            if part not in SETTABLE_FIELDS or part == "profile":
                return None, f"unknown assumption constant{did_you_mean(part, SETTABLE_FIELDS)}"
            from planner.cost.assumptions import Assumptions
            return type(getattr(Assumptions(), part)), None
        else:
            return None, f"{'.'.join(parts[:i])} has no sub-fields"
    return tp, None


def check_field(path: str) -> Problem | None:
    """A Problem naming `path` if it is not a field of the instance schema a sweep can set.

    `a+b` (linked fields) sets every listed field to the same value (e.g.
    `network.wan.up_mbps+network.wan.down_mbps`); a section (`network.wan`) takes an object."""
    if not isinstance(path, str) or not re.fullmatch(
            r"[a-z_][a-z0-9_]*(\.[a-z_0-9][A-Za-z0-9_]*)*(\+[a-z_][a-z0-9_]*(\.[a-z_0-9][A-Za-z0-9_]*)*)*", path):
        return Problem(str(path), "not a dotted field path (e.g. network.wan.up_mbps; a+b for linked fields)")
    for part in path.split("+"):
        _, problem = _leaf(part)
        if problem:
            return Problem(path, problem if "+" not in path else f"{part}: {problem}")
    return None


def is_integer_field(path: str) -> bool:
    """Whether the schema wants a whole number at `path` (Monte Carlo draws are then rounded)."""
    return any(_unwrap(_leaf(p)[0]) is int for p in path.split("+"))


def set_field(raw: dict, path: str, value: Any) -> None:
    """Set `path` (or each of linked `a+b`) in raw instance data in place, creating sections."""
    for one in path.split("+"):
        node = raw
        keys = one.split(".")
        for k in keys[:-1]:
            nxt = node.get(k)
            if not isinstance(nxt, dict):
                nxt = node[k] = {}
            node = nxt
        node[keys[-1]] = copy.deepcopy(value)


def with_fields(raw: dict, inputs: dict[str, Any]) -> dict:
    data = copy.deepcopy(raw)
    for path, value in inputs.items():
        set_field(data, path, value)
    return data


def value_problems(raw: dict, path: str, value: Any, what: str) -> list[Problem]:
    """The schema's problems with `value` at `path` alone (other fields as in `raw`)."""
    try:
        parse_instance(with_fields(raw, {path: value}))
    except InputError as err:
        parts = path.split("+")
        return [Problem(path, f"{what} {json.dumps(value)}: " + (f"{p.path}: " if p.path != path else "") + p.message)
                for p in err.problems
                if any(p.path == q or p.path.startswith((q + ".", q + "[")) for q in parts)]
    return []


def parse_value(text: str) -> Any:
    """A value as written on the command line: JSON (100, 1e3, true, "x") or else a string."""
    text = text.strip()
    try:
        return json.loads(text)
    except ValueError:
        return text


def parse_grid(spec: str) -> tuple[str, list[Any]]:
    """'FIELD=v1,v2,...' -> (FIELD, [values]); InputError naming --grid when malformed."""
    path, sep, values = spec.partition("=")
    if not sep or not path.strip() or not values.strip():
        raise InputError([Problem("--grid", f"must be FIELD=v1,v2,..., got {spec!r}")])
    return path.strip(), [parse_value(v) for v in _split_args(values)]


def _split_args(text: str) -> list[str]:
    """Split on commas outside brackets and quotes."""
    out, depth, quote, cur = [], 0, None, ""
    for ch in text:
        if quote:
            quote = None if ch == quote else quote
        elif ch in "\"'":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            out.append(cur)
            cur = ""
            continue
        cur += ch
    out.append(cur)
    return [s.strip() for s in out if s.strip()]


# -- distributions ---------------------------------------------------------------------


DISTRIBUTIONS = {
    "normal": ("mean", "sd"),
    "lognormal": ("median", "sigma"),
    "uniform": ("low", "high"),
    "loguniform": ("low", "high"),
    "triangular": ("low", "mode", "high"),
    "choice": None,
}
DISTRIBUTION_HELP = ("normal(mean, sd); lognormal(median, sigma): exp(N(ln median, sigma)); uniform(low, high); "
                     "loguniform(low, high): exp(U(ln low, ln high)); triangular(low, mode, high); "
                     "choice(a, b, ...): one of the values, equally likely")


@dataclass(frozen=True)
class Distribution:
    """A distribution of one field's value (see DISTRIBUTION_HELP), optionally truncated to
    [low, high] by redrawing (`bounds`: a published interval the draws must stay inside)."""

    kind: str
    args: tuple
    bounds: tuple[float, float] | None = None

    @classmethod
    def parse(cls, text: str, where: str = "--vary") -> "Distribution":
        m = re.fullmatch(r"\s*([a-z]+)\s*\((.*)\)\s*", text)
        if not m or m.group(1) not in DISTRIBUTIONS:
            raise InputError([Problem(where, f"must be DIST(...) with DIST one of {', '.join(DISTRIBUTIONS)}, "
                                             f"got {text!r}")])
        kind = m.group(1)
        args = tuple(parse_value(a) for a in _split_args(m.group(2)))
        dist = cls(kind, args)
        problem = dist.problem()
        if problem:
            raise InputError([Problem(where, f"{text.strip()}: {problem}")])
        return dist

    def problem(self) -> str | None:
        names = DISTRIBUTIONS[self.kind]
        if names is None:
            return None if self.args else "give at least one value"
        if len(self.args) != len(names):
            return f"takes {len(names)} numbers ({', '.join(names)}), got {len(self.args)}"
        if not all(isinstance(a, (int, float)) and not isinstance(a, bool) and math.isfinite(a) for a in self.args):
            return f"takes numbers ({', '.join(names)})"
        a = [float(x) for x in self.args]
        if self.kind in ("normal", "lognormal") and a[1] < 0:
            return f"{names[1]} must be >= 0"
        if self.kind == "lognormal" and a[0] <= 0:
            return "median must be > 0"
        if self.kind in ("uniform", "loguniform") and not a[0] <= a[1]:
            return "low must be <= high"
        if self.kind == "loguniform" and a[0] <= 0:
            return "low must be > 0"
        if self.kind == "triangular" and not (a[0] <= a[1] <= a[2] and a[0] < a[2]):
            return "needs low <= mode <= high and low < high"
        return None

    def support(self) -> list[Any]:
        """Values that bound the draws (for checking them against the schema before sampling)."""
        if self.kind == "choice":
            return list(self.args)
        if self.bounds is not None:
            return list(self.bounds)
        if self.kind in ("uniform", "loguniform"):
            return [self.args[0], self.args[1]]
        if self.kind == "triangular":
            return [self.args[0], self.args[2]]
        if self.kind == "lognormal":
            return [self.args[0]]
        return [self.args[0]]

    def draw(self, rng: np.random.Generator) -> Any:
        """One value; redrawn until inside `bounds` (at most 10,000 tries, then clipped)."""
        for _ in range(10_000):
            x = self._draw(rng)
            if self.bounds is None or self.kind == "choice" or self.bounds[0] <= x <= self.bounds[1]:
                return x
        return min(max(x, self.bounds[0]), self.bounds[1])

    def _draw(self, rng: np.random.Generator) -> Any:
        a = self.args
        if self.kind == "choice":
            return a[int(rng.integers(len(a)))]
        if self.kind == "normal":
            return float(rng.normal(a[0], a[1]))
        if self.kind == "lognormal":
            return float(math.exp(rng.normal(math.log(a[0]), a[1])))
        if self.kind == "uniform":
            return float(rng.uniform(a[0], a[1]))
        if self.kind == "loguniform":
            return float(math.exp(rng.uniform(math.log(a[0]), math.log(a[1]))))
        return float(rng.triangular(a[0], a[1], a[2]))

    def __str__(self) -> str:
        text = f"{self.kind}({', '.join(json.dumps(x) for x in self.args)})"
        return text + (f" in [{self.bounds[0]:g}, {self.bounds[1]:g}]" if self.bounds else "")


def parse_vary(spec: str) -> tuple[str, Distribution]:
    """'FIELD=DIST(...)' -> (FIELD, Distribution)."""
    path, sep, dist = spec.partition("=")
    if not sep or not path.strip():
        raise InputError([Problem("--vary", f"must be FIELD=DIST(...), got {spec!r}")])
    return path.strip(), Distribution.parse(dist, f"--vary {path.strip()}")


# -- the sweep ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Point:
    """One point: its index, the fields it sets and their values, and its key (a hash of both
    and of the question) that a resumed sweep matches against its output."""

    index: int
    inputs: dict[str, Any]
    key: str


@dataclass
class SweepSpec:
    """What to sweep: a base instance (raw JSON), the fields to vary and the question asked."""

    base: dict
    source: str = "<instance>"
    grid: dict[str, list[Any]] = field(default_factory=dict)
    vary: dict[str, Distribution] = field(default_factory=dict)
    samples: int = 0
    seed: int = 0
    command: str = "solve"
    objective: str | None = None
    solver: str = "bnb"
    time_limit_s: float | None = None
    plan: dict | None = None

    def check(self) -> None:
        """Every field path, grid value, distribution and option checked; one InputError for all."""
        problems: list[Problem] = []
        try:
            parse_instance(copy.deepcopy(self.base), self.source)
        except InputError as err:
            raise InputError(err.problems, self.source) from None
        if self.command not in COMMANDS:
            problems.append(Problem("--command", f"must be one of {', '.join(COMMANDS)}, got {self.command!r}"))
        if self.command == "evaluate" and self.plan is None:
            problems.append(Problem("--plan", "required with --command evaluate"))
        if self.plan is not None:
            from planner.schema.plan import parse_plan
            try:
                parse_plan(copy.deepcopy(self.plan), "--plan")
            except InputError as err:
                problems += [Problem(f"--plan: {p.path}", p.message) for p in err.problems]
        from planner.solve import SOLVERS, SUPPORTED_OBJECTIVES
        if self.objective is not None and self.objective not in SUPPORTED_OBJECTIVES:
            problems.append(Problem("--objective", f"must be one of {', '.join(SUPPORTED_OBJECTIVES)}, "
                                                   f"got {self.objective!r}"))
        if self.solver not in SOLVERS:
            problems.append(Problem("--solver", f"must be one of {', '.join(SOLVERS)}, got {self.solver!r}"))
        if self.vary and self.samples < 1:
            problems.append(Problem("--monte-carlo", "give the number of draws (>= 1) with --vary"))
        if self.samples and not self.vary:
            problems.append(Problem("--vary", "give at least one FIELD=DIST(...) with --monte-carlo"))
        for path in set(self.grid) & set(self.vary):
            problems.append(Problem(path, "both in --grid and in --vary"))
        for path, values in self.grid.items():
            bad = check_field(path)
            if bad:
                problems.append(bad)
                continue
            if not values:
                problems.append(Problem(path, "--grid: give at least one value"))
            for v in values:
                problems += value_problems(self.base, path, v, "--grid value")
        for path, dist in self.vary.items():
            bad = check_field(path)
            if bad:
                problems.append(bad)
                continue
            for v in dist.support():
                v = round(v) if is_integer_field(path) and isinstance(v, float) else v
                problems += value_problems(self.base, path, v, f"--vary {dist}: value")
        if not self.grid and not self.vary:
            problems.append(Problem("--grid", "give at least one --grid FIELD=v1,v2,... or --vary FIELD=DIST(...)"))
        if problems:
            raise InputError(problems)

    def fingerprint(self) -> str:
        """A hash of the question (base instance, command, objective, solver, limit, plan)."""
        data = {"base": self.base, "command": self.command, "objective": self.objective, "solver": self.solver,
                "time_limit_s": self.time_limit_s, "plan": self.plan}
        return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()

    def points(self) -> list[Point]:
        """Every point in order: grid combinations (first field slowest), each `samples` times."""
        fp = self.fingerprint()
        grid_points = [dict(zip(self.grid, combo)) for combo in itertools.product(*self.grid.values())] \
            if self.grid else [{}]
        reps = max(self.samples, 1) if self.vary else 1
        out = []
        integer = {p: is_integer_field(p) for p in self.vary}
        for g, gp in enumerate(grid_points):
            for r in range(reps):
                i = g * reps + r
                inputs = dict(gp)
                if self.vary:
                    rng = np.random.default_rng([self.seed, i])
                    for path, dist in self.vary.items():
                        v = dist.draw(rng)
                        inputs[path] = int(round(v)) if integer[path] and isinstance(v, float) else v
                key = hashlib.sha256(json.dumps([fp, i, inputs], sort_keys=True, default=str).encode()).hexdigest()
                out.append(Point(i, inputs, key[:16]))
        return out

    def columns(self) -> list[str]:
        return (["index", "key"] + list(self.grid) + list(self.vary) + ["status"]
                + list(RESULT_COLUMNS[self.command]) + [TIME_COLUMN, "error"])

    def payload(self) -> dict:
        """What a worker needs to answer points (plain data, cheap to send)."""
        return {"base": self.base, "source": self.source, "command": self.command, "objective": self.objective,
                "solver": self.solver, "time_limit_s": self.time_limit_s, "plan": self.plan,
                "columns": self.columns()}


def _answer(payload: dict, instance: Instance, data: dict) -> dict[str, Any]:
    from planner.cost.duration import SECONDS_PER_DAY
    command = payload["command"]
    if command == "solve":
        from planner.solve import solve
        r = solve(instance, objective=payload["objective"], solver=payload["solver"],
                  time_limit_s=payload["time_limit_s"])
        e = r.evaluation
        return {"status": r.status, "objective": r.objective, "objective_value": r.objective_value,
                "best_bound": r.best_bound, "gap": r.gap,
                "time_to_target_days": e.values["time_to_target_s"] / SECONDS_PER_DAY if e else None,
                "cost_usd": e.values["cost_usd"] if e else None, "model_params": r.model_params,
                "bottleneck": e.bottleneck if e else None, **_plan_columns(r.plan),
                "infeasibility": "; ".join(r.infeasibility) or None}
    if command == "feasible":
        from planner.questions.feasible import feasible
        f = feasible(data, payload["source"])
        e = f.result.evaluation
        return {"status": "feasible" if f.feasible else "infeasible", "feasible": f.feasible,
                "time_to_target_days": e.values["time_to_target_s"] / SECONDS_PER_DAY if e else None,
                "cost_usd": e.values["cost_usd"] if e else None, "bottleneck": e.bottleneck if e else None,
                **_plan_columns(f.result.plan),
                "binding": "; ".join(f.result.infeasibility if not f.feasible else f.result.binding) or None,
                "fixes": "; ".join(x.summary for x in f.fixes) or None}
    if command == "evaluate":
        from planner.evaluate import evaluate
        from planner.schema.plan import check_plan_against, parse_plan
        plan = parse_plan(payload["plan"], "--plan")
        problems = check_plan_against(instance, plan)
        if problems:
            raise InputError(problems, "--plan")
        e = evaluate(instance, plan)
        return {"status": "feasible" if e.feasible else "infeasible", "feasible": e.feasible,
                "time_to_target_days": e.values["time_to_target_s"] / SECONDS_PER_DAY,
                "cost_usd": e.values["cost_usd"], "bottleneck": e.bottleneck,
                "violations": "; ".join(e.violations) or None}
    # reach: the fastest plan with the duration limit lifted; reachable when it fits the limit
    from planner.evaluate import max_days
    from planner.solve import solve
    limit_days = max_days(instance)[0]
    lifted = copy.deepcopy(data)
    set_field(lifted, "limits.max_days", UNLIMITED_DAYS)
    r = solve(parse_instance(lifted, payload["source"]), objective="min_time", solver=payload["solver"])
    days = r.objective_value / SECONDS_PER_DAY if r.objective_value is not None else None
    reachable = days is not None and r.status == "optimal" and days <= limit_days
    return {"status": "reachable" if reachable else ("unreachable" if r.status != "time_limit" else "time_limit"),
            "reachable": reachable, "days": days, "limit_days": limit_days,
            "cost_usd": r.evaluation.values["cost_usd"] if r.evaluation else None, **_plan_columns(r.plan),
            "infeasibility": "; ".join(r.infeasibility) or None}


def run_point(payload: dict, point: Point) -> dict[str, Any]:
    """The row of one point: its inputs, status, answer, wall time, and the error if any."""
    start = time.perf_counter()
    row: dict[str, Any] = {c: None for c in payload["columns"]}
    row.update(index=point.index, key=point.key, **point.inputs)
    try:
        data = with_fields(payload["base"], point.inputs)
        instance = parse_instance(data, payload["source"])
        row.update(_answer(payload, instance, data))
    except InputError as err:
        row.update(status="error", error=" | ".join(str(p) for p in err.problems))
    except Exception as err:  # noqa: BLE001 - a failed point is a row with its error, never a lost sweep
        row.update(status="error", error=f"{type(err).__name__}: {err}".replace("\n", " | "))
    row[TIME_COLUMN] = time.perf_counter() - start
    return {c: row.get(c) for c in payload["columns"]}


def run_chunk(payload: dict, points: Sequence[Point]) -> list[dict[str, Any]]:
    """Rows of several points (one task of a pool or of a Dask cluster)."""
    return [run_point(payload, p) for p in points]


# -- output -------------------------------------------------------------------------------


def output_format(path: str | Path) -> str:
    suffix = Path(path).suffix.lower()
    if suffix not in OUTPUT_SUFFIXES:
        raise InputError([Problem("-o", f"{path}: unknown output format {suffix or '(none)'!r}; "
                                        f"use {', '.join(OUTPUT_SUFFIXES)}")])
    return suffix[1:]


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value)


def _uncell(text: str) -> Any:
    if text == "":
        return None
    try:
        return json.loads(text)
    except ValueError:
        return text


class RowSink:
    """Rows appended to the output as they arrive; the rows a previous run left there, read back.

    JSON Lines and CSV are appended to in place (one line a row; a line cut by a kill is
    dropped on resume). Parquet is written whole at the end (atomically), its rows kept
    meanwhile in a JSON Lines journal `<FILE>.partial.jsonl` beside it.
    """

    def __init__(self, path: str | Path, columns: list[str]):
        from planner.present.output import check_writable
        self.path = check_writable(path)
        self.format = output_format(path)
        self.columns = columns
        self.journal = self.path.with_name(self.path.name + ".partial.jsonl") if self.format == "parquet" \
            else self.path
        self.fh = None

    def existing(self) -> list[dict[str, Any]]:
        """Rows already written (complete lines only; a partial last line is cut off)."""
        rows = []
        if self.format == "parquet" and self.path.exists():
            import pandas as pd
            frame = pd.read_parquet(self.path)
            rows += [{k: _py(v) for k, v in r.items()} for r in frame.to_dict("records")]
        if not self.journal.exists():
            return rows
        raw = self.journal.read_bytes()
        complete = raw[:raw.rfind(b"\n") + 1]
        if len(complete) != len(raw):
            with open(self.journal, "r+b") as fh:
                fh.truncate(len(complete))
        text = complete.decode("utf-8")
        if self.format == "csv":
            reader = csv.reader(io.StringIO(text))
            header = next(reader, None)
            if header is not None and header != self.columns:
                raise InputError([Problem("-o", f"{self.path} holds a sweep with other columns "
                                                f"({', '.join(header)}); choose another output")])
            rows += [dict(zip(self.columns, map(_uncell, r))) for r in reader if len(r) == len(self.columns)]
        else:
            for line in text.splitlines():
                if line.strip():
                    rows.append(json.loads(line))
        return rows

    def append(self, rows: Iterable[dict[str, Any]]) -> None:
        if self.fh is None:
            new = not self.journal.exists() or self.journal.stat().st_size == 0
            self.fh = open(self.journal, "a", encoding="utf-8", newline="")
            if new and self.format == "csv":
                csv.writer(self.fh).writerow(self.columns)
        if self.format == "csv":
            w = csv.writer(self.fh)
            for r in rows:
                w.writerow([_cell(r.get(c)) for c in self.columns])
        else:
            for r in rows:
                self.fh.write(json.dumps({c: r.get(c) for c in self.columns}, default=_json_default) + "\n")
        self.fh.flush()
        os.fsync(self.fh.fileno())

    def finish(self, rows: list[dict[str, Any]]) -> None:
        """Rewrite the output whole, sorted by point index (atomically); drop the journal."""
        from planner.present.output import atomic_path, write_text
        if self.fh is not None:
            self.fh.close()
            self.fh = None
        if self.format == "parquet":
            with atomic_path(self.path) as tmp:
                frame_of(rows, self.columns).to_parquet(tmp, index=False)
            if self.journal.exists():
                self.journal.unlink()
        elif self.format == "csv":
            buf = io.StringIO()
            w = csv.writer(buf)
            w.writerow(self.columns)
            for r in rows:
                w.writerow([_cell(r.get(c)) for c in self.columns])
            write_text(self.path, buf.getvalue())
        else:
            write_text(self.path, "".join(json.dumps({c: r.get(c) for c in self.columns}, default=_json_default)
                                          + "\n" for r in rows))

    def close(self) -> None:
        if self.fh is not None:
            self.fh.close()
            self.fh = None


def _json_default(value: Any) -> Any:
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (np.floating,)):
        return float(value)
    if isinstance(value, np.bool_):
        return bool(value)
    return str(value)


def _py(value: Any) -> Any:
    """A pandas/numpy cell back to plain Python (NaN -> None)."""
    if isinstance(value, np.ndarray):
        return [_py(v) for v in value.tolist()]
    if isinstance(value, dict):
        return {k: _py(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_py(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and value != value:
        return None
    return value


def frame_of(rows: list[dict[str, Any]], columns: list[str]):
    """The rows as a pandas DataFrame with the sweep's columns, in point order."""
    import pandas as pd
    frame = pd.DataFrame(rows, columns=columns)
    for c in frame.columns:          # mixed None/str/number object columns would not go to Parquet
        if frame[c].dtype == object:
            kinds = {type(v) for v in frame[c] if v is not None}
            if len(kinds) > 1 and not kinds <= {int, float}:
                frame[c] = frame[c].map(lambda v: None if v is None else str(v))
    return frame


# -- running --------------------------------------------------------------------------------


@dataclass
class SweepResult:
    """The rows of a sweep (one per point, by index) and how they were obtained."""

    spec: SweepSpec
    rows: list[dict[str, Any]]
    computed: int                 # points answered by this run
    resumed: int                  # points found finished in the output and skipped
    elapsed_s: float
    workers: int
    where: str                    # "local" | "in-process" | the Dask scheduler's address

    @property
    def columns(self) -> list[str]:
        return self.spec.columns()

    def to_frame(self):
        """A pandas DataFrame: one row per point, the columns of `SweepSpec.columns`."""
        return frame_of(self.rows, self.columns)

    def to_dict(self) -> dict[str, Any]:
        return {"command": self.spec.command, "grid": self.spec.grid,
                "vary": {k: str(v) for k, v in self.spec.vary.items()}, "samples": self.spec.samples,
                "seed": self.spec.seed, "points": len(self.rows), "computed": self.computed,
                "resumed": self.resumed, "elapsed_s": self.elapsed_s, "workers": self.workers,
                "where": self.where, "rows": self.rows}

    @property
    def errors(self) -> list[dict[str, Any]]:
        return [r for r in self.rows if r["status"] == "error"]


def _chunks(points: list[Point], workers: int) -> list[list[Point]]:
    size = max(1, min(MAX_CHUNK, math.ceil(len(points) / max(1, workers * CHUNKS_PER_WORKER))))
    return [points[i:i + size] for i in range(0, len(points), size)]


def _warm() -> None:
    """Worker start: import what answering a point needs, once."""
    import planner.questions.feasible  # noqa: F401
    import planner.solve  # noqa: F401


def default_workers() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def run_sweep(spec: SweepSpec, workers: int | None = None, scheduler: str | None = None,
              output: str | Path | None = None,
              progress: Callable[[int, int], None] | None = None) -> SweepResult:
    """Answer every point of `spec` (checked first: InputError naming the field on bad input).

    `workers`: processes of the local pool (default: every core this process may use; 1 runs
    in this process). `scheduler`: the address of a Dask distributed scheduler (or a
    `distributed.Client`), used instead of the local pool. `output`: a .parquet, .csv or
    .jsonl file written as rows arrive; the points it already holds are not recomputed.
    `progress(done, total)` is called as points finish.
    """
    start = time.perf_counter()
    spec.check()
    if isinstance(scheduler, str):
        check_scheduler(scheduler)
    points = spec.points()
    columns = spec.columns()
    sink = RowSink(output, columns) if output is not None else None
    done: dict[int, dict[str, Any]] = {}
    if sink is not None:
        by_index = {p.index: p for p in points}
        for row in sink.existing():
            i = row.get("index")
            p = by_index.get(i)
            if p is None or row.get("key") != p.key:
                sink.close()
                raise InputError([Problem("-o", f"{sink.path} holds results of another sweep (point {i}: "
                                                "other inputs or another question); choose another output "
                                                "or remove it")])
            done.setdefault(i, {c: row.get(c) for c in columns})
    resumed = len(done)
    todo = [p for p in points if p.index not in done]
    payload = spec.payload()
    total = len(points)
    workers = workers or default_workers()
    where = "in-process" if scheduler is None and workers == 1 else "local"

    def collect(rows: list[dict[str, Any]]) -> None:
        for r in rows:
            done[r["index"]] = r
        if sink is not None:
            sink.append(rows)
        if progress is not None:
            progress(len(done), total)

    if progress is not None:
        progress(len(done), total)
    try:
        if not todo:
            pass
        elif scheduler is not None:
            where = _run_dask(scheduler, payload, todo, collect)
        elif workers == 1:
            for chunk in _chunks(todo, 1):
                collect(run_chunk(payload, chunk))
        else:
            _run_pool(workers, payload, todo, collect)
    finally:
        if sink is not None:
            sink.close()
    rows = [done[p.index] for p in points]
    if sink is not None:
        sink.finish(rows)
    return SweepResult(spec, rows, len(todo), resumed, time.perf_counter() - start, workers, where)


def _failed_rows(payload: dict, chunk: Sequence[Point], err: BaseException) -> list[dict[str, Any]]:
    rows = []
    for p in chunk:
        row = {c: None for c in payload["columns"]}
        row.update(index=p.index, key=p.key, **p.inputs, status="error",
                   error=f"worker failed: {type(err).__name__}: {err}".replace("\n", " | "))
        rows.append(row)
    return rows


def _run_pool(workers: int, payload: dict, todo: list[Point], collect) -> None:
    import multiprocessing
    chunks = _chunks(todo, workers)
    ctx = multiprocessing.get_context("fork" if hasattr(os, "fork") else "spawn")
    pool = ProcessPoolExecutor(max_workers=min(workers, len(chunks)), mp_context=ctx, initializer=_warm)
    try:
        pending = {pool.submit(run_chunk, payload, c): c for c in chunks}
        while pending:
            finished, _ = wait(pending, return_when=FIRST_COMPLETED)
            for fut in finished:
                chunk = pending.pop(fut)
                try:
                    rows = fut.result()
                except Exception as err:  # noqa: BLE001 - a crashed worker: its points are error rows
                    rows = _failed_rows(payload, chunk, err)
                collect(rows)
    except BaseException:            # Ctrl-C: stop at once; the rows written so far stay for a resume
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown(wait=True)


def check_scheduler(address: str) -> None:
    """InputError naming --scheduler if `address` is not a Dask address (tcp://host:port, ...)."""
    from distributed.comm.addressing import parse_address, parse_host_port
    try:
        scheme, location = parse_address(address, strict=False)
        if scheme in ("tcp", "tls"):
            parse_host_port(location)
    except (ValueError, TypeError) as err:
        raise InputError([Problem("--scheduler", f"not a Dask scheduler address (e.g. tcp://10.0.0.5:8786): "
                                                 f"{err}")]) from None


def _run_dask(scheduler, payload: dict, todo: list[Point], collect) -> str:
    from distributed import Client, as_completed
    own = not isinstance(scheduler, Client)
    client = Client(scheduler, set_as_default=False, timeout=CONNECT_TIMEOUT_S) if own else scheduler
    try:
        workers = max(1, sum(w.get("nthreads", 1) for w in client.scheduler_info()["workers"].values()))
        chunks = _chunks(todo, workers)
        remote = client.scatter(payload, broadcast=True)
        futures = client.map(run_chunk, [remote] * len(chunks), chunks, pure=False)
        index = {f.key: c for f, c in zip(futures, chunks)}
        for fut in as_completed(futures, loop=client.loop):
            try:
                rows = fut.result()
            except Exception as err:  # noqa: BLE001
                rows = _failed_rows(payload, index[fut.key], err)
            collect(rows)
        return str(client.scheduler.address)
    finally:
        if own:
            client.close()


# -- recipes ----------------------------------------------------------------------------------


RECIPE_KEYS = {"name", "description", "instance", "set", "command", "objective", "solver", "grid", "vary",
               "samples", "seed", "plot"}
PLOT_KINDS = ("lines", "distribution", "pareto")


@dataclass
class Recipe:
    """A sweep saved as TOML (instances/sweeps/): the base instance (a path relative to the
    recipe), the fields to vary, the question, and how to plot the answer."""

    name: str
    description: str
    spec: SweepSpec
    plot: dict[str, Any]
    path: Path


def load_recipe(path: str | Path) -> Recipe:
    """Read a sweep recipe; InputError naming the key on any problem."""
    import tomllib
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as err:
        raise InputError([Problem("<file>", f"cannot read the recipe: {err}")], str(path)) from None
    problems = [Problem(k, f"unknown key; allowed: {', '.join(sorted(RECIPE_KEYS))}") for k in data
                if k not in RECIPE_KEYS]
    if "instance" not in data:
        problems.append(Problem("instance", "required: the path of the base instance, relative to the recipe"))
    if problems:
        raise InputError(problems, str(path))
    from planner.schema.strict import read_json
    instance_path = (path.parent / data["instance"]).resolve()
    raw, problems = read_json(instance_path)
    if problems:
        raise InputError(problems, str(instance_path))
    fixed = data.get("set", {})
    problems = [p for p in (check_field(k) for k in fixed) if p]
    if problems:
        raise InputError([Problem(f"set.{p.path}", p.message) for p in problems], str(path))
    raw = with_fields(raw, fixed)
    try:
        vary = {k: Distribution.parse(v, f"vary.{k}") for k, v in data.get("vary", {}).items()}
        spec = SweepSpec(raw, str(instance_path), grid={k: list(v) for k, v in data.get("grid", {}).items()},
                         vary=vary, samples=int(data.get("samples", 0)), seed=int(data.get("seed", 0)),
                         command=data.get("command", "solve"), objective=data.get("objective"),
                         solver=data.get("solver", "bnb"))
        spec.check()
    except InputError as err:
        raise InputError(err.problems, str(path)) from None
    plot = dict(data.get("plot", {}))
    if plot.get("kind", "lines") not in PLOT_KINDS:
        raise InputError([Problem("plot.kind", f"must be one of {', '.join(PLOT_KINDS)}")], str(path))
    return Recipe(data.get("name", path.stem), data.get("description", ""), spec, plot, path)


def plot_sweep(result: SweepResult, path: str | Path, kind: str | None = None, x: str | None = None,
               series: str | None = None, y: str | None = None, group: str | None = None,
               title: str = "") -> Path:
    """Draw a sweep's answer (see planner.present.sweep_plots). `kind` defaults to
    'distribution' for Monte Carlo sweeps and 'lines' for grids; `x` and `series` default to
    the first and second grid fields; `y` to days to target (reach: days; evaluate: days)."""
    from planner.evaluate import max_days
    from planner.present import sweep_plots
    spec = result.spec
    limit = max_days(parse_instance(copy.deepcopy(spec.base)))[0]
    if "limits.max_days" in spec.grid or "limits.max_days" in spec.vary:
        limit = None
    kind = kind or ("distribution" if spec.vary else "lines")
    fields = list(spec.grid) + list(spec.vary)
    y = y or ("days" if spec.command == "reach" else "time_to_target_days")
    if spec.command == "solve" and spec.objective == "max_compute" and y == "time_to_target_days":
        y = "objective_value"
    if kind == "distribution":
        return sweep_plots.distribution_plot([r.get(y) for r in result.rows], path, label=y, limit=limit,
                                             title=title)
    if kind == "pareto":
        group = group or ("fleet.hardware" if "fleet.hardware" in fields else None)
        return sweep_plots.pareto_plot(result.rows, path, group=group, limit=limit, title=title)
    x = x or fields[0]
    series = series if series is not None else (list(spec.grid)[1] if len(spec.grid) > 1 else None)
    ylabel = None
    if y == "objective_value":
        from planner.present.plots import _AXIS
        ylabel = _AXIS.get(spec.objective or parse_instance(copy.deepcopy(spec.base)).objective)
    return sweep_plots.lines_plot(result.rows, x, path, y=y, series=series, limit=limit, title=title, ylabel=ylabel)
