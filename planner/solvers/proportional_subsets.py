"""The proportional rule beyond `pool_parts.MAX_EXACT_POOLS` pools where the fastest split of a family
is not its best plan (docs/fleet.md, "Beyond 12 pools"): with limits.budget_usd, under min_cost, and
under max_compute where the boxes' fastest split does not apply (C_local under the Chinchilla replica
penalty: every split a candidate), and with sites (the geography's or chosen regions) every objective.
A branch and bound
over the subsets of pools each family of `planner.solvers.proportional_families` stands for, each
subset at its leaves solved by the listing's own search of one part.

Nodes. A node is (q, F, E) inside one family (q, s, v, m, f): pools forced F (s, m, f and the pools
branched in) and eligible E (F within E, the family's eligible pools less those branched out). It
stands for every subset U with F within U within E; each such U has slowest(U, q) = s, least memory
v and greatest (r, -p) f (E is the family's, proof (b) of `proportional_families`), so one setting
sigma = mixed_setting(U, q) and one table of step ratios r_p = t_pace / t_p serve the whole node. A
node with E = F is a leaf: the one part U = F, solved as the listing solves it (`planner.sync.
searches`' proportional `solve_parts` on that part alone: its straggler twin under 'proportional'
alone, then `proportional.parts.proportional_parts` with the budget), so a leaf's answer is the
listing's answer on U. Branching on the pool p of E \\ F of greatest (r_p, -p): the node with p
forced and the node without p; the two split the node's subsets. Every U of the listing holding s
and a pool of memory v is a leaf of the family (q, slowest(U), min V, a least-memory pool m of U, the
pool f of U of greatest (r, -p)): the leaves over the families are every part of the listing (a part
under several m is solved once).

Bounds (each valid for every plan of every subset of the node, within the limits). N_top = the most
N with a split in the node within the node cap and the budget: min(sum_E count, limits.max_nodes,
the most N whose cheapest fill `replicas.cheapest_fill(F, N, E)` costs at most the budget; that fill
is the least cost of any N nodes of the node and never falls as N grows, so bisection). R = the most
sum_p n_p r_p over the node's splits of at most N_top nodes (one node of each pool of F, then the
nodes of greatest r: an exchange argument; r_p > 0 so fewer nodes give less), raised to N_top when
that is larger, times 1 + 1e-12. `compute_bound_s(sigma, 1)` = T_1 (`planner.sync.straggler.search`):
a proportional plan d on a split n takes T >= T_straggler(d) N H / W >= T_1 / sum_p n_p r_p
(W = sum_p n_p H_p <= H sum_p n_p r_p, H_p = floor(H r_p); `proportional_families`' T_floor), and a
plan with every H_p = H (the straggler twin) T >= T_1 / N; both are >= T_1 / R. So:
- min_time: T >= T_1 / R;
- max_compute: C <= training_window_s x F u x R with F u = C_target / (T_1' goodput), T_1' the bound
  of the C_local target kind (C_local = 6 P_act T eta with eta <= 1, and C_quality <= g 6 P_act T,
  g <= 1: the facts `compute_bound_s` checks; `proportional.search.h_worth_scoring`'s rate);
- min_cost: within the duration limit window_s, sum_p n_p r_p (N for a twin) >= T_1 / window_s, and
  it is at most N max(1, max_E r_p), so N >= N_min = ceil(T_1 / (window_s max(1, max_E r_p))), and
  the plan costs at least the cheapest fill of max(N_min, |F|, min_nodes) nodes of the node.
With a budget, under min_time and max_compute where the fastest split is the best
(`proportional.search.optional_pools_apply`), a node is also solved without the budget
(`proportional.search.solve_with_optional`: the exact optimum over every split of the node, ties to
the cheapest split): its value bounds the node's plans within the budget (a subset of them), and when
its split is within the budget it is the node's optimum within the budget, with the same tie (the
cheapest of the tied splits overall is within it), so the node needs no branching. Under Chinchilla's
C_local (where the boxes apply) a node is solved whole, as `solve_part` solves a part, where the split
table with a node on each pool of F and 0 or more on the others of E holds at most
`split_table.MAX_PREFIXES` prefixes (`proportional.search.solve_levels_with_optional`: the table's
least count 1 on F and 0 elsewhere lists exactly the node's splits, the box bound's fill is over the
same splits, and H_max is f's, f forced); else it is branched. Where T_1 is not
known to hold (0) nothing can be pruned and the instance is refused (exit 2, naming --solver highs).

With sites (network.sites with the geography's regions, at most 16 sites: `pool_families.refusal`). A
plan on U is scored in mixed_setting(U, q, sites): sigma with the links of U's sites S(U)
(`network.with_links`: the five numbers of `site_set_links`, functions of S(U) alone). The step ratios
read no link (t_pace and t_p are compute and the tensor-parallel collectives inside a node,
`rule.pool_step_s`), and neither do the bounds above (T_1 = C_target / (F u goodput) at one node; N_top,
R and the cheapest fill read counts, prices and ratios), so each holds for every plan of every subset
of a node whatever its sites. A node is solved whole (by the split table, or without the budget by the
fastest split) only when all its subsets have one set of sites: every pool of E at a site of a pool of F
(`one_site_set`; then S(U) = S(F) for every F within U within E, and the node's setting is sigma with
the links of S(F), `node_setting`); otherwise it is branched on the pool of E \\ F of greatest (r, -p)
among those at a site F does not reach, the two children splitting its subsets as above, after, where
`optional_pools_apply`, the bound of its relaxation per link setting (`unplaced`, as with chosen regions
below, each set of sites S(U) with the network's own view: its links `SiteNetwork.links(S(U))`, the
setting of every plan of U; never recorded). A leaf U is solved by the listing's own search of the part
U with its sites' links. So the search is the listing's
optimum with sites as without. It answers every objective there: without a budget, min_time and
max_compute where the fastest split is the best solve a node of one set of sites as the families do
(`solve_with_optional`, the node's exact optimum in its one setting: proof (c) of
`proportional_families`) and record it. The bounds need T_1: with sites the planner refuses beforehand
where T_1 does not hold for a pool's own setting with the target's kind or with C_local (`refusal`: a
C_quality target, constants that allow eta > 1; every family's setting is such a setting with another
node memory, which T_1 does not read).

With chosen regions (network.regions 'chosen', at most 16 sites; `chosen`). The listing's parts of a
subset U are (U, P, q) for each undominated region partition P of S(U) (`region_plans.part_regions`,
best regional link first): the setting with the links of P's view and, with several regions, the
placement of U's pools per region (its splits must be placeable, `sync.proportional.placement`). The
bounds above read neither links nor the placement, and a part's placeable splits are among the splits
of U, so each bound holds for every plan of every part (U, P, q) of every subset of a node. No node is
solved whole (its subsets differ in their placements, lo_r and cap_r read U region by region): every
node is branched, on a pool at a site F does not reach first, else on the pool of E \\ F of greatest
(r, -p), down to its leaves, and a leaf U is solved by the listing's own search
(`search_of("proportional").solve_parts`) of exactly the parts `pool_parts.parts_until` lists for U at
q: one per partition, with the same view, setting, space and placement (with a budget, its placements
within it). Every node, where `optional_pools_apply` (min_time, max_compute where the fastest split is
the best), is first bounded by its relaxation (`unplaced`), one per link setting its subsets can have:
the sets of sites S(U) of its subsets are S(F) with any of E's other sites (a pool of E at each); for
each five link numbers L (`network.with_links`) of such a set S and one of its undominated partitions
P (`region_choices` of S, by masks: `pool_parts.SiteSetViews`), the node cut to E_L (the pools of E at
the sites of the sets that reach L) solved whole by its fastest split without the placement rule and
the budget in the family's setting with the links L; the best over L. Every part (U, P) of a subset U
of the node is scored in the setting with the links L(S(U), P), U within E_L, on at most as many nodes,
and its placeable splits within the budget are among that relaxation's splits: so the bound holds for
every plan of every part of the node and of its children (they split its subsets), with no two links
compared (no monotonicity in the links is assumed). A node of one set of sites S (every pool of E at
a site of F) has the partitions of S alone, each with E_L = E. The bound is passed to both children (a
child's bound is the worse of its own and the parent's), and a node whose relaxation has nothing within
the tie tolerance of the best found is done.
Proof that the search is the listing's optimum: (a) the two children of a node split its subsets, so
every subset U of the listing lies in one leaf of its family (q, slowest(U), min V, a least-memory pool
of U, U's pool of greatest (r, -p)) unless a node above it was pruned by a bound
that holds for every plan of its parts, or its family is skipped; (b) a leaf's plans are the
listing's plans of U, each found by the listing's own search. The skipped families are those whose
pools all run the pace's steps (`proportional_families`): under 'auto' the straggler rule's choices
(`pool_regions_families`) hold those plans, as the listing's straggler search does; under
'proportional' alone `solve_rule_families` runs the choices with `keep` = `pace_pools` and each part as
its straggler twin (the choices' proof reads the eligible pools E only through: the slowest of a subset
of E holding s is s, m a pool of E of least memory, each site's cheapest pool of E; all hold for any E'
within E that holds s), which hold exactly the plans with every H_p = H of the parts (U, P, q) with U
within keep(q, s); every other U has a pool running more steps and lies in a family that is searched,
its twin solved at its leaf. Ties: the leaves' parts keep the listing's order of partitions (their key
index `LEAF_OFFSET + (leaf << PART_BITS) +` the part's index in the leaf).

Search, best first: the nodes by their bound (least time or cost, most compute), stopping at the
first that cannot come within the tie tolerance of the best plan found (every node left is no
better); the proven bound is that node's. Ties go to the cheaper plan (the parts' keys), then to the
earlier leaf, and under 'auto' to the straggler rule (the keys' index after every family's).
"""

