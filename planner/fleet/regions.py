"""Regions chosen by the planner, with the capacity that makes the choice real (docs/fleet.md,
section 3, "Chosen regions"; `network.regions = "chosen"`).

Placement rule. A plan's units are its groups of co-located nodes: hierarchical groups of k nodes,
PP-group pipelines of S nodes, ZeRO-3 shards of Z nodes (flat mode with Z > 1); call the unit size
u. The cost model forms G = floor(N / u) units of N nodes (docs/cost_model.md: hierarchical
G = floor(N / k), PP-group G = floor(N / S), ZeRO-3 G = floor(N / Z)); the N - G u < u nodes left
over join groups (hierarchical) or idle (pipelines, shards). With the plan's used sites split
into regions r (planner.sites.partition) holding c_r of its nodes, every unit lies inside one
region, so region r hosts floor(c_r / u) units. The plan is *placeable* when

    c_r >= u for every region r                 (every region hosts a unit), and
    sum_r floor(c_r / u) = floor(N / u),  i.e.  sum_r (c_r mod u) < u

(the regions together form the G units the cost model counts, and the nodes outside whole units
are the same fewer-than-u nodes as in the uniform model, each in a region with a unit of its
own). This is how hierarchical local SGD and DiLoCo deployments are laid out: a worker group
synchronises over a fast local fabric and only group leaders cross the slow network (Lin et al.
2020, "Don't use large mini-batches, use local SGD", hierarchical local SGD, section 3; Douillard
et al. 2023, DiLoCo, "islands" of co-located devices; Kim et al. 2025, HALoS, arXiv 2506.04531:
a local parameter server per region, one global server across regions); a group split over a
slow link would run its every-round sync over it. With one region the rule always holds (c = N >= u), so one site,
a uniform fleet and `network.regions = "geography"` are exactly today's model. Flat plans without
sharding and a pipeline over the WAN have no units (u = 1: every plan is placeable).

Capacity: region r can hold c_r in [lo_r, cap_r], lo_r = the number of pools of the plan at its
sites (each pool used has a node), cap_r = their total count.

`placeable_mask(lo, cap, u, n_max)` lists every placeable N exactly: writing lo_r = A u + alpha and
cap_r = B u + beta, a region with c_r mod u = m can hold q = floor(c_r / u) in
[A + [m < alpha], B - [m > beta]]; the m of each region split at alpha and beta + 1 into at most
three segments with constant q-ranges. N = Q u + e is placeable iff (Q, e) = (sum_r q_r,
sum_r m_r) with e < u for some choice of a segment and a (q, m) in it per region: the reachable
(Q, e) are built region by region, each segment dilating the grid by its box of (q, m).

`cheapest_placement` finds the cheapest counts per pool of a placeable plan: the nodes per region
read back from the dynamic programme below, each region filled from its cheapest pools.

Cost. A plan on N nodes with unit size u costs C_u(N), the least cost of its placements
(`placement_costs`, for every N at once). C_u(N) >= F(N), the cheapest fill of N nodes with no
placement rule, and F is nondecreasing in N, but C_u is not (a region whose pools each hold one
node has a fixed remainder; tests/test_regions.py has a case where 11 nodes cost 24 and 10 cost
32), nor is it the same for every u at one N. So a budget keeps exactly the (N, u) with
C_u(N) <= budget (`Placement.within`: the masks above cut by cost), and the least-cost plan of a
part is found by a descent over cost limits (`least_cost_placed`), not by the fewest nodes. Under
min_time and max_compute, of the plans tied with a part's optimum the cheapest placed is returned,
by the same descent (`cheapest_tied`), not the solvers' first in tie order (fewest nodes, then the
smaller unit size), which need not be the cheapest placed. Those two descents solve, so they are in
the search layer: `planner.solvers.placed`; this module is the placement rule and its costs
(layer: setting, docs/architecture.md). Their use on an instance's pools and sites (a part's
regions, a plan's regions checked and shown, the oracle's) is `planner.fleet.region_plans`; the
proportional rule's fastest placeable split is `planner.sync.proportional.placement`.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field, replace
from typing import Sequence

import numpy as np


Partition = tuple[tuple[str, ...], ...]


def is_placeable(region_nodes: Sequence[int], unit: int) -> bool:
    """The placement rule on the nodes per region (module docstring), checked directly."""
    if unit <= 1:
        return True
    return all(c >= unit for c in region_nodes) and sum(c % unit for c in region_nodes) < unit


def _segments(lo: int, cap: int, u: int) -> list[tuple[int, int, int, int]]:
    """(m_lo, m_hi, q_lo, q_hi) of one region: remainders m with their range of q = floor(c / u)."""
    a, alpha = divmod(lo, u)
    b, beta = divmod(cap, u)
    cuts = sorted({0, alpha, beta + 1, u} & set(range(u + 1)))
    out = []
    for m_lo, end in zip(cuts, cuts[1:]):
        m_hi = end - 1
        q_lo, q_hi = a + (m_lo < alpha), b - (m_lo > beta)
        if q_lo <= q_hi:
            out.append((m_lo, m_hi, q_lo, q_hi))
    return out


def _dilate(grid: np.ndarray, low: int, high: int, axis: int) -> np.ndarray:
    """out[i] = any of grid[i - d] for d in low..high along `axis` (cells shifted past the end drop):
    a window sum of the cumulative counts, counts[i - low] - counts[i - high - 1]."""
    n = grid.shape[axis]
    counts = np.cumsum(grid, axis=axis, dtype=np.int32)
    i = np.arange(n)
    top, bottom = i - low, i - high - 1
    upper = np.take(counts, np.clip(top, 0, n - 1), axis=axis)
    lower = np.take(counts, np.clip(bottom, 0, n - 1), axis=axis)
    shape = [1, 1]
    shape[axis] = n
    upper = np.where((top >= 0).reshape(shape), upper, 0)
    lower = np.where((bottom >= 0).reshape(shape), lower, 0)
    return upper > lower


def placeable_mask(lo: Sequence[int], cap: Sequence[int], unit: int, n_max: int) -> np.ndarray:
    """Boolean array over N = 0..n_max: whether N nodes can be placed in regions holding between
    lo[r] and cap[r] nodes each by the placement rule with unit size `unit` (module docstring).
    The reachable (Q, e) = (sum of floor(c_r / u), sum of c_r mod u), e < u: with few choices of
    one segment per region, the union of their boxes (the sums of integer ranges are ranges);
    else built region by region, each of a region's segments (a range of m and its range of q)
    dilating the grid by its box, O(n_max) per segment."""
    mask = np.zeros(n_max + 1, dtype=bool)
    u = int(unit)
    if u <= 1:
        low, high = sum(lo), min(sum(cap), n_max)
        mask[low:high + 1] = True
        return mask
    segments = [_segments(max(a, u), b, u) for a, b in zip(lo, cap)]
    if any(not s for s in segments):
        return mask
    rows = n_max // u + 1
    grid = np.zeros((rows + 1, u), dtype=bool)          # grid[Q, e] for N = Q u + e
    if math.prod(len(r) for r in segments) <= 64:      # few regions: one box per choice of segments
        for combo in itertools.product(*segments):
            e_lo, e_hi = sum(c[0] for c in combo), min(sum(c[1] for c in combo), u - 1)
            q_lo, q_hi = sum(c[2] for c in combo), min(sum(c[3] for c in combo), rows)
            if e_lo <= e_hi and q_lo <= q_hi:
                grid[q_lo:q_hi + 1, e_lo:e_hi + 1] = True
        segments = []
    else:
        grid[0, 0] = True
    for region in segments:
        grown = np.zeros_like(grid)
        for m_lo, m_hi, q_lo, q_hi in region:
            grown |= _dilate(_dilate(grid, m_lo, m_hi, axis=1), q_lo, q_hi, axis=0)
        grid = grown
    flat = grid.ravel()
    mask[:] = flat[:n_max + 1] if flat.size > n_max else np.pad(flat, (0, n_max + 1 - flat.size))
    return mask


@dataclass
class Placement:
    """The regions of one part (pools used, region partition) and their capacities, with the
    placeable node counts per unit size cached (`mask`). `cost_limit_usd` (a budget, or the
    least-cost search's bound): `mask` then lists only the N whose cheapest placement costs at
    most that (`placement_costs`); views with other limits share the cost arrays (`within`)."""

    partition: Partition
    lo: tuple[int, ...]                  # per region: pools of the plan there (one node each at least)
    cap: tuple[int, ...]                 # per region: their total count
    pools_in: tuple[tuple[int, ...], ...]     # per region: indices of the pools used there
    prices: tuple[tuple[tuple[float, int], ...], ...] = ()   # per region: (USD per node, count) of its pools
    cost_limit_usd: float | None = None
    _masks: dict[int, np.ndarray] = field(default_factory=dict, repr=False)
    _costs: dict[int, np.ndarray] = field(default_factory=dict, repr=False)   # shared by every view

    @property
    def n_max(self) -> int:
        return sum(self.cap)

    def within(self, limit_usd: float) -> "Placement":
        """The same regions, listing only the N placeable at a cost <= min(limit_usd, this view's
        limit); inf: this view."""
        if not limit_usd < math.inf:
            return self
        limit = limit_usd if self.cost_limit_usd is None else min(limit_usd, self.cost_limit_usd)
        return replace(self, cost_limit_usd=float(limit), _masks={})       # the cost arrays shared

    def fill_cost(self) -> np.ndarray:
        """F(N), N = 0..n_max: the cheapest fill of every pool of the part without the placement rule
        (`region_curve` of all its pools), a lower bound on every placement of N nodes."""
        if -1 not in self._costs:
            self._costs[-1] = region_curve([pc for region in self.prices for pc in region])
        return self._costs[-1]

    def affordable_nodes(self) -> int:
        """The most N whose cheapest fill costs at most this view's limit (n_max without one): no
        placement of more nodes is within it, F being nondecreasing and C_u(N) >= F(N)."""
        if self.cost_limit_usd is None:
            return self.n_max
        ok = np.flatnonzero(self.fill_cost() <= self.cost_limit_usd)
        return int(ok[-1]) if ok.size else -1

    def cost(self, unit: int, n_hi: int | None = None) -> np.ndarray:
        """C_u(N) for N = 0..n_hi (default n_max): the least cost of a placement of N nodes with
        unit size u, inf where none (`placement_costs`; u <= 1: the cheapest fill)."""
        u = max(int(unit), 1)
        n_hi = self.n_max if n_hi is None else min(int(n_hi), self.n_max)
        if u == 1:
            return self.fill_cost()[:n_hi + 1]
        known = self._costs.get(u)
        if known is None or known.size <= n_hi:      # (re)computed to at least twice as far: few recomputations
            top = n_hi if known is None else min(self.n_max, max(n_hi, 2 * (known.size - 1)))
            known = self._costs[u] = placement_costs(self.region_curves(), u, top)
        return known[:n_hi + 1]

    def region_curves(self) -> list[np.ndarray]:
        """f_r(c) of each region (`region_curve` of its pools)."""
        return [region_curve(r) for r in self.prices]

    def rule_mask(self, unit: int) -> np.ndarray:
        """Boolean over N = 0..n_max: the N placeable with unit size `unit` by the rule alone."""
        return placeable_mask(self.lo, self.cap, unit, self.n_max)

    def mask(self, unit: int) -> np.ndarray:
        """Boolean over N = 0..n_max (shorter with a cost limit: beyond it nothing is within): the
        placeable N of unit size `unit` (`placeable_mask`), with a limit only those whose C_u(N) is
        within it."""
        u = max(int(unit), 1)
        if u not in self._masks:
            mask = self.rule_mask(u)
            if self.cost_limit_usd is not None:
                n_hi = self.affordable_nodes()
                mask = mask[:n_hi + 1] & (self.cost(u, n_hi) <= self.cost_limit_usd) if n_hi >= 0 else mask[:0]
            self._masks[u] = mask
        return self._masks[u]


@dataclass
class ChoicePlacement(Placement):
    """The regions of one choice of the search beyond 12 pools with chosen regions
    (`planner.solvers.pool_regions_families`): in each region r the pools that must hold a node
    (`forced_in`, lo_r their number) and the pools that may (`pools_in`: every eligible pool at the
    region's sites, the forced ones among them; cap_r their total count). Any c_r in [lo_r, cap_r] is
    held by some set of pools between the two, and the cheapest counts of c_r nodes are one node of
    each forced pool, then the cheapest nodes left (`choice_curve`: f_r, convex, as `region_curve`).
    With one region no placement rule applies (as the listing's part of one region, which has no
    placement): every N in [lo, cap], at the cheapest fill."""

    forced_in: tuple[tuple[int, ...], ...] = ()
    curves: tuple = field(default=(), repr=False)          # f_r of each region (`choice_curve`)
    whole: object = field(default=None, repr=False)        # F(N): every region's pools at once

    def region_curves(self) -> list[np.ndarray]:
        return list(self.curves)

    def fill_cost(self) -> np.ndarray:
        return self.whole

    def rule_mask(self, unit: int) -> np.ndarray:
        if len(self.partition) > 1:
            return super().rule_mask(unit)
        mask = np.zeros(self.n_max + 1, dtype=bool)
        mask[sum(self.lo):] = True
        return mask

    def cost(self, unit: int, n_hi: int | None = None) -> np.ndarray:
        if len(self.partition) > 1:
            return super().cost(unit, n_hi)
        n_hi = self.n_max if n_hi is None else min(int(n_hi), self.n_max)
        return self.fill_cost()[:n_hi + 1]

    def counts(self, pools, unit: int, nodes: int) -> list[int] | None:
        """`cheapest_placement` of this choice: one region or no units, the cheapest fill of every
        region's pools at once; else the nodes per region of the programme (`region_nodes`), each region
        filled with a node of each forced pool, then its cheapest nodes."""
        from planner.fleet.replicas import cheapest_fill
        forced = [i for block in self.forced_in for i in block]
        eligible = [i for block in self.pools_in for i in block]
        if len(self.partition) == 1 or unit <= 1:
            return cheapest_fill(pools, forced, nodes, eligible)
        mask = self.mask(unit)
        if nodes >= mask.size or not mask[nodes]:
            return None
        per_region = region_nodes(self.region_curves(), unit, nodes)
        if per_region is None:
            return None
        counts = [0] * len(pools)
        for must, may, c in zip(self.forced_in, self.pools_in, per_region):
            filled = cheapest_fill(pools, must, c, may)
            for i in may:
                counts[i] = filled[i]
        return counts


def choice_curve(forced_usd: Sequence[float], extras: Sequence[tuple[float, int]]) -> np.ndarray:
    """f(c), c = 0..cap: one node at each price of `forced_usd` (inf below their number), then the
    cheapest of the nodes `extras` ((USD per node, count) each; prices >= 0): the cheapest counts of c
    nodes of pools that must each hold one and pools that may hold any (`replicas.cheapest_fill` with
    `eligible`). Its increments are the sorted prices of `extras`: nondecreasing."""
    lo = len(forced_usd)
    cap = lo + sum(k for _, k in extras)
    f = np.full(cap + 1, np.inf)
    steps = [np.full(k, p) for p, k in sorted(extras)]
    f[lo:] = sum(sorted(forced_usd)) + np.cumsum(np.concatenate([np.zeros(1)] + steps))
    return f


def choice_placement(pools, partition: Partition, forced_in, pools_in, curves=None, whole=None) -> ChoicePlacement:
    """The `ChoicePlacement` of the regions of `partition` with these pools that must and may hold
    nodes in each (indices into `pools`). `curves`, `whole`: f_r of each region and F(N) of every
    region's pools at once, when the caller has them (`choice_curve_of`, the same arrays; read only)."""
    if curves is None:
        curves = tuple(choice_curve_of(pools, must, may) for must, may in zip(forced_in, pools_in))
    if whole is None:
        whole = choice_curve_of(pools, [i for block in forced_in for i in block],
                                [i for block in pools_in for i in block])
    return ChoicePlacement(partition, tuple(len(m) for m in forced_in),
                           tuple(sum(pools[i].count for i in may) for may in pools_in), tuple(pools_in),
                           forced_in=tuple(forced_in), curves=tuple(curves), whole=whole)


def choice_curve_of(pools, must: Sequence[int], may: Sequence[int]) -> np.ndarray:
    """`choice_curve` of the pools `must` (one node each) and `may` (indices into `pools`; the nodes of
    `may` beyond one of each of `must`), read only: the order of either does not matter (both are
    sorted there)."""
    from planner.fleet.replicas import node_price_usd
    forced = set(must)
    extras = [(node_price_usd(pools[i]), pools[i].count - (i in forced)) for i in may
              if pools[i].count - (i in forced) > 0]
    curve = choice_curve([node_price_usd(pools[i]) for i in must], extras)
    curve.flags.writeable = False
    return curve


def placement_of(pools, used: Sequence[int], partition: Partition) -> Placement:
    """The capacities (and node prices) of the regions of `partition` for the pools `used`."""
    from planner.fleet.replicas import node_price_usd
    pools_in = tuple(tuple(i for i in used if pools[i].site in block) for block in partition)
    return Placement(partition, tuple(len(p) for p in pools_in),
                     tuple(sum(pools[i].count for i in p) for p in pools_in), pools_in,
                     tuple(tuple((node_price_usd(pools[i]), pools[i].count) for i in p) for p in pools_in))


def region_curve(prices: Sequence[tuple[float, int]]) -> np.ndarray:
    """f(c), c = 0..cap: the least cost of c nodes of these pools ((USD per node, count) each), every
    pool holding one node at least (inf below their number): one of each, then the cheapest first,
    so f is convex on [lo, cap] (its increments are the sorted prices). For all pools of a part it
    is the cheapest fill F(N) of `replicas.cheapest_fill`.

    A price may be a complex number, a lexicographic key (real part first, then the imaginary):
    "cheapest" is then least in that order (`fastest_placement`). numpy orders complex numbers that
    way (min, minimum, argmin) and adds them part by part, so the programme of `placement_costs`
    minimises such keys exactly as it does prices."""
    lo, cap = len(prices), sum(k for _, k in prices)
    dtype = complex if any(isinstance(p, complex) for p, _ in prices) else float
    f = np.full(cap + 1, np.inf, dtype=dtype)
    steps = [np.full(k - 1, p, dtype=dtype) for p, k in sorted(prices, key=lambda pk: (pk[0].real, pk[0].imag))]
    extra = np.concatenate([np.zeros(1, dtype=dtype)] + steps)
    f[lo:] = sum(p for p, _ in prices) + np.cumsum(extra)
    return f


def placement_costs(curves: Sequence[np.ndarray], unit: int, n_hi: int) -> np.ndarray:
    """C_u(N), N = 0..n_hi: the least sum_r f_r(c_r) over placements (c_r) of N nodes with unit size
    u >= 2 (module docstring), inf where there is none; f_r the regions' `region_curve`s.

    A placement has sum_r (c_r mod u) = N mod u exactly (the sum is < u and = N mod u), so writing
    c_r = u q_r + m_r and N = u Q + e: Q = sum q_r, e = sum m_r, and every partial sum of the m_r
    stays below u (no carry). A dynamic programme over the regions on the (Q, e) grid:

        D_1[q, m] = f_1(u q + m)                      (c_1 >= u)
        D_k[Q, e] = min_{m <= e, q} D_{k-1}[Q - q, e - m] + f_k(u q + m)      (c_k >= u)

    and C_u(Q u + e) = D_R[Q, e]: every placement is reached (its regions' (q_r, m_r) in turn) and
    every cell is a placement's cost; the order of the regions does not matter, so the largest comes
    first. Work: n_hi cap_r / 2 additions per further region and u (tests check it against every
    assignment and against a CP-SAT model of the placement)."""
    order, tables, _ = _programme(curves, unit, n_hi)
    out = np.full(n_hi + 1, np.inf, dtype=np.result_type(float, *curves))
    if tables:
        flat = tables[-1].ravel()
        out[:min(flat.size, n_hi + 1)] = flat[:n_hi + 1]
    return out


def _programme(curves: Sequence[np.ndarray], unit: int, n_hi: int):
    """(the regions in the order taken, D_1 .. D_R, each region's g[q, m] = f(u q + m) for c >= u) of
    `placement_costs`."""
    u = int(unit)
    rows = n_hi // u + 1
    dtype = np.result_type(float, *curves)           # complex: lexicographic keys (`region_curve`)
    order = sorted(range(len(curves)), key=lambda r: -len(curves[r]))   # the largest enters without a convolution
    tables, grids = [], []
    for f in (curves[r] for r in order):
        top = min(f.size - 1, n_hi)
        g = np.full((top // u + 1) * u, np.inf, dtype=dtype)
        g[u:top + 1] = f[u:top + 1]
        g = g.reshape(-1, u)                       # g[q, m] = f(u q + m), c >= u
        grids.append(g)
        if not tables:
            first = np.full((rows, u), np.inf, dtype=dtype)
            first[:min(rows, g.shape[0])] = g[:rows]
            tables.append(first)
            continue
        table, grown = tables[-1], np.full((rows, u), np.inf, dtype=dtype)
        for m in range(u):
            qs = np.flatnonzero(np.isfinite(g[:, m]))
            if not qs.size:
                continue
            width = u - m                         # previous remainders e' with e' + m < u
            step = max(1, 4_000_000 // max(1, rows * width))     # bounded memory: qs in chunks
            for k in range(0, qs.size, step):
                q = qs[k:k + step]
                back = np.arange(rows)[:, None] - q[None, :]
                vals = table[np.clip(back, 0, None), :width] + g[q, m][None, :, None]
                vals[back < 0] = np.inf
                np.minimum(grown[:, m:], vals.min(axis=1), out=grown[:, m:])
        tables.append(grown)
    return order, tables, grids


def region_nodes(curves: Sequence[np.ndarray], unit: int, nodes: int) -> list[int] | None:
    """The nodes per region (c_r) of a cheapest placement of `nodes` nodes with unit size u >= 2, read
    back from the programme's tables (region by region from the last: the (q, m) whose D_{k-1} entry
    plus f_k(u q + m) is D_k's, i.e. the least of those sums); None when there is none."""
    u = int(unit)
    order, tables, grids = _programme(curves, u, nodes)
    q_all, e = divmod(int(nodes), u)
    if not tables or not np.isfinite(tables[-1][q_all, e]):
        return None
    out = [0] * len(curves)
    for k in range(len(tables) - 1, 0, -1):
        g, previous = grids[k], tables[k - 1]
        q = np.arange(min(g.shape[0], q_all + 1))[:, None]
        m = np.arange(e + 1)[None, :]
        sums = previous[q_all - q, e - m] + g[q, m]
        qk, mk = np.unravel_index(int(np.argmin(sums)), sums.shape)
        out[order[k]] = u * int(qk) + int(mk)
        q_all, e = q_all - int(qk), e - int(mk)
    out[order[0]] = u * q_all + e
    return out


def fill_region(pools, members: Sequence[int], nodes: int) -> dict[int, int]:
    """Counts of the pools `members` (one region) for `nodes` nodes at least cost: one node each,
    then the cheapest first (ties to the first listed): `region_curve`'s cost."""
    from planner.fleet.replicas import cheapest_fill
    counts = cheapest_fill(pools, members, nodes)
    return {i: counts[i] for i in members}


def plan_unit(mode: str, group_size, stages, zero_shards) -> int:
    """u of a plan: k (hierarchical), S (PP-group), Z (flat with ZeRO-3), else 1."""
    if mode == "hierarchical":
        return int(group_size)
    if mode == "pp_group":
        return int(stages)
    if mode == "flat" and zero_shards and int(zero_shards) > 1:
        return int(zero_shards)
    return 1


def _runs(ok: np.ndarray) -> list[tuple[int, int]]:
    """(first, last) index of every run of True in a boolean array."""
    edges = np.diff(np.concatenate(([0], ok.astype(np.int8), [0])))
    return list(zip(np.flatnonzero(edges == 1).tolist(), (np.flatnonzero(edges == -1) - 1).tolist()))


def restrict_classes(c, mode: str, mask_of):
    """The classes `c` (planner.space.Classes of `mode`) cut to the replica counts n whose node count
    N = max(n unit, min_nodes) is placeable: each class's [n_lo, n_hi] is split into the runs of
    placeable n. `mask_of(u)` is the boolean array over N of unit size u (Placement.mask). Classes
    sharing (u, nodes per replica, min_nodes) share the runs, so the work is per such triple."""
    if mode == "pipeline_wan":
        return c
    if mode == "hierarchical":
        units = np.asarray(c.rows.group_size, dtype=np.int64)
    elif mode == "pp_group":
        units = np.asarray(c.rows.stages, dtype=np.int64)
    else:
        units = np.where(np.asarray(c.rows.zero_shards) > 1, np.asarray(c.rows.zero_shards), 1).astype(np.int64)
    units = np.broadcast_to(units, c.n_lo.shape)
    keys = np.stack([units, c.unit, c.min_nodes], axis=1)
    idx, los, his = [np.flatnonzero(units <= 1)], [c.n_lo[units <= 1]], [c.n_hi[units <= 1]]
    changed = False
    for u, per, floor in np.unique(keys[units > 1], axis=0):
        members = np.flatnonzero((keys == (u, per, floor)).all(axis=1))
        top = int(c.n_hi[members].max())
        mask = mask_of(int(u))
        nodes = np.maximum(np.arange(top + 1) * per, floor)
        ok = np.zeros(top + 1, dtype=bool)
        inside = nodes < mask.size
        ok[inside] = mask[nodes[inside]]
        lo, hi = c.n_lo[members], c.n_hi[members]
        runs = _runs(ok)
        if len(runs) == 1 and runs[0][0] <= lo.min() and hi.max() <= runs[0][1]:
            idx.append(members), los.append(lo), his.append(hi)       # every n of these classes placeable
            continue
        changed = True
        for a, b in runs:
            cut_lo, cut_hi = np.maximum(lo, a), np.minimum(hi, b)
            keep = cut_lo <= cut_hi
            idx.append(members[keep]), los.append(cut_lo[keep]), his.append(cut_hi[keep])
    if not changed:
        return c
    idx = np.concatenate(idx)
    order = np.argsort(idx, kind="stable")               # classes keep their order, runs in n order
    out = c.take(idx[order])
    out.n_lo = np.concatenate(los)[order].astype(np.int64)
    out.n_hi = np.concatenate(his)[order].astype(np.int64)
    return out


def cheapest_placement(pools, placement: Placement, unit: int, nodes: int) -> list[int] | None:
    """The cheapest counts per pool (every pool of the part used, each within its count) whose
    regions hold a placeable plan of `nodes` nodes with unit size `unit`; None if there is none.
    One region: `replicas.cheapest_fill` (no placement constraint). Else the nodes per region of
    the programme of `placement_costs` (`region_nodes`), each region filled cheapest first
    (`fill_region`): their cost is C_u(N), exactly the programme's (no prices rounded to integers;
    tests check it against every assignment and against a CP-SAT model)."""
    from planner.fleet.replicas import cheapest_fill
    if isinstance(placement, ChoicePlacement):
        return placement.counts(pools, unit, nodes)
    used = [i for block in placement.pools_in for i in block]
    if len(placement.partition) == 1 or unit <= 1:
        return cheapest_fill(pools, used, nodes)
    mask = placement.mask(unit)
    if nodes >= mask.size or not mask[nodes]:
        return None
    per_region = region_nodes([region_curve(r) for r in placement.prices], unit, nodes)
    if per_region is None:
        return None
    counts = [0] * len(pools)
    for members, c in zip(placement.pools_in, per_region):
        for i, n in fill_region(pools, members, c).items():
            counts[i] = n
    return counts
