"""Memory per accelerator with the tensor-parallel degree T the planner's (issue 25 items 2 and 6;
docs/physics.md section 2b): the activation memory of a T-way tensor- and sequence-parallel group with a
floor of one sequence per group and micro-batch, flat replicas' activations, and HiGHS against the branch and
bound with T free and the activations on (the branch and bound against the brute force and the exhaustive
oracle: tests/test_tp_decision.py, `memory_case`)."""

from __future__ import annotations

import pytest

from planner.cost import physics
from planner.cost.modes import throughput
from planner.cost.setting import PlanBatch
from tests.test_bnb import random_case
from tests.test_tp_decision import highs_agrees, memory_case, tp_setting, with_activations

EQUAL_U = {1.0: 0.4, 2.0: 0.4, 4.0: 0.4, 8.0: 0.4}      # the same u at every T: memory alone decides


def test_seven_b_layer_per_accelerator_by_hand():
    """A 7B layer (h = 4,096, s = 4,096, 32 heads, 32 layers: P = 12 h^2 L = 6,442,450,944) with one sequence
    per micro-batch. Korthikanti et al. 2022 (arXiv 2205.05198) eq. 2, no recomputation: s b h (34 + 5 a s / h)
    = 4,096 x 4,096 x (34 + 5 x 32 x 4,096 / 4,096) = 16,777,216 x 194 = 3,254,779,904 bytes per layer;
    selective recomputation drops the 5 a s / h term: 16,777,216 x 34 = 570,425,344 bytes, and with T-way
    TP + SP each accelerator holds 1 / T of it. A flat replica's node of 8 GPUs at T = 1 is D = 8 groups of
    one sequence each, 32 layers: per GPU 32 x 570,425,344 = 18,253,611,008 bytes, the node 8 times that,
    146,028,888,064; at T = 8 (D = 1) per GPU 18,253,611,008 / 8, the node the same 18,253,611,008. Full
    recomputation keeps 2 s b h per layer (c_f = 2) plus one layer's c = 34 working set per group."""
    p, h, seq = 12 * 4096 ** 2 * 32, 4096.0, 4096.0
    assert 4096 * 4096 * (34 + 5 * 32 * 4096 / 4096) == 3_254_779_904
    per_layer = 570_425_344
    a = tp_setting(p, h, 1_048_576, 640, EQUAL_U).assumptions.replace(activation_memory=True)
    kept, redone, working = physics.replica_activation_parts_bytes(a, p, h, 1_048_576, "fp16", 8.0, seq)
    assert kept == pytest.approx(8 * 32 * per_layer, rel=1e-12)                      # T = 1, D = 8
    assert kept / 8 == pytest.approx(18_253_611_008, rel=1e-12)                      # per GPU
    assert redone == pytest.approx(8 * 32 * 2 * 4096 * 4096, rel=1e-12)
    assert working == pytest.approx(8 * per_layer, rel=1e-12)
    kept8, _, _ = physics.replica_activation_parts_bytes(a, p, h, 1_048_576, "fp16", 1.0, seq)
    assert kept8 == pytest.approx(32 * per_layer, rel=1e-12)                         # T = 8: per GPU / 8
    # fewer tokens than the groups' sequences: still one sequence per group (the floor)
    small, _, _ = physics.replica_activation_parts_bytes(a, p, h, 4096, "fp16", 8.0, seq)
    assert small == pytest.approx(kept, rel=1e-12)
    # the node at T = 1: state P (8 x 4 + 12) = 283.5 GB (weights and gradients per group, ZeRO-1 optimizer
    # state over the 8 GPUs) + 146.0 GB of activations = 429.5 GB <= 640 GB; per GPU 53.7 GB <= 80 GB
    s = with_activations(tp_setting(p, h, 1_048_576, 640, {1.0: 0.4}), seq)
    v = throughput(s.replace(assumptions=s.assumptions.replace(tensor_parallel=1.0)),
                   PlanBatch.of("flat", "fp16", nodes=1, inner_steps=1))
    assert v["state_bytes_per_node"][0] == pytest.approx(p * 44 + 8 * 32 * per_layer, rel=1e-12)
    assert v["state_bytes_per_node"][0] / 8 == pytest.approx(53.68e9, rel=1e-3)


