"""Questions built on `planner.solve`: feasible (can the target be reached, and what would it take), compare (hardware presets ranked).

Layer: questions (docs/architecture.md): may import schema, cost, the setting, evaluate, space,
objectives and search layers (`planner.solve`); never present or the interfaces (a question returns
data; `planner.present` shows it).
"""
