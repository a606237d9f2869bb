"""`--robust`: the robust plan of an instance next to its nominal plan, and both plans' figures
under every scenario (the regret table). docs/robust.md; the search is `planner.robust`.

A fleet of pools is solved per model size by the decomposition of `planner.robust_pools` (its
scenario set built pool by pool), a uniform fleet by `planner.robust.optimise` directly.

- `robust_solve`: `dtplan solve --robust`. The robust optimum over the scenarios (worst case, or
  the k-th largest for `--quantile`), proven by the branch and bound (or every plan scored with
  `--solver exhaustive`; `--solver highs|scip`: the robust MIP of `planner.mip.robust`, its plan
  certified by the branch and bound, its report in the result's `mip`); the nominal optimum (`planner.solve.solve`); and each plan re-scored
  by the evaluator (`planner.evaluate.evaluate`) under each scenario's instance. The robust value
  recomputed from those figures must agree with the search's to 1e-9 relative.
- `robust_reach`: `dtplan feasible --robust`. Whether one plan reaches the target within the
  limits under every scenario (the robust min_time, worst case), and under which scenarios the
  scenario's own fastest plan does: "every", "some" (naming them) or "none".
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from planner.objectives import MIN_COST, MIN_TIME, Objective, objective_named
from planner.cost.duration import SECONDS_PER_DAY
from planner.cost.score import time_to_target
from planner.evaluate import batch_from_plan, evaluate, setting_from_instance, with_params
from planner.solvers.objective_search import tie_less
from planner.cost.setting import Setting
from planner.fleet.pools import pool_settings
from planner.questions.robust_scenarios import Scenario, scenario_settings
from planner.questions.robust_scenarios import scenario_pools as scenario_pools_of
from planner.questions.sweep.fields import with_fields
from planner.questions.thresholds import Answer, node_case
from planner.robust import ROBUST_OPTION, Statistic, optimise
from planner.robust_pools import check_pools, solve_pools
from planner.schema.instance import Instance, parse_instance
from planner.solve import AGREEMENT_REL, MIP_SOLVERS, SolveResult, plan_from_batch, solve
from planner.solvers import UnsupportedBySolver, backends
from planner.solvers.bnb import TIE_REL
from planner.solvers.decomposition import plan_of
from planner.solvers.pool_parts import base_space
from planner.space import DecisionSpace



@dataclass
class RobustResult:
    """The robust and the nominal optimum, and both plans under every scenario."""

    robust: SolveResult
    nominal: SolveResult
    scenarios: list[Scenario]
    statistic: Statistic
    value_name: str                     # time_to_target_s, c_quality or c_local: what each row gives
    rows: list[dict[str, Any]] = field(default_factory=list)   # per scenario: label, robust, nominal

    @property
    def status(self) -> str:
        return self.robust.status

    def to_dict(self) -> dict[str, Any]:
        return {"robust": self.robust.to_dict(), "nominal": self.nominal.to_dict(),
                "statistic": {"k": self.statistic.k, "scenarios": self.statistic.count,
                              "quantile": self.statistic.quantile, "description": self.statistic.describe()},
                "value": self.value_name, "scenarios": [s.to_dict() for s in self.scenarios],
                "regret": self.rows}


def _check(instance: Instance, solver: str) -> None:
    """UnsupportedBySolver when a MIP backend is asked for and is not installed here."""
    if solver in MIP_SOLVERS and solver not in backends():
        raise UnsupportedBySolver(f"{ROBUST_OPTION} with the MIP backend {solver!r}: not installed here; "
                                  f"use --solver bnb")


@dataclass
class _Run:
    """The robust optimum of one model size: its scenarios and Settings (of the chosen part, for a
    fleet of pools), the one-plan batch and value found (None: no plan), the key it is compared by
    across model sizes, its plan, the plans scored and the proven bound."""

    chosen: list[Scenario]
    settings: list[Setting]
    found: tuple | None
    key: tuple
    plan: Any
    evaluations: int
    bound: float
    mip: list = field(default_factory=list)     # what a MIP backend reported (`MipReport.to_dict`), per search
    space_size: int | None = None               # plans in the space searched (each scored under every scenario);
                                                # None for a fleet of pools (not counted)


def _uniform_run(instance: Instance, raw: dict, objective: Objective, quantile: float | None, params, solver: str,
                 deadline: float, paths) -> _Run:
    nominal = setting_from_instance(instance)
    nominal = nominal if params is None else with_params(nominal, params)
    space = DecisionSpace.from_instance(instance, nominal)
    chosen, settings = scenario_settings(raw, params, paths, instance.name or "<instance>",
                                         (space.modes, space.precisions))
    statistic = Statistic.of(len(settings), quantile)
    space = DecisionSpace.from_instance(instance, settings[0])
    reports: list = []
    found, count, bound = optimise(settings, space, objective, statistic, [s.label for s in chosen], deadline, solver,
                                   reports=reports)
    mip = [r.to_dict() for r in reports]
    # the space's size as the nominal solve counts it (every class built), not counted past the deadline
    size = None if time.perf_counter() > deadline else space.for_objective(settings[0], objective).size(settings[0])
    if found is None:
        return _Run(chosen, settings, None, (), None, count, bound, mip, size)
    batch, value = found
    time_s = _statistic_of(settings, statistic, batch, "time_to_target_s") if objective.by_cost else None
    key = objective.rank_key(value, time_s)
    bound = objective.tighter(bound, value)
    return _Run(chosen, settings, found, key, plan_from_batch(batch, 0, settings[0].is_moe), count, bound, mip,
                size)


def _pools_run(instance: Instance, raw: dict, objective: Objective, quantile: float | None, params, solver: str,
               deadline: float, paths) -> _Run:
    """`_uniform_run` for a fleet of pools (planner.robust_pools)."""
    pools = pool_settings(instance)
    space = base_space(instance, pools)
    chosen, scenario_pools = scenario_pools_of(raw, paths, instance.name or "<instance>", (space.modes, space.precisions))
    labels = [s.label for s in chosen]
    check_pools(instance, scenario_pools, labels)
    statistic = Statistic.of(len(scenario_pools), quantile)
    reports: list = []
    answer = solve_pools(instance, scenario_pools, labels, objective, statistic, params, solver, deadline, reports)
    mip = [r.to_dict() for r in reports]
    if answer.best is None:
        settings = [p[0].setting if params is None else with_params(p[0].setting, params) for p in scenario_pools]
        return _Run(chosen, settings, None, (), None, answer.evaluations, answer.bound, mip)
    best = answer.best
    plan = plan_of(best, scenario_pools[0], answer.settings[0].is_moe)
    return _Run(chosen, answer.settings, (best.batch, best.value), best.key, plan, answer.evaluations, answer.bound,
                mip)


def robust_optimum(instance: Instance, raw: dict, objective: Objective, statistic_quantile: float | None = None,
                   solver: str = "bnb", deadline: float = math.inf, paths=None):
    """(SolveResult of the robust optimum without re-scoring, scenarios, Statistic, per-scenario settings
    of the chosen size: for a fleet of pools, those of the chosen plan's part)."""
    _check(instance, solver)
    start = time.perf_counter()
    solve_size = _pools_run if instance.fleet.is_mixed else _uniform_run
    runs = [solve_size(instance, raw, objective, statistic_quantile, params, solver, deadline, paths)
            for params in instance.search.params or [None]]
    evaluations = sum(r.evaluations for r in runs)
    mip = [report for r in runs for report in r.mip]
    sizes = [r.space_size for r in runs]
    counted = dict(space_size=None if None in sizes else sum(sizes),
                   space_size_why="a fleet of pools under --robust" if instance.fleet.is_mixed else "time limit")
    statistic = Statistic.of(len(runs[0].chosen), statistic_quantile)
    elapsed = time.perf_counter() - start
    maximise = objective.maximise
    bound = objective.best(r.bound for r in runs)
    best = None
    for run in runs:
        if run.found is not None and (best is None or tie_less(run.key, best.key)):
            best = run
    kind = runs[0].settings[0].target_kind if maximise else None
    if best is None:
        status = "time_limit" if math.isfinite(deadline) and (bound > 0 if maximise else bound < math.inf) \
            else "infeasible"
        reasons = [] if status == "time_limit" else [
            f"robust: no plan meets every limit and reaches the target within the duration limit "
            f"({statistic.describe()})"]
        result = SolveResult(objective, solver, status, None, bound if status == "time_limit" else None, None,
                             elapsed, evaluations, infeasibility=reasons, compute_kind=kind, mip=mip, **counted)
        return result, runs[0].chosen, statistic, runs[0].settings
    value = best.found[1]
    if maximise:
        status = "optimal" if bound <= value * (1 + TIE_REL) else "time_limit"
        gap = 0.0 if status == "optimal" else (bound - value) / value
    else:
        status = "optimal" if bound >= value * (1 - TIE_REL) else "time_limit"
        gap = 0.0 if status == "optimal" else (value - bound) / value
    result = SolveResult(objective, solver, status, value, bound, gap, elapsed, evaluations, best.plan,
                         model_params=best.settings[0].params, compute_kind=kind, mip=mip, **counted)
    return result, best.chosen, statistic, best.settings


def _statistic_of(settings, statistic: Statistic, batch, key: str) -> float:
    return float(statistic.of_values(np.array([time_to_target(s, batch)[key][0] for s in settings])))


def scenario_instances(instance: Instance, raw: dict, chosen: list[Scenario]) -> list[Instance]:
    """The instance of each scenario (the instance as given first)."""
    return [instance if not s.overrides else parse_instance(with_fields(raw, s.overrides)) for s in chosen]


def plan_values(instances: list[Instance], plan, params: float | None, value_name: str) -> list[dict[str, Any]]:
    """The plan re-scored by the evaluator under each scenario: its value and whether it meets every limit."""
    out = []
    for inst in instances:
        e = evaluate(inst, plan, params=params)
        limits = [v for v in e.violations if not (value_name != "time_to_target_s" and v.startswith("duration-limit"))]
        out.append({"value": e.values[value_name], "cost_usd": e.values["cost_usd"], "meets_limits": not limits})
    return out


def robust_solve(instance: Instance, raw: dict, objective: Objective | str | None = None, solver: str = "bnb",
                 time_limit_s: float | None = None, deadline: float | None = None,
                 quantile: float | None = None, paths=None) -> RobustResult:
    """The robust plan, the nominal plan and the regret table (module docstring)."""
    objective = objective_named(objective or instance.objective)
    _check(instance, solver)
    start = time.perf_counter()
    deadline = min(start + time_limit_s if time_limit_s is not None else math.inf,
                   deadline if deadline is not None else math.inf)
    robust, chosen, statistic, settings = robust_optimum(instance, raw, objective, quantile, solver, deadline, paths)
    nominal = solve(instance, objective, solver, deadline=deadline)
    value_name = settings[0].target_kind if objective.maximise else "time_to_target_s"
    instances = scenario_instances(instance, raw, chosen)
    params = robust.model_params if instance.search.params else None
    with_plan = [(name, r) for name, r in (("robust", robust), ("nominal", nominal)) if r.plan is not None]
    figures = {name: plan_values(instances, r.plan, r.model_params if instance.search.params else None, value_name)
               for name, r in with_plan}
    rows = []
    for i, s in enumerate(chosen):
        row = {"scenario": s.label}
        for name, _ in with_plan:
            row[name] = figures[name][i]["value"]
            row[f"{name}_meets_limits"] = figures[name][i]["meets_limits"]
        rows.append(row)
    if robust.plan is not None:
        robust.evaluation = evaluate(instance, robust.plan, params=params)
        values = np.array([f["value"] for f in figures["robust"]])
        with np.errstate(divide="ignore"):
            key = float(statistic.of_values(1.0 / values if objective.maximise else values))
        rescored = 1.0 / key if objective.maximise else key if objective.by_time else \
            robust.evaluation.values["cost_usd"]
        if not abs(rescored - robust.objective_value) <= AGREEMENT_REL * abs(robust.objective_value) or \
                (not objective.maximise and key > settings[0].window_s * (1 + AGREEMENT_REL)):
            raise AssertionError(f"re-scored robust objective {rescored!r} (key {key!r}) disagrees with the "
                                 f"search's {robust.objective_value!r}")
    robust.solve_time_s = time.perf_counter() - start - nominal.solve_time_s
    return RobustResult(robust, nominal, chosen, statistic, value_name, rows)


# -- feasible --robust ----------------------------------------------------------------------


@dataclass
class RobustReach:
    """Whether the target is reachable under every scenario, some, or none."""

    verdict: str                          # every | some | none
    one_plan: SolveResult                 # the robust min_time (worst case): one plan for every scenario
    per_scenario: list[dict[str, Any]]    # label, reachable, days (the scenario's own fastest plan)

    def to_dict(self) -> dict[str, Any]:
        return {"verdict": self.verdict, "one_plan_for_every_scenario": self.one_plan.to_dict(),
                "scenarios": self.per_scenario}


def robust_reach(instance: Instance, raw: dict, solver: str = "bnb", deadline: float | None = None,
                 paths=None) -> RobustReach:
    """`feasible --robust` (module docstring): each scenario solved for its fastest plan within the
    limits (`planner.solve.solve`, min_time), and the one plan reaching under all of them."""
    _check(instance, solver)
    deadline = deadline if deadline is not None else math.inf
    one, chosen, _, _ = robust_optimum(instance, raw, MIN_TIME, None, solver, deadline, paths)
    rows = []
    for scenario, inst in zip(chosen, scenario_instances(instance, raw, chosen)):
        r = solve(inst, MIN_TIME, solver, deadline=deadline)
        rows.append({"scenario": scenario.label, "reachable": r.plan is not None, "status": r.status,
                     "days": r.objective_value / SECONDS_PER_DAY if r.objective_value is not None else None})
    reached = sum(1 for r in rows if r["reachable"])
    verdict = "every" if reached == len(rows) else ("none" if reached == 0 else "some")
    return RobustReach(verdict, one, rows)


# -- thresholds --robust ------------------------------------------------------------------------


def robust_answer(raw: dict, node, th, fit: bool = False, solver: str = "bnb"):
    """`thresholds --robust`, one row: the fewest nodes of the accelerator's node whose plan reaches
    the target within the limits under the statistic of the scenarios (robust min_cost, proven by
    the branch and bound), and that plan's robust (worst-case) days to target. The counterpart of
    `planner.questions.thresholds.answer`, whose nominal verification by re-solving it replaces by
    the search's proof. `solver`: "bnb", or a MIP backend (its plan certified by the branch and bound)."""
    case = node_case(raw, node, th, fit)
    if isinstance(case, Answer):
        return case
    data, instance, params, cap = case
    r, _, statistic, settings = robust_optimum(instance, data, MIN_COST, solver=solver)
    if r.status != "optimal":
        return Answer(node, False, model_params=params, result=r,
                      binding=r.infeasibility or [f"no plan with up to {cap:,} nodes reaches the target"])
    n = int(r.plan.nodes)
    days = _statistic_of(settings, statistic, batch_from_plan(settings[0], r.plan), "time_to_target_s") / SECONDS_PER_DAY
    return Answer(node, True, n, n * node.price_usd, days, params, r, [],
                  f"robust ({statistic.describe()}): {n:,} nodes, proven fewest by the branch and bound")


# -- sweep --robust -----------------------------------------------------------------------------


def sweep_row(instance: Instance, data: dict, objective: Objective | str | None, solver: str) -> tuple[dict[str, Any], Any]:
    """One point of `sweep --robust` (command "robust"): (row, plan): the robust optimum of the point's
    instance (its value: seconds, USD or FLOP, as `solve`), the statistic and the plan's cost, and
    the plan itself (None if none), whose fields the sweep adds as columns."""
    objective = objective_named(objective or instance.objective)
    r, chosen, statistic, settings = robust_optimum(instance, data, objective, solver=solver)
    cost = days = None
    if r.plan is not None:
        cost = evaluate(instance, r.plan, params=r.model_params if instance.search.params else None).values["cost_usd"]
        days = _statistic_of(settings, statistic, batch_from_plan(settings[0], r.plan),
                             "time_to_target_s") / SECONDS_PER_DAY
    return {"status": r.status, "objective": objective.key, "objective_value": r.objective_value,
            "best_bound": r.best_bound, "gap": r.gap, "statistic": statistic.describe(),
            "time_to_target_days": days, "cost_usd": cost,
            "model_params": r.model_params, "infeasibility": "; ".join(r.infeasibility) or None}, r.plan
