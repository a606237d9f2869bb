"""Reports a person would rather read than a terminal dump: `--report FILE.html` (or `.md`).

One self-contained file (plots embedded as PNG data URIs, styles inline, no external
resource) per command: the question (the instance), the answer (status and objective),
the plan, the breakdown of one outer step and of the efficiency, the binding limits and
warnings; `feasible` adds the fixes, `compare` the ranked table and its chart.
Every number comes from the result objects the terminal output is made from.
"""

from __future__ import annotations

import base64
import html
import io
import tempfile
from pathlib import Path
from typing import Any

from planner.cost.duration import SECONDS_PER_DAY

FORMATS = (".html", ".md")
STYLE = """body{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#222}
h1{font-size:1.5rem}h2{font-size:1.15rem;margin-top:2rem;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:.5rem 0}td,th{border:1px solid #ccc;padding:.25rem .6rem;text-align:left}
th{background:#f4f4f4}.ok{color:#176b1f;font-weight:bold}.bad{color:#a01010;font-weight:bold}
.warn{color:#8a5a00}img{max-width:100%}code{background:#f4f4f4;padding:0 .2rem}"""


class UnknownReportFormat(ValueError):
    pass


def check_report_path(path: str | Path) -> Path:
    path = Path(path)
    if path.suffix.lower() not in FORMATS:
        raise UnknownReportFormat(f"unknown format {path.suffix!r}; use .html or .md")
    return path


class _Doc:
    """A document built as (kind, payload) blocks, written as HTML or Markdown."""

    def __init__(self, title: str):
        self.title, self.blocks = title, []

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

    def html(self) -> str:
        e = html.escape
        out = [f"<!doctype html><html><head><meta charset='utf-8'><title>{e(self.title)}</title>"
               f"<style>{STYLE}</style></head><body><h1>{e(self.title)}</h1>"]
        for kind, x in self.blocks:
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
        for kind, x in self.blocks:
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
        path = check_report_path(path)
        path.write_text(self.html() if path.suffix.lower() == ".html" else self.markdown(), encoding="utf-8")
        return path


# -- plots ----------------------------------------------------------------------------------


def _png(fig) -> bytes:
    import matplotlib.pyplot as plt
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    plt.close(fig)
    return buf.getvalue()


