"""The parts of the exact planner for a fleet of pools (`planner.solvers.decomposition`): one part per
(model size, pools used U, precision) with its reduced setting and space, what a rule's search of the
parts of one model size reads and writes (`PartsRun`), and what needs no search.

`unit_price` gives a part's setting node price 1 (the uniform solver's cost is then N); `base_space`
is the instance's declared space with the precisions some pool runs. The sync rules' searches of the
parts (`planner.sync.straggler.search`, `planner.sync.proportional.parts`), the pools' MIP
(`planner.mip.pools`), the robust pool solver and the oracles build on the same parts, so they live
here, below every module that searches them. `SiteSetViews` lists the region partitions of every set of
sites with chosen regions once, for the searches beyond 12 pools (the choices of
`planner.solvers.pool_regions_families`, the relaxation of `planner.solvers.proportional_subsets`).
"""

from __future__ import annotations

import dataclasses
import math
import time
from itertools import combinations
from typing import NamedTuple

from planner.cost.setting import PlanBatch, Setting
from planner.evaluate import with_params
from planner.fleet.network import site_network, site_set_links
from planner.fleet.pools import PoolSetting
from planner.fleet.region_plans import SiteSets, part_regions
from planner.fleet.replicas import affordable_nodes, unsupported
from planner.objectives import Objective
from planner.sync.straggler.rule import mixed_setting
from planner.schema.instance import Instance
from planner.space import PRECISION_ORDER, DecisionSpace

MAX_EXACT_POOLS = 12            # 4,095 subsets: beyond that the decomposition is refused (exit 2)
MAX_COUNTED_PARTS = 64          # beyond, the space's size is not counted (SolveResult.space_size None)


class Part(NamedTuple):
    """One (model size, pools used, precision) part and its reduced setting and space."""

    params: float | None
    used: tuple[int, ...]
    precision: str
    setting: Setting
    space: DecisionSpace
    sites: object = None          # the site network view (regions) of the part, None without sites
    placement: object = None      # chosen regions with several regions (planner.fleet.regions)


class PartResult(NamedTuple):
    part: Part
    batch: PlanBatch
    counts: list[int]
    key: tuple[float, ...]        # what the objective compares (time / cost / -compute, then tie-breaks,
    value: float                  # then the part's place in `parts`: fewer pools first)
    rule: str = "straggler"       # the sync rule (planner/sync/proportional/rule.py)


@dataclasses.dataclass
class PartsRun:
    """The decomposition of one model size as the sync rules' searches share it: what they search
    (`listed`, in `parts_until`'s order) and what they found so far. Each rule's `solve_parts`
    (`planner.sync.searches`) adds its plans to `found` (key's last entry: the part's place, after
    every part for the proportional rule's own parts, so that ties go to the straggler rule), tightens
    `bound` (proven over what it searched, in the objective's units) and `incumbent` / `most`, and
    clears `complete` when the deadline stopped it."""

    instance: Instance
    pools: list[PoolSetting]
    objective: Objective
    solver: str
    deadline: float
    listed: list[Part]
    rules: tuple[str, ...]            # the rules searched (`planner.sync.rules.rules_searched`)
    incumbent: float = math.inf       # min_time, min_cost: the best value known (ties kept: times 1 + 1e-12)
    most: float = 0.0                 # max_compute: the best compute known (times 1 - 1e-12)
    part_bound: object = None         # the caller's proven bound per part (`decomposition.decompose`), or None
    complete: bool = True             # every part listed and searched
    bound: float = math.inf           # the caller sets 0 for max_compute (a bound from above)
    size: int | None = 0              # plans in the space searched (None: not counted)
    evaluations: int = 0
    found: list[PartResult] = dataclasses.field(default_factory=list)
    straggler_best: dict[int, float] = dataclasses.field(default_factory=dict)   # part index -> straggler optimum


