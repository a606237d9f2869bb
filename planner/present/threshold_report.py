"""`dtplan thresholds` output: terminal tables (rich) and the `--report FILE.html` page.

The page reuses the document builder of planner/present/report.py (with its provenance block)
and is written through planner/files.py (atomic). It holds: the thresholds and the node of each accelerator,
the fewest nodes and cost per accelerator, the stop points (if asked), the threshold curve
(fewest nodes and cost against the compute threshold, one line per accelerator) and the
collateral table (which legitimate deployments each threshold catches). Every number comes
from the result objects of planner/questions/thresholds.py.
"""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.table import Table

from planner.present.report import _Doc


def _money(x: float | None) -> str:
    if x is None:
        return "-"
    return f"${x / 1e9:,.2f}B" if x >= 1e9 else f"${x / 1e6:,.2f}M" if x >= 1e6 else f"${x:,.0f}"


def _params(x: float | None) -> str:
    return "-" if x is None else f"{x / 1e9:,.4g}B"


def _limit_names(lines: list[str]) -> str:
    """'duration-limit: 547.9 of 547.9 days' -> 'duration-limit' (the full lines are in --json and the page)."""
    names = []
    for line in lines:
        name = line.split(":", 1)[0]
        if name not in names:
            names.append(name)
    return ", ".join(names) or "-"


def answer_rows(answers, short: bool = False) -> list[list[str]]:
    """One row per accelerator (ANSWER_HEADER); `short` (the terminal) drops the node price and keeps
    only the names of the binding limits."""
    from planner.questions.compare import plan_short
    rows = []
    for a in answers:
        n = a.node
        plan = a.result.plan if a.reachable and a.result is not None else None
        row = [n.accelerator.id, f"{n.count}", f"{n.memory_gb:,.0f}", f"{n.h100_equivalents:.2f}",
               _money(n.price_usd) if n.count else "-", ", ".join(n.binding), _params(a.model_params),
               "yes" if a.reachable else "no", "-" if a.nodes is None else f"{a.nodes:,}", _money(a.cost_usd),
               "-" if a.time_to_target_days is None else f"{a.time_to_target_days:,.1f}", plan_short(plan),
               _limit_names(a.binding) if short else "; ".join(a.binding) or "-"]
        rows.append(row[:4] + row[5:] if short else row)
    return rows


ANSWER_HEADER = ["accelerator", "per node", "node GB", "node H100-eq", "node price", "node set by", "model",
                 "reaches", "fewest nodes", "cost", "days", "plan", "binding"]
SHORT_HEADER = ANSWER_HEADER[:4] + ANSWER_HEADER[5:]


def collateral_header(th) -> list[str]:
    return ["deployment", "category", "accelerators", "GB", "H100-eq", "caught by"]


def collateral_rows(caught, catalog) -> list[list[str]]:
    rows = []
    for d, why in caught:
        a = catalog[d.accelerator]
        rows.append([d.name, d.category, f"{d.count} x {a.id}", f"{d.count * a.hbm_gb:,.0f}",
                     f"{d.count * a.h100_equivalents:.2f}", ", ".join(why) or "-"])
    return rows


def stop_rows(stops) -> list[list[str]]:
    return [[s.accelerator, " + ".join(s.kinds), s.within, s.status,
             s.reachable_at.describe() if s.reachable_at else "-",
             s.unreachable_at.describe() if s.unreachable_at else "-", s.summary] for s in stops]


STOP_HEADER = ["accelerator", "lowered", "within", "status", "still reachable at", "not reachable at", "summary"]


FIT_WITH_ACTIVATIONS = ("the largest dense model one node can train (its state, bytes per parameter x P, plus the "
                        "least activations of a node holding it, within node memory; docs/thresholds.md)")


