"""Find the best plan of an instance and explain it (PLANNER.md, "Objectives").

Objectives:
- `min_time`: least wall-clock until C_local (or C_quality) reaches the target, among
  plans that meet every limit (memory, nodes, structure, budget, run duration).
- `min_cost`: fewest dollars (= fewest nodes of the fleet's hardware) that reach the
  target within the run-duration limit; ties go to the faster plan.

The chosen plan is re-scored by the evaluator (`planner.evaluate.evaluate`) and must
agree with the solver's objective to 1e-9 relative. Ties are broken by
`planner.oracle.tie_key`.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from planner import oracle
from planner.cost.duration import SECONDS_PER_DAY
from planner.cost.setting import PlanBatch, Setting
from planner.evaluate import Evaluation, evaluate, setting_from_instance
from planner.instance import Instance
from planner.plan import Plan, parse_plan
from planner.space import DecisionSpace

SOLVERS = ("oracle",)
DEFAULT_SOLVER = "oracle"
SUPPORTED_OBJECTIVES = ("min_time", "min_cost")
AGREEMENT_REL = 1e-9


class UnsupportedObjective(ValueError):
    """An objective the planner cannot answer yet."""


@dataclass
class SolveResult:
    """What a solve found, how sure it is, and how long it took."""

    objective: str
    solver: str
    status: str                              # optimal | time_limit | infeasible
    objective_value: float | None            # seconds (min_time) or USD (min_cost)
    best_bound: float | None
    gap: float | None
    solve_time_s: float
    evaluations: int
    plan: Plan | None = None
    evaluation: Evaluation | None = None
    binding: list[str] = field(default_factory=list)
    infeasibility: list[str] = field(default_factory=list)
    space_size: int = 0                      # plans in the space searched (every n, H, R; after exact reductions)

    def to_dict(self) -> dict[str, Any]:
        return {
            "objective": self.objective, "solver": self.solver, "status": self.status,
            "objective_value": self.objective_value, "best_bound": self.best_bound, "gap": self.gap,
            "solve_time_s": self.solve_time_s, "evaluations": self.evaluations, "space_size": self.space_size,
            "plan": self.plan.model_dump() if self.plan else None,
            "binding": self.binding, "infeasibility": self.infeasibility,
            "evaluation": self.evaluation.to_dict() if self.evaluation else None,
        }


def solve(instance: Instance, objective: str | None = None, solver: str = DEFAULT_SOLVER,
          time_limit_s: float | None = None) -> SolveResult:
    """The optimal plan of `instance` for `objective` (default: the instance's).

    With `time_limit_s`, a search that has not finished returns the best plan found,
    status `time_limit`, and the gap to a proven bound.
    """
    objective = objective or instance.objective
    if objective not in SUPPORTED_OBJECTIVES:
        raise UnsupportedObjective(f"objective {objective!r} is not supported by the planner yet; "
                                   f"supported: {', '.join(SUPPORTED_OBJECTIVES)}")
    if solver not in SOLVERS:
        raise ValueError(f"unknown solver {solver!r}; available: {', '.join(SOLVERS)}")
    start = time.perf_counter()
    setting = setting_from_instance(instance)
    space = DecisionSpace.from_instance(instance, setting)
    deadline = start + time_limit_s if time_limit_s is not None else math.inf
    found, evaluations, bound = optimise(setting, space, objective, deadline)
    elapsed = time.perf_counter() - start
    size = space.size(setting)
    if found is None:
        if math.isfinite(deadline) and bound < math.inf:
            return SolveResult(objective, solver, "time_limit", None, bound, None, elapsed, evaluations,
                               space_size=size)
        return SolveResult(objective, solver, "infeasible", None, None, None, elapsed, evaluations,
                           infeasibility=explain_infeasible(setting, space), space_size=size)
    batch, value = found
    bound = min(bound, value)
    status = "optimal" if bound >= value * (1 - oracle.TIE_REL) else "time_limit"
    gap = 0.0 if status == "optimal" else (value - bound) / value
    plan = plan_from_batch(batch, 0, setting.is_moe)
    result = evaluate(instance, plan)
    rescored = result.values["time_to_target_s"] if objective == "min_time" else result.values["cost_usd"]
    if not abs(rescored - value) <= AGREEMENT_REL * abs(value):
        raise AssertionError(f"re-scored objective {rescored!r} disagrees with the solver's {value!r}")
    return SolveResult(objective, solver, status, value, bound, gap, elapsed, evaluations, plan, result,
                       binding=binding_limits(result, space), space_size=size)


def optimise(setting: Setting, space: DecisionSpace, objective: str, deadline: float = math.inf):
    """((one-plan batch, objective value) or None, plans evaluated, proven lower bound on the
    objective; the bound is inf when the search finished) for a resolved setting."""
    return (_min_time if objective == "min_time" else _min_cost)(setting, space, deadline)


def _best(s: Setting, candidates: list[oracle.Found]) -> tuple[PlanBatch, float] | None:
    """The least time among candidates, ties broken by `oracle.tie_key`."""
    candidates = [c for c in candidates if c.time_s.size]
    if not candidates:
        return None
    best = min(float(c.time_s.min()) for c in candidates)
    tied = []
    for c in candidates:
        within = np.flatnonzero(c.time_s <= best * (1 + oracle.TIE_REL))
        if within.size:
            i = int(within[oracle.first_in_tie_order(s, c.batch.take(within))])
            tied.append((oracle.tie_key(s, c.batch, i), c, i))
    _, c, i = min(tied, key=lambda x: x[0])
    return c.batch.take(slice(i, i + 1)), float(c.time_s[i])


def _min_time(s: Setting, space: DecisionSpace, deadline: float = math.inf):
    bound = s.window_s
    found, evaluations, open_bound = [], 0, math.inf
    for b in oracle.batches_most_promising_first(s, space):
        f = oracle.minimise_time(s, b, space.max_inner_steps, space.max_regional_rounds, bound, deadline)
        evaluations += f.evaluations
        open_bound = min(open_bound, f.open_bound)
        if f.time_s.size:
            found.append(f)
            bound = min(bound, float(f.time_s.min()) * (1 + oracle.TIE_REL))
    best = _best(s, found)
    if best is not None and best[1] > s.window_s:     # within the tie tolerance, but over the limit
        best = None
    return best, evaluations, open_bound


def _min_cost(s: Setting, space: DecisionSpace, deadline: float = math.inf):
    """Fewest nodes (cost is nodes x node price) reaching the target within the limit; then fastest."""
    batches = oracle.batches_most_promising_first(s, space)
    fewest, evaluations, open_nodes = math.inf, 0, math.inf
    for b in batches:
        n, count, left = oracle.fewest_nodes_within(s, b, space.max_inner_steps, space.max_regional_rounds,
                                                    s.window_s, at_most=fewest, deadline=deadline)
        fewest, evaluations, open_nodes = min(fewest, n), evaluations + count, min(open_nodes, left)
    cost_bound = open_nodes * s.node_price_usd if math.isfinite(open_nodes) else math.inf
    if not math.isfinite(fewest):
        return None, evaluations, cost_bound
    found = []
    for b in batches:
        at = oracle.with_nodes(b, int(fewest))
        if at is not None:
            f = oracle.minimise_time(s, at, space.max_inner_steps, space.max_regional_rounds, s.window_s)
            evaluations += f.evaluations
            found.append(f)
    best = _best(s, found)
    if best is None:
        return None, evaluations, cost_bound
    batch, _ = best
    return (batch, float(batch.nodes[0] * s.node_price_usd)), evaluations, cost_bound


def plan_from_batch(b: PlanBatch, i: int, is_moe: bool) -> Plan:
    """A user-facing Plan from row i of a batch (only the fields its mode uses; the
    expert-parallel scope always stated for a MoE model, never for a dense one)."""
    data: dict[str, Any] = {"mode": b.mode, "nodes": int(b.nodes[i]), "precision": b.precision}
    if b.mode != "pipeline_wan":
        data.update(inner_steps=int(b.inner_steps[i]), compression=float(b.compression[i]),
                    streaming=bool(b.streaming[i]))
    if b.mode == "hierarchical":
        data.update(group_size=int(b.group_size[i]), regional_rounds=int(b.regional_rounds[i]))
    if b.mode in ("pp_group", "pipeline_wan"):
        data.update(stages=int(b.stages[i]), micro_batches=int(b.micro_batches[i]),
                    activation_compression=float(b.activation_compression[i]))
    if is_moe:
        data["expert_parallel"] = b.expert_parallel
    return parse_plan(data, "<solver>")


def binding_limits(e: Evaluation, space: DecisionSpace) -> list[str]:
    """Limits and search bounds the optimum sits on (where relaxing them could help)."""
    b, v, s = e.batch, e.values, e.setting
    out = []
    n = int(b.nodes[0])
    if n == space.max_nodes:
        out.append(f"node-limit: uses all {n} nodes available")
    if s.budget_usd is not None and (n + 1) * s.node_price_usd > s.budget_usd:
        out.append(f"budget-limit: one more node would exceed ${s.budget_usd:,.0f}")
    if v["time_to_target_s"] > 0.999 * s.window_s:
        out.append(f"duration-limit: {v['time_to_target_s'] / SECONDS_PER_DAY:,.1f} of "
                   f"{s.window_s / SECONDS_PER_DAY:,.1f} days")
    if b.mode in ("pp_group", "pipeline_wan") and int(b.stages[0]) == int(v["min_stages"]):
        out.append(f"memory-cap: {int(b.stages[0])} stages, the fewest that hold the model")
    if v["synchronised"] and int(b.inner_steps[0]) == space.max_inner_steps:
        out.append(f"search bound: H = max_inner_steps = {space.max_inner_steps}")
    if v["synchronised"] and float(b.compression[0]) == max(space.compression):
        out.append(f"search bound: compression {float(b.compression[0]):g}x, the largest allowed")
    if b.mode == "hierarchical" and int(b.regional_rounds[0]) == space.max_regional_rounds:
        out.append(f"search bound: R = max_regional_rounds = {space.max_regional_rounds}")
    return out


def explain_infeasible(s: Setting, space: DecisionSpace) -> list[str]:
    """Which limits cannot be met together, in words."""
    batches = list(oracle.batches(s, space))
    if batches:
        fastest = _best(s, [oracle.minimise_time(s, b, space.max_inner_steps, space.max_regional_rounds)
                            for b in batches])
        if fastest is not None:
            return [f"duration-limit: the fastest plan reaches the target in {fastest[1] / SECONDS_PER_DAY:,.1f} "
                    f"days, the limit is {s.window_s / SECONDS_PER_DAY:,.1f} days"]
    # No plan meets the limits that do not depend on H and R: say what each allows.
    a = s.assumptions
    lightest = min(space.precisions, key=a.bytes_per_param)
    state_gb = s.params * a.bytes_per_param(lightest) / 1e9
    stages = int(np.ceil(s.params * a.bytes_per_param(lightest) / s.memory_bytes))
    affordable = (math.inf if s.budget_usd is None or s.node_price_usd == 0
                  else math.floor(s.budget_usd / s.node_price_usd))
    reasons = [f"memory-cap: the training state is {state_gb:,.0f} GB in {lightest}; a node holds "
               f"{s.memory_bytes / 1e9:,.0f} GB, so a copy of the model needs at least {stages} pipeline stages"
               + (f" (search.max_stages = {space.max_stages})" if stages > space.max_stages else "")]
    reasons.append(f"node-limit: at most {space.max_nodes} nodes" + (
        f"; one pipeline of {stages} stages needs {stages}, two DiLoCo groups of them {2 * stages}"
        if stages > 1 else ""))
    if math.isfinite(affordable):
        reasons.append(f"budget-limit: ${s.budget_usd:,.0f} buys {affordable} nodes at ${s.node_price_usd:,.0f} each")
    if s.is_moe:
        reasons.append("mixture of experts: expert parallelism can cut the state per node in flat and "
                       "hierarchical modes (search.expert_parallel)")
    return reasons
