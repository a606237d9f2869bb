"""The operations of one micro-batch through a transformer, forward and backward, per GPU of a
tensor-parallel group (docs/physics.md, section 1b).

Each operation is a GEMM (m x k times k x n: 2 m n k FLOP), a flash-attention kernel (FLOP per
token), or a memory-bound elementwise kernel (bytes moved per token). Sources of the counts:

- GEMMs of a layer (Megatron-LM, Shoeybi et al. 2019, arXiv 1909.08053; Narayanan et al. 2021,
  arXiv 2104.04473, section 3.5): the QKV and FFN-up projections are column-parallel (n / T), the
  attention output and FFN-down row-parallel (k / T). The backward pass of a GEMM is two GEMMs of
  the same FLOPs: the input gradient (m x n times n x k) and the weight gradient (k x m times m x n).
- Attention (FlashAttention-2, Dao 2023, arXiv 2307.08691, section 3): QK^T and PV are
  2 x 2 d s' FLOP per token and head over the s' keys it attends to, s' = s / 2 under the causal mask
  (the kernel skips masked blocks); the backward pass recomputes QK^T and adds dV, dP, dQ, dK:
  5 matrix products against 2, i.e. 2.5 times the forward FLOPs.
- Elementwise kernels (bytes read and written per token, 2-byte activations): each RMSNorm/LayerNorm
  reads and writes h values, a residual add reads 2 h and writes h, rotary embedding reads and writes
  the query and key heads, the FFN activation reads its input (2 f gated, f not) and writes f; the
  output layer's cross-entropy reads and writes the V logits. With sequence parallelism (Korthikanti
  et al. 2022, arXiv 2205.05198) the h-sized ones are split over the T GPUs. Their backward pass
  reads the saved input and the incoming gradient and writes one gradient: ASSUMED twice the forward
  bytes.
- Mixture of experts (Fedus et al. 2021, Switch Transformer; DeepSeek-V3, arXiv 2412.19437): a router
  GEMM (n = number of experts), each token's top_k routed experts and the shared ones as gated FFNs;
  an expert sees m top_k / experts of the micro-batch's tokens times the expert-parallel degree (the
  tokens of that many GPUs are dispatched to it).
- Multi-head latent attention (DeepSeek-V2, arXiv 2405.04434, section 2.1): down-projections of the
  query (rank q_lora) and key/value (rank kv_lora plus the shared rotary key), one GEMM as DeepSeek
  runs them, up-projections to heads x (head_dim + rope) queries, heads x head_dim keys and heads x
  v_head values.
- Multi-token prediction (DeepSeek-V3, arXiv 2412.19437, section 2.2): each of the shape's
  `mtp_modules` adds a projection of the concatenated hidden state and next-token embedding (2 h to h),
  one more transformer block (an MoE block in DeepSeek-V3: its 14B of MTP weights, model card) and
  the shared output layer again, trained with the main model; P_act (37B) does not count them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from planner.cost.compute.shape import ModelShape

ACTIVATION_BYTES = 2.0          # bf16 activations and gradients
BACKWARD_MEMORY_FACTOR = 2.0    # ASSUMED: an elementwise kernel's backward moves twice its forward bytes
ATTENTION_BACKWARD_FACTOR = 2.5  # FlashAttention-2: 5 matrix products in the backward pass against 2 forward
CAUSAL_SHARE = 0.5              # causal mask: a token attends to half the sequence on average


@dataclass(frozen=True)
class Gemm:
    m: float
    n: float
    k: float
    count: float = 1.0           # how many per micro-batch (layers x forward/backward)
    forward: tuple[float, float, float] | None = None   # (m, n, k) of the forward GEMM this one belongs to
    high_precision: bool = False  # runs in BF16 where the plan's precision is lower (Recipe.high_precision_head)
    routed: bool = False          # a routed expert's GEMM (its time follows the slowest GPU's load: experts.py)

    @property
    def flops(self) -> float:
        return 2.0 * self.m * self.n * self.k * self.count


@dataclass(frozen=True)
class Recipe:
    """How a run trains beyond its shape, where its report says so (assumptions constants; none by default).

    high_precision_head: under an FP8 plan the output layer(s) and the MoE router keep BF16 GEMMs
        (DeepSeek-V3, arXiv 2412.19437, section 3.3.1: the output head and the MoE gating modules, with the
        embedding, normalisation and attention, stay in their original precision).
    recompute_mla_up: the backward pass recomputes the RMSNorms and MLA's up-projections instead of keeping
        their outputs (section 3.2.3): one more forward of the query and KV up-projection GEMMs and of the two
        norms per layer.
    """

    high_precision_head: bool = False
    recompute_mla_up: bool = False


@dataclass(frozen=True)
class Attention:
    flops: float                 # per micro-batch
    backward: bool


@dataclass(frozen=True)
class Memory:
    bytes: float                 # per micro-batch


def _gemm_fwd_bwd(m: float, n: float, k: float, count: float, high_precision: bool = False) -> list[Gemm]:
    """A GEMM and its two backward GEMMs (input and weight gradients), each `count` times; each names
    the forward GEMM's shape (a chip's measured GEMMs are looked up by it: planner/cost/compute/roofline.py)."""
    fwd = (float(m), float(n), float(k))
    return [Gemm(m, n, k, count, fwd, high_precision), Gemm(m, k, n, count, fwd, high_precision),
            Gemm(k, n, m, count, fwd, high_precision)]


def _attention_gemms(s: ModelShape, m: float, t: float, count: float) -> tuple[list[Gemm], float, float]:
    """Projections of one attention block, per GPU of T: (GEMMs, attention FLOP per token, bytes of the
    rotary kernel per token). Multi-head latent attention when the shape has a kv_lora_rank."""
    heads = s.heads / t
    if s.kv_lora_rank:
        v_dim = s.v_head_dim or s.head_dim
        qk_dim = s.head_dim + s.rope_head_dim
        # the query and the KV down-projections (with the shared rotary key) read the same input and run as
        # one GEMM of n = q_lora + kv_lora + rope: DeepGEMM's table of DeepSeek-V3's shapes (README at its
        # initial commit a6d97a1) lists exactly that n, 2,112 = 1,536 + 512 + 64, with k = 7,168
        g = _gemm_fwd_bwd(m, s.q_lora_rank + s.kv_lora_rank + s.rope_head_dim, s.hidden, count)
        g += _gemm_fwd_bwd(m, heads * qk_dim, s.q_lora_rank, count)             # query up-projection
        g += _gemm_fwd_bwd(m, heads * (s.head_dim + v_dim), s.kv_lora_rank, count)  # K and V up-projection
        g += _gemm_fwd_bwd(m, s.hidden, heads * v_dim, count)                   # output projection
        attn = 2.0 * heads * (qk_dim + v_dim) * CAUSAL_SHARE * s.sequence_tokens
        rotary = 2.0 * (heads + 1) * s.rope_head_dim * ACTIVATION_BYTES
        return g, attn, rotary
    qkv = (s.heads + 2 * s.kv_heads) * s.head_dim / t
    g = _gemm_fwd_bwd(m, qkv, s.hidden, count) + _gemm_fwd_bwd(m, s.hidden, heads * s.head_dim, count)
    attn = 4.0 * heads * s.head_dim * CAUSAL_SHARE * s.sequence_tokens
    rotary = 2.0 * (s.heads + s.kv_heads) * s.head_dim / t * ACTIVATION_BYTES
    return g, attn, rotary


def _ffn_gemms(m: float, hidden: float, width: float, gated: bool, count: float) -> tuple[list[Gemm], float]:
    """An FFN of the given width (already split over T): (GEMMs, activation-kernel bytes per token)."""
    up = 2.0 * width if gated else width
    act = (3.0 if gated else 2.0) * width * ACTIVATION_BYTES
    return _gemm_fwd_bwd(m, up, hidden, count) + _gemm_fwd_bwd(m, hidden, width, count), act


def micro_batch_ops(s: ModelShape, micro_batch_tokens: float, tensor_parallel: float = 1.0,
                    expert_parallel: float = 1.0, recipe: Recipe = Recipe()) -> tuple[list[Gemm], list[Attention], list[Memory]]:
    """Every operation of one micro-batch of m tokens, forward and backward, on one GPU of a
    tensor-parallel group of T (sequence parallelism on), for the whole model (all layers), trained
    as `recipe` says."""
    m = float(micro_batch_tokens)
    t = max(float(tensor_parallel), 1.0)
    h = float(s.hidden)
    mtp = float(s.mtp_modules)
    layers = s.layers + mtp                          # the MTP blocks are MoE blocks where the model has MoE
    moe_layers = s.moe_layers + mtp if s.moe_layers else 0.0
    dense_layers = layers - moe_layers
    heads = 1.0 + mtp                                # the output layer, once per prediction depth
    gemms, attn_flops, rotary = _attention_gemms(s, m, t, layers)
    gemms = list(gemms)
    ffn_dense, act_dense = _ffn_gemms(m, h, s.ffn / t, s.gated, dense_layers)
    gemms += ffn_dense
    act_bytes = act_dense * dense_layers
    if s.moe_layers:
        routed_m = m * s.top_k / s.experts * max(float(expert_parallel), 1.0)
        experts_here = s.experts / max(float(expert_parallel), 1.0)
        gemms += _gemm_fwd_bwd(m, s.experts, h, moe_layers, recipe.high_precision_head)    # router
        routed, act_routed = _ffn_gemms(routed_m, h, s.expert_ffn, True, moe_layers * experts_here)
        shared, act_shared = _ffn_gemms(m, h, s.shared_experts * s.expert_ffn / t, True, moe_layers)
        gemms += [replace(g, routed=True) for g in routed] + shared
        act_bytes += act_routed * s.top_k * moe_layers + act_shared * moe_layers
    if mtp:
        gemms += _gemm_fwd_bwd(m, h, 2.0 * h, mtp)                                         # MTP projection
    gemms += _gemm_fwd_bwd(m, s.vocabulary / t, h, heads, recipe.high_precision_head)          # output layer
    norms_again = 0.0
    if recipe.recompute_mla_up and s.kv_lora_rank:
        heads_t = s.heads / t
        for n, k in ((heads_t * (s.head_dim + s.rope_head_dim), s.q_lora_rank),            # query up-projection
                     (heads_t * (s.head_dim + (s.v_head_dim or s.head_dim)), s.kv_lora_rank)):  # K and V up
            gemms.append(Gemm(m, n, k, layers, (m, float(n), float(k))))                 # its forward once more
        norms_again = layers * 2 * 2 * h * ACTIVATION_BYTES / t                        # 2 RMSNorms, read and write h
    per_token_bytes = (layers * (2 * 2 * h + 2 * 3 * h) * ACTIVATION_BYTES / t        # 2 norms, 2 residual adds
                       + layers * rotary * s.rotary + act_bytes
                       + heads * 2.0 * s.vocabulary / t * ACTIVATION_BYTES)             # cross-entropy
    attention = [Attention(attn_flops * layers * m, backward=False),
                 Attention(ATTENTION_BACKWARD_FACTOR * attn_flops * layers * m, backward=True)]
    memory = [Memory(per_token_bytes * m * (1.0 + BACKWARD_MEMORY_FACTOR) + norms_again * m)]
    return gemms, attention, memory
