"""The achieved utilisation u of a node from the compute model (docs/physics.md, section 1b).

    u = e_train 6 P_act m / (T F t),   t = sum_op t_op (+ the expert all-to-all)

for a micro-batch of m tokens on a tensor-parallel group of T accelerators of dense peak F each at
the plan's precision, t_op from planner/cost/compute/roofline.py over the operations of
planner/cost/compute/ops.py, trained as the run's `Recipe` says (GEMMs it keeps in BF16 at the bf16
rates, recomputed ones added). u is on dtplan's 6 P_act basis, so a model whose attention and output
layer cost more than 6 P_act counts has a lower u; the bubbles, collectives, syncs and recomputation
of physics.py scale it further down. e_train is the chip's training efficiency at the precision
(planner/cost/compute/roofline.py; 1 where the chip has none). For a mixture-of-experts model with an
`ExpertFabric`, t also holds the expert-parallel all-to-all, exposed or overlapped as
planner/cost/compute/experts.py gives it.
"""

from __future__ import annotations

from planner.cost.compute.experts import (ExpertFabric, all_to_all_s, imbalance_floor, permutation_bytes,
                                          with_all_to_all_s)
from planner.cost.compute.ops import Gemm, Memory, Recipe, micro_batch_ops
from planner.cost.compute.roofline import Chip, attention_time_s, gemm_time_s, memory_time_s
from planner.cost.compute.shape import ModelShape


def gemm_precision(g: Gemm, precision: str) -> str:
    """The precision a GEMM runs at: the plan's, or bf16 for one the recipe keeps in high precision."""
    return "fp16" if g.high_precision else precision


def micro_batch_time_s(shape: ModelShape, chip: Chip, precision: str, micro_batch_tokens: float,
                       tensor_parallel: float = 1.0, expert_parallel: float = 1.0,
                       recipe: Recipe = Recipe(), routed_load: float = 1.0) -> dict[str, float]:
    """Seconds of one GPU of the TP group on one micro-batch, forward and backward, by kind; the routed
    experts' GEMMs at `routed_load` times their balanced time (the slowest GPU's load over the mean)."""
    gemms, attention, memory = micro_batch_ops(shape, micro_batch_tokens, tensor_parallel, expert_parallel, recipe)
    return {"gemm_s": sum(gemm_time_s(g, chip, gemm_precision(g, precision)) * (routed_load if g.routed else 1.0)
                          for g in gemms),
            "attention_s": sum(attention_time_s(a, chip) for a in attention),
            "memory_s": sum(memory_time_s(x, chip) for x in memory)}


def moe_micro_batch_time_s(shape: ModelShape, chip: Chip, precision: str, micro_batch_tokens: float,
                           tensor_parallel: float = 1.0, expert_parallel: float = 1.0,
                           experts: ExpertFabric | None = None, recipe: Recipe = Recipe()) -> dict[str, float]:
    """`micro_batch_time_s` with what `experts` adds to the compute of a mixture-of-experts model
    (planner/cost/compute/experts.py): the routed GEMMs at the slowest GPU's load (`imbalance_floor`) and the
    token permutation's bytes (`permutation_bytes`, "permutation_s"); the all-to-all is not in it."""
    t = max(float(tensor_parallel), 1.0)
    if experts is None or not shape.moe_layers:
        return micro_batch_time_s(shape, chip, precision, micro_batch_tokens, t, expert_parallel, recipe)
    tokens = micro_batch_tokens / t
    parts = micro_batch_time_s(shape, chip, precision, micro_batch_tokens, t, expert_parallel, recipe,
                               imbalance_floor(shape, tokens, experts))
    parts["permutation_s"] = memory_time_s(Memory(permutation_bytes(shape, tokens, experts)), chip)
    return parts


def node_utilisation(shape: ModelShape, chip: Chip, precision: str, active_params: float,
                     micro_batch_tokens: float, tensor_parallel: float = 1.0, expert_parallel: float = 1.0,
                     experts: ExpertFabric | None = None, recipe: Recipe = Recipe()) -> float:
    """u = e_train 6 P_act m / (T F t): the utilisation of the node's compute on the 6 P_act basis;
    with `experts`, t includes the all-to-all of the m / T tokens each GPU holds."""
    t = max(float(tensor_parallel), 1.0)
    seconds = sum(moe_micro_batch_time_s(shape, chip, precision, micro_batch_tokens, t, expert_parallel,
                                         experts, recipe).values())
    if experts is not None and shape.moe_layers:
        seconds = with_all_to_all_s(seconds, all_to_all_s(shape, micro_batch_tokens / t, experts), experts, chip.sms)
    e_train = chip.training_efficiency.get(precision, 1.0)
    return e_train * 6.0 * active_params * micro_batch_tokens / (t * chip.peak_tflops[precision] * 1e12 * seconds)
