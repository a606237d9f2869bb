"""scripts/deepseek_profile.py: the decomposition of DeepSeek's training trace (kernel families, the profiler range
each kernel was launched from, busy time per family and pair) on a small hand-made trace, and its model side (one
MoE layer of dtplan's compute model) against hand calculations from DeepGEMM's rates."""

import importlib.util
import math
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("deepseek_profile", ROOT / "scripts" / "deepseek_profile.py")
dp = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(dp)

# kernel names as they appear in deepseek-ai/profile-data train.json (commit 4496024), arguments shortened
GEMM = "void cutlass::device_kernel<dpsk::grouped_gemm::cuda::fp8_ptp128c::GemmKernel>(x)"
WGRAD = "void cutlass::device_kernel<dpsk::grouped_gemm::cuda::fp8_dptp128c_acc::GemmKernel>(x)"
FLASH = ("void flash::compute_attn_ws<Flash_fwd_kernel_traits<192, 128, 128, 12, 2, false, 1, cutlass::bfloat16_t, "
         "128>, true, flash::Flash_fwd_params>(x)")
CAST = "void cuda::per_token_cast_to_fp8_with_channels<__nv_bfloat16, 128, false, 128, false>(x)"
DISPATCH = "void dpsk::ep::internode::dispatch<false, 8, false, 8>(x)"


@pytest.mark.parametrize("name, block, family", [
    (GEMM, "attn", "gemm_fp8_attention"),
    (GEMM, "mlp", "gemm_fp8_moe"),
    ("void cutlass::device_kernel<dpsk::grouped_gemm::cuda::m_grouped_fp8_ptp128c::GemmKernel>(x)", None,
     "gemm_fp8_moe"),
    ("sm90_xmma_gemm_bf16f32_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x"
     "_cublas", "attn", "gemm_bf16"),
    (FLASH, "attn", "attention"),
    ("void cutlass::device_kernel<flash::FlashAttnBwd<flash::CollectiveMainloopBwd<2>>>(x)", "attn", "attention"),
    (CAST, "attn", "fp8_cast"),
    ("void cuda::batched_transpose<512, 128, 1, 1>(x)", "mlp", "fp8_cast"),
    ("void cuda::swiglu_forward_with_weight_and_per_token_cast_to_fp8_with_channels_impl<__nv_bfloat16>(x)", "mlp",
     "activation"),
    ("void layer_norm::ln_fwd_kernel<layer_norm::Kernel_traits<__nv_bfloat16>>(x)", "attn", "norm"),
    ("rotary_kernel", None, "rotary"),
    ("cuda::expand_to_fused_with_scales_impl(int4 const*)", "mlp", "permutation"),
    ("void cuda::reduce_fused_impl<__nv_bfloat16, false, false>(x)", "mlp", "permutation"),
    ("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>(x)", "mlp", "other_elementwise"),
    (DISPATCH, "dispatch", "deepep"),
    ("void dpsk::ep::internode::cached_notify<false>(x)", "combine", "deepep"),
])
def test_kernel_families(name, block, family):
    assert dp.kernel_family(name, block) == family


def test_busy_is_the_union_of_intervals():
    assert dp.busy_us([]) == 0.0
    assert dp.busy_us([(0, 10), (5, 20), (30, 40)]) == 30.0      # [0, 20) and [30, 40)
    assert dp.busy_us([(30, 40), (0, 10), (10, 15)]) == 25.0     # touching intervals join


