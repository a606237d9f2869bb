"""The most C_quality over model sizes at most N_max nodes, flat or pp_group: the question of the
reference calculator's `sweep_model_sizes`, answered exactly by a search built for it (issue 27
item 3), with the answer the branch and bound gives (`planner.reference.search._solve_sizes`:
`max_compute` per size, `best_of_sizes`), plan and value alike.

The general search spends 13-16 ms on the winning size alone (its class listing scores every
(S, Ca, M) row, its seeds and its box levels); this one scores every size at once, on far fewer
plans, using what this question's profile allows (the conditions are checked, `applies`; anything
else answers None and the caller runs the general search).

Reduced plans. Every plan of the space is dominated by a *reduced* plan r(p): C_quality(r(p)) >=
C_quality(p) and r(p) = p or r(p) before p in `bnb.tie_key` order (fewer nodes, smaller H, then
the shorter step, fewer micro-batches, streaming on):
- streaming on: the space lists no other (`DecisionSpace`, streaming (True,)).
- pp_group: M = M*(S, Ca), the least pipeline step (ties to the smaller M); N = K S for K =
  floor(N / S) replicas (min_nodes 1): the space lists only these (`planner.space` module docstring).
  M* is found here from the two to four M nearest the real minimum of GPipe's step
  t_pp(M) = (M + S - 1)(c + (x + lat) f) = alpha + beta (S - 1) + beta M + alpha (S - 1) / M,
  alpha = t_comp / S + 2 a f / bw, beta = lat f (`timing.pipeline_parts_s`): convex in M, so every
  M outside the candidates has a step at least that of the nearest candidate (`_micro_batches`);
  the listing's argmin is the same M whenever every other candidate is slower by more than
  STEP_MARGIN (else None: the general search answers).
- H <= h_hi = min(H_max, ceil(t_sync(K_max) / t) + 1): at H >= H_c(K) = t_sync(K) / t the tokens
  W' B K tf / t no longer grow with H, eta_H does not rise and mu = K^beta(H) does not fall, so
  (K, ceil(H_c(K))) dominates (K, H); H_c(K) <= H_c(K_max) (t_sync non-decreasing in K).
- one flat node (N = 1, no sync, C = 6 P T with T not depending on H): H = 1.
Rows: flat (if P beta fits a node) and pp_group (S, Ca) with P beta / S within the node,
S_min <= S <= min(S_max, N_max / 2); per row the step t (t_comp times the recomputation factor,
1 + 1/3 under full recomputation, else 1 without activation memory; pp_group GPipe's t_pp(M*) of
it), eta_A and K in [2, K_max], K_max = N_max (flat) or floor(N_max / S). A pipeline row's step
starts as a lower bound (`_least_step_bound`: the real minimum over M, which only raises the
tokens, so every bound stays a bound and h_hi only grows) and becomes t_pp(M*) (`make_exact`)
for the seed rows and once a box of the row outlives the first round; only then are its plans
scored.

Value (`_Rows.bound` at a point, docs/cost_model.md sections 4-7, `modes.flat`, `modes.pp_group`,
`run.quality_compute`): T = W' B K H tf / max(H t, t_sync(K)), t_sync(K) = base f(K) (the
reference sync pattern: base = v / up + v / down + lat, no K in it), g = eta_H(H) eta_C eta_A,
mu = K^beta(P, H), C = g min(6 P T, max(C'(mu L(P, T)), C_low)).

Box bound (`size_bound` module docstring, steps 1-4, with the loss term taken at its least over
the box's H): over K in [K1, K2] and H in [H1, H2],
C <= g(H1) min(6 P T(K2, H2), max(C'(min over real h in [H1, H2] of phi(h)), C_low)),
phi(h) = K1^beta(h) L(P, T(K2, h)) (`_Rows.bound`, `least_loss_h`). Proof: g does not rise with H;
T(K, H) = min(W' B tf K / t, W' B tf K H / (base f(K))) does not fall in H, nor in K (K / f(K) rises
where 1 + c log2 K > c / ln 2, true for K >= 2 and c < ln 2 / 2, which `applies` checks), so every
plan's T is at most T(K2, H2) and its mu L at least phi at its H (mu = K^beta(H) rises with K,
beta(H) >= 0, L falls with T); C' does not rise with the loss. phi's least over [H1, H2]: with
beta(h) = gamma ln h, gamma = beta0 ln K1 / ln H_ref >= 0, and T(K2, h) = a h (a = W' B tf K2 /
t_sync(K2)) up to h_c = t_sync(K2) / t, then constant, phi = E' h^gamma + B a^-b h^(gamma - b)
up to h_c, a sum of exponentials of x = ln h with positive coefficients, so convex in x, with its
least at h* = ((b - gamma) B / (gamma E'))^(1/b) / a (h* = +inf at gamma = 0, h* <= H1 taken where
gamma >= b); beyond h_c phi = h^gamma (E' + B T^-b) does not fall. So phi is least over [H1, H2]
at h* clipped to [H1, max(H1, min(H2, h_c))]. At a plan (K1 = K2, H1 = H2) this is the plan's
C_quality, by the same operations. The C' of the bound is bounded from a table of losses
(`_c_eq_above`: C' does not rise with the loss, at most 1% above it), the Newton solve only at one
(K, H) (a plan, or a collapsed box of one H) where that bound reaches the cut: a wider box is kept
on the table's bound and split, and its plans get their exact values once they are reached (on the
shipped sweeps the exact C' of wider boxes dropped 0-3 of the 8-48 boxes it was solved for, for a
Newton solve of about 50 numpy calls per round). Rounding: phi is worked at one h by the cost
model's operations; its error (about 1e-16, times C''s elasticity in the loss) is far below MARGIN,
so a box is never dropped for it while holding a plan within MARGIN / 2 of the best (the answer's
plan and every plan tied with it).
Against the bound with the loss multiplier at H1 and the tokens at H2 (before), this one drops
most rows at their first box: the multiplier K^beta(H) moves the loss by a few parts in a thousand
and C' by tens of percent, so that pairing it low with the most tokens was the bound's main slack.

Lemma K (monotone in K). At a fixed H, if beta(H) E' <= (b e_min - beta(H)) B T^-b with T the
box's most tokens, E' = E + A P^-alpha, b and B the Chinchilla data exponent and coefficient and
e_min = 1 - c / ln 2 (c the straggler coefficient, f(K) = 1 + c log2 K), then C does not fall as
K grows over the box. Proof: C grows with T and falls with mu L(P, T) (C' falls as its loss
rises); T grows with K, and d ln(mu L) / d ln K = beta - b e B T^-b / L with e = d ln T / d ln K,
which is 1 where the compute sets the pace and 1 - (c / ln 2) / f(K) >= e_min where the sync does
(T is continuous at the switch); so the derivative is <= 0 wherever beta L <= b e B T^-b, i.e.
beta E' <= (b e - beta) B T^-b, which holds at every T below the box's most and every e >= e_min
once it holds there (its right side falls with T). A box where it holds is bounded by its plans at
K2 alone ("collapsed", `monotone_in_k`); it is split in H only, and once it has one H into {K2}
and a collapsed [K1, K2 - 1] (the lemma holds on any part of its range), bounded by K2 - 1.

Search (`_search`). A first bound per row from the table of C' (no Newton solve, `_Rows.first_bound`);
the SEED_ROWS rows highest by it are scored at one plan each, K_max and the integer H nearest the
h of least phi at K_max over [1, h_hi] (`_seed`: a guess at the row's best H, which it is on most
rows), for a first incumbent V; the rows whose first bound is below V (1 - MARGIN) are dropped
and the others start as one box each ([2, K_max] x [1, h_hi]). Every round the boxes whose bound
is below V (1 - MARGIN) are dropped and the others split (K in halves, H in H_PIECES pieces,
geometric; a collapsed box's pieces of one H give {K2} and [K1, K2 - 1] at once); a box of one K
and one H is a plan, its bound its value, and raises V. When no box
is left, the plans kept are those within MARGIN of V; the answer is the best one, r*, provided
it is the only one (else None; also after ROUNDS rounds or beyond MAX_BOXES boxes). The search's
path (incumbents, splits) changes how much is bounded, never the answer: every plan within MARGIN
of the final V lies in boxes whose bound is at least that, which are never dropped.

Why r* is the branch and bound's answer. MARGIN (1e-9) is far above the tie tolerance
(`bnb.TIE_REL`, 1e-12) and the rounding of these figures against the cost model's (about 1e-14).
Every plan p tied with the optimum has C(p) >= V (1 - 1e-12 - rounding), so its reduced plan has too,
and the only reduced plan that high is r*: r(p) = r*, which is tied and comes first in tie order.
Every other size's plans are below V (1 - MARGIN), so `best_of_sizes` ties none with r*'s size.
Several plans within MARGIN of V that all lie within SURE_TIE (1e-13) of each other are tied for
the branch and bound as well, and no other plan is: the answer is then the first of them in the
order of `best_of_sizes` (the smallest size) and `bnb.tie_key` (`_answer`).
The value returned is `window_compute` of r*'s one-plan batch, as `objective_search.max_compute`.
Layer: search (planner.reference).
"""

