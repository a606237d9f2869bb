"""The dtplan profile's terms (planner/cost/physics.py), each against numbers worked by hand,
and the monotonicity facts the exact search needs, checked with every term switched on."""

import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from planner.objectives import MIN_TIME
from planner.cost import physics
from planner.cost.assumptions import Assumptions, load_profile
from planner.evaluate import evaluate
from planner.schema.errors import InputError
from planner.schema.instance import parse_instance
from planner.schema.plan import parse_plan
from tests.test_bound_properties import _evaluate, _non_decreasing, _non_increasing, cases

ROOT = Path(__file__).resolve().parents[1]
OFF = Assumptions()


# these terms are checked at the table's u (the compute model: test_compute_model.py) and on the node's state
# alone (the activations the profile counts: docs/physics.md sections 2b and 3; the tests that switch them on)
TABLE = {"mfu_from_compute_model": False, "activation_memory": False}


def _instance(constants=None, profile="dtplan", **assumptions):
    constants = {**TABLE, **(constants or {})} if profile == "dtplan" else constants
    raw = {"model": {"params": 1e9}, "training": {"tokens": 1e11, "local_batch_tokens": 1_000_000},
           "fleet": {"hardware": "16xH100-SXM", "nodes": 8},
           "network": {"wan": {"up_mbps": 1000, "down_mbps": 1000, "rtt_ms": 0}},
           "assumptions": {"profile": profile, **assumptions, **({"constants": constants} if constants else {})}}
    return parse_instance(raw)


# -- 1. achieved MFU ------------------------------------------------------------------------------


def test_table_mfu_replaces_the_profile_mfu_unless_the_instance_sets_one():
    a = OFF.replace(mfu_from_table=True)
    h100 = physics.resolve_mfu(a, "NVIDIA H100 SXM5 80GB", explicit=False)
    assert (h100.mfu, h100.mfu_for("fp16"), h100.mfu_for("fp8")) == (0.4496, 0.4496, 0.371)
    assert physics.resolve_mfu(a, "NVIDIA H100 SXM5 80GB", explicit=True).mfu == 0.40
    assert physics.resolve_mfu(a, "Some unknown chip", explicit=False).mfu == 0.40
    assert physics.resolve_mfu(OFF, "NVIDIA H100 SXM5 80GB", explicit=False).mfu == 0.40   # switch off


def test_step_time_uses_the_table_mfu():
    # 6 P B / (F u) = 6 x 1e9 x 1e6 / (16 x 990e12 x 0.4496) = 0.84250 s
    e = evaluate(_instance(), parse_plan({"mode": "flat", "nodes": 1, "precision": "fp16"}))
    assert e.values["t_comp_s"] == pytest.approx(6e15 / (16 * 990e12 * 0.4496), rel=1e-12)
    e = evaluate(_instance(mfu=0.5), parse_plan({"mode": "flat", "nodes": 1, "precision": "fp16"}))
    assert e.values["t_comp_s"] == pytest.approx(6e15 / (16 * 990e12 * 0.5), rel=1e-12)
    fp8 = evaluate(_instance(), parse_plan({"mode": "flat", "nodes": 1, "precision": "fp8"}))
    assert fp8.values["t_comp_s"] == pytest.approx(6e15 / (16 * 1980e12 * 0.371), rel=1e-12)


def test_every_table_entry_has_a_source_and_a_fraction():
    for name, entry in physics.mfu_table().items():
        for p in ("fp16", "fp8", "fp4"):
            if p in entry:
                assert 0 < entry[p] <= 1 and entry["source"][p], (name, p)


def test_moe_models_take_the_table_moe_figure():
    a = OFF.replace(mfu_from_table=True)
    moe = physics.resolve_mfu(a, "NVIDIA H800 SXM5 80GB", explicit=False, moe=True)
    # fp8: Megatron-Bridge's DeepSeek-V3 on H100 with DeepSeek's fp8 scaling, 1,297 x 330 / 338 = 1,266 tokens/s
    # per GPU x 6 x 37e9 / 1,979e12 = 0.1421;
    # fp16 has no MoE figure and keeps the dense 0.4496
    assert (moe.mfu_for("fp16"), moe.mfu_for("fp8")) == (0.4496, 0.1421)
    assert 1297 * 330 / 338 * 6 * 37e9 / 1979e12 == pytest.approx(0.1421, abs=5e-5)
    assert physics.resolve_mfu(a, "NVIDIA H800 SXM5 80GB", explicit=False).mfu_for("fp8") == 0.371   # dense
    assert physics.resolve_mfu(a, "NVIDIA A100 SXM4 80GB", explicit=False, moe=True).mfu == 0.385    # no MoE entry
    # an evaluation of a MoE instance: t_comp = 6 P_act B / (F u) = 6 x 2.5e8 x 1e6 / (16 x 1980e12 x 0.1421)
    raw = {"model": {"params": 1e9, "active_params": 2.5e8, "moe_layers": 4}, "training": {"local_batch_tokens": 1_000_000},
           "fleet": {"hardware": "16xH100-SXM", "nodes": 8}, "assumptions": {"profile": "dtplan"}}
    e = evaluate(parse_instance(raw), parse_plan({"mode": "flat", "nodes": 1, "precision": "fp8"}))
    assert e.values["t_comp_s"] == pytest.approx(6 * 2.5e8 * 1e6 / (16 * 1980e12 * 0.1421), rel=1e-12)


