"""`dtplan feasible`: can the target be reached, and what would it take."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from planner.cli.common import EXIT_INFEASIBLE, EXIT_OK, BadInput, check_report, json_default
from planner.schema.errors import InputError

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
@click.option("--monte-carlo", "monte_carlo", type=click.IntRange(min=1), metavar="N",
              help="Instead: the probability the target is reachable and the percentiles of days, over N draws "
                   "of the uncertain inputs of models/assumptions/uncertainty.json (scaling-law fit, MFU, quality "
                   "scenario; drawn only inside their published intervals; --seed, default 0).")
@click.option("--seed", type=int, default=0, help="Random seed of --monte-carlo (draw i depends on seed and i).")
def feasible(instance_path: Path | None, target_flop, target_kind, hardware, nodes, params, wan_mbps, rtt_ms,
             max_days, growth_hardware, growth_software, growth_investment, budget_usd, goodput, as_json: bool,
             report_path: Path | None, monte_carlo: int | None, seed: int) -> None:
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
    check_report(report_path)
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
    if monte_carlo is not None:
        from planner.cli.sweep import feasible_monte_carlo
        feasible_monte_carlo(raw, source, monte_carlo, seed, None, as_json)
    console, progress_console = make_console(), make_console(stderr=True)
    with progress_console.status("checking feasibility", spinner="dots") if progress_console.is_terminal \
            else nullcontext() as status:
        progress = (lambda message: status.update(f"feasibility: {message}")) if status is not None else None
        result = run_feasible(raw, source, progress=progress)
    if as_json:
        out = result.to_dict()
        out["notes"] = notes
        click.echo(json.dumps(out, indent=2, default=json_default))
    else:
        render_feasibility(result, console, notes)
    if report_path is not None:
        from planner.present.report import feasible_report
        click.echo(f"report written to {feasible_report(instance, result, report_path, notes)}", err=True)
    sys.exit(EXIT_OK if result.feasible else EXIT_INFEASIBLE)
