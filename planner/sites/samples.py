"""Random small instances with regions chosen by the planner (network.regions = "chosen"), for
the comparison of the planner with its exhaustive oracle over every set partition of the sites
(tests/test_regions.py, scripts/check_regions_oracle.py).

Each draw is a `planner.fleet.samples.random_instance` (1 to 3 pools, 1 to 4 nodes each, group
sizes 2 and 3, pipelines of up to 4 stages) always on 2 to 6 sites, with the planner choosing the
regions; most sites get a LAN of their own faster than the regional tier (10 to 100 Gb/s, 0.05 to
3 ms), so that splitting sites into smaller regions buys faster regional links and merging them
buys room for whole groups (docs/fleet.md section 3); half of the draws search only the modes
with groups (hierarchical, PP-group), and two in five must use every node. Most pools get a price of
their own (so that placements differ in cost); the objective is min_time, max_compute or (a third)
min_cost, a third of the draws have a budget that binds, and the sync rule is the straggler rule
(with `sync_rule=True`, 'proportional' or 'auto', drawn last).
"""

from __future__ import annotations

import numpy as np

from planner.fleet.samples import add_sites, add_sync_rule, random_instance


def random_region_instance(rng: np.random.Generator, max_count: int = 4, sync_rule: bool = False) -> dict:
    """One random instance (raw JSON data) with network.regions = "chosen". `sync_rule`: then, drawn
    last, fleet.sync_rule 'proportional' or 'auto' (twice as often), with max_compute's target kind
    and replica penalty as `planner.fleet.samples.add_sync_rule` draws them."""
    data = random_instance(rng, max_count)
    if not data["network"].get("sites"):
        add_sites(rng, data)
    data["network"]["regions"] = "chosen"
    for site in data["network"]["sites"]:
        if rng.random() < 0.7:
            site["lan_mbps"] = float(10 ** rng.uniform(4, 5))
            site["lan_rtt_ms"] = float(rng.uniform(0.05, 3))
    data["limits"].pop("budget_usd", None)
    data["fleet"].pop("sync_rule", None)              # the straggler rule (`sync_rule` draws the other rules)
    data["objective"] = str(rng.choice(["min_time", "max_compute"]))
    if rng.random() < 0.5:                            # plans with groups: where regions matter
        data["search"]["modes"] = ["hierarchical", "pp_group"]
    if rng.random() < 0.4:                            # every node: every pool, hence several sites
        data["limits"].pop("max_nodes", None)
        data["search"]["min_nodes"] = sum(p["count"] for p in data["fleet"]["pools"])
    _add_costs(rng, data)
    if sync_rule:
        add_sync_rule(rng, data, ("proportional", "auto", "auto"))
    return data


