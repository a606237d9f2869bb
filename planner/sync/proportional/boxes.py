"""min_time (and max_compute of C_local under the linear v1 or no replica penalty) under the
proportional rule by the branch and bound's boxes instead of scoring every plan (docs/fleet.md,
section 4).

For a proportional plan d on a split of W = sum_p n_p H_p (`planner.sync.proportional.rule`) the time
to target is its straggler twin's with two changes: tokens per outer step times W / (N H), and
H_eff at H_max instead of H. The second never shortens the time when eta_H and eta_R fall with
H_eff (facts (H) and (R) of `planner.solvers.monotone`; for a C_quality target the tokens needed
grow with the loss multiplier and 1 / eta_H), so

    T_prop(d) >= T_straggler(d) N H / W >= T_straggler(d) / rho(N),

rho(N) = sum_p f_p(N) rho_p / N with f(N) the fastest fill of N nodes by rho_p = t_pace / t_p (the
most sum_p n_p rho_p of any split of N nodes, each pool at least one; H_p = floor(H rho_p) <= H rho_p).
On a box of plans (`planner.solvers.bnb`: [n1, n2] x [H1, H2] x [R1, R2] of one class) the straggler
bound L_box <= T_straggler(d) then gives T_prop >= L_box / max_{N >= N(n1)} rho(N): the box is dropped
when L_box exceeds the best proportional time found times that maximum (`bnb.branch_and_bound`'s
cutoff per box). Every plan the search reaches (box corners, down to single plans) is scored under
the rule on its split (`Splits`: the fastest fill, or the best within the budget), so every plan
not scored lies in a dropped box, whose plans are all slower than the best found: the answer is
the part's exact optimum. Used when `monotone.check` finds those facts (else every plan is scored).

max_compute of C_local under the linear v1 or no replica penalty: C_local = 6 P_act T eta with T
proportional to the tokens per second and eta = eta_H eta_C eta_A eta_R not depending on T, so
C_prop(d) = C_straggler(d) W / (N H) x (eta at H_max) / (eta at H) <= C_straggler(d) rho(N), and the
straggler bound on 1 / C of a box over the same maximum of rho bounds the box under the rule.
max_compute of C_quality: C_quality = Q(T, g, mu) (`run.quality_compute`) grows with the tokens T
and g and falls with the loss multiplier mu, but is not proportional to T, so the box gets a bound of
its own (`quality_box_bound`): the straggler tokens of a box are at most T_up = W' tps(n1, H2, R2)
n2 / n1 (`bnb.compute_box`), under the rule at most rho T_up; g is at most g(n1, H1 sqrt R1) and mu
at least mu(n1, H1 sqrt R1) at the straggler H_eff, which H_max only lowers and raises; so
C_quality <= Q(rho T_up, g_up, mu_lo) on the box. Under the Chinchilla penalty C_local is not
monotone in T and the best split need not be the fastest: the box bound is the straggler one over
the rule's token range (`levels.chinchilla_box_bound`) and each plan reached is searched
over every level of W of its (H, N) (`levels.search_levels`, through the split table
`planner.sync.proportional.split_table`). min_cost: `planner.sync.proportional.cost_boxes`.
"""

from __future__ import annotations

import math
import time

import numpy as np

from planner.objectives import MIN_TIME, Objective
from planner.cost import run
from planner.cost.modes import throughput
from planner.sync.proportional.rule import adjust_for, inner_steps
from planner.sync.proportional import levels
from planner.sync.proportional.measure import best_with_tie, least_with_ties, measure
from planner.fleet.region_plans import units_of
from planner.solvers.objective_search import tie_less
from planner.solvers import bnb, monotone
from planner.solvers.bnb import TIE_REL


def applies(s, objective: Objective) -> bool:
    """min_time, or max_compute of C_local under the linear v1 or no replica penalty, with the facts
    the bound needs."""
    mono = monotone.check(s)
    linear = (objective.maximise and s.target_kind == "c_local"
              and s.assumptions.replica_penalty in ("linear_v1", "none", "fitted"))
    quality = objective.maximise and s.target_kind == "c_quality"
    return (objective.by_time or linear or quality) and not mono.unsupported and mono.eta_h_falls