def test_b200_has_an_fp8_figure_only_and_the_other_precisions_say_so():
    # Megatron-Bridge 25.11, DGX-B200: Llama 3.1 405B fp8 at 661 tokens/s per GPU over the 4,500 TFLOP/s dense fp8 peak
    assert 661 * 6 * 405e9 / 4500e12 == pytest.approx(0.3569, abs=5e-5)
    a = OFF.replace(mfu_from_table=True)
    for name in ("NVIDIA B200 (Blackwell, 192 GB HBM3e)", "NVIDIA B200 (Blackwell, 180 GB HBM3e, DGX/HGX B200)"):
        b200 = physics.resolve_mfu(a, name, explicit=False)
        assert (b200.mfu_for("fp16"), b200.mfu_for("fp8"), b200.mfu_for("fp4")) == (0.40, 0.3569, 0.40)
    raw = {"model": {"params": 1e9}, "training": {"local_batch_tokens": 1_000_000},
           "fleet": {"hardware": "8xB200", "nodes": 8}, "assumptions": {"profile": "dtplan", "constants": TABLE}}
    warned = {}
    for precision in ("fp16", "fp8", "fp4"):
        e = evaluate(parse_instance(raw), parse_plan({"mode": "flat", "nodes": 1, "precision": precision}))
        warned[precision] = [w for w in e.warnings if "achieved-MFU" in w]
    assert warned["fp8"] == []
    assert warned["fp16"] == ["no fp16 achieved-MFU figure in models/mfu.json for 'NVIDIA B200 (Blackwell, 180 GB "
                              "HBM3e, DGX/HGX B200)': MFU 0.4 (the profile's) is used at fp16"]
    assert len(warned["fp4"]) == 1 and warned["fp4"][0].startswith("no fp4 achieved-MFU figure")
    # H200 and MI300X have no entry at all: the profile's u, with the existing warning
    e = evaluate(parse_instance({**raw, "fleet": {"hardware": "8xMI300X", "nodes": 8}}),
                 parse_plan({"mode": "flat", "nodes": 1, "precision": "fp16"}))
    assert "no achieved-MFU entry in models/mfu.json for 'AMD Instinct MI300X (192 GB HBM3)': MFU 0.4 (the " \
           "profile's) is used" in e.warnings


# -- 4. sync over the links -------------------------------------------------------------------------


def test_streaming_fragments_by_hand():
    a = OFF.replace(streaming_fragments=20.0, streaming_overlap_steps=1.0)
    # one exchange of 10 s of payload + 0.1 s latency, straggler 1.02: a fragment is (10 / 20 + 0.1) x 1.02
    assert physics.fragment_sync_s(a, 10.1, 1.02, 0.1) == pytest.approx(0.612)
    assert physics.fragment_sync_s(OFF, 10.1, 1.02, 0.1) == pytest.approx(10.1 * 1.02)   # p = 1: the whole sync
    # H = 100, t_step = 0.5 s: each of 20 fragments stalls max(0, 0.612 - 1 x 0.5) = 0.112 s -> 50 + 2.24
    assert physics.streaming_outer_s(a, 100, 0.5, 10.3, 0.612) == pytest.approx(52.24)
    # a fragment that fits in its tau steps costs nothing
    assert physics.streaming_outer_s(a, 100, 1.0, 10.3, 0.612) == pytest.approx(100.0)
    # tau = 0 means the whole interval H / p = 5 steps: stall max(0, 6 - 5 x 1) = 1 per fragment
    whole = OFF.replace(streaming_fragments=20.0)
    assert physics.streaming_outer_s(whole, 100, 1.0, 0.0, 6.0) == pytest.approx(120.0)
    # off (p = 1, tau = 0): the reference's max(H t_step, t_sync)
    assert physics.streaming_outer_s(OFF, 100, 1.0, 150.0, 150.0) == pytest.approx(150.0)
    assert physics.streaming_outer_s(OFF.replace(streaming_overlap_steps=100.0), 100, 1.0, 150.0, 150.0) == \
        pytest.approx(150.0)


def test_streaming_fragments_in_an_evaluation():
    # dtplan, 8 nodes of 16x H100 at u = 0.4496: t_step = 6e15 / (16 x 990e12 x 0.4496) s; fp16 payload 16e9 bits,
    # ring over 8 with concurrent links: w = 2 x 7/8 x 16e9 = 28e9 bits at 1e9 b/s = 28 s, relay f = 1 + 0.02 x 3
    t = 6e15 / (16 * 990e12 * 0.4496)
    f = 1 + 0.02 * 3
    plan = parse_plan({"mode": "flat", "nodes": 8, "precision": "fp16", "inner_steps": 10, "streaming": True})
    whole = evaluate(_instance(), plan).values
    assert whole["outer_time_s"] == pytest.approx(max(10 * t, 28 * f), rel=1e-12)
    frag = evaluate(_instance({"streaming_fragments": 5, "streaming_overlap_steps": 1}), plan).values
    assert frag["outer_time_s"] == pytest.approx(10 * t + 5 * max(0.0, 28 / 5 * f - t), rel=1e-12)


