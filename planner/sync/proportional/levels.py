"""max_compute of a C_local target under the Chinchilla replica penalty with the proportional
rule: every split of the nodes, made exact by a bound over brackets of W (docs/fleet.md, section 4).

For a proportional plan d (its U, N, H, R and every other decision fixed) the throughput and
the quality factors but eta_R do not depend on the split of the N nodes among the pools of U;
the tokens reached in the window are T = c_d W, linear in W = sum_p n_p H_p (`adjust_for`), and

    C_local(W) = g_d 6 P_act T eta_R(T),   eta_R(T) = chi(T; m_d) / chi(T; 1)

with g_d = eta_H eta_C eta_A and m_d = K^beta(P, H_eff) fixed by d (`planner.cost.run`). C_local
is not monotone in T (at few tokens per parameter eta_R falls faster than T grows), so the
fastest split need not be best and every achievable W is a candidate. The achievable W of
(U, N, H) are the *levels* (`Levels`): the distinct sum_p n_p H_p over the splits of N nodes with
n_p >= 1, within the budget, each with its cheapest split.

**Bracket bound.** With C = 6 P_act T, C chi(T; m) = min(C, clip(C'(m L(T)), C_low, k C)) =: Q_m(T),
C'(loss) the compute whose compute-optimal model reaches `loss` (`chinchilla.chi`; C_low =
chi_search_low_flop > 0, k = chi_search_high_factor >= 1). L(T) = E + A P^-alpha + B T^-beta falls
with T (B, beta > 0), C'(loss) falls with the loss (A, B, alpha, beta > 0: the compute-optimal loss
falls with compute), m >= 1 is fixed, and min/clip of nondecreasing functions with nondecreasing
bounds are nondecreasing: Q_m is nondecreasing in T for every m, and Q_1(T) >= min(C, C_low) > 0.
Since eta_R = Q_m(T) / Q_1(T),

    C_local(W) = g_d C Q_m(T) / Q_1(T) <= g_d 6 P_act T_hi Q_m(T_hi) / Q_1(T_lo)

for every W of a bracket [W_lo, W_hi] (T_lo = c_d W_lo, T_hi = c_d W_hi). The search scores every
plan at the least and the most W of its levels (both exact), then every other level of the plans
whose bracket bound comes within the tie tolerance of the best plan found (ties go to the cheaper
split, so tied plans are kept). When `planner.solvers.monotone` finds the constants outside those
facts the bound is not used and every level of every plan is scored.

`solve_levels` lists every split (`Levels`); the branch and bound uses `search_levels` instead,
which finds the levels through the split table (`planner.sync.proportional.split_table`) and halves
the brackets, with `chinchilla_box_bound` on boxes of plans.
"""

from __future__ import annotations

import math
import time

import numpy as np

from planner.objectives import MAX_COMPUTE, Objective
from planner.cost import chinchilla, modes, quality, run
from planner.cost.setting import PlanBatch, Setting
from planner.sync.proportional.rule import adjust_for, inner_steps
from planner.sync.proportional.measure import best_with_tie, measure, unique_pairs
from planner.fleet.region_plans import units_of
from planner.sync.proportional.placement import placeable_splits
from planner.solvers.objective_search import tie_less
from planner.schema.errors import InputError, Problem
from planner.solvers import monotone
from planner.solvers.bnb import TIE_REL

BOUND_SLACK = 1e-9        # relative: C'(loss) is found by Newton to ~1e-14, the bound is inflated by this


def needs_every_split(s: Setting, objective: Objective) -> bool:
    """True when the best split is not the fastest one: max_compute of C_local under the Chinchilla penalty."""
    return objective.maximise and s.target_kind == "c_local" and s.assumptions.replica_penalty == "chinchilla"


