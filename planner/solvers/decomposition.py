"""The exact planner for a fleet of pools (docs/fleet.md, "Planner"): a decomposition over the
pools used, each part solved by the existing exact machinery.

Under the synchronous straggler rule (`planner.fleet.replicas`) a mixed plan's time, compute
and every limit but cost depend on its pools only through U, the set of pools it uses (the
slowest sets the pace, the smallest memory the state per node), and on N = sum_p n_p. So:

1. for every non-empty subset U of the pools (2^P - 1 of them, P <= 64 but in practice a few)
   and every precision all of U runs, the plans using exactly U are the uniform plans of
   `mixed_setting(U, precision)` with |U| <= N <= cap_U, where
   cap_U = min(sum_{p in U} count_p, limits.max_nodes, the most nodes of U the budget buys);
2. among the plans of U with N nodes the cheapest assignment is `cheapest_fill` (one node of
   each pool of U, then the cheapest pools first); its cost never falls as N grows;
3. each (U, precision) part is solved by `planner.solve.optimise` (the branch and bound, or the
   exhaustive oracle, or a MIP backend certified by the branch and bound), with these bounds:
   - min_time: least time; ties across parts to the cheaper plan, then the earlier part;
   - min_cost: fewest N (the part's cost is nondecreasing in N), then, when pools of price 0
     leave several N at that cost, the fastest plan among them (a min_time solve over those N);
     across parts least cost, then least time;
   - max_compute: most compute; ties to the cheaper plan.
   Each part's answer is an exact optimum over its plans, the parts cover every mixed plan
   (a plan using exactly U appears in part U), so the best over the parts is the optimum.
   With regions chosen (`planner.fleet.regions`) a part is also a partition of the sites of U into
   regions; with several regions a plan's nodes must be placeable and its cost is its cheapest
   placement's, C_u(N) >= the cheapest fill: a budget keeps the (N, u) placed within it, and
   min_cost descends over cost limits (`placed.least_cost_placed`) instead of taking the fewest N,
   and min_time / max_compute take, among the part's plans tied with its optimum, one of least
   C_u(N) (`placed.cheapest_tied`; the solvers' tie order, fewer nodes first, is the cheaper
   only while the cost is the cheapest fill).

With one pool there is one part: the uniform solve of that pool's setting. `planner.solvers.
mixed_oracle` checks this against every assignment of nodes to pools, scored one by one.
"""

from __future__ import annotations

import dataclasses
import math
import time

import numpy as np

from planner.objectives import MIN_TIME, Objective
from planner.cost.setting import PlanBatch
from planner.fleet.evaluate import evaluate_mixed
from planner.fleet.network import site_network
from planner.fleet.pools import PoolSetting, pool_settings
from planner.fleet.region_plans import part_counts, plan_regions
from planner.fleet.replicas import affordable_nodes, cheapest_fill, fleet_cost_usd, mixed_setting, unsupported
from planner.solvers.objective_search import min_time, tie_less
from planner.solvers.placed import cheapest_tied, least_cost_placed
from planner.solvers.pool_parts import MAX_COUNTED_PARTS, Part, PartResult, base_space, compute_bound_s, parts_until
from planner.sync.rules import rules_searched
from planner.schema.instance import Instance
from planner.schema.plan import parse_plan


def solve_part(instance: Instance, pools: list[PoolSetting], part: Part, objective: Objective, solver: str,
               deadline: float, incumbent_s: float = math.inf,
               incumbent_compute: float = 0.0) -> tuple[PartResult | None, int, float]:
    """The part's optimum, the plans it scored and its proven bound in the objective's units
    (seconds, USD, FLOP). `incumbent_s` (min_time): the time of a plan of another part; the
    branch and bound then prunes every box that cannot come within the tie tolerance of it
    (`objective_search.min_time`), and a part with nothing as good returns None with bound inf. For
    min_cost on several chosen regions it is the cost of a plan of another part (ties kept).
    `incumbent_compute` (max_compute, FLOP): likewise (`objective_search.max_compute`), bound 0."""
    from planner.solvers.objective_search import max_compute
    from planner.solvers.uniform import optimise
    from planner.solvers import monotone
    s, space = part.setting, part.space
    placed = objective.by_cost and part.placement is not None
    if placed:          # several chosen regions: a plan costs its placement's C_u(N), not monotone in N
        batch, _, evaluations, bound = least_cost_placed(s, space, part.placement, deadline, solver,
                                                         incumbent_s * (1 + 1e-12))
        found = None if batch is None else (batch, None)
    elif (objective.by_time and solver == "bnb" and math.isfinite(incumbent_s)
            and not monotone.check(s).unsupported):
        found, evaluations, bound = min_time(s, space.for_objective(s, objective), deadline, incumbent_s)
    elif (objective.maximise and solver == "bnb" and incumbent_compute > 0
            and not monotone.check(s).unsupported):
        found, evaluations, bound = max_compute(s, space.for_objective(s, objective), deadline, incumbent_compute)
    else:
        found, evaluations, bound = optimise(s, space, objective, deadline, solver=solver)
    if objective.by_cost and not placed:          # bound and value are node counts (unit price)
        bound = _cost_of(pools, part.used, bound)
    if found is None:
        return None, evaluations, bound
    if not objective.by_cost and part.placement is not None:      # ties to the cheaper placement
        found, more = cheapest_tied(s, space, part.placement, objective, found, deadline, solver)
        evaluations += more
    batch, value = found
    if objective.by_cost and not placed:
        batch, more = _fastest_at_same_cost(pools, part, batch, deadline, solver)
        evaluations += more
    counts = part_counts(pools, part.used, part.placement, batch)
    cost = fleet_cost_usd(pools, counts)
    if objective.by_cost:
        from planner.cost.score import time_to_target
        value = cost
        key = (cost, float(time_to_target(s, batch)["time_to_target_s"][0]))
    elif objective.maximise:
        key = (-value, cost)
    else:
        key = (value, cost)
    return PartResult(part, batch, counts, key, value), evaluations, bound


