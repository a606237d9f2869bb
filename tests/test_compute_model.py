"""The compute model (planner/cost/compute; docs/physics.md section 1b) against hand calculations."""

import math

import pytest

from planner.cost import physics
from planner.cost.assumptions import load_profile
from planner.cost.compute.ops import Gemm, micro_batch_ops
from planner.cost.compute.roofline import chip_for, gemm_time_s, wave_efficiency
from planner.cost.compute.shape import default_shape, preset_shape
from planner.cost.compute.utilisation import micro_batch_time_s, node_utilisation
from planner.evaluate import evaluate
from planner.schema.errors import InputError
from planner.schema.instance import parse_instance
from planner.schema.plan import parse_plan

H100 = "NVIDIA H100 SXM5 80GB"


def test_wave_quantization_by_hand():
    # 8,192 x 2,304 output in 128 x 256 tiles: 64 x 9 = 576 tiles on 132 SMs -> 5 waves of 132: 576 / 660
    assert wave_efficiency(8192, 2304, 132) == pytest.approx(576 / 660, rel=1e-12)
    assert wave_efficiency(128 * 132, 256, 132) == 1.0             # exactly one full wave


def test_gemm_roofline_by_hand():
    chip = chip_for(H100)
    # compute-bound: 2 m n k / (990e12 x 0.803 x w)
    g = Gemm(8192, 2304, 16384)
    expected = 2 * 8192 * 2304 * 16384 / (990e12 * 0.803 * (576 / 660))
    assert gemm_time_s(g, chip, "fp16") == pytest.approx(expected, rel=1e-12)
    # memory-bound: one token through a 16,384 x 16,384 weight reads 2 x 16,384^2 bytes at 3.35 TB/s
    g = Gemm(1, 16384, 16384, count=3)
    expected = 3 * (2 * (16384 + 16384 ** 2) + 2 * 16384) / 3.35e12
    assert gemm_time_s(g, chip, "fp16") == pytest.approx(expected, rel=1e-12)
    # fp8 inputs are one byte, the output two
    assert gemm_time_s(Gemm(1, 16384, 16384), chip, "fp8") == pytest.approx(
        (16384 + 16384 ** 2 + 2 * 16384) / 3.35e12, rel=1e-12)


def test_gemm_flops_are_six_times_the_matmul_parameters_per_token():
    """Llama 3 8B: per layer h (q + 2 kv) d + h^2 + 3 h f = 25,165,824 + 16,777,216 + 176,160,768 =
    218,103,808 matmul parameters; x 32 layers + the 128,256 x 4,096 output layer = 7,504,658,432; each is
    2 FLOP forward and 4 backward per token."""
    s = preset_shape("llama3-8B")
    m = 8192
    gemms, attention, memory = micro_batch_ops(s, m)
    assert sum(g.flops for g in gemms) == pytest.approx(6 * m * 7_504_658_432, rel=1e-12)
    # attention: 4 x 32 heads x 128 x 8,192 / 2 per token and layer forward, 2.5 times that backward
    forward = 4 * 32 * 128 * 8192 / 2 * 32 * m
    assert [a.flops for a in attention] == pytest.approx([forward, 2.5 * forward], rel=1e-12)
    # tensor parallelism 8 splits every GEMM's FLOPs eight ways (all widths divide by 8)
    split, _, _ = micro_batch_ops(s, m, tensor_parallel=8)
    assert sum(g.flops for g in split) == pytest.approx(sum(g.flops for g in gemms) / 8, rel=1e-12)


def test_elementwise_bytes_by_hand():
    """Per token and layer: 2 norms (2 x 2 h), 2 residual adds (2 x 3 h), rotary on 32 + 8 heads of 128
    (2 x 5,120), SwiGLU 3 f, all 2 bytes; the cross-entropy 2 V x 2 bytes; forward plus twice that backward."""
    s = preset_shape("llama3-8B")
    h, f, v = 4096, 14336, 128256
    per_token = 32 * ((4 * h + 6 * h) * 2 + 2 * 5120 * 2 + 3 * f * 2) + 2 * v * 2
    _, _, memory = micro_batch_ops(s, 1)
    assert memory[0].bytes == pytest.approx(3 * per_token, rel=1e-12)


def test_default_shape_from_the_aspect_ratios():
    # GPT-3 175B: L = round((175e9 - 2 x 50,257 x 12,288) / (12 x 12,288^2)) = round(95.9) = 96, 96 heads of 128
    s = default_shape(175e9, 12288)
    assert (s.layers, s.heads, s.kv_heads, s.ffn, s.sequence_tokens, s.gated) == (96, 96, 96, 49152, 2048, False)


def test_node_utilisation_is_the_sum_of_its_operations():
    """u = e_train 6 P m / (T F sum t_op), with e_train the chip's calibration (H100: 0.755, from
    Megatron-Bridge's Llama 3 8B run: 0.3518 measured over the compute model's 0.4658)."""
    s, chip = preset_shape("llama3-8B"), chip_for(H100)
    parts = micro_batch_time_s(s, chip, "fp8", 8192)
    bare = 6 * 8.03e9 * 8192 / (1980e12 * sum(parts.values()))
    assert bare == pytest.approx(0.4658, abs=5e-4)
    assert 14451 * 6 * 8.03e9 / 1979e12 == pytest.approx(0.3518, abs=5e-5)
    assert 0.3518 / 0.4658 == pytest.approx(0.755, abs=5e-4)
    assert node_utilisation(s, chip, "fp8", 8.03e9, 8192) == pytest.approx(0.755 * bare, rel=1e-12)


