"""The sync rules of a fleet of pools (fleet.sync_rule: straggler, proportional, auto; docs/fleet.md
section 2): how replicas on pools of unequal speed synchronise, behind one interface, each rule in a
package of its own with its searches and bounds beside it.

- `rules`: the interface's setting-layer part: a `SyncRule` per rule (its name, its change to a plan's
  step and inner steps per pool, the share each pool waits, where it applies), looked up by name
  (`rule_named`), and which rules an instance's plans are searched under (`rule_of`, `rules_searched`:
  'auto' compares both).
- `searches`: the interface's search-layer part: a `RuleSearch` per rule (its part of the
  decomposition over pools, `solve_parts`, and of the exhaustive oracle, `oracle`), by name
  (`search_of`).
- `straggler`: the straggler rule, the fleet's default: `straggler.rule` its mixed setting, paced by
  the slowest pool used; `straggler.search` its search of a part (the uniform solvers) and its bound
  (`compute_bound_s`); `straggler.oracle` its part of the exhaustive oracle.
- `proportional`: the proportional rule. `proportional.rule` says what it is (each pool's inner steps
  per outer step, the throughput's adjustment, where it applies) and `proportional.placement` its
  fastest placeable split under chosen regions; `proportional.parts` is its part of the
  decomposition, `proportional.search` a part's best plan under the rule and the bounds that skip
  parts, through `proportional.boxes`, `proportional.cost_boxes`, `proportional.levels`,
  `proportional.split_table` and `proportional.measure`; `proportional.oracle` is its part of the
  exhaustive oracle and `proportional.mip_rows` its rows in the pools' MIP.

Layer: the package spans two layers, each module on the layer of what it does (docs/architecture.md,
`LAYERS` in scripts/import_graph.py): `rules`, `straggler.rule`, `proportional.rule` and
`proportional.placement` on the setting layer (they import only schema, cost and the setting's
modules), every other module on the search layer (it may import everything below search, never
questions, present or the interfaces). The package's `__init__`s import nothing, so a setting-layer
module can import `planner.sync.rules` without loading a search.
"""
