"""Exact search of the decision space: a branch and bound over (n, H, R) boxes (solver "bnb", the default).

The classes of `DecisionSpace.classes` (all decisions but the replica count n, H and R;
nodes N = n for flat and hierarchical plans, N = max(n S, min_nodes) for pipelines, n over an
interval) are the unit of search. Each class is
searched over every n, every H in 1..H_max and, for hierarchical plans, every R in
1..R_max, by a vectorised branch and bound over boxes [n1, n2] x [H1, H2] x [R1, R2]
whose bound is valid by construction. Write the time to target as

    T(n, H, R) = kappa * q(n, H, R) / (n * e(n, H_eff)),   H_eff = H sqrt(R),

kappa holding what depends on none of them, q = outer_time / (H R) per replica, and
e the fraction of throughput compute that counts at the target (eta, with eta_R at the
target point, for a C_local target; eta * chi at the run's tokens for a C_quality one). Then
- q is non-increasing in H and R (max(a, s / H) or a + s / H, and their hierarchical
  analogues) and non-decreasing in n (the WAN straggler factor f(G) grows with G);
- tokens per outer step grow in proportion to n;
- e is non-increasing in H_eff and in n >= 2 (alpha >= 0; the replica exponent >= 0 and the
  replica count K grows with n; for a C_quality target the tokens needed grow with the
  replica loss multiplier and with 1 / eta_H). One node (no sync, every efficiency 1) is
  never in a box with two or more, whose efficiencies may exceed 1. The constants decide
  whether these facts hold (`planner.solvers.monotone`): where alpha(P) < 0, eta_H rises
  with H_eff and e(n1, H1 sqrt R1) below is taken with eta_H at its box maximum (the larger
  of its values at the two ends of the H_eff range); where a fact fails with no such
  fallback, the search refuses to run (`planner.solve` then scores every plan).
Hence on a box

    T >= T(n1, H2, R2) * (n1 / n2) * e(n1, H2 sqrt R2) / e(n1, H1 sqrt R1),

computed from two real plans at n1. A box whose bound exceeds the incumbent cannot
hold the optimum and is dropped; a plan within the tie tolerance of the optimum is
never dropped unless a plan of its class at most as slow (within the tolerance) comes
before it in tie order, which within a class is (n, H, R): a box whose bound ties is cut
along n, then H, then R, so that a plateau of equal times (no efficiency loss, every
compute-bound H) is not enumerated plan by plan. Every number comes from
`planner.cost.score.time_to_target`.

tests/test_bnb.py checks it against a naive brute force (every N, H, R, M scored
one by one) on small random instances.

One module of ~600 lines (issue 26: a module over ~500 lines says why): the boxes, their bounds, the
seeds, the tie order and the search loop are one algorithm whose bounds are proven together (the
bounds hold only with the tie order and box split used here); split, each part would be read only
with the others.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Callable

import numpy as np

from planner.cost import chinchilla, modes, quality, run, tensor_parallel
from planner.cost.modes import throughput
from planner.cost.straggler import eta_h_divisor
from planner.cost.score import time_to_target, window_compute
from planner.cost.setting import PlanBatch, Setting
from planner.schema.errors import InputError
from planner.solvers import class_bound, hier_bound, monotone
from planner.space import CHUNK, MODE_ORDER, PRECISION_ORDER, Classes, DecisionSpace

TIE_REL = 1e-12          # plans whose objectives differ by less are tied, broken by `tie_key`
INHERITED = ("g_up", "tokens_per_n")   # what a box hands on to the boxes cut from it (`_compute_box`)
INHERITED_MARGIN = 1e-9  # relative: an enclosing box's g_up as a bound on a box's (`_compute_box`), far above
                         # the rounding of either g_up
SPLIT = 8                # children per box and level (at most)
COMPUTE_SPLIT = 4        # children per box under the max_compute measures in a round of at least MANY_BOXES boxes
MANY_BOXES = 1024        # left alive (`_branch_and_bound`); both measured in docs/speed.md (issue 27 item 5,
                         # thirteenth round): a performance choice, every count of parts >= 2 is exact
COMPUTE_SIDE_WEIGHT = 2.0   # under the max_compute measures, n's and H's log ratios count twice in `_split`'s choice of
                            # side (R's once): measured in docs/planner.md (issue 27 item 5); a performance choice
COUPLED_SIDE_WEIGHTS = (3.0, 1.0)   # n's and H's under the max_compute measures where `hier_bound` bounds the boxes
                                   # (hierarchical classes, fitted quality model): measured in docs/planner.md
EP_ORDER = ("none", "regional", "global")
_FLOAT_MAX = float(np.finfo(float).max)
_SCALARS = (float, np.float64)   # the types `tie_limit` computes in python floats


def tie_limit(m: np.ndarray | float) -> np.ndarray | np.float64:
    """m (1 + TIE_REL), the largest measure tied with m, rounded down to the largest float where the
    product overflows (a finite m within TIE_REL of the largest float, e.g. 1/C of a plan whose
    compute underflows): every finite t then compares with it as with the exact product, and an
    infinite t (an infeasible plan) is not tied with a finite m. An infinite m stays infinite.

    A single number (a float or numpy float64, as the search's incumbents are) takes the same two
    steps in python's float arithmetic, which is IEEE double arithmetic as numpy's is: the product
    is the same correctly rounded double (inf where it overflows, python's float multiply does not
    raise), and min with the largest float returns the same double (nan stays nan, as np.minimum
    leaves it). It returns a numpy float64, usable wherever the 0-d array was (issue 27 item 1: the
    search asks this for single incumbents about a hundred times, each numpy call costing more than
    the arithmetic; tests/test_tie_limit.py compares the two paths bit for bit)."""
    if type(m) in _SCALARS:
        x = float(m)
        limit = x * (1 + TIE_REL)
        return np.float64(min(limit, _FLOAT_MAX) if math.isfinite(x) else limit)
    m = np.asarray(m, dtype=float)
    if not m.size:      # nothing to multiply (the search asks for empty batches too): the empty result
        return m.copy()
    with np.errstate(over="ignore"):
        limit = m * (1 + TIE_REL)
    return np.where(np.isfinite(m), np.minimum(limit, _FLOAT_MAX), limit)


@dataclass
class Found:
    """Plans at their (N, H, R), with their time to target."""

    batch: PlanBatch       # one row per plan
    time_s: np.ndarray
    evaluations: int = 0   # plans scored to find them
    open_bound: float = math.inf   # least lower bound of the boxes left open at a deadline (inf: none)
    classes: np.ndarray | None = None   # the class of each plan (`minimise_time`), else None


def _time_and_efficiency(s: Setting, c: Classes, idx, n, h, r, eta_h_also_at=None):
    """Time to target and e, the fraction of throughput compute that counts at the target:
    e = C_target / (6 P_act * tokens per second * T). For a C_local target e is eta (eta_R
    at the target point); for a C_quality target it is eta * chi at the run's own tokens.
    e never rises with n (n >= 2) or, when eta_H falls with H_eff (`monotone.check`), with
    H_eff (docs/planner.md), which the bound needs.

    `eta_h_also_at` (H_eff values): score the plans with eta_H replaced by the larger of
    their own eta_H and eta_H at these H_eff (the box maximum of eta_H when it rises with
    H_eff: it is monotone in H_eff, so its maximum over an interval is at an end).

    Also returns t e = C_target / (6 P_act * tokens per second * goodput), the time at e = 1: finite
    where the plan never reaches the target (t = inf, e = 0), so that a bound multiplying by e is too."""
    b = c.plans(idx, n, h, r)
    if eta_h_also_at is None:
        out = time_to_target(s, b)
    else:
        a = s.assumptions
        with np.errstate(divide="ignore", invalid="ignore"):
            t = throughput(s, b)
            eff = run.efficiency_without_replicas(s, b, t)
            top = quality.eta_sync_interval(eta_h_also_at, s.params, a, eta_h_divisor(a))
            eff["eta_h"] = np.where(t["synchronised"] > 0, np.maximum(eff["eta_h"], top), eff["eta_h"])
            out = run.time_to_target(s, b, t, eff, details=False)
    t = out["time_to_target_s"]
    with np.errstate(divide="ignore", invalid="ignore"):
        at_e1 = s.target / (6.0 * s.active_params * out["tokens_per_s"])
        e = at_e1 / out["training_time_s"]   # no overflow
    return t, np.where(np.isfinite(t) & (t > 0), e, 0.0), at_e1 / s.goodput


# -- what is minimised ------------------------------------------------------------------
#
# A *measure* is the quantity a search minimises, plan by plan, with a lower bound per box:
# "time" (the time to target, seconds) or "1/c_quality", "1/c_local" (the reciprocal of
# the compute reached within the duration limit, 1/FLOP; minimising it is `max_compute`).

TIME = "time"
MEASURES = (TIME, "1/c_quality", "1/c_local")


def compute_measure(target_kind: str) -> str:
    """The measure of `max_compute` for a target kind (c_quality or c_local)."""
    return f"1/{target_kind}"


def _measure(s: Setting, c: Classes, idx, n, h, r, measure: str) -> np.ndarray:
    """The minimised quantity of each plan (inf where it has no meaning). A measure that is not
    one of MEASURES is an object scoring plans itself (`values`), e.g. `planner.robust.RobustMeasure`.
    More than CHUNK plans are scored CHUNK at a time (the same figures, plan by plan, less memory)."""
    if not isinstance(measure, str):
        return measure.values(s, c, idx, n, h, r)
    if np.size(idx) > CHUNK:
        idx, n, h, r = np.broadcast_arrays(idx, n, h, r)
        return np.concatenate([_measure_of(s, c, *(x[k:k + CHUNK] for x in (idx, n, h, r)), measure)
                               for k in range(0, idx.size, CHUNK)])
    return _measure_of(s, c, idx, n, h, r, measure)


def _measure_of(s: Setting, c: Classes, idx, n, h, r, measure: str) -> np.ndarray:
    """`_measure` of the measures named in MEASURES, all plans at once."""
    if measure == TIME:
        return _time_and_efficiency(s, c, idx, n, h, r)[0]
    return _window_measure(s, c.plans(idx, n, h, r), measure)


def _window_measure(s: Setting, b: PlanBatch, measure: str, t=None) -> np.ndarray:
    """1 / the compute of plans `b` within the window, of the kind a compute measure names (`_measure_of`);
    `t`: their throughput when the caller computed it already (`window_compute`'s)."""
    out = window_compute(s, b, measure[2:], t=t)
    with np.errstate(divide="ignore"):
        return 1.0 / out[measure[2:]]


def _h_eff(c: Classes, h, r):
    """H_eff = H sqrt(R) (hierarchical), else H (H = 1 for a pipeline over the WAN; r of a pipeline
    class is its member index, not R)."""
    h = np.asarray(h, dtype=float)
    return h * np.sqrt(np.asarray(r, dtype=float)) if c.rows.mode == "hierarchical" else h


def _fast_slow_r(c: Classes, box):
    """(r of the box's fastest corner, r of its slowest): R2, R1 (q falls with R); for a pipeline
    class with members (M ordered by pipeline step, slowest last), j1, j2."""
    return (box["r1"], box["r2"]) if c.members is not None else (box["r2"], box["r1"])


def _time_box(s: Setting, c: Classes, box, mono: monotone.Monotonicity):
    """Lower bound of the time to target on each box (module docstring), and its corners
    (n, H, r, time): the fastest corner (n1, H2, r_fast) and the most efficient (n1, H1, r_slow)
    (e does not depend on M)."""
    r_fast, r_slow = _fast_slow_r(c, box)
    k = box["i"].size
    # both corners scored as one batch of 2k plans (fast corners first), for half the numpy calls. The cost model
    # works plan by plan except the shared stop of chinchilla's Newton iteration (an element may take converged
    # steps past its own stop: rounding-level, ~1e-16 relative, far inside TIE_REL); on every box of the shipped
    # instances' searches each corner's figures are those of its own batch bit for bit (tests/test_time_box_joined.py)
    t2, e2, at_e1 = _time_and_efficiency(s, c, _both(box["i"], box["i"], k), _both(box["n1"], box["n1"], k),
                                         _both(box["h2"], box["h1"], k), _both(r_fast, r_slow, k))
    t_hi, e_hi, at_e1_hi, t_lo, e_lo = t2[:k], e2[:k], at_e1[:k], t2[k:], e2[k:]
    t_best, e_best = t_lo, e_lo
    if not mono.eta_h_falls:     # eta_H rises with H_eff: the box's best efficiency takes its largest eta_H
        t_best, e_best, _ = _time_and_efficiency(s, c, box["i"], box["n1"], box["h1"], r_slow,
                                                 eta_h_also_at=_h_eff(c, box["h2"], r_fast))
    with np.errstate(divide="ignore", invalid="ignore"):
        # t_hi e_hi is the fast corner's time at e = 1; where that corner never reaches the target
        # (t_hi = inf, e_hi = 0: e.g. a C_quality target its loss multiplier puts out of reach) the
        # product is at_e1_hi, not inf * 0 = NaN (a NaN bound prunes nothing: such boxes were split
        # down to single plans)
        lower = np.where(e_best > 0, np.where(np.isfinite(t_hi), t_hi * (box["n1"] / box["n2"]) * e_hi,
                                              at_e1_hi * (box["n1"] / box["n2"])) / e_best, 0.0)
    # e_best bounds the box's efficiency; if even it never reaches the target (eta = 0, or a
    # C_quality target beyond the loss floor), no plan of the box does.
    lower = np.where(np.isinf(t_best), np.inf, lower)
    return lower, [(box["i"], box["n1"], box["h2"], r_fast, t_hi), (box["i"], box["n1"], box["h1"], r_slow, t_lo)]


def _both(first, second, k: int) -> np.ndarray:
    """The k values of `first` then the k of `second` (each an array of k or one value) as one array."""
    return np.concatenate([np.broadcast_to(first, (k,)), np.broadcast_to(second, (k,))])


def _compute_box(s: Setting, c: Classes, box, kind: str, mono: monotone.Monotonicity | None = None,
                 cut: np.ndarray | None = None, tokens_up=None, tokens_low=None):
    """Lower bound of 1/C on each box [n1, n2] x [H1, H2] x [R1, R2], C = C_quality or C_local
    reached within the duration limit W (window view), from real plans at its corners.

    With q = outer time / (H R) non-increasing in H, R and non-decreasing in n, tokens per
    second B n / q of any plan of the box is at most n2/n1 times that of (n1, H2, R2), so
    its tokens T <= T_up = W' tps(n1, H2, R2) n2 / n1; likewise T >= T_lo = W' tps(n2, H1, R1) n1 / n2,
    W' = W * goodput the time spent training.
    g = eta_H eta_C eta_A (x the linear v1 factor) is at most g(n1, H1 sqrt R1) (eta_H falls
    with H_eff, the linear factor with K) and the loss multiplier m at least m(n1, H1 sqrt R1)
    (`run.quality_terms`). Then, with Q(T, g, mu) = `run.quality_compute`:

    - C_quality = Q(T, g, m) grows with T and g and falls with m, so C_quality <= Q(T_up, g_up, m_lo);
    - C_local = g 6 P_act T eta_R <= g_up 6 P_act T_up (eta_R <= 1; with the linear v1 or no
      replica penalty this is the bound, eta_R being in g); under the Chinchilla penalty also
      C_local = Q(T, g, m) / chi(1; T) with chi(1; T) = min(1, max(C'_1(T), 1e10) / C_thr)
      >= min(1, C'_1(T_lo) / (6 P_act T_up)) (C'_1 grows with T, C_thr = 6 P_act T), so
      C_local <= Q(T_up, g_up, m_lo) / min(1, C'_1(T_lo) / (6 P_act T_up)); the slack
      T_up / T_lo vanishes as boxes shrink. (eta_R = chi(m) / chi(1) itself is not monotone
      in T: it returns to 1 near the compute-optimal point, so no bound rests on that.)
      A second bound: with v = max(C'_m, F) / C_thr, u = max(C'_1, F) / C_thr (F = 1e10, the
      clamp of chi) and rho = max(C'_m, F) / max(C'_1, F) = v / u <= 1, eta_R = min(1, v) where
      u >= 1 and rho where u < 1, so C_local <= g min(C_thr, max(max(C'_m, F), C_thr rho)).
      rho falls as m rises and, for Chinchilla E >= 0, as T rises: d ln rho / d ln L =
      eps(L) - eps(m L) with eps = -d ln C' / d ln L = (E + X + Y) / (a X + b Y) (X, Y the two
      power terms of the compute-optimal loss, a, b their exponents), which falls as L rises
      (E / (a X + b Y) falls; (X + Y) / (a X + b Y) moves towards the reciprocal of the larger
      exponent, whose term grows faster); the clamp F keeps rho non-increasing. Hence
      C_local <= max(Q(T_up, g_up, m_lo), g_up 6 P_act T_up rho(m_lo, T_lo)), whose slack is only
      linear in T_up / T_lo (tests/test_bound_properties.py checks rho's monotonicity for
      random Chinchilla constants).
    A box of one node (n1 = n2 = 1: no chi, g = 1) is bounded by 6 P_act T_up. `tokens_up`,
    `tokens_low` (per box, or scalars): factors on T_up and T_lo for a cost model whose tokens of a
    plan lie in [tokens_low T_straggler, tokens_up T_straggler] with g and m bounded as above (the
    proportional rule, `planner.sync.proportional.levels.chinchilla_box_bound`): every step above
    uses only T in [T_lo, T_up], g <= g_up and m >= m_lo. Where eta_H
    rises with H_eff (`monotone.check`), g_up is g(n1, H1 sqrt R1) times
    max(1, eta_H(H2 sqrt R2) / eta_H(H1 sqrt R1)) (eta_H is monotone in H_eff; g is eta_H
    times factors that do not rise with n or H_eff).

    Hierarchical classes under the fitted quality model (`_coupled_applies`; not with `tokens_up`, `tokens_low`):
    C is also at most `hier_bound.coupled_upper`, the tokens and eta_R taken at the same H_eff (the tokens per
    second B K f min(1 / t_step, H_eff / sqrt(t_reg t_glob(G1))), eta_R at K1 and that H_eff, maximised over the
    box's H_eff range in closed form; proof in `planner.solvers.hier_bound`), and the lesser bound is kept: it is
    taken before the corners are chosen, so boxes it prunes have no corner scored (issue 27 item 5).

    What is scored once (issue 27 item 5). The corners' compute, C at (n1, H2, r_fast) and at
    (n1, H1, r_slow) for the boxes not pruned by g_up C_up, is computed (`score.window_compute`) from the
    very throughput and slow-corner efficiencies and quality terms the bound was computed from, taken at
    those boxes: the same figures feed the bound and the value, none is scored a second time.
    Boxes cut from a box of this search carry `INHERITED` figures and are first bounded from them
    (`_inherited_upper`, where eta_H falls with H_eff): those that bound prunes are not scored, and
    the rest are bounded here (`_bound_boxes`) with the same plans scored and the same values as
    without it (tests/test_box_reuse.py). (Robust and proportional searches call this function with
    their own boxes, which carry none of these fields: every box is then scored.)
    """
    inherits = mono is not None and mono.eta_h_falls and cut is not None and INHERITED[0] in box
    if inherits:
        upper = _inherited_upper(s, c, box)
        todo = np.flatnonzero(~(np.isfinite(upper) & (1.0 / upper > cut)))     # inf: nothing inherited
        if todo.size < upper.size:      # boxes pruned unscored: 1 / (their inherited upper) bounds them
            lower = 1.0 / upper
            sub = {key: v[todo] for key, v in box.items()}
            lower[todo], corners = _bound_boxes(s, c, sub, kind, mono, cut[todo], tokens_up, tokens_low, True)
            for key in INHERITED:      # what `_bound_boxes` wrote into the copies, for the boxes cut from these
                box[key][todo] = sub[key]
            return lower, corners
    return _bound_boxes(s, c, box, kind, mono, cut, tokens_up, tokens_low, inherits)


def _inherited_upper(s: Setting, c: Classes, box) -> np.ndarray:
    """Per box, an upper bound of C on its plans from the figures of the box it was cut from, times
    1 + INHERITED_MARGIN (inf for a first box: nothing inherited).

    `_branch_and_bound` gives each box `INHERITED`: g_up', the least g_up of the boxes it lies in, and
    T_up' / n2', their least tokens per replica (the first boxes: inf), written by `_bound_boxes` and
    handed on by `_split`. Where eta_H falls with H_eff, every plan of a box lies in each box it was
    cut from, so its g is at most that box's g_up (`_compute_box`: g never rises with n or H_eff) and
    its tokens at most W' tps(n1', H2', R2') n / n1' <= (T_up' / n2') n2 (tokens per second of a plan
    are at most n / n1' times those of that box's fastest corner); hence C <= g_up' 6 P_act (T_up' / n2') n2
    (g_up' left out for one node, where C <= 6 P_act T: no efficiency below 1 applies). The margin is far
    above the rounding of either figure, so a box this bound prunes (1 / upper above its cutoff) would
    be pruned by its own bound, which is never above it, and has none of its corners scored (they are
    scored only for boxes within the cutoff)."""
    with np.errstate(invalid="ignore", over="ignore"):
        c_known = 6.0 * s.active_params * box["tokens_per_n"] * box["n2"]
        return np.where(c.nodes(box["i"], box["n1"]) > 1, box["g_up"] * c_known, c_known) * (1.0 + INHERITED_MARGIN)


def _bound_boxes(s: Setting, c: Classes, box, kind: str, mono: monotone.Monotonicity | None, cut: np.ndarray | None,
                 tokens_up, tokens_low, inherits: bool):
    """`_compute_box` of boxes none of which `_inherited_upper` prunes. With `inherits` (the boxes carry
    `INHERITED`): g_up' C_up, with the box's own C_up, decides which boxes need their slow corner (a box
    it prunes would be pruned by its own bound, as in `_inherited_upper`), and each box keeps, for the
    boxes cut from it, the smaller of its own and the inherited g_up and tokens per replica."""
    a = s.assumptions
    r_fast, r_slow = _fast_slow_r(c, box)
    i, ratio = box["i"], box["n2"] / box["n1"]
    known = box["g_up"] if inherits else None
    if known is None:
        hi_b, lo_b = c.corner_plans(i, box["n1"], (box["h2"], r_fast), (box["h1"], r_slow))
    else:
        hi_b = c.plans(i, box["n1"], box["h2"], r_fast)
    pipe = _shared_pipeline(s, c, hi_b)      # pp_group: the pipeline both corners have (the same classes and n1)
    hi_t = _corner_throughput(s, c, hi_b, i, pipe)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        t_up = s.training_window_s * hi_t["tokens_per_outer"] / hi_t["outer_time_s"] * ratio
        if tokens_up is not None:
            t_up = t_up * tokens_up
        c_up = 6.0 * s.active_params * t_up
        m = None           # the boxes whose slow corner is scored (None: all)
        if known is not None:
            box["tokens_per_n"][:] = np.minimum(box["tokens_per_n"], t_up / box["n2"])
            # g_up of the enclosing box bounds g on this one (`INHERITED_MARGIN`): boxes that bound prunes
            # need no slow corner (with_chi as `run.quality_terms` has it: the corners share n1's nodes)
            upper = np.where(np.asarray(hi_b.nodes, dtype=float) > 1, known * c_up, c_up) * (1.0 + INHERITED_MARGIN)
            m = np.flatnonzero(~(np.isfinite(upper) & (1.0 / upper > cut)))
            lo_b = c.plans(i[m], box["n1"][m], box["h1"][m], r_slow[m])
    rows_m = np.arange(i.size) if m is None else m
    at = (lambda x: x) if m is None else (lambda x: x[m])     # the boxes `m`, or all
    lo_t = _corner_throughput(s, c, lo_b, at(i),
                              None if pipe is None else pipe if m is None else modes.pp_group_pipeline_rows(pipe, m),
                              wan=tuple(at(hi_t[k]) for k in modes.WAN_SYNC_FIELDS)      # the same n1: the same WAN sync
                              if c.rows.mode == "hierarchical" else None)
    del pipe
    lo_eff = run.efficiency_without_replicas(s, lo_b, lo_t, _class_eta_c(s, c, at(i)))
    g_lo, mu_lo, with_chi = run.quality_terms(s, lo_b, lo_t, lo_eff)
    g_up = g_lo
    if mono is not None and not mono.eta_h_falls:
        divisor = eta_h_divisor(a)
        with np.errstate(divide="ignore", invalid="ignore"):
            rise = quality.eta_sync_interval(_h_eff(c, at(box["h2"]), at(r_fast)), s.params, a, divisor) \
                / quality.eta_sync_interval(_h_eff(c, at(box["h1"]), at(r_slow)), s.params, a, divisor)
        g_up = g_up * np.maximum(1.0, np.nan_to_num(rise, nan=np.inf))
    if known is not None:       # for the boxes cut from these (`_split` hands the field on)
        known[rows_m] = np.minimum(known[rows_m], np.where(with_chi, g_up, np.inf))
    c_up_m = at(c_up)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        # C <= g_up C_up (chi, eta_R <= 1): boxes this prunes need no chi at all (`cut`)
        upper_m = np.where(with_chi, g_up * c_up_m, c_up_m)
        if tokens_up is None and tokens_low is None and _coupled_applies(s, c):
            # hierarchical under the fitted model (not another cost model's tokens): eta_R and the tokens at one H_eff
            upper_m = np.minimum(upper_m, hier_bound.coupled_upper(
                s, lo_t["replicas"], c.nodes(at(i), at(box["n2"])) / np.maximum(c.rows.zero_shards[at(i)], 1),
                lo_t["h_eff"], at(hi_t["h_eff"]), lo_t["t_step_s"], lo_t["t_regional_s"], lo_t["t_sync_s"],
                lo_eff["eta_h"] * lo_eff["eta_c"] * lo_eff["eta_a"]))
        k = np.flatnonzero(~(1.0 / upper_m > at(cut))) if cut is not None else np.arange(rows_m.size)
        mk = rows_m[k]      # the boxes k among all: their fields taken once, from the boxes' own arrays
        i_k, n1_k, fast_k, slow_k = i[mk], box["n1"][mk], (box["h2"][mk], r_fast[mk]), (box["h1"][mk], r_slow[mk])
        # the corners' compute from the very figures bounded with (their throughput, the slow corner's
        # efficiencies), taken at k: not scored again; their plans taken once from the classes' rows
        hi_k, lo_k = c.corner_plans(i_k, n1_k, fast_k, slow_k)
        hi_t_k = _At(hi_t, mk)
        hi = window_compute(s, hi_k, kind, t=hi_t_k,
                            eff=run.efficiency_without_replicas(s, hi_k, hi_t_k, _class_eta_c(s, c, i_k)))
        lo = window_compute(s, lo_k, kind, t=_At(lo_t, k), eff=_At(lo_eff, k), terms=(g_lo[k], mu_lo[k], with_chi[k]))
        corners = [(i_k, n1_k, *fast_k, 1.0 / hi[kind]), (i_k, n1_k, *slow_k, 1.0 / lo[kind])]
        # Q(T_up, g_up, m_lo): read by the C_quality bound and the Chinchilla penalty's, not computed otherwise
        q_up = run.quality_compute(s, t_up[mk], g_up[k], mu_lo[k], True) \
            if kind == "c_quality" or a.replica_penalty == "chinchilla" else None
        if kind == "c_quality":
            sharper = q_up
        else:
            sharper = upper_m[k]
            if a.replica_penalty == "chinchilla":
                far = throughput(s, c.plans(i_k, box["n2"][mk], box["h1"][mk], r_slow[mk]))
                t_lo = s.training_window_s * far["tokens_per_outer"] / far["outer_time_s"] / ratio[mk]
                if tokens_low is not None:
                    t_lo = t_lo * np.broadcast_to(tokens_low, ratio.shape)[mk]
                loss_lo = chinchilla.chinchilla_loss(s.active_params, t_lo, a)
                c_eq_lo = chinchilla.equivalent_optimal_compute(loss_lo, a)
                chi_lo = np.minimum(1.0, c_eq_lo / c_up[mk])
                sharper = np.minimum(sharper, np.where(chi_lo > 0, q_up / chi_lo, np.inf))
                if a.chinchilla_e >= 0:     # eta_R <= rho(m_lo, T_lo) or C'_m / C_thr (docstring)
                    floor = a.chi_search_low_flop
                    c_eq_m_lo = chinchilla.equivalent_optimal_compute(loss_lo * mu_lo[k], a)
                    rho = np.maximum(c_eq_m_lo, floor) / np.maximum(c_eq_lo, floor)
                    sharper = np.minimum(sharper, np.maximum(q_up, g_up[k] * c_up[mk] * np.minimum(rho, 1.0)))
        upper_m[k] = np.where(with_chi[k], np.minimum(upper_m[k], sharper), upper_m[k])
        if m is None:
            upper = upper_m
        else:
            upper[m] = upper_m
        return np.nan_to_num(1.0 / upper, nan=0.0), corners


def _coupled_applies(s: Setting, c: Classes) -> bool:
    """Whether `hier_bound.coupled_upper` bounds the boxes of `c`: hierarchical classes whose t_step and t_reg
    read the class alone (no tensor-parallel degree to choose, experts not sharded globally:
    `modes.hierarchical_class_parts`) under the fitted quality model (`hier_bound.applies`)."""
    rows = c.rows
    return rows.mode == "hierarchical" and c.members is None and rows.expert_parallel != "global" \
        and hier_bound.applies(s) and not tensor_parallel.choices(s.assumptions, s.accelerators_per_node, s.is_moe)


def _corner_throughput(s: Setting, c: Classes, b: PlanBatch, idx: np.ndarray, pipe=None,
                       wan=None) -> Mapping[str, np.ndarray]:
    """`throughput(s, b)` of plans `b` of the classes `idx`. Hierarchical classes (but under global expert
    parallelism or with a tensor-parallel degree to choose) take the fields that read only their class
    (`modes.hierarchical_class_parts`, computed once per class group and setting, each taken at `idx` when
    first read) and compute the rest from them (`modes.hierarchical_plan_parts`), as `modes.hierarchical`
    does, which is `throughput` where there is no degree to choose: each figure is the one `throughput`
    gives (tests/test_class_parts.py compares the two bit for bit). `pipe`: pp_group plans' pipeline
    (`_shared_pipeline`) of plans with the same classes and node counts, row by row: `modes.pp_group` from it.
    `wan`: the WAN sync fields (`modes.WAN_SYNC_FIELDS`) of plans with the same classes and node counts, row by
    row (the other corner of the same boxes), read by the hierarchical classes' own path only
    (`modes.hierarchical_plan_parts`); elsewhere computed with the rest."""
    if pipe is not None:
        return modes.pp_group(s, b, pipe)
    rows = c.rows
    if rows.mode != "hierarchical" or rows.expert_parallel == "global" \
            or tensor_parallel.choices(s.assumptions, s.accelerators_per_node, s.is_moe):
        return throughput(s, b)
    fixed = _At(_class_figures(s, c, "parts", modes.hierarchical_class_parts), idx)
    return _Joined(modes.hierarchical_plan_parts(s, b, fixed, wan), fixed, modes.HIERARCHICAL_FIELDS)


def _shared_pipeline(s: Setting, c: Classes, b: PlanBatch):
    """`modes.pp_group_pipeline` of the pp_group plans `b` where `throughput` is `modes.pp_group` itself (no
    tensor-parallel degree to choose), for plans of the same classes at the same n but another H to share (a
    box's two corners, a seed at H = 1 and at its own H: issue 27 item 5); else None."""
    if c.rows.mode != "pp_group" or tensor_parallel.choices(s.assumptions, s.accelerators_per_node, s.is_moe):
        return None
    return modes.pp_group_pipeline(s, b)


def _class_eta_c(s: Setting, c: Classes, idx: np.ndarray) -> np.ndarray | None:
    """eta_C (`run.compression_efficiency`, which reads the compression, the precision and streaming: class
    decisions) of the classes `idx`, computed once per class of a hierarchical group (whose boxes outnumber
    its classes by far); None for other groups (computed with the plans)."""
    if c.rows.mode != "hierarchical":
        return None
    return _class_figures(s, c, "eta_c", run.compression_efficiency)[idx]


def _class_figures(s: Setting, c: Classes, name: str, compute: Callable):
    """`compute(s, c.rows)`, remembered on the classes per setting object (as the classes themselves are,
    `DecisionSpace.classes`; `Classes.take` starts afresh)."""
    memo = c.__dict__.setdefault("_class_figures", {})
    if memo.get(name, (None,))[0] is not s:
        memo[name] = (s, compute(s, c.rows))
    return memo[name][1]


class _Joined(Mapping):
    """The fields of `first`, then those of `second` not in it, in the order `names`."""

    def __init__(self, first: Mapping, second: Mapping, names: tuple[str, ...]):
        self._first, self._second, self._names = first, second, names

    def __getitem__(self, name: str) -> np.ndarray:
        return self._first[name] if name in self._first else self._second[name]

    def __iter__(self):
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)


class _At(Mapping):
    """Per-plan figures (one array per name, one value per plan, or a scalar for all) at the plans `k`,
    each taken when first read (the compute of the corners reads a few of the throughput's many)."""

    def __init__(self, fields: dict[str, np.ndarray], k: np.ndarray):
        self._fields, self._k, self._taken = fields, k, {}

    def __getitem__(self, name: str) -> np.ndarray:
        if name not in self._taken:
            value = self._fields[name]
            self._taken[name] = value[self._k] if np.ndim(value) else value
        return self._taken[name]

    def __iter__(self):
        return iter(self._fields)

    def __len__(self) -> int:
        return len(self._fields)


def _box_bound(s: Setting, c: Classes, box, measure: str, mono: monotone.Monotonicity, cut=None):
    """(lower bound of the measure on each box, corner plans scored); `cut`: a cutoff above
    which a box is pruned anyway (a bound part that cannot matter may be skipped). A measure
    object (`_measure`) bounds its boxes itself (`box`)."""
    if not isinstance(measure, str):
        return measure.box(s, c, box, mono, cut)
    # CHUNK boxes at a time (row by row: the same bounds), corners in order; half as many would save ~3 MB of
    # peak at 10^4 nodes for ~3% more instructions (docs/speed.md, max_compute)
    if box["i"].size > CHUNK:
        parts = [_box_bound_of(s, c, {key: v[k:k + CHUNK] for key, v in box.items()}, measure, mono,
                               None if cut is None else cut[k:k + CHUNK])
                 for k in range(0, box["i"].size, CHUNK)]
        corners = [tuple(np.concatenate([p[1][j][x] for p in parts]) for x in range(5))
                   for j in range(len(parts[0][1]))]
        return np.concatenate([p[0] for p in parts]), corners
    return _box_bound_of(s, c, box, measure, mono, cut)


def _box_bound_of(s: Setting, c: Classes, box, measure: str, mono: monotone.Monotonicity, cut=None):
    """`_box_bound` of the measures named in MEASURES, all boxes at once."""
    return _time_box(s, c, box, mono) if measure == TIME else _compute_box(s, c, box, measure[2:], mono, cut)


def _h_r_max(c: Classes, h_max: int, r_max: int) -> tuple[int, int]:
    """H and R ranges that matter for a mode: no H for a pipeline over the WAN, R only when
    hierarchical; for pipeline classes with members the R axis is the member index j."""
    mode = c.rows.mode
    j_max = c.member_count
    if mode == "pipeline_wan":
        return 1, j_max
    return h_max, (r_max if mode == "hierarchical" else j_max)


def _seeds(s: Setting, c: Classes, h_max: int, r_max: int, idx=None, n=None):
    """Good first plans per class: all replicas (or `n` replicas of the classes `idx`), the smallest
    compute-bound H (and R), as the reference picks them. More than CHUNK classes are seeded CHUNK at
    a time (plan by plan the same figures; the peak memory of one scoring, issue 27 item 5)."""
    if idx is None:      # every class at its n_hi (the classes' own array: read, never written)
        idx, n = np.arange(c.size), c.n_hi if n is None else n
    n = c.n_hi[idx] if n is None else n
    if idx.size > CHUNK:
        each = np.broadcast_to(n, idx.shape)
        parts = [_seeds_of(s, c, h_max, r_max, idx[k:k + CHUNK], each[k:k + CHUNK]) for k in range(0, idx.size, CHUNK)]
        return idx, n, *(np.concatenate([p[j] for p in parts]) for j in (0, 1))
    return (idx, n, *_seeds_of(s, c, h_max, r_max, idx, n))


def _seeds_of(s: Setting, c: Classes, h_max: int, r_max: int, idx: np.ndarray, n, pipe=None,
              b: PlanBatch | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(H, R) of `_seeds` for the classes `idx` at `n` replicas, all at once (`b`: those plans at H = R = 1 when
    built already, `pipe`: their `_shared_pipeline`)."""
    b = c.plans(idx, n, np.ones(idx.size), np.ones(idx.size)) if b is None else b
    t = _corner_throughput(s, c, b, idx, pipe)       # `throughput`'s figures (a hierarchical class's own parts once)
    hierarchical = c.rows.mode == "hierarchical"
    with np.errstate(divide="ignore", invalid="ignore"):
        sync = t["t_regional_s"] if hierarchical else t["t_sync_s"]
        h = np.clip(np.nan_to_num(np.ceil(sync / t["t_step_s"]), nan=1.0), 1, h_max)
        cycle = np.maximum(h * t["t_step_s"], t["t_regional_s"])
        r = np.clip(np.nan_to_num(np.ceil(t["t_sync_s"] / cycle), nan=1.0), 1, r_max).astype(np.int64) \
            if hierarchical else np.ones(idx.size, np.int64)
    return h.astype(np.int64), r


def _seeds_measured(s: Setting, c: Classes, h_max: int, r_max: int, idx: np.ndarray, measure):
    """(idx, n, h, r, t): `_seeds` of the classes `idx` (at most CHUNK) and their `_measure`. pp_group classes
    under a compute measure compute their pipeline (`_shared_pipeline`) once, for the seed's throughput at H = 1
    and its measure at the seed's H (the same classes at the same n_hi): `_measure_of`'s figures, which
    `window_compute` computes from `throughput` = `modes.pp_group` there (tests/test_shared_corners.py).
    Hierarchical classes under a compute measure score the seed at its H and R as their boxes' corners are
    scored (`_corner_throughput`: the class's own parts computed once, the rest per plan; `throughput`'s
    figures bit for bit, tests/test_class_parts.py), not by `throughput` afresh (issue 27 item 5)."""
    if not (isinstance(measure, str) and measure != TIME and c.rows.mode in ("pp_group", "hierarchical")
            and idx.size <= CHUNK):
        idx, n, h, r = _seeds(s, c, h_max, r_max, idx)
        return idx, n, h, r, _measure(s, c, idx, n, h, r, measure)
    n = c.n_hi[idx]
    first = c.plans(idx, n, np.ones(idx.size), np.ones(idx.size))
    pipe = _shared_pipeline(s, c, first)
    h, r = _seeds_of(s, c, h_max, r_max, idx, n, pipe, first)
    b = c.plans(idx, n, h, r)
    with np.errstate(divide="ignore", invalid="ignore"):      # as `window_compute` scores its throughput
        t = _corner_throughput(s, c, b, idx, pipe)
    return idx, n, h, r, _window_measure(s, b, measure, t)


SEED_BATCH = 1 << 10     # seeds `_seeds_within` scores first (then twice as many each time, up to CHUNK)


def _seeds_within(s: Setting, c: Classes, h_max: int, r_max: int, measure, own: np.ndarray | None,
                  limit: float = math.inf) -> tuple[np.ndarray, ...]:
    """The seeds (`_seeds`) with their `measure`, (idx, n, h, r, t) in class order: of every class when
    `own` (the classes' own lower bounds, `class_bound.lower_bounds`) is None; else, in batches of the
    least bounds not yet seeded (SEED_BATCH, then twice as many each time), of the classes whose bound
    is within the tie limit of the least seed scored so far (and `limit`), until none is left. Every
    class left out has its bound, so its seed plan, above that tie limit: the least seed is the same,
    and no seed left out ties with it. The seeds scored are those of every class whose bound is within
    the final limit, and perhaps a few more."""
    if own is None:
        if c.rows.mode == "hierarchical" and c.size <= CHUNK:      # scored as their corners are (`_seeds_measured`)
            return _seeds_measured(s, c, h_max, r_max, np.arange(c.size), measure)
        idx, n, h, r = _seeds(s, c, h_max, r_max)
        return idx, n, h, r, _measure(s, c, idx, n, h, r, measure)
    done = np.zeros(c.size, bool)
    parts, batch = [], SEED_BATCH
    while (pending := np.flatnonzero(~done & (own <= limit))).size:
        if pending.size > batch:      # the `batch` least bounds among them
            pending = np.sort(pending[np.argpartition(own[pending], batch)[:batch]])
        done[pending] = True
        idx, n, h, r, t = _seeds_measured(s, c, h_max, r_max, pending, measure)
        parts.append((idx, n, h, r, t))
        if np.isfinite(t).any():
            limit = min(limit, float(tie_limit(np.nanmin(t[np.isfinite(t)]))))
        batch = min(2 * batch, CHUNK)
    if not parts:
        none = np.zeros(0, np.int64)
        return none, none, none, none, np.zeros(0)
    idx, n, h, r, t = (np.concatenate(x) for x in zip(*parts))
    back = np.argsort(idx, kind="stable")
    return idx[back], n[back], h[back], r[back], t[back]


def seed_measures(s: Setting, c: Classes, h_max: int, r_max: int, measure: str = TIME) -> np.ndarray:
    """The measure of each class's first plan (`_seeds`: all replicas, the smallest compute-bound H and
    R): real plans of the classes, so the least of them is a valid incumbent (inf where none has one)."""
    h_max, r_max = _h_r_max(c, h_max, r_max)
    return _measure(s, c, *_seeds(s, c, h_max, r_max), measure)


def _branch_and_bound(s: Setting, c: Classes, h_max: int, r_max: int, visit: Callable, cutoff: Callable,
                      n_range: tuple[np.ndarray, np.ndarray] | None = None,
                      deadline: float = math.inf, measure: str = TIME,
                      dominated: Callable | None = None,
                      n_cap: Callable | None = None,
                      box_bound: Callable | None = None) -> tuple[int, dict[str, np.ndarray] | None]:
    """Search (n, H, R) boxes of every class.

    `visit(idx, n, h, r, t)` sees every scored plan (t its `measure`); `cutoff(box)` gives, per
    box, the measure above which its plans are of no interest (read after each visit);
    `dominated(box, lower)`, if given, marks boxes none of whose plans can be the answer
    either (elementwise; given the fields i, n1, h1, r1 of the boxes not yet pruned); `n_cap(box)`, if given, the largest n of interest per box (read before each
    round of bounds): boxes are cut down to it, which tightens their bound's n1 / n2 factor
    (plans beyond it are of no interest, so nothing of interest is dropped). `box_bound(s, c, box,
    measure, mono, cut)`, if given, replaces `_box_bound` (another cost model's bound, e.g. a fleet's
    proportional rule, `planner.sync.proportional.boxes`). Returns the number of plans scored and, when `deadline` (time.perf_counter())
    passed first, the boxes left open with their lower bounds (key "lower"); else None.
    """
    mono = monotone.check(s)
    if mono.unsupported:      # no valid bound: never certify (planner.solve falls back to the exhaustive oracle)
        raise InputError(list(mono.unsupported))
    lo, hi = n_range if n_range is not None else (c.n_lo, c.n_hi)
    keep = lo <= hi
    i, n1, n2 = np.flatnonzero(keep), lo[keep], hi[keep]
    # One node (local training, every efficiency 1) never shares a box with two or more,
    # whose efficiencies may exceed 1 (`monotone`): the bound compares plans of n >= 2 only.
    single = (n1 == 1) & (n2 > 1)
    i = np.concatenate([i, i[single]])
    n1, n2 = np.concatenate([np.where(single, 2, n1), np.ones(int(single.sum()), np.int64)]), \
        np.concatenate([n2, np.ones(int(single.sum()), np.int64)])
    size = i.size
    # H and R span their whole range in every first box: read-only broadcast views (no memory per class);
    # every later round's boxes are new arrays (`_split`)
    box = {"i": i, "n1": n1, "n2": n2,
           "h1": np.broadcast_to(np.int64(1), size), "h2": np.broadcast_to(np.int64(h_max), size),
           "r1": np.broadcast_to(np.int64(1), size), "r2": np.broadcast_to(np.int64(r_max), size)}
    if box_bound is None and isinstance(measure, str) and measure != TIME:
        # each box's g_up and tokens per replica (T_up / n2), written by `_compute_box`, handed on by `_split`
        box.update({key: np.full(size, np.inf) for key in INHERITED})
    # the side weights of `_split` where `_compute_box` couples eta_R with the tokens (`hier_bound`) under C_local:
    # H's width no longer widens the bound's efficiency range, n's still does (a performance choice, as every weight
    # is; under C_quality, whose bound Q(T_up, g_up, m_lo) is most often the sharper, they were measured worse)
    weights = COUPLED_SIDE_WEIGHTS if box_bound is None and isinstance(measure, str) and measure == "1/c_local" \
        and _coupled_applies(s, c) else None
    evaluations = 0
    if box["i"].size and time.perf_counter() > deadline:     # not even the first bounds: every box open, bound 0
        return evaluations, {**box, "lower": np.zeros(box["i"].size)}
    while box["i"].size:
        if n_cap is not None:
            box["n2"] = np.minimum(box["n2"], n_cap(box))
            box = {k: v[box["n1"] <= box["n2"]] for k, v in box.items()}
            if not box["i"].size:
                break
        lower, corners = (box_bound or _box_bound)(s, c, box, measure, mono,
                                                  np.broadcast_to(cutoff(box), box["i"].shape))
        for idx, n, h, r, value in corners:
            evaluations += idx.size
            visit(idx, n, h, r, value)
        leaf = (box["n1"] == box["n2"]) & (box["h1"] == box["h2"]) & (box["r1"] == box["r2"])
        cut = np.broadcast_to(cutoff(box), lower.shape)
        alive = ~leaf & ~(lower > cut)      # a NaN bound (no meaning) is kept
        if dominated is not None:     # elementwise: asked only of the boxes still alive (the same marks)
            on = np.flatnonzero(alive)
            alive[on] = ~dominated({k: box[k][on] for k in ("i", "n1", "h1", "r1")}, lower[on])
        if alive.any() and time.perf_counter() > deadline:
            left = {k: v[alive] for k, v in box.items()}
            left["lower"] = np.nan_to_num(lower[alive], nan=0.0)
            return evaluations, left
        tied = lower[alive] >= cut[alive] / (1 + TIE_REL)
        box = {k: v[alive] for k, v in box.items()}
        del lower, cut, leaf, corners        # this round's arrays, freed before its children are made (peak memory)
        compute = getattr(measure, "base", measure) != TIME
        box = _split(box, tied, c, compute=compute,
                     most=COMPUTE_SPLIT if compute and box["i"].size >= MANY_BOXES else SPLIT, weights=weights)
    return evaluations, None


def _geometric_edges(lo: np.ndarray, hi: np.ndarray, parts: np.ndarray) -> np.ndarray:
    """Per row, parts + 1 strictly increasing integers from lo to hi + 1 (columns beyond parts:
    hi + 1), spaced about geometrically (lo >= 1): part k is [edges[k], edges[k + 1] - 1].
    Geometric parts have like ratios hi / lo, which the bounds' slack depends on.

    Computed once per distinct (lo, hi, parts) and taken for each row (issue 27 item 5): a round's boxes are
    mostly cut along sides of the same few ranges (every class's first n range, the H and R ranges), 52,342
    rows with 557 distinct triples over a search at 10^4 nodes beyond the envelope, and each row costs
    SPLIT - 1 powers. The same integers: every operation of `_geometric_edges_of` is elementwise within a row
    (its columns read only that row's lo, hi and parts), so a row's edges are those of any row with its
    triple. The key (lo S + hi) (SPLIT + 1) + parts, S = max(hi) + 2 > hi >= lo >= 1 and 1 <= parts <= SPLIT,
    tells triples apart and stays below 2^62 where S < 2^28; beyond that, or when at least half the rows are
    distinct, every row is computed (tests/test_geometric_edges.py compares both with each row alone)."""
    if lo.size > 1:
        span = int(hi.max()) + 2
        if span < 1 << 28:
            key = (lo * span + hi) * (SPLIT + 1) + parts
            _, first, back = np.unique(key, return_index=True, return_inverse=True)
            if 2 * first.size <= lo.size:
                return _geometric_edges_of(lo[first], hi[first], parts[first])[back.ravel()]
    return _geometric_edges_of(lo, hi, parts)


def _geometric_edges_of(lo: np.ndarray, hi: np.ndarray, parts: np.ndarray) -> np.ndarray:
    """`_geometric_edges` of every row, each computed."""
    k = np.arange(SPLIT + 1)[None, :]
    lo_, hi_, parts_ = lo[:, None].astype(float), hi[:, None].astype(float), parts[:, None]
    a = np.empty((lo.size, SPLIT + 1))
    with np.errstate(over="ignore"):      # the inner columns only: k = 0 and k >= parts are set below
        a[:, 1:SPLIT] = np.floor(lo_ * ((hi_ + 1) / lo_) ** np.minimum(k[:, 1:SPLIT] / parts_, 1.0))
    a = np.where(k >= parts_, hi_ + 1, np.where(k == 0, lo_, a)).astype(np.int64)
    strictly = k + np.maximum.accumulate(a - k, axis=1)          # s_k = max(a_k, s_(k-1) + 1)
    return np.minimum(strictly, hi[:, None] + 1 - parts_ + k)   # room left for the parts after k


def _split(box: dict[str, np.ndarray], tied: np.ndarray | None = None, c: Classes | None = None,
           compute: bool = False, most: int = SPLIT, weights: tuple[float, float] | None = None) -> dict[str, np.ndarray]:
    """Cut each box along its longest side (in log terms) into up to `most` parts (2 <= most <= SPLIT,
    the width of `_geometric_edges`; any such count is exact: the children cover their box plan for
    plan, and each is bounded or searched as any box); `weights` (n's, H's), under `compute` only: the
    factors on n's and H's log ratios instead of COMPUTE_SIDE_WEIGHT for both; a `tied` box
    (its bound at the cutoff: its plans can at best tie) along n, else H, else R, the tie order.
    The member axis of a pipeline class counts by the ratio of its pipeline steps (what
    its width adds to the bound's slack), plus a trace of log(j2 / j1) so that a side of
    several members is never of length 0. `compute` (the max_compute measures): parts about
    geometric, and the log ratios of n and H counted twice (COMPUTE_SIDE_WEIGHT): n widens both
    the tokens range and the replica multiplier's, H both the tokens range (q falls with H) and
    g's (eta_H falls with H_eff); R's counts once (1.5 was measured worse). n's weight halved the
    boxes searched there, H's cut those of 10^4 nodes beyond the envelope a further 15%
    (docs/planner.md); the time measure keeps equal parts (measured no better
    for it). Which side is cut is a performance choice: every choice is exact (the children cover
    their box plan for plan)."""
    if not box["i"].size:
        return box
    sides = ("n", "h", "r")
    ratios = np.stack([np.log(box[f"{d}2"] / box[f"{d}1"]) for d in sides])
    if compute:
        if weights is None:
            ratios[:2] *= COMPUTE_SIDE_WEIGHT
        else:
            ratios[0] *= weights[0]
            ratios[1] *= weights[1]
    if c is not None and c.members is not None:
        step = c.member_step_s
        with np.errstate(divide="ignore", invalid="ignore"):
            spread = np.log(step[box["i"], box["r2"] - 1] / step[box["i"], box["r1"] - 1])
        ratios[2] = np.nan_to_num(spread, nan=0.0, posinf=0.0) + 1e-6 * ratios[2]
    along = np.argmax(ratios, axis=0)
    if tied is not None:
        along = np.where(tied, np.argmax(ratios > 0, axis=0), along)
    lo = np.choose(along, [box[f"{d}1"] for d in sides])
    hi = np.choose(along, [box[f"{d}2"] for d in sides])
    width = hi - lo + 1
    parts = np.minimum(most, width)
    # the children in box order, part k = 0..parts-1 of each: a box's fields repeated `parts` times (np.repeat,
    # new arrays) and the edges of its parts read row by row
    if compute:
        edges = _geometric_edges(lo, hi, parts)
        cut = np.arange(SPLIT)[None, :] < parts[:, None]
        start, end = edges[:, :-1][cut], edges[:, 1:][cut] - 1
        del edges, cut
    else:
        each = np.repeat(parts, parts)
        k = np.arange(each.size) - np.repeat(np.cumsum(parts) - parts, parts)
        start = np.repeat(lo, parts) + (np.repeat(width, parts) * k) // each
        end = np.repeat(lo, parts) + (np.repeat(width, parts) * (k + 1)) // each - 1
        del k, each
    side = np.repeat(along.astype(np.int8), parts)          # the side each child is cut along (one byte a child)
    out = {key: np.repeat(v, parts) for key, v in box.items()}
    for j, d in enumerate(sides):      # the cut side's ends written in place (no array of the children's size more)
        on = side == j
        np.copyto(out[f"{d}1"], start, where=on)
        np.copyto(out[f"{d}2"], end, where=on)
    return out


def minimise_time(s: Setting, c: Classes, h_max: int, r_max: int, bound: float = math.inf,
                  deadline: float = math.inf, measure: str = TIME, parts: np.ndarray | None = None,
                  seeded: tuple[np.ndarray, ...] | None = None) -> Found:
    """All plans of the classes within TIE_REL of the least time to target (or of another
    `measure`: `Found.time_s` then holds it, e.g. 1/C_quality for `max_compute`).

    `bound`: a time no plan of interest exceeds (the best found in other classes, or the
    duration limit); boxes above it are pruned from the start. Past `deadline`
    (time.perf_counter()) the search stops; `Found.open_bound` then bounds what is left.

    `parts` (one integer 0..P-1 per class): the classes are P separate questions searched at once
    (the points of a sweep that share the setting, `planner.questions.sweep.shared`); `bound` is then
    one value per part (or one for all), each part keeps its own least time, and the plans returned
    are those within TIE_REL of their own part's least time: part by part exactly what the search
    of that part's classes alone returns (every bound, cutoff and tie test reads only the part's
    own incumbent; the boxes of one class never mix parts).

    `seeded`: the seeds (`_seeds`) with their `measure`, (idx, n, h, r, t), when the caller scored them
    already (`Batches.seeded`): of every class, or of those `_seeds_within` keeps (the others' bound above
    the least seed's tie limit); the same plans as computed here, so nothing changes.

    Classes with a bound of their own (`class_bound.lower_bounds`: pp_group classes under `max_compute`)
    are seeded only where that bound is within the tie limit of the best seed or `bound`
    (`_seeds_within`), and those whose bound exceeds the incumbent's tie limit after the seeds are
    left out of the boxes: no plan of theirs can be kept or improve the incumbent, and their first box
    would be cut by its own bound (never below the class's), so the search is the same but for the
    seeds and corners of such classes, which are not scored (`Found.evaluations` counts the plans
    scored).
    """
    h_max, r_max = _h_r_max(c, h_max, r_max)
    part = np.broadcast_to(np.int64(0), c.size) if parts is None else np.asarray(parts, np.int64)   # read only
    best = np.array(np.broadcast_to(np.asarray(bound, dtype=float), (max(np.size(bound), int(part.max(initial=0)) + 1),)))
    kept: list[tuple[np.ndarray, ...]] = []
    # Per class, q: a visited plan within TIE_REL of the class's least visited measure m, the
    # first such in tie order (within one class every decision but (n, H, R) is equal, so
    # `tie_key` orders its plans by (n, H, R)).
    q_m, q_t = np.full(c.size, np.inf), np.full(c.size, np.inf)
    q_n, q_h, q_r = (np.zeros(c.size, np.int64) for _ in range(3))

    def update_q(i, n, h, r, t):
        np.minimum.at(q_m, i, t)
        near = t <= tie_limit(q_m[i])
        i, n, h, r, t = i[near], n[near], h[near], r[near], t[near]
        if i.size > 1 and not (i[1:] > i[:-1]).all():     # else one plan per class, in class order (seeds)
            order = np.lexsort((r, h, n, i))
            first = order[np.r_[True, i[order][1:] != i[order][:-1]]]
            i, n, h, r, t = i[first], n[first], h[first], r[first], t[first]
        better = (q_t[i] > tie_limit(q_m[i])) | _lex_less((n, h, r), (q_n[i], q_h[i], q_r[i]))
        i = i[better]
        q_t[i], q_n[i], q_h[i], q_r[i] = t[better], n[better], h[better], r[better]

    def level(idx):
        """The measure of interest per plan of the classes `idx`: its part's least, within TIE_REL."""
        return tie_limit(best[0]) if parts is None else tie_limit(best[part[idx]])

    def visit(idx, n, h, r, t):
        ok = np.isfinite(t)
        if ok.any():
            if parts is None:
                best[0] = min(best[0], t[ok].min())
            else:
                np.minimum.at(best, part[idx[ok]], t[ok])
            update_q(idx[ok], n[ok], h[ok], r[ok], t[ok])
        keep = ok & (t <= level(idx))
        kept.append((idx[keep], n[keep], h[keep], r[keep], t[keep]))

    def dominated(box, lower):
        """Boxes whose every plan comes after the class's plan q in tie order and is not faster
        than q by more than the tie tolerance: such a plan is the answer only if it ties with
        the optimum while q, at most TIE_REL slower, does not. (Without this, a plateau of
        equal times, e.g. every compute-bound H and R with no efficiency loss, would be
        enumerated plan by plan.)"""
        i = box["i"]
        return (q_t[i] <= tie_limit(lower)) & ~_lex_less((box["n1"], box["h1"], box["r1"]),
                                                         (q_n[i], q_h[i], q_r[i]))

    if time.perf_counter() > deadline:      # past the deadline: nothing scored, nothing known (bound 0)
        none = np.zeros(0, np.int64)
        return Found(c.plans(none, none, none, none), np.zeros(0), 0, 0.0)
    own = class_bound.lower_bounds(s, c, measure) if parts is None else None
    if seeded is None:
        seeded = _seeds_within(s, c, h_max, r_max, measure, own, float(tie_limit(best[0])))
    seeds = seeded[0].size
    visit(*seeded)
    del seeded
    n_range = None
    if own is not None:      # classes whose own bound is above the incumbent's tie limit: no box (docstring)
        n_range = (c.n_lo, np.where(own > tie_limit(best[0]), c.n_lo - 1, c.n_hi))
    count, left = _branch_and_bound(s, c, h_max, r_max, visit, lambda box: level(box["i"]), n_range=n_range,
                                    deadline=deadline, measure=measure, dominated=dominated)
    idx, n, h, r, t = (np.concatenate(x) for x in zip(*kept))
    final = t <= level(idx)
    open_bound = float(left["lower"].min()) if left is not None else math.inf
    return Found(c.plans(idx[final], n[final], h[final], r[final]), t[final], seeds + count, open_bound, idx[final])


def _lex_less(a: tuple[np.ndarray, ...], b: tuple[np.ndarray, ...]) -> np.ndarray:
    """Elementwise: the tuple of arrays `a` comes strictly before `b` lexicographically.

    From the last key to the first, less = (x < y) | ((x == y) & less_of_the_keys_after): 4 ufunc
    calls a key after the last (~60 calls a 64-node solve, 36 of them on empty batches, returned at
    once); the same booleans as comparing key by key from the first (tests/test_lex_less.py)."""
    if not np.size(a[0]):
        return np.zeros(np.shape(a[0]), bool)
    less = np.asarray(a[-1] < b[-1])
    for x, y in zip(a[-2::-1], b[-2::-1]):
        less = (x < y) | ((x == y) & less)
    return less


def fewest_nodes_within(s: Setting, c: Classes, h_max: int, r_max: int, limit_s: float,
                        at_most: float = math.inf, deadline: float = math.inf,
                        measure: str = TIME, witness: list | None = None) -> tuple[float, int, float]:
    """The fewest nodes of any plan of the classes reaching the target within `limit_s` (inf if none),
    the plans scored, and (when stopped at `deadline`) the fewest nodes a box left open could use.
    Only plans with fewer nodes than `at_most` are searched (`at_most` is returned if there are none).

    With another `measure`, the fewest nodes of a plan whose measure is at most `limit_s`
    (e.g. measure 1/C_local, limit 1/C_target: C_local within the duration limit reaches C_target).
    `witness`: if given, a plan of the fewest nodes found below `at_most` (one row, a scored plan within
    `limit_s`, the first found at that count) is appended to it; nothing if none was found."""
    h_max, r_max = _h_r_max(c, h_max, r_max)
    fewest = at_most
    held = None            # (class, n, H, R) of a plan of `fewest` nodes found here

    def visit(idx, n, h, r, t):
        nonlocal fewest, held
        ok = np.flatnonzero(t <= limit_s)
        if ok.size:
            nodes = c.nodes(idx[ok], n[ok])
            a = int(np.argmin(nodes))
            if nodes[a] < fewest:
                fewest, held = float(nodes[a]), (idx[ok[a]], n[ok[a]], h[ok[a]], r[ok[a]])

    if time.perf_counter() > deadline:      # past the deadline: nothing scored; any n may hold the answer
        return fewest, 0, float(c.nodes(np.arange(c.size), c.n_lo).min())
    idx, n, h, r = _seeds(s, c, h_max, r_max)
    t = _measure(s, c, idx, n, h, r, measure)
    visit(idx, n, h, r, t)
    count = _descend_nodes(s, c, h_max, r_max, limit_s, measure, idx[t <= limit_s], visit)

    def n_cap(box):
        """The largest n whose plans use fewer than `fewest` nodes: N = max(n unit, min_nodes) < fewest."""
        i = box["i"]
        if not math.isfinite(fewest):
            return box["n2"]
        cap = np.ceil(fewest / c.unit[i]).astype(np.int64) - 1
        return np.where(c.min_nodes[i] < fewest, cap, 0)

    searched, left = _branch_and_bound(
        s, c, h_max, r_max, visit,
        lambda box: np.where(c.nodes(box["i"], box["n1"]) >= fewest, -np.inf, limit_s), deadline=deadline,
        measure=measure, n_cap=n_cap)
    open_nodes = float(c.nodes(left["i"], left["n1"]).min()) if left is not None else math.inf
    if witness is not None and held is not None:
        witness.append(c.plans(*(np.array([x]) for x in held)))
    return fewest, c.size + count + searched, open_nodes


DESCENT_CLASSES = 1024    # classes whose fewest nodes `_descend_nodes` looks for before the search


def distinct(values) -> np.ndarray:
    """The sorted distinct values of a 1-D array without NaN, as `np.unique` gives them, without
    `np.unique`: its first call in a process imports numpy.ma (23 ms of CPU, paid by a process's
    first reference search or `_descend_nodes`; issue 27 item 3). Sorted, a value is kept where it
    differs from the one before it."""
    x = np.sort(np.asarray(values).ravel())
    return x[np.concatenate(([True], x[1:] != x[:-1]))] if x.size else x


def _descend_nodes(s: Setting, c: Classes, h_max: int, r_max: int, limit: float, measure: str, feasible: np.ndarray,
                   visit: Callable) -> int:
    """A first incumbent for `fewest_nodes_within`, so that its bounds prune from the start: for the
    DESCENT_CLASSES classes among `feasible` (classes whose seed at n_hi is within `limit`) with the
    fewest estimated nodes (nodes at n_hi times the seed's share of the limit), bisect on n with the
    seed's H and R at each n (`_seeds`), keeping the smallest n found within the limit. A heuristic:
    every plan it scores is a real plan passed to `visit`, so whatever it finds is a valid incumbent
    and the search stays exact. Returns the plans scored."""
    if feasible.size == 0:
        return 0
    idx = distinct(feasible)
    seed = _measure(s, c, *_seeds(s, c, h_max, r_max, idx), measure)
    estimate = c.nodes(idx, c.n_hi[idx]) * np.where(np.isfinite(seed), seed / limit, np.inf)
    idx = idx[np.argsort(estimate, kind="stable")[:DESCENT_CLASSES]]
    lo, hi = c.n_lo[idx].copy(), c.n_hi[idx].copy()
    count = idx.size
    while (lo < hi).any():
        on = lo < hi
        i, mid = idx[on], (lo[on] + hi[on]) // 2
        plan = _seeds(s, c, h_max, r_max, i, mid)
        t = _measure(s, c, *plan, measure)
        visit(*plan, t)
        count += i.size
        ok = t <= limit
        hi[on], lo[on] = np.where(ok, mid, hi[on]), np.where(ok, lo[on], mid + 1)
    return count


def with_nodes(c: Classes, nodes: int) -> Classes | None:
    """The classes narrowed to plans of exactly `nodes` nodes (None if no class has them)."""
    n = nodes // c.unit                      # N = max(n unit, min_nodes): n = N // unit either way
    ok = (c.nodes(np.arange(c.size), n) == nodes) & (c.n_lo <= n) & (n <= c.n_hi)
    if not ok.any():
        return None
    sub = c.take(ok)
    sub.n_lo = sub.n_hi = n[ok]
    return sub


def tie_key(s: Setting, b: PlanBatch, i: int) -> tuple:
    """The documented order among tied plans: fewer nodes, less compression, smaller H and R,
    then mode, precision, stages, group size, activation compression, the shorter inner
    step, fewer micro-batches, streaming on before off, expert-parallel scope, pipeline
    schedule (the profile's, then gpipe, 1f1b, interleaved, zero_bubble), fewer ZeRO-3 shards.

    (The inner step comes before M: when the WAN sync sets the pace several M tie, and
    the one with the shortest pipeline step, which the space keeps, is preferred.)"""
    t_step = float(throughput(s, b.take(slice(i, i + 1)))["t_step_s"][0])
    return (int(b.nodes[i]), float(b.compression[i]), int(b.inner_steps[i]), int(b.regional_rounds[i]),
            MODE_ORDER.index(b.mode), PRECISION_ORDER.index(b.precision), int(b.stages[i]), int(b.group_size[i]),
            float(b.activation_compression[i]), t_step, int(b.micro_batches[i]), 0 if b.streaming[i] else 1,
            EP_ORDER.index(b.expert_parallel), int(b.schedule[i]), int(b.zero_shards[i]))


def first_in_tie_order(s: Setting, b: PlanBatch) -> int:
    """Index of the plan of a batch that comes first in `tie_key` order (vectorised)."""
    t_step = throughput(s, b)["t_step_s"]
    columns = [b.nodes, b.compression, b.inner_steps, b.regional_rounds, b.stages, b.group_size,
               b.activation_compression, t_step, b.micro_batches, np.where(b.streaming, 0, 1), b.schedule,
               b.zero_shards]
    return int(np.lexsort(columns[::-1])[0])


def batches(s: Setting, space: DecisionSpace):
    """The classes of the space, one group per mode, precision and EP scope, in that order."""
    for mode in space.modes:
        for precision in space.precisions:
            for ep in space.expert_scopes(s, mode):
                c = space.classes(s, mode, precision, ep)
                if c is not None:
                    yield c


class Batches(list):
    """Class groups in search order; `complete` is False when a deadline stopped listing them
    (the groups not listed are unsearched: a search over these must not claim a bound). `seeded`:
    id of a group -> its seeds scored with the search's own measure and H, R ranges, (idx, n, h, r,
    t) as `minimise_time` would score them first (passed to it as `seeded`; `take_seeds`)."""

    complete: bool = True

    def __init__(self, groups=()):
        super().__init__(groups)
        self.seeded: dict[int, tuple[np.ndarray, ...]] = {}

    def take_seeds(self, c: Classes) -> tuple[np.ndarray, ...] | None:
        """The seeds of group `c` scored when ordering (None if not), handed over once (then freed)."""
        return self.seeded.pop(id(c), None)


def batches_most_promising_first(s: Setting, space: DecisionSpace, measure: str = TIME,
                                 deadline: float = math.inf, prune_rows: bool = False) -> Batches:
    """The class groups ordered by their best seed plan, so that early incumbents prune the rest.
    Past `deadline` (time.perf_counter()) no further group is built or scored: those listed so
    far are returned with `complete` False.

    Groups whose classes have bounds of their own (`class_bound.lower_bounds`: pp_group classes under
    the max_compute measures) are seeded after the others, and only their classes whose bound is within
    the tie limit of U, the least seed of the other groups, are seeded (`_seeds_within`'s `limit`; issue
    27 item 5). Every seed is a plan of the space (`seed_measures`), so the optimum is at most U, and a
    class whose bound is above U's tie limit has no plan tied with the optimum: its seed is never the
    answer nor tied with it. Such a group's key is then its least seed if that is within U's tie limit
    (every class whose bound is below that seed is seeded, as without the limit), else a value above
    U's tie limit (the least seed scored, or inf if none): it comes after the group of U either way, and
    the search of every group is exact whatever their order, so the answer is the same; only which
    seeds are scored (`Found.evaluations`) and the order of the groups after U's may change. Its seeds
    handed to `minimise_time` are those of the classes seeded; the others, if their bound is within
    the incumbent's tie limit there, get boxes as any class does.

    `prune_rows` (the least measure's search, `objective_search.max_compute`, under a max_compute measure
    itself, not a robust key): the pp_group groups are listed only once U is known, and only the pipe rows
    whose own bound (`class_bound.row_lower_bounds`, at most every class bound of the row) is within U's tie
    limit are expanded into classes (`DecisionSpace.pp_group_rows`, `classes_of_rows`). The classes of a row
    left out all have their bound above U's tie limit, so every plan of theirs is above it: none is the answer
    or tied with it (U is a plan's measure, so the optimum is at most U), none can lower an incumbent the
    search holds (at most U's tie limit: the least seed of a group searched before U's, or the bound handed
    on from U's group), and above `_seeds_within` seeds none of them. The classes kept are the same classes in
    the same order (less those left out) with the same bounds, seeds and boxes: the same answer, value and
    order of the groups, and the same plans scored but for the corners of boxes `minimise_time` would give
    such a class when the incumbent it holds is a bound handed on at most TIE_REL above U (fewer, then). The
    listing, the class bounds and the seeds' bookkeeping of the rows left out are saved (issue 27 item 5).
    Likewise a group of pipelines over the WAN (`prune_rows`) is listed only once U0, the least seed of the
    groups before the pp_group ones, is known, and only where `class_bound.wan_lower_bound` (a lower bound of
    every such plan's measure at its precision: any S of the listing's, any Ca, M and schedule) is within U0's
    tie limit: a group left out has every plan above it, so, as for the rows, none is the answer or tied with it
    and none lowers an incumbent; the groups listed are listed and seeded as before (their key, place in the
    order and seeds unchanged). U, which the pp_group rows are bounded by, is then the least seed of these
    groups and of the WAN groups listed: the U of before, since a group left out has every seed above U0's tie
    limit, so above U0. So the same answer, value and bound; `Found.evaluations` fall by the group's seeds and
    search. `DecisionSpace.size` still lists it.
    Not for other questions: fewest nodes in the window needs every plan within its limit, not the best."""
    scored, complete, seeds_of, deferred, wan = [], True, {}, [], []
    groups = [(mode, precision, ep) for mode in space.modes for precision in space.precisions
              for ep in space.expert_scopes(s, mode)]          # the order of `batches`
    ordering = getattr(measure, "ordering", measure)
    h_max, r_max = space.max_inner_steps, space.max_regional_rounds

    def seed(c, own, limit):
        # an order, not a bound: the least seed, exactly, with the classes' own bounds where they have them
        idx, n, h, r, t = _seeds_within(s, c, h_max, r_max, ordering, own, limit)
        key = float(np.nanmin(t)) if np.isfinite(t).any() else math.inf
        # the same plans `minimise_time` scores first when its H range is the same (_h_r_max; R enters
        # the seeds only of hierarchical classes, whose R range is the space's), or when every seed's H is
        # within its narrower range (a pipeline over the WAN's: H = 1): a seed's H is clip(x, 1, H_max) for
        # an x of its class alone (`_seeds_of`), which is clip(x, 1, H') for H' <= H_max wherever it is at
        # most H'. Kept for it (issue 27 item 5: the WAN pipelines' seeds were scored twice)
        h_range = _h_r_max(c, h_max, r_max)[0]
        if ordering is measure and (h_range == h_max or not (h > h_range).any()):
            seeds_of[id(c)] = (idx, n, h, r, t)
        return key

    rows_first = prune_rows and ordering is measure and isinstance(measure, str) \
        and measure in class_bound.COMPUTE_MEASURES
    for at, (mode, precision, ep) in enumerate(groups):
        rows = None
        if rows_first and mode == "pp_group" and time.perf_counter() <= deadline:
            rows = space.pp_group_rows(s, precision)            # None: `classes` is asked instead
            if rows is not None and class_bound.rows_bounded(s, rows, ordering):
                deferred.append((at, (precision, rows), None))     # listed below, its rows bounded by U
                continue
        if rows_first and mode == "pipeline_wan":      # listed below if its bound is within U's tie limit
            wan.append((at, precision, ep))
            continue
        if rows is not None:                    # rows without a bound of their own: every row listed
            c = space.classes_of_rows(s, precision, rows, None)
        else:
            c = space.classes(s, mode, precision, ep) if time.perf_counter() <= deadline else None
        if time.perf_counter() > deadline:      # before building, or built but not yet scored
            complete = False
            break
        if c is None:
            continue
        own = class_bound.lower_bounds(s, c, ordering)
        if own is None:
            scored.append((seed(c, None, math.inf), at, c))
        else:                                   # seeded below U's tie limit, once the others are
            deferred.append((at, c, own))
    least = min((key for key, _, _ in scored), default=math.inf)
    limit = float(tie_limit(least)) if math.isfinite(least) else math.inf
    for at, precision, ep in wan:       # pipelines over the WAN: listed as `batches` lists them unless bounded above
        wan_bound = class_bound.wan_lower_bound(s, precision, space.pipeline_stages(s, precision, "pipeline_wan"),
                                                space.activation_compression, ordering)
        if wan_bound > limit:
            continue
        c = space.classes(s, "pipeline_wan", precision, ep) if time.perf_counter() <= deadline else None
        if time.perf_counter() > deadline:
            complete = False
            break
        if c is not None:
            scored.append((seed(c, None, math.inf), at, c))
    # U with the WAN groups' seeds, as before they were bounded: a group left out has every seed above `limit`
    least = min((key for key, _, _ in scored), default=math.inf)
    limit = float(tie_limit(least)) if math.isfinite(least) else math.inf
    for at, c, own in deferred:
        if own is None and time.perf_counter() <= deadline:     # pipe rows: those within U's tie limit listed
            precision, rows = c
            shown = space.compression_shown(s, precision)
            kept = class_bound.row_lower_bounds(s, rows, shown, ordering) <= limit
            c = space.classes_of_rows(s, precision, rows, None if kept.all() else kept)
            if c is None:
                continue
            own = class_bound.lower_bounds(s, c, ordering)
        if time.perf_counter() > deadline:      # built but not scored: not listed
            complete = False
            break
        scored.append((seed(c, own, limit), at, c))
    ordered = Batches(c for _, _, c in sorted(scored, key=lambda x: (x[0], x[1])))
    ordered.complete = complete
    ordered.seeded = seeds_of
    return ordered


# The search's parts that the robust search (planner.robust) and the proportional rule's box searches
# (planner.sync.proportional) build on, by their public names.
measure_plans = _measure
box_bound = _box_bound
time_box = _time_box
compute_box = _compute_box
fast_slow_r = _fast_slow_r
h_r_max = _h_r_max
seeds = _seeds
branch_and_bound = _branch_and_bound