def test_fragmented_streaming_lists_blocking_plans_too():
    """A fragmented streaming sync pays p latencies and a bounded window, so it can lose to a blocking
    sync: the space then lists both (the brute-force comparison below draws fragments too)."""
    from planner.space import DecisionSpace
    inst = _instance({"streaming_fragments": 20, "streaming_overlap_steps": 1})
    from planner.evaluate import setting_from_instance
    s = setting_from_instance(inst)
    space = DecisionSpace.from_instance(inst, s)
    assert space.streaming == (True,)
    assert space.for_objective(s, MIN_TIME).streaming == (True, False)
    # without fragments (and without the fitted quality model, which charges an overlapped outer step,
    # tests/test_quality_fit.py) streaming dominates and is listed alone
    plain = setting_from_instance(_instance({"replica_penalty": "chinchilla"}))
    assert space.for_objective(plain, MIN_TIME).streaming == (True,)


# -- 4. sync over the links (ring, all-gather) ----------------------------------------------------------------


def test_sync_patterns_by_hand():
    v, up, down, lat = 1e9, 200e6, 50e6, 0.1
    # reference: v / up + v / down + lat = 5 + 20 + 0.1
    assert physics.sync_base_s(OFF, v, 4, up, down, lat) == pytest.approx(25.1)
    # ring over concurrent links, G = 4: w = 2 x 3/4 x 1e9 = 1.5e9; max(7.5, 30) + 0.1
    ring = OFF.replace(concurrent_up_down=True)
    assert physics.sync_base_s(ring, v, 4, up, down, lat) == pytest.approx(30.1)
    assert physics.sync_base_s(ring, v, 4, 100e6, 100e6, 0.0) == pytest.approx(15.0)
    # all-gather: up v / up = 5 s, down 3 v / down = 60 s; concurrent max, else sum
    gather = OFF.replace(sync_pattern="all_gather")
    assert physics.sync_base_s(gather, v, 4, up, down, lat) == pytest.approx(65.1)
    assert physics.sync_base_s(gather.replace(concurrent_up_down=True), v, 4, up, down, lat) == pytest.approx(60.1)


def test_exposed_sync_by_hand():
    a = OFF.replace(dp_overlap=True, dp_overlap_buckets=25.0)
    assert physics.exposed_sync_s(a, 10.0, 4.0) == pytest.approx(6.0)          # 10 - 4
    assert physics.exposed_sync_s(a, 3.0, 4.0) == pytest.approx(0.12)          # last bucket 3 / 25
    assert physics.exposed_sync_s(OFF, 10.0, 4.0) == 10.0                      # switch off
    assert physics.overlap_window_s(a, 6.0) == pytest.approx(4.0)              # 2/3 of the compute


def test_blocking_flat_outer_step_with_overlap_and_ring_by_hand():
    # dtplan profile: u = 0.4496, t_comp = 6e15 / (16 x 990e12 x 0.4496) = 0.84250 s; 8 nodes, H = 10, fp16 Cr 1:
    # v = 16e9 bits; ring w = 2 x 7/8 x 16e9 = 28e9 over 1 Gb/s both ways -> 28 s, relay straggler
    # f(8) = 1 + 0.02 x 3 = 1.06 -> t_sync = 29.68 s; exposed = 29.68 - 2/3 x 0.84250; outer = 10 t + exposed.
    e = evaluate(_instance(), parse_plan({"mode": "flat", "nodes": 8, "precision": "fp16", "inner_steps": 10,
                                          "streaming": False}))
    t = 6e15 / (16 * 990e12 * 0.4496)
    assert e.values["t_sync_s"] == pytest.approx(28.0 * 1.06, rel=1e-12)
    assert e.values["outer_time_s"] == pytest.approx(10 * t + 28.0 * 1.06 - 2 / 3 * t, rel=1e-12)


# -- 5 and 6. payloads -------------------------------------------------------------------------------


def test_payloads_by_hand():
    assert physics.payload_bits(OFF, 1e9, "fp16", 2.0) == pytest.approx(8e9)                  # P b / Cr
    q = OFF.replace(compressor="quantise", compressor_scale_bits=32 / 128)
    assert physics.payload_bits(q, 1e9, "fp16", 2.0) == pytest.approx(8.25e9)                # int8 + fp32 / 128
    topk = OFF.replace(compressor="topk", compressor_value_bits=2, compressor_index_bits=12)
    assert physics.payload_bits(topk, 1e9, "fp16", 64.0) == pytest.approx(1e9 / 64 * 14)    # SparseLoCo
    assert 32 / (14 / 64) == pytest.approx(146.3, abs=0.1)                                   # vs 32-bit: ~146x
    assert physics.payload_bits(OFF, 1e9, "fp16", 1.0, stages=4, per_stage=True) == pytest.approx(4e9)


def test_pp_group_syncs_its_stage_share():
    raw = lambda c: _instance(constants=c)  # noqa: E731
    plan = parse_plan({"mode": "pp_group", "nodes": 8, "stages": 4, "precision": "fp16"})
    on = evaluate(raw(None), plan).values["payload_bits"]
    off = evaluate(raw({"per_stage_payload": False}), plan).values["payload_bits"]
    assert (on, off) == (pytest.approx(4e9), pytest.approx(16e9))


