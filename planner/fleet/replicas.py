"""The cost model of a plan that uses nodes of several pools (docs/fleet.md, "Cost model").

A mixed plan is an ordinary plan (mode, precision, H, Cr, S, M, k, R, ...) plus n_p nodes of
each pool p, N = sum_p n_p. The pools used are U = {p : n_p > 0}.

Synchronous straggler rule. Every replica (flat, hierarchical), every pipeline stage
(pp-group, pipeline over the WAN) runs the same H inner steps on the same batch B between
syncs, and a synchronous outer step (and every pipeline tick) waits for its slowest member,
so one inner step lasts what it lasts on the slowest node used:

    t_comp = max_{p in U} 6 P_act B / (F_p u_p) = 6 P_act B / min_{p in U} (F_p u_p),

F_p the pool's node peak at the plan's precision, u_p its MFU (the profile's, or the
achieved MFU of its accelerator under the dtplan profile). Every other term of the step and
outer step (WAN and regional syncs, pipeline links, expert all-to-all) is the uniform model's
(docs/cost_model.md sections 3-4) with N nodes: links are per node and the same for every
pool. The outer update averages the N replicas' pseudo-gradients with equal weights (each
processed the same H B tokens), so eta_H, eta_C and the replica penalty eta_R (K = N, or
K = G groups) are the uniform model's. This is DiLoCo's synchronous setting (Douillard et al.
2023) with the straggler cost of heterogeneous workers described for local SGD (Lin et al.
2020, "Don't use large mini-batches, use local SGD", section on system heterogeneity): the
fast nodes idle for 1 - (F_slow u_slow) / (F_p u_p) of every step (`idle_fraction`).

Memory: every node holds the same share of the training state (P beta / S, or the MoE
share), so the plan must fit on the smallest node used: V = min_{p in U} V_p.
Precision: the plan's precision must be supported by every pool used.
Cost: sum_p n_p x accelerators_p x price_p. Global MFU: C_local / (sum_p n_p F_p T_wall).

With one pool (U = {p}) every formula above is the uniform model's, term by term:
`mixed_setting` returns that pool's own setting (tests/test_fleet_conformance.py runs every
reference case through this path).

Not modelled (docs/fleet.md, "Limits"): running more inner steps on faster pools (H_i in
proportion to speed, as in heterogeneous local SGD) and placing heavier pipeline stages on
bigger nodes; both would only make mixed fleets faster than this model says.
"""

from __future__ import annotations

from typing import Sequence

from planner.cost.setting import Setting
from planner.fleet.pools import PoolSetting


def used_pools(counts: Sequence[int]) -> tuple[int, ...]:
    """U: the indices of the pools with at least one node in the plan."""
    return tuple(i for i, n in enumerate(counts) if n > 0)


def unsupported(pools: Sequence[PoolSetting], used: Sequence[int], precision: str) -> list[str]:
    """Labels of the pools of `used` whose hardware cannot run `precision`."""
    return [pools[i].label for i in used if precision not in pools[i].precisions]


def slowest(pools: Sequence[PoolSetting], used: Sequence[int], precision: str) -> int:
    """The pool of `used` with the least achieved FLOP/s per node F_p u_p at `precision`
    (ties to the first listed): it sets t_comp."""
    return min(used, key=lambda i: (pools[i].rate(precision), i))


def mixed_setting(pools: Sequence[PoolSetting], used: Sequence[int], precision: str, sites=None) -> Setting:
    """The setting that scores a plan on pools `used` at `precision` (module docstring): the
    slowest pool's own setting (its peak F, MFU u and every other field), with node memory the
    least of the pools used. Only `precision` is kept in its peaks (the one every pool used runs).
    With `sites` (a `planner.fleet.network.SiteNetwork`), the links of the pools' sites."""
    from planner.fleet.network import with_links
    s = pools[slowest(pools, used, precision)].setting
    memory = min(pools[i].setting.memory_bytes for i in used)
    s = s.replace(peak_flops={precision: s.peak_flops[precision]}, memory_bytes=memory)
    return with_links(s, sites.links(sites_of(pools, used)) if sites is not None else None)


def sites_of(pools: Sequence[PoolSetting], used: Sequence[int]) -> tuple[str, ...]:
    """S(U): the sites of the pools used, in listing order, each once."""
    return tuple(dict.fromkeys(pools[i].site for i in used if pools[i].site is not None))


def node_price_usd(pool: PoolSetting) -> float:
    """USD per node of the pool: accelerators per node x price per accelerator."""
    return pool.hardware.accelerators_per_node * pool.hardware.price_usd_per_accelerator


def fleet_cost_usd(pools: Sequence[PoolSetting], counts: Sequence[int]) -> float:
    """Hardware cost of a plan, USD: sum_p n_p x node price_p."""
    return float(sum(n * node_price_usd(p) for p, n in zip(pools, counts)))


def cheapest_fill(pools: Sequence[PoolSetting], used: Sequence[int], nodes: int) -> list[int] | None:
    """The cheapest counts using exactly the pools `used` (each at least one node) for `nodes`
    nodes in all: one node of each, then the rest from the cheapest pools first (ties to the
    first listed). None when `nodes` is below |used| or above their total count.

    Under the synchronous rule the plan's speed depends on the pools only through U, so this is
    the cheapest assignment of every plan of U with N nodes (an exchange argument: moving a node
    to a cheaper pool of U never raises the cost)."""
    total = sum(pools[i].count for i in used)
    if not len(used) <= nodes <= total:
        return None
    counts = [0] * len(pools)
    for i in used:
        counts[i] = 1
    left = nodes - len(used)
    for i in sorted(used, key=lambda i: (node_price_usd(pools[i]), i)):
        take = min(left, pools[i].count - 1)
        counts[i] += take
        left -= take
    return counts


def affordable_nodes(pools: Sequence[PoolSetting], used: Sequence[int], budget_usd: float | None) -> int:
    """The most nodes of pools `used` (each used) whose cheapest fill costs at most the budget;
    0 when even one node of each is over it. Without a budget: their total count. The cost of
    the cheapest fill never falls as nodes are added, so a bisection finds it exactly."""
    total = sum(pools[i].count for i in used)
    if budget_usd is None:
        return total

    def within(n: int) -> bool:
        return fleet_cost_usd(pools, cheapest_fill(pools, used, n)) <= budget_usd

    if not within(len(used)):
        return 0
    low, high = len(used), total          # within(low) holds
    while low < high:
        mid = (low + high + 1) // 2
        low, high = (mid, high) if within(mid) else (low, mid - 1)
    return low


def idle_fraction(pools: Sequence[PoolSetting], used: Sequence[int], precision: str) -> dict[int, float]:
    """Per pool used: the fraction of every inner step its nodes wait for the slowest,
    1 - (F_slow u_slow) / (F_p u_p)."""
    slow = pools[slowest(pools, used, precision)].rate(precision)
    return {i: 1.0 - slow / pools[i].rate(precision) for i in used}
