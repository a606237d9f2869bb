"""The setting of an instance: its fields resolved into the cost model's SI-unit `Setting`.

Layer: setting (docs/architecture.md); imports only the cost model and the schema. The model,
target, network, limits and the node fields (for a fleet of pools, the first pool's; each pool's own
setting: `planner.fleet.pools.pool_settings`), the run-duration limit, the profile's setting-level
terms (MFU, failure goodput), a candidate model size, and a plan as a one-plan `PlanBatch`.
"""

from __future__ import annotations

import numpy as np

from planner.cost import physics
from planner.cost.duration import SECONDS_PER_DAY, max_run_days
from planner.cost.setting import PlanBatch, Setting
from planner.schema.instance import Instance
from planner.schema.plan import Plan


def max_days(instance: Instance) -> tuple[float, str]:
    """The run-duration limit in days and where it came from."""
    limits = instance.limits
    if limits.max_days == "growth":
        a = instance.resolved_assumptions()
        rates = (a.growth_hardware_x_per_year, a.growth_software_x_per_year, a.growth_investment_x_per_year)
        days = max_run_days(*rates, a.days_per_year)
        return days, (f"growth rates {rates[0]:g}x hardware, {rates[1]:g}x software, {rates[2]:g}x investment "
                      "per year (Epoch AI, 'The longest training run')")
    return float(limits.max_days), "limits.max_days"


def setting_from_instance(instance: Instance) -> Setting:
    """Resolve an instance into the evaluator's SI-unit `Setting`. For a fleet of pools the model,
    target, network and limits are the instance's and the node fields those of its first pool
    (each pool's own setting: `planner.fleet.pools.pool_settings`)."""
    hw = _hardware(instance)
    model, training, net = instance.model, instance.training, instance.network
    target = training.target_flop
    if training.tokens is not None:
        target = 6.0 * model.active_params * training.tokens
    a, goodput = physics_assumptions(instance)
    return Setting(
        params=model.params, active_params=model.active_params, moe_layers=model.moe_layers,
        hidden_size=model.hidden_size, local_batch_tokens=float(training.local_batch_tokens),
        peak_flops={p: hw.node_peak_flops(p) for p in hw.precisions}, memory_bytes=hw.node_hbm_bytes,
        accelerators_per_node=hw.accelerators_per_node, price_usd_per_accelerator=hw.price_usd_per_accelerator,
        h100_equivalents=hw.h100_equivalents,
        wan_up_bps=net.wan.up_mbps * 1e6, wan_down_bps=net.wan.down_mbps * 1e6, wan_rtt_s=net.wan.rtt_ms / 1e3,
        regional_bps=net.regional.mbps * 1e6, regional_rtt_s=net.regional.rtt_ms / 1e3,
        pipeline_bps=net.pipeline.mbps * 1e6, pipeline_rtt_s=net.pipeline.rtt_ms / 1e3,
        window_s=max_days(instance)[0] * SECONDS_PER_DAY, goodput=goodput, target_flop=target, target_kind=training.target_kind,
        max_nodes=instance.limits.max_nodes, budget_usd=instance.limits.budget_usd,
        assumptions=a)


def _hardware(instance: Instance):
    """The fleet's hardware (price applied); for a fleet of pools, the first pool's."""
    return instance.hardware if not instance.fleet.is_mixed else instance.fleet.pools[0].priced_hardware


def physics_assumptions(instance: Instance):
    """(assumptions, goodput) with the dtplan profile's setting-level terms applied (both are the
    instance's own when they are off): u from models/mfu.json unless the instance sets an MFU
    (`physics.resolve_mfu`), and with `failures` on, the goodput of the whole fleet from MTBF,
    checkpoints and churn (`physics.failure_goodput`) in place of fleet.goodput."""
    a = instance.resolved_assumptions()
    explicit = instance.assumptions.mfu is not None or "mfu" in instance.assumptions.constants
    moe = instance.model.active_params < instance.model.params
    m = instance.model
    a = physics.resolve_mfu(a, _hardware(instance).accelerator, explicit, moe, (m.params, m.active_params, m.hidden_size))
    a = physics.resolve_tensor_parallel(a, _hardware(instance).accelerator, moe, (m.params, m.active_params, m.hidden_size),
                                        explicit)
    goodput = instance.fleet.goodput
    if a.failures:
        hw = _hardware(instance)
        fleet = physics.failure_goodput(a, instance.fleet.nodes * hw.accelerators_per_node, instance.fleet.nodes)
        goodput = max(fleet["goodput"], physics.MIN_GOODPUT)
    return a, goodput


def with_params(setting: Setting, params: float) -> Setting:
    """The setting of a dense model of `params` total parameters (hidden size 0.03 sqrt(P)):
    one candidate of `search.params`."""
    return setting.replace(params=float(params), active_params=float(params), moe_layers=0, hidden_size=None)


def batch_from_plan(setting: Setting, plan: Plan) -> PlanBatch:
    """A one-plan batch; unset stages become S_min, unset expert parallelism 'global' for MoE."""
    stages = plan.stages
    if stages is None:
        if plan.mode in ("pp_group", "pipeline_wan"):
            beta = setting.assumptions.bytes_per_param(plan.precision)
            stages = max(2, int(np.ceil(setting.params * beta / setting.memory_bytes)))
        else:
            stages = 1
    ep = plan.expert_parallel_for(setting.is_moe)
    return PlanBatch.of(plan.mode, plan.precision, nodes=plan.nodes, inner_steps=plan.inner_steps,
                        compression=plan.compression, streaming=plan.streaming, stages=stages,
                        group_size=plan.group_size or 1, regional_rounds=plan.regional_rounds,
                        micro_batches=plan.micro_batches, activation_compression=plan.activation_compression,
                        schedule=plan.schedule_code, zero_shards=plan.zero_shards or 1, expert_parallel=ep)
