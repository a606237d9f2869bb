"""Mixed fleets: several pools of different hardware planned together (docs/fleet.md).

- `pools`: each pool resolved into the `Setting` it would have alone (its own peak FLOP/s,
  memory, price and achieved MFU), and the fleet-wide goodput.
- `replicas`: the pools a plan uses and what they cost (cost summed per pool, the cheapest fill
  of N nodes, the nodes a budget buys, the precision checked on every pool used); the timing of
  the pools' replicas is their sync rule's (`planner.sync`).
- `network`: with network.sites, the links a plan uses as functions of its pools' sites (the
  slowest route among them, the regions its groups stay in).
- `regions`: chosen regions, the placement rule and its costs; `region_plans`: the rule on an
  instance (the regions a part tries, a plan's regions checked and shown, the oracle's).
- `evaluate`: one mixed plan scored (`MixedEvaluation`), with its per-pool rows and sites.
- `present`: labels, the per-pool table and the site lines of the output.
- `samples`: random small instances for the comparison with the oracle.

The sync rules (straggler, proportional, auto) are `planner.sync`; the straggler rule's mixed
setting, paced by the slowest pool used, is `planner.sync.straggler.rule.mixed_setting`. The
planner over pools is `planner.solvers.mixed` (an exact decomposition over pool subsets solved by
the existing branch and bound, `planner.solvers.decomposition`) and its oracle
`planner.solvers.mixed_oracle`.

Layer: the fleet's modules sit on the layers of what they do (docs/architecture.md): `pools`,
`replicas`, `network`, `regions`, `region_plans` and `samples` on the setting layer (they import
only schema, cost, `planner.setting` and `planner.sites`); `evaluate` on the evaluate layer (it
composes `planner.homogeneous`); `present` on the present layer. None imports a solver.
"""