from __future__ import annotations

import functools
import math

import numpy as np

from planner.cost import chinchilla, memory, modes, physics, quality, timing, tensor_parallel
from planner.cost.run import efficiency_without_replicas
from planner.cost.score import window_compute
from planner.cost.setting import Setting
from planner.cost.straggler import eta_h_divisor, straggler_coefficient, straggler_factor, throughput_fraction
from planner.reference.fewest_nodes import one_plan
from planner.solvers import monotone
from planner.solvers.objective_search import SizeRun
from planner.space import DecisionSpace, every_micro_batch, schedules_searched

MARGIN = 1e-9          # relative: plans within it of the best are a near tie (answered by the general search)
SURE_TIE = 1e-13       # relative: plans this close are tied for the branch and bound too (TIE_REL 1e-12)
STEP_MARGIN = 1e-12    # relative: pipeline steps of two M closer than this leave M* to the listing's rounding
ROUNDS = 40            # rounds of splitting before giving up (None)
MAX_BOXES = 20_000     # boxes alive beyond which the search gives up (None)
H_PIECES = 8           # pieces of a box's H range per round
SEED_ROWS = 32         # rows of highest first bound scored at one plan each for the first incumbent (`_seed`)
ENUM_BOXES = 8         # at most this many boxes left, each of at most ENUM_H values of H: split into single H (`_split`)
ENUM_H = 64


def applies(s: Setting, space: DecisionSpace, params, alpha: np.ndarray | None = None) -> bool:
    """Whether the proofs of the module docstring hold for the model sizes `params` (total = active
    parameters; `s` is any of their settings, which differ in P alone), besides `search._reach_bounds`
    and `size_bound.applies` on `s` (the caller checks them; of their conditions only alpha(P) >= 0
    reads P, checked here for every size): a C_quality target under the Chinchilla replica penalty,
    modes flat and pp_group only, streaming on, the reference sync pattern (no K in the sync's base),
    a straggler coefficient 0 <= c < ln 2 / 2, GPipe the only schedule and M entering only the
    pipeline step, no tensor parallelism or sharded state, no budget, no node floor above 1, no
    placement, and the branch and bound's own monotonicity facts (`monotone.check`: of them only
    a finite alpha(P) reads P). `alpha`: `size_alpha(params, s.assumptions)` where the caller has it."""
    a = s.assumptions
    c = straggler_coefficient(a)
    if alpha is None:
        alpha = size_alpha(params, a)
    return (s.target_kind == "c_quality" and not s.is_moe and a.replica_penalty == "chinchilla"
            and bool(np.all(np.isfinite(alpha) & (alpha >= 0)))
            and set(space.modes) <= {"flat", "pp_group"} and space.streaming == (True,)
            and space.min_nodes <= 1 and space.placement is None and s.budget_usd is None
            and space.expert_parallel is None and len(space.precisions) == 1 and len(space.compression) == 1
            and a.sync_pattern == "all_reduce" and not a.concurrent_up_down and 0 <= c < math.log(2) / 2
            and not every_micro_batch(a) and schedules_searched(a) == (0,) and not a.search_tensor_parallel
            and a.tensor_parallel <= 1 and a.stage_state_shards <= 1 and not a.search_zero_shards
            and tensor_parallel.data_parallel_groups(a, s.accelerators_per_node) <= 1
            and not monotone.check(s).unsupported)


