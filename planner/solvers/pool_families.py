"""The exact planner beyond `pool_parts.MAX_EXACT_POOLS` pools (docs/fleet.md, "Beyond 12 pools"):
the subsets of pools grouped into families, one uniform solve per family instead of one per subset.

Where it applies (`refusal` is None): the straggler rule alone (fleet.sync_rule "straggler") and no
sites (`planner.fleet.network.site_network` None). Then `mixed_setting(U, q)` depends on the pools
used U only through (s, v): s = slowest(U, q), the pool of least achieved FLOP/s per node at the
precision q (ties to the first listed), which gives every field of the setting, and
v = min_{p in U} V_p, the node memory. With sites the links of U's sites enter the setting too, and
under the proportional rule each pool's inner steps: there the full listing of `pool_parts` stays,
and beyond 12 pools the planner refuses (exit 2, naming --solver highs).

A family (q, s, v): the pools eligible E = {s} u {p supporting q : (F_p u_p, p) > (F_s u_s, s),
V_p >= v} (s is then the slowest of any U in E holding s), with v <= V_s the memory of s or of a
pool of E; its forced pools F = {s} when V_s = v, else {s, m} for each m in E with V_m = v (some
pool must have the least memory). Its cheapest counts of N nodes (`replicas.cheapest_fill` with E):
one node of each pool of F, the rest from the cheapest pools of E (ties to the first listed); C(N), the least over the
choices of m, never falls as N grows (each fill adds the next cheapest node, prices >= 0). The
family's plans are the uniform plans of mixed_setting(F, q) with N in [max(min_nodes, |F|), top],
top = min(sum_{p in E} count_p, limits.max_nodes, the most N with C(N) <= limits.budget_usd).

Proof that the families' optimum is the listing's (every objective, with and without budget and node
caps): (a) a plan of the listing, on U with N nodes at q, lies in the family (q, slowest(U),
min_U V) with m a pool of U of least memory: U is within E and holds F, the setting is the same,
|F| <= |U| <= N <= sum_U count <= sum_E count, N <= max_nodes, and C(N) <= the cost of U's cheapest
fill <= the budget, so the family holds the same plan at a cost no higher; (b) a plan of a family,
with the counts of C(N), uses U = the pools given nodes: s and m are in it, so slowest(U) = s and
min_U V = v, and it is a plan of the listing's part U with that cost. The families' plans are the
listing's plans, each at its least cost, so the best value is the same; ties to the cheaper plan as
in the listing (within a family the uniform solvers' ties go to fewer nodes, the cheaper as C never
falls), then to the earlier family. The families number at most P x P x precisions (P <= 64).

min_time visits the families best-first by `compute_bound_s` at their top (a bound on every plan of
the family, proven there) and stops when it cannot come within the tie tolerance of the best time
found; min_cost by C at their least N, stopping likewise, each searched only up to the N that cost at
most the best found; max_compute best-first by the ceiling C_target W / `compute_bound_s` at their top
(`ceiling`; most nodes first among equal ceilings), stopping likewise, the best compute found pruning
inside each solve (`objective_search.max_compute`).
"""

from __future__ import annotations

import dataclasses
import math
import time
from typing import NamedTuple, Sequence

from planner.evaluate import with_params
from planner.fleet.network import site_network
from planner.fleet.pools import PoolSetting
from planner.fleet.replicas import cheapest_fill, fleet_cost_usd
from planner.objectives import MIN_TIME
from planner.schema.instance import Instance
from planner.solvers.pool_parts import (MAX_EXACT_POOLS, Part, PartResult, PartsRun, base_space, too_many_pools,
                                        unit_price)
from planner.sync.rules import rules_searched
from planner.sync.straggler.rule import mixed_setting
from planner.sync.straggler.search import compute_bound_s, part_result, search_setting

MAX_FAMILY_POOLS = 64             # the schema's most pools: at most 64 x 64 x precisions families


class Family(NamedTuple):
    """One (precision, slowest pool, least memory) family: its eligible pools, forced choices, setting
    and space (N in [space.min_nodes, space.max_nodes])."""

    precision: str
    eligible: tuple[int, ...]
    forced: tuple[tuple[int, ...], ...]    # each choice of the pools that must be used
    part: Part                             # setting and space; `used` the first forced choice


