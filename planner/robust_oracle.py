"""The brute-force oracle of robust solves (tests/test_robust.py, scripts/check_robust_oracle.py).

Every plan of the declared space (every node count, H, R, micro-batch count, streaming setting,
schedule and ZeRO-3 shard count the instance allows; none of the space's reductions), scored by
the full evaluator (`planner.cost.score.score`) under every scenario's Setting; a plan counts when
it breaks no limit but the duration limit in any scenario; its robust key is the statistic over
the scenarios of its time to target (min_time, min_cost: the key must be within the duration
limit) or of 1/compute (max_compute). The best key wins (min_cost: the fewest nodes, then the
least key). Independent of the branch and bound, its boxes, bounds and reductions.

`random_instance` draws small uniform-fleet instances (reference or dtplan profile; every
objective; C_local and C_quality targets) whose spaces the oracle scores in about a second.

`brute_force_pools` is the oracle of a fleet of pools: every vector of node counts per pool
(0 <= n_p <= count_p, not all zero, within limits.max_nodes, search.min_nodes and the budget at
its own cost sum_p n_p x price_p, not the cheapest fill the planner reasons with), every precision
all pools used run, every plan of exactly N = sum_p n_p nodes scored under each scenario in the
plan's `mixed_setting` built from that scenario's pools (the straggler rule), the best kept by
the objective's key (robust time then cost; cost then robust time; robust compute then cost).
None of the planner's pool subsets, cheapest fills or ties at equal cost. `random_pool_instance`
draws small two-pool instances for it.
"""

from __future__ import annotations

import dataclasses
import itertools
import math

import numpy as np

from planner.cost.assumptions import SETTABLE_FIELDS
from planner.objectives import Objective
from planner.cost.score import score
from planner.cost.setting import PlanBatch, Setting
from planner.evaluate import with_params
from planner.fleet.network import site_network
from planner.fleet.pools import PoolSetting
from planner.fleet.replicas import fleet_cost_usd, unsupported, used_pools
from planner.sync.straggler.rule import mixed_setting
from planner.robust import Statistic
from planner.schema.instance import Instance
from planner.solvers.bnb import TIE_REL
from planner.solvers.pool_parts import base_space, unit_price
from planner.space import ZERO_SHARD_SIZES, DecisionSpace, hierarchical_shards_valid, schedules_searched

LIMITS = ("memory-cap", "node-limit", "structure", "budget-limit")
HARDWARE = ("16xH100-SXM", "48xA100-80GB", "7xB200")


def every_plan(s: Setting, space: DecisionSpace):
    """Batches covering every plan of the declared space (no reduction)."""
    streaming = (True, False) if space.streaming == (True,) and space.streaming_off_allowed else space.streaming
    a = s.assumptions
    for mode, precision in itertools.product(space.modes, space.precisions):
        for ep in space.expert_scopes(s, mode):
            axes = dict(nodes=range(space.min_nodes, space.max_nodes + 1), compression=space.compression,
                        streaming=streaming, inner_steps=range(1, space.max_inner_steps + 1), stages=[1],
                        group_size=[1], regional_rounds=[1], micro_batches=[8], activation_compression=[4.0],
                        schedule=[0], zero_shards=[1])
            if mode == "flat" and a.search_zero_shards and not s.is_moe:
                axes.update(zero_shards=(1, *(z for z in space.group_sizes if z in ZERO_SHARD_SIZES)))
            if mode == "hierarchical":
                axes.update(group_size=space.group_sizes, regional_rounds=range(1, space.max_regional_rounds + 1))
                if a.search_zero_shards and not s.is_moe:
                    axes.update(zero_shards=(1, *ZERO_SHARD_SIZES))
            if mode in ("pp_group", "pipeline_wan"):
                axes.update(stages=range(2, space.max_stages + 1), micro_batches=range(1, space.max_micro_batches + 1),
                            activation_compression=space.activation_compression,
                            schedule=schedules_searched(a))
            if mode == "pipeline_wan":
                axes.update(inner_steps=[1], compression=[1.0], streaming=[True])
            grid = np.meshgrid(*[np.asarray(list(v)) for v in axes.values()], indexing="ij")
            b = PlanBatch.of(mode, precision, expert_parallel=ep, **{k: g.ravel() for k, g in zip(axes, grid)})
            if mode == "pipeline_wan":
                b = b.take(b.nodes >= b.stages)
            if mode == "hierarchical":
                b = b.take(hierarchical_shards_valid(b.group_size, b.zero_shards))
            if b.size:
                yield b


def brute_force(settings: list[Setting], space: DecisionSpace, objective: Objective, statistic: Statistic):
    """(robust value, robust time of that plan) of the best plan, or None (module docstring).
    Values: seconds (min_time), USD (min_cost), FLOP (max_compute)."""
    nominal = settings[0]
    best = None
    for b in every_plan(nominal, space):
        outs = [score(s, b, fleet_nodes=space.max_nodes) for s in settings]
        ok = np.ones(b.size, bool)
        for out in outs:
            for name in LIMITS:
                ok &= ~out[f"violates:{name}"]
        times = statistic.of_values(np.stack([o["time_to_target_s"] for o in outs]))
        if objective.maximise:
            with np.errstate(divide="ignore"):
                value = statistic.of_values(np.stack([1.0 / o[nominal.target_kind] for o in outs]))
            second = np.zeros(b.size)
        else:
            ok &= times <= nominal.window_s
            value = times if objective.by_time else b.nodes * nominal.node_price_usd
            second = times
        for i in np.flatnonzero(ok & np.isfinite(value)):
            key = (float(value[i]), float(second[i]))
            if best is None or _less(key, best):
                best = key
    if best is None:
        return None
    return (1.0 / best[0] if objective.maximise else best[0]), best[1]


