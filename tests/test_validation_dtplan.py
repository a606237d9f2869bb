"""The dtplan profile against published runs (issue 14): the inputs scripts/validate_published.py
feeds it (Streaming DiLoCo at Table 4's step times, the MoE utilisation), checked
against figures worked by hand."""

import math

import pytest

from planner.cost import physics
from planner.cost.assumptions import load_profile
from planner.cost.compute.ops import Recipe
from planner.cost.compute.roofline import chip_for
from planner.cost.compute.shape import preset_shape
from planner.cost.compute.utilisation import micro_batch_time_s
from planner.evaluate import evaluate
from tests.test_published import validate_published

# run, parameters, Table 4's step time (s), fragments (layers / 3), Table 4's figures at 90%: FP4 Streaming DiLoCo, data-parallel
SIZES = (("streaming-diloco-1b", 1e9, 0.1, 8, 1.7, 184.2), ("streaming-diloco-10b", 10e9, 0.8, 16, 1.4, 222.3),
         ("streaming-diloco-100b", 100e9, 4.9, 36, 1.1, 390.7))


@pytest.mark.parametrize("name, params, step_s, fragments, streaming_gbps, dp_gbps", SIZES)
def test_streaming_diloco_bandwidths_by_hand(name, params, step_s, fragments, streaming_gbps, dp_gbps):
    """RTT 0, 90% utilisation, at Table 4's step time t (no calibration), f = 1 + 0.02 log2 2 the straggler
    factor of 2 replicas. Data parallel: a ring over 2 replicas moves the 16-bit gradients each way at once,
    and the exposed sync t_sync - 2/3 t = t / 9, so bw_dp = 16 P f / (7/9 t). Streaming DiLoCo, fp4, p
    fragments (Table 4's layers / 3), tau = 1, H = 100, each fragment also hiding behind the backward pass that
    produces it (2/3 t): p (t_frag - (tau + 2/3) t) = H t / 9 with t_frag = 4 P f / (p bw), so
    bw = 4 P f / (t (p (tau + 2/3) + H / 9)). 1B: 209.83 and 1.6691 Gb/s (table: 184.2 and 1.7)."""
    f = 1 + 0.02 * math.log2(2)
    result = validate_published.validate_run(name, with_solve=False, profile="dtplan")
    dp = 16 * params * f / (7 / 9 * step_s) / 1e9
    streaming = 4 * params * f / (step_s * (fragments * 5 / 3 + 100 / 9)) / 1e9
    assert result["predicted"]["data_parallel_bandwidth_for_90pct_gbps"] == pytest.approx(dp, rel=1e-6)
    assert result["predicted"]["bandwidth_for_90pct_gbps"] == pytest.approx(streaming, rel=1e-6)
    row = next(r for r in result["rows"] if r["quantity"] == "bandwidth_for_90pct_gbps")
    assert row["reported"] == streaming_gbps and abs(row["error"]) <= 0.15
    assert next(r for r in result["rows"] if r["quantity"] == "data_parallel_bandwidth_for_90pct_gbps")["reported"] == dp_gbps
    if name == "streaming-diloco-1b":
        assert (dp, streaming) == (pytest.approx(209.83, abs=0.01), pytest.approx(1.6691, abs=1e-4))


def test_table_4_figures_lie_on_a_geometric_grid():
    """The notes read Table 4's bandwidths as points of one geometric grid (neighbours 1.207 apart), so a
    figure is the first grid point reaching the utilisation. The data-parallel figures of the three sizes
    (86.8 ... 569.0 Gb/s) are whole powers of one ratio from 184.2 to within the table's rounding."""
    figures = (86.8, 104.8, 152.6, 184.2, 222.3, 268.3, 323.8, 390.7, 471.5, 569.0)
    ratio = 10 ** (4 / 49)
    for g in figures:
        k = math.log(g / 184.2) / math.log(ratio)
        assert k == pytest.approx(round(k), abs=0.01)
    assert ratio == pytest.approx(1.207, abs=5e-4)