def render_terminal(th, answers, caught, stops, catalog, console: Console, fit: bool,
                    activations: bool = False) -> None:
    console.print(f"[bold]Thresholds:[/bold] {th.describe()} (a node above a threshold is caught)")
    if fit:
        console.print(f"[dim]model: {FIT_WITH_ACTIVATIONS}; --params to fix it[/dim]" if activations else
                      "[dim]model: the largest dense model that fits one node (node memory / bytes per "
                      "parameter); --params to fix it[/dim]")
    table = Table(title="Largest node under the thresholds and the fewest such nodes that reach the target "
                        "(verified: one fewer does not)", title_justify="left")
    for col in SHORT_HEADER:
        table.add_column(col, overflow="fold")
    for row in answer_rows(answers, short=True):
        table.add_row(*row, style=None if row[SHORT_HEADER.index("reaches")] == "yes" else "red")
    console.print(table)
    if stops:
        t = Table(title="Where the target stops being reachable (verified on both sides)", title_justify="left")
        for col in STOP_HEADER[:-1]:
            t.add_column(col, overflow="fold")
        for row in stop_rows(stops):
            t.add_row(*row[:-1])
        console.print(t)
    hit = [(d, why) for d, why in caught if why]
    c = Table(title=f"Legitimate deployments caught: {len(hit)} of {len(caught)}", title_justify="left")
    for col in collateral_header(th):
        c.add_column(col, overflow="fold")
    for row in collateral_rows(caught, catalog):
        c.add_row(*row, style="red" if row[-1] != "-" else "dim")
    console.print(c)


def _curve_plot(curve_rows) -> bytes:
    """Fewest nodes and cost against the compute threshold, one line per accelerator (reachable points)."""
    from planner.present.plots import figure_png, pyplot
    fig, (ax_n, ax_c) = pyplot().subplots(1, 2, figsize=(11, 4))
    by_acc: dict[str, list] = {}
    for value, a in curve_rows:
        if a.reachable:
            by_acc.setdefault(a.node.accelerator.id, []).append((value, a.nodes, a.cost_usd))
    for acc, pts in sorted(by_acc.items()):
        pts.sort()
        ax_n.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=acc)
        ax_c.plot([p[0] for p in pts], [p[2] for p in pts], marker="o", label=acc)
    for ax, label in ((ax_n, "fewest nodes"), (ax_c, "cost, USD")):
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("compute threshold, H100-equivalents per node")
        ax.set_ylabel(label)
        ax.grid(True, which="both", alpha=.3)
    ax_c.legend(fontsize=7, ncol=2)
    return figure_png(fig)


def threshold_report(title: str, th, answers, caught, stops, curve_rows, catalog, path: str | Path,
                     fit: bool, instance=None, command: str | None = None) -> Path:
    """The page (atomic write through _Doc.write / planner/files.py); `instance` (the question
    with one of the nodes) and `command` give the provenance block every report carries."""
    doc = _Doc(f"dtplan thresholds: {title}", instance, command)
    doc.p(f"Thresholds: {th.describe()}. A node (accelerators networked together) whose figures go above a "
          "threshold must register; one exactly at it does not.")
    if fit:
        doc.p(f"Model: {FIT_WITH_ACTIVATIONS}." if instance.resolved_assumptions().activation_memory else
              "Model: the largest dense model that fits one node (node memory / bytes per parameter).")
    doc.h2("Per accelerator: the largest node and the fewest nodes that reach the target")
    doc.table(ANSWER_HEADER, answer_rows(answers))
    doc.items([f"{a.node.accelerator.id}: {a.node.rule}" for a in answers])
    if stops:
        doc.h2("Where the target stops being reachable")
        doc.table(STOP_HEADER, stop_rows(stops))
    if curve_rows:
        doc.h2("Threshold curve")
        doc.image(_curve_plot(curve_rows), "fewest nodes and cost against the compute threshold")
        doc.table(["compute threshold (H100-eq)", "accelerator", "per node", "fewest nodes", "cost"],
                  [[f"{v:g}", a.node.accelerator.id, f"{a.node.count}",
                    "-" if a.nodes is None else f"{a.nodes:,}", _money(a.cost_usd)] for v, a in curve_rows])
    hit = sum(1 for _, why in caught if why)
    doc.h2(f"Collateral: legitimate deployments caught ({hit} of {len(caught)})")
    doc.table(collateral_header(th), collateral_rows(caught, catalog))
    return doc.write(path)
