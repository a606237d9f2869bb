"""The searches behind each objective (`planner.objectives`), exact by the branch and bound of
`planner.solvers.bnb`.

- `min_time`: least time to target within the limits.
- `min_cost`: fewest nodes (cost is nodes x node price) within the run-duration limit; then fastest.
- `max_compute`: most compute within the run-duration limit, in the window view.
- `fewest_nodes_in_window`: the reference calculator's own question (fewest nodes whose
  compute within the window reaches the target).
- `search(objective, ...)`: the one of the three an objective asks for.

Each returns ((one-plan batch, objective value) or None, plans scored, proven bound). Ties
among plans are broken by `planner.solvers.bnb.tie_key`; among model sizes by
`best_of_sizes` (the objective's `rank_key`). `planner.solve` (the user-facing solve), the MIP
certification (`planner.solvers.certified`) and the exhaustive oracle all use these functions.
Layer: search.
"""

from __future__ import annotations

import math
import time
from typing import NamedTuple

import numpy as np

from planner.objectives import MAX_COMPUTE, Objective
from planner.cost.score import time_to_target, window_compute
from planner.cost.setting import PlanBatch, Setting
from planner.solvers import bnb
from planner.space import DecisionSpace


class SizeRun(NamedTuple):
    """One candidate model size solved: its optimum (or None) and proven bound (`optimise`)."""

    params: float | None          # total parameters (None: the instance's own model)
    setting: Setting
    space: DecisionSpace
    found: tuple[PlanBatch, float] | None
    evaluations: int
    bound: float                  # lower (min_*) or upper (max_compute) bound, the optimum included


def best_of_sizes(objective: Objective, runs: list[SizeRun]) -> SizeRun | None:
    """The run whose plan is best for the objective (its `rank_key`); ties (TIE_REL) to the
    earlier (smaller) size, and for min_cost first to the faster plan."""
    best, best_key = None, None
    for run_ in runs:
        if run_.found is None:
            continue
        batch, value = run_.found
        time_s = float(time_to_target(run_.setting, batch)["time_to_target_s"][0]) if objective.by_cost else None
        key = objective.rank_key(value, time_s)
        if best is None or tie_less(key, best_key):
            best, best_key = run_, key
    return best


def tie_less(a: tuple, b: tuple) -> bool:
    """a before b, comparing each entry with the relative tie tolerance (equal: not less)."""
    for x, y in zip(a, b):
        if x < y - bnb.TIE_REL * abs(y):
            return True
        if x > y + bnb.TIE_REL * abs(y):
            return False
    return False


def best_of(s: Setting, candidates: list[bnb.Found]) -> tuple[PlanBatch, float] | None:
    """The least time among candidates, ties broken by `bnb.tie_key`."""
    candidates = [c for c in candidates if c.time_s.size]
    if not candidates:
        return None
    best = min(float(c.time_s.min()) for c in candidates)
    tied = []
    for c in candidates:
        within = np.flatnonzero(c.time_s <= best * (1 + bnb.TIE_REL))
        if within.size:
            i = int(within[bnb.first_in_tie_order(s, c.batch.take(within))])
            tied.append((bnb.tie_key(s, c.batch, i), c, i))
    _, c, i = min(tied, key=lambda x: x[0])
    return c.batch.take(slice(i, i + 1)), float(c.time_s[i])


def least_measure(s: Setting, space: DecisionSpace, measure, bound: float, deadline: float,
                  prune_rows: bool = False):
    """((one-plan batch, measure) or None, plans scored, least measure of the boxes left open) of
    the plan of least `measure` below `bound`, the groups most promising first, each found plan
    tightening the bound (ties within TIE_REL kept, broken by `best_of`). `prune_rows`: the pp_group
    pipe rows bounded before they are listed (`bnb.batches_most_promising_first`; max_compute)."""
    found, evaluations = [], 0
    groups = bnb.batches_most_promising_first(s, space, measure, deadline=deadline, prune_rows=prune_rows)
    open_bound = math.inf if groups.complete else 0.0      # groups never listed: nothing known of them
    for b in groups:
        f = bnb.minimise_time(s, b, space.max_inner_steps, space.max_regional_rounds, bound, deadline, measure,
                              seeded=groups.take_seeds(b))
        evaluations += f.evaluations
        open_bound = min(open_bound, f.open_bound)
        if f.time_s.size:
            found.append(f)
            bound = min(bound, float(f.time_s.min()) * (1 + bnb.TIE_REL))
    return best_of(s, found), evaluations, open_bound


def min_time(s: Setting, space: DecisionSpace, deadline: float = math.inf, incumbent_s: float = math.inf,
             measure=bnb.TIME):
    """Least time to target within the limit (`incumbent_s`: the time of a plan known to
    exist, e.g. a MIP backend's, which prunes from the start). `measure`: the time minimised,
    bnb.TIME or a robust key over scenarios (`planner.robust.RobustMeasure`)."""
    bound = min(s.window_s, incumbent_s * (1 + bnb.TIE_REL))
    best, evaluations, open_bound = least_measure(s, space, measure, bound, deadline)
    if best is not None and best[1] > s.window_s:     # within the tie tolerance, but over the limit
        best = None
    return best, evaluations, open_bound


