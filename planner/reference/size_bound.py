"""A proven upper bound on one model size's most C_quality, with the pipeline physics, for
`planner.reference.search`'s searches over model sizes (issue 27 item 3).

`search._reach_bounds`' reach leaves out the sync, the pipeline's bubble and link, eta_H,
eta_C, eta_A and the replica penalty, and is 1.3 to 20 times what a size achieves: it skips
few sizes. This bound keeps all of them, and is refined box by box only where it could still
reach the cut (`skip_bound`): the best plan found so far (sweep_model_sizes, max_compute), or
the target with N capped at the fewest nodes found so far (find_optimal_config_for_target,
min_cost: a size none of whose plans of at most that many nodes reaches the target can neither
beat nor tie the cheapest).

Rows. Each mode's plans fall in rows: flat (one row), hierarchical (one row per group size k)
and pp_group (one row per (S, Ca)). What a plan's tokens depend on besides its replicas and H
(and R) is its step time: flat and hierarchical t_comp (times the profile's recomputation
factor), pp_group GPipe's t_pp(S, M, Ca), none depending on N, H or R (`planner.cost.modes`).
A row's least step time is a lower bound over its M (`_rows`); its eta_A = qa(Ca)^(2 (S - 1))
is every plan's of the row (1 outside pipelines); a row whose state P beta / S alone exceeds
the node is left out (its plans break the memory cap).

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
1'. Hierarchical, N in [N1, N2] nodes in groups of k (G = floor(N / k) >= 2 groups, replicas
   K = N), H_eff = H sqrt(R) in [E1, E2]: tokens per global cycle B N H R tf, cycle
   max(R max(H t_step, t_reg(k)), t_glob(G)) or more (sums without streaming), so the tokens
   per second are at most B N tf / max(t_step, t_reg / H, t_glob(G) / (H R)); with H, R >= 1,
   H <= min(E2, H_max) and H R = H_eff sqrt(R) = H_eff^2 / H <= min(E2^2, E2 sqrt(R_max),
   H_max R_max), and t_glob(G) >= t_glob(floor(N1 / k)):
   T <= W' B tf N2 / max(t_min, t_reg / min(E2, H_max), t_glob(floor(N1 / k)) / min(E2^2,
   E2 sqrt(R_max), H_max R_max)); steps 2-4 hold with H_eff for H and N for K (eta_A = 1).
One node (flat, N = 1, no sync): C_quality = 6 P_act T <= W' F u (`search._most_within`).
H ranges over [1, H_max]; the boxes split [1, H_c] geometrically and keep [H_c, H_max] whole
(H_c = ceil(t_sync(K_max) / t_min), where more H adds no tokens), K over [2, K_max];
hierarchical: H_eff (real) over [1, H_max sqrt(R_max)], N over [2k, N_max].
A box whose bound is below the cut is dropped; the others are split in four (K and H halves,
geometric) for `ROUNDS` rounds (given up, no bound, beyond `MAX_BOXES` left). Every plan of the
space lies in some box of every round, so the largest bound left (or, with none left, the
largest dropped) bounds the size's optimum. Before the first boxes, a row whose whole box (all
of its x and H) is below the cut is left out (`_rows_reaching`: a box's bound is at least any
sub-box's, so none of its boxes would be kept).

Where a box's g_up 6 P_act T_up (the bound without chi, which only lowers it) is below the cut
already, that value stands for its bound (no Newton solve of C'_mu, `_bound`).
For min_cost over sizes (`planner.reference.search._fewest_first`) the same boxes give a lower
bound on the nodes of any plan reaching a target (`FewestNodes`): the least nodes of a box left;
and the rows with a box left (of at most a node cap) narrow the space searched (`FewestNodes.narrowed`).

The conditions the proof uses are `search._reach_bounds`' (gpipe, no overlap or fragments,
no MoE, no fitted quality, tables <= 1) and: one precision and one compression, modes flat,
hierarchical and pp_group only, no ZeRO-3 shards, one payload for every stage count; anything
else: no bound (None). tests/test_reference_size_bound.py checks the bound against random
plans of every mode, the branch and bound's optima and fewest nodes, and the searches' answers
against those without it.
Layer: search (planner.reference).
"""

