"""`dtplan compare` as text: the ranking table, the presets without a plan, and the notes.

Layer: present (docs/architecture.md); the rows, their table and notes are
`planner.questions.compare`'s.
"""

from __future__ import annotations

from planner.objectives import Objective
from planner.present.render import print_table
from planner.questions.compare import Comparison, comparison_notes, comparison_table


def render_comparison(rows: list[Comparison], objective: Objective, console, title: str = "", elapsed_s: float = 0.0) -> None:
    """The ranking table, the reason of each preset without a plan (one line each), and notes."""
    from rich.markup import escape
    from rich.text import Text
    feasible = sum(r.feasible for r in rows)
    console.print(Text(f"dtplan compare: {title or 'instance'}", style="bold underline"))
    order = f"{objective.title} first"
    what = (f"your fleet and {(len(rows) - 1) // 2} hardware preset(s) at equal H100-eq and at equal cost"
            if any(r.basis is not None for r in rows) else f"{len(rows)} hardware preset(s)")
    console.print(f"objective {objective} ({order}); {what}, {feasible} with a plan; {elapsed_s:.2f} s")
    print_table(comparison_table(rows, objective), console)
    missing = [r for r in rows if not r.feasible]
    if missing:
        console.print(Text("Without a plan", style="bold red"))
        for r in missing:
            console.print(f"  [red]x[/red] {r.rank}. {escape(r.hardware)}: {escape(r.reason)}")
    for note in comparison_notes(rows):
        console.print(f"  [yellow]![/yellow] {escape(note)}")
