"""`dtplan validate`, `dtplan evaluate` and `dtplan hardware`: one instance, one plan, the presets."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from planner.cli.common import EXIT_INFEASIBLE, EXIT_OK, BadInput, check_plan, json_default, load_or_exit

@click.command()
@click.argument("instance_path", metavar="INSTANCE", type=click.Path(path_type=Path))
def validate(instance_path: Path) -> None:
    """Check an instance file: every problem at once, with its JSON path."""
    from planner.evaluate import max_days, setting_from_instance
    from planner.schema.instance import load_instance
    instance = load_or_exit(load_instance, instance_path)
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


@click.command()
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
    instance = load_or_exit(load_instance, instance_path)
    plan = load_or_exit(load_plan, plan_path)
    check_plan(instance, plan, plan_path)
    result = run_evaluation(instance, plan)
    if as_json:
        click.echo(json.dumps(result.to_dict(), indent=2, default=json_default))
    else:
        render_evaluation(result, make_console())
    sys.exit(EXIT_OK if result.feasible else EXIT_INFEASIBLE)


@click.command()
def hardware() -> None:
    """List the hardware presets of models/hardware/."""
    from rich.table import Table

    from planner.present.render import make_console
    from planner.schema.catalog import MODELS_DIR_ENV, hardware_ids, load_hardware, models_dir
    ids = hardware_ids()
    if not ids:
        raise BadInput(f"no hardware presets found: {models_dir() / 'hardware'} holds no *.json file "
                       f"(is ${MODELS_DIR_ENV} set to the wrong folder, or is the install missing its presets?)")
    table = Table("id", "node", "precisions", "peak fp16 PFLOP/s", "HBM GB", "H100-eq", "$ per node")
    table.columns[0].no_wrap = True
    for hid in ids:
        hw = load_hardware(hid)
        table.add_row(hid, hw.name, ",".join(hw.precisions), f"{hw.node_peak_flops('fp16') / 1e15:.3f}",
                      f"{hw.node_hbm_gb:,.0f}", f"{hw.h100_equivalents:.2f}", f"{hw.node_price_usd:,.0f}")
    make_console().print(table)
