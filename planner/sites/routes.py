"""Every pair's widest and least-RTT route at once: the tables behind path_mbps, path_rtt_ms, slowest_link.

For n sites, two n x n matrices by the Floyd-Warshall recurrence over intermediate sites k
(vectorised with numpy, O(n^3) operations: under 0.1 s for 200 sites):

- widest route (maximin, directed): W[i, j] = max(W[i, j], min(W[i, k], W[k, j])), starting
  from W[i, j] = the bandwidth of the link from i to j (0 if none);
- least RTT (min-plus): R[i, j] = min(R[i, j], R[i, k] + R[k, j]), starting from the link's RTT
  (infinity if none) and R[i, i] = 0.

After the recurrence, W[i, j] is the largest bandwidth any route from i to j keeps on all of its
links, and R[i, j] is the least total RTT of any route (Floyd 1962, "Algorithm 97: Shortest
path"; the maximin form is Pollack 1960, "The maximum capacity through a network"). The
diagonal then holds each site's LAN (lan_mbps, lan_rtt_ms): traffic that stays inside a site.

The table is computed once per graph and kept in `graph.graph["routes"]` with a fingerprint of
the nodes and links it was computed from, so a graph changed afterwards gets a fresh table.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

import networkx as nx
import numpy as np


@dataclass(frozen=True)
class RouteTable:
    names: tuple[str, ...]
    index: dict[str, int]
    mbps: np.ndarray            # [i, j]: widest route's bandwidth from i to j, Mb/s (0: no route)
    rtt_ms: np.ndarray          # [i, j]: least-RTT route's RTT, ms (inf: no route)

    def rows(self, sites: Iterable[str]) -> np.ndarray:
        """Row numbers of `sites` (KeyError naming an unknown site)."""
        try:
            return np.array([self.index[s] for s in sites], dtype=int)
        except KeyError as exc:
            raise KeyError(f"unknown site {exc.args[0]!r} (sites: {', '.join(self.names)})") from None


def _fingerprint(graph: nx.Graph) -> tuple:
    nodes = tuple((n, d["lan_mbps"], d["lan_rtt_ms"]) for n, d in graph.nodes(data=True))
    edges = tuple((u, v, d["a"], d["up_mbps"], d["down_mbps"], d["rtt_ms"]) for u, v, d in graph.edges(data=True))
    return nodes, edges


def route_table(graph: nx.Graph) -> RouteTable:
    """The routes of a site graph (planner.sites.graph.site_graph), computed once per graph."""
    key = _fingerprint(graph)
    cached = graph.graph.get("routes")
    if cached is not None and cached[0] == key:
        return cached[1]
    names = tuple(graph.nodes)
    index = {n: i for i, n in enumerate(names)}
    n = len(names)
    wide = np.zeros((n, n))
    rtt = np.full((n, n), np.inf)
    np.fill_diagonal(rtt, 0.0)
    for u, v, d in graph.edges(data=True):
        a, b = index[d["a"]], index[v if d["a"] == u else u]     # up_mbps flows from the link's a
        wide[a, b], wide[b, a] = d["up_mbps"], d["down_mbps"]
        rtt[a, b] = rtt[b, a] = d["rtt_ms"]
    via = np.empty((n, n))
    for k in range(n):             # in place: row and column k do not change at step k (diagonal 0)
        np.minimum(wide[:, k:k + 1], wide[k:k + 1, :], out=via)
        np.maximum(wide, via, out=wide)
        np.add(rtt[:, k:k + 1], rtt[k:k + 1, :], out=via)
        np.minimum(rtt, via, out=rtt)
    lan = [graph.nodes[s] for s in names]
    wide[np.arange(n), np.arange(n)] = [d["lan_mbps"] for d in lan]
    rtt[np.arange(n), np.arange(n)] = [d["lan_rtt_ms"] for d in lan]
    wide.setflags(write=False)
    rtt.setflags(write=False)
    table = RouteTable(names, index, wide, rtt)
    graph.graph["routes"] = (key, table)
    return table