def _outer_step_plot(v: dict[str, Any]) -> bytes:
    """Compute vs communication per outer step (seconds)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    parts = [("compute per outer step", v["compute_block_s"]), ("WAN sync", v["t_sync_s"]),
             ("regional sync", v["t_regional_s"]), ("outer step (wall)", v["outer_time_s"])]
    parts = [(k, float(x)) for k, x in parts if x and float(x) > 0]
    fig, ax = plt.subplots(figsize=(7, 0.5 + 0.45 * len(parts)))
    ax.barh([k for k, _ in parts][::-1], [x for _, x in parts][::-1], color=["#4c72b0", "#dd8452", "#55a868", "#8172b3"][:len(parts)][::-1])
    ax.set_xlabel("seconds")
    ax.set_title("One outer step: compute and communication")
    return _png(fig)


def _efficiency_plot(v: dict[str, Any]) -> bytes:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    names = [("eta_H (sync interval)", "eta_h"), ("eta_C (compression)", "eta_c"), ("eta_A (activations)", "eta_a"),
             ("eta_R (replicas, at target)", "eta_r_target"), ("eta (all)", "eta_target")]
    fig, ax = plt.subplots(figsize=(7, 2.8))
    ax.barh([n for n, _ in names][::-1], [float(v[k]) for _, k in names][::-1], color="#4c72b0")
    ax.set_xlim(0, 1)
    ax.set_title("Efficiency factors: the fraction of compute that counts")
    return _png(fig)


# -- content -----------------------------------------------------------------------------------


def _question(doc: _Doc, instance) -> None:
    from planner.evaluate import setting_from_instance
    s = setting_from_instance(instance)
    doc.h2("Question")
    if instance.description:
        doc.p(instance.description)
    wan = instance.network.wan
    doc.table(["", "given"], [
        ["model", f"{s.params / 1e9:,.4g}B parameters" + (f" ({s.active_params / 1e9:,.4g}B active)" if s.is_moe else "")],
        ["target", f"{s.target:.3e} FLOP ({s.target_kind})"],
        ["fleet", f"{instance.fleet.nodes:,} x {instance.hardware.name}"
                  + (f", goodput {s.goodput:g}" if s.goodput < 1 else "")],
        ["WAN", f"{wan.up_mbps:,g} Mb/s up, {wan.down_mbps:,g} Mb/s down, {wan.rtt_ms:,g} ms RTT"],
        ["longest run", f"{s.window_s / SECONDS_PER_DAY:,.1f} days"],
        ["budget", "none" if s.budget_usd is None else f"${s.budget_usd:,.0f}"],
        ["objective", instance.objective],
    ])


def _plan_and_breakdown(doc: _Doc, result) -> None:
    e = result.evaluation
    if e is None or result.plan is None:
        return
    v = e.values
    doc.h2("Plan")
    doc.table(["decision", "value"], _plan_rows(result.plan))
    doc.h2("Breakdown")
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
    doc.image(_outer_step_plot(v), "compute and communication per outer step")
    doc.image(_efficiency_plot(v), "efficiency factors")
    if result.binding:
        doc.h2("Binding at the optimum")
        doc.items(result.binding)
    if e.warnings:
        doc.h2("Warnings")
        doc.items(e.warnings, "warn")


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
    if result.objective == "min_time":
        text = f"{v / SECONDS_PER_DAY:,.2f} days to target"
    elif result.objective == "min_cost":
        text = f"${v:,.0f}"
    else:
        text = f"{v:.4e} FLOP {result.compute_kind}"
    return f"{result.status.upper()} ({result.objective}): {text}; solver {result.solver}, gap " \
           f"{0 if result.gap is None else result.gap:.1e}, {result.solve_time_s:.2f} s", "ok"


def solve_report(instance, result, path: str | Path) -> Path:
    doc = _Doc(f"dtplan solve: {instance.name or 'instance'}")
    _question(doc, instance)
    doc.h2("Answer")
    text, css = _answer_line(result)
    doc.p(text, css)
    doc.items(result.infeasibility, "bad")
    _plan_and_breakdown(doc, result)
    return doc.write(path)


def feasible_report(instance, f, path: str | Path, notes: list[str] | None = None) -> Path:
    doc = _Doc(f"dtplan feasible: {instance.name or 'instance'}")
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
    doc.table(["limit", "change", "fields", "time to target"],
              [[x.limit, x.summary, ", ".join(f"{k} = {v}" for k, v in x.fields.items()),
                f"{x.result.objective_value / SECONDS_PER_DAY:,.1f} days"] for x in f.fixes])
    doc.items([f"no single change: {line}" for line in f.no_fix])
    return doc.write(path)


def compare_report(instance, rows, objective: str, path: str | Path) -> Path:
    from planner.questions.compare import plan_short
    from planner.present.plots import comparison_plot
    doc = _Doc(f"dtplan compare: {instance.name or 'instance'}")
    _question(doc, instance)
    doc.h2("Ranking")
    table = []
    for r in rows:
        res = r.result
        table.append([r.rank if r.feasible else "-", r.hardware, res.status,
                      "-" if r.days is None else f"{r.days:,.1f}",
                      "-" if res.plan is None else f"{res.plan.nodes:,}",
                      "-" if res.evaluation is None else f"${res.evaluation.values['cost_usd']:,.0f}",
                      plan_short(res.plan) if res.plan else "; ".join(res.infeasibility)[:120]])
    doc.table(["rank", "hardware", "status", "days", "nodes", "cost", "plan / reason"], table)
    with tempfile.TemporaryDirectory() as tmp:
        png = Path(tmp) / "compare.png"
        comparison_plot(rows, objective, [png], title=instance.name or "")
        doc.image(png.read_bytes(), "comparison chart")
    return doc.write(path)
