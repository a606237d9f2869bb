"""Results as pandas DataFrames (`to_frame()` of the API's result classes): one row per answer,
flat columns with units in their names, plan fields as columns (as in a sweep's rows).

Layer: evaluate (docs/architecture.md): it reads the results it is given by their attributes and
imports only `planner.cost.duration`, so that the results of the evaluate layer and of every layer
above it (solve, the questions) name their table without importing upwards."""

from __future__ import annotations

from typing import Any

PLAN_FIELDS = ("mode", "nodes", "precision", "inner_steps", "compression", "streaming", "stages", "group_size",
               "regional_rounds", "micro_batches", "activation_compression", "expert_parallel", "pool_nodes")
SYNC_FIELDS = ("inner_steps", "compression", "streaming")                # every mode but pipeline_wan
MODE_FIELDS = {"hierarchical": ("group_size", "regional_rounds"),         # docs/cost_model.md: k, R
               "pp_group": ("stages", "micro_batches", "activation_compression"),
               "pipeline_wan": ("stages", "micro_batches", "activation_compression")}


def plan_columns(plan) -> dict[str, Any]:
    """The plan's fields that apply to it, as columns: every mode's (mode, nodes, precision,
    expert_parallel), the sync's (H, Cr, streaming; not pipeline_wan, which has no outer sync), the
    mode's own (k, R for hierarchical; S, M, Ca for the pipeline modes) and `pool_nodes` (nodes used
    per pool, a fleet of pools). A field that does not apply is absent, not a default."""
    if plan is None:
        return {}
    dumped = plan.model_dump()
    keep = {"mode", "nodes", "precision", "expert_parallel"} | set(MODE_FIELDS.get(plan.mode, ()))
    if plan.mode != "pipeline_wan":
        keep |= set(SYNC_FIELDS)
    if plan.pool_nodes is not None:
        keep.add("pool_nodes")
    return {k: dumped.get(k) for k in PLAN_FIELDS if k in keep}


def solve_row(r) -> dict[str, Any]:
    """One SolveResult as a flat row."""
    from planner.cost.duration import SECONDS_PER_DAY
    e = r.evaluation
    return {"objective": r.objective.key, "solver": r.solver, "status": r.status, "objective_value": r.objective_value,
            "best_bound": r.best_bound, "gap": r.gap, "solve_time_s": r.solve_time_s, "evaluations": r.evaluations,
            "time_to_target_days": e.values["time_to_target_s"] / SECONDS_PER_DAY if e else None,
            "cost_usd": e.values["cost_usd"] if e else None, "bottleneck": e.bottleneck if e else None,
            "model_params": r.model_params, **plan_columns(r.plan),
            "binding": "; ".join(r.binding) or None, "infeasibility": "; ".join(r.infeasibility) or None}


def solve_frame(r):
    import pandas as pd
    return pd.DataFrame([solve_row(r)])


def evaluation_frame(e):
    """Every figure of an Evaluation as one row (values keyed as in `Evaluation.values`)."""
    import pandas as pd
    row = {"instance": e.instance.name, **plan_columns(e.plan), "feasible": e.feasible, "bottleneck": e.bottleneck,
           "violations": "; ".join(e.violations) or None}
    row.update({k: v for k, v in e.values.items() if k not in row})
    return pd.DataFrame([row])


def feasibility_frame(f):
    """The verdict's solve as the first row (`change` = 'as given'), then one row per fix."""
    import pandas as pd
    rows = [{"change": "as given", "limit": None, "fields": None, **solve_row(f.result)}]
    rows += [{"change": x.summary, "limit": x.limit, "fields": " ".join(x.set_args()),
              **solve_row(x.result)} for x in f.fixes]
    return pd.DataFrame(rows)
