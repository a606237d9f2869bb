"""The reference's `find_nodes_for_target` under the Chinchilla replica penalty, exact without
the branch and bound.

The question (`planner.reference.search`): the fewest nodes N <= N_max of a flat DiLoCo plan of
one dense model (P, precision and compression fixed) whose C_local within the window reaches the
target, eta_R scored at the run's own tokens; dtplan chooses H in 1..H_max and streaming.
`fewest_nodes` answers it by a search over intervals of N whose bounds are proven below, each
step one vectorised evaluation of the cost model's own functions.

Where `applies` holds (the conditions of `planner.reference.fewest_nodes.applies` with the
Chinchilla penalty instead of the linear one, and the check of Lemma T), for N >= 2
(docs/cost_model.md sections 4-7, `planner.cost.run`):

    C_local(N, H, streaming) = g(H) * Q(T, m),   Q(T, m) = C min(C, X_m) / min(C, X_1),
    C = 6 P T,  X_m = max(C'(m L(T)), 1e10),  m = N ** b(H),  b(H) = beta0(P) ln H / ln 30,
    T = W gamma B N H tf / outer,  outer = max(H t, t_sync(N)) (on) or H t + t_sync(N) (off),
    t_sync(N) = base * f(N),  f(N) = 1 + c log2 N,  g(H) = eta_H(H) eta_C,

with L(T) = E + A P^-alpha + B T^-beta (Chinchilla) and C'(y) the compute whose compute-optimal
model reaches loss y (`planner.cost.chinchilla.equivalent_optimal_compute`).

Lemma T (Q does not fall as T grows, for every m in [1, m_max], on T >= T_min). T_min is the
fewest tokens of any plan of N >= 2 nodes, T(N = 2, H = 1, streaming off) (T rises with N, 3, and
with H); m_max = N_max ** b(H_c(N_max)), the largest m of the plans 1-3 compare. Where X_1 >= C,
Q = min(C, X_m), and C and X_m rise with T. Where X_1 < C, Q = C X_m / X_1: if X_1 = 1e10 then
X_m = 1e10 (C'_m <= C'_1) and Q = C rises; the check m_max L(T_min) < L*(1e10) (the loss of the
compute-optimal model of 1e10 FLOP) keeps X_m off the floor; else d ln Q / d ln T =
1 + beta B T^-beta (m |phi(m L)| - |phi(L)|), phi = d ln C' / dy (dL / d ln T = -beta B T^-beta).
On the compute-optimal curve y - E = a + b' (a = A e^(-alpha u), b' = B r^-beta e^(-beta u),
C' = 6 r e^(2u)), so |phi(y)| = 2 / (alpha a + beta b'), between 2 / (alpha_hi (y - E)) and
2 / (alpha_lo (y - E)) (alpha_lo, alpha_hi the smaller and larger of alpha and beta). Hence
d ln Q / d ln T >= 1 - 2 beta kappa max(0, 1 / alpha_lo - m (L - E) / (alpha_hi (m L - E))),
kappa = B T^-beta / (L - E), which falls as T grows; the bracket rises with m and falls with L,
L > E + A P^-alpha = E + A_P. So the check 2 beta kappa(T_min) max(0, 1 / alpha_lo - m_max A_P /
(alpha_hi (m_max (E + A_P) - E))) <= 1 gives Lemma T (Q is continuous, so non-decreasing piece
by piece is non-decreasing).

Then:
1. H above H_c(N) = ceil(t_sync(N) / t) is never better, streaming on: the outer step is H t,
   T = W gamma B N tf / t does not depend on H, while eta_H does not rise (alpha >= 0), m does
   not fall (b rises with H) and Q does not rise with m (X_m falls as the loss it must reach
   rises). Ties to the smaller H.
2. Streaming off is never better: at H <= H_c(N), (N, H, on) has more tokens than (N, H, off)
   and everything else equal (Lemma T); at H > H_c(N), (N, H, off) has fewer tokens than
   (N, H_c(N), on), a larger m and a smaller eta_H (Lemma T at m(N, H_c(N)), then as 1).
   Ties to streaming on and the smaller H (`bnb.tie_key`).
3. T_on(N, H) = W gamma B tf min(N / t, N H / (base f(N))) does not fall as N grows (N / f(N)
   does not fall on N >= 2 when 1 + c (1 - 1 / ln 2) >= 0, checked), and T_off neither; m rises
   with N. So for N in [lo, hi] and one H, C_local(N, H, on) <= g(H) Q(T_on(hi, H), m(lo, H))
   (Lemma T and the fall of Q in m), which is C_local itself when lo = hi.

So the fewest nodes are 1 when one node (local training) reaches the target, else the least N in
[2, N_max] with max over H <= H_c(N) of C_local(N, H, on) >= target: an interval of N is dropped
when its bound (3, the most over H in 1..H_c(N_max)) is below the target, the leftmost interval
left is split in `PIECES` geometrically spaced pieces (bounded at once, one vectorised
evaluation), down to single node counts, whose values are exact. At the count found the plan is
the one of most C_local among H <= H_c(N) streaming on, ties (`bnb.TIE_REL`) to the smaller H, as
`planner.solvers.objective_search.fewest_nodes_in_window` (1 and 2: every plan outside that set
is beaten or tied by one inside it that comes first in `bnb.tie_key` order).
Where H_c(N_max) exceeds `H_GRID_MAX` or a check fails, `applies` answers False (the general
search then runs).
tests/test_reference_fewest_nodes_chinchilla.py checks it against brute force and the branch and
bound, and the lemma on a grid of T and m.
Layer: search (it answers a reference search; it imports the cost model, the space and `bnb.TIE_REL`).
"""