class Levels:
    """The achievable W of every (H, N) and the cheapest split reaching each, from `vectors` (every
    split of the nodes among the pools of U, at least one node each, with its cost). Row (h, u):
    (start [max_nodes + 2], w [levels], cost [levels], split [levels]): the levels of N nodes are
    w[start[N]:start[N + 1]], ascending. With several chosen regions (`placement`) the row of unit
    size u takes only the splits placeable for u (`placement.placeable_splits`); else u is ignored."""

    def __init__(self, vectors: np.ndarray, cost: np.ndarray, ratios, max_nodes: int, budget_usd: float | None,
                 placement=None):
        nodes = vectors.sum(axis=1)
        keep = (nodes <= max_nodes) & (cost <= (math.inf if budget_usd is None else budget_usd))
        self.vectors, self.cost, self.nodes = vectors[keep], cost[keep], nodes[keep]
        self.ratios, self.max_nodes = ratios, max_nodes
        self.placement = placement if placement is not None and len(placement.partition) > 1 else None
        self.rows: dict[tuple[int, int], tuple] = {}

    def row(self, h: int, unit: int = 1):
        u = int(unit) if self.placement is not None and unit > 1 else 1
        if (h, u) not in self.rows:
            if len(self.rows) > 64:
                self.rows.clear()
            steps = inner_steps(self.ratios, h)
            w = sum(self.vectors[:, i] * steps[i] for i in self.ratios).astype(np.int64)
            fits = np.flatnonzero(placeable_splits(self.placement, self.vectors, u))
            order = fits[np.lexsort((self.cost[fits], w[fits], self.nodes[fits]))]    # by N, then W, then cost
            n_sorted, w_sorted = self.nodes[order], w[order]
            first = np.ones(order.size, bool)
            first[1:] = (n_sorted[1:] != n_sorted[:-1]) | (w_sorted[1:] != w_sorted[:-1])
            chosen = order[first]                                            # the cheapest split of each (N, W)
            start = np.searchsorted(self.nodes[chosen], np.arange(self.max_nodes + 2))
            self.rows[(h, u)] = (start, w[chosen].astype(float), self.cost[chosen], chosen)
        return self.rows[(h, u)]

    def counts(self, h: int, level: int, unit: int = 1) -> list[int]:
        return [int(x) for x in self.vectors[self.row(h, unit)[3][level]]]


def c_local_bound(s: Setting, batch: PlanBatch, w_lo, w_hi, h_max, h) -> np.ndarray:
    """The bracket bound of the module docstring on C_local over W in [w_lo, w_hi], per plan (FLOP)."""
    a = s.assumptions
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        base = modes.throughput(s, batch)
        t_lo, t_hi = adjust_for(w_lo, h_max, h)(base), adjust_for(w_hi, h_max, h)(base)
        eff = run.efficiency_without_replicas(s, batch, t_hi)
        tokens_lo = s.training_window_s * t_lo["tokens_per_outer"] / t_lo["outer_time_s"]
        tokens_hi = s.training_window_s * t_hi["tokens_per_outer"] / t_hi["outer_time_s"]
        c_lo, c_hi = 6.0 * s.active_params * tokens_lo, 6.0 * s.active_params * tokens_hi
        m = quality.replica_loss_multiplier(t_hi["replicas"], s.params, t_hi["h_eff"], a)
        q_m_hi = c_hi * chinchilla.chi(s.active_params, tokens_hi, c_hi, a, m)
        q_1_lo = c_lo * chinchilla.chi(s.active_params, tokens_lo, c_lo, a)
        g = eff["eta_h"] * eff["eta_c"] * eff["eta_a"]
        synced = t_hi["synchronised"] > 0
        bound = g * np.where(synced, np.where(q_1_lo > 0, c_hi * q_m_hi / q_1_lo, np.inf), c_hi)
    return np.where(np.isnan(bound), np.inf, bound) * (1.0 + BOUND_SLACK)


