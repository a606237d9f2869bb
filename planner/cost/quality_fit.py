"""dtplan's quality model fitted to published same-compute experiments (docs/quality.md).

Switched on by `replica_penalty = "fitted"` (the dtplan profile); every other profile scores as
before. eta = eta_H eta_C eta_A eta_R keeps its slots (so the solvers' bounds read it as they read
the linear v1 penalty, a factor of g that does not depend on the tokens):

- eta_H = 1 / s: the fitted law carries the sync interval, so alpha(P) = 0 (`quality.alpha`);
  s = 1.15 under threshold aggregation as before.
- eta_R = `replica_interval_factor` = min(1, exp(offset(N) - c n^-e (ln K)^g (ln H_eff / ln 30)^d)),
  n = N / 1e9, K replicas; 1 where K <= 1 or H_eff <= 1 (data-parallel: eta = 1 by definition).
  offset(N) = a0 + a1 ln n at N held inside the sizes the offset was fitted on (Charles et al.
  2025, 35M-2.4B): DiLoCo's advantage over data-parallel (eta up to 1.09 in their Table 4) is
  credited only up to the point where it cancels the penalty (the min with 1), so a plan never
  counts more than a data-parallel run of the same compute (docs/quality.md gives the reasons).
- eta_C = `compression_quality` by method times `overlap_factor`:
  quantise (and the reference's `ratio`, whose payload is the same): b / Cr bits per value,
  1 down to 4 bits (Streaming DiLoCo's FP4 outer gradients, no measurable loss), below 4 bits
  charged as sparsification by 4 / bits (the conservative extrapolation: Streaming DiLoCo found
  zeroing values worse than lowering their precision); topk: sparsification r = Cr,
  exp(-k (r - 1)^p) (DiLoCo 2023 Table 6, 0-75% of the outer gradient pruned) up to r = 4, beyond it
  the law's log-log tangent at r = 4 (`sparsification_quality`).
  overlap_factor = exp(-o n^-f) for a streaming plan (its outer update lands one outer step late:
  eager updates, Kale et al. 2025 Table 6), 1 for a blocking sync.

Parameters: `Assumptions.fit_*`; the value FROM_FIT (-1, the default) reads the fit of the
assumed scenario (models/quality/fit.json, written by scripts/fit_quality.py); an instance (or
the Monte Carlo draws of models/assumptions/uncertainty/quality-fit.json) may set any of them.
Every factor is non-increasing in K, H_eff and Cr and at most 1 (parameters >= 0, powers > 0).
"""

from __future__ import annotations

import json
import math
from functools import lru_cache

import numpy as np

from planner.cost.assumptions import MODELS_DIR, Assumptions

FITTED = "fitted"             # the replica_penalty value that switches this model on
FROM_FIT = -1.0               # an Assumptions.fit_* value meaning "the fit's value for the scenario"
H_REF = 30.0                  # the sync interval of Charles et al. 2025 (the penalty's unit)
OFFSET_SIZES = (35e6, 2.4e9)  # parameters of the rows the offset was fitted on (Charles et al. Table 4)
FULL_BITS = 4.0               # quantisation down to 4 bits per value costs nothing (Streaming DiLoCo)
PRUNE_SHOWN = 4.0             # the most sparsification shown: 75% of the outer gradient pruned (DiLoCo 2023 Table 6)
PARAMETERS = ("fit_offset", "fit_offset_size_slope", "fit_replica_coefficient", "fit_replica_size_exponent",
              "fit_replica_power", "fit_h_power", "fit_overlap_coefficient", "fit_overlap_size_exponent",
              "fit_prune_coefficient", "fit_prune_power")


@lru_cache(maxsize=None)
def fit_table() -> dict:
    """models/quality/fit.json."""
    return json.loads((MODELS_DIR / "quality" / "fit.json").read_text())


def fitted(a: Assumptions) -> bool:
    return a.replica_penalty == FITTED


def parameter(a: Assumptions, name: str) -> float:
    """A fitted parameter: the instance's value, or the fit's for the assumed scenario."""
    value = float(getattr(a, name))
    return fit_table()["scenarios"][a.scenario][name] if value == FROM_FIT else value


def _size_b(params) -> np.ndarray:
    return np.asarray(params, dtype=float) / 1e9


