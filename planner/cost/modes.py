"""How replicas are formed and synchronised: the throughput of each mode (docs/cost_model.md section 4).

Each mode function takes a `Setting` and a `PlanBatch` and returns a dict of arrays
with the same keys (seconds, bits, bytes, counts), so that run-level scoring
(`planner.cost.run`) is one code path for all modes:

    t_comp_s            6 P_act B / (F u), one inner step of the whole model on one node
    node_mfu            u: the node's utilisation before bubbles, collectives and syncs (dtplan: the
                        compute model's output, planner/cost/compute; else the table's or the profile's)
    t_ep_s              expert all-to-all latency per step (MoE with EP), 2 lat_ep L_moe
    t_step_s            wall time of one inner step (parts: step_compute_s, step_bubble_s,
                        step_link_s, step_link_straggler_s, t_ep_s)
    t_sync_base_s       one WAN exchange v / up + v / down + lat; f_sync its straggler factor
    t_sync_s            t_sync_base_s * f_sync: the WAN sync that bounds an outer step
    t_regional_s        regional sync (hierarchical), (2 v / bw_reg + lat_reg) f(k)
    compute_block_s     compute per outer step (H t_step; hierarchical R H t_step)
    outer_time_s        one outer step (hierarchical: one global cycle)
    tokens_per_outer    tokens processed per outer step by all replicas
    groups              DiLoCo groups synchronised over the WAN (G)
    replicas            K, the replicas whose pseudo-gradients are averaged (eta_R)
    h_eff               effective sync interval for eta_H and eta_R
    eta_activation      eta_A = qa(Ca) ** (2 (S - 1)) (pipeline modes, else 1)
    state_bytes_per_node, payload_bits
    synchronised        1 where a DiLoCo sync exists (N > 1 and not pipeline over WAN)
"""

from __future__ import annotations

from dataclasses import fields, replace

import numpy as np

from planner.cost import fragment_window, memory, physics, quality, stage_shards, tensor_parallel, timing
from planner.cost.setting import PlanBatch, Setting
from planner.cost.straggler import straggler_factor, throughput_fraction


def _f(x) -> np.ndarray:
    return np.asarray(x, dtype=float)


def _common(s: Setting, b: PlanBatch) -> dict[str, np.ndarray]:
    """Quantities every mode shares: compute time, payload and the EP latency."""
    a = s.assumptions
    t_comp = inner_step_compute_s(s, b)
    per_stage = a.per_stage_payload and b.mode == "pp_group"
    synced = stage_shards.payload_params(a, s.accelerators_per_node, b.mode, s.is_moe, s.params, s.active_params,
                                         np.floor(_f(b.nodes) / np.maximum(_f(b.stages), 1.0)))     # G groups
    payload = physics.payload_bits(a, synced, b.precision, b.compression, b.stages, per_stage)
    return {"t_comp_s": np.broadcast_to(t_comp, b.nodes.shape).astype(float), "payload_bits": _f(payload),
            "node_mfu": np.full(b.nodes.shape, a.mfu_for(b.precision))}


def inner_step_compute_s(s: Setting, b: PlanBatch):
    """`_common`'s t_comp before it is spread over the plans: one inner step's compute, with the
    tensor-parallel collectives and the in-node data-parallel exchange (the setting and the precision only)."""
    a = s.assumptions
    t_comp = timing.compute_time_s(s.active_params, s.local_batch_tokens, s.peak_flops[b.precision],
                                   a.mfu_for(b.precision))
    if a.tensor_parallel > 1:       # dtplan: tensor-parallel collectives inside the node (physics.tensor_parallel_s)
        hidden = s.hidden_size if s.hidden_size is not None else timing.hidden_size(s.params, a.hidden_size_coefficient)
        t_comp = t_comp + physics.tensor_parallel_s(a, s.active_params, hidden, s.local_batch_tokens, b.precision,
                                                    s.accelerators_per_node)
    return t_comp + tensor_parallel.in_node_data_parallel_s(a, s.params, b.precision, s.accelerators_per_node)


def _expert_parallel(s: Setting, b: PlanBatch, group_size) -> tuple[np.ndarray, np.ndarray]:
    """(EP degree E, all-to-all time t_ep) for the batch's expert-parallel scope."""
    if not s.is_moe or b.expert_parallel == "none":
        return np.ones(b.nodes.shape), np.zeros(b.nodes.shape)
    if b.expert_parallel == "global":
        degree, latency = _f(b.nodes), s.wan_rtt_s
    else:  # regional: experts sharded within a co-located group
        degree, latency = _f(group_size), s.regional_rtt_s
    t_ep = np.where(degree > 1, timing.expert_all_to_all_time_s(latency, s.moe_layers), 0.0)
    return degree, t_ep


def _data_parallel_state(s: Setting, b: PlanBatch, degree) -> np.ndarray:
    beta = s.assumptions.bytes_per_param(b.precision)
    if s.is_moe:
        return memory.moe_state_bytes_per_node(s.params, s.active_params, beta, degree)
    factor = tensor_parallel.state_factor(s.assumptions, b.precision, s.accelerators_per_node)
    return np.broadcast_to(memory.state_bytes_per_node(s.params, beta) * factor, b.nodes.shape).astype(float)


def _activation_shape(s: Setting) -> tuple[float, float]:
    """(D, s): the node's data-parallel groups and the training sequence length, for the floor of one
    sequence per group and micro-batch (`physics.micro_batch_tokens`); (1, 0) without activation memory."""
    a = s.assumptions
    if not a.activation_memory:
        return 1.0, 0.0
    return (tensor_parallel.data_parallel_groups(a, s.accelerators_per_node),
            physics.sequence_tokens(a, s.params, s.hidden_size))


