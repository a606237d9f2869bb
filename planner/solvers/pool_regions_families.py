"""The exact planner beyond `pool_parts.MAX_EXACT_POOLS` pools with regions chosen by the planner
(`network.regions` "chosen", the straggler rule, and under 'proportional' alone that rule's plans at
which every H_p = H: `keep` and the twins, `planner.solvers.proportional_families`; docs/fleet.md,
"Beyond 12 pools: chosen regions").

The listing (`pool_parts.parts_until`) solves one part per set of pools U, undominated region
partition P of its sites S(U) (`region_plans.region_choices`) and precision q: the setting
`mixed_setting(U, q, view of P)` and, with several regions, the placement of `planner.fleet.regions`
(region r holds c_r in [lo_r, cap_r], lo_r the pools of U at its sites, cap_r their count; a plan
costs C_u(N), the least sum of the regions' cheapest fills f_r(c_r) over placeable (c_r)).

A **choice** (q, s, v, m, S, P) is a choice of `planner.solvers.pool_families` (s the slowest pool,
v the least node memory, m a pool of memory v, S a set of sites holding pools of E, the eligible
pools: s and the pools ranked faster running q with at least v of memory) with an undominated
region partition P of S. Its pools that must be used are F = {s, m} and, at each other site of S, the
pool of E there of least node price; the pools that may be used are E_S, those of E at the sites of
S. In region r of P the pools that must hold a node are F_r (those of F at its sites) and the pools
that may are E_r: lo_r = |F_r|, cap_r = the count of E_r, f_r(c) = one node of each pool of F_r, then
the cheapest nodes of E_r (`regions.ChoicePlacement`). Its part: the setting of (s, v, the links of
S and P), the space N in [max(min_nodes, |F|), the least of sum cap_r, limits.max_nodes and the most
N whose cheapest fill fits the budget], the placement rule on (lo_r, cap_r) and the cost
C_u(N) = min over placeable (c_r) of sum f_r(c_r) (one region: no rule, the cheapest fill).

Proof that the choices' optimum is the listing's (every objective, budget, node caps):
(a) a plan of the listing on U, P, q with N nodes placed as (c_r) lies in the choice
(q, slowest(U), min_U V, m, S(U), P), m a pool of U of least memory: the setting is the same (it
depends on U only through s's class, v and the links of S(U) and P: `pool_families`, and the view of
P); F_r within U_r within E_r (U holds s, m and a pool at every other site of S; a site's pool of
least price need not be in U, see the cost), so lo_r <= |U_r| <= c_r <= cap(U_r) <= cap_r, and (c_r)
is placeable for the choice; its cost is at least sum f_r(c_r): at each site x of S that s and m are
not at, moving one of U's nodes there to the cheapest pool of E at x keeps c_r (x is in one region),
lowers no price and leaves a node on every pool of F_r, and among counts with a node on each pool of
F_r within E_r the cheapest of c_r nodes cost f_r(c_r). So C_u(N) of the choice is at most the plan's
cost and N is within its node range (|F| <= |U| <= N, the fill of F within E_S is no dearer than U's).
(b) a plan of the choice with the counts of C_u(N) (`ChoicePlacement.counts`) uses U = the pools given
nodes: F within U within E_S, so slowest(U) = s (s's class: the same setting), min_U V = v and
S(U) = S (F has a pool at each site); P is an undominated partition of S(U), listed by the listing
for U; the nodes per region are placeable for U (c_r >= |U_r| as each pool of U_r holds a node, c_r <=
cap(U_r)); so it is a plan of the listing's part (U, P, q) with that setting, at that cost. The
choices hold exactly the listing's plans, each at its least cost: the same optimum, ties to the
cheaper plan as in the listing.

Grouping: two choices with the same q, class of s, v, five link numbers (`network.with_links`) and
multiset of regions (lo_r, the prices of F_r, the (price, count) of the other nodes of E_r) have the
same setting, the same placeable (N, u) and the same C_u(N): one is solved for both (the first listed).

Search (`solve_region_choices`): the parts best-first as the families' (min_time by `compute_bound_s`
at their most nodes, max_compute by `pool_families.ceiling`, min_cost by their cheapest fill at their
fewest nodes, a lower bound on every placement), each solved as the listing solves a part with
placement (`straggler.search.solve_part`: the placed descents of `planner.solvers.placed` for the
cheapest tie and min_cost), stopping at the first part that cannot come within the tie tolerance.
The choices number up to precisions x P x P x 2^k x the partitions of each set of sites (k <= 16
sites; more than 1,000 partitions of one set are refused as at 12 pools, naming network.regions).
"""