def quality_box_bound(rho_sup: np.ndarray):
    """A `bnb.branch_and_bound` box bound: 1 / C_quality >= 1 / Q(rho T_up, g_up, mu_lo) on each box
    (module docstring), with the box's two corner plans (scored under the rule by the visit)."""
    def bound(s, c, box, measure, mono, cut):
        r_fast, r_slow = bnb.fast_slow_r(c, box)
        i, n1, n2 = box["i"], box["n1"], box["n2"]
        hi_t = throughput(s, c.plans(i, n1, box["h2"], r_fast))
        lo_b = c.plans(i, n1, box["h1"], r_slow)
        lo_t = throughput(s, lo_b)
        g_up, mu_lo, with_chi = run.quality_terms(s, lo_b, lo_t, run.efficiency_without_replicas(s, lo_b, lo_t))
        rho = rho_sup[np.minimum(c.nodes(i, n1), rho_sup.size - 1)]
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            t_up = s.training_window_s * hi_t["tokens_per_outer"] / hi_t["outer_time_s"] * (n2 / n1) * rho
            upper = run.quality_compute(s, t_up, g_up, mu_lo, with_chi) * (1.0 + 1e-9)
            lower = np.nan_to_num(1.0 / upper, nan=0.0)
        return lower, [(i, n1, box["h2"], r_fast, None), (i, n1, box["h1"], r_slow, None)]
    return bound


def fill_speed_bound(pools, used, ratios: dict[int, float], max_nodes: int, forced=None) -> np.ndarray:
    """Per N = 0..max_nodes: max_{N' >= N} rho(N') (module docstring), inflated by 1e-12; rho of N
    below |U| (no split) counts as 0. `forced` (a subset of `used`): only those pools must hold a node,
    the others may hold none (`rule.fastest_fill`; the families beyond 12 pools), rho(N) then the most
    over those splits."""
    forced = list(used) if forced is None else list(forced)
    order = sorted(used, key=lambda i: -ratios[i])
    extra = np.concatenate([[ratios[i]] * (pools[i].count - (i in forced)) for i in order] + [[]])
    base = len(forced)
    total = np.zeros(max_nodes + 1)
    top = min(max_nodes, base + extra.size)
    if top >= base:
        total[base:top + 1] = sum(ratios[i] for i in forced) + np.concatenate([[0.0], np.cumsum(extra)])[:top - base + 1]
    with np.errstate(divide="ignore", invalid="ignore"):
        rho = np.where(np.arange(max_nodes + 1) >= base, total / np.maximum(np.arange(max_nodes + 1), 1), 0.0)
    rho[top + 1:] = 0.0
    return np.maximum.accumulate(rho[::-1])[::-1] * (1.0 + 1e-12)


