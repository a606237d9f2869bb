"""The questions the page asks, answered on the Python API (planner/api.py) and shown by
`planner.web.views`.

- `evaluate_answer`: the instance's and the plan's problems (the schema's, as the CLI prints
  them), the values the schema resolves (presets, profile, defaults: the page's placeholders),
  and the plan's evaluation. Fast enough to run in the request (a few milliseconds).
- `evaluation_report`: the same evaluation as `dtplan evaluate --report` writes it (HTML).
- `JOBS`: the answers that may take long, run in a worker process by `planner.web.jobs`, each
  `job(payload, progress) -> dict`: `solve` (the optimal plan), `feasible` (the verdict and the
  smallest single fixes), `compare` (every hardware preset, ranked) and `curve` (days to target
  against one input: the fastest plan at each point by a sweep, and the user's plan).

Jobs' processes start warm: their fork server imports `planner.web.warm`, which imports this.
"""

from __future__ import annotations

import copy
import math
import time
from typing import Any, Callable

import numpy as np

import planner.api as api
from planner.cost.duration import SECONDS_PER_DAY
from planner.questions import compare as compare_module
from planner.questions import feasible as feasible_module
from planner.schema.errors import InputError, Problem
from planner.objectives import objective_named
from planner.solve import SUPPORTED_OBJECTIVES, with_beyond_evidence
from planner.web import views
from planner.web.fields import CURVE_BY_KEY

Progress = Callable[..., None]
MAX_CURVE_POINTS = 60


def problem_view(p: Problem, prefix: str = "") -> dict[str, str]:
    """A problem as the page shows it: the field it belongs to (`field`, where the page puts it)
    and the text the CLI prints for it (`text`: 'path: message')."""
    field = p.path if not prefix or p.path.startswith(prefix) else prefix + p.path
    return {"field": field, "path": p.path, "message": p.message, "text": str(p)}


