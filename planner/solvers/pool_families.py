"""The exact planner beyond `pool_parts.MAX_EXACT_POOLS` pools (docs/fleet.md, "Beyond 12 pools"):
the subsets of pools grouped into families, one uniform solve per family (or per span of families of
one setting) instead of one per subset.

Where it applies (`refusal` is None): the straggler rule alone (fleet.sync_rule "straggler"), without
sites or with sites whose regions are the geography's (network.regions "geography", pools at no more
than `MAX_SITE_SETS_SITES` = 16 sites). Then `mixed_setting(U, q, sites)` depends on the pools used
U only through (s, v, S): s = slowest(U, q), the pool of least achieved FLOP/s per node at the
precision q (ties to the first listed), which gives every field of the setting but memory and links,
v = min_{p in U} V_p, the node memory, and S = the set of U's sites, which gives the links
(`planner.fleet.network`: the five numbers of `site_set_links`, functions of S alone). Under the
proportional rule each pool's inner steps change with U: its families are
`planner.solvers.proportional_families` (where the fastest split is not the best, with a budget, under
min_cost or Chinchilla's C_local, and with sites, the search over subsets of
`planner.solvers.proportional_subsets`, which refuses a C_quality target with sites: `refusal` asks it),
searched after these under 'auto'; under 'proportional' alone with sites its plans at which every
H_p = H are these families' on the pools that run the slowest's steps (`keep`). With chosen regions
a part is also a region partition of S with a placement that reads U's pools per region: beyond 12
pools the straggler rule's choices carry the partition (`planner.solvers.pool_regions_families`), and
the proportional rule's search over subsets solves each subset at its leaf with every partition, as
the listing does (`planner.solvers.proportional_subsets`). Without sites every pool counts as at one
site (S is that site).

A choice (q, s, v, m, S): the pools eligible E = {s} u {p supporting q : (F_p u_p, p) > (F_s u_s, s),
V_p >= v} (s is then the slowest of any U in E holding s), with v <= V_s the memory of s or of a pool
of E; m = s when V_s = v, else a pool of E with V_m = v (some pool must have the least memory); S a set
of sites holding pools of E, with the sites of s and m. Its pools that must be used: F = {s, m} and,
at each site of S that s and m are not at, the pool of E there of least node price (ties to the first
listed); the rest from E_S, the pools of E at the sites of S. Its cheapest counts of N nodes
(`replicas.cheapest_fill(F, N, E_S)`): one node of each pool of F, the rest from the cheapest pools of
E_S; never falls as N grows (each fill adds the next cheapest node, prices >= 0), defined on
[|F|, sum_{E_S} count]. A **family** is the choices of one setting (q, the class of s's setting, v,
the links of S: pools of equal settings at unit price are one class) and one size |F|; its C(N) is the
least over its choices, and never falls either (a least of functions that never fall, all defined
from the same |F|). Its plans are the uniform plans of that setting with N in [max(min_nodes, |F|),
top], top = min(the most sum_{E_S} count over its choices, limits.max_nodes, the most N with
C(N) <= limits.budget_usd); every N there has a choice (the one of most nodes).

Proof that the families' optimum is the listing's (every objective, with and without budget and node
caps): (a) a plan of the listing, on U with N nodes at q, lies in the family of the choice
(q, slowest(U), min_U V, m, S(U)) with m a pool of U of least memory: U is within E_S, holds s and m
and a pool at every other site of S, so |F| <= |U| <= N <= sum_U count <= sum_{E_S} count; the setting
is the same (same s class, v and links); and C(N) <= the cost of U's cheapest fill: at each site x of
S that s and m are not at, moving one of U's nodes there to the cheapest pool of E at x (if it has
none) keeps N, lowers no price and leaves a node at every pool of F, and the cheapest such counts
within E_S are the fill; so N <= max_nodes and C(N) <= the budget, and the family holds the same plan
at a cost no higher. (b) a plan of a family, with the counts of C(N) from one of its choices, uses
U = the pools given nodes: F within U within E_S, so slowest(U) = s (a pool of s's class: the same
setting), min_U V = v, and the sites of U are exactly S (F has a pool at each), so it is a plan of
the listing's part U with the family's setting and that cost. The families' plans are the listing's
plans, each at its least cost, so the best value is the same; ties to the cheaper plan as in the
listing (within a family the uniform solvers' ties go to fewer nodes, the cheaper as C never falls),
then to the earlier family. Without sites the families number at most P x P x precisions (P <= 64);
with sites the choices number up to P x P x precisions x 2^k (k <= 16 sites: the sets S are listed
as arrays, the links of all 2^k sets at once), the families at most precisions x P x P x (k + 2) x the
distinct links.

Search. A *span* is the families of one setting whose node ranges meet: its plans are the uniform
plans of that setting over the union of their ranges, an interval (`spans`). min_time visits the
spans best-first by `compute_bound_s` at their top (a bound on every plan, proven there; it reads no
link) and stops when it cannot come within the tie tolerance of the best time found; max_compute
best-first by the ceiling C_target W / `compute_bound_s` at their top (`ceiling`; most nodes first
among equal ceilings), stopping likewise, the best compute found pruning inside each solve
(`objective_search.max_compute`). A span's value is exact; its cost is the least C(N) of its
families at the plan's N, but C over a span may fall as N grows, so the families of every span tied
with the best value are solved one by one for their cheapest tie. min_cost: see `least_costs` (one
min_cost solve per span and low end, then the families tied with the least cost solved one by one).
"""

