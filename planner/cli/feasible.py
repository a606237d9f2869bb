"""`dtplan feasible`: can the target be reached, and what would it take."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import click

from planner.cli.common import (EXIT_OK, BadInput, apply_overrides, check_report, command_line, echo_json, json_option,
                                parse_or_exit, read_instance_data, set_field, set_option, solve_exit_code,
                                time_limit_option, write_output)
from planner.schema.errors import InputError, Problem
from planner.schema.limits import MAX_FLOP

@click.command()
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
              "(limits.max_days; docs/cost_model.md section 8).")
@click.option("--growth-hardware", type=click.FloatRange(min=1, min_open=True),
              help="Hardware price-performance growth, x/year (limits.growth_x_per_year.hardware).")
@click.option("--growth-software", type=click.FloatRange(min=1, min_open=True),
              help="Algorithmic efficiency growth, x/year (limits.growth_x_per_year.software).")
@click.option("--growth-investment", type=click.FloatRange(min=1, min_open=True),
              help="Investment growth, x/year (limits.growth_x_per_year.investment).")
@click.option("--budget-usd", type=click.FloatRange(min=0, min_open=True), help="Spending cap (limits.budget_usd).")
@click.option("--goodput", type=click.FloatRange(min=0, max=1, min_open=True),
              help="Fraction of wall-clock spent training, (0, 1]: downtime, restarts, churn (fleet.goodput).")
@json_option("Write the full result as JSON to standard output (non-finite numbers as null; errors as "
             "{\"error\": ...}).")
@click.option("--report", "report_path", type=click.Path(path_type=Path),
              help="Also write a report to FILE (.html, self-contained with plots; or .md).")
@click.option("--monte-carlo", "monte_carlo", type=click.IntRange(min=1), metavar="N",
              help="Instead: the probability the target is reachable and the percentiles of days, over N draws "
                   "of the uncertain inputs of models/assumptions/uncertainty/published.json (scaling-law fit, "
                   "MFU, quality scenario; drawn only inside their published intervals; --seed, default 0).")
@click.option("--seed", type=int, default=0, help="Random seed of --monte-carlo (draw i depends on seed and i).")
@click.option("--robust", is_flag=True, help="Instead: reachable under every scenario of the uncertainty files, "
              "some (named) or none, and whether one plan reaches the target under all (docs/robust.md).")
@click.option("--site", help="Fleet of pools: the site (a name of network.sites) where the nodes fixes place a "
              "new pool of each preset. Default: for each preset, the site where the fewest of its nodes are needed.")
@time_limit_option("Seconds of wall-clock for the whole command (the verdict and every fix); fixes not "
                   "searched in time are listed as such. Exit 3 if the verdict itself was not reached.")
@set_option
def feasible(instance_path: Path | None, target_flop, target_kind, hardware, nodes, params, wan_mbps, rtt_ms,
             max_days, growth_hardware, growth_software, growth_investment, budget_usd, goodput, as_json: bool,
             report_path: Path | None, monte_carlo: int | None, seed: int, robust: bool, site: str | None,
             time_limit_s: float | None, overrides: tuple[str, ...]) -> None:
    """Can the target be reached within the limits? If not, which limits bind together and
    the smallest single change that makes it feasible (fewest nodes, lowest WAN bandwidth,
    shortest duration, lowest budget, goodput needed), each found by re-solving and verified,
    each printed as --set options to paste. A fleet of pools gets the fewest nodes of each pool
    and of each preset added as a new pool (at --site, or the cheapest site), each with its cost.

    Give an INSTANCE file, flags for the common case (e.g. --target-flop 1e27 --hardware
    16xH100-SXM --nodes 2000 --wan-mbps 100 --rtt-ms 100 --max-days 548), or both (the
    flags then override the file and --set). Exit 0 feasible, 1 infeasible, 2 bad input,
    3 time limit reached before the verdict, 4 internal error.
    """
    import time
    from contextlib import nullcontext

    from planner.questions.feasible import feasible as run_feasible
    from planner.present.render import make_console, render_feasibility
    start = time.perf_counter()
    check_report(report_path)
    if instance_path is not None:
        raw, file_problems = read_instance_data(instance_path)
        source = str(instance_path)
    else:
        missing = [f for f, v in (("--target-flop", target_flop), ("--hardware", hardware), ("--nodes", nodes))
                   if v is None]
        if missing:
            raise BadInput(f"feasible: give an INSTANCE file or at least {', '.join(missing)}",
                           [Problem(f, "required without an INSTANCE file") for f in missing])
        raw, source, file_problems = {"name": "dtplan feasible (command-line flags)"}, "<flags>", []
    raw = apply_overrides(raw, overrides)
    notes = []
    flags = [("--target-flop", "training.target_flop", target_flop), ("--target-kind", "training.target_kind", target_kind),
             ("--hardware", "fleet.hardware", hardware), ("--nodes", "fleet.nodes", nodes),
             ("--params", "model.params", params), ("--budget-usd", "limits.budget_usd", budget_usd),
             ("--goodput", "fleet.goodput", goodput),
             ("--wan-mbps", "network.wan.up_mbps", wan_mbps), ("--wan-mbps", "network.wan.down_mbps", wan_mbps),
             ("--rtt-ms", "network.wan.rtt_ms", rtt_ms),
             ("--growth-hardware", "limits.growth_x_per_year.hardware", growth_hardware),
             ("--growth-software", "limits.growth_x_per_year.software", growth_software),
             ("--growth-investment", "limits.growth_x_per_year.investment", growth_investment)]
    if max_days is not None:
        try:
            days = max_days if max_days == "growth" else float(max_days)
        except ValueError:
            raise BadInput(f"--max-days: must be a number of days or 'growth', got {max_days!r}",
                           [Problem("--max-days", "must be a number of days or 'growth'")]) from None
        flags.append(("--max-days", "limits.max_days", days))
    for flag, field, value in flags:
        if value is not None:
            set_field(raw, field, value, flag)
    if instance_path is None and params is None and math.isfinite(target_flop) and target_flop <= MAX_FLOP:
        from planner.cost.assumptions import Assumptions
        from planner.cost.chinchilla import optimal_allocation
        size, _ = optimal_allocation(float(target_flop), Assumptions())
        set_field(raw, "model.params", float(f"{float(size):.3g}"), "--params")
        notes.append(f"model: {raw['model']['params'] / 1e9:,.4g}B parameters, the compute-optimal size "
                     f"for {target_flop:.3g} FLOP (--params to choose another)")
    instance = parse_or_exit(raw, source, file_problems)
    _check_site(instance, site)
    if monte_carlo is not None:
        from planner.cli.sweep import feasible_monte_carlo
        feasible_monte_carlo(raw, source, monte_carlo, seed, None, as_json)
    deadline = start + time_limit_s if time_limit_s is not None else None
    if robust:
        from planner.cli.robust import feasible_robust
        feasible_robust(instance, raw, source, as_json, deadline)
    console, progress_console = make_console(), make_console(stderr=True)
    try:
        with progress_console.status("checking feasibility", spinner="dots") if progress_console.is_terminal \
                else nullcontext() as status:
            progress = (lambda message: status.update(f"feasibility: {message}")) if status is not None else None
            result = run_feasible(raw, source, progress=progress, deadline=deadline, site=site)
    except InputError as err:       # e.g. search.params without a target: feasible asks min_time questions
        problems = [p if p.path.startswith("assumptions.constants") else       # constants with no search bound
                    Problem(p.path, f"dtplan feasible asks whether a fixed target is reached in time: {p.message}")
                    for p in err.problems]
        raise BadInput.from_error(InputError(problems, source)) from None
    if as_json:
        out = result.to_dict()
        out["notes"] = notes
        echo_json(out)
    else:
        render_feasibility(result, console, notes)
    if report_path is not None:
        from planner.present.report import feasible_report
        write_output("--report", report_path, lambda tmp: feasible_report(instance, result, tmp, notes, command_line()))
        click.echo(f"report written to {report_path}", err=True)
    sys.exit(EXIT_OK if result.feasible else solve_exit_code(result.result.status, False))


def _check_site(instance, site: str | None) -> None:
    """--site names a site of network.sites, for a fleet of pools only; BadInput otherwise."""
    if site is None:
        return
    if not instance.fleet.is_mixed:
        raise BadInput("--site: only for a fleet of pools (fleet.pools): it places the new pool of the nodes fixes",
                       [Problem("--site", "only for a fleet of pools")])
    names = [s.name for s in instance.network.sites]
    if not names:
        raise BadInput("--site: the instance has no network.sites to place a new pool at (the pools have no "
                       "site, and neither does the new one)", [Problem("--site", "no network.sites")])
    if site not in names:
        raise BadInput(f"--site: {site!r} is not a site of network.sites (sites: {', '.join(names)})",
                       [Problem("--site", "not a site of network.sites")])
