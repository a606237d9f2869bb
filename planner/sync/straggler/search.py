"""The straggler rule's search of the parts of a fleet of pools (`planner.solvers.decomposition`) and
its bound on them.

Under the straggler rule (`planner.sync.straggler.rule`) a plan using exactly the pools U at a
precision is the uniform plan of `mixed_setting(U, precision)` with N nodes, so a part (U, precision,
model size; `planner.solvers.pool_parts.Part`) is solved by the uniform solvers: `solve_part` runs
the branch and bound, the exhaustive oracle or a MIP backend on it (`planner.solvers.uniform.optimise`,
or the pruned searches of `planner.solvers.objective_search` against an incumbent, or the placed
searches of `planner.solvers.placed` under several chosen regions), and `solve_parts` runs it over
every part of a model size, skipping the parts that `compute_bound_s` (no plan of the part can reach
the best time found) or the caller's `part_bound` prove cannot hold the optimum.

Layer: search (it imports the setting, evaluate, space and objectives layers and the solvers below
the decomposition; never the decomposition, questions, present or the interfaces).
"""

from __future__ import annotations

import dataclasses
import math
import time

from planner.cost.setting import PlanBatch, Setting
from planner.fleet.pools import PoolSetting
from planner.fleet.region_plans import part_counts
from planner.fleet.replicas import affordable_nodes, cheapest_fill, fleet_cost_usd
from planner.objectives import MIN_TIME, Objective
from planner.schema.instance import Instance
from planner.solvers.objective_search import min_time
from planner.solvers.placed import cheapest_tied, least_cost_placed
from planner.solvers.pool_parts import MAX_COUNTED_PARTS, Part, PartResult, PartsRun


def solve_parts(run: PartsRun, parts: list[Part | None] | None = None, rule: str = "straggler") -> None:
    """Every part of `run.listed` (or `parts`, one per listed part, None to skip it) solved under the
    straggler rule, into `run` (its plans, bound, incumbent, plans scored, space size, completeness).
    min_time and max_compute visit the parts most pools first (they tend to be fastest; for min_time
    their time prunes the other parts), min_cost fewest pools first, a part then searched only up to
    the nodes that cost at most the cheapest plan found so far (ties included). `rule`: the rule the
    plans found run ('proportional' for its plans at which every H_p = H, `parts` then its
    `planner.sync.proportional.parts.straggler_twin`s, each result put on the part as listed)."""
    objective, pools, listed = run.objective, run.pools, run.listed
    maximise = objective.maximise
    parts = listed if parts is None else parts
    order = range(len(listed)) if objective.by_cost else reversed(range(len(listed)))
    for index in (i for i in order if parts[i] is not None):
        if time.perf_counter() > run.deadline:
            run.complete = False          # the parts left are unknown, never pruned
            break
        part = parts[index]
        if objective.by_cost and math.isfinite(run.incumbent):
            top = min(part.space.max_nodes, affordable_nodes(pools, part.used, run.incumbent))
            if top < part.space.min_nodes:
                continue              # every plan of the part costs more than the incumbent
            part = part._replace(space=dataclasses.replace(part.space, max_nodes=top))
        floor_s = compute_bound_s(part.setting, part.space.max_nodes) if objective.by_time else 0.0
        if floor_s > run.incumbent * (1 + 1e-12):
            run.bound = min(run.bound, floor_s)
            continue                  # no plan of the part can reach the best time found
        if run.part_bound is not None and not objective.by_cost:
            known = run.part_bound(part)
            if known < run.most * (1 - 1e-9) if maximise else known > run.incumbent * (1 + 1e-9):
                run.bound = max(run.bound, known) if maximise else min(run.bound, known)
                continue              # ... nor come within 1e-9 of it (ties are 1e-12 apart)
        result, count, part_bound_found = solve_part(run.instance, pools, part, objective, run.solver, run.deadline,
                                                     run.incumbent, run.most)
        if result is not None and result.value < floor_s * (1 - 1e-9):     # the bound checked where it is used
            raise AssertionError(f"compute bound {floor_s!r} s above a plan's time {result.value!r} s")
        if result is not None:
            result = result._replace(key=result.key + (index,))
            if rule == "straggler":
                run.straggler_best[index] = result.value
            else:                     # a twin's plan (H_p = H) under the rule, on the part as listed
                result = result._replace(part=listed[index], rule=rule)
            if not objective.maximise:
                run.incumbent = min(run.incumbent, result.value)
            else:
                run.most = max(run.most, result.value * (1 - 1e-12))
        run.evaluations += count
        if len(listed) > MAX_COUNTED_PARTS:        # counting costs about a third of the solve
            run.size = None
        elif run.size is not None:
            run.size += part.space.for_objective(part.setting, objective).size(part.setting)
        if result is not None:
            run.found.append(result)
            part_bound_found = max(part_bound_found, result.value) if maximise else \
                min(part_bound_found, result.value)
        run.bound = max(run.bound, part_bound_found) if maximise else min(run.bound, part_bound_found)