def _trace() -> list[dict]:
    """Two overlapped pairs of three ranges each; GPU times in microseconds from 1,000 (pair 0) and 1,100 (pair 1).
    Per pair: on stream 7 a per-token cast [0, 2) and an attention-projection GEMM [2, 12) from attn(F), the flash
    forward [12, 32) from attn(F), a rotary kernel [32, 35) launched through the driver outside every range;
    weight-gradient GEMMs on stream 7 [40, 60) and stream 23 [50, 70) from mlp(W); DeepEP's dispatch on stream 27
    [0, 80) from dispatch(F). No compute kernel runs in [35, 40) and [70, 100)."""
    ev = [{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "ts": 0, "dur": 600, "tid": 1}]
    corr = iter(range(1, 1000))

    def kernel(name, gpu_ts, dur, stream, grid, cpu_ts, cat="cuda_runtime"):
        c = next(corr)
        ev.append({"ph": "X", "cat": cat, "name": "cudaLaunchKernel", "ts": cpu_ts, "dur": 1, "tid": 1,
                   "args": {"correlation": c}})
        ev.append({"ph": "X", "cat": "kernel", "name": name, "ts": gpu_ts, "dur": dur, "tid": stream,
                   "args": {"stream": stream, "correlation": c, "grid": grid}})

    for pair in (0, 1):
        cpu, gpu = 300 * pair, 1000 + 100 * pair
        for i, name in enumerate(("attn(F)", "mlp(W)", "dispatch(F)")):
            ev.append({"ph": "X", "cat": "user_annotation", "name": name, "ts": cpu + 100 * i, "dur": 90, "tid": 1})
        kernel(CAST, gpu, 2, 7, [4096, 1, 1], cpu + 5)
        kernel(GEMM, gpu + 2, 10, 7, [112, 1, 1], cpu + 10)
        kernel(FLASH, gpu + 12, 20, 7, [32, 128, 1], cpu + 20)
        kernel("rotary_kernel", gpu + 32, 3, 7, [1024, 1, 1], cpu + 95, cat="cuda_driver")   # between two ranges
        kernel(WGRAD, gpu + 40, 20, 7, [112, 1, 1], cpu + 110)
        kernel(WGRAD, gpu + 50, 20, 23, [112, 1, 1], cpu + 120)
        kernel(DISPATCH, gpu, 80, 27, [20, 1, 1], cpu + 210)
    return ev


def test_phases_follow_the_launching_range():
    kernels = dp.gpu_kernels(_trace())
    by = {(k["name"], k["ts"]): k for k in kernels}
    assert by[(GEMM, 1002.0)]["phase"]["name"] == "attn(F)" and by[(GEMM, 1102.0)]["phase"]["index"] == 1
    assert by[(GEMM, 1002.0)]["family"] == "gemm_fp8_attention"
    assert by[(WGRAD, 1050.0)]["family"] == "gemm_fp8_moe" and by[(WGRAD, 1050.0)]["phase"]["part"] == "W"
    # launched outside every range: the phase of the kernel before it on its stream (the flash forward)
    assert by[("rotary_kernel", 1132.0)]["phase"]["name"] == "attn(F)"
    assert by[("rotary_kernel", 1132.0)]["phase"]["index"] == 1
    assert by[(DISPATCH, 1000.0)]["phase"]["name"] == "dispatch(F)"


def test_summary_of_the_hand_made_trace():
    s = dp.summarise(dp.gpu_kernels(_trace()))
    assert s["pairs"] == 2
    # GPU span 1,000 to 1,180 us (pair 1's dispatch ends last) over 2 pairs
    assert s["wall_ms"] == pytest.approx(0.090)
    # compute busy per pair: [0, 35) and [40, 70) = 65 us; idle 90 - 65 = 25 us
    assert s["compute_busy_ms"] == pytest.approx(0.065) and s["compute_idle_ms"] == pytest.approx(0.025)
    # forward [0, 35) (the rotary kernel inherits attn(F)), weight gradients [40, 70)
    assert s["compute_parts_ms"] == {"F": pytest.approx(0.035), "B": 0.0, "W": pytest.approx(0.030)}
    assert s["family_ms"]["gemm_fp8_attention"] == pytest.approx(0.010)
    assert s["family_ms"]["gemm_fp8_moe"] == pytest.approx(0.030)        # [40, 70): the two streams count once
    assert s["family_sum_ms"]["gemm_fp8_moe"] == pytest.approx(0.040)    # their durations added
    assert s["family_parts_ms"]["gemm_fp8_moe"] == {"F": 0.0, "B": 0.0, "W": pytest.approx(0.030)}
    assert s["family_parts_ms"]["attention"]["F"] == pytest.approx(0.020)
    assert s["family_parts_ms"]["rotary"]["F"] == pytest.approx(0.003)
    assert s["family_ms"]["fp8_cast"] == pytest.approx(0.002)
    assert s["compute_sum_ms"] == pytest.approx((2 + 10 + 20 + 3 + 20 + 20) / 1000)
    assert s["deepep_busy_ms"] == pytest.approx(0.080) and s["deepep_share"] == pytest.approx(80 / 90)
    assert s["deepep_blocks"] == 20
    assert s["tokens"] == {"per_token_cast": 4096, "attention_tiles": 32 * 128, "heads": 128}


