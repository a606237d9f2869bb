"""An upper bound of a hierarchical box's compute under the fitted quality model that couples the sync
interval's penalty with the tokens it buys (issue 27 item 5).

`bnb._compute_box` bounds a box [n1, n2] x [H1, H2] x [R1, R2] by g_up 6 P_act T_up: g_up, the efficiency at
the most efficient corner (n1, H1, R1), times the tokens of the fastest corner (n1, H2, R2). Under the fitted
quality model (the dtplan profile, `planner.cost.quality_fit`) g's replica factor eta_R falls steeply with
H_eff = H sqrt(R) while the tokens rise with it until the compute is the bottleneck, so on a box of a wide H
range the two corners are far apart and the bound is loose: beyond the evidence envelope at 10^4 nodes every
hierarchical fp16 plan is at least 1.17 times below the optimum's compute, yet that group's search scored
~34,000 plans to show it. Here both factors are taken at the same H_eff.

The bound. A hierarchical plan (`modes.hierarchical`) of class k with n replicas (K = n, or floor(n / Z) under
ZeRO-3), H inner steps and R regional rounds runs tokens_per_outer = B K H R f per global cycle of
c_glob >= max(R H t_step, R t_reg, t_glob(G)) (streaming: c_reg = max(H t_step, t_reg), c_glob =
max(R c_reg, t_glob), exactly this max; without: the sums, above it). t_step and t_reg read the class alone
(`modes.hierarchical_class_parts`, where no tensor-parallel degree is chosen and experts are not sharded
globally); t_glob(G) = sync_base(G) f(G) is non-decreasing in G = floor(n / k) (`physics.sync_base_s`; the
straggler factor with c >= 0, which `monotone.check` requires before any search), so t_glob(G) >=
t_glob(G1) on the box. With x = H sqrt(R) = H_eff, H / t_reg = x / (sqrt(R) t_reg) and H R / t_glob =
x sqrt(R) / t_glob, whose lesser is at most their geometric mean x / sqrt(t_reg t_glob); so the tokens per
second are

    B K f min(1 / t_step, H / t_reg, H R / t_glob) <= B K2 f min(1 / t_step, x / sqrt(t_reg t_glob(G1))).

Under the fitted model g = eta_H eta_C eta_A eta_R with eta_H = 1 / s (alpha = 0), eta_C and eta_A (1 for a
hierarchical plan) read only the class, and eta_R = min(1, exp(o - p(K) (ln x / ln 30)^d)) for K > 1 and
x > 1 (else 1), p(K) = c (P / 1e9)^-e (ln K)^gamma (`quality_fit.replica_interval_factor`), non-decreasing
in K where c >= 0 and gamma > 0, so eta_R(K, x) <= min(1, exp(o' - p(K1) (ln x / ln 30)^d)) with
o' = max(o, 0) (which also covers x = 1). C_local = 6 P_act T g (the fitted model's eta_R does not read the
tokens) and C_quality = g min(C_thr, max(C'_1, 1e10)) <= g 6 P_act T, so every plan of the box has

    C <= 6 P_act W' B f K2 eta_H eta_C eta_A max over u in [ln x1, ln x2] of exp(F(u)),
    F(u) = min(ln a, ln b + u) + min(0, o' - p (u / ln 30)^d),   a = 1 / t_step, b = 1 / sqrt(t_reg t_glob(G1)),

x1 = H1 sqrt(R1), x2 = H2 sqrt(R2). Where d >= 1 and p >= 0, F is concave on u >= 0 (a minimum of affine
functions plus a minimum of 0 and a concave function), so its maximum on [u1, u2] lies at an end, at a
kink (ln b + u = ln a: u = ln(a / b); o' = p (u / ln 30)^d: u = ln 30 (o' / p)^(1 / d)) or where a smooth
piece is stationary (u + o' - p (u / ln 30)^d: u0 = (ln 30^d / (p d))^(1 / (d - 1)), d > 1; the other pieces
are constant or monotone, so their maxima are at the ends of their pieces, which are among the points
before): the largest of F at these five points, each clipped into [u1, u2], is the maximum. Rounding (the
points' places, a few ulp, move F by far less than 1e-12 relative since |F'| <= 1 + p d u^(d-1) / ln 30^d)
is covered by multiplying by 1 + MARGIN: near the maximiser u* F's slopes are at most 1 + q'(u*) <= 2 (its
left slope, 1 or 0 less q'(u*), is >= 0 there unless u* = u1, where F is taken at u1 itself). No bound (inf)
where d < 1, c < 0 or gamma <= 0, where t_step <= 0 or t_reg or t_glob < 0 (c_glob then need not be at least
each term), where a figure is not finite, or where the bound is not above FLOOR (1e-300: near underflow the
cost model's own exp(o - penalty) might round to a subnormal above a zero of ours); the caller keeps the lesser
of this and its own bound.

tests/test_hier_bound.py checks the bound against every plan of sampled boxes and the searches that use it
against the searches without it and the brute force.

Layer: search (reads the cost model).
"""