from __future__ import annotations

import dataclasses
import math
import time
from typing import NamedTuple, Sequence

import numpy as np

from planner.evaluate import with_params
from planner.fleet.network import MAX_SITE_SETS_SITES, site_network, site_set_links
from planner.fleet.pools import PoolSetting
from planner.fleet.replicas import cheapest_fill, fleet_cost_usd, node_price_usd
from planner.objectives import MIN_TIME
from planner.schema.instance import Instance
from planner.solvers import proportional_subsets
from planner.solvers.objective_search import tie_less
from planner.solvers.pool_parts import (MAX_EXACT_POOLS, Part, PartResult, PartsRun, base_space, slowest_and_memory,
                                        too_many_pools, unit_price)
from planner.sync.straggler.rule import mixed_setting
from planner.sync.straggler.search import compute_bound_s, part_result, search_setting

MAX_FAMILY_POOLS = 64             # the schema's most pools: at most 64 x 64 x precisions families


class Members(NamedTuple):
    """Choices of one family sharing (s, m): for each set of sites `mask` (bit i: the i-th site holding
    pools; without sites every pool at one site, bit 1), the pools that must be used are `forced` and,
    at each site of the mask that `forced` does not reach (`required` its sites), the eligible pool of
    least node price there (`per_site`: (site bit, pool), ties to the first listed); the rest from the
    pools of `eligible` at the mask's sites (`bits`: each one's site bit)."""

    forced: tuple[int, ...]
    required: int
    eligible: tuple[int, ...]
    bits: tuple[int, ...]
    per_site: tuple[tuple[int, int], ...]
    masks: tuple[int, ...]

    def choices(self):
        """(pools that must be used, pools eligible) of each mask."""
        for mask in self.masks:
            extra = tuple(p for b, p in self.per_site if mask & b and not self.required & b)
            yield (tuple(sorted(self.forced + extra)),
                   tuple(p for p, b in zip(self.eligible, self.bits) if mask & b))


class Family(NamedTuple):
    """One (precision, setting, least node count) family: its choices of the pools that must be used
    (`members`), its setting and space (N in [space.min_nodes, space.max_nodes]); `key` the setting's
    (precision, class of the slowest pool's setting, least memory, row of the links, None without sites)."""

    precision: str
    members: tuple[Members, ...]
    key: tuple
    part: Part                             # setting and space; `used` the first choice's forced pools


def refusal(instance: Instance, pools: Sequence[PoolSetting]) -> str | None:
    """Why the families (and, under fleet.sync_rule proportional or auto, the proportional rule's:
    `planner.solvers.proportional_families`, `planner.solvers.proportional_subsets`; with chosen regions
    `planner.solvers.pool_regions_families`) do not give the exact optimum of this fleet (None: they
    do; the search over subsets refuses itself where its bounds do not hold)."""
    if len(pools) > MAX_FAMILY_POOLS:
        return f"more than {MAX_FAMILY_POOLS} pools"
    if (why := proportional_subsets.refusal(instance, pools)) is not None:
        return why
    if instance.network.sites and instance.fleet.is_mixed:
        if len({p.site for p in pools}) > MAX_SITE_SETS_SITES:
            return f"the pools are at more than {MAX_SITE_SETS_SITES} sites"
    return None


def least_fill(pools: Sequence[PoolSetting], family: Family, nodes: int) -> tuple[float, list[int] | None]:
    """C(N): the least cost (USD) over the family's choices and their counts (inf, None: no fill)."""
    best = (math.inf, None)
    for members in family.members:
        for forced, eligible in members.choices():
            counts = cheapest_fill(pools, forced, nodes, eligible)
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


