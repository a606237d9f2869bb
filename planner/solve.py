"""Find the best plan of an instance and explain it (docs/planner.md, "Objectives").

Objectives:
- `min_time`: least wall-clock until C_local (or C_quality) reaches the target, among
  plans that meet every limit (memory, nodes, structure, budget, run duration).
- `min_cost`: fewest dollars (= fewest nodes of the fleet's hardware) that reach the
  target within the run-duration limit; ties go to the faster plan.
- `max_compute`: the most C_quality (or C_local, per `training.target_kind`) reached
  within the run-duration limit W, in the window view (`planner.cost.run.window_view`:
  the run lasts W, eta_R is scored at its own tokens); no target.

With `search.params` (candidate model sizes) every size is solved and the best kept:
least time, least cost (then least time), or most compute; ties (1e-12 relative) go to
the smaller model. `SolveResult.model_params` reports the size chosen.

The chosen plan is re-scored by the evaluator (`planner.evaluate.evaluate`) and must
agree with the solver's objective to 1e-9 relative. Ties are broken by
`planner.bnb.tie_key`.

Layer: search, its front door (docs/architecture.md). The search of one setting by solver name
(`optimise`), the result type (`SolveResult`) and its parts are `planner.solvers.uniform`, named here
too; a fleet of pools is solved by `planner.solvers.mixed.solve_mixed`
(the decomposition `planner.solvers.decomposition`, or the one-model MIP path).
"""

from __future__ import annotations

import dataclasses
import math
import time

from planner.cost import envelope
from planner.evaluate import evaluate
from planner.objectives import KEYS, Objective, UnsupportedObjective, objective_named
from planner.schema.errors import InputError
from planner.schema.instance import Instance, size_set_problems
from planner.setting import setting_from_instance, with_params
from planner.solvers import UnsupportedBySolver, bnb
from planner.solvers.uniform import (AGREEMENT_REL, DEFAULT_SOLVER, MIP_SOLVERS, SOLVERS, SolveResult, binding_limits,
                                     explain_infeasible, optimise, plan_from_batch, solver_used)
from planner.solvers.objective_search import SizeRun, best_of_sizes
from planner.space import DecisionSpace

__all__ = ["AGREEMENT_REL", "DEFAULT_SOLVER", "MIP_SOLVERS", "SOLVERS", "SUPPORTED_OBJECTIVES", "SolveResult",
           "UnsupportedObjective", "binding_limits", "explain_infeasible", "optimise", "plan_from_batch", "solve",
           "with_beyond_evidence"]

SUPPORTED_OBJECTIVES = KEYS              # the keys users give (planner.objectives)


