"""The links a mixed plan uses when its pools sit at sites (network.sites, network.links;
the site graph of `planner.sites`). docs/fleet.md, "Sites".

Without sites every node reaches every other over `network.wan`, groups over `network.regional`
and pipeline stages over `network.pipeline` (today's model, unchanged). With sites, a plan on
pools U uses the sites S(U) of those pools, and its links are functions of S(U) alone:

- WAN (the DiLoCo sync, flat and global; a pipeline over the WAN): the sync crosses every site
  boundary of S(U); it is limited by the slowest route among them (`planner.sites.slowest_link`:
  least bandwidth and largest RTT over every pair of sites of S(U), routes over other sites
  allowed, each site's LAN included) and by each node's own access bandwidth (network.wan up /
  down): bw_up = min(wan.up, route Mb/s), bw_down = min(wan.down, route Mb/s), RTT = the route's.
  A ring all-reduce crosses each boundary once per direction, so the route's bandwidth is the
  exchange's, as v / bw_up + v / bw_down + RTT in docs/cost_model.md section 3. On one site the
  sync stays on its LAN (lan_mbps, lan_rtt_ms).
- Regions (hierarchical groups, PP-group pipelines: co-located nodes): S(U) is split into
  regions, each a candidate regional group of `planner.sites.regional_groups` (sites every pair of
  which meets the regional tier network.regional), taken largest first, each site in the first
  that holds it. A group or pipeline runs inside one region, so the regional and pipeline links are
  the slowest route inside the worst region (least Mb/s, largest RTT over the regions' slowest
  links); the global sync among groups crosses regions over the WAN route above.

So the planner's decomposition over pool subsets stays exact with sites (planner/solvers/decomposition.py),
and it chooses the sites (hence regions) a plan uses with everything else. With
`network.regions = "chosen"` the regions are a partition the planner chooses, with whole groups per
region (`SiteNetwork.with_regions`; planner/fleet/regions.py, planner/sites/partition.py). Not
modelled under "geography": whether a region holds a multiple of the group size k or of S (as
without sites, nodes left over still count towards throughput); under both, the sharing of one
link among several groups' syncs.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Sequence

from planner.schema.errors import InputError, Problem


@dataclass(frozen=True)
class SiteLinks:
    """What a plan on a set of sites uses: bandwidths in bit/s, RTTs in seconds, its regions."""

    wan_up_bps: float
    wan_down_bps: float
    wan_rtt_s: float
    regional_bps: float
    regional_rtt_s: float
    regions: tuple[tuple[str, ...], ...]
    route_mbps: float                    # the slowest route among the sites (Mb/s), before the access cap
    route_rtt_ms: float


class SiteNetwork:
    """The site graph of an instance and the links of any set of its sites (cached per set)."""

    def __init__(self, network, graph=None, candidates=None, partition=None):
        self.network = network
        if graph is None:
            from planner.sites import site_graph
            graph = site_graph(network)
        self.graph = graph
        if candidates is None:
            from planner.sites import regional_groups
            regional = network.regional
            candidates = regional_groups(self.graph, regional.mbps, regional.rtt_ms)
        self.candidates = candidates
        self.partition = partition          # regions chosen by the planner or the plan (None: geography)
        self._cache: dict[frozenset[str], SiteLinks] = {}

    def with_regions(self, partition) -> "SiteNetwork":
        """The same sites with the regions fixed to `partition` (a set partition of sites into
        regions; planner.fleet.regions): `regions(sites)` then returns its blocks meeting `sites`."""
        return SiteNetwork(self.network, self.graph, self.candidates,
                           tuple(tuple(sorted(b)) for b in partition))

    def regions(self, sites: Sequence[str]) -> tuple[tuple[str, ...], ...]:
        """The sites split into regions: the fixed partition's blocks (`with_regions`), else the
        candidate regional groups, largest group first, each site in the first that holds it
        (every site is in some group: a lone site is a group of one)."""
        if self.partition is not None:
            wanted = set(sites)
            return tuple(part for b in self.partition if (part := tuple(s for s in b if s in wanted)))
        left, out = set(sites), []
        for group in self.candidates:
            part = tuple(sorted(group & left))
            if part:
                out.append(part)
                left -= set(part)
        return tuple(out)

    def links(self, sites: Sequence[str]) -> SiteLinks:
        """The WAN and regional links of a plan whose nodes sit at `sites` (module docstring)."""
        key = frozenset(sites)
        if key not in self._cache:
            from planner.sites import slowest_link
            wan = self.network.wan
            mbps, rtt_ms = slowest_link(self.graph, sorted(key), self.routes)
            regions = self.regions(sorted(key))
            inner = [slowest_link(self.graph, r, self.routes) for r in regions]
            reg_mbps, reg_rtt = min(m for m, _ in inner), max(r for _, r in inner)
            many = len(key) > 1           # the sync leaves a site: each node's access link applies
            up = min(wan.up_mbps, mbps) if many else mbps
            down = min(wan.down_mbps, mbps) if many else mbps
            self._cache[key] = SiteLinks(up * 1e6, down * 1e6, rtt_ms / 1e3, reg_mbps * 1e6, reg_rtt / 1e3,
                                         regions, mbps, rtt_ms)
        return self._cache[key]

    @cached_property
    def routes(self):
        """The route table of the site graph, computed once (the graph is not changed after it is built)."""
        from planner.sites.routes import route_table
        return route_table(self.graph)

    @cached_property
    def names(self) -> set[str]:
        return set(self.graph.nodes)


def site_network(instance) -> SiteNetwork | None:
    """The instance's site network when it has sites and a fleet of pools, else None (today's links)."""
    if not instance.network.sites or not instance.fleet.is_mixed:
        return None
    net = SiteNetwork(instance.network)
    check_pool_sites_connected(net, instance.fleet)
    return net


def plan_site_network(instance, plan) -> SiteNetwork | None:
    """`site_network` with the plan's own regions when it states them (plan.regions, checked by
    `planner.fleet.region_plans.plan_region_problems`); a plan on one site under chosen regions has
    that site as its region."""
    net = site_network(instance)
    if net is None or instance.network.regions != "chosen":
        return net
    if plan.regions is not None:
        return net.with_regions(plan.regions)
    labels = instance.fleet.pool_labels()
    used = {p.site for p, label in zip(instance.fleet.pools, labels) if (plan.pool_nodes or {}).get(label, 0)}
    return net.with_regions([sorted(used)]) if len(used) <= 1 else net


def check_pool_sites_connected(net: SiteNetwork, fleet) -> None:
    """InputError naming network.links when two sites holding pools have no route between them."""
    import networkx as nx
    hosts = sorted({p.site for p in fleet.pools})
    component = nx.node_connected_component(net.graph, hosts[0])
    apart = [s for s in hosts if s not in component]
    if apart:
        raise InputError([Problem("network.links", f"no route between site {hosts[0]!r} and site {apart[0]!r}, "
                                                   "which both hold pools (fleet.pools); add a link joining "
                                                   "their parts of the site graph")])


def with_links(setting, links: SiteLinks | None):
    """The setting with the links of the plan's sites (unchanged without sites)."""
    if links is None:
        return setting
    return setting.replace(wan_up_bps=links.wan_up_bps, wan_down_bps=links.wan_down_bps, wan_rtt_s=links.wan_rtt_s,
                           regional_bps=links.regional_bps, regional_rtt_s=links.regional_rtt_s,
                           pipeline_bps=links.regional_bps, pipeline_rtt_s=links.regional_rtt_s)


