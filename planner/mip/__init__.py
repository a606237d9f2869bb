"""The planning problem as a mixed-integer linear program (`formulation`), in a
solver-neutral container (`model`); backends that solve it are in `planner.solvers`.

Layer: search (docs/architecture.md): may import schema, cost, the setting, evaluate, space and
objectives layers and `planner.solvers`' branch and bound and backend protocol; never questions,
present or the interfaces.
"""
