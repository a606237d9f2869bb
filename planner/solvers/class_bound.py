"""A bound on `max_compute` per pp_group class, from its pipe row alone (issue 27 item 5).

Beyond the evidence envelope the space lists ~130,000 pp_group classes per precision on large
fleets (every micro-batch count of a blocking sync under `dp_overlap`: `DecisionSpace._window_front`),
and nearly all of them are cut by the first bound of the branch and bound. Scoring them for that (each
class's seed, then the two corners of its first box) was most of the search's work. The bound here
reads no plan of the class: only its pipe row's pipeline step t_pp and eta_A (scored once per row by
the listing, `planner.space.pipe_probe`) and the efficiencies at its most efficient corner, which are
computed from n, H and the class's own decisions without the cost model's throughput.

The bound. A pp_group plan of class k with n replicas (G = floor(N / S) = n groups of S nodes,
N = max(n S, min_nodes)), H inner steps and its class's compression and streaming runs
tokens_per_outer = B G H f (f: `straggler.throughput_fraction`) per outer step, and every outer
step lasts at least its compute block H t_pp (`modes._outer`: max(H t_pp, ...) with streaming, the
fragments' H t_pp + p stall, H t_pp + the exposed sync without; the stall and the exposed part
are >= 0). Every plan of the class shares t_pp, its row's (t_pp reads S, M, the schedule, Ca and the
precision, never n, H, the compression or streaming: `modes.throughput`). So its tokens within the
window are at most

    T_up = W' B f G(n_hi) / t_pp,   W' = the training window (`Setting.training_window_s`),

G non-decreasing in n. The first box of the branch and bound bounds the compute reached with
C <= g_up 6 P_act T (`bnb._compute_box`: chi and eta_R are at most 1), g_up = g at the box's most
efficient corner (n_lo, H = 1): g = eta_H eta_C eta_A times the fitted or linear replica factor,
each non-increasing in n and H (`planner.solvers.monotone`, where eta_H falls with H_eff; else no
bound is given here). So every plan of the class has

    1 / C >= 1 / (g_up 6 P_act T_up),

and T_up is at least the first box's own T_up (W' tokens_per_outer / outer_time at (n_lo, H_max)
times n_hi / n_lo, which is below W' B f n_hi / t_pp), so this bound is never above that box's bound
(up to MARGIN, which makes it smaller by far more than the rounding of either): a class it cuts
is one whose first box the branch and bound would have cut too, with the same incumbent.

g_up is computed by the cost model's own functions (`run.efficiency_without_replicas`,
`run.quality_terms`) on the class's corner plan with the throughput fields they read (synchronised,
replicas = G, h_eff = H = 1, eta_activation = the row's eta_A) given rather than scored: a pp_group
plan's are those (`modes.pp_group`). tests/test_class_bound.py checks that g_up equals the scored
corner's and that the bound is at most the first box's bound and every sampled plan's 1 / C.

The same bound per pipe row, before the row is expanded over the compressions and streaming
(`row_lower_bounds`, at most every class bound of the row): the branch and bound's max_compute ordering
lists only the rows whose bound is within the tie limit of the other groups' least seed
(`bnb.batches_most_promising_first`, `DecisionSpace.pp_group_rows`; tests/test_row_bound.py).

A pipeline over the WAN (`wan_lower_bound`, issue 27 item 5): one pipeline of S nodes, no sync, H = 1 in
effect (its outer step is H t_pp for H t_pp's tokens B H f: `modes.pipeline_wan`), so its tokens within the
window are T = W' B f / t_pp and C <= eta_A 6 P_act T (`run.quality_terms`: g = eta_A where nothing syncs;
C_quality = g min(C_thr, max(C'_1, 1e10)) <= g C_thr, C_local = g C_thr eta_R with eta_R <= 1:
`bnb._compute_box`). t_pp >= t_comp / S, t_comp = `modes.inner_step_compute_s` (what every pipeline plan's
step reads, `modes.pipeline_probe`): t_pp = slots (c + k (x + lat) f(S)) with c = t_comp (1 + r / 3) / (S M),
r in [0, 1] (`physics.recompute_share`), slots >= M in every schedule (`physics.pipeline_ticks`: M + S - 1; max(M + (S -
1) / v, S) with v > 0; M + max(0, ...) / 3; M + (S / 2 - 1)(1 - b / 2) with b = backward_share in (0, 1]; or
inf), k >= 1, x = (2 a / M) / bw >= 0, lat >= 0 and f(S) = 1 + c_s log2 S >= 1 (c_s >= 0): each checked on
the setting, else no bound. So every plan with S stages has 1 / C >= 1 / (max over Ca of eta_A(Ca, S) 6 P_act
W' B f S / t_comp), rounding (a few ulp in each of t_pp's, T's and C's products and quotients) far below
MARGIN. The branch and bound's ordering lists the group only where its least bound over S is within U0's tie
limit (`bnb.batches_most_promising_first`; tests/test_wan_bound.py).

Layer: search (reads the cost model and the space).
"""

