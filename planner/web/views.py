"""Results as the page draws them: plain JSON-able dicts made from the result objects.

The tables are the ones `dtplan evaluate` and `dtplan solve` print (planner/present/render.py:
plan, inner step, outer step, efficiency, run), cell for cell; the timeline is one outer step
in lanes (`planner.present.plots.outer_step_lanes`, the same segments as the reports' figure)
and the efficiency factors are the reports' bars (`EFFICIENCY_BARS`). Numbers JSON cannot hold
(infinity, NaN) are written as null by the app (planner.cli.common.json_default).
"""

from __future__ import annotations

from typing import Any

from planner.objectives import Objective
from planner.cost.duration import SECONDS_PER_DAY

DAY_S = SECONDS_PER_DAY


def table_view(table) -> dict[str, Any]:
    """A table of planner/present/render.py (a `PlainTable`: title, rows of cell texts) as
    {title, rows: [[cell text, ...]]}."""
    return {"title": str(table.title or ""), "rows": [[str(cell) for cell in row] for row in table.rows]}


def plan_dict(plan) -> dict[str, Any] | None:
    """A plan as raw data (the fields it sets), as a plan file would hold it."""
    return None if plan is None else plan.model_dump(exclude_none=True)


def timeline_view(e) -> dict[str, Any]:
    """One outer step in lanes of (start s, duration s), the busy time of each lane, the step's
    length and where compute ends (the rest of the step is compute waiting for a sync)."""
    from planner.present.plots import outer_step_lanes
    v, plan = e.values, e.plan
    rounds = plan.regional_rounds if plan.mode == "hierarchical" else None
    lanes = outer_step_lanes(v, plan.mode, bool(plan.streaming), int(plan.inner_steps or 1), rounds)
    busy = {"compute": v["compute_block_s"], "WAN sync": v["t_sync_s"],
            "regional sync": v["t_regional_s"] * (rounds or 0)}
    synced = "WAN sync" in lanes or "regional sync" in lanes
    overlap = ("no synchronisation between replicas" if not synced else
               "streaming: syncs overlap compute" if plan.streaming else "no streaming: syncs follow compute")
    title = (f"One outer step, {plan.mode}, H = {plan.inner_steps}"
             + (f", R = {rounds}" if rounds else "") + f": {overlap}")
    return {"title": title, "outer_s": v["outer_time_s"],
            "compute_end_s": max(s + d for s, d in lanes["compute"]),
            "lanes": [{"name": name, "segments": [list(seg) for seg in segs], "busy_s": busy[name]}
                      for name, segs in lanes.items()]}


def efficiency_view(v: dict[str, float]) -> list[dict[str, Any]]:
    from planner.present.plots import EFFICIENCY_BARS
    return [{"label": label, "key": key, "value": v[key]} for label, key in EFFICIENCY_BARS]


def evaluation_view(e) -> dict[str, Any]:
    """One scored plan: headline figures, the terminal's tables, the timeline, the efficiency,
    broken limits and warnings."""
    from planner.present.render import efficiency_table, outer_table, plan_table, run_table, step_table
    v, s = e.values, e.setting
    return {
        "plan": plan_dict(e.plan), "feasible": e.feasible, "violations": e.violations, "warnings": e.warnings,
        "bottleneck": e.bottleneck,
        "headline": {"days": v["time_to_target_s"] / DAY_S, "training_days": v["training_time_s"] / DAY_S,
                     "limit_days": s.window_s / DAY_S, "cost_usd": v["cost_usd"], "c_local": v["c_local"],
                     "c_quality": v["c_quality"], "target_flop": s.target, "target_kind": s.target_kind,
                     "tokens": v["tokens"], "nodes": int(e.batch.nodes[0]), "gpus": v["total_gpus"],
                     "global_mfu": v["global_mfu"], "eta": v["eta_target"], "outer_s": v["outer_time_s"],
                     "compute_utilization": v["compute_utilization"], "goodput": s.goodput},
        "tables": [table_view(t(e)) for t in (plan_table, step_table, outer_table, efficiency_table, run_table)],
        "timeline": timeline_view(e), "efficiency": efficiency_view(v),
    }


def objective_text(r) -> str:
    """The objective's value in words, as `dtplan solve` prints it."""
    if r.objective_value is None:
        return "no plan"
    if r.objective.by_time:
        return f"{r.objective_value / DAY_S:,.3f} days to target"
    if r.objective.maximise:
        name = {"c_quality": "C_quality", "c_local": "C_local"}.get(r.compute_kind, "compute")
        return f"{r.objective_value:.6e} FLOP {name} within the duration limit"
    return f"${r.objective_value:,.0f}"


def solve_view(r) -> dict[str, Any]:
    """A solve: status, objective, proof (bound and gap), the optimal plan's evaluation, what binds."""
    return {
        "status": r.status, "objective": r.objective.key, "objective_value": r.objective_value,
        "objective_text": objective_text(r), "best_bound": r.best_bound, "gap": r.gap, "solver": r.solver,
        "solve_time_s": r.solve_time_s, "evaluations": r.evaluations, "space_size": r.space_size,
        "model_params": r.model_params, "plan": plan_dict(r.plan), "binding": r.binding,
        "infeasibility": r.infeasibility, "beyond_evidence": r.beyond_evidence,
        "fastest_days": None if r.fastest_time_s is None else r.fastest_time_s / DAY_S,
        "evaluation": None if r.evaluation is None else evaluation_view(r.evaluation),
    }


def feasibility_view(f) -> dict[str, Any]:
    """`dtplan feasible`: the verdict, what binds, and each smallest single fix with its plan."""
    from planner.questions.compare import plan_short
    return {
        "feasible": f.feasible, "timed_out": f.timed_out, "solves": f.solves, "no_fix": f.no_fix,
        "binding": f.result.binding if f.feasible else f.result.infeasibility, "result": solve_view(f.result),
        "fixes": [{"limit": x.limit, "summary": x.summary, "fields": x.fields, "current": x.current,
                   "days": None if x.result.objective_value is None else x.result.objective_value / DAY_S,
                   "plan": plan_dict(x.result.plan), "plan_short": plan_short(x.result.plan)} for x in f.fixes],
    }


def comparison_view(rows, objective: Objective, limit_days: float) -> dict[str, Any]:
    """`dtplan compare`: one row per hardware preset, ranked."""
    from planner.questions.compare import plan_short
    out = []
    for r in rows:
        res = r.result
        out.append({"rank": r.rank, "hardware": r.hardware, "status": res.status, "feasible": r.feasible,
                    "value": r.value, "days": r.days, "nodes": r.nodes, "cost_usd": r.cost_usd,
                    "bottleneck": r.bottleneck, "reason": r.reason, "notes": r.notes,
                    "plan": plan_dict(res.plan), "plan_short": plan_short(res.plan),
                    "fastest_days": None if res.fastest_time_s is None else res.fastest_time_s / DAY_S})
    return {"objective": objective.key, "limit_days": limit_days, "rows": out}
