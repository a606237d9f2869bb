"""The least-cost and cheapest-tied plans of a part of a fleet placed in several regions.

The placement rule and its costs C_u(N) are `planner.fleet.regions` (its docstring, "Cost"); the two
descents over cost limits here solve the part again and again with the uniform solvers
(`planner.solvers.uniform.optimise`), so they are in the search layer (docs/architecture.md):
`least_cost_placed` for min_cost, `cheapest_tied` for the ties of min_time and max_compute.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from planner.fleet.region_plans import batch_unit
from planner.fleet.regions import Placement
from planner.objectives import MIN_COST, MIN_TIME, Objective
from planner.solvers.objective_search import max_compute, min_time
from planner.solvers.uniform import optimise
from planner.solvers import monotone
from planner.solvers.bnb import TIE_REL


def descend(space, placement: Placement, limit_usd: float, search):
    """The descent over cost limits of `least_cost_placed` and `cheapest_tied`: with L = limit_usd,
    list only the (N, u) with C_u(N) <= L (`Placement.within`; N at most the most nodes whose
    cheapest fill F(N) <= L, as C_u(N) >= F(N)) and ask `search(that space)` for a plan ((one-plan
    batch, value) or None, plans scored); if there is one, its C_u(N) is the best so far and L the
    largest float below it; repeat until nothing is found. Every plan `search` accepts that costs
    less than the best so far is listed in the next round, so when `search` is exact over the
    space it is given, the last plan found is one of least cost among those it accepts; each round
    lowers L strictly and C takes finitely many values, so it ends.
    Returns (the last (batch, value) found or None, its C_u(N) in USD, plans scored)."""
    best, best_usd, evaluations, limit = None, math.inf, 0, limit_usd
    while True:
        view = placement.within(limit)
        top = min(space.max_nodes, view.affordable_nodes())
        if top < space.min_nodes:
            break
        found, count = search(replace(space, max_nodes=top, placement=view))
        evaluations += count
        if found is None:
            break
        nodes = int(np.ravel(found[0].nodes)[0])
        cost = float(placement.cost(batch_unit(found[0]), nodes)[nodes])
        if cost > limit:
            raise AssertionError(f"a plan listed within {limit!r} USD places at {cost!r} USD")
        best, best_usd = found, cost
        limit = float(np.nextafter(cost, -np.inf))
    return best, best_usd, evaluations


def least_cost_placed(setting, space, placement: Placement, deadline: float, solver: str,
                      limit_usd: float = math.inf):
    """min_cost over one part with several regions: (its cheapest plan's one-plan batch or None, that
    plan's placement cost C_u(N) in USD, plans scored, a lower bound in USD on every plan of the part
    costing at most `limit_usd`). `setting` has the unit node price (`pool_parts.unit_price`), so the
    uniform min_cost solver finds the plan of fewest nodes among those the space lists.

    A plan's cost is C_u(N) (`placement_costs`), which is not monotone in N (regions of 13 and 20
    nodes, groups of 10: 33 nodes may place more cheaply than 32), so the fewest nodes are not the
    least cost. `descend` from L = limit_usd, each round the plan of fewest nodes among the (N, u)
    with C_u(N) <= L (in practice one or two rounds).
    Ties: the fastest plan with C_u(N) <= best (1 + TIE_REL) (a min_time solve over those (N, u)),
    as the oracle's key (cost, then time). The bound: the best cost when every round finished,
    else the least of it and F(each unfinished round's node bound): a round's plans cost at least
    the cheapest fill of its least node count."""
    bound_usd = math.inf

    def fewest(view_space):
        nonlocal bound_usd
        found, count, bound_nodes = optimise(setting, view_space, MIN_COST, deadline, solver)
        if math.isfinite(bound_nodes):               # the round was cut short by the deadline
            fill = placement.fill_cost()
            n = max(int(math.ceil(bound_nodes - 1e-9)), 0)
            bound_usd = min(bound_usd, float(fill[n]) if n < fill.size else math.inf)
        return found, count

    best, best_usd, evaluations = descend(space, placement, limit_usd, fewest)
    if best is None:
        return None, math.inf, evaluations, bound_usd
    best_batch = best[0]
    view = placement.within(best_usd * (1 + TIE_REL))
    top = min(space.max_nodes, view.affordable_nodes())
    found, count, _ = optimise(setting, replace(space, max_nodes=top, placement=view), MIN_TIME, deadline, solver)
    evaluations += count
    if found is not None:
        batch = found[0]
        nodes = int(np.ravel(batch.nodes)[0])
        best_batch, best_usd = batch, float(placement.cost(batch_unit(batch), nodes)[nodes])
    return best_batch, best_usd, evaluations, min(bound_usd, best_usd)


def cheapest_tied(setting, space, placement: Placement, objective: Objective, found, deadline: float, solver: str):
    """min_time or max_compute over one part with several regions, ties to the cheaper plan: among the
    part's plans whose time (compute) is within the tie tolerance of `found`'s, (batch, value) of one
    of least placement cost C_u(N), and the plans scored. `found` = (batch, value): the part's
    optimum as the exact solver returned it, value its time in seconds (compute in FLOP).

    The solvers break ties by `bnb.tie_key`, fewer nodes first: the cheapest tie when a plan's cost
    is the cheapest fill F(N), nondecreasing in N, but not under C_u(N), which differs between unit
    sizes at one N and is not monotone in N (`tests/test_regions.py`: 8 nodes in groups of 2 or of
    3 at one time, 832,000 or 720,000 USD). So `descend` from L = the largest float below found's
    C_u(N): each round the objective's own solve over the (N, u) with C_u(N) <= L, with found's
    value as the incumbent (the branch and bound prunes every box that cannot come within the tie
    tolerance of it; with other solvers the optimum of the round), a plan accepted when its time is
    <= value (1 + TIE_REL) (compute >= value (1 - TIE_REL)), the tie of `objective_search.tie_less`. The
    first round proves in one solve that no cheaper plan ties (all the rounds when a deadline cuts
    one short: then the plan of least cost found so far, tied all the same).

    Only N >= N*, found's nodes, are listed: `tie_key` puts fewer nodes first, so no plan tied with
    found has fewer nodes (found is the first tied plan in that order, `objective_search.best_of`). And a
    tie cheaper than c = C_u(N*) has F(N) <= C_u(N) < c, F nondecreasing: when no N >= N* has
    F(N) < c (found is placed at the cheapest fill of its nodes, e.g. a plan without units, or one
    using every node of its pools), nothing is solved at all."""
    batch, value = found
    nodes = int(np.ravel(batch.nodes)[0])
    cost = float(placement.cost(batch_unit(batch), nodes)[nodes])
    maximise = objective.maximise
    bounded = solver == "bnb" and not monotone.check(setting).unsupported

    def tied(view_space):
        if bounded:
            solve_with = max_compute if maximise else min_time
            out, count, _ = solve_with(setting, view_space.for_objective(setting, objective), deadline, value)
        else:
            out, count, _ = optimise(setting, view_space, objective, deadline, solver)
        if out is not None and not (out[1] >= value * (1 - TIE_REL) if maximise else out[1] <= value * (1 + TIE_REL)):
            out = None
        return out, count

    at_least_found = replace(space, min_nodes=max(space.min_nodes, nodes))
    cheaper, _, evaluations = descend(at_least_found, placement, float(np.nextafter(cost, -np.inf)), tied)
    return (found if cheaper is None else cheaper), evaluations
