"""The expert all-to-all of the compute model (planner/cost/compute/experts.py) and the planner's chunk
count of an interleaved pipeline (physics.chunk_choices, modes._pipeline), against hand calculations and
a brute force over fixed chunk counts."""

import math

import pytest

from planner.cost import physics
from planner.cost.assumptions import load_profile
from planner.cost.compute.experts import ExpertFabric, all_to_all_bytes, all_to_all_s, with_all_to_all_s
from planner.cost.compute.shape import preset_shape
from planner.evaluate import evaluate
from planner.schema.instance import parse_instance
from planner.schema.plan import parse_plan

H800 = "NVIDIA H800 SXM5 80GB"
DSV3 = preset_shape("deepseek-v3")     # hidden 7,168, top-8 of 256, 58 MoE layers and one MTP block (MoE too)
PER_COPY = 4096 * 7168 * (58 + 1)      # values per remote copy of a 4,096-token micro-batch, all MoE blocks


def test_all_to_all_inside_one_server_by_hand():
    # E = 8 GPUs of one server: 8 copies x 7/8 leave the GPU over NVLink, none over the NIC; 2 bytes x 4 transfers
    f = ExpertFabric(expert_parallel=8, gpus_per_server=8, intra_gb_per_s=450, scale_out_gb_per_s=50)
    nvlink, nic = all_to_all_bytes(DSV3, 4096, f)
    assert (nvlink, nic) == (pytest.approx(8 * 7 / 8 * PER_COPY * 8), 0.0)
    assert all_to_all_s(DSV3, 4096, f) == pytest.approx(8 * 7 / 8 * PER_COPY * 8 / 450e9)


def test_node_limited_all_to_all_across_servers_by_hand():
    # EP64 over 8 servers, at most 4 servers per token, fp8 dispatch (1 byte) and bf16 combine: the NIC carries
    # 4 x 7/8 copies of 2 x 1 + 2 x 2 = 6 bytes per value: 36.38 GB, 0.728 s at 50 GB/s
    f = ExpertFabric(64, 8, 200, 50, node_limit=4, dispatch_bytes=1.0)
    nvlink, nic = all_to_all_bytes(DSV3, 4096, f)
    assert nic == pytest.approx(3.5 * PER_COPY * 6) and nic == pytest.approx(36.38e9, rel=1e-3)
    assert nvlink == pytest.approx(8 * 63 / 64 * PER_COPY * 6)
    assert all_to_all_s(DSV3, 4096, f) == pytest.approx(max(nic / 50e9, nvlink / 200e9))
    unlimited = ExpertFabric(64, 8, 200, 50, dispatch_bytes=1.0)
    assert all_to_all_bytes(DSV3, 4096, unlimited)[1] == pytest.approx(8 * 7 / 8 * PER_COPY * 6)
    assert all_to_all_bytes(DSV3, 4096, ExpertFabric(1, 8, 200, 50)) == (0.0, 0.0)     # no expert parallelism


def test_overlap_hides_the_all_to_all_up_to_the_slowed_compute():
    f = ExpertFabric(64, 8, 200, 50, overlap=True, communication_sms=20)
    assert with_all_to_all_s(1.0, 0.5, f, 132) == pytest.approx(132 / 112)                  # hidden
    assert with_all_to_all_s(1.0, 2.0, f, 132) == pytest.approx(2.0)                        # exposed remainder
    assert with_all_to_all_s(1.0, 0.5, ExpertFabric(64, 8, 200, 50), 132) == pytest.approx(1.5)   # no overlap


def test_a_moe_shape_preset_takes_u_from_the_compute_model():
    a = load_profile("dtplan").replace(model_shape="deepseek-v3", expert_parallel_degree=64.0)
    moe = physics.resolve_mfu(a, H800, explicit=False, moe=True, model=(671e9, 37e9, 7168))
    row = physics.compute_model_mfu(a, H800, 671e9, 37e9, 7168)
    assert moe.mfu_fp8 == row["fp8"] and moe.mfu_fp8 != 0.1421
    assert physics.compute_model_precisions(a, H800, moe=True) == ("fp16", "fp8")
    # without a MoE preset the table's MoE figure stays
    assert physics.resolve_mfu(a.replace(model_shape=""), H800, explicit=False, moe=True,
                               model=(671e9, 37e9, 7168)).mfu_fp8 == 0.1421
    # the exposed all-to-all lowers u
    exposed = physics.compute_model_mfu(a.replace(scale_out_gb_per_s=5.0), H800, 671e9, 37e9, 7168)
    assert exposed["fp8"] < row["fp8"]


