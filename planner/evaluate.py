"""The evaluator's front door: one instance and one plan -> an `Evaluation`.

Layer: evaluate (docs/architecture.md). A fleet of identical nodes is evaluated by
`planner.homogeneous.evaluate_pool`; a fleet of pools by `planner.fleet.evaluate.evaluate_mixed`,
which composes the homogeneous evaluation's public functions. `check_plan_against` checks a
parsed plan against an instance's fleet (pools, sites and regions included) before it is evaluated. The setting functions
(`planner.setting`) and the `Evaluation` class are named here too, for the callers that read an
evaluation's setting beside it.

`planner.fleet.evaluate` (and with it the fleet and sync-rule modules, ~7 ms of CPU at import) is
imported only when a fleet of pools is evaluated or checked: a solve of identical nodes never
loads it (docs/speed.md, "Start-up time").
"""

from __future__ import annotations

from planner.homogeneous import Evaluation, evaluate_pool, plan_envelope
from planner.schema.errors import Problem
from planner.schema.instance import Instance
from planner.schema.plan import Plan, model_plan_problems
from planner.setting import batch_from_plan, max_days, physics_assumptions, setting_from_instance, with_params

__all__ = ["Evaluation", "batch_from_plan", "check_plan_against", "evaluate", "max_days", "physics_assumptions", "plan_envelope",
           "setting_from_instance", "with_params"]


def evaluate(instance: Instance, plan: Plan, params: float | None = None) -> Evaluation:
    """Score one plan of one instance (the plan must have passed `check_plan_against`).

    `params`: score a dense model of this many total parameters instead of the instance's
    (one of `search.params`, the candidate sizes; hidden size 0.03 sqrt(P)). A fleet of pools
    is scored by `planner.fleet.evaluate.evaluate_mixed` (the plan gives its pool_nodes), a fleet
    of identical nodes by `planner.homogeneous.evaluate_pool`."""
    if instance.fleet.is_mixed:
        from planner.fleet.evaluate import evaluate_mixed
        return evaluate_mixed(instance, plan, params)
    return evaluate_pool(instance, plan, params)


def check_plan_against(instance: Instance, plan: Plan) -> list[Problem]:
    """Problems of `plan` on `instance` (fleet size, node cap, precision, MoE rules); [] if none."""
    if instance.fleet.is_mixed or plan.pool_nodes is not None or plan.sync_rule == "proportional":
        from planner.fleet.evaluate import mixed_plan_problems
        return mixed_plan_problems(instance, plan) + model_plan_problems(instance, plan)
    problems = []
    if plan.nodes > instance.fleet.nodes:
        problems.append(Problem("plan.nodes", f"must be <= fleet.nodes ({instance.fleet.nodes}), got {plan.nodes}"))
    max_nodes = instance.limits.max_nodes
    if max_nodes is not None and plan.nodes > max_nodes:
        problems.append(Problem("plan.nodes", f"must be <= limits.max_nodes ({max_nodes}), got {plan.nodes}"))
    hw = instance.hardware
    if plan.precision not in hw.precisions:
        problems.append(Problem("plan.precision", f"hardware {hw.id!r} does not support {plan.precision!r}; "
                                                  f"supported: {', '.join(hw.precisions)}"))
    return problems + model_plan_problems(instance, plan)
