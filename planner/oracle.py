"""Exact enumeration of the decision space: the planner's oracle.

Every tuple of `DecisionSpace.tuples` (all decisions but H and R) is searched over
every H in 1..H_max and, for hierarchical plans, every R in 1..R_max, by a vectorised
branch and bound over boxes [H1, H2] x [R1, R2] whose bound is valid by construction:

    T(H, R) = kappa * q(H, R) / e(H_eff),   H_eff = H sqrt(R)

where kappa holds what does not depend on H or R, q = outer_time / (H R) is
non-increasing in H and in R (max(a, s / H) or a + s / H, and their hierarchical
analogues), and e = eta_H * eta_R (at the target point) is non-increasing in H_eff
(alpha >= 0, replica exponent >= 0). Hence on a box

    T >= kappa * q(H2, R2) / e(H1 sqrt(R1)) = T(H2, R2) * e(H2 sqrt R2) / e(H1 sqrt R1),

a box whose bound exceeds the incumbent cannot hold the optimum and is dropped, and a
plan within the tie tolerance of the optimum is never dropped. Every number comes from
`planner.cost.score.time_to_target`, the evaluator itself.

tests/test_oracle.py checks it against a naive brute force (every N, H, R, M scored
one by one) on small random instances.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from planner.cost.modes import throughput
from planner.cost.score import time_to_target
from planner.cost.setting import PlanBatch, Setting
from planner.space import MODE_ORDER, PRECISION_ORDER, DecisionSpace

TIE_REL = 1e-12          # plans whose objectives differ by less are tied, broken by `tie_key`
SPLIT = 8                # children per box and level
EP_ORDER = ("none", "regional", "global")


@dataclass
class Found:
    """Plans of one batch at their (H, R), with their time to target."""

    batch: PlanBatch       # one row per plan, H and R filled in
    time_s: np.ndarray
    evaluations: int = 0   # plans scored to find them


def _with_hr(b: PlanBatch, idx: np.ndarray, h: np.ndarray, r: np.ndarray) -> PlanBatch:
    sub = b.take(idx)
    sub.inner_steps = np.asarray(h, dtype=np.int64)
    sub.regional_rounds = np.asarray(r, dtype=np.int64)
    return sub


def _time_and_efficiency(s: Setting, b: PlanBatch, idx, h, r):
    out = time_to_target(s, _with_hr(b, idx, h, r))
    return out["time_to_target_s"], out["eta_h"] * out["eta_r_target"]


def _seeds(s: Setting, b: PlanBatch, h_max: int, r_max: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Good starting plans per tuple: the smallest compute-bound H (and R), as the reference picks them."""
    idx = np.arange(b.size)
    t = throughput(s, _with_hr(b, idx, np.ones(b.size), np.ones(b.size)))
    with np.errstate(divide="ignore", invalid="ignore"):
        sync = np.where(b.mode == "hierarchical", t["t_regional_s"], t["t_sync_s"])
        h = np.clip(np.ceil(sync / t["t_step_s"]), 1, h_max)
        cycle = np.maximum(h * t["t_step_s"], t["t_regional_s"])
        r = np.clip(np.ceil(t["t_sync_s"] / cycle), 1, r_max) if b.mode == "hierarchical" else np.ones(b.size)
    h = np.nan_to_num(h, nan=1.0).astype(np.int64)
    r = np.nan_to_num(r, nan=1.0).astype(np.int64)
    return idx, h, r


def _h_r_bounds(b: PlanBatch, h_max: int, r_max: int) -> tuple[int, int]:
    """H and R ranges that matter for a mode: none for a pipeline over the WAN, R only when hierarchical."""
    if b.mode == "pipeline_wan":
        return 1, 1
    return h_max, (r_max if b.mode == "hierarchical" else 1)


def _branch_and_bound(s: Setting, b: PlanBatch, tuples: np.ndarray, h_max: int, r_max: int, visit, cutoff) -> int:
    """Search boxes of (H, R) per tuple; returns the number of plans scored.

    `visit(idx, h, r, t)` sees every scored plan; `cutoff(idx)` gives, per box, the time
    above which its plans are of no interest (read after each visit). A box is dropped
    when its lower bound exceeds its cutoff or it is a single plan.
    """
    n = tuples.size
    box = {"i": tuples, "h1": np.ones(n, np.int64), "h2": np.full(n, h_max, np.int64),
           "r1": np.ones(n, np.int64), "r2": np.full(n, r_max, np.int64)}
    evaluations = 0
    while box["i"].size:
        t_hi, e_hi = _time_and_efficiency(s, b, box["i"], box["h2"], box["r2"])
        t_lo, e_lo = _time_and_efficiency(s, b, box["i"], box["h1"], box["r1"])
        evaluations += 2 * box["i"].size
        visit(box["i"], box["h2"], box["r2"], t_hi)
        visit(box["i"], box["h1"], box["r1"], t_lo)
        with np.errstate(divide="ignore", invalid="ignore"):
            lower = np.where(e_lo > 0, t_hi * e_hi / e_lo, 0.0)
        leaf = (box["h1"] == box["h2"]) & (box["r1"] == box["r2"])
        alive = ~leaf & ~(lower > cutoff(box["i"]))      # a NaN bound (no meaning) is kept
        box = _split({k: v[alive] for k, v in box.items()})
    return evaluations


