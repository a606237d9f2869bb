"""The evidence envelope of a scored plan, as text (planner/cost/envelope.py; docs/quality.md).

`envelope_lines` gives the lines (shared by every renderer); `render_envelope` prints them under
a plan's evaluation. Nothing is printed outside the fitted quality model (the dtplan profile)."""

from __future__ import annotations

from planner.cost import envelope


def envelope_lines(e) -> list[str]:
    """A line saying whether the plan is inside the evidence envelope, then one line per way it leaves
    it; [] when the fitted quality model is off. (Whether a search kept inside is said by the solve's
    binding limits, planner/solvers/uniform.py.)"""
    if e.envelope is None:
        return []
    beyond = "" if envelope.on(e.setting.assumptions) else (
        " (--beyond-evidence: outside it every term is the fitted law extrapolated, conservatively)")
    if not e.envelope:
        return [f"plan inside the evidence envelope of the fitted quality model (docs/quality.md){beyond}"]
    return [f"plan outside the evidence envelope of the fitted quality model (docs/quality.md){beyond}:"] + \
        [f"{x['message']} ({x['term']})" for x in e.envelope]


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


def search_note(raw) -> str | None:
    """The envelope note for a command that prints no plan's binding limits (compare, sweep, thresholds):
    the note when the raw instance's assumptions (profile, then constants) search inside the envelope,
    else None (also when they do not resolve; the command's own validation reports that)."""
    from planner.cost.assumptions import apply_overrides, load_profile
    try:
        given = raw.get("assumptions") or {}
        a = apply_overrides(load_profile(given.get("profile") or "reference"), given.get("constants") or {})
    except (AttributeError, KeyError, TypeError, ValueError):
        return None
    return envelope.ENVELOPE_NOTE if envelope.on(a) else None


def echo_search_note(raw) -> None:
    """Print `search_note(raw)` on standard error when there is one (compare, sweep, thresholds)."""
    import click
    if (note := search_note(raw)) is not None:
        click.echo(note, err=True)
