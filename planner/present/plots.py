"""Figures (matplotlib, the non-interactive Agg backend): PNG or SVG by the file's suffix.

- `comparison_plot` / `comparison_png`: `dtplan compare`'s answer, one horizontal bar per
  hardware preset, best at the top, of the objective's value (time to target in days,
  minimum cost in USD, or compute in FLOP); a log scale when the values span two decades
  or more; for min_time the duration limit drawn as a vertical line, and a preset whose
  fastest plan misses it drawn at that fastest time (hatched, red; `SolveResult.fastest_time_s`);
  presets without any plan marked where their bar would be.
- `outer_step_timeline_png`: one outer step (one global cycle when hierarchical) as a
  timeline with one lane per activity (compute, regional sync, WAN sync), so that what
  overlaps (streaming DiLoCo: the sync runs during the next block of compute) and what
  waits is visible.
- `efficiency_png`: the efficiency factors as bars with their values written on them.

Files are written atomically (planner/files.py).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING

from planner.objectives import Objective
from planner.cost.duration import SECONDS_PER_DAY

if TYPE_CHECKING:
    from planner.questions.compare import Comparison

PLOT_SUFFIXES = (".png", ".svg")
LOG_SCALE_RATIO = 100.0      # largest / smallest value at which the axis becomes logarithmic



def pyplot():
    """matplotlib.pyplot on the Agg backend (no display: the CLI and the tests run headless).

    Imported on first use only: matplotlib takes longer to import than a solve takes, and
    most commands draw nothing."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


class UnknownPlotFormat(ValueError):
    """A plot path whose suffix is neither .png nor .svg."""


def check_plot_path(path: str | Path) -> str:
    """'png' or 'svg' from the suffix (case-insensitive); UnknownPlotFormat otherwise."""
    suffix = Path(path).suffix.lower()
    if suffix not in PLOT_SUFFIXES:
        raise UnknownPlotFormat(f"cannot write a plot to {str(path)!r}: unknown suffix {suffix or '(none)'!r}; "
                                f"use {' or '.join(PLOT_SUFFIXES)}")
    return suffix[1:]


def uses_log_scale(values: list[float]) -> bool:
    """A log axis when the positive values span LOG_SCALE_RATIO (two decades) or more."""
    shown = [v for v in values if v > 0]
    return bool(shown) and max(shown) / min(shown) >= LOG_SCALE_RATIO


def _plotted(row: Comparison, objective: Objective) -> float | None:
    if row.value is None or not math.isfinite(row.value):
        return None
    return row.value / SECONDS_PER_DAY if objective.by_time else row.value


def _label(x: float, objective: Objective) -> str:
    if objective.by_time:
        return f"{x:,.1f} d"
    if objective.by_cost:
        return f"${x / 1e9:,.3g}B" if x >= 1e9 else f"${x / 1e6:,.3g}M" if x >= 1e5 else f"${x:,.0f}"
    return f"{x:.2e}"


def comparison_figure(rows: list[Comparison], objective: Objective, title: str = "", limit_days: float | None = None):
    """The comparison bar chart as a matplotlib figure (see the module docstring); `limit_days`,
    the duration limit, is drawn when the axis is time (min_time)."""
    plt = pyplot()
    from matplotlib.ticker import FuncFormatter
    from matplotlib.transforms import blended_transform_factory
    values = [_plotted(r, objective) for r in rows]
    missed = {i: r.result.fastest_time_s / SECONDS_PER_DAY for i, r in enumerate(rows)
              if objective.by_time and values[i] is None and r.result.fastest_time_s}
    shown = [v for v in values if v is not None and v > 0] + list(missed.values())
    limit = limit_days if objective.by_time and limit_days and math.isfinite(limit_days) else None
    scale = shown + ([limit] if limit else [])
    log = uses_log_scale(scale)
    fig, ax = plt.subplots(figsize=(9, 1.2 + 0.42 * max(len(rows), 1)), layout="constrained")
    ys = list(range(len(rows)))
    best = min((i for i, v in enumerate(values) if v is not None), default=None)
    colors = ["#2a9d8f" if i == best else "#5b7db1" for i in ys]
    bars = ax.barh(ys, [v if v is not None else 0.0 for v in values], color=colors, height=0.65)
    if log:
        ax.set_xscale("log")
        ax.set_xlim(min(scale) / 3, max(scale) * 6)
    elif scale:
        ax.set_xlim(0, max(scale) * 1.22)
    else:                                   # nothing to scale: no plan anywhere
        ax.set_xlim(0, 1)
        ax.set_xticks([])
    if objective.by_cost:
        ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: _label(x, objective) if x > 0 else "0"))
    ax.set_yticks(ys, [f"{r.rank}. {r.hardware}" for r in rows])
    ax.invert_yaxis()                       # rank 1 at the top
    at_left = blended_transform_factory(ax.transAxes, ax.transData)
    for y, (row, v, bar) in enumerate(zip(rows, values, bars)):
        if v is not None:
            ax.text(v, y, " " + _label(v, objective), va="center", ha="left", fontsize=8)
            continue
        bar.set_visible(False)
        if y in missed:
            ax.barh([y], [missed[y]], height=0.65, color="none", edgecolor="#c0392b", hatch="///")
            ax.text(missed[y], y, f" {_label(missed[y], objective)}: misses the limit", va="center", ha="left",
                    fontsize=8, color="#c0392b", fontweight="bold")
            continue
        reason = "no plan" if row.feasible else "infeasible"
        ax.text(0.01, y, f"x {reason}", transform=at_left, va="center", ha="left", color="#c0392b",
                fontsize=9, fontweight="bold")
    if limit:       # a legend at the top right: the best (shortest) bars are at the top
        ax.axvline(limit, color="#c0392b", linestyle="--", linewidth=1.2, label=f"duration limit {limit:,.0f} d")
        ax.legend(loc="upper right", fontsize=8)
    ax.set_xlabel(objective.axis + (", log scale" if log else "") + f" ({objective.better})")
    ax.grid(axis="x", which="major", alpha=0.3)
    ax.set_axisbelow(True)
    if title:
        ax.set_title(title, fontsize=10, loc="left")
    return fig