def within_masks(required: int, free: int, values: dict[int, float]) -> tuple[np.ndarray, np.ndarray]:
    """Every mask `required | x`, x a subset of the mask `free`, and the sum of `values` (per site bit)
    over the bits of each mask (numpy arrays, one entry per mask)."""
    masks = np.array([required], dtype=np.int64)
    sums = np.array([sum(v for b, v in values.items() if required & b)], dtype=float)
    bit = 1
    while free >= bit:
        if free & bit:
            masks, sums = np.concatenate([masks, masks | bit]), np.concatenate([sums, sums + values.get(bit, 0)])
        bit <<= 1
    return masks, sums


def setting_classes(pools: Sequence[PoolSetting]) -> list[int]:
    """Each pool's class: the first pool listed with an equal setting at unit price (s's own setting)."""
    classes, settings = [], []
    for i, p in enumerate(pools):
        own = unit_price(p.setting)
        classes.append(next((classes[j] for j in range(i) if settings[j] == own), i))
        settings.append(own)
    return classes


def family_members(pools: Sequence[PoolSetting], net, space, keep=None) -> tuple[dict, np.ndarray | None]:
    """{(precision, class of s, v, links row, |chosen|): {(s, m): (Members, most nodes of its masks)}}
    over every (q, s, v, pool m of least memory, set of sites S) of the module docstring, and the table of
    links per set of sites (None without sites). |chosen| = |forced| + the sites of S that forced does
    not reach; the links row numbers the distinct rows of `site_set_links`. `keep(q, s, eligible)`: the
    pools of `eligible` that may join s (s among them; None: every one)."""
    names = sorted({p.site for p in pools}) if net is not None else []
    site_bit = [1 << names.index(p.site) for p in pools] if net is not None else [1] * len(pools)
    row_of = None
    if net is not None:
        _, row_of = np.unique(site_set_links(net, names), axis=0, return_inverse=True)
        row_of = np.ravel(row_of)
    classes = setting_classes(pools)
    out: dict = {}
    for q, s, v, eligible, lows in slowest_and_memory(pools, space.precisions):
        if keep is not None:
            eligible = keep(q, s, eligible)
            lows = tuple(m for m in lows if m in eligible)
            if not lows:
                continue
        forced_sets = [(s,)] if lows == (s,) else [(s, m) for m in lows]
        cheapest: dict[int, int] = {}
        held: dict[int, float] = {}
        for p in eligible:
            b = site_bit[p]
            held[b] = held.get(b, 0) + pools[p].count
            if b not in cheapest or node_price_usd(pools[p]) < node_price_usd(pools[cheapest[b]]):
                cheapest[b] = p
        every = 0
        for b in cheapest:
            every |= b
        for forced in forced_sets:
            required = 0
            for p in forced:
                required |= site_bit[p]
            masks, nodes = within_masks(required, every & ~required, held)
            sizes = len(forced) + np.array([bin(m & ~required).count("1") for m in masks.tolist()])
            rows = row_of[masks] if row_of is not None else np.zeros(masks.size, dtype=np.int64)
            codes = rows * (len(pools) + len(names) + 2) + sizes
            order = np.argsort(codes, kind="stable")
            cuts = np.flatnonzero(np.diff(codes[order])) + 1
            for chunk in np.split(order, cuts):
                row, size = int(rows[chunk[0]]), int(sizes[chunk[0]])
                members = Members(forced, required, eligible, tuple(site_bit[p] for p in eligible),
                                  tuple(cheapest.items()), tuple(masks[chunk].tolist()))
                key = (q, classes[s], v, row if row_of is not None else None, size)
                out.setdefault(key, []).append((members, int(nodes[chunk].max())))
    return out, row_of


