"""The monotonicity facts the oracle's bound rests on, checked over wide random settings.

planner/oracle.py prunes a box (n, H, R) with
    T >= T(n1, H2, R2) * (n1 / n2) * e(n1, H2 sqrt R2) / e(n1, H1 sqrt R1),
which holds when, for every mode and class,
  (a) q = outer_time / (H R) is non-increasing in H and in R and non-decreasing in n,
  (b) tokens per outer step are proportional to n * H * R,
  (c) e = C_target / (6 P_act tokens/s T), the fraction of throughput compute that counts
      at the target (eta for a C_local target, eta * chi for C_quality), is
      non-increasing in H_eff and in n.
The brute-force comparison covers small instances; these properties cover the whole
range of sizes the planner searches (n up to 10^5, H up to 10^4, R up to 10^3).
"""

import numpy as np
from hypothesis import given, settings, strategies as st

from planner.cost.assumptions import Assumptions
from planner.cost.modes import throughput
from planner.cost.run import efficiency_without_replicas, time_to_target
from planner.cost.setting import PlanBatch, Setting

MODES = ("flat", "hierarchical", "pp_group", "pipeline_wan")


@st.composite
def cases(draw):
    params = draw(st.floats(1e6, 3e12))
    moe = draw(st.booleans()) and params > 1e9
    a = Assumptions(
        straggler=draw(st.sampled_from(["synchronous", "relay", "threshold", "backup", "none"])),
        replica_penalty=draw(st.sampled_from(["chinchilla", "linear_v1", "none"])),
        scenario=draw(st.sampled_from(["optimistic", "expected", "conservative"])),
        error_feedback=draw(st.booleans()),
        replica_beta_exponent=draw(st.floats(-0.5, 0.1)),
        replica_h_ref=draw(st.floats(1.5, 1000)),
        alpha_coefficient=draw(st.floats(0, 0.3)))
    s = Setting(params=params, active_params=params / 8 if moe else params, moe_layers=32 if moe else 0,
                hidden_size=None, local_batch_tokens=draw(st.sampled_from([4096.0, 131072.0, 1048576.0])),
                peak_flops={"fp16": draw(st.floats(1e14, 1e17))}, memory_bytes=1e12, accelerators_per_node=8,
                price_usd_per_accelerator=1.0, h100_equivalents=1.0,
                wan_up_bps=draw(st.floats(1e6, 1e11)), wan_down_bps=draw(st.floats(1e6, 1e11)),
                wan_rtt_s=draw(st.floats(0, 0.5)), regional_bps=draw(st.floats(1e7, 1e11)),
                regional_rtt_s=draw(st.floats(0, 0.1)), pipeline_bps=draw(st.floats(1e7, 1e11)),
                pipeline_rtt_s=draw(st.floats(0, 0.1)), target_flop=draw(st.floats(1e20, 1e28)),
                target_kind=draw(st.sampled_from(["c_local", "c_quality"])), assumptions=a)
    mode = draw(st.sampled_from(MODES))
    ep = "none"
    if moe and mode in ("flat", "hierarchical"):
        ep = draw(st.sampled_from(["none", "global"] + (["regional"] if mode == "hierarchical" else [])))
    fixed = dict(compression=draw(st.sampled_from([1.0, 4.0, 16.0, 150.0, 500.0])), streaming=draw(st.booleans()),
                 stages=draw(st.integers(2, 64)) if mode in ("pp_group", "pipeline_wan") else 1,
                 group_size=draw(st.integers(2, 64)) if mode == "hierarchical" else 1,
                 micro_batches=draw(st.integers(1, 64)), activation_compression=draw(st.sampled_from([1.0, 4.0, 10.0])))
    return s, mode, ep, fixed


def _evaluate(s, mode, ep, fixed, n, h, r):
    unit = fixed["stages"] if mode in ("pp_group", "pipeline_wan") else 1
    b = PlanBatch.of(mode, "fp16", nodes=np.asarray(n) * unit, inner_steps=h, regional_rounds=r,
                     expert_parallel=ep, **fixed)
    t = throughput(s, b)
    eff = efficiency_without_replicas(s, b, t)
    target = time_to_target(s, b, t, eff)
    q = t["outer_time_s"] / (np.asarray(h, float) * np.asarray(r, float))
    # The oracle's e: the fraction of throughput compute that counts at the target.
    with np.errstate(divide="ignore", invalid="ignore"):
        e = s.target / (6 * s.active_params * target["tokens_per_s"] * target["time_to_target_s"])
    e = np.where(np.isfinite(target["time_to_target_s"]), e, 0.0)
    return q, e, t["tokens_per_outer"]


def _non_increasing(x):
    x = x[x > 0]     # reachable plans only (an unreachable C_quality target has e = 0)
    return bool(np.all(np.diff(x) <= 1e-12 * np.abs(x[:-1])))


def _non_decreasing(x):
    return bool(np.all(np.diff(x) >= -1e-12 * np.abs(x[:-1])))


@settings(max_examples=200, deadline=None)
@given(case=cases(), n=st.integers(2, 100000), h=st.integers(1, 10000), r=st.integers(1, 1000))
def test_q_falls_with_h_and_r_and_rises_with_n(case, n, h, r):
    s, mode, ep, fixed = case
    if mode == "hierarchical":
        n = max(n, 2 * fixed["group_size"])
    hs = np.unique(np.geomspace(1, 10000, 40).astype(int))
    q, _, _ = _evaluate(s, mode, ep, fixed, n, hs, r)
    assert _non_increasing(q)
    rs = np.unique(np.geomspace(1, 1000, 30).astype(int))
    q, _, _ = _evaluate(s, mode, ep, fixed, n, h, rs)
    assert _non_increasing(q)
    low = 2 * fixed["group_size"] if mode == "hierarchical" else (1 if mode in ("flat", "pipeline_wan") else 2)
    ns = np.unique(np.geomspace(low, 100000, 40).astype(int))
    q, _, tokens = _evaluate(s, mode, ep, fixed, ns, h, r)
    if mode != "pipeline_wan":
        assert _non_decreasing(q)
        per_replica = tokens / ns
        assert np.allclose(per_replica, per_replica[0], rtol=1e-12)


@settings(max_examples=200, deadline=None)
@given(case=cases(), n=st.integers(2, 100000), r=st.integers(1, 1000))
def test_efficiency_falls_with_h_eff_and_n(case, n, r):
    s, mode, ep, fixed = case
    if mode == "hierarchical":
        n = max(n, 2 * fixed["group_size"])
    hs = np.unique(np.geomspace(1, 10000, 40).astype(int))
    _, e, _ = _evaluate(s, mode, ep, fixed, n, hs, r)
    assert _non_increasing(e)
    low = 2 * fixed["group_size"] if mode == "hierarchical" else 1
    ns = np.unique(np.geomspace(low, 100000, 40).astype(int))
    _, e, _ = _evaluate(s, mode, ep, fixed, ns, 50, r)
    assert _non_increasing(e)
