"""Model FLOPs per token: the numerator of a model FLOP utilisation (MFU), on a stated basis.

dtplan's own basis is 6 P FLOP per token (2 P forward, 4 P backward; Kaplan et al. 2020,
arXiv 2001.08361), the basis of every utilisation in models/mfu.json. Published runs often count
more: PaLM (Chowdhery et al. 2022, arXiv 2204.02311, appendix B) defines the model FLOPs of a
training token as 6 N + 12 L H Q T (N parameters, L layers, H attention heads of width Q, T the
sequence length): the attention scores Q K^T and their product with V are two matmuls of 2 T H Q
FLOP per token and layer in the forward pass, three times that with the backward pass. A run's
reported MFU compared with a prediction must use the run's own basis, else a difference of
counting reads as a difference of time (docs/validation.md; INTELLECT-1's 36.2% counts 1.25 times
dtplan's 6 P per token).

Causal masking: a decoder's mask leaves only about half of the T x T scores to compute. PaLM's
convention (and the torchtitan-derived code of INTELLECT-1, PrimeIntellect-ai/prime
`get_num_flop_per_token`: "we follow the convention and do not account for sparsity in causal
attention") counts the full matrix: basis "6p_attention". The halved count, 6 N + 6 L H Q T
(FlashAttention's benchmark convention), is basis "6p_attention_causal". Recomputation is never
counted (model FLOPs, not hardware FLOPs).

Used by scripts/validate_published.py to compare a reported MFU on the run's basis; the cost model
itself keeps 6 P_act (its u is on that basis)."""

from __future__ import annotations

MFU_BASES = ("6p", "6p_attention", "6p_attention_causal")
ATTENTION_FLOP_PER_LAYER_WIDTH_TOKEN = 12.0   # 2 matmuls x 2 FLOP per multiply-add x 3 (forward + backward)


def attention_flops_per_token(layers: float, attention_width: float, seq_len: float, causal: bool = False) -> float:
    """Attention-score FLOPs per training token beyond 6 N: 12 L (H Q) T (PaLM appendix B), half of
    it when the causal mask's skipped half is not counted. H Q is the attention width (heads x head
    dimension; the model width for most dense transformers, 12,288 for PaLM 540B's 48 x 256)."""
    full = ATTENTION_FLOP_PER_LAYER_WIDTH_TOKEN * layers * attention_width * seq_len
    return full / 2.0 if causal else full


def model_flops_per_token(params: float, basis: str = "6p", layers: float | None = None,
                          attention_width: float | None = None, seq_len: float | None = None) -> float:
    """Model FLOPs of one training token on `basis` (one of MFU_BASES):

        6p                   6 P
        6p_attention         6 P + 12 L (H Q) T          (PaLM, arXiv 2204.02311 appendix B)
        6p_attention_causal  6 P + 6 L (H Q) T           (the same with the causal mask's half skipped)

    P is the parameter count the run's own formula uses (INTELLECT-1's code counts the parameters
    without the token embedding; PaLM counts all). The attention bases need `layers`,
    `attention_width` and `seq_len` (each > 0); a missing or non-positive one raises ValueError
    naming it."""
    if basis not in MFU_BASES:
        raise ValueError(f"mfu basis: must be one of {', '.join(MFU_BASES)}, got {basis!r}")
    if not params > 0:
        raise ValueError(f"mfu basis params: must be > 0, got {params!r}")
    flops = 6.0 * params
    if basis == "6p":
        return flops
    for name, value in (("layers", layers), ("attention_width", attention_width), ("seq_len", seq_len)):
        if value is None or not value > 0:
            raise ValueError(f"mfu basis {name}: must be > 0 for basis {basis!r}, got {value!r}")
    return flops + attention_flops_per_token(layers, attention_width, seq_len, causal=basis == "6p_attention_causal")
