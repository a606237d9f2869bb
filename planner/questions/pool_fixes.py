"""The nodes fixes of `dtplan feasible` for a fleet of pools (`fleet.pools`, docs/fleet.md).

A fleet of pools has no single node count; its nodes fixes are, each verified like every fix
of planner.questions.feasible (feasible with the fix, infeasible one node fewer):

- grow one pool, the others as given: the fewest nodes of pool p (its `count`);
- add a pool of one hardware preset at one site (`--site`, or else the cheapest site: that of
  the pool whose growth is the cheapest fix, `_cheapest_site`): the fewest nodes of that preset.

Why the search is exact. A plan uses n_q <= count_q nodes of each pool q (Plan.pool_nodes), and
nothing else in the instance depends on the counts, so every plan of the fleet with count_p = c
is a plan of the fleet with count_p = c + 1: feasibility is monotone in c. Without a budget the
fewest nodes of pool p is one `min_cost` solve with count_p raised to a cap and the prices
changed so that cost counts only pool p's nodes (price 1 USD per accelerator on p, 0 on every
other pool: cost = a_p * n_p, where a_p is p's accelerators per node): its optimum is the least
n_p of any feasible plan, proven by the solver (the prices enter nothing but the cost,
planner/fleet/evaluate.py `fleet_cost_usd`). With `limits.budget_usd` the prices cannot be
changed (the budget reads them); the count is then found by bisection, valid by the monotonicity
above, between the count as given (infeasible) and the pool's nodes in the real `min_cost` plan
at the cap (feasible).

The cost of a fix is the added nodes times the node price (USD; the purchase price, as
`cost_usd` is everywhere in dtplan).
"""

from __future__ import annotations

from typing import Any

from planner.questions.variants import TimeUp, verified
from planner.objectives import MIN_COST
from planner.schema.catalog import hardware_ids, load_hardware
from planner.schema.limits import MAX_NODES

POOL_CAP_FACTOR = 1000      # grow a pool up to this many times the fleet's nodes (at least POOL_CAP_MIN)
POOL_CAP_MIN = 100_000


def pool_fixes(s, instance, site: str | None = None, presets: list[str] | None = None) -> list[tuple[Any, str | None]]:
    """(Fix or None, reason) for each pool grown alone, then each preset added as a new pool.
    `s` is planner.questions.variants.VariantSolver on the instance; TimeUp propagates per fix."""
    from planner.schema.errors import InputError
    out = []
    total = sum(p.count for p in instance.fleet.pools)
    cap_of = lambda others: min(max(POOL_CAP_FACTOR * total, POOL_CAP_MIN), MAX_NODES - others)
    for i, pool in enumerate(instance.fleet.pools):
        name = f"nodes of pool {instance.fleet.pool_labels()[i]}"
        try:
            out.append(_grow(s, instance, i, cap_of(total - pool.count)))
        except TimeUp:
            out.append((None, f"{name}: not searched: the time limit was reached"))
        except InputError as err:
            out.append((None, f"{name}: not searched: " + "; ".join(map(str, err.problems))))
    site_given = site is not None
    if site is None:
        site = _cheapest_site(instance, out)
    for hw in presets if presets is not None else hardware_ids():
        try:
            out.append(_add(s, instance, hw, site, site_given, cap_of(total)))
        except TimeUp:
            out.append((None, f"nodes of a new {hw} pool: not searched: the time limit was reached"))
        except InputError as err:       # e.g. search.precisions names a precision the preset lacks
            out.append((None, f"nodes of a new {hw} pool: " + "; ".join(map(str, err.problems))))
    return out


def _count_path(i: int) -> str:
    return f"fleet.pools[{i}].count"


def _with_count(s, i: int, count: int, prices: dict[int, float] | None = None, drop_budget: bool = False) -> dict:
    def edit(data: dict) -> None:
        pools = data["fleet"]["pools"]
        pools[i]["count"] = count
        for j, price in (prices or {}).items():
            pools[j]["price_usd_per_accelerator"] = price
        if drop_budget:
            data.get("limits", {}).pop("budget_usd", None)
    return s.variant(edit)


