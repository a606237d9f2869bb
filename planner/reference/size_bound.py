"""A proven upper bound on one model size's most C_quality, with the pipeline physics, for
`planner.reference.search`'s sweep of model sizes (issue 27 item 3).

`search._reach_bounds`' reach leaves out the sync, the pipeline's bubble and link, eta_H,
eta_C, eta_A and the replica penalty, and is 1.3 to 20 times what a size achieves: it skips
few sizes. This bound keeps all of them, and is refined box by box only where it could still
reach the best plan found so far (`skip_bound`).

Rows. Each mode's plans fall in rows: flat (one row) and pp_group, one row per (S, Ca). What
a plan's tokens depend on besides its replicas K and H is its step time: flat t_comp (times the
profile's recomputation factor), pp_group GPipe's t_pp(S, M, Ca), neither depending on N or H
(`planner.cost.modes`). A row's least step time is a lower bound over its M (`_rows`); its
eta_A = qa(Ca)^(2 (S - 1)) is every plan's of the row; a row whose state P beta / S alone
exceeds the node is left out (its plans break the memory cap).

Box bound. For a plan of a row with K in [K1, K2] replicas (flat K = N, pp_group K = floor(N / S),
N <= N_max) and H in [H1, H2] (docs/cost_model.md sections 4-7, planner/cost/modes.py and run.py):
1. Tokens T = W' B K H tf / outer with outer = max(H t_step, t_sync(K)) under streaming and
   H t_step + t_sync(K) without (no overlap or fragment terms: checked), t_step >= the row's
   least step time, t_sync(K) = sync_base(v, K) f(K) non-decreasing in K
   (`physics.sync_base_s`, `straggler_factor`), so
   T <= T_up = W' B tf K2 H2 / max(H2 t_min, t_sync(K1)).
2. g = eta_H(H) eta_C eta_A (times the linear v1 factor, which falls with K) <= g_up =
   eta_H(H1) eta_C eta_A (times the factor at K1): eta_H falls with H (alpha >= 0), eta_C is
   the space's one compression's.
3. mu = K^beta(P, H) >= mu_lo = K1^beta(P, H1) (beta0 >= 0, beta rises with ln H).
4. C_quality = Q(T, g, mu) (`run.quality_compute`, N >= 2) grows with T and g and falls with
   mu, so C_quality <= Q(T_up, g_up, mu_lo).
One node (flat, N = 1, no sync): C_quality = 6 P_act T <= W' F u (`search._most_within`).
H ranges over [1, H_max]; the boxes split [1, H_c] geometrically and keep [H_c, H_max] whole
(H_c = ceil(t_sync(K_max) / t_min), where more H adds no tokens), K over [2, K_max].
A box whose bound is below the cut is dropped; the others are split in four (K and H halves,
geometric) for `ROUNDS` rounds. Every plan of the space lies in some box of every round, so the
largest bound left (or, with none left, the largest dropped) bounds the size's optimum.

The conditions the proof uses are `search._reach_bounds`' (gpipe, no overlap or fragments,
no MoE, no fitted quality, tables <= 1) and: one precision and one compression, modes flat and
pp_group only, no ZeRO-3 shards; anything else: no bound (None).
tests/test_reference_size_bound.py checks the bound against random plans of every row.
Layer: search (planner.reference).
"""

from __future__ import annotations

import numpy as np

from planner.cost import memory, physics, quality, run, timing
from planner.cost.setting import Setting
from planner.cost.straggler import eta_h_divisor, straggler_factor, throughput_fraction
from planner.space import DecisionSpace

ROUNDS = 8            # refinement rounds of the boxes left above the cut
FIRST_SPLIT = 6       # K and H pieces per row at the start


def applies(s: Setting, space: DecisionSpace, reach_bounds: bool) -> bool:
    """Whether the box bound's proof holds for this setting and space (module docstring);
    `reach_bounds`: `search._reach_bounds(s, space)`, whose conditions it shares."""
    return (reach_bounds and len(space.precisions) == 1 and len(space.compression) == 1
            and set(space.modes) <= {"flat", "pp_group"} and not s.assumptions.search_zero_shards
            and not s.assumptions.per_stage_payload)