def test_deepseek_tokens_per_second_from_the_moe_compute_model_by_hand():
    """DeepSeek-V3 under dtplan: 16 stages x 16 groups of 8 H800, u from the compute model of its shape
    (its MTP module included, its GEMMs at DeepGEMM's measured rates, its output layers and router in BF16 and its
    MLA up-projections recomputed) with its expert all-to-all (EP64 over 8 servers, node-limited to 4, fp8 dispatch and bf16 combine over
    50 GB/s of InfiniBand per GPU) hidden by DualPipe's overlap, the compute slowed by the 20 of 132 SMs
    it reserves (arXiv 2412.19437, section 3.2.2); DualPipe (section 3.2.1) with S = 16 and M = 64 (even, and at
    least 2 S), whose README's bubble (S / 2 - 1)(F&B + B - 3 W) is 7 x (1 + 2/3 - 1) = 14/3 slots: one step
    computes 6 x 37e9 x 3,932,160 FLOP on a node at 8 x 1,979e12 x u in 64 + 14/3 slots, each with one transfer
    of 2 a / M bits over 3.2 Tb/s and 0.01 ms. The MoE compute also holds the token permutation into expert order
    and back (DeepEP's fused dispatch, Megatron-LM's flex dispatcher) at HBM speed and the routed GEMMs at the
    slowest GPU's load by the multinomial floor (compute/experts.py). Tokens/s = 16 x 3,932,160 / step:
    3,981,260, +27.3% on the reported 3,128,000 (+33.1% without those two terms; +42.1% with zero-bubble's 64
    slots before them; +32.5% when each node synced every expert of its stage, before EP64 spread them). The stage node's memory with EP64 and ZeRO-1:
    tests/test_stage_experts.py (56.2 GB, it fits)."""
    result = validate_published.validate_run("deepseek-v3", with_solve=False, profile="dtplan")
    shape = preset_shape("deepseek-v3")
    chip = chip_for("NVIDIA H800 SXM5 80GB")
    recipe = Recipe(high_precision_head=True, recompute_mla_up=True)     # sections 3.3.1 and 3.2.3
    # the routed GEMMs at the slowest of 64 GPUs' load (the statistical floor, z_64 = 2.3437) and DeepEP's
    # permutation into expert order and back, 4 x 4,096 x 8 rows x 7,168 x (1 + 2) bytes x 59 MoE blocks at 3.35 TB/s
    floor = 1 + 2.3437 * math.sqrt(4096 * 8 * 63 / 64 * 248 / 255) / (4096 * 8)
    parts = micro_batch_time_s(shape, chip, "fp8", 4096, 1.0, 64, recipe, floor)
    permutation_s = 4 * 4096 * 8 * 7168 * 3 * 59 / 3.35e12
    assert permutation_s == pytest.approx(0.0496, abs=1e-4)
    compute_s = (sum(parts.values()) + permutation_s) * 132 / 112
    # at most 4 servers, 7 of 8 remote, 58 MoE layers and the MTP block (an MoE block too)
    a2a_s = 4 * 7 / 8 * 4096 * 7168 * (2 * 1 + 2 * 2) * (58 + 1) / 50e9
    assert a2a_s == pytest.approx(0.7275, abs=1e-4) and a2a_s < compute_s     # hidden
    assert compute_s == pytest.approx(1.4665, abs=1e-4)    # DeepGEMM's rates, the MTP block, the recipe: 1.244 s x 132 / 112
    u = chip.training_efficiency["fp8"] * 6 * 37e9 * 4096 / (1980e12 * compute_s)   # the chip's fp8 peak
    t_comp = 6 * 37e9 * 3932160 / (8 * 1979e12 * u)
    act_bits = 3932160 * 7168 * 1.0 * 8      # fp8 activations, 1 byte, no activation compression
    f_pp = 1 + 0.02 * 4                      # relay straggler over 16 stages
    slots = 64 + (16 / 2 - 1) * ((1 / 3 + 2 / 3) + 2 / 3 - 3 * 1 / 3)
    assert slots == pytest.approx(64 + 14 / 3)
    step = slots * (t_comp / (16 * 64) + (2 * act_bits / 64 / 3.2e12 + 1e-5) * f_pp)
    tokens_per_s = result["predicted"]["tokens_per_s"]
    assert tokens_per_s == pytest.approx(16 * 3932160 / step, rel=0.01)
    headline = next(r for r in result["rows"] if r["quantity"] == "tokens_per_s")
    assert headline["error"] == pytest.approx(0.273, abs=0.0005)        # docs/validation.md: +27.3%
    assert result["violations"] == []