def comparison_plot(rows: list[Comparison], objective: Objective, paths: list[str | Path], title: str = "",
                    limit_days: float | None = None) -> list[Path]:
    """Write the comparison bar chart to every path (format by suffix, atomically); returns the paths.

    `rows` in rank order (as `planner.questions.compare.compare` returns them). Raises UnknownPlotFormat
    before drawing anything if a suffix is not .png or .svg, OutputPathError (planner/files.py)
    if a path cannot be written.
    """
    from planner.files import atomic_path
    formats = [check_plot_path(p) for p in paths]
    fig = comparison_figure(rows, objective, title, limit_days)
    try:
        written = []
        for path, fmt in zip(paths, formats):
            metadata = {"Date": None} if fmt == "svg" else {}
            with atomic_path(path) as tmp:
                fig.savefig(tmp, format=fmt, dpi=120, metadata=metadata)
            written.append(Path(path))
        return written
    finally:
        pyplot().close(fig)


def comparison_png(rows: list[Comparison], objective: Objective, title: str = "", limit_days: float | None = None) -> bytes:
    """The comparison bar chart as PNG bytes (for reports)."""
    return figure_png(comparison_figure(rows, objective, title, limit_days))


def figure_png(fig) -> bytes:
    """A figure as PNG bytes; the figure is closed."""
    import io
    buf = io.BytesIO()
    try:
        fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    finally:
        pyplot().close(fig)
    return buf.getvalue()


# -- one outer step and the efficiency ------------------------------------------------------

LANE_COLORS = {"compute": "#4c72b0", "regional sync": "#55a868", "WAN sync": "#dd8452"}
MAX_DRAWN_CYCLES = 40       # regional cycles drawn one by one; beyond, the rest is one block


def outer_step_lanes(v: dict[str, float], mode: str, streaming: bool, inner_steps: int,
                     regional_rounds: int | None) -> dict[str, list[tuple[float, float]]]:
    """(start s, duration s) segments per lane for one outer step, from the evaluator's values.

    The cost model's timing (planner/cost/timing.py `outer_time_s`, planner/cost/modes.py):
    flat and pp_group: compute block C = H t_step; the WAN sync t_sync runs alongside it with
    streaming (step = max(C, t_sync)) or after it without (step = C + t_sync). Hierarchical:
    R regional cycles, each H t_step of compute with its regional sync t_reg alongside or
    after (cycle c_reg), then the global sync among group leaders t_glob alongside the R
    cycles or after them. Unsynchronised modes (pipeline_wan, one node): compute only.
    Beyond MAX_DRAWN_CYCLES regional cycles the rest is drawn as one compute block. (With the
    `dtplan` profile's overlap terms the evaluator's outer step can differ from these lanes;
    the timeline marks the evaluator's figure.)
    """
    block = float(v["compute_block_s"])
    lanes: dict[str, list[tuple[float, float]]] = {"compute": [], "regional sync": [], "WAN sync": []}
    if mode == "hierarchical" and regional_rounds:
        r = int(regional_rounds)
        cycle, t_reg = float(v["regional_cycle_s"]), float(v["t_regional_s"])
        work = block / r
        for i in range(min(r, MAX_DRAWN_CYCLES)):
            start = i * cycle
            lanes["compute"].append((start, work))
            lanes["regional sync"].append((start if streaming else start + work, t_reg))
        if r > MAX_DRAWN_CYCLES:
            start = MAX_DRAWN_CYCLES * cycle
            lanes["compute"].append((start, (r - MAX_DRAWN_CYCLES) * cycle))
        wan_start = 0.0 if streaming else r * cycle
    else:
        lanes["compute"].append((0.0, block))
        wan_start = 0.0 if streaming else block
    if v.get("synchronised", 0) and float(v["t_sync_s"]) > 0:
        lanes["WAN sync"].append((wan_start, float(v["t_sync_s"])))
    return {k: seg for k, seg in lanes.items() if seg}


