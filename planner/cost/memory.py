"""Memory and sharding (docs/cost_model.md section 2).

Dense: training state M = P * beta bytes; a plan with S pipeline stages needs
P * beta / S <= V. The fewest stages S_min = ceil(P * beta / V), computed in float64
in exactly that order with no epsilon: many reference cases sit on an integer.
MoE with expert parallelism of degree E: per-node state (P_act + (P - P_act) / E) * beta.
"""

from __future__ import annotations

import numpy as np


def state_bytes_per_node(params, bytes_per_param, stages=1):
    """Dense training state per node, P * beta / S (bytes)."""
    return np.asarray(params, dtype=float) * bytes_per_param / np.asarray(stages, dtype=float)


def min_stages(params, bytes_per_param, node_memory_bytes):
    """S_min = ceil(P * beta / V): pipeline stages needed to hold the training state."""
    return np.ceil(np.asarray(params, dtype=float) * bytes_per_param / node_memory_bytes).astype(np.int64)


def moe_state_bytes_per_node(params, active_params, bytes_per_param, expert_parallel_degree):
    """MoE state per node with experts sharded E ways: (P_shared + P_experts / E) * beta (bytes).

    P_shared = P_act, P_experts = P - P_act (the reference's approximation).
    """
    shared = np.asarray(active_params, dtype=float)
    experts = np.asarray(params, dtype=float) - shared
    return (shared + experts / np.asarray(expert_parallel_degree, dtype=float)) * bytes_per_param