def _replica_memory(s: Setting, b: PlanBatch, out: dict[str, np.ndarray], state) -> tuple[np.ndarray, np.ndarray]:
    """A flat or hierarchical node's memory, its state plus (dtplan, `activation_memory`, dense models) its
    activations at the recomputation share r of `physics.recompute_share` (`fit`: the least r that fits;
    `physics.replica_activation_parts_bytes`); scales out["t_comp_s"] by 1 + r / 3 (without activation
    memory by `physics.flat_recompute_factor`, as before). Returns (memory, r shown: 0 without activation memory)
    r depends on the state, so on Z, the precision and T, class decisions only, never on n, H or R."""
    a = s.assumptions
    if not a.activation_memory or s.is_moe:     # MoE: its state under global EP depends on n (see `throughput`)
        out["t_comp_s"] = out["t_comp_s"] * physics.flat_recompute_factor(a)
        return state, np.zeros(b.nodes.shape)
    hidden = s.hidden_size if s.hidden_size is not None else timing.hidden_size(s.params, a.hidden_size_coefficient)
    groups, seq = _activation_shape(s)
    kept, redone, working = physics.replica_activation_parts_bytes(a, s.active_params, hidden, s.local_batch_tokens,
                                                                   b.precision, groups, seq)
    share = physics.recompute_share(a, state, kept, redone, working, s.memory_bytes)
    out["t_comp_s"] = out["t_comp_s"] * physics.recompute_compute_factor(share)
    return state + physics.recomputed_activation_bytes(kept, redone, working, share), share * np.ones(b.nodes.shape)


def _sharded_step(s: Setting, b: PlanBatch, out: dict[str, np.ndarray], t_ep, z) -> np.ndarray:
    """Inner step t_comp + t_ep, or for dtplan's ZeRO-3 replicas of Z > 1 nodes
    `physics.zero3_step_s` over the regional link + t_ep; such a node's payload becomes its shard's,
    P / Z of the model's (updates out["payload_bits"])."""
    sharded = z > 1
    t_step = out["t_comp_s"] + t_ep
    if sharded.any():
        t_fsdp = physics.zero3_comm_s(s.assumptions, s.params, b.precision, z, s.regional_bps, s.regional_rtt_s)
        t_step = np.where(sharded, physics.zero3_step_s(out["t_comp_s"], z, t_fsdp) + t_ep, t_step)
        out["payload_bits"] = np.where(sharded, out["payload_bits"] / z, out["payload_bits"])
    return t_step


def _wan_sync(s: Setting, payload, parties):
    base = physics.sync_base_s(s.assumptions, payload, parties, s.wan_up_bps, s.wan_down_bps, s.wan_rtt_s)
    f = _per_run(lambda g: straggler_factor(g, s.assumptions), parties)
    return base, f, base * f


RUN_MIN = 64      # `_per_run`: fewer rows are computed row by row
RUN_SHARE = 4     # `_per_run` shares where the runs are at most 1 / RUN_SHARE of the rows


def _per_run(fn, *operands):
    """fn(*operands) of an elementwise fn, computed once per run of consecutive rows equal bit for bit in
    every operand that varies along the result's first axis, and repeated over the run's rows (issue 27
    item 5: a box's children cut along H or R share n1, so the branch and bound's groups G = floor(n1 / k)
    come in runs, as do the stages S of the pipe rows' probe, in grid order).

    The same doubles: an operand varies along the first axis of the broadcast result only where it has the
    result's number of dimensions and more than one row (the others broadcast unchanged to every row); the
    rows of a run have the same bits in every such operand (floats compared as integers: 0.0 and -0.0, and
    NaNs, told apart), so an elementwise fn (numpy ufuncs and np.where of the operands and scalars: each
    element reads only the operands' elements at its position) gives each row of a run the bits of the run's
    first row. Shared only where there are at least RUN_MIN rows and at most one run in RUN_SHARE rows; else
    fn(*operands) (tests/test_per_run.py compares both with fn of every row)."""
    xs = [np.asarray(x) for x in operands]
    nd = max(x.ndim for x in xs)
    rows = [j for j, x in enumerate(xs) if nd and x.ndim == nd and x.shape[0] > 1]
    n = xs[rows[0]].shape[0] if rows else 0
    if n < RUN_MIN or any(xs[j].shape[0] != n for j in rows):
        return fn(*xs)
    new = np.zeros(n, bool)
    new[0] = True
    for j in rows:
        x = xs[j].reshape(n, -1)
        x = x.view(f"i{x.itemsize}") if x.dtype.kind == "f" else x
        new[1:] |= (x[1:] != x[:-1]).any(axis=1)
    starts = np.flatnonzero(new)
    if starts.size * RUN_SHARE > n:
        return fn(*xs)
    out = fn(*(x[starts] if j in rows else x for j, x in enumerate(xs)))
    return np.repeat(out, np.diff(np.append(starts, n)), axis=0)