def size_alpha(params, a) -> np.ndarray:
    """`quality.alpha` of the sizes `params` (a list or array of doubles: `np.asarray(params, dtype=float)` is
    the same doubles either way), without warnings: worked once per sweep for `applies` and `_Rows` (each
    computed it, about 10 us warm and 25 us in a first sweep's order, issue 27 item 3), the same call on the
    same doubles, so the same array (tests/test_reference_sweep_search.py)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return quality.alpha(np.asarray(params, dtype=float), a)


class _Rows:
    """The rows of every size at once (module docstring): per row its size index, P, step t (s),
    eta_A, K_max, stages S (1 flat), activation compression Ca (0 flat), M* (0 flat), and per size
    the sync's base (s) and, where one node holds the model, one node's C_quality (else 0)."""

    def __init__(self, s: Setting, space: DecisionSpace, params: np.ndarray, alpha: np.ndarray | None = None):
        a, precision = s.assumptions, space.precisions[0]
        self.a, self.s, self.space, self.params = a, s, space, params
        n_max = space.max_nodes
        beta = a.bytes_per_param(precision)
        peak, mfu = s.peak_flops[precision], a.mfu_for(precision)
        t_comp = timing.compute_time_s(params, s.local_batch_tokens, peak, mfu) \
            + tensor_parallel.in_node_data_parallel_s(a, params, precision, s.accelerators_per_node)
        whole = memory.state_bytes_per_node(params, beta) * tensor_parallel.state_factor(a, precision,
                                                                                         s.accelerators_per_node)
        fits = whole <= s.memory_bytes
        payload = physics.payload_bits(a, params, precision, float(space.compression[0]), 1, False)
        self.base = physics.sync_base_s(a, payload, 2.0, s.wan_up_bps, s.wan_down_bps, s.wan_rtt_s)
        self.wbt = s.training_window_s * s.local_batch_tokens * throughput_fraction(a)   # W' B tf
        t_comp = t_comp * physics.flat_recompute_factor(a)    # a pipeline's too: r = 1 (`full`) or 0 without
        flat_t = t_comp                                         # activation memory (`physics.recompute_share`)
        # one node: 6 P T, T = W' B tf / t (H cancels, the smallest H comes first in tie order)
        self.one = np.where(fits & ("flat" in space.modes) & (space.min_nodes <= 1),
                            6.0 * params * (self.wbt / flat_t), 0.0)
        j_flat = fits.nonzero()[0] if "flat" in space.modes and n_max >= 2 else np.zeros(0, np.int64)
        parts = [[j_flat, flat_t[j_flat], np.ones(j_flat.size), np.full(j_flat.size, n_max), np.ones(j_flat.size),
                  np.zeros(j_flat.size), np.log2(np.full(j_flat.size, float(n_max)))]]
        top = min(space.max_stages, n_max // 2)
        self.ok = True
        self.pipe = (np.zeros(0),) * 3
        if "pp_group" in space.modes and top >= 2:
            parts.append(list(self._pipes(s, space, params, t_comp, beta, top)))
        # Fewer row-length arrays alive at once (a first sweep's fresh heap pages are its peak's, about 2.3 us
        # each): each column's parts dropped once it is joined, no copy where the dtype is already the one
        # wanted (j: int64 from nonzero; K_max: float64 wherever there are pipeline rows), the float
        # columns that only give an int64 one dropped after it. The same arrays, dtype and bits as before.
        columns = []
        for x in range(7):
            columns.append(np.concatenate([p[x] for p in parts]))
            for p in parts:
                p[x] = None
        j, t, eta_a, k_max, stages, ca, log2_k_max = columns
        del parts, columns
        self.j, self.t, self.eta_a = j.astype(np.int64, copy=False), t, eta_a
        self.k_max_f = k_max.astype(float, copy=False)    # K_max as doubles (the bounds' K; `k_max` the counts)
        self.stages, self.ca = stages.astype(np.int64), ca
        del k_max, stages
        self.flat = np.arange(j.size) < j_flat.size
        self.n_flat = j_flat.size
        self.m = np.zeros(j.size, np.int64)               # M* of pipeline rows, once `exact`
        self.exact = self.flat.copy()                     # t is the row's step (else a lower bound on it)
        self.eta_c = float(quality.compression_quality(float(space.compression[0]), a))
        self.div = eta_h_divisor(a)
        self.table = _c_eq_table(a)
        e_min = 1.0 - straggler_coefficient(a) / math.log(2.0)
        self.lemma_be = a.chinchilla_beta * e_min
        # What `bound`, `tokens` and `monotone_in_k` read of a row's P, worked once per size (`size_*`) and
        # taken for the rows they are asked about (size_x[j[i]], the element size_x[j][i] is: the same
        # double), not kept per row (`row_*`, for the tests): the same operations on the same doubles as the
        # cost functions they stand for (`quality.alpha`, `quality.replica_beta`'s beta0,
        # `chinchilla.chinchilla_loss`'s E + A P^-alpha), so the same values; with K >= 2 and H >= 1 in every
        # box, `straggler_factor`'s f(K) is 1 + c log2 K and `replica_loss_multiplier`'s K^beta(H) needs no
        # case of its own (K^0 = 1 at H = 1).
        self.c, self.log_h_ref = straggler_coefficient(a), np.log(a.replica_h_ref)
        self.size_alpha = quality.alpha(params, a) if alpha is None else alpha     # `alpha`: `size_alpha`'s
        self.size_beta0 = a.replica_beta_coefficient * params ** a.replica_beta_exponent
        self.size_loss0 = a.chinchilla_e + a.chinchilla_a * params ** (-a.chinchilla_alpha)   # E + A P^-alpha
        self.size_six_p = 6.0 * params
        # H beyond ceil(t_sync(K_max) / t) is dominated (module docstring); one more against rounding
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
            h_c = np.ceil(self.base[self.j] * (1.0 + self.c * log2_k_max) / self.t) + 1.0     # `sync` at K_max
        self.h_hi = np.maximum(np.fmin(h_c, space.max_inner_steps), 1).astype(np.int64)     # NaN, inf: H_max

    # Per row, as arrays over every row (for the tests; the search takes the per-size values for the rows asked)
    p = property(lambda self: self.params[self.j], doc="P per row")
    row_base = property(lambda self: self.base[self.j], doc="the sync's base (s) per row")
    row_alpha = property(lambda self: self.size_alpha[self.j], doc="`quality.alpha` per row")
    row_beta0 = property(lambda self: self.size_beta0[self.j], doc="`quality.replica_beta`'s beta0 per row")
    row_loss0 = property(lambda self: self.size_loss0[self.j], doc="E + A P^-alpha per row")
    row_six_p = property(lambda self: self.size_six_p[self.j], doc="6 P per row")
    k_max = property(lambda self: self.k_max_f.astype(np.int64), doc="K_max per row, as counts")
    lemma = property(lambda self: (self.row_loss0, self.lemma_be), doc="Lemma K's (E + A P^-alpha per row, b e_min)")

    def _pipes(self, s, space, params, t_comp, beta, top):
        """The pp_group rows (S, Ca) that fit their node, each with a lower bound on its step over
        every M (`_least_step_bound`); their M* and step come later, for the rows that need them
        (`make_exact`). Per row: size index, that bound, eta_A, K_max, S, Ca and log2 K_max (K_max and
        its log2 worked once per (S, Ca) and taken per row: the same operations on the same doubles)."""
        a, precision = self.a, space.precisions[0]
        # what reads (S, Ca) alone is worked once on their grid (once per process, `_grid`), then taken for
        # every size; the rows are the (size, (S, Ca)) pairs whose stage fits its node, size major: the pairs
        # of the (size, grid) table of the state, which is elementwise in P and S (the same doubles as per row)
        grid_s, grid_ca, grid_f, grid_eta = _grid(a, top, space.activation_compression)
        state = memory.state_bytes_per_node(params[:, None], beta, grid_s) * tensor_parallel.state_factor(
            a, precision, s.accelerators_per_node)
        j, g = (state <= s.memory_bytes).nonzero()
        tc = t_comp[j]
        S, Ca, f = grid_s[g], grid_ca[g], grid_f[g]
        hidden = s.hidden_size if s.hidden_size is not None else \
            timing.hidden_size(params, a.hidden_size_coefficient)[j]          # per size, taken for its rows
        act = timing.activation_bits(s.local_batch_tokens, hidden, a.activation_bytes(precision), Ca)
        self.pipe = (tc, act, f)           # per pipeline row, in row order after the flat rows
        low = _least_step_bound(tc, S, act, f, s.pipeline_bps, s.pipeline_rtt_s, space.max_micro_batches)
        grid_k = space.max_nodes // grid_s                 # K_max = floor(N_max / S) and its log2, per (S, Ca)
        return (j, low, grid_eta[g], grid_k[g], S, Ca, np.log2(grid_k)[g])

    def known(self, r: int) -> dict[str, np.ndarray]:
        """What `modes.pp_group_pipeline`'s `known` takes of pipeline row r's plan (S, Ca of the row; P,
        the precision and the setting's other fields those of the plan's setting, which differ from the rows'
        in P alone), as one-element arrays: the activations sent per micro-batch (`_pipes`' act:
        `timing.activation_bits` with h of the row's size), f(S) and eta_A (`_grid`'s `straggler_factor`
        and `quality.activation_quality`, taken for the row). Each is the function `modes._chunk_free`
        applies, applied to the same doubles (S and Ca as floats, h = c sqrt(P) of the same P, the same
        assumptions), elementwise, so the same double; tests/test_pipeline_known.py checks them bit for
        bit against `modes.pp_group_pipeline` without them."""
        q = r - self.n_flat
        tc, act, f = self.pipe
        return {"act": act[q:q + 1], "f_pp": f[q:q + 1], "eta_a": self.eta_a[r:r + 1]}

    def make_exact(self, rows) -> None:
        """M* and its step for the pipeline rows among `rows` not yet exact (`_micro_batches`); `ok`
        False where M* is left to rounding."""
        missing = ~self.exact[rows]
        if not missing.any():
            return
        mark = np.zeros(self.j.size, bool)
        mark[rows[missing]] = True
        r = mark.nonzero()[0]                             # the rows once each, in order
        q = r - self.n_flat
        tc, act, f = (x[q] for x in self.pipe)
        m, step, ok = _micro_batches(tc, self.stages[r].astype(float), act, f, self.s.pipeline_bps,
                                     self.s.pipeline_rtt_s, self.space.max_micro_batches)
        self.m[r], self.t[r], self.exact[r] = m, step, True
        self.ok = self.ok and bool(ok.all())

    def sync(self, i, k):
        """t_sync(K) = base f(K) of rows `i` (`modes._wan_sync`), K >= 2 (f(K) = 1 + c log2 K)."""
        return self.base[self.j[i]] * (1.0 + self.c * np.log2(k))

    def tokens(self, i, k1, k2, h):
        """W' B tf K2 H / max(H t, t_sync(K1)): the tokens at (K2, H) with the sync of K1 (K1 = K2: a plan's,
        the most of a box [.., K2] x [.., H]: T does not fall in K, module docstring)."""
        return self.wbt * (k2 * h) / np.maximum(h * self.t[i], self.sync(i, k1))

    def bound(self, i, k1, k2, h1, h2, cut: float) -> np.ndarray:
        """g(H1) min(6 P T(K2, H2), max(C'(phi(h)), C_low)) per box, phi(h) = K1^beta(h) L(T(K2, h)) at
        the h of least phi in [H1, H2] (`least_loss_h`; module docstring, box bound; at a point, the
        plan's C_quality); where g 6 P T is already below `cut`, that value (no C'), and where the
        bound with C' bounded by the table (`_c_eq_above`) is, or the box has more than one (K, H)
        (K1 < K2 or H1 < H2, K1 the multiplier's K), that bound (no Newton solve).
        g = eta_H(H1) eta_C eta_A (`quality.eta_sync_interval`), K^beta(h) (`quality.replica_loss_multiplier`),
        the loss E + A P^-alpha + B T^-b (`chinchilla.chinchilla_loss`; T > 0 here), each by the same
        operations as those functions (`__init__`)."""
        a = self.a
        t, ji = self.t[i], self.j[i]
        sync2 = self.base[ji] * (1.0 + self.c * np.log2(k2))               # `sync` at K2
        tokens = self.wbt * (k2 * h2) / np.maximum(h2 * t, sync2)          # `tokens` at (K2, H2)
        g = np.maximum(a.eta_h_floor, (1.0 - self.size_alpha[ji] * np.log10(h1)) / self.div) * self.eta_c * self.eta_a[i]
        six_p_t = self.size_six_p[ji] * tokens
        out = g * six_p_t
        need = (~(out < cut)).nonzero()[0]
        if need.size:
            if need.size < i.size:
                i, ji, six_p_t, t, sync2, k1, k2, h1, h2 = (x[need] for x in (i, ji, six_p_t, t, sync2, k1, k2, h1, h2))
            hm = self.least_loss_h(i, k1, k2, h1, h2, t, sync2)
            tokens = self.wbt * (k2 * hm) / np.maximum(hm * t, sync2)
            mu = k1 ** (self.size_beta0[ji] * (np.log(hm) / self.log_h_ref))
            loss = (self.size_loss0[ji] + a.chinchilla_b * tokens ** (-a.chinchilla_beta)) * mu
            out[need] = g[need] * np.minimum(six_p_t, np.maximum(_c_eq_above(loss, a, self.table), a.chi_search_low_flop))
            # the exact C' (a Newton solve) only at one (K, H) whose table bound reaches the cut: a plan, whose
            # value it is, or a collapsed box of one H; a wider box keeps the table's bound (module docstring)
            exact = (~(out[need] < cut) & (k1 == k2) & (h1 == h2)).nonzero()[0]
            if exact.size:
                c_eq = _c_eq(loss[exact], a, self.table)
                need = need[exact]
                out[need] = g[need] * np.minimum(six_p_t[exact], np.maximum(c_eq, a.chi_search_low_flop))
        return out

    def least_loss_h(self, i, k1, k2, h1, h2, t, sync2):
        """The real h in [H1, H2] where K1^beta(h) L(T(K2, h)) is least (module docstring); `t`, `sync2`:
        the rows' step and t_sync(K2)."""
        ji = self.j[i]
        gamma = self.size_beta0[ji] * (np.log(k1) / self.log_h_ref)
        b = self.a.chinchilla_beta
        star = ((b - gamma) * self.a.chinchilla_b / (gamma * self.size_loss0[ji])) ** (1.0 / b) * sync2 / (self.wbt * k2)
        star = np.where(gamma < b, star, h1)
        # fmax / fmin: at K1 = 1 with no sync time (t_sync = 0) `star` is inf x 0 = NaN, and every h of the
        # box has the same product (the tokens do not depend on h, nor the multiplier 1^beta): h1 is then as
        # least as any, and NaN must not reach the bound
        return np.fmin(np.fmax(star, h1), np.fmax(h1, np.fmin(h2, sync2 / t)))

    def first_bound(self) -> np.ndarray:
        """Per row, a bound on all its plans needing no Newton solve: eta_C eta_A min(6 P T, Q_j) with
        T = W' B tf K_max / t (the row's most tokens: H_hi t is at least t_sync(K_max)) and
        Q_j = min(6 P T_j, max(C'+(L(P, T_j)), C_low)) at T_j, the most tokens of any row of size j, C'+
        the table's upper bound on C' (`_c_eq_above`, at most 1% above it). It is at least the row's box
        bound (`bound` over [2, K_max] x [1, H_hi]: g(1) = eta_C eta_A, mu(2, 1) = 1, Q grows with T, and
        C'+ >= C'). It only orders the seed rows and drops rows below the seed's best (`_search`): the
        exact C' of its twelve losses (a Newton solve, about 50 numpy calls a sweep) changed neither on
        the three shipped sweeps (the same seeds, rows and boxes), and a looser bound changes the
        search's path, never its answer (`_search`)."""
        a = self.a
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
            tokens = self.wbt * self.k_max_f
            tokens /= self.t
            # per size the most of 0 and its rows' tokens (NaN kept): the most of each run of rows of one size
            # (the flat rows, then the pipeline rows, each in size order), then of the runs of each size
            j = self.j
            starts = np.concatenate(([True], j[1:] != j[:-1]))[:j.size].nonzero()[0]   # np.diff's, without its wrapper
            most = np.zeros(self.params.size)
            np.maximum.at(most, self.j[starts], np.maximum.reduceat(tokens, starts))
            loss = chinchilla.chinchilla_loss(self.params, most, a)
            q = np.minimum(6.0 * self.params * most,
                           np.maximum(_c_eq_above(loss, a, self.table), a.chi_search_low_flop))
            # eta_C eta_A min((6 P)[j] T, q[j]), (6 P)[j] = 6 (P[j]), worked in place: the same operations in the
            # same order on the same operands, fewer row-length arrays (a first sweep's fresh pages)
            six_p_t = self.size_six_p[j]
            six_p_t *= tokens
            np.minimum(six_p_t, q[j], out=six_p_t)
            out = self.eta_c * self.eta_a
            out *= six_p_t
        out[np.isnan(out)] = np.inf
        return out

    def monotone_in_k(self, i, k1, k2, h2) -> np.ndarray:
        """Lemma K's condition over boxes [K1, K2] x [.., H2] (module docstring), with a margin."""
        a = self.a
        ji, be = self.j[i], self.lemma_be
        beta = self.size_beta0[ji] * (np.log(h2) / self.log_h_ref)     # `quality.replica_beta` (H >= 1)
        tokens = self.tokens(i, k1, k2, h2)
        right = (be - beta) * a.chinchilla_b * tokens ** (-a.chinchilla_beta)
        return beta * self.size_loss0[ji] * (1.0 + MARGIN) <= right * (1.0 - MARGIN)


def _grid(a, top: int, activation_compression) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(S, Ca, f(S), eta_A(Ca, S)) over every (S, Ca), S in 2..top major, Ca in the space's order minor
    (read-only arrays; `_Rows._pipes`), worked once per process and key instead of once per sweep (about
    20 numpy calls and two interpolations a sweep). Of the assumptions,
    `straggler_factor` reads the straggler coefficient c alone and `quality.activation_quality` the
    activation-quality table's points at the scenario (`Assumptions.quality_points`): the key holds c,
    the points' and the Ca's bits and top, so that a cached grid is the one these expressions build
    (tests/test_reference_sweep_search.py checks the rows against the per-sweep construction). The
    cache is `_grid_of`'s (functools.lru_cache on the key; the assumptions and Ca ride along unhashed)."""
    ca = np.asarray(activation_compression, dtype=float)
    return _grid_of(_Keyed(_grid_key(a, top, ca), (a, ca)))


class _Keyed:
    """`value` hashed and compared by `key` alone: an lru_cache argument whose key is all the cached
    function reads of `value` (`_grid_of`: the assumptions' tables are dicts, not hashable)."""

    __slots__ = ("key", "value")

    def __init__(self, key: tuple, value):
        self.key, self.value = key, value

    def __hash__(self) -> int:
        return hash(self.key)

    def __eq__(self, other) -> bool:
        return isinstance(other, _Keyed) and self.key == other.key


@functools.lru_cache(maxsize=64)
def _grid_of(keyed: _Keyed) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """`_grid` of the assumptions and Ca `keyed.value`, top `keyed.key[0]` (`_grid_key`)."""
    (a, ca), top = keyed.value, keyed.key[0]
    stages = np.arange(2, top + 1, dtype=float)
    # every (S, Ca), S major (`arange % n`: np.tile's values without its Python wrapper)
    grid_s, grid_ca = np.repeat(stages, ca.size), ca[np.arange(stages.size * ca.size) % ca.size]
    grid = (grid_s, grid_ca, straggler_factor(grid_s, a), quality.activation_quality(grid_ca, grid_s, a))
    for x in grid:
        x.flags.writeable = False
    return grid


def _grid_key(a, top: int, ca: np.ndarray) -> tuple:
    """What `_grid` reads: top, the Ca's bits, the straggler coefficient, the activation-quality points' bits."""
    points = a.quality_points("activation_quality")
    return top, ca.tobytes(), float(straggler_coefficient(a)), points[0].tobytes(), points[1].tobytes()


TABLE_EXCESS = (1e-3, 10.0)   # excess losses L - E the table of C' covers at least (`_c_eq_above`)
TABLE_DU = 0.005              # step of the table's grid of u = ln N*: successive C' 1% apart (e^(2 du))
TABLE_SLACK = 1e-9            # relative: the table's C' taken this far above, against its rounding (`_c_eq_table`)
NEWTON_ITERATIONS = 60        # at most, as `chinchilla.equivalent_optimal_compute` (two from the table's start)
_TABLES: dict = {}            # the table per Chinchilla constants, built once per process
_SOLVED: dict = {}            # `_c_eq` per (constants, losses' bits): the cost model's cache of C', kept here
_SOLVED_MAX = 512             # entries (arrays of at most _SOLVED_SIZE losses), as `chinchilla`'s cache
_SOLVED_SIZE = 1024


def _c_eq_above(loss, a, table=None) -> np.ndarray:
    """An upper bound on C'(loss), the compute whose compute-optimal model reaches `loss`
    (`chinchilla.equivalent_optimal_compute`), without a Newton solve: C' at the largest loss of a
    table at most `loss` (+inf below the table's least loss, or where the loss is NaN).

    Proof: C'(L) = 6 r N*^2 with A N*^-alpha + B (r N*)^-beta = L - E; the left side falls as N*
    grows, so a larger L has a smaller root and a smaller C': C' does not rise with L, and every
    loss at least a table loss L_k has C' <= C'(L_k). The table (`_c_eq_table`) is a grid of roots
    u = ln N* with the loss each one solves, so that no solve builds it.
    `table`: `_c_eq_table(a)` where the caller holds it."""
    losses, c_eq = (_c_eq_table(a) if table is None else table)[:2]
    at = losses.searchsorted(loss, side="right")          # 0 below the least (C' <= inf); NaN sorts last
    return np.where(np.isnan(loss), np.inf, c_eq[at])


def _c_eq_table(a):
    """(losses, C' above each with +inf first, the grid's u, ln(L - E) of each loss, `_newton_constants`) of
    `_c_eq_above` and `_c_eq`, built once per process and constants.

    The grid runs down from u_hi to u_lo by TABLE_DU: u_lo = max(ln(A / k) / alpha, ln(B' / k) / beta)
    at k = the largest excess of TABLE_EXCESS (B' = B r^-beta; each term alone reaches k there, so the
    root of k lies right of it, as in `chinchilla`), u_hi the same with 2 A and 2 B' at the least
    excess (both terms at most k / 2 there, so the root of k lies left of it): the losses cover
    TABLE_EXCESS. Each grid point's loss is E + A e^(-alpha u) + B' e^(-beta u), rising as u falls,
    and C' = 6 r e^(2u), taken TABLE_SLACK above: the root of the loss as rounded lies within
    (rounding of the loss, a few 1e-16 of it) / (its slope in u, at least alpha k = 3e-4 at k = 1e-3)
    of the grid's u, which moves C' by at most about 1e-11 (tests/test_reference_sweep_search.py:
    the table is above the Newton solve's C' on random losses, and within 1.2% of it). Successive
    C' are e^(2 TABLE_DU) = 1.01 apart, as the excess-loss table of 0.2% steps it replaced, which
    cost a Newton solve of its 4,600 losses (1.5-2 ms, a process's first sweep) where this costs
    two exponentials of its 5,700 points."""
    key = _table_key(a)
    table = _TABLES.get(key)
    if table is None:
        e, a_coef, a_exp, b, b_exp, r = key
        b_coef = b * r ** (-b_exp)
        lo, hi = TABLE_EXCESS
        u_lo = max(math.log(a_coef / hi) / a_exp, math.log(b_coef / hi) / b_exp)
        u_hi = max(math.log(2.0 * a_coef / lo) / a_exp, math.log(2.0 * b_coef / lo) / b_exp)
        u = u_hi - TABLE_DU * np.arange(math.ceil((u_hi - u_lo) / TABLE_DU) + 1.0)
        # The expressions of the formulas worked in place, in four grid-length arrays (u, C', the excess then
        # its log, the losses) and one scratch array reused, where they took six: a process's first sweep
        # faults in the fresh heap pages of each (11 a 45 KB array, about 2.3 us each). The same IEEE
        # operations on the same operands (`_in_place`; a product or sum with its operands swapped is the
        # same double), so the same doubles (tests/test_reference_sweep_search.py).
        c_eq = np.empty(u.size + 1)                        # +inf, then 6 r N*^2 (1 + slack) left to right
        c_eq[0] = np.inf
        n_opt = np.exp(u, out=c_eq[1:])
        scratch = np.multiply(n_opt, 6.0 * r)              # 6 r N*, then 6 r N*^2
        scratch *= n_opt
        np.multiply(scratch, 1.0 + TABLE_SLACK, out=c_eq[1:])
        excess = _in_place(a_coef, -a_exp, u, out=scratch)
        losses = _in_place(b_coef, -b_exp, u)
        excess += losses                                   # A e^(-alpha u) + B' e^(-beta u)
        np.add(excess, e, out=losses)                      # e + excess
        rising = losses[1:] > losses[:-1]                  # strictly, for searchsorted (all, unless rounding ties)
        if not rising.all():
            rising = np.concatenate(([True], rising))
            u, excess, losses = u[rising], excess[rising], losses[rising]
            c_eq = np.concatenate((c_eq[:1], c_eq[1:][rising]))   # each element worked from its own u alone
        table = _TABLES[key] = (losses, c_eq, u, np.log(excess, out=excess), _newton_constants(key))
    return table


def _in_place(coef: float, exponent: float, u: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """coef e^(exponent u) as `coef * np.exp(exponent * u)` works it, in one array (`out`, else a new one)
    instead of three new ones: the same three roundings (the product exponent u, its exp, the product with
    coef; IEEE products commute), so the same doubles (tests/test_reference_sweep_search.py)."""
    out = np.multiply(u, exponent, out=out)
    np.exp(out, out=out)
    out *= coef
    return out


def _newton_constants(key):
    """What `_newton_from_table` reads of the constants `key` (`_table_key`): (E, r, the exponents
    [[alpha], [beta]], their negatives, the coefficients [[A], [B r^-beta]], max(alpha, beta)), worked
    once per table instead of once per solve (a solve of 1-48 losses, the sweeps' usual size, spent
    about a third of its numpy calls building them). The same expressions on the same doubles as the
    solve built them each time, so the same doubles: every solve takes the same IEEE operations on
    the same operands, and its C' is the same to the bit (tests/test_reference_sweep_search.py)."""
    e, a_coef, a_exp, b, b_exp, r = key
    exps = np.array([[a_exp], [b_exp]])
    neg_exps, coefs = -exps, np.array([[a_coef], [b * r ** (-b_exp)]])
    for x in (exps, neg_exps, coefs):
        x.flags.writeable = False
    return e, r, exps, neg_exps, coefs, max(a_exp, b_exp)


def _table_key(a) -> tuple[float, ...]:
    """What C' reads of the assumptions: the constants of `chinchilla.equivalent_optimal_compute`."""
    return (a.chinchilla_e, a.chinchilla_a, a.chinchilla_alpha, a.chinchilla_b, a.chinchilla_beta,
            chinchilla.tokens_per_param(a))


def _c_eq(loss: np.ndarray, a, table) -> np.ndarray:
    """C'(loss) (`chinchilla.equivalent_optimal_compute`) by the same Newton iteration in u = ln N*
    and the same stopping rule, started from the table (`_c_eq_table`) instead of the single terms'
    roots: between the grid points whose losses bracket the loss, u interpolated linearly in
    ln(L - E) (u is nearly linear in it, its slope between -1 / alpha and -1 / beta), about 1e-9
    from the root, so that one step meets the stopping rule where the cost model takes six.
    f(u) = A e^(-alpha u) + B' e^(-beta u) - (L - E) is convex and falling, so Newton converges from
    any start (a start right of the root steps left of it, then climbs). After a step s the error
    left is f''(xi) e^2 / (2 |f'(u)|) with e = s + that error, and f'' / |f'| <= max(alpha, beta)
    = m (f'' = alpha^2 t_A + beta^2 t_B against |f'| = alpha t_A + beta t_B), so at most about
    m s^2 / 2: the iteration stops once m s^2 <= 1e-15 max(1, |u|), the cost model's tolerance on
    its last step, which leaves u as close to the root as the cost model's, about 1e-14 relative
    in C': the bound's rounding, far below MARGIN (module docstring). Losses outside the table
    (NaN, inf, at or below its least) go to the cost model. Cached per losses' bits (the same values
    on a repeated call, as `chinchilla`'s cache of the solve it stands for)."""
    key = (_table_key(a), loss.tobytes()) if loss.size <= _SOLVED_SIZE else None
    if key is not None and key in _SOLVED:
        return _SOLVED[key].copy()
    losses, _, u_grid, log_excess, constants = table
    at = losses.searchsorted(loss, side="right")
    inside = (at > 0) & (at < losses.size)                  # NaN sorts last: outside
    if inside.all():
        out = _newton_from_table(loss, at, constants, u_grid, log_excess)
    else:
        out = chinchilla.equivalent_optimal_compute(loss, a)
        if inside.any():
            out[inside] = _newton_from_table(loss[inside], at[inside], constants, u_grid, log_excess)
    if key is not None:
        if len(_SOLVED) >= _SOLVED_MAX:
            _SOLVED.pop(next(iter(_SOLVED)))
        _SOLVED[key] = out.copy()
    return out


def _newton_from_table(loss, at, constants, u_grid, log_excess):
    """`_c_eq` of losses strictly inside the table, `at` their `searchsorted` places in it, `constants`
    the table's `_newton_constants`."""
    # exponents and coefficients as `chinchilla._equivalent_optimal_compute`, both terms per call; curve =
    # max(alpha, beta) >= f'' / |f'|: the stopping rule (`_c_eq`)
    e, r, exps, neg_exps, coefs, curve = constants
    k = loss - e
    x0, u0 = log_excess[at - 1], u_grid[at - 1]
    u = u0 + (np.log(k) - x0) / (log_excess[at] - x0) * (u_grid[at] - u0)
    for _ in range(NEWTON_ITERATIONS):
        terms = coefs * np.exp(neg_exps * u)
        slopes = exps * terms
        step = (terms[0] + terms[1] - k) / (slopes[0] + slopes[1])
        u = u + step
        if (step * step * curve <= 1e-15 * np.maximum(1.0, np.abs(u))).all():
            break
    n_opt = np.exp(u)
    return 6.0 * r * n_opt * n_opt


def _least_step_bound(t_comp, stages, act, f, link_bps, link_rtt_s, m_max):
    """A lower bound on GPipe's step t_pp(M) over every M in 1..M_max (`_micro_batches`): the convex
    alpha + beta (S - 1) + beta M + alpha (S - 1) / M at its real minimiser within [1, M_max], less
    a relative 1e-12 against the rounding of either form."""
    alpha, beta, real = _gpipe_terms(t_comp, stages, act, f, link_bps, link_rtt_s)
    m = np.maximum(np.fmin(real, m_max), 1.0)          # NaN and inf: M_max
    return (alpha + beta * (stages - 1.0) + beta * m + alpha * (stages - 1.0) / m) * (1.0 - 1e-12)


def _gpipe_terms(t_comp, stages, act, f, link_bps, link_rtt_s):
    """(alpha, beta, the real minimiser sqrt(alpha (S - 1) / beta)) of GPipe's step
    alpha + beta (S - 1) + beta M + alpha (S - 1) / M (`timing.pipeline_parts_s`)."""
    alpha = t_comp / stages + 2.0 * act * f / link_bps
    beta = link_rtt_s * f
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return alpha, beta, np.sqrt(alpha * (stages - 1.0) / beta)


def _micro_batches(t_comp, stages, act, f, link_bps, link_rtt_s, m_max):
    """(M*, t_pp(M*), ok) per row: GPipe's step is convex in M with its real minimum at
    sqrt(alpha (S - 1) / beta) (module docstring); of the integers floor - 1 .. floor + 2 around it
    (within 1..M_max) the least step, ties to the smaller M. ok: every other candidate slower by
    more than STEP_MARGIN, so that the listing's argmin over every M (`DecisionSpace`) is the same."""
    real = _gpipe_terms(t_comp, stages, act, f, link_bps, link_rtt_s)[2]
    low = np.floor(np.maximum(np.fmin(real, m_max), 1.0)) - 1.0      # NaN and inf: M_max
    cand = np.minimum(np.maximum(low[:, None] + np.arange(4.0)[None, :], 1.0), m_max)     # clipped to 1..M_max
    step = timing.pipeline_parts_s(t_comp[:, None], stages[:, None], cand, act[:, None], link_bps, link_rtt_s,
                                   f[:, None])[0]
    best = np.argmin(step, axis=1)
    rows = np.arange(step.shape[0])
    m, least = cand[rows, best], step[rows, best]
    other = (cand != m[:, None]) & ~(step > least[:, None] * (1.0 + STEP_MARGIN))
    ok = np.isfinite(least) & ~other.any(axis=1)
    return m, least, ok


def best_size(s: Setting, space: DecisionSpace, params) -> SizeRun | None:
    """The run `best_of_sizes` would choose among the `max_compute` runs of the model sizes `params`
    (total = active parameters, in size order) on `space`, their settings `s` with its P replaced
    (module docstring), or None where this search does not answer: a condition of `applies` fails,
    M* or the best plan is a near tie, or the search gives up. Only the winner's setting is built."""
    params = [float(p) for p in params]
    sizes = np.asarray(params)
    alpha = size_alpha(sizes, s.assumptions)           # read by `applies` and the rows: worked once
    if not applies(s, space, params, alpha):
        return None
    rows = _Rows(s, space, sizes, alpha)
    if not rows.ok:
        return None
    found = _search(rows)
    if found is None:
        return None
    j, batch, r = found
    setting = s.replace(params=params[j], active_params=params[j])
    with np.errstate(divide="ignore", invalid="ignore"):          # as `score.window_compute` scores it
        throughput = _throughput(setting, batch, rows.known(r) if batch.mode == "pp_group" else None)
        # eta_C and alpha(P) of the rows (`quality.compression_quality` of the space's one compression, what
        # `run.compression_efficiency` is where `applies` holds, and `size_alpha`: the same functions of the
        # same doubles), given to the cost model's efficiencies instead of worked again
        eff = efficiency_without_replicas(setting, batch, throughput, eta_c=rows.eta_c, alpha_p=alpha[j])
    value = float(window_compute(setting, batch, "c_quality", t=throughput, eff=eff)["c_quality"][0])
    run = SweepRun(setting.params, setting, space, (batch, value), 0, value)
    run.throughput = throughput
    return run


def _throughput(s: Setting, batch, known: dict[str, np.ndarray] | None = None) -> dict[str, np.ndarray]:
    """`modes.throughput` of the answer's plan, a pp_group one without the step's parts beyond its compute
    (`modes.pp_group_pipeline`'s `lean`; `modes.PIPELINE_PARTS_LEFT`, which neither `window_compute` nor
    `search._limits` reads: about 0.05 ms of a sweep). Where `applies` holds no tensor-parallel degree is
    searched (`tensor_parallel.choices` is empty), so `modes.throughput` is the mode's function itself.
    `known`: the pp_group plan's row's act, f(S) and eta_A (`_Rows.known`), given to the pipeline step."""
    if batch.mode != "pp_group":
        return modes.throughput(s, batch)
    return modes.pp_group(s, batch, pipe=modes.pp_group_pipeline(s, batch, lean=True, known=known))


class SweepRun(SizeRun):
    """The answer's run, with its plan's throughput (`_throughput`: `modes.throughput` but for the parts of
    a pipeline step no one reads here), which its value was worked from and its limits are checked from
    (`search._limits`), so that it is evaluated once."""


def _search(rows: _Rows):
    """(size index, one-plan batch, its row: `_answer`'s) of the best reduced plan when no other comes within
    MARGIN of it, else None (module docstring: the first incumbent, the rows' first bound, the rounds)."""
    one = float(rows.one.max(initial=0.0))
    first = rows.first_bound()
    kept = []                                    # (i, K, H, value) of plans within MARGIN of the best so far
    best = max(one, _seed(rows, _highest(first, SEED_ROWS), kept))
    i = (~(first < best * (1.0 - MARGIN))).nonzero()[0]         # the rows left, in order (int64 as np.arange's)
    del first
    h1, h2 = np.ones(i.size), rows.h_hi[i].astype(float)       # one box per row: its whole H range (h_hi >= 1)
    k1, k2 = np.full(i.size, 2.0), rows.k_max_f[i]
    collapsed = np.zeros(i.size, bool)
    for _ in range(ROUNDS):
        # Lemma K: boxes where C does not fall with K are bounded by their plans at K2 ("collapsed")
        fresh = (~collapsed & (k1 < k2)).nonzero()[0]
        if fresh.size:
            collapsed[fresh] = rows.monotone_in_k(i[fresh], k1[fresh], k2[fresh], h2[fresh])
        low_k = np.where(collapsed, k2, k1)
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
            upper = rows.bound(i, low_k, k2, h1, h2, best * (1.0 - MARGIN))
        upper = np.where(np.isnan(upper), np.inf, upper)
        point = (k1 == k2) & (h1 == h2) & rows.exact[i]
        if point.any():
            p = (point & (upper >= best * (1.0 - MARGIN))).nonzero()[0]
            kept.extend(zip(i[p].tolist(), k2[p].tolist(), h2[p].tolist(), upper[p].tolist()))
            if p.size:
                best = max(best, float(upper[p].max()))
        alive = (~point & (upper >= best * (1.0 - MARGIN))).nonzero()[0]
        if alive.size == 0:
            return _answer(rows, kept, one, best)
        if alive.size > MAX_BOXES:
            return None
        rows.make_exact(i[alive])                         # the rows left: their M* and step from here on
        if not rows.ok:
            return None
        i, k1, k2, h1, h2, collapsed = (x[alive] for x in (i, k1, k2, h1, h2, collapsed))
        i, k1, k2, h1, h2, collapsed = _split(i, k1, k2, h1, h2, collapsed)
    return None


def _seed(rows: _Rows, top, kept) -> float:
    """The most C_quality of one plan per row of `top`: at K_max and the integer H nearest the real h
    of least loss multiplier times loss over [1, H_hi] at K_max (`_Rows.least_loss_h`; a guess at the
    row's best H, which it is on most rows); the plans are kept as any other (`_search`)."""
    rows.make_exact(top)
    k = rows.k_max_f[top]
    h_hi = rows.h_hi[top].astype(float)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        least = rows.least_loss_h(top, k, k, np.ones(top.size), h_hi, rows.t[top], rows.sync(top, k))
        h = np.minimum(np.maximum(np.rint(least), 1.0), h_hi)
        value = rows.bound(top, k, k, h, h, 0.0)
    value = np.where(np.isnan(value), -np.inf, value)
    most = float(value.max(initial=0.0))
    near = (value >= most * (1.0 - MARGIN)).nonzero()[0]     # the others are below every later cut
    kept.extend(zip(top[near].tolist(), k[near].tolist(), h[near].tolist(), value[near].tolist()))
    return most


def _highest(values, n: int):
    """The indices of the n highest values (all of them where fewer), in no order; NaN counts as highest."""
    return np.argpartition(-values, n)[:n] if values.size > n else np.arange(values.size)


def _pieces(lo, hi, q: int):
    """(starts, ends), each (q, boxes): integer intervals cutting [lo, hi] into at most q pieces,
    geometric where wide, one integer each where hi - lo < q: the j-th ends at
    max(floor(lo (hi / lo)^(j / q)), lo + j - 1) within [lo, hi - 1]; empty pieces (start > end)
    included. Consecutive, so together exactly [lo, hi]."""
    j = np.arange(1.0, q)[:, None]
    ends = np.floor(lo * (hi / lo) ** (j / q))
    ends = np.minimum(np.maximum(ends, lo + (j - 1.0)), np.maximum(lo, hi - 1.0))
    return np.concatenate((lo[None, :], ends + 1.0)), np.concatenate((ends, hi[None, :]))


def _split(i, k1, k2, h1, h2, collapsed):
    """Children of the boxes: H in H_PIECES pieces (`_pieces`), or in single values where at most
    ENUM_BOXES boxes are left and none has more than ENUM_H values of H (so that the next round
    bounds their plans of one H at once instead of two more rounds of pieces: the search's path,
    not its answer, `_search`); K in halves (geometric middle) where the box is not collapsed; a
    collapsed box keeps its K range (bounded at K2) in its pieces of more than one H, and gives
    {K2} and [K1, K2 - 1] in those of one H, still collapsed (Lemma K holds on any part of its
    range)."""
    pieces = H_PIECES
    if i.size <= ENUM_BOXES:
        widest = float((h2 - h1).max(initial=0.0)) + 1.0
        if widest <= ENUM_H:
            pieces = max(pieces, int(widest))      # hi - lo < pieces: one integer each (`_pieces`)
    b1, b2 = _pieces(h1, h2, pieces)                   # (pieces, boxes)
    km = np.floor(np.sqrt(k1 * k2))
    km = np.minimum(np.maximum(km, k1), np.maximum(k1, k2 - 1.0))
    km = np.where(collapsed, np.where(b1 == b2, k2 - 1.0, k2), km)      # per piece
    a1, a2 = np.empty((2,) + km.shape), np.empty((2,) + km.shape)     # the two K children, per piece
    a1[0], a1[1], a2[0], a2[1] = k1, km + 1.0, km, k2
    # the children not empty, by their flat places f in the (K child, piece, box) arrays in C order (np.nonzero's):
    # f's piece and box are f mod (pieces x boxes) in b1 and b2, its box f mod boxes; one-axis takes of the same
    # elements as the three-index gathers of np.nonzero's indices, at a fraction of their cost
    flat = np.flatnonzero((a1 <= a2) & (b1 <= b2)[None])
    piece_box = flat % b1.size
    box = piece_box % i.size
    a1, a2 = a1.ravel()[flat], a2.ravel()[flat]
    return i[box], a1, a2, b1.ravel()[piece_box], b2.ravel()[piece_box], collapsed[box] & (a1 < a2)


def _answer(rows: _Rows, kept, one: float, best: float):
    """(size index, batch, its row: -1 for one node) of the answer among the plans within MARGIN of `best`
    (module docstring), or None where they are a near tie: more than one of them and not all within SURE_TIE of each
    other. Plans all within SURE_TIE are tied for the branch and bound too (TIE_REL), and every
    other plan is not: the answer is then the smallest size's (`best_of_sizes` keeps the earlier
    of tied sizes), and of its plans the first in `bnb.tie_key` order (fewer nodes, smaller H,
    flat before pp_group, fewer stages, less activation compression; no two reduced plans agree on
    all of these)."""
    cut = best * (1.0 - MARGIN)
    near = {(r, k, h): v for r, k, h, v in kept if v >= cut}
    plans = [(int(rows.j[r]), int(k) * int(rows.stages[r]), int(h), 0 if rows.flat[r] else 1, int(rows.stages[r]),
              float(rows.ca[r]), v, r) for (r, k, h), v in near.items()]
    plans += [(j, 1, 1, 0, 1, 0.0, float(v), -1) for j, v in enumerate(rows.one) if v >= cut]
    values = [p[6] for p in plans]
    if not plans or (len(plans) > 1 and max(values) > min(values) * (1.0 + SURE_TIE)):
        return None
    j, nodes, h, flat, stages, ca, _, r = min(plans)
    space = rows.space
    precision, compression = space.precisions[0], float(space.compression[0])
    if r < 0 or rows.flat[r]:
        return j, one_plan("flat", precision, nodes=nodes, inner_steps=h, compression=compression, streaming=True), r
    return j, one_plan("pp_group", precision, nodes=nodes, inner_steps=h, compression=compression, streaming=True,
                       stages=stages, micro_batches=int(rows.m[r]), activation_compression=ca), r
