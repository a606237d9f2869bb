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

What K shards (`stage_sharded_state`): "gradients_and_optimizer" as above (Llama 3), or "optimizer", ZeRO stage 1
(Rajbhandari et al. 2020, section 5.1: P_os, the optimizer state partitioned, gradients and weights whole), as
DeepSeek-V3 ran it (arXiv 2412.19437, section 3.2.1: "ZeRO-1 Data Parallelism"): each data-parallel group then
holds its weights and gradients whole, w = 2 b bytes per parameter (`tensor_parallel.replicated_bytes_per_param`),
and 1 / K of the fp32 master weights and moments, (beta - w) / K:

    state = P / S (D w + (beta - w) / K)                                        (ZeRO-1, K > 1)

The collective is the same reduce-scatter and all-gather (ZeRO, section 7.2.1: P_os keeps 2 Psi), so the sync
is unchanged. Let r be the bytes per parameter a group holds whole: b (gradients and optimizer sharded), w
(optimizer only, or K = 1).

Expert parallelism inside a stage (`stage_expert_parallel`, mixture-of-experts models): DeepSeek-V3 spreads
each MoE layer's routed experts over EP64, 64 GPUs of 8 servers (section 3.2.1), while its pipeline of 16 stages
runs data-parallel over the 16 servers of each stage. So the E = expert_parallel_degree / A servers of an
expert-parallel group are E data-parallel groups of the same stage: each holds the stage's attention, dense and
shared-expert weights whole (P_w / S of them) and 1 / E of its routed experts' (P_r / S), those spread over its
A accelerators (expert_parallel_degree >= A: no tensor-parallel group replicates them). Each routed parameter has
K / E replicas among the K groups, over which its optimizer state is sharded (its gradients too under
"gradients_and_optimizer"), so per node

    state = P_w / S (D r + (beta - r) / K) + P_r / S (r / E + (beta - r) / max(E, K))