def test_optimizer_presets_and_error_feedback_set_the_state_bytes():
    assert OFF.bytes_per_param("fp16") == 16.0
    assert OFF.replace(inner_optimizer="muon").bytes_per_param("fp16") == 12.0       # 16 - 8 + 4
    assert OFF.replace(inner_optimizer="adamw").bytes_per_param("fp8") == 14.0
    assert OFF.replace(inner_optimizer="demo", error_feedback_bytes=4.0).bytes_per_param("fp16") == 16.0
    for name in ("adamw", "muon", "demo"):
        preset = json.loads((ROOT / "models" / "optimizers.json").read_text())["optimizers"][name]
        assert preset["shown_at"] and preset["reported_quality"]


# -- 3 (profile option). pipeline schedules -------------------------------------------------------------


def test_pipeline_slots_by_hand():
    assert physics.pipeline_ticks(OFF, 16, 16) == (31.0, 1.0)
    inter = OFF.replace(pipeline_schedule="interleaved", pipeline_chunks=4.0)
    assert physics.pipeline_ticks(inter, 16, 16) == (pytest.approx(19.75), 4.0)
    # zero-bubble: M + max(0, 2 S - 1 - M) / 3 = 16 + 15 / 3 at S = M = 16; no bubble from M = 2 S - 1 = 31
    zb = OFF.replace(pipeline_schedule="zero_bubble")
    assert physics.pipeline_ticks(zb, 16, 16)[0] == 21.0 and physics.pipeline_ticks(zb, 16, 31)[0] == 31.0
    assert physics.pipeline_ticks(zb, 4, 1)[0] == 3.0            # the critical path (2 S + 1) / 3
    assert physics.pipeline_ticks(inter, 16, 2)[0] == 16.0        # interleaved: never fewer than S slots
    assert physics.pipeline_ticks(OFF.replace(pipeline_schedule="1f1b"), 16, 16)[0] == 31.0


def test_interleaved_bubble_fraction_in_an_evaluation():
    plan = parse_plan({"mode": "pp_group", "nodes": 8, "stages": 4, "micro_batches": 6, "precision": "fp16",
                       "activation_compression": 1})
    e = evaluate(_instance({"pipeline_schedule": "interleaved", "pipeline_chunks": 3}), plan)
    assert e.values["bubble_fraction"] == pytest.approx(1.0 / 7.0)    # (S - 1) / v = 1 of 6 + 1 slots


# -- 7. failures ------------------------------------------------------------------------------------------


def test_young_daly_goodput_by_hand():
    a = OFF.replace(accelerator_mtbf_h=50_000, checkpoint_write_s=60, checkpoint_restore_s=600)
    out = physics.failure_goodput(a, 1000, 125)
    mtbf = 50.0 * 3600                                   # 1000 / 50,000 per hour -> 50 h
    assert out["mtbf_s"] == pytest.approx(mtbf)
    assert out["interval_s"] == pytest.approx(math.sqrt(2 * 60 * mtbf))          # 4,647.6 s
    assert out["goodput"] == pytest.approx(1 - math.sqrt(2 * 60 / mtbf) - 600 / mtbf)   # 0.97085
    churn = physics.failure_goodput(a.replace(churn_per_node_h=0.01), 1000, 125)      # + 1.25 per hour
    assert churn["mtbf_s"] == pytest.approx(3600 / 1.27)


def test_failures_replace_fleet_goodput():
    inst = _instance({"failures": True, "accelerator_mtbf_h": 1280, "checkpoint_write_s": 60,
                      "checkpoint_restore_s": 600})
    e = evaluate(inst, parse_plan({"mode": "flat", "nodes": 8, "precision": "fp16"}))
    mtbf = 1280 / 128 * 3600.0                           # 128 accelerators -> 10 h
    assert e.setting.goodput == pytest.approx(1 - math.sqrt(120 / mtbf) - 600 / mtbf)
    assert e.values["time_to_target_s"] == pytest.approx(e.values["training_time_s"] / e.setting.goodput)


# -- 8. demonstrated settings ----------------------------------------------------------------------------


def test_extrapolation_warnings():
    assert len(physics.extrapolation_warnings(1, 500, 4)) == 1        # compression at H = 1 (500x: evaluate.py)
    assert len(physics.extrapolation_warnings(1000, 4, 32)) == 2       # H and replicas
    assert physics.extrapolation_warnings(100, 2, 14) == []             # INTELLECT-1
    assert physics.extrapolation_warnings(1, 1, 128) == []              # plain data parallelism
    assert len(physics.extrapolation_warnings(30, 1, 64)) == 1          # 64 replicas


def test_dtplan_evaluation_warns_on_extrapolation():
    # the dtplan profile replaces these warnings by the evidence envelope (tests/test_quality_envelope.py)
    e = evaluate(_instance({"demonstrated_warnings": True}), parse_plan({"mode": "flat", "nodes": 8, "precision": "fp16", "compression": 500}))
    assert any("500x at every step" in w for w in e.warnings)
    assert any("demonstrated at scale (~146x" in w for w in e.warnings)


# -- the profile and the schema ---------------------------------------------------------------------------


