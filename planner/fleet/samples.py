"""Random small instances of fleets of pools, for the comparison of the planner with its
exhaustive oracle (tests/test_fleet_planner.py, scripts/check_mixed_oracle.py).

Each draw: 1 to 3 pools of hardware presets or inline nodes (small memory, so that pipelines are
needed; an fp16-only node, so that precisions differ), 1 to `max_count` nodes each, prices
overridden now and then (0 included: free pools tie on cost), a model of 1e8 to 3e11 parameters,
a target and duration limit that leave some instances infeasible, sometimes a budget or a node cap
or the `dtplan` physics profile,
WAN links from 10 Mb/s to 10 Gb/s, half of the time 2 to 6 sites joined by a ring of links with
the pools among them, and a search space small enough to score every plan.
"""

from __future__ import annotations

import numpy as np

from planner.fleet.pools import pool_settings
from planner.fleet.replicas import node_price_usd
from planner.schema.instance import parse_instance

PRESETS = ("16xH100-SXM", "48xA100-80GB", "7xB200", "17xTPU-v6e", "49xAscend-910B")
CITIES = ("London", "Paris", "Frankfurt", "New York", "Ashburn", "Los Angeles", "Tokyo", "Singapore")


def _inline(rng: np.random.Generator) -> dict:
    """A made-up node: 1 to 8 accelerators of 20 to 400 TFLOP/s and 8 to 80 GB."""
    tflops = float(rng.uniform(20, 400))
    spec = {"id": "custom", "name": "custom node", "accelerators_per_node": int(rng.integers(1, 9)),
            "peak_tflops_per_accelerator": {"fp16": tflops}, "hbm_gb_per_accelerator": float(rng.uniform(8, 80)),
            "price_usd_per_accelerator": float(rng.uniform(1000, 30000))}
    if rng.random() < 0.5:
        spec["peak_tflops_per_accelerator"]["fp8"] = 2 * tflops
    return spec


def random_instance(rng: np.random.Generator, max_count: int = 4) -> dict:
    """One random instance (raw JSON data) of a fleet of 1 to 3 pools."""
    pools = []
    for i in range(int(rng.integers(1, 4))):
        hw = str(rng.choice(PRESETS)) if rng.random() < 0.6 else _inline(rng)
        pool = {"name": f"p{i}", "hardware": hw, "count": int(rng.integers(1, max_count + 1))}
        if rng.random() < 0.3:
            pool["price_usd_per_accelerator"] = float(rng.choice([0.0, 5000.0, 20000.0]))
        pools.append(pool)
    data = _problem(rng, pools)
    data.update({
        "search": {"max_inner_steps": int(rng.integers(1, 25)), "max_regional_rounds": int(rng.integers(1, 4)),
                   "compression": sorted({1.0, float(rng.choice([4.0, 16.0, 100.0]))}), "max_stages": 4,
                   "group_sizes": [2, 3], "max_micro_batches": 4, "activation_compression": [1.0, 4.0]},
        "objective": str(rng.choice(["min_time", "min_cost", "max_compute"])),
    })
    if rng.random() < 0.5:
        add_sites(rng, data)
    if rng.random() < 0.25:           # dtplan's physics: MFU per accelerator, overlap, failures, ...
        data["assumptions"] = {"profile": "dtplan"}
    _limits(rng, data, 0.25)
    if rng.random() < 0.2:
        data["search"]["streaming"] = [bool(rng.random() < 0.5)]
    add_sync_rule(rng, data)
    return data


def add_sync_rule(rng: np.random.Generator, data: dict,
                   rules: tuple[str, ...] = ("straggler", "proportional", "auto", "auto")) -> None:
    """Three times in four fleet.sync_rule 'proportional' or 'auto' (drawn from `rules`); with
    max_compute a C_quality target (a third), C_local under the Chinchilla replica penalty (a third:
    every split is a candidate, planner/sync/proportional/levels.py), or the linear v1 or no
    replica penalty. Drawn last, so the other draws are as before."""
    rule, kind, penalty = rng.choice(list(rules)), rng.random(), rng.random()
    if rule == "straggler":
        return
    data["fleet"]["sync_rule"] = str(rule)
    if data["objective"] == "max_compute":
        if kind < 1 / 3:
            data["training"]["target_kind"] = "c_quality"
        elif kind >= 2 / 3:
            data.setdefault("assumptions", {}).setdefault("constants", {})["replica_penalty"] = \
                "linear_v1" if penalty < 0.5 else "none"