def _outer(s: Setting, block, t_sync, streaming, last_micro_batch_compute_s, h, t_step, t_frag):
    """Outer step: with streaming max(block, t_sync), or under dtplan's fragment model
    `physics.streaming_outer_s`; without, block + the sync's exposed part (all of it unless the
    dtplan overlap term is on: `physics.exposed_sync_s`)."""
    a = s.assumptions
    if not a.dp_overlap and not physics.fragments_on(a):
        return timing.outer_time_s(block, t_sync, streaming)
    exposed = physics.exposed_sync_s(a, t_sync, physics.overlap_window_s(a, last_micro_batch_compute_s))
    w_frag = fragment_window.fragment_backward_window_s(a, last_micro_batch_compute_s)
    return np.where(streaming, physics.streaming_outer_s(a, h, t_step, t_sync, t_frag, w_frag), block + exposed)


def flat(s: Setting, b: PlanBatch) -> dict[str, np.ndarray]:
    """A. Flat DiLoCo: G = N replicas of the whole model, one WAN sync every H steps.

    t_step = t_comp (+ t_ep); t_sync = t_wan(N); outer = max(H t_step, t_sync) with
    streaming, the sum without; tokens per outer step B N H. N = 1 is local training:
    the outer step is H t_comp and t_sync is reported but never charged.

    dtplan's ZeRO-3 decision (zero_shards Z > 1): a replica is Z co-located nodes sharding its
    state (P beta / Z per node), G = floor(N / Z) replicas; t_step = `physics.zero3_step_s`
    over the regional link; each node syncs its own shard, P / Z of the payload, with the same
    shard of the other G - 1 replicas over the WAN; tokens per outer step B G H.
    """
    out = _common(s, b)
    n = _f(b.nodes)
    h = _f(b.inner_steps)
    z = _f(b.zero_shards)
    sharded = z > 1
    g = np.where(sharded, np.floor(n / z), n)
    degree, t_ep = _expert_parallel(s, b, b.group_size)
    state, share = _replica_memory(s, b, out, _data_parallel_state(s, b, degree) / z)
    t_step = _sharded_step(s, b, out, t_ep, z)
    base, f, t_sync = _wan_sync(s, out["payload_bits"], g)
    block = h * t_step
    t_frag = physics.fragment_sync_s(s.assumptions, base, f, s.wan_rtt_s)
    outer = np.where(g > 1, _outer(s, block, t_sync, b.streaming, out["t_comp_s"] / z, h, t_step, t_frag), block)
    out.update(_zero_pipeline(out["t_comp_s"], share), t_ep_s=t_ep, t_step_s=t_step,
               t_sync_base_s=base, f_sync=f, t_sync_s=t_sync, **_no_regional(n),
               compute_block_s=block, outer_time_s=outer,
               tokens_per_outer=s.local_batch_tokens * g * h * throughput_fraction(s.assumptions),
               groups=g, replicas=g, h_eff=h, eta_activation=np.ones_like(n),
               state_bytes_per_node=state, synchronised=(g > 1).astype(float))
    return out


def hierarchical(s: Setting, b: PlanBatch, fixed: dict[str, np.ndarray] | None = None) -> dict[str, np.ndarray]:
    """A'. Hierarchical DiLoCo: groups of k co-located nodes, G = floor(N / k) groups.

    Every H steps a regional sync t_reg = (2 v / bw_reg + lat_reg) f(k); every R
    regional cycles a global sync among group leaders t_glob = t_wan(G). Streaming:
    c_reg = max(H t_step, t_reg), c_glob = max(R c_reg, t_glob); without: sums.
    Tokens per global cycle B N H R; H_eff = H sqrt(R); replicas K = N.
    Needs G >= 2 (the reference degenerates to flat below that; the evaluator rejects it).

    dtplan's ZeRO-3 decision inside the groups (zero_shards Z > 1, Z dividing k, k / Z >= 2): a
    replica is Z nodes of a group sharding its state (P beta / Z per node), K = floor(N / Z)
    replicas; t_step = `physics.zero3_step_s` over the regional link (as flat ZeRO-3); each node
    syncs only its shard, P / Z of the payload: regionally with the same shard of the group's
    other k / Z - 1 replicas (straggler factor f(k / Z)), globally, as one of the group's Z shard
    leaders, with the same shard of the other G - 1 groups; tokens per global cycle B K H R.

    The fields that read only the class (`hierarchical_class_parts`) and those that read n, H or R
    (`hierarchical_plan_parts`) are computed apart. `fixed`: the plans' class parts when the caller has
    them (the branch and bound computes them once per class: `planner.solvers.bnb._corner_throughput`).
    """
    fixed = hierarchical_class_parts(s, b) if fixed is None else fixed
    plan = hierarchical_plan_parts(s, b, fixed)
    return {key: plan[key] if key in plan else fixed[key] for key in HIERARCHICAL_FIELDS}


WAN_SYNC_FIELDS = ("t_sync_base_s", "f_sync", "t_sync_s")     # `hierarchical_plan_parts`' `wan`

# `hierarchical`'s fields in the order it returns them
HIERARCHICAL_FIELDS = ("t_comp_s", "payload_bits", "node_mfu", "step_compute_s", "step_bubble_s", "step_link_s",
                       "step_link_straggler_s", "f_pipeline", "activation_bits", "bubble_fraction", "recompute_share",
                       "t_ep_s", "t_step_s", "t_sync_base_s", "f_sync", "t_sync_s", "t_regional_base_s", "f_regional",
                       "t_regional_s", "regional_cycle_s", "compute_block_s", "outer_time_s", "tokens_per_outer",
                       "groups", "replicas", "h_eff", "eta_activation", "state_bytes_per_node", "synchronised")
