"""What the proportional rule's searches rank plans by (`measure`), the best of a batch of plans with
its ties (`least_with_ties`, `best_with_tie`) and the distinct (H, u) pairs of a batch (`unique_pairs`):
shared by the rule's part search (`planner.sync.proportional.search`) and its box searches (`boxes`,
`cost_boxes`, `levels`), which import them from here."""

from __future__ import annotations

import numpy as np

from planner.cost.score import time_to_target, window_compute
from planner.cost.setting import PlanBatch, Setting
from planner.objectives import Objective
from planner.solvers.bnb import TIE_REL


def measure(s: Setting, batch: PlanBatch, adjust, objective: Objective) -> np.ndarray:
    """What the objective ranks among plans of one split, least first: minus the compute reached
    (FLOP) for max_compute, else the time to target (s)."""
    if objective.maximise:
        kind = s.target_kind
        return -window_compute(s, batch, kind, adjust)[kind]
    return time_to_target(s, batch, adjust)["time_to_target_s"]


def least_with_ties(first: np.ndarray, ok: np.ndarray) -> tuple[np.ndarray, float]:
    """(the indices of `ok` whose `first` is within TIE_REL (relative) of the least, that least): the
    plans tied with the best of a batch. `ok` must hold one."""
    top = float(first[ok].min())
    return np.flatnonzero(ok & (first <= top + TIE_REL * abs(top))), top


def best_with_tie(first: np.ndarray, second: np.ndarray, ok: np.ndarray) -> tuple[int, float]:
    """(index, least `first` among `ok`): of the plans tied with the least `first` (`least_with_ties`),
    the one of least `second` (the first such on a tie)."""
    tied, top = least_with_ties(first, ok)
    return int(tied[np.argmin(second[tied])]), top


def unique_pairs(h: np.ndarray, units: np.ndarray) -> tuple[list[tuple[int, int]], np.ndarray]:
    """The distinct (H, u) of the plans and each plan's index among them (a 1-D unique of
    H (u_max + 1) + u: much faster than a unique over rows)."""
    h, units = np.asarray(h, dtype=np.int64), np.asarray(units, dtype=np.int64)
    width = int(units.max()) + 1 if units.size else 1
    keys, inverse = np.unique(h * width + units, return_inverse=True)
    return [(int(k // width), int(k % width)) for k in keys], inverse.ravel()