MAX_SITE_SETS_SITES = 16          # 2^16 - 1 sets of sites listed at most (a table of 65,536 entries per link)


def site_set_links(net: SiteNetwork, names: Sequence[str]):
    """The links of every set of the sites `names` at once, as `SiteNetwork.links` gives them one set at
    a time: a float array of shape (2^k, 5), k = len(names), row `mask` (bit i: names[i] in the set)
    holding (wan_up_bps, wan_down_bps, wan_rtt_s, regional_bps, regional_rtt_s) of that set (row 0,
    the empty set, unused). What a mixed setting takes from the links is exactly these five numbers
    (`with_links`), so two sets of sites with equal rows give every plan the same setting.

    By the definitions of `SiteNetwork.links`: the route's Mb/s and RTT of a set are the least W[i, j]
    and the largest R[i, j] over its ordered pairs and its sites' LANs (the route table's diagonal),
    built up one site at a time, the set with highest site b from the set without it and b's row and
    column (the minimum / maximum over a union is the minimum / maximum of the parts); its regions
    are the candidate groups in their order, each taking the sites of the set not yet taken
    (`SiteNetwork.regions`), and the regional link the least Mb/s and the largest RTT of the regions'
    own routes; one site: its LAN, not capped by the node's access link. tests/test_pool_families.py
    compares every row with `SiteNetwork.links` of the set."""
    import numpy as np
    k = len(names)
    low_w, high_r = site_set_routes(net, names)
    masks = np.arange(1 << k, dtype=np.int64)
    bit = {name: 1 << i for i, name in enumerate(names)}
    left = masks.copy()
    reg_w, reg_r = np.full(masks.size, np.inf), np.full(masks.size, -np.inf)
    for group in (net.partition if net.partition is not None else net.candidates):
        gmask = sum(bit[s] for s in group if s in bit)
        part = left & gmask
        some = part > 0
        reg_w = np.where(some, np.minimum(reg_w, low_w[part]), reg_w)
        reg_r = np.where(some, np.maximum(reg_r, high_r[part]), reg_r)
        left &= ~gmask
    if (left[1:] != 0).any():
        raise AssertionError("a site in no candidate regional group")
    wan = net.network.wan
    many = np.array([bin(m).count("1") > 1 for m in range(1 << k)])
    up = np.where(many, np.minimum(wan.up_mbps, low_w), low_w)
    down = np.where(many, np.minimum(wan.down_mbps, low_w), low_w)
    return np.stack([up * 1e6, down * 1e6, high_r / 1e3, reg_w * 1e6, reg_r / 1e3], axis=1)