def min_cost(s: Setting, space: DecisionSpace, deadline: float = math.inf, incumbent_nodes: float = math.inf):
    """Fewest nodes (cost is nodes x node price) reaching the target within the limit; then fastest.
    `incumbent_nodes`: the nodes of a plan believed to reach it (e.g. a MIP backend's)."""
    return fewest_nodes(s, space, s.window_s, bnb.TIME, deadline, incumbent_nodes)


def fewest_nodes(s: Setting, space: DecisionSpace, limit: float, measure, deadline: float,
                  incumbent_nodes: float = math.inf):
    """Fewest nodes of a plan whose measure (time to target, or 1 / compute in the window with
    `bnb.compute_measure`) is within `limit`; among those the least measure, ties by `tie_key`.
    Returns ((batch, cost) or None, plans scored, proven lower bound on the cost)."""
    batches = bnb.batches_most_promising_first(s, space, measure, deadline)
    start = incumbent_nodes + 1            # searched: plans with fewer nodes than `start`
    # groups a deadline kept from being listed: any plan of theirs uses at least min_nodes (and 1)
    fewest, evaluations, open_nodes = start, 0, math.inf if batches.complete else float(max(1, space.min_nodes))
    for b in batches:
        n, count, left = bnb.fewest_nodes_within(s, b, space.max_inner_steps, space.max_regional_rounds, limit,
                                                 at_most=fewest, deadline=deadline, measure=measure)
        fewest, evaluations, open_nodes = min(fewest, n), evaluations + count, min(open_nodes, left)
    if fewest == start and math.isfinite(start):     # the incumbent did not hold up: search everything
        if time.perf_counter() > deadline:           # no time left: nothing below `start` found, nothing above searched
            return None, evaluations, min(open_nodes, start) * s.node_price_usd
        best, count, cost_bound = fewest_nodes(s, space, limit, measure, deadline)
        return best, evaluations + count, cost_bound
    cost_bound = open_nodes * s.node_price_usd if math.isfinite(open_nodes) else math.inf
    if not math.isfinite(fewest):
        return None, evaluations, cost_bound
    found = []
    for b in batches:
        at = bnb.with_nodes(b, int(fewest))
        if at is not None:
            f = bnb.minimise_time(s, at, space.max_inner_steps, space.max_regional_rounds, limit, deadline, measure)
            evaluations += f.evaluations
            found.append(f)
    best = best_of(s, found)
    if best is None:       # the deadline came before the second phase found again a plan of `fewest` nodes
        return None, evaluations, min(cost_bound, fewest * s.node_price_usd)
    batch, _ = best        # cut short by the deadline, the fastest of the cheapest may be missed (cost is exact)
    return (batch, float(batch.nodes[0] * s.node_price_usd)), evaluations, cost_bound


def max_compute(s: Setting, space: DecisionSpace, deadline: float = math.inf, incumbent_compute: float = 0.0,
                measure=None):
    """Most compute (C_quality or C_local, per target kind) within the duration limit, in the
    window view: the least 1/C over the space (`bnb.compute_measure`), ties by `tie_key`.
    `incumbent_compute`: the compute (FLOP) of a plan known to exist, e.g. a MIP backend's,
    which prunes from the start. `measure`: a robust key of 1/C over scenarios
    (`planner.robust.RobustMeasure`); the value returned is then 1 / that key."""
    robust = measure is not None
    measure = measure if robust else bnb.compute_measure(s.target_kind)
    bound = (1.0 / incumbent_compute) * (1 + bnb.TIE_REL) if incumbent_compute > 0 else math.inf
    best, evaluations, open_bound = least_measure(s, space, measure, bound, deadline, prune_rows=not robust)
    upper = 0.0 if open_bound == math.inf else (1.0 / open_bound if open_bound > 0 else math.inf)
    if best is None:
        return None, evaluations, upper
    batch, key = best
    if robust:
        return (batch, 1.0 / key), evaluations, upper
    return (batch, float(window_compute(s, batch, s.target_kind)[s.target_kind][0])), evaluations, upper


def fewest_nodes_in_window(s: Setting, space: DecisionSpace, deadline: float = math.inf):
    """Fewest nodes (cost) of a plan whose compute within the duration limit (window view,
    C_quality or C_local per target kind) reaches the target; among those the most compute.

    This is the reference calculator's question (`find_nodes_for_target`: eta_R scored at the
    run's own tokens), not dtplan's min_cost (time to target, eta_R at the target point); the
    two agree when eta_R does not depend on the tokens (linear v1 or no replica penalty).
    Same return convention as `optimise` for min_cost. The space keeps the reductions of
    max_compute (`for_objective`).
    """
    space = space.for_objective(s, MAX_COMPUTE)
    return fewest_nodes(s, space, 1.0 / s.target, bnb.compute_measure(s.target_kind), deadline)


def search(objective: Objective, s: Setting, space: DecisionSpace, deadline: float = math.inf):
    """The exact search of `objective` over `space` (no incumbent): `max_compute`, `min_time` or `min_cost`."""
    if objective.maximise:
        return max_compute(s, space, deadline)
    return (min_time if objective.by_time else min_cost)(s, space, deadline)
