"""Compare robust solves (planner.robust, the branch and bound over scenarios) with the brute-force
oracle (planner.robust_oracle: every plan scored under every scenario) on seeded random small
uniform-fleet instances of every objective (planner.robust_oracle.random_instance), the worst case
and, for one instance in three, a quantile. Prints the disagreements (none expected), how many
instances were feasible, how many robust optima differ from the nominal one, and the time of each side.
`--pools`: fleets of two pools (planner.robust_oracle.random_pool_instance) instead, the robust
solve (planner.questions.robust.robust_optimum, the decomposition of planner.robust_pools) against
planner.robust_oracle.brute_force_pools.

    python scripts/check_robust_oracle.py [--count 200] [--seed 24] [--pools]

Exit 1 on any disagreement.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time

import numpy as np

from planner.fleet.pools import pool_settings
from planner.questions.robust import robust_optimum
from planner.questions.robust_scenarios import scenario_pools as scenario_pools_of
from planner.questions.robust_scenarios import scenario_settings
from planner.robust import Statistic, optimise
from planner.robust_oracle import (agree, brute_force, brute_force_pools, random_instance, random_pool_instance,
                                   robust_value)
from planner.solvers import UnsupportedBySolver
from planner.solvers.pool_parts import base_space
from planner.objectives import objective_named
from planner.solve import optimise as nominal_optimise
from planner.schema.instance import parse_instance
from planner.space import DecisionSpace


def check(data: dict, quantile: float | None, solver: str = "bnb", loop: dict | None = None):
    """(search's found, oracle's best, objective, search seconds, oracle seconds, whether the nominal
    optimum is worse than the robust one under the statistic) on one instance. With a MIP `solver`,
    the robust branch and bound's answer must be the same plan value, and `loop` counts how often the
    MIP loop alone (before certification) ended optimal with the oracle's value ("loop_optimal"), and
    how often certification changed the plan ("changed")."""
    instance = parse_instance(data)
    chosen, settings = scenario_settings(data)
    statistic = Statistic.of(len(settings), quantile)
    space = DecisionSpace.from_instance(instance, settings[0])
    objective = objective_named(instance.objective)
    labels = [c.label for c in chosen]
    reports: list = []
    start = time.perf_counter()
    found, _, _ = optimise(settings, space, objective, statistic, labels, solver=solver, reports=reports)
    search_s = time.perf_counter() - start
    if solver != "bnb":
        by_bnb, _, _ = optimise(settings, space, objective, statistic, labels)
        if not agree(found, None if by_bnb is None else (by_bnb[1],)):
            print(f"{solver} {None if found is None else found[1]} and bnb {None if by_bnb is None else by_bnb[1]} "
                  f"disagree")
            found = (None, math.nan)
        if loop is not None and reports:
            r = reports[0]
            loop["changed"] = loop.get("changed", 0) + r.certified_changed_plan
            loop["loop_optimal"] = loop.get("loop_optimal", 0) + (
                r.status in ("optimal", "infeasible") and not r.certified_improved)
    start = time.perf_counter()
    best = brute_force(settings, space, objective_named(instance.objective), statistic)
    oracle_s = time.perf_counter() - start
    nominal, _, _ = nominal_optimise(settings[0], space, objective_named(instance.objective))
    worse = False
    if found is not None and nominal is not None:
        mine, theirs = (robust_value(settings, b, objective_named(instance.objective), statistic) for b in (found[0], nominal[0]))
        worse = theirs < mine * (1 - 1e-9) if instance.objective == "max_compute" else theirs > mine * (1 + 1e-9)
        worse |= instance.objective == "min_cost" and nominal[1] < found[1] * (1 - 1e-9)
    return found, best, instance.objective, search_s, oracle_s, worse


def check_pools(data: dict, quantile: float | None):
    """`check` on a fleet of pools: (robust value found, oracle's value, objective, search seconds,
    oracle seconds, False: whether the nominal optimum is worse is not computed here)."""
    instance = parse_instance(data)
    start = time.perf_counter()
    result, _, _, _ = robust_optimum(instance, data, objective_named(instance.objective), quantile)
    search_s = time.perf_counter() - start
    pools = pool_settings(instance)
    space = base_space(instance, pools)
    _, scenario_pools = scenario_pools_of(data, scored=(space.modes, space.precisions))   # as the solve's
    statistic = Statistic.of(len(scenario_pools), quantile)
    start = time.perf_counter()
    best = brute_force_pools(instance, scenario_pools, objective_named(instance.objective), statistic)
    oracle_s = time.perf_counter() - start
    found = None if result.plan is None else (None, result.objective_value)
    return found, None if best is None else (best,), instance.objective, search_s, oracle_s, False


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=200)
    parser.add_argument("--seed", type=int, default=24)
    parser.add_argument("--pools", action="store_true")
    parser.add_argument("--solver", default="bnb", help="bnb, highs or scip (uniform fleets)")
    args = parser.parse_args()
    loop: dict[str, int] = {}
    rng = np.random.default_rng(args.seed)
    disagreements, feasible, differs, search_s, oracle_s = 0, 0, 0, 0.0, 0.0
    per_objective: dict[str, int] = {}
    per_profile: dict[str, int] = {}
    refused, k = 0, 0
    while k < args.count:
        data = random_pool_instance(rng) if args.pools else random_instance(rng)
        quantile = 0.8 if rng.random() < 1 / 3 else None
        if args.pools:
            found, best, objective, took_s, oracle_took_s, worse = check_pools(data, quantile)
        else:
            try:
                found, best, objective, took_s, oracle_took_s, worse = check(data, quantile, args.solver, loop)
            except UnsupportedBySolver:
                # the MIP does not cover the instance (nor does the nominal one: the dtplan profile's ZeRO-3
                # inside hierarchical groups, or a dtplan physics whose time does not factor): the instance
                # without hierarchical mode, else another
                refused += 1
                data["search"]["modes"] = ["flat", "pp_group", "pipeline_wan"]
                try:
                    found, best, objective, took_s, oracle_took_s, worse = check(data, quantile, args.solver, loop)
                except UnsupportedBySolver:
                    continue
        k += 1
        differs += worse
        search_s, oracle_s = search_s + took_s, oracle_s + oracle_took_s
        per_objective[objective] = per_objective.get(objective, 0) + 1
        profile = data["assumptions"]["profile"]
        per_profile[profile] = per_profile.get(profile, 0) + 1
        feasible += found is not None
        if not agree(found, best):
            disagreements += 1
            print(f"instance {k} ({objective}, quantile {quantile}): search "
                  f"{None if found is None else found[1]}; oracle {best}")
    differing = "" if args.pools else f"{differs} where the nominal optimum is not robustly optimal; "
    solver = "" if args.solver == "bnb" else (f"solver {args.solver} (loop alone optimal {loop.get('loop_optimal', 0)}, "
                                              f"certification changed the plan {loop.get('changed', 0)}, "
                                              f"{refused} drawn instances refused by the MIP: without hierarchical mode, else replaced); ")
    summary = (f"{args.count} {'pool ' if args.pools else ''}instances (seed {args.seed}; {solver}{per_objective}; "
               f"{per_profile}): {disagreements} disagreements; {feasible} feasible, {differing}search "
               f"{search_s:.1f} s, oracle {oracle_s:.1f} s; load average {os.getloadavg()[0]:.2f}")
    print(summary)
    return 1 if disagreements else 0


if __name__ == "__main__":
    sys.exit(main())