from __future__ import annotations

import functools
import math

import numpy as np

from planner.cost import chinchilla, envelope, physics, quality, quality_fit, run
from planner.cost.modes import throughput
from planner.cost.score import window_compute
from planner.cost.setting import PlanBatch, Setting
from planner.cost.straggler import straggler_coefficient
from planner.reference import sweep_search
from planner.reference.fewest_nodes import distinct, flat_batch
from planner.solvers.bnb import TIE_REL
from planner.space import DecisionSpace

PIECES = 64            # pieces an interval of N is split into per step (one vectorised evaluation); any count >= 2 is exact
H_GRID_MAX = 256       # most inner-step counts H_c(N_max) searched here (beyond: the general search)
PRUNE_MARGIN = 1e-9    # relative: an interval is dropped only when its bound is this far below the target (rounding)


def applies(s: Setting, space: DecisionSpace) -> bool:
    """Whether the proof of the module docstring holds for this question (else the general search)."""
    return _inner_steps_searched(s, space) is not None


def answer(s: Setting, space: DecisionSpace) -> tuple[tuple[PlanBatch, float] | None, int] | None:
    """`fewest_nodes` where the proof applies (`applies`), else None."""
    searched = _inner_steps_searched(s, space)
    return None if searched is None else fewest_nodes(s, space, *searched)


def _inner_steps_searched(s: Setting, space: DecisionSpace) -> tuple[int, dict[str, np.ndarray]] | None:
    """(H_c(N_max) (`_h_c`), the throughput figures of the one-node plan N = 1, H = 1, streaming on) where
    the proof holds, else None: the conditions of the module docstring, from one evaluation of three plans
    (N = 1 and N_max at H = 1, and the plan of fewest tokens, N = 2, H = 1, streaming off, for Lemma T).
    The one-node plan's figures are its row of that evaluation, which `fewest_nodes` scores first: every
    figure of `modes.throughput` is worked plan by plan (elementwise), so the row is, bit for bit, what
    the plan alone gives, and it is not evaluated a second time (tests/test_reference_fewest_nodes_chinchilla.py)."""
    a = s.assumptions
    if (space.modes != ("flat",) or len(space.precisions) != 1 or len(space.compression) != 1
            or s.is_moe or s.target_kind != "c_local" or space.placement is not None
            or a.replica_penalty != "chinchilla" or quality_fit.fitted(a) or envelope.on(a)
            or a.search_zero_shards or a.dp_overlap or physics.fragments_on(a) or space.max_nodes < 1
            or space.min_nodes > 1 or s.max_nodes is not None or s.budget_usd is not None
            or float(quality.alpha(s.params, a)) < 0 or a.replica_beta_coefficient < 0):
        return None
    c = straggler_coefficient(a)
    if c < 0 or 1.0 + c * (1.0 - 1.0 / math.log(2)) < 0:
        return None
    n_max = space.max_nodes
    b = flat_batch(space, np.array([1, max(2, n_max), 2]), np.array([1, 1, 1]), np.array([True, True, False]))
    with np.errstate(divide="ignore", invalid="ignore"):
        t = throughput(s, b)
    if not np.all(t["state_bytes_per_node"] <= s.memory_bytes):
        return None                   # the model does not fit one node: no flat plan (the general search says so)
    if t["t_sync_base_s"][0] != t["t_sync_base_s"][1] or t["t_step_s"][0] != t["t_step_s"][1]:
        return None                   # the exchange or the step depends on N: not this proof
    h_top = int(_h_c(space, t)[1])
    one = {name: x[:1] if np.ndim(x) else x for name, x in t.items()}
    if n_max < 2:
        return h_top, one
    tokens_min = float(s.training_window_s * (t["tokens_per_outer"] / t["outer_time_s"])[2])
    if h_top > H_GRID_MAX or not _lemma_t(s, n_max, h_top, tokens_min):
        return None
    return h_top, one


