"""The reference's `find_nodes_for_target` answered exactly without the branch and bound.

The question (`planner.reference.search`): the fewest nodes N <= N_max of a flat DiLoCo plan
of one model (P, precision and compression fixed) whose C_local within the window reaches
the target; dtplan chooses H in 1..H_max and streaming. When the replica penalty does not
depend on the run's tokens (`linear_v1` or `none`) this is `min_cost` with a C_local target,
and its structure gives the answer in a few vectorised evaluations of the cost model
(`planner.cost.score.window_compute`), where the branch and bound scores hundreds of boxes.

Where `applies` holds (flat only, dense model that fits one node, no ZeRO-3, no fitted
quality or evidence envelope, no dtplan overlap or fragment model, no node or budget limit,
a WAN exchange and a step whose times do not depend on the number of parties), for N >= 2 (docs/cost_model.md sections 4-5):

    C_local(N, H) = k * N * eta_R(N) * H * eta_H(H) / outer(N, H),
    outer = max(H t, t_sync(N)) with streaming, H t + t_sync(N) without,
    t_sync(N) = base * f(N), f(N) = 1 + c log2 N (straggler),

with k > 0 independent of N and H (6 P B W gamma eta_C). Then:

1. Streaming on is never worse: max(a, b) <= a + b, everything else equal (eta_C does not
   depend on streaming outside the fitted quality model).
2. For one N the best H is floor or ceil of t_sync / t (`_h_candidates`, with one more on
   each side against rounding): above t_sync / t the outer step is H t and
   H eta_H / (H t) = eta_H(H) / t does not increase (eta_H = max(0.4, (1 - alpha log10 H) / s)
   with alpha >= 0); below it the outer step is t_sync and H eta_H(H) does not decrease on
   [1, H_max] as long as d/dH [H (1 - alpha log10 H)] = 1 - alpha log10 H - alpha / ln 10 >= 0
   at H_max (checked), and 0.4 H increases; the max of two non-decreasing functions does not
   decrease.
3. best(N) = max_H C_local(N, H) does not decrease in N >= 2: for each H,
   C_local = k H eta_H(H) * min(N eta_R(N) / (H t), N eta_R(N) / t_sync(N)), and
   N eta_R(N) / f(N)^e (e = 0 or 1) has the logarithmic derivative
   (1/N) (1 - e c / (ln 2 f(N)) - d / (ln 2 eta_R(N))) with eta_R = 1 - d log2 N (linear v1,
   d = 0.005 min(2.4, P_B) / P_B; d = 0 without a penalty), which is >= 0 on [2, N_max] when
   1 - c / ln 2 - d / (ln 2 eta_R(N_max)) >= 0 (checked, with eta_R(N_max) > 0); a minimum
   and a maximum of non-decreasing functions do not decrease.

So the fewest nodes are 1 when one node (local training) reaches the target, else the least
N in [2, N_max] with best(N) >= target, found by narrowing a bracket with evenly spaced
vectorised probes (exact by 3). Among the candidates H at that N the plan is the fastest to
the target, ties (within `bnb.TIE_REL`) to the smaller H (`bnb.tie_key`), as `min_cost`.
tests/test_reference_search_fast.py checks it against brute force and the branch and bound.
Layer: search (it answers a reference search; it imports the cost model and the space only).
"""

from __future__ import annotations

import functools
import inspect
import math

import numpy as np

from planner.cost import envelope, physics, quality, quality_fit
from planner.cost.modes import throughput
from planner.cost.score import time_to_target, window_compute
from planner.cost.setting import PlanBatch, Setting
from planner.cost.straggler import straggler_coefficient
from planner.solvers.bnb import TIE_REL, distinct
from planner.space import DecisionSpace

PROBES = 512           # nodes probed per narrowing step (one vectorised evaluation); any count >= 2 is exact


