"""Sweep recipes (TOML files in instances/sweeps/) and the drawing of a sweep's answer."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from planner.objectives import objective_named
from planner.questions.sweep.distributions import Distribution
from planner.questions.sweep.fields import check_field, with_fields
from planner.questions.sweep.run import SweepResult
from planner.questions.sweep.spec import SweepSpec
from planner.schema.errors import InputError, Problem
from planner.schema.instance import parse_instance


RECIPE_KEYS = {"name", "description", "instance", "set", "command", "objective", "solver", "grid", "vary",
               "samples", "seed", "plot"}
PLOT_KINDS = ("lines", "distribution", "pareto")


@dataclass
class Recipe:
    """A sweep saved as TOML (instances/sweeps/): the base instance (a path relative to the
    recipe), the fields to vary, the question, and how to plot the answer."""

    name: str
    description: str
    spec: SweepSpec
    plot: dict[str, Any]
    path: Path


def load_recipe(path: str | Path) -> Recipe:
    """Read a sweep recipe; InputError naming the key on any problem."""
    import tomllib
    path = Path(path)
    from planner.schema.strict import read_input_text
    try:
        data = tomllib.loads(read_input_text(path))
    except tomllib.TOMLDecodeError as err:
        raise InputError([Problem("<file>", f"cannot read the recipe: {err}")], str(path)) from None
    problems = [Problem(k, f"unknown key; allowed: {', '.join(sorted(RECIPE_KEYS))}") for k in data
                if k not in RECIPE_KEYS]
    if "instance" not in data:
        problems.append(Problem("instance", "required: the path of the base instance, relative to the recipe"))
    if problems:
        raise InputError(problems, str(path))
    from planner.schema.strict import read_json
    instance_path = (path.parent / data["instance"]).resolve()
    raw, problems = read_json(instance_path)
    if problems:
        raise InputError(problems, str(instance_path))
    fixed = data.get("set", {})
    problems = [p for p in (check_field(k) for k in fixed) if p]
    if problems:
        raise InputError([Problem(f"set.{p.path}", p.message) for p in problems], str(path))
    raw = with_fields(raw, fixed)
    try:
        vary = {k: Distribution.parse(v, f"vary.{k}") for k, v in data.get("vary", {}).items()}
        spec = SweepSpec(raw, str(instance_path), grid={k: list(v) for k, v in data.get("grid", {}).items()},
                         vary=vary, samples=int(data.get("samples", 0)), seed=int(data.get("seed", 0)),
                         command=data.get("command", "solve"), objective=data.get("objective"),
                         solver=data.get("solver", "bnb"))
        spec.check()
    except InputError as err:
        raise InputError(err.problems, str(path)) from None
    plot = dict(data.get("plot", {}))
    if plot.get("kind", "lines") not in PLOT_KINDS:
        raise InputError([Problem("plot.kind", f"must be one of {', '.join(PLOT_KINDS)}")], str(path))
    return Recipe(data.get("name", path.stem), data.get("description", ""), spec, plot, path)


def plot_sweep(result: SweepResult, path: str | Path, kind: str | None = None, x: str | None = None,
               series: str | None = None, y: str | None = None, group: str | None = None,
               title: str = "") -> Path:
    """Draw a sweep's answer (see planner.present.sweep_plots). `kind` defaults to
    'distribution' for Monte Carlo sweeps and 'lines' for grids; `x` and `series` default to
    the first and second grid fields; `y` to days to target (reach: days; evaluate: days)."""
    from planner.evaluate import max_days
    from planner.present import sweep_plots
    spec = result.spec
    limit = max_days(parse_instance(copy.deepcopy(spec.base)))[0]
    if "limits.max_days" in spec.grid or "limits.max_days" in spec.vary:
        limit = None
    kind = kind or ("distribution" if spec.vary else "lines")
    fields = list(spec.grid) + list(spec.vary)
    y = y or ("days" if spec.command == "reach" else "time_to_target_days")
    if spec.command == "solve" and spec.objective is not None and objective_named(spec.objective).maximise \
            and y == "time_to_target_days":
        y = "objective_value"
    if kind == "distribution":
        return sweep_plots.distribution_plot([r.get(y) for r in result.rows], path, label=y, limit=limit,
                                             title=title)
    if kind == "pareto":
        group = group or ("fleet.hardware" if "fleet.hardware" in fields else None)
        return sweep_plots.pareto_plot(result.rows, path, group=group, limit=limit, title=title)
    x = x or fields[0]
    series = series if series is not None else (list(spec.grid)[1] if len(spec.grid) > 1 else None)
    ylabel = None
    if y == "objective_value":
        ylabel = objective_named(spec.objective or parse_instance(copy.deepcopy(spec.base)).objective).axis
    return sweep_plots.lines_plot(result.rows, x, path, y=y, series=series, limit=limit, title=title, ylabel=ylabel)