# the fields `hierarchical_plan_parts` gives (they read n, H or R); `hierarchical` takes the others,
# HIERARCHICAL_CLASS_FIELDS, from `hierarchical_class_parts` as they are (tests/test_class_parts.py)
HIERARCHICAL_PLAN_FIELDS = WAN_SYNC_FIELDS + ("regional_cycle_s", "compute_block_s", "outer_time_s", "tokens_per_outer",
                                              "groups", "replicas", "h_eff", "eta_activation", "synchronised")
HIERARCHICAL_CLASS_FIELDS = tuple(k for k in HIERARCHICAL_FIELDS if k not in HIERARCHICAL_PLAN_FIELDS)


def hierarchical_class_parts(s: Setting, b: PlanBatch) -> dict[str, np.ndarray]:
    """The fields of `hierarchical` that read the plan's class decisions (precision, group size k, ZeRO-3
    shards Z, compression, the expert-parallel scope) and never its node count n, H or R, one value per
    plan (every field `hierarchical_plan_parts` does not give), unless experts are sharded globally (EP
    degree = N: the EP latency and the node's state then read n; a caller that computes these once per
    class must not use them for such plans).

    Why n, H and R are not read: the inner step's compute, the payload and the MFU (`_common`) read the
    setting, the precision and the compression; the node's state and recomputation (`_data_parallel_state`,
    `_replica_memory`) the precision, Z and the EP degree (k under regional EP, 1 without EP); the ZeRO-3
    step and its shard of the payload (`_sharded_step`) Z; the regional sync the payload and k / Z; the
    pipeline fields are those of no pipeline (`_zero_pipeline`)."""
    out = _common(s, b)
    k = _f(b.group_size)
    z = _f(b.zero_shards)
    degree, t_ep = _expert_parallel(s, b, k)
    state, share = _replica_memory(s, b, out, _data_parallel_state(s, b, degree) / z)
    t_step = _sharded_step(s, b, out, t_ep, z)
    f_reg = straggler_factor(np.where(z > 1, k / z, k), s.assumptions)
    reg_base = timing.regional_sync_base_s(out["payload_bits"], s.regional_bps, s.regional_rtt_s)
    out.update(_zero_pipeline(out["t_comp_s"], share), t_ep_s=t_ep, t_step_s=t_step, t_regional_base_s=reg_base,
               f_regional=f_reg, t_regional_s=reg_base * f_reg, state_bytes_per_node=state)
    return out


def hierarchical_plan_parts(s: Setting, b: PlanBatch, fixed, wan=None) -> dict[str, np.ndarray]:
    """The fields of `hierarchical` that read n, H or R, from the plans and their class parts `fixed`
    (`hierarchical_class_parts`, or any mapping of them: only t_step_s, payload_bits and t_regional_s
    are read). `wan`: (t_sync_base_s, f_sync, t_sync_s) of plans with the same classes and node counts, row
    by row, when the caller has them (the branch and bound's two corners of a box share n1): the WAN sync
    among the groups reads only the class's payload and G = floor(N / k), never H or R, elementwise."""
    n = _f(b.nodes)
    k = _f(b.group_size)
    h = _f(b.inner_steps)
    r = _f(b.regional_rounds)
    z = _f(b.zero_shards)
    g = np.floor(n / np.maximum(k, 1.0))
    replicas = np.where(z > 1, np.floor(n / z), n)
    t_step = fixed["t_step_s"]
    base, f, t_glob = _wan_sync(s, fixed["payload_bits"], g) if wan is None else wan
    c_reg = timing.outer_time_s(h * t_step, fixed["t_regional_s"], b.streaming)
    c_glob = timing.outer_time_s(r * c_reg, t_glob, b.streaming)
    return dict(t_sync_base_s=base, f_sync=f, t_sync_s=t_glob, regional_cycle_s=c_reg,
                compute_block_s=r * h * t_step, outer_time_s=c_glob,
                tokens_per_outer=s.local_batch_tokens * replicas * h * r * throughput_fraction(s.assumptions),
                groups=g, replicas=replicas, h_eff=h * np.sqrt(r), eta_activation=np.ones_like(n),
                synchronised=np.ones_like(n))