from __future__ import annotations

import dataclasses
import math
import time

from planner.evaluate import with_params
from planner.fleet.network import site_network
from planner.fleet.regions import choice_curve_of, choice_placement
from planner.fleet.replicas import node_price_usd
from planner.solvers.pool_families import ceiling, on_rule, record, setting_classes
from planner.solvers.pool_parts import Part, PartsRun, SiteSetViews, base_space, slowest_and_memory, unit_price
from planner.sync.straggler.rule import mixed_setting
from planner.sync.straggler.search import compute_bound_s, search_setting, solve_part


def choice_parts(instance, pools, params: float | None, keep=None, twin=None) -> list[tuple[tuple, Part]]:
    """(key of its setting: q, class of s, v, the five link numbers; part) of every choice
    (q, s, v, m, S, P) with a plan in its node range, one per group of equal setting and regions
    (module docstring), in listing order: precisions, slowest pools, least
    memories and pools of that memory as `pool_parts.slowest_and_memory`, sets of sites by their mask,
    partitions best regional link first. `keep(q, s, eligible)`: the pools of `eligible` that may join s
    (s among them; None: every one; `pool_families.family_members`); `twin(part)`: the part each
    choice's is searched as, None to drop it (`pool_families.families`)."""
    space = base_space(instance, pools)
    cap = instance.limits.max_nodes or math.inf
    budget = instance.limits.budget_usd
    net = site_network(instance)
    site_views = SiteSetViews(net, pools)
    site_bit = site_views.bit
    classes = setting_classes(pools)
    views: dict = {}
    settings: dict = {}              # the setting of each key (q, class of s, v, links): one per key
    seen: set = set()
    regions_ids: dict = {}           # each region's (prices of F_r, (price, count) of E_r), numbered
    out = []
    for q, s, v, eligible, lows in slowest_and_memory(pools, space.precisions):
        if keep is not None:
            eligible = keep(q, s, eligible)
            lows = tuple(m for m in lows if m in eligible)
            if not lows:
                continue
        cheapest, every = site_cheapest(pools, site_bit, eligible)
        for forced in [(s,)] if lows == (s,) else [(s, m) for m in lows]:
            required = site_views.mask(forced)
            free = every & ~required
            regions_of = RegionsOf(pools, site_bit, forced, required, cheapest, eligible, regions_ids)
            sub = free
            while True:                        # every subset of the free sites
                mask = required | sub
                whole = None
                for blocks, links in site_views.block_links(mask):
                    numbers = [regions_of[b] for b in blocks]
                    key = (q, classes[s], v, links, tuple(sorted(numbers)) if len(numbers) > 1 else tuple(numbers))
                    if key in seen:
                        continue
                    seen.add(key)
                    partition = site_views.sets.named(blocks)
                    forced_in, pools_in, curves = regions_of.members(blocks)
                    must = tuple(sorted(p for f in forced_in for p in f))
                    if whole is None:          # F(N) of the pools of S: the same for every partition of S
                        whole = choice_curve_of(pools, must, [p for f in pools_in for p in f])
                    view = views.setdefault(partition, net.with_regions(partition))
                    placement = choice_placement(pools, partition, forced_in, pools_in, curves, whole)
                    part = choice_part(instance, pools, params, space, cap, budget, q, must, view, placement,
                                       settings, key[:4])
                    if part is not None and twin is not None:
                        part = twin(part)
                    if part is not None:
                        out.append((key[:4], part))
                if sub == 0:
                    break
                sub = (sub - 1) & free
    return out


def site_cheapest(pools, site_bit, eligible) -> tuple[dict[int, int], int]:
    """({site bit: the pool of `eligible` there of least node price, the first listed among equals},
    the mask of those sites)."""
    cheapest: dict[int, int] = {}
    for p in eligible:
        b = site_bit[p]
        if b not in cheapest or node_price_usd(pools[p]) < node_price_usd(pools[cheapest[b]]):
            cheapest[b] = p
    every = 0
    for b in cheapest:
        every |= b
    return cheapest, every