def test_the_profile_switches_its_terms_on_and_every_default_is_off():
    a = load_profile("dtplan")
    assert a.mfu_from_table and a.concurrent_up_down and a.dp_overlap and a.per_stage_payload
    assert not any((OFF.mfu_from_table, OFF.concurrent_up_down, OFF.dp_overlap, OFF.per_stage_payload,
                    OFF.failures, OFF.demonstrated_warnings))
    assert (OFF.compressor, OFF.sync_pattern, OFF.pipeline_schedule, OFF.inner_optimizer) == (
        "ratio", "all_reduce", "gpipe", "reference")


@pytest.mark.parametrize("constants, message", [
    ({"compressor": "zip"}, "assumptions.constants.compressor"),
    ({"dp_overlap": 1}, "assumptions.constants.dp_overlap"),
    ({"backward_share": 1.5}, "assumptions.constants.backward_share"),
])
def test_bad_profile_constants_name_the_field(constants, message):
    with pytest.raises(InputError) as info:
        _instance(constants)
    assert message in str(info.value)


# -- the exact search's monotonicity facts with every term on ------------------------------------------------

DTPLAN_TERMS = st.fixed_dictionaries({
    "concurrent_up_down": st.booleans(), "dp_overlap": st.booleans(), "per_stage_payload": st.booleans(),
    "sync_pattern": st.sampled_from(["all_reduce", "all_gather", "object_store"]),
    "compressor": st.sampled_from(["ratio", "quantise", "topk"]),
    "pipeline_schedule": st.sampled_from(["gpipe", "1f1b", "interleaved", "zero_bubble"]),
    "pipeline_chunks": st.sampled_from([1.0, 2.0, 4.0]), "dp_overlap_buckets": st.floats(1.0, 100.0),
    "backward_share": st.floats(0.1, 1.0), "streaming_fragments": st.sampled_from([1.0, 4.0, 20.0]),
    "streaming_overlap_steps": st.sampled_from([0.0, 1.0, 3.0]), "activation_memory": st.booleans()})


@settings(max_examples=60, deadline=None)
@given(case=cases(), terms=DTPLAN_TERMS, n=st.integers(2, 100000), h=st.integers(1, 10000), r=st.integers(1, 1000))
def test_dtplan_q_falls_with_h_and_r_and_rises_with_n(case, terms, n, h, r):
    s, mode, ep, fixed = case
    s = s.replace(assumptions=s.assumptions.replace(**terms))
    if mode == "hierarchical":
        n = max(n, 2 * fixed["group_size"])
    hs = np.unique(np.geomspace(1, 10000, 40).astype(int))
    assert _non_increasing(_evaluate(s, mode, ep, fixed, n, hs, r)[0])
    rs = np.unique(np.geomspace(1, 1000, 30).astype(int))
    assert _non_increasing(_evaluate(s, mode, ep, fixed, n, h, rs)[0])
    low = 2 * fixed["group_size"] if mode == "hierarchical" else (1 if mode in ("flat", "pipeline_wan") else 2)
    ns = np.unique(np.geomspace(low, 100000, 40).astype(int))
    if mode != "pipeline_wan":
        assert _non_decreasing(_evaluate(s, mode, ep, fixed, ns, h, r)[0])


def test_reference_profile_is_untouched_by_the_new_fields():
    # Every new field's default leaves the reference expression (check_reference.py checks all 378 cases).
    plan = parse_plan({"mode": "pp_group", "nodes": 8, "stages": 4, "precision": "fp16", "streaming": False})
    ref = evaluate(_instance(profile="reference"), plan).values
    assert ref["payload_bits"] == 16e9
    assert ref["t_sync_s"] == pytest.approx((16e9 / 1e9 * 2) * (1 + 0.02 * 1), rel=1e-12)   # G = 2 groups


def test_demonstrated_search_preset_keeps_the_search_inside_the_evidence_envelope():
    from planner.cost.envelope import SHOWN
    base = {"model": {"params": 1e9}, "fleet": {"hardware": "16xH100-SXM", "nodes": 8}}
    s = parse_instance({**base, "search": {"preset": "demonstrated"}}).search
    assert s.max_inner_steps == SHOWN["h_eff"].hi == 100 and s.max_regional_rounds == 1
    assert max(s.compression) == SHOWN["sparsification"].hi == 16 / SHOWN["quantise_bits"].lo == 4.0
    assert s.activation_compression == [1.0]
    assert parse_instance({**base, "search": {"preset": "demonstrated", "max_inner_steps": 50}}).search.max_inner_steps == 50
    assert parse_instance(base).search.max_inner_steps == 10000          # no preset: the whole space
    with pytest.raises(InputError) as info:
        parse_instance({**base, "search": {"preset": "shown"}})
    assert "search.preset" in str(info.value)


def test_compressor_presets_expand_and_explicit_constants_win():
    from planner.cost.assumptions import apply_overrides
    covenant = apply_overrides(OFF, {"compressor_preset": "covenant"})
    assert (covenant.compressor, covenant.sync_pattern, covenant.error_feedback_bytes) == ("topk", "object_store", 4.0)
    # Covenant at Cr = 64 on a 72B model: 72e9 / 64 x 14 bits up, then the round's 20 payloads down (its own too)
    v = physics.payload_bits(covenant, 72e9, "fp16", 64.0)
    assert v == pytest.approx(72e9 / 64 * 14)
    assert physics.sync_base_s(covenant, v, 20, 1e9, 1e9, 0.0) == pytest.approx(v / 1e9 + 20 * v / 1e9)
    assert apply_overrides(OFF, {"compressor_preset": "sparseloco", "compressor_value_bits": 4}).compressor_value_bits == 4
    int8 = _instance({"compressor_preset": "diloco-int8"}).resolved_assumptions()
    assert physics.payload_bits(int8, 10e9, "fp16", 2.0) == pytest.approx(8e10)
    with pytest.raises(InputError) as info:
        _instance({"compressor_preset": "zip"})
    assert "assumptions.constants.compressor_preset" in str(info.value)


