"""Figures (matplotlib, the non-interactive Agg backend): PNG or SVG by the file's suffix.

`comparison_plot` draws `dtplan compare`'s answer: one horizontal bar per hardware preset,
best at the top, of the objective's value (time to target in days, minimum cost in USD,
or compute in FLOP); a log scale when the values span two decades or more; presets
without a plan marked 'infeasible' where their bar would be.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING

from planner.cost.duration import SECONDS_PER_DAY

if TYPE_CHECKING:
    from planner.questions.compare import Comparison

PLOT_SUFFIXES = (".png", ".svg")
LOG_SCALE_RATIO = 100.0      # largest / smallest value at which the axis becomes logarithmic

_AXIS = {"min_time": "time to target, days", "min_cost": "minimum cost, USD",
         "max_compute": "compute within the duration limit, FLOP"}
_BEST = {"min_time": "shorter is better", "min_cost": "lower is better", "max_compute": "larger is better"}


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


def _plotted(row: Comparison, objective: str) -> float | None:
    if row.value is None or not math.isfinite(row.value):
        return None
    return row.value / SECONDS_PER_DAY if objective == "min_time" else row.value


def _label(x: float, objective: str) -> str:
    if objective == "min_time":
        return f"{x:,.1f} d"
    if objective == "min_cost":
        return f"${x / 1e9:,.3g}B" if x >= 1e9 else f"${x / 1e6:,.3g}M" if x >= 1e5 else f"${x:,.0f}"
    return f"{x:.2e}"


def comparison_plot(rows: list[Comparison], objective: str, paths: list[str | Path], title: str = "") -> list[Path]:
    """Write the comparison bar chart to every path (format by suffix); returns the paths written.

    `rows` in rank order (as `planner.questions.compare.compare` returns them). Raises UnknownPlotFormat
    before drawing anything if a suffix is not .png or .svg, OSError if a file cannot be written.
    """
    formats = [check_plot_path(p) for p in paths]
    values = [_plotted(r, objective) for r in rows]
    shown = [v for v in values if v is not None and v > 0]
    log = uses_log_scale(shown)
    plt = pyplot()
    from matplotlib.ticker import FuncFormatter
    from matplotlib.transforms import blended_transform_factory
    fig, ax = plt.subplots(figsize=(9, 1.2 + 0.42 * max(len(rows), 1)), layout="constrained")
    try:
        ys = list(range(len(rows)))
        best = min((i for i, v in enumerate(values) if v is not None), default=None)
        colors = ["#2a9d8f" if i == best else "#5b7db1" for i in ys]
        bars = ax.barh(ys, [v if v is not None else 0.0 for v in values], color=colors, height=0.65)
        if log:
            ax.set_xscale("log")
            ax.set_xlim(min(shown) / 3, max(shown) * 6)
        elif shown:
            ax.set_xlim(0, max(shown) * 1.22)
        else:                                   # nothing to scale: no plan anywhere
            ax.set_xlim(0, 1)
            ax.set_xticks([])
        if objective == "min_cost":
            ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: _label(x, objective) if x > 0 else "0"))
        ax.set_yticks(ys, [f"{r.rank}. {r.hardware}" for r in rows])
        ax.invert_yaxis()                       # rank 1 at the top
        at_left = blended_transform_factory(ax.transAxes, ax.transData)
        for y, (row, v, bar) in enumerate(zip(rows, values, bars)):
            if v is None:
                bar.set_visible(False)
                reason = "no plan" if row.feasible else "infeasible"
                ax.text(0.01, y, f"x {reason}", transform=at_left, va="center", ha="left", color="#c0392b",
                        fontsize=9, fontweight="bold")
            else:
                ax.text(v, y, " " + _label(v, objective), va="center", ha="left", fontsize=8)
        ax.set_xlabel(_AXIS[objective] + (", log scale" if log else "") + f" ({_BEST[objective]})")
        ax.grid(axis="x", which="major", alpha=0.3)
        ax.set_axisbelow(True)
        if title:
            ax.set_title(title, fontsize=10, loc="left")
        written = []
        for path, fmt in zip(paths, formats):
            path = Path(path)
            metadata = {"Date": None} if fmt == "svg" else {}
            fig.savefig(path, format=fmt, dpi=120, metadata=metadata)
            written.append(path)
        return written
    finally:
        plt.close(fig)