def refusal(instance: Instance, pools: Sequence[PoolSetting]) -> str | None:
    """Why the families do not give the exact optimum of this fleet (None: they do)."""
    if rules_searched(instance) != ("straggler",):
        return "the proportional rule (fleet.sync_rule) changes each pool's inner steps with the pools used"
    if site_network(instance) is not None:
        return "with sites the links change with the pools used"
    if len(pools) > MAX_FAMILY_POOLS:
        return f"more than {MAX_FAMILY_POOLS} pools"
    return None


def least_fill(pools: Sequence[PoolSetting], family: Family, nodes: int) -> tuple[float, list[int] | None]:
    """C(N): the least cost (USD) over the family's forced choices and its counts (inf, None: no fill)."""
    best = (math.inf, None)
    for forced in family.forced:
        counts = cheapest_fill(pools, forced, nodes, family.eligible)
        if counts is not None and fleet_cost_usd(pools, counts) < best[0]:
            best = (fleet_cost_usd(pools, counts), counts)
    return best


def most_within(pools: Sequence[PoolSetting], family: Family, low: int, high: int, limit_usd: float) -> int:
    """The most N in [low, high] with C(N) <= limit_usd (C never falls: bisection), low - 1 if none."""
    if least_fill(pools, family, low)[0] > limit_usd:
        return low - 1
    while low < high:
        mid = (low + high + 1) // 2
        low, high = (mid, high) if least_fill(pools, family, mid)[0] <= limit_usd else (low, mid - 1)
    return low


def families(instance: Instance, pools: list[PoolSetting], params: float | None) -> list[Family]:
    """Every family with at least one plan of node count in range (module docstring)."""
    space = base_space(instance, pools)
    cap = instance.limits.max_nodes or math.inf
    budget = instance.limits.budget_usd
    out = []
    for q in space.precisions:
        runs = [i for i, p in enumerate(pools) if q in p.precisions]
        for s in runs:
            above = [p for p in runs if (pools[p].rate(q), p) > (pools[s].rate(q), s)]
            memory = pools[s].setting.memory_bytes
            levels = sorted({memory} | {pools[p].setting.memory_bytes for p in above
                                        if pools[p].setting.memory_bytes <= memory}, reverse=True)
            for v in levels:
                eligible = tuple(sorted([s] + [p for p in above if pools[p].setting.memory_bytes >= v]))
                forced = ((s,),) if memory == v else tuple((s, m) for m in eligible
                                                           if m != s and pools[m].setting.memory_bytes == v)
                low = max(space.min_nodes, len(forced[0]))
                top = min(sum(pools[i].count for i in eligible), cap)
                family = Family(q, eligible, forced, None)
                if budget is not None and top >= low:
                    top = most_within(pools, family, low, int(top), budget)
                if top < low:
                    continue
                setting = mixed_setting(pools, forced[0], q)
                setting = unit_price(setting if params is None else with_params(setting, params))
                part_space = dataclasses.replace(space, precisions=(q,), min_nodes=low, max_nodes=int(top))
                out.append(family._replace(part=Part(params, forced[0], q, setting, part_space)))
    return out