def subsets(count: int):
    """Non-empty subsets of range(count), fewest pools first, then in listing order."""
    for size in range(1, count + 1):
        yield from combinations(range(count), size)


def too_many_pools(count: int, why: str = "") -> None:
    """InputError (exit 2) naming fleet.pools: more pools than the full listing takes. `why`: why the
    search by families of `planner.solvers.pool_families` does not apply either (a plain solve, which
    `--solver highs` answers: the message names it); empty for the questions that list the parts
    themselves (the robust solve)."""
    from planner.schema.errors import InputError, Problem
    here = f" here ({why})" if why else ""
    hint = "; use --solver highs" if why else ""
    raise InputError([Problem("fleet.pools", f"the exact planner takes at most {MAX_EXACT_POOLS} pools{here} "
                                             f"(2^P - 1 subsets of pools are listed), got {count}{hint}")])


def unit_price(s: Setting) -> Setting:
    """The reduced setting with node price 1 and no budget or node cap of its own (the part's
    space carries them): the uniform solver's cost is then N, its bound a node count."""
    return s.replace(price_usd_per_accelerator=1.0 / s.accelerators_per_node, budget_usd=None, max_nodes=None)


def base_space(instance: Instance, pools: list[PoolSetting]) -> DecisionSpace:
    """The instance's declared space with the precisions some pool runs (or search.precisions)."""
    from planner.fleet.pools import pool_instance
    first = pool_instance(instance, pools[0].hardware, instance.fleet.nodes)
    space = DecisionSpace.from_instance(first, pools[0].setting)
    wanted = instance.search.precisions or {q for p in pools for q in p.precisions}
    return dataclasses.replace(space, precisions=tuple(p for p in PRECISION_ORDER if p in wanted))


def slowest_and_memory(pools: list[PoolSetting], precisions):
    """(q, s, v, within, lows) for each precision q of `precisions`, pool s running it (the slowest of
    the pools used: least (F u, index) at q) and node memory v <= V_s of s or of a pool ranked faster:
    `within` the pools that may join s keeping s the slowest and v the least memory (s and the pools
    ranked faster that run q and have at least v, by index), `lows` the pools of `within` that may be
    the one of memory v (s alone when V_s = v). The families beyond 12 pools are built on these
    (`planner.solvers.pool_families`, `planner.solvers.proportional_families`)."""
    for q in precisions:
        runs = [i for i, p in enumerate(pools) if q in p.precisions]
        for s in runs:
            above = [p for p in runs if (pools[p].rate(q), p) > (pools[s].rate(q), s)]
            memory = pools[s].setting.memory_bytes
            levels = sorted({memory} | {pools[p].setting.memory_bytes for p in above
                                        if pools[p].setting.memory_bytes <= memory}, reverse=True)
            for v in levels:
                within = tuple(sorted([s] + [p for p in above if pools[p].setting.memory_bytes >= v]))
                lows = (s,) if memory == v else tuple(m for m in within if m != s and pools[m].setting.memory_bytes == v)
                yield q, s, v, within, lows


def parts(instance: Instance, pools: list[PoolSetting], params: float | None) -> list[Part]:
    """Every (pools used, precision) part with at least one plan of node count in range."""
    return parts_until(instance, pools, params)[0]


def parts_until(instance: Instance, pools: list[PoolSetting], params: float | None,
                deadline: float = math.inf) -> tuple[list[Part], bool]:
    """`parts`, listed until `deadline` (a `time.perf_counter()` instant, read before each subset of
    pools: listing one subset's regions takes ~10 ms on 12 pools with chosen regions, and 4,095
    subsets ~30 s) and whether the listing is complete."""
    if len(pools) > MAX_EXACT_POOLS:
        too_many_pools(len(pools))
    space = base_space(instance, pools)
    cap = instance.limits.max_nodes or math.inf
    sites = site_network(instance)
    out = []
    for used in subsets(len(pools)):
        if time.perf_counter() > deadline:
            return out, False
        top = min(affordable_nodes(pools, used, instance.limits.budget_usd), cap)
        low = max(space.min_nodes, len(used))
        if top < low:
            continue
        for view, placement in part_regions(instance, sites, pools, used):
            for precision in space.precisions:
                if unsupported(pools, used, precision):
                    continue
                s = mixed_setting(pools, used, precision, view)
                s = unit_price(s if params is None else with_params(s, params))
                out.append(Part(params, used, precision, s,
                                dataclasses.replace(space, precisions=(precision,), min_nodes=low, max_nodes=int(top),
                                                    placement=placement), view, placement))
    return out, True