# -- the exact search stays exact under dtplan: branch and bound against the brute force -------------------

from tests.test_bnb import check_against_brute_force, random_case  # noqa: E402


def _dtplan_case(seed: int):
    setting, space, streaming = random_case(seed)
    rng = np.random.default_rng(seed + 9_000_000)
    terms = dict(mfu_from_table=True, concurrent_up_down=True, dp_overlap=True, per_stage_payload=True,
                 sync_pattern=str(rng.choice(["all_reduce", "all_gather"])),
                 compressor=str(rng.choice(["ratio", "quantise", "topk"])),
                 pipeline_schedule=str(rng.choice(["gpipe", "1f1b", "interleaved", "zero_bubble"])),
                 pipeline_chunks=float(rng.choice([2.0, 4.0])), inner_optimizer=str(rng.choice(["reference", "muon"])))
    frag = np.random.default_rng(seed + 11_000_000)      # its own generator: the draws above stay as they were
    terms |= dict(streaming_fragments=float(frag.choice([1.0, 4.0, 20.0])),
                  streaming_overlap_steps=float(frag.choice([0.0, 1.0, 3.0])),
                  search_pipeline_schedules=bool(frag.random() < 0.7), activation_memory=bool(frag.random() < 0.5),
                  activation_bytes_per_token_layer_h=float(frag.choice([2.0, 34.0])),
                  search_zero_shards=bool(frag.random() < 0.7))
    return setting.replace(assumptions=setting.assumptions.replace(**terms)), space, streaming


@pytest.mark.parametrize("seed", [*range(5000, 5012), 5138])
@pytest.mark.parametrize("objective", ["min_time", "max_compute"])
def test_bnb_matches_brute_force_under_dtplan_terms(seed, objective):
    """Seed 5138 found that the space's choice of M by least pipeline step is not exact once the
    blocking sync hides behind the last micro-batch's backward pass (its window shrinks as M grows):
    under `dp_overlap` the space lists every M (DecisionSpace.for_objective)."""
    check_against_brute_force(*_dtplan_case(seed), objective, rel=1e-12)


# -- 2. ZeRO-3 / FSDP, 3. activation memory and the schedule as decisions ------------------------------------


def test_zero3_communication_and_step_by_hand():
    # P = 1e9 at fp16 (16 bits), Z = 4: 3 x 3/4 x 16e9 = 36e9 bits over 10 Gb/s = 3.6 s, + 3 x 3 x 1 ms
    assert physics.zero3_comm_s(OFF, 1e9, "fp16", 4, 10e9, 0.001) == pytest.approx(3.609)
    assert physics.zero3_comm_s(OFF, 1e9, "fp16", 1, 10e9, 0.001) == 0.0
    # compute per node t_comp / Z, overlapped with the collectives: the longer of the two
    assert physics.zero3_step_s(8.0, 4, 1.5) == 2.0 and physics.zero3_step_s(8.0, 4, 3.609) == 3.609


def test_zero3_plan_by_hand():
    # dtplan, 8 nodes of 16x H100 at u = 0.4496, Z = 4: G = 2 replicas of 4 nodes. t_comp of a replica's
    # 1e6 tokens on one node 6e15 / (16 x 990e12 x 0.4496) s, a quarter per node; the regional link
    # (default 1 Gb/s, 20 ms) moves 3 x 3/4 x 16e9 bits: 36 s + 9 x 0.02 s, which sets the step.
    # State 1e9 x 16 / 4 bytes; each node syncs its quarter, 4e9 bits, in a ring of G = 2 over
    # concurrent 1 Gb/s links: w = 2 x 1/2 x 4e9 = 4e9 bits, 4 s x relay f(2) = 1.02.
    inst = _instance()
    plan = parse_plan({"mode": "flat", "nodes": 8, "precision": "fp16", "inner_steps": 10, "streaming": True,
                       "zero_shards": 4})
    v = evaluate(inst, plan).values
    t_fsdp = 36.0 + 9 * 0.02
    assert v["t_step_s"] == pytest.approx(max(6e15 / (16 * 990e12 * 0.4496) / 4, t_fsdp), rel=1e-12)
    assert (v["replicas"], v["groups"]) == (2, 2)
    assert v["state_bytes_per_node"] == pytest.approx(4e9)
    assert v["payload_bits"] == pytest.approx(4e9)
    assert v["t_sync_s"] == pytest.approx(4.0 * 1.02, rel=1e-12)
    assert v["tokens_per_outer"] == pytest.approx(1e6 * 2 * 10)
    # fewer nodes than one replica needs is a structure violation, named
    bad = evaluate(inst, parse_plan({"mode": "flat", "nodes": 4, "precision": "fp16", "zero_shards": 8}))
    assert any("zero_shards = 8" in m for m in bad.violations)


