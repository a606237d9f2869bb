"""The site graph (networkx) and what the planner asks of it: regional groups, paths, a group's slowest link.

Nodes are the sites of `network.sites`, edges the links of `network.links`. A link is
directional in bandwidth: `up_mbps` carries traffic from the edge's `a` end to its `b` end and
`down_mbps` from `b` to `a` (`link_mbps(graph, src, dst)` reads the right one); RTT is the same
both ways. Traffic between sites without a direct link is routed over other sites:

- bandwidth of a route = its narrowest link in the direction of travel; `path_mbps` is the widest
  route's (the maximin or bottleneck path);
- RTT of a route = the sum of its links' RTTs; `path_rtt_ms` is the shortest route's (Dijkstra).

Within one site traffic uses the site's LAN (`lan_mbps`, `lan_rtt_ms`; network.regional unless the
site gives its own). These are per-flow figures: flows sharing a link are not divided among
themselves here (the cost model accounts for the traffic each sync sends).
"""

from __future__ import annotations

import math
from typing import Iterable

import networkx as nx

from planner.schema.errors import InputError, Problem
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


def _directed(graph: nx.Graph) -> nx.DiGraph:
    """Each link as two arcs, each with the bandwidth of its direction."""
    arcs = nx.DiGraph()
    arcs.add_nodes_from(graph.nodes)
    for u, v in graph.edges:
        arcs.add_edge(u, v, mbps=link_mbps(graph, u, v))
        arcs.add_edge(v, u, mbps=link_mbps(graph, v, u))
    return arcs


def path_mbps(graph: nx.Graph, a: str, b: str) -> float:
    """Bandwidth from site `a` to site `b` over the widest route: max over routes of the min over the
    route's links of the bandwidth in the direction a -> b (0.0 if no route; the LAN's if a == b).

    Found by bisection over the distinct link bandwidths: the answer is the largest w such that b
    is reachable from a using only arcs of at least w Mb/s (a property monotone in w).
    """
    if a == b:
        return float(graph.nodes[a]["lan_mbps"])
    arcs = _directed(graph)
    widths = sorted({w for _, _, w in arcs.edges(data="mbps")})
    low, high, best = 0, len(widths) - 1, 0.0
    while low <= high:
        mid = (low + high) // 2
        wide = nx.subgraph_view(arcs, filter_edge=lambda u, v: arcs.edges[u, v]["mbps"] >= widths[mid])
        if nx.has_path(wide, a, b):
            best, low = widths[mid], mid + 1
        else:
            high = mid - 1
    return float(best)


def path_rtt_ms(graph: nx.Graph, a: str, b: str) -> float:
    """RTT between sites `a` and `b` over the route of least total RTT (Dijkstra on rtt_ms; math.inf if
    no route; the LAN's if a == b)."""
    if a == b:
        return float(graph.nodes[a]["lan_rtt_ms"])
    try:
        return float(nx.shortest_path_length(graph, a, b, weight="rtt_ms"))
    except nx.NetworkXNoPath:
        return math.inf


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


def slowest_link(graph: nx.Graph, sites: Iterable[str]) -> tuple[float, float]:
    """(mbps, rtt_ms) that a sync among `sites` is limited by: the least bandwidth and the largest RTT
    over every ordered pair of distinct sites (path_mbps, path_rtt_ms: routes may cross other sites)
    and over each site's LAN (its nodes exchange inside the site too). One site: its LAN."""
    names = list(dict.fromkeys(sites))
    if not names:
        raise ValueError("slowest_link needs at least one site")
    mbps = min(graph.nodes[s]["lan_mbps"] for s in names)
    rtt = max(graph.nodes[s]["lan_rtt_ms"] for s in names)
    for u in names:
        for v in names:
            if u != v:
                mbps = min(mbps, path_mbps(graph, u, v))
                rtt = max(rtt, path_rtt_ms(graph, u, v))
    return float(mbps), float(rtt)


def check_connected(graph: nx.Graph, field: str = "network.links") -> None:
    """InputError naming `field` if some sites have no route between them (groups spanning sites need
    links). An empty graph or a single site is connected."""
    if graph.number_of_nodes() <= 1 or nx.is_connected(graph):
        return
    parts = sorted((sorted(c) for c in nx.connected_components(graph)), key=lambda c: (-len(c), c))
    shown = "; ".join("{" + ", ".join(repr(s) for s in part[:6]) + (", ..." if len(part) > 6 else "") + "}"
                      for part in parts[:4]) + ("; ..." if len(parts) > 4 else "")
    raise InputError([Problem(field, f"the site graph is disconnected: {len(parts)} parts with no link "
                                     f"between them ({shown}); add a link joining them, e.g. between "
                                     f"{parts[0][0]!r} and {parts[1][0]!r}")])
