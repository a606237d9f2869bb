"""`dtplan solve --write-model FILE`: the instance's model, written for a person to read.

The suffix picks the format, both written by Pyomo with the model's own names (constraint
families as `sync_overlap(3)`, columns as `y(12)`, `bn(4)`, `ln_H`): `.lp` (CPLEX LP) or
`.mps`. The model written is the first round of the outer-approximation loop: after the
presolve (`planner.mip.presolve.presolve`: classes that cannot hold an optimum dropped, the
cutoff of its incumbent in the `incumbent` row; when it proves that no plan meets the limits,
the model of the one class, or plan, of least bound, whose rows show it), on the grid of
`Grid.initial`; the loop
refines it around each plan it finds (`planner.solvers.certified`).
With several candidate model sizes (`search.params`) one file per size is written, the size
in its name (`model.70B.lp`). Each file is written atomically (`planner.files`).
Building never solves.
"""

from __future__ import annotations

from pathlib import Path

from planner.objectives import MIN_TIME, Objective
from planner.setting import setting_from_instance, with_params
from planner.mip.formulation import Grid, build
from planner.mip.presolve import presolve, presolve_compute
from planner.mip.table_bounds import class_bounds
from planner.mip.tables import Tables, compute_bounds
from planner.files import atomic_path, check_writable
from planner.schema.instance import Instance
from planner.solvers import UnsupportedBySolver
from planner.solvers.certified import check_supported, incumbent_value, tables_or_refuse
from planner.space import DecisionSpace

FORMATS = (".lp", ".mps")


class UnknownFormat(ValueError):
    pass


def model_paths(instance: Instance, path: Path) -> list[Path]:
    """The file(s) `write_model` will write, each checked writable (OutputPathError otherwise)."""
    path = Path(path)
    if path.suffix.lower() not in FORMATS:
        raise UnknownFormat(f"unknown format {path.suffix!r}; use one of {', '.join(FORMATS)}")
    sizes = instance.search.params or [None]
    return [check_writable(path if p is None else path.with_name(f"{path.stem}.{p / 1e9:g}B{path.suffix}"))
            for p in sizes]


def least_bound(t: Tables, objective: Objective = MIN_TIME) -> Tables:
    """The tables cut to the class of least lower bound on ln T (`class_bounds`; max_compute: of
    largest upper bound on ln C, `compute_bounds`), or else to the fixed plan of least ln T (most
    compute): a small model that is infeasible exactly as the whole one (with the incumbent's cutoff)."""
    if t.sync:
        lower = -compute_bounds(t) if objective.maximise else class_bounds(t)[0].min(axis=1)
        a = int(lower.argmin())
        return Tables(t.setting, t.space, t.groups, [t.sync[a]], [], t.n_max, t.h_max, t.r_max, lower[a:a + 1],
                      t.eta_h_falls)
    fixed = sorted(t.fixed, key=lambda p: -p.log_compute if objective.maximise else p.log_time)[:1]
    return Tables(t.setting, t.space, t.groups, [], fixed, 1, 1, 1, None, t.eta_h_falls)


def write_model(instance: Instance, objective: Objective, path: Path) -> list[Path]:
    """Build and write the model(s); the paths written."""
    targets = model_paths(instance, path)
    base = setting_from_instance(instance)
    written = []
    for params, target in zip(instance.search.params or [None], targets):
        setting = base if params is None else with_params(base, params)
        check_supported(setting, objective)
        space = DecisionSpace.from_instance(instance, setting).for_objective(setting, objective)
        full = tables_or_refuse(setting, space)
        compute = objective.maximise
        tables, plan, _, _ = presolve_compute(full) if compute else presolve(full, objective)
        if not (tables.sync or tables.fixed):
            tables = least_bound(full, objective)
        if not (tables.sync or tables.fixed):
            raise UnsupportedBySolver("the search space holds no plan at all: no model to write")
        cutoff = incumbent_value(setting, plan, objective) if plan is not None else None
        grid = Grid.initial_compute(tables, cutoff) if compute else Grid.initial(tables)
        f = build(tables, grid, objective, cutoff=cutoff)
        with atomic_path(target) as tmp:
            f.model.write(str(tmp), io_options={"symbolic_solver_labels": True})
        written.append(target)
    return written