class RegionsOf(dict):
    """The regions of the choices of one (q, s, v, forced pools) (`choice_parts`), per block mask b of
    sites inside the choice's set S: F_r, the pools of `forced` at b's sites and the eligible pool
    of least price (`cheapest`) at each other site of b outside `required` (the forced pools' sites),
    as F restricted to b, F being `forced` and those pools at the sites of S outside `required`; E_r,
    the pools of `eligible` at b's sites in `eligible`'s order, as E_S restricted to b (b within S).
    A region depends on b alone, not on the rest of S: found once per block (`region`). `self[b]`:
    the region's (sorted node prices of F_r, sorted (price, count less one if forced) of E_r),
    numbered in `ids` (shared by every (q, s, v, forced): equal regions, equal numbers), so two
    partitions have the same multiset of regions iff their sorted numbers are equal."""

    def __init__(self, pools, site_bit, forced, required: int, cheapest: dict, eligible, ids: dict):
        super().__init__()
        self.pools, self.site_bit, self.forced, self.required = pools, site_bit, forced, required
        self.cheapest, self.eligible, self.ids = cheapest, eligible, ids
        self.found: dict[int, tuple] = {}
        self.curves: dict[int, object] = {}

    def __missing__(self, b: int) -> int:
        number = self[b] = self.region(b)[2]
        return number

    def region(self, b: int) -> tuple:
        """(F_r, E_r, number) of the block of sites `b`."""
        found = self.found.get(b)
        if found is None:
            pools, site_bit = self.pools, self.site_bit
            must = set(p for p in self.forced if site_bit[p] & b)
            must.update(p for bit, p in self.cheapest.items() if b & bit and not self.required & bit)
            forced_in = tuple(sorted(must))
            pools_in = tuple(p for p in self.eligible if site_bit[p] & b)
            described = (tuple(sorted(node_price_usd(pools[p]) for p in forced_in)),
                         tuple(sorted((node_price_usd(pools[p]), pools[p].count - (p in must)) for p in pools_in)))
            found = self.found[b] = (forced_in, pools_in, self.ids.setdefault(described, len(self.ids)))
        return found

    def members(self, blocks) -> tuple[tuple, tuple, tuple]:
        """(forced_in, pools_in, f_r of each region: `regions.choice_curve_of`) of the partition's
        blocks, in its order."""
        regions = [self.region(b) for b in blocks]
        for b, (must, may, _) in zip(blocks, regions):
            if b not in self.curves:
                self.curves[b] = choice_curve_of(self.pools, must, may)
        return tuple(r[0] for r in regions), tuple(r[1] for r in regions), tuple(self.curves[b] for b in blocks)


def choice_part(instance, pools, params, space, cap, budget, q, must, view, placement, settings: dict,
                key: tuple) -> Part | None:
    """The part of one choice (module docstring), None when its node range is empty; its setting from
    `settings[key]` when another choice of that key built it."""
    low = max(space.min_nodes, sum(placement.lo))
    top = min(placement.n_max, cap)
    if budget is not None:
        placement = placement.within(budget)
        top = min(top, placement.affordable_nodes())
    if top < low:
        return None
    if key not in settings:
        setting = mixed_setting(pools, must, q, view)
        settings[key] = unit_price(setting if params is None else with_params(setting, params))
    setting = settings[key]
    part_space = dataclasses.replace(space, precisions=(q,), min_nodes=low, max_nodes=int(top), placement=placement)
    return Part(params, must, q, setting, part_space, view, placement)


def floor_of(run: PartsRun, part: Part) -> float:
    """The part's best-first key: a bound on its every plan in the objective's order (seconds from
    below, -FLOP, USD from below)."""
    if run.objective.by_time:
        return compute_bound_s(part.setting, part.space.max_nodes)
    if run.objective.maximise:
        return -ceiling(part)
    return float(part.placement.fill_cost()[part.space.min_nodes])