def _pipeline(s: Setting, b: PlanBatch, out, link_bps: float, link_rtt_s: float, lean: bool = False, known=None):
    """Pipeline step parts over links of the given bandwidth and latency. Under `pipeline_chunks` 0 the
    interleaved plans' chunk count v is the planner's, chosen here per plan: of the v of
    `physics.chunk_choices` the layers allow, the fastest step among those whose stage fits its node
    (v changes only the step and the stage's memory, so this is each plan's best v for every objective);
    the choice is shown as values.pipeline_chunks. `lean`: of the parts only step_compute_s (`pipeline_probe`;
    the others are computed from the same figures and decide nothing here). `known`: `_chunk_free` figures the
    caller has already (`pp_group_pipeline`'s).

    The interleaved plans are taken apart (`_take_rows`), tried at each v and put back (`_put`); where they are
    one run of consecutive plans (the listing's probe lists them so: `DecisionSpace._probe_over_ca`) they are
    taken as a slice, views instead of copies (issue 27 item 5: ~1 / 4 of a probe's time went to the copies).
    The same doubles: each element is computed from the same operand values in the same operations, and the
    figures tried per v (`_pipeline_at`: the activations held, the recomputed share, the ticks, the step) are
    +, -, *, /, min, max, clip, select and where of them, exact in IEEE arithmetic whatever the arrays' layout
    (tests/test_probe_over_ca.py: the same plans in one run and scattered, bit for bit)."""
    a = s.assumptions
    stages = _f(b.stages)
    hidden = s.hidden_size if s.hidden_size is not None else timing.hidden_size(s.params, a.hidden_size_coefficient)
    if a.pipeline_chunks > 0:
        return _pipeline_at(s, b, out, link_bps, link_rtt_s, hidden, None, lean,
                            _chunk_free(s, b, hidden, stages, known) if known else None)
    fixed = _chunk_free(s, b, hidden, stages, known)
    best = _pipeline_at(s, b, out, link_bps, link_rtt_s, hidden, np.ones(stages.shape), lean, fixed)   # v = 1: 1F1B's
    rows = np.flatnonzero(physics.schedule_codes(a, b.schedule) == physics.INTERLEAVED)
    if rows.size == 0:                       # v changes nothing
        return best
    if rows[-1] - rows[0] + 1 == rows.size:  # one run of plans: a slice (views) selects the same rows
        rows = slice(int(rows[0]), int(rows[-1]) + 1)
    sub, sub_out = _take_rows(b, rows, stages.ndim), {"t_comp_s": out["t_comp_s"][rows]}
    sub_fixed = {k: np.broadcast_to(x, np.broadcast_shapes(np.shape(x), stages.shape))[rows] for k, x in fixed.items()}
    here = _rows_of(best, rows)
    for v, allowed in physics.chunk_choices(physics.model_layers(a, s.active_params, hidden), stages[rows]):
        if v == 1.0 or not np.any(allowed):
            continue
        got = _pipeline_at(s, sub, sub_out, link_bps, link_rtt_s, hidden, np.full(stages[rows].shape, v), lean,
                           sub_fixed)
        fits, fits_here = got[2] <= s.memory_bytes, here[2] <= s.memory_bytes
        here = _where(allowed & ((fits & ~fits_here) | ((fits == fits_here) & (got[0] < here[0]))), got, here)
    return _put(best, rows, here)


def _take_rows(b: PlanBatch, rows: "np.ndarray | slice", ndim: int) -> PlanBatch:
    """`b.take(rows)` of a batch whose fields have one row per plan (`ndim` 1), or of the rows of
    `pipeline_probe_over_ca`'s batch (`ndim` 2: fields of shape (rows, 1) taken, the activation
    compressions, one axis of their own, kept whole)."""
    if ndim == 1:
        return b.take(rows)
    return replace(b, **{f.name: getattr(b, f.name)[rows] for f in fields(b)
                         if np.ndim(getattr(b, f.name)) == ndim})


def _rows_of(r, rows):
    """The parts (t_pp, parts, state, eta_a, c) of the plans at `rows`."""
    return (r[0][rows], {k: np.broadcast_to(x, r[0].shape)[rows] for k, x in r[1].items()}, r[2][rows],
            np.broadcast_to(r[3], r[0].shape)[rows], r[4][rows])


def _put(r, rows, sub):
    """`r` with the plans at `rows` replaced by `sub`'s."""
    out = [np.array(np.broadcast_to(x, r[0].shape), dtype=float) for x in (r[0], r[2], r[3], r[4])]
    for x, y in zip(out, (sub[0], sub[2], sub[3], sub[4])):
        x[rows] = y
    parts = {}
    for k, x in r[1].items():
        parts[k] = np.array(np.broadcast_to(x, r[0].shape), dtype=float)
        parts[k][rows] = sub[1][k]
    return out[0], parts, out[1], out[2], out[3]


def _where(take, got, best):
    """Plan by plan, `got`'s parts where `take`, else `best`'s (t_pp, parts, state, eta_a, c)."""
    parts = {k: np.where(take, got[1][k], best[1][k]) for k in best[1]}
    return (np.where(take, got[0], best[0]), parts, np.where(take, got[2], best[2]), best[3],
            np.where(take, got[4], best[4]))


def _chunk_free(s: Setting, b: PlanBatch, hidden, stages, known=None) -> dict[str, np.ndarray]:
    """The figures of `_pipeline_at` that no chunk count changes: the activations sent per micro-batch (act), the
    links' straggler factor f(S), the stage's training state and eta_A (they read S, Ca, the schedule and the
    precision): computed once per plan by `_pipeline`, for every v it tries (issue 27 item 5). `known`: those of
    act, f_pp and eta_a the caller has, each the value of the expression below for the plans of `b` (the same
    function of the same operands: `pp_group_pipeline`'s `known`), taken as given instead of worked again."""
    a = s.assumptions
    known = known or {}
    act = known["act"] if "act" in known else \
        timing.activation_bits(s.local_batch_tokens, hidden, a.activation_bytes(b.precision), b.activation_compression)
    f_pp = known["f_pp"] if "f_pp" in known else _per_run(lambda x: straggler_factor(x, a), stages)
    eta_a = known["eta_a"] if "eta_a" in known else \
        _per_run(lambda ca, x: quality.activation_quality(ca, x, a), b.activation_compression, stages)
    return {"act": act, "f_pp": f_pp, "state": _stage_state(s, b, stages), "eta_a": eta_a}


