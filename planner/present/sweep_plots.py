"""Figures of a sweep (matplotlib, Agg backend), PNG or SVG by the file's suffix, written atomically.

- `lines_plot`: a result column (time to target in days by default) against a swept field,
  one curve per value of a second swept field, the duration limit drawn as a line;
- `distribution_plot`: Monte Carlo values as a histogram with their empirical CDF and the
  5th, 50th and 95th percentiles marked;
- `pareto_plot`: time to target against cost for every point (e.g. over node counts and
  hardware), the Pareto front (no other point both faster and cheaper) joined by a line.
"""

from __future__ import annotations

import copy
import math
from pathlib import Path
from typing import Any, Sequence

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from planner.files import atomic_path  # noqa: E402
from planner.objectives import objective_named  # noqa: E402
from planner.present.plots import check_plot_path  # noqa: E402
from planner.questions.sweep.run import SweepResult  # noqa: E402
from planner.schema.instance import parse_instance  # noqa: E402
from planner.setting import max_days  # noqa: E402

PERCENTILES = (5, 50, 95)
_LABELS = {"time_to_target_days": "time to target, days", "days": "days to target (fastest plan)",
           "cost_usd": "hardware cost, USD", "objective_value": "objective value"}


def _label(column: str) -> str:
    return _LABELS.get(column, column)


def value_label(value: Any) -> str:
    """A swept value as a short label: an object as 'key=value, ...', a list as 'a/b'."""
    if isinstance(value, dict):
        return ", ".join(f"{k}={value_label(v)}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return "/".join(value_label(v) for v in value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _save(fig, path: str | Path) -> Path:
    fmt = check_plot_path(path)
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format=fmt, dpi=120, bbox_inches="tight")
    plt.close(fig)
    return Path(path)


def _numbers(values: Sequence[Any]) -> list[float | None]:
    out = []
    for v in values:
        out.append(float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
                   else None)
    return out


def lines_plot(rows: list[dict[str, Any]], x: str, path: str | Path, y: str = "time_to_target_days",
               series: str | None = None, limit: float | None = None, title: str = "",
               ylabel: str | None = None) -> Path:
    """`y` against swept field `x`, one curve per value of `series`; points without a value
    (infeasible, errors) are left out of their curve; `limit` drawn as a dashed line."""
    fig, ax = plt.subplots(figsize=(7, 4.2))
    groups: dict[Any, list[tuple[Any, float]]] = {}
    numeric_x = all(isinstance(r.get(x), (int, float)) and not isinstance(r.get(x), bool) for r in rows)
    xval = (lambda r: r.get(x)) if numeric_x else (lambda r: value_label(r.get(x)))
    for r in rows:
        key = value_label(r.get(series)) if series else None
        yv = _numbers([r.get(y)])[0]
        groups.setdefault(key, [])
        if yv is not None:
            groups[key].append((xval(r), yv))
    categories = list(dict.fromkeys(xval(r) for r in rows))
    for key, pts in groups.items():
        xs = [p[0] if numeric_x else categories.index(p[0]) for p in pts]
        ax.plot(xs, [p[1] for p in pts], marker="o", label=f"{series} = {key}" if series else None)
    if not numeric_x:
        ax.set_xticks(range(len(categories)), categories, rotation=25, ha="right", fontsize=7)
    elif len(categories) > 2:
        xs = [r.get(x) for r in rows if r.get(x)]
        if xs and min(xs) > 0 and max(xs) / min(xs) >= 100:
            ax.set_xscale("log")
    ys = [v for pts in groups.values() for _, v in pts]
    if ys and min(ys) > 0 and max(ys) / min(ys) >= 100:
        ax.set_yscale("log")
    if limit is not None and y in ("time_to_target_days", "days"):
        ax.axhline(limit, color="crimson", linestyle="--", linewidth=1, label=f"duration limit {limit:,.0f} days")
    ax.set_xlabel(x)
    ax.set_ylabel(ylabel or _label(y))
    ax.grid(True, alpha=0.3)
    if title:
        ax.set_title(title, fontsize=10)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8)
    return _save(fig, path)