def minimise_time(s: Setting, b: PlanBatch, h_max: int, r_max: int, bound: float = math.inf) -> Found:
    """All plans of the batch within TIE_REL of the least time to target (over every H, R).

    `bound`: a time no plan of interest exceeds (e.g. the best found in other batches,
    or the duration limit); boxes above it are pruned from the start.
    """
    h_max, r_max = _h_r_bounds(b, h_max, r_max)
    best = bound
    kept: list[tuple[np.ndarray, ...]] = []

    def visit(idx, h, r, t):
        nonlocal best
        ok = np.isfinite(t)
        if ok.any():
            best = min(best, float(t[ok].min()))
        keep = ok & (t <= best * (1 + TIE_REL))
        kept.append((idx[keep], h[keep], r[keep], t[keep]))

    idx, h, r = _seeds(s, b, h_max, r_max)
    visit(idx, h, r, _time_and_efficiency(s, b, idx, h, r)[0])
    evaluations = b.size + _branch_and_bound(s, b, np.arange(b.size), h_max, r_max, visit,
                                             lambda i: best * (1 + TIE_REL))
    idx, h, r, t = (np.concatenate(x) for x in zip(*kept))
    final = t <= best * (1 + TIE_REL)
    return Found(_with_hr(b, idx[final], h[final], r[final]), t[final], evaluations)


def reaches_within(s: Setting, b: PlanBatch, h_max: int, r_max: int, limit_s: float) -> tuple[np.ndarray, int]:
    """Per tuple: does some H (and R) reach the target within `limit_s`? Same boxes and bound."""
    h_max, r_max = _h_r_bounds(b, h_max, r_max)
    done = np.zeros(b.size, dtype=bool)

    def visit(idx, h, r, t):
        done[idx[t <= limit_s]] = True

    idx, h, r = _seeds(s, b, h_max, r_max)
    visit(idx, h, r, _time_and_efficiency(s, b, idx, h, r)[0])
    evaluations = b.size + _branch_and_bound(s, b, np.flatnonzero(~done), h_max, r_max, visit,
                                             lambda i: np.where(done[i], -np.inf, limit_s))
    return done, evaluations


def _split(box: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Cut each box along its longer side (in log terms) into up to SPLIT parts."""
    if not box["i"].size:
        return box
    along_h = np.log(box["h2"] / box["h1"]) >= np.log(box["r2"] / box["r1"])
    lo = np.where(along_h, box["h1"], box["r1"])
    hi = np.where(along_h, box["h2"], box["r2"])
    width = hi - lo + 1
    parts = np.minimum(SPLIT, width)
    rep = np.repeat(np.arange(box["i"].size), parts)
    k = np.arange(rep.size) - np.repeat(np.cumsum(parts) - parts, parts)
    start = lo[rep] + (width[rep] * k) // parts[rep]
    end = lo[rep] + (width[rep] * (k + 1)) // parts[rep] - 1
    out = {key: v[rep].copy() for key, v in box.items()}
    h_side = along_h[rep]
    out["h1"] = np.where(h_side, start, out["h1"])
    out["h2"] = np.where(h_side, end, out["h2"])
    out["r1"] = np.where(h_side, out["r1"], start)
    out["r2"] = np.where(h_side, out["r2"], end)
    return out


def tie_key(s: Setting, b: PlanBatch, i: int) -> tuple:
    """The documented order among tied plans: fewer nodes, less compression, smaller H and R,
    then mode, precision, stages, group size, activation compression, the shorter inner
    step, fewer micro-batches, streaming on before off, expert-parallel scope.

    (The inner step comes before M: when the WAN sync sets the pace several M tie, and
    the one with the shortest pipeline step, which the space keeps, is preferred.)"""
    t_step = float(throughput(s, b.take(slice(i, i + 1)))["t_step_s"][0])
    return (int(b.nodes[i]), float(b.compression[i]), int(b.inner_steps[i]), int(b.regional_rounds[i]),
            MODE_ORDER.index(b.mode), PRECISION_ORDER.index(b.precision), int(b.stages[i]), int(b.group_size[i]),
            float(b.activation_compression[i]), t_step, int(b.micro_batches[i]), 0 if b.streaming[i] else 1,
            EP_ORDER.index(b.expert_parallel))


def batches(s: Setting, space: DecisionSpace):
    """Every tuple batch of the space, in mode, precision, EP order."""
    for mode in space.modes:
        for precision in space.precisions:
            for ep in space.expert_scopes(s, mode):
                b = space.tuples(s, mode, precision, ep)
                if b is not None:
                    yield b


def batches_most_promising_first(s: Setting, space: DecisionSpace) -> list[PlanBatch]:
    """The batches ordered by their best seed plan, so that early incumbents prune the rest."""
    scored = []
    for b in batches(s, space):
        idx, h, r = _seeds(s, b, space.max_inner_steps, space.max_regional_rounds)
        t = _time_and_efficiency(s, b, idx, h, r)[0]
        scored.append((float(np.nanmin(t)) if np.isfinite(t).any() else math.inf, len(scored), b))
    return [b for _, _, b in sorted(scored, key=lambda x: (x[0], x[1]))]
