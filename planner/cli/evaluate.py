"""`dtplan validate`, `dtplan evaluate` and `dtplan hardware`: one instance, one plan, the presets."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from planner.cli.common import (EXIT_INFEASIBLE, EXIT_OK, BadInput, check_plan, check_report, command_line, echo_json,
                                json_option, load_instance_or_exit, load_or_exit, set_option, write_output)

@click.command()
@click.argument("instance_path", metavar="INSTANCE", type=click.Path(path_type=Path))
@json_option("Write the summary as JSON to standard output (errors as {\"error\": ...}).")
@set_option
def validate(instance_path: Path, as_json: bool, overrides: tuple[str, ...]) -> None:
    """Check an instance file: every problem at once, with its JSON path. Exit 0 valid, 2 not."""
    from planner.setting import max_days, setting_from_instance
    instance = _preflight_or_exit(instance_path, overrides)
    s = setting_from_instance(instance)
    days, source = max_days(instance)
    if instance.fleet.is_mixed:            # a fleet of pools: every pool listed (planner/fleet)
        from planner.fleet.present import fleet_label
        _validate_pools(instance_path, instance, s, days, source, as_json, fleet_label(instance))
        return
    hw = instance.hardware
    a = s.assumptions
    if as_json:
        echo_json({"valid": True, "source": str(instance_path), "name": instance.name,
                   "params": None if instance.search.params else s.params,
                   "active_params": None if instance.search.params else s.active_params,
                   "candidate_params": list(instance.search.params or []),
                   "hardware": hw.id, "nodes": instance.fleet.nodes, "precisions": list(hw.precisions),
                   "node_hbm_gb": hw.node_hbm_gb, "h100_equivalents_per_node": hw.h100_equivalents,
                   "target_flop": s.target, "target_kind": s.target_kind, "max_days": days,
                   "max_days_source": source, "objective": instance.objective,
                   "assumptions": {"profile": a.profile, "scenario": a.scenario, "straggler": a.straggler,
                                   "mfu": a.mfu}})
        return
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
    click.echo(f"  profile    {a.profile} (scenario {a.scenario}, straggler {a.straggler}, MFU {a.mfu})")


def _preflight_or_exit(instance_path: Path, overrides: tuple[str, ...]):
    """The instance if `dtplan solve` would take it; else BadInput with every problem at once
    (the file's, the schema's, and the solve path's: planner.questions.preflight)."""
    from planner.cli.common import apply_overrides, read_instance_data, warn_ignored_fields
    from planner.questions.preflight import preflight
    from planner.schema.errors import InputError
    from planner.schema.strict import MAX_DEPTH, NESTING_MESSAGE, nesting
    raw, problems = read_instance_data(instance_path)
    raw = apply_overrides(raw, overrides)
    if nesting(raw) > MAX_DEPTH:
        from planner.schema.errors import Problem
        raise BadInput.from_error(InputError([Problem("<root>", NESTING_MESSAGE)], str(instance_path)))
    instance, found = preflight(raw, str(instance_path))
    if problems or found:
        raise BadInput.from_error(InputError(list(problems) + found, str(instance_path)))
    warn_ignored_fields(instance, str(instance_path))
    return instance


def _validate_pools(instance_path: Path, instance, s, days: float, source: str, as_json: bool, label: str) -> None:
    """`dtplan validate` of a fleet of pools: the summary with one entry per pool."""
    fleet = instance.fleet
    pools = [{"pool": name, "hardware": p.hardware.id, "count": p.count, "precisions": list(p.hardware.precisions),
              "node_hbm_gb": p.hardware.node_hbm_gb, "node_price_usd": p.priced_hardware.node_price_usd,
              "site": p.site} for name, p in zip(fleet.pool_labels(), fleet.pools)]
    if as_json:
        echo_json({"valid": True, "source": str(instance_path), "name": instance.name,
                   "params": None if instance.search.params else s.params, "nodes": fleet.nodes, "pools": pools,
                   "target_flop": s.target, "target_kind": s.target_kind, "max_days": days,
                   "max_days_source": source, "objective": instance.objective})
        return
    click.echo(f"{instance_path}: valid")
    click.echo(f"  fleet      {label}")
    click.echo(f"  target     {s.target:.3e} FLOP ({s.target_kind})")
    click.echo(f"  max days   {days:,.1f} ({source})")


@click.command()
@click.argument("instance_path", metavar="INSTANCE", type=click.Path(path_type=Path))
@click.argument("plan_path", metavar="PLAN", type=click.Path(path_type=Path))
@json_option("Write the full result as JSON to standard output (non-finite numbers as null; errors as "
             "{\"error\": ...}).")
@click.option("--report", "report_path", type=click.Path(path_type=Path),
              help="Also write a report to FILE (.html, self-contained with plots; or .md).")
@set_option
def evaluate(instance_path: Path, plan_path: Path, as_json: bool, report_path: Path | None,
             overrides: tuple[str, ...]) -> None:
    """Score one fixed PLAN of an INSTANCE: the full cost breakdown.

    Exit 0 when the plan meets every limit, 1 when it breaks one, 2 on bad input.
    """
    from planner.evaluate import evaluate as run_evaluation
    from planner.schema.plan import load_plan
    instance, _ = load_instance_or_exit(instance_path, overrides)
    plan = load_or_exit(load_plan, plan_path)
    check_plan(instance, plan, plan_path)
    check_report(report_path)
    result = run_evaluation(instance, plan)
    if as_json:
        echo_json(result.to_dict())
    else:
        from planner.present.render import make_console, render_evaluation
        render_evaluation(result, make_console())
    if report_path is not None:
        from planner.present.report import evaluate_report
        write_output("--report", report_path, lambda tmp: evaluate_report(instance, result, tmp, command_line()))
        click.echo(f"report written to {report_path}", err=True)
    sys.exit(EXIT_OK if result.feasible else EXIT_INFEASIBLE)


def hardware_rows() -> list[dict]:
    """Every hardware preset as a dict of the figures `dtplan hardware` shows (BadInput when none is found)."""
    from planner.schema.catalog import MODELS_DIR_ENV, hardware_ids, load_hardware, models_dir
    ids = hardware_ids()
    if not ids:
        raise BadInput(f"no hardware presets found: {models_dir() / 'hardware'} holds no *.json file "
                       f"(is ${MODELS_DIR_ENV} set to the wrong folder, or is the install missing its presets?)")
    rows = []
    for hid in ids:
        hw = load_hardware(hid)
        rows.append({"id": hid, "name": hw.name, "accelerator": hw.accelerator,
                     "accelerators_per_node": hw.accelerators_per_node, "precisions": list(hw.precisions),
                     "node_peak_fp16_pflops": hw.node_peak_flops("fp16") / 1e15, "node_hbm_gb": hw.node_hbm_gb,
                     "h100_equivalents": hw.h100_equivalents, "node_price_usd": hw.node_price_usd})
    return rows


@click.command()
@json_option("Write the presets as a JSON list to standard output.")
def hardware(as_json: bool) -> None:
    """List the hardware presets of models/hardware/."""
    from rich.table import Table

    from planner.present.render import make_console, print_table
    rows = hardware_rows()
    if as_json:
        echo_json(rows)
        return
    table = Table("id", "node", "precisions", "peak fp16 PFLOP/s", "HBM GB", "H100-eq", "$ per node")
    table.columns[0].no_wrap = True
    for row in rows:
        table.add_row(row["id"], row["name"], ",".join(row["precisions"]), f"{row['node_peak_fp16_pflops']:.3f}",
                      f"{row['node_hbm_gb']:,.0f}", f"{row['h100_equivalents']:.2f}", f"{row['node_price_usd']:,.0f}")
    print_table(table, make_console())