def _add_costs(rng: np.random.Generator, data: dict) -> None:
    """Drawn last (the draws above are as before): a one-pool draw gets, three times in five, a
    second pool of the same nodes at another site (where regions and their costs matter), and two
    draws in five a pool of 1 or 2 nodes beside an existing one (a region of several pools, whose
    one-node-each floor makes placements cost more than the cheapest fill); prices of
    1,000 to 40,000 USD per accelerator on most pools, so that the regions' placements differ in
    cost; a third of the draws min_cost; a budget on a third, between 30% of the whole fleet's cost
    and all of it (so that it binds; draws that had to use every node need only half of them then);
    half of the draws allow 200 to 3,000 days (more of them have a plan)."""
    from planner.fleet.pools import pool_settings
    from planner.fleet.replicas import node_price_usd
    from planner.schema.instance import parse_instance
    pools, names = data["fleet"]["pools"], [site["name"] for site in data["network"]["sites"]]
    if len(pools) == 1 and rng.random() < 0.6:        # a second pool of the same nodes at another site
        every = data["search"].get("min_nodes") == pools[0]["count"] and "max_nodes" not in data["limits"]
        others = [n for n in names if n != pools[0]["site"]]
        pools.append(dict(pools[0], name="p1", count=int(rng.integers(1, 5)), site=str(rng.choice(others))))
        if every:                                      # still every node
            data["search"]["min_nodes"] = sum(p["count"] for p in pools)
    if rng.random() < 0.4:                            # a small pool beside another: a region of several pools
        every = data["search"].get("min_nodes") == sum(p["count"] for p in pools) and "max_nodes" not in data["limits"]
        host = pools[int(rng.integers(len(pools)))]
        pools.append(dict(host, name=f"p{len(pools)}", count=int(rng.integers(1, 3))))
        if every:
            data["search"]["min_nodes"] = sum(p["count"] for p in pools)
    for pool in pools:
        if rng.random() < 0.7:
            pool["price_usd_per_accelerator"] = float(rng.choice([1000.0, 4000.0, 10000.0, 25000.0, 40000.0]))
    if rng.random() < 1 / 3:
        data["objective"] = "min_cost"
    if rng.random() < 0.5:                            # a longer run allowed: more instances with a plan
        data["limits"]["max_days"] = float(rng.uniform(200, 3000))
    if rng.random() < 1 / 3:
        pools = pool_settings(parse_instance(data))
        whole = sum(node_price_usd(p) * p.count for p in pools)
        if whole > 0:                                  # free pools only: no budget
            data["limits"]["budget_usd"] = float(whole * rng.uniform(0.3, 1.0))
            total = sum(p.count for p in pools)
            if data["search"].get("min_nodes") == total:       # at least half the nodes, not all
                data["search"]["min_nodes"] = max(1, total // 2)


CITIES = {"LON": "London", "PAR": "Paris", "NYC": "New York", "TYO": "Tokyo"}


def _cities_data(pools: list[dict], names: list[str], links: list[dict]) -> dict:
    """The instance data the placement and tie families share: a 1B model to 10^21 FLOP, the pools,
    the sites `names` (keys of CITIES) on 100 Gb/s LANs with `links`, a 10 Gb/s WAN, the regional
    tier of 5 Gb/s and 25 ms, regions chosen."""
    return {
        "model": {"params": 1e9}, "training": {"target_flop": 1e21},
        "fleet": {"pools": pools},
        "network": {"wan": {"up_mbps": 10000, "down_mbps": 10000}, "regional": {"mbps": 5000, "rtt_ms": 25},
                    "regions": "chosen",
                    "sites": [{"name": n, "city": CITIES[n], "lan_mbps": 100000, "lan_rtt_ms": 0.1} for n in names],
                    "links": links},
    }


def random_placement_instance(rng: np.random.Generator, sync_rule: bool = False) -> dict:
    """One random instance where the placement sets the cost: 3 or 4 pools of 16x H100 nodes (1, 2, 3
    or 5 each, 1,000 to 10,000 USD per accelerator) at 2 or 3 sites among London, Paris and Tokyo (100 Gb/s
    LANs; London-Paris 10 Gb/s, meeting the regional tier of 5 Gb/s and 25 ms a third of the time, else
    1 Gb/s; Tokyo 1 Gb/s away), a 1B model that any few nodes train, hierarchical groups of 2 or 3
    (and half of the time PP-group pipelines of up to 3 stages), all nodes or all but one or two, min_cost or (with a budget of
    40% to 100% of the whole fleet) min_time or max_compute. Several pools in a region, each holding
    a node, fix its remainder, so the cheapest placement is often not the cheapest fill.

    `sync_rule`: then, drawn last, fleet.sync_rule 'proportional' or 'auto', every pool a node of 16
    accelerators of 400, 700 or 1,200 TFLOP/s at fp16 (so that pools run 1.75 to 3 times as many inner
    steps as others, and the fastest placeable split is not the fastest fill), flat plans allowed
    half of the time, min_time and max_compute without a budget half of the time, and with
    max_compute the target kinds of `add_sync_rule`."""
    names = ["LON", "PAR", "TYO"][:int(rng.integers(2, 4))]
    pools = [{"name": f"p{i}", "hardware": "16xH100-SXM", "count": int(rng.choice([1, 1, 2, 3, 5])),
              "site": names[i % len(names)] if i < len(names) else str(rng.choice(names)),
              "price_usd_per_accelerator": float(rng.choice([1000.0, 3000.0, 10000.0]))}
             for i in range(int(rng.integers(3, 5)))]
    links = [{"a": "LON", "b": "PAR", "up_mbps": 10000 if rng.random() < 1 / 3 else 1000}]
    if "TYO" in names:
        links.append({"a": "LON", "b": "TYO", "up_mbps": 1000})
    total = sum(p["count"] for p in pools)
    search = {"modes": ["hierarchical"] if rng.random() < 0.5 else ["hierarchical", "pp_group"],
              "group_sizes": [2, 3], "max_stages": 3,
              "max_inner_steps": 8, "max_regional_rounds": 2, "compression": [1, 16], "max_micro_batches": 4,
              "min_nodes": max(1, total - int(rng.integers(0, 3)))}
    data = dict(_cities_data(pools, names, links), search=search, limits={"max_days": 365}, objective="min_cost")
    if rng.random() < 0.5:
        data["objective"] = str(rng.choice(["min_time", "max_compute"]))
        whole = sum(16 * p["price_usd_per_accelerator"] * p["count"] for p in pools)
        data["limits"]["budget_usd"] = float(whole * rng.uniform(0.4, 1.0))
    if sync_rule:
        for pool in pools:
            pool["hardware"] = {"id": "custom", "name": "node", "accelerators_per_node": 16,
                                "peak_tflops_per_accelerator": {"fp16": float(rng.choice([400.0, 700.0, 1200.0]))},
                                "hbm_gb_per_accelerator": 80.0, "price_usd_per_accelerator": 1000.0}
        if rng.random() < 0.5:
            data["search"]["modes"] = data["search"]["modes"] + ["flat"]
        if data["objective"] != "min_cost" and rng.random() < 0.5:
            del data["limits"]["budget_usd"]           # the fastest placeable split, with no budget
        add_sync_rule(rng, data, ("proportional", "auto", "auto"))
    return data


def random_tie_instance(rng: np.random.Generator) -> dict:
    """One random instance where plans of different unit sizes tie in time and place at different
    costs (ties go to the cheaper: `planner.solvers.placed.cheapest_tied`): a pool of 16x H100 nodes
    (2 to 6, odd counts more often: whose cheapest fill groups of 2 cannot place) at each of 2 or 3 of London, Paris, New York and Tokyo, and with two sites two times in
    five a second pool at one of them, at prices of 1,000, 3,000 or 10,000 USD per accelerator (the sites' first
    pools at different prices); 100 Gb/s LANs, 10 Gb/s links between the sites (London-Paris within the
    regional tier of 5 Gb/s and 25 ms, the others too far: more RTT); a 1B model that any few nodes train; hierarchical groups
    of 2 and 3 (and 4 a third of the time; PP-group pipelines of up to 3 stages a third of the time);
    limits.max_nodes 1 to 3 below the fleet, so that the fastest plans leave some nodes out; min_time
    or max_compute, with a budget of 60% to 100% of the whole fleet a quarter of the time. With fast
    LANs and streaming syncs a plan is compute-bound: its time depends on its nodes, H and R, not on
    its group size, and only the placement (its cost) tells the group sizes apart."""
    names = [str(n) for n in rng.choice(list(CITIES), size=int(rng.integers(2, 4)), replace=False)]
    prices = [float(p) for p in rng.permutation([1000.0, 3000.0, 10000.0])]
    sites = names + ([str(rng.choice(names))] if len(names) == 2 and rng.random() < 0.4 else [])
    pools = [{"name": f"p{i}", "hardware": "16xH100-SXM", "count": int(rng.choice([2, 3, 3, 5, 5, 6])), "site": site,
              "price_usd_per_accelerator": prices[i] if i < len(names) else float(rng.choice(prices))}
             for i, site in enumerate(sites)]
    links = [{"a": a, "b": b, "up_mbps": 10000} for k, a in enumerate(names) for b in names[k + 1:]]
    total = sum(p["count"] for p in pools)
    search = {"modes": ["hierarchical"] + (["pp_group"] if rng.random() < 1 / 3 else []),
              "group_sizes": [2, 3, 4] if rng.random() < 1 / 3 else [2, 3], "max_stages": 3,
              "max_inner_steps": 8, "max_regional_rounds": 2, "compression": [1, 16], "max_micro_batches": 4}
    limits = {"max_days": 365, "max_nodes": max(2, total - int(rng.integers(1, 4)))}
    data = dict(_cities_data(pools, names, links), search=search, limits=limits,
                objective=str(rng.choice(["min_time", "max_compute"])))
    if rng.random() < 0.25:
        whole = sum(16 * p["price_usd_per_accelerator"] * p["count"] for p in pools)
        data["limits"]["budget_usd"] = float(whole * rng.uniform(0.6, 1.0))
    return data
