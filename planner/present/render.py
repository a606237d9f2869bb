"""Readable tables of an evaluation for the terminal (rich), or plain text for a pipe.

Every table goes through `print_table`: printed as a table when each cell fits the
console's width, else stacked (one block per row, a `header  value` line per column), so
that a number is never cut at any width (tests run at 80 and 60 columns).

When standard output is not a terminal, `make_console` gives a `PlainConsole`
(planner/present/plain.py): the result pages are written without importing rich, with the
same characters rich would write; rich is loaded only for what the plain path does not lay out.
"""

from __future__ import annotations

import io
from typing import TYPE_CHECKING

from planner.cost.assumptions import PIPELINE_SCHEDULES
from planner.cost.duration import SECONDS_PER_DAY
from planner.objectives import Objective
from planner.present.plain import PlainConsole, PlainTable, Styled, rich_console, stdout_is_plain

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

    from planner.evaluate import Evaluation

MODE_NAMES = {"flat": "flat DiLoCo", "hierarchical": "hierarchical DiLoCo", "pp_group": "PP-group DiLoCo",
              "pipeline_wan": "pipeline over the WAN (no DiLoCo)"}


def make_console(stderr: bool = False) -> "Console | PlainConsole":
    """A console for stdout (or stderr, for progress); 120 columns when it is not a terminal
    (pipes, files, tests): then, for stdout, a PlainConsole that loads rich only if needed."""
    if not stderr and stdout_is_plain():
        return PlainConsole()
    probe = rich_console(stderr=stderr)
    return rich_console(highlight=False, stderr=stderr, width=None if probe.is_terminal else 120)


ELLIPSIS = "\u2026"


def fits(table: "Table", width: int) -> bool:
    """Whether rich renders `table` at `width` columns without cutting any cell (no ellipsis)."""
    from rich.console import Console
    probe = Console(width=width, file=io.StringIO(), record=True, color_system=None, highlight=False)
    probe.print(table)
    return ELLIPSIS not in probe.export_text()


def stacked(table: "Table") -> list:
    """The rows of `table` as blocks of `header  value` lines (a grid per row), for narrow consoles."""
    from rich.table import Table
    from rich.text import Text
    headers = [Text.from_markup(c.header) if isinstance(c.header, str) else c.header for c in table.columns]
    columns = [list(c.cells) for c in table.columns]
    blocks = []
    for r in range(table.row_count):
        grid = Table.grid(padding=(0, 2))
        grid.add_column(style="cyan", no_wrap=True)
        grid.add_column(overflow="fold")
        for header, cells in zip(headers, columns):
            label = header.plain if isinstance(header, Text) else str(header)
            grid.add_row(label or "-", cells[r])
        blocks.append(grid)
    return blocks


def print_table(table: "Table | PlainTable", console: "Console | PlainConsole") -> None:
    """`table` as it is if it fits the console's width, else stacked (`stacked`): never a cut number.
    A PlainTable on a PlainConsole is written without rich when its natural width fits."""
    if isinstance(table, PlainTable):
        lines = table.lines(console.width) if isinstance(console, PlainConsole) else None
        if lines is not None:
            console.print_lines(lines)
            return
        table = table.to_rich()
    if isinstance(console, PlainConsole):
        console = console.rich
    from rich.text import Text
    if fits(table, console.width):
        console.print(table)
        return
    if table.title:
        console.print(Text(str(table.title), style="bold"))
    for i, block in enumerate(stacked(table)):
        if i:
            console.print()
        console.print(block)


def _table(title: str) -> PlainTable:
    table = PlainTable(title=title, title_justify="left", title_style="bold", show_header=False, box=None,
                       pad_edge=False)
    table.add_column(style="cyan", no_wrap=True)
    table.add_column(justify="right")
    table.add_column(style="dim")
    return table


def _s(x: float) -> str:
    return f"{x:,.3f}" if abs(x) < 1e5 else f"{x:,.0f}"


def _flop(x: float) -> str:
    return f"{x:.3e}"