from __future__ import annotations

import dataclasses
import heapq
import math
import time

from planner.evaluate import with_params
from planner.fleet.network import with_links
from planner.fleet.region_plans import part_regions
from planner.fleet.pools import PoolSetting
from planner.fleet.replicas import affordable_nodes, cheapest_fill, fleet_cost_usd, sites_of
from planner.schema.errors import InputError
from planner.solvers.pool_parts import PartResult, PartsRun, SiteSetViews, base_space, too_many_pools, unit_price
from planner.objectives import MIN_TIME
from planner.sync.proportional import boxes, search as proportional
from planner.sync.proportional.levels import needs_every_split
from planner.sync.proportional.rule import step_ratios
from planner.sync.rules import rules_searched
from planner.sync.searches import search_of
from planner.sync.straggler.rule import mixed_setting
from planner.sync.straggler.search import compute_bound_s

LEAF_OFFSET = 1 << 40          # the leaves' key index: after every family's (ties to the families, the straggler rule)
PART_BITS = 12                 # a leaf's parts' key indices (< 2 x 1,000 partitions) below its own index
SLACK = 1e-12                  # relative: the tie tolerance the planner keeps (ties are searched)


def refusal(instance, pools: list[PoolSetting]) -> str | None:
    """Why the search over subsets cannot answer the proportional rule with sites beyond 12 pools (None:
    it can, or the rule is not searched, or there are no sites): with sites it answers every objective
    (`proportional_families.solve_rule_families`), pruning by T_1 alone, so T_1 must hold for each pool's
    own setting at each precision it runs, with the target's kind (min_time, min_cost and the
    explanations' min_time) and with C_local (max_compute). Every family's setting is one of those
    with another node memory, which `compute_bound_s` does not read."""
    if "proportional" not in rules_searched(instance) or not instance.network.sites:
        return None
    precisions = base_space(instance, pools).precisions
    for i, pool in enumerate(pools):
        for q in (q for q in precisions if q in pool.precisions):
            s = mixed_setting(pools, (i,), q)
            if compute_bound_s(s, 1) <= 0 or compute_bound_s(s.replace(target_kind="c_local"), 1) <= 0:
                return ("the proportional rule (fleet.sync_rule) with sites: the bounds of its search over subsets "
                        "of pools do not hold with these assumptions (a C_quality target, training.target_kind, "
                        "or constants that allow an efficiency above 1)")
    return None


