"""The site graph (networkx) and what the planner asks of it: regional groups, paths, a group's slowest link.

Nodes are the sites of `network.sites`, edges the links of `network.links`. A link is
directional in bandwidth: `up_mbps` carries traffic from the edge's `a` end to its `b` end and
`down_mbps` from `b` to `a` (`link_mbps(graph, src, dst)` reads the right one); RTT is the same
both ways. Traffic between sites without a direct link is routed over other sites:

- bandwidth of a route = its narrowest link in the direction of travel; `path_mbps` is the widest
  route's (the maximin or bottleneck path);
- RTT of a route = the sum of its links' RTTs; `path_rtt_ms` is the least-RTT route's.

Both come from one table of every pair per graph (planner/sites/routes.py), so that a planner
asking for thousands of groups' slowest links pays for the routes once.

Within one site traffic uses the site's LAN (`lan_mbps`, `lan_rtt_ms`; network.regional unless the
site gives its own). These are per-flow figures: flows sharing a link are not divided among
themselves here (the cost model accounts for the traffic each sync sends).
"""

from __future__ import annotations

from typing import Iterable

import networkx as nx
import numpy as np

from planner.schema.errors import InputError, Problem
from planner.sites.routes import RouteTable, route_table
from planner.sites.rtt import estimate_rtt


def site_graph(network) -> nx.Graph:
    """The site graph of a `planner.schema.instance.Network`.

    Node attributes: city (str | None), lat, lon (degrees; the city's when not given), lan_mbps,
    lan_rtt_ms (the site's own, else network.regional's), lan_source ("given" | "network.regional").
    Edge attributes: a, b (the link's ends as given: up_mbps flows a -> b, down_mbps b -> a),
    up_mbps, down_mbps, rtt_ms, rtt_source ("given", "measured: <pair of the table>" or
    "distance rule: <km> km ..."; planner.sites.rtt), index (position in network.links).
    Graph attribute `regional` = (network.regional.mbps, network.regional.rtt_ms).
    """
    regional = network.regional
    graph = nx.Graph(regional=(regional.mbps, regional.rtt_ms))
    for site in network.sites:
        lat, lon = site.coordinates
        own = site.lan_mbps is not None or site.lan_rtt_ms is not None
        graph.add_node(site.name, city=site.city, lat=lat, lon=lon,
                       lan_mbps=site.lan_mbps if site.lan_mbps is not None else regional.mbps,
                       lan_rtt_ms=site.lan_rtt_ms if site.lan_rtt_ms is not None else regional.rtt_ms,
                       lan_source="given" if own else "network.regional")
    for index, link in enumerate(network.links):
        if link.rtt_ms is not None:
            rtt_ms, source = link.rtt_ms, "given"
        else:
            na, nb = graph.nodes[link.a], graph.nodes[link.b]
            found = estimate_rtt(na["city"], (na["lat"], na["lon"]), nb["city"], (nb["lat"], nb["lon"]))
            rtt_ms, source = found.rtt_ms, found.source
        graph.add_edge(link.a, link.b, a=link.a, b=link.b, up_mbps=link.up_mbps, down_mbps=link.down_mbps,
                       rtt_ms=rtt_ms, rtt_source=source, index=index)
    return graph


def link_mbps(graph: nx.Graph, src: str, dst: str) -> float:
    """Bandwidth of the direct link from `src` to `dst`: up_mbps if src is the link's `a`, else down_mbps."""
    edge = graph.edges[src, dst]
    return edge["up_mbps"] if edge["a"] == src else edge["down_mbps"]


def path_mbps(graph: nx.Graph, a: str, b: str) -> float:
    """Bandwidth from site `a` to site `b` over the widest route: max over routes of the min over the
    route's links of the bandwidth in the direction a -> b (0.0 if no route; the LAN's if a == b).
    From the graph's route table (planner/sites/routes.py: maximin Floyd-Warshall)."""
    table = route_table(graph)
    i, j = table.rows((a, b))
    return float(table.mbps[i, j])


def path_rtt_ms(graph: nx.Graph, a: str, b: str) -> float:
    """RTT between sites `a` and `b` over the route of least total RTT (math.inf if no route; the LAN's
    if a == b). From the graph's route table (min-plus Floyd-Warshall)."""
    table = route_table(graph)
    i, j = table.rows((a, b))
    return float(table.rtt_ms[i, j])


