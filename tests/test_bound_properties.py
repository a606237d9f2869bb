"""The monotonicity facts the branch and bound's bound rests on, checked over wide random settings.

planner/solvers/bnb.py prunes a box (n, H, R) with
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
    # The branch and bound's e: the fraction of throughput compute that counts at the target.
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


# -- max_compute (planner/solvers/bnb.py `_compute_box`) -----------------------------------------

from planner.cost import chinchilla  # noqa: E402
from planner.cost.run import quality_compute, quality_terms  # noqa: E402
from planner.solvers.bnb import _compute_box  # noqa: E402
from planner.space import Classes  # noqa: E402


def _quality_terms(s, mode, ep, fixed, n, h, r):
    unit = fixed["stages"] if mode in ("pp_group", "pipeline_wan") else 1
    b = PlanBatch.of(mode, "fp16", nodes=np.asarray(n) * unit, inner_steps=h, regional_rounds=r,
                     expert_parallel=ep, **fixed)
    t = throughput(s, b)
    return quality_terms(s, b, t, efficiency_without_replicas(s, b, t))


@settings(max_examples=200, deadline=None)
@given(case=cases(), n=st.integers(2, 100000), r=st.integers(1, 1000))
def test_quality_terms_g_falls_and_mu_rises_with_h_eff_and_n(case, n, r):
    """g = eta_H eta_C eta_A (x linear v1 factor) never rises, the loss multiplier mu never falls."""
    s, mode, ep, fixed = case
    if mode == "hierarchical":
        n = max(n, 2 * fixed["group_size"])
    hs = np.unique(np.geomspace(1, 10000, 40).astype(int))
    g, mu, _ = _quality_terms(s, mode, ep, fixed, n, hs, r)
    assert _non_increasing(g) and _rises(mu)
    low = 2 * fixed["group_size"] if mode == "hierarchical" else 2
    ns = np.unique(np.geomspace(low, 100000, 40).astype(int))
    g, mu, _ = _quality_terms(s, mode, ep, fixed, ns, 50, r)
    assert _non_increasing(g) and _rises(mu)


def _rises(x):
    """Non-decreasing, an infinite multiplier (overflow: nothing counts) included."""
    return bool(np.all(x[1:] >= x[:-1] * (1 - 1e-12)))


@st.composite
def chinchilla_settings(draw):
    a = Assumptions(chinchilla_e=draw(st.floats(0.5, 3)), chinchilla_a=draw(st.floats(10, 2000)),
                    chinchilla_alpha=draw(st.floats(0.1, 0.6)), chinchilla_b=draw(st.floats(10, 5000)),
                    chinchilla_beta=draw(st.floats(0.1, 0.6)), overtrain_target=draw(st.floats(0.1, 10)))
    p = draw(st.floats(1e6, 3e12))
    return Setting(params=p, active_params=p, moe_layers=0, hidden_size=None, local_batch_tokens=131072.0,
                   peak_flops={"fp16": 1e15}, memory_bytes=1e12, accelerators_per_node=8,
                   price_usd_per_accelerator=1.0, h100_equivalents=1.0, assumptions=a)


@settings(max_examples=300, deadline=None)
@given(s=chinchilla_settings(), g=st.floats(0.01, 1), mu=st.floats(1, 100))
def test_quality_compute_grows_with_tokens_and_falls_with_mu(s, g, mu):
    tokens = np.geomspace(1e4, 1e17, 200)
    q = quality_compute(s, tokens, g, mu, True)
    assert _non_decreasing(q)
    mus = np.geomspace(1, 100, 50)
    assert _non_increasing(quality_compute(s, 1e12, g, mus, True))


@settings(max_examples=300, deadline=None)
@given(s=chinchilla_settings())
def test_equivalent_compute_grows_with_tokens(s):
    """C'_1(T), the compute whose compute-optimal model reaches L(P_act, T), grows with T
    (the C_local bound of max_compute divides by C'_1(T_lo) / (6 P_act T_up))."""
    tokens = np.geomspace(1e3, 1e18, 400)
    a = s.assumptions
    assert _non_decreasing(chinchilla.equivalent_optimal_compute(chinchilla.chinchilla_loss(s.active_params, tokens, a), a))


@settings(max_examples=150, deadline=None)
@given(case=cases(), n1=st.integers(1, 300), dn=st.integers(0, 40), h1=st.integers(1, 3000),
       dh=st.integers(0, 30), r1=st.integers(1, 200), dr=st.integers(0, 4), window_days=st.floats(1, 2000))
def test_compute_box_bound_holds_for_every_plan_of_the_box(case, n1, dn, h1, dh, r1, dr, window_days):
    """No plan of a box reaches more C_quality / C_local than the box's bound says."""
    s, mode, ep, fixed = case
    s = s.replace(window_s=window_days * 86400.0)
    if mode == "pipeline_wan":
        return
    if mode == "hierarchical":
        n1 = max(n1, 2 * fixed["group_size"])
    else:
        r1, dr = 1, 0
    unit = fixed["stages"] if mode == "pp_group" else 1
    rows = PlanBatch.of(mode, "fp16", nodes=unit, expert_parallel=ep, **fixed)
    c = Classes(rows, np.array([n1]), np.array([n1 + dn]), np.array([unit]))
    box = {"i": np.array([0]), "n1": np.array([n1]), "n2": np.array([n1 + dn]), "h1": np.array([h1]),
           "h2": np.array([h1 + dh]), "r1": np.array([r1]), "r2": np.array([r1 + dr])}
    grid = np.meshgrid(np.arange(n1, n1 + dn + 1), np.arange(h1, h1 + dh + 1), np.arange(r1, r1 + dr + 1),
                       indexing="ij")
    n, h, r = (x.ravel() for x in grid)
    from planner.cost.score import window_compute
    out = window_compute(s, c.plans(np.zeros(n.size, int), n, h, r))
    for kind in ("c_quality", "c_local"):
        lower, _ = _compute_box(s, c, box, kind)
        assert np.all(out[kind] <= (1 / lower[0]) * (1 + 1e-9)), kind


# -- both box bounds, with constants that make efficiency rise (planner/solvers/monotone.py) ---------

from planner.solvers import monotone  # noqa: E402
from planner.solvers.bnb import _time_box  # noqa: E402


@settings(max_examples=150, deadline=None)
@given(case=cases(), divisor=st.floats(0.3, 10), floor=st.floats(0, 1.5), small=st.booleans(),
       n1=st.integers(1, 300), dn=st.integers(0, 40), h1=st.integers(1, 3000), dh=st.integers(0, 30),
       r1=st.integers(1, 200), dr=st.integers(0, 4), window_days=st.floats(1, 2000))
def test_box_bounds_hold_when_eta_h_rises_or_exceeds_one(case, divisor, floor, small, n1, dn, h1, dh, r1, dr,
                                                        window_days):
    """alpha(P) < 0 (small model, small `alpha_log_divisor`) or `eta_h_floor` > 1: the time and
    compute bounds of a box still hold for every plan in it. (The search never puts one node in
    a box with more: n1 = 1 boxes hold n = 1 only.)"""
    s, mode, ep, fixed = case
    a = s.assumptions.replace(alpha_log_divisor=divisor, eta_h_floor=floor)
    s = s.replace(window_s=window_days * 86400.0, assumptions=a)
    if small:
        s = s.replace(params=2e8, active_params=2e8, moe_layers=0)
        ep = "none"
    mono = monotone.check(s)
    if mono.unsupported or mode == "pipeline_wan":
        return
    if mode == "hierarchical":
        n1 = max(n1, 2 * fixed["group_size"])
    else:
        r1, dr = 1, 0
    if n1 == 1:
        dn = 0
    unit = fixed["stages"] if mode == "pp_group" else 1
    rows = PlanBatch.of(mode, "fp16", nodes=unit, expert_parallel=ep, **fixed)
    c = Classes(rows, np.array([n1]), np.array([n1 + dn]), np.array([unit]))
    box = {"i": np.array([0]), "n1": np.array([n1]), "n2": np.array([n1 + dn]), "h1": np.array([h1]),
           "h2": np.array([h1 + dh]), "r1": np.array([r1]), "r2": np.array([r1 + dr])}
    grid = np.meshgrid(np.arange(n1, n1 + dn + 1), np.arange(h1, h1 + dh + 1), np.arange(r1, r1 + dr + 1),
                       indexing="ij")
    n, h, r = (x.ravel() for x in grid)
    from planner.cost.score import time_to_target as evaluate_time, window_compute
    plans = c.plans(np.zeros(n.size, int), n, h, r)
    out = window_compute(s, plans)
    for kind in ("c_quality", "c_local"):
        lower, _ = _compute_box(s, c, box, kind, mono)
        assert np.all(out[kind] <= (1 / lower[0]) * (1 + 1e-9)), kind
    times = evaluate_time(s, plans)["time_to_target_s"]
    lower, _ = _time_box(s, c, box, mono)
    # a fastest corner that never reaches the target still gives a bound (its time at e = 1), never NaN
    assert not np.isnan(lower[0]) and np.all(times >= lower[0] * (1 - 1e-9))


@settings(max_examples=200, deadline=None)
@given(e=st.floats(0, 5), a_coef=st.floats(1, 5000), a_exp=st.floats(0.05, 1.5), b_coef=st.floats(1, 5000),
       b_exp=st.floats(0.05, 1.5), r=st.floats(1, 200), params=st.floats(1e6, 3e12), m=st.floats(1, 5),
       floor=st.sampled_from([1e10, 1.0, 1e20]))
def test_equivalent_compute_ratio_falls_with_tokens(e, a_coef, a_exp, b_coef, b_exp, r, params, m, floor):
    """rho(m, T) = max(C'(m L(T)), F) / max(C'(L(T)), F) is non-increasing in the tokens T and in m
    for any Chinchilla constants with E >= 0 (the second C_local bound of `_compute_box`)."""
    a = Assumptions(chinchilla_e=e, chinchilla_a=a_coef, chinchilla_alpha=a_exp, chinchilla_b=b_coef,
                    chinchilla_beta=b_exp, tokens_per_param=r, chi_search_low_flop=floor)
    tokens = np.geomspace(1e3, 1e18, 300)
    loss = chinchilla.chinchilla_loss(params, tokens, a)

    def rho(mult):
        c_m = chinchilla.equivalent_optimal_compute(loss * mult, a)
        c_1 = chinchilla.equivalent_optimal_compute(loss, a)
        return np.maximum(c_m, floor) / np.maximum(c_1, floor)

    ok = np.isfinite(rho(m)) & np.isfinite(rho(m * 1.1))
    assert np.all(np.diff(rho(m)[ok]) <= 1e-9 * rho(m)[ok][:-1] + 1e-300) if ok.sum() > 1 else True
    assert np.all(rho(m * 1.1)[ok] <= rho(m)[ok] * (1 + 1e-9))
