"""Reports a person would rather read than a terminal dump: `--report FILE.html` (or `.md`).

One self-contained file (plots embedded as PNG data URIs, styles inline, no external
resource) per command: the question (the instance), the answer (status and objective),
the plan, the breakdown of one outer step (as a timeline) and of the efficiency, the
binding limits and warnings; `evaluate` scores a given plan, `feasible` adds the fixes
(each with its plan and plots), `compare` the ranked table and its chart.
Every report says how it was made (provenance: dtplan version, assumption profile, MFU,
overridden constants, the command line), under the title and in full at the end.
Every number comes from the result objects the terminal output is made from; files are
written atomically (planner/files.py).
"""

from __future__ import annotations

import base64
import html
import shlex
from pathlib import Path

from planner.objectives import Objective
from planner.cost.duration import SECONDS_PER_DAY

FORMATS = (".html", ".md")
STYLE = """body{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#222}
h1{font-size:1.5rem}h2{font-size:1.15rem;margin-top:2rem;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:.5rem 0}td,th{border:1px solid #ccc;padding:.25rem .6rem;text-align:left}
th{background:#f4f4f4}.ok{color:#176b1f;font-weight:bold}.bad{color:#a01010;font-weight:bold}
.warn{color:#8a5a00}img{max-width:100%}code{background:#f4f4f4;padding:0 .2rem}
.prov{color:#555;font-size:.85rem}"""


class UnknownReportFormat(ValueError):
    pass


def check_report_path(path: str | Path) -> Path:
    """`path` if a report can be written there: UnknownReportFormat for a suffix other than .html
    or .md, OutputPathError (planner/files.py) for a path that cannot be written."""
    from planner.files import check_writable
    path = Path(path)
    if path.suffix.lower() not in FORMATS:
        raise UnknownReportFormat(f"unknown format {path.suffix!r}; use .html or .md")
    return check_writable(path)


class _Doc:
    """A document built as (kind, payload) blocks, written as HTML or Markdown."""

    def __init__(self, title: str, instance=None, command: str | None = None):
        self.title, self.blocks = title, []
        self.provenance = provenance(instance, command) if instance is not None else []
        if self.provenance:
            self.p("; ".join(f"{k}: {v}" for k, v in self.provenance), "prov")

    def h2(self, text):
        self.blocks.append(("h2", text))

    def p(self, text, css: str = ""):
        self.blocks.append(("p", (text, css)))

    def items(self, lines, css: str = ""):
        if lines:
            self.blocks.append(("ul", (list(lines), css)))

    def table(self, header, rows):
        self.blocks.append(("table", (header, rows)))

    def image(self, png: bytes, alt: str):
        self.blocks.append(("img", (png, alt)))

    def _with_provenance(self) -> list:
        if not self.provenance:
            return self.blocks
        return self.blocks + [("h2", "Provenance"), ("table", (["", "value"], [list(r) for r in self.provenance]))]

    def html(self) -> str:
        e = html.escape
        out = [f"<!doctype html><html><head><meta charset='utf-8'><title>{e(self.title)}</title>"
               f"<style>{STYLE}</style></head><body><h1>{e(self.title)}</h1>"]
        for kind, x in self._with_provenance():
            if kind == "h2":
                out.append(f"<h2>{e(x)}</h2>")
            elif kind == "p":
                out.append(f"<p class='{x[1]}'>{e(x[0])}</p>")
            elif kind == "ul":
                out.append(f"<ul class='{x[1]}'>" + "".join(f"<li>{e(str(i))}</li>" for i in x[0]) + "</ul>")
            elif kind == "table":
                header, rows = x
                out.append("<table><tr>" + "".join(f"<th>{e(str(h))}</th>" for h in header) + "</tr>"
                           + "".join("<tr>" + "".join(f"<td>{e(str(c))}</td>" for c in r) + "</tr>" for r in rows)
                           + "</table>")
            elif kind == "img":
                data = base64.b64encode(x[0]).decode()
                out.append(f"<p><img alt='{e(x[1])}' src='data:image/png;base64,{data}'></p>")
        out.append("</body></html>")
        return "\n".join(out)

    def markdown(self) -> str:
        out = [f"# {self.title}", ""]
        for kind, x in self._with_provenance():
            if kind == "h2":
                out += [f"## {x}", ""]
            elif kind == "p":
                out += [x[0], ""]
            elif kind == "ul":
                out += [f"- {i}" for i in x[0]] + [""]
            elif kind == "table":
                header, rows = x
                out.append("| " + " | ".join(str(h) for h in header) + " |")
                out.append("|" + "---|" * len(header))
                out += ["| " + " | ".join(str(c).replace("|", "/") for c in r) + " |" for r in rows]
                out.append("")
            elif kind == "img":
                out += [f"![{x[1]}](data:image/png;base64,{base64.b64encode(x[0]).decode()})", ""]
        return "\n".join(out)

    def write(self, path: str | Path) -> Path:
        """Write atomically (a complete report or none; an existing one is never left truncated)."""
        from planner.files import write_text
        path = check_report_path(path)
        return write_text(path, self.html() if path.suffix.lower() == ".html" else self.markdown())


