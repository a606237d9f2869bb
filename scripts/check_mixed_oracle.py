"""Compare the mixed-fleet planner (planner.solvers.mixed) with its exhaustive oracle
(planner.solvers.mixed_oracle) on seeded random small instances of 1 to 3 pools
(planner.fleet.samples; three in four have fleet.sync_rule 'proportional' or 'auto', and a third of
those with max_compute a C_local target under the Chinchilla replica penalty, where every split of
the nodes is a candidate). Prints the disagreements (none expected), how many instances were
feasible and how many optima use several pools, and the time of each side.

    python scripts/check_mixed_oracle.py [--count 200] [--seed 12] [--chinchilla-c-local]
    python scripts/check_mixed_oracle.py --shipped

`--chinchilla-c-local`: every instance max_compute of a C_local target under the Chinchilla replica
penalty with 'proportional' or 'auto', half of them where the fastest split is often not the best
(`planner.fleet.samples.chinchilla_c_local_instance`); also prints how many optima are not the
fastest fill.

`--min-cost`: every instance min_cost under 'proportional' or 'auto' on two pools of 1.3 to 3.5 times
each other's speed, with a duration limit that needs much of the fleet, so that the cheapest split
reaching the target decides (`min_cost_rule_instance`; a budget a third of the time): the rule's
parts are searched by boxes and the split table (planner/sync/proportional/cost_boxes.py).

`--shipped` compares them on the shipped instances instead: mixed-a100-h100 and mixed-six-sites as
they are (about 30 s and 45 s of oracle), and mixed-governance-cities with 1 node per city instead
of 40, H <= 8, R <= 4 and objective max_compute (its 41^6 assignments and the default H <= 10^4
are beyond the oracle; with 6 nodes no plan reaches the target, so the most compute is compared). Exit 1 on any disagreement.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

from planner.fleet.samples import chinchilla_c_local_instance, random_instance
from planner.schema.instance import parse_instance
from planner.solve import solve
from planner.solvers.mixed_oracle import oracle


def agree(result, best) -> bool:
    """Same verdict, and the same objective value to 1e-9 relative."""
    value = result.objective_value if result.status == "optimal" else None
    if value is None or best is None:
        return value is None and best is None
    return abs(value - best[0]) <= 1e-9 * abs(best[0])


def planner_and_oracle(instance):
    """The planner's result, the oracle's best and the seconds each took."""
    start = time.perf_counter()
    result = solve(instance)
    planner_s = time.perf_counter() - start
    start = time.perf_counter()
    best = oracle(instance)
    return result, best, planner_s, time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=200)
    parser.add_argument("--seed", type=int, default=12)
    parser.add_argument("--shipped", action="store_true", help="the shipped mixed instances instead")
    parser.add_argument("--chinchilla-c-local", action="store_true",
                        help="max_compute of C_local under the Chinchilla penalty with the proportional rule")
    parser.add_argument("--min-cost", action="store_true",
                        help="min_cost with the proportional rule where the split decides (min_cost_rule_instance)")
    args = parser.parse_args()
    if args.shipped:
        return shipped()
    rng = np.random.default_rng(args.seed)
    disagreements, feasible, several, planner_s, oracle_s = 0, 0, 0, 0.0, 0.0
    with_rule, proportional = 0, 0          # instances with fleet.sync_rule proportional / auto; optima under it
    chinchilla_c_local = 0                  # of those: max_compute of C_local under the Chinchilla penalty
    slower_split = 0                        # optima under the rule on a split other than the fastest fill
    for k in range(args.count):
        data = chinchilla_c_local_instance(rng) if args.chinchilla_c_local else \
            min_cost_rule_instance(rng) if args.min_cost else random_instance(rng)
        instance = parse_instance(data)
        result, best, took_s, oracle_took_s = planner_and_oracle(instance)
        planner_s, oracle_s = planner_s + took_s, oracle_s + oracle_took_s
        with_rule += instance.fleet.sync_rule != "straggler"
        chinchilla_c_local += (instance.fleet.sync_rule != "straggler" and instance.objective == "max_compute"
                               and instance.training.target_kind == "c_local"
                               and data.get("assumptions", {}).get("constants", {}).get("replica_penalty",
                                                                                         "chinchilla") == "chinchilla")
        if result.status == "optimal":
            feasible += 1
            several += len(result.plan.pool_nodes) > 1
            proportional += result.plan.sync_rule == "proportional"
            slower_split += result.plan.sync_rule == "proportional" and not is_fastest_fill(instance, result.plan)
        if not agree(result, best):
            disagreements += 1
            print(f"instance {k}: planner {result.status} {result.objective_value} "
                  f"{result.plan.pool_nodes if result.plan else None}; oracle {best}")
    print(f"{args.count} instances (seed {args.seed}): {disagreements} disagreements; {feasible} feasible, "
          f"{several} optima on several pools; {with_rule} with fleet.sync_rule proportional or auto "
          f"({chinchilla_c_local} of them max_compute of C_local under the Chinchilla penalty), "
          f"{proportional} optima under the proportional rule ({slower_split} not on the fastest fill); planner {planner_s:.1f} s, oracle {oracle_s:.1f} s; "
          f"load average {os.getloadavg()[0]:.2f}")
    return 1 if disagreements else 0


def min_cost_rule_instance(rng: np.random.Generator) -> dict:
    """min_cost with fleet.sync_rule 'proportional' or 'auto': 2-5 slow and 1-3 fast nodes of 48
    accelerators (the fast 1.3 to 3.5 times the slow, prices per accelerator 3,000 to 20,000 USD, so
    either may be the cheaper per FLOP), 1e9 to 3e10 parameters, a duration limit at which the whole
    fleet needs 40% to 120% of its time (some instances infeasible), a budget a third of the time."""
    params, tflops, ratio = float(10 ** rng.uniform(9, 10.5)), float(rng.uniform(100, 300)), float(rng.uniform(1.3, 3.5))
    slow, fast = int(rng.integers(2, 6)), int(rng.integers(1, 4))
    target = 6 * params * params * 20 * float(10 ** rng.uniform(-1, 0.5))
    days = target / (48 * tflops * 1e12 * 0.4 * (slow + fast * ratio)) / float(rng.uniform(0.4, 1.2)) / 86400

    def node(t: float) -> dict:
        return {"id": "custom", "name": "node", "accelerators_per_node": 48, "peak_tflops_per_accelerator": {"fp16": t},
                "hbm_gb_per_accelerator": 141.0, "price_usd_per_accelerator": float(rng.uniform(3000, 20000))}
    data = {"model": {"params": params}, "training": {"target_flop": target},
            "fleet": {"pools": [{"name": "slow", "hardware": node(tflops), "count": slow},
                                {"name": "fast", "hardware": node(tflops * ratio), "count": fast}],
                      "sync_rule": str(rng.choice(["proportional", "auto"]))},
            "network": {"wan": {"up_mbps": float(10 ** rng.uniform(2, 4.5)), "down_mbps": 10000.0, "rtt_ms": 20.0}},
            "limits": {"max_days": days},
            "search": {"max_inner_steps": int(rng.integers(1, 30)), "max_regional_rounds": 2, "group_sizes": [2],
                       "compression": [1.0, 16.0]},
            "objective": "min_cost"}
    if rng.random() < 1 / 3:
        every = sum(p["count"] * 48 * p["hardware"]["price_usd_per_accelerator"] for p in data["fleet"]["pools"])
        data["limits"]["budget_usd"] = float(every * rng.uniform(0.3, 1.0))
    return data


def is_fastest_fill(instance, plan) -> bool:
    """Whether the plan's split has the most W = sum_p n_p H_p of its nodes on its pools
    (`planner.sync.proportional.rule.fastest_fill`)."""
    from planner.fleet.pools import pool_settings
    from planner.sync.proportional.rule import fastest_fill, inner_steps, step_ratios
    from planner.sync.straggler.rule import mixed_setting
    pools = pool_settings(instance)
    counts = [plan.pool_nodes.get(p.label, 0) for p in pools]
    used = tuple(i for i, n in enumerate(counts) if n)
    steps = {i: int(v) for i, v in inner_steps(step_ratios(mixed_setting(pools, used, plan.precision), pools, used,
                                                            plan.precision), plan.inner_steps).items()}
    fill = fastest_fill(pools, steps, sum(counts))
    return sum(fill[i] * steps[i] for i in used) == sum(counts[i] * steps[i] for i in used)


def shipped() -> int:
    """The shipped mixed instances (the governance one reduced: module docstring) against the oracle."""
    import json
    from pathlib import Path
    folder = Path(__file__).resolve().parents[1] / "instances"
    disagreements = 0
    for name in ("mixed-a100-h100", "mixed-six-sites", "mixed-governance-cities"):
        data = json.loads((folder / f"{name}.json").read_text())
        if name == "mixed-governance-cities":
            for pool in data["fleet"]["pools"]:
                pool["count"] = 1
            data["search"] = {"max_inner_steps": 8, "max_regional_rounds": 4}
            data["objective"] = "max_compute"
        instance = parse_instance(data)
        result, best, planner_s, oracle_s = planner_and_oracle(instance)
        ok = agree(result, best)
        disagreements += not ok
        print(f"{name}{' (1 node per city, H <= 8, R <= 4, max_compute)' if name == 'mixed-governance-cities' else ''}: "
              f"{'agree' if ok else 'DISAGREE'}; planner {result.objective_value} "
              f"{result.plan.pool_nodes if result.plan else None} in {planner_s:.1f} s, oracle "
              f"{best[0] if best else None} in {oracle_s:.1f} s; load average {os.getloadavg()[0]:.2f}")
    return 1 if disagreements else 0


if __name__ == "__main__":
    sys.exit(main())