from __future__ import annotations

import numpy as np

from planner.cost import modes, quality, run, tensor_parallel
from planner.cost.straggler import straggler_coefficient, throughput_fraction
from planner.cost.setting import PlanBatch, Setting
from planner.solvers import monotone
from planner.space import CHUNK, Classes, PipeRows

MARGIN = 1e-9      # relative: the bound is divided by 1 + MARGIN, far above the rounding of T_up and of 1 / C
COMPUTE_MEASURES = ("1/c_quality", "1/c_local")     # planner.solvers.bnb's max_compute measures
ROW_FLOOR = 1e-300  # a row bound at most this is none (`row_lower_bounds`): 1 / C's bound there is near overflow


def lower_bounds(s: Setting, c: Classes, measure) -> np.ndarray | None:
    """Per class, a lower bound of `measure` (1/C_quality or 1/C_local) on every plan of the class
    (module docstring); 0 where none is given (a class of one node). None where the bound does not
    apply: another measure, not pp_group classes with their rows' fields, or eta_H not falling with
    H_eff (or a fact the branch and bound needs failing: the search then says so itself)."""
    if not (isinstance(measure, str) and measure in COMPUTE_MEASURES) or c.rows.mode != "pp_group" \
            or c.step_s is None or c.members is not None:
        return None
    memo = c.__dict__.setdefault("_own_bounds", [None, None])    # the ordering, then the search, ask for them
    if memo[0] is not s:                                          # (1 / C_quality and 1 / C_local: the same bound)
        memo[:] = [s, _lower_bounds(s, c)]
    return memo[1]


def _lower_bounds(s: Setting, c: Classes) -> np.ndarray | None:
    """`lower_bounds` of pp_group classes with their rows' fields, computed."""
    mono = monotone.check(s)
    if mono.unsupported or not mono.eta_h_falls:
        return None
    return np.concatenate([_bounds_of(s, c, slice(k, k + CHUNK)) for k in range(0, c.size, CHUNK)])


def _bounds_of(s: Setting, c: Classes, at: slice) -> np.ndarray:
    """`lower_bounds` of the classes `at` (CHUNK at a time: the memory of the efficiencies' temporaries)."""
    rows = c.rows
    nodes_lo = c.nodes(at, c.n_lo[at])
    # the most efficient corner (n_lo, H = 1) of each class: its row's fields (views), n_lo's nodes
    corner = PlanBatch.of("pp_group", rows.precision, nodes=nodes_lo, compression=rows.compression[at],
                          streaming=rows.streaming[at], stages=rows.stages[at], micro_batches=rows.micro_batches[at],
                          activation_compression=rows.activation_compression[at], schedule=rows.schedule[at])
    return _bound(s, corner, c.nodes(at, c.n_hi[at]), c.step_s[at], c.eta_activation[at], _eta_c(s, corner))


def _bound(s: Setting, corner: PlanBatch, nodes_hi: np.ndarray, step_s: np.ndarray, eta_activation: np.ndarray,
           eta_c) -> np.ndarray:
    """The module docstring's bound 1 / (g_up 6 P_act T_up) (1 + MARGIN) of plans whose most efficient corner
    is `corner` (n_lo's nodes, H = 1), with nodes_hi nodes at most, pipeline step step_s, eta_A eta_activation
    and eta_C eta_c (per plan, or one value for all); 0 where G(n_lo) < 2 or the bound has no meaning (NaN)."""
    stages = np.asarray(corner.stages, dtype=float)
    groups_lo = np.floor(np.asarray(corner.nodes, dtype=float) / stages)
    groups_hi = np.floor(np.asarray(nodes_hi, dtype=float) / stages)
    ones = np.ones(groups_lo.shape)
    # H_eff = 1 at every corner: one value, broadcast by the efficiencies (eta_H and the replica factor's H_eff
    # term computed once, not per class); eta_C per (compression, streaming) of the group (`_eta_c`)
    t = {"synchronised": ones, "replicas": groups_lo, "h_eff": np.ones(1), "eta_activation": eta_activation}
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        g_up = run.quality_terms(s, corner, t, run.efficiency_without_replicas(s, corner, t, eta_c))[0]
        tokens_up = s.training_window_s * s.local_batch_tokens * throughput_fraction(s.assumptions) \
            * groups_hi / step_s
        upper = g_up * 6.0 * s.active_params * tokens_up * (1.0 + MARGIN)
        lower = np.nan_to_num(1.0 / upper, nan=0.0)           # no meaning (NaN): cuts nothing
    return np.where(groups_lo >= 2, lower, 0.0)