def test_intellect1_bandwidth_is_derived_again_under_dtplans_sync():
    """The reference derived 345.8 Mb/s from the reported ~8.3 min sync: (2 v / bw + lat) f = 498 s with
    v = 10e9 x 8 bits (int8), lat = 0.1 s, f = 1 + 0.02 log2 14. dtplan's ring over concurrent links moves
    2 x 13/14 v each way at once, (2 x 13/14 v / bw + lat) f, so the same sync needs 13/14 of that
    bandwidth: 321.1 Mb/s. Then one inner step is 6 x 10e9 x 1,048,576 / (8 x 990e12 x u) with u the compute
    model's for INTELLECT-1's shape on H100 (0.4563; checked by hand in tests/test_compute_model.py) = 17.41 s,
    times 4/3 for the run's full activation recomputation (act_ckpt = true: one more forward pass, 2 of 6 P
    FLOP): 23.21 s, and the blocking sync hides 2/3 of a step: outer = 100 t + 498 - 2/3 t = 2,803.6 s against
    the reported 2,778 s."""
    f = 1 + 0.02 * math.log2(14)
    assert (2 * 8e10 / 345.8e6 + 0.1) * f == pytest.approx(498.0, abs=0.1)
    bw_bps = 2 * 13 / 14 * 8e10 / (498.0 / f - 0.1)
    assert bw_bps / 1e6 == pytest.approx(321.1, abs=0.05)
    result = validate_published.validate_run("intellect-1", with_solve=False, profile="dtplan")
    assert result["wan_mbps"] == pytest.approx(bw_bps / 1e6, rel=1e-4)
    u = physics.compute_model_mfu(load_profile("dtplan").replace(model_shape="intellect-1-10B"),
                                  "NVIDIA H100 SXM5 80GB", 1e10, 1e10, 4096)["fp16"]
    t = 6 * 10e9 * 1048576 / (8 * 990e12 * u) * 4 / 3
    outer = 100 * t + 498.0 - 2 / 3 * t
    assert result["predicted"]["outer_time_s"] == pytest.approx(outer, rel=1e-4)
    assert outer == pytest.approx(2803.6, abs=0.1)
    tokens_per_s = 14 * 100 * 1048576 / outer
    # MFU on the run's own basis, 6 P + 12 L H Q T with P without the token embedding (test_physics_model_flops.py)
    assert result["predicted"]["hardware_mfu"] == pytest.approx(75_027_701_760 * tokens_per_s / (112 * 990e12), rel=1e-4)


def test_opendiloco_takes_intellect1s_bandwidth_derived_under_the_same_profile():
    ref = validate_published.validate_run("opendiloco", with_solve=False)
    dt = validate_published.validate_run("opendiloco", with_solve=False, profile="dtplan")
    assert ref["wan_mbps"] == 345.8
    assert dt["wan_mbps"] == pytest.approx(345.8 * 13 / 14, rel=1e-3)


WHOLE = {"stage_state_shards": 1.0}     # the stage state not sharded over the data-parallel groups


