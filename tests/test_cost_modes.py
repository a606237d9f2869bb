"""Hand-checked throughput and run-level figures for each mode (docs/cost_model.md sections 4-7)."""

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from planner.cost.assumptions import Assumptions, load_profile
from planner.cost.score import BOTTLENECKS, score
from planner.cost.setting import PlanBatch, Setting

GH200 = dict(peak_flops={"fp16": 15.84e15, "fp8": 31.68e15}, memory_bytes=2304e9, accelerators_per_node=16,
             price_usd_per_accelerator=28000.0, h100_equivalents=16.0)


def setting(params=144e9, **kw) -> Setting:
    base = dict(params=params, active_params=params, moe_layers=0, hidden_size=None, local_batch_tokens=131072, **GH200)
    base.update(kw)
    return Setting(**base)


def one(out):
    return {k: v.item() if isinstance(v, np.ndarray) and v.size == 1 else v for k, v in out.items()}


def test_flat_1e25_baseline_by_hand():
    s = setting()
    o = one(score(s, PlanBatch.of("flat", "fp16", nodes=72, inner_steps=128, compression=16)))
    t_comp = 6 * 144e9 * 131072 / (15.84e15 * 0.4)
    f72 = 1 + 0.02 * math.log2(72)                         # relay
    t_sync = (144e9 / 100e6 + 144e9 / 100e6 + 0.1) * f72   # v = 144e9 * 16 / 16 bits
    assert o["t_comp_s"] == pytest.approx(t_comp, rel=1e-14)
    assert o["t_sync_s"] == pytest.approx(t_sync, rel=1e-14)
    assert o["outer_time_s"] == pytest.approx(max(128 * t_comp, t_sync), rel=1e-14)   # comm-bound
    assert o["tokens_per_outer"] == 131072 * 72 * 128
    assert o["compute_utilization"] == pytest.approx(128 * t_comp / t_sync, rel=1e-14)
    assert BOTTLENECKS[o["bottleneck"]] == "wan-sync"
    assert o["cost_usd"] == 72 * 16 * 28000
    assert o["duty_cycle"] == pytest.approx(1.0)
    alpha = 0.08 / (1 + math.log10(144) / 5)
    assert o["eta_h"] == pytest.approx(1 - alpha * math.log10(128), rel=1e-14)
    assert o["eta_c"] == 1.0                                 # 16x with error feedback, expected
    # Window view over the calculator's 1.5 years: tokens and C_thr.
    tokens = 47_336_400.0 / o["outer_time_s"] * 131072 * 72 * 128
    assert o["tokens"] == pytest.approx(tokens, rel=1e-14)
    assert o["c_throughput"] == pytest.approx(6 * 144e9 * tokens, rel=1e-14)
    assert o["c_local"] == pytest.approx(o["c_throughput"] * o["eta_h"] * o["eta_r"], rel=1e-14)
    assert o["global_mfu"] == pytest.approx(o["c_local"] / (72 * 15.84e15 * 47_336_400.0), rel=1e-14)
    assert o["global_hfu"] == pytest.approx(o["global_mfu"] / 0.8)


def test_simulator_profile_time_to_train_is_simulator_py():
    # simulator.py on the 10^25 config: days = D / (B N H) * max(H t_inner, t_comm) / 86400.
    a = load_profile("simulator")
    s = setting(peak_flops={"fp16": 32e15}, wan_rtt_s=0.0, target_flop=6 * 144e9 * 12e12, assumptions=a)
    o = one(score(s, PlanBatch.of("flat", "fp16", nodes=72, inner_steps=128, compression=16)))
    t_inner = 6 * 144e9 * 131072 / (32e15 * 0.4)
    t_comm = 2 * 144e9 * 2 * 8 / 16 / 100e6
    days = 12e12 / (131072 * 72 * 128) * max(128 * t_inner, t_comm) / 86400
    assert o["time_to_target_s"] / 86400 == pytest.approx(days, rel=1e-13)
    assert days == pytest.approx(331.1369154188368, rel=1e-12)   # the simulator's own output


def test_one_node_is_local_training():
    s = setting()
    o = one(score(s, PlanBatch.of("flat", "fp16", nodes=1, inner_steps=3, compression=16)))
    t_comp = 6 * 144e9 * 131072 / (15.84e15 * 0.4)
    assert o["outer_time_s"] == pytest.approx(3 * t_comp)       # t_sync not charged
    assert (o["eta"], o["eta_r"], o["chi"], o["alpha"], o["duty_cycle"]) == (1.0, 1.0, 1.0, 0.0, 0.0)
    assert o["c_quality"] == o["c_local"] == pytest.approx(o["c_throughput"])