def solve(instance: Instance, objective: Objective | str | None = None, solver: str = DEFAULT_SOLVER,
          time_limit_s: float | None = None, deadline: float | None = None,
          explain_envelope: bool = False) -> SolveResult:
    """The optimal plan of `instance` for `objective` (default: the instance's; a key is parsed by
    `planner.objectives.objective_named`, raising `UnsupportedObjective`).

    With `time_limit_s`, a search that has not finished returns the best plan found,
    status `time_limit`, and the gap to a proven bound; `deadline` (a `time.perf_counter()`
    instant, e.g. a command's own wall limit) does the same, whichever comes first, and also
    cuts short the explanation of an infeasible instance. With `search.params`, every
    candidate model size is solved (one `Setting` each) and the best is returned.
    Raises `InputError` when the instance cannot be solved for this objective (a set of
    model sizes without a fixed FLOP target for min_time / min_cost).
    With `explain_envelope`, an answer with no plan inside the evidence envelope (dtplan profile) is
    solved again beyond it and says which envelope bounds stop it (`with_beyond_evidence`).
    """
    if explain_envelope:
        limit = min(time.perf_counter() + time_limit_s if time_limit_s is not None else math.inf,
                    deadline if deadline is not None else math.inf)
        limit = None if math.isinf(limit) else limit
        return with_beyond_evidence(instance, solve(instance, objective, solver, deadline=limit), solver, limit)
    objective = objective_named(objective or instance.objective)
    if solver not in SOLVERS:
        raise ValueError(f"unknown solver {solver!r}; available: {', '.join(SOLVERS)}")
    problems = size_set_problems(instance, objective.key)
    if problems:
        raise InputError(problems)
    if solver in MIP_SOLVERS:
        from planner.solvers import backends
        if solver not in backends():
            raise UnsupportedBySolver(f"solver {solver!r} is not installed here (pyomo with highspy, or ortools); "
                                      f"use --solver bnb")
    start = time.perf_counter()
    deadline = min(start + time_limit_s if time_limit_s is not None else math.inf,
                   deadline if deadline is not None else math.inf)
    if instance.fleet.is_mixed:          # a fleet of pools: the exact decomposition (docs/fleet.md)
        from planner.solvers.mixed import solve_mixed
        return solve_mixed(instance, objective, solver, deadline, start)
    base = setting_from_instance(instance)
    maximise = objective.maximise
    runs, mip = [], []
    for params in instance.search.params or [None]:
        setting = base if params is None else with_params(base, params)
        space = DecisionSpace.from_instance(instance, setting)
        found, evaluations, bound = optimise(setting, space, objective, deadline, solver=solver, reports=mip)
        if found is not None:     # the proven bound of this size: its open boxes and its optimum
            bound = objective.tighter(bound, found[1])
        runs.append(SizeRun(params, setting, space, found, evaluations, bound))
    elapsed = time.perf_counter() - start
    evaluations = sum(r.evaluations for r in runs)
    solver = solver_used(solver, [r.setting for r in runs])
    # the declared space's size (every class built: costly on large fleets), not counted past the deadline
    size = None if time.perf_counter() > deadline else \
        sum(r.space.for_objective(r.setting, objective).size(r.setting) for r in runs)
    bound = objective.best(r.bound for r in runs)
    kind = base.target_kind if maximise else None
    candidates = [{"params": r.params, "objective_value": r.found[1] if r.found else None, "bound": r.bound}
                  for r in runs] if instance.search.params else []
    common = dict(space_size=size, candidates=candidates, compute_kind=kind, mip=[r.to_dict() for r in mip])
    best = best_of_sizes(objective, runs)
    if best is None:
        if math.isfinite(deadline) and (bound > 0 if maximise else bound < math.inf):
            return SolveResult(objective, solver, "time_limit", None, bound, None, elapsed, evaluations, **common)
        reasons, fastest = [], []
        for params, setting, space, *_ in runs:
            prefix = f"model of {params / 1e9:,.4g}B parameters: " if params is not None and len(runs) > 1 else ""
            lines, fastest_s = explain_infeasible(setting, space, deadline)
            reasons += [prefix + line for line in lines]
            fastest += [fastest_s] if fastest_s is not None else []
        if envelope.on(base.assumptions):    # the envelope narrowed the space: say so (docs/quality.md)
            a, first = base.assumptions, runs[0].space
            note = envelope.unshown_compression_note(first.compression, first.precisions, a.bits_per_value, a.compressor)
            # with no shown ratio the envelope left no class: the limits found above explain nothing
            reasons = ([note] if note else reasons) + [envelope.ENVELOPE_NOTE]
        return SolveResult(objective, solver, "infeasible", None, None, None, elapsed, evaluations,
                           infeasibility=reasons, fastest_time_s=min(fastest, default=None), **common)
    params, setting, space, (batch, value), *_ = best
    if maximise:
        status = "optimal" if bound <= value * (1 + bnb.TIE_REL) else "time_limit"
        gap = 0.0 if status == "optimal" else (bound - value) / value
    else:
        status = "optimal" if bound >= value * (1 - bnb.TIE_REL) else "time_limit"
        gap = 0.0 if status == "optimal" else (value - bound) / value
    plan = plan_from_batch(batch, 0, setting.is_moe)
    result = evaluate(instance, plan, params=params)
    rescored = result.values[objective.value_field(kind)]
    if not abs(rescored - value) <= AGREEMENT_REL * abs(value):
        raise AssertionError(f"re-scored objective {rescored!r} disagrees with the solver's {value!r}")
    if maximise:      # no target: the run lasts the duration limit; say so if the instance's target is missed
        missed = [m for m in result.violations if m.startswith("duration-limit")]
        result.violations = [m for m in result.violations if m not in missed]
        result.warnings += [f"max_compute has no target; the instance's target ({setting.target:.3e} FLOP "
                            f"{setting.target_kind}) is not reached: {m.split(': ', 1)[1]}" for m in missed]
    return SolveResult(objective, solver, status, value, bound, gap, elapsed, evaluations, plan, result,
                       binding=binding_limits(result, space, objective), model_params=setting.params, **common)


def with_beyond_evidence(instance: Instance, result: SolveResult, solver: str = DEFAULT_SOLVER,
                         deadline: float | None = None) -> SolveResult:
    """`result` with, when it has no plan inside the evidence envelope (infeasible under the dtplan
    profile), the same question answered beyond it (`result.beyond_evidence`, `envelope.beyond_summary`)
    and a reason naming the envelope bounds that plan crosses, or saying the envelope is not what
    stops it (docs/quality.md, section 6). Any other result is returned as it is."""
    if result.status != "infeasible" or not envelope.on(setting_from_instance(instance).assumptions):
        return result
    given = instance.assumptions
    opened = instance.model_copy(update={"assumptions": given.model_copy(
        update={"constants": {**given.constants, "evidence_envelope": False}})})
    beyond = solve(opened, result.objective, solver, deadline=deadline)
    summary = envelope.beyond_summary(result.objective.key, beyond.status, beyond.objective_value,
                                      beyond.plan.model_dump(exclude_none=True) if beyond.plan else None,
                                      beyond.evaluation.envelope or [] if beyond.evaluation else [],
                                      beyond.fastest_time_s)
    note = [] if envelope.ENVELOPE_NOTE in result.infeasibility else [envelope.ENVELOPE_NOTE]   # pools: not yet said
    return dataclasses.replace(result, beyond_evidence=summary,
                               infeasibility=result.infeasibility + note + [envelope.beyond_line(summary)])