def test_activation_memory_without_stage_sharding_would_refuse_llama3_as_run():
    """What the sharding of a stage's state over the data-parallel groups buys (docs/physics.md, section 3;
    with it, tests/test_stage_shards.py): without it (stage_state_shards = 1), Llama 3 405B on
    8,192 GPUs, 16 stages of L / S = 405e9 / (12 x 16,384^2 x 16) = 7.858 layers, 1F1B-interleaved with
    v = 4, so the first stage holds 16 (1 + 15 / 64) = 19.75 micro-batches of 262,144 / 32 = 8,192 tokens at
    c = 34 bytes per token, layer and h: 708.2 GB of activations beside 405e9 x 16 / 16 = 405 GB of state,
    above the node's 640 GB, so `selective` refuses the plan as run. `fit` recomputes
    r = (405 + 708.2 + 4.56 - 640) / (708.2 x (1 - 2 / 34)) = 0.717 of the layers (working set
    8,192 x 34 x 16,384 bytes), and the MFU falls outside 15% of the reported 0.43."""
    layers = 405e9 / (12 * 16384 ** 2 * 16)
    kept = 16 * (1 + 15 / 64) * 8192 * 34 * 16384 * layers
    working = 8192 * 34 * 16384
    assert kept / 1e9 == pytest.approx(708.22, abs=0.01)
    on = validate_published.validate_run("llama3-405b-8192", with_solve=False, profile="dtplan",
                                         constants={"activation_memory": True, "activation_recompute": "selective",
                                                    **WHOLE})
    assert any(v.startswith("memory-cap: training state 1,113.2 GB") for v in on["violations"])
    fit = validate_published.validate_run("llama3-405b-8192", with_solve=False, profile="dtplan",
                                          constants={"activation_memory": True, "activation_recompute": "fit", **WHOLE})
    r = (405e9 + kept + working - 640e9) / (kept * (1 - 2 / 34))
    instance, plan, _, _ = validate_published.load_run("llama3-405b-8192", "dtplan",
                                                       {"activation_memory": True, "activation_recompute": "fit", **WHOLE})
    assert evaluate(instance, plan).values["recompute_share"] == pytest.approx(r, rel=1e-6)
    assert r == pytest.approx(0.7168, abs=1e-4)
    assert not fit["violations"]
    off = validate_published.validate_run("llama3-405b-8192", with_solve=False, profile="dtplan",
                                          constants={"activation_memory": False, **WHOLE})
    assert abs(validate_published.headline(off)["headline_error"]) <= 0.15 < abs(validate_published.headline(fit)["headline_error"])


def test_table_4s_other_rows_by_hand():
    """The reported files' [[dtplan_variants]]: Table 4's bf16 "w/ overlapped com." row is the FP4 run with
    16-bit payloads, 4 times its bandwidth (1B: 4 x 1.6691 = 6.676 Gb/s against 6.2). Vanilla DiLoCo (bf16,
    blocking, no fragments): the whole 16-bit payload after every H = 100 steps, hidden only behind the last
    backward pass (dp_overlap), so t_sync - 2/3 t = H t / 9 at 90%: bw = 16 P f / (t (H / 9 + 2/3)),
    1B: 16e9 x 1.02 / (0.1 x 11.78) = 13.86 Gb/s against 13.3."""
    f = 1 + 0.02 * math.log2(2)
    result = validate_published.validate_run("streaming-diloco-1b", with_solve=False, profile="dtplan")
    overlapped, vanilla = result["variants"]
    assert overlapped["reported"] == 6.2 and vanilla["reported"] == 13.3
    assert overlapped["predicted"] == pytest.approx(4 * 4e9 * f / (0.1 * (8 * 5 / 3 + 100 / 9)) / 1e9, rel=1e-6)
    assert vanilla["predicted"] == pytest.approx(16e9 * f / (0.1 * (100 / 9 + 2 / 3)) / 1e9, rel=1e-6)
    assert vanilla["predicted"] == pytest.approx(13.86, abs=0.01)
    assert "blocking" in vanilla["plan"] and "Cr=1" in vanilla["plan"]


def test_each_run_outside_15_percent_opens_with_its_missing_term():
    """docs/validation.md: the bullet of every run whose dtplan headline is outside 15% begins with the
    error and the missing term in one sentence (`[dtplan] missing_summary`), before what the run sets."""
    page = (validate_published.ROOT / "docs" / "validation.md").read_text()
    outside = [r for r in (validate_published.validate_run(n, with_solve=False, profile="dtplan")
                           for n in validate_published.runs())
               if abs(validate_published.headline(r)["headline_error"]) > 0.15]
    assert {r["name"] for r in outside} == {"covenant-72b", "deepseek-v3"}
    for r in outside:
        bullet = next(line for line in page.splitlines() if line.startswith(f"- **{r['run']}**: "))
        error = validate_published._pct(validate_published.headline(r)["headline_error"])
        assert bullet.startswith(f"- **{r['run']}**: **Outside 15% ({error}): the missing term is ")


