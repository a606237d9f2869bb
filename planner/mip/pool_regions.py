"""Regions chosen by the planner (`network.regions = "chosen"`) on the one-model path for a fleet
of pools (`--solver highs|scip`, `planner.solvers.mixed_mip`; docs/mip.md "Chosen regions",
docs/fleet.md section 3).

With chosen regions a plan on pools U also names a partition P of its sites S(U) into regions
(blocks whose sites pairwise meet the regional tier, `planner.sites.partition`) such that its
nodes are placeable: every unit (a hierarchical group of k nodes, a PP-group pipeline of S, a
ZeRO-3 shard of Z) inside one region (`planner.fleet.regions`). The partition changes the plan's
setting through the regional (and PP-group pipeline) link only: the slowest route inside any
block of P (`planner.fleet.network.SiteNetwork.links`); the WAN route, the access links, the
memory and the speeds do not depend on it. Its cost is that of its own counts.

The model: a relaxation. Its patterns are scored on the **singleton partition** (every site its
own region, `model_sites`). For any valid partition P of S, each block B's slowest route is at
most the least LAN bandwidth and at least the largest LAN RTT of B's sites (a site's LAN is part
of every route among B's sites, `planner.sites.slowest_link`), so the singleton partition's
regional link (least LAN Mb/s, largest LAN RTT over S) is at least as good as P's on both
counts, and it is itself valid (a lone site is a region). A plan's time does not grow with the
regional link's bandwidth nor fall with its RTT (the fact the partition listing's dominance rests
on, `planner.sites.partition`: the regional sync, the pipeline step and ZeRO-3's gathers are
nondecreasing in 1 / bandwidth and in RTT; docs/cost_model.md sections 3-4). The model also drops
the placement rule: its counts are free, so a placeable plan with counts (c_p) is a point of the
model with those very counts and the same cost. Hence every plan under chosen regions is a model
point with a time no larger, a compute no smaller and the same cost, and the model's optimum is a
lower bound (min_time, min_cost) or an upper bound (max_compute) on the chosen-regions optimum,
for every instance the schema accepts. The presolves' cuts against their own (relaxed) plans keep
the relaxed optimum in the model, so they keep the bound too; classes "solved exactly" in the
relaxed setting are not exact under chosen regions, so the loop keeps them in the model
(`mixed_mip.outer_approximation` passes no solved classes when `is_chosen`).

The incumbent is exact (`exact_plan`): the model's plan (mode, N, H, R, precision, pools U) is
re-scored on every undominated region partition of S(U) (`region_plans.part_regions`, the same views
the decomposition solves) where its N nodes are placeable for its unit size (`Placement.mask`),
with the cheapest placement's counts (`regions.cheapest_placement`, cost C_u(N)); the best of
those (the objective's measure) is the incumbent, none when no partition places it. So the loop's
best plan is always a real plan under chosen regions and the loop stops only when the model's
bound meets it: a proof.

The model's part bounds (`mixed_mip.SettingBounds`: per setting, a bound over its plans of at most
N nodes) are looked up for a part of the decomposition (pools U, precision, a partition P) by U's
*relaxed* setting, the one of U's own pattern in the model (`relaxed_bounds`), not by the part's own
setting: that one could coincide with the relaxed setting of another set of sites whose node range
is narrower than U's. The bound of U's relaxed setting holds for U's plans on P: the same plan there
is no slower (no less compute), and its pattern's node range holds U's.

Certification: as without regions, the exact decomposition (`planner.solvers.decomposition.decompose`
with the branch and bound, which solves chosen regions exactly) with the loop's value as its
incumbent, when the fleet has at most `MAX_EXACT_POOLS` pools; its answer is the one returned, so
`--solver highs|scip` and `--solver bnb` give the same plan. Beyond that the decomposition does not
run and the relaxation rarely closes (a plan placeable only on merged regions has a worse link
than the model's), so the combination is refused (exit 2, naming network.regions), as bnb refuses
it. `fleet.sync_rule` other than straggler with chosen regions is refused too (naming the field).
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np

from planner.schema.errors import InputError, Problem


def is_chosen(instance) -> bool:
    """Whether the planner chooses the regions: network.regions = "chosen" on a fleet of pools at sites."""
    return instance.network.regions == "chosen" and bool(instance.network.sites) and instance.fleet.is_mixed


def model_sites(instance):
    """The site network the one model scores its patterns on: the instance's (`site_network`), or with
    chosen regions the same sites with every site its own region (the relaxation of the module
    docstring). None without sites."""
    from planner.fleet.network import site_network
    sites = site_network(instance)
    if sites is None or not is_chosen(instance):
        return sites
    return sites.with_regions([(name,) for name in sorted(sites.names)])


def refusals(instance, solver: str, pool_count: int, max_exact_pools: int) -> None:
    """InputError (exit 2) for what the one-model path does not answer with chosen regions: more
    pools than the certifying decomposition takes, and fleet.sync_rule other than straggler."""
    if not is_chosen(instance):
        return
    problems = []
    if instance.fleet.sync_rule != "straggler":
        problems.append(Problem("fleet.sync_rule", f"--solver {solver} with network.regions = 'chosen' models the "
                                                   f"straggler rule only, got '{instance.fleet.sync_rule}': use "
                                                   "--solver bnb or --solver exhaustive"))
    if pool_count > max_exact_pools:
        problems.append(Problem("network.regions", f"'chosen' with --solver {solver} takes at most "
                                                   f"{max_exact_pools} pools (its answer is certified by the exact "
                                                   f"decomposition), got {pool_count}; use 'geography'"))
    if problems:
        raise InputError(problems)


def exact_plan(instance, pools, plan, params, measure: Callable) -> object | None:
    """The model's plan (a `pool_patterns.MixedPlan` scored on the singleton partition) as a real plan under
    chosen regions: for each undominated region partition of its sites (`region_plans.part_regions`) on
    which its N nodes are placeable for its unit size, the plan with the cheapest placement's counts
    and that partition's setting; the one of least `measure(plan)` (the loop's model value: ln T,
    cost, -ln C; inf when it misses the duration limit), or None when no partition places it or
    every one misses. The setting part index is kept (the model's)."""
    from planner.setting import with_params
    from planner.fleet.network import site_network
    from planner.fleet.region_plans import batch_unit, part_regions
    from planner.fleet.regions import cheapest_placement
    from planner.fleet.replicas import cheapest_fill, fleet_cost_usd
    from planner.sync.straggler.rule import mixed_setting
    from planner.mip.pool_patterns import MixedPlan
    from planner.solvers.pool_parts import unit_price
    used = tuple(p for p, c in enumerate(plan.counts) if c > 0)
    nodes = int(np.ravel(plan.batch.nodes)[0])
    unit = batch_unit(plan.batch)
    budget = instance.limits.budget_usd
    best, best_value = None, math.inf
    for view, placement in part_regions(instance, site_network(instance), pools, used):
        counts = cheapest_fill(pools, used, nodes) if placement is None else \
            cheapest_placement(pools, placement, unit, nodes)
        if counts is None or (budget is not None and fleet_cost_usd(pools, counts) > budget):
            continue
        s = mixed_setting(pools, used, plan.batch.precision, view)
        candidate = MixedPlan(plan.batch, counts, unit_price(s if params is None else with_params(s, params)),
                              plan.part)
        value = measure(candidate)
        if value < best_value:
            best, best_value = candidate, value
    return best


def relaxed_bounds(instance, pools, bounds: Callable) -> Callable:
    """`part_bound` of the decomposition under chosen regions: `bounds` (`mixed_mip.SettingBounds`) of
    the part's pools and precision on the model's sites (every site its own region), whatever the
    part's own partition (module docstring). Settings cached per (model size, pools, precision)."""
    from planner.setting import with_params
    from planner.sync.straggler.rule import mixed_setting
    from planner.solvers.pool_parts import unit_price
    sites = model_sites(instance)
    cache: dict = {}

    def bound(part) -> float:
        key = (part.params, part.used, part.precision)
        if key not in cache:
            s = mixed_setting(pools, part.used, part.precision, sites)
            cache[key] = unit_price(s if key[0] is None else with_params(s, key[0]))
        return bounds(part._replace(setting=cache[key]))

    return bound
