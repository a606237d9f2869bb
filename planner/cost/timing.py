"""Per-step and per-sync times (docs/cost_model.md sections 3 and 4). Seconds, bits, bits/s.

Each formula is written in the reference's order of operations so that values that
sit on an integer after a ceil (H = ceil(t_sync / t_comp)) land on the same side.
"""

from __future__ import annotations

import numpy as np


def compute_time_s(active_params, local_batch_tokens, node_peak_flops, mfu):
    """t_comp = 6 * P_act * B / (F * u): one inner step of one node holding the whole model.

    Four Python floats (the search's ~80 calls a solve): the same IEEE double operations in the same
    order in Python's arithmetic, as a numpy float64 like numpy's answer (tests/test_timing_scalar.py);
    anything else (arrays, a zero denominator) goes through numpy."""
    if type(active_params) is float and type(local_batch_tokens) is float and type(node_peak_flops) is float \
            and type(mfu) is float and node_peak_flops * mfu != 0.0:
        return np.float64((6.0 * active_params * local_batch_tokens) / (node_peak_flops * mfu))
    return (6.0 * np.asarray(active_params, dtype=float) * local_batch_tokens) / (np.asarray(node_peak_flops, dtype=float) * mfu)


def expert_all_to_all_time_s(latency_s, moe_layers):
    """t_ep = 2 * lat_ep * L_moe: two all-to-all round trips per MoE layer per step."""
    return 2.0 * np.asarray(latency_s, dtype=float) * moe_layers


def payload_bits(params, bits_per_value, compression):
    """Pseudo-gradient payload per sync v = P * b / Cr (total parameters, also for MoE)."""
    return np.asarray(params, dtype=float) * bits_per_value / np.asarray(compression, dtype=float)


def wan_sync_base_s(payload, up_bps, down_bps, latency_s):
    """v / bw_up + v / bw_down + lat: one WAN exchange before the straggler factor."""
    v = np.asarray(payload, dtype=float)
    return v / up_bps + v / down_bps + latency_s


def regional_sync_base_s(payload, regional_bps, regional_latency_s):
    """2 v / bw_reg + lat_reg: one regional all-reduce before the straggler factor."""
    return 2.0 * np.asarray(payload, dtype=float) / regional_bps + regional_latency_s


def hidden_size(params, coefficient=0.03):
    """Default model width h = 0.03 * sqrt(P)."""
    return coefficient * np.sqrt(np.asarray(params, dtype=float))


def activation_bits(local_batch_tokens, hidden, activation_bytes, activation_compression):
    """Activation bits per step across one stage boundary, a = B * h * bytes * 8 / Ca."""
    return (local_batch_tokens * np.asarray(hidden, dtype=float) * activation_bytes * 8.0) / np.asarray(activation_compression, dtype=float)


def pipeline_parts_s(step_compute_s, stages, micro_batches, act_bits, link_bps, link_latency_s, straggler):
    """GPipe pipeline step and its parts (docs/cost_model.md section 4.C).

    c = t_comp / (S M) per micro-batch per stage; x = (2 a / M) / bw_pp per micro-batch
    transfer; t_pp = (M + S - 1) * (c + (x + lat_pp) * f(S)).
    Returns (t_pp, ticks, c, x): ticks = M + S - 1.
    """
    s = np.asarray(stages, dtype=float)
    m = np.asarray(micro_batches, dtype=float)
    c = np.asarray(step_compute_s, dtype=float) / (s * m)
    x = (2.0 * np.asarray(act_bits, dtype=float) / m) / link_bps
    ticks = m + s - 1.0
    t_pp = ticks * (c + (x + link_latency_s) * straggler)
    return t_pp, ticks, c, x


def bubble_fraction(stages, micro_batches):
    """GPipe bubble (S - 1) / (M + S - 1)."""
    s = np.asarray(stages, dtype=float)
    return (s - 1.0) / (np.asarray(micro_batches, dtype=float) + s - 1.0)


def outer_time_s(compute_block_s, sync_s, streaming):
    """max(H t_step, t_sync) with streaming overlap, H t_step + t_sync without."""
    block = np.asarray(compute_block_s, dtype=float)
    sync = np.asarray(sync_s, dtype=float)
    return np.where(streaming, np.maximum(block, sync), block + sync)
