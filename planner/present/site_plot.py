"""The site graph as a figure: sites at their longitude and latitude, links labelled with Mb/s and RTT,
groups as coloured shapes around their sites (matplotlib, Agg; PNG or SVG by the file's suffix).

- position: (lon, lat) in degrees (an equirectangular map without coastlines), centred on the
  meridian that lets the fewest links cross the map's edge (those that still do are drawn dashed
  to both edges); sites closer than 8% of the map's span are nudged apart so each stays visible;
- a link: a line whose width grows with log10 of its narrower direction's Mb/s, labelled
  "up/down Mb/s" (one figure when both directions are equal) and its RTT, prefixed "~" when the
  distance rule estimated it and suffixed "(m)" when it comes from a measured pair;
- a group: a translucent rounded band around the convex hull of its sites, one colour per group,
  named in the legend; overlapping candidate groups overlap on the figure too;
- SVG text stays text (svg.fonttype 'none'): site names can be searched in the file;
- large graphs: link labels above 40 links, nudging above 60 sites, site names above 100 sites
  and groups beyond the first 20 are left out, and the caption says so.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Iterable, Sequence

import networkx as nx

from planner.present.plots import check_plot_path, pyplot

GROUP_COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
                 "#bcbd22", "#17becf")
UNGROUPED = "#b0b0b0"


def central_meridian(graph: nx.Graph) -> float:
    """The map's centre longitude (a multiple of 5 degrees): the fewest links crossing the map's edge
    (a link crosses when its ends are more than 180 degrees apart on the map), then the narrowest map."""
    lons = {n: float(d["lon"]) for n, d in graph.nodes(data=True)}
    if not lons:
        return 0.0

    def cost(c: float) -> tuple[int, float, float]:
        x = {n: shifted(lon, c) for n, lon in lons.items()}
        crossing = sum(abs(x[u] - x[v]) > 180 for u, v in graph.edges)
        return crossing, max(x.values()) - min(x.values()), abs(c)

    return min((float(c) for c in range(-180, 180, 5)), key=cost)


def shifted(lon: float, centre: float) -> float:
    """Longitude on a map centred on `centre`, in [-180, 180)."""
    return (lon - centre + 180.0) % 360.0 - 180.0


def positions(graph: nx.Graph, centre: float = 0.0, min_gap: float = 0.08) -> dict[str, tuple[float, float]]:
    """Map positions (longitude around `centre`, latitude) of every site, nudged apart where two sites
    are closer than `min_gap` of the map's span (a metro area's sites would hide each other): pairs
    too close move apart along the line joining them, in a few rounds; sites at one point first
    spread on a circle, neighbours `min_gap` apart. Geography is kept wherever sites do not crowd."""
    raw = {n: (shifted(float(d["lon"]), centre), float(d["lat"])) for n, d in graph.nodes(data=True)}
    if len(raw) < 2 or min_gap <= 0:
        return raw
    xs, ys = [p[0] for p in raw.values()], [p[1] for p in raw.values()]
    gap = min_gap * max(MIN_FRAME_DEG[0], max(xs) - min(xs), max(ys) - min(ys))
    at: dict[tuple[float, float], list[str]] = {}
    for name, p in raw.items():
        at.setdefault(p, []).append(name)
    pos = {}
    for (x, y), names in at.items():
        for k, name in enumerate(names):
            angle = 2 * math.pi * k / len(names) + math.pi / 2
            r = gap / (2 * math.sin(math.pi / len(names))) if len(names) > 1 else 0.0   # neighbours gap apart
            pos[name] = [x + r * math.cos(angle), y + r * math.sin(angle)]
    names = sorted(pos)
    for _ in range(60):
        moved = False
        for i, u in enumerate(names):
            for v in names[i + 1:]:
                dx, dy = pos[v][0] - pos[u][0], pos[v][1] - pos[u][1]
                d = math.hypot(dx, dy)
                if d < gap:
                    push = (gap - d) / 2 / max(d, 1e-9)
                    pos[u][0] -= dx * push
                    pos[u][1] -= dy * push
                    pos[v][0] += dx * push
                    pos[v][1] += dy * push
                    moved = True
        if not moved:
            break
    return {n: (p[0], p[1]) for n, p in pos.items()}


def convex_hull(points: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
    """Andrew's monotone chain: the hull's corners counter-clockwise (all points if fewer than 3)."""
    pts = sorted(set(points))
    if len(pts) < 3:
        return pts

    def cross(o, a, b):
        return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])

    lower, upper = [], []
    for p in pts:
        while len(lower) >= 2 and cross(lower[-2], lower[-1], p) <= 0:
            lower.pop()
        lower.append(p)
    for p in reversed(pts):
        while len(upper) >= 2 and cross(upper[-2], upper[-1], p) <= 0:
            upper.pop()
        upper.append(p)
    return lower[:-1] + upper[:-1]


def link_label(edge: dict) -> str:
    """'1000 Mb/s\\n20 ms', '100/50 Mb/s\\n~31 ms' (distance rule), '200 Mb/s\\n243 ms (m)' (measured)."""
    up, down = edge["up_mbps"], edge["down_mbps"]
    mbps = f"{up:g} Mb/s" if up == down else f"{up:g}/{down:g} Mb/s"
    source = edge.get("rtt_source", "given")
    rtt = f"{edge['rtt_ms']:.3g} ms"
    if source.startswith("distance rule"):
        rtt = "~" + rtt
    elif source.startswith("measured"):
        rtt += " (m)"
    return f"{mbps}\n{rtt}"


def _group_name(k: int, group: Iterable[str]) -> str:
    names = sorted(group)
    shown = ", ".join(names[:5]) + (f", +{len(names) - 5}" if len(names) > 5 else "")
    return f"group {k + 1}: {shown}"


# Beyond these, the figure leaves things out rather than draw an unreadable (or, for glyphs
# matplotlib cannot rasterise, impossible) picture; the caption says what was left out.
MAX_LABELLED_LINKS = 40         # link labels (Mb/s, RTT)
MAX_NUDGED_SITES = 60           # crowded sites moved apart
MAX_NAMED_SITES = 100           # site names written beside the sites
MAX_DRAWN_GROUPS = 20           # group bands (the legend names the first 10)
MAX_LEGEND_GROUPS = 10


def site_figure(graph: nx.Graph, groups: Sequence[Iterable[str]] = (), title: str = "",
                labels: Sequence[str] | None = None):
    """The figure of the site graph with `groups` (lists or sets of site names) coloured; `labels`:
    the legend's name of each group (default "group k: sites"), e.g. a plan's regions with their
    nodes and groups (`region_labels`)."""
    from matplotlib.patches import Patch
    from matplotlib.ticker import FixedLocator, FuncFormatter
    plt = pyplot()
    n_sites, n_links = graph.number_of_nodes(), graph.number_of_edges()
    centre = central_meridian(graph)
    pos = positions(graph, centre, min_gap=0.08 if n_sites <= MAX_NUDGED_SITES else 0.0)
    groups = [list(g) for g in groups]
    fig, ax = plt.subplots(figsize=(10, 6))
    colour_of, handles = {}, []
    for k, group in enumerate(groups[:MAX_DRAWN_GROUPS]):
        colour = GROUP_COLOURS[k % len(GROUP_COLOURS)]
        hull = convex_hull([pos[n] for n in group if n in pos])
        if not hull:
            continue
        ring = hull + [hull[0]]
        ax.plot([p[0] for p in ring], [p[1] for p in ring], color=colour, alpha=0.22, linewidth=26,
                solid_joinstyle="round", solid_capstyle="round", zorder=1)
        if len(hull) >= 3:
            ax.fill([p[0] for p in hull], [p[1] for p in hull], color=colour, alpha=0.22, zorder=1, linewidth=0)
        if k < MAX_LEGEND_GROUPS:
            name = labels[k] if labels is not None and k < len(labels) else _group_name(k, group)
            handles.append(Patch(color=colour, alpha=0.45, label=name))
        for n in group:
            colour_of.setdefault(n, colour)
    labelled = n_links <= MAX_LABELLED_LINKS
    straight = [(u, v) for u, v in graph.edges if abs(pos[u][0] - pos[v][0]) <= 180]
    across = [(u, v) for u, v in graph.edges if abs(pos[u][0] - pos[v][0]) > 180]
    width = {(u, v): 0.8 + 0.9 * math.log10(max(1.0, min(d["up_mbps"], d["down_mbps"])))
             for u, v, d in graph.edges(data=True)}
    nx.draw_networkx_edges(graph, pos, ax=ax, edgelist=straight, width=[width[e] for e in straight],
                           edge_color="#555555", alpha=0.8 if labelled else 0.35)
    if labelled:
        nx.draw_networkx_edge_labels(graph, pos, ax=ax, font_size=7,
                                     edge_labels={(u, v): link_label(graph.edges[u, v]) for u, v in straight},
                                     bbox={"boxstyle": "round,pad=0.2", "fc": "white", "ec": "none", "alpha": 0.8})
    nx.draw_networkx_nodes(graph, pos, ax=ax, node_size=240 if n_sites <= MAX_NUDGED_SITES else 40,
                           edgecolors="black", linewidths=0.8 if n_sites <= MAX_NUDGED_SITES else 0.3,
                           node_color=[colour_of.get(n, UNGROUPED) for n in graph.nodes])
    if n_sites <= MAX_NAMED_SITES:
        for n, (x, y) in pos.items():
            ax.annotate(n, (x, y), xytext=(0, 8 if n_sites <= MAX_NUDGED_SITES else 3), textcoords="offset points",
                        ha="center", va="bottom", fontsize=9 if n_sites <= MAX_NUDGED_SITES else 6)
    ax.tick_params(left=True, bottom=True, labelleft=True, labelbottom=True)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{shifted(x + centre, 0.0):g}"))
    ax.set_xlabel("longitude, degrees east" + (f" (map centred on {centre:g})" if centre else ""))
    ax.set_ylabel("latitude, degrees north")
    ax.grid(True, color="#e6e6e6", linewidth=0.6)
    ax.set_axisbelow(True)
    _frame(ax, pos)
    if ax.get_xlim()[1] - ax.get_xlim()[0] > 90:      # a world map: meridians every 30 degrees
        ax.xaxis.set_major_locator(FixedLocator(sorted(shifted(t, centre) for t in range(-180, 180, 30))))
    _draw_across_the_edge(ax, [(pos[u], pos[v]) for u, v in across], [width[e] for e in across],
                          [link_label(graph.edges[e]) if labelled else "" for e in across])
    if handles:       # "best" weighs every artist: affordable only for small figures
        ax.legend(handles=handles, loc="best" if labelled else "lower left", fontsize=8, framealpha=0.9)
    ax.set_title((title + "\n" if title else "") + _caption(n_sites, n_links, len(groups)), fontsize=9, loc="left")
    fig.tight_layout()
    return fig


def _caption(n_sites: int, n_links: int, n_groups: int) -> str:
    """What the figure shows, and what it leaves out at this size."""
    parts = [("links: Mb/s (up/down when they differ), RTT; ~ distance rule, (m) measured pair"
              if n_links <= MAX_LABELLED_LINKS else
              f"{n_links:,} links, unlabelled beyond {MAX_LABELLED_LINKS} (dtplan sites --json lists them)")]
    if n_sites <= MAX_NUDGED_SITES:
        parts.append("crowded sites nudged apart")
    elif n_sites > MAX_NAMED_SITES:
        parts.append(f"{n_sites:,} sites, unnamed beyond {MAX_NAMED_SITES}")
    if n_groups > MAX_DRAWN_GROUPS:
        parts.append(f"the first {MAX_DRAWN_GROUPS} of {n_groups:,} groups drawn")
    elif n_groups > MAX_LEGEND_GROUPS:
        parts.append(f"the legend names the first {MAX_LEGEND_GROUPS} of {n_groups} groups")
    return "; ".join(parts)


def _draw_across_the_edge(ax, ends: list[tuple[tuple[float, float], tuple[float, float]]], widths: list[float],
                          labels: list[str]) -> None:
    """Links whose short way round crosses the map's edge: dashed from each end to the edge (one line
    collection for all), each labelled beside the end with more room inside the frame."""
    from matplotlib.collections import LineCollection
    if not ends:
        return
    segments, segment_widths = [], []
    x_min, x_max = max(ax.get_xlim()[0], -180.0), min(ax.get_xlim()[1], 180.0)
    for (p, q), width, label in zip(ends, widths, labels):
        if p[0] > q[0]:
            p, q = q, p                                     # p west, q east on the map
        span = (p[0] + 360.0) - q[0]                        # eastward from q across the edge to p
        y_edge = q[1] + (p[1] - q[1]) * (180.0 - q[0]) / span
        segments += [[q, (180.0, y_edge)], [(-180.0, y_edge), p]]
        segment_widths += [width, width]
        if not label:
            continue
        if x_max - q[0] >= p[0] - x_min:                    # label on the side with more room inside the frame
            x = q[0] + 0.5 * (x_max - q[0])
            y = q[1] + (y_edge - q[1]) * (x - q[0]) / max(180.0 - q[0], 1e-9)
        else:
            x = p[0] - 0.5 * (p[0] - x_min)
            y = p[1] + (y_edge - p[1]) * (p[0] - x) / max(p[0] + 180.0, 1e-9)
        ax.text(x, y, label, fontsize=7, ha="center", va="center",
                bbox={"boxstyle": "round,pad=0.2", "fc": "white", "ec": "none", "alpha": 0.8})
    ax.add_collection(LineCollection(segments, linewidths=segment_widths, colors="#555555", alpha=0.8,
                                     linestyles="--"))


MIN_FRAME_DEG = (8.0, 5.0)       # smallest map, degrees of longitude and latitude (a metro area's sites)


def _frame(ax, pos: dict[str, tuple[float, float]]) -> None:
    """Limits with a margin, at least MIN_FRAME_DEG, within the globe (plus a margin)."""
    if not pos:
        return
    xs, ys = [p[0] for p in pos.values()], [p[1] for p in pos.values()]
    cx, cy = (max(xs) + min(xs)) / 2, (max(ys) + min(ys)) / 2
    w = max(MIN_FRAME_DEG[0], (max(xs) - min(xs)) * 1.2 + 16 * (max(xs) - min(xs) > 40))
    h = max(MIN_FRAME_DEG[1], (max(ys) - min(ys)) * 1.3 + 6 * (max(ys) - min(ys) > 20))
    ax.set_xlim(max(-185.0, cx - w / 2), min(185.0, cx + w / 2))
    ax.set_ylim(max(-95.0, cy - h / 2), min(95.0, cy + h / 2))


def draw_site_graph(graph: nx.Graph, groups: Sequence[Iterable[str]], path: str | Path, title: str = "") -> Path:
    """Write the site graph with its groups to `path`: PNG or SVG by the suffix (UnknownPlotFormat
    otherwise, before drawing), atomically (planner/files.py). Returns the path."""
    from planner.files import atomic_path
    fmt = check_plot_path(path)
    plt = pyplot()
    with plt.rc_context({"svg.fonttype": "none"}):
        fig = site_figure(graph, groups, title)
        try:
            metadata = {"Date": None} if fmt == "svg" else {}
            with atomic_path(path) as tmp:
                fig.savefig(tmp, format=fmt, dpi=120, metadata=metadata)
        finally:
            plt.close(fig)
    return Path(path)


def site_graph_png(graph: nx.Graph, groups: Sequence[Iterable[str]] = (), title: str = "",
                   labels: Sequence[str] | None = None) -> bytes:
    """The figure as PNG bytes (for the HTML report)."""
    from planner.present.plots import figure_png
    return figure_png(site_figure(graph, groups, title, labels))


def region_labels(rows: Sequence[dict]) -> list[str]:
    """Legend names of a plan's chosen regions (planner.fleet.region_plans.region_rows):
    "region 1: FRA, PAR: 3 nodes, 1 group"."""
    out = []
    for k, row in enumerate(rows):
        shown = ", ".join(row["sites"][:5]) + (f", +{len(row['sites']) - 5}" if len(row["sites"]) > 5 else "")
        units = row["units"]
        out.append(f"region {k + 1}: {shown}: {row['nodes']:,} nodes"
                   + (f", {units:,} group{'s' * (units != 1)}" if units is not None else ""))
    return out
