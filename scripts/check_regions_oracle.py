"""Compare the planner with chosen regions (network.regions = "chosen": planner.solvers.mixed over
the undominated region partitions of planner.sites.partition, with the placement rule of
planner.fleet.regions) with the exhaustive oracle (planner.solvers.mixed_oracle: every assignment
of nodes to pools, every set partition of its sites into regions, every plan, the placement rule
checked on the assignment's own nodes per region) on seeded random instances of 1 to 3 pools on
2 to 6 sites (planner.sites.samples; min_time, max_compute and min_cost, a third with a budget).
Prints the disagreements (none expected), how many instances had a plan, how many optima use
several regions (per objective, with and without a budget), how many optima's placement costs more
than the cheapest fill of their nodes, and each side's time. For min_time and max_compute the cost of
the returned plan is compared too (ties go to the cheaper plan: the oracle's key is (time, cost) or
(compute, cost)); the count of parts where a tie of cheaper placement replaced the solver's first
choice (`placed.cheapest_tied`) is printed.

    python scripts/check_regions_oracle.py [--count 200] [--seed 5] [--placement | --ties] [--sync-rule] [--solver bnb]
    python scripts/check_regions_oracle.py --shipped [--solver bnb]

`--placement` draws instead from `random_placement_instance`: 3 or 4 pools at 2 or 3 sites, several
pools per region, groups or pipelines only, min_cost or a budget, where the cheapest placement is
often not the cheapest fill. `--ties` draws from `random_tie_instance` (min_time or max_compute on
2 or 3 sites, pools of 2 to 6 nodes, a node cap below the fleet), where plans of different group
sizes often tie in time and place at different costs. `--sync-rule` draws fleet.sync_rule 'proportional' or 'auto' into either family
(the placement family then on pools of unequal speed), and also prints how many optima run the
proportional rule, on several regions, and on a split with less W than the fastest fill of their nodes
(the placement, not the speeds, set it). `--shipped` compares them on instances/mixed-regions-chosen.json (as shipped, with min_cost, and with
a budget of 80% of its whole fleet) and on mixed-six-sites.json with network.regions = "chosen"
instead (several minutes of oracle each).

`--solver highs|scip`: the one-model path (planner.mip.pool_regions: the model a relaxation on the
singleton regions, its plans re-scored on real regions, certified by the decomposition) instead of
the default bnb, compared as scripts/check_mixed_mip.py compares it: the certified answer, bnb's
and the loop's own (its bound on the right side of the oracle's optimum, its value the optimum when
it reports optimal) against the oracle. Instances the model refuses (exit 2) are counted apart.

`--families`: the planner's search beyond 12 pools at any pool count (planner.solvers.pool_regions_families:
the choices of slowest pool, least memory, sets of sites and region partitions; the listing's limit set to 0
pools), with `--solver bnb`.

Exit 1 on any disagreement.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections import Counter

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))

from check_mixed_mip import compare  # noqa: E402  (the MIP path, bnb and the loop against the oracle)
from check_mixed_oracle import agree, planner_and_oracle  # noqa: E402  (same verdict, same value to 1e-9)

from planner.schema.instance import parse_instance  # noqa: E402
from planner.sites.samples import random_placement_instance, random_region_instance, random_tie_instance  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=200)
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--shipped", action="store_true", help="the shipped instances instead")
    parser.add_argument("--placement", action="store_true",
                        help="instances where the placement sets the cost (random_placement_instance)")
    parser.add_argument("--ties", action="store_true",
                        help="instances where group sizes tie in time at different costs (random_tie_instance)")
    parser.add_argument("--sync-rule", action="store_true",
                        help="fleet.sync_rule 'proportional' or 'auto' in every draw")
    parser.add_argument("--solver", default="bnb", choices=("bnb", "highs", "scip"),
                        help="the planner's solver (highs, scip: the one-model path, also checked against bnb)")
    parser.add_argument("--families", action="store_true",
                        help="the search beyond 12 pools at any pool count (pool_regions_families)")
    args = parser.parse_args()
    if args.families:
        from planner.solvers import decomposition
        decomposition.MAX_EXACT_POOLS = 0
    if args.shipped:
        return shipped(args.solver)
    rng = np.random.default_rng(args.seed)
    descents = count_descents()
    ties = count_ties()
    disagreements, feasible, several, planner_s, oracle_s = 0, 0, 0, 0.0, 0.0
    kinds: Counter = Counter()          # (objective, budget?) -> [instances, with a plan, on several regions]
    above_fill = 0                      # optima whose placement costs more than the cheapest fill of its N
    rule: Counter = Counter()           # optima under the proportional rule (--sync-rule)
    refused, closed = 0, 0              # --solver highs|scip: refused by the model; the loop closed its own gap
    for k in range(args.count):
        draw = random_placement_instance if args.placement else random_region_instance
        if args.ties:
            instance = parse_instance(random_tie_instance(rng))
        else:
            instance = parse_instance(draw(rng, sync_rule=True) if args.sync_rule else draw(rng))
        result, best, took_s, oracle_took_s, problems = planner_and_oracle_with(instance, args.solver)
        if result is None:
            refused += 1
            continue
        closed += all(r["status"] in ("optimal", "infeasible") for r in result.mip or [])
        planner_s, oracle_s = planner_s + took_s, oracle_s + oracle_took_s
        kind = (instance.objective, instance.limits.budget_usd is not None)
        kinds[kind + ("instances",)] += 1
        if result.status == "optimal":
            feasible += 1
            on_several = len(result.plan.regions or []) > 1
            several += on_several
            kinds[kind + ("with a plan",)] += 1
            kinds[kind + ("on several regions",)] += on_several
            above_fill += placement_above_fill(instance, result.plan)
            if result.plan.sync_rule == "proportional":
                rule["proportional"] += 1
                rule["on several regions"] += on_several
                rule["slower than the fastest fill"] += slower_than_fastest_fill(instance, result)
        if problems:
            disagreements += 1
            cost = result.evaluation.values["cost_usd"] if result.evaluation else None
            print(f"instance {k} ({instance.objective}): {'; '.join(problems)}; planner {result.status} "
                  f"{result.objective_value} (cost {cost}) {result.plan and result.plan.model_dump(exclude_none=True)}; "
                  f"oracle {best}", flush=True)
    family = " of random_tie_instance" if args.ties else " of random_placement_instance" if args.placement else ""
    if args.solver == "bnb" and refused:
        print(f"--families: {refused} instances refused by the search beyond 12 pools (exit 2, fleet.pools), not compared")
    if args.solver != "bnb":
        print(f"--solver {args.solver}: {refused} instances refused by the model (exit 2), the loop closed its own "
              f"gap on {closed} of the {args.count - refused} others (the decomposition certified the rest)")
    print(f"{args.count} instances{family} (seed {args.seed}, --solver {args.solver}): {disagreements} disagreements; "
          f"{feasible} with a plan, "
          f"{several} optima on several regions, {above_fill} whose placement costs more than the cheapest fill "
          f"of their nodes; {descents['parts']} min_cost parts on several regions, {descents['cheaper']} of them "
          f"cheaper than their fewest-node plan; {ties['parts']} min_time / max_compute parts on several regions, "
          f"{ties['cheaper']} of them with a cheaper tie than the solver's first choice; "
          f"planner {planner_s:.1f} s, oracle {oracle_s:.1f} s; "
          f"load average {os.getloadavg()[0]:.1f}")
    if args.sync_rule:
        print(f"  {rule['proportional']} optima under the proportional rule, {rule['on several regions']} of them "
              f"on several regions, {rule['slower than the fastest fill']} on a split with less W than the "
              "fastest fill of their nodes")
    for objective in ("min_time", "min_cost", "max_compute"):
        for budget in (False, True):
            counts = [kinds[(objective, budget, what)] for what in ("instances", "with a plan", "on several regions")]
            print(f"  {objective:<11} {'budget   ' if budget else 'no budget'}: {counts[0]:>3} instances, "
                  f"{counts[1]:>3} with a plan, {counts[2]:>3} on several regions")
    return 1 if disagreements else 0


def planner_and_oracle_with(instance, solver: str):
    """(the planner's result, the oracle's best, the seconds each took, the disagreements) with `solver`;
    highs or scip: `check_mixed_mip.compare` (the certified answer, bnb's and the loop's own; the planner's
    seconds are the MIP path's), result None when the model refuses the instance (exit 2)."""
    from planner.schema.errors import InputError
    from planner.solvers import decomposition
    if solver == "bnb":
        try:
            result, best, planner_s, oracle_s = planner_and_oracle(instance)
        except InputError as err:       # --families: the search beyond 12 pools refuses (exit 2): not compared
            if err.problems[0].path != "fleet.pools" or decomposition.MAX_EXACT_POOLS:
                raise
            return None, None, 0.0, 0.0, []
        problems = ([] if agree(result, best) else ["planner"]) + ([] if cost_agrees(result, best) else ["cost"])
        return result, best, planner_s, oracle_s, problems
    try:
        problems, times = compare(instance, solver)
    except InputError:
        return None, None, 0.0, 0.0, []
    if "refused" in times:
        return None, None, 0.0, 0.0, []
    problems = problems + ([] if cost_agrees(times["result"], times["best"]) else ["cost"])
    return times["result"], times["best"], times["mip"], times["oracle"], problems


def count_descents() -> Counter:
    """Counts, as the planner runs, the min_cost parts on several regions (`least_cost_placed`) and
    those whose descent found a plan cheaper than its first, fewest-node one (a second round with a
    plan): where taking the fewest nodes would have been wrong. Wraps the functions it counts."""
    import planner.sync.straggler.search as mixed        # the straggler rule's part search
    import planner.solvers.placed as placed      # least_cost_placed's own name for the uniform search
    counts: Counter = Counter()
    rounds: list[bool] = []
    optimise, least = placed.optimise, mixed.least_cost_placed

    def counted_optimise(setting, space, objective, *args, **kwargs):
        out = optimise(setting, space, objective, *args, **kwargs)
        if objective == "min_cost" and space.placement is not None:
            rounds.append(out[0] is not None)
        return out

    def counted_least(*args, **kwargs):
        rounds.clear()
        out = least(*args, **kwargs)
        counts["parts"] += 1
        counts["cheaper"] += sum(rounds) >= 2
        return out

    placed.optimise, mixed.least_cost_placed = counted_optimise, counted_least
    return counts


def cost_agrees(result, best) -> bool:
    """min_time and max_compute: the returned plan costs what the oracle's does to 1e-9 relative (the
    oracle's key is (time, cost) or (-compute, cost): of the plans tied with the optimum, the cheapest).
    min_cost: the value is the cost, compared by `agree`."""
    if result.status != "optimal" or best is None or result.objective.by_cost:
        return True
    cost, want = result.evaluation.values["cost_usd"], best[1][1]
    return abs(cost - want) <= 1e-9 * abs(want)


def count_ties() -> Counter:
    """Counts, as the planner runs, the min_time / max_compute parts on several regions
    (`cheapest_tied`) and those where a cheaper plan tied with the solver's first choice."""
    import planner.sync.straggler.search as mixed        # the straggler rule's part search
    counts: Counter = Counter()
    cheapest_tied = mixed.cheapest_tied

    def counted(*args, **kwargs):
        out = cheapest_tied(*args, **kwargs)
        counts["parts"] += 1
        counts["cheaper"] += out[0] is not args[4]
        return out

    mixed.cheapest_tied = counted
    return counts


def placement_above_fill(instance, plan) -> bool:
    """Whether the plan's counts cost more than the cheapest fill of its nodes over its pools (the
    placement rule, not the prices, set them)."""
    from planner.fleet.pools import pool_settings
    from planner.fleet.replicas import cheapest_fill, fleet_cost_usd, used_pools
    pools = pool_settings(instance)
    counts = [plan.pool_nodes.get(p.label, 0) for p in pools]
    fill = cheapest_fill(pools, used_pools(counts), sum(counts))
    return fleet_cost_usd(pools, counts) > fleet_cost_usd(pools, fill) * (1 + 1e-12)


def slower_than_fastest_fill(instance, result) -> bool:
    """Whether a proportional optimum's split has less W = sum_p n_p H_p than the fastest fill of its
    nodes over its pools (`fastest_fill` with its H_p): the placement or the budget set the split."""
    from planner.fleet.pools import pool_settings
    from planner.sync.proportional.rule import fastest_fill
    pools = pool_settings(instance)
    counts = [result.plan.pool_nodes.get(p.label, 0) for p in pools]
    steps = {i: row["inner_steps"] for i, row in enumerate(result.evaluation.pool_rows) if counts[i]}
    fill = fastest_fill(pools, steps, sum(counts))
    return sum(counts[i] * h for i, h in steps.items()) < sum(fill[i] * h for i, h in steps.items())


def shipped(solver: str = "bnb") -> int:
    import json
    root = os.path.join(os.path.dirname(__file__), "..", "instances")
    disagreements = 0
    # as shipped; mixed-regions-chosen also with min_cost, and with a budget of 80% of its whole fleet
    for name, variant in (("mixed-regions-chosen", None), ("mixed-regions-chosen", "min_cost"),
                          ("mixed-regions-chosen", "budget"), ("mixed-six-sites", None)):
        with open(os.path.join(root, f"{name}.json"), encoding="utf-8") as f:
            data = json.load(f)
        data["network"]["regions"] = "chosen"
        if variant == "min_cost":
            data["objective"] = "min_cost"
        elif variant == "budget":
            from planner.fleet.pools import pool_settings
            from planner.fleet.replicas import node_price_usd
            whole = sum(node_price_usd(p) * p.count for p in pool_settings(parse_instance(data)))
            data["limits"]["budget_usd"] = 0.8 * whole
        instance = parse_instance(data)
        result, best, planner_s, oracle_s, problems = planner_and_oracle_with(instance, solver)
        ok = result is not None and not problems
        disagreements += not ok
        label = name + (f" ({variant})" if variant else "")
        if result is None:
            print(f"{label}: REFUSED by --solver {solver}", flush=True)
            continue
        print(f"{label}: {'agree' if ok else 'DISAGREE ' + '; '.join(problems)}; planner {result.objective_value} "
              f"regions {result.plan and result.plan.regions} ({planner_s:.1f} s), oracle {best and best[0]} "
              f"({oracle_s:.1f} s); load average {os.getloadavg()[0]:.1f}", flush=True)
    return 1 if disagreements else 0


if __name__ == "__main__":
    sys.exit(main())