def _pipeline_instance(constants):
    return parse_instance({
        "model": {"params": 7e9}, "training": {"tokens": 1e11, "local_batch_tokens": 4_000_000},
        "fleet": {"hardware": "8xH100-SXM", "nodes": 16},
        "network": {"wan": {"up_mbps": 1000, "down_mbps": 1000, "rtt_ms": 20},
                    "pipeline": {"mbps": 200_000, "rtt_ms": 0.5}},
        "assumptions": {"profile": "dtplan", "constants": {"pipeline_schedule": "interleaved", **constants}}})


@pytest.mark.parametrize("stages,micro_batches", [(4, 8), (8, 16), (2, 64), (16, 32)])
def test_the_planners_chunk_count_is_the_fastest_allowed_fixed_one(stages, micro_batches):
    """Brute force: the step of each fixed v the layers allow (v <= L / S, L = P / (12 h^2)); the planner's
    choice (pipeline_chunks 0) gives the least of them and names its v."""
    plan = parse_plan({"mode": "pp_group", "nodes": 16, "stages": stages, "micro_batches": micro_batches,
                       "precision": "fp16", "activation_compression": 1})
    chosen = evaluate(_pipeline_instance({}), plan).values
    h = 0.03 * 7e9 ** 0.5
    layers = 7e9 / (12 * h * h)
    fixed = {v: evaluate(_pipeline_instance({"pipeline_chunks": v}), plan).values["t_step_s"]
             for v in (1.0, 2.0, 4.0, 8.0) if v == 1.0 or v <= layers / stages}
    best = min(fixed, key=lambda v: (fixed[v], v))
    assert chosen["t_step_s"] == pytest.approx(fixed[best], rel=1e-12)
    assert chosen["pipeline_chunks"] == best


def test_the_reference_profile_names_no_chunk_count():
    inst = parse_instance({"model": {"params": 7e9}, "training": {"tokens": 1e11},
                           "fleet": {"hardware": "8xH100-SXM", "nodes": 16},
                           "network": {"wan": {"up_mbps": 1000, "down_mbps": 1000, "rtt_ms": 20}}})
    plan = parse_plan({"mode": "pp_group", "nodes": 16, "stages": 4, "micro_batches": 8, "precision": "fp16",
                       "activation_compression": 1})
    assert "pipeline_chunks" not in evaluate(inst, plan).values


def test_reserving_every_sm_for_communication_is_refused_by_name(tmp_path):
    import json
    from click.testing import CliRunner
    from planner.cli import main
    raw = {"model": {"params": 671e9, "active_params": 37e9, "moe_layers": 58, "hidden_size": 7168},
           "training": {"tokens": 1e12}, "fleet": {"hardware": "8xH100-SXM", "nodes": 16},
           "network": {"wan": {"up_mbps": 1000, "down_mbps": 1000, "rtt_ms": 20}},
           "assumptions": {"profile": "dtplan", "constants": {"model_shape": "deepseek-v3", "expert_a2a_overlap": True,
                                                             "communication_sms": 132}}}
    path = tmp_path / "i.json"
    path.write_text(json.dumps(raw))
    result = CliRunner().invoke(main, ["solve", str(path)])
    assert result.exit_code == 2 and "communication_sms" in result.output and "Traceback" not in result.output


# -- DeepSeek-V3's own GEMM shapes measured (DeepGEMM) and its multi-token prediction ------------------------


