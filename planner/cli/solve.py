"""`dtplan solve`: the optimal plan of an instance."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from planner.cli.common import EXIT_INFEASIBLE, EXIT_OK, BadInput, check_report, json_default, load_or_exit
from planner.schema.errors import InputError

@click.command()
@click.argument("instance_path", metavar="INSTANCE", type=click.Path(path_type=Path))
@click.option("--objective", type=click.Choice(["min_time", "max_compute", "min_cost"]),
              help="Override the instance's objective.")
@click.option("--solver", default="bnb", show_default=True,
              help="bnb: exact branch and bound over the evaluator (the default, fastest); highs (HiGHS via Pyomo), "
                   "scip (SCIP bundled in OR-Tools): the mixed-integer model of docs/mip.md, min_time and min_cost "
                   "of C_local targets, certified by the branch and bound; exhaustive: every plan scored.")
@click.option("--time-limit", "time_limit_s", type=click.FloatRange(min=0, min_open=True),
              help="Seconds; when reached, print the best plan found and its gap to a proven bound.")
@click.option("--json", "as_json", is_flag=True, help="Write the full result as JSON to standard output.")
@click.option("--write-model", "model_path", type=click.Path(path_type=Path),
              help="Also write the mixed-integer model to FILE (.lp or .mps) for a person to read.")
@click.option("--report", "report_path", type=click.Path(path_type=Path),
              help="Also write a report to FILE (.html, self-contained with plots; or .md).")
def solve(instance_path: Path, objective: str | None, solver: str, time_limit_s: float | None, as_json: bool,
          model_path: Path | None, report_path: Path | None) -> None:
    """Find the optimal plan of an INSTANCE and prove it optimal.

    Exit 0 when a plan is returned (optimal, or the best within --time-limit with its gap),
    1 when no plan meets every limit (with the reason), 2 on bad input.
    """
    from contextlib import nullcontext

    from planner.schema.instance import load_instance
    from planner.present.render import make_console, render_solve
    from planner.solve import SOLVERS, UnsupportedObjective, solve as run_solve
    from planner.solvers import UnsupportedBySolver
    instance = load_or_exit(load_instance, instance_path)
    if solver not in SOLVERS:
        raise BadInput(f"--solver: unknown solver {solver!r}; available: {', '.join(SOLVERS)}")
    check_report(report_path)
    try:
        if model_path is not None:
            from planner.mip.export import UnknownFormat, model_paths, write_model
            from planner.present.output import OutputPathError
            try:
                model_paths(instance, model_path)        # checked before any work
                written = write_model(instance, objective or instance.objective, model_path)
            except (UnsupportedBySolver, UnknownFormat, OutputPathError) as err:
                raise BadInput(f"--write-model: {err}") from None
            for path in written:
                click.echo(f"model written to {path}", err=True)
        console = make_console(stderr=True)
        with console.status(f"solving ({solver})", spinner="dots") if console.is_terminal else nullcontext():
            result = run_solve(instance, objective=objective, solver=solver, time_limit_s=time_limit_s)
    except UnsupportedObjective as err:
        raise BadInput(f"--objective: {err}") from None
    except UnsupportedBySolver as err:
        raise BadInput(f"--solver: {err}") from None
    except InputError as err:      # the instance cannot be solved for this objective (e.g. --objective)
        raise BadInput(str(InputError(err.problems, source=str(instance_path)))) from None
    if as_json:
        click.echo(json.dumps(result.to_dict(), indent=2, default=json_default))
    else:
        render_solve(result, make_console())
    if report_path is not None:
        from planner.present.report import solve_report
        click.echo(f"report written to {solve_report(instance, result, report_path)}", err=True)
    sys.exit(EXIT_INFEASIBLE if result.status == "infeasible" or result.plan is None else EXIT_OK)