def plan_table(e: "Evaluation") -> PlainTable:
    from planner.fleet.present import nodes_label
    b, v, s = e.batch, e.values, e.setting
    a = s.assumptions
    t = _table("Plan")
    n = int(b.nodes[0])
    t.add_row("mode", MODE_NAMES[b.mode], f"{int(v['groups'])} DiLoCo group(s), {int(v['replicas'])} replica(s) averaged")
    t.add_row("nodes", nodes_label(e), f"{int(v['total_gpus']):,} accelerators, ${v['cost_usd']:,.0f}")
    t.add_row("precision", b.precision, f"{a.bytes_per_param(b.precision):g} B/param state, "
              f"{a.bits_per_value(b.precision):g}-bit pseudo-gradients")
    if v["synchronised"]:
        t.add_row("inner steps H", f"{int(b.inner_steps[0]):,}", "")
        t.add_row("compression Cr", f"{float(b.compression[0]):g}x", "on top of precision")
        t.add_row("streaming overlap", "on" if bool(b.streaming[0]) else "off", "")
    if b.mode in ("flat", "hierarchical") and int(b.zero_shards[0]) > 1:
        t.add_row("ZeRO-3 shards Z", f"{int(b.zero_shards[0])}", f"{int(v['replicas']):,} replicas of Z nodes (dtplan)")
    if b.mode == "hierarchical":
        t.add_row("group size k", f"{int(b.group_size[0])}", "")
        t.add_row("regional rounds R", f"{int(b.regional_rounds[0])}", f"H_eff = H sqrt(R) = {v['h_eff']:,.1f}")
    if b.mode in ("pp_group", "pipeline_wan"):
        t.add_row("pipeline stages S", f"{int(b.stages[0])}", f"at least {int(v['min_stages'])} to fit")
        t.add_row("micro-batches M", f"{int(b.micro_batches[0])}", f"bubble {v['bubble_fraction']:.1%}")
        t.add_row("activation compression", f"{float(b.activation_compression[0]):g}x", "")
        if int(b.schedule[0]):
            t.add_row("pipeline schedule", PIPELINE_SCHEDULES[int(b.schedule[0]) - 1], "chosen per plan (dtplan)")
        if v.get("pipeline_chunks", 1.0) > 1:
            t.add_row("interleaved chunks v", f"{v['pipeline_chunks']:g}", "per rank, chosen per plan (dtplan)")
    if "tensor_parallel" in v:            # dtplan's node model (planner/cost/tensor_parallel.py)
        shown = "chosen per plan (dtplan)" if s.assumptions.tensor_parallel == 0 else "fixed by the instance"
        t.add_row("tensor parallel T", f"{v['tensor_parallel']:g}",
                  f"{shown}; {s.accelerators_per_node / v['tensor_parallel']:g} data-parallel groups per node")
    if s.is_moe:
        t.add_row("expert parallelism", b.expert_parallel, "")
    t.add_row("memory per node", f"{v['state_bytes_per_node'] / 1e9:,.1f} GB", f"of {s.memory_bytes / 1e9:,.0f} GB")
    return t


# Each schedule's pipeline length in micro-batch slots, its bubble and its link transfers per slot, as
# planner/cost/physics.py: pipeline_ticks computes them (bubble (slots - M) c, links slots x transfers
# x (x + lat_pp)); DualPipe's bubble is physics.dualpipe_bubble_slots.
PIPELINE_FORMULAS = {          # schedule: (bubble, links)
    "gpipe": ("(S - 1) c", "(M + S - 1)(x + lat_pp)"),
    "1f1b": ("(S - 1) c", "(M + S - 1)(x + lat_pp)"),
    "interleaved": ("(max(M + (S - 1) / v, S) - M) c", "v max(M + (S - 1) / v, S)(x + lat_pp)"),
    "zero_bubble": ("max(0, 2 S - 1 - M) c / 3", "(M + max(0, 2 S - 1 - M) / 3)(x + lat_pp)"),
    "dualpipe": ("(S / 2 - 1)(F&B + B - 3 W) c", "(M + (S / 2 - 1)(F&B + B - 3 W))(x + lat_pp)"),
}


