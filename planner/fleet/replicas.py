"""The pools a plan uses and what they cost (docs/fleet.md, "Cost model"), whatever its sync rule.

A mixed plan is an ordinary plan (mode, precision, H, Cr, S, M, k, R, ...) plus n_p nodes of
each pool p, N = sum_p n_p. The pools used are U = {p : n_p > 0} (`used_pools`); the plan's
precision must be supported by every pool used (`unsupported`). Cost: sum_p n_p x accelerators_p
x price_p (`fleet_cost_usd`); the cheapest counts of N nodes of U (`cheapest_fill`) and the most
nodes of U a budget buys (`affordable_nodes`).

How the pools' replicas synchronise, and so the setting that scores a plan on them, is its sync
rule's (`planner.sync.rules`): the straggler rule's setting, paced by the slowest pool used, is
`planner.sync.straggler.rule.mixed_setting`.
"""

from __future__ import annotations

from typing import Sequence

from planner.fleet.pools import PoolSetting


def used_pools(counts: Sequence[int]) -> tuple[int, ...]:
    """U: the indices of the pools with at least one node in the plan."""
    return tuple(i for i, n in enumerate(counts) if n > 0)


def unsupported(pools: Sequence[PoolSetting], used: Sequence[int], precision: str) -> list[str]:
    """Labels of the pools of `used` whose hardware cannot run `precision`."""
    return [pools[i].label for i in used if precision not in pools[i].precisions]


def sites_of(pools: Sequence[PoolSetting], used: Sequence[int]) -> tuple[str, ...]:
    """S(U): the sites of the pools used, in listing order, each once."""
    return tuple(dict.fromkeys(pools[i].site for i in used if pools[i].site is not None))


def node_price_usd(pool: PoolSetting) -> float:
    """USD per node of the pool: accelerators per node x price per accelerator."""
    return pool.hardware.accelerators_per_node * pool.hardware.price_usd_per_accelerator


def fleet_cost_usd(pools: Sequence[PoolSetting], counts: Sequence[int]) -> float:
    """Hardware cost of a plan, USD: sum_p n_p x node price_p."""
    return float(sum(n * node_price_usd(p) for p, n in zip(pools, counts)))


def cheapest_fill(pools: Sequence[PoolSetting], used: Sequence[int], nodes: int,
                  eligible: Sequence[int] | None = None) -> list[int] | None:
    """The cheapest counts using exactly the pools `used` (each at least one node) for `nodes`
    nodes in all: one node of each, then the rest from the cheapest pools first (ties to the
    first listed). None when `nodes` is below |used| or above their total count. `eligible` (a
    superset of `used`): the rest from the cheapest of those pools instead, the pools given nodes
    then at least `used` (the families of `planner.solvers.pool_families`).

    Under the synchronous rule the plan's speed depends on the pools only through U, so this is
    the cheapest assignment of every plan of U with N nodes (an exchange argument: moving a node
    to a cheaper pool of U never raises the cost)."""
    eligible = used if eligible is None else eligible
    if not len(used) <= nodes <= sum(pools[i].count for i in eligible):
        return None
    counts = [0] * len(pools)
    for i in used:
        counts[i] = 1
    left = nodes - len(used)
    for i in sorted(eligible, key=lambda i: (node_price_usd(pools[i]), i)):
        take = min(left, pools[i].count - counts[i])
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
