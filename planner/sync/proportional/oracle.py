"""The proportional rule's part of the exhaustive oracle (`planner.solvers.mixed_oracle`): the best
plan under the rule on exactly one assignment of nodes to pools, every plan the rule applies to
scored one by one. Search layer.
"""

from __future__ import annotations

import numpy as np

from planner.fleet.replicas import fleet_cost_usd, used_pools
from planner.objectives import Objective
from planner.solvers.objective_search import tie_less
from planner.sync.proportional.measure import measure
from planner.sync.proportional.rule import adjust_for, inner_steps, step_ratios
from planner.sync.proportional.search import plans


def best_on_counts(pools, counts, s, space, precision: str, objective: Objective):
    """(value, key) of the best proportional plan on exactly these counts, or None: every plan of
    the space the rule applies to, each scored with W = sum_p n_p H_p of these counts."""
    used = used_pools(counts)
    ratios = step_ratios(s, pools, used, precision)
    cost = fleet_cost_usd(pools, counts)
    best = None
    for c, idx, n, h, r in plans(s, space.for_objective(s, objective), precision):
        steps = inner_steps(ratios, h)
        weighted = sum(counts[i] * steps[i] for i in used)
        h_max = np.max(np.stack([steps[i] for i in used]), axis=0)
        value = measure(s, c.plans(idx, n, h, r), adjust_for(weighted, h_max, h), objective)
        ok = np.isfinite(value) & ((value <= s.window_s) if not objective.maximise else True)
        if ok.any():
            top = float(value[ok].min())
            key = (cost, top) if objective.by_cost else (top, cost)
            if best is None or tie_less(key, best[1]):
                best = (-top if objective.maximise else cost if objective.by_cost else top, key)
    return best