def rows_bounded(s: Setting, r: PipeRows, measure) -> bool:
    """Whether `row_lower_bounds` gives bounds (`lower_bounds` would give its classes theirs)."""
    if not (isinstance(measure, str) and measure in COMPUTE_MEASURES) or r.members is not None:
        return False
    mono = monotone.check(s)
    return not mono.unsupported and mono.eta_h_falls


def row_lower_bounds(s: Setting, r: PipeRows, compression: tuple[float, ...], measure) -> np.ndarray | None:
    """Per pipe row of the pp_group listing (`DecisionSpace.pp_group_rows`), a lower bound of `measure` on
    every plan of every class the row stands for: those of its (compression, streaming) pairs, `compression`
    being the compressions the listing expands a row over (those the envelope shows, or a superset), and
    streaming the values the row keeps (`PipeRows.keep`). None where `lower_bounds` gives none (another
    measure, rows with a member axis, eta_H not falling with H_eff).

    Every class of a row shares the row's corner nodes (n_lo, as `_finish` keeps it), its largest nodes (n_hi
    as `_finish` cuts it), t_pp and eta_A: the classes' bounds (`_bound`) differ only in eta_C, one value per
    (compression, streaming) pair (`run.compression_efficiency`: it reads nothing else), which enters
    1 / (g_up 6 P_act T_up (1 + MARGIN)), g_up = eta_H eta_C eta_A (times the replica factor), as one factor of
    products whose other factors are the same for every class of the row. Each floating-point product, the
    quotient and their overflow are monotone in it (rounding is monotone), all the same way for every eta_C
    of one sign; NaN arises at one eta_C finite and > 0 iff at every such one (from the other factors), and
    is then 0 for every class and the row alike, as is the bound where G(n_lo) < 2. So where every eta_C of
    the row's classes is finite and > 0, each class's bound lies between the row's bounds computed the same
    way (`_bound`) at the least and the largest of them, and the row's bound is the lesser of the two,
    divided by 1 + MARGIN once more where it is > 0: a class's eta_C and replica factor are computed in
    another batch than the row's (a last-bit difference at most, far below MARGIN), so that it never comes
    above a class bound of the row. Where it is not above ROW_FLOOR (or some eta_C of the row is not finite
    and > 0) it is -inf, no bound: above it, the products are below 1e300, so that no class's last-bit
    difference makes its product overflow where the row's does not. So row bound <= every class bound of the row <= every plan's measure (the module
    docstring), for every input; tests/test_row_bound.py checks both.
    """
    if not rows_bounded(s, r, measure):
        return None
    size = r.size
    if not compression or not size:
        return np.full(size, np.inf)
    values = np.asarray(compression, dtype=float)
    pairs = PlanBatch.of("pp_group", r.pipes.precision, nodes=1, compression=np.repeat(values, r.stream.size),
                         streaming=np.tile(r.stream, values.size))
    eta_c = run.compression_efficiency(s, pairs).reshape(values.size, r.stream.size)    # (compression, J)
    good = np.isfinite(eta_c) & (eta_c > 0)
    with np.errstate(invalid="ignore"):
        hi_j, lo_j = eta_c.max(axis=0), eta_c.min(axis=0)                       # per streaming value
    # per row, over the streaming values it keeps (column by column: a reduction along the rows' short second
    # axis costs more than the few elementwise passes): whether it has classes, the least and largest eta_C,
    # and whether some pair of it has no usable eta_C
    columns = list(r.keep.T)
    has = np.flatnonzero(np.logical_or.reduce(columns))    # the rows with classes (the others: nothing to bound)
    columns = [k[has] for k in columns]
    eta_hi = np.maximum.reduce([np.where(k, hi, -np.inf) for k, hi in zip(columns, hi_j)])
    eta_lo = np.minimum.reduce([np.where(k, lo, np.inf) for k, lo in zip(columns, lo_j)])
    unusable = np.logical_or.reduce([k & ~ok for k, ok in zip(columns, good.all(axis=0))])   # a pair without a usable eta_C
    pipes = r.pipes
    stages = pipes.stages[has]
    nodes_lo = np.maximum(r.n_lo[has] * stages, r.min_nodes)
    nodes_hi = np.maximum(r.n_hi_capped[has] * stages, r.min_nodes)
    corner = PlanBatch.of("pp_group", pipes.precision, nodes=nodes_lo, stages=stages,
                          micro_batches=pipes.micro_batches[has], activation_compression=pipes.activation_compression[has],
                          schedule=pipes.schedule[has])
    step, eta_a = r.probed["t_step_s"][has], r.probed["eta_activation"][has]
    at_hi = _bound(s, corner, nodes_hi, step, eta_a, np.where(unusable, 1.0, eta_hi))
    at_lo = _bound(s, corner, nodes_hi, step, eta_a, np.where(unusable, 1.0, eta_lo))
    lower = np.minimum(at_hi, at_lo)
    out = np.full(size, np.inf)
    out[has] = np.where(unusable | ~(lower > ROW_FLOOR), -np.inf, lower / (1.0 + MARGIN))
    return out