def replica_interval_factor(replicas, params, h_eff, a: Assumptions):
    """eta_R = min(1, exp(offset(N) - c n^-e (ln K)^g (ln H_eff / 30)^d)); 1 for K <= 1 or H_eff <= 1.

    Elementwise: the plans where K > 1 and H_eff > 1 are scored alone when they are fewer than half (the
    search's corners at H = R = 1, the pp_group classes' bound at H_eff = 1: issue 27 item 5), each the same
    double as scored with the others; the rest are 1."""
    k = np.asarray(replicas, dtype=float)
    h = np.asarray(h_eff, dtype=float)
    if np.ndim(params) == 0 and (k.ndim or h.ndim):
        need = ~((k <= 1.0) | (h <= 1.0))      # the plans the formula scores (NaN among them, as it does)
        count = int(np.count_nonzero(need))
        if 2 * count < need.size:
            out = np.ones(need.shape)
            if count:
                out[need] = _replica_interval_factor(np.broadcast_to(k, need.shape)[need], params,
                                                     np.broadcast_to(h, need.shape)[need], a)
            return out
    return _replica_interval_factor(k, params, h, a)


def _replica_interval_factor(k: np.ndarray, params, h: np.ndarray, a: Assumptions):
    """`replica_interval_factor` of every plan (K and H_eff as float arrays)."""
    n = _size_b(params)
    held = np.clip(np.asarray(params, dtype=float), *OFFSET_SIZES) / 1e9
    offset = parameter(a, "fit_offset") + parameter(a, "fit_offset_size_slope") * np.log(held)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        penalty = (parameter(a, "fit_replica_coefficient") * n ** -parameter(a, "fit_replica_size_exponent")
                   * np.log(np.maximum(k, 1.0)) ** parameter(a, "fit_replica_power")
                   * (np.log(np.maximum(h, 1.0)) / math.log(H_REF)) ** parameter(a, "fit_h_power"))
        factor = np.minimum(1.0, np.exp(offset - penalty))
    return np.where((k <= 1.0) | (h <= 1.0), 1.0, factor)


def sparsification_quality(ratio, a: Assumptions):
    """eta_C of a sparsification r >= 1 (one value kept in r); 1 at r <= 1.

    Shown (r <= PRUNE_SHOWN, DiLoCo 2023 Table 6): the fitted pruning law, ln q(r) = -k (r - 1)^p.
    Beyond: the law's log-log tangent at the last shown point, ln q(r) = ln q(r0) + s ln(r / r0) with
    r0 = PRUNE_SHOWN and s = d ln q / d ln r at r0 = -k p (r0 - 1)^(p - 1) r0: every further halving of
    the kept fraction costs what the last shown halving cost at its end (the steepest rate the evidence
    shows; the fitted law itself, convex in ln r, gives exp(-28) at 64x). Error feedback earns no credit:
    no fitted table has it (docs/quality.md, section 3, with the SparseLoCo / Covenant-72B check)."""
    r = np.maximum(np.asarray(ratio, dtype=float), 1.0)
    k, p = parameter(a, "fit_prune_coefficient"), parameter(a, "fit_prune_power")
    r0 = PRUNE_SHOWN
    slope = -k * p * (r0 - 1.0) ** (p - 1.0) * r0
    with np.errstate(divide="ignore"):
        beyond = -k * (r0 - 1.0) ** p + slope * np.log(r / r0)
    return np.exp(np.where(r <= r0, -k * (np.minimum(r, r0) - 1.0) ** p, beyond))


def compression_quality(compression, bits_per_value: float, a: Assumptions):
    """eta_C by method (module docstring): quantise/ratio by bits per value, topk by sparsification."""
    cr = np.maximum(np.asarray(compression, dtype=float), 1.0)
    if a.compressor == "topk":
        return sparsification_quality(cr, a)
    bits = bits_per_value / cr
    return np.where(bits >= FULL_BITS, 1.0, sparsification_quality(FULL_BITS / bits, a))


def overlap_factor(params, a: Assumptions) -> float:
    """exp(-o n^-f): an outer step overlapped with the next (eager updates), n = N / 1e9."""
    n = float(params) / 1e9
    return math.exp(-parameter(a, "fit_overlap_coefficient") * n ** -parameter(a, "fit_overlap_size_exponent"))
