"""The straggler rule's part of the exhaustive oracle (`planner.solvers.mixed_oracle`): the best plan
under the rule on exactly one assignment of nodes to pools, every plan scored one by one by
`planner.solvers.exhaustive` in the plan's mixed setting. Search layer.
"""

from __future__ import annotations

from planner.cost.score import time_to_target
from planner.fleet.replicas import fleet_cost_usd
from planner.objectives import Objective
from planner.solvers import exhaustive


def best_on_counts(pools, counts, s, space, precision: str, objective: Objective):
    """(value, key) of the best straggler plan on exactly these counts, or None: the exhaustive
    solver's optimum over `space` (nodes fixed at sum(counts)) in `s` (the assignment's mixed setting
    at unit price), keyed as the planner keys it: time then cost; cost then time; compute then cost.
    `precision` is the space's one precision."""
    found, _ = exhaustive.optimise(s, space.for_objective(s, objective), objective)
    if found is None:
        return None
    batch, value = found
    cost = fleet_cost_usd(pools, counts)
    if objective.by_cost:
        return cost, (cost, float(time_to_target(s, batch)["time_to_target_s"][0]))
    if objective.maximise:
        return value, (-value, cost)
    return value, (value, cost)