def solve_families(run: PartsRun, params: float | None) -> None:
    """`planner.sync.straggler.search.solve_parts` over the families of `run`'s model size instead of
    its listed parts (`run.listed` empty): plans found, proven bound, incumbent, completeness; the
    space's size is not counted (`run.size` None)."""
    objective, pools = run.objective, run.pools
    listed = families(run.instance, pools, params)
    run.size = None
    if objective.by_time:
        order = sorted(range(len(listed)), key=lambda k: compute_bound_s(listed[k].part.setting,
                                                                       listed[k].part.space.max_nodes))
    elif objective.by_cost:
        order = sorted(range(len(listed)), key=lambda k: least_fill(pools, listed[k],
                                                                    listed[k].part.space.min_nodes)[0])
    else:
        order = sorted(range(len(listed)), key=lambda k: (-ceiling(listed[k].part), -listed[k].part.space.max_nodes))
    for index in order:
        if time.perf_counter() > run.deadline:
            run.complete = False
            break
        family = listed[index]
        part = family.part
        if objective.by_time:
            floor_s = compute_bound_s(part.setting, part.space.max_nodes)
            if floor_s > run.incumbent * (1 + 1e-12):     # best-first: every family left is as slow
                run.bound = min(run.bound, floor_s)
                break
        if objective.maximise and ceiling(part) < run.most:   # best-first: no family left comes within ties
            run.bound = max(run.bound, ceiling(part))
            break
        if objective.by_cost:
            floor_usd = least_fill(pools, family, part.space.min_nodes)[0]
            if floor_usd > run.incumbent:                  # best-first: every family left costs more
                run.bound = min(run.bound, floor_usd)
                break
            if math.isfinite(run.incumbent):               # only the N that cost at most the best (ties kept)
                top = most_within(pools, family, part.space.min_nodes, part.space.max_nodes, run.incumbent)
                if top < part.space.min_nodes:
                    continue
                part = part._replace(space=dataclasses.replace(part.space, max_nodes=top))
        result, count, bound = solve_family(pools, family, part, objective, run.solver, run.deadline,
                                            run.incumbent, run.most)
        run.evaluations += count
        if result is not None:
            result = result._replace(key=result.key + (index,))
            run.found.append(result)
            if objective.maximise:
                run.most = max(run.most, result.value * (1 - 1e-12))
                bound = max(bound, result.value)
            else:
                run.incumbent = min(run.incumbent, result.value)
                bound = min(bound, result.value)
        run.bound = max(run.bound, bound) if objective.maximise else min(run.bound, bound)


def ceiling(part: Part) -> float:
    """An upper bound on the compute (FLOP) within the duration limit of every plan of the part, inf when
    none is known: C_target x W / `compute_bound_s` at its most nodes (`compute_bound_s` bounds the time
    to reach C_target from below through the nodes' throughput, so the compute within W is at most this;
    the same bound as `planner.solvers.mixed_mip.SettingBounds`)."""
    floor_s = compute_bound_s(part.setting, part.space.max_nodes)
    return part.setting.target * part.setting.window_s / floor_s if floor_s > 0 else math.inf


def solve_family(pools: list[PoolSetting], family: Family, part: Part, objective, solver: str, deadline: float,
                 incumbent: float, most: float) -> tuple[PartResult | None, int, float]:
    """The family's optimum (as `planner.sync.straggler.search.solve_part` solves a part, the counts
    and cost from C(N)), the plans it scored and its proven bound in the objective's units."""
    from planner.solvers.uniform import optimise
    s, space = part.setting, part.space
    found, evaluations, bound = search_setting(s, space, objective, solver, deadline, incumbent, most)
    if objective.by_cost:         # bound and value are node counts (unit price): C of the least N
        bound = least_fill(pools, family, max(int(math.ceil(bound - 1e-9)), space.min_nodes))[0] \
            if math.isfinite(bound) else math.inf
    if found is None:
        return None, evaluations, bound
    batch, value = found
    n = int(batch.nodes[0])
    if objective.by_cost:         # pools of price 0: larger N at the same cost, the fastest of them
        high = most_within(pools, family, n, space.max_nodes, least_fill(pools, family, n)[0])
        if high > n:
            faster, more, _ = optimise(s, dataclasses.replace(space, min_nodes=n, max_nodes=high), MIN_TIME,
                                       deadline, solver=solver)
            evaluations += more
            batch = faster[0] if faster is not None else batch
            n = int(batch.nodes[0])
    cost, counts = least_fill(pools, family, n)
    part = part._replace(used=tuple(i for i, c in enumerate(counts) if c))
    return part_result(part, batch, counts, cost, value, objective), evaluations, bound


def refuse(instance: Instance, pools: Sequence[PoolSetting]) -> None:
    """InputError (exit 2) naming fleet.pools and --solver highs when neither the listing (at most
    MAX_EXACT_POOLS pools) nor the families apply."""
    why = refusal(instance, pools)
    if len(pools) > MAX_EXACT_POOLS and why is not None:
        too_many_pools(len(pools), why)