def needed(instance, objective, settings) -> bool:
    """Whether the families' fastest split is not enough (the subsets are searched instead): a budget,
    min_cost, or max_compute where `optional_pools_apply` fails for one of the families' `settings`."""
    return (instance.limits.budget_usd is not None or objective.by_cost
            or not all(proportional.optional_pools_apply(s, objective) for s in settings))


def node_top(pools: list[PoolSetting], forced, eligible, cap: float, budget_usd: float | None) -> int:
    """N_top of the module docstring (0 when not even |F| nodes fit)."""
    top = int(min(sum(pools[p].count for p in eligible), cap))
    if budget_usd is None or top < len(forced):
        return top

    def within(n: int) -> bool:
        return fleet_cost_usd(pools, cheapest_fill(pools, forced, n, eligible)) <= budget_usd

    low = len(forced)
    if not within(low):
        return 0
    while low < top:
        mid = (low + top + 1) // 2
        low, top = (mid, top) if within(mid) else (low, mid - 1)
    return low


def node_rate(pools: list[PoolSetting], ratios: dict[int, float], forced, eligible, top: int) -> float:
    """R of the module docstring: the most sum_p n_p r_p over the node's splits of at most `top` nodes,
    at least `top`, times 1 + 1e-12."""
    rest = sorted((ratios[p] for p in eligible for _ in range(pools[p].count - (p in forced))), reverse=True)
    most = sum(ratios[p] for p in forced) + sum(rest[:max(0, top - len(forced))])
    return max(most, float(top)) * (1 + SLACK)


