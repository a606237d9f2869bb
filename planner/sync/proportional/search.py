"""The parts of the mixed planner under the proportional rule (`planner.sync.proportional.rule`,
docs/fleet.md section 4): the exact best plan on a set U of pools when each pool p runs H_p
inner steps per outer step.

A proportional plan on U is a plan of mode flat (no ZeRO-3) or hierarchical, with no expert
parallelism, scored in U's mixed setting with the throughput changed by `adjust_for`: tokens
per outer step times W / (N H), W = sum_p n_p H_p, and H_eff at H_max. For fixed U, N and every
other decision, time, memory and quality do not depend on how the N nodes are split among the
pools, and the time to target is proportional to 1 / W (C_local target: eta_R is scored at the
target point; C_quality target: the tokens needed do not depend on the rate). So the best split
is `fastest_fill` (most W, then least cost) for `min_time`, and for `max_compute` where the
compute grows with the tokens: a C_quality target (it grows with T, `run.quality_compute`) or a
C_local target under the linear v1 or no replica penalty (C_local is then 6 P_act T eta with eta
independent of T). Under the Chinchilla penalty C_local is not monotone in T (`planner.space`):
`max_compute` of C_local there compares every achievable W of a plan's (H, N), pruned by a bound
over brackets of W (`planner.sync.proportional.levels`). With a budget the fastest split may be
over it while a slower one is not, and `min_cost` needs the cheapest split that still reaches the
target: both are queries of the split table (`planner.sync.proportional.split_table`: no split
listed), or, where it does not apply (several chosen regions, or more than
`split_table.MAX_PREFIXES` prefixes), compare every split listed (`Splits`, `_cheapest`).

Each part is solved by scoring every plan of the part's space with H >= first_h_that_differs
(every n, H, R of the classes of `DecisionSpace`, whose reductions compare plans of equal N, H and
R only, and so stay exact here: the rule multiplies their times alike). Below that H every H_p = H
and the plans are straggler plans, solved by the straggler solvers (`parts.straggler_twin` when the
proportional rule is the only one searched). Only the H at which a plan could match the best found
so far are scored (`h_worth_scoring`: a bound per H on the compute rate, and for min_cost on the
nodes needed), at most MAX_PLANS plans (beyond, the instance is refused, exit 2, naming
fleet.sync_rule), except where the branch and bound's boxes search the part with no limit on the
plans: `min_time` and `max_compute` (`planner.sync.proportional.boxes`; Chinchilla C_local with
the split table and its own box bound, `levels.chinchilla_box_bound`) and `min_cost`
(`planner.sync.proportional.cost_boxes`), wherever the facts of `planner.solvers.monotone` the box
bounds need hold. A part is skipped for `min_time` when a valid lower bound exceeds the best time
found (`lower_bound_s`): T_prop >= T_straggler / rho_max for every plan, rho_max = max_p t_pace / t_p
(W <= N H rho_max, and eta_H, eta_R at H_max >= H are no larger: facts (H), (R), (L) of
`planner.solvers.monotone`), so the part's straggler optimum over rho_max bounds it; and the
compute-only bound over rho_max eta_H(H_min). A `min_cost` part is skipped when the fewest nodes
that bound allows within the duration limit cost more than the best plan found (`fewest_nodes`).
"""

from __future__ import annotations

import math
import time
from typing import NamedTuple

import numpy as np

from planner.objectives import MIN_COST, MIN_TIME, Objective
from planner.cost.setting import PlanBatch, Setting
from planner.sync.proportional.rule import adjust_for, fastest_fill, fill_row, fill_rows, inner_steps, step_ratios
from planner.sync.proportional.measure import best_with_tie, measure, unique_pairs
from planner.fleet.region_plans import units_of
from planner.sync.proportional.placement import fastest_placed_counts, fastest_placement, placeable_splits
from planner.fleet.replicas import fleet_cost_usd
from planner.solvers.objective_search import tie_less
from planner.schema.errors import InputError, Problem
from planner.solvers import monotone
from planner.solvers.bnb import TIE_REL
from planner.sync.proportional import boxes, cost_boxes
from planner.sync.proportional.levels import Levels, needs_every_split, solve_levels
from planner.sync.proportional.split_table import NONE, SplitTable
from planner.space import DecisionSpace