def test_hierarchical_cycles_by_hand():
    s = setting(regional_bps=1e9, regional_rtt_s=0.02, assumptions=Assumptions(straggler="synchronous"))
    o = one(score(s, PlanBatch.of("hierarchical", "fp16", nodes=64, group_size=8, inner_steps=10,
                                  regional_rounds=4, compression=100)))
    t_comp = 6 * 144e9 * 131072 / (15.84e15 * 0.4)
    v = 144e9 * 16 / 100
    t_reg = (2 * v / 1e9 + 0.02) * (1 + 0.05 * 3)                # f(8) = 1.15
    t_glob = (v / 100e6 * 2 + 0.1) * (1 + 0.05 * 3)              # G = 8 groups, f(8)
    c_reg = max(10 * t_comp, t_reg)
    c_glob = max(4 * c_reg, t_glob)
    assert o["groups"] == 8 and o["replicas"] == 64
    assert o["t_regional_s"] == pytest.approx(t_reg) and o["t_sync_s"] == pytest.approx(t_glob)
    assert o["regional_cycle_s"] == pytest.approx(c_reg) and o["outer_time_s"] == pytest.approx(c_glob)
    assert o["tokens_per_outer"] == 131072 * 64 * 10 * 4
    assert o["h_eff"] == pytest.approx(10 * 2)                    # H sqrt(R)
    nostream = one(score(s, PlanBatch.of("hierarchical", "fp16", nodes=64, group_size=8, inner_steps=10,
                                         regional_rounds=4, compression=100, streaming=False)))
    assert nostream["outer_time_s"] == pytest.approx(4 * (10 * t_comp + t_reg) + t_glob)


def test_pp_group_by_hand():
    s = setting(params=480e9, assumptions=Assumptions(straggler="synchronous"))
    o = one(score(s, PlanBatch.of("pp_group", "fp16", nodes=20, stages=4, micro_batches=8, inner_steps=50,
                                  activation_compression=4, compression=100)))
    t_comp = 6 * 480e9 * 131072 / (15.84e15 * 0.4)
    c = t_comp / (4 * 8)
    act = 131072 * (0.03 * math.sqrt(480e9)) * 2 * 8 / 4
    x = (2 * act / 8) / 1e9
    t_pp = (8 + 3) * (c + (x + 0.02) * (1 + 0.05 * 2))           # f(4) = 1.1
    g = 5
    t_sync = (480e9 * 16 / 100 / 100e6 * 2 + 0.1) * (1 + 0.05 * math.log2(5))
    assert o["t_step_s"] == pytest.approx(t_pp, rel=1e-14)
    assert o["step_compute_s"] + o["step_bubble_s"] + o["step_link_s"] + o["step_link_straggler_s"] == pytest.approx(t_pp)
    assert o["groups"] == g and o["replicas"] == g
    assert o["outer_time_s"] == pytest.approx(max(50 * t_pp, t_sync))
    assert o["tokens_per_outer"] == 131072 * 5 * 50
    assert o["eta_a"] == pytest.approx(0.995 ** 6)
    assert o["state_bytes_per_node"] == pytest.approx(480e9 * 16 / 4)
    assert not o["violates:memory-cap"] and o["min_stages"] == 4       # 7680 GB / 2304 GB -> 4


def test_pipeline_over_wan_has_no_sync_and_only_activation_quality():
    s = setting(params=480e9)
    o = one(score(s, PlanBatch.of("pipeline_wan", "fp16", nodes=4, stages=4, micro_batches=8, inner_steps=1,
                                  activation_compression=10, compression=500)))
    assert o["t_sync_s"] == 0.0 and o["eta_h"] == 1.0 and o["eta_c"] == 1.0 and o["eta_r"] == 1.0
    assert o["eta"] == pytest.approx(0.98 ** 6)
    assert o["tokens_per_outer"] == 131072
    assert not o["violates:structure"]
    bad = one(score(s, PlanBatch.of("pipeline_wan", "fp16", nodes=3, stages=4)))
    assert bad["violates:structure"]


def test_moe_expert_parallel_memory_and_latency():
    s = setting(params=600e9, active_params=100e9, moe_layers=32, memory_bytes=4000e9)
    glob = one(score(s, PlanBatch.of("flat", "fp16", nodes=72, inner_steps=100, compression=16, expert_parallel="global")))
    assert glob["t_ep_s"] == pytest.approx(2 * 0.1 * 32)
    assert glob["state_bytes_per_node"] == pytest.approx((100e9 + 500e9 / 72) * 16)
    assert glob["t_comp_s"] == pytest.approx(6 * 100e9 * 131072 / (15.84e15 * 0.4))
    none = one(score(s, PlanBatch.of("flat", "fp16", nodes=72, inner_steps=100, compression=16, expert_parallel="none")))
    assert none["t_ep_s"] == 0.0 and none["violates:memory-cap"]              # 600B x 16 B > 4000 GB