def test_a_measured_gemm_runs_at_its_measured_rate_and_its_backward_with_it():
    """models/accelerators/compute/H100-SXM.json lists DeepGEMM's FP8 table of DeepSeek-V3's shapes on H800
    (README at a6d97a1): the routed experts' up-projection, 4 groups of 8,192 rows, n 4,096, k 7,168 at 1,297
    TFLOPS. Its two backward GEMMs run at the same rate; a shape the table lacks keeps MAMF x wave quantization."""
    from planner.cost.compute.ops import Gemm
    from planner.cost.compute.roofline import chip_for, gemm_time_s, wave_efficiency
    chip = chip_for(H800)
    fwd = (8192.0, 4096.0, 7168.0)
    flop = 2 * 8192 * 4096 * 7168
    assert gemm_time_s(Gemm(*fwd, 1.0, fwd), chip, "fp8") == pytest.approx(flop / 1297e12, rel=1e-12)
    assert gemm_time_s(Gemm(7168, 4096, 8192, 1.0, fwd), chip, "fp8") == pytest.approx(flop / 1297e12, rel=1e-12)
    assert 1297 / 1979 == pytest.approx(0.655, abs=5e-4)          # against MAMF's 0.709 of the fp8 peak
    unlisted = Gemm(8192, 4096, 4096, 1.0, (8192.0, 4096.0, 4096.0))
    mamf = 1980e12 * 0.709 * wave_efficiency(8192, 4096, 132)
    assert gemm_time_s(unlisted, chip, "fp8") == pytest.approx(2 * 8192 * 4096 * 4096 / mamf, rel=1e-12)
    # bf16 has no measured rows: MAMF there
    assert gemm_time_s(Gemm(*fwd, 1.0, fwd), chip, "fp16") == pytest.approx(
        flop / (990e12 * 0.803 * wave_efficiency(8192, 4096, 132)), rel=1e-12)


def test_every_listed_shape_is_one_of_deepseek_v3s_gemms():
    """Each DeepGEMM row the chip lists is the forward shape of a GEMM the compute model runs for DeepSeek-V3 at
    EP64 and micro-batches of one 4,096-token sequence (MLA's query and KV down-projections fused: n = 2,112)."""
    from planner.cost.compute.ops import micro_batch_ops
    from planner.cost.compute.roofline import chip_for
    gemms, _, _ = micro_batch_ops(DSV3, 4096, 1.0, 64.0)
    forwards = {g.forward for g in gemms}
    listed = set(chip_for(H800).gemm_benchmarks["fp8"])
    assert len(listed) == 8 and listed <= forwards
    assert (4096.0, 2112.0, 7168.0) in forwards and 1536 + 512 + 64 == 2112


def test_multi_token_prediction_adds_one_moe_block_a_projection_and_the_output_layer_by_hand():
    """DeepSeek-V3's MTP module (D = 1, section 2.2): per token, forward, one MoE block (MLA projections, router,
    8 routed and 1 shared expert of width 2,048), the 2 h -> h projection and the output layer again; the
    backward twice that. P_act = 37B does not count it."""
    from dataclasses import replace
    from planner.cost.compute.ops import micro_batch_ops
    h, m = 7168, 4096
    mla = h * 2112 + 1536 * 128 * 192 + 512 * 128 * 256 + 128 * 128 * h
    ffn = (8 + 1) * 3 * h * 2048
    per_token = 2 * (mla + h * 256 + ffn + 2 * h * h + h * 129280)
    with_mtp = sum(g.flops for g in micro_batch_ops(DSV3, m, 1.0, 64.0)[0])
    without = sum(g.flops for g in micro_batch_ops(replace(DSV3, mtp_modules=0), m, 1.0, 64.0)[0])
    assert DSV3.mtp_modules == 1
    assert with_mtp - without == pytest.approx(3 * per_token * m, rel=1e-12)
    assert per_token / (2 * 37e9) == pytest.approx(0.0436, abs=5e-5)   # 4.4% beyond the 6 P_act the MFU counts


