"""Each pool of a fleet resolved on its own: the `Setting` the instance would have with only
that pool's hardware (peak FLOP/s per precision, node memory, price, achieved MFU).

A uniform fleet (`fleet.hardware` + `fleet.nodes`) is one pool, labelled by its hardware id,
whose setting is exactly `planner.evaluate.setting_from_instance(instance)`.

With dtplan's failure model on (`failures`), goodput depends on the whole fleet's
accelerators and nodes (`physics.failure_goodput`), so every pool gets the goodput of the
whole fleet: sum over pools of count_p x accelerators_p accelerators and sum of count_p nodes
(for one pool, exactly the uniform instance's figure).
"""

from __future__ import annotations

from dataclasses import dataclass

from planner.cost import physics
from planner.cost.setting import Setting
from planner.schema.catalog import HardwareSpec
from planner.schema.instance import Fleet, Instance
from planner.setting import setting_from_instance


@dataclass(frozen=True)
class PoolSetting:
    """One pool: its label, available count, hardware (price applied), site and lone-pool setting."""

    label: str
    count: int
    hardware: HardwareSpec
    site: str | None
    setting: Setting

    @property
    def precisions(self) -> tuple[str, ...]:
        return self.hardware.precisions

    def rate(self, precision: str) -> float:
        """Achieved FLOP/s of one node at `precision`: F_p u_p (peak times MFU), the speed that
        sets its compute time t_comp_p = 6 P_act B / (F_p u_p)."""
        s = self.setting
        return s.peak_flops[precision] * s.assumptions.mfu_for(precision)


def pool_instance(instance: Instance, hardware: HardwareSpec, count: int) -> Instance:
    """The instance with a uniform fleet of `count` nodes of `hardware` (its price applied),
    every other section unchanged. Internal: cross checks against the fleet are not re-run."""
    fleet = Fleet(hardware=hardware, nodes=count, goodput=instance.fleet.goodput)
    return instance.model_copy(update={"fleet": fleet})


def pool_settings(instance: Instance) -> list[PoolSetting]:
    """Every pool of the instance's fleet as a `PoolSetting` (one for a uniform fleet)."""
    fleet = instance.fleet
    if not fleet.is_mixed:
        return [PoolSetting(instance.hardware.id, fleet.nodes, instance.hardware, None,
                            setting_from_instance(instance))]
    pools = []
    for label, pool in zip(fleet.pool_labels(), fleet.pools):
        hw = pool.priced_hardware
        pools.append(PoolSetting(label, pool.count, hw, pool.site,
                                 setting_from_instance(pool_instance(instance, hw, pool.count))))
    a = pools[0].setting.assumptions
    if a.failures:
        accelerators = sum(p.count * p.hardware.accelerators_per_node for p in pools)
        goodput = max(physics.failure_goodput(a, accelerators, fleet.nodes)["goodput"], physics.MIN_GOODPUT)
        pools = [PoolSetting(p.label, p.count, p.hardware, p.site, p.setting.replace(goodput=goodput)) for p in pools]
    return pools