def _schedule_name(e: "Evaluation") -> str:
    """The plan's pipeline schedule: its own where the planner chose it, else the profile's."""
    code = int(e.batch.schedule[0])
    return PIPELINE_SCHEDULES[code - 1] if code else e.setting.assumptions.pipeline_schedule


def step_table(e: "Evaluation") -> PlainTable:
    v, b = e.values, e.batch
    t = _table("Per inner step (seconds)")
    t.add_row("compute (whole model, one node)", _s(v["t_comp_s"]), "6 P_act B / (F u)")
    if b.mode in ("pp_group", "pipeline_wan"):
        t.add_row("useful compute per stage", _s(v["step_compute_s"]), "M c, c = t_comp / (S M)")
        bubble, links = PIPELINE_FORMULAS[_schedule_name(e)]
        t.add_row("pipeline bubble", _s(v["step_bubble_s"]), bubble)
        t.add_row("pipeline links", _s(v["step_link_s"]), links)
        t.add_row("straggler on links", _s(v["step_link_straggler_s"]), f"f(S) = {v['f_pipeline']:.4f}")
    if v["t_ep_s"]:
        t.add_row("expert all-to-all", _s(v["t_ep_s"]), "2 lat_ep L_moe")
    t.add_row("inner step", _s(v["t_step_s"]), "")
    return t


def outer_table(e: "Evaluation") -> PlainTable:
    v, b = e.values, e.batch
    t = _table("Per outer step (seconds)")
    t.add_row("compute block", _s(v["compute_block_s"]), "R H t_step" if b.mode == "hierarchical" else "H t_step")
    if v["synchronised"]:
        base = v["t_sync_base_s"]
        t.add_row("WAN sync", _s(v["t_sync_s"]), f"base {_s(base)} x straggler f = {v['f_sync']:.4f}")
        t.add_row("  of which straggler", _s(v["t_sync_s"] - base), "")
        t.add_row("payload per sync", f"{v['comm_gb_per_sync']:,.3f} GB", "up + down")
    if b.mode == "hierarchical":
        t.add_row("regional sync", _s(v["t_regional_s"]), f"f(k) = {v['f_regional']:.4f}")
        t.add_row("regional cycle", _s(v["regional_cycle_s"]), "")
    t.add_row("outer step", _s(v["outer_time_s"]), f"compute utilisation {v['compute_utilization']:.1%}")
    t.add_row("tokens per outer step", f"{v['tokens_per_outer']:,.0f}", f"{v['tokens_per_s']:,.0f} tokens/s")
    return t


def efficiency_table(e: "Evaluation") -> PlainTable:
    v = e.values
    t = _table("Efficiency (fraction of compute that counts)")
    t.add_row("eta_H sync interval", f"{v['eta_h']:.4f}", f"alpha(P) = {v['alpha']:.5f}, H_eff = {v['h_eff']:,.1f}")
    t.add_row("eta_C compression", f"{v['eta_c']:.4f}", "")
    t.add_row("eta_A activations", f"{v['eta_a']:.4f}", "")
    t.add_row("eta_R replicas (at target)", f"{v['eta_r_target']:.4f}", f"K = {int(v['replicas']):,}")
    t.add_row("eta (at target)", f"{v['eta_target']:.4f}", "")
    return t


