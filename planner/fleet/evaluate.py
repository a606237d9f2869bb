"""One plan of a fleet of pools scored: the uniform evaluator on the plan's mixed setting
(`planner.sync.straggler.rule.mixed_setting`), with the figures that depend on the pools recomputed per pool.

Recomputed from the pools (planner/fleet/replicas.py): cost_usd = sum_p n_p x node price_p,
total_gpus = sum_p n_p x accelerators_p, global MFU and HFU over sum_p n_p F_p, and the
budget limit on that cost. Everything else is the uniform evaluator's, so with one pool the
figures are exactly `planner.homogeneous.evaluate_pool`'s. Under the proportional rule
(`plan.sync_rule`, planner/sync/proportional/rule.py) the mode's tokens per outer step and H_eff
are changed before everything else is computed from them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from planner.cost import quality_fit
from planner.cost.score import score
from planner.homogeneous import Evaluation, finite, plan_envelope, plan_warnings, violation_messages
from planner.fleet.network import plan_site_network, site_network
from planner.fleet.region_plans import plan_region_problems, region_rows
from planner.fleet.regions import plan_unit
from planner.fleet.pools import PoolSetting, pool_settings
from planner.fleet.replicas import fleet_cost_usd, node_price_usd, unsupported, used_pools
from planner.sync.rules import rule_named
from planner.sync.straggler.rule import mixed_setting, slowest
from planner.schema.errors import InputError, Problem
from planner.schema.instance import Instance
from planner.schema.plan import Plan
from planner.schema.strict import did_you_mean
from planner.setting import batch_from_plan, max_days, with_params


@dataclass
class MixedEvaluation(Evaluation):
    """An `Evaluation` of a plan on a fleet of pools, with one row per pool (`pool_rows`)."""

    pool_rows: list[dict[str, Any]] = field(default_factory=list)
    sync_rule: str = "straggler"                 # 'straggler' or 'proportional' (planner/sync/proportional/rule.py)
    sites: dict[str, Any] | None = None          # with network.sites: the sites used, regions and links

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        out["sync_rule"] = self.sync_rule
        out["pools"] = [{k: finite(v) if isinstance(v, float) else v for k, v in row.items()}
                        for row in self.pool_rows]
        if self.sites is not None:
            out["sites"] = self.sites
        return out


def counts_of(pools: list[PoolSetting], plan: Plan) -> list[int]:
    """Nodes used of each pool, in the fleet's order (a uniform fleet: all of plan.nodes)."""
    if plan.pool_nodes is None:
        return [plan.nodes]
    return [plan.pool_nodes.get(p.label, 0) for p in pools]


def mixed_plan_problems(instance: Instance, plan: Plan) -> list[Problem]:
    """Problems of a plan against a fleet of pools (pool counts, node cap, precision per pool)."""
    fleet = instance.fleet
    if not fleet.is_mixed:
        field = "plan.pool_nodes" if plan.pool_nodes is not None else "plan.sync_rule"
        return [Problem(field, "only for a fleet of pools (fleet.pools); this fleet is "
                               f"{fleet.nodes} x {instance.hardware.id}")]
    labels = fleet.pool_labels()
    if plan.pool_nodes is None:
        return [Problem("plan.pool_nodes", "required for a fleet of pools: the nodes used of each of "
                                           + ", ".join(repr(x) for x in labels))]
    problems = [Problem(f"plan.pool_nodes.{k}", f"unknown pool{did_you_mean(k, labels)}; pools: "
                                                + ", ".join(labels)) for k in plan.pool_nodes if k not in labels]
    for label, pool in zip(labels, fleet.pools):
        used = plan.pool_nodes.get(label, 0)
        if used > pool.count:
            problems.append(Problem(f"plan.pool_nodes.{label}", f"must be <= the pool's count ({pool.count}), "
                                                                f"got {used}"))
        if used and plan.precision not in pool.hardware.precisions:
            problems.append(Problem("plan.precision", f"pool {label!r} ({pool.hardware.id}) does not support "
                                                      f"{plan.precision!r}; supported: "
                                                      f"{', '.join(pool.hardware.precisions)}"))
    total = sum(plan.pool_nodes.values())
    if total != plan.nodes:
        problems.append(Problem("plan.nodes", f"must equal the sum of plan.pool_nodes ({total}), got {plan.nodes}"))
    max_nodes = instance.limits.max_nodes
    if max_nodes is not None and plan.nodes > max_nodes:
        problems.append(Problem("plan.nodes", f"must be <= limits.max_nodes ({max_nodes}), got {plan.nodes}"))
    rule = rule_named(plan.sync_rule)
    problems += [Problem("plan.sync_rule", f"'{rule.name}' {m}") for m in rule.problems(plan, instance.model.is_moe)]
    try:
        sites = site_network(instance)         # the sites holding pools must be joined by links
    except InputError as err:
        return problems + err.problems
    if not problems:                           # plan.regions under chosen regions (planner.fleet.regions)
        pools = pool_settings(instance)
        problems += plan_region_problems(instance, plan, pools, counts_of(pools, plan), sites)
    return problems