def families(instance: Instance, pools: list[PoolSetting], params: float | None, keep=None,
             twin=None) -> list[Family]:
    """Every family with at least one plan of node count in range (module docstring; `keep` as
    `family_members`; `twin(part)`: the part each family's is searched as, None to drop it)."""
    space = base_space(instance, pools)
    cap = instance.limits.max_nodes or math.inf
    budget = instance.limits.budget_usd
    net = site_network(instance)
    grouped, _ = family_members(pools, net, space, keep)
    out = []
    for (q, s, v, row, size), listed in grouped.items():
        low = max(space.min_nodes, size)
        top = min(max(most for _, most in listed), cap)
        family = Family(q, tuple(m for m, _ in listed), (q, s, v, row), None)
        if budget is not None and top >= low:
            top = most_within(pools, family, low, int(top), budget)
        if top < low:
            continue
        first = next(family.members[0].choices())[0]
        setting = mixed_setting(pools, first, q, net)
        setting = unit_price(setting if params is None else with_params(setting, params))
        part_space = dataclasses.replace(space, precisions=(q,), min_nodes=low, max_nodes=int(top))
        part = Part(params, first, q, setting, part_space)
        if twin is not None and (part := twin(part)) is None:
            continue
        out.append(family._replace(part=part))
    return out


def solve_families(run: PartsRun, params: float | None, keep=None, rule: str = "straggler", twin=None) -> None:
    """`planner.sync.straggler.search.solve_parts` over the families of `run`'s model size instead of
    its listed parts (`run.listed` empty): plans found, proven bound, incumbent, completeness; the
    space's size is not counted (`run.size` None). min_time and max_compute solve the families of one
    setting whose node ranges meet as one (`spans`), then the families of each span whose value ties
    with the best found one by one (the tie goes to the cheaper plan, and C over a span may fall).
    `keep` as `family_members`, `twin` as `families`; `rule`: the rule the plans found run (the
    proportional rule's plans at which every H_p = H, `proportional_families.solve_rule_families`)."""
    on_rule(run, rule, solve_family_spans, families(run.instance, run.pools, params, keep, twin))


def on_rule(run: PartsRun, rule: str, search, listed) -> None:
    """`search(run, listed)`, the plans it adds to `run.found` put on the sync rule `rule` (they run it:
    the proportional rule's plans at which every H_p = H are straggler plans bit for bit, found by the
    straggler rule's searches, `solve_families` and `pool_regions_families.solve_region_choices`)."""
    before = len(run.found)
    search(run, listed)
    run.found[before:] = [r._replace(rule=rule) for r in run.found[before:]]


def solve_family_spans(run: PartsRun, listed: list[Family]) -> None:
    """`solve_families` over the families `listed`."""
    objective = run.objective
    run.size = None
    groups = spans(listed)
    if objective.by_cost:
        least_costs(run, listed, groups)
        return
    if objective.by_time:
        order = sorted(range(len(groups)), key=lambda k: compute_bound_s(groups[k][1].setting,
                                                                        groups[k][1].space.max_nodes))
    else:
        order = sorted(range(len(groups)), key=lambda k: (-ceiling(groups[k][1]), -groups[k][1].space.max_nodes))
    solved = []
    for index in order:
        members, part = groups[index]
        if not solve_one(run, listed, members, len(listed) + index, part):
            break
        solved.append(index)
    best = best_value(run)
    for index in solved:
        members, _ = groups[index]
        result = next((r for r in run.found if r.key[-1] == len(listed) + index), None)
        if len(members) > 1 and result is not None and not tie_less((best,), (result.value,)) \
                and not tie_less((result.value,), (best,)):
            for k in members:          # the span ties with the best: its families' cheapest ties
                solve_one(run, listed, [k], k, tied=result.value)


def cheapest_node_usd(pools: Sequence[PoolSetting], family: Family) -> float:
    """The least node price (USD) of the pools a plan of the family may use: C(N) >= N times it."""
    return min(node_price_usd(pools[p]) for members in family.members for p in members.eligible)