def _lemma_t(s: Setting, n_max: int, h_top: int, tokens_min: float) -> bool:
    """The check of Lemma T (module docstring) at the fewest tokens of any plan of N >= 2 nodes,
    T_min (N = 2, H = 1, streaming off), and the largest loss multiplier searched,
    m_max = N_max ** b(H_c(N_max)): 2 beta kappa_max max(0, 1 / alpha_lo - m_max A_P / (alpha_hi
    (m_max (E + A_P) - E))) <= 1, with kappa_max = B T_min^-beta / (A_P + B T_min^-beta),
    A_P = A P^-alpha; and m_max L(T_min) below the loss of the compute-optimal model of 1e10 FLOP
    (X_m never held at the 1e10 floor)."""
    a = s.assumptions
    if not (tokens_min > 0 and math.isfinite(tokens_min)):
        return False
    m_max = float(quality.replica_loss_multiplier(float(n_max), s.params, float(h_top), a))
    data = a.chinchilla_b * tokens_min ** (-a.chinchilla_beta)
    a_p = a.chinchilla_a * s.active_params ** (-a.chinchilla_alpha)
    e = a.chinchilla_e
    kappa = data / (a_p + data)
    lo, hi = min(a.chinchilla_alpha, a.chinchilla_beta), max(a.chinchilla_alpha, a.chinchilla_beta)
    bracket = max(0.0, 1.0 / lo - m_max * a_p / (hi * (m_max * (e + a_p) - e)))
    floor_loss = float(chinchilla.chinchilla_loss(*chinchilla.optimal_allocation(a.chi_search_low_flop, a), a))
    loss_max = e + a_p + data
    return (lo > 0 and math.isfinite(m_max) and 2.0 * a.chinchilla_beta * kappa * bracket <= 1.0
            and m_max * loss_max < floor_loss)


def _h_c(space: DecisionSpace, t: dict[str, np.ndarray]) -> np.ndarray:
    """H_c(N) = ceil(t_sync(N) / t) + 1 (one more against rounding), within [1, H_max], from the
    throughput figures `t` of plans of N nodes."""
    h = np.ceil(t["t_sync_s"] / t["t_step_s"]) + 1
    h = np.where(np.isfinite(h), h, space.max_inner_steps)
    return np.clip(h, 1, max(1, space.max_inner_steps)).astype(np.int64)


def _bounds(s: Setting, space: DecisionSpace, lo: np.ndarray, hi: np.ndarray, h: np.ndarray,
            near: bool = False) -> np.ndarray:
    """g(H) Q(T_on(hi, H), m(lo, H)) for every piece [lo, hi] (rows) and H (columns): the most
    C_local of any plan of the piece at that H (3.), C_local itself where lo = hi. The same
    operations, in the same order, as `score.window_compute` (bit-identical where lo = hi).
    `near`: eta_R from `_replica_efficiency_near` instead (within NEAR_REL of the cost model's)."""
    n_hi = np.repeat(hi, h.size)
    hh = np.tile(h, hi.size)
    b = flat_batch(space, n_hi, hh)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = throughput(s, b)
        eff = run.efficiency_without_replicas(s, b, t)
        tokens = s.training_window_s * (t["tokens_per_outer"] / t["outer_time_s"])
        c_thr = 6.0 * s.active_params * np.asarray(tokens, dtype=float)
        eta_r = (_replica_efficiency_near if near else run.replica_efficiency)(
            s, np.repeat(lo, h.size).astype(float), t["h_eff"], tokens, c_thr)
        c = c_thr * (eff["eta_h"] * eff["eta_c"] * eff["eta_a"] * eta_r)
    return c.reshape(hi.size, h.size)


NEAR_REL = 1e-12       # relative: `_replica_efficiency_near` is within it of the cost model's eta_R (proof there)