def dtplan_version() -> str:
    """The installed distribution's version ('unknown' when dtplan runs from a bare checkout)."""
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version("dtplan")
    except PackageNotFoundError:
        return "unknown (not installed)"


def provenance(instance, command: str | None = None) -> list[tuple[str, str]]:
    """How a report was made: dtplan version, assumption profile (scenario, straggler strategy),
    MFU, the constants the instance overrides, and the command line (when run from the CLI).

    `instance`: an `Instance`, or the raw (validated) instance data where no single instance
    stands for the report (`dtplan thresholds`, whose hardware varies per row)."""
    from planner.cost.assumptions import apply_overrides, load_profile
    explicit_fields = ("scenario", "straggler", "error_feedback", "mfu")
    if isinstance(instance, dict):
        chosen = instance.get("assumptions") or {}
        profile, constants = chosen.get("profile", "reference"), dict(chosen.get("constants") or {})
        explicit = {k: chosen[k] for k in explicit_fields if chosen.get(k) is not None}
        a = apply_overrides(apply_overrides(load_profile(profile), constants), explicit)
    else:
        constants = dict(instance.assumptions.constants)
        explicit = {k: getattr(instance.assumptions, k) for k in explicit_fields
                    if getattr(instance.assumptions, k) is not None}
        a = instance.resolved_assumptions()
    overridden = {**explicit, **constants}
    return [("dtplan", dtplan_version()),
            ("assumption profile", f"{a.profile} (scenario {a.scenario}, straggler {a.straggler})"),
            ("MFU", f"{a.mfu:g}"),
            ("overridden constants", ", ".join(f"{k} = {v}" for k, v in overridden.items()) or "none"),
            ("command", command or "called from Python (no command line)")]


# -- content -----------------------------------------------------------------------------------


def _question(doc: _Doc, instance) -> None:
    from planner.setting import setting_from_instance
    from planner.fleet.present import fleet_label
    s = setting_from_instance(instance)
    doc.h2("Question")
    if instance.description:
        doc.p(instance.description)
    wan = instance.network.wan
    doc.table(["", "given"], [
        ["model", f"{s.params / 1e9:,.4g}B parameters" + (f" ({s.active_params / 1e9:,.4g}B active)" if s.is_moe else "")],
        ["target", f"{s.target:.3e} FLOP ({s.target_kind})"],
        ["fleet", fleet_label(instance)
                  + (f", goodput {s.goodput:g}" if s.goodput < 1 else "")],
        ["WAN", f"{wan.up_mbps:,g} Mb/s up, {wan.down_mbps:,g} Mb/s down, {wan.rtt_ms:,g} ms RTT"],
        ["longest run", f"{s.window_s / SECONDS_PER_DAY:,.1f} days"],
        ["budget", "none" if s.budget_usd is None else f"${s.budget_usd:,.0f}"],
        ["objective", instance.objective],
    ])


