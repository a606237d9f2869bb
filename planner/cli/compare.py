"""`dtplan compare`: one workload on every hardware preset, ranked."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from planner.cli.common import (EXIT_INFEASIBLE, EXIT_OK, EXIT_TIME_LIMIT, BadInput, check_output, check_report,
                                command_line, echo_json, json_option, load_instance_or_exit, progress_after, set_option,
                                time_limit_option, write_output)
from planner.schema.errors import InputError

@click.command()
@click.argument("instance_path", metavar="INSTANCE", type=click.Path(path_type=Path))
@click.option("--hardware", "hardware_list", default="all", show_default=True,
              help="Hardware presets to compare: 'all' or ids separated by commas (see `dtplan hardware`).")
@click.option("--objective", type=click.Choice(["min_time", "max_compute", "min_cost"]),
              help="Override the instance's objective (the ranking follows it).")
@click.option("--plot", "plot_paths", multiple=True, type=click.Path(path_type=Path), metavar="FILE",
              help="Also write a bar chart per hardware to FILE (.png or .svg); may be given several times.")
@json_option("Write the results as JSON to standard output: a list, best first, each solve result with "
             "its hardware id and rank (non-finite numbers as null; errors as {\"error\": ...}).")
@click.option("--report", "report_path", type=click.Path(path_type=Path),
              help="Also write a report to FILE (.html, self-contained with the chart; or .md).")
@time_limit_option("Seconds of wall-clock for the whole comparison; presets not solved in time keep the best "
                   "plan found (with its gap) or none.")
@set_option
def compare(instance_path: Path, hardware_list: str, objective: str | None, plot_paths: tuple[Path, ...],
            as_json: bool, report_path: Path | None, time_limit_s: float | None, overrides: tuple[str, ...]) -> None:
    """Solve one workload on each hardware preset and rank them.

    Only fleet.hardware changes (same model, fleet size, network, limits, search and objective);
    the ranking is by the objective (least time, least cost, or most compute), ties by hardware
    id, presets without a plan last with the reason. Exit 0 when at least one preset has a plan,
    1 when none has, 2 on bad input, 3 when the time limit came before any plan was found.
    """
    import time
    from planner.present.comparison import render_comparison
    from planner.questions.compare import compare as run_compare, parse_hardware_list
    from planner.present.render import make_console
    from planner.objectives import objective_named
    start = time.perf_counter()
    instance, raw = load_instance_or_exit(instance_path, overrides)
    try:
        from planner.present.plots import UnknownPlotFormat, check_plot_path
        for path in plot_paths:
            check_plot_path(path)
    except UnknownPlotFormat as err:
        raise BadInput(f"--plot: {err}") from None
    for path in plot_paths:
        check_output("--plot", path)
    check_report(report_path)
    try:
        ids = parse_hardware_list(hardware_list)
    except InputError as err:
        raise BadInput.from_error(err) from None
    deadline = start + time_limit_s if time_limit_s is not None else None
    try:
        with progress_after(1.0, "solving") as progress:
            rows = run_compare(raw, ids, objective=objective, progress=progress, deadline=deadline)
    except InputError as err:
        raise BadInput.from_error(err, str(instance_path)) from None
    elapsed = time.perf_counter() - start
    objective = objective_named(objective or instance.objective)      # the key click and the schema checked
    if plot_paths:
        from planner.setting import max_days
        from planner.present.plots import comparison_plot
        limit_days = max_days(instance)[0]
        for path in plot_paths:
            write_output("--plot", path, lambda tmp: comparison_plot(rows, objective, [tmp], title=instance.name,
                                                                     limit_days=limit_days))
            click.echo(f"plot written to {path}", err=True)
    if as_json:
        echo_json([row.to_dict() for row in rows])
    else:
        render_comparison(rows, objective, make_console(), title=instance.name, elapsed_s=elapsed)
    from planner.present.envelope import echo_search_note   # dtplan: the evidence envelope (docs/quality.md)
    echo_search_note(raw)
    if report_path is not None:
        from planner.present.report import compare_report
        write_output("--report", report_path,
                     lambda tmp: compare_report(instance, rows, objective, tmp, command_line()))
        click.echo(f"report written to {report_path}", err=True)
    if any(row.feasible for row in rows):
        sys.exit(EXIT_OK)
    sys.exit(EXIT_TIME_LIMIT if any(row.result.status == "time_limit" for row in rows) else EXIT_INFEASIBLE)