def search(pools, used, s, space, precision: str, classes, splits, h_max_of, ratios, incumbent: float,
           deadline: float, objective: Objective = MIN_TIME, table=None):
    """(best, evaluations, complete): best = (batch, counts, key, value) of the part's best
    proportional plan within the tie tolerance of `incumbent` or better, or None. min_time: key
    (time, cost), value and `incumbent` in seconds; max_compute: key (-C_local, cost), value and
    `incumbent` C_local (FLOP). The search minimises the bnb measure m (time, or 1 / C_local).
    `table` (a `split_table.SplitTable`, within the budget): max_compute of C_local under
    the Chinchilla penalty, where every level of W is a candidate: each plan reached is searched
    over its levels (`levels.search_levels`) and boxes are bounded by
    `levels.chinchilla_box_bound`."""
    rho_sup = fill_speed_bound(pools, used, ratios, int(space.max_nodes), splits.forced)
    maximise = objective.maximise
    quality = maximise and s.target_kind == "c_quality"
    by_levels = table is not None
    if by_levels:
        h_all = np.arange(1, space.max_inner_steps + 1)
        steps = inner_steps(ratios, h_all)
        tokens_low = min(1.0, float(np.min(np.min(np.stack(list(steps.values())), axis=0) / h_all)))
        box_bound = levels.chinchilla_box_bound(rho_sup, tokens_low)
    else:
        box_bound = quality_box_bound(rho_sup) if quality else None
    with np.errstate(divide="ignore"):
        start = 1.0 / incumbent if maximise else min(incumbent, s.window_s)
    state = {"best": start if start > 0 else math.inf, "found": None}
    evaluations, complete, searched = 0, True, 0
    for c, r_max in classes:
        h_top, r_top = bnb.h_r_max(c, space.max_inner_steps, r_max)

        def worth_placing(c, idx, n, h, r):
            """With several chosen regions: the plans whose value on the best split with no placement
            rule (`splits.lookup` with u = 1: at least the W of every placeable split, and time falls,
            compute grows with W) comes within the tie tolerance of the best found. The others can
            neither be the answer nor tie with it, so their placeable split (a dynamic programme per
            (H, u), `placement.fastest_placement`) is not computed."""
            idx, n, h, r = np.broadcast_arrays(idx, n, h, r)
            weighted, _ = splits.lookup(h, c.nodes(idx, n))
            value = measure(s, c.plans(idx, n, h, r), adjust_for(weighted, h_max_of(h), h), objective)
            best = state["best"]
            with np.errstate(invalid="ignore", over="ignore"):
                near = (-value * best >= 1.0 - TIE_REL) if maximise else (value <= best * (1.0 + TIE_REL))
            keep = np.flatnonzero((weighted > 0) & np.isfinite(value) & near)
            return idx[keep], n[keep], h[keep], r[keep]

        def consider(j, w, c=c, arrays=None):
            """Plans j of `arrays` (idx, n, h, r) at W = w: the best, ties to the cheapest split of w."""
            idx, n, h, r = (x[j] for x in arrays)
            batch = c.plans(idx, n, h, r)
            w = np.asarray(w, dtype=float)
            value = measure(s, batch, adjust_for(w, h_max_of(h), h), objective)             # -C
            ok = np.isfinite(value) & (value < 0)
            if not ok.any():
                return
            tied, top = least_with_ties(value, ok)
            nodes = c.nodes(idx[tied], n[tied])
            cost, prefix, n_a = table.cheapest_exact(h[tied], nodes, w[tied].astype(np.int64))
            k = int(np.argmin(cost))
            i = int(tied[k])
            key = (float(value[i]), float(cost[k]))
            found = state["found"]
            if found is None or tie_less(key, found[2]):
                counts = table.counts(int(prefix[k]), int(nodes[k]), int(n_a[k]))
                state["found"] = (batch.take(slice(i, i + 1)), counts, key, -key[0])
            state["best"] = min(state["best"], -1.0 / top)

        def visit_levels(idx, n, h, r, _straggler_value, c=c):
            nonlocal searched
            idx, n, h, r = (np.asarray(x, dtype=np.int64) for x in np.broadcast_arrays(idx, n, h, r))
            if not idx.size:
                return
            searched += levels.search_levels(
                s, table, c, idx, n, h, r, h_max_of, lambda: 1.0 / state["best"],
                lambda j, w: consider(j, w, arrays=(idx, n, h, r)))

        def visit(idx, n, h, r, _straggler_value, c=c):
            if by_levels:
                return visit_levels(idx, n, h, r, _straggler_value)
            if np.size(idx) and splits.placement is not None:
                idx, n, h, r = worth_placing(c, idx, n, h, r)
            if not np.size(idx):
                return
            nodes = c.nodes(idx, n)
            units = units_of(c.rows, c.size)[idx]
            weighted, cost = splits.lookup(h, nodes, units)
            batch = c.plans(idx, n, h, r)
            value = measure(s, batch, adjust_for(weighted, h_max_of(h), h), objective)     # time or -C
            ok = (weighted > 0) & np.isfinite(value) & ((value < 0) if maximise else (value <= s.window_s))
            if not ok.any():
                return
            i, top = best_with_tie(value, cost, ok)
            key = (float(value[i]), float(cost[i]))
            found = state["found"]
            if found is None or tie_less(key, found[2]):
                counts = splits.counts(int(h[i]), int(nodes[i]), int(units[i]))
                state["found"] = (batch.take(slice(i, i + 1)), counts, key, -key[0] if maximise else key[0])
            state["best"] = min(state["best"], -1.0 / top if maximise else top)

        def cutoff(box, c=c):
            if quality or by_levels:           # the box bound is the rule's own
                return np.full(box["i"].shape, state["best"] * (1.0 + TIE_REL))
            return state["best"] * (1.0 + TIE_REL) * rho_sup[np.minimum(c.nodes(box["i"], box["n1"]), rho_sup.size - 1)]

        idx, n, h, r = bnb.seeds(s, c, h_top, r_top)
        visit(idx, n, h, r, None)
        count, left = bnb.branch_and_bound(s, c, h_top, r_top, visit, cutoff, deadline=deadline,
                                            measure=bnb.compute_measure(s.target_kind) if maximise else bnb.TIME,
                                            box_bound=box_bound)
        evaluations += idx.size + count
        if left is not None or time.perf_counter() > deadline:
            complete = False
            break
    evaluations += searched
    found = state["found"]
    worse = found is not None and math.isfinite(incumbent) and (
        found[3] < incumbent * (1.0 - TIE_REL) if maximise else found[3] > incumbent * (1.0 + TIE_REL))
    if worse:
        found = None          # worse than a plan of another part: not the answer
    return found, evaluations, complete
