"""The exhaustive oracle: every plan of the space scored, in vectorised chunks.

The same space as the other solvers (`DecisionSpace.classes`, after its exact
reductions), every n, H and R of every class, each scored by
`planner.cost.score.time_to_target` (or, for `max_compute`, `window_compute`). No bound, no pruning: its cost is the size of the
space (`DecisionSpace.size`) divided by the evaluator's rate (about 1.4 million plans
per second here), so it is for small spaces, the tests, and as the yardstick of
`scripts/bench_solve.py`. Ties are broken as everywhere (`planner.bnb.tie_key`).
"""

from __future__ import annotations

import math
import time

import numpy as np

from planner.objectives import Objective
from planner.solvers import bnb
from planner.cost.score import window_compute
from planner.cost.setting import Setting
from planner.solvers.objective_search import best_of
from planner.space import Classes, DecisionSpace

CHUNK = 1 << 18                  # plans scored at once: ~0.2 s at 1.4 million a second, the deadline's granularity


def _plans(c: Classes, h_max: int, r_max: int):
    """(class index, n, H, R) arrays covering every plan of the classes, chunk by chunk."""
    h_max, r_max = bnb._h_r_max(c, h_max, r_max)
    per_class = (c.n_hi - c.n_lo + 1) * h_max * r_max
    for k in np.flatnonzero(per_class > 0):
        total = int(per_class[k])
        for start in range(0, total, CHUNK):
            flat = np.arange(start, min(total, start + CHUNK))
            r = flat % r_max + 1
            h = (flat // r_max) % h_max + 1
            n = flat // (r_max * h_max) + c.n_lo[k]
            yield np.full(flat.size, k), n, h, r


def optimise(setting: Setting, space: DecisionSpace, objective: Objective, measure=None):
    """((one-plan batch, value) or None, plans evaluated): `optimise_until` with no deadline."""
    found, evaluations, _ = optimise_until(setting, space, objective, measure=measure)
    return found, evaluations


def optimise_until(setting: Setting, space: DecisionSpace, objective: Objective, deadline: float = math.inf, measure=None):
    """((one-plan batch, value) or None, plans evaluated, complete): min_time, min_cost or max_compute,
    exactly when `complete`.

    min_time / min_cost score the time to target (plans over the duration limit are out);
    max_compute the reciprocal of the compute reached within the limit (`bnb.compute_measure`),
    every plan counting. Values: seconds, USD, FLOP. `measure`: a robust key over scenarios
    (`planner.robust.RobustMeasure`) in place of the time or 1/compute (max_compute's value is
    then 1 / the key). The clock is read before each group of classes is built and before each
    chunk of CHUNK plans is scored: past `deadline` (a time.perf_counter() instant) nothing more is
    scored, the best plan scored so far is returned and `complete` is False (the plans not scored
    are unknown: the caller claims no bound)."""

    h_max, r_max = space.max_inner_steps, space.max_regional_rounds
    robust = measure is not None
    if not robust:
        measure = objective.measure(setting.target_kind)
    limit = objective.limit_s(setting.window_s)
    evaluations = 0
    fewest = math.inf
    kept = []
    complete = True
    groups = bnb.batches(setting, space)
    while complete:
        if time.perf_counter() > deadline:
            complete = False
            break
        c = next(groups, None)
        if c is None:
            break
        best_t, rows = math.inf, []
        for idx, n, h, r in _plans(c, h_max, r_max):
            if time.perf_counter() > deadline:
                complete = False
                break
            t = bnb._measure(setting, c, idx, n, h, r, measure)
            evaluations += t.size
            ok = t <= limit
            if objective.by_cost:
                if ok.any():
                    fewest = min(fewest, float(c.nodes(idx[ok], n[ok]).min()))
                rows.append((idx[ok], n[ok], h[ok], r[ok], t[ok]))
                continue
            if ok.any():
                best_t = min(best_t, float(t[ok].min()))
                keep = ok & (t <= best_t * (1 + bnb.TIE_REL))
                rows.append((idx[keep], n[keep], h[keep], r[keep], t[keep]))
        if rows:
            kept.append((c, *(np.concatenate(x) for x in zip(*rows))))
    found = []
    for c, idx, n, h, r, t in kept:
        if objective.by_cost:
            on = c.nodes(idx, n) == fewest
            idx, n, h, r, t = idx[on], n[on], h[on], r[on], t[on]
        if t.size:
            found.append(bnb.Found(c.plans(idx, n, h, r), t))
    best = best_of(setting, found)
    if best is None:
        return None, evaluations, complete
    if objective.by_cost:
        return (best[0], float(best[0].nodes[0] * setting.node_price_usd)), evaluations, complete
    if objective.maximise and robust:
        return (best[0], 1.0 / best[1]), evaluations, complete
    if objective.maximise:
        return ((best[0], float(window_compute(setting, best[0], setting.target_kind)[setting.target_kind][0])),
                evaluations, complete)
    return best, evaluations, complete
