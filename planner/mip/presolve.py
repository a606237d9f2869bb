"""The presolves of the model's tables (`planner.mip.tables`) and the exact search of chosen classes.

`presolve` (min_time, min_cost) and `presolve_compute` (max_compute) drop the classes and fixed
plans that cannot hold an optimum, by the box bounds of `planner.mip.table_bounds`, and return a
first incumbent; `solve_classes` / `solve_promising` solve classes exactly with the branch and bound
(`planner.solvers.bnb`), most promising first; the outer-approximation loops
(`planner.solvers.certified`, `planner.solvers.mixed_mip`) call them each round.
"""

from __future__ import annotations

import math
import time

import numpy as np

from planner.objectives import Objective
from planner.mip.table_bounds import class_bounds, compute_box_bounds, least_nodes, node_promise
from planner.mip.tables import Tables, compute_bounds
from planner.solvers import bnb
from planner.space import Classes


FINE_CLASSES = 500      # presolve: when at most this many classes (and more than EXACT_CLASSES) are kept,
                        # their bounds are recomputed
FINE_PER_OCTAVE = 4     # ... with this many boxes per octave of n, H and R
EXACT_CLASSES = 8       # classes solved exactly by the presolve, and by each round of the loop
NODES = "nodes"         # measure of `solve_classes` for min_cost: the fewest nodes within the duration limit


def solve_classes(t: Tables, positions, best: float = math.inf, deadline: float = math.inf, measure: str = bnb.TIME):
    """The best plan of the classes at `positions` (in `t.sync`) over all their n, H, R, found
    exactly by the branch and bound (`bnb.minimise_time`, public; one vectorised call per class
    group): (plan, ln T), or (None, inf) if none beats `best` (ln T). With the max_compute
    `measure` (`bnb.compute_measure`, 1/C): (plan, -ln C), no duration limit. With `NODES` (min_cost):
    (plan, its nodes) of a plan of the fewest nodes within the duration limit, fewer than `best`
    (`bnb.fewest_nodes_within`). Past `deadline` the answer is the best plan found so far
    (`solve_classes_within` says whether the search finished)."""
    plan, value, _, _ = solve_classes_within(t, positions, best, deadline, measure)
    return plan, value


def solve_classes_within(t: Tables, positions, best: float = math.inf, deadline: float = math.inf,
                         measure: str = bnb.TIME):
    """`solve_classes`, whether the search finished before `deadline` (else no class of `positions`
    may be counted as solved), and the plans it scored (`bnb.Found.evaluations`,
    `bnb.fewest_nodes_within`'s count: the work done, which does not depend on the machine's load)."""
    s = t.setting
    cap = s.window_s if measure == bnb.TIME else math.inf
    found_plan, found, complete, scored = None, math.inf, True, 0
    by_group: dict[int, list[int]] = {}
    for a in positions:
        by_group.setdefault(t.sync[a].group, []).append(t.sync[a].index)
    for g, index in sorted(by_group.items()):
        c = t.groups[g].take(np.array(sorted(index)))
        limit = min(best, found)
        if measure == NODES:
            plan, value, done, count = _fewest_nodes(t, c, limit, deadline)
            complete &= done
            scored += count
            if value < found:
                found_plan, found = plan, value
            continue
        bound = math.exp(limit) * (1 + bnb.TIE_REL) if math.isfinite(limit) else cap
        result = bnb.minimise_time(s, c, t.space.max_inner_steps, t.space.max_regional_rounds,
                                   min(bound, cap), deadline, measure)
        complete &= result.open_bound == math.inf
        scored += result.evaluations
        if result.time_s.size:
            a = int(np.argmin(result.time_s))
            value = math.log(float(result.time_s[a]))
            if value < found:
                found_plan, found = result.batch.take(slice(a, a + 1)), value
    return (found_plan, found, complete, scored) if found < best else (None, math.inf, complete, scored)


def _fewest_nodes(t: Tables, c: Classes, at_most: float, deadline: float):
    """(plan, nodes, complete, plans scored): a plan of the fewest nodes of the classes `c` within the
    duration limit, fewer than `at_most` (else (None, inf)), by `bnb.fewest_nodes_within`; complete unless
    the `deadline` left open a box that could hold fewer nodes than the answer."""
    s = t.setting
    witness: list = []
    fewest, scored, open_nodes = bnb.fewest_nodes_within(s, c, t.space.max_inner_steps, t.space.max_regional_rounds,
                                                         s.window_s, at_most, deadline, witness=witness)
    complete = open_nodes >= fewest
    if not witness:
        return None, math.inf, complete, scored
    return witness[0], fewest, complete, scored


