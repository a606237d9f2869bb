"""`dtplan sites INSTANCE`: the instance's sites and links, where each RTT comes from, and the candidate
regional groups for its regional tier (network.regional); `--plot FILE` draws the site graph."""

from __future__ import annotations

from pathlib import Path

import click

from planner.cli.common import (BadInput, check_output, echo_json, json_option, load_instance_or_exit, set_option,
                                write_output)
from planner.schema.errors import InputError, Problem


def sites_data(instance, routes: bool = False) -> dict:
    """What `dtplan sites` shows, as JSON-ready data: sites, links, the tier, the candidate groups
    and, with `routes`, every pair's widest route (Mb/s, row to column) and least RTT (ms).

    InputError (network.links) when two sites have no route between them: groups and the WAN
    sync of a group spanning sites need one."""
    from planner.sites import check_connected, regional_groups, site_graph
    network = instance.network
    graph = site_graph(network)
    check_connected(graph)
    tier = {"min_mbps": network.regional.mbps, "max_rtt_ms": network.regional.rtt_ms,
            "source": "network.regional"}
    groups = regional_groups(graph, network.regional.mbps, network.regional.rtt_ms) if len(graph) else []
    sites = [{"name": n, **{k: d[k] for k in ("city", "lat", "lon", "lan_mbps", "lan_rtt_ms", "lan_source")}}
             for n, d in graph.nodes(data=True)]
    links = [{k: d[k] for k in ("a", "b", "up_mbps", "down_mbps", "rtt_ms", "rtt_source")}
             for _, _, d in sorted(graph.edges(data=True), key=lambda e: e[2]["index"])]
    data = {"sites": sites, "links": links, "regional_tier": tier, "groups": [sorted(g) for g in groups],
            "connected": True}
    if routes:
        from planner.sites.routes import route_table
        table = route_table(graph)
        data["routes"] = {"sites": list(table.names), "mbps": table.mbps.tolist(), "rtt_ms": table.rtt_ms.tolist()}
    return data


@click.command()
@click.argument("instance_path", metavar="INSTANCE", type=click.Path(path_type=Path))
@click.option("--plot", "plot_path", type=click.Path(path_type=Path), metavar="FILE",
              help="Draw the site graph (sites at their coordinates, links with Mb/s and RTT, the candidate "
                   "groups coloured) to FILE: .png or .svg.")
@click.option("--routes", "show_routes", is_flag=True,
              help="Also show every pair of sites' widest route (Mb/s from row to column) and least RTT (ms), "
                   "routes over other sites included; the diagonal is each site's LAN.")
@json_option("Write the sites, links (with rtt_source), regional tier and groups as JSON to standard output.")
@set_option
def sites(instance_path: Path, plot_path: Path | None, show_routes: bool, as_json: bool,
          overrides: tuple[str, ...]) -> None:
    """Show an instance's sites, links and candidate regional groups.

    Each link's RTT is shown with where it comes from (given, a measured pair of the shipped table, or
    the distance rule); the candidate regional groups are the largest sets of sites whose every pair
    meets the regional tier (network.regional). Exit 2 if some sites have no route between them."""
    if plot_path is not None:
        from planner.present.plots import UnknownPlotFormat, check_plot_path
        try:
            check_plot_path(plot_path)
        except UnknownPlotFormat as err:
            raise BadInput(f"--plot: {err}", [Problem("--plot", str(err))]) from None
        check_output("--plot", plot_path)
    instance, _ = load_instance_or_exit(instance_path, overrides)
    try:
        data = sites_data(instance, routes=show_routes)
    except InputError as err:
        raise BadInput.from_error(err, str(instance_path)) from None
    if plot_path is not None:
        from planner.present.site_plot import draw_site_graph
        from planner.sites import site_graph
        graph = site_graph(instance.network)
        write_output("--plot", plot_path, lambda tmp: draw_site_graph(graph, data["groups"], tmp, title=instance.name))
        data["plot"] = str(plot_path)
        if not as_json:
            click.echo(f"plot written to {plot_path}", err=True)
    if as_json:
        echo_json(data)
        return
    _print(data)


def _print(data: dict) -> None:
    from rich.table import Table

    from planner.present.render import make_console, print_table
    console = make_console()
    if not data["sites"]:
        console.print("No sites: the uniform network (network.wan between nodes, network.regional within "
                      "groups, network.pipeline between stages).")
        return
    table = Table("site", "city", "lat", "lon", "LAN Mb/s", "LAN RTT ms", "LAN from",
                  title="Sites (network.sites)", title_justify="left")
    for s in data["sites"]:
        table.add_row(s["name"], s["city"] or "-", f"{s['lat']:.3f}", f"{s['lon']:.3f}", f"{s['lan_mbps']:,.6g}",
                      f"{s['lan_rtt_ms']:.3g}", s["lan_source"])
    print_table(table, console)
    if data["links"]:
        table = Table("a", "b", "a->b Mb/s", "b->a Mb/s", "RTT ms", "RTT from", title="Links (network.links)",
                      title_justify="left")
        for link in data["links"]:
            table.add_row(link["a"], link["b"], f"{link['up_mbps']:,.6g}", f"{link['down_mbps']:,.6g}",
                          f"{link['rtt_ms']:.4g}", link["rtt_source"])
        print_table(table, console)
    tier = data["regional_tier"]
    console.print(f"Candidate regional groups: the largest sets of sites whose every pair is joined by a route of "
                  f">= {tier['min_mbps']:,.6g} Mb/s each way and <= {tier['max_rtt_ms']:.4g} ms RTT "
                  "(network.regional); they may overlap.")
    table = Table("group", "sites", "count")
    for k, group in enumerate(data["groups"], 1):
        table.add_row(str(k), ", ".join(group), str(len(group)))
    print_table(table, console)
    if "routes" in data:
        routes = data["routes"]
        table = Table("from \\ to", *routes["sites"], title="Routes: widest Mb/s / least RTT ms (diagonal: the LAN)",
                      title_justify="left")
        for name, mbps_row, rtt_row in zip(routes["sites"], routes["mbps"], routes["rtt_ms"]):
            table.add_row(name, *(f"{m:,.6g} / {r:.4g}" for m, r in zip(mbps_row, rtt_row)))
        print_table(table, console)
