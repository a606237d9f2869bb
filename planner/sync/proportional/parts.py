"""The proportional rule's search of the parts of a fleet of pools (`planner.solvers.decomposition`):
the rule's part of the decomposition.

A part's plans at which every H_p = H (H below `first_h_that_differs`: all of them on one pool or on
pools of equal speed) are straggler plans bit for bit (`planner.sync.proportional.rule`): under
'auto' the straggler search has solved them, under 'proportional' alone they are solved by it on the
part's `straggler_twin` (`planner.sync.straggler.search.solve_parts`). The rest of each part, the H
at which some pool runs more steps, is `proportional_parts`: a part's best plan under the rule
(`planner.sync.proportional.search.solve_part`), after its bounds (`lower_bound_s`, `fewest_nodes`,
`h_worth_scoring`) against the best plan found.

Layer: search (as `planner.sync.proportional.search`).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from planner.fleet.pools import PoolSetting
from planner.objectives import Objective
from planner.solvers.pool_parts import Part, PartResult, PartsRun
from planner.sync.straggler import search as straggler
from planner.sync.straggler.search import compute_bound_s, cost_of_nodes


def solve_parts(run: PartsRun) -> None:
    """The proportional rule's plans of every part of `run.listed`, into `run` (module docstring): with
    'proportional' alone its plans at which every H_p = H first (the straggler search on the twins),
    then, when every part was listed and searched in time, the rest (`proportional_parts`)."""
    if "straggler" not in run.rules:
        straggler.solve_parts(run, [straggler_twin(run.pools, p) for p in run.listed], rule="proportional")
    if not run.complete:
        return
    objective = run.objective
    most = max((r.value for r in run.found), default=-math.inf)       # max_compute: the best so far
    found, count, bound = proportional_parts(run.pools, run.listed, objective, run.deadline,
                                             run.incumbent if not objective.maximise else most,
                                             run.straggler_best if objective.by_time else {},
                                             run.instance.limits.budget_usd)
    run.evaluations += count
    run.found += found
    run.bound = max(run.bound, bound) if objective.maximise else min(run.bound, bound)


def proportional_parts(pools: list[PoolSetting], listed: list[Part], objective: Objective, deadline: float,
                       incumbent: float, straggler_best: dict[int, float],
                       budget_usd: float | None = None):
    """The parts under the proportional rule (`planner.sync.proportional.search`): (their optima
    as PartResults, plans scored, the least bound (min_time) or the greatest (max_compute) over
    them). The plans of H below `first_h_that_differs` (every H_p = H: all of them on one pool or
    pools of equal speed) are straggler plans, already solved (`straggler_twin` when the proportional
    rule is the only one searched). `incumbent`: the best
    time (min_time), cost (min_cost) or compute (max_compute) found so far; only the H at which a
    plan could match it are scored (`h_worth_scoring`). Key index: after every straggler part, so
    that ties go to the straggler rule."""
    from planner.sync.proportional.rule import first_h_that_differs, step_ratios
    from planner.sync.proportional import search as mp
    maximise = objective.maximise
    out, evaluations = [], 0
    bound = 0.0 if maximise else math.inf
    order = reversed(range(len(listed)))         # most pools first: their time prunes the others
    for index in order:
        part = listed[index]
        s, space = part.setting, part.space
        # only the plans whose H gives some H_p > H differ from straggler plans (solved as such)
        h_min = first_h_that_differs(step_ratios(s, pools, part.used, part.precision), space.max_inner_steps)
        if h_min is None:
            continue
        if objective.by_time:
            lower = mp.lower_bound_s(s, pools, part.used, part.precision, straggler_best.get(index, math.inf),
                                     h_min, compute_bound_s(s, int(space.max_nodes)))
            if lower > incumbent * (1 + 1e-12):
                bound = min(bound, lower)
                continue
        if objective.by_cost:
            fewest = mp.fewest_nodes(s, pools, part.used, part.precision, h_min,
                                     compute_bound_s(s, 1))
            lower = cost_of_nodes(pools, part.used, fewest)
            if lower > incumbent * (1 + 1e-12):
                bound = min(bound, lower)
                continue
        floor_s = compute_bound_s(s.replace(target_kind="c_local"), 1)
        node_flop_s = s.target / (floor_s * s.goodput) if floor_s > 0 else 0.0     # F u of the pace, 0: unknown
        scored_h = mp.h_worth_scoring(s, pools, part.used, part.precision, np.arange(h_min, space.max_inner_steps + 1),
                                      objective, incumbent, node_flop_s, int(space.max_nodes),
                                      lambda n, used=part.used: cost_of_nodes(pools, used, n))
        if not scored_h.size:             # no plan of the part can match the incumbent (ties included)
            bound = max(bound, incumbent) if maximise else min(bound, incumbent)
            continue
        found, count, complete = mp.solve_part(pools, part.used, s, space, part.precision, objective, deadline,
                                               h_min, budget_usd, scored_h, incumbent)
        evaluations += count
        if not complete:
            bound = math.inf if maximise else 0.0
        elif found is not None:
            bound = max(bound, found.value) if maximise else min(bound, found.value)
        if found is None:
            continue
        incumbent = max(incumbent, found.value) if maximise else min(incumbent, found.value)
        out.append(PartResult(part, found.batch, found.counts, found.key + (len(listed) + index,), found.value,
                              "proportional"))
    return out, evaluations, bound


def straggler_twin(pools: list[PoolSetting], part: Part) -> Part | None:
    """With 'proportional' alone: the part's plans that run the rule with every H_p = H (H below
    `first_h_that_differs`; every H on one pool or pools of equal speed), which are straggler plans
    bit for bit (planner/sync/proportional/rule.py), as a part the straggler solvers search: modes flat
    and hierarchical, no ZeRO-3 shards, no expert parallelism (`rule_problems`). None when there is
    no such plan."""
    from planner.sync.proportional.rule import first_h_that_differs, step_ratios
    s, space = part.setting, part.space
    h_min = first_h_that_differs(step_ratios(s, pools, part.used, part.precision), space.max_inner_steps)
    modes = tuple(m for m in space.modes if m in ("flat", "hierarchical"))
    if h_min == 1 or not modes:
        return None
    s = s.replace(assumptions=dataclasses.replace(s.assumptions, search_zero_shards=False))
    space = dataclasses.replace(space, modes=modes, expert_parallel=("none",),
                                max_inner_steps=space.max_inner_steps if h_min is None else h_min - 1)
    return part._replace(setting=s, space=space)