def solve_promising(t: Tables, first: int | None, solved, best: float, deadline: float, measure: str,
                    budget_plans: float, lower: np.ndarray | None = None):
    """Classes solved exactly, most promising first: class `first` (the loop's: the model's choice; or
    None) and the most promising unsolved ones up to `EXACT_CLASSES` (`solve_classes`), then batches of
    the next most promising, each twice as large as the one before, as long as the plans scored so far
    (`solve_classes_within`) are fewer than `budget_plans` (the presolves pass 0: `EXACT_CLASSES`; the
    loop of `planner.solvers.certified` passes `EXACT_PLANS`). The budget is work, not seconds: which
    classes are solved does not depend on the machine's load (docs/mip.md, "What is deterministic"); a
    batch once started runs to its end (or to `deadline`, the user's time limit). Promise: the least
    lower bound (`lower`, by default `t.class_lower`); classes whose bound is not below `best` are left
    out (they cannot beat it). Exact like `solve_classes`: (plan, value) of the best plan beating `best`,
    or (None, inf), and the positions solved (none of them holds a plan better than the value returned,
    or than `best`: those solved exactly, and those whose bound is not below it; a batch the `deadline`
    stopped is not among them)."""
    lower = t.class_lower if lower is None else lower
    head = [] if first is None else [first]
    batch = head + most_promising(t, set(solved) | set(head), EXACT_CLASSES - len(head), lower, best)
    found_plan, found, done, scored = None, math.inf, [], 0
    while batch:
        plan, value, complete, count = solve_classes_within(t, batch, min(best, found), deadline, measure)
        scored += count
        if value < found:      # a plan of the classes, exact or not: a valid incumbent
            found_plan, found = plan, value
        if not complete:       # stopped at the deadline: these classes are not solved
            break
        done += batch
        if scored >= budget_plans or time.perf_counter() >= deadline:
            break
        batch = most_promising(t, set(solved) | set(done), 2 * len(batch), lower, min(best, found))
    if lower is not None:      # bounded at or above the best plan known: nothing better there either
        taken = np.zeros(len(t.sync), dtype=bool)
        taken[[*done, *solved]] = True
        done += np.flatnonzero((np.asarray(lower) >= min(best, found)) & ~taken).tolist()
    return found_plan, found, done


def most_promising(t: Tables, solved, count: int, lower: np.ndarray | None = None, below: float = math.inf) -> list[int]:
    """Up to `count` positions in `t.sync` not in `solved`, least lower bound (`lower`, by default
    `class_lower`) first; with `below`, only those whose bound is below it."""
    lower = t.class_lower if lower is None else lower
    if lower is None:
        return [a for a in range(len(t.sync)) if a not in solved][:count]
    order = np.argsort(lower, kind="stable")
    return [int(a) for a in order if int(a) not in solved and lower[a] < below][:count]