def test_the_runs_recipe_by_hand():
    """DeepSeek-V3's recipe (Recipe): the output layers (the model's and the MTP module's) and the MoE router in
    BF16 at the bf16 MAMF rate (section 3.3.1), and the MLA up-projections and RMSNorms recomputed in the backward
    pass (section 3.2.3): the query up-projection (n 24,576, k 1,536) at DeepGEMM's 990 TFLOPS and the KV one
    (n 32,768, k 512) at 590, once more in each of the 62 blocks, and two norms read and written again."""
    from planner.cost.compute.ops import Recipe, micro_batch_ops
    from planner.cost.compute.roofline import chip_for, gemm_time_s
    from planner.cost.compute.utilisation import micro_batch_time_s
    chip, m = chip_for(H800), 4096
    plain = micro_batch_time_s(DSV3, chip, "fp8", m, 1.0, 64.0)
    head = micro_batch_time_s(DSV3, chip, "fp8", m, 1.0, 64.0, Recipe(high_precision_head=True))
    gemms = micro_batch_ops(DSV3, m, 1.0, 64.0)[0]
    kept = [g for g in gemms if g.forward in {(4096.0, 129280.0, 7168.0), (4096.0, 256.0, 7168.0)}]
    assert len(kept) == 6 and {g.count for g in kept} == {2.0, 59.0}
    extra = sum(gemm_time_s(g, chip, "fp16") - gemm_time_s(g, chip, "fp8") for g in kept)
    assert head["gemm_s"] - plain["gemm_s"] == pytest.approx(extra, rel=1e-9)
    assert extra == pytest.approx(0.0284, abs=1e-4)
    again = micro_batch_time_s(DSV3, chip, "fp8", m, 1.0, 64.0, Recipe(recompute_mla_up=True))
    blocks = 61 + 1
    up = 2 * m * 24576 * 1536 * blocks / 990e12 + 2 * m * 32768 * 512 * blocks / 590e12
    assert again["gemm_s"] - plain["gemm_s"] == pytest.approx(up, rel=1e-9) == pytest.approx(0.0338, abs=1e-4)
    assert again["memory_s"] - plain["memory_s"] == pytest.approx(blocks * 2 * 2 * 7168 * 2 * m / 3.35e12, rel=1e-9)
    # a dense shape has no MLA: the recompute flag changes nothing there
    llama = preset_shape("llama3-8B")
    assert micro_batch_time_s(llama, chip, "fp8", 8192, recipe=Recipe(recompute_mla_up=True)) == \
        micro_batch_time_s(llama, chip, "fp8", 8192)


def test_token_permutation_bytes_by_hand():
    """Megatron-LM's dispatchers (megatron/core/transformer/moe/token_dispatcher.py): with DeepEP's fused dispatch
    the receiver permutes its m k rows into expert order and back (read and write each), dispatch side in fp8 (1
    byte), combine side in bf16 (2); the backward pass the same again; 59 MoE blocks of width 7,168."""
    from planner.cost.compute.experts import permutation_bytes
    rows = 4096 * 8
    fused = ExpertFabric(64, 8, 200, 50, dispatch_bytes=1.0, permutation="fused_dispatch")
    assert permutation_bytes(DSV3, 4096, fused) == pytest.approx(2 * (2 * rows * 7168 * (1 + 2)) * 59)
    assert permutation_bytes(DSV3, 4096, fused) == pytest.approx(166.30e9, rel=1e-4)
    # the all-to-all dispatcher: permutation 1 (m in, r out), 2 (r, r), unpermutation 2 (r, r), 1 (r in, m out)
    a2a = ExpertFabric(64, 8, 200, 50, dispatch_bytes=1.0, permutation="alltoall")
    assert permutation_bytes(DSV3, 4096, a2a) == pytest.approx(2 * ((3 * rows + 4096) * 7168 * 3) * 59)
    assert permutation_bytes(DSV3, 4096, ExpertFabric(64, 8, 200, 50)) == 0.0                  # "none"
    assert permutation_bytes(DSV3, 4096, ExpertFabric(1, 8, 200, 50, permutation="alltoall")) == 0.0