def _cost_of(pools, used, nodes: float) -> float:
    """The least cost of a plan of `used` with at least `nodes` nodes (a node-count bound in USD)."""
    if not math.isfinite(nodes):
        return math.inf
    n = max(int(math.ceil(nodes - 1e-9)), len(used))
    counts = cheapest_fill(pools, used, min(n, sum(pools[i].count for i in used)))
    return fleet_cost_usd(pools, counts) if counts is not None else math.inf


def _fastest_at_same_cost(pools, part: Part, batch: PlanBatch, deadline: float, solver: str):
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


def best_part(results: list[PartResult]) -> PartResult | None:
    """Least key (tie tolerance TIE_REL; its last entry is the part's index: ties to the earlier part)."""
    best = None
    for r in results:
        if best is None or tie_less(r.key, best.key):
            best = r
    return best


def plan_of(result: PartResult, pools: list[PoolSetting], is_moe: bool):
    """The user-facing plan of a part's optimum, with its pool_nodes (cheapest fill)."""
    from planner.solvers.uniform import plan_from_batch
    plan = plan_from_batch(result.batch, 0, is_moe)
    data = plan.model_dump(exclude_none=True)
    data["pool_nodes"] = {p.label: n for p, n in zip(pools, result.counts) if n}
    if (regions := plan_regions(result.part.sites)) is not None:
        data["regions"] = regions
    if result.rule != "straggler":
        data["sync_rule"] = result.rule
    return parse_plan(data, "<solver>")