def _pipeline_at(s: Setting, b: PlanBatch, out, link_bps: float, link_rtt_s: float, hidden, chunks, lean=False,
                 fixed=None):
    """The pipeline step parts at chunk counts `chunks` (None: the profile's pipeline_chunks); `lean`: of the
    parts only step_compute_s (`_pipeline`); `fixed`: the plans' `_chunk_free` figures when computed already."""
    a = s.assumptions
    stages = _f(b.stages)
    fixed = _chunk_free(s, b, hidden, stages) if fixed is None else fixed
    act, f_pp, state = fixed["act"], fixed["f_pp"], fixed["state"]
    kept, redone, working = physics.activation_parts_bytes(a, s.active_params, hidden, s.local_batch_tokens,
                                                           b.precision, stages, b.micro_batches, b.schedule, chunks,
                                                           *_activation_shape(s))
    share = physics.recompute_share(a, state, kept, redone, working, s.memory_bytes)   # dtplan: recomputation
    t_comp = out["t_comp_s"] * physics.recompute_compute_factor(share)
    t_pp, ticks, c, x, k = physics.pipeline_parts_s(a, t_comp, stages, b.micro_batches, act, link_bps,
                                                    link_rtt_s, f_pp, b.schedule, chunks)
    m = _f(b.micro_batches)
    parts = {"step_compute_s": m * c} if lean else _step_parts(s, b, stages, m, c, ticks, k, x, link_rtt_s, f_pp, act,
                                                               share, chunks)
    state = state + physics.recomputed_activation_bytes(kept, redone, working, share)
    return t_pp, parts, state, fixed["eta_a"], c


def _step_parts(s: Setting, b: PlanBatch, stages, m, c, ticks, k, x, link_rtt_s: float, f_pp, act, share, chunks):
    """The parts of a pipeline step beyond its compute m c (`_pipeline_at`): bubble, link time and its
    straggler share, the link's straggler factor, the activations sent, the bubble fraction, the recomputed
    share and (where the planner chooses it) the chunk count."""
    a = s.assumptions
    link = ticks * k * (x + link_rtt_s)
    codes = physics.schedule_codes(a, b.schedule)      # worked once for both tests (it reads a and the schedule)
    gpipe = codes == physics.GPIPE
    with np.errstate(invalid="ignore"):      # a schedule that cannot run its (S, M) has infinite slots (all bubble)
        parts = {"step_compute_s": m * c, "step_bubble_s": np.where(gpipe, (stages - 1.0) * c, (ticks - m) * c),
                 "step_link_s": link, "step_link_straggler_s": link * (f_pp - 1.0), "f_pipeline": f_pp,
                 "activation_bits": _f(act) * np.ones_like(stages),
                 "bubble_fraction": np.where(gpipe, timing.bubble_fraction(stages, b.micro_batches),
                                             np.where(np.isinf(ticks), 1.0, (ticks - m) / ticks)),
                 "recompute_share": share * np.ones_like(stages)}
    if chunks is not None:
        interleaved = codes == physics.INTERLEAVED
        parts["pipeline_chunks"] = np.where(interleaved, chunks, 1.0)
    return parts


def _stage_state(s: Setting, b: PlanBatch, stages) -> np.ndarray:
    """A stage node's training state with its schedule's copy (DualPipe's): P / S beta times the sharding factor
    plus D copies of P / S's weights and gradients; with a stage's experts spread over E > 1 servers
    (`stage_state_shards`, `stage_expert_parallel`: planner/cost/stage_shards.py) the node's own parameters."""
    a = s.assumptions
    state = stage_shards.state_bytes(a, b.precision, s.accelerators_per_node, b.mode, s.is_moe, s.params,
                                     s.active_params, stages)
    if stage_shards.expert_servers(a, s.accelerators_per_node, b.mode, s.is_moe) > 1.0:
        held = stage_shards.copy_params(a, s.accelerators_per_node, b.mode, s.is_moe, s.params, s.active_params)
        return state + physics.schedule_state_bytes(a, held, b.precision, stages, b.schedule)
    groups = tensor_parallel.data_parallel_groups(a, s.accelerators_per_node)     # dtplan: D groups in the node
    return state + groups * physics.schedule_state_bytes(a, s.params, b.precision, stages, b.schedule)


def pp_group(s: Setting, b: PlanBatch, pipe=None) -> dict[str, np.ndarray]:
    """C. PP-group DiLoCo: groups of S co-located nodes each run a GPipe pipeline;
    G = floor(N / S) >= 2 groups run DiLoCo over the WAN.

    t_step = t_pp over the pipeline links; t_sync = t_wan(G); tokens per outer step
    B G H; replicas K = G; eta_A = qa(Ca) ** (2 (S - 1)).

    `pipe`: `pp_group_pipeline` of plans with the same class decisions and node counts as `b`, row by row,
    when the caller computed it already (`planner.solvers.bnb`: a seed at H = 1 and at its own H, the two
    corners of a box): it reads those and never H or R (`pp_group_pipeline`), so it is the pipeline `b`'s
    plans would get, and what follows reads it as computed here (its `_common` dict is copied, not written).
    """
    out, (t_pp, parts, state, eta_a, c) = _pipeline_of_mode(s, b) if pipe is None else (dict(pipe[0]), pipe[1])
    n = _f(b.nodes)
    h = _f(b.inner_steps)
    g = np.floor(n / _f(b.stages))
    base, f, t_sync = _wan_sync(s, out["payload_bits"], g)
    block = h * t_pp
    out.update(parts, t_ep_s=np.zeros_like(n), t_step_s=t_pp,
               t_sync_base_s=base, f_sync=f, t_sync_s=t_sync, **_no_regional(n),
               compute_block_s=block,
               outer_time_s=_outer(s, block, t_sync, b.streaming, c, h, t_pp,
                                   physics.fragment_sync_s(s.assumptions, base, f, s.wan_rtt_s)),
               tokens_per_outer=s.local_batch_tokens * g * h * throughput_fraction(s.assumptions),
               groups=g, replicas=g, h_eff=h, eta_activation=eta_a,
               state_bytes_per_node=state, synchronised=np.ones_like(n))
    return out