def test_activation_memory_per_schedule_by_hand():
    a = OFF.replace(activation_memory=True, pipeline_chunks=2.0)
    # S = 4, M = 8: gpipe holds 8, 1f1b 4, interleaved v = 2: 4 (1 + 3 / 8) = 5.5, zero-bubble 2 S = 8
    assert list(physics.in_flight_micro_batches(a, 4, 8, [1, 2, 3, 4])) == [8.0, 4.0, 5.5, 8.0]
    assert list(physics.in_flight_micro_batches(a, 4, 2, [1, 2, 3, 4])) == [2.0, 2.0, 2.0, 2.0]   # at most M
    # per token per stage 34 P_act / (12 h S) bytes at 16-bit: 34 x 1.2e10 / (12 x 4096 x 4) = 2,075,195.3;
    # 1f1b holds 4 micro-batches of 1e6 / 8 tokens
    got = physics.activation_bytes_per_node(a, 1.2e10, 4096.0, 1e6, "fp16", 4, 8, 2)
    assert got == pytest.approx(4 * 1e6 / 8 * 34 * 1.2e10 / (12 * 4096 * 4))
    assert physics.activation_bytes_per_node(a, 1.2e10, 4096.0, 1e6, "fp8", 4, 8, 2) == pytest.approx(got / 2)
    assert physics.activation_bytes_per_node(OFF, 1.2e10, 4096.0, 1e6, "fp16", 4, 8, 2) == 0.0     # switch off
    # in an evaluation: state P beta / S + activations (hidden size 0.03 sqrt(P) = 948.68...)
    inst = _instance({"activation_memory": True})
    plan = parse_plan({"mode": "pp_group", "nodes": 8, "stages": 4, "micro_batches": 8, "precision": "fp16",
                       "pipeline_schedule": "1f1b"})
    h = 0.03 * math.sqrt(1e9)
    want = 1e9 * 16 / 4 + 4 * 1e6 / 8 * 34 * 1e9 / (12 * h * 4)
    assert evaluate(inst, plan).values["state_bytes_per_node"] == pytest.approx(want, rel=1e-12)


def test_schedule_per_plan_in_one_batch():
    from planner.cost.setting import PlanBatch
    from planner.cost.modes import throughput
    from planner.evaluate import setting_from_instance
    s = setting_from_instance(_instance({"pipeline_chunks": 2}))
    b = PlanBatch.of("pp_group", "fp16", nodes=8, stages=4, micro_batches=8, schedule=[0, 1, 2, 3, 4])
    t = throughput(s, b)
    # slots: the profile's (gpipe) 11, gpipe 11, 1f1b 11, interleaved 8 + 3 / 2 = 9.5, zero-bubble 8
    assert list(t["bubble_fraction"]) == pytest.approx([3 / 11, 3 / 11, 3 / 11, 1.5 / 9.5, 0.0])
    assert t["t_step_s"][0] == t["t_step_s"][1] == t["t_step_s"][2] > t["t_step_s"][4]


@pytest.mark.parametrize("plan, field", [
    ({"mode": "flat", "nodes": 8, "pipeline_schedule": "1f1b"}, "pipeline_schedule"),
    ({"mode": "pp_group", "nodes": 8, "stages": 4, "zero_shards": 2}, "zero_shards"),
    ({"mode": "pp_group", "nodes": 8, "stages": 4, "pipeline_schedule": "zb"}, "pipeline_schedule"),
])
def test_new_plan_fields_are_checked(plan, field):
    with pytest.raises(InputError) as info:
        parse_plan(plan)
    assert field in str(info.value)


def test_solve_under_dtplan_names_the_decisions_it_took():
    """A 200B model (3.2 TB of state at fp16, 2.8 TB at fp8) fits no 1.28 TB node: the planner shards it
    (ZeRO-3) or pipelines it, says which, and the plan it returns evaluates to the time it reported."""
    from planner.solve import solve
    raw = {"model": {"params": 2e11}, "training": {"tokens": 2e11},
           "fleet": {"hardware": "16xH100-SXM", "nodes": 16},
           "network": {"wan": {"up_mbps": 10000, "down_mbps": 10000, "rtt_ms": 20},
                       "regional": {"mbps": 400000, "rtt_ms": 1}, "pipeline": {"mbps": 400000, "rtt_ms": 1}},
           "search": {"max_inner_steps": 50, "group_sizes": [2, 4, 8]},
           "assumptions": {"profile": "dtplan"}}
    result = solve(parse_instance(raw))
    plan = result.plan
    assert (plan.mode == "flat" and (plan.zero_shards or 1) > 1) or plan.pipeline_schedule == "zero_bubble"
    again = evaluate(parse_instance(raw), plan)
    assert again.values["time_to_target_s"] == pytest.approx(result.evaluation.values["time_to_target_s"], rel=1e-12)


def _sharding_case(seed: int):
    """A 70B model (1.12 TB of state at fp16) on 640 GB nodes with a 100 Gb/s regional link: it fits
    no node, so flat plans need ZeRO-3 (Z >= 2) and compete with pipelines."""
    import dataclasses
    s, space, streaming = _dtplan_case(seed)
    s = s.replace(params=70e9, active_params=70e9, moe_layers=0, memory_bytes=640e9, regional_bps=100e9,
                  assumptions=s.assumptions.replace(search_zero_shards=True))
    space = dataclasses.replace(space, group_sizes=(2, 3, 4), max_nodes=min(space.max_nodes, 12), max_stages=4)
    return s, space, streaming


