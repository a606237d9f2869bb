"""Run-level outputs (docs/cost_model.md sections 5 and 7): efficiency, compute, time to train.

Two views of a plan, both from the same mode throughput (`planner.cost.modes`):

- window view, as the reference calculator: run for a fixed wall-clock T_wall;
  tokens T = T_wall / outer_time * tokens_per_outer; C_thr = 6 P_act T;
  C_local = C_thr * eta; C_quality = C_local * chi(P_act, T, C_thr; 1);
  eta_R scored at (T, C_thr); global MFU = C_local / (N F T_wall), HFU = MFU / 0.8.
- time to train (dtplan's default objective): the wall-clock at which C_local reaches
  C_target, T_wall = C_target / (eta * 6 P_act * tokens_per_second), with eta_R scored
  at the target point (T = D = C_target / (6 P_act), C = C_target). For a C_quality
  target the window view is solved for T_wall (C_quality grows with T_wall) in closed
  form, through the one expression of C_quality in (T, g, mu), `quality_compute`.

One node (N = 1) is local training: every efficiency and quality factor is 1.

Goodput gamma (`fleet.goodput`, default 1): the fraction of wall-clock the fleet spends
making training progress (availability, restarts, checkpoint rollbacks, churn), an explicit
input, not part of the reference model. Tokens per second while training are unchanged;
wall-clock is training time / gamma: the window view trains for gamma T_wall, and the time to
target is T_train / gamma (`training_time_s` = T_train). With gamma = 1 every figure is the
reference calculator's.
"""

from __future__ import annotations

import numpy as np

from planner.cost import chinchilla, quality, quality_fit
from planner.cost.setting import PlanBatch, Setting
from planner.cost.straggler import eta_h_divisor


def efficiency_without_replicas(s: Setting, b: PlanBatch, t: dict[str, np.ndarray],
                                eta_c: np.ndarray | None = None, alpha_p=None) -> dict[str, np.ndarray]:
    """eta_H, eta_C, eta_A (eta_R depends on the run's tokens; see `replica_efficiency`).

    eta_H = max(0.4, (1 - alpha(P) log10 H_eff) / s) with alpha on total P;
    eta_C = q(Cr) (`compression_efficiency`); both 1 where there is no DiLoCo sync (one node, pipeline
    over WAN). `eta_c`: the plans' `compression_efficiency` when the caller has it; `alpha_p`: likewise
    `quality.alpha(s.params)`. alpha(P) is worked once, for eta_H and the alpha shown (it was worked for
    each: the same call on the same operands, so the same double; tests/test_alpha_once.py).
    """
    a = s.assumptions
    synced = t["synchronised"] > 0
    alpha_p = quality.alpha(s.params, a) if alpha_p is None else alpha_p
    eta_h = quality.eta_sync_interval(t["h_eff"], s.params, a, eta_h_divisor(a), alpha_p)
    eta_c = compression_efficiency(s, b) if eta_c is None else eta_c
    return {"eta_h": np.where(synced, eta_h, 1.0), "eta_c": np.where(synced, eta_c, 1.0),
            "eta_a": t["eta_activation"], "alpha": np.where(synced, alpha_p, 0.0)}


def compression_efficiency(s: Setting, b: PlanBatch) -> np.ndarray:
    """eta_C of each plan where it syncs: q(Cr); under the fitted quality model the method's
    (quality_fit.compression_quality) times the overlap factor of a streaming plan
    (quality_fit.overlap_factor). Reads the compression, the precision and streaming only."""
    a = s.assumptions
    if quality_fit.fitted(a):
        return quality_fit.compression_quality(b.compression, a.bits_per_value(b.precision), a) \
            * np.where(b.streaming, quality_fit.overlap_factor(s.params, a), 1.0)
    return quality.compression_quality(b.compression, a)


def replica_efficiency(s: Setting, replicas, h_eff, tokens, compute_flop) -> np.ndarray:
    """eta_R for K replicas at sync interval H_eff, scored at (T tokens, C FLOP).

    chinchilla: chi(P_act, T, C; m) / chi(P_act, T, C; 1) with m = K ** beta(P, H_eff)
    (replica exponent on total P); linear_v1: max(0, 1 - 0.005 min(2.4, P_B) / P_B log2 K);
    fitted: quality_fit.replica_interval_factor (not scored at the tokens); none: 1.
    """
    a = s.assumptions
    if a.replica_penalty == "none":
        return np.ones(np.broadcast(replicas, h_eff, tokens).shape)
    if quality_fit.fitted(a):
        return quality_fit.replica_interval_factor(replicas, s.params, h_eff, a) * np.ones_like(np.asarray(tokens, float))
    if a.replica_penalty == "linear_v1":
        return quality.linear_v1_replica_factor(replicas, s.params, a) * np.ones_like(np.asarray(tokens, float))
    m = quality.replica_loss_multiplier(replicas, s.params, h_eff, a)
    if np.ndim(tokens) == 0 and np.ndim(compute_flop) == 0:
        # One (T, C) for all plans (the time-to-train view): chi depends on m alone, and
        # many plans share m (same K and H_eff); solve once per distinct m.
        unique_m, inverse = np.unique(m, return_inverse=True)
        full = chinchilla.chi(s.active_params, tokens, compute_flop, a, unique_m)[inverse.reshape(np.shape(m))]
    else:
        full = chinchilla.chi(s.active_params, tokens, compute_flop, a, m)
    plain = chinchilla.chi(s.active_params, tokens, compute_flop, a)
    return np.where(plain > 0, full / np.where(plain > 0, plain, 1.0), 0.0)