def least_costs(run: PartsRun, listed: list[Family], groups: list[tuple[list[int], Part]]) -> None:
    """min_cost over the families: C never falls within a family, so its least cost is C at its fewest
    feasible N, n_f = the fewest N of its range at which its setting has a plan within the limits. The
    families of a span share the setting, so one uniform min_cost solve from a low end L gives the
    fewest feasible N >= L, n(L), and n_f = n(L) for every family with low_f <= n(L) (no N of
    [L, n(L)) has a plan), n(low_f) solved afresh for the others, n_f only when <= top_f. Spans in
    order of their floor (least N x least node price, a lower bound on every plan of theirs) until one
    exceeds the least cost found; then every family whose least cost ties with the best is solved
    as a family (`solve_one`: its cheapest plan, the fastest at that cost)."""
    objective, pools = run.objective, run.pools
    floors = [min(cheapest_node_usd(pools, listed[k]) for k in members) for members, _ in groups]
    order = sorted(range(len(groups)), key=lambda g: groups[g][1].space.min_nodes * floors[g])
    least = {}                           # family -> its least cost
    best = run.incumbent
    for g in order:
        members, part = groups[g]
        if time.perf_counter() > run.deadline:
            run.complete = False
            return
        floor_usd = part.space.min_nodes * floors[g]
        if floor_usd > best * (1 + 1e-12):      # best-first: every span left costs more
            run.bound = min(run.bound, floor_usd)
            break
        top = part.space.max_nodes if not math.isfinite(best) else \
            min(part.space.max_nodes, int(best * (1 + 1e-12) // floors[g]) if floors[g] > 0 else part.space.max_nodes)
        fewest: dict[int, float] = {}

        def fewest_from(low: int) -> float:
            """n(low): the fewest N in [low, top] with a plan (inf: none)."""
            if low not in fewest:
                if low > top:
                    fewest[low] = math.inf
                else:
                    space = dataclasses.replace(part.space, min_nodes=low, max_nodes=top)
                    found, count, bound = search_setting(part.setting, space, objective, run.solver, run.deadline,
                                                         math.inf, 0.0)
                    run.evaluations += count
                    if found is None and math.isfinite(bound):     # cut short: no bound past its node bound
                        run.bound = min(run.bound, bound * floors[g])
                        run.complete = False
                    fewest[low] = float(found[0].nodes[0]) if found is not None else math.inf
            return fewest[low]

        first = fewest_from(part.space.min_nodes)
        for k in sorted(members, key=lambda k: listed[k].part.space.min_nodes):
            space = listed[k].part.space
            n = first if space.min_nodes <= first else fewest_from(space.min_nodes)
            if n <= space.max_nodes and n * cheapest_node_usd(pools, listed[k]) <= best * (1 + 1e-12):
                least[k] = least_fill(pools, listed[k], int(n))[0]
                best = min(best, least[k])
    for k in sorted(least, key=lambda k: least[k]):
        if least[k] <= best * (1 + 1e-12):     # the families tied with the least cost: their plans
            solve_one(run, listed, [k], k)


def best_value(run: PartsRun) -> float:
    """The best objective value found so far (inf / 0 when none)."""
    values = [r.value for r in run.found]
    if not values:
        return 0.0 if run.objective.maximise else math.inf
    return max(values) if run.objective.maximise else min(values)


def spans(listed: list[Family]) -> list[tuple[list[int], Part]]:
    """The families of one setting (`Family.key`) whose node ranges meet, each as (their indices, the
    part of their setting over the union of the ranges, an interval of N)."""
    by_key: dict = {}
    for k, family in enumerate(listed):
        by_key.setdefault(family.key, []).append(k)
    out = []
    for indices in by_key.values():
        indices.sort(key=lambda k: listed[k].part.space.min_nodes)
        current, top = [], -1
        for k in indices + [None]:
            space = listed[k].part.space if k is not None else None
            if current and (k is None or space.min_nodes > top + 1):
                part = listed[current[0]].part
                low = min(listed[j].part.space.min_nodes for j in current)
                out.append((current, part._replace(space=dataclasses.replace(part.space, min_nodes=low, max_nodes=top))))
                current, top = [], -1
            if k is not None:
                current.append(k)
                top = max(top, space.max_nodes)
    return out


def span_fill(pools: Sequence[PoolSetting], listed: list[Family], members: list[int], nodes: int):
    """The least C(N) over the families of a span whose node range holds N (cost in USD, counts)."""
    best = (math.inf, None)
    for k in members:
        space = listed[k].part.space
        if space.min_nodes <= nodes <= space.max_nodes:
            found = least_fill(pools, listed[k], nodes)
            best = found if found[0] < best[0] else best
    return best


def solve_one(run: PartsRun, listed: list[Family], members: list[int], index: int, part: Part | None = None,
              tied: float | None = None) -> bool:
    """Solve the families `members` (one family, or a span over `part`) into `run`, its result's key
    ending in `index`; False when best-first says no family left can hold a better plan (nothing
    solved). `tied`: solve the family only for plans tied with this value (no pruning, no bound)."""
    objective, pools = run.objective, run.pools
    if time.perf_counter() > run.deadline:
        run.complete = False
        return False
    family = listed[members[0]]
    part = family.part if part is None else part
    incumbent, most = run.incumbent, run.most
    if tied is not None:
        incumbent, most = (math.inf, tied * (1 - 1e-12)) if objective.maximise else (tied * (1 + 1e-12), 0.0)
    elif objective.by_time:
        floor_s = compute_bound_s(part.setting, part.space.max_nodes)
        if floor_s > run.incumbent * (1 + 1e-12):     # best-first: every family left is as slow
            run.bound = min(run.bound, floor_s)
            return False
    elif objective.maximise and ceiling(part) < run.most:   # best-first: no family left comes within ties
        run.bound = max(run.bound, ceiling(part))
        return False
    elif objective.by_cost:
        floor_usd = least_fill(pools, family, part.space.min_nodes)[0]
        if floor_usd > run.incumbent:                  # best-first: every family left costs more
            run.bound = min(run.bound, floor_usd)
            return False
        if math.isfinite(run.incumbent):               # only the N that cost at most the best (ties kept)
            top = most_within(pools, family, part.space.min_nodes, part.space.max_nodes, run.incumbent)
            if top < part.space.min_nodes:
                return True
            part = part._replace(space=dataclasses.replace(part.space, max_nodes=top))
    fill = (lambda n: least_fill(pools, family, n)) if len(members) == 1 else \
        (lambda n: span_fill(pools, listed, members, n))
    result, count, bound = solve_family(fill, part, objective, run.solver, run.deadline, incumbent, most)
    run.evaluations += count
    if result is not None:
        bound = record(run, result._replace(key=result.key + (index,)), bound)
    if tied is None:
        run.bound = max(run.bound, bound) if objective.maximise else min(run.bound, bound)
    return True


def record(run: PartsRun, result: PartResult, bound: float) -> float:
    """Add a part's (family's) plan to `run`, its value the incumbent (most compute) when better; the
    part's proven `bound` with the plan's value taken in."""
    run.found.append(result)
    if run.objective.maximise:
        run.most = max(run.most, result.value * (1 - 1e-12))
        return max(bound, result.value)
    run.incumbent = min(run.incumbent, result.value)
    return min(bound, result.value)


def ceiling(part: Part) -> float:
    """An upper bound on the compute (FLOP) within the duration limit of every plan of the part, inf when
    none is known: C_target x W / `compute_bound_s` at its most nodes (`compute_bound_s` bounds the time
    to reach C_target from below through the nodes' throughput, so the compute within W is at most this;
    the same bound as `planner.solvers.mixed_mip.SettingBounds`)."""
    floor_s = compute_bound_s(part.setting, part.space.max_nodes)
    return part.setting.target * part.setting.window_s / floor_s if floor_s > 0 else math.inf


def solve_family(fill, part: Part, objective, solver: str, deadline: float, incumbent: float,
                 most: float) -> tuple[PartResult | None, int, float]:
    """The optimum of a family or span (as `planner.sync.straggler.search.solve_part` solves a part, the
    counts and cost from `fill(N)` = (C(N), its counts)), the plans it scored and its proven bound in
    the objective's units."""
    from planner.solvers.uniform import optimise
    s, space = part.setting, part.space
    found, evaluations, bound = search_setting(s, space, objective, solver, deadline, incumbent, most)
    if objective.by_cost:         # bound and value are node counts (unit price): C of the least N
        bound = fill(max(int(math.ceil(bound - 1e-9)), space.min_nodes))[0] if math.isfinite(bound) else math.inf
    if found is None:
        return None, evaluations, bound
    batch, value = found
    n = int(batch.nodes[0])
    if objective.by_cost:         # pools of price 0: larger N at the same cost, the fastest of them
        cost = fill(n)[0]
        low, high = n, space.max_nodes          # the most N of that cost (C never falls: bisection)
        while low < high:
            mid = (low + high + 1) // 2
            low, high = (mid, high) if fill(mid)[0] <= cost else (low, mid - 1)
        if low > n:
            faster, more, _ = optimise(s, dataclasses.replace(space, min_nodes=n, max_nodes=low), MIN_TIME,
                                       deadline, solver=solver)
            evaluations += more
            batch = faster[0] if faster is not None else batch
            n = int(batch.nodes[0])
    cost, counts = fill(n)
    part = part._replace(used=tuple(i for i, c in enumerate(counts) if c))
    return part_result(part, batch, counts, cost, value, objective), evaluations, bound


def refuse(instance: Instance, pools: Sequence[PoolSetting]) -> None:
    """InputError (exit 2) naming fleet.pools and --solver highs when neither the listing (at most
    MAX_EXACT_POOLS pools) nor the families apply."""
    why = refusal(instance, pools)
    if len(pools) > MAX_EXACT_POOLS and why is not None:
        too_many_pools(len(pools), why)
