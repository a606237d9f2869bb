"""Questions built on `planner.solve`: feasible (can the target be reached, and what would it take), compare (hardware presets ranked)."""