def window_view(s: Setting, b: PlanBatch, t: dict[str, np.ndarray], eff: dict[str, np.ndarray],
                window_s) -> dict[str, np.ndarray]:
    """Compute reached in a fixed wall-clock window (the reference calculator's view), of which
    the fraction `s.goodput` is spent training; global MFU is over the whole window."""
    a = s.assumptions
    n = np.asarray(b.nodes, dtype=float)
    window = np.asarray(window_s, dtype=float)
    tokens = window_tokens(s, t, window)
    c_thr = 6.0 * s.active_params * tokens
    c_local, eta_r, eta = local_compute(s, t, eff, tokens)
    chi = np.where(n > 1, chinchilla.chi(s.active_params, tokens, c_thr, a), 1.0)
    mfu = c_local / (n * s.peak_flops[b.precision] * window)
    g, mu, with_chi = quality_terms(s, b, t, eff)
    return {"window_s": window * np.ones_like(n), "tokens": tokens, "c_throughput": c_thr, "eta_r": eta_r,
            "eta": eta, "c_local": c_local, "chi": chi, "c_quality": quality_compute(s, tokens, g, mu, with_chi),
            "global_mfu": mfu, "global_hfu": mfu / a.mfu_per_hfu}


def window_tokens(s: Setting, t: dict[str, np.ndarray], window_s) -> np.ndarray:
    """Tokens trained in a wall-clock window: T = W goodput / t_outer * tokens per outer step (the
    window view's T; `s.goodput` is the share of the window spent training)."""
    return np.asarray(window_s, dtype=float) * s.goodput / t["outer_time_s"] * t["tokens_per_outer"]


def local_compute(s: Setting, t: dict[str, np.ndarray], eff: dict[str, np.ndarray], tokens):
    """(C_local, eta_R, eta) of a run of T tokens: C_local = 6 P_act T * eta, eta = eta_H eta_C
    eta_A eta_R with eta_R scored at (T, 6 P_act T) (1 without a DiLoCo sync)."""
    c_thr = 6.0 * s.active_params * np.asarray(tokens, dtype=float)
    synced = t["synchronised"] > 0
    eta_r = np.where(synced, replica_efficiency(s, t["replicas"], t["h_eff"], tokens, c_thr), 1.0)
    eta = eff["eta_h"] * eff["eta_c"] * eff["eta_a"] * eta_r
    return c_thr * eta, eta_r, eta


def quality_terms(s: Setting, b: PlanBatch, t: dict[str, np.ndarray], eff: dict[str, np.ndarray]):
    """(g, mu, with_chi) such that C_quality = `quality_compute(s, T, g, mu, with_chi)` for every T.

    g = eta_H eta_C eta_A (times the linear v1 or the fitted replica factor under those), mu the
    replica loss multiplier m under the Chinchilla penalty (else 1), with_chi False for
    one node (local training: chi = 1). A pipeline over the WAN (no DiLoCo sync) has
    g = eta_A, mu = 1 and chi applied, as in the window view.
    """
    a = s.assumptions
    n = np.asarray(b.nodes, dtype=float)
    synced = t["synchronised"] > 0
    g = eff["eta_h"] * eff["eta_c"] * eff["eta_a"] * np.ones_like(n)
    mu = np.ones_like(n)
    if a.replica_penalty == "chinchilla":
        mu = np.where(synced, quality.replica_loss_multiplier(t["replicas"], s.params, t["h_eff"], a), 1.0)
    elif a.replica_penalty == "linear_v1":
        g = g * np.where(synced, quality.linear_v1_replica_factor(t["replicas"], s.params, a), 1.0)
    elif quality_fit.fitted(a):
        g = g * np.where(synced, quality_fit.replica_interval_factor(t["replicas"], s.params, t["h_eff"], a), 1.0)
    return g, mu, n > 1


