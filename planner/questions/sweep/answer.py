"""One point answered: its instance built and validated, the question asked, a row returned
(status `error` and the message when the point is invalid or its answer raises)."""

from __future__ import annotations

import copy
import time
from typing import Any

from planner.cost.envelope import beyond_columns
from planner.frames import plan_columns as _plan_columns
from planner.objectives import MIN_TIME
from planner.questions.sweep.fields import set_field, with_fields
from planner.questions.sweep.spec import TIME_COLUMN, Point
from planner.schema.errors import InputError
from planner.schema.instance import Instance, parse_instance

UNLIMITED_DAYS = 1e6               # "reach": the duration limit lifted (as feasible's duration fix)


def solve_columns(r) -> dict[str, Any]:
    """The answer columns of a `solve` row from a `planner.solve.SolveResult` (its `beyond_evidence` as
    `envelope.beyond_columns`)."""
    from planner.cost.duration import SECONDS_PER_DAY
    e = r.evaluation
    return {"status": r.status, "objective": r.objective.key, "objective_value": r.objective_value,
            "best_bound": r.best_bound, "gap": r.gap,
            "time_to_target_days": e.values["time_to_target_s"] / SECONDS_PER_DAY if e else None,
            "cost_usd": e.values["cost_usd"] if e else None, "model_params": r.model_params,
            "bottleneck": e.bottleneck if e else None, **_plan_columns(r.plan),
            "infeasibility": "; ".join(r.infeasibility) or None, **beyond_columns(r.beyond_evidence)}


def _answer(payload: dict, instance: Instance, data: dict) -> dict[str, Any]:
    from planner.cost.duration import SECONDS_PER_DAY
    command = payload["command"]
    if command == "solve":
        from planner.solve import solve
        return solve_columns(solve(instance, objective=payload["objective"], solver=payload["solver"],
                                   time_limit_s=payload["time_limit_s"], explain_envelope=True))
    if command == "robust":
        from planner.questions.robust import sweep_row
        row, plan = sweep_row(instance, data, payload["objective"], payload["solver"])
        return {**row, **_plan_columns(plan)}
    if command == "feasible":
        from planner.questions.feasible import feasible
        f = feasible(data, payload["source"])
        e = f.result.evaluation
        return {"status": "feasible" if f.feasible else "infeasible", "feasible": f.feasible,
                "time_to_target_days": e.values["time_to_target_s"] / SECONDS_PER_DAY if e else None,
                "cost_usd": e.values["cost_usd"] if e else None, "bottleneck": e.bottleneck if e else None,
                **_plan_columns(f.result.plan),
                "binding": "; ".join(f.result.infeasibility if not f.feasible else f.result.binding) or None,
                "fixes": "; ".join(x.summary for x in f.fixes) or None,
                **beyond_columns(f.result.beyond_evidence)}
    if command == "evaluate":
        from planner.evaluate import evaluate
        from planner.evaluate import check_plan_against
        from planner.schema.plan import parse_plan
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
    from planner.setting import max_days
    from planner.solve import solve
    limit_days = max_days(instance)[0]
    lifted = copy.deepcopy(data)
    set_field(lifted, "limits.max_days", UNLIMITED_DAYS)
    r = solve(parse_instance(lifted, payload["source"]), objective=MIN_TIME, solver=payload["solver"],
              explain_envelope=True)
    days = r.objective_value / SECONDS_PER_DAY if r.objective_value is not None else None
    reachable = days is not None and r.status == "optimal" and days <= limit_days
    return {"status": "reachable" if reachable else ("unreachable" if r.status != "time_limit" else "time_limit"),
            "reachable": reachable, "days": days, "limit_days": limit_days,
            "cost_usd": r.evaluation.values["cost_usd"] if r.evaluation else None, **_plan_columns(r.plan),
            "infeasibility": "; ".join(r.infeasibility) or None, **beyond_columns(r.beyond_evidence)}


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