def solve_levels(pools, s: Setting, levels: Levels, plan_chunks, h_max_of, deadline: float, max_work: int):
    """(best, evaluations, complete) over every plan of `plan_chunks` ((classes, idx, n, h, r) as
    `search.plans`) and every level of its (H, N): best = (batch, counts, key, value) with
    key (-C_local, cost), or None. Refused (InputError naming fleet.sync_rule) when the levels left
    after the bracket bound exceed `max_work` scorings."""
    bounded = not monotone.check(s).unsupported
    best, evaluations, pending = None, 0, []

    def consider(batch, w, cost, h, units, level):
        nonlocal best, evaluations
        value = -measure(s, batch, adjust_for(w, h_max_of(h), h), MAX_COMPUTE)
        evaluations += value.size
        ok = np.isfinite(value)
        if not ok.any():
            return
        i, _ = best_with_tie(-value, cost, ok)              # the most compute, ties to the cheaper split
        key = (-float(value[i]), float(cost[i]))
        if best is None or tie_less(key, best[2]):
            best = (batch.take(slice(i, i + 1)), levels.counts(int(h[i]), int(level[i]), int(units[i])), key,
                    float(value[i]))

    for c, idx, n, h, r in plan_chunks:
        if time.perf_counter() > deadline:
            return best, evaluations, False
        nodes, units = c.nodes(idx, n), units_of(c.rows, c.size)[idx]
        lo, hi = _level_range(levels, h, nodes, units)
        has = hi >= lo
        if not has.any():
            continue
        idx, n, h, r, units, lo, hi = (x[has] for x in (idx, n, h, r, units, lo, hi))
        batch = c.plans(idx, n, h, r)
        w_lo, cost_lo = _level_values(levels, h, lo, units)
        w_hi, cost_hi = _level_values(levels, h, hi, units)
        consider(batch, w_lo, cost_lo, h, units, lo)
        consider(batch, w_hi, cost_hi, h, units, hi)
        inner = hi - lo > 1
        if inner.any():
            bound = c_local_bound(s, batch, w_lo, w_hi, h_max_of(h), h) if bounded else np.full(h.size, np.inf)
            if best is not None:          # only what may still come within the tie tolerance is kept
                inner &= bound >= -best[2][0] * (1.0 - TIE_REL)
            pending.append((c, idx[inner], n[inner], h[inner], r[inner], units[inner], lo[inner], hi[inner],
                            bound[inner]))
    floor = -best[2][0] if best is not None else -math.inf
    left = []
    for c, *arrays, bound in pending:          # arrays: idx, n, h, r, units, lo, hi
        keep = bound >= floor - TIE_REL * abs(floor)
        if keep.any():
            left.append((c, *(x[keep] for x in arrays)))
    work = sum(int((p[7] - p[6] - 1).sum()) for p in left)
    if work > max_work:
        raise InputError([Problem("fleet.sync_rule", f"max_compute of C_local under the Chinchilla replica penalty "
                                                     f"compares the splits of the nodes among the pools; {work:,} "
                                                     f"splits x plans are left after the bound, more than "
                                                     f"{max_work:,}: narrow search or set 'straggler'")])
    for c, idx, n, h, r, units, lo, hi in left:
        span = hi - lo - 1
        plan = np.repeat(np.arange(idx.size), span)
        level = np.repeat(lo + 1, span) + (np.arange(plan.size) - np.repeat(np.cumsum(span) - span, span))
        for part in np.array_split(np.arange(plan.size), max(1, plan.size // (1 << 18))):
            if time.perf_counter() > deadline:
                return best, evaluations, False
            p, lv = plan[part], level[part]
            w, cost = _level_values(levels, h[p], lv, units[p])
            consider(c.plans(idx[p], n[p], h[p], r[p]), w, cost, h[p], units[p], lv)
    return best, evaluations, True


def _groups(levels: Levels, h: np.ndarray, units: np.ndarray):
    """(mask, row) of each distinct (H, u) among the plans (u ignored without several regions)."""
    pairs, inverse = unique_pairs(h, units if levels.placement is not None else np.ones_like(h))
    for k, (hv, uv) in enumerate(pairs):
        yield inverse == k, levels.row(hv, uv)


def _level_range(levels: Levels, h: np.ndarray, nodes: np.ndarray, units: np.ndarray):
    """(first, last) level index of each plan's (H, N, u) in its row (last < first: no split)."""
    lo, hi = np.zeros(h.size, np.int64), np.full(h.size, -1, np.int64)
    for at, (start, *_) in _groups(levels, h, units):
        lo[at], hi[at] = start[nodes[at]], start[nodes[at] + 1] - 1
    return lo, hi


def _level_values(levels: Levels, h: np.ndarray, level: np.ndarray, units: np.ndarray):
    """(W, cost) of each plan's level."""
    w, cost = np.zeros(h.size), np.zeros(h.size)
    for at, (_, row_w, row_cost, _) in _groups(levels, h, units):
        w[at], cost[at] = row_w[level[at]], row_cost[level[at]]
    return w, cost


# -- by boxes, without listing the splits (planner.sync.proportional.split_table) ----------------------

def chinchilla_box_bound(rho_sup: np.ndarray, tokens_low: float):
    """A `bnb.branch_and_bound` box bound on 1 / C_local under the Chinchilla penalty with the rule,
    over every plan of a box on every split of its nodes. A plan d on a split of W runs its straggler
    twin's tokens times W / (N H): at most rho(N) <= rho_sup(N(n1)) (`boxes.fill_speed_bound`:
    W <= H sum_p n_p rho_p, at most the fastest fill by rho), at least `tokens_low` = min over the H
    searched of min_p H_p / H (1 when every pool runs at least the pace's H steps); its g = eta_H eta_C
    eta_A is at most the straggler box's g_up and its loss multiplier m at least m_lo (H_eff at
    H_max >= H, facts (H) and (R) of `planner.solvers.monotone`; K = N as under the straggler rule).
    The straggler bound of `bnb.compute_box` uses nothing but T in [T_lo, T_up], g <= g_up and
    m >= m_lo, so with T_up times rho_sup and T_lo times `tokens_low` it bounds the box under the rule."""
    from planner.solvers import bnb

    def bound(s, c, box, measure, mono, cut):
        rho = rho_sup[np.minimum(c.nodes(box["i"], box["n1"]), rho_sup.size - 1)]
        return bnb.compute_box(s, c, box, "c_local", mono, cut, tokens_up=rho, tokens_low=tokens_low)
    return bound


def search_levels(s: Setting, table, c, idx, n, h, r, h_max_of, floor, consider) -> int:
    """Every level of each plan (idx, n, h, r of classes `c`) that may come within the tie tolerance
    of the best C_local found, through `table` (a `split_table.SplitTable`): the least and the
    most W of the plan's (H, N) are scored, then each bracket [W_a, W_b] of scored levels whose bracket
    bound (module docstring) reaches `floor()` (the best C_local so far) times 1 - TIE_REL is narrowed
    to the levels inside it, W_a' = least W > W_a and W_b' = most W < W_b (scored), and halved at the
    levels next to its middle (scored). A bracket dropped holds no level that could match the best, and
    every bracket halves, so the search ends with every level not scored in a dropped bracket.
    `consider(j, w)` scores plans j (indices into the arrays) at W = w. Returns the scorings. With a
    budget, plans whose bracket bound over the slowest and fastest fills (a wider bracket) cannot
    reach the best are dropped first."""
    from planner.sync.proportional.split_table import NONE
    nodes = c.nodes(idx, n)
    if table.budget_usd is not None and math.isfinite(floor()):
        # the levels within the budget lie between the slowest and the fastest fill: plans whose bracket
        # bound over those cannot reach the best are dropped before the table is asked
        wide_lo, wide_hi = table.filled(h, nodes, False), table.filled(h, nodes, True)
        has = wide_lo != NONE
        bound = np.full(idx.size, -np.inf)
        if has.any():
            bound[has] = c_local_bound(s, c.plans(idx[has], n[has], h[has], r[has]), wide_lo[has].astype(float),
                                       wide_hi[has].astype(float), h_max_of(h[has]), h[has])
        keep = ~(bound < floor() * (1.0 - TIE_REL))
        idx, n, h, r, nodes = idx[keep], n[keep], h[keep], r[keep], nodes[keep]
        offsets = np.flatnonzero(keep)
    else:
        offsets = None
    low = table.extreme(h, nodes, -math.inf, True)
    high = table.extreme(h, nodes, math.inf, False)
    j = np.flatnonzero(low != NONE)
    low, high = low[j], high[j]
    count = 0

    def score(at, w):
        nonlocal count
        if at.size:
            consider(at if offsets is None else offsets[at], w)
            count += at.size

    score(j, low)
    more = high > low
    score(j[more], high[more])
    a, b = low, high
    while j.size:
        hj, nj = h[j], nodes[j]
        bound = c_local_bound(s, c.plans(idx[j], n[j], hj, r[j]), a.astype(float), b.astype(float), h_max_of(hj), hj)
        best = floor()
        keep = (b - a > 1) & ~(bound < best * (1.0 - TIE_REL)) if math.isfinite(best) else (b - a > 1)
        j, a, b, hj, nj = j[keep], a[keep], b[keep], hj[keep], nj[keep]
        if not j.size:
            break
        a2 = table.extreme(hj, nj, a + 1, True)
        b2 = table.extreme(hj, nj, b - 1, False)
        inside = (a2 != NONE) & (b2 != NONE) & (a2 < b) & (b2 > a) & (a2 <= b2)
        j, a2, b2, hj, nj = j[inside], a2[inside], b2[inside], hj[inside], nj[inside]
        score(j, a2)
        wide = b2 > a2
        score(j[wide], b2[wide])
        j, a2, b2, hj, nj = j[wide], a2[wide], b2[wide], hj[wide], nj[wide]
        mid = (a2 + b2) // 2
        m1 = table.extreme(hj, nj, mid, False)         # in [a2, mid]
        m2 = table.extreme(hj, nj, mid + 1, True)      # in [mid + 1, b2]
        new1, new2 = (m1 > a2), (m2 < b2)
        score(j[new1], m1[new1])
        score(j[new2], m2[new2])
        j, a, b = np.concatenate([j, j]), np.concatenate([a2, m2]), np.concatenate([m1, b2])
    return count
