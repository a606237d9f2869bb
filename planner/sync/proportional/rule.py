"""The proportional synchronisation rule: faster pools run more inner steps per outer step
(docs/fleet.md, section 2).

Under the straggler rule (`planner.sync.straggler.rule`) every replica runs the plan's H inner
steps and the faster ones wait. Under the proportional rule a replica of pool p runs H_p
inner steps in the time the pacing pool (the slowest used, whose step t_comp sets the mixed
setting's step) runs H:

    H_p = floor(H t_pace / t_p),   t_p = 6 P_act B / (F_p u_p) (+ its tensor-parallel time)

rounded down so that every replica is done when the pacing pool is (the pacing pool's own
H_p is H). What the rounding leaves, 1 - H_p t_p / (H t_pace) of the compute block, a
replica of pool p still waits (`idle_share`). With one pool, or pools of equal speed,
H_p = H and every figure is the straggler rule's, bit for bit.

What changes, for a plan on counts n_p (N = sum_p n_p, W = sum_p n_p H_p):

- outer-step time: unchanged. The pacing pool's H steps and the syncs are the straggler rule's
  outer step (flat or hierarchical, with or without streaming); every other replica finishes
  its H_p steps within them, so no sync starts later.
- tokens per outer step: B W (times R for a hierarchical global cycle, times the backup
  strategy's throughput fraction as today), instead of B N H: the mode's figure times W / (N H).
- outer update: FedNova's normalised averaging (Wang et al. 2020, "Tackling the objective
  inconsistency problem in heterogeneous federated optimization", NeurIPS, arXiv 2007.07481).
  Replica i's pseudo-gradient Delta_i over H_i steps is divided by H_i and the normalised
  updates are averaged with weights w_i = H_i B / (W B), their token shares, then scaled by
  tau = sum_i w_i H_i: Delta = tau sum_i w_i Delta_i / H_i. A plain token-weighted average
  would pull the model towards the fast replicas' objective (FedNova's inconsistency); the
  normalisation removes that, and with equal H_i it is DiLoCo's plain average.
- quality: eta_H and the replica penalty eta_R are taken at the largest H_p used, H_max (and
  H_max sqrt(R) hierarchically), with K = N replicas as today. Local-SGD analyses bound the
  drift of a replica by its number of local steps, so the fast pools' replicas drift most; the
  reference cost model has eta_H for one H only, and taking H_max never credits the run with
  less drift than its worst replica has (eta_H and eta_R fall with H_eff, facts (H) and (R) of
  `planner.solvers.monotone`). A token-weighted H would be more optimistic with no law to back
  it. Asynchronous Local-SGD on workers of unequal speed (Liu et al. 2024, "Asynchronous
  Local-SGD training for language modeling", arXiv 2401.09135) is the setting this extrapolates.
- compute: C_local = 6 P_act T eta from the tokens T actually processed (B W per outer step);
  global MFU over sum_p n_p F_p as today.
- memory and precision: per pool, as today (every node holds the same share of the state).

Where it applies: replicas of one node that do not step together, i.e. flat DiLoCo without
ZeRO-3 sharding and hierarchical DiLoCo, with no expert parallelism across nodes. In the
pipeline modes, a ZeRO-3 replica or an expert all-to-all the nodes step in lock-step, so the
rule is refused there (`rule_problems`).
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from planner.cost import physics, timing
from planner.cost.setting import Setting
from planner.fleet.pools import PoolSetting
from planner.fleet.replicas import node_price_usd

ROUNDING_SLACK = 1e-12      # H t_pace / t_p within this (relative) of an integer rounds to it (float noise)


def pool_step_s(s: Setting, pool: PoolSetting, precision: str) -> float:
    """t_p: one inner step of the whole model on one node of `pool`, seconds, with the plan's model
    and batch (from `s`): 6 P_act B / (F_p u_p), plus the tensor-parallel collectives inside the
    node when that dtplan term is on (as `planner.cost.modes`)."""
    a = pool.setting.assumptions
    t = timing.compute_time_s(s.active_params, s.local_batch_tokens, pool.setting.peak_flops[precision],
                              a.mfu_for(precision))
    if a.tensor_parallel > 1:
        hidden = s.hidden_size if s.hidden_size is not None else timing.hidden_size(s.params, a.hidden_size_coefficient)
        t = t + physics.tensor_parallel_s(a, s.active_params, hidden, s.local_batch_tokens, precision,
                                          pool.hardware.accelerators_per_node)
    return float(t)


def step_ratios(s: Setting, pools: Sequence[PoolSetting], used: Sequence[int], precision: str) -> dict[int, float]:
    """Per pool used: t_pace / t_p, how many of its inner steps fit in one of the pacing pool's
    (`s` is the plan's mixed setting, whose step is the pacing pool's)."""
    t_pace = float(timing.compute_time_s(s.active_params, s.local_batch_tokens, s.peak_flops[precision],
                                         s.assumptions.mfu_for(precision)))
    if s.assumptions.tensor_parallel > 1:
        hidden = s.hidden_size if s.hidden_size is not None else timing.hidden_size(
            s.params, s.assumptions.hidden_size_coefficient)
        t_pace += float(physics.tensor_parallel_s(s.assumptions, s.active_params, hidden, s.local_batch_tokens,
                                                  precision, s.accelerators_per_node))
    return {i: t_pace / pool_step_s(s, pools[i], precision) for i in used}


def inner_steps(ratios: dict[int, float], h) -> dict[int, np.ndarray]:
    """H_p = floor(H t_pace / t_p) for every pool used (arrays broadcast with H)."""
    h = np.asarray(h, dtype=float)
    return {i: np.floor(h * r * (1.0 + ROUNDING_SLACK)) for i, r in ratios.items()}


def fill_order(pools: Sequence[PoolSetting], steps: dict[int, int]) -> list[int]:
    """The pools used, most inner steps first, then cheapest node, then listing order."""
    return sorted(steps, key=lambda i: (-steps[i], node_price_usd(pools[i]), i))


def fastest_fill(pools: Sequence[PoolSetting], steps: dict[int, int], nodes: int,
                 forced: Sequence[int] | None = None) -> list[int] | None:
    """The counts using exactly the pools of `steps` (each at least one node) for `nodes` nodes
    that maximise W = sum_p n_p H_p, the cheapest of those: one node of each, then the rest to
    the pools of most steps first (ties to the cheaper node, then the first listed). None when
    `nodes` is out of range. `forced` (a subset of the pools of `steps`): only those get a node
    first, the others may get none (the families beyond 12 pools, `planner.solvers.proportional_families`).

    Exchange argument: for a plan of fixed U, N and every other decision, time, memory and the
    quality factors do not depend on the counts (H_max and the pace are functions of U), and the
    tokens per outer step are B W; moving a node from a pool of fewer steps to one of more (both
    in U, the donor keeping one) raises W, and between pools of equal H_p lowers or keeps the
    cost. So the fill is the fastest assignment, and the cheapest among the fastest. With `forced`
    the same argument over the pools of `steps`, a donor of `forced` keeping one node."""
    forced = list(steps) if forced is None else list(forced)
    if not len(forced) <= nodes <= sum(pools[i].count for i in steps):
        return None
    counts = [0] * len(pools)
    for i in forced:
        counts[i] = 1
    left = nodes - len(forced)
    for i in fill_order(pools, steps):
        take = min(left, pools[i].count - counts[i])
        counts[i] += take
        left -= take
    return counts


def fill_row(pools: Sequence[PoolSetting], ratios: dict[int, float], h: int,
             max_nodes: int, forced: Sequence[int] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """W and cost of `fastest_fill` at H = h for every 0 <= N <= max_nodes (as float; W = 0 and
    cost = inf where N is out of range); `forced` as there: `fill_rows`' row of h."""
    weighted, cost = fill_rows(pools, ratios, [h], max_nodes, forced)
    return weighted[0], cost[0]