def site_set_routes(net: SiteNetwork, names: Sequence[str]):
    """The slowest route of every set of the sites `names` (`planner.sites.slowest_link` of each set at
    once): two float arrays over the masks 0..2^k - 1 (bit i: names[i] in the set; entry 0 unused), the
    least Mb/s and the largest RTT (ms) over the set's ordered pairs and its sites' LANs, built one site
    at a time (`site_set_links`)."""
    import numpy as np
    table = net.routes
    k = len(names)
    rows = table.rows(names)
    mbps, rtt = table.mbps[np.ix_(rows, rows)], table.rtt_ms[np.ix_(rows, rows)]
    low_w, high_r = np.array([np.inf]), np.array([-np.inf])      # over the pairs and LANs of each set
    for b in range(k):
        size = low_w.size               # the sets of sites 0..b-1; adding b
        to_w, to_r = np.array([np.inf]), np.array([-np.inf])   # b's links to each of those sets
        for j in range(b):
            to_w = np.concatenate([to_w, np.minimum(to_w, min(mbps[b, j], mbps[j, b]))])
            to_r = np.concatenate([to_r, np.maximum(to_r, max(rtt[b, j], rtt[j, b]))])
        low_w = np.concatenate([low_w, np.minimum(np.minimum(low_w, to_w[:size]), mbps[b, b])])
        high_r = np.concatenate([high_r, np.maximum(np.maximum(high_r, to_r[:size]), rtt[b, b])])
    return low_w, high_r