def test_resolve_mfu_takes_the_compute_model_for_dense_models_only():
    a = load_profile("dtplan").replace(model_shape="llama3-8B")
    dense = physics.resolve_mfu(a, H100, explicit=False, moe=False, model=(8.03e9, 8.03e9, 4096))
    row = physics.compute_model_mfu(a, H100, 8.03e9, 8.03e9, 4096)
    assert (dense.mfu, dense.mfu_fp8) == (row["fp16"], row["fp8"])
    # a mixture-of-experts model keeps the table's MoE figure; an explicit MFU wins; no figures: the table
    assert physics.resolve_mfu(a, H100, explicit=False, moe=True, model=(671e9, 37e9, 7168)).mfu_fp8 == 0.1421
    assert physics.resolve_mfu(a.replace(mfu=0.5), H100, explicit=True, model=(8.03e9, 8.03e9, 4096)).mfu == 0.5
    assert physics.resolve_mfu(a, "Google Cloud TPU v4", explicit=False, model=(540e9, 540e9, 18432)).mfu == 0.40
    off = a.replace(mfu_from_compute_model=False)
    assert physics.resolve_mfu(off, H100, explicit=False, model=(8.03e9, 8.03e9, 4096)).mfu == 0.4496
    # the sequence length replaces the shape's
    longer = physics.compute_model_shape(a.replace(sequence_tokens=16384), 8.03e9, 4096)
    assert longer.sequence_tokens == 16384 and longer.layers == 32


def test_evaluate_reports_the_node_mfu_and_no_table_warning_where_the_model_applies():
    raw = {"model": {"params": 1e9}, "training": {"local_batch_tokens": 1_000_000},
           "fleet": {"hardware": "8xB200", "nodes": 8}, "assumptions": {"profile": "dtplan"}}
    a = load_profile("dtplan")
    u = physics.compute_model_mfu(a, "NVIDIA B200 (Blackwell, 180 GB HBM3e, DGX/HGX B200)", 1e9, 1e9, None)
    for precision in ("fp16", "fp8"):
        e = evaluate(parse_instance(raw), parse_plan({"mode": "flat", "nodes": 1, "precision": precision}))
        assert not [w for w in e.warnings if "achieved-MFU" in w]
        assert e.values["node_mfu"] == pytest.approx(u[precision], rel=1e-12)
        assert e.values["t_comp_s"] == pytest.approx(
            6 * 1e9 * 1e6 / (8 * {"fp16": 2250e12, "fp8": 4500e12}[precision] * u[precision]), rel=1e-12)


def test_an_unknown_shape_preset_is_refused_by_name():
    raw = {"model": {"params": 1e9}, "training": {"local_batch_tokens": 1_000_000},
           "fleet": {"hardware": "8xB200", "nodes": 8},
           "assumptions": {"profile": "dtplan", "constants": {"model_shape": "no-such-model"}}}
    with pytest.raises(InputError, match="model_shape"):
        parse_instance(raw)


def test_every_chip_figure_names_its_source():
    import json
    from planner.cost.compute.roofline import CHIPS_DIR
    for path in CHIPS_DIR.glob("*.json"):
        d = json.loads(path.read_text())
        for key in ("peak_tflops", "hbm_tb_s", "sms", "matmul_efficiency", "attention_efficiency", "training_efficiency"):
            assert d["sources"].get(key), (path.name, key)
        assert all(0 < e <= 1 for e in d["matmul_efficiency"].values())
        assert math.isfinite(d["hbm_tb_s"]) and d["hbm_tb_s"] > 0


def test_a_fabric_preset_sets_the_nvlink_bandwidth_and_a_given_constant_wins():
    from planner.cost.assumptions import apply_overrides
    a = load_profile("dtplan")
    assert apply_overrides(a, {"fabric_preset": "nvlink5-b200"}).intra_node_gb_per_s == 900.0      # 1.8 TB/s both ways
    assert apply_overrides(a, {"fabric_preset": "nvlink3-a100"}).intra_node_gb_per_s == 300.0      # 600 GB/s both ways
    assert apply_overrides(a, {"fabric_preset": "nvlink4-h100", "intra_node_gb_per_s": 160.0}).intra_node_gb_per_s == 160.0
    raw = {"model": {"params": 1e9}, "training": {"local_batch_tokens": 1_000_000},
           "fleet": {"hardware": "8xB200", "nodes": 8},
           "assumptions": {"profile": "dtplan", "constants": {"fabric_preset": "nvlink9"}}}
    with pytest.raises(InputError, match="fabric_preset"):
        parse_instance(raw)


def test_a100_training_efficiency_from_the_mosaicml_benchmark():
    """MPT-7B (6,658,859,008 parameters, no rotary) at m = 6 x 2,048 on A100 80GB: 4,641 tokens/s per GPU
    = 0.5943 of 312 TFLOP/s on 6 P, the compute model's bare u 0.7562, e_train = 0.786."""
    s, chip = preset_shape("mpt-7B"), chip_for("NVIDIA A100 SXM4 80GB")
    p, m = 6_658_859_008, 12288
    bare = 6 * p * m / (312e12 * sum(micro_batch_time_s(s, chip, "fp16", m).values()))
    assert bare == pytest.approx(0.7562, abs=5e-4)
    assert 4641 * 6 * p / 312e12 == pytest.approx(0.5943, abs=5e-5)
    assert 0.5943 / 0.7562 == pytest.approx(0.786, abs=5e-4)
    assert node_utilisation(s, chip, "fp16", p, m) == pytest.approx(0.786 * bare, rel=1e-12)