def presolve(t: Tables, objective: Objective, bounds: tuple[np.ndarray, np.ndarray] | None = None):
    """Drop the classes and fixed plans that cannot hold an optimum; return a first incumbent.

    Exact, like a MIP presolve with an objective cutoff, by the box bounds of `class_bounds`:
    - min_time: a few plans per class are scored by the evaluator (n at the upper end of its
      most promising box and at n_hi; H = 1, H_max, the balance point t_sync / t_step and its
      neighbour; R = 1 and R_max), and the `EXACT_CLASSES` classes of least bound are solved
      exactly (`solve_promising`); the best is the incumbent, and the classes whose every box
      is bounded above its time are dropped, and fixed plans slower than it;
    - min_cost: boxes bounded above the duration limit cannot hold a feasible plan; a class's
      least nodes is unit x the lower end of its first box that can (`least_nodes`); plans at the
      upper end of that box are scored, the `EXACT_CLASSES` classes of fewest least nodes are
      solved exactly (`solve_promising` with `NODES`: their fewest nodes within the limit), the
      fewest nodes among those within the limit is the incumbent, and classes (and fixed plans)
      needing more nodes, or missing the limit, are dropped; the pruned tables keep each class's
      least nodes (`Tables.class_least_nodes`).
    Returns (pruned tables, incumbent plan or None, its value: ln T or nodes; inf if none, the
    positions in the pruned tables' `sync` of the classes solved exactly: none better than it).
    `bounds`: `class_bounds(t)` when the caller holds them already (`beaten`).
    """
    if not t.sync:
        return t, None, math.inf, set()
    ln_w = math.log(t.setting.window_s)
    bound, boxes = class_bounds(t) if bounds is None else bounds
    lower = bound.min(axis=1)
    first_box = np.argmin(bound, axis=1) if objective.by_time else np.argmax(bound <= ln_w, axis=1)
    pick_n = boxes[np.arange(len(t.sync)), first_box, 1].astype(np.int64)
    best_plan, best = None, math.inf
    for g in sorted({e.group for e in t.sync}):
        at = np.array([a for a, e in enumerate(t.sync) if e.group == g])
        members = [t.sync[a] for a in at]
        idx = np.array([e.index for e in members])
        hier = members[0].mode == "hierarchical"
        for n in (pick_n[at], np.array([e.n_hi for e in members])):
            balance = np.exp(np.array([e.ln_sync_base - e.ln_step for e in members]) + t.ln_straggler(n))
            for r in ((1, t.r_max) if hier else (1,)):
                for h in (np.ones(n.size), np.full(n.size, t.h_max), np.floor(balance / r), np.floor(balance / r) + 1):
                    plans = t.groups[g].plans(idx, n, np.clip(h, 1, t.h_max).astype(np.int64), r)
                    log_t = t.log_time(plans)
                    value = log_t if objective.by_time else np.where(log_t <= ln_w, plans.nodes, np.inf)
                    a = int(np.argmin(value))
                    if value[a] < best:
                        best, best_plan = float(value[a]), plans.take(slice(a, a + 1))
    if objective.by_time:
        for p in t.fixed:
            if p.log_time < best:
                best, best_plan = p.log_time, t.plan(p.group, p.index, 1)
        # the most promising classes, solved exactly
        plan, value, exact = solve_promising(t, None, (), best, math.inf, bnb.TIME, 0.0, lower)
        if value < best:
            best, best_plan = value, plan
        cut = best + 1e-9 * max(1.0, abs(best))
        keep = (lower <= cut) & np.isfinite(lower)         # inf: never reaches the target
        fixed = [p for p in t.fixed if p.log_time <= cut and math.isfinite(p.log_time)]
    else:
        for p in t.fixed:
            if p.log_time <= ln_w and p.nodes < best:
                best, best_plan = float(p.nodes), t.plan(p.group, p.index, 1)
        least = least_nodes(t, bound, boxes)
        # the classes of fewest least nodes, solved exactly (their fewest nodes within the limit, with a plan)
        plan, value, exact = solve_promising(t, None, (), best, math.inf, NODES, 0.0, node_promise(least, lower))
        if value < best:
            best, best_plan = value, plan
        keep = (lower <= ln_w + 1e-12) & (least <= best)
        fixed = [p for p in t.fixed if p.log_time <= ln_w and p.nodes <= best]
    if FINE_CLASSES >= keep.sum() > EXACT_CLASSES:    # the few kept: finer boxes, a tighter bound, maybe dropped
        kept = np.flatnonzero(keep)
        fine = Tables(t.setting, t.space, t.groups, [t.sync[a] for a in kept], [], t.n_max, t.h_max, t.r_max,
                      eta_h_falls=t.eta_h_falls)
        fine_bound, fine_boxes = class_bounds(fine, FINE_PER_OCTAVE)
        lower[kept] = np.maximum(lower[kept], fine_bound.min(axis=1))
        keep &= lower <= (cut if objective.by_time else ln_w + 1e-12)
        if objective.by_cost:
            least[kept] = np.maximum(least[kept], least_nodes(fine, fine_bound, fine_boxes))
            keep &= least <= best
    pruned = Tables(t.setting, t.space, t.groups, [e for e, k in zip(t.sync, keep) if k], fixed,
                    t.n_max, t.h_max, t.r_max, lower[keep], t.eta_h_falls,
                    least[keep] if objective.by_cost else None)
    at = np.cumsum(keep) - 1                               # old position -> new position
    solved = {int(at[a]) for a in exact if keep[a]}
    if pruned.sync:
        pruned.n_max = max(e.n_hi for e in pruned.sync)
    if not any(e.mode == "hierarchical" for e in pruned.sync):
        pruned.r_max = 1
    return pruned, best_plan, best, solved


def beaten(t: Tables, cut: float, bounds: tuple[np.ndarray, np.ndarray]) -> bool:
    """min_time: whether no plan of the tables has ln T <= `cut`, by the box bounds `bounds` =
    `class_bounds(t)` and the fixed plans' own times: every box of every class bounded above the cut
    (a box's bound is at most the ln T of each of its plans) and every fixed plan slower than it.

    Then `presolve(t, MIN_TIME)` keeps nothing below that cut either: its incumbent is a plan of the
    tables (ln T > cut), and the classes it keeps have a coarse bound (`bound.min(axis=1)`, the
    least over the boxes; the finer bounds only raise it) and the fixed plans it keeps a time that
    the cut then drops (`planner.mip.pools.pool_tables` cuts every setting at the best plan of all).
    So a caller holding a plan of value v with cut = v + 1e-9 max(1, |v|) may skip the presolve."""
    bound, _ = bounds
    return bool(np.all(bound > cut)) and all(p.log_time > cut for p in t.fixed)