def test_the_expected_maximum_of_standard_normals():
    from planner.cost.compute.experts import expected_max_standard_normal
    assert expected_max_standard_normal(1) == 0.0
    assert expected_max_standard_normal(2) == pytest.approx(1 / math.sqrt(math.pi), abs=1e-9)   # 1 / sqrt(pi)
    assert expected_max_standard_normal(3) == pytest.approx(1.5 / math.sqrt(math.pi), abs=1e-9)  # 3 / (2 sqrt(pi))
    assert expected_max_standard_normal(64) == pytest.approx(2.3437, abs=1e-3)


def test_imbalance_floor_by_hand_for_deepseek_v3():
    """EP64, 256 experts (4 per GPU), top-8, 4,096 tokens per GPU: a GPU's load has mean 4,096 x 8 = 32,768 and
    variance 64 x 4,096 x 8 / 64 x 63 / 64 x 248 / 255; the slowest of 64 is z_64 = 2.3437 sigma above."""
    from planner.cost.compute.experts import imbalance_floor
    f = ExpertFabric(64, 8, 200, 50, imbalance=True)
    sigma = math.sqrt(64 * 4096 * 8 / 64 * 63 / 64 * 248 / 255)
    assert sigma == pytest.approx(177.12, abs=0.01)
    assert imbalance_floor(DSV3, 4096, f) == pytest.approx(1 + 2.3437 * sigma / 32768, abs=1e-5)
    assert imbalance_floor(DSV3, 4096, f) == pytest.approx(1.01267, abs=1e-5)
    assert imbalance_floor(DSV3, 4096, ExpertFabric(64, 8, 200, 50)) == 1.0        # switch off
    assert imbalance_floor(DSV3, 4096, ExpertFabric(1, 8, 200, 50, imbalance=True)) == 1.0


def test_imbalance_floor_against_a_brute_force_routing():
    """Oracle: route each token of the group to k distinct experts drawn uniformly, count each GPU's copies, and
    average the largest over the mean across many micro-batches (8 GPUs of 4 experts, top-4, 256 tokens each)."""
    import numpy as np
    from dataclasses import replace
    from planner.cost.compute.experts import imbalance_floor
    shape = replace(DSV3, experts=32, top_k=4)
    gpus, tokens, trials = 8, 256, 2000
    rng = np.random.default_rng(25)
    keys = rng.random((trials, gpus * tokens, 32))
    picks = np.argsort(keys, axis=2)[:, :, :4] // 4                   # k distinct experts -> their GPUs
    loads = np.stack([(picks == g).sum(axis=(1, 2)) for g in range(gpus)], axis=1)
    brute = loads.max(axis=1).mean() / (tokens * 4)
    floor = imbalance_floor(shape, tokens, ExpertFabric(gpus, 8, 200, 50, imbalance=True))
    assert floor - 1 == pytest.approx(brute - 1, rel=0.1)


def test_permutation_and_imbalance_enter_the_micro_batch_by_hand():
    from planner.cost.compute.experts import imbalance_floor, permutation_bytes
    from planner.cost.compute.ops import micro_batch_ops
    from planner.cost.compute.roofline import chip_for, gemm_time_s
    from planner.cost.compute.utilisation import micro_batch_time_s, moe_micro_batch_time_s
    chip = chip_for(H800)
    f = ExpertFabric(64, 8, 200, 50, dispatch_bytes=1.0, permutation="fused_dispatch", imbalance=True)
    plain = micro_batch_time_s(DSV3, chip, "fp8", 4096, 1.0, 64.0)
    both = moe_micro_batch_time_s(DSV3, chip, "fp8", 4096, 1.0, 64.0, f)
    assert both["permutation_s"] == pytest.approx(permutation_bytes(DSV3, 4096, f) / 3.35e12)
    routed = sum(gemm_time_s(g, chip, "fp8") for g in micro_batch_ops(DSV3, 4096, 1.0, 64.0)[0] if g.routed)
    assert both["gemm_s"] - plain["gemm_s"] == pytest.approx(routed * (imbalance_floor(DSV3, 4096, f) - 1))
    assert (both["attention_s"], both["memory_s"]) == (plain["attention_s"], plain["memory_s"])
