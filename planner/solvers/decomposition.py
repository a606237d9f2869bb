"""The exact planner for a fleet of pools (docs/fleet.md, "Planner"): a decomposition over the
pools used, each part solved by the existing exact machinery.

Under the synchronous straggler rule (`planner.sync.straggler.rule`) a mixed plan's time, compute
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

Beyond `MAX_EXACT_POOLS` pools, under the straggler rule, without sites or with the geography's
regions at up to 16 sites, the subsets are grouped into families of one setting each, one uniform
solve per family or span of families (`planner.solvers.pool_families`, proof there); under the
proportional rule (and its half of 'auto') into families of one setting and one fastest pool, one
search by the rule's boxes each where the fastest split is the best, without sites
(`planner.solvers.proportional_families`, proof there), else (a budget, min_cost, Chinchilla's
C_local, sites) a branch and bound over the subsets each family stands for
(`planner.solvers.proportional_subsets`; with sites a C_local target); with regions chosen by the
planner, under the straggler rule, into the families' choices with a region partition each
(`planner.solvers.pool_regions_families`, proof there), under the proportional rule the search over
subsets with every partition of a subset at its leaf (`planner.solvers.proportional_subsets`, proof
there); elsewhere beyond that the planner refuses
(exit 2).

This module lists the parts of each model size (`planner.solvers.pool_parts.parts_until`) and runs
each rule that fleet.sync_rule searches on them through the rules' interface
(`planner.sync.searches.RuleSearch.solve_parts`): the straggler rule's search of a part, above, is
`planner.sync.straggler.search`, the proportional rule's `planner.sync.proportional.parts`. It keeps
the best part, re-scores it (`answer`) and says why when there is no plan (`explain_mixed`).
"""

from __future__ import annotations

import dataclasses
import math
import time

from planner.objectives import MIN_TIME, Objective
from planner.fleet.evaluate import evaluate_mixed
from planner.fleet.network import site_network
from planner.fleet.pools import PoolSetting, pool_settings
from planner.fleet.region_plans import plan_regions
from planner.fleet.replicas import unsupported
from planner.sync.straggler.rule import mixed_setting
from planner.solvers.objective_search import tie_less
from planner.solvers.pool_families import refuse, solve_families
from planner.solvers.pool_regions_families import solve_region_choices
from planner.solvers.proportional_families import solve_rule_families
from planner.solvers.pool_parts import MAX_EXACT_POOLS, PartResult, PartsRun, base_space, parts_until
from planner.sync.rules import rules_searched
from planner.sync.searches import search_of
from planner.schema.instance import Instance
from planner.schema.plan import parse_plan


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
    bound = objective.empty_bound
    candidates = []
    by_families = len(pools) > MAX_EXACT_POOLS
    chosen = site_network(instance) is not None and instance.network.regions == "chosen"
    if by_families:                       # the families (pool_families), or exit 2 naming --solver highs
        refuse(instance, pools)
    for params in instance.search.params or [None]:
        listed, complete = ([], True) if by_families else parts_until(instance, pools, params, deadline)
        run = PartsRun(instance, pools, objective, solver, deadline, listed, rules, part_bound=part_bound,
                       complete=complete, bound=objective.empty_bound, size=size)
        if incumbents and not maximise and incumbents.get(params) is not None:
            run.incumbent = incumbents[params] * (1 + 1e-12)     # ties with it are still found
        if incumbents and maximise and incumbents.get(params) is not None:
            run.most = incumbents[params] * (1 - 1e-12)
        if by_families and "straggler" in rules and chosen:     # regions chosen: the choices' parts
            solve_region_choices(run, params)
        elif by_families and "straggler" in rules:          # straggler first: ties go to it
            solve_families(run, params)
        if by_families and "proportional" in rules:
            solve_rule_families(run, params)
        for rule in () if by_families else rules:                # straggler first: ties go to it
            search_of(rule).solve_parts(run)
        evaluations += run.evaluations
        size_bound, size = run.bound, run.size
        if not run.complete:              # parts not listed or not solved in time: no bound on them
            size_bound, size = (math.inf if maximise else 0.0), None
        best = best_part(run.found)
        if instance.search.params:
            candidates.append({"params": params, "objective_value": best.value if best else None,
                               "bound": size_bound})
        found += [best] if best is not None else []
        bound = max(bound, size_bound) if maximise else min(bound, size_bound)
    return answer(instance, pools, objective, solver, found, bound, evaluations, start, deadline,
                  dict(space_size=size, candidates=candidates), explain)


def status_and_gap(value: float, bound: float, maximise: bool) -> tuple[str, float]:
    """("optimal", 0) when the proven bound meets the value (1e-12 relative; an upper bound under max_compute, a
    lower bound otherwise), else ("time_limit", the relative gap between them)."""
    if maximise:
        met = bound <= value * (1 + 1e-12)
        return ("optimal", 0.0) if met else ("time_limit", (bound - value) / value)
    met = bound >= value * (1 - 1e-12)
    return ("optimal", 0.0) if met else ("time_limit", (value - bound) / value)


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
    status, gap = status_and_gap(value, bound, maximise)
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
