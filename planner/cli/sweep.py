"""`dtplan sweep`: one instance answered over a grid or Monte Carlo draws of its fields."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from planner.cli.common import (EXIT_INFEASIBLE, EXIT_OK, BadInput, apply_overrides, check_output,
                                echo_json, json_option, set_option)
from planner.schema.errors import InputError, Problem

_DIST_HELP = ("normal(mean, sd); lognormal(median, sigma) = exp(N(ln median, sigma)); uniform(low, high); "
              "loguniform(low, high); triangular(low, mode, high); choice(a, b, ...)")


class sweep_progress:
    """A rich progress bar with ETA on stderr, only when stderr is a terminal."""

    def __init__(self, label: str):
        from rich.console import Console
        self.console = Console(stderr=True)
        self.label = label
        self.bar = self.task = None

    def __enter__(self):
        if self.console.is_terminal:
            from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn,
                                       TimeRemainingColumn)
            self.bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
                                console=self.console, transient=True)
            self.task = self.bar.add_task(self.label, total=None)
            self.bar.start()
        return self

    def __call__(self, done: int, total: int) -> None:
        if self.bar is not None:
            self.bar.update(self.task, completed=done, total=total)

    def __exit__(self, *exc) -> None:
        if self.bar is not None:
            self.bar.stop()


@click.command()
@click.argument("instance_path", metavar="INSTANCE", type=click.Path(path_type=Path))
@click.option("--grid", "grids", multiple=True, metavar="FIELD=v1,v2,...",
              help="Sweep FIELD (a dotted path: network.wan.up_mbps, fleet.nodes, fleet.hardware, limits.max_days, "
                   "assumptions.scenario, assumptions.constants.<name>, ...) over these values; several --grid "
                   "give every combination (the first varies slowest).")
@click.option("--vary", "varies", multiple=True, metavar="FIELD=DIST(...)",
              help=f"Draw FIELD from a distribution at each Monte Carlo point: {_DIST_HELP}. Draws for an "
                   "integer field are rounded.")
@click.option("--monte-carlo", "samples", type=click.IntRange(min=1), default=None,
              help="Number of Monte Carlo draws (with --vary); with --grid, that many per grid point.")
@click.option("--seed", type=int, default=None,
              help="Random seed (default 0): point i's draws depend only on the seed and i (reproducible, resumable).")
@click.option("--command", "command", type=click.Choice(["solve", "feasible", "evaluate"]), default=None,
              help="What each point answers (default solve): a full solve, the feasibility verdict with its "
                                      "smallest fixes, or the evaluation of --plan.")
@click.option("--robust", is_flag=True, help="Each point solved for its robust plan (worst case over the scenarios "
              "of the uncertainty files; docs/robust.md): --command robust.")
@click.option("--plan", "plan_path", type=click.Path(path_type=Path), help="The fixed plan for --command evaluate.")
@click.option("--objective", type=click.Choice(["min_time", "max_compute", "min_cost"]),
              help="Override the instance's objective (solve).")
@click.option("--solver", default="bnb", show_default=True, help="Solver of each point (see dtplan solve).")
@click.option("--time-limit", "time_limit_s", type=click.FloatRange(min=0, min_open=True),
              help="Seconds per point's solve.")
@click.option("--workers", type=click.IntRange(min=1), help="Local worker processes (default: every core; "
                                                            "1 runs in this process).")
@click.option("--scheduler", metavar="ADDRESS", help="Run on an existing Dask distributed cluster "
                                                     "(e.g. tcp://10.0.0.5:8786) instead of local processes.")
@click.option("-o", "--output", "output", type=click.Path(path_type=Path),
              help="Write one row per point to FILE (.parquet, .csv or .jsonl), as points finish; rerunning "
                   "with the same FILE resumes: finished points are kept, not recomputed.")
@click.option("--plot", "plot_path", type=click.Path(path_type=Path),
              help="Also draw the answer to FILE (.png or .svg): days against the first grid field, one curve "
                   "per value of the second, the duration limit drawn; a histogram with ECDF and percentiles "
                   "for Monte Carlo; --plot-kind pareto for time against cost.")
@click.option("--plot-kind", type=click.Choice(["lines", "distribution", "pareto"]),
              help="Kind of --plot (default: distribution for --vary, lines otherwise).")
@json_option("Write the summary and every row as JSON to standard output (errors too, as {\"error\": ...}).")
@set_option
def sweep(instance_path: Path, grids, varies, samples, seed, command, robust, plan_path, objective, solver, time_limit_s,
          workers, scheduler, output, plot_path, plot_kind, as_json, overrides) -> None:
    """Answer INSTANCE at every point of a grid or of Monte Carlo draws of its fields.

    INSTANCE is an instance file (.json) or a sweep recipe (.toml, see instances/sweeps/),
    whose grid, draws and question the options extend or override (--set fixes a field of
    the base instance for every point). One row per point: its inputs, status, objective
    value, plan, gap, time and error (a point that fails is a row with its error). Exit 0
    when the sweep completed (whatever the points' answers), 2 on bad input (the field
    named, nothing run), 4 on an internal error.

    Example: dtplan sweep instances/miri/baseline-1e25.json --grid network.wan.up_mbps=10,100,1000
    --grid fleet.nodes=36,72 -o bandwidth.csv --plot bandwidth.png
    """
    from planner.questions.sweep import SweepSpec, load_recipe, output_format, parse_grid, parse_vary, run_sweep
    from planner.schema.strict import read_json
    try:
        recipe_plot = {}
        if instance_path.suffix.lower() == ".toml":
            recipe = load_recipe(instance_path)
            spec, recipe_plot = recipe.spec, recipe.plot
        else:
            raw, problems = read_json(instance_path)
            if problems:
                raise InputError(problems, str(instance_path))
            spec = SweepSpec(raw, str(instance_path))
        if overrides:
            spec.base = apply_overrides(spec.base, overrides)
        for g in grids:
            path, values = parse_grid(g)
            spec.grid[path] = values
        for v in varies:
            path, dist = parse_vary(v)
            spec.vary[path] = dist
        if samples is not None:
            spec.samples = samples
        if seed is not None:
            spec.seed = seed
        if command is not None:
            spec.command = command
        if robust:
            if command not in (None, "solve"):
                raise InputError([Problem("--robust", f"answers solve questions, not --command {command}")])
            spec.command = "robust"
        spec.objective = objective or spec.objective
        spec.solver = solver if solver != "bnb" else spec.solver
        spec.time_limit_s = time_limit_s
        if plan_path is not None:
            plan_raw, problems = read_json(plan_path)
            if problems:
                raise InputError(problems, str(plan_path))
            spec.plan = plan_raw
        if output is not None:
            output_format(output)
        spec.check()
    except InputError as err:
        raise BadInput.from_error(err) from None
    check_output("-o", output)
    check_output("--plot", plot_path)
    if plot_path is not None:
        from planner.present.plots import UnknownPlotFormat, check_plot_path
        try:
            check_plot_path(plot_path)
        except UnknownPlotFormat as err:
            raise BadInput(f"--plot: {err}", [Problem("--plot", str(err))]) from None
    try:
        with sweep_progress(f"sweep ({spec.command})") as progress:
            result = run_sweep(spec, workers=workers, scheduler=scheduler, output=output, progress=progress)
    except InputError as err:
        raise BadInput.from_error(err) from None
    except OSError as err:
        if scheduler is not None:
            raise BadInput(f"--scheduler: cannot reach {scheduler}: {err}", [Problem("--scheduler", str(err))]) from None
        raise
    resumed = f", {result.resumed} resumed from {output}" if output is not None else ""
    click.echo(f"{len(result.rows)} points ({result.computed} computed{resumed}) in {result.elapsed_s:,.1f} s, "
               f"{result.where}"
               + (f", {result.workers} workers" if result.where == "local" else "")
               + (f"; {len(result.errors)} failed" if result.errors else ""), err=True)
    from planner.present.envelope import echo_search_note   # dtplan: the evidence envelope (docs/quality.md)
    echo_search_note(spec.base)
    if plot_path is not None:
        from planner.present.sweep_plots import plot_sweep
        kind = plot_kind or recipe_plot.get("kind")
        written = plot_sweep(result, plot_path, kind=kind, x=recipe_plot.get("x"), series=recipe_plot.get("series"),
                             y=recipe_plot.get("y"), group=recipe_plot.get("group"), title=recipe_plot.get("title", ""))
        click.echo(f"plot written to {written}", err=True)
    if output is not None:
        click.echo(f"rows written to {output}", err=True)
    if as_json:
        echo_json(result.to_dict())
    elif output is None:
        _print_rows(result)
    sys.exit(EXIT_OK)


def _print_rows(result) -> None:
    from rich.table import Table
    from planner.present.render import make_console
    spec = result.spec
    shown = ["index"] + list(spec.grid) + list(spec.vary) + ["status"] + {
        "solve": ["objective_value", "time_to_target_days", "cost_usd", "mode", "nodes", "inner_steps", "compression"],
        "feasible": ["time_to_target_days", "fixes"], "evaluate": ["time_to_target_days", "violations"],
        "reach": ["days", "limit_days"],
        "robust": ["objective_value", "time_to_target_days", "cost_usd", "mode", "nodes", "inner_steps",
                   "compression"]}[spec.command] + ["error"]
    from planner.present.envelope import sweep_flag, sweep_notes     # points the evidence envelope stops (dtplan)
    notes = sweep_notes(result.rows)
    table = Table(*shown, *(["envelope"] if notes else []))
    for r in result.rows:
        table.add_row(*[_fmt(r.get(c)) for c in shown], *([sweep_flag(r)] if notes else []))
    console = make_console()
    console.print(table)
    for note in notes:
        console.print(note)


def _fmt(v) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{v:,.4g}"
    return str(v)


def feasible_monte_carlo(raw: dict, source: str, samples: int, seed: int, uncertainty: Path | None,
                         as_json: bool) -> None:
    """`dtplan feasible --monte-carlo N`: the probability the target is reachable and the days
    it takes, over the uncertain inputs (planner.questions.uncertainty); exits with the verdict
    of the instance as given (0 reachable, 1 not)."""
    from rich.table import Table
    from planner.present.render import make_console
    from planner.questions.uncertainty import reach
    try:
        with sweep_progress("feasible (Monte Carlo)") as progress:
            r = reach(raw, samples, seed=seed, uncertainty=uncertainty, source=source, progress=progress)
    except InputError as err:
        raise BadInput.from_error(err) from None
    if as_json:
        echo_json(r.to_dict())
        sys.exit(EXIT_OK if r.base_reachable else EXIT_INFEASIBLE)
    console = make_console()
    low, high = r.interval
    limit = f"{r.limit_days:,.1f} days" if r.limit_days is not None else "the duration limit"
    given = (f"{r.base_days:,.1f} days" if r.base_days is not None else "no plan")
    console.print(f"as given: fastest plan {given}, limit {limit}: "
                  f"{'reachable' if r.base_reachable else 'not reachable'}")
    console.print(f"P(target reached within {limit}) = {r.probability:.1%} "
                  f"({r.reachable} of {r.samples} draws; 95% interval {low:.1%} - {high:.1%})")
    if r.days_percentiles:
        console.print("days to target (fastest plan): " + ", ".join(
            f"p{q} {v:,.1f}" for q, v in r.days_percentiles.items()))
    table = Table("uncertain input", "distribution (inside the published interval)", "source")
    for i in r.inputs:
        table.add_row(i.field, str(i.distribution), i.source)
    console.print(table)
    for note in r.notes:
        console.print(f"note: {note}")
    sys.exit(EXIT_OK if r.base_reachable else EXIT_INFEASIBLE)
