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

Token permutation (`permutation`), memory-bound kernels on the compute SMs, priced like the other elementwise
kernels at the HBM bandwidth (planner/cost/compute/roofline.py). Per MoE block and micro-batch of m tokens on a
GPU, with r = m k rows (one per routed copy; a GPU holds on average m k of them, as many as it sends), h values
per row, the dispatch side at b_d bytes and the combine side at 2, as Megatron-LM's token dispatchers do it
(NVIDIA/Megatron-LM megatron/core/transformer/moe/token_dispatcher.py, read at commit 0014f13):
    "alltoall" (MoEAlltoAllTokenDispatcher): permutation 1 before the all-to-all (reads the m tokens, writes r rows),
        permutation 2 sorting the received rows by local expert (reads and writes r), and after the experts
        unpermutation 2 (r and r) and unpermutation 1 (reads r, writes the m weighted sums):
        forward (3 r + m) h (b_d + 2) bytes.
    "fused_dispatch" (MoEFlexTokenDispatcher with DeepEP, deepseek-ai/DeepEP: the dispatch and combine kernels
        gather the rows for each rank and sum them on return, on the communication SMs): only the permutation of
        the received rows into expert order (reads and writes r) and its inverse before the combine (r and r):
        forward 2 r h (b_d + 2) bytes.
    The backward pass moves the same bytes: the gradient of a permutation is its inverse permutation (the
    dispatcher's permute and unpermute are each other's backward), with the gradients of the combine side
    dispatched at b_d and those of the dispatch side combined at 2, as the all-to-all's own bytes are.
    A token that picks two experts on one GPU arrives there once (DeepEP), so r is an upper bound on the rows
    the receiver reads: at 4 of 256 experts per GPU, top-8 at random routing reaches 7.8 distinct GPUs of 64.

Expert load imbalance within a micro-batch (`imbalance_floor`): the E GPUs of a group run their experts' GEMMs on
the tokens routed to them, and the layer waits for the slowest. A statistical floor, not a measurement: with
every expert equally likely (the expected loads balanced, as auxiliary-loss-free balancing aims for over a batch)
and tokens routed independently, a GPU holding N / E of the N experts receives from each of the E m tokens of
the group a hypergeometric count of its k distinct experts (mean k / E, variance k / E (1 - 1 / E) (N - k) /
(N - 1)); over E m tokens its load is about normal, mean m k, and the slowest of E GPUs expects
    m k + z_E sigma,   z_E = E[max of E standard normals] = int x E phi(x) Phi(x)^(E - 1) dx,
so the routed experts' GEMMs take (1 + z_E sigma / (m k)) their balanced time. Real routing is correlated (the
tokens of a sequence pick related experts), so the real spread is larger; no published per-micro-batch figure
was found to size it (docs/physics.md, section 1b).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

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
    permutation: str = "none"     # the token dispatcher's permutations: "none", "alltoall", "fused_dispatch"
    imbalance: bool = False       # the slowest GPU's routed load sets the experts' GEMMs (statistical floor)


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


def permutation_bytes(shape: ModelShape, tokens: float, f: ExpertFabric) -> float:
    """HBM bytes one GPU's permutation kernels move per micro-batch of `tokens` tokens, forward and backward,
    all MoE blocks (see the module docstring); 0 without expert parallelism or with permutation "none"."""
    if not shape.moe_layers or f.permutation == "none" or float(f.expert_parallel) <= 1.0:
        return 0.0
    rows = tokens * shape.top_k
    passes = 3.0 * rows + tokens if f.permutation == "alltoall" else 2.0 * rows
    forward = passes * shape.hidden * (f.dispatch_bytes + ACTIVATION_BYTES)
    return TRANSFERS_PER_LAYER * forward * (shape.moe_layers + shape.mtp_modules)


@lru_cache(maxsize=None)
def expected_max_standard_normal(n: int) -> float:
    """z_n = E[max of n independent standard normals] by the midpoint rule on [-12, 12] (step 1e-3)."""
    if n <= 1:
        return 0.0
    step, total = 1e-3, 0.0
    for i in range(24_000):
        x = -12.0 + (i + 0.5) * step
        pdf = math.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi)
        cdf = 0.5 * (1.0 + math.erf(x / math.sqrt(2.0)))
        total += x * n * pdf * cdf ** (n - 1) * step
    return total


def imbalance_floor(shape: ModelShape, tokens: float, f: ExpertFabric) -> float:
    """1 + z_E sigma / (m k): the slowest GPU's routed load over the mean (see the module docstring); 1 when
    the switch is off, without expert parallelism, or with every expert on every GPU."""
    e = float(f.expert_parallel)
    n, k = float(shape.experts), float(shape.top_k)
    if not f.imbalance or not shape.moe_layers or e <= 1.0 or n <= k or tokens <= 0:
        return 1.0
    per_token_var = k / e * (1.0 - 1.0 / e) * (n - k) / (n - 1.0)
    sigma = math.sqrt(e * tokens * per_token_var)
    return 1.0 + expected_max_standard_normal(int(round(e))) * sigma / (tokens * k)