def run_table(e: "Evaluation") -> PlainTable:
    v, s = e.values, e.setting
    days = s.window_s / SECONDS_PER_DAY
    t = _table("Run")
    kind = "C_quality" if s.target_kind == "c_quality" else "C_local"
    t.add_row("target", f"{_flop(s.target)} FLOP", f"{kind}; D = {s.target_tokens / 1e12:,.3f} T tokens")
    t.add_row("time to target", f"{v['time_to_target_s'] / SECONDS_PER_DAY:,.1f} days",
              f"limit {days:,.1f} days ({e.max_days_source})")
    if s.goodput < 1:
        t.add_row("  of which training", f"{v['training_time_s'] / SECONDS_PER_DAY:,.1f} days",
                  f"goodput {s.goodput:g} (fleet.goodput)")
    t.add_row(f"in {days:,.1f} days: tokens", f"{v['tokens'] / 1e12:,.2f} T", f"{v['overtraining_ratio']:.2f}x Chinchilla")
    t.add_row("  C_throughput", _flop(v["c_throughput"]), "6 P_act T")
    t.add_row("  C_local", _flop(v["c_local"]), f"eta = {v['eta']:.4f} (eta_R {v['eta_r']:.4f})")
    t.add_row("  C_quality", _flop(v["c_quality"]), f"chi = {v['chi']:.4f}")
    t.add_row("  global MFU / HFU", f"{v['global_mfu']:.1%} / {v['global_hfu']:.1%}", "")
    t.add_row("bandwidth duty cycle", f"{v['duty_cycle']:.1%}", "")
    t.add_row("bottleneck", e.bottleneck, "")
    return t


def solve_heading(command: str, objective: "Objective", instance) -> str:
    """'dtplan solve: Most compute within the duration limit - <instance name>' (text and report):
    the objective's heading (planner.objectives)."""
    return f"{command}: {objective.heading} - {instance.name or 'instance'}"


def render_evaluation(e: "Evaluation", console: "Console | PlainConsole", heading: str | None = None) -> None:
    """The evaluation's tables under `heading` (default 'dtplan evaluate: <instance name>')."""
    heading = heading or f"dtplan evaluate: {e.instance.name or 'instance'}"
    console.print(Styled.line(heading, style="bold underline"))
    for table in (plan_table(e), step_table(e), outer_table(e), efficiency_table(e), run_table(e)):
        console.print()
        print_table(table, console)
    if getattr(e, "pool_rows", None):          # a fleet of pools (planner.fleet)
        from planner.fleet.present import pool_table, site_lines
        console.print()
        print_table(pool_table(e), console)
        if e.sites is not None:
            console.print(Styled.line("Sites", style="bold"))
            for line in site_lines(e.sites):
                console.print(Styled.line(f"  {line}"))
    console.print()
    if e.violations:
        console.print(Styled.line("Limits broken", style="bold red"))
        for line in e.violations:
            console.print(Styled.bullet("x", "red", line))
    else:
        console.print(Styled.line("All limits met (memory, nodes, structure, duration, budget).", style="bold green"))
    if e.warnings:
        console.print(Styled.line("Warnings", style="bold yellow"))
        for line in e.warnings:
            console.print(Styled.bullet("!", "yellow", line))
    from planner.present.envelope import render_envelope
    render_envelope(e, console)



