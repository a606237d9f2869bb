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

Both are computed once per distinct argument within a process (issue 27 item 1: a solve asks
for the same handful of values a hundred times, e.g. chi(P_act, T, C; 1) at the run's own tokens
and compute for every batch of plans). The caches are keyed by the exact float64 bits of the
arguments and of the constants used, and the computation is deterministic, so a cached value is
bit-identical to a fresh one (tests/test_chinchilla_cache.py checks == on random arguments).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from planner.cost.assumptions import Assumptions

_NEWTON_ITERATIONS = 60
# Cache bounds (memory, not values): arrays of at most this many losses are cached (a solve's
# batches are smaller; the exhaustive solver's large batches are computed afresh), and at most
# this many distinct calls are kept (worst case 512 x 2 x 8 KiB = 8 MiB per process).
_CACHED_MAX_SIZE = 1024
_CACHE_ENTRIES = 512


def chinchilla_loss(params, tokens, a: Assumptions):
    """L(N, D) in nats per token; +inf where N <= 0 or D <= 0."""
    return _loss(params, tokens, *_constants(a)[:5])


def _loss(params, tokens, e: float, a_coef: float, a_exp: float, b: float, b_exp: float):
    n = np.asarray(params, dtype=float)
    d = np.asarray(tokens, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        loss = e + a_coef * n ** (-a_exp) + b * d ** (-b_exp)
    return np.where((n > 0) & (d > 0), loss, np.inf)


def tokens_per_param(a: Assumptions) -> float:
    """r = 25.6 * overtraining target."""
    return a.tokens_per_param * a.overtrain_target


def _constants(a: Assumptions) -> tuple[float, float, float, float, float, float]:
    """(E, A, alpha, B, beta, r): the constants of the loss and of the compute-optimal allocation."""
    return (a.chinchilla_e, a.chinchilla_a, a.chinchilla_alpha, a.chinchilla_b, a.chinchilla_beta,
            tokens_per_param(a))


def optimal_allocation(compute_flop, a: Assumptions):
    """(N*, D*) = (sqrt(C / (6 r)), r N*) for compute C in FLOP."""
    r = tokens_per_param(a)
    n_opt = np.sqrt(np.asarray(compute_flop, dtype=float) / (6.0 * r))
    return n_opt, r * n_opt


def equivalent_optimal_compute(loss, a: Assumptions):
    """The compute C' whose compute-optimal model reaches `loss` (+inf at or below the floor E).

    Solves A e^(-alpha u) + B r^(-beta) e^(-beta u) = loss - E for u = ln N*, a convex
    decreasing function of u: Newton started left of the root climbs to it monotonically.
    Computed once per distinct (loss array, constants) for arrays of up to `_CACHED_MAX_SIZE`
    values (module docstring); the caller gets its own array.
    """
    return _equivalent(np.asarray(loss, dtype=float), *_constants(a))


def _equivalent(losses: np.ndarray, *constants: float) -> np.ndarray:
    if losses.size > _CACHED_MAX_SIZE:
        return _equivalent_optimal_compute(losses, *constants)
    return _equivalent_cached(losses.tobytes(), losses.shape, *constants).copy()


@lru_cache(maxsize=_CACHE_ENTRIES)
def _equivalent_cached(loss_bits: bytes, shape: tuple[int, ...], *constants: float) -> np.ndarray:
    """`_equivalent_optimal_compute` of the float64 losses whose bytes are `loss_bits` (read-only result)."""
    out = _equivalent_optimal_compute(np.frombuffer(loss_bits, dtype=float).reshape(shape), *constants)
    out.flags.writeable = False
    return out


def _equivalent_optimal_compute(losses: np.ndarray, e: float, a_coef: float, a_exp: float, b: float, b_exp: float,
                                r: float) -> np.ndarray:
    """`equivalent_optimal_compute` for float64 losses and the constants (E, A, alpha, B, beta, r)."""
    excess = losses - e
    ok = (excess > 0) & np.isfinite(excess)
    k = np.where(ok, excess, 1.0).reshape(-1)
    b_coef = b * r ** (-b_exp)
    u = _newton_one(float(k[0]), a_coef, a_exp, b_coef, b_exp) if k.size == 1 else None
    if u is None:
        u = _newton(k, a_coef, a_exp, b_coef, b_exp)
    n_opt = np.exp(u.reshape(losses.shape))
    compute = 6.0 * r * n_opt * n_opt
    # No compute reaches a loss at or below E (+inf); an infinite loss (no tokens) needs none (0).
    return np.where(ok, compute, np.where(excess > 0, 0.0, np.inf))


def _newton(k: np.ndarray, a_coef: float, a_exp: float, b_coef: float, b_exp: float) -> np.ndarray:
    """u = ln N* solving A e^(-alpha u) + B' e^(-beta u) = k (B' = B r^-beta) for every excess loss of `k`
    (one-dimensional), by Newton from the right of both single terms' roots, until every step is within
    1e-15 max(1, |u|) or `_NEWTON_ITERATIONS` steps."""
    # Each single term alone reaches k at u_a or u_b; the root lies right of both.
    u = np.maximum(np.log(a_coef / k) / a_exp, np.log(b_coef / k) / b_exp)
    # The two terms A e^(-alpha u) and B' e^(-beta u) as the rows of one array, so that each numpy
    # call of an iteration serves both (issue 27 item 1: the arrays are small, and the calls, not
    # the arithmetic, cost): every element takes the same IEEE operations in the same order as
    # term by term, so u is the same double (tests/test_chinchilla_cache.py checks it bit for bit).
    exps = np.array([[a_exp], [b_exp]])
    neg_exps, coefs = -exps, np.array([[a_coef], [b_coef]])
    for _ in range(_NEWTON_ITERATIONS):
        terms = coefs * np.exp(neg_exps * u)
        slopes = exps * terms
        step = (terms[0] + terms[1] - k) / (slopes[0] + slopes[1])
        u = u + step
        if (np.abs(step) <= 1e-15 * np.maximum(1.0, np.abs(u))).all():   # the method: fewer python frames than np.all
            break
    return u


def _newton_one(k: float, a_coef: float, a_exp: float, b_coef: float, b_exp: float) -> np.ndarray | None:
    """`_newton` of one excess loss `k`, the same double, in Python floats (about 37 us instead of 163 us warm:
    a sweep's answer scores one plan, and each numpy call on a one-element array costs about 1.5 us), or
    None where a Python division by zero would raise (numpy gives an infinity or NaN there: the caller then
    runs `_newton`, so such a case gets `_newton`'s value and warnings).

    Why the same double, operation for operation: +, -, *, / and abs of Python floats are the IEEE
    double operations numpy's float64 ufuncs perform (round to nearest, no fused multiply-add; the
    products of `_newton` with its constant rows commute exactly); the exponentials and logarithms are
    numpy's own ufuncs on a contiguous float64 array, as in `_newton` (the same loop element by element,
    `tolist` giving each double as it is); np.maximum(x, y) is written as `x > y or x is NaN ? x : y`
    (NaN kept; of equal values the second, as numpy here; only 0 and -0 are equal with other bits, and the
    sign of a zero u changes no value after it: e^(-alpha u), |u|, u + a nonzero step and e^u are the same
    at either); the sums and the step's quotient group as `_newton` writes them ((A_term + B_term) - k);
    the loop runs and stops on the same test, on one value instead of `.all()` of one.
    tests/test_chinchilla_cache.py compares both bit for bit on random losses and constants, edge values
    included."""
    try:
        log_a, log_b = np.log(np.array([a_coef / k, b_coef / k])).tolist()
        u_a, u_b = log_a / a_exp, log_b / b_exp
        u = u_a if (u_a > u_b or u_a != u_a) else u_b
        for _ in range(_NEWTON_ITERATIONS):
            exp_a, exp_b = np.exp(np.array([-a_exp * u, -b_exp * u])).tolist()
            term_a, term_b = a_coef * exp_a, b_coef * exp_b
            step = (term_a + term_b - k) / (a_exp * term_a + b_exp * term_b)
            u = u + step
            size = abs(u)
            if abs(step) <= 1e-15 * (1.0 if 1.0 > size else size):
                break
    except (ZeroDivisionError, OverflowError):     # numpy: inf or NaN (a warning); OverflowError: an int constant
        return None                                # beyond the doubles, which numpy would not convert either
    return np.array([u])


def chi(params, tokens, compute_flop, a: Assumptions, loss_multiplier=1.0):
    """chi(N, D, C; m) = min(1, C' / C), C' clamped to the reference bracket [1e10, 10 C].

    With every argument a single number it is computed once per distinct (N, D, C, m) and
    constants (module docstring); arrays go through `equivalent_optimal_compute`'s cache.
    """
    bracket = (a.chi_search_low_flop, a.chi_search_high_factor)
    if np.ndim(params) == np.ndim(tokens) == np.ndim(compute_flop) == np.ndim(loss_multiplier) == 0:
        return _chi_cached(float(params), float(tokens), float(compute_flop), float(loss_multiplier),
                           *_constants(a), *bracket)
    return _chi(params, tokens, compute_flop, loss_multiplier, *_constants(a), *bracket)


def _chi(params, tokens, compute_flop, loss_multiplier, e: float, a_coef: float, a_exp: float, b: float,
         b_exp: float, r: float, low_flop: float, high_factor: float):
    """`chi` for the constants (E, A, alpha, B, beta, r) and the bracket [low_flop, high_factor C]."""
    c = np.asarray(compute_flop, dtype=float)
    target = _loss(params, tokens, e, a_coef, a_exp, b, b_exp) * np.asarray(loss_multiplier, dtype=float)
    c_eff = _equivalent(np.asarray(target, dtype=float), e, a_coef, a_exp, b, b_exp, r)
    c_eff = np.clip(c_eff, low_flop, high_factor * c)
    return np.minimum(1.0, c_eff / c)


_chi_cached = lru_cache(maxsize=_CACHE_ENTRIES)(_chi)
