"""Tensor parallelism inside a node as a planner decision (dtplan, `search_tensor_parallel`;
docs/physics.md section 2b).

With `search_tensor_parallel` on, a node of A accelerators is modelled as A / T = D groups of T
accelerators. Each group is one Megatron-LM tensor-parallel group with sequence parallelism
(Shoeybi et al. 2019, arXiv 1909.08053; Korthikanti et al. 2022, arXiv 2205.05198); the D groups
are data-parallel replicas inside the server, each on B / D of the node's B tokens, with Megatron's
distributed optimizer (ZeRO stage 1, Rajbhandari et al. 2020, arXiv 1910.02054, section 5.1) over
the node's A accelerators. So, against the node's compute at T:

- utilisation: u at T from the compute model (GEMMs of width / T per GPU; planner/cost/compute,
  resolved per degree by `physics.resolve_mfu` into `tensor_parallel_utilisation`);
- TP collectives: `physics.tensor_parallel_s` at T (0 at T = 1);
- the D groups' gradient sync over the server's fabric (`in_node_data_parallel_s`, 0 at D = 1);
- memory: each group holds its own low-precision weights and gradients of the node's share of the
  model, while the optimizer state (fp32 master weights and moments) is sharded over all A
  accelerators (`state_factor`, 1 at D = 1). With `activation_memory`, each of a group's T accelerators
  holds 1 / T of its micro-batch's activations (sequence parallelism), and a group's micro-batch is at
  least one sequence, so the node holds max(B / M, D s) tokens' worth: more at small T when B / M < D s
  (physics.micro_batch_tokens, physics.activation_bytes_per_node; flat replicas
  physics.replica_activation_parts_bytes).

At T = A (D = 1) every term is today's node model under a fixed `tensor_parallel` = A; below A the
node pays for its in-server data parallelism in memory and time. The choice (`modes.throughput`)
is per plan: of the degrees `choices` gives, the fastest inner step among those whose state fits
the node, else the degree of least memory (the largest).
"""

from __future__ import annotations

import numpy as np

from planner.cost.assumptions import ADAMW_STATE_BYTES, Assumptions

# Degrees the planner tries: powers of two (Megatron-LM needs T to divide the attention heads and the
# KV heads, `degrees_for_heads`, and the node's accelerators, `choices`; NVIDIA's published layouts
# use 1, 2, 4 and 8 inside an 8-GPU server).
TENSOR_PARALLEL_DEGREES = (1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0)
FP32_MASTER_BYTES = 4.0     # the fp32 copy of each weight inside beta_ref (Rajbhandari et al. 2020, arXiv 1910.02054,
                            # section 3.1: mixed-precision Adam holds 2 + 2 + 12 bytes, the 12 = 4 master + 8 moments)


def searched(a: Assumptions) -> bool:
    """Whether T is the planner's: `search_tensor_parallel` on and `tensor_parallel` 0."""
    return a.search_tensor_parallel and a.tensor_parallel == 0


def degrees_for_heads(heads: int, kv_heads: int) -> tuple[float, ...]:
    """The degrees of TENSOR_PARALLEL_DEGREES that divide both the attention heads and the KV heads
    (Megatron-LM splits the heads across the group: `num_attention_heads` and `num_query_groups` must
    be divisible by `tensor_model_parallel_size`)."""
    return tuple(t for t in TENSOR_PARALLEL_DEGREES if heads % int(t) == 0 and kv_heads % int(t) == 0)


def choices(a: Assumptions, accelerators_per_node: int, moe: bool) -> tuple[float, ...]:
    """The node's TP degrees under this profile: () when the node model is not this module's (the
    switch off, or a mixture-of-experts model, whose node stays as `tensor_parallel` says); (T,) for
    a fixed `tensor_parallel`; else the degrees resolved for the model's heads
    (`tensor_parallel_utilisation`) that divide the node's A accelerators."""
    if not a.search_tensor_parallel or moe:
        return ()
    if a.tensor_parallel > 0:
        return (float(a.tensor_parallel),)
    resolved = sorted({float(t) for t, _, _ in a.tensor_parallel_utilisation}) or list(TENSOR_PARALLEL_DEGREES)
    return tuple(t for t in resolved if accelerators_per_node % int(t) == 0)


def at_degree(a: Assumptions, degree: float) -> Assumptions:
    """The assumptions of a node at TP degree T: `tensor_parallel` = T and u at each precision from
    `tensor_parallel_utilisation` where it was resolved (else the profile's u, which then does not
    depend on T: the table's or the instance's)."""
    changes: dict = {"tensor_parallel": float(degree)}
    for t, precision, u in a.tensor_parallel_utilisation:
        if float(t) == float(degree):
            changes["mfu" if precision == "fp16" else f"mfu_{precision}"] = float(u)
    return a.replace(**changes)


def data_parallel_groups(a: Assumptions, accelerators_per_node: int) -> float:
    """D = A / T, the node's data-parallel groups (1 when the switch is off)."""
    if not a.search_tensor_parallel or a.tensor_parallel <= 0:
        return 1.0
    return max(float(accelerators_per_node) / float(a.tensor_parallel), 1.0)


def replicated_bytes_per_param(a: Assumptions, precision: str) -> float:
    """Bytes per parameter each data-parallel group holds on its own: beta less the sharded optimizer
    state (fp32 master weights and AdamW's moments): 16 - 12 = 4 at fp16 (weights and gradients)."""
    return float(getattr(a, f"bytes_per_param_{precision}")) - FP32_MASTER_BYTES - ADAMW_STATE_BYTES


def state_factor(a: Assumptions, precision: str, accelerators_per_node: int) -> float:
    """The node's training state over P_node beta: D groups each hold P_node w (w the replicated
    bytes, weights and gradients) and the A accelerators one sharded copy of the rest, so
        state = P_node (D w + beta - w) = P_node beta (1 + (D - 1) w / beta).
    1 at D = 1; grows with D, so it is least at the largest degree."""
    d = data_parallel_groups(a, accelerators_per_node)
    beta = a.bytes_per_param(precision)
    return 1.0 + (d - 1.0) * replicated_bytes_per_param(a, precision) / beta


def in_node_data_parallel_s(a: Assumptions, params, precision: str, accelerators_per_node: int):
    """The D groups' gradient sync per inner step over the server's fabric, whole model: with the
    distributed optimizer a reduce-scatter of the gradients and an all-gather of the updated weights,
    each a ring collective moving (D - 1) / D of a GPU's P / T values (Patarasuk & Yuan 2009), at
    b_act bytes per value and `intra_node_gb_per_s` per accelerator:
        t_dp = 2 (D - 1) / D x P / T x b_act / bw.
    Counted as compute of the node (not overlapped, conservative): a pipeline stage of P / S carries
    its P / (S T) share through t_comp / S, a ZeRO-3 replica's node its P / (Z T) through t_comp / Z.
    0 at D = 1."""
    d = data_parallel_groups(a, accelerators_per_node)
    if d <= 1.0:
        return 0.0
    t = float(a.tensor_parallel)
    bw = a.intra_node_gb_per_s * 1e9
    return 2.0 * (d - 1.0) / d * np.asarray(params, dtype=float) / t * a.activation_bytes(precision) / bw