def decompose(instance: Instance, objective: Objective, solver: str, deadline: float, start: float,
              explain: bool = True, incumbents: dict | None = None, part_bound=None):
    """`planner.solvers.mixed.solve_mixed` with the branch and bound, the exhaustive oracle or a MIP
    backend per part (not `--solver highs|scip` on the pools: that is `planner.solvers.mixed_mip`,
    which certifies its answer by this decomposition). `explain`: say why when no plan exists
    (`explain_mixed`). `incumbents`: per model size (None without search.params), the objective value
    of a known plan; the parts then prune against it (ties kept). `part_bound(part)`: a proven bound
    on the objective over the part's plans (seconds or USD below, FLOP above;
    `mixed_mip.SettingBounds` from the model's tables): a part that cannot come within 1e-9 of the
    best plan known is skipped."""
    pools = pool_settings(instance)
    rules = rules_searched(instance)
    maximise = objective.maximise
    found, evaluations, size = [], 0, 0
    bound = 0.0 if maximise else math.inf
    candidates = []
    for params in instance.search.params or [None]:
        size_found, size_bound, incumbent, most = [], (0.0 if maximise else math.inf), math.inf, 0.0
        if incumbents and not maximise and incumbents.get(params) is not None:
            incumbent = incumbents[params] * (1 + 1e-12)     # ties with it are still found
        if incumbents and maximise and incumbents.get(params) is not None:
            most = incumbents[params] * (1 - 1e-12)
        listed, complete = parts_until(instance, pools, params, deadline)
        # min_time, max_compute: most pools first (they tend to be fastest; for min_time their time
        # prunes the other parts); min_cost: fewest pools first, and a part may use only the nodes
        # that cost at most the cheapest plan found so far (ties included)
        order = range(len(listed)) if objective.by_cost else reversed(range(len(listed)))
        straggler_best: dict[int, float] = {}         # part index -> its straggler optimum (min_time)
        # 'proportional' alone: the plans at which every H_p = H are straggler plans, solved as such
        twins = listed if "straggler" in rules else [straggler_twin(pools, p) for p in listed]
        for index in (i for i in order if twins[i] is not None):
            if time.perf_counter() > deadline:
                complete = False          # the parts left are unknown, never pruned
                break
            part = twins[index]
            if objective.by_cost and math.isfinite(incumbent):
                top = min(part.space.max_nodes, affordable_nodes(pools, part.used, incumbent))
                if top < part.space.min_nodes:
                    continue              # every plan of the part costs more than the incumbent
                part = part._replace(space=dataclasses.replace(part.space, max_nodes=top))
            floor_s = compute_bound_s(part.setting, part.space.max_nodes) if objective.by_time else 0.0
            if floor_s > incumbent * (1 + 1e-12):
                size_bound = min(size_bound, floor_s)
                continue                  # no plan of the part can reach the best time found
            if part_bound is not None and not objective.by_cost:
                known = part_bound(part)
                if known < most * (1 - 1e-9) if maximise else known > incumbent * (1 + 1e-9):
                    size_bound = max(size_bound, known) if maximise else min(size_bound, known)
                    continue              # ... nor come within 1e-9 of it (ties are 1e-12 apart)
            result, count, part_bound_found = solve_part(instance, pools, part, objective, solver, deadline,
                                                         incumbent, most)
            if result is not None and result.value < floor_s * (1 - 1e-9):     # the bound checked where it is used
                raise AssertionError(f"compute bound {floor_s!r} s above a plan's time {result.value!r} s")
            if result is not None:
                result = result._replace(key=result.key + (index,))
                if "straggler" in rules:
                    straggler_best[index] = result.value
                else:                     # a twin's plan (H_p = H) under the rule, on the part as listed
                    result = result._replace(part=listed[index], rule="proportional")
                if not objective.maximise:
                    incumbent = min(incumbent, result.value)
                else:
                    most = max(most, result.value * (1 - 1e-12))
            evaluations += count
            if len(listed) > MAX_COUNTED_PARTS:        # counting costs about a third of the solve
                size = None
            elif size is not None:
                size += part.space.for_objective(part.setting, objective).size(part.setting)
            if result is not None:
                size_found.append(result)
                part_bound_found = max(part_bound_found, result.value) if maximise else \
                    min(part_bound_found, result.value)
            size_bound = max(size_bound, part_bound_found) if maximise else min(size_bound, part_bound_found)
        if not complete:                  # parts not listed or not solved in time: no bound on them
            size_bound, size = (math.inf if maximise else 0.0), None
        elif "proportional" in rules:
            most = max((r.value for r in size_found), default=-math.inf)       # max_compute: the best so far
            found_p, count, bound_p = proportional_parts(pools, listed, objective, deadline,
                                                         incumbent if not objective.maximise else most,
                                                         straggler_best if objective.by_time else {},
                                                         instance.limits.budget_usd)
            evaluations += count
            size_found += found_p
            size_bound = max(size_bound, bound_p) if maximise else min(size_bound, bound_p)
        best = best_part(size_found)
        if instance.search.params:
            candidates.append({"params": params, "objective_value": best.value if best else None,
                               "bound": size_bound})
        found += [best] if best is not None else []
        bound = max(bound, size_bound) if maximise else min(bound, size_bound)
    return answer(instance, pools, objective, solver, found, bound, evaluations, start, deadline,
                  dict(space_size=size, candidates=candidates), explain)