def evaluate_mixed(instance: Instance, plan: Plan, params: float | None = None,
                   pools: list[PoolSetting] | None = None) -> MixedEvaluation:
    """Score one plan of a fleet of pools (the plan must have passed `check_plan_against`).
    `params` as `planner.evaluate.evaluate`; `pools` the fleet's `pool_settings` when known."""
    pools = pools if pools is not None else pool_settings(instance)
    counts = counts_of(pools, plan)
    used = used_pools(counts)
    if unsupported(pools, used, plan.precision):
        raise ValueError(f"pools {unsupported(pools, used, plan.precision)} cannot run {plan.precision}")
    sites = plan_site_network(instance, plan)
    setting = mixed_setting(pools, used, plan.precision, sites)
    if params is not None:
        setting = with_params(setting, params)
    batch = batch_from_plan(setting, plan)
    adjust, steps = rule_named(plan.sync_rule).timing(setting, pools, counts, plan.precision, plan.inner_steps)
    values = score_on_pools(pools, counts, setting, batch, instance.fleet.nodes, adjust)
    e = MixedEvaluation(instance, plan, setting, batch, values, max_days_source=max_days(instance)[1])
    e.sync_rule = plan.sync_rule or "straggler"
    e.pool_rows = pool_rows(pools, counts, plan.precision, setting, steps, e.sync_rule)
    if sites is not None:
        e.sites = site_rows(pools, counts, sites)
        if instance.network.regions == "chosen":     # nodes and groups per chosen region
            e.sites["region_units"] = region_rows(pools, counts, e.sites["regions"], plan_unit(
                plan.mode, plan.group_size, plan.stages, plan.zero_shards))
    e.violations = violation_messages(e)
    e.warnings = plan_warnings(e) + _pool_warnings(e.pool_rows, e.sync_rule)
    if quality_fit.fitted(setting.assumptions):      # the fitted quality model's evidence (docs/quality.md)
        e.envelope = plan_envelope(setting, batch, e.values)
    return e


def score_on_pools(pools: list[PoolSetting], counts: list[int], setting, batch, fleet_nodes: int | None,
                   adjust=None) -> dict[str, float]:
    """Every figure of a one-plan batch on `counts` nodes of the pools, scored in `setting` (the
    plan's `mixed_setting`): the uniform `score` (with the sync rule's `adjust`), then cost,
    accelerators, global MFU / HFU and the budget limit from the pools (module docstring)."""
    precision = batch.precision
    raw = score(setting, batch, fleet_nodes=fleet_nodes, adjust=adjust)
    values = {k: float(np.asarray(v).ravel()[0]) for k, v in raw.items()}
    peak = sum(n * pools[i].setting.peak_flops[precision] for i, n in enumerate(counts) if n)
    slow_peak = setting.peak_flops[precision] * int(batch.nodes[0])
    values["cost_usd"] = fleet_cost_usd(pools, counts)
    values["total_gpus"] = float(sum(n * p.hardware.accelerators_per_node for p, n in zip(pools, counts)))
    values["global_mfu"] *= slow_peak / peak
    values["global_hfu"] *= slow_peak / peak
    budget = setting.budget_usd
    values["violates:budget-limit"] = float(budget is not None and values["cost_usd"] > budget)
    return values