def _plan_and_breakdown(doc: _Doc, result, heading: str = "") -> None:
    e = result.evaluation
    if e is None or result.plan is None:
        return
    _evaluation(doc, e, heading)
    if result.binding:
        doc.h2(f"Binding at the optimum{heading}")
        doc.items(result.binding)
    if e.warnings:
        doc.h2(f"Warnings{heading}")
        doc.items(e.warnings, "warn")


def _evaluation(doc: _Doc, e, heading: str = "") -> None:
    """The plan, its breakdown and the two plots (one outer step as a timeline, the efficiency)."""
    from planner.present.plots import efficiency_png, outer_step_timeline_png
    v, plan = e.values, e.plan
    doc.h2(f"Plan{heading}")
    doc.table(["decision", "value"], _plan_rows(plan))
    if getattr(e, "pool_rows", None):          # a fleet of pools (planner.fleet)
        from planner.fleet.present import POOL_HEADER, pool_cells, pool_title, site_lines
        doc.h2(f"Pools{heading}")
        doc.items([pool_title(getattr(e, "sync_rule", "straggler"))])
        doc.table(POOL_HEADER, [pool_cells(row) for row in e.pool_rows])
        if e.sites is not None:                  # with sites: the regions chosen, drawn on the site graph
            from planner.present.site_plot import region_labels, site_graph_png
            from planner.sites import site_graph
            doc.items(site_lines(e.sites))
            chosen = region_labels(e.sites["region_units"]) if "region_units" in e.sites else None
            doc.image(site_graph_png(site_graph(e.instance.network), e.sites["regions"], "sites and regions used",
                                     chosen),
                      "the site graph: the regions of the plan's sites, link speeds and RTTs")
    doc.h2(f"Breakdown{heading}")
    doc.table(["quantity", "value"], [
        ["time to target", f"{v['time_to_target_s'] / SECONDS_PER_DAY:,.2f} days"
                           + (f" ({v['training_time_s'] / SECONDS_PER_DAY:,.2f} training, goodput {e.setting.goodput:g})"
                              if e.setting.goodput < 1 else "")],
        ["nodes / GPUs", f"{int(e.batch.nodes[0]):,} / {int(v['total_gpus']):,}"],
        ["hardware cost", f"${v['cost_usd']:,.0f}"],
        ["inner step", f"{v['t_step_s']:.3g} s"],
        ["WAN sync", f"{v['t_sync_s']:.3g} s"],
        ["outer step", f"{v['outer_time_s']:.3g} s"],
        ["compute utilization", f"{v['compute_utilization']:.3f}"],
        ["eta at the target", f"{v['eta_target']:.4f}"],
        ["bottleneck", e.bottleneck],
    ])
    regional = plan.regional_rounds if plan.mode == "hierarchical" else None
    doc.image(outer_step_timeline_png(v, plan.mode, bool(plan.streaming), int(plan.inner_steps or 1), regional),
              "one outer step as a timeline: compute and synchronisation lanes")
    doc.image(efficiency_png(v), "efficiency factors")


def _plan_rows(plan) -> list[list]:
    """The decisions the plan's mode uses (as `dtplan solve` prints them)."""
    used = {"mode", "nodes", "precision", "expert_parallel"}
    if plan.mode != "pipeline_wan":
        used |= {"inner_steps", "compression", "streaming"}
    if plan.mode == "hierarchical":
        used |= {"group_size", "regional_rounds"}
    if plan.mode in ("pp_group", "pipeline_wan"):
        used |= {"stages", "micro_batches", "activation_compression"}
    return [[k, v] for k, v in plan.model_dump().items() if k in used and v is not None]


def _answer_line(result) -> tuple[str, str]:
    v = result.objective_value
    if v is None:
        return f"{result.status.upper()}: no plan meets every limit", "bad"
    if result.objective.by_time:
        text = f"{v / SECONDS_PER_DAY:,.2f} days to target"
    elif result.objective.by_cost:
        text = f"${v:,.0f}"
    else:
        text = f"{v:.4e} FLOP {result.compute_kind}"
    return f"{result.status.upper()} ({result.objective}): {text}; solver {result.solver}, gap " \
           f"{0 if result.gap is None else result.gap:.1e}, {result.solve_time_s:.2f} s", "ok"