def render_solve(r, console: "Console | PlainConsole") -> None:
    """A solve result: status line, then the optimal plan's full evaluation, binding limits."""
    if r.objective.by_time and r.objective_value is not None:
        value = f"{r.objective_value / SECONDS_PER_DAY:,.3f} days to target"
    elif r.objective.maximise and r.objective_value is not None:
        name = {"c_quality": "C_quality", "c_local": "C_local"}[r.compute_kind]
        value = f"{r.objective_value:.6e} FLOP {name} within the duration limit"
    elif r.objective_value is not None:
        value = f"${r.objective_value:,.0f}"
    else:
        value = "-"
    status_style = {"optimal": "bold green", "time_limit": "bold yellow"}.get(r.status, "bold red")
    console.print(Styled.line(f"{r.status.upper()}  {r.objective}: {value}", style=status_style))
    gap = "-" if r.gap is None else f"{r.gap:.2e}"
    why = "time limit" if r.status == "time_limit" else r.space_size_why
    scored = (f"{r.evaluations:,} plans scored (the space's size not counted: {why})" if r.space_size is None
              else f"{r.evaluations:,} of {r.space_size:.2e} plans scored")
    console.print(f"solver {r.solver}, gap {gap}, {r.solve_time_s:.2f} s, {scored} (docs/planner.md)")
    for m in r.mip:
        units = (lambda v: f"{v / SECONDS_PER_DAY:,.6f} days") if r.objective.by_time else (lambda v: f"${v:,.0f}")
        found = "-" if m["objective"] is None else units(m["objective"])
        bound = "-" if m["bound"] is None else units(m["bound"])
        console.print(f"MIP {m['backend']}: {m['status']} after {m['rounds']} rounds of outer approximation (last: "
                      f"{m['backend_status']}), {found} (bound {bound}), {m['time_s']:.2f} s, "
                      f"{m['nodes']:,} nodes; model {m['columns']:,} columns, {m['rows']:,} rows, "
                      f"{m['nonzeros']:,} non-zeros (built in {m['build_s']:.2f} s); certified by the exact "
                      f"search in {m['certify_s']:.2f} s" + (", which chose another plan"
                                                             if m["certified_changed_plan"] else ""))
    if r.candidates:
        sizes = ", ".join(f"{c['params'] / 1e9:,.4g}B" for c in r.candidates)
        chosen = f"{r.model_params / 1e9:,.4g}B" if r.model_params is not None else "none"
        console.print(f"model size {chosen} parameters, best of the candidates {sizes} (search.params)")
    if r.evaluation is None and r.status == "time_limit":
        console.print(Styled.line("The time limit was reached before any plan meeting every limit was found.",
                           style="bold yellow"))
        return
    if r.evaluation is None:
        console.print(Styled.line("No plan meets every limit:", style="bold red"))
        for line in r.infeasibility:
            console.print(Styled.bullet("x", "red", line))
        return
    console.print()
    render_evaluation(r.evaluation, console, heading=solve_heading("dtplan solve", r.objective, r.evaluation.instance))
    if r.binding:
        console.print(Styled.line("Binding at the optimum", style="bold"))
        for line in r.binding:
            console.print(f"  - {line}")


def render_feasibility(f, console: "Console | PlainConsole", notes: list[str] | None = None) -> None:
    """`dtplan feasible`: the verdict, then the plan (feasible) or the binding limits and fixes."""
    for line in notes or []:
        console.print(Styled.line(line, "dim"))
    r = f.result
    if getattr(f, "timed_out", False):
        console.print(Styled.line("TIME LIMIT  reached before a plan was found or infeasibility proven (no verdict)",
                           style="bold yellow"))
        return
    if f.feasible:
        days = r.objective_value / SECONDS_PER_DAY
        console.print(Styled.line(f"FEASIBLE  the target is reached in {days:,.1f} days", style="bold green"))
        console.print()
        render_solve(r, console)
        return
    console.print(Styled.line("INFEASIBLE  no plan reaches the target within every limit", style="bold red"))
    for line in r.infeasibility:
        console.print(Styled.bullet("x", "red", line))
    if f.fixes:
        from rich.table import Table
        table = Table(title="Smallest single change that makes it feasible (each re-solved and verified)",
                      title_justify="left")
        for col in ("limit", "change", "fields", "time to target", "plan"):
            table.add_column(col)
        for fix in f.fixes:
            p = fix.result.plan
            plan = "-" if p is None else f"{p.mode}, {p.nodes:,} nodes, {p.precision}" + (
                f", H={p.inner_steps}, Cr={p.compression:g}" if p.mode != "pipeline_wan" else "")
            fields = ", ".join(fix.set_args())
            table.add_row(fix.limit, fix.summary, fields,
                          f"{fix.result.objective_value / SECONDS_PER_DAY:,.1f} days", plan)
        print_table(table, console)
        console.print(Styled.line("Each fix as options for dtplan solve/feasible INSTANCE (paste as printed):", "bold"))
        import shlex        # only an infeasible answer with fixes quotes them (docs/speed.md, "Start-up time")
        for fix in f.fixes:       # one unwrapped line each, the values as --set parses them
            console.print(Styled.line("  " + " ".join("--set " + shlex.quote(arg) for arg in fix.set_args())),
                          soft_wrap=True)
    for line in f.no_fix:
        console.print(Styled.bullet("-", "yellow", f"no single change: {line}"))
    console.print(Styled.line(f"{f.solves} solves", "dim"))