def pool_rows(pools: list[PoolSetting], counts: list[int], precision: str, setting, steps: dict[int, int],
              rule: str = "straggler") -> list[dict[str, Any]]:
    """Per pool: what it has, what the plan uses, what it costs, its inner steps H_p per outer step
    (`steps`, by pool index) and the share of each compute block it waits."""
    used = used_pools(counts)
    slow = slowest(pools, used, precision)
    idle = rule_named(rule).idle(setting, pools, used, precision, steps, steps[slow])
    beta = setting.assumptions.bytes_per_param(precision)
    rows = []
    for i, (p, n) in enumerate(zip(pools, counts)):
        runs = precision in p.precisions
        rows.append({
            "pool": p.label, "hardware": p.hardware.id, "hardware_name": p.hardware.name,
            "accelerator": p.hardware.accelerator, "site": p.site,
            "count": p.count, "nodes_used": n, "node_price_usd": node_price_usd(p),
            "cost_usd": n * node_price_usd(p), "accelerators": n * p.hardware.accelerators_per_node,
            "peak_pflops_per_node": p.setting.peak_flops[precision] / 1e15 if runs else None,
            "mfu": p.setting.assumptions.mfu_for(precision) if runs else None,
            "t_comp_s": 6.0 * setting.active_params * setting.local_batch_tokens / p.rate(precision) if runs else None,
            "inner_steps": steps[i] if n else None,
            "idle_fraction": idle.get(i) if n else None, "sets_pace": bool(n) and i == slow,
            "node_memory_gb": p.setting.memory_bytes / 1e9,
            "max_params_one_node": p.setting.memory_bytes / beta,
        })
    return rows


def site_rows(pools: list[PoolSetting], counts: list[int], sites) -> dict[str, Any]:
    """The sites a plan uses (nodes at each), the regions they form and the links that bound it."""
    from planner.fleet.replicas import sites_of
    used = used_pools(counts)
    links = sites.links(sites_of(pools, used))
    nodes: dict[str, int] = {}
    for p, n in zip(pools, counts):
        if n:
            nodes[p.site] = nodes.get(p.site, 0) + n
    return {"nodes_per_site": nodes, "regions": [list(r) for r in links.regions],
            "slowest_route_mbps": links.route_mbps, "slowest_route_rtt_ms": links.route_rtt_ms,
            "wan_up_mbps": links.wan_up_bps / 1e6, "wan_down_mbps": links.wan_down_bps / 1e6,
            "wan_rtt_ms": links.wan_rtt_s * 1e3, "regional_mbps": links.regional_bps / 1e6,
            "regional_rtt_ms": links.regional_rtt_s * 1e3}


def _pool_warnings(rows: list[dict[str, Any]], rule: str) -> list[str]:
    """A warning when some pool used waits more than a quarter of every compute block."""
    used = [r for r in rows if r["nodes_used"]]
    if len(used) < 2:
        return []
    worst = max(used, key=lambda r: r["idle_fraction"])
    if worst["idle_fraction"] <= 0.25:
        return []
    slow = next(r["pool"] for r in used if r["sets_pace"])
    if rule == "proportional":
        return [f"pool {worst['pool']!r} waits {worst['idle_fraction']:.0%} of every compute block for the slowest "
                f"pool ({slow!r}): its {worst['inner_steps']} inner steps are what fits, rounded down (docs/fleet.md)"]
    return [f"pool {worst['pool']!r} waits {worst['idle_fraction']:.0%} of every inner step for the slowest pool "
            f"({slow!r}): the synchronous straggler rule (docs/fleet.md)"]
