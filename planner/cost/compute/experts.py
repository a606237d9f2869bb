"""The expert-parallel all-to-all of a mixture-of-experts model (docs/physics.md, section 1b).

With expert parallelism over E GPUs, every MoE layer sends each token's hidden state to the GPUs of its
top_k routed experts (dispatch) and brings their outputs back (combine); the backward pass does the
same with the gradients, so 4 all-to-alls per MoE layer and micro-batch (GShard, Lepikhin et al. 2020,
arXiv 2006.16668, section 3; DeepSeek-V3, arXiv 2412.19437, section 3.2.2). Per GPU and micro-batch of
m tokens (m / T on each GPU of a tensor-parallel group of T, sequence parallelism on):

    inside a server (NVLink):  n_in = k (1 - 1/E) copies of h values per token and transfer
    across servers (the NIC):  n_out = k' (S - 1) / S,  S = E / G servers in the group (G GPUs each),
                               k' = min(k, node_limit) where a token is sent once to each of at most
                               node_limit servers and forwarded there over NVLink (DeepSeek-V3, section
                               3.2.2: node-limited routing, M = 4), k' = k otherwise
    bytes per value: the two dispatches (forward; the backward's gradient before the down-projection)
        at `dispatch_bytes`, the two combines at 2 (bf16) (DeepSeek-V3, section 3.3.4: dispatch in FP8,
        combine in BF16; 2 bytes everywhere unless a run says otherwise)
    t_a2a = L_moe max(m/T n_in h b_sum / bw_nvlink, m/T n_out h b_sum / bw_nic), b_sum = 2 b_d + 2 x 2,
        L_moe the MoE layers and the multi-token-prediction blocks (MoE blocks in DeepSeek-V3),
        the NVLink and NIC transfers running at once (DeepSeek-V3, section 3.2.2).

Overlap (`overlap`): a schedule that runs one micro-batch's all-to-all during another's compute (DualPipe,
DeepSeek-V3 section 3.2.1: "both all-to-all and PP communication can be fully hidden during execution";
Megatron-Core's combined 1F1B overlap of the EP all-to-all does the same) hides it up to the compute's
length, and the SMs given to the communication kernels are taken from the compute (DeepSeek-V3 section
3.2.2: 20 of the H800's 132 SMs), so:
    overlap:  t = t_c SMs / (SMs - SMs_comm) + max(0, t_a2a - t_c SMs / (SMs - SMs_comm))
    without:  t = t_c + t_a2a
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from planner.cost.compute.ops import ACTIVATION_BYTES
from planner.cost.compute.shape import ModelShape

TRANSFERS_PER_LAYER = 2          # dispatch and combine of the forward pass; the backward pass repeats both


@dataclass(frozen=True)
class ExpertFabric:
    """Where an MoE layer's experts are and how its all-to-all runs (assumptions constants)."""

    expert_parallel: float        # E: GPUs the experts are spread over
    gpus_per_server: float        # G: GPUs sharing the server's NVLink
    intra_gb_per_s: float         # NVLink per GPU and direction, GB/s
    scale_out_gb_per_s: float     # network across servers per GPU and direction, GB/s
    node_limit: float = 0.0       # servers a token is sent to at most (0: no limit)
    dispatch_bytes: float = ACTIVATION_BYTES
    overlap: bool = False         # hidden behind another micro-batch's compute (DualPipe)
    communication_sms: float = 0.0  # SMs reserved for the communication kernels while overlapping


def all_to_all_bytes(shape: ModelShape, tokens: float, f: ExpertFabric) -> tuple[float, float]:
    """(NVLink bytes, NIC bytes) one GPU sends per micro-batch of `tokens` tokens (on that GPU), all layers."""
    e = max(float(f.expert_parallel), 1.0)
    if not shape.moe_layers or e <= 1.0:
        return 0.0, 0.0
    g = max(min(float(f.gpus_per_server), e), 1.0)
    servers = math.ceil(e / g)
    k = float(shape.top_k)
    k_out = min(k, f.node_limit) if f.node_limit > 0 else k
    per_value = TRANSFERS_PER_LAYER * (f.dispatch_bytes + ACTIVATION_BYTES)
    per_copy = tokens * shape.hidden * per_value * (shape.moe_layers + shape.mtp_modules)   # MTP blocks are MoE too
    nvlink = k * (1.0 - 1.0 / e) * per_copy
    nic = k_out * (servers - 1.0) / servers * per_copy
    return nvlink, nic


def all_to_all_s(shape: ModelShape, tokens: float, f: ExpertFabric) -> float:
    """t_a2a: the NVLink and NIC parts at once (see the module docstring)."""
    nvlink, nic = all_to_all_bytes(shape, tokens, f)
    t_in = nvlink / (f.intra_gb_per_s * 1e9) if nvlink else 0.0
    t_out = nic / (f.scale_out_gb_per_s * 1e9) if nic else 0.0
    return max(t_in, t_out)


def with_all_to_all_s(compute_s: float, a2a_s: float, f: ExpertFabric, sms: int) -> float:
    """The micro-batch's time with its all-to-all, overlapped or not (see the module docstring)."""
    if not f.overlap:
        return compute_s + a2a_s
    slowed = compute_s * sms / (sms - f.communication_sms)
    return slowed + max(0.0, a2a_s - slowed)