def solve_region_choices(run: PartsRun, params: float | None, keep=None, rule: str = "straggler",
                         twin=None) -> None:
    """`planner.sync.straggler.search.solve_parts` over the choices' parts of `run`'s model size
    (`run.listed` empty): plans found, proven bound, incumbent, completeness; the space's size is not
    counted. The parts of one setting (`choice_parts`' key) go together, best-first by the least of their
    bounds (`floor_of`); under min_time and max_compute, when they are several, the uniform plans of that
    setting over the union of their node ranges with no placement rule (a superset of their plans: its
    optimum is a bound on each) are searched first against the best found, and the parts are skipped
    when none comes within the tie tolerance of it; else each part is solved, best-first. `keep`, `twin`
    as `choice_parts`; `rule`: the rule the plans found run (the proportional rule's plans at which every
    H_p = H, `proportional_families.solve_rule_families`, as `pool_families.solve_families`)."""
    on_rule(run, rule, search_choices, choice_parts(run.instance, run.pools, params, keep, twin))


def search_choices(run: PartsRun, keyed: list[tuple[tuple, Part]]) -> None:
    """`solve_region_choices` over the choices' parts `keyed`."""
    objective = run.objective
    run.size = None
    listed = [part for _, part in keyed]
    floors = [floor_of(run, part) for part in listed]
    groups: dict = {}
    for k, (key, _) in enumerate(keyed):
        groups.setdefault(key, []).append(k)
    for members in sorted(groups.values(), key=lambda m: (min(floors[k] for k in m), m[0])):
        if time.perf_counter() > run.deadline:
            run.complete = False
            return
        if beyond(run, min(floors[k] for k in members)):        # best-first: no group left can do better
            return
        if len(members) > 1:
            fewest = relaxed(run, [listed[k] for k in members])
            if fewest is None:
                continue
            for k in members if objective.by_cost else ():      # no plan of the setting has fewer nodes
                n = max(fewest, listed[k].space.min_nodes)
                floors[k] = float(listed[k].placement.fill_cost()[n]) if n <= listed[k].space.max_nodes else math.inf
        for index in sorted(members, key=lambda k: (floors[k], k)):
            if time.perf_counter() > run.deadline:
                run.complete = False
                return
            if beyond(run, floors[index]):
                break
            solve_choice(run, listed[index], index, floors[index])


def beyond(run: PartsRun, floor: float) -> bool:
    """Whether a part of best-first key `floor` (`floor_of`) cannot come within the tie tolerance of
    the best plan found; then `run.bound` takes it (every part left has a key at least as far)."""
    if run.objective.maximise and -floor < run.most:
        run.bound = max(run.bound, -floor)
        return True
    if not run.objective.maximise and floor > run.incumbent * (1 + 1e-12):
        run.bound = min(run.bound, floor)
        return True
    return False


def relaxed(run: PartsRun, parts: list[Part]) -> int | None:
    """The uniform plans of the parts' common setting with N anywhere in their node ranges and no
    placement rule, a superset of the parts' plans: under min_time and max_compute, None when none comes
    within the tie tolerance of the best found (then neither does any plan of the parts, and `run.bound`
    takes the search's); under min_cost (unit price: the fewest nodes with a plan) that fewest N, a floor
    on every part's nodes, None when there is no plan. Else (a plan within ties) its N."""
    first = parts[0]
    space = dataclasses.replace(first.space, placement=None, min_nodes=min(p.space.min_nodes for p in parts),
                                max_nodes=max(p.space.max_nodes for p in parts))
    found, count, bound = search_setting(first.setting, space, run.objective, run.solver, run.deadline,
                                         run.incumbent, run.most)
    run.evaluations += count
    if found is None:
        if run.objective.by_cost:
            run.complete = run.complete and not math.isfinite(bound)     # a bound: cut short by the deadline
        else:
            run.bound = max(run.bound, bound) if run.objective.maximise else min(run.bound, bound)
        return None
    return int(found[0].nodes[0])


def solve_choice(run: PartsRun, part: Part, index: int, floor: float) -> None:
    """One choice's part solved into `run` as the listing solves a part with placement (its key's last
    entry `index`)."""
    objective = run.objective
    result, count, bound = solve_part(run.instance, run.pools, part, objective, run.solver, run.deadline,
                                      run.incumbent, run.most)
    run.evaluations += count
    if result is not None:
        if objective.by_time and result.value < floor * (1 - 1e-9):     # the bound checked where it is used
            raise AssertionError(f"compute bound {floor!r} s above a plan's time {result.value!r} s")
        used = tuple(i for i, c in enumerate(result.counts) if c)
        bound = record(run, result._replace(part=part._replace(used=used), key=result.key + (index,)), bound)
    run.bound = max(run.bound, bound) if objective.maximise else min(run.bound, bound)
