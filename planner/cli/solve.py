"""`dtplan solve`: the optimal plan of an instance."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from planner.cli.common import (BadInput, check_report, command_line, echo_json, json_option, load_instance_or_exit,
                                set_option, solve_exit_code, time_limit_option, write_output)
from planner.schema.errors import InputError


@click.command()
@click.argument("instance_path", metavar="INSTANCE", type=click.Path(path_type=Path))
@click.option("--objective", type=click.Choice(["min_time", "max_compute", "min_cost"]),
              help="Override the instance's objective.")
@click.option("--solver", default="bnb", show_default=True,
              help="bnb: exact branch and bound over the evaluator (the default, fastest); highs (HiGHS via Pyomo), "
                   "scip (SCIP bundled in OR-Tools): the mixed-integer model of docs/mip.md, min_time and min_cost "
                   "(C_local and C_quality targets) and max_compute (C_quality; C_local under the linear_v1 or no "
                   "replica penalty), certified by the branch and bound; exhaustive: every plan scored.")
@time_limit_option("Seconds of wall-clock for the whole command (search and explanation); when reached, "
                   "print the best plan found and its gap to a proven bound (exit 0), or exit 3 if none was found.")
@json_option("Write the full result as JSON to standard output (non-finite numbers as null; errors as "
             "{\"error\": ...}).")
@click.option("--write-model", "model_path", type=click.Path(path_type=Path),
              help="Also write the mixed-integer model to FILE (.lp or .mps) for a person to read.")
@click.option("--report", "report_path", type=click.Path(path_type=Path),
              help="Also write a report to FILE (.html, self-contained with plots; or .md).")
@click.option("--robust", is_flag=True,
              help="Optimise the worst case over the scenarios of the uncertainty files (each input at the ends "
                   "of its published interval, one at a time; docs/robust.md) and print the robust plan, the "
                   "nominal plan and each plan under each scenario. Solvers bnb and exhaustive.")
@click.option("--quantile", type=float, default=None,
              help="With --robust: optimise the value at least this fraction of the scenarios meet (0 < Q <= 1; "
                   "1 = the worst case) instead of the worst case.")
@set_option
def solve(instance_path: Path, objective: str | None, solver: str, time_limit_s: float | None, as_json: bool,
          model_path: Path | None, report_path: Path | None, robust: bool, quantile: float | None,
          overrides: tuple[str, ...]) -> None:
    """Find the optimal plan of an INSTANCE and prove it optimal.

    Exit 0 when a plan is returned (optimal, or the best within --time-limit with its gap),
    1 when no plan meets every limit (with the reason), 2 on bad input, 3 when the time
    limit came before any plan was found, 4 on an internal error.
    """
    import time
    from contextlib import nullcontext

    from planner.objectives import objective_named
    from planner.solve import SOLVERS, UnsupportedObjective, solve as run_solve
    from planner.solvers import UnsupportedBySolver
    start = time.perf_counter()
    instance, _ = load_instance_or_exit(instance_path, overrides)
    objective = objective_named(objective or instance.objective)      # the key click and the schema checked
    if solver not in SOLVERS:
        raise BadInput(f"--solver: unknown solver {solver!r}; available: {', '.join(SOLVERS)}")
    check_report(report_path)
    deadline = start + time_limit_s if time_limit_s is not None else None
    if quantile is not None and not robust:
        raise BadInput("--quantile: needs --robust")
    if robust and model_path is not None:
        raise BadInput("--write-model: not with --robust (no robust mixed-integer model is built; docs/robust.md)")
    if robust:
        _solve_robust(instance_path, objective, solver, deadline, quantile, as_json, report_path, overrides)
    try:
        if model_path is not None:
            from planner.mip.export import UnknownFormat, model_paths, write_model
            from planner.files import OutputPathError
            if instance.fleet.is_mixed:      # a fleet of pools: the one model of planner.mip.pools
                from planner.solvers.mixed_mip import write_pools_model as write_model
            try:
                model_paths(instance, model_path)        # checked before any work
                written = write_model(instance, objective, model_path)
            except (UnsupportedBySolver, UnknownFormat, OutputPathError) as err:
                raise BadInput(f"--write-model: {err}") from None
            for path in written:
                click.echo(f"model written to {path}", err=True)
        status = nullcontext()
        if sys.stderr.isatty():      # a spinner only where someone watches (rich is not loaded otherwise)
            from planner.present.render import make_console
            console = make_console(stderr=True)
            if console.is_terminal:
                status = console.status(f"solving ({solver})", spinner="dots")
        with status:
            result = run_solve(instance, objective=objective, solver=solver, time_limit_s=time_limit_s,
                               deadline=deadline, explain_envelope=True)
    except UnsupportedObjective as err:
        raise BadInput(f"--objective: {err}") from None
    except UnsupportedBySolver as err:
        raise BadInput(f"--solver: {err}") from None
    except InputError as err:      # the instance cannot be solved for this objective (e.g. --objective)
        raise BadInput.from_error(err, str(instance_path)) from None
    if as_json:
        echo_json(result.to_dict())
    else:
        from planner.present.render import make_console, render_solve
        render_solve(result, make_console())
    if report_path is not None:
        from planner.present.report import solve_report
        write_output("--report", report_path, lambda tmp: solve_report(instance, result, tmp, command_line()))
        click.echo(f"report written to {report_path}", err=True)
    sys.exit(solve_exit_code(result.status, result.plan is not None))


def _solve_robust(instance_path: Path, objective: str | None, solver: str, deadline: float | None,
                  quantile: float | None, as_json: bool, report_path: Path | None, overrides: tuple[str, ...]) -> None:
    """`solve --robust` (planner.questions.robust): exits like `solve`, by the robust answer."""
    from planner.present.robust import regret_lines, robust_report
    from planner.questions.robust import robust_solve
    from planner.solvers import UnsupportedBySolver
    instance, raw = load_instance_or_exit(instance_path, overrides)
    try:
        result = robust_solve(instance, raw, objective, solver, deadline=deadline, quantile=quantile)
    except UnsupportedBySolver as err:
        raise BadInput(f"--solver: {err}") from None
    except InputError as err:
        raise BadInput.from_error(err, str(instance_path)) from None
    if as_json:
        echo_json(result.to_dict())
    else:
        from planner.present.render import make_console, render_solve
        console = make_console()
        console.print(f"ROBUST: {result.statistic.describe()} (docs/robust.md)")
        render_solve(result.robust, console)
        console.print("")
        console.print("NOMINAL: the instance as given")
        render_solve(result.nominal, console)
        console.print("")
        console.print("Each plan under each scenario:")
        for line in regret_lines(result):
            console.print(line)
    if report_path is not None:
        write_output("--report", report_path, lambda tmp: robust_report(instance, result, tmp, command_line()))
        click.echo(f"report written to {report_path}", err=True)
    sys.exit(solve_exit_code(result.robust.status, result.robust.plan is not None))