def applies(s: Setting, space: DecisionSpace) -> bool:
    """Whether the closed form of the module docstring answers this question exactly."""
    a = s.assumptions
    if (space.modes != ("flat",) or len(space.precisions) != 1 or len(space.compression) != 1
            or s.is_moe or s.target_kind != "c_local" or space.placement is not None
            or a.replica_penalty not in ("linear_v1", "none") or quality_fit.fitted(a) or envelope.on(a)
            or a.search_zero_shards or a.dp_overlap or physics.fragments_on(a) or space.max_nodes < 1
            or space.min_nodes > 1 or s.max_nodes is not None or s.budget_usd is not None):
        return False
    alpha = float(quality.alpha(s.params, a))
    h_max = max(1, space.max_inner_steps)
    if alpha < 0 or 1.0 - alpha * math.log10(h_max) - alpha / math.log(10) < 0:
        return False
    n_max = space.max_nodes
    t = probe(s, space, np.array([1, max(2, n_max)]), np.array([1, 1]))
    if not np.all(t["state_bytes_per_node"] <= s.memory_bytes):
        return False                # the model does not fit one node: no flat plan (the general search says so)
    if n_max >= 2:
        if t["t_sync_base_s"][0] != t["t_sync_base_s"][1] or t["t_step_s"][0] != t["t_step_s"][1]:
            return False            # the exchange or the step depends on N: not this closed form
        c = straggler_coefficient(a)
        d = _linear_v1_slope(s)
        eta_r_end = 1.0 - d * math.log2(n_max)
        if eta_r_end <= 0 or 1.0 - c / math.log(2) - d / (math.log(2) * eta_r_end) < 0:
            return False
    return True


def _linear_v1_slope(s: Setting) -> float:
    """d of eta_R = 1 - d log2 K (0 without a replica penalty)."""
    a = s.assumptions
    if a.replica_penalty != "linear_v1":
        return 0.0
    p_b = s.params / 1e9
    return a.linear_v1_coefficient * min(a.linear_v1_cap_b, p_b) / p_b


def flat_batch(space: DecisionSpace, nodes, inner_steps, streaming: bool = True) -> PlanBatch:
    """Flat plans of the space's one precision and compression (also `fewest_nodes_chinchilla`'s):
    the batch `PlanBatch.of("flat", precision, nodes=..., inner_steps=..., compression=...,
    streaming=...)` builds, field for field the same dtype, shape and values, without its eleven
    conversions and its broadcast of every field (0.07-0.1 ms a call; a find_nodes_for_target answer
    builds five or six batches). Nodes, H and streaming are converted as `of` converts them and
    broadcast to their common shape (at least one-dimensional, as `of`'s np.atleast_1d); the fields
    `of` fills from its defaults (S, k, R, M, Ca, schedule, Z: read from its signature) come from
    `_fixed_fields`, read-only arrays shared by the batches of one shape (nothing writes into a
    batch). tests/test_reference_fewest_nodes_chinchilla.py checks the fields against `of` on random inputs."""
    nodes = np.asarray(nodes, dtype=np.int64)
    inner_steps = np.asarray(inner_steps, dtype=np.int64)
    streaming = np.asarray(streaming, dtype=bool)
    shape = np.broadcast_shapes(nodes.shape, inner_steps.shape, streaming.shape) or (1,)
    nodes, inner_steps, streaming = (x if x.shape == shape else np.broadcast_to(x, shape)
                                     for x in (nodes, inner_steps, streaming))
    return PlanBatch("flat", space.precisions[0], nodes, inner_steps,
                     np.full(shape, space.compression[0], dtype=float), streaming, **_fixed_fields(shape))


_OF_DEFAULTS = inspect.signature(PlanBatch.of).parameters
_FIXED_FIELDS = (("stages", np.int64), ("group_size", np.int64), ("regional_rounds", np.int64),
                 ("micro_batches", np.int64), ("activation_compression", float), ("schedule", np.int64),
                 ("zero_shards", np.int64))   # the fields `PlanBatch.of` fills from its defaults, with its dtypes


_FIELDS = (("nodes", np.int64), ("inner_steps", np.int64), ("compression", float), ("streaming", bool)) \
    + _FIXED_FIELDS     # every array field of `PlanBatch.of`, with its dtype


