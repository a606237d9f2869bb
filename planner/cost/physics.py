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
- pipeline schedules (`pipeline_ticks`): depend on S, M and the profile only.
- failures (`failure_goodput`): evaluated once per setting at the fleet's size (a plan
  never uses more nodes than the fleet, and goodput falls with nodes, so this is a lower
  bound of each plan's own goodput); a scalar like fleet.goodput, so no bound changes.
"""

from __future__ import annotations

import json
from functools import lru_cache

import numpy as np

from planner.cost import timing
from planner.cost.assumptions import MODELS_DIR, Assumptions

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
    on H100 at fp8: 0.1455 of the fp8 peak against 0.371 for dense Llama 3.1 405B, both on the
    6 P_act basis); the other precisions keep the dense figure."""
    entry = mfu_table().get(accelerator)
    if entry is None:
        return None
    row = {p: float(entry[p]) for p in ("fp16", "fp8", "fp4") if p in entry}
    if moe:
        row |= {p: float(entry["moe"][p]) for p in ("fp16", "fp8", "fp4") if p in entry.get("moe", {})}
    return row


def resolve_mfu(a: Assumptions, accelerator: str, explicit: bool, moe: bool = False) -> Assumptions:
    """The assumptions with u taken from models/mfu.json when `mfu_from_table` is on, the
    accelerator is in the table and the instance gives no explicit MFU (`explicit`); a
    mixture-of-experts model (`moe`) takes the entry's MoE figures where it has them.

    u at fp16 replaces `mfu`; u at fp8/fp4 (of that precision's peak) set `mfu_fp8`/`mfu_fp4`.
    Source: the table's entries (each with its own source)."""
    if not a.mfu_from_table or explicit:
        return a
    row = table_mfu(accelerator, moe)
    if row is None:
        return a
    changes = {"mfu": row.get("fp16", a.mfu)}
    changes |= {f"mfu_{p}": row[p] for p in ("fp8", "fp4") if p in row}
    return a.replace(**changes)


# -- 4. sync over the links -------------------------------------------------------------------


def sync_base_s(a: Assumptions, payload, parties, up_bps: float, down_bps: float, latency_s: float):
    """One WAN exchange of a payload of v bits among G parties, before the straggler factor.

    reference (both switches off): v / up + v / down + lat.
    all_reduce with concurrent links: a ring all-reduce (reduce-scatter then all-gather)
        sends and receives 2 (G - 1) / G v per node, at the same time on the up and the down
        link: max(w / up, w / down) + lat, w = 2 (G - 1) / G v (Patarasuk & Yuan 2009,
        "Bandwidth optimal all-reduce algorithms for clusters of workstations").
    all_gather (Covenant/Templar: each peer publishes its compressed pseudo-gradient and
        fetches every other's): up v, down (G - 1) v; max of the two times with concurrent
        links, their sum without; + lat.
    Non-decreasing in G in every case (G >= 1).
    """
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
    takes t_frag = ((t_base - lat) / p + lat) f, f the same straggler factor. p = 1: t_sync."""
    base = np.asarray(t_sync_base_s, dtype=float)
    p = a.streaming_fragments
    return ((base - latency_s) / p + latency_s) * np.asarray(straggler, dtype=float)


def fragments_on(a: Assumptions) -> bool:
    """Whether the fragment model of a streaming sync is on (more than one fragment, or a bounded
    overlap window)."""
    return a.streaming_fragments > 1 or a.streaming_overlap_steps > 0


def streaming_outer_s(a: Assumptions, inner_steps, t_step_s, t_sync_s, t_frag_s):
    """Outer step with a streaming (overlapped) sync.

    Whole model, unbounded overlap (the reference, `fragments_on` false): max(H t_step, t_sync).
    Fragments (Streaming DiLoCo, arXiv 2501.18512): the model is synced in p fragments, one every
    H / p inner steps, each of payload v / p; a fragment's result is needed tau inner steps after its
    sync starts (tau = `streaming_overlap_steps`, 0 meaning the whole interval H / p), so each
    fragment stalls the workers by max(0, t_frag - tau t_step):
        outer = H t_step + p max(0, t_frag - tau_eff t_step),  tau_eff = min(tau, H / p).
    With p = 1 and tau = H this is max(H t_step, t_sync) again. Per inner step it is
    t_step + p max(0, t_frag - tau t_step) / H: non-increasing in H (tau does not depend on H, or
    is H / p, which gives max(t_step, t_frag p / H)), non-decreasing in t_frag.
    """
    h = np.asarray(inner_steps, dtype=float)
    t = np.asarray(t_step_s, dtype=float)
    if not fragments_on(a):
        return np.maximum(h * t, np.asarray(t_sync_s, dtype=float))
    p = a.streaming_fragments
    window = h / p if a.streaming_overlap_steps <= 0 else np.minimum(a.streaming_overlap_steps, h / p)
    return h * t + p * np.maximum(0.0, np.asarray(t_frag_s, dtype=float) - window * t)


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


def pipeline_ticks(a: Assumptions, stages, micro_batches):
    """Pipeline length in micro-batch slots, and link transfers per slot.

    gpipe, 1f1b: M + S - 1 slots (1F1B keeps GPipe's bubble, only its activation memory
    is S micro-batches instead of M; Narayanan et al. 2021, arXiv 2104.04473, section 2.2);
    interleaved with v chunks per rank: M + (S - 1) / v slots, v times the boundary
    transfers (same source); zero_bubble: M slots (Qi et al. 2023, arXiv 2401.10241,
    ZB-H2 fills the bubble by splitting the backward pass).
    Returns (slots, transfers per slot).
    """
    s = np.asarray(stages, dtype=float)
    m = np.asarray(micro_batches, dtype=float)
    if a.pipeline_schedule == "interleaved":
        v = a.pipeline_chunks
        return m + (s - 1.0) / v, v
    if a.pipeline_schedule == "zero_bubble":
        return m + 0.0 * s, 1.0
    return m + s - 1.0, 1.0


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
                     straggler):
    """The pipeline step under the profile's schedule, as timing.pipeline_parts_s (GPipe, the
    reference) with slots and transfers from `pipeline_ticks`:
    t_pp = slots * (c + k (x + lat_pp) f(S)), c = t_comp / (S M), x = (2 a / M) / bw_pp, k the
    transfers per slot. Returns (t_pp, slots, c, x, k)."""
    if a.pipeline_schedule == "gpipe":
        return (*timing.pipeline_parts_s(step_compute_s, stages, micro_batches, act_bits, link_bps, link_latency_s,
                                         straggler), 1.0)
    s = np.asarray(stages, dtype=float)
    m = np.asarray(micro_batches, dtype=float)
    c = np.asarray(step_compute_s, dtype=float) / (s * m)
    x = (2.0 * np.asarray(act_bits, dtype=float) / m) / link_bps
    slots, k = pipeline_ticks(a, s, m)
    return slots * (c + k * (x + link_latency_s) * straggler), slots, c, x, k
