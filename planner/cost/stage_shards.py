"""A pipeline stage's training state sharded over its data-parallel replicas (dtplan, `stage_state_shards`;
docs/physics.md section 3, "State sharded across servers").

Llama 3 405B (arXiv 2407.21783, section 3.3.2) trains its 16-stage pipelines data-parallel over 64 or 128
groups with FSDP that "shards optimizer states and gradients, but for model shards we do not reshard after
forward computation" (to avoid an extra all-gather in the backward pass). So each node of a stage holds,
per parameter of its stage:

- the low-precision weights whole (gathered for the forward pass and kept through the backward pass): b bytes,
  b the precision's bytes (beta_ref = 2 b + 12: weights and gradients of b bytes each and 12 bytes of fp32
  master weights and AdamW moments, Rajbhandari et al. 2020, arXiv 1910.02054, section 3.1);
- its 1 / K share of the gradients and of the optimizer state: (beta - b) / K (ZeRO stage 2, same source,
  section 5.2: P_os+g),

K the data-parallel replicas of the stage the state is sharded over. Inside a server of D = A / T
tensor-parallel groups (`tensor_parallel.data_parallel_groups`) each group holds the stage's weights (split
T ways over its accelerators) and the D K data-parallel ranks of the stage share the gradients and the
optimizer state, so the node holds

    state = P / S (D b + (beta - b) / K)                                        (K > 1)

against P / S (D w + beta - w), w = 2 b, with the in-server distributed optimizer alone (K = 1,
`tensor_parallel.state_factor`). At fp16, D = 1: (2 + 14 / K) bytes per parameter.

Communication: sharding changes the collective, not its volume. Without it the G data-parallel replicas
all-reduce the gradients, 2 (G - 1) / G v per node (a ring, Patarasuk & Yuan 2009); with the state sharded
over all G (FSDP), a reduce-scatter of the gradients and an all-gather of the updated weights move
(G - 1) / G v each, the same 2 (G - 1) / G v (ZeRO, section 7.2.1: P_os+g keeps data parallelism's 2 Psi).
Sharded over groups of K and replicated across the G / K groups (hybrid sharding), the per-node volume is
2 v ((K - 1) / K + (G / K - 1) / G) = 2 (G - 1) / G v as well. No reshard after the forward pass means no
second all-gather in the backward pass (Llama 3's reason). So the profile's sync term (`physics.sync_base_s`,
overlapped with the last backward pass under `dp_overlap`) stays as it is; the all-gather, which FSDP
prefetches into the next step's forward pass, is charged in that same window (conservative).

Where it applies: pp_group plans whose G = floor(N / S) groups train in lockstep, H = 1 (a DiLoCo replica
with H > 1 keeps its own optimizer state), with G >= K. The state is sharded over all G groups; the model
charges it at K ways, the most it can be per node, so that memory (and the `fit` recomputation share and the
step that read it) depends on class decisions only, never on n, H or R: the exact search's facts hold
(docs/physics.md, "What the exact search needs"). The planner's space keeps H = 1 and G >= K
(`planner/space.py`); a plan given to `evaluate` that breaks either is refused (planner/schema/plan.py). A
pipeline over the WAN (one pipeline), flat and hierarchical replicas are not affected.
"""

from __future__ import annotations

from planner.cost import tensor_parallel
from planner.cost.assumptions import Assumptions


def shards(a: Assumptions, mode: str) -> float:
    """K for a plan of `mode`: `stage_state_shards` for pp_group, else 1 (not sharded)."""
    return float(a.stage_state_shards) if mode == "pp_group" else 1.0


def weight_bytes_per_param(a: Assumptions, precision: str) -> float:
    """b, the low-precision weight's bytes per parameter: half of the bytes each data-parallel group holds on
    its own without sharding, weights and gradients (`tensor_parallel.replicated_bytes_per_param`, 4 at fp16)."""
    return tensor_parallel.replicated_bytes_per_param(a, precision) / 2.0


def state_factor(a: Assumptions, precision: str, accelerators_per_node: int, shard_count: float) -> float:
    """A stage node's training state over P / S beta:
        (D b + (beta - b) / K) / beta      for K > 1 (module docstring),
        `tensor_parallel.state_factor`     for K = 1 (unchanged)."""
    if shard_count <= 1.0:
        return tensor_parallel.state_factor(a, precision, accelerators_per_node)
    d = tensor_parallel.data_parallel_groups(a, accelerators_per_node)
    beta = a.bytes_per_param(precision)
    b = weight_bytes_per_param(a, precision)
    return (d * b + (beta - b) / shard_count) / beta


def least_state_factor(a: Assumptions, precision: str, shard_count: float) -> float:
    """`state_factor` at D = 1 (one tensor-parallel group per node), the least at any degree (both branches grow
    with D): 1 for K = 1, (b + (beta - b) / K) / beta for K > 1. S_min = ceil(P beta x this / V) is then a lower
    bound on the stages of any stage node that fits (planner/space.py)."""
    if shard_count <= 1.0:
        return 1.0
    beta = a.bytes_per_param(precision)
    b = weight_bytes_per_param(a, precision)
    return (b + (beta - b) / shard_count) / beta