def add_sites(rng: np.random.Generator, data: dict) -> None:
    """2 to 6 sites in a ring of links (10 Mb/s to 10 Gb/s; RTTs measured or estimated, some given),
    a chord now and then, and each pool at one of them."""
    names = [str(c) for c in rng.choice(CITIES, size=int(rng.integers(2, 7)), replace=False)]
    data["network"]["sites"] = [{"name": n, "city": n} for n in names]
    links = []
    for a, b in zip(names, names[1:] + names[:1]):
        if a == names[-1] and len(names) == 2:
            break
        link = {"a": a, "b": b, "up_mbps": float(10 ** rng.uniform(1, 4))}
        if rng.random() < 0.3:          # a given RTT, at least what light allows (the schema refuses less)
            link["rtt_ms"] = float(_light_rtt_ms(a, b) + rng.uniform(1, 150))
        links.append(link)
    if len(names) >= 4 and rng.random() < 0.5:
        links.append({"a": names[0], "b": names[2], "up_mbps": float(10 ** rng.uniform(1, 4))})
    data["network"]["links"] = links
    data["network"]["regional"] = {"mbps": float(rng.choice([100.0, 1000.0, 5000.0])), "rtt_ms": float(rng.uniform(5, 40))}
    for pool in data["fleet"]["pools"]:
        pool["site"] = str(rng.choice(names))


def _light_rtt_ms(a: str, b: str) -> float:
    """Round trip at the speed of light in vacuum between two cities of the table, ms."""
    from planner.sites.places import great_circle_km, places
    pa, pb = places()[a], places()[b]
    return 2.0 * great_circle_km(pa.lat, pa.lon, pb.lat, pb.lon) / 299_792.458 * 1e3


def chinchilla_c_local_instance(rng: np.random.Generator) -> dict:
    """max_compute of a C_local target under the Chinchilla replica penalty with fleet.sync_rule
    'proportional' or 'auto': half of the time a `random_instance`, half of the time a fleet where the
    fastest split is often not the best: two pools of 48-accelerator nodes of 1.3 to 3.5 times each
    other's speed, 60B to 300B parameters, a window of 0.3 to 10 tokens per parameter, a replica
    exponent 100 to 3,000 times the default's coefficient, and exactly N nodes to use (fewer than both
    pools hold), so that eta_R falls faster than the tokens grow (planner/sync/proportional/levels.py)."""
    rule = str(rng.choice(["proportional", "auto"]))
    if rng.random() < 0.5:
        data = random_instance(rng)
        data["objective"] = "max_compute"
        data["training"].pop("target_kind", None)
        data.get("assumptions", {}).get("constants", {}).pop("replica_penalty", None)
        data["fleet"]["sync_rule"] = rule
        return data
    params, tflops, ratio = float(10 ** rng.uniform(10.8, 11.5)), float(rng.uniform(100, 300)), float(rng.uniform(1.3, 3.5))
    slow, fast = int(rng.integers(2, 6)), int(rng.integers(1, 4))
    nodes = int(rng.integers(max(slow, fast), slow + fast))
    days = params * float(10 ** rng.uniform(-0.5, 1)) * 6 * params / (48 * tflops * 1e12 * 0.4 * nodes * 1.5) / 86400

    def node(t: float) -> dict:
        return {"id": "custom", "name": "node", "accelerators_per_node": 48, "peak_tflops_per_accelerator": {"fp16": t},
                "hbm_gb_per_accelerator": 141.0, "price_usd_per_accelerator": float(rng.choice([5000.0, 10000.0]))}
    return {"model": {"params": params}, "training": {"target_flop": 6 * params * params * 20},
            "fleet": {"pools": [{"name": "slow", "hardware": node(tflops), "count": slow},
                                {"name": "fast", "hardware": node(tflops * ratio), "count": fast}], "sync_rule": rule},
            "network": {"wan": {"up_mbps": float(10 ** rng.uniform(2, 5)), "down_mbps": 10000.0, "rtt_ms": 20.0}},
            "limits": {"max_days": days, "max_nodes": nodes},
            "search": {"min_nodes": nodes, "max_inner_steps": int(rng.integers(1, 40)), "max_regional_rounds": 2,
                       "group_sizes": [2], "compression": [1.0, 16.0]},
            "objective": "max_compute",
            "assumptions": {"constants": {"replica_beta_coefficient": float(10 ** rng.uniform(2, 3.5))}}}