MODES = ("flat", "hierarchical")
MAX_PLANS = monotone.EXHAUSTIVE_MAX_PLANS     # plans scored per part at most; beyond, refused (exit 2)
CHUNK = 1 << 18                               # plans scored at once
ROWS_CELLS = 1 << 22                          # (H, N) cells of splits kept at once (`Splits`)


class Found(NamedTuple):
    """The best proportional plan of a part: its batch, counts, key and objective value."""

    batch: PlanBatch
    counts: list[int]
    key: tuple[float, ...]
    value: float


def plans(s: Setting, space: DecisionSpace, precision: str, h_min: int = 1, h_values=None):
    """(classes, idx, n, h, r) chunks covering every plan of `space` the rule applies to (flat and
    hierarchical without ZeRO-3, no expert parallelism) with H >= h_min, or with H in `h_values`."""
    h = np.arange(h_min, space.max_inner_steps + 1) if h_values is None else np.asarray(h_values, dtype=np.int64)
    for c, r_max in _classes(s, space, precision):
        for k in range(c.size):
            n = np.arange(c.n_lo[k], c.n_hi[k] + 1)
            r = np.arange(1, r_max + 1)
            for h_part in np.array_split(h, max(1, n.size * h.size * r.size // CHUNK)):
                nn, hh, rr = (x.ravel() for x in np.meshgrid(n, h_part, r, indexing="ij"))
                yield c, np.full(nn.size, k), nn, hh, rr


def plan_count(s: Setting, space: DecisionSpace, precision: str, h_min: int = 1, h_values=None) -> int:
    """How many plans `plans` lists (without scoring them)."""
    h = max(0, space.max_inner_steps - h_min + 1) if h_values is None else len(h_values)
    return sum(int((c.n_hi - c.n_lo + 1).sum()) * h * r_max for c, r_max in _classes(s, space, precision))


def h_worth_scoring(s: Setting, pools, used, precision: str, h_values: np.ndarray, objective: Objective,
                    incumbent: float, node_flop_s: float, max_nodes: int, cost_of_nodes=None) -> np.ndarray:
    """The H of `h_values` at which a proportional plan of the part (at most `max_nodes` nodes) could
    match `incumbent` (the best time, s, or the most compute, FLOP, found so far; ties kept), by a
    bound per H:

        compute per training second <= F u W_hi(H) / H x eta_H(H_max(H))

    with `node_flop_s` = F u of the pacing pool (`straggler.search.compute_bound_s`; 0 when its facts do not
    hold: every H is kept) and W_hi(H) the W of the fastest fill of `max_nodes` nodes (the most W of
    any split of at most that many nodes: a node more adds its H_p >= 1). A plan on a split of W runs
    B W tokens per outer step (B W R per hierarchical cycle) of at least H t_pace >= H 6 P_act B / (F u)
    (R H t_pace); C_local = 6 P_act T eta and C_quality <= g 6 P_act T (`run.quality_compute`) with
    eta, g <= eta_H(H_eff) and H_eff >= H_max (fact (H): eta_H falls with H_eff). So the time to a
    target is at least C_target / (rate x goodput) and the compute in the window at most
    training_window_s x rate. min_cost (`incumbent` in USD): within the duration limit T a plan needs
    W >= W_req = C_target H / (F u eta_H(H_max) goodput T), so at least N_req = ceil(W_req / H_max)
    nodes (W <= N H_max), which cost at least `cost_of_nodes(N_req)` (the cheapest fill, nondecreasing
    in N)."""
    from planner.cost import quality
    from planner.cost.straggler import eta_h_divisor
    h_values = np.asarray(h_values, dtype=np.int64)
    if node_flop_s <= 0 or not math.isfinite(incumbent) or not h_values.size or \
            (objective.by_cost and (cost_of_nodes is None or not math.isfinite(s.window_s))):
        return h_values
    ratios = step_ratios(s, pools, used, precision)
    counts = fastest_fill(pools, ratios, max_nodes)          # most steps first: the order of the ratios
    steps = inner_steps(ratios, h_values)
    w_hi = sum(counts[i] * steps[i] for i in used)
    h_max = np.max(np.stack(list(steps.values())), axis=0)
    eta_h = np.asarray(quality.eta_sync_interval(h_max, s.params, s.assumptions, eta_h_divisor(s.assumptions)), float)
    rate = node_flop_s * (w_hi / h_values) * eta_h * (1.0 + 1e-9)
    if objective.maximise:
        return h_values[s.training_window_s * rate >= incumbent * (1.0 - TIE_REL)]
    if objective.by_cost:
        w_req = s.target * h_values / (node_flop_s * eta_h * (1.0 + 1e-9) * s.goodput * s.window_s)
        n_req = np.maximum(np.ceil(w_req / h_max * (1.0 - 1e-12)), len(used))
        least = {int(n): cost_of_nodes(int(n)) if n <= max_nodes else math.inf for n in np.unique(n_req)}
        cost = np.array([least[int(n)] for n in n_req])
        return h_values[cost <= incumbent * (1.0 + TIE_REL)]
    return h_values[s.target / (rate * s.goodput) <= incumbent * (1.0 + TIE_REL)]


def _one_region(space: DecisionSpace) -> bool:
    """No placement rule on the splits (not several chosen regions)."""
    return space.placement is None or len(space.placement.partition) <= 1


def _classes(s: Setting, space: DecisionSpace, precision: str):
    """(classes, R range) of the modes the rule applies to."""
    for mode in (m for m in MODES if m in space.modes):
        c = space.classes(s, mode, precision, "none")
        if c is not None:           # replicas of one node: no ZeRO-3 shards (flat, or inside hierarchical groups)
            c = c.take(np.asarray(c.rows.zero_shards) == 1)
        if c is not None and c.size:
            yield c, (space.max_regional_rounds if mode == "hierarchical" else 1)


class Splits:
    """The split of N nodes among the pools of U that the best proportional plans of a given H and
    unit size u use, row by row (one row per (H, u), computed when first asked for, at most
    ROWS_CELLS cells kept): W = sum_p n_p H_p (0 where no split exists), its cost, and either the
    fastest split or, with a budget, the split of most W within it, then the cheapest, among
    `vectors` (every split). With several chosen regions (`placement`) only the splits whose nodes
    per region are placeable for u count (`placement.fastest_placement`, `placement.placeable_splits`);
    else, or for u = 1 (flat plans: no units), the fastest fill. `forced` (a subset of U, no budget, no
    placement): only those pools must hold a node (`rule.fastest_fill`; the families beyond 12 pools)."""

    def __init__(self, pools, used, ratios, max_nodes: int, budget_usd: float | None, h_count: int,
                 placement=None, forced=None):
        self.pools, self.used, self.ratios, self.max_nodes, self.budget_usd = pools, used, ratios, max_nodes, budget_usd
        self.forced = forced
        if forced is not None and (budget_usd is not None or (placement is not None and len(placement.partition) > 1)):
            raise ValueError("splits with pools that may hold no node take no budget and no placement")
        self.placement = placement if placement is not None and len(placement.partition) > 1 else None
        self.vectors = self.vector_cost = self.table = None
        if budget_usd is not None and self.placement is None:
            self.table = SplitTable.build(pools, used, ratios, budget_usd)
        if budget_usd is not None and self.table is None:
            self.vectors, self.vector_cost = split_vectors(pools, used, h_count, "a budget")
        self.rows: dict[tuple[int, int], tuple] = {}
        self.placeable: dict[int, np.ndarray] = {}

    def unit(self, unit: int) -> int:
        """The unit size that matters: 1 without several regions."""
        return int(unit) if self.placement is not None and unit > 1 else 1

    def steps(self, h: int) -> dict[int, int]:
        return {p: int(v) for p, v in inner_steps(self.ratios, h).items()}

    def row(self, h: int, unit: int = 1) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        key = (h, self.unit(unit))
        if key not in self.rows:
            if len(self.rows) * (self.max_nodes + 1) > ROWS_CELLS:
                self.rows.clear()
            if self.table is not None:
                self.rows[key] = self._best_within_budget_by_table(h)
            elif self.vectors is not None:
                self.rows[key] = self._best_within_budget(*key)
            elif key[1] == 1:
                self.rows[key] = fill_row(self.pools, self.ratios, h, self.max_nodes, self.forced) + (None,)
            else:
                self.rows[key] = fastest_placement(self.placement, self.steps(h), key[1], self.max_nodes) + (None,)
        return self.rows[key]

    def lookup(self, h: np.ndarray, nodes: np.ndarray, units: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(W, cost) of the split of each plan (H, N, u)."""
        units = np.ones_like(h) if units is None or self.placement is None else np.asarray(units)
        pairs, inverse = unique_pairs(h, units)
        self._fill_missing(pairs)
        rows = [self.row(hv, uv) for hv, uv in pairs]
        return np.stack([w for w, _, _ in rows])[inverse, nodes], np.stack([c for _, c, _ in rows])[inverse, nodes]

    def _fill_missing(self, pairs) -> None:
        """The fastest-fill rows (no budget, u = 1 or no placement) of `pairs` not yet kept, computed
        together (`rule.fill_rows`: each row bit for bit `fill_row`'s, which `row` would compute one
        by one), kept as `row` keeps them."""
        if self.table is not None or self.vectors is not None:
            return
        missing = list(dict.fromkeys(hv for hv, uv in pairs if self.unit(uv) == 1 and (hv, 1) not in self.rows))
        if len(missing) < 2:
            return
        weighted, cost = fill_rows(self.pools, self.ratios, missing, self.max_nodes, self.forced)
        for k, hv in enumerate(missing):
            if len(self.rows) * (self.max_nodes + 1) > ROWS_CELLS:
                self.rows.clear()
            self.rows[hv, 1] = (weighted[k], cost[k], None)

    def counts(self, h: int, nodes: int, unit: int = 1) -> list[int]:
        u = self.unit(unit)
        index = self.row(h, u)[2]
        if self.table is not None and fill_row(self.pools, self.ratios, h, self.max_nodes)[1][nodes] > self.budget_usd:
            w = self.table.extreme([h], [nodes], math.inf, False)
            _, prefix, n_a = self.table.cheapest_exact([h], [nodes], w)
            return self.table.counts(int(prefix[0]), nodes, int(n_a[0]))
        if index is not None:
            return [int(x) for x in self.vectors[index[nodes]]]
        if u == 1:
            return fastest_fill(self.pools, self.steps(h), nodes, self.forced)
        return fastest_placed_counts(self.pools, self.placement, self.steps(h), u, nodes)

    def _best_within_budget_by_table(self, h: int):
        """Per N: the most W within the budget and the cheapest split of it: the fastest fill where it
        is within the budget (the most W of all, the cheapest of those), else by the `SplitTable`."""
        weighted, cost = fill_row(self.pools, self.ratios, h, self.max_nodes)
        over = np.flatnonzero((weighted > 0) & (cost > self.budget_usd))
        if over.size:
            hh = np.full(over.size, h)
            w = self.table.extreme(hh, over, math.inf, False)
            c, _, _ = self.table.cheapest_exact(hh, over, w)
            has = w != NONE
            weighted, cost = weighted.copy(), cost.copy()
            weighted[over], cost[over] = np.where(has, w, 0).astype(float), np.where(has, c, math.inf)
        return weighted, cost, None

    def _best_within_budget(self, h: int, u: int):
        vectors, cost = self.vectors, self.vector_cost
        nodes = vectors.sum(axis=1)
        steps = inner_steps(self.ratios, h)
        w = sum(vectors[:, i] * steps[i] for i in self.used).astype(float)
        if u not in self.placeable:
            self.placeable[u] = placeable_splits(self.placement, vectors, u)
        order = np.lexsort((cost, -w))                           # most W first, then cheapest
        order = order[((cost <= self.budget_usd) & (nodes <= self.max_nodes) & self.placeable[u])[order]]
        first = np.unique(nodes[order], return_index=True)       # the first split of each N in that order
        chosen = order[first[1]]
        weighted, best_cost = np.zeros(self.max_nodes + 1), np.full(self.max_nodes + 1, math.inf)
        index = np.zeros(self.max_nodes + 1, dtype=np.int64)
        weighted[first[0]], best_cost[first[0]], index[first[0]] = w[chosen], cost[chosen], chosen
        return weighted, best_cost, index


def split_vectors(pools, used: tuple[int, ...], h_count: int, why: str) -> tuple[np.ndarray, np.ndarray]:
    """Every split of nodes among the pools of U, at least one node of each: (counts [V, pools], cost
    [V]). InputError naming fleet.sync_rule when V times the H searched exceeds MAX_PLANS (`why`:
    what makes every split compared, in the message)."""
    size = math.prod(pools[i].count for i in used)
    if size * h_count > MAX_PLANS:
        raise InputError([Problem("fleet.sync_rule", f"with {why} the proportional rule compares every split of the "
                                                     f"nodes among the pools used: {size:,} splits x {h_count:,} "
                                                     f"values of H are more than {MAX_PLANS:,}; lower "
                                                     "search.max_inner_steps or set 'straggler'")])
    grids = np.meshgrid(*[np.arange(1, pools[i].count + 1) for i in used], indexing="ij")
    vectors = np.zeros((size, len(pools)), dtype=np.int64)
    for j, i in enumerate(used):
        vectors[:, i] = grids[j].ravel()
    return vectors, np.array([fleet_cost_usd(pools, v) for v in vectors])


def solve_part(pools, used: tuple[int, ...], s: Setting, space: DecisionSpace, precision: str, objective: Objective,
               deadline: float, h_min: int = 1, budget_usd: float | None = None,
               scored_h=None, incumbent: float = math.inf) -> tuple[Found | None, int, bool]:
    """(best proportional plan of the part with H >= h_min (or H in `scored_h`: `h_worth_scoring`) or
    None, plans scored, complete). Not
    complete when the deadline stopped it (then nothing is proven about the plans not scored).
    min_time and max_compute: by boxes (`boxes`; Chinchilla C_local through the split
    table), min_cost by boxes (`cost_boxes`), pruned against `incumbent` (a plan of another
    part: seconds, FLOP or USD), with no limit on the plans; None then when nothing of the part comes
    within the tie tolerance of it. Else every plan is scored (at most MAX_PLANS)."""
    space = space.for_objective(s, objective)
    table = None
    if (needs_every_split(s, objective) or objective.by_cost) and _one_region(space) and \
            boxes.applies(s, MIN_TIME):
        table = SplitTable.build(pools, used, step_ratios(s, pools, used, precision), budget_usd)
    if objective.by_cost and table is not None:
        ratios = step_ratios(s, pools, used, precision)
        h_max = np.max(np.stack(list(inner_steps(ratios, np.arange(1, space.max_inner_steps + 1)).values())), axis=0)
        found, evaluations, complete = cost_boxes.search(
            pools, used, s, space, list(_classes(s, space, precision)), table, lambda h: h_max[np.asarray(h) - 1],
            boxes.fill_speed_bound(pools, used, ratios, int(space.max_nodes)), incumbent, deadline)
        return (Found(*found) if found is not None else None), evaluations, complete
    if boxes.applies(s, objective) or table is not None:
        ratios = step_ratios(s, pools, used, precision)
        h_all = np.arange(1, space.max_inner_steps + 1)
        h_max = np.max(np.stack(list(inner_steps(ratios, h_all).values())), axis=0)
        splits = Splits(pools, used, ratios, int(space.max_nodes), budget_usd, space.max_inner_steps, space.placement)
        found, evaluations, complete = boxes.search(
            pools, used, s, space, precision, list(_classes(s, space, precision)), splits,
            lambda h: h_max[np.asarray(h) - 1], ratios, incumbent, deadline, objective, table)
        return (Found(*found) if found is not None else None), evaluations, complete
    if scored_h is None:
        scored_h = np.arange(h_min, space.max_inner_steps + 1)
    count = plan_count(s, space, precision, h_values=scored_h)
    if count > MAX_PLANS:
        raise InputError([Problem("fleet.sync_rule", f"the proportional rule scores every plan of a set of pools; "
                                                     f"{count:,} plans are more than {MAX_PLANS:,}: narrow "
                                                     "search (max_inner_steps, group_sizes, compression) or set "
                                                     "'straggler'")])
    ratios = step_ratios(s, pools, used, precision)
    h_values = list(range(1, space.max_inner_steps + 1))
    h_max = np.max(np.stack(list(inner_steps(ratios, np.asarray(h_values)).values())), axis=0)
    if objective.by_cost:
        return _cheapest(pools, used, s, space, precision, ratios, h_values, h_max, scored_h, budget_usd, deadline)
    if needs_every_split(s, objective):
        vectors, vector_cost = split_vectors(pools, used, len(scored_h),
                                             "max_compute of C_local under the Chinchilla replica penalty")
        levels = Levels(vectors, vector_cost, ratios, int(space.max_nodes), budget_usd, space.placement)
        found, evaluations, complete = solve_levels(pools, s, levels, plans(s, space, precision, h_values=scored_h),
                                                    lambda h: h_max[np.asarray(h) - 1], deadline, MAX_PLANS)
        return (Found(*found) if found is not None else None), evaluations, complete
    splits = Splits(pools, used, ratios, int(space.max_nodes), budget_usd, len(scored_h), space.placement)
    best, evaluations = None, 0
    for c, idx, n, h, r in plans(s, space, precision, h_values=scored_h):
        if time.perf_counter() > deadline:
            return best, evaluations, False
        nodes = c.nodes(idx, n)
        batch = c.plans(idx, n, h, r)
        units = units_of(c.rows, c.size)[idx]
        weighted, cost = splits.lookup(h, nodes, units)
        value = measure(s, batch, adjust_for(weighted, h_max[h - 1], h), objective)
        evaluations += value.size
        ok = (weighted > 0) & np.isfinite(value) & ((value <= s.window_s) if objective.by_time else True)
        if not ok.any():
            continue
        i, _ = best_with_tie(value, cost, ok)                               # ties to the cheaper split
        key = (float(value[i]), float(cost[i]))
        if best is None or tie_less(key, best.key):
            counts = splits.counts(int(h[i]), int(nodes[i]), int(units[i]))
            key = (key[0], fleet_cost_usd(pools, counts))
            best = Found(batch.take(slice(i, i + 1)), counts, key, -key[0] if objective.maximise else key[0])
    return best, evaluations, True


def optional_pools_apply(s: Setting, objective: Objective) -> bool:
    """Whether `solve_with_optional` applies: min_time, or max_compute where the boxes apply and the
    best split is the fastest (`boxes.applies`: C_local under the linear v1, fitted or no replica
    penalty, or C_quality), so no split but the fastest fill need be compared."""
    return not objective.by_cost and boxes.applies(s, objective)


def solve_with_optional(pools, forced: tuple[int, ...], eligible: tuple[int, ...], s: Setting, space: DecisionSpace,
                        precision: str, objective: Objective, deadline: float,
                        incumbent: float = math.inf) -> tuple[Found | None, int, bool]:
    """`solve_part` by the boxes (`boxes.search`) over the splits of N nodes among the pools `eligible`
    in which those of `forced` hold a node each and the others any number, none included (the
    families beyond 12 pools, `planner.solvers.proportional_families`): no budget, one region, where
    `optional_pools_apply`. Each plan reached is scored on the fastest such split (`Splits` with
    `forced`: one node of each forced pool, then the pools of most steps first, the cheaper first
    among equal steps), the most W of every split of N nodes among them, the cheapest of those (the
    exchange argument of `rule.fastest_fill`), and the box bound is over the same splits
    (`boxes.fill_speed_bound` with `forced`), so the answer is the exact optimum over them."""
    space = space.for_objective(s, objective)
    ratios = step_ratios(s, pools, eligible, precision)
    h_all = np.arange(1, space.max_inner_steps + 1)
    h_max = np.max(np.stack(list(inner_steps(ratios, h_all).values())), axis=0)
    splits = Splits(pools, eligible, ratios, int(space.max_nodes), None, space.max_inner_steps, None, forced=forced)
    found, evaluations, complete = boxes.search(
        pools, eligible, s, space, precision, list(_classes(s, space, precision)), splits,
        lambda h: h_max[np.asarray(h) - 1], ratios, incumbent, deadline, objective)
    return (Found(*found) if found is not None else None), evaluations, complete


def solve_levels_with_optional(pools, forced: tuple[int, ...], eligible: tuple[int, ...], s: Setting,
                               space: DecisionSpace, precision: str, objective: Objective, deadline: float,
                               incumbent: float, budget_usd: float | None):
    """`solve_part`'s search of max_compute of C_local under the Chinchilla penalty (every level of W a
    candidate: `boxes.search` with the split table) over the splits of N nodes among the pools
    `eligible` in which those of `forced` hold a node each and the others any number, none included,
    within the budget (the search over subsets of pools beyond 12 pools,
    `planner.solvers.proportional_subsets`): the table with `forced` lists exactly those splits, the
    box bound's fill (`boxes.fill_speed_bound` with `forced`) and the least steps per H bound them, and
    H_max is the greatest over `eligible` (the pool of greatest step ratio is forced there).
    (Found or None, evaluations, complete); (None, 0, None) when the table would hold more than
    `split_table.MAX_PREFIXES` prefixes. Where `boxes.applies(s, MIN_TIME)` (as `solve_part`)."""
    space = space.for_objective(s, objective)
    ratios = step_ratios(s, pools, eligible, precision)
    table = SplitTable.build(pools, eligible, ratios, budget_usd, forced)
    if table is None:
        return None, 0, None
    h_max = np.max(np.stack(list(inner_steps(ratios, np.arange(1, space.max_inner_steps + 1)).values())), axis=0)
    splits = Splits(pools, eligible, ratios, int(space.max_nodes), None, space.max_inner_steps, None, forced=forced)
    found, evaluations, complete = boxes.search(
        pools, eligible, s, space, precision, list(_classes(s, space, precision)), splits,
        lambda h: h_max[np.asarray(h) - 1], ratios, incumbent, deadline, objective, table)
    return (Found(*found) if found is not None else None), evaluations, complete


def _cheapest(pools, used, s: Setting, space: DecisionSpace, precision: str, ratios, h_values, h_max, scored_h,
              budget_usd: float | None, deadline: float) -> tuple[Found | None, int, bool]:
    """min_cost: the cheapest split and plan that reach the target within the duration limit, then
    the fastest. The time of a plan is proportional to 1 / W, so plan d on N nodes with H meets the
    limit iff W >= W_need(d) = W_0 T(d, W_0) / T_limit; per (H, N) and unit size u the plan of least
    W_need is also the fastest of them for every split. Then every split of N nodes (`split_vectors`)
    within the budget is compared with the least W_need of each u it is placeable for (every u
    without several chosen regions, `placement.placeable_splits`): least cost, then most W over that
    need (least time)."""
    vectors, cost = split_vectors(pools, used, len(scored_h), MIN_COST.key)
    nodes_v = vectors.sum(axis=1)
    max_nodes = int(space.max_nodes)
    placement = space.placement if space.placement is not None and len(space.placement.partition) > 1 else None
    need: dict[int, np.ndarray] = {}              # per unit size (1 without several regions)
    evaluations = 0
    for c, idx, n, h, r in plans(s, space, precision, h_values=scored_h):
        if time.perf_counter() > deadline:
            return None, evaluations, False
        nodes = c.nodes(idx, n)
        reference = (nodes * h).astype(float)                  # W_0 = N H: the straggler tokens
        t = measure(s, c.plans(idx, n, h, r), adjust_for(reference, h_max[h - 1], h), MIN_TIME)
        evaluations += t.size
        units = units_of(c.rows, c.size)[idx] if placement is not None else np.ones(t.size, dtype=np.int64)
        for u in np.unique(units):
            ok = np.isfinite(t) & (units == u)
            table = need.setdefault(int(u), np.full((len(h_values), max_nodes + 1), math.inf))
            np.minimum.at(table, (h[ok] - 1, nodes[ok]), reference[ok] * t[ok] / s.window_s)
    placeable = {u: placeable_splits(placement, vectors, u) for u in need}
    best = None
    within = (nodes_v <= max_nodes) & (cost <= (math.inf if budget_usd is None else budget_usd))
    for row in np.asarray(scored_h) - 1:
        steps = inner_steps(ratios, h_values[row])
        w = sum(vectors[:, i] * steps[i] for i in used).astype(float)
        time_s = np.full(w.size, math.inf)
        for u, table in need.items():
            w_need = table[row, np.minimum(nodes_v, max_nodes)]
            ok = within & placeable[u] & (w >= w_need) & np.isfinite(w_need)
            time_s = np.minimum(time_s, np.where(ok, w_need * s.window_s / np.where(w > 0, w, 1.0), math.inf))
        ok = np.isfinite(time_s)
        if not ok.any():
            continue
        j, _ = best_with_tie(cost, time_s, ok)
        key = (float(cost[j]), float(time_s[j]))
        if best is None or tie_less(key, best[0]):
            best = (key, row, j)
    if best is None:
        return None, evaluations, True
    (key, row, j), h = best, h_values[best[1]]
    counts = [int(x) for x in vectors[j]]
    batch = _fastest_plan(pools, counts, s, space, precision, ratios, h, h_max[h - 1], placement)
    return Found(batch, counts, key, key[0]), evaluations, True


def _fastest_plan(pools, counts, s: Setting, space: DecisionSpace, precision: str, ratios, h: int, h_max: float,
                  placement=None):
    """The fastest plan of exactly sum(counts) nodes and H = h on these counts (ties to the first),
    among those whose unit size the counts place in the regions of `placement` (every plan: None)."""
    nodes = sum(counts)
    steps = inner_steps(ratios, h)
    weighted = float(sum(counts[i] * steps[i] for i in steps))
    best = None
    for c, idx, n, hh, r in plans(s, space, precision, h_values=[h]):
        keep = c.nodes(idx, n) == nodes
        if placement is not None:
            units = units_of(c.rows, c.size)[idx]
            fits = {int(u): bool(placeable_splits(placement, np.asarray([counts]), int(u))[0]) for u in np.unique(units)}
            keep &= np.array([fits[int(u)] for u in units], dtype=bool)
        if not keep.any():
            continue
        batch = c.plans(idx[keep], n[keep], hh[keep], r[keep])
        t = measure(s, batch, adjust_for(weighted, h_max, h), MIN_TIME)
        i = int(np.argmin(t))
        if best is None or t[i] < best[1]:
            best = (batch.take(slice(i, i + 1)), float(t[i]))
    return best[0]


def lower_bound_s(s: Setting, pools, used, precision: str, straggler_best_s: float, h_min: int,
                  floor_s: float) -> float:
    """A lower bound on the time of every proportional plan of the part with H >= h_min (module
    docstring), or 0 when the facts it needs do not hold. The larger of

        T_straggler* / rho_max     (the part's straggler optimum), and
        floor_s / (rho_max eta_H(h_min)),   floor_s = `straggler.search.compute_bound_s(N_max)` (0: none):

    tokens per second are at most B N rho_max / t_pace (each replica of pool p runs at most
    H rho_p steps of B tokens per H t_pace, the outer step lasting at least H t_step), and eta is at
    most eta_H(H_eff) <= eta_H(h_min) (H_eff >= H_max >= H >= h_min, fact (H); eta_C, eta_A,
    eta_R <= 1 as `compute_bound_s` requires)."""
    from planner.cost import quality
    from planner.cost.straggler import eta_h_divisor
    mono = monotone.check(s)
    if mono.unsupported or not mono.eta_h_falls:
        return 0.0
    rho = max(step_ratios(s, pools, used, precision).values()) * (1.0 + 1e-12)
    bound = straggler_best_s / rho if math.isfinite(straggler_best_s) else 0.0
    eta_h = float(quality.eta_sync_interval(h_min, s.params, s.assumptions, eta_h_divisor(s.assumptions)))
    if floor_s > 0 and 0 < eta_h <= 1:
        bound = max(bound, floor_s / (rho * eta_h))
    return bound


def fewest_nodes(s: Setting, pools, used, precision: str, h_min: int, one_node_floor_s: float) -> int:
    """The fewest nodes a proportional plan of the part with H >= h_min needs to reach the target
    within the duration limit (1 when nothing is known): its time is at least
    one_node_floor_s / (N rho_max eta_H(h_min)) (`lower_bound_s`; one_node_floor_s =
    `straggler.search.compute_bound_s` of one node, 0 when that bound does not hold), so
    N >= one_node_floor_s / (rho_max eta_H(h_min) T_limit). A min_cost part is skipped when even
    the cheapest plan of that many nodes costs more than the best plan found."""
    rate_bound = lower_bound_s(s, pools, used, precision, math.inf, h_min, one_node_floor_s)
    if rate_bound <= 0 or not math.isfinite(s.window_s):
        return 1
    return max(1, math.ceil(rate_bound / s.window_s * (1 - 1e-12)))
