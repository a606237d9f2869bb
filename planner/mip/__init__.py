"""The planning problem as a mixed-integer linear program (`formulation`), in a
solver-neutral container (`model`); backends that solve it are in `planner.solvers`."""