def test_a_row_outside_15_percent_beside_a_headline_within_is_still_explained():
    """INTELLECT-1's headline is the MFU it measured (0.362; dtplan 0.354, -2.1%), but its wall-clock row
    (42 days; dtplan 22.31 days with goodput, -46.9%) counts the run's node churn: its bullet names that row,
    its error and the missing term, and why the headline is the MFU."""
    page = (validate_published.ROOT / "docs" / "validation.md").read_text()
    r = validate_published.validate_run("intellect-1", with_solve=False, profile="dtplan")
    head = validate_published.headline(r)
    assert r["dtplan"]["headline"] == "hardware_mfu" and head["reported"] == 0.362
    assert head["headline_error"] == pytest.approx(0.354 / 0.362 - 1, abs=0.002)
    row = validate_published.outside_row(r)
    assert row["quantity"] == "run_days" and row["error_with_goodput"] == pytest.approx(22.31 / 42 - 1, abs=0.001)
    bullet = next(line for line in page.splitlines() if line.startswith("- **INTELLECT-1**: "))
    assert bullet.startswith("- **INTELLECT-1**: **Headline within 15% (-2.1%); days for the run's tokens "
                             "(wall-clock) outside (-46.9%): the missing term is node availability")
    assert "Headline: the MFU the run measured" in bullet and "The missing term in detail: Node availability" in bullet
    # a run within 15% everywhere has no row to explain
    assert validate_published.outside_row(
        validate_published.validate_run("llama3-405b-8192", with_solve=False, profile="dtplan")) is None


def test_the_planner_matches_the_fastest_layout_and_beats_or_ties_each_runs_own():
    """Issue 25 item 6: for every run trained synchronously, `solve` with the run's freedom (under dtplan with
    its inputs) returns a plan at least as fast as the run's own layout, and exactly as fast as the fastest of
    every layout of the run's nodes scored one by one (a brute force over Z, S, M and the schedule)."""
    ranked = [r for r in (validate_published.layout_rank(n) for n in validate_published.runs()) if r]
    assert len(ranked) == 7            # Llama 3 x 2, Megatron-Bridge x 3, DeepSeek-V3, PaLM
    for r in ranked:
        days = r["chosen"]["time_to_target_days"]
        assert days <= r["run_days"] * (1 + 1e-9)
        assert days == pytest.approx(r["best_layout_days"], rel=1e-9)
        assert r["rank"] == r["faster"] + 1 <= r["layouts"]


def _fastest_and_no_slower_than_the_run(name: str, lay: dict) -> float | None:
    """A layout table's row (validate_published._ranked): the planner's days, at most the run's own (scored by
    the same model) and exactly the fastest layout scored one by one; None for PaLM's pod (one KV head: T = 1
    only), which has no layout that fits."""
    if name == "palm-540b":
        assert lay["layouts"] == 0 and lay["chosen"]["plan"] is None
        return None
    days = lay["chosen"]["time_to_target_days"]
    assert days <= lay["run_days"] * (1 + 1e-9)
    assert days == pytest.approx(lay["best_layout_days"], rel=1e-9)
    return days


def test_with_tp_free_the_planner_still_matches_the_fastest_layout():
    """Issue 25 items 2 and 6: with the tensor-parallel degree free as well (`search_tensor_parallel`), `solve`
    with the run's freedom is at least as fast as the run's own plan (its stated T) and exactly the fastest
    layout scored one by one at each plan's chosen T. With the memory per accelerator as well (activations per
    TP group, one sequence at least; `fit`) the same against the run's plan scored by that model, and the
    planner picks the run's T for Llama 3 405B (8) and the B200 run (4), half of it for the other two
    Megatron-Bridge runs (docs/validation.md)."""
    ranked = {n: r for n in validate_published.runs() if (r := validate_published.layout_rank(n))}
    chosen_t = {}
    for name, r in ranked.items():
        days = _fastest_and_no_slower_than_the_run(name, r["tp_free"])
        assert days is None or days <= r["chosen"]["time_to_target_days"] * (1 + 1e-9) or name == "deepseek-v3"
        if _fastest_and_no_slower_than_the_run(name, r["tp_memory"]) is not None:
            chosen_t[name] = r["tp_memory"]["chosen"].get("tensor_parallel")
    assert ranked["deepseek-v3"]["tp_free"]["chosen"] == ranked["deepseek-v3"]["chosen"]    # MoE: T stays the run's
    assert chosen_t == {"deepseek-v3": None, "llama3-405b-16384": 8.0, "llama3-405b-8192": 8.0,
                        "megatron-bridge-llama3-70b-h100": 2.0, "megatron-bridge-llama31-405b-b200": 4.0,
                        "megatron-bridge-llama31-405b-h100": 4.0}
