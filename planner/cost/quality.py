"""Algorithmic-efficiency factors (docs/cost_model.md section 5).

eta = eta_H * eta_C * eta_A * eta_R, each a fraction of the compute that counts.
All functions are vectorised (numpy arrays broadcast) and pure.
Sources: evasion_calculator.py (`alpha`, `efficiency`, `compression_quality`,
`activation_compression_quality`, `replica_loss_multiplier`); the linear v1
replica penalty from ../shared/conformance/README.md (profile v1_48xA100).
"""

from __future__ import annotations

import numpy as np

from planner.cost import quality_fit
from planner.cost.assumptions import Assumptions, QualityTable, table_points


def alpha(params, a: Assumptions):
    """Sync-interval sensitivity alpha(P) = 0.08 / (1 + log10(P / 1e9) / 5).

    P in parameters (raw count). Singular at P = 1e4; the instance schema keeps P >= 1e6.
    0 under the fitted quality model, whose replica factor carries the sync interval (quality_fit.py).
    """
    params_b = np.asarray(params, dtype=float) / 1e9
    if quality_fit.fitted(a):
        return np.zeros_like(params_b)
    return a.alpha_coefficient / (1.0 + np.log10(params_b) / a.alpha_log_divisor)


def eta_sync_interval(h_eff, params, a: Assumptions, divisor: float = 1.0, alpha_p=None):
    """eta_H = max(0.4, (1 - alpha(P) * log10(H_eff)) / s), s = 1.15 for threshold, else 1. `alpha_p`:
    `alpha(params, a)` where the caller has it (`run.efficiency_without_replicas`, which shows it too)."""
    h = np.asarray(h_eff, dtype=float)
    alpha_p = alpha(params, a) if alpha_p is None else alpha_p
    return np.maximum(a.eta_h_floor, (1.0 - alpha_p * np.log10(h)) / divisor)


def interpolate_quality(table: QualityTable, ratio, scenario_index: int):
    """Quality q(ratio) from a table, linear in log10(ratio), clamped at its ends; q = 1 for ratio <= 1."""
    return interpolate_points(table_points(table, scenario_index), ratio)


def interpolate_points(points: tuple[np.ndarray, np.ndarray], ratio):
    """`interpolate_quality` on a table's points (`planner.cost.assumptions.table_points`): np.interp of
    log10(max(ratio, 1)) between (log10 ratios, qualities), clamped at the ends; 1 where ratio <= 1."""
    log_keys, values = points
    r = np.asarray(ratio, dtype=float)
    q = np.interp(np.log10(np.maximum(r, 1.0)), log_keys, values)
    return np.where(r <= 1.0, 1.0, q)


def compression_quality(compression, a: Assumptions):
    """eta_C = q(Cr) from the error-feedback or plain table of the assumed scenario."""
    table = "compression_quality_ef" if a.error_feedback else "compression_quality_no_ef"
    return interpolate_points(a.quality_points(table), compression)


def activation_quality(activation_compression, stages, a: Assumptions):
    """eta_A = qa(Ca) ** (2 (S - 1)): errors compound at every boundary, forward and backward."""
    ca = np.asarray(activation_compression, dtype=float)
    s = np.asarray(stages, dtype=float)
    per_boundary = interpolate_points(a.quality_points("activation_quality"), ca)
    return np.where((ca <= 1.0) | (s <= 1.0), 1.0, per_boundary ** (2.0 * (s - 1.0)))


def replica_beta(params, h_eff, a: Assumptions):
    """Replica exponent beta0(P) * ln(H_eff) / ln(30), beta0(P) = 1.0923 * P ** -0.2342 (Charles et al. 2025)."""
    p = np.asarray(params, dtype=float)
    h = np.asarray(h_eff, dtype=float)
    beta0 = a.replica_beta_coefficient * p ** a.replica_beta_exponent
    return beta0 * (np.log(np.maximum(h, 1.0)) / np.log(a.replica_h_ref))


def replica_loss_multiplier(replicas, params, h_eff, a: Assumptions):
    """Loss multiplier m = K ** beta(P, H_eff); m = 1 when K <= 1 or H_eff <= 1."""
    k = np.asarray(replicas, dtype=float)
    h = np.asarray(h_eff, dtype=float)
    with np.errstate(over="ignore"):   # an infinite multiplier is meaningful: eta_R -> 0
        m = np.maximum(k, 1.0) ** replica_beta(params, h, a)
    return np.where((k <= 1.0) | (h <= 1.0), 1.0, m)


def linear_v1_replica_factor(replicas, params, a: Assumptions):
    """Report-v1 replica penalty max(0, 1 - 0.005 * min(2.4, P_B) / P_B * log2 K), 1 for K <= 1."""
    k = np.asarray(replicas, dtype=float)
    p_b = np.asarray(params, dtype=float) / 1e9
    factor = 1.0 - a.linear_v1_coefficient * np.minimum(a.linear_v1_cap_b, p_b) / p_b * np.log2(np.maximum(k, 1.0))
    return np.where(k <= 1.0, 1.0, np.maximum(0.0, factor))
