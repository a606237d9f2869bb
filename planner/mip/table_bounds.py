"""Bounds on the classes of the model's tables (`planner.mip.tables`) over boxes of n, H and R, in
closed form for all classes at once: `class_bounds` (a lower bound on ln T per class and box of n),
`least_nodes` and `node_promise` (min_cost: the fewest nodes a class can use within the duration
limit, and the order the presolve solves classes in) and `compute_box_bounds` (max_compute: an upper
bound on ln C per class). They rest on the factorisation of `planner.mip.tables` (its module
docstring): z never decreases with n nor increases with H or R, omega and psi never increase with n
or H_eff. The presolves (`planner.mip.presolve`), the pools' tables (`planner.mip.pools`) and the
model's cuts read them.
"""

from __future__ import annotations

import math

import numpy as np

from planner.mip.tables import Tables, column, gain_buckets


def _octave_boxes(top: int, per_octave: int = 2) -> np.ndarray:
    """[lo, hi] rows covering 1..top, `per_octave` per octave (two: 1, 2, 3, 4, 6, 8, 12, ...)."""
    if per_octave == 2:
        lo = [1, 2, 3]
        while lo[-1] * 4 // 3 <= top:
            lo.append(lo[-1] * 4 // 3 if len(lo) % 2 == 0 else lo[-1] * 3 // 2)
    else:
        steps = int(per_octave * math.log2(max(top, 1))) + 1
        lo = sorted({1, 2, 3} | {int(round(2 ** (i / per_octave))) for i in range(steps + 1)})
    lo = [x for x in lo if x <= top]
    hi = [x - 1 for x in lo[1:]] + [top]
    return np.array([lo, hi]).T


def _in_boxes(t: Tables, nb: np.ndarray):
    """Per mode kind (flat-like, then hierarchical): (hierarchical, positions in t.sync, a column
    getter (classes x 1), n boxes clipped to each class's range lo and hi (classes x boxes), empty
    boxes (lo, hi set to n_lo there))."""
    hier_all = np.array([e.mode == "hierarchical" for e in t.sync])
    for hier in (False, True):
        at = np.flatnonzero(hier_all == hier)
        if not at.size:
            continue
        cache: dict[str, np.ndarray] = {}
        members = [t.sync[a] for a in at.tolist()]

        def col(name, members=members, cache=cache):
            if name not in cache:
                cache[name] = column(members, name)[:, None]
            return cache[name]
        n_lo, n_hi = col("n_lo"), col("n_hi")
        lo, hi = np.maximum(nb[None, :, 0], n_lo), np.minimum(nb[None, :, 1], n_hi)
        empty = lo > hi
        yield hier, at, col, np.where(empty, n_lo, lo), np.where(empty, n_lo, hi), empty


def class_bounds(t: Tables, per_octave: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """Per class and box of n (`per_octave` per octave, as the boxes of H and R): a lower bound
    on ln T over the box (min over the H and R boxes), shape (classes, n boxes), and the boxes'
    [lo, hi] of n clipped to each class's range, shape (classes, n boxes, 2); an empty box has
    bound inf.

    On a box [n1, n2] x [H1, H2] x [R1, R2] every plan has (module docstring)
        ln T >= kappa - ln n2 + z(n1, H2, R2) - omega(n1, H1 sqrt R1),
    since z never decreases with n nor increases with H or R, and omega never increases with n
    or H_eff: the bound of the branch and bound (`planner.solvers.bnb`) and of the model's
    relaxation at the grid, computed from the tables in closed form for all classes at once.
    omega is taken at the top of the class's gain bucket (`gain_buckets`; it never decreases with
    the gain), and with eta_H at the larger end of [H1 sqrt R1, H2 sqrt R2] where eta_H may rise.
    Streaming classes skip the R boxes where the sync term is nowhere the largest (`_streaming_least`,
    the same floats); the others take every (R box, H box) in place in one buffer.
    """
    nb, hb, rb = (_octave_boxes(x, per_octave) for x in (t.n_max, t.h_max, t.r_max))
    tops, which = gain_buckets(np.array([e.gain for e in t.sync]), GAIN_BUCKET_LOG)
    nn, hh, rr, gg = np.meshgrid(nb[:, 0], hb[:, 0], rb[:, 0], tops, indexing="ij")
    hi = None if t.eta_h_falls else np.meshgrid(nb[:, 0], hb[:, 1], rb[:, 1], tops, indexing="ij")
    omega_all = t.omega(nn.ravel(), (hh * np.sqrt(rr)).ravel(), gg.ravel(),
                        None if hi is None else (hi[1] * np.sqrt(hi[2])).ravel()).reshape(nn.shape)
    omega_all = np.moveaxis(omega_all, 3, 0)                     # [gain bucket, n box, H box, R box]
    exact_ok = not np.isnan(omega_all).any()
    suffix_max = np.maximum.accumulate(omega_all[..., ::-1], axis=3)[..., ::-1]    # [..., r]: max over R boxes >= r
    bound = np.full((len(t.sync), nb.shape[0]), np.inf)
    boxes = np.zeros((len(t.sync), nb.shape[0], 2))
    for hier, at, col, lo, hi, empty in _in_boxes(t, nb):
        f = np.exp(t.ln_straggler(np.floor(lo / col("k")) if hier else lo))
        step, sync_base, reg = np.exp(col("ln_step")), np.exp(col("ln_sync_base")) * f, np.exp(col("ln_regional"))
        streaming = (col("streaming") > 0)[:, 0]
        fixed_part = col("kappa") - np.log(hi)
        best = np.full(lo.shape, np.inf)
        for rows, streams in ((np.flatnonzero(streaming), True), (np.flatnonzero(~streaming), False)):
            if not rows.size:        # streaming classes and the others apart: each computes its own outer step only
                continue
            own_step, own_base, own_reg, own_best = step[rows], sync_base[rows], reg[rows], best[rows]
            bucket = which[at][rows]
            buckets = np.unique(bucket)      # one (C_local): its row of omega broadcast, not gathered per class
            if streams and exact_ok and not (np.isnan(own_base).any() or np.isnan(own_step).any()
                                             or np.isnan(own_reg).any()):
                best[rows] = _streaming_least(own_best, own_step, own_reg, own_base, hb, rb if hier else rb[:1], hier,
                                              omega_all, suffix_max, buckets[0] if buckets.size == 1 else bucket)
                continue
            # per H box the part of the outer step without the sync (step + regional, or their max when
            # streaming), then in one buffer: sync, outer, ln outer - omega; the same operations in the
            # same order as outer = step + regional + sync (max(max(step, regional), sync)), without temporaries
            no_sync = [np.maximum(own_step, own_reg / h2) if streams else own_step + own_reg / h2 for _, h2 in hb]
            buf = np.empty(own_best.shape)
            for ri, (r1, r2) in enumerate(rb if hier else rb[:1]):
                r_hi = r2 if hier else 1
                for hj, (h1, h2) in enumerate(hb):
                    np.divide(own_base, h2 * r_hi, out=buf)
                    (np.maximum if streams else np.add)(no_sync[hj], buf, out=buf)
                    np.log(buf, out=buf)
                    omega = omega_all[buckets[0], :, hj, ri][None, :] if buckets.size == 1 else \
                        omega_all[bucket, :, hj, ri]
                    np.subtract(buf, omega, out=buf)
                    np.minimum(own_best, buf, out=own_best)
            best[rows] = own_best
        bound[at] = np.where(empty, np.inf, fixed_part + best)
        boxes[at] = np.stack([lo, hi], axis=2)
    return bound, boxes


def _streaming_least(least: np.ndarray, step: np.ndarray, reg: np.ndarray, base: np.ndarray, hb: np.ndarray,
                     r_boxes: np.ndarray, hier: bool, omega: np.ndarray, suffix_max: np.ndarray, bucket) -> np.ndarray:
    """`class_bounds`' least over the H boxes [h1, h2] and R boxes [r1, r2] (`r_boxes`; flat modes: the
    first, at R = 1) of ln max(max(step, reg / h2), base / (h2 r2)) - omega for streaming classes (step,
    reg: classes x 1; base: classes x n boxes; omega [gain bucket, n box, H box, R box] and `suffix_max`,
    its largest over the R boxes from each on; `bucket`: the classes' gain buckets, or one for all) and
    `least` so far: the very floats of the loop over every (R box, H box), with fewer logarithms. Per H
    box the R boxes go up; the sync term base / (h2 r2) only falls as r2 grows, so once it exceeds
    m = max(step, reg / h2) for no class and box of n, the outer step is m itself in that R box and every
    later one, and the least over them of the rounded ln m - omega is ln m - (their largest omega): a
    rounded difference never rises as what is subtracted grows. On 16 pools in 16 cities that leaves
    139 of the 540 (R box, H box) pairs of the hierarchical classes."""
    one = np.ndim(bucket) == 0
    for hj, (_, h2) in enumerate(hb):
        m = np.maximum(step, reg / h2)
        for ri, (_, r2) in enumerate(r_boxes):
            sync = base / (h2 * (r2 if hier else 1))
            if hier and not (sync > m).any():
                rest = suffix_max[bucket, :, hj, ri]
                least = np.minimum(least, np.log(m) - (rest[None, :] if one else rest))
                break
            at = omega[bucket, :, hj, ri]
            least = np.minimum(least, np.log(np.maximum(m, sync)) - (at[None, :] if one else at))
    return least


GAIN_BUCKET_LOG = 0.05     # class_bounds: gains rounded up to a grid of 5% in ln (a looser, still valid bound)


def least_nodes(t: Tables, bound: np.ndarray, boxes: np.ndarray) -> np.ndarray:
    """min_cost: per class, a lower bound on the nodes of its plans within the duration limit W, from
    `class_bounds` (`bound`, `boxes`): every plan of a box of n whose bound exceeds ln W misses the limit,
    so such a plan has n at least the lower end n1 of the first box whose bound does not, and
    N = max(n unit, search.min_nodes) >= max(n1 unit, min_nodes) nodes (`Classes.nodes`); inf if no box
    meets the limit."""
    ok = bound <= math.log(t.setting.window_s) + 1e-12
    first = np.argmax(ok, axis=1)
    unit = np.array([e.unit for e in t.sync], dtype=float)
    least = np.maximum(boxes[np.arange(len(t.sync)), first, 0] * unit, max(1, t.space.min_nodes))
    return np.where(ok.any(axis=1), least, np.inf)


def node_promise(least: np.ndarray, lower: np.ndarray | None) -> np.ndarray:
    """min_cost's order of promise for `solve_promising`: fewest least nodes (integers, `least_nodes`) first,
    ties by the ln T bound `lower` (more room under the duration limit). The key least + rank / count lies in
    [least, least + 1): against a node count (an integer) it compares exactly as `least` does, so it
    also serves as the bound of the classes that cannot use fewer nodes than the incumbent."""
    if lower is None or not len(least):
        return np.asarray(least, dtype=float)
    rank = np.empty(len(least))
    rank[np.argsort(np.nan_to_num(lower, nan=np.inf), kind="stable")] = np.arange(len(least))
    return least + rank / len(least)


def compute_box_bounds(t: Tables) -> np.ndarray:
    """max_compute: per class an upper bound on ln C, the largest over boxes [n1, n2] x [H1, H2] of n
    and H (two per octave) of compute_const + psi(u_const + ln n2 - z(n1, H2, R_max), n1, H1): z never
    decreases with n nor increases with H or R (`class_bounds`), psi never decreases with u nor
    increases with n or H_eff (eta_H at the largest H_eff of the box where it may rise).
    Where psi is not monotone in u (`Tables.tokens_scored_eta_r`), psi_box over the box's u range
    [u_const + ln n1 - z(n2, H1, 1), the above] (`Tables.psi_box_rounded`, computed only where its
    first term B0 exceeds the class's bound so far)."""
    nb, hb = _octave_boxes(t.n_max), _octave_boxes(t.h_max)
    out = np.full(len(t.sync), -np.inf)
    ln_6p = math.log(6.0 * t.setting.active_params)
    for hier, at, col, lo, hi, empty in _in_boxes(t, nb):
        r_max = t.r_max if hier else 1
        sync_base = np.exp(col("ln_sync_base") + t.ln_straggler(np.floor(lo / col("k")) if hier else lo))
        step, streaming = np.exp(col("ln_step")), col("streaming") > 0
        best = np.full(lo.shape, -np.inf)
        slow_base = np.exp(col("ln_sync_base") + t.ln_straggler(np.floor(hi / col("k")) if hier else hi))
        for h1, h2 in hb:
            sync, reg = sync_base / (h2 * r_max), np.exp(col("ln_regional")) / h2
            outer = np.where(streaming, np.maximum(np.maximum(step, reg), sync), step + reg + sync)
            u = col("u_const") + np.log(hi) - np.log(outer)
            # the least u of the box: n1 replicas at the slowest outer step (n2, H1, R = 1), as a sum
            slow = step + np.exp(col("ln_regional")) / h1 + slow_base / h1
            u_lo = np.minimum(col("u_const") + np.log(lo) - np.log(slow), u)
            with np.errstate(invalid="ignore"):
                if t.tokens_scored_eta_r:
                    # psi_box <= B0 = ln(6 P_act g) + u: only entries where B0 beats the class's best so far
                    # need the Chinchilla terms; n at the box's unclipped lower end (m no larger: valid)
                    top = None if t.eta_h_falls else h2 * math.sqrt(r_max)
                    b0 = col("compute_const") + ln_6p + float(np.log(t.eta_h(float(h1), top))) + u
                    psi = np.where(empty, -np.inf, b0 - col("compute_const"))
                    rows, cols = np.nonzero((b0 > best) & ~empty)
                    psi[rows, cols] = t.psi_box_rounded(nb[:, 0], float(h1), u_lo[rows, cols], u[rows, cols], cols,
                                                        top)
                else:
                    top = None if t.eta_h_falls else np.full(lo.shape, h2 * math.sqrt(r_max))
                    psi = t.psi(lo, np.full(lo.shape, float(h1)), u, top)
                bound = col("compute_const") + psi
            best = np.maximum(best, np.where(np.isnan(bound), -np.inf, bound))
        out[at] = np.where(empty, -np.inf, best).max(axis=1)
    return out