def _flatten(data: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(data, dict) and data:
        out: dict[str, Any] = {}
        for key, value in data.items():
            out.update(_flatten(value, f"{prefix}{key}."))
        return out
    return {prefix[:-1]: data}


def resolved_values(instance) -> dict[str, Any]:
    """Every field's value as the schema resolves it (presets, profile and defaults applied), by
    dotted path: what an empty field of the page stands for."""
    data = compare_module.raw_instance(instance)
    a = instance.resolved_assumptions()
    data["assumptions"].update(scenario=a.scenario, straggler=a.straggler, error_feedback=a.error_feedback, mfu=a.mfu)
    constants = data["assumptions"].pop("constants", {}) or {}
    out = _flatten(data)
    out["assumptions.constants"] = constants
    return out


def check_instance(raw: Any):
    """(Instance or None, problems): the instance of raw JSON data, or every problem with it."""
    try:
        return api.instance_from_dict(raw), []
    except InputError as err:
        return None, [problem_view(p) for p in err.problems]
    except RecursionError:
        return None, [problem_view(Problem("<root>", "nested too deeply"))]


def evaluate_answer(raw_instance: Any, raw_plan: Any) -> dict[str, Any]:
    """Problems of the instance (then of the plan), resolved values, and the plan's evaluation.
    Without a plan (None), the page's starting plan (`fields.baseline_plan`: the baseline on the
    whole fleet, every pool's nodes for a fleet of pools) is evaluated and returned as `plan`."""
    out: dict[str, Any] = {"instance_problems": [], "plan_problems": [], "resolved": {}, "evaluation": None}
    instance, out["instance_problems"] = check_instance(raw_instance)
    if instance is None:
        return out
    out["resolved"] = resolved_values(instance)
    from planner.evaluate import check_plan_against
    from planner.schema.plan import parse_plan
    if raw_plan is None:
        from planner.web.fields import baseline_plan
        raw_plan = out["plan"] = baseline_plan(instance)
    try:
        plan = parse_plan(copy.deepcopy(raw_plan), "<plan>")
    except InputError as err:
        out["plan_problems"] = [problem_view(p, "plan.") for p in err.problems]
        return out
    problems = check_plan_against(instance, plan)
    if problems:
        out["plan_problems"] = [problem_view(p, "plan.") for p in problems]
        return out
    out["evaluation"] = views.evaluation_view(api.evaluate(instance, plan))
    return out


def evaluation_report(raw_instance: Any, raw_plan: Any) -> str:
    """The plan's evaluation as the self-contained HTML report `dtplan evaluate --report` writes
    (planner/present/report.py); InputError for bad input."""
    import tempfile
    from pathlib import Path

    from planner.present.report import evaluate_report
    instance = api.instance_from_dict(raw_instance)
    evaluation = api.evaluate(instance, raw_plan)
    with tempfile.TemporaryDirectory(prefix="dtplan-report-") as folder:
        path = evaluate_report(instance, evaluation, Path(folder) / "report.html",
                               "dtplan serve (the page's instance and plan)")
        return path.read_text()


def _objective(payload: dict) -> str | None:
    objective = payload.get("objective")
    if objective is not None and objective not in SUPPORTED_OBJECTIVES:
        raise InputError([Problem("objective", f"must be one of {', '.join(SUPPORTED_OBJECTIVES)}, "
                                               f"got {objective!r}")])
    return objective


def _solver(payload: dict) -> str:
    from planner.solve import SOLVERS
    solver = payload.get("solver") or "bnb"
    if solver not in SOLVERS:
        raise InputError([Problem("solver", f"must be one of {', '.join(SOLVERS)}, got {solver!r}")])
    return solver


def time_limit(payload: dict) -> float | None:
    """The job's time limit in seconds (`time_limit_s`, > 0 and finite), or None."""
    value = payload.get("time_limit_s")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise InputError([Problem("time_limit_s", f"must be a number of seconds > 0, got {value!r}")])
    return float(value)


def check_job(kind: str, payload: dict) -> None:
    """InputError (every problem, as the CLI names them) before a job is started for bad input."""
    if kind not in JOBS:
        raise InputError([Problem("kind", f"must be one of {', '.join(JOBS)}, got {kind!r}")])
    problems = []
    instance, bad = check_instance(payload.get("instance"))
    problems += [Problem(p["path"], p["message"]) for p in bad]
    for check in (_objective, _solver, time_limit):
        try:
            check(payload)
        except InputError as err:
            problems += err.problems
    if kind == "curve" and instance is not None:
        try:
            curve_points(payload)
        except InputError as err:
            problems += err.problems
    if problems:
        raise InputError(problems)


# -- jobs: run in a worker process -------------------------------------------------------------


def solve_job(payload: dict, progress: Progress) -> dict[str, Any]:
    """The optimal plan for the objective asked (default: the instance's)."""
    solver = _solver(payload)
    limit = time_limit(payload)
    deadline = None if limit is None else time.perf_counter() + limit
    progress(message=f"solving ({solver})")
    r = api.solve(payload["instance"], objective=_objective(payload), solver=solver, time_limit_s=limit)
    if r.status == "infeasible":     # dtplan: the evidence-envelope bounds that stop it (docs/quality.md, section 6)
        progress(message="solving beyond the evidence envelope")
        r = with_beyond_evidence(api.instance_from_dict(payload["instance"]), r, solver, deadline)
    return views.solve_view(r)


def feasible_job(payload: dict, progress: Progress) -> dict[str, Any]:
    """Can the target be reached within every limit (min_time), and if not the smallest single fixes."""
    limit = time_limit(payload)
    deadline = None if limit is None else time.perf_counter() + limit
    f = feasible_module.feasible(copy.deepcopy(payload["instance"]), "<page>",
                                 progress=lambda message: progress(message=message), deadline=deadline)
    return views.feasibility_view(f)


def compare_job(payload: dict, progress: Progress) -> dict[str, Any]:
    """The workload solved on every hardware preset and ranked."""
    from planner.setting import max_days
    instance = api.instance_from_dict(payload["instance"])
    objective = objective_named(_objective(payload) or instance.objective)      # a key _objective checked
    limit = time_limit(payload)
    deadline = None if limit is None else time.perf_counter() + limit
    rows = compare_module.compare(copy.deepcopy(payload["instance"]), "all", objective=objective,
                                  progress=lambda done, total, hw: progress(done, total, f"solving on {hw}" if hw else ""),
                                  deadline=deadline)
    return views.comparison_view(rows, objective, max_days(instance)[0])


def curve_points(payload: dict) -> tuple[Any, list[float]]:
    """(the Curve, the x values) of a curve request {curve: {input, low, high, points}}: `points`
    values from low to high, evenly spaced on a log scale for inputs that span decades
    (bandwidth, nodes, H, compression), rounded for whole-number inputs, each once."""
    spec = payload.get("curve")
    if not isinstance(spec, dict):
        raise InputError([Problem("curve", "must be an object {input, low, high, points}")])
    problems = []
    curve = CURVE_BY_KEY.get(spec.get("input"))
    if curve is None:
        problems.append(Problem("curve.input", f"must be one of {', '.join(CURVE_BY_KEY)}, got {spec.get('input')!r}"))
    numbers = {}
    for key in ("low", "high", "points"):
        value = spec.get(key)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
            problems.append(Problem(f"curve.{key}", f"must be a number > 0, got {value!r}"))
        else:
            numbers[key] = value
    if "points" in numbers and not (2 <= numbers["points"] <= MAX_CURVE_POINTS and float(numbers["points"]).is_integer()):
        problems.append(Problem("curve.points", f"must be a whole number from 2 to {MAX_CURVE_POINTS}, "
                                                f"got {numbers['points']!r}"))
    if "low" in numbers and "high" in numbers and numbers["low"] >= numbers["high"]:
        problems.append(Problem("curve.high", f"must be above curve.low ({numbers['low']!r}), got {numbers['high']!r}"))
    if problems:
        raise InputError(problems)
    low, high, n = numbers["low"], numbers["high"], int(numbers["points"])
    xs = np.geomspace(low, high, n) if curve.log else np.linspace(low, high, n)
    values = [float(x) for x in xs]
    if curve.integer:
        values = [float(v) for v in dict.fromkeys(int(round(x)) for x in values)]
    else:
        values = [float(f"{x:.4g}") for x in values]
    return curve, list(dict.fromkeys(values))


def _x(curve, x: float) -> float | int:
    """x as the field takes it (a whole number for nodes and H)."""
    return int(x) if curve.integer else x


def curve_job(payload: dict, progress: Progress) -> dict[str, Any]:
    """Days to target against one input: the fastest plan at each point (a sweep of the instance,
    the duration limit lifted, as `dtplan feasible` measures reach) and the user's plan with the
    same input changed (evaluated)."""
    from planner.setting import max_days
    curve, xs = curve_points(payload)
    raw, plan = payload["instance"], payload.get("plan")
    base = api.instance_from_dict(raw)
    total = 2 * len(xs) if plan else len(xs)
    mine = _your_plan_points(curve, xs, raw, plan) if plan else []
    progress(len(mine), total, "the fastest plan at each point")
    grid = {curve.optimal_path: [[_x(curve, x)] if curve.optimal_list else _x(curve, x) for x in xs]}
    swept = api.sweep(raw, grid=grid, command="reach", workers=1,
                      progress=lambda done, _total: progress(len(mine) + done, total, "the fastest plan at each point"))
    fastest = []
    for x, row in zip(xs, sorted(swept.rows, key=lambda r: r["index"])):
        fastest.append({"x": x, "days": row.get("days"), "status": row.get("status"), "reachable": row.get("reachable"),
                        "plan_short": _short(row), "error": row.get("error")})
    return {"input": curve.to_dict(), "xs": xs, "limit_days": max_days(base)[0], "fastest": fastest, "yours": mine,
            "current": _current(curve, raw, plan, base)}


def _short(row: dict) -> str | None:
    """A sweep row's plan in the short form of `dtplan compare`."""
    if row.get("mode") is None:
        return None
    from planner.questions.compare import plan_short
    from planner.schema.plan import Plan
    from planner.frames import PLAN_FIELDS
    fields = {k: row[k] for k in PLAN_FIELDS if row.get(k) is not None}
    try:
        return plan_short(Plan.model_validate(fields))
    except Exception:      # a row's columns that do not make a plan: show the mode alone
        return str(row["mode"])


def _your_plan_points(curve, xs: list[float], raw: dict, plan: dict) -> list[dict[str, Any]]:
    out = []
    for x in xs:
        value = _x(curve, x)
        this_plan, overrides = dict(plan), {}
        if curve.key == "nodes":              # the fleet grows with the plan
            overrides["fleet.nodes"] = value
        if curve.plan_path is None:
            overrides[curve.optimal_path] = value
        else:
            this_plan[curve.plan_path] = value
        try:
            e = api.evaluate(raw, this_plan, overrides=overrides)
        except InputError as err:
            out.append({"x": x, "days": None, "feasible": False, "error": "; ".join(map(str, err.problems))})
            continue
        out.append({"x": x, "days": e.values["time_to_target_s"] / SECONDS_PER_DAY, "feasible": e.feasible,
                    "violations": e.violations, "error": None})
    return out


def _current(curve, raw: dict, plan: dict | None, instance) -> float | None:
    """The input's value now (the user's plan's, or the instance's)."""
    if curve.plan_path and plan and plan.get(curve.plan_path) is not None:
        return plan[curve.plan_path]
    if curve.key == "bandwidth":
        return instance.network.wan.up_mbps
    if curve.key == "nodes":
        return instance.fleet.nodes
    return None


JOBS: dict[str, Callable[[dict, Progress], dict[str, Any]]] = {
    "solve": solve_job, "feasible": feasible_job, "compare": compare_job, "curve": curve_job}

