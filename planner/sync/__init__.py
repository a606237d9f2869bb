"""The sync rules of a fleet of pools (fleet.sync_rule: straggler, proportional, auto; docs/fleet.md
section 2): how replicas on pools of unequal speed synchronise, and the searches and bounds that are
one rule's own.

- `rules`: the rules' names and which of them an instance's plans are searched under (`rule_of`,
  `rules_searched`: 'auto' compares both).
- the straggler rule is the fleet's default: its mixed setting, paced by the slowest pool used, is
  `planner.fleet.replicas.mixed_setting`; its parts are searched by the uniform solvers
  (`planner.solvers.decomposition`) and bounded by `planner.solvers.pool_parts.compute_bound_s`.
- `proportional`: the proportional rule. `proportional.rule` says what it is (each pool's inner steps
  per outer step, the throughput's adjustment, where it applies) and `proportional.placement` its
  fastest placeable split under chosen regions; `proportional.measure`,
  `proportional.search` (a part's best plan under the rule and the bounds that skip parts),
  `proportional.boxes`, `proportional.cost_boxes`, `proportional.levels` and
  `proportional.split_table` search it; `proportional.oracle` is its part of the exhaustive oracle.
  Its rows in the pools' MIP are `planner.mip.pool_proportional`.

Layer: the package spans two layers, each module on the layer of what it does (docs/architecture.md,
`LAYERS` in scripts/import_graph.py): `rules`, `proportional.rule` and `proportional.placement` on the
setting layer (they import only schema, cost and the setting's modules), every other module on the
search layer (it may import everything below search, never questions, present or the interfaces).
The package's `__init__`s import nothing, so a setting-layer module can import `planner.sync.rules`
without loading a search.
"""