def solve_report(instance, result, path: str | Path, command: str | None = None) -> Path:
    from planner.present.render import solve_heading
    doc = _Doc(solve_heading("dtplan solve", result.objective, instance), instance, command)
    _question(doc, instance)
    doc.h2("Answer")
    text, css = _answer_line(result)
    doc.p(text, css)
    doc.items(result.infeasibility, "bad")
    _plan_and_breakdown(doc, result)
    return doc.write(path)


def evaluate_report(instance, evaluation, path: str | Path, command: str | None = None) -> Path:
    """`dtplan evaluate --report`: one given plan scored, with every limit it breaks."""
    doc = _Doc(f"dtplan evaluate: {instance.name or 'instance'}", instance, command)
    _question(doc, instance)
    doc.h2("Answer")
    v = evaluation.values
    if evaluation.feasible:
        doc.p(f"MEETS EVERY LIMIT: {v['time_to_target_s'] / SECONDS_PER_DAY:,.2f} days to target, "
              f"${v['cost_usd']:,.0f}", "ok")
    else:
        doc.p("BREAKS A LIMIT: the plan does not meet every limit", "bad")
        doc.items(evaluation.violations, "bad")
    _evaluation(doc, evaluation)
    if evaluation.warnings:
        doc.h2("Warnings")
        doc.items(evaluation.warnings, "warn")
    return doc.write(path)


def feasible_report(instance, f, path: str | Path, notes: list[str] | None = None,
                    command: str | None = None) -> Path:
    doc = _Doc(f"dtplan feasible: {instance.name or 'instance'}", instance, command)
    doc.items(notes or [])
    _question(doc, instance)
    doc.h2("Answer")
    if f.feasible:
        doc.p(f"FEASIBLE: the target is reached in {f.result.objective_value / SECONDS_PER_DAY:,.2f} days", "ok")
        _plan_and_breakdown(doc, f.result)
        return doc.write(path)
    doc.p("INFEASIBLE: no plan reaches the target within every limit", "bad")
    doc.items(f.result.infeasibility, "bad")
    doc.h2("Smallest single change that makes it feasible")
    doc.table(["limit", "change", "options for dtplan solve (pasteable)", "time to target"],
              [[x.limit, x.summary, " ".join("--set " + shlex.quote(arg) for arg in x.set_args()),
                f"{x.result.objective_value / SECONDS_PER_DAY:,.1f} days"] for x in f.fixes])
    doc.items([f"no single change: {line}" for line in f.no_fix])
    for i, fix in enumerate(f.fixes, 1):
        _plan_and_breakdown(doc, fix.result, f" with fix {i} ({fix.limit}: {fix.summary})")
    return doc.write(path)


def compare_report(instance, rows, objective: Objective, path: str | Path, command: str | None = None) -> Path:
    from planner.setting import max_days
    from planner.present.plots import comparison_png
    from planner.questions.compare import plan_short
    doc = _Doc(f"dtplan compare: {instance.name or 'instance'}", instance, command)
    _question(doc, instance)
    doc.h2("Ranking")
    table = []
    for r in rows:
        res = r.result
        table.append([r.rank if r.feasible else "-", r.hardware, res.status,
                      f"{r.days:,.1f}" if r.days is not None else
                      f"{res.fastest_time_s / SECONDS_PER_DAY:,.1f} (over the limit)" if res.fastest_time_s else "-",
                      "-" if res.plan is None else f"{res.plan.nodes:,}",
                      "-" if res.evaluation is None else f"${res.evaluation.values['cost_usd']:,.0f}",
                      plan_short(res.plan) if res.plan else "; ".join(res.infeasibility)[:120]])
    doc.table(["rank", "hardware", "status", "days", "nodes", "cost", "plan / reason"], table)
    from planner.questions.compare import comparison_notes
    doc.items(comparison_notes(rows))
    doc.image(comparison_png(rows, objective, title=instance.name or "", limit_days=max_days(instance)[0]),
              "comparison chart")
    return doc.write(path)