def distribution_plot(values: Sequence[Any], path: str | Path, label: str = "days",
                      limit: float | None = None, title: str = "") -> Path:
    """Histogram and empirical CDF of the finite `values`, percentiles marked; `limit` drawn."""
    xs = np.array([v for v in _numbers(values) if v is not None])
    fig, ax = plt.subplots(figsize=(7, 4.2))
    if len(xs):
        ax.hist(xs, bins=min(40, max(5, int(math.sqrt(len(xs))))), color="steelblue", alpha=0.6)
        ecdf = ax.twinx()
        s = np.sort(xs)
        ecdf.step(s, np.arange(1, len(s) + 1) / len(s), where="post", color="black", linewidth=1)
        ecdf.set_ylim(0, 1.02)
        ecdf.set_ylabel("fraction of draws at most x")
        for q, v in zip(PERCENTILES, np.percentile(xs, PERCENTILES)):
            ax.axvline(v, color="gray", linestyle=":", linewidth=1)
            ax.annotate(f"p{q} {v:,.4g}", (v, 0.98), xycoords=("data", "axes fraction"), rotation=90,
                        va="top", ha="right", fontsize=8)
    if limit is not None:
        ax.axvline(limit, color="crimson", linestyle="--", linewidth=1)
        ax.annotate(f"limit {limit:,.0f}", (limit, 0.5), xycoords=("data", "axes fraction"), rotation=90,
                    va="center", ha="left", fontsize=8, color="crimson")
    ax.set_xlabel(_label(label))
    ax.set_ylabel("draws")
    missing = len(values) - len(xs)
    ax.set_title((title + "\n" if title else "") + f"{len(xs)} draws with a value" +
                 (f", {missing} without (no plan)" if missing else ""), fontsize=10)
    return _save(fig, path)


def pareto_front(points: Sequence[tuple[float, float]]) -> list[int]:
    """Indices of the points no other point beats on both coordinates (both minimised),
    sorted by the first coordinate."""
    order = sorted(range(len(points)), key=lambda i: (points[i][0], points[i][1]))
    front, best = [], math.inf
    for i in order:
        if points[i][1] < best:
            front.append(i)
            best = points[i][1]
    return front


def pareto_plot(rows: list[dict[str, Any]], path: str | Path, group: str | None = None,
                limit: float | None = None, title: str = "") -> Path:
    """Time to target against cost for every point with a plan, coloured by `group`
    (e.g. fleet.hardware), labelled by node count; the Pareto front joined."""
    pts = [(r["time_to_target_days"], r["cost_usd"], r) for r in rows
           if _numbers([r.get("time_to_target_days")])[0] is not None and _numbers([r.get("cost_usd")])[0] is not None]
    fig, ax = plt.subplots(figsize=(7, 4.2))
    groups = list(dict.fromkeys(r.get(group) for *_, r in pts)) if group else [None]
    for g in groups:
        sel = [(t, c, r) for t, c, r in pts if not group or r.get(group) == g]
        ax.scatter([c for _, c, _ in sel], [t for t, _, _ in sel], s=18, label=str(g) if group else None)
    front = pareto_front([(c, t) for t, c, _ in pts])
    if front:
        ax.plot([pts[i][1] for i in front], [pts[i][0] for i in front], color="black", linewidth=1,
                label="Pareto front")
        for i in front:
            nodes = pts[i][2].get("nodes")
            if nodes is not None:
                ax.annotate(f"{nodes}", (pts[i][1], pts[i][0]), fontsize=7, xytext=(3, 3), textcoords="offset points")
    if limit is not None:
        ax.axhline(limit, color="crimson", linestyle="--", linewidth=1, label=f"duration limit {limit:,.0f} days")
    ax.set_xlabel(_label("cost_usd"))
    ax.set_ylabel(_label("time_to_target_days"))
    ax.grid(True, alpha=0.3)
    if title:
        ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8)
    return _save(fig, path)


def plot_sweep(result: SweepResult, path: str | Path, kind: str | None = None, x: str | None = None,
               series: str | None = None, y: str | None = None, group: str | None = None,
               title: str = "") -> Path:
    """Draw a sweep's answer (the plots above). `kind` defaults to
    'distribution' for Monte Carlo sweeps and 'lines' for grids; `x` and `series` default to
    the first and second grid fields; `y` to days to target (reach: days; evaluate: days)."""
    spec = result.spec
    limit = max_days(parse_instance(copy.deepcopy(spec.base)))[0]
    if "limits.max_days" in spec.grid or "limits.max_days" in spec.vary:
        limit = None
    kind = kind or ("distribution" if spec.vary else "lines")
    fields = list(spec.grid) + list(spec.vary)
    y = y or ("days" if spec.command == "reach" else "time_to_target_days")
    if spec.command == "solve" and spec.objective is not None and objective_named(spec.objective).maximise \
            and y == "time_to_target_days":
        y = "objective_value"
    if kind == "distribution":
        return distribution_plot([r.get(y) for r in result.rows], path, label=y, limit=limit,
                                             title=title)
    if kind == "pareto":
        group = group or ("fleet.hardware" if "fleet.hardware" in fields else None)
        return pareto_plot(result.rows, path, group=group, limit=limit, title=title)
    x = x or fields[0]
    series = series if series is not None else (list(spec.grid)[1] if len(spec.grid) > 1 else None)
    ylabel = None
    if y == "objective_value":
        ylabel = objective_named(spec.objective or parse_instance(copy.deepcopy(spec.base)).objective).axis
    return lines_plot(result.rows, x, path, y=y, series=series, limit=limit, title=title, ylabel=ylabel)
