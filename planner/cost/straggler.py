"""Straggler factor f(n) for a synchronous exchange among n parties (docs/cost_model.md section 3).

| strategy     | f(n)                              | other effect                       |
|--------------|-----------------------------------|------------------------------------|
| synchronous  | 1 + 0.05 log2 n                   | none                               |
| relay        | 1 + 0.02 log2 n                   | none (calculator default)          |
| threshold    | 1                                 | eta_H divided by 1.15 (web app)    |
| backup       | 1 + 0.3 * 0.05 log2 n             | effective nodes N / 1.1 (web app)  |
| none         | 1                                 | none (simulator.py)                |

f(1) = 1 for every strategy. Source: evasion_calculator.py `straggler_factor`,
simulator-web App.tsx `getStragglerFactor`.
"""

from __future__ import annotations

import numpy as np

from planner.cost.assumptions import Assumptions


def straggler_coefficient(a: Assumptions) -> float:
    """The c of f(n) = 1 + c log2 n for the assumed strategy."""
    if a.straggler == "synchronous":
        return a.straggler_sync_coefficient
    if a.straggler == "relay":
        return a.straggler_relay_coefficient
    if a.straggler == "backup":
        return a.straggler_backup_scale * a.straggler_sync_coefficient
    return 0.0  # threshold, none


def straggler_factor(n_parties, a: Assumptions):
    """f(n) = 1 + c log2 n for n > 1, else 1 (dimensionless; n may be an array)."""
    n = np.asarray(n_parties, dtype=float)
    c = straggler_coefficient(a)
    return np.where(n > 1, 1.0 + c * np.log2(np.maximum(n, 1.0)), 1.0)


def throughput_fraction(a: Assumptions) -> float:
    """Share of the nodes that produce tokens: 1 / 1.1 with backup workers, else 1."""
    return 1.0 / a.backup_spare_factor if a.straggler == "backup" else 1.0


def eta_h_divisor(a: Assumptions) -> float:
    """The divisor s of eta_H: 1.15 for threshold aggregation (staleness), else 1."""
    return a.threshold_eta_divisor if a.straggler == "threshold" else 1.0