def outer_step_timeline_png(v: dict[str, float], mode: str, streaming: bool, inner_steps: int,
                            regional_rounds: int | None) -> bytes:
    """`outer_step_timeline` as PNG bytes."""
    return figure_png(outer_step_timeline(v, mode, streaming, inner_steps, regional_rounds))


def outer_step_timeline(v: dict[str, float], mode: str, streaming: bool, inner_steps: int,
                        regional_rounds: int | None):
    """One outer step as a timeline (lanes of `outer_step_lanes`), the step's end marked; a figure."""
    plt = pyplot()
    lanes = outer_step_lanes(v, mode, streaming, inner_steps, regional_rounds)
    outer = float(v["outer_time_s"])
    names = list(lanes)
    busy = {"compute": float(v["compute_block_s"]), "WAN sync": float(v["t_sync_s"]),
            "regional sync": float(v["t_regional_s"]) * (regional_rounds or 0)}
    fig, ax = plt.subplots(figsize=(8, 0.9 + 0.55 * len(names)))
    for y, name in enumerate(names):
        ax.broken_barh(lanes[name], (y - 0.3, 0.6), facecolors=LANE_COLORS[name], edgecolor="white", linewidth=0.5)
        ax.text(max(s + d for s, d in lanes[name]), y, f" {busy[name]:.3g} s", va="center", ha="left", fontsize=8)
    compute_end = max(s + d for s, d in lanes["compute"])
    if outer > compute_end * (1 + 1e-9):           # compute waits for a sync: the exposed communication
        ax.broken_barh([(compute_end, outer - compute_end)], (-0.3, 0.6), facecolors="none", edgecolor="#999",
                       hatch="///", linewidth=0.5)
        if outer - compute_end > 0.3 * outer:
            ax.text(compute_end + (outer - compute_end) / 2, 0.38, "idle: waiting for the sync", va="top",
                    ha="center", fontsize=7, color="#555")
    ax.axvline(outer, color="#222", linestyle="--", linewidth=1)
    ax.text(outer, len(names) - 0.45, f" outer step {outer:.3g} s", fontsize=8, va="bottom", ha="left")
    ax.set_yticks(range(len(names)), names)
    ax.invert_yaxis()
    ax.set_ylim(len(names) - 0.3, -0.7)
    end = max([outer] + [s + d for seg in lanes.values() for s, d in seg])
    ax.set_xlim(0, end * 1.25)
    ax.set_xlabel("seconds within one outer step" + (" (global cycle)" if mode == "hierarchical" else ""))
    overlap = ("streaming: syncs overlap compute" if streaming else "no streaming: syncs follow compute")
    if "WAN sync" not in lanes and "regional sync" not in lanes:
        overlap = "no synchronisation between replicas"
    ax.set_title(f"One outer step, {mode}, H = {inner_steps}"
                 + (f", R = {regional_rounds}" if mode == "hierarchical" and regional_rounds else "")
                 + f": {overlap}", fontsize=10, loc="left")
    ax.grid(axis="x", alpha=0.3)
    ax.set_axisbelow(True)
    return fig


EFFICIENCY_BARS = (("eta_H (sync interval)", "eta_h"), ("eta_C (compression)", "eta_c"),
                   ("eta_A (activations)", "eta_a"), ("eta_R (replicas, at target)", "eta_r_target"),
                   ("eta (all)", "eta_target"))


def efficiency_png(v: dict[str, float]) -> bytes:
    """`efficiency_figure` as PNG bytes."""
    return figure_png(efficiency_figure(v))


def efficiency_figure(v: dict[str, float]):
    """The efficiency factors (fractions of compute that count), each bar with its value written."""
    plt = pyplot()
    labels = [n for n, _ in EFFICIENCY_BARS]
    values = [float(v[k]) for _, k in EFFICIENCY_BARS]
    fig, ax = plt.subplots(figsize=(7, 2.8))
    bars = ax.barh(labels, values, color=["#4c72b0"] * (len(values) - 1) + ["#2a9d8f"])
    ax.bar_label(bars, labels=[f"{x:.4f}" for x in values], padding=3, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(0, 1.15)
    ax.set_title("Efficiency factors: the fraction of compute that counts", fontsize=10, loc="left")
    return fig