def one_plan(mode: str, precision: str, **given) -> PlanBatch:
    """The batch of one plan that `PlanBatch.of(mode, precision, **given)` builds from scalars (every field
    a one-element array of `of`'s dtype, `given` or `of`'s default: the same values, dtypes and shape)
    without its eleven conversions and broadcast (`sweep_search._answer`'s answer; about 0.04 ms of a
    sweep's first call). tests/test_reference_sweep_search.py checks it against `of`."""
    return PlanBatch(mode, precision, **{name: np.array([given.get(name, _OF_DEFAULTS[name].default)], dtype=dtype)
                                         for name, dtype in _FIELDS})


@functools.lru_cache(maxsize=64)
def _fixed_fields(shape: tuple[int, ...]) -> dict[str, np.ndarray]:
    """`PlanBatch.of`'s default-filled fields (`_FIXED_FIELDS`) at `shape`, read-only (`flat_batch`)."""
    out = {name: np.full(shape, _OF_DEFAULTS[name].default, dtype=dtype) for name, dtype in _FIXED_FIELDS}
    for x in out.values():
        x.flags.writeable = False
    return out


def probe(s: Setting, space: DecisionSpace, nodes, inner_steps) -> dict[str, np.ndarray]:
    """The mode's throughput figures of flat plans streaming on (`planner.cost.modes.throughput`)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return throughput(s, flat_batch(space, nodes, inner_steps))


def _h_candidates(s: Setting, space: DecisionSpace, nodes: np.ndarray) -> np.ndarray:
    """Per node count (rows), the inner steps around t_sync / t (columns), within [1, H_max]."""
    t = probe(s, space, nodes, np.ones_like(nodes))
    h = np.ceil(t["t_sync_s"] / t["t_step_s"])
    h = np.where(np.isfinite(h), h, space.max_inner_steps)
    around = h[:, None] + np.array([-1.0, 0.0, 1.0])
    return np.clip(around, 1, max(1, space.max_inner_steps)).astype(np.int64)


def _best(s: Setting, space: DecisionSpace, nodes: np.ndarray) -> np.ndarray:
    """max over H of C_local within the window, for each node count (>= 2)."""
    h = _h_candidates(s, space, nodes)
    n = np.repeat(nodes, h.shape[1])
    c = window_compute(s, flat_batch(space, n, h.ravel()), "c_local")["c_local"]
    return c.reshape(h.shape).max(axis=1)


def fewest_nodes(s: Setting, space: DecisionSpace) -> tuple[tuple[PlanBatch, float] | None, int]:
    """((one-plan batch, cost in USD) or None, plans scored): the fewest nodes whose C_local
    within the window reaches `s.target`, then the fastest plan at that count (module docstring)."""
    target = s.target
    one = flat_batch(space, [1], [1])
    scored = 1
    if float(window_compute(s, one, "c_local")["c_local"][0]) >= target:
        return (one, s.node_price_usd), scored
    lo, hi = 2, space.max_nodes
    if hi < lo:
        return None, scored
    while True:                    # after the first probes: best(hi) >= target, best(n) < target for n < lo
        probes = distinct(np.linspace(lo, hi, PROBES).astype(np.int64))
        reached = _best(s, space, probes) >= target
        scored += 3 * probes.size
        if not reached[-1]:        # probes[-1] = hi; false only at N_max (first probes): no plan reaches it
            return None, scored
        first = int(np.argmax(reached))
        hi = int(probes[first])
        lo = int(probes[first - 1]) + 1 if first > 0 else lo
        if lo >= hi:
            break
    return (_fastest_at(s, space, hi), hi * s.node_price_usd), scored + 3


def _fastest_at(s: Setting, space: DecisionSpace, nodes: int) -> PlanBatch:
    """The plan of least time to target among the H candidates at `nodes`, ties to the smaller H."""
    h = distinct(_h_candidates(s, space, np.array([nodes]))[0])
    batch = flat_batch(space, np.full(h.shape, nodes), h)
    with np.errstate(divide="ignore", invalid="ignore"):
        time_s = time_to_target(s, batch)["time_to_target_s"]
    best = float(time_s.min())
    i = int(np.flatnonzero(time_s <= best * (1 + TIE_REL))[0])
    return batch.take(slice(i, i + 1))