class SiteSetViews:
    """The undominated region partitions of every set of the sites of `pools` by bit masks (bit i: the
    i-th site name in sorted order; `region_plans.SiteSets`, the listing's `region_choices` in its
    order), each with the five link numbers a setting takes from it (`network.with_links`: the WAN
    numbers of the set's `site_set_links` row, the regional Mb/s and RTT of the partition's slowest
    route inside a block), listed once per set. Two (set, partition) of equal numbers give every plan
    the same setting (tests/test_pool_families.py compares every row with `SiteNetwork.links`,
    tests/test_pool_regions_families.py the partitions and their links with `region_choices`)."""

    def __init__(self, net, pools):
        names = sorted({p.site for p in pools})
        self.names = names
        self.bit = [1 << names.index(p.site) for p in pools]        # each pool's site
        self.sets = SiteSets(net, names)
        self.table = site_set_links(net, names)
        self.wan = self.table[:, :3]
        self._wan = self.wan.tolist()                 # the same floats, as Python floats
        self.listed: dict = {}
        self.linked: dict = {}
        self.numbers: dict = {}

    def mask(self, used) -> int:
        """The sites of the pools `used`, as a mask."""
        out = 0
        for p in used:
            out |= self.bit[p]
        return out

    def partitions(self, mask: int) -> list:
        """(partition, its block masks, the five link numbers of `network.with_links`) of each undominated
        partition of the sites of `mask` (InputError naming network.regions beyond
        `partition.MAX_PARTITIONS`, as the listing)."""
        if mask not in self.listed:
            self.listed[mask] = [(self.sets.named(blocks), blocks, links) for blocks, links in self.block_links(mask)]
        return self.listed[mask]

    def block_links(self, mask: int) -> list:
        """(block masks, the five link numbers) of each partition `partitions` lists, in its order, without
        naming the sites."""
        if mask not in self.linked:
            sets = self.sets
            wan_links = tuple(self._wan[mask])
            self.linked[mask] = [(blocks, wan_links + (mbps * 1e6, rtt_ms / 1e3))
                                 for blocks, (mbps, rtt_ms) in sets.linked_partitions(mask)]
        return self.linked[mask]

    def link_numbers(self, mask: int) -> list[tuple[float, ...]]:
        """The distinct five link numbers of the undominated partitions of the sites of `mask`, in the
        order `partitions` lists them (the first of each), without listing the partitions
        (`SiteSets.partition_links`: the links of every partition are those of the undominated ones);
        the same InputError as `partitions` where it refuses."""
        if mask not in self.numbers:
            links = self.sets.partition_links(mask)
            if links is None:
                self.partitions(mask)           # refuses, naming network.regions
                raise AssertionError("more region partitions by masks than by the listing")
            wan_links = tuple(self._wan[mask])
            self.numbers[mask] = list(dict.fromkeys(wan_links + (mbps * 1e6, rtt_ms / 1e3)
                                                    for mbps, rtt_ms in links))
        return self.numbers[mask]

    def geography(self, mask: int) -> list:
        """[(None, None, the five link numbers)] of the sites of `mask` with the network's own regions
        (the geography's: its `site_set_links` row, `SiteNetwork.links` of the set), as `partitions`
        lists the chosen ones."""
        return [(None, None, tuple(float(x) for x in self.table[mask]))]
