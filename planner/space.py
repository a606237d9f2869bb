"""The planner's decision space (docs/planner.md, "The declared space"), narrowed by the instance.

A plan is (mode, precision, nodes N, pipeline stages S, group size k, inner steps H,
regional rounds R, compression Cr, micro-batches M, activation compression Ca,
streaming, expert-parallel scope). `DecisionSpace.classes(...)` lists every valid
combination of all decisions but the replica count n (N = n, or max(n S, min_nodes) for pipelines),
H and R, each with the interval of n that meets every limit not depending on H or R
(memory per node, node count, the mode's structure, budget); the solvers choose n, H, R.

Three reductions are applied, each exact for the time and cost objectives and for
`max_compute` of C_quality (which grows with the tokens of the run, so a faster plan
of the same class never scores lower), and for `max_compute` of C_local under the
linear v1 or no replica penalty (C_local is then proportional to the tokens):
- Streaming: the outer step with overlap, max(H t_step, t_sync), never exceeds the one
  without, H t_step + t_sync (at both levels of a hierarchy), all else equal; so when
  streaming is allowed, plans without it are never better and lose ties (streaming on
  is preferred), and are not listed.
- PP-group: T depends on N only through G = floor(N / S), so per G only the fewest valid
  nodes are listed, N = max(G S, min_nodes) (a larger N with the same G is faster by
  nothing and costs more; the tie-break prefers fewer nodes); when `search.min_nodes` is
  not a multiple of S the smallest G runs with min_nodes - G S idle nodes. Pipeline over
  the WAN uses N = max(S, min_nodes) (idle nodes beyond S likewise).
- Pipelines: M enters only the pipeline step time t_pp, and the time to target is
  non-decreasing in t_pp for every H, so per (precision, S, Ca) only the M of least
  t_pp is listed (ties to the smaller M). Under dtplan terms that make the outer step or
  memory depend on M otherwise (`every_micro_batch`), every (S, Ca, schedule, M) is a class,
  cut back (among the rows that fit their node, which is all memory tells apart) to the least
  t_pp per (S, Ca) where the overlap window cannot tell them apart
  (`DecisionSpace._least_step`); where only a blocking sync's overlap window
  does (`dp_overlap`), to the rows no row of shorter step and longer window beats
  (`DecisionSpace._window_front`; `size` still counts the rows left out).

`max_compute` of C_local under the Chinchilla replica penalty is different: eta_R is
scored at the run's own tokens and C_local is not monotone in them (an overtrained run
with m above ~1.1 can lose C_local by running more tokens), so a slower plan can
score higher. `for_objective` then keeps streaming off (when allowed) and every M.
The PP-group reduction stays exact for every objective (the score depends on N only
through G).
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import TYPE_CHECKING

import numpy as np

from planner.cost import envelope, memory, modes, physics, quality_fit, stage_shards, tensor_parallel
from planner.cost.modes import throughput
from planner.cost.setting import PlanBatch, Setting

if TYPE_CHECKING:
    from planner.objectives import Objective

MODE_ORDER = ("flat", "hierarchical", "pp_group", "pipeline_wan")
SCHEDULE_CODES = (1, 2, 3, 4, 5)     # gpipe, 1f1b, interleaved, zero_bubble, dualpipe (physics.schedule_codes)


def schedules_searched(a) -> tuple[int, ...]:
    """The pipeline schedule codes the space lists: the profile's (0) unless the schedule is a
    decision (dtplan): 1F1B, interleaved, zero-bubble and DualPipe. GPipe is left out of the declared
    space: 1F1B has the same pipeline step and never holds more activations (min(M, S) <= M). None of
    the others dominates the rest in every case: zero-bubble has a bubble of its own below
    2 S - 1 micro-batches, interleaved pays v times the link transfers, and with activation
    memory zero-bubble and interleaved hold more than 1F1B (physics.pipeline_ticks,
    physics.in_flight_micro_batches). DualPipe (only at even S and even M >= 2 S, where zero-bubble has no
    bubble) is never faster than zero-bubble at the same (S, M) and holds a second copy of its stage's
    weights and gradients, so without activation memory it never wins (the space's reduction to the
    least step keeps zero-bubble, listed first); with activation memory it holds S + 1 micro-batches
    against zero-bubble's 2 S and has a smaller bubble than 1F1B's, a third trade of time for memory."""
    return SCHEDULE_CODES[1:] if a.search_pipeline_schedules else (0,)


ZERO_SHARD_SIZES = (2, 4, 8, 16, 32, 64, 128, 256)   # Z candidates (powers of two, within search.group_sizes)


def hierarchical_shards_valid(group_size, zero_shards) -> np.ndarray:
    """Whether ZeRO-3 replicas of Z nodes tile a hierarchical group of k nodes into at least two:
    Z = 1 (no sharding), or Z divides k and k / Z >= 2 (with one replica per group its regional sync
    would average nothing, and H sqrt(R) would credit R regional rounds that do not happen)."""
    k, z = np.asarray(group_size), np.asarray(zero_shards)
    return (z == 1) | ((k % np.maximum(z, 1) == 0) & (k // np.maximum(z, 1) >= 2))


def every_micro_batch(a) -> bool:
    """Whether the space must list every micro-batch count M as a class of its own: the dtplan
    terms under which the outer step or the memory depends on M beyond the pipeline step (the
    blocking sync's overlap window, a streaming fragment's backward window, activations in
    flight), or the schedule is a decision."""
    return a.dp_overlap or a.activation_memory or a.search_pipeline_schedules or streaming_reads_window(a)


def streaming_reads_window(a) -> bool:
    """Whether a streaming outer step depends on the last micro-batch's compute: only fragments
    whose window includes the backward pass that produces them (fragment_window.py)."""
    return bool(a.fragment_backward_overlap) and physics.fragments_on(a)


PRECISION_ORDER = ("fp16", "fp8", "fp4")
CHUNK = 1 << 14          # plans scored at once by the listing (`scored`) and the search (planner.solvers.bnb):
                         # every figure is plan by plan, so only the peak memory changes (issue 27 item 5,
                         # scripts/bench_max_compute.py; 2^14 measured no slower than 2^15, half the memory)
PROBED = modes.PIPELINE_PROBE   # a pipe row's fields read by
                         # the listing and by the pp_group classes' bound (`pipe_probe`: they read nothing else)
WINDOW_MARGIN = 1e-12    # relative; far above the rounding of step_compute_s / M (`DecisionSpace._window_front`)


def scored(s: Setting, b: PlanBatch, *keys: str) -> dict[str, np.ndarray]:
    """`throughput(s, b)`'s fields `keys`, one value per plan, scored CHUNK plans at a time. Pipeline plans'
    fields of `modes.PIPELINE_PROBE` (the pipe rows' probes) are computed alone, the rest of the
    throughput not (`modes.pipeline_probe`: the same values where no tensor-parallel degree is to be chosen).
    Hierarchical plans' fields of `modes.HIERARCHICAL_CLASS_FIELDS` (a node's memory, `DecisionSpace._finish`)
    likewise come from `modes.hierarchical_class_parts` alone: `hierarchical` returns those very arrays, and
    `throughput` is `hierarchical` where no tensor-parallel degree is to be chosen (issue 27 item 5)."""
    score = throughput
    no_degree = not tensor_parallel.choices(s.assumptions, s.accelerators_per_node, s.is_moe)
    if b.mode in ("pp_group", "pipeline_wan") and set(keys) <= set(modes.PIPELINE_PROBE) and no_degree:
        score = modes.pipeline_probe
    elif b.mode == "hierarchical" and set(keys) <= set(modes.HIERARCHICAL_CLASS_FIELDS) and no_degree:
        score = modes.hierarchical_class_parts
    if b.size <= CHUNK:
        t = score(s, b)
        return {k: np.broadcast_to(t[k], b.nodes.shape) for k in keys}
    parts = []
    for k in range(0, b.size, CHUNK):
        sub = b.take(slice(k, k + CHUNK))
        t = score(s, sub)
        parts.append({key: np.broadcast_to(t[key], sub.nodes.shape) for key in keys})
    return {key: np.concatenate([p[key] for p in parts]) for key in keys}


def pipe_probe(mode: str, precision: str, rows: PlanBatch) -> PlanBatch:
    """Plans of pipeline rows (S, Ca, M, schedule) at two groups of S nodes: their pipeline step, the last
    micro-batch's compute and a node's memory read nothing else (modes._pipeline)."""
    return PlanBatch.of(mode, precision, nodes=2 * rows.stages, stages=rows.stages,
                        activation_compression=rows.activation_compression, micro_batches=rows.micro_batches,
                        schedule=rows.schedule)


def _group_starts(pipes: PlanBatch) -> np.ndarray | None:
    """Where each (S, Ca) group of the pipe rows starts, when the rows come grouped, in (S, Ca) order (as the
    grid of `DecisionSpace._probed_rows` lists them, and any subset of it keeps them); else None.

    Sorting the rows by (S, Ca, pipeline step, M, schedule) then puts each group at its own place, in the
    order of its rows by (step, M, schedule): the rows of one group sorted on their own (or their first one
    found without a sort, `_first_of_groups`) are the rows of the sort of them all, at the same places
    (issue 27 item 5: one sort of every row by five keys was ~0.3 G instructions of a 10^4-node solve)."""
    s, ca = pipes.stages, pipes.activation_compression
    if s.size == 0:
        return None
    new = np.r_[True, (s[1:] != s[:-1]) | (ca[1:] != ca[:-1])]
    if not ((s[1:] > s[:-1]) | ((s[1:] == s[:-1]) & (ca[1:] >= ca[:-1]))).all():
        return None
    return np.flatnonzero(new)


def _first_of_groups(t_step: np.ndarray, micro_batches: np.ndarray, schedule: np.ndarray,
                     starts: np.ndarray) -> np.ndarray:
    """Mask of each group's first row in (step, M, schedule) order, the groups starting at `starts`, where each
    row's (M, schedule) is its own within its group (the grid's; else a group may have several rows marked,
    which the caller checks). As np.lexsort orders them: the least step,
    NaN after every number (a group of NaN steps only: every row a candidate), ties to the least M, then
    schedule; so the least (M, schedule) among the rows of the group's least step."""
    group = np.repeat(np.arange(starts.size), np.diff(np.r_[starts, t_step.size]))
    with np.errstate(invalid="ignore"):
        least = np.fmin.reduceat(t_step, starts)[group]
    candidate = (t_step == least) | np.isnan(least)
    key = np.where(candidate, micro_batches * (int(schedule.max(initial=0)) + 1) + schedule, np.iinfo(np.int64).max)
    return candidate & (key == np.minimum.reduceat(key, starts)[group])


