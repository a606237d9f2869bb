"""The exact planner beyond `pool_parts.MAX_EXACT_POOLS` pools under the proportional rule (fleet.sync_rule
'proportional', and its half of 'auto'; docs/fleet.md, "Beyond 12 pools"): the subsets of pools grouped
into families, one search by the proportional rule's boxes per family instead of one per subset.

Where it applies (`pool_families.refusal` is None). Without sites, the families' fastest split answers
min_time and max_compute where the rule's boxes apply and the best split is the fastest
(`planner.sync.proportional.search.optional_pools_apply`: C_local under the linear v1, fitted or no
replica penalty, or C_quality), without a budget; with a budget, under min_cost, and under max_compute
of C_local with the Chinchilla penalty the families are the roots of the search over subsets
(`planner.solvers.proportional_subsets`). With sites (the geography's or chosen regions, at most 16 sites, a
C_local target: `pool_families.refusal`) the families are the roots of the search over subsets for every
objective (a family's subsets have different sites, so different links), after the plans at which every
H_p = H (below).

What a plan depends on. A proportional plan on counts n_p of the pools used U at precision q, with N
nodes and inner steps H, is scored in U's straggler setting (`mixed_setting(U, q)`: a function of
s = slowest(U, q) and v = min_{p in U} V_p, `planner.solvers.pool_families`) with the throughput
changed by W = sum_p n_p H_p and H_max = max_{p in U} H_p (`planner.sync.proportional.rule`), where
H_p = floor(H r_p), r_p = t_pace / t_p: t_pace is the setting's step, t_p pool p's step with the
plan's model and batch. So H_max = floor(H r_f), f the pool of U of greatest r (ties to the first
listed): U enters a plan's value only through (s, v, f) and W, and its cost through the counts.

A family (q, s, v, m, f): the pools eligible E = the pools p running q with (F_p u_p, p) >
(F_s u_s, s) or p = s, V_p >= v, and (r_p, -p) <= (r_f, -f); the pools forced F = {s, m, f}, m a pool
of E with V_m = v (m = s when V_s = v), s and m themselves in E. Its splits: n_p >= 1 on F,
n_p >= 0 on E \\ F, n_p <= count_p, sum_p n_p = N, for max(min_nodes, |F|) <= N <= min(sum_E count,
limits.max_nodes). Proof that the families' optimum is the listing's: (a) a plan of the listing on U
lies in the family (q, slowest(U), min_U V, a pool of U of least memory, the pool of U of greatest
(r, -p)): U is within E and holds F, so its counts are a split of the family, with the same setting
and H_max. (b) a split of a family uses U = the pools given nodes, F within U within E, so
slowest(U) = s, min_U V = v and the greatest (r, -p) of U is f's: a plan of the listing's part U
with the family's setting, H_max and W, at the same cost. (c) For a plan d of fixed N and H (every
other decision too), time, memory and quality are the same on every split of the family, and the
time falls (the compute grows) with W alone: the fastest split, one node of each pool of F, then the
pools of most steps first (the cheaper node among equal steps), is the best split and the cheapest of
the best (`rule.fastest_fill` with `forced`: exchange argument, a donor of F keeping one node), and
the box bound `T_prop >= T_straggler / rho(N)` holds with rho(N) the most sum_p n_p r_p / N over the
family's splits (`boxes.fill_speed_bound` with `forced`). So the search of each family by the boxes
(`planner.sync.proportional.search.solve_with_optional`) is the exact optimum over its splits, the
families' plans are the listing's plans, and the best over the families is the listing's optimum;
ties go to the cheaper plan (the boxes' ties), then to the earlier family, and under 'auto' to the
straggler rule (the proportional results' key index comes after every straggler family's).

Families whose pools all run as many steps as the pace (H r_f < H + 1 for every H searched,
`first_h_that_differs` None) hold straggler plans only (every H_p = H): under 'auto' the straggler
families (`planner.solvers.pool_families`) have them, so they are skipped; under 'proportional' alone
the boxes search them like the others (their plans are the rule's, W = N H).

With chosen regions (network.regions 'chosen') the same two parts with the region partitions of
`planner.solvers.pool_regions_families` in place of the families: its choices (with `keep` and the
twins) hold the plans at which every H_p = H under 'proportional' alone, and the search over subsets
solves each leaf's parts, one per partition, as the listing does (proof in
`planner.solvers.proportional_subsets`).

With sites, the plans at which every H_p = H. A part U of slowest s whose pools all run s's steps at
every H searched (H_p = floor(H r_p) = H up to search.max_inner_steps for each p of U, which is
`first_h_that_differs` None for U: it reads the greatest r alone, so U runs them exactly when each of
its pools does) has straggler plans only, bit for bit (`planner.sync.proportional.parts.straggler_twin`:
modes flat and hierarchical, no ZeRO-3 shards, no expert parallelism). Under 'auto' the straggler
families have them; under 'proportional' alone the straggler families of `pool_families` answer them
with `keep` = `pace_pools` (the eligible pools of each (q, s) cut to s and the pools that run s's
steps) and each family's part searched as its twin, the results put on the proportional rule.
`pool_families`' proof holds with any eligible pools E' within its E that hold s (E' in place of E:
the slowest of a subset of E' holding s is s, m a pool of E' of least memory, the cheapest pool of E'
at each site), so those families hold exactly the plans of the subsets within keep(q, s), each at its
least cost. A family (q, s, v, m, f) here is `straggler_only` exactly when f runs s's steps (every
pool of its E has r_p <= r_f), and then all its subsets are within keep(q, s): with sites those
families are skipped (their plans are the straggler families'), and every other subset U (some pool,
so its greatest-r pool f, runs more steps) lies in a family that is not skipped, where the search over
subsets scores all its plans (every H: the listing's search of the part at a leaf, the boxes at a node
solved whole). So each subset's plans are searched, by one of the two, and the best of both is the
listing's optimum (ties: the straggler families' results come first, as the listing's twins).

Search, best first. Every plan of a family takes at least T_floor = `compute_bound_s(setting, 1)` /
R seconds, R = the most sum_p n_p r_p over the family's splits (the fastest fill by r of its most
nodes, inflated by 1e-12): T_prop >= T_straggler(d) N H / W >= `compute_bound_s(setting, N)` / rho(N)
(`boxes`, and `compute_bound_s`'s own proof) = `compute_bound_s(setting, 1)` / (N rho(N)), and
N rho(N) <= R; 0 (no pruning) where `compute_bound_s` is not known to hold. min_time visits the
families by T_floor and stops at the first one above the best time found (ties kept); max_compute by
the ceiling C_target x window_s / T_floor (`pool_families.ceiling`'s bound: T_floor is wall-clock time,
so the compute within the wall-clock window is at most C_target x window_s / T_floor), stopping at the
first below the most compute found.
"""

