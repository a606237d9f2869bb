"""`dtplan compare`: one workload on every hardware preset, ranked."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from planner.cli.common import (EXIT_INFEASIBLE, EXIT_OK, BadInput, check_report, command_line, json_default,
                                load_or_exit, progress_after)
from planner.schema.errors import InputError

@click.command()
@click.argument("instance_path", metavar="INSTANCE", type=click.Path(path_type=Path))
@click.option("--hardware", "hardware_list", default="all", show_default=True,
              help="Hardware presets to compare: 'all' or ids separated by commas (see `dtplan hardware`).")
@click.option("--objective", type=click.Choice(["min_time", "max_compute", "min_cost"]),
              help="Override the instance's objective (the ranking follows it).")
@click.option("--plot", "plot_paths", multiple=True, type=click.Path(path_type=Path), metavar="FILE",
              help="Also write a bar chart per hardware to FILE (.png or .svg); may be given several times.")
@click.option("--json", "as_json", is_flag=True,
              help="Write the results as JSON to standard output: a list, best first, each solve result "
                   "with its hardware id and rank.")
@click.option("--report", "report_path", type=click.Path(path_type=Path),
              help="Also write a report to FILE (.html, self-contained with the chart; or .md).")
def compare(instance_path: Path, hardware_list: str, objective: str | None, plot_paths: tuple[Path, ...],
            as_json: bool, report_path: Path | None) -> None:
    """Solve one workload on each hardware preset and rank them.

    Only fleet.hardware changes (same model, fleet size, network, limits, search and objective);
    the ranking is by the objective (least time, least cost, or most compute), ties by hardware
    id, presets without a plan last with the reason. Exit 0 when at least one preset has a plan,
    1 when none has, 2 on bad input.
    """
    import time
    from planner.questions.compare import compare as run_compare, parse_hardware_list, render_comparison
    from planner.schema.instance import load_instance
    from planner.present.render import make_console
    instance = load_or_exit(load_instance, instance_path)
    try:
        from planner.present.plots import UnknownPlotFormat, check_plot_path
        for path in plot_paths:
            check_plot_path(path)
    except UnknownPlotFormat as err:
        raise BadInput(f"--plot: {err}") from None
    check_report(report_path)
    try:
        ids = parse_hardware_list(hardware_list)
    except InputError as err:
        raise BadInput(str(err)) from None
    raw = json.loads(instance_path.read_text())     # vary the file's own data (it parsed above)
    start = time.perf_counter()
    try:
        with progress_after(1.0, "solving") as progress:
            rows = run_compare(raw, ids, objective=objective, progress=progress)
    except InputError as err:
        raise BadInput(str(InputError(err.problems, source=str(instance_path)))) from None
    elapsed = time.perf_counter() - start
    objective = objective or instance.objective
    if plot_paths:
        from planner.evaluate import max_days
        from planner.present.output import OutputPathError
        from planner.present.plots import comparison_plot
        try:
            written = comparison_plot(rows, objective, list(plot_paths), title=instance.name,
                                      limit_days=max_days(instance)[0])
        except OutputPathError as err:
            raise BadInput(f"--plot: cannot write: {err}") from None
        except OSError as err:
            raise BadInput(f"--plot: cannot write {err.filename or 'the plot'}: {err.strerror or err}") from None
        for path in written:
            click.echo(f"plot written to {path}", err=True)
    if as_json:
        click.echo(json.dumps([row.to_dict() for row in rows], indent=2, default=json_default))
    else:
        render_comparison(rows, objective, make_console(), title=instance.name, elapsed_s=elapsed)
    if report_path is not None:
        from planner.present.report import compare_report
        click.echo(f"report written to {compare_report(instance, rows, objective, report_path, command_line())}", err=True)
    sys.exit(EXIT_OK if any(row.feasible for row in rows) else EXIT_INFEASIBLE)