def _tier_pairs(graph: nx.Graph, min_mbps: float, max_rtt_ms: float) -> nx.Graph:
    """Sites u, v joined when a route between them meets the tier: every link of it carries at least
    `min_mbps` in both directions and its total RTT is at most `max_rtt_ms`. Exact: such a route
    exists iff the least-RTT route over the links of >= min_mbps both ways is short enough."""
    wide = nx.Graph()
    wide.add_nodes_from(graph.nodes)
    wide.add_edges_from((u, v, d) for u, v, d in graph.edges(data=True)
                        if min(d["up_mbps"], d["down_mbps"]) >= min_mbps)
    pairs = nx.Graph()
    pairs.add_nodes_from(graph.nodes)
    for u, lengths in nx.all_pairs_dijkstra_path_length(wide, cutoff=max_rtt_ms, weight="rtt_ms"):
        pairs.add_edges_from((u, v) for v, rtt in lengths.items() if v != u and rtt <= max_rtt_ms)
    return pairs


def regional_groups(graph: nx.Graph, min_mbps: float, max_rtt_ms: float) -> list[frozenset[str]]:
    """Candidate regional groups: the maximal sets of sites in which every pair is joined by a route
    meeting the regional tier (at least `min_mbps` each way on every link, at most `max_rtt_ms` in
    total), i.e. the maximal cliques of the "meets the tier" relation (networkx.find_cliques).

    Cliques, not connected components, because the tier is a promise about every pair of a group's
    nodes (a group's all-reduce runs between all of them) and it is not transitive: with A-B and
    B-C each at the RTT limit, A-C is twice the limit, and the component {A, B, C} would break the
    tier. Maximal cliques may overlap (B is in {A, B} and {B, C}); the planner picks disjoint ones.
    A site meeting the tier with no other site is a group of one. Sorted: largest first, then by
    the sorted names.
    """
    cliques = (frozenset(c) for c in nx.find_cliques(_tier_pairs(graph, min_mbps, max_rtt_ms)))
    return sorted(cliques, key=lambda c: (-len(c), sorted(c)))


def slowest_link(graph: nx.Graph, sites: Iterable[str], table: RouteTable | None = None) -> tuple[float, float]:
    """(mbps, rtt_ms) that a sync among `sites` is limited by: the least bandwidth and the largest RTT
    over every ordered pair of distinct sites (path_mbps, path_rtt_ms: routes may cross other sites)
    and over each site's LAN (its nodes exchange inside the site too). One site: its LAN.

        mbps = min over i, j in sites of W[i, j],  rtt_ms = max over i, j in sites of R[i, j]

    with W, R the route table (the diagonal holding the LANs); (0, inf) if two of them have no route.
    `table`: the graph's route table when the caller holds it (`route_table` checks a fingerprint of
    the whole graph on every call, which dominates when many site sets are asked of one graph).
    """
    table = route_table(graph) if table is None else table
    rows = table.rows(dict.fromkeys(sites))
    if not len(rows):
        raise ValueError("slowest_link needs at least one site")
    block = np.ix_(rows, rows)
    return float(table.mbps[block].min()), float(table.rtt_ms[block].max())


def check_connected(graph: nx.Graph, field: str = "network.links", sites: Iterable[str] | None = None) -> None:
    """InputError naming `field` if some sites have no route between them (groups spanning sites need
    links). With `sites`, only those must reach each other (routes may still cross other sites). An
    empty graph or a single site is connected."""
    wanted = set(graph.nodes if sites is None else sites)
    unknown = sorted(wanted - set(graph.nodes))
    if unknown:
        raise KeyError(f"unknown site {unknown[0]!r} (sites: {', '.join(graph.nodes)})")
    parts = [sorted(c & wanted) for c in nx.connected_components(graph) if c & wanted]
    if len(parts) <= 1:
        return
    parts.sort(key=lambda c: (-len(c), c))
    shown = "; ".join("{" + ", ".join(repr(s) for s in part[:6]) + (", ..." if len(part) > 6 else "") + "}"
                      for part in parts[:4]) + ("; ..." if len(parts) > 4 else "")
    u, v = _nearest_pair(graph, parts[0], parts[1])
    raise InputError([Problem(field, f"the site graph is disconnected: {len(parts)} parts with no link "
                                     f"between them ({shown}); add a link joining them, e.g. between "
                                     f"{u!r} and {v!r} (the nearest sites of the two largest parts)")])


def _nearest_pair(graph: nx.Graph, part_a: list[str], part_b: list[str]) -> tuple[str, str]:
    """The two sites, one of each part, closest on the great circle."""
    from planner.sites.places import great_circle_km
    where = {n: (graph.nodes[n]["lat"], graph.nodes[n]["lon"]) for n in part_a + part_b}
    return min(((u, v) for u in part_a for v in part_b), key=lambda p: great_circle_km(*where[p[0]], *where[p[1]]))
