"""The front door of the exact planner for a fleet of pools (docs/fleet.md, "Planner"): `solve_mixed`
sends `--solver highs|scip` to the one-model MIP path (`planner.solvers.mixed_mip`, certified by the
decomposition) and every other solver to the decomposition over the pools used
(`planner.solvers.decomposition`, its parts in `planner.solvers.pool_parts`).
"""

from __future__ import annotations

from planner.objectives import Objective
from planner.schema.instance import Instance
from planner.solvers.decomposition import decompose


def solve_mixed(instance: Instance, objective: Objective, solver: str, deadline: float, start: float,
                explain: bool = True, incumbents: dict | None = None, part_bound=None):
    """`planner.solve.solve` for a fleet of pools (arguments already checked there). `explain`:
    say why when no plan exists (`explain_mixed`). `solver` highs or scip: the pools are chosen in
    one mixed-integer model (`planner.solvers.mixed_mip`), certified by the decomposition
    (`planner.solvers.decomposition.decompose`, which every other solver runs).
    `incumbents`: per model size (None without search.params), the objective value of a known plan;
    the parts then prune against it (ties kept). `part_bound(part)`: a proven bound on the objective
    over the part's plans (seconds or USD below, FLOP above; `mixed_mip.SettingBounds` from the
    model's tables): a part that cannot come within 1e-9 of the best plan known is skipped."""
    from planner.solvers.uniform import MIP_SOLVERS
    if solver in MIP_SOLVERS:            # chosen regions: a relaxation certified by this decomposition (pool_regions)
        from planner.solvers.mixed_mip import solve_mixed_mip
        return solve_mixed_mip(instance, objective, solver, deadline, start)
    return decompose(instance, objective, solver, deadline, start, explain, incumbents, part_bound)