@pytest.mark.parametrize("seed", range(8000, 8006))
@pytest.mark.parametrize("objective", ["min_time", "min_cost"])
def test_bnb_matches_brute_force_with_zero3_and_schedules(seed, objective):
    """ZeRO-3 wins 8 of these 12 (Z = 2) against pipelines with a chosen schedule; the brute force lists
    every Z of the declared sizes and every schedule (so it also checks the zero-bubble reduction)."""
    s, space, streaming = _sharding_case(seed)
    s = s.replace(assumptions=s.assumptions.replace(search_pipeline_schedules=True, activation_memory=seed % 2 == 0))
    check_against_brute_force(s, space, streaming, objective, rel=1e-12)


def test_tensor_parallel_communication_by_hand():
    # B = 1e6 tokens, P_act = 1e9, h = 0.03 sqrt(1e9), T = 8 of A = 16 accelerators, fp16 (2 bytes), 450 GB/s:
    # t_tp = 2 B P_act (T - 1) b / (3 A h bw) = 2 x 1e6 x 1e9 x 7 x 2 / (3 x 16 x 948.68 x 450e9) = 1.3664 s
    h = 0.03 * math.sqrt(1e9)
    a = OFF.replace(tensor_parallel=8.0)
    want = 2 * 1e6 * 1e9 * 7 * 2 / (3 * 16 * h * 450e9)
    assert physics.tensor_parallel_s(a, 1e9, h, 1e6, "fp16", 16) == pytest.approx(want) == pytest.approx(1.3664, abs=1e-4)
    assert physics.tensor_parallel_s(OFF, 1e9, h, 1e6, "fp16", 16) == 0.0          # off: folded into u
    # in an evaluation it adds to the node's compute (u = 0.6 given as the compute-only utilisation)
    e = evaluate(_instance({"tensor_parallel": 8}, mfu=0.6), parse_plan({"mode": "flat", "nodes": 1, "precision": "fp16"}))
    assert e.values["t_comp_s"] == pytest.approx(6e15 / (16 * 990e12 * 0.6) + want, rel=1e-12)
    with pytest.raises(InputError) as info:
        _instance({"tensor_parallel": 32})
    assert "assumptions.constants.tensor_parallel: must be <= the node's accelerators (16), got 32" in str(info.value)


@settings(max_examples=40, deadline=None)
@given(case=cases(), terms=DTPLAN_TERMS, z=st.sampled_from([2, 4, 8, 64]), code=st.sampled_from([2, 3, 4]),
       h=st.integers(1, 10000))
def test_dtplan_decisions_keep_q_monotone(case, terms, z, code, h):
    """The bound's facts for the two new decisions' classes: a ZeRO-3 flat class (nodes n Z) and a
    pipeline class with a chosen schedule have q = outer / H non-increasing in H and non-decreasing in
    the replica count n, and the counting efficiency e non-increasing in n."""
    from planner.cost.modes import throughput
    from planner.cost.setting import PlanBatch
    from planner.cost.run import efficiency_without_replicas, time_to_target
    s, mode, ep, fixed = case
    if mode not in ("flat", "pp_group") or s.is_moe:
        return
    s = s.replace(assumptions=s.assumptions.replace(**terms))
    unit = z if mode == "flat" else fixed["stages"]
    extra = {"zero_shards": z} if mode == "flat" else {"schedule": code}

    def q_e(n, hs):
        b = PlanBatch.of(mode, "fp16", nodes=np.asarray(n) * unit, inner_steps=hs, expert_parallel=ep,
                         **fixed, **extra)
        t = throughput(s, b)
        target = time_to_target(s, b, t, efficiency_without_replicas(s, b, t))
        with np.errstate(divide="ignore", invalid="ignore"):
            e = s.target / (6 * s.active_params * target["tokens_per_s"] * target["time_to_target_s"])
        return t["outer_time_s"] / np.asarray(hs, float), np.where(np.isfinite(target["time_to_target_s"]), e, 0.0)

    hs = np.unique(np.geomspace(1, 10000, 40).astype(int))
    assert _non_increasing(q_e(2, hs)[0])
    ns = np.unique(np.geomspace(2, 100000, 40).astype(int))
    q, e = q_e(ns, h)
    assert _non_decreasing(q) and _non_increasing(e)


def test_tensor_parallel_checked_against_every_pool():
    """With pools the TP group must fit inside every pool's node: the shipped mixed fleet has nodes of 48
    (48xA100-80GB) and 16 accelerators (16xH100-SXM), so T = 16 fits both and T = 32 fits only the A100s'."""
    data = json.loads((ROOT / "instances" / "mixed-a100-h100.json").read_text())
    data["assumptions"] = {"profile": "dtplan", "constants": {"tensor_parallel": 16}}
    parse_instance(data)
    data["assumptions"]["constants"]["tensor_parallel"] = 32
    with pytest.raises(InputError) as info:
        parse_instance(data)
    assert str(info.value).count("assumptions.constants.tensor_parallel") == 1
    assert "tensor_parallel: must be <= every pool's accelerators per node (fleet.pools[1]: 16), got 32" in str(info.value)
