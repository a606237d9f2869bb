"""The proportional rule under chosen regions (docs/fleet.md, sections 3 and 4): which splits of a
plan's nodes among its pools are placeable (`placeable_splits`), and the fastest placeable split of
every N at once (`fastest_placement`, `fastest_placed_counts`), the placement rule's dynamic
programme (`planner.fleet.regions.placement_costs`) run on the rule's keys. Arithmetic on a fleet:
setting layer (docs/architecture.md).
"""

from __future__ import annotations

import numpy as np

from planner.fleet.regions import Placement, placement_costs, region_curve, region_nodes


def placeable_splits(placement, vectors: np.ndarray, unit: int) -> np.ndarray:
    """`is_placeable` of every row of `vectors` (counts per pool, [V, pools]) in the regions of
    `placement` with unit size `unit`, vectorised; every row when there is no placement (None, one
    region) or u <= 1."""
    if placement is None or len(placement.partition) == 1 or unit <= 1:
        return np.ones(len(vectors), dtype=bool)
    c = np.stack([vectors[:, list(members)].sum(axis=1) for members in placement.pools_in], axis=1)
    return (c >= unit).all(axis=1) & ((c % unit).sum(axis=1) < unit)


def speed_curves(placement: Placement, steps: dict[int, int]) -> list[np.ndarray]:
    """Per region, `region_curve` of the keys -H_p + i price_p (most steps, then cheapest)."""
    return [region_curve([(complex(-steps[i], price), count) for i, (price, count) in zip(members, region)])
            for members, region in zip(placement.pools_in, placement.prices)]


def fastest_placement(placement: Placement, steps: dict[int, int], unit: int,
                      n_hi: int) -> tuple[np.ndarray, np.ndarray]:
    """(W, cost) for N = 0..n_hi of the placeable split of N nodes among the pools of the part
    (each at least one node) that maximises W = sum_p n_p H_p, the cheapest of those (W = 0 and cost
    inf where N has no placeable split): the proportional rule's fastest split under chosen regions
    (docs/fleet.md, section 4), `placement_costs` with the price of a node of pool p replaced by
    the key -H_p + i price_p, ordered lexicographically (`region_curve`).

    Proof. For fixed nodes per region c_r the regions' splits are independent and the key of a
    split is the sum of its regions' keys; the lexicographic order on (-W, cost) is a total order
    compatible with addition, so the best split is the best of each region. Inside a region with c
    nodes the best split is its fastest fill (one node of each pool, then the pools of most steps
    first, ties to the cheaper node): moving a node from a pool of fewer steps to one of more raises
    W, between pools of equal H_p to the cheaper lowers the cost. That fill's key grows by the sorted
    keys of the extra nodes, i.e. `region_curve` of the keys. `placement_costs` then minimises
    sum_r f_r(c_r) over every placeable (c_r) exactly, for any region curves (its dynamic programme
    reaches every placement and every cell is one's sum; it uses no convexity). The W are sums of
    integers, exact in floating point; the cost is summed as in `placement_costs`."""
    keys = placement_costs(speed_curves(placement, steps), unit, n_hi)
    found = np.isfinite(keys)
    weighted = np.where(found, -keys.real, 0.0)
    cost = np.where(found, keys.imag, np.inf)
    return weighted, cost


def fastest_placed_counts(pools, placement: Placement, steps: dict[int, int], unit: int,
                          nodes: int) -> list[int] | None:
    """The counts per pool of `fastest_placement`'s split of `nodes` nodes: the nodes per region read
    back from the programme (`region_nodes`), each region's fastest fill (`fastest_fill`)."""
    from planner.sync.proportional.rule import fastest_fill
    per_region = region_nodes(speed_curves(placement, steps), unit, nodes)
    if per_region is None:
        return None
    counts = [0] * len(pools)
    for members, c in zip(placement.pools_in, per_region):
        inside = fastest_fill(pools, {i: steps[i] for i in members}, c)
        for i in members:
            counts[i] = inside[i]
    return counts