from __future__ import annotations

import math

import numpy as np

from planner.cost import quality_fit
from planner.cost.setting import Setting
from planner.cost.straggler import throughput_fraction

MARGIN = 1e-9      # relative: far above the rounding of the candidate points and of F there
FLOOR = 1e-300     # an upper bound at most this is none (inf): far from the underflow of the cost model's exp


def applies(s: Setting) -> bool:
    """Whether the coupled bound is given: the fitted quality model with d >= 1, c >= 0 and gamma > 0 (the
    concavity and monotonicity the module docstring needs)."""
    a = s.assumptions
    if not quality_fit.fitted(a):
        return False
    return (quality_fit.parameter(a, "fit_h_power") >= 1.0 and quality_fit.parameter(a, "fit_replica_coefficient") >= 0.0
            and quality_fit.parameter(a, "fit_replica_power") > 0.0)


def coupled_upper(s: Setting, replicas_lo, replicas_hi, h_eff_lo, h_eff_hi, t_step_s, t_regional_s, t_sync_lo_s,
                  eta_rest) -> np.ndarray:
    """Per box, the module docstring's upper bound of C (C_local or C_quality) on every hierarchical plan of a
    box with K in [replicas_lo, replicas_hi], H_eff in [h_eff_lo, h_eff_hi], the class's t_step and t_reg, the
    WAN sync time t_glob(G1) at the box's least node count, and eta_rest = eta_H eta_C eta_A (the factors of g
    but eta_R), times 1 + MARGIN; inf where no bound is given (`applies` false, or a figure not finite)."""
    a = s.assumptions
    k_lo = np.asarray(replicas_lo, dtype=float)
    shape = np.broadcast(k_lo, np.asarray(h_eff_lo), np.asarray(t_step_s)).shape
    if not applies(s):
        return np.full(shape, np.inf)
    d = quality_fit.parameter(a, "fit_h_power")
    size_b = s.params / 1e9
    held = min(max(s.params, quality_fit.OFFSET_SIZES[0]), quality_fit.OFFSET_SIZES[1]) / 1e9
    offset = max(0.0, quality_fit.parameter(a, "fit_offset") + quality_fit.parameter(a, "fit_offset_size_slope")
                 * math.log(held))
    span = math.log(quality_fit.H_REF)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        p = (quality_fit.parameter(a, "fit_replica_coefficient") * size_b ** -quality_fit.parameter(a, "fit_replica_size_exponent")
             * np.log(np.maximum(k_lo, 1.0)) ** quality_fit.parameter(a, "fit_replica_power"))
        log_a = -np.log(np.asarray(t_step_s, dtype=float))
        log_b = -0.5 * np.log(np.asarray(t_regional_s, dtype=float) * np.asarray(t_sync_lo_s, dtype=float))
        u1 = np.log(np.maximum(np.asarray(h_eff_lo, dtype=float), 1.0))
        u2 = np.log(np.maximum(np.asarray(h_eff_hi, dtype=float), 1.0))
        kink_tokens = log_a - log_b
        kink_penalty = span * (offset / p) ** (1.0 / d)           # inf where p = 0 (clipped to u2 below)
        stationary = (span ** d / (p * d)) ** (1.0 / (d - 1.0)) if d > 1.0 else np.inf
        # the five points (rows), each clipped into [u1, u2] (NaN, from 0 / 0, taken as u1), F at each, the largest
        points = np.stack(np.broadcast_arrays(u1, u2, kink_tokens, kink_penalty, stationary))
        at = np.clip(np.nan_to_num(points, nan=-np.inf), u1, u2)
        best = np.max(np.minimum(log_a, log_b + at) + np.minimum(0.0, offset - p * (at / span) ** d), axis=0)
        upper = (6.0 * s.active_params * s.training_window_s * s.local_batch_tokens * throughput_fraction(a)
                 * np.asarray(replicas_hi, dtype=float) * np.asarray(eta_rest, dtype=float) * np.exp(best)
                 * (1.0 + MARGIN))
        # the facts the bound reads (t_step > 0; t_reg, t_glob >= 0, so c_glob is at least each of the three
        # terms), and a bound far from underflow (where the cost model's own exp may round otherwise)
        usable = (np.asarray(t_step_s) > 0) & (np.asarray(t_regional_s) >= 0) & (np.asarray(t_sync_lo_s) >= 0) \
            & np.isfinite(upper) & (upper > FLOOR)
    return np.where(usable, upper, np.inf)
