"""The straggler sync rule (docs/fleet.md section 2): every replica runs the plan's H inner steps and
the faster pools wait for the slowest used. `rule` is its definition: the mixed setting that scores a
plan on pools (`mixed_setting`, paced by the slowest pool used), its inner steps and waiting per pool;
`search` its search of the parts of a fleet (each part a uniform solve of its mixed setting) and its
bound on them (`compute_bound_s`); `oracle` its part of the exhaustive oracle. Its rows in the pools'
MIP are the pools' model itself (`planner.mip.pool_rows`).

Layer: `rule` on the setting layer (it imports schema, cost and `planner.fleet`'s setting modules
only); `search` and `oracle` on the search layer (they may import everything below search, never
questions, present or the interfaces). This `__init__` imports nothing (planner/sync/__init__.py).
"""