from __future__ import annotations

from dataclasses import replace
from typing import NamedTuple

import numpy as np

from planner.cost import chinchilla, memory, physics, quality, run, timing
from planner.cost.setting import Setting
from planner.cost.straggler import eta_h_divisor, straggler_factor, throughput_fraction
from planner.space import DecisionSpace

ROUNDS = 8            # refinement rounds of the boxes left above the cut
FIRST_SPLIT = 6       # x and H pieces per row at the start
MAX_BOXES = 8_000     # boxes left above the cut beyond which refining is given up (the cut is within reach)


def applies(s: Setting, space: DecisionSpace, reach_bounds: bool) -> bool:
    """Whether the box bound's proof holds for this setting and space (module docstring);
    `reach_bounds`: `search._reach_bounds(s, space)`, whose conditions it shares."""
    return (reach_bounds and len(space.precisions) == 1 and len(space.compression) == 1
            and set(space.modes) <= {"flat", "hierarchical", "pp_group"} and not s.assumptions.search_zero_shards
            and not s.assumptions.per_stage_payload)


class _Rows(NamedTuple):
    """Per row: least step time (s), eta_A, x's range [x_lo, x_max] (replicas K, or nodes N when
    hierarchical), group size k (hierarchical, else 0), regional sync t_reg(k) (s, else 0), nodes
    per unit of x (S for pp_group: N >= K S; else 1), activation compression Ca (pp_group, else 0)."""

    step: np.ndarray
    eta_a: np.ndarray
    x_lo: np.ndarray
    x_max: np.ndarray
    k: np.ndarray
    t_reg: np.ndarray
    unit: np.ndarray
    ca: np.ndarray

    @property
    def hierarchical(self) -> np.ndarray:
        return self.k > 0