def _replica_efficiency_near(s: Setting, replicas, h_eff, tokens, compute_flop) -> np.ndarray:
    """`run.replica_efficiency` under the Chinchilla penalty (the only one `applies` lets through),
    chi(P_act, T, C; m) / chi(P_act, T, C; 1) with m = K^beta(P, H_eff), but with the compute C'
    that reaches each loss from `sweep_search._c_eq` (the cost model's Newton iteration started from
    a table of roots: one or two steps where the cost model takes six from a far start, and no
    cold solves on a question's first call) instead of `chinchilla.equivalent_optimal_compute`.

    Proof that it is within NEAR_REL (1e-12) of the cost model's eta_R: the losses are the same
    doubles (`chinchilla.chinchilla_loss` is `chi`'s loss, times the same m); `_c_eq` gives C' within
    about 1.5e-14 relative of the cost model's (its docstring; tests/test_reference_sweep_search.py
    checks 1e-13), or the cost model's own value for losses outside its table; chi = min(1, clip(C',
    C_low, 10 C) / C) moves by at most the same relative amount (a clip and a min to fixed bounds do
    not widen a relative gap), and the ratio by at most the sum of both, a few 1e-14 with rounding,
    where the cost model's plain chi > 0 (else both give 0: a plain C' of 0 is an infinite loss, the
    cost model's value). So a C_local worked with it (`_bounds(near=True)`) is within NEAR_REL of
    the exact one (the other factors are the same operations), far inside PRUNE_MARGIN (1e-9):
    an interval holding a plan that reaches the target, c >= target, has a near bound c' with
    c' (1 + PRUNE_MARGIN) >= c (1 - NEAR_REL)(1 + PRUNE_MARGIN) > target, so it is kept (intervals of
    more than one node count only: single counts keep their exact values, which the answer reads).
    tests/test_reference_fewest_nodes_chinchilla.py checks the bound of NEAR_REL on random pieces."""
    a = s.assumptions
    m = quality.replica_loss_multiplier(replicas, s.params, h_eff, a)
    loss = chinchilla.chinchilla_loss(s.active_params, tokens, a)
    table = sweep_search._c_eq_table(a)
    c = np.asarray(compute_flop, dtype=float)
    full, plain = (np.minimum(1.0, np.clip(sweep_search._c_eq(np.asarray(x, dtype=float), a, table),
                                           a.chi_search_low_flop, a.chi_search_high_factor * c) / c)
                   for x in (loss * m, loss * np.ones_like(m)))
    return np.where(plain > 0, full / np.where(plain > 0, plain, 1.0), 0.0)


def fewest_nodes(s: Setting, space: DecisionSpace, h_top: int,
                 one_throughput: dict[str, np.ndarray] | None = None) -> tuple[tuple[PlanBatch, float] | None, int]:
    """((one-plan batch, cost in USD) or None, plans scored): the fewest nodes whose C_local
    within the window reaches `s.target`, then the plan of most C_local at that count (module
    docstring); `h_top` = H_c(N_max), the inner steps searched 1..h_top, and `one_throughput`, the
    `modes.throughput` figures of the one-node plan (N = 1, H = 1, streaming on) where the caller has them
    (`answer` gives both, `_inner_steps_searched`)."""
    target = s.target
    one = flat_batch(space, [1], [1])
    scored = 1
    if 1.0 / float(window_compute(s, one, "c_local", t=one_throughput)["c_local"][0]) <= 1.0 / target:
        return (one, s.node_price_usd), scored
    if space.max_nodes < 2:
        return None, scored
    h = np.arange(1, h_top + 1)
    stack = [(2, space.max_nodes)]
    while stack:
        lo, hi = stack.pop()
        if hi - lo + 1 <= PIECES:            # single node counts: exact values, the first that reaches
            nodes = np.arange(lo, hi + 1)
            c = _bounds(s, space, nodes, nodes, h)
            scored += c.size
            with np.errstate(divide="ignore"):
                reached = np.flatnonzero((1.0 / c <= 1.0 / target).any(axis=1))
            if reached.size:
                i = int(reached[0])
                return (_most_at(s, space, int(nodes[i]), h, c[i]), int(nodes[i]) * s.node_price_usd), scored
            continue
        starts, ends = _pieces(lo, hi)
        c = _bounds(s, space, starts, ends, h, near=True)
        scored += c.size
        keep = np.flatnonzero(c.max(axis=1) * (1 + PRUNE_MARGIN) >= target)
        stack.extend((int(starts[i]), int(ends[i])) for i in keep[::-1])
    return None, scored


@functools.lru_cache(maxsize=256)
def _pieces(lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
    """(starts, ends) of the at most PIECES geometric pieces `fewest_nodes` cuts [lo, hi] into, worked
    out once per process and interval (read-only): every answer starts with [2, N_max], the same
    100,000 for every reference case, and np.geomspace with its rounding takes about 0.1 ms. The same
    expression as before on the same integers, so the same pieces."""
    edges = distinct(np.geomspace(lo, hi + 1, PIECES + 1).round().astype(np.int64))
    starts, ends = edges[:-1], edges[1:] - 1
    for x in (starts, ends):
        x.flags.writeable = False
    return starts, ends


def _most_at(s: Setting, space: DecisionSpace, nodes: int, h: np.ndarray, c: np.ndarray) -> PlanBatch:
    """The plan of most C_local (least 1 / C_local) among H in `h` streaming on at `nodes`, ties
    (within TIE_REL) to the smaller H."""
    with np.errstate(divide="ignore"):
        measure = 1.0 / c
    best = float(measure.min())
    i = int(np.flatnonzero(measure <= best * (1 + TIE_REL))[0])
    return flat_batch(space, np.array([nodes]), h[i:i + 1])
