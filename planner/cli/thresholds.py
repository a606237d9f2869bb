"""`dtplan thresholds`: what a registration threshold leaves possible, where it would stop the target,
and which legitimate deployments it catches (issue 15; planner/questions/thresholds.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from planner.cli.common import (EXIT_INFEASIBLE, EXIT_OK, BadInput, apply_overrides, check_output, check_report, dumps,
                                read_instance_data, set_option)
from planner.schema.errors import InputError, Problem

REPORT_CURVE_H100E = (16.0, 8.0, 4.0, 2.0, 1.0)     # the report's compute thresholds (Simulation_Notes.md, scenario 5)
STOP_KINDS = ("compute", "tpp", "memory", "wan")


def _raw_from(instance_path: Path | None, overrides, target_flop, params, wan_mbps, rtt_ms, max_days, budget_usd,
              max_nodes) -> tuple[dict, str]:
    if instance_path is not None:
        raw, problems = read_instance_data(instance_path)
        if problems:
            raise BadInput.from_error(InputError(problems, str(instance_path)))
        if not isinstance(raw, dict):
            raise BadInput(f"{instance_path}: an instance must be a JSON object")
        source = str(instance_path)
    else:
        if target_flop is None:
            raise BadInput("thresholds: give an INSTANCE file or --target-flop")
        raw, source = {"name": "dtplan thresholds (command-line flags)"}, "<flags>"
    apply_overrides(raw, overrides)
    for key in ("model", "training", "fleet", "network", "limits"):
        if not isinstance(raw.setdefault(key, {}), dict):
            raise BadInput(f"{source}: {key}: must be an object")
    if not isinstance(raw["network"].setdefault("wan", {}), dict):
        raise BadInput(f"{source}: network.wan: must be an object")
    if target_flop is not None:          # the flag replaces the instance's target, given as tokens or as FLOP
        raw["training"].pop("tokens", None)
    for section, key, value in (("training", "target_flop", target_flop), ("model", "params", params),
                                ("limits", "budget_usd", budget_usd), ("limits", "max_nodes", max_nodes)):
        if value is not None:
            raw[section][key] = value
    if wan_mbps is not None:
        raw["network"]["wan"].update(up_mbps=wan_mbps, down_mbps=wan_mbps)
    if rtt_ms is not None:
        raw["network"]["wan"]["rtt_ms"] = rtt_ms
    if max_days is not None:
        try:
            raw["limits"]["max_days"] = max_days if max_days == "growth" else float(max_days)
        except ValueError:
            raise BadInput(f"--max-days: must be a number of days or 'growth', got {max_days!r}") from None
    return raw, source


FLAG_FIELDS = {"training.target_flop": "--target-flop", "model.params": "--params", "network.wan.up_mbps": "--wan-mbps",
               "network.wan.down_mbps": "--wan-mbps", "network.wan.rtt_ms": "--rtt-ms", "limits.max_days": "--max-days",
               "limits.budget_usd": "--budget-usd", "limits.max_nodes": "--max-nodes"}


def _activation_memory(raw: dict, source: str, node, th) -> bool:
    """Whether the instance's profile and constants hold activations in memory (the fitted model then leaves
    room for them: planner/questions/thresholds.py `fit_params`)."""
    from planner.questions.thresholds import node_cap, node_instance
    from planner.schema.instance import parse_instance
    try:
        return parse_instance(node_instance(raw, node, th, node_cap(raw), False), source).resolved_assumptions() \
            .activation_memory
    except InputError:
        return False


def _check_instance(raw: dict, source: str, nodes, th, fit: bool, flags: dict[str, str]) -> None:
    """Bad input exits 2 before any solve: the instance must validate with at least one of the nodes
    (a node it does not suit, e.g. no fp8 when search.precisions asks for it, is reported in its row).
    A problem with a field a flag set is named by the flag first (`flags`: field -> flag given)."""
    from planner.questions.thresholds import node_cap, node_instance
    from planner.schema.instance import parse_instance
    first = None
    for node in nodes:
        try:
            parse_instance(node_instance(raw, node, th, node_cap(raw), fit), source)
            return
        except InputError as err:
            first = first or err
    problems = [Problem(flags[p.path], f"{p.path}: {p.message}") if p.path in flags else p for p in first.problems]
    raise BadInput.from_error(InputError(problems, first.source)) from None


@click.command()
@click.argument("instance_path", metavar="[INSTANCE]", required=False, type=click.Path(path_type=Path))
@set_option
@click.option("--compute", type=float, help="Compute threshold, H100-equivalents (dense FP16, 990 TFLOP/s each); "
              "a node above it is caught.")
@click.option("--tpp", type=float, help="Threshold in Total Processing Performance (TFLOP/s x bit length).")
@click.option("--memory", type=float, help="Accelerator-memory threshold per node, GB.")
@click.option("--interconnect", type=float, help="Chip-to-chip bandwidth cap, GB/s: faster chips are excluded.")
@click.option("--wan-cap", type=float, help="Bandwidth cap on each node's WAN link, Mb/s.")
@click.option("--accelerator", "accelerator_ids", multiple=True,
              help="Only these accelerators (ids of models/accelerators; repeat). Default: all.")
@click.option("--target-flop", type=click.FloatRange(min=0, min_open=True), help="training.target_flop.")
@click.option("--params", type=click.FloatRange(min=1e6), help="Model parameters. Default: the largest dense "
              "model that fits one node (node memory / bytes per parameter, the report's rule).")
@click.option("--fit-model", is_flag=True, help="Fit the model to each node (the report's rule) even when the "
              "INSTANCE gives model.params.")
@click.option("--wan-mbps", type=click.FloatRange(min=0, min_open=True), help="WAN up and down, Mb/s.")
@click.option("--rtt-ms", type=click.FloatRange(min=0), help="WAN round-trip time, ms.")
@click.option("--max-days", help="Longest run in days, or 'growth' (limits.max_days).")
@click.option("--budget-usd", type=click.FloatRange(min=0, min_open=True), help="Spending cap (limits.budget_usd).")
@click.option("--max-nodes", type=click.IntRange(min=1), help="At most this many nodes (limits.max_nodes). "
              "Default: up to 100,000.")
@click.option("--stop", "stop_kinds", multiple=True, type=click.Choice(STOP_KINDS),
              help="Find where the target stops being reachable by lowering these thresholds together (repeat "
                   "to combine); needs --within-nodes and/or --within-budget.")
@click.option("--within-nodes", type=click.IntRange(min=1), help="With --stop: reachable means with at most N nodes.")
@click.option("--within-budget", type=click.FloatRange(min=0, min_open=True),
              help="With --stop: reachable means for at most USD.")
@click.option("--curve", "curve", help="Compute thresholds (H100-eq, comma-separated) for the threshold curve of "
              "--report. Default 16,8,4,2,1.")
@click.option("--robust", is_flag=True, help="Each row's fewest nodes reaching the target under every scenario of "
              "the uncertainty files (worst case; docs/robust.md), with that plan's worst-case days.")
@click.option("--json", "as_json", is_flag=True, help="Write the full result as JSON to standard output.")
@click.option("--report", "report_path", type=click.Path(path_type=Path),
              help="Also write an HTML page (.html): the threshold curve and the collateral table.")
def thresholds(instance_path, overrides, compute, tpp, memory, interconnect, wan_cap, accelerator_ids, target_flop, params,
               fit_model, wan_mbps, rtt_ms, max_days, budget_usd, max_nodes, stop_kinds, within_nodes, within_budget, curve,
               robust, as_json, report_path) -> None:
    """For each accelerator, the largest node under the thresholds (--compute, --tpp, --memory,
    --interconnect; a node exactly at a threshold is not caught), the fewest such nodes that reach the
    target within the limits (verified: one fewer does not), their cost and the binding limit; the
    legitimate deployments (models/deployments) the thresholds catch; with --stop, the threshold at
    which the target stops being reachable (verified on both sides).

    Example: dtplan thresholds --compute 16 --memory 1024 --target-flop 1e27.
    Exit 0 if some accelerator still reaches the target, 1 if none does, 2 bad input.
    """
    from planner.questions import thresholds as q
    th = q.Thresholds(compute, tpp, memory, interconnect, wan_cap)
    if compute is None and tpp is None and memory is None:
        raise BadInput("thresholds: give at least one of --compute, --tpp, --memory (they set the node size)")
    if stop_kinds and within_nodes is None and within_budget is None:
        raise BadInput("--stop: give --within-nodes and/or --within-budget (what 'reachable' means)")
    if (within_nodes is not None or within_budget is not None) and not stop_kinds:
        raise BadInput("--within-nodes/--within-budget: only with --stop")
    for kind in stop_kinds:
        flag = {"compute": "--compute", "tpp": "--tpp", "memory": "--memory", "wan": "--wan-cap"}[kind]
        if q.threshold_value(th, kind) is None:
            raise BadInput(f"--stop {kind}: give {flag} (the threshold to start lowering from)")
    if robust and stop_kinds:
        raise BadInput("--robust: not with --stop (the stop point is searched on the instance as given)")
    curve_values = _curve(curve, report_path)
    if report_path is not None:
        if report_path.suffix.lower() != ".html":
            raise BadInput("--report: the thresholds page is HTML; use a .html file")
        check_output("--report", report_path)      # first: report.check_report_path raises OutputPathError itself
        check_report(report_path)
    try:
        catalog = q.load_accelerators()
        deployments = q.load_deployments()
    except InputError as err:
        raise BadInput.from_error(err) from None
    unknown = [a for a in accelerator_ids if a not in catalog]
    if unknown:
        from planner.schema.strict import closest_first
        raise BadInput(f"--accelerator: unknown {unknown[0]!r}; known (closest first): "
                       f"{', '.join(closest_first(unknown[0], catalog))}")
    accelerators = [catalog[a] for a in accelerator_ids] if accelerator_ids else list(catalog.values())
    problems = q.check_thresholds(th, accelerators)
    if problems:
        raise BadInput("\n".join(str(p) for p in problems), problems)
    raw, source = _raw_from(instance_path, overrides, target_flop, params, wan_mbps, rtt_ms, max_days, budget_usd, max_nodes)
    if fit_model and params is not None:
        raise BadInput("--fit-model: not with --params (one sets the model size, the other fits it to the node)")
    fit = fit_model or ("params" not in raw["model"] and not (raw.get("search") or {}).get("params"))
    if fit and isinstance(raw.get("search"), dict) and raw["search"].get("params"):
        raise BadInput("--fit-model: the INSTANCE gives search.params (candidate sizes); drop one of them")
    nodes = [q.build_node(a, th) for a in accelerators]
    buildable = [n for n in nodes if n.count >= 1]
    if not buildable:
        raise BadInput("thresholds: no accelerator considered fits under the thresholds: "
                       + "; ".join(n.rule for n in nodes))
    given = {"--target-flop": target_flop, "--params": params, "--wan-mbps": wan_mbps, "--rtt-ms": rtt_ms,
             "--max-days": max_days, "--budget-usd": budget_usd, "--max-nodes": max_nodes}
    _check_instance(raw, source, buildable, th, fit,
                    {field: flag for field, flag in FLAG_FIELDS.items() if given[flag] is not None})

    from planner.present.render import make_console
    from planner.present import threshold_report as page
    console, err_console = make_console(), make_console(stderr=True)
    show = (lambda m: err_console.print(f"[dim]{m}[/dim]")) if err_console.is_terminal else (lambda m: None)
    if robust:
        from planner.questions.robust import robust_answer as answer
    else:
        answer = q.answer
    answers = [answer(raw, n, th, fit) for n in _each(nodes, show, "solving")]
    caught = q.collateral(th, deployments, catalog)
    stops = []
    if stop_kinds:
        for n in _each(buildable, show, "stop point"):
            stops.append(q.stop_point(raw, n.accelerator, th, tuple(stop_kinds), within_nodes, within_budget, fit))
    curve_rows = []
    if report_path is not None:
        for value in curve_values:
            t = q.Thresholds(value, tpp, memory, interconnect, wan_cap)
            for a in accelerators:
                show(f"curve: {value:g} H100-eq, {a.id}")
                curve_rows.append((value, answer(raw, q.build_node(a, t), t, fit)))
    if as_json:
        out = {"thresholds": {k: v for k, v in th.__dict__.items() if v is not None},
               "fit_model_to_node": fit, **({"robust": True} if robust else {}), "answers": [a.to_dict() for a in answers],
               "collateral": [{"deployment": d.id, "name": d.name, "caught_by": why} for d, why in caught],
               "stop_points": [s.to_dict() for s in stops]}
        click.echo(dumps(out))
    else:
        if robust:
            console.print("robust: each row's fewest nodes reach the target under every scenario of the uncertainty "
                          "files, proven by the branch and bound (not re-solved); days are the worst case "
                          "(docs/robust.md)")
        page.render_terminal(th, answers, caught, stops, catalog, console, fit,
                             fit and _activation_memory(raw, source, buildable[0], th))
    if report_path is not None:
        from planner.cli.common import command_line
        from planner.questions.thresholds import node_cap, node_instance
        from planner.schema.instance import parse_instance
        suited = next((a.node for a in answers if a.result is not None), buildable[0])
        instance = parse_instance(node_instance(raw, suited, th, node_cap(raw), fit), source)
        written = page.threshold_report(raw.get("name") or source, th, answers, caught, stops, curve_rows,
                                        catalog, report_path, fit, instance, command_line())
        click.echo(f"report written to {written}", err=True)
    from planner.present.envelope import echo_search_note   # dtplan: the evidence envelope (docs/quality.md)
    echo_search_note(raw)
    sys.exit(EXIT_OK if any(a.reachable for a in answers) else EXIT_INFEASIBLE)


def _each(items, show, verb):
    for item in items:
        a = getattr(item, "accelerator", item)
        show(f"{verb}: {a.id}")
        yield item


def _curve(text: str | None, report_path) -> tuple[float, ...]:
    if text is None:
        return REPORT_CURVE_H100E if report_path is not None else ()
    try:
        values = tuple(float(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise BadInput(f"--curve: must be comma-separated numbers of H100-equivalents, got {text!r}") from None
    if not values or any(not (v > 0) or v != v or v == float("inf") for v in values):
        raise BadInput(f"--curve: every threshold must be a number > 0, got {text!r}")
    if report_path is None:
        raise BadInput("--curve: only with --report (the curve is drawn on the page)")
    return values
