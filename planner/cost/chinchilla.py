"""Scaling-law quality terms (docs/cost_model.md section 6).

Loss L(N, D) = E + A / N**alpha + B / D**beta (Besiroglu et al. 2024, arXiv 2404.10102,
the replication of Hoffmann et al. 2022 approach 3): E = 1.8172, A = 482.01,
alpha = 0.3478, B = 2085.43, beta = 0.3658.

Compute-optimal allocation at compute C with r tokens per parameter (25.6 times an
overtraining target): N* = sqrt(C / (6 r)), D* = r N*.

chi(N, D, C; m): the compute C' whose compute-optimal model reaches loss m * L(N, D),
divided by C, capped at 1. The reference bisects 200 times geometrically between
1e10 and 10 C; here the same root is found by a vectorised Newton iteration in
u = ln N* (agreeing to ~1e-14), then clamped to that bracket so that the edges
behave as the reference's.
"""

from __future__ import annotations

import numpy as np

from planner.cost.assumptions import Assumptions

_NEWTON_ITERATIONS = 60


def chinchilla_loss(params, tokens, a: Assumptions):
    """L(N, D) in nats per token; +inf where N <= 0 or D <= 0."""
    n = np.asarray(params, dtype=float)
    d = np.asarray(tokens, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        loss = a.chinchilla_e + a.chinchilla_a * n ** (-a.chinchilla_alpha) + a.chinchilla_b * d ** (-a.chinchilla_beta)
    return np.where((n > 0) & (d > 0), loss, np.inf)


def tokens_per_param(a: Assumptions) -> float:
    """r = 25.6 * overtraining target."""
    return a.tokens_per_param * a.overtrain_target


def optimal_allocation(compute_flop, a: Assumptions):
    """(N*, D*) = (sqrt(C / (6 r)), r N*) for compute C in FLOP."""
    r = tokens_per_param(a)
    n_opt = np.sqrt(np.asarray(compute_flop, dtype=float) / (6.0 * r))
    return n_opt, r * n_opt


def equivalent_optimal_compute(loss, a: Assumptions):
    """The compute C' whose compute-optimal model reaches `loss` (+inf at or below the floor E).

    Solves A e^(-alpha u) + B r^(-beta) e^(-beta u) = loss - E for u = ln N*, a convex
    decreasing function of u: Newton started left of the root climbs to it monotonically.
    """
    r = tokens_per_param(a)
    excess = np.asarray(loss, dtype=float) - a.chinchilla_e
    ok = (excess > 0) & np.isfinite(excess)
    k = np.where(ok, excess, 1.0)
    a_coef, a_exp = a.chinchilla_a, a.chinchilla_alpha
    b_coef, b_exp = a.chinchilla_b * r ** (-a.chinchilla_beta), a.chinchilla_beta
    # Each single term alone reaches k at u_a or u_b; the root lies right of both.
    u = np.maximum(np.log(a_coef / k) / a_exp, np.log(b_coef / k) / b_exp)
    for _ in range(_NEWTON_ITERATIONS):
        term_a = a_coef * np.exp(-a_exp * u)
        term_b = b_coef * np.exp(-b_exp * u)
        step = (term_a + term_b - k) / (a_exp * term_a + b_exp * term_b)
        u = u + step
        if np.all(np.abs(step) <= 1e-15 * np.maximum(1.0, np.abs(u))):
            break
    n_opt = np.exp(u)
    compute = 6.0 * r * n_opt * n_opt
    # No compute reaches a loss at or below E (+inf); an infinite loss (no tokens) needs none (0).
    return np.where(ok, compute, np.where(excess > 0, 0.0, np.inf))


def chi(params, tokens, compute_flop, a: Assumptions, loss_multiplier=1.0):
    """chi(N, D, C; m) = min(1, C' / C), C' clamped to the reference bracket [1e10, 10 C]."""
    c = np.asarray(compute_flop, dtype=float)
    target = chinchilla_loss(params, tokens, a) * np.asarray(loss_multiplier, dtype=float)
    c_eff = equivalent_optimal_compute(target, a)
    c_eff = np.clip(c_eff, a.chi_search_low_flop, a.chi_search_high_factor * c)
    return np.minimum(1.0, c_eff / c)
