"""The terms of the `dtplan` assumption profile (issue 14; docs/physics.md).

Each term is one function with its formula and source, switched on by a field of
`Assumptions` whose default leaves the reference model unchanged (the hooks in
modes.py, timing.py and evaluate.py call the reference expression when the switch is
off, so every other profile scores bit for bit as before).

Terms and the properties the exact search needs (docs/planner.md, "why the bound holds"):

- achieved MFU per accelerator (`resolve_mfu`): a constant of the setting.
- ring all-reduce with concurrent up/down links, and all-gather (`sync_base_s`): grows
  with the number of parties G, so q = outer time / (H R) stays non-decreasing in n.
- overlap of the sync with the last backward pass (`exposed_sync_s`): the exposed part
  max(t_sync - window, t_sync / buckets) does not depend on H and grows with t_sync, so
  q = t_step + exposed / H stays non-increasing in H and non-decreasing in n.
- per-stage payloads, compressor payloads (`payload_bits`): depend on S and Cr only
  (class decisions), not on n, H or R.
- pipeline schedules (`pipeline_ticks`, DualPipe's second copy `schedule_state_bytes`): depend on S, M,
  the precision and the profile only.
- the interleaved chunk count v (`chunk_choices`, chosen per plan in modes._pipeline): the least
  step of a few v, each a function of S, M and the profile, so the same (class decisions only).
- failures (`failure_goodput`): evaluated once per setting at the fleet's size (a plan
  never uses more nodes than the fleet, and goodput falls with nodes, so this is a lower
  bound of each plan's own goodput); a scalar like fleet.goodput, so no bound changes.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np

from planner.cost import exchange, tensor_parallel, timing
from planner.cost.assumptions import MODELS_DIR, PIPELINE_SCHEDULES, Assumptions
from planner.schema.errors import InputError, Problem

if TYPE_CHECKING:
    from planner.cost.compute.experts import ExpertFabric
    from planner.cost.compute.shape import ModelShape

# The per-layer compute model (planner/cost/compute) is imported by the functions that use it, where
# `mfu_from_compute_model`, a `model_shape` preset or the expert fabric asks for it: a profile that uses none
# of them (the reference's, for one) does not load its modules (~35 million instructions; docs/speed.md,
# "Start-up time").

MFU_TABLE = MODELS_DIR / "mfu.json"
SECONDS_PER_HOUR = 3600.0
MIN_GOODPUT = 1e-9    # a fleet that cannot make progress (goodput 0) is scored at this, and warned about

# Settings shown at scale by published decentralized runs (the "demonstrated" range).
DEMONSTRATED_MAX_COMPRESSION = 150.0   # Covenant-72B: about 146x pseudo-gradient compression (SparseLoCo)
DEMONSTRATED_MAX_INNER_STEPS = 500     # OpenDiLoCo 1.1B (arXiv 2407.07852): H = 500
DEMONSTRATED_MAX_REPLICAS = 16         # MuLoCo 15B with K = 16 (arXiv 2505.23725); INTELLECT-1: 14 nodes


# -- 1. achieved MFU per accelerator ------------------------------------------------------


@lru_cache(maxsize=None)
def mfu_table() -> dict:
    """models/mfu.json: accelerator -> {precision: u, source, fitted_on?}."""
    return json.loads(MFU_TABLE.read_text())["accelerators"]


def table_mfu(accelerator: str, moe: bool = False) -> dict[str, float] | None:
    """The table's u by precision for an accelerator ('NVIDIA H100 SXM5 80GB'), or None.

    With `moe` (a mixture-of-experts model: active parameters below total), the entry's `moe`
    figures replace the dense ones at the precisions they list (Megatron-Bridge's DeepSeek-V3
    on H100 at fp8: 0.1421 of the fp8 peak against 0.371 for dense Llama 3.1 405B, both on the
    6 P_act basis); the other precisions keep the dense figure."""
    entry = mfu_table().get(accelerator)
    if entry is None:
        return None
    row = {p: float(entry[p]) for p in ("fp16", "fp8", "fp4") if p in entry}
    if moe:
        row |= {p: float(entry["moe"][p]) for p in ("fp16", "fp8", "fp4") if p in entry.get("moe", {})}
    return row


def resolve_mfu(a: Assumptions, accelerator: str, explicit: bool, moe: bool = False,
                model: tuple[float, float, float | None] | None = None) -> Assumptions:
    """The assumptions with u taken from models/mfu.json when `mfu_from_table` is on, the
    accelerator is in the table and the instance gives no explicit MFU (`explicit`); a
    mixture-of-experts model (`moe`) takes the entry's MoE figures where it has them. Then, with
    `mfu_from_compute_model` on and the model given as (params, active params, hidden size or
    None), u at each precision the accelerator has compute figures for comes from the compute model
    (`compute_model_mfu`), replacing the table's: for a dense model always, for a mixture-of-experts
    model when `model_shape` names a preset with its experts (the standard aspect ratios are dense;
    without one it keeps the table's MoE figure). The MoE case includes the expert all-to-all
    (planner/cost/compute/experts.py).

    u at fp16 replaces `mfu`; u at fp8/fp4 (of that precision's peak) set `mfu_fp8`/`mfu_fp4`.
    Source: the table's entries (each with its own source), or planner/cost/compute."""
    if explicit:
        return a
    if a.mfu_from_table:
        row = table_mfu(accelerator, moe)
        if row is not None:
            changes = {"mfu": row.get("fp16", a.mfu)}
            changes |= {f"mfu_{p}": row[p] for p in ("fp8", "fp4") if p in row}
            a = a.replace(**changes)
    if model is not None and uses_compute_model(a, moe):
        row = compute_model_mfu(a, accelerator, *model)
        if row:
            a = a.replace(**{("mfu" if p == "fp16" else f"mfu_{p}"): u for p, u in row.items()})
    return a


def resolve_tensor_parallel(a: Assumptions, accelerator: str, moe: bool,
                            model: tuple[float, float, float | None] | None, explicit: bool = False) -> Assumptions:
    """With `search_tensor_parallel` on and T the planner's (dense models), the degrees the model's heads
    allow (`tensor_parallel.degrees_for_heads` of `compute_model_shape`) with u at each: from the compute
    model at that T where it prices this accelerator and the instance sets no MFU, else the resolved u
    (the table's or the instance's, the same at every T). Stored as `tensor_parallel_utilisation`,
    (T, precision, u) triples, for `tensor_parallel.at_degree`; unchanged otherwise."""
    if not tensor_parallel.searched(a) or moe or model is None:
        return a
    params, active, hidden = model
    shape = compute_model_shape(a, params, hidden)
    precisions = () if explicit else compute_model_precisions(a, accelerator, moe)
    rows = []
    for t in tensor_parallel.degrees_for_heads(shape.heads, shape.kv_heads):
        at_t = compute_model_mfu(a.replace(tensor_parallel=t), accelerator, params, active, hidden) if precisions else {}
        rows += [(t, p, float(at_t.get(p, a.mfu_for(p)))) for p in ("fp16", "fp8", "fp4")]
    return a.replace(tensor_parallel_utilisation=tuple(rows))


def compute_model_precisions(a: Assumptions, accelerator: str, moe: bool) -> tuple[str, ...]:
    """The precisions at which `resolve_mfu` takes u from the compute model for this accelerator
    (none when the switch is off, for mixture-of-experts models without a shape preset of their experts,
    or without compute figures)."""
    if not uses_compute_model(a, moe):
        return ()
    from planner.cost.compute.roofline import chip_for
    chip = chip_for(accelerator)
    return tuple(chip.matmul_efficiency) if chip is not None else ()


def uses_compute_model(a: Assumptions, moe: bool) -> bool:
    """Whether u comes from the compute model: the switch on, and for a mixture-of-experts model a
    `model_shape` preset that has its experts (the default shapes are dense)."""
    if not a.mfu_from_compute_model:
        return False
    if not moe:
        return True
    from planner.cost.compute.shape import preset_shape
    return bool(a.model_shape) and preset_shape(a.model_shape).moe_layers > 0


def compute_model_shape(a: Assumptions, params: float, hidden: float | None) -> ModelShape:
    """The model's shape: the preset `model_shape` names, else the standard aspect ratios of
    planner/cost/compute/shape.py from P and h (h = 0.03 sqrt(P) when not given); `sequence_tokens`
    replaces the sequence length when set."""
    from planner.cost.compute.shape import default_shape, preset_shape
    if a.model_shape:
        shape = preset_shape(a.model_shape)
    else:
        h = hidden if hidden is not None else float(timing.hidden_size(params, a.hidden_size_coefficient))
        shape = default_shape(params, h)
    return shape.with_sequence(a.sequence_tokens) if a.sequence_tokens > 0 else shape


def compute_model_mfu(a: Assumptions, accelerator: str, params: float, active_params: float,
                      hidden: float | None) -> dict[str, float]:
    """u by precision from the compute model (planner/cost/compute/utilisation.py) for the
    accelerator's compute figures (models/accelerators/compute), {} when it has none: a micro-batch
    of s x micro_batch_sequences tokens on a tensor-parallel group of max(tensor_parallel, 1); a
    mixture-of-experts shape with its all-to-all over `expert_fabric`; the run's recipe
    (`high_precision_head`, `recompute_mla_up`: planner/cost/compute/ops.py Recipe)."""
    from planner.cost.compute.ops import Recipe
    from planner.cost.compute.roofline import chip_for
    from planner.cost.compute.utilisation import node_utilisation
    chip = chip_for(accelerator)
    if chip is None:
        return {}
    shape = compute_model_shape(a, params, hidden)
    m = shape.sequence_tokens * a.micro_batch_sequences
    ep = a.expert_parallel_degree if a.expert_parallel_degree > 0 else max(shape.experts, 1)
    fabric = expert_fabric(a, ep) if shape.moe_layers else None
    if fabric is not None and fabric.overlap and a.communication_sms >= chip.sms:
        raise InputError([Problem("assumptions.constants.communication_sms",
                                  f"must be below the accelerator's {chip.sms} SMs (those left compute), "
                                  f"got {a.communication_sms:g}")])
    recipe = Recipe(high_precision_head=a.high_precision_head, recompute_mla_up=a.recompute_mla_up)
    return {p: node_utilisation(shape, chip, p, active_params, m, max(a.tensor_parallel, 1.0), ep, fabric, recipe)
            for p in chip.matmul_efficiency}


def expert_fabric(a: Assumptions, expert_parallel: float) -> ExpertFabric:
    """The expert all-to-all's setting from the assumptions (planner/cost/compute/experts.py): E GPUs,
    `accelerators_per_server` per server on `intra_node_gb_per_s` of NVLink, `scale_out_gb_per_s` across
    servers, node-limited routing, dispatch bytes, overlap and the SMs it reserves; the token permutation and
    the load-imbalance floor it adds to the compute."""
    from planner.cost.compute.experts import ExpertFabric
    return ExpertFabric(expert_parallel=expert_parallel, gpus_per_server=a.accelerators_per_server,
                        intra_gb_per_s=a.intra_node_gb_per_s, scale_out_gb_per_s=a.scale_out_gb_per_s,
                        node_limit=a.expert_node_limit, dispatch_bytes=a.expert_dispatch_bytes,
                        overlap=a.expert_a2a_overlap, communication_sms=a.communication_sms,
                        permutation=a.expert_permutation, imbalance=a.expert_imbalance)


# -- 4. sync over the links -------------------------------------------------------------------


def sync_base_s(a: Assumptions, payload, parties, up_bps: float, down_bps: float, latency_s: float):
    """One WAN exchange of a payload of v bits among G parties, before the straggler factor.

    reference (both switches off): v / up + v / down + lat.
    all_reduce with concurrent links: a ring all-reduce (reduce-scatter then all-gather)
        sends and receives 2 (G - 1) / G v per node, at the same time on the up and the down
        link: max(w / up, w / down) + lat, w = 2 (G - 1) / G v (Patarasuk & Yuan 2009,
        "Bandwidth optimal all-reduce algorithms for clusters of workstations").
    all_gather (each peer sends its compressed pseudo-gradient to every other over peer links):
        up v, down (G - 1) v; max of the two times with concurrent links, their sum without; + lat.
    object_store (Covenant/Templar: each peer writes its payload once to a bucket and reads those
        of the round's chosen peers): `exchange.object_store_sync_s`, with the store's throughput,
        its request latency and the upload-then-download order of the run.
    Non-decreasing in G in every case (G >= 1).
    """
    if a.sync_pattern == "object_store":
        return exchange.object_store_sync_s(a, payload, parties, up_bps, down_bps, latency_s)
    v = np.asarray(payload, dtype=float)
    g = np.maximum(np.asarray(parties, dtype=float), 1.0)
    if a.sync_pattern == "all_gather":
        up, down = v / up_bps, (g - 1.0) * v / down_bps
    elif a.concurrent_up_down:
        w = 2.0 * (g - 1.0) / g * v
        up, down = w / up_bps, w / down_bps
    else:
        return timing.wan_sync_base_s(payload, up_bps, down_bps, latency_s)
    return (np.maximum(up, down) if a.concurrent_up_down else up + down) + latency_s


def overlap_window_s(a: Assumptions, last_micro_batch_compute_s):
    """Compute the sync can hide behind: the backward pass of the last micro-batch of the
    outer step, backward_share x its compute (backward = 4 of the 6 P FLOP per token, so
    2/3). Gradients of a bucket are final once that bucket's part of the last backward ran,
    and with an element-wise inner optimizer so is its pseudo-gradient (PyTorch DDP bucketing,
    Li et al. 2020, arXiv 2006.15704; Megatron overlaps the gradient reduce-scatter the same
    way, only with the last micro-batch)."""
    return a.backward_share * np.asarray(last_micro_batch_compute_s, dtype=float)


def exposed_sync_s(a: Assumptions, t_sync_s, window_s):
    """The part of a blocking sync that is not hidden: max(t_sync - window, t_sync / buckets)
    (the last bucket can only start when the backward pass ends). t_sync itself without
    `dp_overlap`. Non-decreasing in t_sync, independent of H."""
    t = np.asarray(t_sync_s, dtype=float)
    if not a.dp_overlap:
        return t
    return np.maximum(t - np.asarray(window_s, dtype=float), t / a.dp_overlap_buckets)


def fragment_sync_s(a: Assumptions, t_sync_base_s, straggler, latency_s):
    """Time to sync one of p fragments (Streaming DiLoCo, Douillard et al. 2025, arXiv 2501.18512):
    every sync pattern above is linear in the payload plus one latency, so a payload of v / p
    takes t_frag = ((t_base - lat) / p + lat) f, f the same straggler factor. p = 1: t_sync.
    (object_store: its request latencies, `exchange_request_latency_s`, count here with the transfer
    and are divided by p too, so with p > 1 a fragment is charged less than its own requests take.)"""
    base = np.asarray(t_sync_base_s, dtype=float)
    p = a.streaming_fragments
    return ((base - latency_s) / p + latency_s) * np.asarray(straggler, dtype=float)


def fragments_on(a: Assumptions) -> bool:
    """Whether the fragment model of a streaming sync is on (more than one fragment, or a bounded
    overlap window)."""
    return a.streaming_fragments > 1 or a.streaming_overlap_steps > 0


def streaming_outer_s(a: Assumptions, inner_steps, t_step_s, t_sync_s, t_frag_s, backward_window_s=0.0):
    """Outer step with a streaming (overlapped) sync.

    Whole model, unbounded overlap (the reference, `fragments_on` false): max(H t_step, t_sync).
    Fragments (Streaming DiLoCo, arXiv 2501.18512): the model is synced in p fragments, one every
    H / p inner steps, each of payload v / p; a fragment's result is needed tau inner steps after its
    sync starts (tau = `streaming_overlap_steps`, 0 meaning the whole interval H / p), so each
    fragment stalls the workers by max(0, t_frag - tau t_step):
        outer = H t_step + p max(0, t_frag - tau_eff t_step),  tau_eff = min(tau, H / p).
    With p = 1 and tau = H this is max(H t_step, t_sync) again. `backward_window_s` w (0 unless
    `fragment_backward_overlap`: planner/cost/fragment_window.py) widens each fragment's window by
    the backward pass that produces it, but never beyond the interval between two fragments, H t_step / p:
    the fragments share one link, so a window longer than that interval would let the p transfers of an
    outer step take more than the outer step (the link carrying more than its bandwidth). So
        stall = max(0, t_frag - min(tau_eff t_step + w, H t_step / p)),
    and when t_frag exceeds the interval the link is the bottleneck: outer = p t_frag (a queue of
    transfers in steady state, as the simulator on the Streaming DiLoCo author's site has it). Without w
    the cap changes nothing (tau_eff <= H / p). Per inner step it is t_step + p stall / H: non-increasing
    in H (the window does not shrink as H grows), non-decreasing in t_frag.

    Example: H = 100, p = 100, tau = 1, t_step = 0.5 s, w = 1/3 s, t_frag = 0.75 s: the window is
    min(0.5 + 1/3, 0.5) = 0.5 s, each fragment stalls 0.25 s, outer = 50 + 25 = 75 s = p t_frag.
    """
    h = np.asarray(inner_steps, dtype=float)
    t = np.asarray(t_step_s, dtype=float)
    if not fragments_on(a):
        return np.maximum(h * t, np.asarray(t_sync_s, dtype=float))
    p = a.streaming_fragments
    window = h / p if a.streaming_overlap_steps <= 0 else np.minimum(a.streaming_overlap_steps, h / p)
    window_s = np.minimum(window * t + backward_window_s, h * t / p)
    return h * t + p * np.maximum(0.0, np.asarray(t_frag_s, dtype=float) - window_s)


def tensor_parallel_s(a: Assumptions, active_params, hidden, local_batch_tokens, precision: str,
                      accelerators_per_node: int):
    """Time a node spends per inner step in tensor-parallel collectives over its interconnect
    (0 unless `tensor_parallel` T > 1; the table's u already includes its own runs' TP, so with this
    term on u should be the accelerator's compute-only utilisation, given as assumptions.mfu).

    Megatron-LM tensor parallelism (Shoeybi et al. 2019, arXiv 1909.08053) all-reduces a layer's
    activations twice in the forward and twice in the backward pass; with sequence parallelism each
    all-reduce becomes a reduce-scatter and an all-gather of the same volume (Korthikanti et al. 2022,
    arXiv 2205.05198). A ring all-reduce of h values moves 2 (T - 1) / T h b_act bytes per accelerator,
    so 8 (T - 1) / T h b_act per layer and token. A node of A accelerators runs A / T groups, each on
    B T / A of its B tokens, through L = P_act / (12 h^2) layers, at bw bytes/s per accelerator:
        t_tp = B T / A x L x 8 (T - 1) / T h b_act / bw = 2 B P_act (T - 1) b_act / (3 A h bw).
    The collectives sit on the critical path (no overlap), so t_tp adds to the compute time."""
    t = a.tensor_parallel
    if t <= 1:
        return 0.0
    bw = a.intra_node_gb_per_s * 1e9
    return 2.0 * local_batch_tokens * active_params * (t - 1.0) * a.activation_bytes(precision) / (
        3.0 * accelerators_per_node * np.asarray(hidden, dtype=float) * bw)


# -- 2. ZeRO-3 / FSDP across the nodes of a co-located group --------------------------------------


def zero3_comm_s(a: Assumptions, params, precision: str, shards, regional_bps: float, regional_rtt_s: float):
    """Per-step communication of a replica whose training state is sharded over Z co-located nodes
    (ZeRO stage 3, Rajbhandari et al. 2020, arXiv 1910.02054, section 7.2.2; PyTorch FSDP, Zhao et
    al. 2023, arXiv 2304.11277): the parameters are all-gathered for the forward and again for the
    backward pass and the gradients reduce-scattered, each a ring collective moving (Z - 1) / Z P b
    bits in and out of every node (b the precision's bits per value), 1.5 times a data-parallel
    all-reduce; over the regional link (one per node), with Z - 1 latencies per collective:
        t_fsdp = 3 (Z - 1) / Z P b / bw_reg + 3 (Z - 1) lat_reg.   (0 for Z = 1)"""
    z = np.asarray(shards, dtype=float)
    volume = 3.0 * (z - 1.0) / z * np.asarray(params, dtype=float) * a.bits_per_value(precision)
    return volume / regional_bps + 3.0 * (z - 1.0) * regional_rtt_s


def zero3_step_s(t_comp_s, shards, t_fsdp_s):
    """Inner step of a replica sharded over Z nodes: each node computes B / Z of the replica's
    tokens, t_comp / Z, and FSDP prefetches the next unit's parameters and reduce-scatters the
    last one's gradients while it computes (Zhao et al. 2023, section 3.3), so the step is the
    longer of the two: max(t_comp / Z, t_fsdp). Non-increasing in Z's compute share, growing
    with t_fsdp."""
    return np.maximum(np.asarray(t_comp_s, dtype=float) / np.asarray(shards, dtype=float), t_fsdp_s)


# -- 5 and 6. payloads -----------------------------------------------------------------------


def payload_bits(a: Assumptions, params, precision: str, compression, stages=1, per_stage: bool = False):
    """Pseudo-gradient bits one node sends per sync.

    ratio (reference): P b / Cr.
    quantise (DiLoCo int8/int4: fp16 at Cr = 2 is int8): P (b / Cr + s), s scale bits per
        parameter (one fp32 scale per block of k values: s = 32 / k).
    topk (SparseLoCo, DeMo): Cr is the sparsification (one value kept in Cr); each kept
        value costs its quantised value bits and its index bits: P / Cr (b_v + b_i) + P s.
        SparseLoCo's top-64 of each 4,096-value chunk with 2-bit values and 12-bit
        in-chunk indices: P / 64 x 14 = 0.22 bits per parameter (146x below 32-bit).
    per_stage (PP-group DiLoCo): each stage node holds and syncs only its P / S.
    """
    p = np.asarray(params, dtype=float)
    if per_stage:
        p = p / np.asarray(stages, dtype=float)
    cr = np.asarray(compression, dtype=float)
    if a.compressor == "quantise":
        return p * (a.bits_per_value(precision) / cr + a.compressor_scale_bits)
    if a.compressor == "topk":
        return p / cr * (a.compressor_value_bits + a.compressor_index_bits) + p * a.compressor_scale_bits
    return timing.payload_bits(p, a.bits_per_value(precision), cr)


# -- 3 (as a profile option). pipeline schedules ----------------------------------------------


def schedule_codes(a: Assumptions, schedule=0) -> np.ndarray:
    """Each plan's schedule as a code 1-5 (PIPELINE_SCHEDULES order: gpipe, 1f1b, interleaved,
    zero_bubble, dualpipe); a plan's code 0 means the profile's `pipeline_schedule`."""
    code = np.asarray(schedule, dtype=np.int64)
    return np.where(code == 0, PIPELINE_SCHEDULES.index(a.pipeline_schedule) + 1, code)


GPIPE, ONE_F_ONE_B, INTERLEAVED, ZERO_BUBBLE, DUALPIPE = 1, 2, 3, 4, 5

# DualPipe (DeepSeek-V3, arXiv 2412.19437 section 3.2.1; deepseek-ai/DualPipe at commit 3da1bbe): its step()
# asserts an even number of ranks, an even number of micro-batches and at least two per rank
# (dualpipe/dualpipe.py); its README
# states PP even. Half the micro-batches enter at each end of the pipeline.
DUALPIPE_MIN_MICRO_BATCHES_PER_STAGE = 2


def dualpipe_allowed(stages, micro_batches) -> np.ndarray:
    """Whether DualPipe can run S stages with M micro-batches: S even, M even and M >= 2 S
    (deepseek-ai/DualPipe, dualpipe/dualpipe.py's assertions; DUALPIPE_MIN_MICRO_BATCHES_PER_STAGE)."""
    s = np.asarray(stages, dtype=np.int64)
    m = np.asarray(micro_batches, dtype=np.int64)
    return (s % 2 == 0) & (m % 2 == 0) & (m >= DUALPIPE_MIN_MICRO_BATCHES_PER_STAGE * s)


def schedule_allowed(a: Assumptions, stages, micro_batches, schedule=0) -> np.ndarray:
    """Whether each plan's schedule can run its (S, M): every schedule but DualPipe always
    (`dualpipe_allowed`). Where no plan's schedule is DualPipe the answer is True for every plan of the
    broadcast shape of the schedule, S and M (what `(code != DUALPIPE) | ...` gives there, a bool array),
    without `dualpipe_allowed` (about 4 us of a one-plan score; tests/test_schedule_allowed.py)."""
    code = schedule_codes(a, schedule)
    dualpipe = code == DUALPIPE
    if not dualpipe.any():     # a numpy bool where all three are scalars, as a ufunc of 0-d operands returns
        shape = np.broadcast_shapes(code.shape, np.shape(stages), np.shape(micro_batches))
        return np.ones(shape, bool) if shape else np.True_
    return ~dualpipe | dualpipe_allowed(stages, micro_batches)


def dualpipe_problem(stages: int, micro_batches: int) -> str | None:
    """Why DualPipe cannot run S stages with M micro-batches (None if it can): the clear reason for a
    plan or a profile that names it."""
    if stages % 2:
        return f"dualpipe needs an even number of stages (it pairs stage i with stage S - 1 - i), got {stages}"
    if micro_batches % 2 or micro_batches < DUALPIPE_MIN_MICRO_BATCHES_PER_STAGE * stages:
        return (f"dualpipe needs an even number of micro-batches, at least {DUALPIPE_MIN_MICRO_BATCHES_PER_STAGE} "
                f"per stage ({DUALPIPE_MIN_MICRO_BATCHES_PER_STAGE * stages} for {stages} stages), got {micro_batches}")
    return None


def dualpipe_bubble_slots(a: Assumptions, stages):
    """DualPipe's bubble in micro-batch slots, (S / 2 - 1)(F&B + B - 3 W) by its README's table
    (deepseek-ai/DualPipe, its comparison of schedules; the same table gives 1F1B
    (S - 1)(F + B), this profile's M + S - 1). A slot is one micro-batch's forward and full backward on one
    stage, F + B = 1; the profile splits it as `backward_share` (4 of the 6 P FLOP per token): F = 1/3,
    B = 2/3 (the full backward, input and weight gradients), W = B / 2 = 1/3 (the weight gradient, one of
    the backward's two GEMMs of the forward's size; zero_bubble's F = B_input = W thirds). F&B, a forward
    and a backward chunk run overlapped, is F + B: the overlap hides communication (the all-to-all and the
    pipeline sends, section 3.2.1), not compute, which the node's u already prices. With the thirds:
    (S / 2 - 1) x 2/3 = (S - 2) / 3 slots."""
    f = 1.0 - a.backward_share
    b = a.backward_share
    w = b / 2.0
    return (np.asarray(stages, dtype=float) / 2.0 - 1.0) * ((f + b) + b - 3.0 * w)


def dualpipe_copy_bytes_per_param(a: Assumptions, precision: str) -> float:
    """Bytes per parameter of DualPipe's second copy of a stage: its README's table holds the parameters
    twice per device (DeepSeek-V3, section 3.2.1, keeps the parameters in two copies); each copy is a
    module with its own weights and gradients (the repository's example sums the mirrored ranks'
    gradients), while one optimizer state serves both (they receive the same summed gradient). So the
    copy is beta_ref less the mixed-precision optimizer's fp32 master weights and AdamW moments:
    16 - 12 = 4 bytes at fp16, 2 at fp8, 1 at fp4 (weights and gradients at the plan's precision)."""
    return tensor_parallel.replicated_bytes_per_param(a, precision)


def schedule_state_bytes(a: Assumptions, params, precision: str, stages, schedule=0):
    """Training state a pipeline stage node holds beyond P beta / S because of its schedule: DualPipe's
    second copy, P / S x `dualpipe_copy_bytes_per_param`; 0 for the other schedules."""
    code = schedule_codes(a, schedule)
    copy = np.asarray(params, dtype=float) / np.asarray(stages, dtype=float) * dualpipe_copy_bytes_per_param(a, precision)
    return np.where(code == DUALPIPE, copy, 0.0)


def pipeline_ticks(a: Assumptions, stages, micro_batches, schedule=0, chunks=None):
    """Pipeline length in micro-batch slots, and link transfers per slot.

    gpipe, 1f1b: M + S - 1 slots (1F1B keeps GPipe's bubble, only its activation memory
    is S micro-batches instead of M; Narayanan et al. 2021, arXiv 2104.04473, section 2.2);
    interleaved with v chunks per rank: M + (S - 1) / v slots, v times the boundary
    transfers (same source), and never fewer than S: one micro-batch's forward and backward
    pass through every chunk in turn, S slots of compute on its critical path;
    zero_bubble (Qi et al. 2023, arXiv 2401.10241, ZB-H2): the backward pass is split into the
    input gradient B and the weight gradient W, F = B = W = a third of a slot; the first stage
    waits 2 (S - 1) thirds for its first B and fills them with the other M - 1 forwards, so the
    bubble vanishes for M >= 2 S - 1 and is (2 S - 1 - M) / 3 slots below that (at M = 1 the
    critical path, (2 S + 1) / 3):  slots = M + max(0, 2 S - 1 - M) / 3;
    dualpipe (DeepSeek-V3, arXiv 2412.19437 section 3.2.1): M + `dualpipe_bubble_slots`, (S - 2) / 3 with
    the profile's thirds, one boundary transfer per slot as 1F1B (each micro-batch crosses S - 1 stage
    boundaries in either direction); infinite where DualPipe cannot run (S, M) (`dualpipe_allowed`: the
    plan is structurally impossible, score.violations).
    Returns (slots, transfers per slot), per plan (`schedule`: the plans' codes; `chunks`: v per plan
    where the planner decides it, else the profile's `pipeline_chunks`).
    """
    s = np.asarray(stages, dtype=float)
    m = np.asarray(micro_batches, dtype=float)
    code = schedule_codes(a, schedule)
    v = a.pipeline_chunks if chunks is None else np.asarray(chunks, dtype=float)
    dualpipe = np.where(dualpipe_allowed(s, m), m + dualpipe_bubble_slots(a, s), np.inf)
    slots = np.select([code == INTERLEAVED, code == ZERO_BUBBLE, code == DUALPIPE],
                      [np.maximum(m + (s - 1.0) / v, s), m + np.maximum(0.0, 2.0 * s - 1.0 - m) / 3.0, dualpipe],
                      m + s - 1.0)
    return slots, np.where(code == INTERLEAVED, v, 1.0)


CHUNK_CHOICES = (1.0, 2.0, 4.0, 8.0)   # v the planner tries (Megatron-LM --num-layers-per-virtual-pipeline-stage)


def chunk_choices(layers: float, stages) -> list[tuple[float, np.ndarray]]:
    """The chunk counts v the planner may give an interleaved plan (`pipeline_chunks` 0: a decision),
    each with where it is allowed: a chunk holds at least one layer, v <= L / S (v = 1 always; it is
    1F1B). Megatron-LM's interleaved schedule takes v chunks of L / (S v) layers per rank (Narayanan
    et al. 2021, arXiv 2104.04473, section 2.2)."""
    s = np.asarray(stages, dtype=float)
    return [(v, (v <= layers / s) | (v == 1.0)) for v in CHUNK_CHOICES]


def model_layers(a: Assumptions, active_params, hidden) -> float:
    """L: the shape preset's layers when `model_shape` names one, else P_act / (12 h^2) (12 h^2
    parameters per layer, as `activation_bytes_per_node`)."""
    if a.model_shape:
        from planner.cost.compute.shape import preset_shape
        return float(preset_shape(a.model_shape).layers)
    return float(active_params) / (12.0 * float(hidden) ** 2)


def in_flight_micro_batches(a: Assumptions, stages, micro_batches, schedule=0, chunks=None):
    """Micro-batches whose activations the first stage (the fullest) holds at its peak:
    gpipe M (every forward before any backward; Huang et al. 2019, arXiv 1811.06965);
    1f1b min(M, S) (PipeDream-Flush; Narayanan et al. 2021, section 2.2);
    interleaved min(M, S (1 + (S - 1) / (S v))) (Korthikanti et al. 2022, arXiv 2205.05198,
    section 4.2.3: the first stage holds (1 + (p - 1) / (p m)) times 1F1B's activations);
    zero_bubble (ZB-H2, whose time `pipeline_ticks` uses) min(M, 2 S) (Qi et al. 2023:
    about twice 1F1B's peak); dualpipe min(M, S + 1) (deepseek-ai/DualPipe's README table: PP + 1
    micro-batches' activations per device against 1F1B's PP, each of one stage's layers)."""
    s = np.asarray(stages, dtype=float)
    m = np.asarray(micro_batches, dtype=float)
    code = schedule_codes(a, schedule)
    v = a.pipeline_chunks if chunks is None else np.asarray(chunks, dtype=float)
    held = np.select([code == GPIPE, code == ONE_F_ONE_B, code == INTERLEAVED, code == DUALPIPE],
                     [m, s, s * (1.0 + (s - 1.0) / (s * v)), s + 1.0], 2.0 * s)
    return np.minimum(m, held)


def micro_batch_tokens(local_batch_tokens, micro_batches, groups=1.0, sequence_tokens=0.0):
    """Tokens of one micro-batch on the node: B / M, at least one sequence per tensor-parallel group,
    max(B / M, D s) (D = A / T groups, `tensor_parallel.data_parallel_groups`; s the training sequence
    length, `sequence_tokens`; 0 leaves B / M). A group's micro-batch holds whole sequences (Megatron-LM's
    `--micro-batch-size` counts sequences, at least 1), so B / M below D s still has every group hold one
    sequence of activations (Korthikanti et al. 2022, arXiv 2205.05198, section 4: b >= 1 sequences)."""
    per_mb = np.asarray(local_batch_tokens, dtype=float) / np.asarray(micro_batches, dtype=float)
    return np.maximum(per_mb, float(groups) * float(sequence_tokens))


def activation_bytes_per_node(a: Assumptions, active_params, hidden, local_batch_tokens, precision, stages,
                              micro_batches, schedule=0, chunks=None, groups=1.0, sequence_tokens=0.0):
    """Activation memory of a pipeline stage node at its peak, in bytes (0 unless
    `activation_memory` is on): the sum over the node's A accelerators of each one's activations,
    which are the same on every accelerator of the node (so the node's sum against the node's HBM
    is the per-accelerator check, `memory.per_accelerator_bytes`).

    Per accelerator (Korthikanti et al. 2022, arXiv 2205.05198, eq. 2 and section 4.2.2): a layer of
    a micro-batch of b sequences of s tokens stores s b h (34 + 5 a s / h) bytes at 16-bit without
    recomputation; selective recomputation drops the attention scores' 5 a s / h term (FlashAttention
    never stores them either), and tensor parallelism of degree T with sequence parallelism splits the
    rest over the T accelerators of the group: 34 s b h / T (`activation_bytes_per_token_layer_h` c = 34).
    A node of D = A / T groups, each on its micro-batch of `micro_batch_tokens` / D tokens, so summed
    over the node's A = D T accelerators: c h per token of the node's micro-batch, whatever T.
    Scaled by the precision's activation bytes / 2. A stage holds L / S layers, L = P_act / (12 h^2)
    (12 h^2 parameters per layer), so per token c h L / S = c P_act / (12 h S) bytes; it holds
    `in_flight_micro_batches` micro-batches:
        A = held(schedule, S, M) x max(B / M, D s) x c P_act / (12 h S) x b_act / 2.
    GPipe holds all M micro-batches; 1F1B and the others hold at most a few S, so A falls as M grows
    until a group's micro-batch is one sequence. It does not depend on the node count."""
    if not a.activation_memory:
        return 0.0
    s = np.asarray(stages, dtype=float)
    per_token = a.activation_bytes_per_token_layer_h * np.asarray(active_params, dtype=float) / (
        12.0 * np.asarray(hidden, dtype=float) * s) * a.activation_bytes(precision) / 2.0
    m = np.asarray(micro_batches, dtype=float)
    return in_flight_micro_batches(a, s, m, schedule, chunks) \
        * micro_batch_tokens(local_batch_tokens, m, groups, sequence_tokens) * per_token


def replica_activation_parts_bytes(a: Assumptions, active_params, hidden, local_batch_tokens, precision,
                                   groups=1.0, sequence_tokens=0.0):
    """(kept, recomputed, working) activation bytes of a node of a flat or hierarchical replica (a dense
    model's whole L layers on each node, no pipeline) at its peak; zeros unless `activation_memory` is on.
    The replica accumulates its B tokens' gradients micro-batch by micro-batch (gradient accumulation costs
    no time in the model), so its peak is one micro-batch of every layer: each of the D groups runs
    `micro_batch_sequences` (at least one) sequences of s tokens, or its B / D tokens if fewer, never below
    one sequence (`micro_batch_tokens`). That is `activation_parts_bytes` with S = 1 and one micro-batch of
        B_mb = min(D max(micro_batch_sequences, 1) s, B)
    tokens (every schedule holds min(M, .) = 1 micro-batch at S = M = 1). ZeRO-3 over Z nodes shards the
    state, not the activations: every node holds its own micro-batch's. s = 0 (no sequence length) leaves
    no floor and B_mb = B."""
    if not a.activation_memory:
        return 0.0, 0.0, 0.0
    per_mb = float(groups) * max(a.micro_batch_sequences, 1.0) * float(sequence_tokens)
    tokens = min(per_mb, float(local_batch_tokens)) if per_mb > 0 else float(local_batch_tokens)
    return activation_parts_bytes(a, active_params, hidden, tokens, precision, 1.0, 1.0, 0, 1.0, groups,
                                  sequence_tokens)


def least_whole_model_activation_bytes(a: Assumptions, params: float, precision: str,
                                       accelerators_per_node: int, hidden: float | None = None) -> float:
    """The least activation memory, in bytes, that any plan of the space can have on a node holding a dense
    model of P parameters whole (S = 1: a flat or hierarchical replica, ZeRO-3 aside), 0 unless
    `activation_memory` is on. Used to size "the largest model a node can train"
    (planner/questions/thresholds.py `fit_params`).

    The node's micro-batch is never below one sequence per data-parallel group, D s tokens
    (`micro_batch_tokens`; D = `tensor_parallel.data_parallel_groups`, 1 unless `search_tensor_parallel`
    fixes a degree below A: with T free, T = A is the least, D = 1), whatever the batch or
    `micro_batch_sequences`: `replica_activation_parts_bytes` with B = D s gives that floor. Of those
    activations the node holds, by `activation_recompute`: `selective` the kept ones, `full` the recomputed
    ones and one layer's working set, `fit` the lesser of the two (`recompute_share`'s r = 1 is its least
    memory; r = 0 holds the kept ones). h and s as the cost layer takes them (`timing.hidden_size` when the
    model gives no h, `sequence_tokens`)."""
    if not a.activation_memory:
        return 0.0
    seq = sequence_tokens(a, params, hidden)
    hidden = float(hidden) if hidden is not None else float(timing.hidden_size(params, a.hidden_size_coefficient))
    groups = tensor_parallel.data_parallel_groups(a, accelerators_per_node)
    kept, redone, working = replica_activation_parts_bytes(a, params, hidden, groups * seq, precision, groups, seq)
    if a.activation_recompute == "selective":
        return float(kept)
    if a.activation_recompute == "full":
        return float(redone + working)
    return float(min(kept, redone + working))


def sequence_tokens(a: Assumptions, params: float, hidden: float | None) -> float:
    """The training sequence length s of the model's shape (`compute_model_shape`: `sequence_tokens` where an
    instance sets it, else the preset's or the standard shape's)."""
    return float(compute_model_shape(a, params, hidden).sequence_tokens)


RECOMPUTE_FORWARD_SHARE = 1.0 / 3.0   # a recomputed forward pass: 2 of the 6 P_act FLOP per token
FIT_MARGIN = 1e-12                    # share added to `fit`'s r: of a stage's activations, well below a byte


def activation_parts_bytes(a: Assumptions, active_params, hidden, local_batch_tokens, precision, stages,
                           micro_batches, schedule=0, chunks=None, groups=1.0, sequence_tokens=0.0):
    """(kept, recomputed, working) activation bytes of a pipeline stage node at its peak (zeros unless
    `activation_memory` is on), for the recomputation choice of `recompute_share`:

    kept: every layer stores its activations, c h bytes per token (c = 34: selective recomputation,
        Korthikanti et al. 2022, arXiv 2205.05198, section 4.3; `activation_bytes_per_node`);
    recomputed: every layer recomputed in full (Chen et al. 2016, arXiv 1604.06174; Korthikanti et
        al. section 5 "full activation recomputation"): a layer keeps only its input, c_f h bytes per
        token (c_f = 2 at 16-bit, `recompute_bytes_per_token_layer_h`), so the same formula with c_f;
    working: while the backward pass runs a recomputed layer, that layer's full activations for one
        micro-batch are live again: `micro_batch_tokens` (B / M, at least D s) x c h bytes (one layer).
    Per accelerator each is divided by T with sequence parallelism; for the layer inputs that full
    recomputation keeps this is an assumption: Korthikanti et al.'s Table 2 gives 2 s b h per layer without
    the split, while Megatron-LM's layers under sequence parallelism receive their input split along the
    sequence, s / T of it per accelerator. The node sums the accelerators' figures.
    All scaled by the precision's activation bytes / 2 (as `activation_bytes_per_node`)."""
    if not a.activation_memory:
        return 0.0, 0.0, 0.0
    kept = activation_bytes_per_node(a, active_params, hidden, local_batch_tokens, precision, stages,
                                     micro_batches, schedule, chunks, groups, sequence_tokens)
    recomputed = kept * (a.recompute_bytes_per_token_layer_h / a.activation_bytes_per_token_layer_h)
    working = micro_batch_tokens(local_batch_tokens, micro_batches, groups, sequence_tokens) \
        * a.activation_bytes_per_token_layer_h * np.asarray(hidden, dtype=float) * a.activation_bytes(precision) / 2.0
    return kept, recomputed, working


def recompute_share(a: Assumptions, state_bytes, kept, recomputed, working, memory_bytes):
    """The share r of a stage's layers recomputed in full (`full`: 1; `fit`: 0 unless `activation_memory`
    is on).

    selective: r = 0 (only the attention core is recomputed; its cost is in the node's u: the MFU
        table's runs use it, as FlashAttention's backward kernel does);
    full: r = 1;
    fit: the fewest layers that make the stage fit its node (Megatron-LM's block recomputation,
        `--recompute-method block --recompute-num-layers`): the node holds
        state + kept (1 - r) + recomputed r + working [r > 0], so
            r = 0 if state + kept <= V, else (state + kept + working - V) / (kept - recomputed),
        at most 1 (a stage that does not fit even then is refused by the memory check). The share is
        continuous (a fraction of the stage's L / S layers, themselves an estimate).
    Recomputing a layer costs its forward pass again, RECOMPUTE_FORWARD_SHARE of its 6 P FLOP per
    token, so the stage's compute is t_comp (1 + r / 3) (`recompute_compute_factor`). Since a plan's
    time grows with r and its memory falls, the least r that fits is the best choice for every
    objective: `fit` makes the planner's choice in closed form. r depends on S, M, the schedule and
    the precision only (class decisions), never on n, H or R."""
    shape = np.shape(np.asarray(kept) + np.asarray(state_bytes))
    if a.activation_recompute == "full":      # its compute counts with or without the memory model
        return np.ones(shape)
    if not a.activation_memory or a.activation_recompute == "selective":
        return np.zeros(shape)
    state, kept = np.asarray(state_bytes, dtype=float), np.asarray(kept, dtype=float)
    saved = kept - np.asarray(recomputed, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        need = (state + kept + np.asarray(working, dtype=float) - memory_bytes) / saved
    need = np.nan_to_num(need, nan=1.0) + FIT_MARGIN     # so that the node's sum is not above V by a rounding
    return np.where(state + kept <= memory_bytes, 0.0, np.clip(need, 0.0, 1.0))


def recomputed_activation_bytes(kept, recomputed, working, share):
    """Activations a stage node holds with a share r of its layers recomputed in full:
    kept (1 - r) + recomputed r + working [r > 0] (`recompute_share`)."""
    r = np.asarray(share, dtype=float)
    return np.asarray(kept) * (1.0 - r) + np.asarray(recomputed) * r + np.where(r > 0, working, 0.0)


def flat_recompute_factor(a: Assumptions) -> float:
    """Compute factor of a replica that is not a pipeline (flat, hierarchical) under `activation_recompute`
    without its activation memory (`replica_activation_parts_bytes`): 1 + 1/3 with `full` (every layer's
    forward pass runs again in the backward pass: INTELLECT-1's `act_ckpt`), else 1 (`fit` then never
    recomputes). With activation memory a dense replica's `fit` share r >= 0 gives 1 + r / 3, never below."""
    return float(recompute_compute_factor(1.0)) if a.activation_recompute == "full" else 1.0


def recompute_compute_factor(share):
    """Compute of a stage with a share r of its layers recomputed, over its compute without: 1 + r / 3."""
    return 1.0 + RECOMPUTE_FORWARD_SHARE * np.asarray(share, dtype=float)


# -- 7. failures ---------------------------------------------------------------------------------


def failure_goodput(a: Assumptions, accelerators: float, nodes: float) -> dict[str, float]:
    """Goodput from failures and churn with checkpoints at the Young/Daly interval.

    Failure rate lambda = A / MTBF_acc + c N (A accelerators, N nodes, c volunteer
    departures per node-hour, each handled like a failure); system MTBF M = 1 / lambda;
    checkpoint every tau = sqrt(2 delta M) (Young 1974; Daly 2006, first order), delta the
    write time. Time lost per unit time: delta / tau (writing) + (tau / 2 + R) / M (rework
    and restart R), i.e. sqrt(2 delta / M) + R / M at tau; goodput = max(0, 1 - that).
    Returns goodput, mtbf_s, interval_s.
    """
    rate_per_h = accelerators / a.accelerator_mtbf_h + a.churn_per_node_h * nodes
    mtbf_s = SECONDS_PER_HOUR / rate_per_h if rate_per_h > 0 else float("inf")
    if not np.isfinite(mtbf_s):
        return {"goodput": 1.0, "mtbf_s": mtbf_s, "interval_s": float("inf")}
    interval_s = float(np.sqrt(2.0 * a.checkpoint_write_s * mtbf_s))
    lost = a.checkpoint_write_s / interval_s + (interval_s / 2.0 + a.checkpoint_restore_s) / mtbf_s \
        if interval_s > 0 else a.checkpoint_restore_s / mtbf_s
    return {"goodput": max(0.0, 1.0 - lost), "mtbf_s": mtbf_s, "interval_s": interval_s}


# -- 8. demonstrated settings -------------------------------------------------------------------


def extrapolation_warnings(inner_steps: float, compression: float, replicas: float, regional_rounds: float = 1) -> list[str]:
    """Where a DiLoCo-style plan (H_eff > 1 or Cr > 1) leaves the settings shown at scale:
    H_eff above 500, more than 16 replicas, or compression at every step (H = 1).
    Plain data parallelism (H = 1, no compression) is demonstrated at any replica count."""
    h_eff = inner_steps * np.sqrt(regional_rounds)
    if h_eff <= 1 and compression <= 1:
        return []
    out = []   # compression above DEMONSTRATED_MAX_COMPRESSION is warned about by every profile (evaluate.py)
    if h_eff > DEMONSTRATED_MAX_INNER_STEPS:
        out.append(f"sync interval H = {h_eff:g} is beyond what was shown at scale "
                   f"({DEMONSTRATED_MAX_INNER_STEPS}, OpenDiLoCo): extrapolation")
    if replicas > DEMONSTRATED_MAX_REPLICAS:
        out.append(f"{replicas:g} DiLoCo replicas is beyond what was shown at scale "
                   f"({DEMONSTRATED_MAX_REPLICAS}, MuLoCo 15B): extrapolation")
    if h_eff <= 1 < compression:
        out.append(f"compression {compression:g}x at every step (H = 1) is not a DiLoCo setting shown at scale: "
                   "extrapolation")
    return out


def pipeline_parts_s(a: Assumptions, step_compute_s, stages, micro_batches, act_bits, link_bps, link_latency_s,
                     straggler, schedule=0, chunks=None):
    """The pipeline step under each plan's schedule, as timing.pipeline_parts_s (GPipe, the
    reference) with slots and transfers from `pipeline_ticks`:
    t_pp = slots * (c + k (x + lat_pp) f(S)), c = t_comp / (S M), x = (2 a / M) / bw_pp, k the
    transfers per slot. Returns (t_pp, slots, c, x, k)."""
    code = schedule_codes(a, schedule)
    if np.all(code == GPIPE):
        return (*timing.pipeline_parts_s(step_compute_s, stages, micro_batches, act_bits, link_bps, link_latency_s,
                                         straggler), 1.0)
    s = np.asarray(stages, dtype=float)
    m = np.asarray(micro_batches, dtype=float)
    c = np.asarray(step_compute_s, dtype=float) / (s * m)
    x = (2.0 * np.asarray(act_bits, dtype=float) / m) / link_bps
    slots, k = pipeline_ticks(a, s, m, code, chunks)
    return slots * (c + k * (x + link_latency_s) * straggler), slots, c, x, k