def answer(instance: Instance, pools: list[PoolSetting], objective: Objective, solver: str, found: list[PartResult],
           bound: float, evaluations: int, start: float, deadline: float, common: dict, explain: bool = True):
    """The SolveResult of the best of `found` (one PartResult per model size, key's last entry its
    part's index), with `bound` proven over everything searched."""
    from planner.solvers.uniform import AGREEMENT_REL, SolveResult, binding_limits
    maximise = objective.maximise
    elapsed = time.perf_counter() - start
    kind = instance.training.target_kind if maximise else None
    common = dict(common, compute_kind=kind)
    best = best_part([r._replace(key=r.key[:-1] + (k,)) for k, r in enumerate(found)])   # ties: the smaller size
    if best is None:
        if math.isfinite(deadline) and (bound > 0 if maximise else bound < math.inf):
            return SolveResult(objective, solver, "time_limit", None, bound, None, elapsed, evaluations, **common)
        reasons, fastest = explain_mixed(instance, pools, solver, deadline) if explain else ([], None)
        return SolveResult(objective, solver, "infeasible", None, None, None, elapsed, evaluations,
                           infeasibility=reasons, fastest_time_s=fastest, **common)
    value = best.value
    if maximise:
        status = "optimal" if bound <= value * (1 + 1e-12) else "time_limit"
        gap = 0.0 if status == "optimal" else (bound - value) / value
    else:
        status = "optimal" if bound >= value * (1 - 1e-12) else "time_limit"
        gap = 0.0 if status == "optimal" else (value - bound) / value
    plan = plan_of(best, pools, best.part.setting.is_moe)
    result = evaluate_mixed(instance, plan, params=best.part.params, pools=pools)
    rescored = result.values[objective.value_field(kind)]
    if not abs(rescored - value) <= AGREEMENT_REL * abs(value):
        raise AssertionError(f"re-scored objective {rescored!r} disagrees with the solver's {value!r}")
    if maximise:
        missed = [m for m in result.violations if m.startswith("duration-limit")]
        result.violations = [m for m in result.violations if m not in missed]
    space = dataclasses.replace(best.part.space, max_nodes=min(instance.fleet.nodes,
                                                               instance.limits.max_nodes or math.inf))
    return SolveResult(objective, solver, status, value, bound, gap, elapsed, evaluations, plan, result,
                       binding=binding_limits(result, space, objective), model_params=result.setting.params, **common)


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
            lower = _cost_of(pools, part.used, fewest)
            if lower > incumbent * (1 + 1e-12):
                bound = min(bound, lower)
                continue
        floor_s = compute_bound_s(s.replace(target_kind="c_local"), 1)
        node_flop_s = s.target / (floor_s * s.goodput) if floor_s > 0 else 0.0     # F u of the pace, 0: unknown
        scored_h = mp.h_worth_scoring(s, pools, part.used, part.precision, np.arange(h_min, space.max_inner_steps + 1),
                                      objective, incumbent, node_flop_s, int(space.max_nodes),
                                      lambda n, used=part.used: _cost_of(pools, used, n))
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


def explain_mixed(instance: Instance, pools: list[PoolSetting], solver: str,
                  deadline: float) -> tuple[list[str], float | None]:
    """Why no plan exists, and the fastest plan's time to target in seconds when only the duration
    limit is missed (else None). First the fastest plan over every subset of pools with no
    duration limit (a min_time solve of the instance at the schema's longest run); when even that
    has no plan, the uniform explanation of the other limits for every pool at once (paced by the
    slowest), or, when the pools share no precision, for each pool alone."""
    from planner.cost.duration import SECONDS_PER_DAY
    from planner.schema.limits import MAX_DAYS
    from planner.solvers.uniform import explain_infeasible
    if time.perf_counter() < deadline:
        unlimited = instance.model_copy(update={"limits": instance.limits.model_copy(update={"max_days": MAX_DAYS})})
        fastest = decompose(unlimited, MIN_TIME, solver, deadline, time.perf_counter(), explain=False)
        if fastest.status == "optimal":
            e = fastest.evaluation
            days = e.values["time_to_target_s"] / SECONDS_PER_DAY
            at_goodput = f" at goodput {e.setting.goodput:g}" if e.setting.goodput < 1 else ""
            limit = pools[0].setting.window_s / SECONDS_PER_DAY
            used = " + ".join(f"{n} x {name}" for name, n in fastest.plan.pool_nodes.items())
            return [f"duration-limit: the fastest plan ({used}) reaches the target in {days:,.1f} days{at_goodput}, "
                    f"the limit is {limit:,.1f} days"], float(e.values["time_to_target_s"])
    space = base_space(instance, pools)
    everything = tuple(range(len(pools)))
    common = [p for p in space.precisions if not unsupported(pools, everything, p)]
    groups = [(everything, common)] if common else [((i,), [p for p in space.precisions if p in pools[i].precisions])
                                                      for i in range(len(pools))]
    reasons = []
    sites = site_network(instance)
    for used, precisions in groups:
        if not precisions:
            continue
        s = mixed_setting(pools, used, precisions[0], sites).replace(
            peak_flops={p: mixed_setting(pools, used, p).peak_flops[p] for p in precisions},
            max_nodes=instance.limits.max_nodes, budget_usd=instance.limits.budget_usd)
        part_space = dataclasses.replace(space, precisions=tuple(precisions),
                                         max_nodes=min(sum(pools[i].count for i in used),
                                                       instance.limits.max_nodes or math.inf))
        label = "every pool (paced by the slowest)" if len(used) > 1 else f"pool {pools[used[0]].label!r} alone"
        lines, _ = explain_infeasible(s, part_space, deadline)
        reasons += [f"{label}: {line}" for line in lines if not line.startswith("duration-limit")]
    return reasons, None