(K = 1 with r = w: P_w / S (D w + beta - w) + P_r / S beta / E). P_r is the routed experts' parameter count:
the shape preset's exact one where `model_shape` names a preset with experts (layers x experts x 3 h f_e, a gated
expert of width f_e: DeepSeek-V3, 58 x 256 x 3 x 7,168 x 2,048 = 653.9e9 of its 671e9), else P - P_act, the split
of `memory.moe_state_bytes_per_node` (the reference's); P_w = P - P_r. DualPipe's second copy (its weights and
gradients, `physics.schedule_state_bytes`) is a copy of the node's own parameters, D P_w / S + P_r / (S E).
The expert all-to-all this sharding implies is priced where the compute model prices it (u from
planner/cost/compute/experts.py with the same expert_parallel_degree), not here. A node that holds 1 / E of a
stage's experts syncs only their gradients: each stage node's payload (`per_stage_payload`) is
(P_w + P_r / E) / S parameters (`payload_params`), and under a ring all-reduce each expert is reduced only among the
G / E groups that hold it (its experts' share then counts (G - E) / (G - 1), `payload_params` with G).

Where it applies: pp_group plans of a mixture-of-experts model, in lockstep (H = 1: the E groups of an
expert-parallel group hold one model between them), with G >= E groups (`min_groups`, max(K, E) with the
sharding above), as K; charged at E ways, the most per node (left-over groups, G not a multiple of E, join an
expert-parallel group, which then spreads its experts over more servers). Memory then still depends on class
decisions only. The instance validates expert_parallel_degree a multiple of A (planner/schema/instance.py).
"""

from __future__ import annotations

import numpy as np

from planner.cost import tensor_parallel
from planner.cost.assumptions import Assumptions


def shards(a: Assumptions, mode: str) -> float:
    """K for a plan of `mode`: `stage_state_shards` for pp_group, else 1 (not sharded)."""
    return float(a.stage_state_shards) if mode == "pp_group" else 1.0


def weight_bytes_per_param(a: Assumptions, precision: str) -> float:
    """b, the low-precision weight's bytes per parameter: half of the bytes each data-parallel group holds on
    its own without sharding, weights and gradients (`tensor_parallel.replicated_bytes_per_param`, 4 at fp16)."""
    return tensor_parallel.replicated_bytes_per_param(a, precision) / 2.0


def whole_bytes_per_param(a: Assumptions, precision: str, shard_count: float) -> float:
    """r, the bytes per parameter each data-parallel group holds whole (module docstring): b with the gradients
    and the optimizer state sharded over K > 1 groups, w = 2 b with the optimizer state alone (ZeRO-1) or K = 1."""
    if shard_count > 1.0 and a.stage_sharded_state == "gradients_and_optimizer":
        return weight_bytes_per_param(a, precision)
    return tensor_parallel.replicated_bytes_per_param(a, precision)


def state_factor(a: Assumptions, precision: str, accelerators_per_node: int, shard_count: float) -> float:
    """A stage node's training state over P / S beta:
        (D r + (beta - r) / K) / beta      for K > 1 (module docstring; r = b, or w under ZeRO-1),
        `tensor_parallel.state_factor`     for K = 1 (unchanged)."""
    if shard_count <= 1.0:
        return tensor_parallel.state_factor(a, precision, accelerators_per_node)
    d = tensor_parallel.data_parallel_groups(a, accelerators_per_node)
    beta = a.bytes_per_param(precision)
    r = whole_bytes_per_param(a, precision, shard_count)
    return (d * r + (beta - r) / shard_count) / beta


def least_state_factor(a: Assumptions, precision: str, shard_count: float) -> float:
    """`state_factor` at D = 1 (one tensor-parallel group per node), the least at any degree (both branches grow
    with D): 1 for K = 1, (r + (beta - r) / K) / beta for K > 1. S_min = ceil(P beta x this / V) is then a lower
    bound on the stages of any stage node that fits (planner/space.py)."""
    if shard_count <= 1.0:
        return 1.0
    beta = a.bytes_per_param(precision)
    r = whole_bytes_per_param(a, precision, shard_count)
    return (r + (beta - r) / shard_count) / beta


def expert_servers(a: Assumptions, accelerators_per_node: int, mode: str, moe: bool) -> float:
    """E, the servers of a stage's expert-parallel group: expert_parallel_degree / A for pp_group plans of a
    mixture-of-experts model with `stage_expert_parallel`, else 1 (every expert of the stage on each node)."""
    if not (a.stage_expert_parallel and moe and mode == "pp_group"):
        return 1.0
    return max(float(a.expert_parallel_degree) / float(accelerators_per_node), 1.0)


def min_groups(a: Assumptions, accelerators_per_node: int, moe: bool) -> int:
    """The fewest data-parallel groups G a pp_group plan may have: max(K, E) (1 when neither is set)."""
    return int(np.ceil(max(shards(a, "pp_group"), expert_servers(a, accelerators_per_node, "pp_group", moe))))


def synchronous(a: Assumptions, moe: bool) -> bool:
    """Whether pp_group plans must sync every step (H = 1): a stage's state shared between its groups, K > 1
    or experts spread over E > 1 servers (`stage_expert_parallel`)."""
    return a.stage_state_shards > 1 or (a.stage_expert_parallel and moe)


def routed_params(a: Assumptions, params, active_params) -> np.ndarray:
    """P_r, the routed experts' parameters (module docstring): the `model_shape` preset's count,
    moe_layers x experts x (3 if gated else 2) x h x expert_ffn, at most P; else P - P_act."""
    shape = None
    if a.model_shape:        # the compute model's shapes, imported only here (planner/cost/physics.py, its imports)
        from planner.cost.compute.shape import preset_shape
        shape = preset_shape(a.model_shape)
    p = np.asarray(params, dtype=float)
    if shape is not None and shape.moe_layers and shape.experts:
        matrices = 3.0 if shape.gated else 2.0
        return np.minimum(float(shape.moe_layers * shape.experts) * matrices * shape.hidden * shape.expert_ffn, p)
    return p - np.asarray(active_params, dtype=float)


def state_bytes(a: Assumptions, precision: str, accelerators_per_node: int, mode: str, moe: bool,
                params, active_params, stages) -> np.ndarray:
    """A pp_group stage node's training state (bytes) without its schedule's copy, with its routed experts
    sharded E ways (module docstring):
        P_w / S beta state_factor + P_r / S (r / E + (beta - r) / max(E, K)),
    and for E = 1 P / S beta state_factor exactly (`memory.state_bytes_per_node`)."""
    beta = a.bytes_per_param(precision)
    k = shards(a, mode)
    factor = state_factor(a, precision, accelerators_per_node, k)
    e = expert_servers(a, accelerators_per_node, mode, moe)
    s = np.asarray(stages, dtype=float)
    if e <= 1.0:
        return np.asarray(params, dtype=float) * beta / s * factor
    routed = routed_params(a, params, active_params)
    r = whole_bytes_per_param(a, precision, k)
    whole = (np.asarray(params, dtype=float) - routed) / s * beta * factor
    return whole + routed / s * (r / e + (beta - r) / max(e, k))


def copy_params(a: Assumptions, accelerators_per_node: int, mode: str, moe: bool, params, active_params):
    """The parameters a stage node holds the weights and gradients of, per stage-fraction P / S: D P_w + P_r / E
    (DualPipe's second copy copies them; D P for E = 1)."""
    d = tensor_parallel.data_parallel_groups(a, accelerators_per_node)
    e = expert_servers(a, accelerators_per_node, mode, moe)
    routed = routed_params(a, params, active_params)
    return d * (np.asarray(params, dtype=float) - routed) + routed / e


def payload_params(a: Assumptions, accelerators_per_node: int, mode: str, moe: bool, params, active_params,
                   groups=None):
    """The parameters whose gradients a node syncs, of the whole model: P, or P_w + P_r / E with the stage's
    experts spread over E > 1 servers (each node holds and syncs 1 / E of them; module docstring). Given the
    plan's G `groups` and a ring all-reduce over concurrent links (the sync `physics.sync_base_s` prices as
    2 (G - 1) / G v), the experts' share counts as reduced among their G / E replicas only:
        P_w + P_r / E x ring(G / E) / ring(G),   ring(x) = (x - 1) / x,
    so that 2 (G - 1) / G times it is 2 (G - 1) / G P_w + 2 (G / E - 1) / (G / E) P_r / E, each part's own ring
    (non-decreasing in G, as the exact search needs; 0 for the experts at G = E: one copy each, nothing to
    reduce). The other sync patterns keep P_w + P_r / E."""
    e = expert_servers(a, accelerators_per_node, mode, moe)
    if e <= 1.0:
        return params
    routed = routed_params(a, params, active_params) / e
    if groups is not None and a.concurrent_up_down and a.sync_pattern == "all_reduce":
        g = np.maximum(np.asarray(groups, dtype=float), e)
        routed = routed * np.where(g > 1.0, (g - e) / np.maximum(g - 1.0, 1e-300), 1.0)
    return np.asarray(params, dtype=float) - routed_params(a, params, active_params) + routed


def least_bytes_per_param(a: Assumptions, precision: str, mode: str, moe: bool, accelerators_per_node: int,
                          params, active_params) -> float:
    """beta', the least state per parameter of a stage node at any tensor-parallel degree (D = 1), over P / S:
    beta x `least_state_factor` for E = 1, else (`state_bytes` at D = 1) S / P. S_min = ceil(P beta' / V) is a
    lower bound on the stages of any stage node that fits (planner/space.py)."""
    beta = a.bytes_per_param(precision)
    k = shards(a, mode)
    e = expert_servers(a, accelerators_per_node, mode, moe)
    if e <= 1.0:
        return beta * least_state_factor(a, precision, k)
    p = float(params)
    routed = float(routed_params(a, p, active_params))
    r = whole_bytes_per_param(a, precision, k)
    whole = (p - routed) * beta * least_state_factor(a, precision, k)
    return (whole + routed * (r / e + (beta - r) / max(e, k))) / p