from __future__ import annotations

import dataclasses
import math
import time
from typing import NamedTuple

from planner.evaluate import with_params
from planner.fleet.network import site_network
from planner.fleet.pools import PoolSetting
from planner.schema.instance import Instance
from planner.solvers import proportional_subsets
from planner.solvers.pool_families import solve_families
from planner.solvers.pool_regions_families import solve_region_choices
from planner.solvers.pool_parts import Part, PartResult, PartsRun, base_space, slowest_and_memory, unit_price
from planner.sync.proportional import search as proportional
from planner.sync.proportional.parts import straggler_twin
from planner.sync.proportional.rule import first_h_that_differs, step_ratios
from planner.sync.straggler.rule import mixed_setting
from planner.sync.straggler.search import compute_bound_s

KEY_OFFSET = 1 << 30          # the proportional results' key index: after every straggler family's (ties to it)


class RuleFamily(NamedTuple):
    """One (precision, slowest s, least memory v, least-memory pool m, fastest f) family: its pools
    forced and eligible, its part (setting at unit price and space, N in [min_nodes, max_nodes];
    `used` the eligible pools) and R, the most sum_p n_p r_p of its splits."""

    forced: tuple[int, ...]
    eligible: tuple[int, ...]
    part: Part
    most_rate: float
    straggler_only: bool          # every H_p = H at every H searched


def families(instance: Instance, pools: list[PoolSetting], params: float | None) -> list[RuleFamily]:
    """Every family of the module docstring with at least one split of node count in range."""
    space = base_space(instance, pools)
    cap = instance.limits.max_nodes or math.inf
    out = []
    for q, s, _, within, lows in slowest_and_memory(pools, space.precisions):
        setting = mixed_setting(pools, tuple(sorted({s, lows[0]})), q)
        setting = unit_price(setting if params is None else with_params(setting, params))
        ratios = step_ratios(setting, pools, within, q)
        for f in within:
            eligible = tuple(p for p in within if (ratios[p], -p) <= (ratios[f], -f))
            top = min(sum(pools[p].count for p in eligible), cap)
            for m in (m for m in lows if s in eligible and m in eligible):
                forced = tuple(sorted({s, m, f}))
                low = max(space.min_nodes, len(forced))
                if top < low:
                    continue
                rates = sorted((ratios[p] for p in eligible for _ in range(pools[p].count - (p in forced))),
                               reverse=True)
                most_rate = (sum(ratios[p] for p in forced) + sum(rates[:int(top) - len(forced)])) * (1 + 1e-12)
                part_space = dataclasses.replace(space, precisions=(q,), min_nodes=low, max_nodes=int(top))
                h_min = first_h_that_differs({p: ratios[p] for p in eligible}, space.max_inner_steps)
                out.append(RuleFamily(forced, eligible, Part(params, eligible, q, setting, part_space),
                                      most_rate, h_min is None))
    return out


