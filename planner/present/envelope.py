"""The evidence envelope of a scored plan, as text (planner/cost/envelope.py; docs/quality.md).

`envelope_lines` gives the lines (shared by every renderer); `render_envelope` prints them under
a plan's evaluation. Nothing is printed outside the fitted quality model (the dtplan profile)."""

from __future__ import annotations

from planner.cost import envelope


def envelope_lines(e) -> list[str]:
    """One line per way the plan leaves the evidence, after a line saying whether the search kept
    inside the envelope; [] when the fitted quality model is off."""
    if e.envelope is None:
        return []
    searched = envelope.ENVELOPE_NOTE if envelope.on(e.setting.assumptions) else (
        "searched beyond the evidence (--beyond-evidence): outside the envelope every term is the fitted law "
        "extrapolated (docs/quality.md)")
    if not e.envelope:
        return [f"plan inside the evidence envelope; {searched}"]
    return [f"{searched}; this plan leaves it:"] + [f"{x['message']} ({x['term']})" for x in e.envelope]


def render_envelope(e, console) -> None:
    """Print `envelope_lines` under a heading (nothing when there are none)."""
    from planner.present.plain import Styled
    lines = envelope_lines(e)
    if not lines:
        return
    console.print(Styled.line("Evidence envelope (fitted quality model)", style="bold"))
    console.print(Styled.bullet("-", "", lines[0]))
    for line in lines[1:]:
        console.print(Styled.bullet("!", "yellow", line))