def _class_triples(keep: np.ndarray, count: int) -> tuple[np.ndarray, ...]:
    """(kept, p, c, j): the pipe rows kept in some streaming (`keep`: rows x streaming), and per class, in grid
    order (row, compression, streaming), the index p of its row among `kept`, c of its compression (of `count`)
    and j of its streaming: the classes are the triples whose streaming the row keeps, every compression. As
    np.flatnonzero of keep broadcast over the compressions, then divided into its three indices (the listing
    before issue 27 item 5), from the kept rows alone and without a division."""
    kept = np.flatnonzero(np.logical_or.reduce(list(keep.T)))      # keep.any(axis=1), column by column
    p, c, j = np.nonzero(np.broadcast_to(keep[kept][:, None, :], (kept.size, count, keep.shape[1])))
    return kept, p, c, j

def _step_order(pipes: PlanBatch, t_step: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(order, starts): the pipe rows sorted by (S, Ca, pipeline step, M, schedule) as np.lexsort sorts them
    (NaN steps last in their group), and where each (S, Ca) group starts in that order. Rows that come grouped
    (`_group_starts`) are sorted group by group, which gives the same order."""
    starts = _group_starts(pipes)
    if starts is None:      # rows not grouped by (S, Ca): one sort of them all
        order = np.lexsort((pipes.schedule, pipes.micro_batches, t_step, pipes.activation_compression, pipes.stages))
        key = np.stack([pipes.stages[order], pipes.activation_compression[order]])
        return order, np.flatnonzero(np.r_[True, (key[:, 1:] != key[:, :-1]).any(axis=0)])
    ends = np.r_[starts[1:], pipes.size]
    return np.concatenate([a + np.lexsort((pipes.schedule[a:b], pipes.micro_batches[a:b], t_step[a:b]))
                           for a, b in zip(starts, ends)]), starts


@dataclass(frozen=True)
class DecisionSpace:
    """The declared decision space of one instance."""

    modes: tuple[str, ...]
    precisions: tuple[str, ...]
    min_nodes: int
    max_nodes: int
    max_stages: int
    group_sizes: tuple[int, ...]
    max_inner_steps: int
    max_regional_rounds: int
    compression: tuple[float, ...]
    max_micro_batches: int
    activation_compression: tuple[float, ...]
    streaming: tuple[bool, ...]              # (True,) when streaming is allowed: plans without it never win
    expert_parallel: tuple[str, ...] | None  # the monotone objectives, see the module docstring
    streaming_off_allowed: bool = True       # with streaming = (True,): may plans run without it (for_objective)
    all_micro_batches: bool = False          # list every M, not only the one of least pipeline step
    faster_wins: bool = True                 # the objective never prefers a slower plan (for_objective)
    placement: object = None                 # regions chosen by the planner (planner.fleet.regions.Placement):
                                             # only the placeable node counts of each unit size are listed

    def for_objective(self, setting: Setting, objective: "Objective") -> "DecisionSpace":
        """The space with the reductions exact for `objective`: all of them, except for
        `max_compute` of C_local under the Chinchilla replica penalty (module docstring),
        which searches streaming off (when allowed) and every micro-batch count.

        Remembered per setting object, as `classes` is (the search, then the declared space's
        `size`, ask for it): the same space object keeps its built classes, so `size` does not
        build every class of the largest fleets a second time (issue 27 item 5)."""
        memo = self.__dict__.setdefault("_memo", {})      # not a field: `replace` starts afresh
        key = ("for_objective", objective.maximise)
        if key not in memo or memo[key][0] is not setting:
            memo[key] = (setting, self._for_objective(setting, objective))
        return memo[key][1]

    def _for_objective(self, setting: Setting, objective: "Objective") -> "DecisionSpace":
        monotone = not (objective.maximise and setting.target_kind == "c_local"
                        and setting.assumptions.replica_penalty == "chinchilla")
        if monotone:
            space = self
            # dtplan's overlap of a blocking sync with the last micro-batch's backward pass
            # (physics.overlap_window_s) makes the outer step depend on M beyond t_step
            if every_micro_batch(setting.assumptions):
                space = replace(space, all_micro_batches=True)
            # dtplan's fragmented streaming sync (physics.streaming_outer_s) pays p fragment
            # latencies and a bounded overlap window, so it no longer dominates a blocking sync
            # and the fitted quality model charges an overlapped outer step (quality_fit.overlap_factor)
            if (physics.fragments_on(setting.assumptions) or quality_fit.fitted(setting.assumptions)) \
                    and self.streaming == (True,) and self.streaming_off_allowed:
                space = replace(space, streaming=(True, False))
            return space
        streaming = (True, False) if self.streaming == (True,) and self.streaming_off_allowed else self.streaming
        return replace(self, streaming=streaming, all_micro_batches=True, faster_wins=False)

    @classmethod
    def from_instance(cls, instance, setting: Setting) -> "DecisionSpace":
        search = instance.search
        caps = [instance.fleet.nodes] + ([instance.limits.max_nodes] if instance.limits.max_nodes else [])
        precisions = tuple(search.precisions) if search.precisions else instance.hardware.precisions
        space = cls(
            modes=tuple(m for m in MODE_ORDER if m in search.modes),
            precisions=tuple(p for p in PRECISION_ORDER if p in precisions),
            min_nodes=search.min_nodes, max_nodes=min(caps), max_stages=search.max_stages,
            group_sizes=tuple(sorted(set(search.group_sizes))) if search.group_sizes else tuple(range(2, 65)),
            max_inner_steps=search.max_inner_steps, max_regional_rounds=search.max_regional_rounds,
            compression=tuple(sorted(set(float(c) for c in search.compression))),
            max_micro_batches=search.max_micro_batches,
            activation_compression=tuple(sorted(set(float(c) for c in search.activation_compression))),
            streaming=(True,) if True in search.streaming else (False,),
            expert_parallel=tuple(search.expert_parallel) if search.expert_parallel else None,
            streaming_off_allowed=False in search.streaming)
        if stage_shards.synchronous(setting.assumptions, setting.is_moe):   # a synchronous run: H = 1 (stage_shards.py)
            space = replace(space, max_inner_steps=1)
        return space.within_envelope() if envelope.on(setting.assumptions) else space

    def within_envelope(self) -> "DecisionSpace":
        """The space cut to the evidence envelope's decision bounds (planner/cost/envelope.py): H <= 100,
        R = 1, no activation compression; the replica bound and each method's compression are per
        class (`_classes_of`). A restriction of the decision space, so every solver stays exact on it."""
        lim = envelope.limits()
        return replace(self, max_inner_steps=min(self.max_inner_steps, int(lim["max_inner_steps"])),
                       max_regional_rounds=min(self.max_regional_rounds, int(lim["max_regional_rounds"])),
                       activation_compression=tuple(c for c in self.activation_compression
                                                    if c <= lim["max_activation_compression"]) or (1.0,))

    def expert_scopes(self, setting: Setting, mode: str) -> tuple[str, ...]:
        """The EP scopes that apply to a mode: none for dense models and pipelines."""
        if not setting.is_moe or mode in ("pp_group", "pipeline_wan"):
            return ("none",)
        scopes = ("none", "global") if mode == "flat" else ("none", "regional", "global")
        if self.expert_parallel is not None:
            scopes = tuple(s for s in scopes if s in self.expert_parallel)
        return scopes

    def classes(self, setting: Setting, mode: str, precision: str, expert_parallel: str = "none") -> "Classes | None":
        """`_classes_of` remembered per setting object (the search, then `size`, ask for the same
        classes; building them scores every class's memory at its largest n). Callers never
        change a returned Classes in place (`Classes.take` makes new ones)."""
        memo = self.__dict__.setdefault("_memo", {})      # not a field: `replace` starts afresh
        key = (mode, precision, expert_parallel)
        if key not in memo or memo[key][0] is not setting:
            memo[key] = (setting, self._classes_of(setting, mode, precision, expert_parallel))
        return memo[key][1]

    def class_memo(self) -> dict:
        """The memo of `classes`: (mode, precision, expert_parallel) -> (setting, its classes)."""
        return self.__dict__.setdefault("_memo", {})

    def _classes_of(self, setting: Setting, mode: str, precision: str, expert_parallel: str = "none") -> "Classes | None":
        """Every valid combination of all decisions but n (replicas), H and R, each with its range of n.

        A class's plans use N = max(n unit, min_nodes) nodes (unit = S for pipelines, else 1). The valid
        n form an interval: the mode's structure needs n >= a threshold, cost grows with n
        (budget, node limit), and memory per node is constant in n or, with global expert
        parallelism, falls with n (found by bisection on the evaluator's memory figure).
        """
        build = {"flat": self._flat, "hierarchical": self._hierarchical,
                 "pp_group": self._pp_group, "pipeline_wan": self._pipeline_wan}[mode]
        return self._finish(setting, mode, precision, expert_parallel, build(setting, precision, expert_parallel))

    def _finish(self, setting: Setting, mode: str, precision: str, expert_parallel: str,
                c: "Classes | None") -> "Classes | None":
        """The classes a mode's listing built, cut to the limits `_classes_of` names (the envelope's shown
        compressions and replicas, the budget, memory, the regions placed)."""
        if c is None or c.size == 0:
            return None
        if envelope.on(setting.assumptions) and mode != "pipeline_wan":     # K = n replicas in these modes
            c = c.take(self._compression_shown(setting, precision, c.rows.compression))
        c.n_hi = self._capped_n_hi(setting, mode, c.n_hi, c.unit, c.min_nodes)
        if not (c.n_lo <= c.n_hi).all():
            c = c.take(c.n_lo <= c.n_hi)
        if c.size == 0:
            return None
        fits_at = lambda n: scored(setting, c.plans(np.arange(c.size), n, 1, 1),
                                   "state_bytes_per_node")["state_bytes_per_node"] <= setting.memory_bytes
        if not c.memory_checked:
            c = c.take(fits_at(c.n_hi))      # memory never grows with n: fits at n_hi or nowhere
        if c.size and mode in ("flat", "hierarchical") and expert_parallel == "global":
            lo, hi = c.n_lo.copy(), c.n_hi.copy()   # smallest n that fits, by bisection
            while (lo < hi).any():
                mid = (lo + hi) // 2
                ok = fits_at(mid)
                hi = np.where(ok, mid, hi)
                lo = np.where(ok, lo, mid + 1)
            c.n_lo = lo
        if c.size and self.placement is not None:
            from planner.fleet.regions import restrict_classes
            c = restrict_classes(c, mode, self.placement.mask)
        return c if c.size else None

    classes_of = _classes_of      # the classes built afresh (planner.robust records what they read)

    @staticmethod
    def _compression_shown(setting: Setting, precision: str, compression) -> np.ndarray:
        """Mask of the compressions the evidence envelope shows for `precision` (envelope.compression_shown)."""
        a = setting.assumptions
        return np.array([envelope.compression_shown(cr, a.bits_per_value(precision), a.compressor)
                         for cr in compression], dtype=bool)

    @staticmethod
    def _capped_n_hi(setting: Setting, mode: str, n_hi: np.ndarray, unit: np.ndarray, min_nodes) -> np.ndarray:
        """n_hi cut to the evidence envelope's replicas (K = n in every mode but pipeline_wan) and to the nodes
        the budget affords (none where even the node floor is not affordable), elementwise."""
        if envelope.on(setting.assumptions) and mode != "pipeline_wan":
            n_hi = np.minimum(n_hi, int(envelope.limits()["max_replicas"]))
        if setting.budget_usd is not None and setting.node_price_usd > 0:
            affordable = np.floor(setting.budget_usd / setting.node_price_usd)     # nodes, as a float
            capped = np.minimum(n_hi, np.floor(affordable / unit))
            n_hi = np.where(min_nodes > affordable, 0, capped).astype(np.int64)
        return n_hi

    def pp_group_rows(self, setting: Setting, precision: str) -> "PipeRows | None":
        """The pp_group listing of `precision` up to its pipe rows, not yet expanded over the compressions and
        streaming (`classes_of_rows` expands them), for a search that bounds each row before expanding it
        (planner.solvers.bnb under the max_compute measures, issue 27 item 5); None where that does not apply
        and `classes` is to be asked instead: its classes built already for this setting, a space whose
        `classes` is another's (planner.mip.robust_presolve), regions placed by the planner, rows with a member
        axis (no row's pipeline step is every plan's), or no rows. The rows and every field read per row are
        those `_pp_group` reads; `classes_of_rows` of every row is `classes(setting, "pp_group", precision)`."""
        memo = self.class_memo().get(("pp_group", precision, "none"))
        if (memo is not None and memo[0] is setting) or type(self).classes is not DecisionSpace.classes \
                or self.placement is not None or "pp_group" not in self.modes:
            return None
        r = self._pp_group_rows(setting, precision)
        if r is None or r.members is not None:
            return None
        return r

    def classes_of_rows(self, setting: Setting, precision: str, r: "PipeRows", kept: np.ndarray | None) -> "Classes | None":
        """`classes(setting, "pp_group", precision)` restricted to the pipe rows `kept` (a mask of `r`'s rows;
        None: every row, and the classes are then remembered as `classes` remembers them): the same classes in
        the same order, less those of the rows left out. Also remembers, for `size`, the plans the listing of
        every row stands for (`_pp_group_plans`), so that `size` does not list the rows left out."""
        memo = self.class_memo()
        memo[("pp_group_plans", precision)] = (setting, self._pp_group_plans(setting, precision, r))
        c = self._finish(setting, "pp_group", precision, "none", self._pp_group_classes(setting, precision, r, kept))
        if kept is None:
            memo[("pp_group", precision, "none")] = (setting, c)
        return c

    def _pp_group_plans(self, setting: Setting, precision: str, r: "PipeRows") -> int:
        """Plans per value of H of the pp_group classes of every row of `r` after `_finish`, counted per row:
        each class of a row has the row's n range (cut as `_finish` cuts it; a class with n_lo > n_hi is
        dropped) and stands for `listed` plans per n (1 without `listed`); a row has a class per compression
        the envelope shows and per streaming value it keeps (`_class_triples`). Memory is no cut here: rows
        without members are checked per row before (`Classes.memory_checked`)."""
        width = np.maximum(0, r.n_hi_capped - r.n_lo + 1)
        listed = r.keep if r.listed is None else r.listed
        # per streaming value (column by column: a sum along the rows' short second axis costs more), the widths
        # of the rows that keep it, times what each stands for (integers: exact in any order)
        per_stream = [int(np.dot(width, np.where(k, count, 0))) for k, count in zip(r.keep.T, listed.T)]
        return sum(per_stream) * len(self.compression_shown(setting, precision))

    def compression_shown(self, setting: Setting, precision: str) -> tuple[float, ...]:
        """The compressions a pp_group (or flat, hierarchical) listing of `precision` keeps: those the evidence
        envelope shows where it is on (`_finish`), else every one of the space."""
        if not envelope.on(setting.assumptions):
            return self.compression
        return tuple(cr for cr, ok in zip(self.compression,
                                          self._compression_shown(setting, precision, self.compression)) if ok)

    # -- per mode ---------------------------------------------------------------------

    def _grid(self, **axes) -> dict[str, np.ndarray]:
        names = list(axes)
        grids = np.meshgrid(*[np.asarray(axes[n]) for n in names], indexing="ij")
        return {n: g.ravel() for n, g in zip(names, grids)}

    def _classes(self, rows: PlanBatch, n_lo, n_hi, unit, members=None) -> "Classes":
        """`members`: None, or (M of each member, its pipeline step in seconds), one row per class.
        Arrays of the classes' shape are kept as given (a unit of S shares the rows' stages), the node
        floor stays one broadcast value: the classes are read, never written in place (`take` copies)."""
        shape = rows.nodes.shape
        as_array = lambda x: x if isinstance(x, np.ndarray) and x.dtype == np.int64 and x.shape == shape \
            else np.broadcast_to(np.asarray(x, dtype=np.int64), shape).copy()
        m, step = (None, None) if members is None else members
        return Classes(rows, as_array(n_lo), as_array(n_hi), as_array(unit),
                       np.broadcast_to(np.int64(self.min_nodes), shape), m, step)

    def _flat(self, s: Setting, precision: str, ep: str) -> "Classes":
        shards = (1,)
        if s.assumptions.search_zero_shards and not s.is_moe:      # dtplan: ZeRO-3 over Z co-located nodes
            shards += tuple(z for z in self.group_sizes if z <= self.max_nodes and z in ZERO_SHARD_SIZES)
        g = self._grid(compression=self.compression, streaming=self.streaming, zero_shards=shards)
        rows = PlanBatch.of("flat", precision, nodes=1, expert_parallel=ep, **g)
        z = rows.zero_shards      # a plan of n replicas uses N = max(n Z, min_nodes) nodes
        return self._classes(rows, np.maximum(1, self.min_nodes // z), self.max_nodes // z, z)

    def _hierarchical(self, s: Setting, precision: str, ep: str) -> "Classes | None":
        shards = (1,)
        if s.assumptions.search_zero_shards and not s.is_moe:     # dtplan: ZeRO-3 inside the co-located groups
            shards += tuple(z for z in ZERO_SHARD_SIZES if 2 * z <= max(self.group_sizes, default=0))
        g = self._grid(group_size=self.group_sizes, compression=self.compression, streaming=self.streaming,
                       zero_shards=shards)
        rows = PlanBatch.of("hierarchical", precision, nodes=1, expert_parallel=ep, **g)
        rows = rows.take(hierarchical_shards_valid(rows.group_size, rows.zero_shards))
        z = rows.zero_shards      # n replicas of Z nodes: N = max(n Z, min_nodes); G = floor(N / k) >= 2
        return self._classes(rows, np.maximum(2 * rows.group_size // z, self.min_nodes // z), self.max_nodes // z, z)

    def _stage_range(self, s: Setting, precision: str, mode: str) -> np.ndarray:
        # S_min = ceil(P beta' / V) with beta' the least state per parameter of a stage node: beta, or with a
        # pp_group stage's state sharded K ways (dtplan, planner/cost/stage_shards.py) beta times its factor at
        # D = 1, the least at any tensor-parallel degree (and with its routed experts spread over E servers, theirs at
        # 1 / E: `least_bytes_per_param`); a lower bound on the stages of any plan that fits
        beta = stage_shards.least_bytes_per_param(s.assumptions, precision, mode, s.is_moe, s.accelerators_per_node,
                                                  s.params, s.active_params)
        s_min = max(2, int(memory.min_stages(s.params, beta, s.memory_bytes)))
        return np.arange(s_min, self.max_stages + 1)

    def pipeline_stages(self, setting: Setting, precision: str, mode: str) -> np.ndarray:
        """The stage counts S of every pipe row of `mode` the listing builds (`_stage_range`: fewer fit no node)."""
        return self._stage_range(setting, precision, mode)

    def with_max_nodes(self, max_nodes: int) -> "DecisionSpace":
        """This space with another node limit, sharing its pipeline rows (`_pipelines` reads no node
        limit; a sweep over the node count builds them once, `planner.questions.sweep.shared`)."""
        out = replace(self, max_nodes=max_nodes)
        out.__dict__["_pipes"] = self.__dict__.setdefault("_pipes", {})
        return out

    def _pipelines(self, s: Setting, mode: str, precision: str) -> tuple[PlanBatch, np.ndarray | None, dict] | None:
        """`_pipeline_rows` and the rows' PROBED fields (`_probed_rows`), remembered per setting object only
        where spaces share them (`with_max_nodes`: a sweep's points that differ only in the node limit); under
        `every_micro_batch` without a probe kept, the probe of every row worked for all Ca at once
        (`_probe_over_ca`) where a caller reads it, handed on and not remembered.

        A space of its own does not remember them: their one reader is the listing of a mode's classes
        (`_pp_group`, `_pipeline_wan`), which `classes` remembers per setting object, so the rows would be
        asked for again only by a listing of the same setting afresh (`classes_of`); kept, they held ~3.2 MB
        per precision through the whole search at 10^4 nodes beyond the envelope (issue 27 item 5). The
        rows are the same either way: `_probed_rows` reads only the setting and the space's fields."""
        memo = self.__dict__.get("_pipes")
        if memo is None:
            built = self._probed_rows(s, mode, precision)
        else:
            if memo.get((mode, precision), (None,))[0] is not s:
                memo[(mode, precision)] = (s, self._probed_rows(s, mode, precision))
            built = memo[(mode, precision)][1]
        a = s.assumptions
        if built is not None and not built[2] and self.all_micro_batches and every_micro_batch(a) \
                and (mode == "pp_group" or self._reduces_to_least_step(s)) \
                and not tensor_parallel.choices(a, s.accelerators_per_node, s.is_moe):
            # every (S, Ca, schedule, M) row, no probe kept: the rows' PROBED fields, read by the callers, worked for all
            # Ca at once (`_probe_over_ca`) and handed to this caller only, not remembered (~6 MB of peak memory at
            # 10^4 nodes: the callers keep only the rows that fit)
            built = (*built[:2], self._probe_over_ca(s, mode, precision, self._stage_range(s, precision, mode),
                                                     schedules_searched(a)))
        return built

    def _pipeline_rows(self, s: Setting, mode: str, precision: str) -> tuple[PlanBatch, np.ndarray | None] | None:
        """`_probed_rows` without the probed fields."""
        built = self._probed_rows(s, mode, precision)
        return None if built is None else built[:2]

    def _probed_rows(self, s: Setting, mode: str, precision: str) -> tuple[PlanBatch, np.ndarray | None, dict] | None:
        """(S, Ca) rows with M = argmin over M of the pipeline step (exact; ties to the smaller M),
        and no members; or, when `all_micro_batches`, (S, Ca) rows whose members are every M,
        ordered by pipeline step (ties to the smaller M): one row per (S, Ca), M searched as
        the row's member axis (`Classes.members`; the outer step must grow with the pipeline
        step, so under `dp_overlap` every (S, Ca, M) is a row of its own instead). Third: the PROBED
        fields of each row's `pipe_probe` when the listing scored them already (`_fastest_schedule`),
        else an empty dict (the same plans: `_least_step`, `_window_front` and `_pp_group` read them
        instead of scoring the rows again)."""
        stages = self._stage_range(s, precision, mode)
        if stages.size == 0:
            return None
        if self.all_micro_batches and every_micro_batch(s.assumptions):
            # the outer step also depends on M through the overlap window, or memory does through the
            # activations in flight, or the schedule is a decision: not ordered by the pipeline step,
            # so every (S, Ca, schedule, M) is a class of its own (no member axis)
            schedules = schedules_searched(s.assumptions)
            g = self._grid(stages=stages, activation_compression=self.activation_compression, schedule=schedules,
                           micro_batches=np.arange(1, self.max_micro_batches + 1))
            probed = {}
            if len(schedules) > 1 and not s.assumptions.activation_memory:
                index, probed = self._fastest_schedule(s, mode, precision, PlanBatch.of(mode, precision, nodes=1, **g),
                                                       len(schedules))
                g = {k: v[index] for k, v in g.items()}
                allowed = physics.schedule_allowed(s.assumptions, g["stages"], g["micro_batches"],
                                                   g["schedule"])         # DualPipe: even S, even M >= 2 S
            else:       # the grid whole: which (S, schedule, M) run, the same for every Ca (`_schedule_runs`)
                runs = self._schedule_runs(s, stages, schedules)[1].reshape(stages.size, 1, -1)
                allowed = np.broadcast_to(runs, (stages.size, len(self.activation_compression), runs.shape[2])).ravel()
            # the rows kept, built from their own fields: the placeholders (nodes, H, R, k, Z, the compression,
            # streaming) stay one broadcast value, as in the grid, not an array per row (the rows are kept: `_pipelines`)
            rows = PlanBatch.of(mode, precision, nodes=1, **{k: v[allowed] for k, v in g.items()})
            probed = {k: v[allowed] for k, v in probed.items()}
            return (rows, None, probed) if rows.size else None
        g = self._grid(stages=stages, activation_compression=self.activation_compression,
                       micro_batches=np.arange(1, self.max_micro_batches + 1))
        probe = PlanBatch.of(mode, precision, nodes=2 * g["stages"], **g)
        t_step = scored(s, probe, "t_step_s")["t_step_s"].reshape(stages.size * len(self.activation_compression), -1)
        sa = self._grid(stages=stages, activation_compression=self.activation_compression)
        order = np.argsort(t_step, axis=1, kind="stable")          # M - 1 by pipeline step, ties to the smaller M
        rows = PlanBatch.of(mode, precision, nodes=1, micro_batches=order[:, 0] + 1, **sa)
        runs = physics.schedule_allowed(s.assumptions, probe.stages, probe.micro_batches).reshape(t_step.shape) \
            .any(axis=1)         # the profile's DualPipe runs some M of the row (its other M: an infinite step)
        if not runs.any():
            return None
        rows, order, t_step = rows.take(runs), order[runs], t_step[runs]
        if self.all_micro_batches:
            return rows, (order + 1, np.take_along_axis(t_step, order, axis=1)), {}
        return rows, None, {}

    def _probe_over_ca(self, s: Setting, mode: str, precision: str, stages: np.ndarray,
                       schedules: tuple[int, ...]) -> dict[str, np.ndarray]:
        """The PROBED fields of the pipe rows of the grid (S, Ca, schedule, M) that can run their schedule (the
        rows `_probed_rows` lists under `every_micro_batch`, in its order), as `scored(s, pipe_probe(...))`
        gives them where no tensor-parallel degree is to be chosen, but worked once per (S, schedule, M) for all
        Ca (`modes.pipeline_probe_over_ca`: the same doubles). Which (S, schedule, M) run reads no Ca
        (`physics.schedule_allowed`), so each Ca block of an S lists the same (schedule, M) rows: row (S, Ca,
        schedule, M) is at [the index of its (S, schedule, M) among those that run, the index of its Ca].
        The (S, schedule, M) are probed in the order of their schedule's code (stable: the grid's order within
        a code), so that the interleaved ones, whose chunk counts `modes._pipeline` tries, are one run of
        consecutive plans it takes as a slice, not copies (the same doubles, row by row: its docstring);
        `order` maps each back to its place."""
        ca = np.asarray(self.activation_compression, dtype=float)
        one, runs = self._schedule_runs(s, stages, schedules)
        taken = np.flatnonzero(runs)
        order = np.argsort(physics.schedule_codes(s.assumptions, one["schedule"][taken]), kind="stable")
        reps = pipe_probe(mode, precision, PlanBatch.of(mode, precision, nodes=1,
                                                        **{k: v[taken[order]] for k, v in one.items()}))
        if reps.size <= CHUNK:      # CHUNK plans (each at every Ca) at a time, as `scored` (peak memory)
            got = {key: np.ascontiguousarray(v) for key, v in modes.pipeline_probe_over_ca(s, reps, ca).items()}
        else:
            parts = [modes.pipeline_probe_over_ca(s, reps.take(slice(k, k + CHUNK)), ca) for k in range(0, reps.size, CHUNK)]
            got = {key: np.concatenate([p[key] for p in parts]) for key in PROBED}
        shape = (stages.size, ca.size, runs.size // stages.size)       # the grid's (S, Ca, schedule x M)
        probed_at = np.zeros(max(order.size, 1), dtype=np.int64)     # (one 0 read, masked off, if none runs)
        probed_at[order] = np.arange(order.size)       # where each (S, schedule, M) that runs was probed
        at = probed_at[np.maximum(np.cumsum(runs) - 1, 0)].reshape(shape[0], 1, shape[2]) * ca.size \
            + np.arange(ca.size)[None, :, None]
        kept = np.broadcast_to(runs.reshape(shape[0], 1, shape[2]), shape)
        flat = at[kept]         # the rows' places in got's (plan, Ca) arrays, read as one axis: one mask applied
        return {k: got[k].ravel().take(flat) for k in PROBED}

    def _schedule_runs(self, s: Setting, stages: np.ndarray, schedules: tuple[int, ...]) -> tuple[dict, np.ndarray]:
        """(grid, runs): the grid (S, schedule, M) of the pipe rows without their Ca, and whether each can run its
        schedule (`physics.schedule_allowed`: DualPipe needs an even S and an even M >= 2 S). That reads S, M and
        the schedule elementwise, never Ca, so row (S, Ca, schedule, M) of the full grid runs iff (S, schedule, M)
        does: the mask of the full grid is this one broadcast over Ca (a quarter of the work at four Ca)."""
        one = self._grid(stages=stages, schedule=schedules, micro_batches=np.arange(1, self.max_micro_batches + 1))
        return one, physics.schedule_allowed(s.assumptions, one["stages"], one["micro_batches"], one["schedule"])

    def _fastest_schedule(self, s: Setting, mode: str, precision: str, rows: PlanBatch,
                          count: int) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """(indices, their PROBED fields): the rows that keep, per (S, Ca, M), only the schedule of least pipeline step
        (ties to the first listed). Exact without activation memory: the schedules then differ in
        nothing but the pipeline step (the same memory, overlap window c = t_comp / (S M), sync and
        eta_A), the time to target is non-decreasing in it, and the tie order puts the shorter
        step before the schedule. `rows` come from a grid whose schedule axis (of `count`) lies
        just before the M axis."""
        probed = scored(s, pipe_probe(mode, precision, rows), *PROBED)
        m = self.max_micro_batches
        grid = probed["t_step_s"].reshape(-1, count, m)      # (S x Ca, schedule, M)
        best = np.argmin(grid, axis=1)                       # first minimum: ties to the first listed
        base = np.arange(grid.shape[0])[:, None] * count * m
        index = (base + best * m + np.arange(m)[None, :]).ravel()
        return index, {k: v[index] for k, v in probed.items()}

    def _reduces_to_least_step(self, s: Setting) -> bool:
        """Whether pipeline rows listed per (schedule, M) (`every_micro_batch`) may be cut to the one of
        least pipeline step per (S, Ca) wherever the overlap window does not matter (`_least_step`), and
        to the window front where it does (`_window_front`): for objectives where a faster plan never
        scores lower.

        With activation memory too, among the rows whose node fits its memory (the callers cut the rest
        first, `_fitting`). Proof: a pipeline node's memory (state, activations in flight, the `fit`
        share r) reads S, M, the schedule, v, T, Z, K and the precision, never n, H or R, so a row that
        fits does so at every n of its class, and memory enters no objective but through that limit. The
        rest of a row's plans reads (schedule, M) only through the pipeline step t_pp and the last
        micro-batch's compute c (both with the recomputation, c = t_comp (1 + r / 3) / (S M), which is
        step_compute_s / M); eta_A, the payload, the sync, the tokens and the n range read S, Ca, n, H and
        the compression. So among the fitting rows of one (S, Ca) the arguments of `_least_step` and
        `_window_front` hold word for word, and a row that does not fit is no plan at all."""
        return self.all_micro_batches and every_micro_batch(s.assumptions) and self.faster_wins

    @staticmethod
    def _fitting(s: Setting, mode: str, precision: str, pipes: PlanBatch, probed: dict) -> tuple[PlanBatch, dict]:
        """The pipe rows whose node fits its memory, and their PROBED fields (scored here when `probed` is
        empty): a row that does not fit at one n fits at none (`_reduces_to_least_step`).

        Where every row fits, the rows and fields are handed back as they are, not taken: the same values
        (a take of them all copies every field, the rows' broadcast placeholders made arrays of the rows'
        length, ~50,000 rows per precision and mode at 10^4 nodes beyond the envelope; issue 27 item 5).
        Their readers only read them (`_pp_group` takes the fields it keeps, `_pipeline_wan` takes the rows)."""
        probed = probed or scored(s, pipe_probe(mode, precision, pipes), *PROBED)
        fits = probed["state_bytes_per_node"] <= s.memory_bytes
        if fits.all():
            return pipes, probed
        return pipes.take(fits), {k: v[fits] for k, v in probed.items()}

    @staticmethod
    def _least_step(s: Setting, mode: str, precision: str, pipes: PlanBatch, probed: dict | None = None) -> np.ndarray:
        """Mask of the pipe rows that come first, per (S, Ca), in the order (pipeline step, M, schedule):
        the least step, ties to fewer micro-batches, then to the schedule listed first (`bnb.tie_key`).
        Exact where the overlap window does not matter: without memory terms the rows of one (S, Ca)
        differ in nothing but the pipeline step and the window c = t_comp / (S M), a streaming outer step
        (physics.streaming_outer_s) reads it only under `streaming_reads_window`, a pipeline over the WAN
        never, a blocking one only under `dp_overlap`; the time to target is non-decreasing in the step,
        and the first row is at least as fast as any other at every (n, H) and first in tie order.
        `probed`: the rows' PROBED fields if scored already (`_probed_rows`)."""
        t_step = (probed or scored(s, pipe_probe(mode, precision, pipes), "t_step_s"))["t_step_s"]
        starts = _group_starts(pipes)
        if starts is not None:
            mask = _first_of_groups(t_step, pipes.micro_batches, pipes.schedule, starts)
            if (np.add.reduceat(mask, starts) == 1).all():     # one row each: (M, schedule) unique in each group
                return mask
        order, starts = _step_order(pipes, t_step)
        mask = np.zeros(pipes.size, bool)
        mask[order[starts]] = True
        return mask

    @staticmethod
    def _window_front(s: Setting, mode: str, precision: str, pipes: PlanBatch,
                      probed: dict | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(mask, first): the pipe rows that no other row of their (S, Ca) dominates for a blocking sync
        under `dp_overlap`, and per row the index of its (S, Ca)'s first row in (pipeline step, M,
        schedule) order (the row `_least_step` keeps, which stands for the rows left out in `size`).

        A blocking outer step is H t_pp + max(t_sync - w c, t_sync / buckets) (modes._outer,
        physics.exposed_sync_s), c the last micro-batch's compute and w = backward_share in (0, 1]
        (the schema's bound): non-decreasing in t_pp, non-increasing in c, at every (n, H) and
        compression. Without activation memory (`_reduces_to_least_step`) the rows of one (S, Ca)
        differ in nothing else: the same memory, n range, sync, tokens per outer step and
        efficiencies (eta_A reads Ca and S). So row j is dominated when a row i before it in
        (t_pp, M, schedule) order, hence t_pp_i <= t_pp_j and first in tie order (`bnb.tie_key`:
        the step, then M, then the schedule), has c_i >= c_j: plan by plan at least as fast, so for
        an objective where a faster plan never scores lower (`faster_wins`) j is never the answer.
        The rows kept are the records of c in that order: c_j above the largest c before it. c is
        read as step_compute_s / M (the step's compute is M c): a row is left out only when
        c_i >= c_j (1 + WINDOW_MARGIN), so that rounding of that quotient never decides; rows with
        a NaN step are kept. `probed`: the rows' PROBED fields if scored already (`_probed_rows`)."""
        t = probed or scored(s, pipe_probe(mode, precision, pipes), "t_step_s", "step_compute_s")
        t_step = t["t_step_s"]
        with np.errstate(divide="ignore", invalid="ignore"):
            c = t["step_compute_s"] / pipes.micro_batches
        order, starts = _step_order(pipes, t_step)
        ends = np.r_[starts[1:], order.size]
        keep_sorted = np.ones(order.size, bool)
        first_sorted = np.repeat(order[starts], ends - starts)
        c_sorted = c[order]
        for a, b in zip(starts, ends):
            before = np.maximum.accumulate(c_sorted[a:b])[:-1]     # the largest c before each row
            keep_sorted[a + 1:b] = ~(before >= c_sorted[a + 1:b] * (1 + WINDOW_MARGIN))
        keep_sorted |= np.isnan(t_step[order])
        mask, first = np.zeros(pipes.size, bool), np.zeros(pipes.size, np.int64)
        mask[order], first[order] = keep_sorted, first_sorted
        return mask, first

    def _pp_group(self, s: Setting, precision: str, ep: str) -> "Classes | None":
        r = self._pp_group_rows(s, precision)
        return None if r is None else self._pp_group_classes(s, precision, r)

    def _pp_group_rows(self, s: Setting, precision: str) -> "PipeRows | None":
        """The pp_group listing's pipe rows (those whose node fits, without members), which (row, streaming)
        pairs are listed and the plans each stands for in `size` (`PipeRows`), and each row's n range
        before `_finish`'s cuts and after them (elementwise in the row's stages: the classes' own)."""
        built = self._pipelines(s, "pp_group", precision)
        if built is None:
            return None
        pipes, members, probed = built
        if members is None:
            # a pp_group node's memory reads only its pipe row (S, precision, M, schedule: modes._pipeline),
            # not n, the compression or streaming: checked once per pipe row, not per class
            pipes, probed = self._fitting(s, "pp_group", precision, pipes, probed)
            if pipes.size == 0:
                return None
        # which (pipe row, streaming) pairs are listed, and the plans each stands for in `size`: neither reads
        # the compression, so they are worked per pipe row (P x streaming), and only the classes kept are
        # expanded over the compression (grid order: row, compression, streaming)
        stream = np.array(self.streaming, dtype=bool)
        keep, listed = np.ones((pipes.size, stream.size), bool), None
        if self._reduces_to_least_step(s):
            # the window matters to a blocking sync under dp_overlap (only the rows of its front,
            # `_window_front`), and to a streaming one only when its fragments also hide behind their
            # backward pass: elsewhere one row per (S, Ca). Worked per streaming value (a column each: the
            # same values as on the (rows x streaming) arrays, ~1.3 ms less per precision at 10^4 nodes)
            least = self._least_step(s, "pp_group", precision, pipes, probed)
            keep = [least for _ in stream]
            listed = [least.astype(np.int64) for _ in stream]
            if s.assumptions.dp_overlap:
                front, first = self._window_front(s, "pp_group", precision, pipes, probed)
                keep = [least if on else least | front for on in stream]
                # each row left out (blocking) is counted with its (S, Ca)'s first row (same n range: `size`)
                left_out = np.bincount(first[~front], minlength=pipes.size)
                listed = [k.astype(np.int64) if on else k.astype(np.int64) + left_out for k, on in zip(keep, stream)]
            if streaming_reads_window(s.assumptions):
                keep = [np.ones(pipes.size, bool) if on else k for k, on in zip(keep, stream)]
                listed = [np.maximum(n, k.astype(np.int64)) for n, k in zip(listed, keep)]
            keep, listed = np.stack(keep, axis=1), np.stack(listed, axis=1)
        n_lo = np.maximum(2, self.min_nodes // pipes.stages)     # G S <= min_nodes < (G + 1) S: idle nodes
        n_lo = np.maximum(n_lo, stage_shards.min_groups(s.assumptions, s.accelerators_per_node, s.is_moe))  # G >= K, E
        n_hi = self.max_nodes // pipes.stages
        return PipeRows(pipes, members, probed, stream, keep, listed, n_lo, n_hi,
                        self._capped_n_hi(s, "pp_group", n_hi, pipes.stages, np.int64(self.min_nodes)), self.min_nodes)

    def _pp_group_classes(self, s: Setting, precision: str, r: "PipeRows",
                          rows_kept: np.ndarray | None = None) -> "Classes":
        """The pp_group classes of the rows `r` (of those `rows_kept`, a mask of its rows, when given), before
        `_finish`: the classes of the rows kept are those of every row, in the same order, less the others'."""
        pipes, members, probed, stream, listed = r.pipes, r.members, r.probed, r.stream, r.listed
        keep = r.keep if rows_kept is None else r.keep & rows_kept[:, None]
        # the (row, compression, streaming) triples of the classes in grid order; what reads only the row (its
        # fields, n range) is taken or computed per kept row, then at each class's row
        kept, p_i, c_i, j_i = _class_triples(keep, len(self.compression))
        rep = kept[p_i]
        compression = np.asarray(self.compression, dtype=float)[c_i]
        streaming = stream[j_i]
        if listed is not None:
            listed = listed[rep, j_i]
        stages = pipes.stages[kept]
        # the pipe rows' fields at `rep`; those equal in every row (n, H, R, k, Z placeholders) stay broadcast
        rows = PlanBatch.of("pp_group", precision, nodes=1, stages=stages[p_i],
                            activation_compression=pipes.activation_compression[kept][p_i],
                            micro_batches=pipes.micro_batches[kept][p_i], schedule=pipes.schedule[kept][p_i],
                            compression=compression, streaming=streaming)
        c = self._classes(rows, _gather_or_one(r.n_lo[kept], p_i), r.n_hi[kept][p_i], rows.stages,
                          None if members is None else (members[0][rep], members[1][rep]))
        if listed is not None:
            c.listed = listed
        c.memory_checked = members is None
        if members is None:      # every plan of a class has its row's pipeline step and eta_A (`pipe_probe`)
            c.step_s, c.eta_activation = probed["t_step_s"][rep], probed["eta_activation"][rep]
        return c

    def _pipeline_wan(self, s: Setting, precision: str, ep: str) -> "Classes | None":
        built = self._pipelines(s, "pipeline_wan", precision)
        if built is None:
            return None
        rows, members, probed = built
        checked = False
        if self._reduces_to_least_step(s):         # no sync, no overlap window: one row per (S, Ca)
            if s.assumptions.activation_memory:    # of those that fit (`_reduces_to_least_step`)
                rows, probed = self._fitting(s, "pipeline_wan", precision, rows, probed)
                if rows.size == 0:
                    return None
                # every row left fits its node at every n (a pipeline node's memory reads no n:
                # `_reduces_to_least_step`), as `_pp_group`'s: `_finish` need not score it again
                checked = members is None
            rows = rows.take(self._least_step(s, "pipeline_wan", precision, rows, probed))
        ok = np.maximum(rows.stages, self.min_nodes) <= self.max_nodes     # N = max(S, min_nodes)
        c = self._classes(rows, np.where(ok, 1, 2), 1, rows.stages, members)
        c.memory_checked = checked
        return c

    def size(self, setting: Setting) -> int:
        """Number of plans in the declared space (every n, H and R counted)."""
        total = 0
        per_plan = {"pipeline_wan": 1, "hierarchical": self.max_inner_steps * self.max_regional_rounds}
        for mode in self.modes:
            for precision in self.precisions:
                for ep in self.expert_scopes(setting, mode):
                    counted = self.class_memo().get(("pp_group_plans", precision)) if mode == "pp_group" else None
                    if counted is not None and counted[0] is setting:     # counted per row (`classes_of_rows`)
                        total += counted[1] * self.max_inner_steps
                        continue
                    c = self.classes(setting, mode, precision, ep)
                    if c is not None:
                        per_class = c.n_hi - c.n_lo + 1 if c.listed is None else (c.n_hi - c.n_lo + 1) * c.listed
                        total += int(per_class.sum()) * per_plan.get(mode, self.max_inner_steps) * c.member_count
        return total


@dataclass
class PipeRows:
    """The pp_group listing of one precision up to its pipe rows (`DecisionSpace.pp_group_rows`): each row
    stands for a class per compression (that the envelope shows) and per streaming value it keeps."""

    pipes: PlanBatch            # the rows (S, Ca, M, schedule) whose node fits
    members: tuple | None       # (M, step) per row when the rows have a member axis, else None
    probed: dict                # the rows' PROBED fields (t_step_s, eta_activation, ...)
    stream: np.ndarray          # the space's streaming values (J)
    keep: np.ndarray            # rows x J: the (row, streaming) pairs listed
    listed: np.ndarray | None   # rows x J: plans per (n, H, R) each pair stands for in `size`; None: 1 each
    n_lo: np.ndarray            # per row, the n range of its classes as listed (before `_finish`)
    n_hi: np.ndarray
    n_hi_capped: np.ndarray     # per row, n_hi cut as `_finish` cuts it (envelope replicas, budget)
    min_nodes: int              # the fewest nodes a plan may use: N = max(n S, min_nodes)

    @property
    def size(self) -> int:
        return int(self.pipes.size)


# The array fields of a class's plans taken from its row (`Classes.plans` sets nodes, H and R itself)
PLAN_FIELDS_KEPT = tuple(f.name for f in fields(PlanBatch)
                         if f.name not in ("mode", "precision", "expert_parallel", "nodes", "inner_steps", "regional_rounds"))


def _gather_or_one(x: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """x[idx] of an integer array `x`; where every element of `x` is the same value, a read-only broadcast of
    that value in the shape of `idx` instead: the same values (integers: no -0.0 to tell apart), no memory per
    element. The pp_group classes' n_lo at 10^4 nodes beyond the envelope (one value, ~140,000 classes per
    precision: ~1.1 MB each, issue 27 item 5); a class's fields are read, never written in place (`Classes`)."""
    if x.size and x.dtype.kind in "iu" and (x == x[0]).all():
        return np.broadcast_to(x[0], np.shape(idx))
    return x[idx]


def _int_array(x, shape) -> np.ndarray:
    """x as an int64 array of `shape`: itself when it is one already (read, never written, as a plan's fields
    are), else a new array."""
    if isinstance(x, np.ndarray) and x.dtype == np.int64 and x.shape == shape:
        return x
    return np.broadcast_to(np.asarray(x, dtype=np.int64), shape).copy()

@dataclass
class Classes:
    """Plans that differ only in the replica count n, over the interval n_lo..n_hi.

    A plan of class k with n replicas uses N = max(n unit_k, min_nodes_k) nodes: n unit_k
    busy, the rest (at most unit_k - 1, only at the smallest n) idle, so that a search
    floor on N that is not a multiple of S hides no pipeline plan."""

    rows: PlanBatch        # one row per class (its nodes, H and R fields are placeholders)
    n_lo: np.ndarray
    n_hi: np.ndarray
    unit: np.ndarray       # nodes per replica: S for pipelines, else 1
    min_nodes: np.ndarray | None = None   # fewest nodes a plan may use (None: no floor)
    members: np.ndarray | None = None     # (classes, j) micro-batch counts M, slowest last; None: M fixed
    member_step_s: np.ndarray | None = None   # (classes, j) their pipeline steps, non-decreasing in j
    listed: np.ndarray | None = None      # plans of the listing per (n, H, R) each class stands for in `size`
                                          # (itself and the rows `_window_front` left out); None: 1 each
    memory_checked: bool = False          # every class fits its node at every n (checked per pipe row: `_pp_group`)
    step_s: np.ndarray | None = None      # pp_group classes without members: the pipeline step t_pp and eta_A of
    eta_activation: np.ndarray | None = None   # every plan of the class, its pipe row's (planner.solvers.class_bound)

    def __post_init__(self):
        if self.min_nodes is None:
            self.min_nodes = np.zeros_like(self.n_lo)

    @property
    def size(self) -> int:
        return int(self.n_lo.size)

    @property
    def member_count(self) -> int:
        """Values of the member axis j (the R axis of a pipeline class): 1 without members."""
        return 1 if self.members is None else int(self.members.shape[1])

    def nodes(self, idx, n) -> np.ndarray:
        """N = max(n unit, min_nodes) of the classes `idx` at n replicas (strictly increasing in n >= n_lo)."""
        floor = self.min_nodes[:1] if self.min_nodes.strides == (0,) else self.min_nodes[idx]   # one floor: broadcast
        return np.maximum(np.asarray(n, dtype=np.int64) * self.unit[idx], floor)

    def plans(self, idx, n, h, r) -> PlanBatch:
        """Plans of the classes `idx` with n replicas, H inner steps, R regional rounds (for a
        class with members, r is the member index j instead). The rows' fields are taken at `idx`
        but those set here (`rows.take` would copy them only to be replaced)."""
        return self.corner_plans(idx, n, (h, r))[0]

    def corner_plans(self, idx, n, *corners) -> list[PlanBatch]:
        """`plans(idx, n, h, r)` for each (h, r) of `corners`, the same classes at the same n: the
        fields taken from the rows and the node counts are taken once and shared by the batches
        (read only, as every batch's fields are: the cost model never writes a plan's fields)."""
        rows = self.rows
        if isinstance(idx, np.ndarray) and idx.dtype.kind in "iu":      # the shape of rows.nodes[idx], not taken
            shape = idx.shape if idx.ndim else (1,)
        else:
            shape = np.atleast_1d(rows.nodes[idx]).shape
        nodes = self.nodes(idx, n)
        nodes = nodes if nodes.shape == shape else np.broadcast_to(nodes, shape).copy()
        same = self._same_fields()
        taken = {name: np.broadcast_to(same[name], shape) if name in same else np.atleast_1d(getattr(rows, name)[idx])
                 for name in PLAN_FIELDS_KEPT if name != "micro_batches" or self.members is None}
        out = []
        for h, r in corners:
            fields_of = taken
            if self.members is None:
                r = _int_array(r, shape)
            else:   # r is the member index j (1-based): M = members[class, j - 1], R = 1
                j = np.broadcast_to(np.asarray(r, dtype=np.int64), shape)
                fields_of = {**taken, "micro_batches": self.members[np.broadcast_to(np.asarray(idx), shape), j - 1]}
                r = np.ones(shape, np.int64)
            out.append(PlanBatch(rows.mode, rows.precision, nodes=nodes, inner_steps=_int_array(h, shape),
                                 regional_rounds=r, expert_parallel=rows.expert_parallel, **fields_of))
        return out

    def _same_fields(self) -> dict[str, np.ndarray]:
        """The fields of PLAN_FIELDS_KEPT whose value is the same in every row (a mode's placeholders: a
        hierarchical class's stages, micro-batches, schedule; a pp_group class's group size and shards), each as
        that one value: `corner_plans` gives them as a read-only broadcast of it, the value every row would
        give, instead of taking it row by row (issue 27 item 5). Found once per Classes object (`take` makes
        new ones, which find theirs)."""
        memo = self.__dict__.get("_same")
        if memo is None:
            memo = {}
            for name in PLAN_FIELDS_KEPT:
                value = getattr(self.rows, name)
                if value.size and (value.strides == (0,) or ((value == value[0]).all()      # bit for bit: -0.0 is
                                                             and (np.signbit(value) == np.signbit(value[0])).all())):
                    memo[name] = value[0].copy()                                      # not 0.0 here
            self.__dict__["_same"] = memo
        return memo

    def take(self, index) -> "Classes":
        return Classes(self.rows.take(index), self.n_lo[index], self.n_hi[index], self.unit[index],
                       self.min_nodes[index], None if self.members is None else self.members[index],
                       None if self.members is None else self.member_step_s[index],
                       None if self.listed is None else self.listed[index], self.memory_checked,
                       None if self.step_s is None else self.step_s[index],
                       None if self.eta_activation is None else self.eta_activation[index])
