"""Sites, the links between them and the network graph they form (issue 12).

    site_graph(network)                          the networkx graph of network.sites / network.links
    regional_groups(graph, min_mbps, max_rtt_ms) candidate regional groups (maximal cliques of the tier)
    path_mbps(graph, a, b), path_rtt_ms(...)     widest route's bandwidth, least-RTT route's RTT
    slowest_link(graph, sites)                   (mbps, rtt_ms) a sync among the sites is limited by
    check_connected(graph)                       InputError naming network.links if disconnected
    link_mbps(graph, src, dst)                   a direct link's bandwidth in one direction
    estimate_rtt(...)                            a measured city pair, else the distance rule
    region_partitions(graph, sites)              partitions of sites into regions (planner/sites/partition.py,
                                                 network.regions = "chosen"; undominated: those worth solving)

Formulas and sources: planner/sites/graph.py (routes, groups), planner/sites/rtt.py (RTT estimate),
planner/sites/places.py (the shipped tables), docs/sites.md.

The names are loaded on first use (PEP 562): the schema imports planner.sites.places to check
city names, and that must not import networkx into every command (tests/test_packaging.py).

Layer: setting (docs/architecture.md): may import schema and cost; `places` (the shipped table of
places) sits on the schema layer, as the schema checks city names against it.
"""

from __future__ import annotations

import importlib
from typing import Any

_WHERE = {"site_graph": "graph", "regional_groups": "graph", "path_mbps": "graph", "path_rtt_ms": "graph",
          "slowest_link": "graph", "check_connected": "graph", "link_mbps": "graph",
          "estimate_rtt": "rtt", "distance_rule_rtt_ms": "rtt", "RttEstimate": "rtt",
          "region_partitions": "partition", "undominated": "partition"}

__all__ = list(_WHERE)


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'planner.sites' has no attribute {name!r}")
    return getattr(importlib.import_module(f"planner.sites.{_WHERE[name]}"), name)


def __dir__() -> list[str]:
    return sorted(list(globals()) + __all__)