def test_backup_workers_lose_a_tenth_of_throughput():
    base = setting(assumptions=Assumptions(straggler="backup"))
    o = one(score(base, PlanBatch.of("flat", "fp16", nodes=100, inner_steps=10)))
    assert o["tokens_per_outer"] == pytest.approx(131072 * 100 * 10 / 1.1)
    assert o["f_sync"] == pytest.approx(1 + 0.3 * 0.05 * math.log2(100))


def test_limits_are_flagged():
    s = setting(max_nodes=50, budget_usd=1e6, window_s=86400.0, target_flop=1e30)
    o = one(score(s, PlanBatch.of("flat", "fp16", nodes=72, inner_steps=10)))
    assert o["violates:node-limit"] and o["violates:budget-limit"] and o["violates:duration-limit"]
    assert not o["violates:memory-cap"]


def test_time_to_c_local_target_and_window_view_agree_without_replica_term():
    # With no replica penalty eta does not depend on the run's length, so running for the
    # time to target must reach exactly the target.
    s = setting(target_flop=1e25, assumptions=Assumptions(replica_penalty="none"))
    plan = PlanBatch.of("flat", "fp16", nodes=72, inner_steps=128, compression=16)
    o = one(score(s, plan))
    w = one(score(s.replace(window_s=o["time_to_target_s"]), plan))
    assert w["c_local"] == pytest.approx(1e25, rel=1e-12)


def test_time_to_c_quality_target_inverts_the_window_view():
    s = setting(target_flop=3e24, target_kind="c_quality")
    plan = PlanBatch.of("flat", "fp16", nodes=72, inner_steps=64, compression=100)
    o = one(score(s, plan))
    w = one(score(s.replace(window_s=o["time_to_target_s"]), plan))
    assert w["c_quality"] == pytest.approx(3e24, rel=1e-9)


@settings(max_examples=60, deadline=None)
@given(nodes=st.integers(1, 5000), h=st.integers(1, 2000), cr=st.sampled_from([1, 4, 16, 100, 150, 500]),
       streaming=st.booleans(), mode=st.sampled_from(["flat", "pp_group"]))
def test_a_batch_scores_like_plans_one_by_one(nodes, h, cr, streaming, mode):
    s = setting(params=200e9 if mode == "flat" else 600e9)
    stages = 1 if mode == "flat" else 5
    batch = PlanBatch.of(mode, "fp8", nodes=[nodes, nodes + 7, 2 * nodes], inner_steps=[h, h + 1, 2 * h],
                         compression=cr, streaming=streaming, stages=stages)
    together = score(s, batch)
    for i in range(3):
        alone = score(s, batch.take(slice(i, i + 1)))
        for key in ("outer_time_s", "time_to_target_s", "c_local", "c_quality", "eta"):
            assert together[key][i] == pytest.approx(float(alone[key][0]), rel=1e-12, nan_ok=True)


def _bisect_time_to_quality(s, plan):
    """Independent check: bisect the window view's C_quality in log T_wall."""
    lo, hi = math.log(1e-3), math.log(1e18)
    if one(score(s.replace(window_s=math.exp(hi)), plan))["c_quality"] < s.target:
        return math.inf
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if one(score(s.replace(window_s=math.exp(mid)), plan))["c_quality"] >= s.target:
            hi = mid
        else:
            lo = mid
    return math.exp(hi)


@pytest.mark.parametrize("penalty", ["chinchilla", "linear_v1", "none"])
@pytest.mark.parametrize("nodes, h, target", [(1, 1, 1e23), (72, 64, 3e24), (500, 300, 1e25), (4000, 30, 1e26),
                                              (72, 64, 1e29)])
def test_time_to_c_quality_target_closed_form_matches_bisection(penalty, nodes, h, target):
    s = setting(params=70e9, target_flop=target, target_kind="c_quality",
                assumptions=Assumptions(replica_penalty=penalty))
    plan = PlanBatch.of("flat", "fp16", nodes=nodes, inner_steps=h, compression=100)
    closed = one(score(s, plan))["time_to_target_s"]
    expected = _bisect_time_to_quality(s, plan)
    if math.isinf(expected):
        assert math.isinf(closed)            # beyond the loss floor (1e29 FLOP of a 70B model)
    else:
        assert closed == pytest.approx(expected, rel=1e-10)