class Search:
    """The branch and bound over one model size's subsets (module docstring), into `run`."""

    def __init__(self, run: PartsRun, params: float | None, net=None, chosen: bool = False):
        self.run, self.params, self.net = run, params, net      # net: the SiteNetwork (None without sites)
        self.chosen = chosen            # network.regions 'chosen': no node solved whole, leaves by partition
        self.pools, self.objective = run.pools, run.objective
        self.budget = run.instance.limits.budget_usd
        self.cap = run.instance.limits.max_nodes or math.inf
        self.heap: list = []
        self.seen: set = set()          # (q, F, E) of the nodes pushed, the leaves solved
        self.leaves = 0
        self.best = -math.inf           # max_compute: the most compute found
        self.views = None               # chosen regions: every set of sites' partitions and links (`link_groups`)
        self.view_links: dict = {}      # (partition, sites mask) -> its SiteLinks
        self.unlisted: set = set()      # sets of sites (masks) with more partitions than the listing takes

    def bound(self, family, ratios, forced, eligible) -> float:
        """The node's bound in the objective's units (inf / -inf: no plan in range)."""
        objective, s, space = self.objective, family.part.setting, family.part.space
        empty = -math.inf if objective.maximise else math.inf
        top = node_top(self.pools, forced, eligible, self.cap, self.budget)
        low = max(space.min_nodes, len(forced))
        if top < low:
            return empty
        if objective.by_cost:
            floor_s = compute_bound_s(s, 1)
            r_hi = max([1.0] + [ratios[p] for p in eligible]) * (1 + SLACK)
            fewest = low if not math.isfinite(s.window_s) else \
                max(low, math.ceil(floor_s / (s.window_s * r_hi) * (1 - SLACK)))
            if fewest > top:
                return empty
            return fleet_cost_usd(self.pools, cheapest_fill(self.pools, forced, fewest, eligible)) * (1 - SLACK)
        rate = node_rate(self.pools, ratios, forced, eligible, top)
        if objective.maximise:
            floor_s = compute_bound_s(s.replace(target_kind="c_local"), 1)
            return s.target * s.training_window_s * rate / (floor_s * s.goodput) if floor_s > 0 else math.inf
        return compute_bound_s(s, 1) / rate

    def push(self, family, ratios, forced, eligible, parent: float | None = None) -> None:
        key = (family.part.precision, forced, eligible)
        if key in self.seen:
            return
        self.seen.add(key)
        value = self.bound(family, ratios, forced, eligible)
        if parent is not None:           # a relaxation's value bounds the children too
            value = min(value, parent) if self.objective.maximise else max(value, parent)
        if math.isinf(value) and (value < 0) == (not self.objective.maximise):
            return
        order = -value if self.objective.maximise else value
        heapq.heappush(self.heap, (order, len(eligible) - len(forced), len(self.seen), family, ratios, forced,
                                   eligible))

    def worse(self, value: float) -> bool:
        """No plan of a node of this bound comes within the tie tolerance of the best found."""
        run = self.run
        if self.objective.maximise:
            return value < max(self.best * (1 - SLACK), run.most)
        return value > run.incumbent * (1 + SLACK)

    def found(self, result: PartResult) -> None:
        run = self.run
        run.found.append(result)
        if self.objective.maximise:
            self.best = max(self.best, result.value)
            run.most = max(run.most, result.value * (1 - SLACK))
            run.bound = max(run.bound, result.value)
        else:
            run.incumbent = min(run.incumbent, result.value)
            run.bound = min(run.bound, result.value)

    def solve(self, families) -> None:
        run = self.run
        self.best = max((r.value for r in run.found), default=-math.inf)
        for family in families:
            s = family.part.setting
            kind = s.replace(target_kind="c_local") if self.objective.maximise else s
            if compute_bound_s(kind, 1) <= 0:
                too_many_pools(len(self.pools), "the proportional rule (fleet.sync_rule): the bounds of its search "
                                                "over subsets of pools do not hold with these assumptions")
            ratios = step_ratios(s, self.pools, family.eligible, family.part.precision)
            self.push(family, ratios, family.forced, family.eligible)
        while self.heap:
            order, _, _, family, ratios, forced, eligible = heapq.heappop(self.heap)
            value = -order if self.objective.maximise else order
            if time.perf_counter() > run.deadline:
                run.complete = False
                return
            if self.worse(value):                 # best-first: every node left is no better
                run.bound = max(run.bound, value) if self.objective.maximise else min(run.bound, value)
                return
            if forced == eligible:
                if not self.leaf(family, forced):
                    return
                continue
            spread = not self.one_site_set(forced, eligible)   # its subsets' links differ: not solved whole
            if not (spread or self.chosen) and self.every_split(family):   # chosen regions: placements differ
                whole = self.by_table(family, forced, eligible)
                if whole is False:
                    return
                if whole is True:                 # solved: nothing to branch
                    continue
            relaxed = None
            if self.relaxes(family):              # chosen regions or several sets of sites: a bound (`unplaced`)
                relaxed = (self.unplaced if self.chosen or spread else self.relaxed)(family, forced, eligible)
            if relaxed is False:
                return
            if relaxed is True:                   # solved, or nothing of the node within the tie tolerance
                continue
            p = max((q for q in eligible if q not in forced and not (spread and self.at_forced_site(q, forced))),
                    key=lambda q: (ratios[q], -q))
            self.push(family, ratios, tuple(sorted(forced + (p,))), eligible, relaxed)
            self.push(family, ratios, forced, tuple(q for q in eligible if q != p), relaxed)

    def at_forced_site(self, p: int, forced) -> bool:
        """Pool p is at a site of a pool of `forced` (always without sites)."""
        return self.net is None or self.pools[p].site in {self.pools[q].site for q in forced}

    def one_site_set(self, forced, eligible) -> bool:
        """Every subset of the node has the same sites (those of `forced`): the pools of `eligible` are all
        at sites of pools of `forced` (always without sites)."""
        return all(self.at_forced_site(p, forced) for p in eligible)

    def node_setting(self, family, forced):
        """The setting of every subset of a node with one set of sites: the family's, with the links of the
        sites of `forced` (`network.with_links`; the family's own without sites)."""
        s = family.part.setting
        return s if self.net is None else with_links(s, self.net.links(sites_of(self.pools, forced)))

    def every_split(self, family) -> bool:
        """Chinchilla's C_local (every split a candidate) where the split table and the boxes apply."""
        s = family.part.setting
        return needs_every_split(s, self.objective) and boxes.applies(s, MIN_TIME)

    def by_table(self, family, forced, eligible):
        """The node solved whole, as `proportional.search.solve_part` solves a part, over the splits with a
        node on each pool of F and 0 or more on the others of E (`split_table.SplitTable` with `forced`,
        `boxes.search` with the fill bound over the same splits): True when solved (its best recorded,
        or nothing within the tie tolerance of the best found), False when the deadline stopped it,
        None when its table would hold more than `split_table.MAX_PREFIXES` prefixes (branch)."""
        run, part = self.run, family.part
        s, q = self.node_setting(family, forced), part.precision
        top = node_top(self.pools, forced, eligible, self.cap, self.budget)
        space = dataclasses.replace(part.space, min_nodes=max(part.space.min_nodes, len(forced)), max_nodes=top)
        found, count, complete = proportional.solve_levels_with_optional(
            self.pools, forced, eligible, s, space, q, self.objective, run.deadline, self.best, self.budget)
        if found is None and complete is None:
            return None
        run.evaluations += count
        if not complete:
            run.complete = False
            return False
        if found is not None:
            batch, counts, key, value = found.batch, found.counts, found.key, found.value
            self.leaves += 1
            used = tuple(i for i, c in enumerate(counts) if c)
            self.found(PartResult(part._replace(used=used, setting=s, space=space), batch, counts,
                                  key + (LEAF_OFFSET + self.leaves,), value, "proportional"))
        return True

    def relaxes(self, family) -> bool:
        """A node is solved whole by its fastest split: with a budget (a bound, or the node's answer when
        within it) or with sites (no budget: the node's answer), where `optional_pools_apply`."""
        return ((self.budget is not None or self.net is not None)
                and proportional.optional_pools_apply(family.part.setting, self.objective))

    def relaxed(self, family, forced, eligible):
        """The node solved without the budget: True when that answer is within it (the node's optimum,
        recorded) or when nothing of the node comes within the tie tolerance of the best found (the node
        is done), False when the deadline stopped it, else its value (a bound on the node)."""
        part = family.part
        top = node_top(self.pools, forced, eligible, self.cap, self.budget)
        space = dataclasses.replace(part.space, min_nodes=max(part.space.min_nodes, len(forced)), max_nodes=top)
        s = self.node_setting(family, forced)
        found, complete = self.fastest(family, forced, eligible, s, space)
        if not complete:
            return False
        if found is None:
            return True
        if self.budget is not None and fleet_cost_usd(self.pools, found.counts) > self.budget:
            return found.value
        used = tuple(i for i, c in enumerate(found.counts) if c)
        self.leaves += 1
        self.found(PartResult(part._replace(used=used, setting=s, space=space), found.batch, found.counts,
                              found.key + (LEAF_OFFSET + self.leaves,), found.value, "proportional"))
        return True

    def fastest(self, family, forced, eligible, s, space):
        """The node solved whole by its fastest split in setting `s` on `space`
        (`proportional.search.solve_with_optional`, pruned by the best found): (Found or None, complete);
        the evaluations counted, the run marked incomplete when the deadline stopped it."""
        run = self.run
        incumbent = self.best if self.objective.maximise else run.incumbent
        found, count, complete = proportional.solve_with_optional(
            self.pools, forced, eligible, s, space, family.part.precision, self.objective, run.deadline, incumbent)
        run.evaluations += count
        if not complete:
            run.complete = False
        return found, complete

    def unplaced(self, family, forced, eligible):
        """With chosen regions (with the geography's, a node of several sets of sites: each set's one
        view, the network's own, in place of its partitions) a node bounded by its relaxation without the
        placement rule and the budget, one per link setting its subsets can have (`link_groups`): for each
        five link numbers L of a set of sites S(U) and partition P the node's subsets U reach, the node cut
        to E_L (the pools of E at the sites of the sets of sites that reach L) solved whole by its fastest
        split (`solve_with_optional`, its exact optimum over the splits with a node on each pool of F and 0
        or more on the others of E_L, no budget, no placement) in the family's setting with the links L.
        Every part (U, P) of every subset U of the node (F within U within E) is scored in the setting with
        the links L(S(U), P) (`mixed_setting` with P's view: the family's setting, proof (b), with the links
        `view.links(S(U))`; `with_links` replaces every link field), U within E_L; on a space with fewer
        nodes at most (`affordable_nodes` of U within `node_top` of (F, E_L)) and a placement that only
        removes plans (`space.restrict_classes`), its splits among the relaxation's; so each of its plans
        is a plan of the relaxation of L, and the best over the L bounds every placed plan of the node
        (min_time: the least; max_compute: the most). No link is compared with another: no monotonicity
        in the links is assumed. A node of one set of sites S (every pool of E at a site of F) has the
        partitions of S alone, each with E_L = E. `boxes.search` returns a relaxation's optimum when it
        comes within the tie tolerance of `incumbent` (one answering None has every plan beyond it, and so
        beyond every value returned): the bound is the best value returned, True when none returns one
        (the node is done, as in `relaxed`), False when the deadline stopped it, None (no bound) when a
        node of several sets of sites has one with more partitions than the listing takes (only a leaf
        refuses, as before).
        Nothing is recorded (the relaxed plan need not be placeable or within the budget)."""
        part = family.part
        groups = self.link_groups(forced, eligible)
        if groups is None:
            return None
        values = []
        for links, within in groups:
            top = node_top(self.pools, forced, within, self.cap, self.budget)
            space = dataclasses.replace(part.space, min_nodes=max(part.space.min_nodes, len(forced)), max_nodes=top,
                                        placement=None)
            found, complete = self.fastest(family, forced, within, with_links(part.setting, links), space)
            if not complete:
                return False
            if found is not None:
                values.append(found.value)
        if not values:
            return True
        return max(values) if self.objective.maximise else min(values)

    def link_groups(self, forced, eligible):
        """[(SiteLinks L, E_L)] of a node (module docstring, `unplaced`), in order of first appearance:
        the sets of sites S(U) of its subsets are S(F) with any of the other sites of E (a pool of E at
        each), each with its undominated partitions (`pool_parts.SiteSetViews`, the listing's
        `region_choices`; with the geography's regions the network's own view alone, partition None),
        grouped by their five link numbers; E_L the pools of E at a site of a set of
        sites in the group; L the `SiteNetwork.links` of the group's first set and its first partition
        with those numbers (every member's is equal). Each set's distinct numbers come from
        `SiteSetViews.link_numbers` (the links of every partition are those of the undominated ones,
        `SiteSets.partition_links`: no partition listed, in the listing's order of first appearance, with
        its refusal), so the groups, their order and their representatives are those of the listing
        (the 2^16 sets of 16 cities: 0.45 s instead of 9.7 s). None when a node reaching several sets of
        sites has one with more than `partition.MAX_PARTITIONS` partitions (no bound: only a leaf refuses,
        as before); a node of one set of sites refuses there as the listing does."""
        if self.views is None:
            self.views = SiteSetViews(self.net, self.pools)
        views = self.views
        need = views.mask(forced)
        free = views.mask(eligible) & ~need
        groups: dict = {}               # five link numbers -> [its first sites mask, union of the masks]
        sub = free
        while True:                     # every set of sites of the node's subsets
            mask = need | sub
            if mask in self.unlisted:
                return None
            try:
                listed = views.link_numbers(mask) if self.chosen else [views.geography(mask)[0][2]]
            except InputError:
                if not free:            # a node of one set of sites refuses as before (as its leaves would)
                    raise
                self.unlisted.add(mask)
                return None
            for numbers in listed:
                group = groups.get(numbers)
                if group is None:
                    groups[numbers] = [mask, mask]
                else:
                    group[1] |= mask
            if sub == 0:
                break
            sub = (sub - 1) & free
        out = []
        for numbers, (mask, union) in groups.items():
            partition = None            # the first partition of the group's first set with its numbers
            if self.chosen:
                partition = next(p for p, _, listed in views.partitions(mask) if listed == numbers)
            if (partition, mask) not in self.view_links:
                names = [n for i, n in enumerate(views.names) if mask >> i & 1]
                view = self.net if partition is None else self.net.with_regions(partition)
                self.view_links[partition, mask] = view.links(names)
            out.append((self.view_links[partition, mask], tuple(p for p in eligible if views.bit[p] & union)))
        return out

    def leaf(self, family, used) -> bool:
        """The part U = `used` solved as the listing solves it; False when the deadline stopped it."""
        run, q = self.run, family.part.precision
        if (q, used) in self.seen:
            return True
        self.seen.add((q, used))
        top = min(affordable_nodes(self.pools, used, self.budget), self.cap)
        low = max(family.part.space.min_nodes, len(used))
        if top < low:
            return True
        listed = []
        for view, placement in part_regions(run.instance, self.net, self.pools, used):   # one without chosen regions
            s = mixed_setting(self.pools, used, q, view)
            s = unit_price(s if self.params is None else with_params(s, self.params))
            space = dataclasses.replace(family.part.space, min_nodes=low, max_nodes=int(top), placement=placement)
            listed.append(family.part._replace(used=used, setting=s, space=space, sites=view, placement=placement))
        sub = PartsRun(run.instance, self.pools, self.objective, run.solver, run.deadline, listed, run.rules,
                       incumbent=run.incumbent, most=run.most, bound=self.objective.empty_bound)
        search_of("proportional").solve_parts(sub)
        run.evaluations += sub.evaluations
        if not sub.complete:
            run.complete = False
            return False
        self.leaves += 1
        for result in sub.found:          # ties: the earlier leaf, then the listing's order of its parts
            index = LEAF_OFFSET + (self.leaves << PART_BITS) + result.key[-1]
            self.found(result._replace(key=result.key[:-1] + (index,)))
        run.bound = max(run.bound, sub.bound) if self.objective.maximise else min(run.bound, sub.bound)
        return True
