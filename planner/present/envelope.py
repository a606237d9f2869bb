"""The evidence envelope of a scored plan, as text (planner/cost/envelope.py; docs/quality.md).

`envelope_lines` gives the lines (shared by every renderer); `render_envelope` prints them under
a plan's evaluation. Nothing is printed outside the fitted quality model (the dtplan profile)."""

from __future__ import annotations

from planner.cost import envelope
from planner.cost.duration import SECONDS_PER_DAY


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


def sweep_flag(row: dict) -> str:
    """A sweep row's cell in the table's "envelope" column: "stops it" for a point whose optimum the evidence
    envelope stops (a plan exists beyond it), "not the cause" where no plan exists beyond it either,
    "time limit" where the search beyond ran out of time, "" for any other point (`envelope.beyond_columns`)."""
    status = row.get("beyond_status")
    if status is None:
        return ""
    return {"optimal": "stops it", "time_limit": "time limit"}.get(status, "not the cause")


def sweep_marker(row: dict, objective: str | None = None) -> str:
    """A sweep row's envelope explanation in one line (`envelope.beyond_columns`): for a point with no plan
    inside the evidence envelope, the envelope bounds its optimum beyond crosses and what that plan reaches
    ("replicas <= 8, H <= 100 | beyond: 46.7 days: hierarchical, 64 nodes, ..."), or that the envelope is not
    what stops it; "" for any other point. `objective`: the row's objective key (default: its `objective`,
    else min_time, the question of `feasible` and `reach`)."""
    status = row.get("beyond_status")
    if status is None:
        return ""
    if status == "time_limit":
        return "beyond it (--beyond-evidence) the search reached its time limit without a plan"
    value = row.get("beyond_objective_value")
    if status != "optimal" or value is None:
        return "the evidence envelope is not what stops it: no plan beyond it (--beyond-evidence) either"
    crossed = ", ".join(part.rsplit(": ", 1)[0] for part in (row.get("beyond_bounds") or "").split("; ") if part)
    key = objective or row.get("objective") or "min_time"
    reached = {"min_time": f"{value / SECONDS_PER_DAY:,.1f} days", "min_cost": f"${value:,.0f}"}.get(
        key, f"{value:.4g} FLOP")
    return (f"evidence envelope stops it: {crossed or 'only marked quantities'} | beyond it (--beyond-evidence): "
            f"{reached}: {row.get('beyond_plan')}")


def sweep_notes(rows: list[dict]) -> list[str]:
    """One line per sweep row the evidence envelope explains ("point 3: evidence envelope stops it: ..."),
    printed under the sweep's table."""
    return [f"point {r['index']}: {sweep_marker(r)}" for r in rows if r.get("beyond_status") is not None]