def pp_group_pipeline(s: Setting, b: PlanBatch, lean: bool = False, known: dict[str, np.ndarray] | None = None):
    """What `pp_group` computes before it reads the plans' H: `_common` (t_comp, the payload, which reads the
    groups G = floor(N / S), and the MFU) and `_pipeline` over the pipeline links (the step, its parts, the
    stage's memory, eta_A and the last micro-batch's compute, which read the setting and the class decisions S,
    M, the schedule, Ca and the precision: `throughput`'s docstring). So it reads each plan's class decisions
    and node count, never H or R, and elementwise (the rows of the interleaved schedule are picked by S and the
    schedule, plan by plan: `pipeline_probe_over_ca`): plans of the same classes at the same n, or a subset of
    rows (`pp_group_pipeline_rows`), share it. tests/test_shared_corners.py compares `pp_group` with and
    without it bit for bit. `lean`: of the step's parts only step_compute_s (`_pipeline`'s `lean`, as
    `pipeline_probe`): `pp_group` given it returns every field but PIPELINE_PARTS_LEFT, the same doubles (the
    parts left out are worked from the same figures and enter no other field; tests/test_reference_sweep_search.py).
    `known` (with `lean`): of the plans' activations sent per micro-batch ("act", `timing.activation_bits`), the
    pipeline links' straggler factor ("f_pp", `straggler_factor` of S) and eta_A ("eta_a",
    `quality.activation_quality` of Ca and S), those the caller has worked already by these functions on the
    plans' own operands (`planner.reference.sweep_search`: its rows'), so the same doubles; they are taken as
    given instead of worked again (`_chunk_free`; about 20 us a plan warm). Only the caller's claim that they are
    these functions' values on `b` makes the result `pp_group_pipeline`'s: tests/test_pipeline_known.py."""
    if not lean:
        return _pipeline_of_mode(s, b)
    out = _common(s, b)
    return out, _pipeline(s, b, out, *_links(s, b), lean=True, known=known)


# the fields of `pp_group` that a lean `pp_group_pipeline` leaves out (`_step_parts` beyond the step's compute)
PIPELINE_PARTS_LEFT = ("step_bubble_s", "step_link_s", "step_link_straggler_s", "f_pipeline", "activation_bits",
                       "bubble_fraction", "recompute_share")


def pp_group_pipeline_rows(pipe, rows: np.ndarray):
    """`pp_group_pipeline` of the plans at `rows` (an index array), taken from that of all plans."""
    out, parts = pipe
    shape = parts[0].shape
    return {k: np.broadcast_to(v, shape)[rows] for k, v in out.items()}, _rows_of(parts, rows)


def pipeline_wan(s: Setting, b: PlanBatch) -> dict[str, np.ndarray]:
    """B. Pipeline over the WAN: one pipeline of S nodes, no DiLoCo (web app only).

    Every micro-batch crosses the WAN: the pipeline links are the WAN upload bandwidth
    and RTT (as the web app). No sync, so eta_H = eta_C = eta_R = 1; eta_A applies.
    Tokens per step B. The last resort when fewer than two pipeline groups fit.
    """
    out, (t_pp, parts, state, eta_a, _) = _pipeline_of_mode(s, b)
    n = _f(b.nodes)
    h = _f(b.inner_steps)
    zeros = np.zeros_like(n)
    out.update(parts, t_ep_s=zeros, t_step_s=t_pp, payload_bits=zeros,
               t_sync_base_s=zeros, f_sync=np.ones_like(n), t_sync_s=zeros, **_no_regional(n),
               compute_block_s=h * t_pp, outer_time_s=h * t_pp,
               tokens_per_outer=s.local_batch_tokens * h * throughput_fraction(s.assumptions),
               groups=np.ones_like(n), replicas=np.ones_like(n), h_eff=np.ones_like(n), eta_activation=eta_a,
               state_bytes_per_node=state, synchronised=zeros)
    return out


def _pipeline_of_mode(s: Setting, b: PlanBatch):
    """(`_common`, `_pipeline`) of pipeline plans over their mode's links: a pp_group's pipeline links, or
    for a pipeline over the WAN the WAN upload bandwidth and RTT."""
    out = _common(s, b)
    return out, _pipeline(s, b, out, *_links(s, b))


def _links(s: Setting, b: PlanBatch) -> tuple[float, float]:
    """(bandwidth, latency) of the pipeline links of the batch's mode: a pp_group's pipeline links, the WAN
    upload and RTT for a pipeline over the WAN."""
    return (s.pipeline_bps, s.pipeline_rtt_s) if b.mode == "pp_group" else (s.wan_up_bps, s.wan_rtt_s)


PIPELINE_PROBE = ("t_step_s", "step_compute_s", "state_bytes_per_node", "eta_activation")


def pipeline_probe(s: Setting, b: PlanBatch) -> dict[str, np.ndarray]:
    """The fields PIPELINE_PROBE of `pp_group` or `pipeline_wan` plans: the pipeline step, its compute, a
    node's memory and eta_A, computed as those functions compute them (`_pipeline_of_mode`) without the
    sync, outer step and tokens, which do not enter them. Equal to `throughput`'s where no tensor-parallel
    degree is to be chosen (`throughput` is then the mode function itself; the listing asks for these
    fields of every pipe row, `planner.space.scored`)."""
    out = {"t_comp_s": np.broadcast_to(inner_step_compute_s(s, b), b.nodes.shape).astype(float)}    # `_common`'s
    t_pp, parts, state, eta_a, _ = _pipeline(s, b, out, *_links(s, b), lean=True)
    return {"t_step_s": t_pp, "step_compute_s": parts["step_compute_s"], "state_bytes_per_node": state,
            "eta_activation": eta_a}


