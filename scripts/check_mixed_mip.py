"""Compare the one-model path for fleets of pools (`--solver highs|scip`, planner.solvers.mixed_mip)
with the exact decomposition (planner.solvers.mixed, `bnb`) and the exhaustive oracle
(planner.solvers.mixed_oracle) on seeded random small instances (planner.fleet.samples: 1 to 3
pools, half of them on 2 to 6 sites). The objective is drawn among those the model answers
(min_time, min_cost, max_compute); a third of the instances get a C_quality target, half of the
max_compute ones of C_local the linear_v1 replica penalty (the others the default chinchilla one).
Instances the model refuses (exit 2, as for a uniform fleet: e.g. the dtplan profile's overlap) are
counted apart.

Three answers are compared with the oracle's: the loop's own (before certification: its plan's
value when it reports status optimal, else its bound must not exceed the oracle's), the
certified answer, and `bnb`'s. Prints every disagreement, then the counts and the times.

    python scripts/check_mixed_mip.py [--count 200] [--seed 21] [--backend highs] [--sync-rule straggler]

`--sync-rule proportional|auto` sets fleet.sync_rule of every instance (the model's rows of the rule,
planner.sync.proportional.mip_rows; the oracle scores every assignment under it); `drawn` draws one of the
two per instance. Default: the straggler rule. `--speed-gap` draws instead fleets where the rule
matters (`speed_gap_sample`: two or three pools 1.3 to 3.5 times apart, the rule drawn, every objective).

Exit 1 on any disagreement.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

from planner.fleet.samples import random_instance
from planner.schema.instance import parse_instance
from planner.solve import solve
from planner.solvers import UnsupportedBySolver
from planner.solvers.mixed_oracle import oracle

REL = 1e-9


def sample(rng: np.random.Generator, rule: str = "straggler") -> dict:
    """A random instance for the model: min_time or min_cost, C_local or (a third) C_quality; fleet.sync_rule
    `rule` ('drawn': proportional or auto, drawn last so that the other draws are those of the straggler run)."""
    data = random_instance(rng)
    data["fleet"].pop("sync_rule", None)     # the sampler's own draw of the rule is replaced by `rule`
    data["objective"] = str(rng.choice(["min_time", "min_cost", "max_compute"]))
    if rng.random() < 1 / 3:
        data["training"]["target_kind"] = "c_quality"
    elif data["objective"] == "max_compute" and rng.random() < 0.5:    # one the model answers
        data.setdefault("assumptions", {}).setdefault("constants", {})["replica_penalty"] = "linear_v1"
    if rule == "drawn":
        rule = str(rng.choice(["proportional", "auto"]))
    if rule != "straggler":
        data["fleet"]["sync_rule"] = rule
    return data


def speed_gap_sample(rng: np.random.Generator) -> dict:
    """Two or three pools of 48-accelerator nodes 1.3 to 3.5 times apart in speed (1 to 4 nodes each), a
    1B to 30B model to 5 to 40 tokens per parameter, a 30 Mb/s to 10 Gb/s WAN, fleet.sync_rule
    proportional or auto, the objective drawn (min_cost and max_compute within a duration limit near the
    time of half the nodes; max_compute of C_local under each replica penalty or of C_quality)."""
    params, tflops = float(10 ** rng.uniform(9, 10.5)), float(rng.uniform(100, 300))
    speeds = [1.0, float(rng.uniform(1.3, 3.5))] + ([float(rng.uniform(1.1, 3.5))] if rng.random() < 0.5 else [])
    counts = [int(rng.integers(1, 5)) for _ in speeds]
    tokens = params * float(rng.uniform(5, 40))
    pools = [{"name": f"p{i}", "hardware": {"id": "custom", "name": f"node {i}", "accelerators_per_node": 48,
                                             "peak_tflops_per_accelerator": {"fp16": tflops * x},
                                             "hbm_gb_per_accelerator": 141.0,
                                             "price_usd_per_accelerator": float(rng.choice([2000.0, 5000.0, 10000.0]))},
              "count": c} for i, (x, c) in enumerate(zip(speeds, counts))]
    half = max(1, sum(counts) // 2)
    days = 6 * params * tokens / (half * 48 * tflops * 1e12 * 0.4) / 86400 * float(rng.uniform(0.7, 3))
    objective = str(rng.choice(["min_time", "min_cost", "max_compute"]))
    data = {"model": {"params": params}, "training": {"target_flop": 6 * params * tokens},
            "fleet": {"pools": pools, "sync_rule": str(rng.choice(["proportional", "auto"]))},
            "network": {"wan": {"up_mbps": float(10 ** rng.uniform(1.5, 4)), "down_mbps": 10000.0,
                                "rtt_ms": float(rng.uniform(10, 100))}},
            "limits": {"max_days": 3650 if objective == "min_time" else max(days, 0.01)},
            "search": {"max_inner_steps": int(rng.integers(4, 41)), "max_regional_rounds": 2, "group_sizes": [2],
                       "compression": [1.0, 16.0], "max_stages": 2, "max_micro_batches": 2},
            "objective": objective}
    if objective == "max_compute":
        kind = rng.random()
        if kind < 1 / 3:
            data["training"]["target_kind"] = "c_quality"
        elif kind < 2 / 3:
            data["assumptions"] = {"constants": {"replica_penalty": str(rng.choice(["linear_v1", "none"]))}}
    return data


def close(a: float | None, b: float | None, rel: float = REL) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return abs(a - b) <= rel * max(abs(a), abs(b))


def compare(instance, backend: str) -> tuple[list[str], dict]:
    """The disagreements of one instance (empty when all agree) and the timings, with the MIP path's
    result and the oracle's best (`result`, `best`; scripts/check_regions_oracle.py --solver)."""
    out, times = [], {}
    start = time.perf_counter()
    try:
        mip = solve(instance, solver=backend)
    except UnsupportedBySolver as err:      # as the uniform model refuses them (e.g. the dtplan profile's overlap)
        return [], {"refused": str(err)}
    times["mip"] = time.perf_counter() - start
    start = time.perf_counter()
    exact = solve(instance, solver="bnb")
    times["bnb"] = time.perf_counter() - start
    start = time.perf_counter()
    best = oracle(instance)
    times["oracle"] = time.perf_counter() - start
    want = best[0] if best else None
    value = lambda r: r.objective_value if r.status == "optimal" else None
    if not close(value(mip), want):
        out.append(f"certified {mip.status} {mip.objective_value}")
    if not close(value(exact), want):
        out.append(f"bnb {exact.status} {exact.objective_value}")
    for report in mip.mip:                 # the loop alone
        tol = {"min_cost": 1e-6, "max_compute": 2e-4}.get(instance.objective, 1e-8)    # max_compute: 1e-4 in ln C
        if report["status"] == "optimal" and not close(report["objective"], want, tol):
            out.append(f"loop optimal at {report['objective']}, oracle {want}")
        if want is not None and report["bound"] is not None and (
                report["bound"] < want * (1 - 1e-8) if instance.objective == "max_compute"
                else report["bound"] > want * (1 + 1e-8)):
            out.append(f"loop bound {report['bound']} on the wrong side of the optimum {want}")
        if want is None and report["objective"] is not None:
            out.append(f"loop found {report['objective']} where the oracle has no plan")
    times["rule_plan"] = mip.plan is not None and mip.plan.sync_rule == "proportional" and \
        len(mip.plan.pool_nodes or {}) > 1
    times["loop_optimal"] = all(r["status"] in ("optimal", "infeasible") for r in mip.mip)
    times["result"], times["best"] = mip, best
    return out, times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=200)
    parser.add_argument("--seed", type=int, default=21)
    parser.add_argument("--backend", default="highs", choices=("highs", "scip"))
    parser.add_argument("--sync-rule", default="straggler", choices=("straggler", "proportional", "auto", "drawn"))
    parser.add_argument("--speed-gap", action="store_true", help="fleets where the rule matters (speed_gap_sample)")
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    bad, refused, compared, closed, ruled = 0, 0, 0, 0, 0
    totals = {"mip": 0.0, "bnb": 0.0, "oracle": 0.0}
    for k in range(args.count):
        instance = parse_instance(speed_gap_sample(rng) if args.speed_gap else sample(rng, args.sync_rule))
        problems, times = compare(instance, args.backend)
        if "refused" in times:
            refused += 1
            continue
        compared += 1
        for name in totals:
            totals[name] += times[name]
        closed += times["loop_optimal"]
        ruled += times["rule_plan"]
        if problems:
            bad += 1
            print(f"instance {k} ({instance.objective}): " + "; ".join(problems), flush=True)
    on_rule = ", speed gap, proportional or auto" if args.speed_gap else \
        f", fleet.sync_rule {args.sync_rule}" if args.sync_rule != "straggler" else ""
    print(f"{args.count} instances (seed {args.seed}, {args.backend}{on_rule}): {compared} compared, {refused} refused by the "
          f"model (exit 2: assumptions it does not cover); {bad} with a disagreement; "
          f"the loop closed its own gap on {closed}; {ruled} optima run the proportional rule on several pools; MIP path {totals['mip']:.1f} s, bnb {totals['bnb']:.1f} s, "
          f"oracle {totals['oracle']:.1f} s; load average {os.getloadavg()[0]:.2f}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
