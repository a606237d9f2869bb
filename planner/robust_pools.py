"""Robust plans on a fleet of pools (docs/robust.md, "Pools"): the decomposition of
`planner.solvers.mixed` over the pools used, each part's robust optimum proven by
`planner.robust.optimise`.

Why it is exact. A scenario changes assumption fields only (its pools keep their hardware, count,
price and site: `check_pools` refuses any other), so under each scenario s the decomposition's
argument holds as it does nominally (docs/fleet.md, "Planner"): under the synchronous straggler
rule a plan using exactly the pools U at a precision with N nodes is scored, in scenario s, by the
uniform plan of N nodes in `mixed_setting(U, precision)` built from s's pools, and its least cost
is the cheapest fill of N nodes of U, the same in every scenario. So the robust key of a mixed
plan (the statistic of its measures over the scenarios) is the robust key of that uniform plan
over the part's scenario Settings, and within a part a plan's cost is a nondecreasing function of N
alone. Per part (U, precision, model size):

- min_time: the part's robust optimum (least robust time within the duration limit) is its best
  plan; ties with another part go to the cheaper plan, then the earlier part (fewer pools first).
- min_cost: the part's robust optimum at unit price has the fewest nodes N* among the plans
  whose robust time is within the limit; the cheapest fill's cost never falls as N grows, so no
  plan of the part costs less. Pools of price 0 may give N* .. N_hi the same cost: the robust
  min_time over those node counts picks the least robust time among the tied plans. Across parts
  the least cost wins, then the least robust time.
- max_compute: the most robust compute; ties to the cheaper plan.

The parts cover every mixed plan (a plan using exactly U appears in part U) and each part's answer
is its exact robust optimum, so the best over the parts is the robust optimum. Not covered, and
refused with exit 2 naming the field: `fleet.sync_rule` proportional or auto (a plan's inner steps
differ per pool), `network.regions` chosen (a part is a placement with its own cost).
"""

from __future__ import annotations

import dataclasses
import math
from typing import NamedTuple

from planner.cost.score import time_to_target
from planner.cost.setting import Setting
from planner.evaluate import with_params
from planner.fleet.pools import PoolSetting
from planner.fleet.replicas import affordable_nodes, cheapest_fill, fleet_cost_usd
from planner.sync.straggler.rule import mixed_setting
from planner.objectives import MIN_TIME, Objective
from planner.robust import ROBUST_OPTION, Statistic, optimise
from planner.schema.errors import InputError, Problem
from planner.schema.instance import Instance
from planner.solvers.pool_parts import Part, PartResult, parts, unit_price
from planner.sync.straggler.search import compute_bound_s
from planner.solvers.objective_search import tie_less


class PoolsAnswer(NamedTuple):
    """The robust optimum over the parts of one model size: the best part's result (None: no plan),
    the part's scenario Settings, plans scored, and the proven bound (seconds, USD or FLOP)."""

    best: PartResult | None
    settings: list[Setting] | None
    evaluations: int
    bound: float


def check_pools(instance: Instance, scenario_pools: list[list[PoolSetting]], labels: list[str]) -> None:
    """InputError unless the robust pools search applies (module docstring)."""
    problems = []
    if instance.fleet.sync_rule != "straggler":
        problems.append(Problem("fleet.sync_rule", f"{ROBUST_OPTION} on a fleet of pools takes the straggler rule "
                                                   f"only, got {instance.fleet.sync_rule!r}"))
    if instance.network.regions == "chosen":
        problems.append(Problem("network.regions", f"{ROBUST_OPTION} on a fleet of pools takes geography regions "
                                                   f"only, got 'chosen'"))
    nominal = scenario_pools[0]
    for label, pools in zip(labels[1:], scenario_pools[1:]):
        if [(p.label, p.count, p.hardware, p.site) for p in pools] != \
                [(p.label, p.count, p.hardware, p.site) for p in nominal]:
            problems.append(Problem(f"{ROBUST_OPTION} scenario {label}", "changes the pools (hardware, count, price or "
                                                                        "site); not supported"))
    if problems:
        raise InputError(problems)


def part_settings(scenario_pools: list[list[PoolSetting]], part: Part, params: float | None) -> list[Setting]:
    """The part's Setting under each scenario (as `planner.solvers.pool_parts.parts_until` builds it nominally)."""
    out = []
    for pools in scenario_pools:
        s = mixed_setting(pools, part.used, part.precision, part.sites)
        out.append(unit_price(s if params is None else with_params(s, params)))
    return out