def time_floor_s(family: RuleFamily) -> float:
    """T_floor of the module docstring: a lower bound on the time to target of every plan of the family
    (0 when not known)."""
    return compute_bound_s(family.part.setting, 1) / family.most_rate


def compute_ceiling(family: RuleFamily) -> float:
    """An upper bound on the compute (FLOP) within the duration limit of every plan of the family (inf
    when none is known): C_target x window_s / T_floor (T_floor a wall-clock time, as window_s)."""
    floor_s = time_floor_s(family)
    s = family.part.setting
    return s.target * s.window_s / floor_s if floor_s > 0 else math.inf


def pace_pools(instance: Instance, pools: list[PoolSetting], params: float | None):
    """`keep(q, s, eligible)` for `pool_families.family_members`: s and the pools of `eligible` that run
    as many inner steps as s at every H searched (H_p = floor(H r_p) = H up to search.max_inner_steps,
    `first_h_that_differs` None for the pool alone, r_p = t_s / t_p as in `families`). A set of pools U
    of slowest s runs every H_p = H (its plans are straggler plans, `straggler_twin`) exactly when each
    of its pools does, that is when U is within keep(q, s, eligible)."""
    h_max = base_space(instance, pools).max_inner_steps

    def keep(q: str, s: int, eligible: tuple[int, ...]) -> tuple[int, ...]:
        setting = mixed_setting(pools, (s,), q)
        ratios = step_ratios(setting if params is None else with_params(setting, params), pools, eligible, q)
        return tuple(p for p in eligible if p == s or first_h_that_differs({p: ratios[p]}, h_max) is None)
    return keep


def solve_rule_families(run: PartsRun, params: float | None) -> None:
    """The proportional rule's plans of every family of `run`'s model size into `run` (plans found,
    proven bound, incumbent, completeness), best first (module docstring)."""
    objective, pools = run.objective, run.pools
    run.size = None
    net = site_network(run.instance)
    chosen = net is not None and run.instance.network.regions == "chosen"    # leaves: the listing's parts
    if net is not None and "straggler" not in run.rules:      # the plans at which every H_p = H
        solve = solve_region_choices if chosen else solve_families
        solve(run, params, pace_pools(run.instance, pools, params), "proportional",
              lambda part: straggler_twin(pools, part))
        if not run.complete:
            return
    listed = [f for f in families(run.instance, pools, params)
              if not (f.straggler_only and ("straggler" in run.rules or net is not None))]
    if net is not None or proportional_subsets.needed(run.instance, objective, [f.part.setting for f in listed]):
        proportional_subsets.Search(run, params, net, chosen).solve(listed)   # sites, or the fastest split falls short
        return
    maximise = objective.maximise
    if maximise:
        order = sorted(range(len(listed)), key=lambda k: -compute_ceiling(listed[k]))
    else:
        order = sorted(range(len(listed)), key=lambda k: time_floor_s(listed[k]))
    most = max((r.value for r in run.found), default=-math.inf)
    for k in order:
        family = listed[k]
        if time.perf_counter() > run.deadline:
            run.complete = False
            return
        if maximise and compute_ceiling(family) < max(most * (1 - 1e-12), run.most):   # every family left: less
            run.bound = max(run.bound, compute_ceiling(family))
            return
        if not maximise and time_floor_s(family) > run.incumbent * (1 + 1e-12):    # every family left is slower
            run.bound = min(run.bound, time_floor_s(family))
            return
        part = family.part
        found, count, complete = proportional.solve_with_optional(
            pools, family.forced, family.eligible, part.setting, part.space, part.precision, objective,
            run.deadline, most if maximise else run.incumbent)
        run.evaluations += count
        if not complete:
            run.complete = False
            return
        if found is None:
            continue
        used = tuple(i for i, c in enumerate(found.counts) if c)
        run.found.append(PartResult(part._replace(used=used), found.batch, found.counts,
                                    found.key + (KEY_OFFSET + k,), found.value, "proportional"))
        if maximise:
            most = max(most, found.value)
            run.most = max(run.most, found.value * (1 - 1e-12))
            run.bound = max(run.bound, found.value)
        else:
            run.incumbent = min(run.incumbent, found.value)
            run.bound = min(run.bound, found.value)
