"""The proportional sync rule (docs/fleet.md section 4): its definition (`rule`), its fastest
placeable split under chosen regions (`placement`), its part of the decomposition over pools
(`parts`), the searches that find a part's best plan under it (`search`, through `boxes`,
`cost_boxes`, `levels` and `split_table`; `measure` is what they rank plans by), its part of the
exhaustive oracle (`oracle`) and its rows in the pools' MIP (`mip_rows`).

Layer: `rule` and `placement` on the setting layer (they import schema, cost and `planner.fleet`'s
setting modules only);
the other modules on the search layer (they may import everything below search, never questions,
present or the interfaces). This `__init__` imports nothing (planner/sync/__init__.py).
"""