def presolve_compute(t: Tables):
    """max_compute: a first incumbent and the classes that may beat it (exact, like `presolve`).

    The incumbent is the best of the fixed plans (their compute is one number each) and of a few
    plans per class (n at n_lo and n_hi; H = 1, H_max, the balance point t_sync / t_step and its
    neighbour; R = 1 and R_max), scored by the evaluator, and of the `EXACT_CLASSES` classes of
    largest bound (`compute_bounds`, `compute_box_bounds`) solved exactly (`solve_promising`).
    Classes whose bound is below it are dropped; the fixed plans leave the model (none beats the
    incumbent). Values are -ln C (the loop minimises); `class_lower` holds -(the bound).
    Returns (pruned tables, incumbent plan or None, its value, the positions in the pruned
    tables of the classes solved exactly).

    C_local (linear v1 or no replica penalty: eta_R does not depend on the tokens) has a tighter
    bound: C = 6 P_act (W gamma tokens/s) eta and T = C_target / (6 P_act eta tokens/s gamma), so
    C T = C_target W for every plan, and ln C <= ln(C_target W) - the box bound on ln T of
    `class_bounds`."""
    best_plan, best = None, math.inf
    for p in t.fixed:
        if -p.log_compute < best:
            best, best_plan = -p.log_compute, t.plan(p.group, p.index, 1)
    for g in sorted({e.group for e in t.sync}):
        members = [e for e in t.sync if e.group == g]
        idx = np.array([e.index for e in members])
        hier = members[0].mode == "hierarchical"
        for n in (np.array([e.n_lo for e in members]), np.array([e.n_hi for e in members])):
            balance = np.exp(np.array([e.ln_sync_base - e.ln_step for e in members]) + t.ln_straggler(n))
            for r in ((1, t.r_max) if hier else (1,)):
                for h in (np.ones(n.size), np.full(n.size, t.h_max), np.floor(balance / r), np.floor(balance / r) + 1):
                    plans = t.groups[g].plans(idx, n, np.clip(h, 1, t.h_max).astype(np.int64), r)
                    value = -t.log_compute(plans)
                    a = int(np.argmin(value))
                    if value[a] < best:
                        best, best_plan = float(value[a]), plans.take(slice(a, a + 1))
    keep, lower, exact = np.zeros(0, dtype=bool), None, []
    if t.sync:
        upper = compute_bounds(t)
        # the finer bounds only for classes whose coarse one can still beat the incumbent (the rest are dropped)
        live = np.flatnonzero(upper >= -best - 1e-9 * max(1.0, abs(best)))
        sub = Tables(t.setting, t.space, t.groups, [t.sync[a] for a in live], [], t.n_max, t.h_max, t.r_max,
                     eta_h_falls=t.eta_h_falls)
        if live.size:
            upper[live] = np.minimum(upper[live], compute_box_bounds(sub))
        if live.size and not t.quality_target and not t.tokens_scored_eta_r:     # eta_R the same at target and window
            upper[live] = np.minimum(upper[live], math.log(t.setting.target * t.setting.window_s)
                                     - class_bounds(sub)[0].min(axis=1))
        lower = np.where(np.isfinite(upper), -upper, np.inf)     # a lower bound on -ln C per class
        plan, value, exact = solve_promising(t, None, (), best, math.inf, bnb.compute_measure(t.setting.target_kind),
                                             0.0, lower)
        if value < best:
            best, best_plan = value, plan
        keep = np.isfinite(lower) & (lower <= best + 1e-9 * max(1.0, abs(best)))
    pruned = Tables(t.setting, t.space, t.groups, [e for e, k in zip(t.sync, keep) if k], [],
                    t.n_max, t.h_max, t.r_max, None if lower is None else lower[keep], t.eta_h_falls)
    if pruned.sync:
        pruned.n_max = max(e.n_hi for e in pruned.sync)
    if not any(e.mode == "hierarchical" for e in pruned.sync):
        pruned.r_max = 1
    at = np.cumsum(keep) - 1                               # old position -> new position
    return pruned, best_plan, best, {int(at[a]) for a in exact if keep[a]}