def quality_compute(s: Setting, tokens, g, mu, with_chi) -> np.ndarray:
    """C_quality reached with T tokens, in FLOP (docs/cost_model.md sections 5-7, window view).

    C_quality = C_thr * eta * chi(P_act, T, C_thr; 1), and with eta_R = chi(m) / chi(1)
    (Chinchilla penalty; chi clamps C' to [1e10, 10 C]) this is

        C_quality = g * min(C_thr, max(C'_mu(T), 1e10)),   C_thr = 6 P_act T,

    C'_mu(T) the compute whose compute-optimal model reaches loss mu * L(P_act, T), and
    (g, mu) from `quality_terms`; without chi (one node) C_quality = g * C_thr.
    It grows with T and g and falls with mu (C' falls as the loss it must reach rises).
    """
    a = s.assumptions
    tokens = np.asarray(tokens, dtype=float)
    c_thr = 6.0 * s.active_params * tokens
    with np.errstate(over="ignore", invalid="ignore"):
        loss = chinchilla.chinchilla_loss(s.active_params, tokens, a) * np.asarray(mu, dtype=float)
        c_eq = chinchilla.equivalent_optimal_compute(loss, a)
    capped = np.minimum(c_thr, np.maximum(c_eq, a.chi_search_low_flop))
    return np.asarray(g, dtype=float) * np.where(with_chi, capped, c_thr)


def time_to_target(s: Setting, b: PlanBatch, t: dict[str, np.ndarray], eff: dict[str, np.ndarray],
                   details: bool = True) -> dict[str, np.ndarray]:
    """Wall-clock until the target is reached (dtplan's `min_time` objective): the training
    time T_train = C_target / (eta 6 P_act tokens/s) divided by the goodput.

    `details=False` leaves out eta_r_target and eta_target for a C_quality target (they
    need the window view at the time found; the planner's search does not read them)."""
    if s.target_kind == "c_quality":
        return _time_to_quality_target(s, b, t, eff, details)
    n = np.asarray(b.nodes, dtype=float)
    synced = t["synchronised"] > 0
    target = s.target
    tokens_per_s = t["tokens_per_outer"] / t["outer_time_s"]
    eta_r = np.where(synced, replica_efficiency(s, t["replicas"], t["h_eff"], s.target_tokens, target), 1.0)
    eta = eff["eta_h"] * eff["eta_c"] * eff["eta_a"] * eta_r
    with np.errstate(divide="ignore"):
        training_s = target / (eta * 6.0 * s.active_params * tokens_per_s)
    return {"time_to_target_s": training_s / s.goodput, "training_time_s": training_s, "eta_r_target": eta_r,
            "eta_target": eta, "tokens_per_s": tokens_per_s * np.ones_like(n)}


def _time_to_quality_target(s, b, t, eff, details=True):
    """Solve C_quality(T_wall) = C_target in closed form.

    C_quality = g * min(C_thr, max(C'_mu(T), 1e10)) with C_thr = 6 P_act T (`quality_compute`,
    (g, mu) from `quality_terms`). Both terms grow with T, so the tokens needed are the larger of
        T1 = c / (6 P_act)                       (c = C_target / g), and
        T2 with mu * L(P_act, T2) = L*(c), the loss of the compute-optimal model at c:
        T2 = (B / (L*(c) / mu - E - A P_act^-alpha)) ** (1 / beta)  (unreachable if <= 0),
    (T1 alone without chi, i.e. one node), and T_wall = tokens / tokens per second / goodput.
    """
    a = s.assumptions
    n = np.asarray(b.nodes, dtype=float)
    tokens_per_s = t["tokens_per_outer"] / t["outer_time_s"]
    g, mu, with_chi = quality_terms(s, b, t, eff)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        c = s.target / g
        t1 = c / (6.0 * s.active_params)
        n_opt, d_opt = chinchilla.optimal_allocation(c, a)
        floor = a.chinchilla_e + a.chinchilla_a * s.active_params ** (-a.chinchilla_alpha)
        excess = chinchilla.chinchilla_loss(n_opt, d_opt, a) / mu - floor
        t2 = np.where(c <= a.chi_search_low_flop, 0.0,
                      np.where(excess > 0, (a.chinchilla_b / excess) ** (1.0 / a.chinchilla_beta), np.inf))
        tokens = np.where(with_chi, np.maximum(t1, t2), t1)
        training_s = tokens / tokens_per_s
        time_s = training_s / s.goodput
    out = {"time_to_target_s": time_s, "training_time_s": training_s, "tokens_per_s": tokens_per_s * np.ones_like(n)}
    if details:
        at = window_view(s, b, t, eff, np.where(np.isfinite(time_s), time_s, 1.0 / s.goodput))
        out.update(eta_r_target=at["eta_r"], eta_target=at["eta"])
    return out