def test_seventy_b_stage_needs_tp8_per_accelerator():
    """A 70B model (h = 8,192, s = 8,192, 80 layers: P = 12 h^2 L = 64,424,509,440) as 4 pipeline stages of 20
    layers on 8 x 80 GB nodes, 1F1B with M = 64 micro-batches of B / M = 8,192 tokens per node (4 in flight).
    Per layer and sequence with selective recomputation 34 x 8,192 x 8,192 = 2,281,701,376 bytes, / T per GPU.
    Node's state P / S x (D w + beta - w) with w = 4, beta = 16 (ZeRO-1 over the 8 GPUs):
      T = 1 (D = 8): 16.106e9 x 44 = 708.7 GB: no;
      T = 2 (D = 4): 16.106e9 x 28 = 451.0 GB, activations with the floor max(8,192, 4 x 8,192) = 32,768 tokens
        per node micro-batch: 4 x 20 x 4 x 2,281,701,376 = 730.1 GB: no (per GPU 56.4 + 91.3 = 147.7 GB);
      T = 4 (D = 2): 16.106e9 x 20 = 322.1 GB + 4 x 20 x 2 x 2,281,701,376 = 365.1 GB = 687.2 GB: no;
      T = 8 (D = 1): 16.106e9 x 16 = 257.7 GB + 4 x 20 x 2,281,701,376 = 182.5 GB = 440.2 GB: fits
        (per GPU 32.2 + 22.8 = 55.0 GB).
    Without the activations (the switch off) T = 2 fits and its step is shorter (no TP collectives of 8)."""
    p, h, seq, b = 12 * 8192 ** 2 * 80, 8192.0, 8192.0, 64 * 8192
    per_layer = 34 * 8192 * 8192
    assert per_layer == 2_281_701_376
    s = with_activations(tp_setting(p, h, b, 640, EQUAL_U), seq)
    batch = PlanBatch.of("pp_group", "fp16", nodes=8, inner_steps=1, stages=4, micro_batches=64,
                         activation_compression=1.0, schedule=physics.ONE_F_ONE_B)
    kept_t2, _, _ = physics.activation_parts_bytes(s.assumptions, p, h, b, "fp16", 4, 64, physics.ONE_F_ONE_B,
                                                   1.0, 4.0, seq)
    assert kept_t2 == pytest.approx(4 * 20 * 4 * per_layer, rel=1e-12)
    assert kept_t2 / 8 == pytest.approx(91.27e9, rel=1e-3)
    v = throughput(s, batch)
    assert v["tensor_parallel"][0] == 8.0
    assert v["recompute_share"][0] == 0.0
    assert v["state_bytes_per_node"][0] == pytest.approx(p / 4 * 16 + 4 * 20 * per_layer, rel=1e-12)
    assert v["state_bytes_per_node"][0] / 8 == pytest.approx(55.0e9, rel=1e-3)
    off = throughput(tp_setting(p, h, b, 640, EQUAL_U), batch)
    assert off["tensor_parallel"][0] == 2.0
    assert off["state_bytes_per_node"][0] == pytest.approx(p / 4 * 28, rel=1e-12)


def test_fit_recomputes_a_flat_replica_to_let_a_lower_degree_fit():
    """`fit` on a flat replica of the 70B model above at T = 1 (D = 8 groups of one 8,192-token sequence):
    state P x 44 = 2,834.7 GB (ZeRO-1 over the node), activations 8 x 80 x 2,281,701,376 = 1,460.3 GB, so on a
    node of 5,120 GB it fits with r = 0 (4,295.0 GB); on 4,096 GB it recomputes
    r = (2,834.7 + 1,460.3 + 8 x 2.2817 - 4,096) / (1,460.3 x 32 / 34) = 0.158 of its layers (the working set,
    one layer of every group's sequence, is live again), which costs 1 + r / 3 in compute."""
    p, h, seq = 12 * 8192 ** 2 * 80, 8192.0, 8192.0
    per_layer = 34 * 8192 * 8192
    s = with_activations(tp_setting(p, h, 1_048_576, 4096, {1.0: 0.4}), seq, "fit")
    s = s.replace(assumptions=s.assumptions.replace(tensor_parallel=1.0))
    flat = PlanBatch.of("flat", "fp16", nodes=1, inner_steps=1)
    v = throughput(s, flat)
    kept = 8 * 80 * per_layer
    assert p * 44 + kept == pytest.approx(4295.0e9, rel=1e-4)
    r = (p * 44 + kept + 8 * per_layer - 4096e9) / (kept * 32 / 34)
    assert r == pytest.approx(0.158, abs=5e-4)
    assert v["recompute_share"][0] == pytest.approx(r + physics.FIT_MARGIN, rel=1e-9)
    assert v["state_bytes_per_node"][0] <= 4096e9
    roomy = throughput(s.replace(memory_bytes=5120e9), flat)
    assert roomy["recompute_share"][0] == 0.0
    assert roomy["state_bytes_per_node"][0] == pytest.approx(p * 44 + kept, rel=1e-12)
    assert v["t_comp_s"][0] == pytest.approx(roomy["t_comp_s"][0] * (1 + v["recompute_share"][0] / 3), rel=1e-12)


@pytest.mark.parametrize("seed", range(3))
def test_the_mip_sees_the_same_choicewith_activations(seed):
    """HiGHS builds its tables from the same cost functions: its optimum with T free and the activations on
    is the branch and bound's (streaming syncs: the MIP's factoring)."""
    setting, space, _ = random_case(8900 + seed)
    highs_agrees(memory_case(setting, seed), space)
