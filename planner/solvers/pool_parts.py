"""The parts of the exact planner for a fleet of pools (`planner.solvers.decomposition`): one part per
(model size, pools used U, precision) with its reduced setting and space, and the bounds on them that
need no search.

`unit_price` gives a part's setting node price 1 (the uniform solver's cost is then N); `base_space`
is the instance's declared space with the precisions some pool runs; `compute_bound_s` is the
compute-only lower bound on the time to target of a part's plans. The pools' MIP
(`planner.mip.pools`), the robust pool solver and the oracles build on the same parts and bounds, so
they live here, below every module that searches them.
"""

from __future__ import annotations

import dataclasses
import math
import time
from itertools import combinations
from typing import NamedTuple

from planner.cost.setting import PlanBatch, Setting
from planner.evaluate import with_params
from planner.fleet.network import site_network
from planner.fleet.pools import PoolSetting
from planner.fleet.region_plans import part_regions
from planner.fleet.replicas import affordable_nodes, mixed_setting, unsupported
from planner.schema.instance import Instance
from planner.space import PRECISION_ORDER, DecisionSpace

MAX_EXACT_POOLS = 12            # 4,095 subsets: beyond that the decomposition is refused (exit 2)
MAX_COUNTED_PARTS = 64          # beyond, the space's size is not counted (SolveResult.space_size None)


class Part(NamedTuple):
    """One (model size, pools used, precision) part and its reduced setting and space."""

    params: float | None
    used: tuple[int, ...]
    precision: str
    setting: Setting
    space: DecisionSpace
    sites: object = None          # the site network view (regions) of the part, None without sites
    placement: object = None      # chosen regions with several regions (planner.fleet.regions)


class PartResult(NamedTuple):
    part: Part
    batch: PlanBatch
    counts: list[int]
    key: tuple[float, ...]        # what the objective compares (time / cost / -compute, then tie-breaks,
    value: float                  # then the part's place in `parts`: fewer pools first)
    rule: str = "straggler"       # the sync rule (planner/sync/proportional/rule.py)


def subsets(count: int):
    """Non-empty subsets of range(count), fewest pools first, then in listing order."""
    for size in range(1, count + 1):
        yield from combinations(range(count), size)


def unit_price(s: Setting) -> Setting:
    """The reduced setting with node price 1 and no budget or node cap of its own (the part's
    space carries them): the uniform solver's cost is then N, its bound a node count."""
    return s.replace(price_usd_per_accelerator=1.0 / s.accelerators_per_node, budget_usd=None, max_nodes=None)


def base_space(instance: Instance, pools: list[PoolSetting]) -> DecisionSpace:
    """The instance's declared space with the precisions some pool runs (or search.precisions)."""
    from planner.fleet.pools import pool_instance
    first = pool_instance(instance, pools[0].hardware, instance.fleet.nodes)
    space = DecisionSpace.from_instance(first, pools[0].setting)
    wanted = instance.search.precisions or {q for p in pools for q in p.precisions}
    return dataclasses.replace(space, precisions=tuple(p for p in PRECISION_ORDER if p in wanted))


def parts(instance: Instance, pools: list[PoolSetting], params: float | None) -> list[Part]:
    """Every (pools used, precision) part with at least one plan of node count in range."""
    return parts_until(instance, pools, params)[0]


def parts_until(instance: Instance, pools: list[PoolSetting], params: float | None,
                deadline: float = math.inf) -> tuple[list[Part], bool]:
    """`parts`, listed until `deadline` (a `time.perf_counter()` instant, read before each subset of
    pools: listing one subset's regions takes ~10 ms on 12 pools with chosen regions, and 4,095
    subsets ~30 s) and whether the listing is complete."""
    if len(pools) > MAX_EXACT_POOLS:
        from planner.schema.errors import InputError, Problem
        raise InputError([Problem("fleet.pools", f"the exact planner takes at most {MAX_EXACT_POOLS} pools "
                                                 f"(2^P - 1 subsets of pools are solved), got {len(pools)}")])
    space = base_space(instance, pools)
    cap = instance.limits.max_nodes or math.inf
    sites = site_network(instance)
    out = []
    for used in subsets(len(pools)):
        if time.perf_counter() > deadline:
            return out, False
        top = min(affordable_nodes(pools, used, instance.limits.budget_usd), cap)
        low = max(space.min_nodes, len(used))
        if top < low:
            continue
        for view, placement in part_regions(instance, sites, pools, used):
            for precision in space.precisions:
                if unsupported(pools, used, precision):
                    continue
                s = mixed_setting(pools, used, precision, view)
                s = unit_price(s if params is None else with_params(s, params))
                out.append(Part(params, used, precision, s,
                                dataclasses.replace(space, precisions=(precision,), min_nodes=low, max_nodes=int(top),
                                                    placement=placement), view, placement))
    return out, True


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