def brute_force_pools(instance: Instance, scenario_pools: list[list[PoolSetting]], objective: Objective,
                      statistic: Statistic) -> float | None:
    """The robust value of the best plan on a fleet of pools (module docstring), or None: seconds
    (min_time), USD (min_cost), FLOP (max_compute)."""
    pools = scenario_pools[0]
    space = base_space(instance, pools)
    cap, budget = instance.limits.max_nodes or math.inf, instance.limits.budget_usd
    sites = site_network(instance)
    best = None
    for counts in itertools.product(*(range(p.count + 1) for p in pools)):
        n, cost = sum(counts), fleet_cost_usd(pools, counts)
        if n == 0 or n > cap or n < space.min_nodes or (budget is not None and cost > budget):
            continue
        used = used_pools(counts)
        for precision in space.precisions:
            if unsupported(pools, used, precision):
                continue
            fixed = dataclasses.replace(space, precisions=(precision,), min_nodes=n, max_nodes=n)
            for params in instance.search.params or [None]:
                settings = [unit_price(mixed_setting(p, used, precision, sites)) for p in scenario_pools]
                settings = settings if params is None else [with_params(s, params) for s in settings]
                found = brute_force(settings, fixed, objective, statistic)
                if found is None:
                    continue
                value, robust_s = found
                key = (cost, robust_s) if objective.by_cost else (-value, cost) if objective.maximise else (value, cost)
                if best is None or _less(key, best[1]):
                    best = (cost if objective.by_cost else value, key)
    return None if best is None else best[0]


def random_pool_instance(rng: np.random.Generator) -> dict:
    """A small fleet of two pools of different hardware (1 or 2 nodes each, prices as listed), otherwise
    as `random_instance`, with smaller ranges so that the oracle scores every assignment in seconds."""
    data = random_instance(rng)
    first, second = rng.choice(len(HARDWARE), size=2, replace=False)
    data["fleet"] = {"pools": [{"name": "a", "hardware": HARDWARE[int(first)], "count": int(rng.integers(1, 3))},
                               {"name": "b", "hardware": HARDWARE[int(second)], "count": int(rng.integers(1, 3))}]}
    data["search"].update(max_inner_steps=min(data["search"]["max_inner_steps"], 8), max_regional_rounds=2,
                          max_stages=3, max_micro_batches=2)
    if "budget_usd" in data["limits"]:
        data["limits"]["budget_usd"] = float(rng.choice([2e6, 6e6]))
    return data


def _less(a: tuple, b: tuple) -> bool:
    for x, y in zip(a, b):
        if x < y * (1 - TIE_REL):
            return True
        if x > y * (1 + TIE_REL):
            return False
    return False


def random_instance(rng: np.random.Generator) -> dict:
    """A small uniform-fleet instance (module docstring)."""
    profile = str(rng.choice(["reference", "dtplan"]))
    kind = str(rng.choice(["c_local", "c_quality"]))
    params = float(rng.choice([1e9, 7e9, 20e9, 70e9]))
    nodes = int(rng.integers(1, 13 if kind == "c_local" else 7))
    objective = str(rng.choice(["min_time", "min_cost", "max_compute"]))
    data = {
        "model": {"params": params},
        "training": {"target_flop": float(10 ** rng.uniform(21.5, 24.5)), "target_kind": kind},
        "fleet": {"hardware": str(rng.choice(HARDWARE)), "nodes": nodes},
        "network": {"wan": {"up_mbps": float(10 ** rng.uniform(1, 4)), "down_mbps": float(10 ** rng.uniform(1, 4)),
                            "rtt_ms": float(rng.uniform(5, 300))}},
        "limits": {"max_days": float(rng.choice([30, 365, 5000]))},
        "search": {"max_inner_steps": int(rng.integers(1, 25 if kind == "c_local" else 9)),
                   "max_regional_rounds": int(rng.integers(1, 4)), "max_stages": 4, "max_micro_batches": 3,
                   "group_sizes": [2, 3], "compression": [1, 16, 500], "activation_compression": [1, 4]},
        "assumptions": {"profile": profile},
        "objective": objective,
    }
    if rng.random() < 0.3:
        data["limits"]["budget_usd"] = float(rng.choice([3e6, 2e7]))
    if rng.random() < 0.3:
        data["search"]["streaming"] = [False]
    if profile == "dtplan" and "evidence_envelope" in SETTABLE_FIELDS:
        # a profile that cuts the search to its evidence envelope (issue 24 item 3): opened, so that the
        # oracle's declared space is the one searched
        data["assumptions"]["constants"] = {"evidence_envelope": False}
    return data


def agree(found, expected, rel: float = 1e-9) -> bool:
    """The search's ((batch, value) or None) and the oracle's ((value, time) or None) agree."""
    if found is None or expected is None:
        return found is None and expected is None
    return math.isclose(found[1], expected[0], rel_tol=rel)


def robust_value(settings: list[Setting], batch: PlanBatch, objective: Objective, statistic: Statistic) -> float:
    """The robust value of one plan (a one-row batch): the statistic of its time to target, or of
    1/compute returned as FLOP (max_compute); min_cost: its time's statistic (its cost is fixed)."""
    outs = [score(s, batch) for s in settings]
    if objective.maximise:
        with np.errstate(divide="ignore"):
            return 1.0 / float(statistic.of_values(np.array([1.0 / o[settings[0].target_kind][0] for o in outs])))
    return float(statistic.of_values(np.array([o["time_to_target_s"][0] for o in outs])))