def fill_rows(pools: Sequence[PoolSetting], ratios: dict[int, float], h_values,
              max_nodes: int, forced: Sequence[int] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """`fill_row` of each H of `h_values` at once: W and cost [len(h_values), max_nodes + 1].

    After the forced pools' one node each, the N-th node of `fastest_fill` goes to the next spare
    node in the fill order (`fill_order`: most H_p, then cheapest node, then listing order), so
    W(N) = W_forced + the running sum of the spare nodes' H_p in that order (the cost alike with the
    node prices). Per H: H_p = floor(H r_p (1 + ROUNDING_SLACK)) elementwise as `inner_steps` (the
    same products, so the same doubles), the order by `np.lexsort` on (-H_p, price, index) (the keys
    of `fill_order`, the index breaking every tie), the spare nodes (a pool's count less its forced
    node) taken in that order, and the running sums by `np.cumsum` along each row: the same doubles
    added in the same order as a cumulative sum of the per-node list of that H (the spare nodes of a
    pool all carry its H_p and price), so each row is bit for bit the one-H row
    (tests/test_pool_families_proportional.py compares them with the per-node listing)."""
    forced = list(ratios) if forced is None else list(forced)
    used = list(ratios)
    h = np.asarray(h_values, dtype=float).reshape(-1)
    rate = np.array([ratios[i] for i in used], dtype=float)
    steps = np.floor(h[:, None] * rate[None, :] * (1.0 + ROUNDING_SLACK))          # [H, pools used]
    price = np.array([node_price_usd(pools[i]) for i in used], dtype=float)
    place = np.arange(len(used))
    order = np.lexsort((np.broadcast_to(place, steps.shape), np.broadcast_to(price, steps.shape), -steps), axis=-1)
    spare = np.array([max(0, pools[i].count - (i in forced)) for i in used], dtype=np.int64)
    nodes = np.repeat(place, spare)                          # each spare node's pool column, by column
    rank = np.argsort(order, axis=1)                         # each column's place in its row's order
    node_pool = nodes[np.argsort(rank[:, nodes], axis=1, kind="stable")]           # [H, spare nodes] in order
    extra_steps = np.take_along_axis(steps, node_pool, axis=1)
    extra_price = price[node_pool]
    weighted, cost = np.zeros((h.size, max_nodes + 1)), np.full((h.size, max_nodes + 1), math.inf)
    base = len(forced)
    top = min(max_nodes, base + node_pool.shape[1])
    if top >= base:
        span = top - base + 1
        column = {i: k for k, i in enumerate(used)}
        forced_steps = steps[:, [column[i] for i in forced]].sum(axis=1) if forced else np.zeros(h.size)
        zero = np.zeros((h.size, 1))
        weighted[:, base:top + 1] = forced_steps[:, None] + np.concatenate([zero, np.cumsum(extra_steps, axis=1)], axis=1)[:, :span]
        cost[:, base:top + 1] = sum(node_price_usd(pools[i]) for i in forced) + \
            np.concatenate([zero, np.cumsum(extra_price, axis=1)], axis=1)[:, :span]
    return weighted, cost


def adjust_for(weighted_steps, h_max, h):
    """The throughput change of the proportional rule for plans of inner steps `h` with
    W = `weighted_steps` and H_max = `h_max` (arrays broadcast): tokens per outer step times
    W / (N H), H_eff times H_max / H. A function for `planner.cost.score`'s `adjust`."""
    def adjust(t: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        t = dict(t)
        n = np.asarray(t["replicas"], dtype=float)          # flat (no ZeRO-3) and hierarchical: K = N
        hh = np.asarray(h, dtype=float)
        t["tokens_per_outer"] = t["tokens_per_outer"] * (np.asarray(weighted_steps, dtype=float) / (n * hh))
        t["h_eff"] = t["h_eff"] * (np.asarray(h_max, dtype=float) / hh)
        return t
    return adjust


def plan_adjust(s: Setting, pools: Sequence[PoolSetting], counts: Sequence[int], precision: str, h: int):
    """`adjust_for` of one plan on `counts` with H = `h`, and its H_p per pool used."""
    used = [i for i, n in enumerate(counts) if n]
    steps = {i: int(v) for i, v in inner_steps(step_ratios(s, pools, used, precision), h).items()}
    weighted = sum(counts[i] * steps[i] for i in used)
    return adjust_for(weighted, max(steps.values()), h), steps


def idle_share(s: Setting, pools: Sequence[PoolSetting], used: Sequence[int], precision: str,
               steps: dict[int, int], h: int) -> dict[int, float]:
    """Per pool used: the share of the pacing pool's compute block H t_pace its replicas wait,
    1 - H_p t_p / (H t_pace) (the rounding's remainder)."""
    ratios = step_ratios(s, pools, used, precision)
    return {i: max(0.0, 1.0 - steps[i] / (h * ratios[i])) for i in used}


def rule_problems(plan, is_moe: bool) -> list[str]:
    """Why `plan` cannot run under the proportional rule (module docstring), as messages; [] if it can."""
    out = []
    if plan.mode not in ("flat", "hierarchical"):
        out.append(f"needs replicas of one node (mode 'flat' or 'hierarchical'); mode {plan.mode!r} steps its "
                   "pipeline stages together")
    if plan.zero_shards not in (None, 1):
        out.append(f"needs replicas of one node; zero_shards = {plan.zero_shards} shards a replica over nodes "
                   "that step together")
    if plan.expert_parallel_for(is_moe) != "none" and plan.mode in ("flat", "hierarchical"):
        out.append("needs nodes that step independently; expert parallelism across nodes "
                   f"({plan.expert_parallel_for(is_moe)!r}) makes every step an all-to-all: set expert_parallel "
                   "to 'none'")
    return out


def first_h_that_differs(ratios: dict[int, float], h_max: int) -> int | None:
    """The least H <= h_max at which some pool used runs more than H inner steps (below it every
    H_p = H and the rule is the straggler rule), or None."""
    h = np.arange(1, h_max + 1, dtype=float)
    top = max(ratios.values())
    more = np.flatnonzero(np.floor(h * top * (1.0 + ROUNDING_SLACK)) > h)
    return int(more[0]) + 1 if more.size else None