def _rows(s: Setting, space: DecisionSpace):
    """(least step time s, eta_A, largest K, stages) per row that may fit a node (module docstring).

    The least step time of a row is a lower bound, from the step formulas without what only
    lengthens a step: flat t_comp times the profile's recomputation factor (`modes.flat`);
    pp_group min over M of GPipe's (M + S - 1)(c + (x + lat_pp) f(S)) with c = t_comp / (S M) and
    t_comp without recomputation (`physics.recompute_compute_factor` >= 1, and t_pp grows with
    t_comp), x = (2 a / M) / bw_pp (`timing.pipeline_parts_s`). A row is left out where the state
    P beta / S alone exceeds the node (a plan's state is that plus its schedule's copy and kept
    activations, both >= 0: `modes._pipeline_at`)."""
    a = s.assumptions
    precision = space.precisions[0]
    beta = a.bytes_per_param(precision)
    t_comp = float(timing.compute_time_s(s.active_params, s.local_batch_tokens, s.peak_flops[precision],
                                         a.mfu_for(precision)))
    out = []
    if "flat" in space.modes and space.max_nodes >= 2 and memory.state_bytes_per_node(s.params, beta) <= s.memory_bytes:
        out.append((np.array([t_comp * physics.flat_recompute_factor(a)]), np.ones(1), np.array([space.max_nodes]),
                    np.ones(1)))
    top = min(space.max_stages, space.max_nodes // 2)
    if "pp_group" in space.modes and top >= 2:
        stages = np.arange(2, top + 1, dtype=float)
        stages = stages[memory.state_bytes_per_node(s.params, beta, stages) <= s.memory_bytes]
        ca = np.asarray(space.activation_compression, dtype=float)
        S, Ca = (x.ravel() for x in np.meshgrid(stages, ca, indexing="ij"))
        M = np.arange(1, space.max_micro_batches + 1, dtype=float)[None, :]
        hidden = s.hidden_size if s.hidden_size is not None else timing.hidden_size(s.params, a.hidden_size_coefficient)
        act = timing.activation_bits(s.local_batch_tokens, hidden, a.activation_bytes(precision), Ca)
        t_pp, *_ = timing.pipeline_parts_s(t_comp, S[:, None], M, act[:, None], s.pipeline_bps, s.pipeline_rtt_s,
                                           straggler_factor(S, a)[:, None])
        eta_a = np.broadcast_to(quality.activation_quality(Ca, S, a), S.shape)
        out.append((t_pp.min(axis=1), eta_a, space.max_nodes // S, S))
    if not out:
        return None
    return tuple(np.concatenate([np.asarray(r[j], float) for r in out]) for j in range(4))


def _sync_s(s: Setting, space: DecisionSpace, replicas) -> np.ndarray:
    """t_sync(K) = sync_base(v, K) f(K) over the WAN (`modes._wan_sync`)."""
    a = s.assumptions
    v = physics.payload_bits(a, s.params, space.precisions[0], float(space.compression[0]), 1, False)
    base = physics.sync_base_s(a, v, replicas, s.wan_up_bps, s.wan_down_bps, s.wan_rtt_s)
    return base * straggler_factor(replicas, a)


def _bound(s: Setting, space: DecisionSpace, boxes) -> np.ndarray:
    """Q(T_up, g_up, mu_lo) per box (module docstring, steps 1-4)."""
    a = s.assumptions
    step, eta_a, k1, k2, h1, h2 = boxes
    t_sync = _sync_s(s, space, k1)
    tokens = s.training_window_s * s.local_batch_tokens * throughput_fraction(a) * k2 * h2 \
        / np.maximum(h2 * step, t_sync)
    g = quality.eta_sync_interval(h1, s.params, a, eta_h_divisor(a)) \
        * quality.compression_quality(float(space.compression[0]), a) * eta_a
    mu = np.ones_like(g)
    if a.replica_penalty == "chinchilla":
        mu = quality.replica_loss_multiplier(k1, s.params, h1, a)
    elif a.replica_penalty == "linear_v1":
        g = g * quality.linear_v1_replica_factor(k1, s.params, a)
    return run.quality_compute(s, tokens, g, mu, True)


def _halves(lo: np.ndarray, hi: np.ndarray):
    """Integer intervals [lo, mid], [mid + 1, hi] at the geometric middle (the second empty, lo > hi,
    where lo = hi: `skip_bound` drops it)."""
    mid = np.clip(np.floor(np.sqrt(lo * hi)), lo, np.maximum(lo, hi - 1))
    return (lo, mid), (mid + 1, hi)


def _first_boxes(s: Setting, space: DecisionSpace, rows):
    step, eta_a, k_max, _ = rows
    h_max = float(space.max_inner_steps)
    h_c = np.clip(np.ceil(_sync_s(s, space, k_max) / step), 1.0, h_max)
    f = np.linspace(0.0, 1.0, FIRST_SPLIT + 1)
    k_edges = np.floor(np.exp(np.log(2.0) + np.outer(np.log(k_max / 2.0), f)))        # rows x pieces + 1
    h_edges = np.floor(np.exp(np.outer(np.log(h_c), f)))
    k_edges[:, -1], h_edges[:, -1] = k_max, h_c
    parts = []
    for i in range(FIRST_SPLIT):
        for j in range(FIRST_SPLIT + 1):
            if j < FIRST_SPLIT:
                h1, h2 = h_edges[:, j], h_edges[:, j + 1]
            else:
                h1, h2 = h_c, np.full(h_c.shape, h_max)
            parts.append((step, eta_a, k_edges[:, i], k_edges[:, i + 1], h1, h2))
    return tuple(np.concatenate([p[x] for p in parts]).astype(float) for x in range(6))


def skip_bound(s: Setting, space: DecisionSpace, cut: float) -> float | None:
    """A proven bound below `cut` on the most C_quality of any plan of the space (the size can
    neither beat nor tie a plan of `cut` or more), else None (module docstring).

    The caller checks `applies` first. One node (6 P_act T <= W' F u) counts as well."""
    precision = space.precisions[0]
    one = s.training_window_s * s.peak_flops[precision] * s.assumptions.mfu_for(precision)
    if one >= cut:
        return None
    rows = _rows(s, space)
    if rows is None:
        return one
    boxes = _first_boxes(s, space, rows)
    dropped = one
    for round_ in range(ROUNDS + 1):
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            upper = _bound(s, space, boxes)
        upper = np.where(np.isnan(upper), np.inf, upper)
        low = upper < cut
        if low.any():
            dropped = max(dropped, float(upper[low].max()))
        keep = np.flatnonzero(~low)
        if keep.size == 0:
            return dropped
        if round_ == ROUNDS:
            return None
        step, eta_a, k1, k2, h1, h2 = (x[keep] for x in boxes)
        ks, hs = _halves(k1, k2), _halves(h1, h2)
        boxes = tuple(np.concatenate(z) for z in zip(*[(step, eta_a, ka, kb, ha, hb)
                                                       for ka, kb in ks for ha, hb in hs]))
        real = np.flatnonzero((boxes[2] <= boxes[3]) & (boxes[4] <= boxes[5]))
        boxes = tuple(x[real] for x in boxes)
    return None
