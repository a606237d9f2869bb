"""The exhaustive oracle of a fleet of pools: every assignment of nodes to pools, every plan.

For every vector of counts (n_1, ..., n_P), 0 <= n_p <= count_p, not all zero, within
limits.max_nodes, search.min_nodes and the budget (its cost sum_p n_p x node price_p, not the
cheapest fill the planner reasons with), and every precision all pools used run, the plans of
exactly N = sum_p n_p nodes are scored one by one by `planner.solvers.exhaustive` in the plan's
`mixed_setting` (`planner.sync.straggler.oracle`). The best is kept by the objective's key (as
`planner.solvers.mixed`: time then cost; cost then time; compute then cost). It shares the cost
model with the planner but none of its reasoning (pool subsets, cheapest fill, budget and node caps
per subset, the tie at equal cost), and its work is the product of the pool counts times the plan space: for small instances
(tests/test_fleet_planner.py, scripts/check_mixed_oracle.py).

With `network.regions = "chosen"` each assignment is also scored with every set partition of its
sites into regions (`planner.fleet.region_plans.oracle_regions`), the placement rule checked on its own
nodes per region: every placement is an assignment, priced by its own cost, so min_cost and budgets
under chosen regions are checked by brute force, with none of the planner's C_u(N) reasoning
(tests/test_regions.py, scripts/check_regions_oracle.py).

Each assignment is scored under every rule fleet.sync_rule searches (`planner.sync.rules.rules_searched`),
by the rule's part of the oracle (`planner.sync.searches.RuleSearch.oracle`: the straggler rule's
`planner.sync.straggler.oracle`, the proportional rule's `planner.sync.proportional.oracle`); on one
pool every rule is the straggler rule.
"""

from __future__ import annotations

import dataclasses
import math
from itertools import product

from planner.objectives import Objective, objective_named
from planner.evaluate import with_params
from planner.fleet.network import site_network
from planner.fleet.pools import pool_settings
from planner.fleet.region_plans import oracle_regions
from planner.fleet.replicas import fleet_cost_usd, unsupported, used_pools
from planner.sync.straggler.rule import mixed_setting
from planner.solvers.objective_search import tie_less
from planner.schema.instance import Instance
from planner.solvers.pool_parts import base_space, unit_price
from planner.sync.rules import rules_searched
from planner.sync.searches import search_of


def oracle(instance: Instance, objective: Objective | str | None = None) -> tuple[float, tuple[float, ...], list[int]] | None:
    """(objective value, comparison key, counts) of the best mixed plan, or None when none meets
    every limit. Values: seconds (min_time), USD (min_cost), FLOP (max_compute)."""
    objective = objective_named(objective or instance.objective)
    pools = pool_settings(instance)
    space = base_space(instance, pools)
    cap = instance.limits.max_nodes or math.inf
    budget = instance.limits.budget_usd
    sites = site_network(instance)
    rules = rules_searched(instance)
    best = None
    for counts in product(*(range(p.count + 1) for p in pools)):
        n = sum(counts)
        cost = fleet_cost_usd(pools, counts)
        if n == 0 or n > cap or n < space.min_nodes or (budget is not None and cost > budget):
            continue
        used = used_pools(counts)
        for (view, placed), precision in product(oracle_regions(instance, sites, pools, counts), space.precisions):
            if unsupported(pools, used, precision):
                continue
            s = mixed_setting(pools, used, precision, view)
            for params in instance.search.params or [None]:
                sized = unit_price(s if params is None else with_params(s, params))
                fixed = dataclasses.replace(space, precisions=(precision,), min_nodes=n, max_nodes=n, placement=placed)
                for rule in rules:
                    if rule != "straggler" and len(used) == 1 and "straggler" in rules:
                        continue      # on one pool every rule is the straggler rule, scored as such
                    found = search_of(rule).oracle(pools, counts, sized, fixed, precision, objective)
                    if found is not None and (best is None or tie_less(found[1], best[1])):
                        best = (found[0], found[1], list(counts))
    return best