def _fewest(s, instance, i: int, name: str, now: int, cap: int, at) -> int | None:
    """The fewest nodes c in (now, cap] of pool i, named `name` (at(c, prices, drop_budget) builds the variant)
    for which the instance is feasible; None if not even at the cap. See the module docstring."""
    if instance.limits.budget_usd is None:        # pools 0..n-1 as given, and i = n when a pool is added
        prices = {j: (1.0 if j == i else 0.0) for j in range(max(len(instance.fleet.pools), i + 1))}
        r = s.solve(at(cap, prices, True), objective=MIN_COST)
        if r.status != "optimal":
            return None
        return int(r.plan.pool_nodes[name])
    r = s.solve(at(cap, None, False), objective=MIN_COST)
    if r.status != "optimal":
        return None
    lo, hi = now, int(r.plan.pool_nodes[name])       # infeasible at lo, feasible at hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if s.feasible(at(mid, None, False)):
            hi = mid
        else:
            lo = mid
    return hi


def _grow(s, instance, i: int, cap: int):
    pool, name = instance.fleet.pools[i], instance.fleet.pool_labels()[i]     # the plan's key for the pool
    s.progress(f"fewest nodes of pool {name}")
    at = lambda c, prices=None, drop=False: _with_count(s, i, c, prices, drop)
    n = _fewest(s, instance, i, name, pool.count, cap, at)
    label = f"nodes of pool {name}"
    if n is None:
        return None, f"{label}: no count up to {cap:,} reaches the target with the other pools as given" + _capped(instance)
    price = pool.priced_hardware.node_price_usd
    fix, _ = verified(s, "pool-nodes", at(n), at(n - 1) if n > 1 else None, {_count_path(i): n},
                       {_count_path(i): pool.count},
                       f"{n:,} nodes of pool {name} instead of {pool.count:,} "
                       f"(+{n - pool.count:,}, ${(n - pool.count) * price:,.0f})")
    fix.added_cost_usd = (n - pool.count) * price
    return fix, None


def _capped(instance) -> str:
    """What else caps the nodes a plan uses, said after a fix not found."""
    caps = [f"limits.max_nodes = {instance.limits.max_nodes:,}" if instance.limits.max_nodes else "",
            f"the budget of ${instance.limits.budget_usd:,.0f}" if instance.limits.budget_usd is not None else ""]
    caps = [c for c in caps if c]
    return f" ({' and '.join(caps)} also cap{'s' if len(caps) == 1 else ''} the plan)" if caps else ""


def _cheapest_site(instance, grown: list) -> str | None:
    """The site of the pool whose growth is the cheapest fix (ties to the earlier pool), or else the
    first site of network.sites (None without sites: the new pool then has no site, as the given
    pools). Sites carry no price in dtplan (a node costs its hardware's price wherever it is), so
    this is the place where added nodes already proved the cheapest way to the target; it is not
    a search over sites (one per site and preset would multiply the solves by the sites)."""
    costs = [(fix.added_cost_usd, i) for i, (fix, _) in enumerate(grown) if fix is not None]
    if costs:
        return instance.fleet.pools[min(costs)[1]].site
    if instance.network.sites:
        return instance.network.sites[0].name
    return None


def _add(s, instance, hw: str, site: str | None, site_given: bool, cap: int):
    names = set(instance.fleet.pool_labels())
    name = f"added-{hw}"
    while name in names:
        name += "+"
    i = len(instance.fleet.pools)
    pool_at = lambda c: {"name": name, "hardware": hw, "count": c} | ({"site": site} if site is not None else {})

    def at(c, prices=None, drop=False):
        def edit(data: dict) -> None:
            data["fleet"]["pools"].append(pool_at(c))
            for j, price in (prices or {}).items():
                data["fleet"]["pools"][j]["price_usd_per_accelerator"] = price
            if drop:
                data.get("limits", {}).pop("budget_usd", None)
        return s.variant(edit)

    where = "" if site is None else f" at {site}" + ("" if site_given else " (the cheapest site)")
    s.progress(f"fewest nodes of a new {hw} pool{where}")
    n = _fewest(s, instance, i, name, 0, cap, at)
    if n is None:
        return None, (f"nodes of a new {hw} pool{where}: no count up to {cap:,} reaches the target with the given "
                      f"pools" + _capped(instance))
    path = f"fleet.pools[{i}]"
    price = load_hardware(hw).node_price_usd
    fix, _ = verified(s, "new-pool", at(n), at(n - 1) if n > 1 else None, {path: pool_at(n)}, {path: None},
                       f"a new pool of {n:,} x {hw}{where} (${n * price:,.0f})")
    fix.added_cost_usd = n * price
    return fix, None