def test_render_and_errors(tmp_path, capsys):
    text = dp.render(dp.summarise(dp.gpu_kernels(_trace())), None)
    assert "Wall of the chunk pair: 0.18 ms; per layer pair 0.09 ms" in text and "gemm_fp8_moe" in text
    assert dp.main([str(tmp_path / "missing.json")]) == 2
    assert "cannot read" in capsys.readouterr().err
    empty = tmp_path / "empty.json"
    empty.write_text('{"traceEvents": []}')
    assert dp.main([str(empty), "--no-model"]) == 2


def test_model_layer_against_deepgemm_rates_by_hand():
    """One MoE layer of deepseek-v3 under the run's constants, m = 4,096 tokens, EP64: 4 local experts of 8,192
    rows. Forward FP8 GEMMs of the MoE block at DeepGEMM's H800 rates (models/accelerators/compute/H100-SXM.json):
    routed up 2 x 32,768 x 4,096 x 7,168 at 1,297 TFLOPS and down 2 x 32,768 x 7,168 x 2,048 at 1,099, both x the
    imbalance floor; shared up 2 x 4,096 x 4,096 x 7,168 at 1,304 and down 2 x 4,096 x 7,168 x 2,048 at 1,025.
    The router stays in BF16 (high_precision_head). Weight gradients at the forward rates (the model's assumption the
    trace tests); the attention block's backward adds the recomputed query and KV up-projections (990 and 590)."""
    model = dp.model_layer_ms()
    e, k, n = 64.0, 8.0, 256.0
    sigma = math.sqrt(e * 4096 * k / e * (1 - 1 / e) * (n - k) / (n - 1))
    floor = 1 + 2.3439 * sigma / (4096 * k)                     # z_64 = 2.3439 (E[max of 64 standard normals])
    routed = (2 * 32768 * 4096 * 7168 / 1297e12 + 2 * 32768 * 7168 * 2048 / 1099e12) * floor
    shared = 2 * 4096 * 4096 * 7168 / 1304e12 + 2 * 4096 * 7168 * 2048 / 1025e12
    moe = model["family_parts_ms"]["gemm_fp8_moe"]
    assert moe["F"] == pytest.approx((routed + shared) * 1e3, rel=1e-4)
    assert moe["B"] == pytest.approx(moe["F"]) and moe["W"] == pytest.approx(moe["F"])
    att = model["family_parts_ms"]["gemm_fp8_attention"]
    recompute = 2 * 4096 * 24576 * 1536 / 990e12 + 2 * 4096 * 32768 * 512 / 590e12
    assert att["B"] - att["W"] == pytest.approx(recompute * 1e3, rel=1e-9)
    assert att["F"] == pytest.approx(att["W"])
    forward = (2 * 4096 * 2112 * 7168 / 1058e12 + 2 * 4096 * 24576 * 1536 / 990e12
               + 2 * 4096 * 32768 * 512 / 590e12 + 2 * 4096 * 7168 * 16384 / 1358e12)
    assert att["F"] == pytest.approx(forward * 1e3, rel=1e-9)
    assert model["family_parts_ms"]["gemm_bf16"]["F"] > 0          # the router, in BF16
    assert model["sm_factor"] == pytest.approx(132 / 112) and model["e_train"] == pytest.approx(0.755)
    assert model["as_counted_ms"] == pytest.approx(model["total_ms"] * 132 / 112 / 0.755)
    assert model["moe_blocks"] == 59 and model["micro_batch_tokens"] == 4096
    # the all-to-all per MoE block: 36.38 GB over the NIC per micro-batch at 50 GB/s, over 59 blocks
    assert model["all_to_all_ms"] == pytest.approx(3.5 * 4096 * 7168 * 6 * 59 / 50e9 / 59 * 1e3, rel=1e-9)