def solve_part(instance: Instance, pools: list[PoolSetting], part: Part, objective: Objective, solver: str,
               deadline: float, incumbent_s: float = math.inf,
               incumbent_compute: float = 0.0) -> tuple[PartResult | None, int, float]:
    """The part's optimum, the plans it scored and its proven bound in the objective's units
    (seconds, USD, FLOP). `incumbent_s` (min_time): the time of a plan of another part; the
    branch and bound then prunes every box that cannot come within the tie tolerance of it
    (`objective_search.min_time`), and a part with nothing as good returns None with bound inf. For
    min_cost on several chosen regions it is the cost of a plan of another part (ties kept).
    `incumbent_compute` (max_compute, FLOP): likewise (`objective_search.max_compute`), bound 0."""
    s, space = part.setting, part.space
    placed = objective.by_cost and part.placement is not None
    if placed:          # several chosen regions: a plan costs its placement's C_u(N), not monotone in N
        batch, _, evaluations, bound = least_cost_placed(s, space, part.placement, deadline, solver,
                                                         incumbent_s * (1 + 1e-12))
        found = None if batch is None else (batch, None)
    else:
        found, evaluations, bound = search_setting(s, space, objective, solver, deadline, incumbent_s,
                                                   incumbent_compute)
    if objective.by_cost and not placed:          # bound and value are node counts (unit price)
        bound = cost_of_nodes(pools, part.used, bound)
    if found is None:
        return None, evaluations, bound
    if not objective.by_cost and part.placement is not None:      # ties to the cheaper placement
        found, more = cheapest_tied(s, space, part.placement, objective, found, deadline, solver)
        evaluations += more
    batch, value = found
    if objective.by_cost and not placed:
        batch, more = fastest_at_same_cost(pools, part, batch, deadline, solver)
        evaluations += more
    counts = part_counts(pools, part.used, part.placement, batch)
    return part_result(part, batch, counts, fleet_cost_usd(pools, counts), value, objective), evaluations, bound


def search_setting(s: Setting, space, objective: Objective, solver: str, deadline: float, incumbent_s: float,
                   incumbent_compute: float):
    """`planner.solvers.uniform.optimise` of one part's setting, with the branch and bound's incumbent
    (min_time: a time in seconds; max_compute: a compute in FLOP, 0 for none) when it can take one."""
    from planner.solvers.objective_search import max_compute
    from planner.solvers.uniform import optimise
    from planner.solvers import monotone
    if objective.by_time and solver == "bnb" and math.isfinite(incumbent_s) and not monotone.check(s).unsupported:
        return min_time(s, space.for_objective(s, objective), deadline, incumbent_s)
    if objective.maximise and solver == "bnb" and incumbent_compute > 0 and not monotone.check(s).unsupported:
        return max_compute(s, space.for_objective(s, objective), deadline, incumbent_compute)
    return optimise(s, space, objective, deadline, solver=solver)


def part_result(part: Part, batch: PlanBatch, counts: list[int], cost: float, value: float,
                objective: Objective) -> PartResult:
    """The PartResult of a part's plan with these counts and cost (USD): its value (min_cost: the cost)
    and key, what the objective compares (time then cost; cost then time; -compute then cost)."""
    if objective.by_cost:
        from planner.cost.score import time_to_target
        return PartResult(part, batch, counts, (cost, float(time_to_target(part.setting, batch)["time_to_target_s"][0])),
                          cost)
    key = (-value, cost) if objective.maximise else (value, cost)
    return PartResult(part, batch, counts, key, value)


def cost_of_nodes(pools, used, nodes: float) -> float:
    """The least cost of a plan of `used` with at least `nodes` nodes (a node-count bound in USD)."""
    if not math.isfinite(nodes):
        return math.inf
    n = max(int(math.ceil(nodes - 1e-9)), len(used))
    counts = cheapest_fill(pools, used, min(n, sum(pools[i].count for i in used)))
    return fleet_cost_usd(pools, counts) if counts is not None else math.inf


def fastest_at_same_cost(pools, part: Part, batch: PlanBatch, deadline: float, solver: str):
    """min_cost found the fewest nodes N*; when pools of price 0 give larger N the same cost, the
    fastest plan of N* .. N_hi nodes (all of that cost) wins the tie."""
    from planner.solvers.uniform import optimise
    n = int(batch.nodes[0])
    cost = fleet_cost_usd(pools, cheapest_fill(pools, part.used, n))
    high = min(affordable_nodes(pools, part.used, cost), part.space.max_nodes)
    if high <= n:
        return batch, 0
    space = dataclasses.replace(part.space, min_nodes=n, max_nodes=high)
    found, evaluations, _ = optimise(part.setting, space, MIN_TIME, deadline, solver=solver)
    return (found[0] if found is not None else batch), evaluations


def compute_bound_s(s: Setting, nodes: int) -> float:
    """A lower bound on the time to target of every plan of a part with at most `nodes` nodes, or 0
    when it is not known to hold (then nothing is pruned by it):

        T_wall >= C_target / (N F u) / goodput

    Each node processes at most B tokens per t_comp = 6 P_act B / (F u) seconds in every mode (the
    outer step is at least H t_step >= H t_comp per replica, a pipeline step of S stages at least
    t_comp / S; the backup strategy's throughput fraction is <= 1), and C_local = 6 P_act T eta
    with eta = eta_H eta_C eta_A eta_R <= 1. That holds for a C_local target when eta_H <= 1
    (floor <= 1, alpha(P) >= 0, divisor >= 1), the quality tables are in [0, 1] and eta_R <= 1
    (facts (R) and (L) of `planner.solvers.monotone`)."""
    from planner.cost.straggler import eta_h_divisor
    from planner.solvers import monotone
    a = s.assumptions
    mono = monotone.check(s)
    tables = (a.compression_quality_ef, a.compression_quality_no_ef, a.activation_quality)
    if (s.target_kind != "c_local" or mono.unsupported or not mono.eta_h_falls or a.eta_h_floor > 1
            or eta_h_divisor(a) < 1 or any(not 0 <= q <= 1 for t in tables for row in t.values() for q in row)):
        return 0.0
    (precision, flops), = s.peak_flops.items()
    return s.target / (nodes * flops * a.mfu_for(precision)) / s.goodput