def solve_pools(instance: Instance, scenario_pools: list[list[PoolSetting]], labels: list[str], objective: Objective,
                statistic: Statistic, params: float | None, solver: str = "bnb",
                deadline: float = math.inf, reports: list | None = None) -> PoolsAnswer:
    """The robust optimum of one model size over every part (module docstring); a MIP `solver` answers each
    part (`planner.robust.optimise`), its reports appended to `reports`."""
    pools = scenario_pools[0]
    maximise = objective.maximise
    best, best_settings, evaluations = None, None, 0
    bound = objective.empty_bound
    listed = parts(instance, pools, params)
    # as planner.solvers.mixed: min_time, max_compute most pools first (their optimum prunes the other
    # parts); min_cost fewest pools first, a part then searched only up to the nodes that cost at
    # most the cheapest plan found (ties kept)
    order = range(len(listed)) if objective.by_cost else reversed(range(len(listed)))
    for index in order:
        part = listed[index]
        incumbent = None
        if best is not None and objective.by_cost:
            top = min(part.space.max_nodes, affordable_nodes(pools, part.used, best.value * (1 + 1e-12)))
            if top < part.space.min_nodes:
                continue          # every plan of the part costs more than the best found
            part = part._replace(space=dataclasses.replace(part.space, max_nodes=top))
        elif best is not None and solver != "exhaustive":
            incumbent = best.value * (1 - 1e-12 if maximise else 1 + 1e-12)      # ties with it are still found
        settings = part_settings(scenario_pools, part, params)
        if objective.by_time:
            # each scenario's compute bound (planner.sync.straggler.search.compute_bound_s, 0 where it is not
            # known to hold) bounds that scenario's time of every plan of the part; the statistic is
            # monotone in each entry, so the statistic of the bounds bounds the part's robust time
            floor_s = float(statistic.of_values([compute_bound_s(s, part.space.max_nodes) for s in settings]))
            if best is not None and floor_s > best.value * (1 + 1e-12):
                bound = min(bound, floor_s)
                continue          # no plan of the part can come within the tie tolerance of the best
        found, count, part_bound = optimise(settings, part.space, objective, statistic, labels, deadline, solver,
                                            incumbent, reports)
        evaluations += count
        if objective.by_cost:
            part_bound = _least_cost(pools, part.used, part_bound)
        if found is None:
            bound = objective.tighter(bound, part_bound)
            continue
        batch, value = found
        n = int(batch.nodes[0])
        cost = fleet_cost_usd(pools, cheapest_fill(pools, part.used, n))
        if objective.by_cost:
            high = min(affordable_nodes(pools, part.used, cost), part.space.max_nodes)
            if high > n:          # pools of price 0: N* .. high cost the same; the least robust time wins
                tied = dataclasses.replace(part.space, min_nodes=n, max_nodes=high)
                fastest, more, _ = optimise(settings, tied, MIN_TIME, statistic, labels, deadline, solver,
                                            reports=reports)
                evaluations += more
                batch = fastest[0] if fastest is not None else batch
            robust_s = float(statistic.of_values([time_to_target(s, batch)["time_to_target_s"][0] for s in settings]))
            value, key = cost, (cost, robust_s, index)
        else:
            key = (-value if maximise else value, cost, index)
        bound = objective.tighter(bound, objective.tighter(part_bound, value))
        counts = cheapest_fill(pools, part.used, int(batch.nodes[0]))
        result = PartResult(part, batch, counts, key, value)
        if best is None or tie_less(key, best.key):
            best, best_settings = result, settings
    return PoolsAnswer(best, best_settings, evaluations, bound)


def _least_cost(pools: list[PoolSetting], used: tuple[int, ...], nodes: float) -> float:
    """A part's node-count bound in USD: the cheapest fill of the least whole node count >= `nodes`
    (inf when none), the fill's cost being nondecreasing in the count."""
    if not math.isfinite(nodes):
        return math.inf
    total = sum(pools[i].count for i in used)
    n = max(int(math.ceil(nodes - 1e-9)), len(used))
    return fleet_cost_usd(pools, cheapest_fill(pools, used, n)) if n <= total else math.inf
