"""The `--robust` answers in words and tables (docs/robust.md; the answers are
`planner.questions.robust`): the regret table of `solve --robust`, its report, and the verdict of
`feasible --robust`."""

from __future__ import annotations

import math

from planner.cost.duration import SECONDS_PER_DAY
from planner.present.report import _answer_line, _Doc, _plan_and_breakdown, _question
from planner.questions.robust import RobustReach, RobustResult


def regret_table(result: RobustResult) -> tuple[list[str], list[list[str]]]:
    """(header, rows) of the regret table: per scenario the robust and the nominal plan's figure
    (days to target, or FLOP), "(limit)" where the plan breaks a limit under that scenario."""
    days = result.value_name == "time_to_target_s"
    names = [n for n in ("robust", "nominal") if result.rows and n in result.rows[0]]

    def cell(row: dict, name: str) -> str:
        v = row[name]
        if v is None or not math.isfinite(v):
            return "never"
        text = f"{v / SECONDS_PER_DAY:,.1f}" if days else f"{v:.3e}"
        return text + ("" if row[f"{name}_meets_limits"] else " (limit)")

    header = ["scenario"] + [f"{n} plan ({'days' if days else 'FLOP ' + result.value_name})" for n in names]
    return header, [[r["scenario"]] + [cell(r, n) for n in names] for r in result.rows]


def regret_lines(result: RobustResult) -> list[str]:
    """The regret table as aligned text lines."""
    header, rows = regret_table(result)
    if len(header) == 1:
        return ["no plan to score: neither the robust nor the nominal solve found one"]
    widths = [max(len(x[i]) for x in [header] + rows) for i in range(len(header))]
    return ["  ".join(x[i].ljust(widths[i]) if i == 0 else x[i].rjust(widths[i]) for i in range(len(header)))
            for x in [header] + rows]


def reach_lines(r: RobustReach) -> list[str]:
    """`feasible --robust` in words."""
    missed = [x["scenario"] for x in r.per_scenario if not x["reachable"]]
    count = len(r.per_scenario)
    lines = {"every": [f"reachable under every scenario ({count})"],
             "none": [f"reachable under none of the {count} scenarios"],
             "some": [f"reachable under some scenarios: {count - len(missed)} of {count}; not under "
                      f"{', '.join(missed)}"]}[r.verdict]
    if r.one_plan.plan is not None:
        lines.append(f"one plan reaches the target under every scenario: worst case "
                     f"{r.one_plan.objective_value / SECONDS_PER_DAY:,.1f} days")
    else:
        lines.append("no single plan reaches the target under every scenario")
    for x in r.per_scenario:
        lines.append(f"  {x['scenario']}: " + (f"{x['days']:,.1f} days" if x["reachable"] else x["status"]))
    return lines


def robust_report(instance, result: RobustResult, path, command: str | None = None):
    """`solve --robust --report`: the robust plan, the nominal plan and the regret table."""
    doc = _Doc(f"dtplan solve --robust: {instance.name or 'instance'}", instance, command)
    _question(doc, instance)
    doc.h2(f"Robust answer ({result.statistic.describe()})")
    text, css = _answer_line(result.robust)
    doc.p(text, css)
    doc.items(result.robust.infeasibility, "bad")
    _plan_and_breakdown(doc, result.robust)
    doc.h2("Nominal answer (the instance as given)")
    text, css = _answer_line(result.nominal)
    doc.p(text, css)
    _plan_and_breakdown(doc, result.nominal)
    doc.h2("Each plan under each scenario (regret)")
    doc.table(*regret_table(result))
    return doc.write(path)