def pipeline_probe_over_ca(s: Setting, b: PlanBatch, ca) -> dict[str, np.ndarray]:
    """`pipeline_probe` of the plans of `b` at each activation compression of `ca`: each field of shape
    (b.size, len(ca)), [i, j] the value `pipeline_probe` gives plan i with Ca = ca[j] (issue 27 item 5: the
    listing probes every (S, Ca, schedule, M) pipe row; four Ca cost four times the work of one).

    Why the same doubles: every figure of `_pipeline` is elementwise in the plans' fields (numpy ufuncs,
    np.where, np.select, np.interp), and the plan-level decisions it takes (the rows of the interleaved
    schedule, whether a chunk count is allowed anywhere) read S and the schedule only. Of the fields only the
    activations sent (act) and eta_A read Ca. So `b`'s fields are given as columns (one row per plan) and
    Ca as a row: what reads no Ca (the stage's state, the activations held, the recomputed share, the ticks,
    the compute per micro-batch) is computed once per plan, and what reads it (the link time, so t_pp and the
    chunk count chosen by it, and eta_A) is broadcast over Ca, each element from the very operands the plan
    with that Ca has, in the same operations. tests/test_probe_over_ca.py compares it with `pipeline_probe`
    of every (plan, Ca) bit for bit."""
    column = lambda x: np.asarray(x)[:, None]
    c2 = replace(b, **{f.name: column(getattr(b, f.name)) for f in fields(b)
                       if isinstance(getattr(b, f.name), np.ndarray) and f.name != "activation_compression"},
                 activation_compression=np.asarray(ca, dtype=float))
    got = pipeline_probe(s, c2)
    shape = (b.size, np.size(ca))
    return {k: np.broadcast_to(v, shape) for k, v in got.items()}


def _zero_pipeline(t_comp, recompute_share) -> dict[str, np.ndarray]:
    zeros = np.zeros_like(t_comp)
    return {"step_compute_s": t_comp, "step_bubble_s": zeros, "step_link_s": zeros,
            "step_link_straggler_s": zeros, "f_pipeline": np.ones_like(t_comp),
            "activation_bits": zeros, "bubble_fraction": zeros, "recompute_share": recompute_share}


def _no_regional(n) -> dict[str, np.ndarray]:
    zeros = np.zeros_like(n)
    return {"t_regional_base_s": zeros, "f_regional": np.ones_like(n), "t_regional_s": zeros,
            "regional_cycle_s": zeros}


MODE_FUNCTIONS = {"flat": flat, "hierarchical": hierarchical, "pp_group": pp_group, "pipeline_wan": pipeline_wan}


def throughput(s: Setting, b: PlanBatch) -> dict[str, np.ndarray]:
    """The mode's per-step and per-outer-step quantities for every plan of the batch.

    With `search_tensor_parallel` (dtplan) the node is T-way tensor parallel and A / T data parallel
    (planner/cost/tensor_parallel.py); with T the planner's, each plan gets, of the degrees
    `tensor_parallel.choices` allows, the fastest inner step t_step among those whose state fits the
    node (ties and no fit: the larger T, the least memory), shown as values.tensor_parallel.

    Why every solver stays exact and every bound of the branch and bound stays valid: the choice is a
    minimum over a finite set taken inside the cost function, before any solver sees a value, so bnb,
    exhaustive and the MIP's tables (all built from `throughput`) score each plan at the same T. At a
    fixed T, t_comp and the node's state depend on the setting, the precision and the plan's class
    decisions (S, M, schedule, chunk count, Z) only, and so does t_step (its other parts, the pipeline
    links, the stragglers of S and the ZeRO-3 collective, are class decisions too); never on the node
    count n, the sync interval H or the regional rounds R (with `activation_memory`, the activations and the
    `fit` share r read T, S, M, the schedule, v, Z and the precision too, and the same holds; dense models
    only: a mixture-of-experts
    model, whose state under global expert parallelism depends on n, keeps its fixed T). So the chosen
    T is one T for the whole class, and every plan of a class is scored by the same formulas as with
    that T fixed: the monotonicity in n, H and R that the bounds use (docs/planner.md, "why the bound
    holds") holds within the class as it does at a fixed T. Bounds that read no plan of the class:
    S_min = ceil(P beta / V) (planner/space.py) assumes the state P beta / S, which is the state at
    D = 1 and below the state at every other degree (`tensor_parallel.state_factor` >= 1), so it stays
    a lower bound on the stages of any plan that fits."""
    fn = MODE_FUNCTIONS[b.mode]
    degrees = tensor_parallel.choices(s.assumptions, s.accelerators_per_node, s.is_moe)
    if not degrees:
        return fn(s, b)
    best = None
    for t in sorted(degrees, reverse=True):       # the largest (least memory) first: it keeps ties
        got = fn(s.replace(assumptions=tensor_parallel.at_degree(s.assumptions, t)), b)
        got["tensor_parallel"] = np.full(b.nodes.shape, t)
        if best is None:
            best = got
            continue
        fits, fits_best = got["state_bytes_per_node"] <= s.memory_bytes, best["state_bytes_per_node"] <= s.memory_bytes
        take = (fits & ~fits_best) | (fits & (got["t_step_s"] < best["t_step_s"]))
        best = {k: np.where(take, got[k], best[k]) for k in best}
    return best