def _rows(s: Setting, space: DecisionSpace) -> _Rows | None:
    """The rows that may fit a node (module docstring), None if there is none.

    The least step time of a row is a lower bound, from the step formulas without what only
    lengthens a step: flat and hierarchical t_comp times the profile's recomputation factor
    (`modes._common`); pp_group min over M of GPipe's (M + S - 1)(c + (x + lat_pp) f(S)) with
    c = t_comp / (S M) and t_comp without recomputation (`physics.recompute_compute_factor` >= 1,
    and t_pp grows with t_comp), x = (2 a / M) / bw_pp (`timing.pipeline_parts_s`). A row is left
    out where the state P beta / S alone exceeds the node (a plan's state is that plus its
    schedule's copy and kept activations, both >= 0: `modes._pipeline_at`)."""
    a = s.assumptions
    precision = space.precisions[0]
    beta = a.bytes_per_param(precision)
    n_max = space.max_nodes
    t_comp = float(timing.compute_time_s(s.active_params, s.local_batch_tokens, s.peak_flops[precision],
                                         a.mfu_for(precision)))
    whole = t_comp * physics.flat_recompute_factor(a)
    fits_one = memory.state_bytes_per_node(s.params, beta) <= s.memory_bytes
    out = []
    if "flat" in space.modes and n_max >= 2 and fits_one:
        out.append(([whole], [1.0], [2.0], [n_max], [0.0], [0.0], [1.0], [0.0]))
    k = np.asarray([g for g in space.group_sizes if 2 * g <= n_max], dtype=float)
    if "hierarchical" in space.modes and k.size and fits_one:
        v = _payload_bits(s, space)
        t_reg = timing.regional_sync_base_s(v, s.regional_bps, s.regional_rtt_s) * straggler_factor(k, a)
        out.append((np.full(k.shape, whole), np.ones(k.shape), 2.0 * k, np.full(k.shape, n_max), k, t_reg,
                    np.ones(k.shape), np.zeros(k.shape)))
    top = min(space.max_stages, n_max // 2)
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
        zeros = np.zeros(S.shape)
        out.append((t_pp.min(axis=1), np.broadcast_to(quality.activation_quality(Ca, S, a), S.shape),
                    np.full(S.shape, 2.0), n_max // S, zeros, zeros, S, Ca))
    if not out:
        return None
    return _Rows(*(np.concatenate([np.asarray(r[j], dtype=float) for r in out]) for j in range(8)))


def _payload_bits(s: Setting, space: DecisionSpace) -> float:
    """v = P b / Cr, one payload for every plan of the space (no per-stage payload: `applies`)."""
    return physics.payload_bits(s.assumptions, s.params, space.precisions[0], float(space.compression[0]), 1, False)


def _sync_s(s: Setting, space: DecisionSpace, parties) -> np.ndarray:
    """t_sync(G) = sync_base(v, G) f(G) over the WAN (`modes._wan_sync`)."""
    a = s.assumptions
    base = physics.sync_base_s(a, _payload_bits(s, space), parties, s.wan_up_bps, s.wan_down_bps, s.wan_rtt_s)
    return base * straggler_factor(parties, a)


def _terms(s: Setting, space: DecisionSpace, rows: _Rows, boxes):
    """(T_up, g_up, mu_lo) per box (module docstring, steps 1-3; hierarchical: step 1')."""
    a = s.assumptions
    i, x1, x2, h1, h2 = boxes
    step, hier = rows.step[i], rows.hierarchical[i]
    k = np.where(hier, rows.k[i], 1.0)
    t_sync = _sync_s(s, space, np.where(hier, np.floor(x1 / k), x1))
    h_max, r_max = float(space.max_inner_steps), float(space.max_regional_rounds)
    hr_max = np.minimum(np.minimum(h2 * h2, h2 * np.sqrt(r_max)), h_max * r_max)
    denominator = np.where(hier, np.maximum(np.maximum(step, rows.t_reg[i] / np.minimum(h2, h_max)), t_sync / hr_max),
                           np.maximum(step, t_sync / h2))
    tokens = s.training_window_s * s.local_batch_tokens * throughput_fraction(a) * x2 / denominator
    g = quality.eta_sync_interval(h1, s.params, a, eta_h_divisor(a)) \
        * quality.compression_quality(float(space.compression[0]), a) * rows.eta_a[i]
    mu = np.ones_like(g)
    if a.replica_penalty == "chinchilla":
        mu = quality.replica_loss_multiplier(x1, s.params, h1, a)
    elif a.replica_penalty == "linear_v1":
        g = g * quality.linear_v1_replica_factor(x1, s.params, a)
    return tokens, g, mu


def _bound(s: Setting, space: DecisionSpace, rows: _Rows, boxes, cut: float | None = None) -> np.ndarray:
    """Q(T_up, g_up, mu_lo) per box (module docstring, steps 1-4; hierarchical: step 1').

    With a `cut`, boxes where g_up 6 P_act T_up is already below it get that value instead: also
    an upper bound (Q <= g C_thr, `run.quality_compute`: C_quality = g min(C_thr, ...)), below the
    cut, and without the Newton solve of C'_mu."""
    tokens, g, mu = _terms(s, space, rows, boxes)
    if cut is None:
        return run.quality_compute(s, tokens, g, mu, True)
    g, mu = np.broadcast_to(g, tokens.shape), np.broadcast_to(mu, tokens.shape)
    out = g * (6.0 * s.active_params * tokens)
    need = np.flatnonzero(~(out < cut))
    if need.size:
        out[need] = run.quality_compute(s, tokens[need], g[need], mu[need], True)
    return out


DECIDE_MARGIN = 1e-9     # relative, in C': boxes whose C'_mu is this close to the cut's get the Newton solve (`_reaching`)
DECIDE_EXCESS = 1e-4     # least excess loss L - E decided without it (its rounding, moved into C', stays below 1e-11)


def _reaching(s: Setting, space: DecisionSpace, rows: _Rows, boxes, cut: float) -> np.ndarray:
    """~(`_bound`(s, space, rows, boxes, cut) < cut): the same booleans (NaN: True), with the Newton
    solve of C'_mu only for the boxes whose C'_mu lies within DECIDE_MARGIN of the compute the cut
    needs (a `FewestNodes` round keeps or drops its boxes and reads no value; on the 14 shipped
    optimal-configuration cases all of their 1.04 million boxes are decided here, none within the margin:
    a pass of the cases solved 89 arrays of about 3,800 losses, six Newton steps each, before).

    Proof. Where g C_thr < cut both drop the box (`_bound` gives that value). Else Q = g min(C_thr,
    max(C', C_lo)) (`run.quality_compute`, C_lo = 1e10, C' = `chinchilla.equivalent_optimal_compute`
    of the loss mu L(P_act, T)), and rounding is monotone, so g min(x, y) = min(g x, g y) in floats:
    with g C_thr >= cut, Q >= cut exactly when g max(C', C_lo) >= cut. Let X = cut / g. C' falls as
    the loss rises (`sweep_search._c_eq_above`), and the compute-optimal model of compute Y
    (N* = sqrt(Y / (6 r)), D* = r N*) reaches the excess loss e(Y) = A N*^-alpha + B (r N*)^-beta,
    so C'(L) >= Y exactly when L - E <= e(Y). Hence, with d = DECIDE_MARGIN:
    - L - E <= e(X (1 + d)): C' >= X (1 + d), and the Newton solve's C' is within about 1e-13 of
      the root (its stopping rule, `chinchilla`), so g C' >= cut: kept, as `_bound`;
    - L - E >= e(X (1 - d)) and g C_lo < cut: C' <= X (1 - d) (1 + 1e-13), g max(C', C_lo) < cut:
      dropped, as `_bound`.
    The rounding of L - E (an ulp of L, at most 2e-15 for L < 10, relative 2e-11 at the least excess
    DECIDE_EXCESS) and of e(Y) moves C' by at most 2 / min(alpha, beta) (< 6) times as much in
    relative terms (d ln C' / d ln e = 2 / (d ln e / du), u = ln N*, d ln e / du between -beta and
    -alpha), far below d. Everything else (NaN or infinite values, g <= 0, an excess below
    DECIDE_EXCESS, or within the margin) gets `_bound`'s own values. tests/test_reference_size_bound.py
    checks the same booleans as `_bound` on random boxes near their cuts."""
    tokens, g, mu = _terms(s, space, rows, boxes)
    g, mu = np.broadcast_to(g, tokens.shape), np.broadcast_to(mu, tokens.shape)
    keep = ~(g * (6.0 * s.active_params * tokens) < cut)
    need = np.flatnonzero(keep)
    if not need.size:
        return keep
    a = s.assumptions
    t, g, mu = tokens[need], g[need], mu[need]
    e, a_coef, a_exp, b, b_exp = a.chinchilla_e, a.chinchilla_a, a.chinchilla_alpha, a.chinchilla_b, a.chinchilla_beta
    r = chinchilla.tokens_per_param(a)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        excess = chinchilla.chinchilla_loss(s.active_params, t, a) * mu - e
        u = 0.5 * np.log(cut / (6.0 * r * g))          # ln N* at X = cut / g
        term_a, term_b = a_coef * np.exp(-a_exp * u), b * r ** -b_exp * np.exp(-b_exp * u)
    # e(X (1 +- d)): N*^-alpha and N*^-beta scale by (1 +- d)^(-alpha / 2) and (1 +- d)^(-beta / 2)
    reached_in = term_a * (1.0 + DECIDE_MARGIN) ** (-0.5 * a_exp) + term_b * (1.0 + DECIDE_MARGIN) ** (-0.5 * b_exp)
    reached_out = term_a * (1.0 - DECIDE_MARGIN) ** (-0.5 * a_exp) + term_b * (1.0 - DECIDE_MARGIN) ** (-0.5 * b_exp)
    ok = np.isfinite(excess) & (excess >= DECIDE_EXCESS) & (g > 0) & np.isfinite(reached_out)
    sure_in = ok & (excess <= reached_in)
    sure_out = ok & (excess >= reached_out) & (g * a.chi_search_low_flop < cut)
    open_ = np.flatnonzero(~(sure_in | sure_out))
    keep[need[sure_out]] = False
    if open_.size:
        value = run.quality_compute(s, t[open_], g[open_], mu[open_], True)
        keep[need[open_]] = ~(value < cut)
    return keep


def _halves(lo: np.ndarray, hi: np.ndarray, whole: np.ndarray):
    """Intervals [lo, mid] and [mid + 1, hi] of integers (`whole`), the second empty (lo > hi) where
    lo = hi (`skip_bound` drops it); [lo, mid] and [mid, hi] of reals; mid the geometric middle."""
    mid = np.sqrt(lo * hi)
    mid = np.where(whole, np.clip(np.floor(mid), lo, np.maximum(lo, hi - 1)), mid)
    return (lo, mid), (np.where(whole, mid + 1, mid), hi)


def _rows_reaching(s: Setting, space: DecisionSpace, rows: _Rows, cut: float) -> tuple[_Rows | None, float]:
    """The rows whose whole box (x over [x_lo, x_max], H over [1, H_max]; hierarchical H_eff over
    [1, H_max sqrt(R_max)]) has a bound (`_bound`) of at least `cut` (NaN kept), None if there is
    none, and the largest bound of the rows left out (-inf if none).

    Every plan of a row lies in its whole box, and a box's bound is at least that of any box
    within it: a smaller x2 and H2 lower T_up, a larger x1 raises t_sync(x1) (lowering T_up),
    mu_lo and lowers the linear v1 factor, a larger H1 lowers eta_H and raises mu_lo (module
    docstring, steps 1-4). So a row left out has no box of any round whose bound reaches the
    cut: `skip_bound` and `FewestNodes` keep the same boxes without its first boxes ever being
    built (on the shipped sweeps 14-33 of about 250 rows are kept)."""
    i = np.arange(rows.step.size)
    h_max = float(space.max_inner_steps)
    top = np.where(rows.hierarchical, h_max * np.sqrt(float(space.max_regional_rounds)), h_max)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        upper = _bound(s, space, rows, (i, rows.x_lo, rows.x_max, np.ones(i.size), top), cut)
    low = upper < cut
    left_out = float(upper[low].max()) if low.any() else -np.inf
    if low.all():
        return None, left_out
    return _Rows(*(x[~low] for x in rows)), left_out


def _first_boxes(s: Setting, space: DecisionSpace, rows: _Rows):
    """FIRST_SPLIT x (FIRST_SPLIT + 1) boxes per row: x geometric over [x_lo, x_max]; H geometric
    over [1, H_c] and [H_c, H_max] whole (flat, pp_group), H_eff geometric over
    [1, H_max sqrt(R_max)] (hierarchical)."""
    hier = rows.hierarchical
    h_max = float(space.max_inner_steps)
    e_max = h_max * np.sqrt(float(space.max_regional_rounds))
    h_c = np.clip(np.ceil(_sync_s(s, space, rows.x_max) / rows.step), 1.0, h_max)
    top = np.where(hier, e_max, h_c)
    f = np.linspace(0.0, 1.0, FIRST_SPLIT + 1)
    x_edges = np.floor(np.exp(np.log(rows.x_lo)[:, None] + np.outer(np.log(rows.x_max / rows.x_lo), f)))
    h_edges = np.exp(np.outer(np.log(top), f))
    h_edges = np.where(hier[:, None], h_edges, np.floor(h_edges))
    x_edges[:, 0], x_edges[:, -1], h_edges[:, 0], h_edges[:, -1] = rows.x_lo, rows.x_max, 1.0, top
    i = np.arange(rows.step.size)
    parts = []
    for p in range(FIRST_SPLIT):
        for j in range(FIRST_SPLIT + 1):
            if j < FIRST_SPLIT:
                h1, h2 = h_edges[:, j], h_edges[:, j + 1]
            else:       # [H_c, H_max] (hierarchical: [e_max, e_max], within the boxes before)
                h1, h2 = top, np.where(hier, e_max, h_max)
            parts.append((i, x_edges[:, p], x_edges[:, p + 1], h1, h2))
    return tuple(np.concatenate([q[x] for q in parts]) for x in range(5))


def skip_bound(s: Setting, space: DecisionSpace, cut: float) -> float | None:
    """A proven bound below `cut` on the most C_quality of any plan of the space (the size can
    neither beat nor tie a plan of `cut` or more, nor reach a target of `cut`), else None (module
    docstring).

    The caller checks `applies` first. One node (6 P_act T <= W' F u) counts as well."""
    precision = space.precisions[0]
    one = s.training_window_s * s.peak_flops[precision] * s.assumptions.mfu_for(precision)
    if one >= cut:
        return None
    rows = _rows(s, space)
    if rows is None:
        return one
    rows, left_out = _rows_reaching(s, space, rows, cut)
    if rows is None:
        return max(one, left_out)
    boxes = _first_boxes(s, space, rows)
    dropped = max(one, left_out)
    for round_ in range(ROUNDS + 1):
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            upper = _bound(s, space, rows, boxes, cut)
        upper = np.where(np.isnan(upper), np.inf, upper)
        low = upper < cut
        if low.any():
            dropped = max(dropped, float(upper[low].max()))
        keep = np.flatnonzero(~low)
        if keep.size == 0:
            return dropped
        if round_ == ROUNDS or keep.size > MAX_BOXES:
            return None
        i, x1, x2, h1, h2 = (x[keep] for x in boxes)
        whole_h = ~rows.hierarchical[i]
        xs, hs = _halves(x1, x2, np.ones(i.shape, bool)), _halves(h1, h2, whole_h)
        boxes = tuple(np.concatenate(z) for z in zip(*[(i, xa, xb, ha, hb) for xa, xb in xs for ha, hb in hs]))
        real = np.flatnonzero((boxes[1] <= boxes[2]) & (boxes[3] <= boxes[4]))
        boxes = tuple(x[real] for x in boxes)
    return None



FEWEST_ROUNDS = 16     # refinement rounds of `FewestNodes`
NEAR_FEWEST = 1.5      # boxes whose least nodes are within this factor of the bound so far are split


class FewestNodes:
    """A proven lower bound `least` on the nodes of any plan of the space whose C_quality within
    the window reaches `cut` (inf: none does), refined round by round (`refine`), for ordering and
    skipping the model sizes of a min_cost search (`planner.reference.search`).

    Every plan of N >= 2 nodes lies in a box of every round (module docstring) and N >= x1 unit
    there (flat and hierarchical N = x, pp_group N >= K S); a box whose bound (steps 1-4) is below
    `cut` holds no plan reaching it. So the least x1 unit over the boxes left bounds the nodes of
    every plan reaching the cut; one node counts when W' F u reaches it (N = 1). Each round splits
    the boxes of the fewest nodes (within NEAR_FEWEST of the bound so far) and keeps the others
    whole (their bound is unchanged); `done` after FEWEST_ROUNDS rounds or beyond MAX_BOXES boxes.
    The caller checks `applies` first."""

    def __init__(self, s: Setting, space: DecisionSpace, cut: float):
        self.s, self.space, self.cut, self.rounds = s, space, cut, 0
        precision = space.precisions[0]
        one = s.training_window_s * s.peak_flops[precision] * s.assumptions.mfu_for(precision)
        self.rows = None if one >= cut else _rows(s, space)
        if self.rows is None:      # one node reaches the cut (N = 1), or no row fits a node (no plan of N >= 2)
            self.least, self.boxes, self.done = (1.0 if one >= cut else float("inf")), None, True
            return
        self.boxes = self._kept(_first_boxes(s, space, self.rows))
        self._update()

    def _kept(self, boxes):
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            keep = _reaching(self.s, self.space, self.rows, boxes, self.cut)   # ~(_bound < cut), NaN kept
        return tuple(x[keep] for x in boxes)

    def _update(self) -> None:
        if self.boxes[0].size == 0:
            self.least, self.done = float("inf"), True
            return
        self.nodes = self.boxes[1] * self.rows.unit[self.boxes[0]]
        self.least = float(self.nodes.min())
        self.done = self.rounds >= FEWEST_ROUNDS or self.boxes[0].size > MAX_BOXES

    def narrowed(self, max_nodes: float = np.inf) -> DecisionSpace:
        """The space narrowed to the rows with a box left of at most `max_nodes` least nodes (x1
        unit): their modes, group sizes, activation compressions and stage counts up to the largest
        (a superset of those rows' plans), for a search of plans of at most `max_nodes` nodes.

        Every plan of N >= 2 nodes reaching the cut lies in a box left (class docstring), whose
        least nodes x1 unit are at most N, so in one of these rows; one node (flat, N = 1) reaches
        it only where W' F u does, and then there are no boxes and the space is returned whole.
        With no such box, no plan of 2 to `max_nodes` nodes reaches the cut either: the space is
        returned whole (a search of it finds none)."""
        if self.boxes is None:
            return self.space
        r = self.rows
        i = np.flatnonzero(np.bincount(self.boxes[0][self.nodes <= max_nodes], minlength=r.step.size))   # as np.unique
        if i.size == 0:
            return self.space
        hier, pp = r.k[i] > 0, (r.k[i] == 0) & (r.unit[i] > 1)
        modes = tuple(m for m, on in (("flat", (~hier & ~pp).any()), ("hierarchical", hier.any()),
                                      ("pp_group", pp.any())) if on)
        space = self.space
        changes = {"modes": modes}
        if hier.any():
            kept = set(r.k[i][hier].astype(int).tolist())
            changes["group_sizes"] = tuple(k for k in space.group_sizes if k in kept)
        if pp.any():
            kept = set(r.ca[i][pp].tolist())
            changes["activation_compression"] = tuple(c for c in space.activation_compression if float(c) in kept)
            changes["max_stages"] = int(r.unit[i][pp].max())
        return replace(space, **changes)

    def refine(self) -> None:
        """One round: the boxes of the fewest nodes split in four (x and H halves), those below the cut dropped."""
        if self.done:
            return
        split = self.nodes <= self.least * NEAR_FEWEST
        held = tuple(x[~split] for x in self.boxes)
        i, x1, x2, h1, h2 = (x[split] for x in self.boxes)
        xs, hs = _halves(x1, x2, np.ones(i.shape, bool)), _halves(h1, h2, ~self.rows.hierarchical[i])
        boxes = tuple(np.concatenate(z) for z in zip(*[(i, xa, xb, ha, hb) for xa, xb in xs for ha, hb in hs]))
        real = (boxes[1] <= boxes[2]) & (boxes[3] <= boxes[4])
        children = self._kept(tuple(x[real] for x in boxes))
        self.boxes = tuple(np.concatenate(z) for z in zip(held, children))
        self.rounds += 1
        self._update()
