"""The synchronous straggler rule (fleet.sync_rule 'straggler', the default; docs/fleet.md, "Cost
model"): the setting that scores a plan on several pools, and each pool's inner steps and waiting.

A mixed plan is an ordinary plan (mode, precision, H, Cr, S, M, k, R, ...) plus n_p nodes of
each pool p, N = sum_p n_p. The pools used are U = {p : n_p > 0}.

Every replica (flat, hierarchical), every pipeline stage (pp-group, pipeline over the WAN) runs
the same H inner steps on the same batch B between syncs, and a synchronous outer step (and every
pipeline tick) waits for its slowest member, so one inner step lasts what it lasts on the slowest
node used:

    t_comp = max_{p in U} 6 P_act B / (F_p u_p) = 6 P_act B / min_{p in U} (F_p u_p),

F_p the pool's node peak at the plan's precision, u_p its MFU (the profile's, or the
achieved MFU of its accelerator under the dtplan profile). Every other term of the step and
outer step (WAN and regional syncs, pipeline links, expert all-to-all) is the uniform model's
(docs/cost_model.md sections 3-4) with N nodes: links are per node and the same for every
pool. The outer update averages the N replicas' pseudo-gradients with equal weights (each
processed the same H B tokens), so eta_H, eta_C and the replica penalty eta_R (K = N, or
K = G groups) are the uniform model's. This is DiLoCo's synchronous setting (Douillard et al.
2023) with the straggler cost of heterogeneous workers described for local SGD (Lin et al.
2020, "Don't use large mini-batches, use local SGD", section on system heterogeneity): the
fast nodes idle for 1 - (F_slow u_slow) / (F_p u_p) of every step (`idle_fraction`).

Memory: every node holds the same share of the training state (P beta / S, or the MoE
share), so the plan must fit on the smallest node used: V = min_{p in U} V_p.
Precision: the plan's precision must be supported by every pool used.
Cost and global MFU: from the pools (`planner.fleet.replicas`, `planner.fleet.evaluate`).

With one pool (U = {p}) every formula above is the uniform model's, term by term:
`mixed_setting` returns that pool's own setting (tests/test_fleet_conformance.py runs every
reference case through this path). The proportional rule (`planner.sync.proportional.rule`) keeps
this rule's setting, the pace of the slowest pool used, and lets the faster pools run more inner
steps in it. Not modelled (docs/fleet.md, "Limits"): heavier pipeline stages on bigger nodes.

Layer: setting (it imports schema, cost and the fleet's setting modules only).
"""

from __future__ import annotations

from typing import Sequence

from planner.cost.setting import Setting
from planner.fleet.pools import PoolSetting
from planner.fleet.replicas import sites_of


def slowest(pools: Sequence[PoolSetting], used: Sequence[int], precision: str) -> int:
    """The pool of `used` with the least achieved FLOP/s per node F_p u_p at `precision`
    (ties to the first listed): it sets t_comp."""
    return min(used, key=lambda i: (pools[i].rate(precision), i))


def mixed_setting(pools: Sequence[PoolSetting], used: Sequence[int], precision: str, sites=None) -> Setting:
    """The setting that scores a plan on pools `used` at `precision` (module docstring): the
    slowest pool's own setting (its peak F, MFU u and every other field), with node memory the
    least of the pools used. Only `precision` is kept in its peaks (the one every pool used runs).
    With `sites` (a `planner.fleet.network.SiteNetwork`), the links of the pools' sites."""
    from planner.fleet.network import with_links
    s = pools[slowest(pools, used, precision)].setting
    memory = min(pools[i].setting.memory_bytes for i in used)
    s = s.replace(peak_flops={precision: s.peak_flops[precision]}, memory_bytes=memory)
    return with_links(s, sites.links(sites_of(pools, used)) if sites is not None else None)


def idle_fraction(pools: Sequence[PoolSetting], used: Sequence[int], precision: str) -> dict[int, float]:
    """Per pool used: the fraction of every inner step its nodes wait for the slowest,
    1 - (F_slow u_slow) / (F_p u_p)."""
    slow = pools[slowest(pools, used, precision)].rate(precision)
    return {i: 1.0 - slow / pools[i].rate(precision) for i in used}


def plan_timing(s: Setting, pools: Sequence[PoolSetting], counts: Sequence[int], precision: str, h: int):
    """The rule's change to the step and its H_p per pool used (`planner.sync.rules.SyncRule.timing`):
    none (`adjust` None) and H_p = H for every pool used."""
    return None, {i: h for i, n in enumerate(counts) if n}


def idle_share(s: Setting, pools: Sequence[PoolSetting], used: Sequence[int], precision: str,
               steps: dict[int, int], h: int) -> dict[int, float]:
    """Per pool used: the share of every inner step it waits for the slowest (`idle_fraction`)."""
    return idle_fraction(pools, used, precision)


def rule_problems(plan, is_moe: bool) -> list[str]:
    """Why `plan` cannot run under the rule: never (every mode steps in lock-step under it)."""
    return []
