"""Transformer shapes for the compute model: presets (models/llm/shapes/ID.json) and defaults.

A preset gives the shape as its model card or paper states it. Without one, the shape is taken
from the parameter count P and width h with standard aspect ratios (docs/physics.md, section 1b):

    head dimension 128 (GPT-3, Brown et al. 2020, Table 2.1: d_head = 128 for the 175B model;
    Llama 2 and 3 also use 128), heads = h / 128, KV heads = heads (multi-head attention);
    FFN width 4 h, not gated (GPT-3, and Vaswani et al. 2017: d_ff = 4 d_model);
    vocabulary 50,257 (GPT-2/GPT-3 byte-pair encoding, Radford et al. 2019) with an untied output layer;
    sequence length 2,048 (GPT-3, Table 2.1: n_ctx = 2048);
    layers L = round((P - 2 V h) / (12 h^2)) (a layer of attention 4 h^2 and FFN 8 h^2 parameters).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from functools import lru_cache

from planner.cost.assumptions import MODELS_DIR

SHAPES_DIR = MODELS_DIR / "llm" / "shapes"
DEFAULT_HEAD_DIM = 128            # GPT-3 Table 2.1 (175B: d_head 128); Llama 3 (arXiv 2407.21783, Table 3)
DEFAULT_FFN_RATIO = 4.0           # Vaswani et al. 2017; GPT-3: d_ff = 4 d_model
DEFAULT_VOCABULARY = 50_257       # GPT-2/GPT-3 BPE vocabulary (Radford et al. 2019)
DEFAULT_SEQUENCE_TOKENS = 2_048   # GPT-3 Table 2.1: n_ctx = 2048


@dataclass(frozen=True)
class ModelShape:
    """One decoder-only transformer. Dense layers have an FFN of width `ffn` (three matrices when
    `gated`, SwiGLU; two otherwise); MoE layers (`moe_layers` of the `layers`, the last ones) have
    `experts` routed experts of width `expert_ffn`, `top_k` per token, and `shared_experts` always on."""

    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    ffn: int
    vocabulary: int
    sequence_tokens: int
    gated: bool = False
    rotary: bool = True           # rotary position embedding on queries and keys (False: ALiBi or learned positions)
    moe_layers: int = 0
    experts: int = 0
    top_k: int = 0
    expert_ffn: int = 0
    shared_experts: int = 0
    q_lora_rank: int = 0          # multi-head latent attention (DeepSeek-V2/V3): query down-projection rank
    kv_lora_rank: int = 0         # MLA: key/value down-projection rank
    rope_head_dim: int = 0        # MLA: decoupled rotary dimension per head (keys shared across heads)
    v_head_dim: int = 0           # MLA: value dimension per head (0 = head_dim)
    mtp_modules: int = 0          # multi-token prediction depth D (DeepSeek-V3: 1), trained with the model

    def with_sequence(self, sequence_tokens: int) -> "ModelShape":
        return replace(self, sequence_tokens=int(sequence_tokens))


def shape_names() -> tuple[str, ...]:
    """Ids of the shape presets (models/llm/shapes/*.json)."""
    return tuple(sorted(p.stem for p in SHAPES_DIR.glob("*.json")))


@lru_cache(maxsize=None)
def preset_shape(name: str) -> ModelShape:
    """The shape preset models/llm/shapes/NAME.json (its `shape` object; `sources` cite each field)."""
    data = json.loads((SHAPES_DIR / f"{name}.json").read_text())
    return ModelShape(**data["shape"])


def default_shape(params: float, hidden: float) -> ModelShape:
    """The shape of a dense model of P parameters and width h from the standard aspect ratios above."""
    h = max(int(round(hidden)), DEFAULT_HEAD_DIM)
    heads = max(1, h // DEFAULT_HEAD_DIM)
    layers = max(1, int(round((params - 2.0 * DEFAULT_VOCABULARY * h) / (12.0 * h * h))))
    return ModelShape(layers=layers, hidden=h, heads=heads, kv_heads=heads, head_dim=DEFAULT_HEAD_DIM,
                      ffn=int(DEFAULT_FFN_RATIO * h), vocabulary=DEFAULT_VOCABULARY,
                      sequence_tokens=DEFAULT_SEQUENCE_TOKENS)
