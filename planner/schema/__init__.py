"""What a user gives dtplan: the instance and plan schemas, the presets catalog, strict types and input errors.

Layer: schema, the lowest (docs/architecture.md): imports nothing of the planner but itself,
`planner.presets_dir`, the constants table `planner.cost.assumptions` and the places table
`planner.sites.places` (both import nothing of the planner either, and sit on this layer).
"""
