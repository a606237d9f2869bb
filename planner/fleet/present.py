"""How a fleet of pools and a mixed plan are shown: labels, the per-pool table (terminal, via
rich) and the rows of the HTML report. Used by planner/present (render.py, report.py) and the CLI."""

from __future__ import annotations

from typing import Any

POOL_HEADER = ["pool", "hardware", "site", "used / available", "cost USD", "peak PFLOP/s per node", "MFU",
               "t_comp s", "inner steps H_p", "waits for the slowest"]


def _hardware(hw) -> str:
    """A preset's id, an inline node's name."""
    return hw.name if hw.id == "custom" else hw.id


def fleet_label(instance) -> str:
    """'64 x 16x H100 SXM' for a uniform fleet, '12 x a100 (48xA100-80GB) + 8 x h100 (16xH100-SXM)' for pools."""
    fleet = instance.fleet
    if not fleet.is_mixed:
        return f"{fleet.nodes:,} x {instance.hardware.name}"
    return " + ".join(f"{p.count:,} x {label} ({_hardware(p.hardware)})"
                      for label, p in zip(fleet.pool_labels(), fleet.pools))


def nodes_label(e) -> str:
    """The nodes a plan uses: 'N x name', or per pool 'n1 x pool1 (hardware) + n2 x pool2 (hardware)'."""
    rows = getattr(e, "pool_rows", None)
    if not rows:
        return f"{int(e.batch.nodes[0]):,} x {e.instance.hardware.name}"
    return " + ".join(f"{r['nodes_used']:,} x {r['pool']} ({r['hardware'] if r['hardware'] != 'custom' else r['hardware_name']})"
                      for r in rows if r["nodes_used"])


def pool_cells(row: dict[str, Any]) -> list[str]:
    """One pool's row as text cells, in POOL_HEADER order."""
    def num(x, fmt):
        return "-" if x is None else format(x, fmt)
    pace = "sets the pace" if row["sets_pace"] else (
        "-" if row["idle_fraction"] is None else f"{row['idle_fraction']:.1%} of each block")
    return [row["pool"], row["hardware"], row["site"] or "-", f"{row['nodes_used']:,} / {row['count']:,}",
            f"{row['cost_usd']:,.0f}", num(row["peak_pflops_per_node"], ".3f"), num(row["mfu"], ".3f"),
            num(row["t_comp_s"], ".3f"), "-" if row.get("inner_steps") is None else f"{row['inner_steps']:,}", pace]


def pool_table(e):
    """Per pool: nodes used of those available, cost, speed and the time it waits (a rich Table;
    rich is imported here, not with the module: a uniform fleet's output must not load it)."""
    from rich.table import Table
    table = Table(*POOL_HEADER, title=pool_title(getattr(e, "sync_rule", "straggler")),
                  title_justify="left", title_style="bold")
    for row in e.pool_rows:
        table.add_row(*pool_cells(row))
    return table


def region_line(rows: list[dict[str, Any]]) -> str:
    """Chosen regions (planner.fleet.region_plans.region_rows): nodes, whole units and cost in each."""
    shown = "; ".join("{" + ", ".join(r["sites"]) + "}: " + f"{r['nodes']:,} nodes"
                      + (f", {r['units']:,} group{'s' * (r['units'] != 1)}" if r["units"] is not None else "")
                      + (f", {r['cost_usd']:,.0f} USD" if "cost_usd" in r else "") for r in rows)
    return f"regions of the plan (whole groups inside each): {shown}"


def pool_title(rule: str) -> str:
    """The pool table's title: the synchronisation rule in a sentence."""
    if rule == "proportional":
        return ("Pools (proportional rule: each pool runs the inner steps H_p that fit in the slowest pool's H, "
                "rounded down)")
    return "Pools (straggler rule: every step waits for the slowest pool used)"


def site_lines(sites: dict[str, Any]) -> list[str]:
    """The sites a plan uses, its regions and the links that bound it, as sentences
    (planner.fleet.evaluate.site_rows); the line of whole groups per region only when the regions
    were chosen by the planner (`region_units`, absent when the regions follow the map)."""
    nodes = ", ".join(f"{site} {n:,}" for site, n in sites["nodes_per_site"].items())
    regions = "; ".join("{" + ", ".join(r) + "}" for r in sites["regions"])
    lines = [f"nodes per site: {nodes}", f"regions (groups and pipelines stay inside one): {regions}",
             f"slowest route among the sites: {sites['slowest_route_mbps']:,.0f} Mb/s, "
             f"{sites['slowest_route_rtt_ms']:,.1f} ms RTT; WAN sync at {sites['wan_up_mbps']:,.0f} / "
             f"{sites['wan_down_mbps']:,.0f} Mb/s (each node's access link included)",
             f"regional and pipeline links: {sites['regional_mbps']:,.0f} Mb/s, {sites['regional_rtt_ms']:,.1f} ms"]
    if "region_units" in sites:
        lines.append(region_line(sites["region_units"]))
    return lines