def random_many_pools(rng: np.random.Generator, count: int, max_count: int = 4) -> dict:
    """One random instance (raw JSON data) of `count` pools under the straggler rule without sites, the
    fleets the search by families takes beyond 12 pools (`planner.solvers.pool_families`): hardware
    presets or inline nodes (several memories and speeds, repeated), 1 to `max_count` nodes each,
    prices varied, sometimes a budget, node cap, least node count or the `dtplan` profile, the
    objective drawn from the three."""
    kinds = [str(rng.choice(PRESETS)) if rng.random() < 0.6 else _inline(rng) for _ in range(int(rng.integers(1, 5)))]
    pools = []
    for i in range(count):
        pool = {"name": f"p{i}", "hardware": kinds[int(rng.integers(len(kinds)))],
                "count": int(rng.integers(1, max_count + 1))}
        if rng.random() < 0.5:
            pool["price_usd_per_accelerator"] = float(rng.choice([0.0, 5000.0, 12000.0, 20000.0, 31000.0]))
        pools.append(pool)
    data = _problem(rng, pools)
    data["search"] = {"max_inner_steps": int(rng.integers(1, 13)), "max_regional_rounds": 2, "compression": [1.0, 16.0],
                      "max_stages": 3, "group_sizes": [2], "max_micro_batches": 2, "activation_compression": [1.0]}
    data["objective"] = str(rng.choice(["min_time", "min_cost", "max_compute"]))
    if rng.random() < 0.25:
        data["assumptions"] = {"profile": "dtplan"}
    _limits(rng, data, 0.3)
    return data


def random_rule_pools(rng: np.random.Generator, count: int, max_count: int = 4) -> dict:
    """`random_many_pools` under fleet.sync_rule 'proportional' or 'auto' (half each), the fleets the
    proportional rule's families take beyond 12 pools (`planner.solvers.proportional_families`): no
    budget, min_time or max_compute (min_cost drawn becomes min_time), max_compute of a C_quality
    target or of C_local under the linear v1 or no replica penalty (half each), never the Chinchilla
    penalty's C_local (every split a candidate: refused there)."""
    data = random_many_pools(rng, count, max_count)
    data["limits"].pop("budget_usd", None)
    data["fleet"]["sync_rule"] = str(rng.choice(["proportional", "auto"]))
    if data["objective"] == "min_cost":
        data["objective"] = "min_time"
    if data["objective"] == "max_compute":
        if rng.random() < 0.5:
            data["training"]["target_kind"] = "c_quality"
        else:
            data.setdefault("assumptions", {}).setdefault("constants", {})["replica_penalty"] = \
                str(rng.choice(["linear_v1", "none"]))
    return data


def _limits(rng: np.random.Generator, data: dict, chance: float) -> None:
    """With probability `chance` each a node cap and a budget, and a fifth of the time a least node count."""
    total = sum(p["count"] for p in data["fleet"]["pools"])
    if rng.random() < chance:
        data["limits"]["max_nodes"] = int(rng.integers(1, total + 1))
    if rng.random() < chance:
        data["limits"]["budget_usd"] = float(10 ** rng.uniform(5, 7.5))
    if rng.random() < 0.2:
        data["search"]["min_nodes"] = int(rng.integers(1, min(total, data["limits"].get("max_nodes", total)) + 1))


def _problem(rng: np.random.Generator, pools: list[dict]) -> dict:
    """The model (1e8 to 3e11 parameters), target, fleet, WAN and duration limit of a random instance."""
    params = float(10 ** rng.uniform(8, 11.5))
    return {
        "model": {"params": params},
        "training": {"target_flop": float(6 * params * params * 20 * 10 ** rng.uniform(-1.0, 1.0))},
        "fleet": {"pools": pools},
        "network": {"wan": {"up_mbps": float(10 ** rng.uniform(1, 4)), "down_mbps": float(10 ** rng.uniform(1, 4)),
                            "rtt_ms": float(rng.uniform(5, 200))}},
        "limits": {"max_days": float(rng.uniform(2, 120))},
    }


def random_subset_rule_pools(rng: np.random.Generator, count: int, max_count: int = 4) -> dict:
    """`random_many_pools` under fleet.sync_rule 'proportional' or 'auto' (half each) in the cases the
    proportional rule's search over subsets of pools takes beyond 12 pools
    (`planner.solvers.proportional_subsets`): a third min_time, a third min_cost, a third max_compute of
    C_local under the Chinchilla replica penalty (the default); the duration limit 1 to 30 times longer
    (fewer fleets with no plan); a budget half of the time (1.5 to 8 times the cheapest node's price
    times a third of the pools' nodes, so that it binds)."""
    data = random_many_pools(rng, count, max_count)
    data["fleet"]["sync_rule"] = str(rng.choice(["proportional", "auto"]))
    data["objective"] = str(rng.choice(["min_time", "min_cost", "max_compute"]))
    data["training"].pop("target_kind", None)
    data.get("assumptions", {}).get("constants", {}).pop("replica_penalty", None)
    data["limits"].pop("budget_usd", None)
    data["limits"]["max_days"] *= float(rng.uniform(1, 30))     # fewer fleets with no plan at all
    if rng.random() < 0.5:
        pools = pool_settings(parse_instance(data))
        cheapest = min(node_price_usd(p) for p in pools) or 1000.0
        nodes = sum(p.count for p in pools)
        data["limits"]["budget_usd"] = float(cheapest * max(1.0, nodes / 3) * rng.uniform(1.5, 8.0))
    return data
