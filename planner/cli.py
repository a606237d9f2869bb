"""The `dtplan` command line: a thin click layer over the library.

Exit codes: 0 success (a plan that meets every limit), 1 a plan or instance that
breaks a limit, 2 bad input (every problem listed, no traceback).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click
from rich.table import Table

from planner.schema.errors import InputError

EXIT_OK, EXIT_INFEASIBLE, EXIT_BAD_INPUT = 0, 1, 2


class BadInput(click.ClickException):
    """Bad input: printed without a traceback, exit code 2."""

    exit_code = EXIT_BAD_INPUT

    def show(self, file=None) -> None:  # noqa: D102 - click API
        click.echo(self.format_message(), err=True)


def _load(loader, path: Path):
    try:
        return loader(path)
    except InputError as err:
        raise BadInput(str(err)) from None


def _check_report(path: Path | None) -> None:
    """A --report path with a suffix the report writer knows (checked before any solving)."""
    if path is not None:
        from planner.present.report import UnknownReportFormat, check_report_path
        try:
            check_report_path(path)
        except UnknownReportFormat as err:
            raise BadInput(f"--report: {err}") from None


def _check_plan(instance, plan, plan_path: Path) -> None:
    from planner.schema.plan import check_plan_against
    problems = check_plan_against(instance, plan)
    if problems:
        raise BadInput(str(InputError(problems, source=str(plan_path))))


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="dtplan")
def main() -> None:
    """dtplan: plan decentralized LLM training runs against an exact cost model."""


@main.command()
@click.argument("instance_path", metavar="INSTANCE", type=click.Path(path_type=Path))
def validate(instance_path: Path) -> None:
    """Check an instance file: every problem at once, with its JSON path."""
    from planner.evaluate import max_days, setting_from_instance
    from planner.schema.instance import load_instance
    instance = _load(load_instance, instance_path)
    s = setting_from_instance(instance)
    days, source = max_days(instance)
    hw = instance.hardware
    click.echo(f"{instance_path}: valid")
    if instance.search.params:
        click.echo("  model      candidate sizes " + ", ".join(f"{p / 1e9:,.4g}B" for p in instance.search.params)
                   + " (dense; search.params)")
    else:
        click.echo(f"  model      {s.params / 1e9:,.1f}B parameters" + (f" ({s.active_params / 1e9:,.1f}B active)" if s.is_moe else ""))
    click.echo(f"  fleet      {instance.fleet.nodes:,} x {hw.name} ({', '.join(hw.precisions)}; "
               f"{hw.node_hbm_gb:,.0f} GB, {hw.h100_equivalents:.2f} H100-eq per node)")
    click.echo(f"  target     {s.target:.3e} FLOP ({s.target_kind})")
    click.echo(f"  max days   {days:,.1f} ({source})")
    a = s.assumptions
    click.echo(f"  profile    {a.profile} (scenario {a.scenario}, straggler {a.straggler}, MFU {a.mfu})")


@main.command()
@click.argument("instance_path", metavar="INSTANCE", type=click.Path(path_type=Path))
@click.argument("plan_path", metavar="PLAN", type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Write the full result as JSON to standard output.")
def evaluate(instance_path: Path, plan_path: Path, as_json: bool) -> None:
    """Score one fixed PLAN of an INSTANCE: the full cost breakdown.

    Exit 0 when the plan meets every limit, 1 when it breaks one, 2 on bad input.
    """
    from planner.evaluate import evaluate as run_evaluation
    from planner.schema.instance import load_instance
    from planner.schema.plan import load_plan
    from planner.present.render import make_console, render_evaluation
    instance = _load(load_instance, instance_path)
    plan = _load(load_plan, plan_path)
    _check_plan(instance, plan, plan_path)
    result = run_evaluation(instance, plan)
    if as_json:
        click.echo(json.dumps(result.to_dict(), indent=2, default=_json_default))
    else:
        render_evaluation(result, make_console())
    sys.exit(EXIT_OK if result.feasible else EXIT_INFEASIBLE)


@main.command()
@click.argument("instance_path", metavar="INSTANCE", type=click.Path(path_type=Path))
@click.option("--objective", type=click.Choice(["min_time", "max_compute", "min_cost"]),
              help="Override the instance's objective.")
@click.option("--solver", default="bnb", show_default=True,
              help="bnb: exact branch and bound over the evaluator (the default, fastest); highs, scip: the "
                   "mixed-integer model (docs/mip.md), certified by the branch and bound; exhaustive: every plan scored.")
@click.option("--time-limit", "time_limit_s", type=click.FloatRange(min=0, min_open=True),
              help="Seconds; when reached, print the best plan found and its gap to a proven bound.")
@click.option("--json", "as_json", is_flag=True, help="Write the full result as JSON to standard output.")
@click.option("--write-model", "model_path", type=click.Path(path_type=Path),
              help="Also write the mixed-integer model to FILE (.lp, .mps or .cip) for a person to read.")
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
    instance = _load(load_instance, instance_path)
    if solver not in SOLVERS:
        raise BadInput(f"--solver: unknown solver {solver!r}; available: {', '.join(SOLVERS)}")
    _check_report(report_path)
    try:
        if model_path is not None:
            from planner.mip.export import UnknownFormat, write_model
            try:
                written = write_model(instance, objective or instance.objective, model_path)
            except (UnsupportedBySolver, UnknownFormat) as err:
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
        click.echo(json.dumps(result.to_dict(), indent=2, default=_json_default))
    else:
        render_solve(result, make_console())
    if report_path is not None:
        from planner.present.report import solve_report
        click.echo(f"report written to {solve_report(instance, result, report_path)}", err=True)
    sys.exit(EXIT_INFEASIBLE if result.status == "infeasible" or result.plan is None else EXIT_OK)


@main.command()
@click.argument("instance_path", metavar="[INSTANCE]", required=False, type=click.Path(path_type=Path))
@click.option("--target-flop", type=click.FloatRange(min=0, min_open=True), help="C_target in FLOP (training.target_flop).")
@click.option("--target-kind", type=click.Choice(["c_local", "c_quality"]), help="training.target_kind.")
@click.option("--hardware", help="Hardware preset id (fleet.hardware; `dtplan hardware` lists them).")
@click.option("--nodes", type=click.IntRange(min=1), help="Nodes available (fleet.nodes).")
@click.option("--params", type=click.FloatRange(min=1e6), help="Model parameters (model.params). Short form "
              "default: the compute-optimal size for the target.")
@click.option("--wan-mbps", type=click.FloatRange(min=0, min_open=True), help="WAN up and down, Mb/s.")
@click.option("--rtt-ms", type=click.FloatRange(min=0), help="WAN round-trip time, ms.")
@click.option("--max-days", help="Longest run in days, or 'growth': derived from the three growth rates "
              "(limits.max_days; COST_MODEL.md section 8).")
@click.option("--growth-hardware", type=click.FloatRange(min=1, min_open=True),
              help="Hardware price-performance growth, x/year (limits.growth_x_per_year.hardware).")
@click.option("--growth-software", type=click.FloatRange(min=1, min_open=True),
              help="Algorithmic efficiency growth, x/year (limits.growth_x_per_year.software).")
@click.option("--growth-investment", type=click.FloatRange(min=1, min_open=True),
              help="Investment growth, x/year (limits.growth_x_per_year.investment).")
@click.option("--budget-usd", type=click.FloatRange(min=0, min_open=True), help="Spending cap (limits.budget_usd).")
@click.option("--goodput", type=click.FloatRange(min=0, max=1, min_open=True),
              help="Fraction of wall-clock spent training, (0, 1]: downtime, restarts, churn (fleet.goodput).")
@click.option("--json", "as_json", is_flag=True, help="Write the full result as JSON to standard output.")
@click.option("--report", "report_path", type=click.Path(path_type=Path),
              help="Also write a report to FILE (.html, self-contained with plots; or .md).")
def feasible(instance_path: Path | None, target_flop, target_kind, hardware, nodes, params, wan_mbps, rtt_ms,
             max_days, growth_hardware, growth_software, growth_investment, budget_usd, goodput, as_json: bool,
             report_path: Path | None) -> None:
    """Can the target be reached within the limits? If not, which limits bind together and
    the smallest single change that makes it feasible (fewest nodes, lowest WAN bandwidth,
    shortest duration, lowest budget, goodput needed), each found by re-solving and verified.

    Give an INSTANCE file, flags for the common case (e.g. --target-flop 1e27 --hardware
    16xH100-SXM --nodes 2000 --wan-mbps 100 --rtt-ms 100 --max-days 548), or both (the
    flags then override the file). Exit 0 feasible, 1 infeasible, 2 bad input.
    """
    from contextlib import nullcontext

    from planner.questions.feasible import feasible as run_feasible
    from planner.present.render import make_console, render_feasibility
    from planner.schema.strict import read_json
    _check_report(report_path)
    if instance_path is not None:
        raw, problems = read_json(instance_path)
        if problems:
            raise BadInput(str(InputError(problems, str(instance_path))))
        source = str(instance_path)
    else:
        missing = [f for f, v in (("--target-flop", target_flop), ("--hardware", hardware), ("--nodes", nodes))
                   if v is None]
        if missing:
            raise BadInput(f"feasible: give an INSTANCE file or at least {', '.join(missing)}")
        raw, source = {"name": "dtplan feasible (command-line flags)", "model": {}, "training": {},
                       "fleet": {}, "network": {"wan": {}}, "limits": {}}, "<flags>"
    notes = []
    if not isinstance(raw, dict):
        raise BadInput(f"{source}: an instance must be a JSON object")
    sections = {k: raw.setdefault(k, {}) for k in ("model", "training", "fleet", "network", "limits")}
    if not isinstance(sections["network"], dict):
        raise BadInput(f"{source}: network: must be an object")
    wan = sections["network"].setdefault("wan", {})
    for section, key, value in (("training", "target_flop", target_flop), ("training", "target_kind", target_kind),
                                ("fleet", "hardware", hardware), ("fleet", "nodes", nodes),
                                ("model", "params", params), ("limits", "budget_usd", budget_usd),
                                ("fleet", "goodput", goodput)):
        if value is not None:
            sections[section][key] = value
    if wan_mbps is not None:
        wan.update(up_mbps=wan_mbps, down_mbps=wan_mbps)
    if rtt_ms is not None:
        wan["rtt_ms"] = rtt_ms
    for key, value in (("hardware", growth_hardware), ("software", growth_software),
                       ("investment", growth_investment)):
        if value is not None:
            sections["limits"].setdefault("growth_x_per_year", {})[key] = value
    if max_days is not None:
        try:
            sections["limits"]["max_days"] = max_days if max_days == "growth" else float(max_days)
        except ValueError:
            raise BadInput(f"--max-days: must be a number of days or 'growth', got {max_days!r}") from None
    if instance_path is None and params is None:
        from planner.cost.assumptions import Assumptions
        from planner.cost.chinchilla import optimal_allocation
        size, _ = optimal_allocation(float(target_flop), Assumptions())
        sections["model"]["params"] = float(f"{float(size):.3g}")
        notes.append(f"model: {sections['model']['params'] / 1e9:,.4g}B parameters, the compute-optimal size "
                     f"for {target_flop:.3g} FLOP (--params to choose another)")
    try:
        from planner.schema.instance import parse_instance
        instance = parse_instance(raw, source)
    except InputError as err:
        raise BadInput(str(err)) from None
    console, progress_console = make_console(), make_console(stderr=True)
    with progress_console.status("checking feasibility", spinner="dots") if progress_console.is_terminal \
            else nullcontext() as status:
        progress = (lambda message: status.update(f"feasibility: {message}")) if status is not None else None
        result = run_feasible(raw, source, progress=progress)
    if as_json:
        out = result.to_dict()
        out["notes"] = notes
        click.echo(json.dumps(out, indent=2, default=_json_default))
    else:
        render_feasibility(result, console, notes)
    if report_path is not None:
        from planner.present.report import feasible_report
        click.echo(f"report written to {feasible_report(instance, result, report_path, notes)}", err=True)
    sys.exit(EXIT_OK if result.feasible else EXIT_INFEASIBLE)



@main.command()
def hardware() -> None:
    """List the hardware presets of models/hardware/."""
    from planner.schema.catalog import hardware_ids, load_hardware
    from planner.present.render import make_console
    table = Table("id", "node", "precisions", "peak fp16 PFLOP/s", "HBM GB", "H100-eq", "$ per node")
    table.columns[0].no_wrap = True
    for hid in hardware_ids():
        hw = load_hardware(hid)
        table.add_row(hid, hw.name, ",".join(hw.precisions), f"{hw.node_peak_flops('fp16') / 1e15:.3f}",
                      f"{hw.node_hbm_gb:,.0f}", f"{hw.h100_equivalents:.2f}", f"{hw.node_price_usd:,.0f}")
    make_console().print(table)


@main.command()
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
    instance = _load(load_instance, instance_path)
    try:
        from planner.present.plots import UnknownPlotFormat, check_plot_path
        for path in plot_paths:
            check_plot_path(path)
    except UnknownPlotFormat as err:
        raise BadInput(f"--plot: {err}") from None
    _check_report(report_path)
    try:
        ids = parse_hardware_list(hardware_list)
    except InputError as err:
        raise BadInput(str(err)) from None
    raw = json.loads(instance_path.read_text())     # vary the file's own data (it parsed above)
    start = time.perf_counter()
    try:
        with _progress_after(1.0, "solving") as progress:
            rows = run_compare(raw, ids, objective=objective, progress=progress)
    except InputError as err:
        raise BadInput(str(InputError(err.problems, source=str(instance_path)))) from None
    elapsed = time.perf_counter() - start
    objective = objective or instance.objective
    if plot_paths:
        from planner.present.plots import comparison_plot
        try:
            written = comparison_plot(rows, objective, list(plot_paths), title=instance.name)
        except OSError as err:
            raise BadInput(f"--plot: cannot write {err.filename or 'the plot'}: {err.strerror or err}") from None
        for path in written:
            click.echo(f"plot written to {path}", err=True)
    if as_json:
        click.echo(json.dumps([row.to_dict() for row in rows], indent=2, default=_json_default))
    else:
        render_comparison(rows, objective, make_console(), title=instance.name, elapsed_s=elapsed)
    if report_path is not None:
        from planner.present.report import compare_report
        click.echo(f"report written to {compare_report(instance, rows, objective, report_path)}", err=True)
    sys.exit(EXIT_OK if any(row.feasible for row in rows) else EXIT_INFEASIBLE)


class _progress_after:
    """A rich progress bar on stderr that appears only once the work has run `delay_s` seconds,
    and never when stderr is not a terminal. Used as `with ... as progress:`; `progress(done,
    total, label)` reports."""

    def __init__(self, delay_s: float, verb: str):
        from rich.console import Console
        self.console = Console(stderr=True)
        self.delay_s, self.verb = delay_s, verb
        self.bar = self.task = self.timer = None

    def __enter__(self):
        if self.console.is_terminal:
            import threading
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
            self.bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                TimeElapsedColumn(), console=self.console, transient=True)
            self.task = self.bar.add_task(self.verb, total=None)
            self.timer = threading.Timer(self.delay_s, self.bar.start)
            self.timer.daemon = True
            self.timer.start()
        return self

    def __call__(self, done: int, total: int, label: str) -> None:
        if self.bar is not None:
            self.bar.update(self.task, completed=done, total=total,
                            description=f"{self.verb} {label}" if label else "done")

    def __exit__(self, *exc) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer.join()
            self.bar.stop()


def _json_default(value):
    if isinstance(value, float) and value != value:
        return None
    return str(value)

