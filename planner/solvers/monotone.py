"""Which monotonicity facts the branch and bound's bounds need, decided per Setting from the constants.

The bounds of `planner.solvers.bnb` (docs/planner.md, "Why the bound holds") rest on:

  (q) the time per outer step per inner step and replica, q, is non-decreasing in the replica
      count n: the WAN straggler factor f(G) = 1 + c log2 G has c >= 0 (it also keeps every
      sync time >= 0, which the streaming reduction of `planner.space` needs);
  (R) the replica loss multiplier m = K ** beta, beta = beta0(P) ln(H_eff) / ln(H_ref), is >= 1
      and non-decreasing in K and H_eff: beta0(P) = c P ** e with c >= 0 and H_ref > 1 (Chinchilla
      penalty); the linear v1 factor 1 - c min(cap, P_B) / P_B log2 K is <= 1 and non-increasing
      in K: c min(cap, P_B) >= 0 (linear v1 penalty);
  (L) the Chinchilla law's coefficients A, B, alpha, beta are > 0, so the compute-optimal
      compute C' of a loss falls as the loss rises (eta_R <= 1, tokens needed grow with m);
  (H) eta_H = max(floor, (1 - alpha(P) log10 H_eff) / s) is non-increasing in H_eff:
      alpha(P) = c / (1 + log10(P / 1e9) / d) >= 0, i.e. 1 + log10(P / 1e9) / d > 0.

(H) fails for a small model with a small `alpha_log_divisor` d (alpha < 0: eta_H rises with
H_eff). The search then uses a bound valid without it (`eta_h_falls` False): eta_H is
monotone in H_eff either way (alpha is one number per setting), so over a box it is at most
max(eta_H(H_eff low), eta_H(H_eff high)), and the box's best efficiency is taken with that
eta_H (docs/planner.md). Where alpha(P) is infinite or undefined (1 + log10(P / 1e9) / d = 0)
no bound exists. The jump from one node (no sync: every efficiency 1) to two (eta_H, eta_C
possibly above 1 with `eta_h_floor` > 1, `threshold_eta_divisor` < 1 or a quality table
above 1) needs no fact: the search never puts n = 1 and n >= 2 in the same box.

The instance schema keeps (q), (R) and (L) (coefficients >= 0, H_ref > 1, tables in [0, 1]);
a Setting built by hand may not. `unsupported` lists what fails among the facts without a
fallback bound, each as a `Problem` naming the constant: `planner.solvers.uniform.optimise` then
scores every plan (`planner.solvers.exhaustive`) when the space is small, else rejects the
instance (exit 2).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from planner.cost import quality
from planner.cost.setting import Setting
from planner.cost.straggler import straggler_coefficient
from planner.schema.errors import Problem

EXHAUSTIVE_MAX_PLANS = 20_000_000     # ~15 s of the evaluator here: the fallback when no bound is valid
PATH = "assumptions.constants"


@dataclass(frozen=True)
class Monotonicity:
    """What holds for one Setting (module docstring)."""

    eta_h_falls: bool                       # (H): else the search bounds eta_H by its box maximum
    unsupported: tuple[Problem, ...] = ()   # facts that fail with no fallback bound


def check(s: Setting) -> Monotonicity:
    """Decide each fact from the constants (analytically: every inequality is on constants alone)."""
    a = s.assumptions
    problems: list[Problem] = []
    alpha = float(quality.alpha(s.params, a)) if a.alpha_log_divisor != 0 else math.nan
    denominator = 1.0 + math.log10(s.params / 1e9) / a.alpha_log_divisor if a.alpha_log_divisor else 0.0
    if denominator == 0.0 or not math.isfinite(alpha):
        problems.append(Problem(f"{PATH}.alpha_log_divisor",
                                f"alpha(P) = c / (1 + log10(P / 1e9) / {a.alpha_log_divisor:g}) is undefined for "
                                f"P = {s.params:.6g}: choose another divisor"))
    c = straggler_coefficient(a)
    if c < 0:
        name = {"synchronous": "straggler_sync_coefficient", "relay": "straggler_relay_coefficient",
                "backup": "straggler_backup_scale"}[a.straggler]
        problems.append(Problem(f"{PATH}.{name}", f"the straggler factor 1 + c log2 n must not fall with n (c = {c:g} < 0)"))
    if a.replica_penalty == "chinchilla":
        if a.replica_beta_coefficient < 0:
            problems.append(Problem(f"{PATH}.replica_beta_coefficient",
                                    f"must be >= 0 (the replica loss multiplier must not fall below 1), got "
                                    f"{a.replica_beta_coefficient:g}"))
        if not a.replica_h_ref > 1:
            problems.append(Problem(f"{PATH}.replica_h_ref",
                                    f"must be > 1 (the replica exponent must grow with H), got {a.replica_h_ref:g}"))
    if a.replica_penalty == "linear_v1" and a.linear_v1_coefficient * min(a.linear_v1_cap_b, s.params / 1e9) < 0:
        problems.append(Problem(f"{PATH}.linear_v1_coefficient",
                                "the linear v1 replica factor must not rise with the replica count "
                                "(coefficient and cap must be >= 0)"))
    for name in ("chinchilla_a", "chinchilla_b", "chinchilla_alpha", "chinchilla_beta"):
        if not getattr(a, name) > 0:
            problems.append(Problem(f"{PATH}.{name}", f"must be > 0, got {getattr(a, name):g}"))
    return Monotonicity(eta_h_falls=not (alpha < 0), unsupported=tuple(problems))