def _eta_c(s: Setting, b: PlanBatch) -> np.ndarray:
    """`run.compression_efficiency` of the plans `b`, computed once per distinct (compression, streaming) pair
    of the batch (a handful: the space's compressions, streaming on and off) and taken for each plan: it is
    elementwise in the compression and streaming (and reads the batch's one precision), so each plan's value
    is the one computed for its own pair."""
    values, at = np.unique(np.asarray(b.compression, dtype=float), return_inverse=True)
    streaming = np.asarray(b.streaming, dtype=bool)
    pairs = PlanBatch.of(b.mode, b.precision, nodes=1, compression=np.repeat(values, 2),
                         streaming=np.tile([False, True], values.size))
    return run.compression_efficiency(s, pairs)[2 * at.reshape(streaming.shape) + streaming]


def wan_lower_bound(s: Setting, precision: str, stages: np.ndarray, activation_compression, measure) -> float:
    """A lower bound of `measure` (1/C_quality or 1/C_local) on every pipeline over the WAN at `precision` with
    S in `stages` and Ca in `activation_compression` (any M, schedule and chunk count): the least over S of the
    module docstring's 1 / (max_Ca eta_A(Ca, S) 6 P_act W' B f S / t_comp), divided by 1 + MARGIN; +inf where
    there is no S; -inf (no bound) for another measure, where a tensor-parallel degree is chosen (t_comp then
    differs per degree), where a fact of the proof fails on this setting (WAN bandwidth > 0, latency >= 0,
    straggler coefficient >= 0, backward_share in (0, 1], pipeline_chunks >= 0, every Ca > 0), or where some
    S's bound is not finite and above ROW_FLOOR."""
    a = s.assumptions
    stages = np.asarray(stages, dtype=float)
    ca = np.asarray(activation_compression, dtype=float)
    if not (isinstance(measure, str) and measure in COMPUTE_MEASURES) \
            or tensor_parallel.choices(a, s.accelerators_per_node, s.is_moe):
        return -np.inf
    if stages.size == 0:
        return np.inf
    facts = (s.wan_up_bps > 0, s.wan_rtt_s >= 0, straggler_coefficient(a) >= 0, 0 < a.backward_share <= 1,
             a.pipeline_chunks >= 0, ca.size > 0 and bool((ca > 0).all()))
    if not all(facts):
        return -np.inf
    t_comp = float(np.max(modes.inner_step_compute_s(s, PlanBatch.of("pipeline_wan", precision, nodes=1))))
    eta_a = np.max(quality.activation_quality(ca[None, :], stages[:, None], a), axis=1)       # per S
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        tokens_up = s.training_window_s * s.local_batch_tokens * throughput_fraction(a) * stages / t_comp
        lower = 1.0 / (eta_a * 6.0 * s.active_params * tokens_up * (1.0 + MARGIN))
    if not (np.isfinite(eta_a).all() and (eta_a > 0).all() and np.isfinite(lower).all() and (lower > ROW_FLOOR).all()):
        return -np.inf
    return float(lower.min() / (1.0 + MARGIN))
