"""Tensor parallelism inside a node as a planner decision (dtplan `search_tensor_parallel`, issue 25 item 2;
planner/cost/tensor_parallel.py): hand-worked choices, and the exact search (bnb, exhaustive) against the
brute force with T free on random instances."""

import dataclasses

import numpy as np
import pytest

from planner.cost import tensor_parallel
from planner.cost.assumptions import Assumptions
from planner.cost.modes import throughput
from planner.cost.setting import PlanBatch, Setting
from planner.objectives import objective_named
from planner.solve import optimise
from planner.solvers.bnb import tie_key
from tests.test_bnb import check_against_brute_force, naive, random_case

NVLINK_BPS = 450e9          # Assumptions.intra_node_gb_per_s's default, bytes/s per accelerator and direction
PEAK = 8 * 989e12           # 8 H100s at their dense fp16 peak


def _utilisation(us):
    """(T, precision, u) rows: u at fp16 per degree, the same at fp8 (not used here)."""
    return tuple((t, p, u) for t, u in us.items() for p in ("fp16", "fp8"))


def tp_setting(params, hidden, batch_tokens, memory_gb, us):
    a = Assumptions(search_tensor_parallel=True, tensor_parallel_utilisation=_utilisation(us))
    return Setting(params=params, active_params=params, moe_layers=0, hidden_size=hidden,
                   local_batch_tokens=batch_tokens, peak_flops={"fp16": PEAK, "fp8": 2 * PEAK},
                   memory_bytes=memory_gb * 1e9, accelerators_per_node=8, price_usd_per_accelerator=25000.0,
                   h100_equivalents=8.0, assumptions=a)


def _by_hand(p, h, b, t, u):
    """t_comp at degree T by hand: 6 P B / (F u) + TP collectives 2 B P (T - 1) 2 / (3 A h bw)
    + the D = 8 / T groups' reduce-scatter and all-gather 2 (D - 1) / D (P / T) 2 / bw (2 bytes at fp16)."""
    d = 8 / t
    return 6 * p * b / (PEAK * u) + 2 * b * p * (t - 1) * 2 / (3 * 8 * h * NVLINK_BPS) \
        + 2 * (d - 1) / d * (p / t) * 2 / NVLINK_BPS


def _flat_one_node(s):
    return throughput(s, PlanBatch.of("flat", "fp16", nodes=1, inner_steps=1))


def test_small_batch_chooses_tp8_over_tp1():
    # 70B, h = 8192, 4,096 tokens per step, u 0.4 at every T: the D groups' gradient sync of T = 1,
    # 2 x 7/8 x 70e9 x 2 / 450e9 = 0.544 s, outweighs T = 8's collectives, 2 x 4096 x 70e9 x 7 x 2 /
    # (3 x 8 x 8192 x 450e9) = 0.0907 s; compute 6 x 70e9 x 4096 / (7.912e15 x 0.4) = 0.544 s either way
    s = tp_setting(70e9, 8192, 4096, 8000, {1.0: 0.4, 2.0: 0.4, 4.0: 0.4, 8.0: 0.4})
    v = _flat_one_node(s)
    times = {t: _by_hand(70e9, 8192, 4096, t, 0.4) for t in (1, 2, 4, 8)}
    assert times[8] < min(times[1], times[2], times[4])
    assert v["tensor_parallel"][0] == 8.0
    assert v["t_comp_s"][0] == pytest.approx(times[8], rel=1e-12)
    assert v["t_comp_s"][0] == pytest.approx(0.54358 + 0.09074, rel=1e-4)
    assert v["state_bytes_per_node"][0] == pytest.approx(70e9 * 16, rel=1e-12)     # D = 1: P beta


def test_large_batch_chooses_tp1_when_it_fits():
    # 1,048,576 tokens: T = 8's collectives 2 x 1048576 x 70e9 x 7 x 2 / (3 x 8 x 8192 x 450e9) = 11.6 s,
    # T = 1's gradient sync 0.544 s; the node's 8,000 GB hold T = 1's state, 70e9 x (8 x 4 + 12) = 3,080 GB
    s = tp_setting(70e9, 8192, 1048576, 8000, {1.0: 0.4, 2.0: 0.4, 4.0: 0.4, 8.0: 0.4})
    v = _flat_one_node(s)
    assert v["tensor_parallel"][0] == 1.0
    assert v["t_comp_s"][0] == pytest.approx(_by_hand(70e9, 8192, 1048576, 1, 0.4), rel=1e-12)
    assert v["state_bytes_per_node"][0] == pytest.approx(70e9 * (8 * 4 + 12), rel=1e-12)


def test_memory_forces_a_degree():
    # 20B in 640 GB: the state is P (D x 4 + 12): T = 1 (D = 8) 880 GB does not fit, T = 2 (D = 4)
    # 560 GB does; with 1,048,576 tokens T = 2 is the fastest that fits (its collectives, 1.26 s,
    # against T = 4's 3.79 s and T = 8's 8.85 s), though T = 1 would be faster still (no collective)
    s = tp_setting(20e9, 6144, 1048576, 640, {1.0: 0.4, 2.0: 0.4, 4.0: 0.4, 8.0: 0.4})
    times = {t: _by_hand(20e9, 6144, 1048576, t, 0.4) for t in (1, 2, 4, 8)}
    assert times[1] < times[2] < times[4] < times[8]
    v = _flat_one_node(s)
    assert v["tensor_parallel"][0] == 2.0
    assert v["t_comp_s"][0] == pytest.approx(times[2], rel=1e-12)
    assert v["state_bytes_per_node"][0] == pytest.approx(20e9 * (4 * 4 + 12), rel=1e-12)
    assert v["state_bytes_per_node"][0] <= s.memory_bytes
    tight = s.replace(memory_bytes=300e9)       # even T = 8's P beta = 320 GB is too much: the least memory shown
    v = _flat_one_node(tight)
    assert v["tensor_parallel"][0] == 8.0 and v["state_bytes_per_node"][0] == pytest.approx(320e9, rel=1e-12)


def test_utilisation_per_degree_decides_between_fitting_degrees():
    # u falls with T (narrower GEMMs): with a small batch T = 8's 0.30 loses to T = 4's 0.45,
    # by hand as `_by_hand` at each degree's u
    us = {1.0: 0.5, 2.0: 0.48, 4.0: 0.45, 8.0: 0.30}
    s = tp_setting(70e9, 8192, 4096, 8000, us)
    times = {t: _by_hand(70e9, 8192, 4096, t, us[t]) for t in us}
    best = min(times, key=times.get)
    v = _flat_one_node(s)
    assert v["tensor_parallel"][0] == best
    assert v["t_comp_s"][0] == pytest.approx(times[best], rel=1e-12)
    assert v["node_mfu"][0] == us[best]


def test_degrees_follow_heads_and_the_node():
    assert tensor_parallel.degrees_for_heads(64, 8) == (1.0, 2.0, 4.0, 8.0)     # Llama 3 70B: 64 heads, 8 KV
    assert tensor_parallel.degrees_for_heads(33, 33) == (1.0,)                   # odd heads: no split
    a = Assumptions(search_tensor_parallel=True, tensor_parallel_utilisation=_utilisation({1.0: 0.5, 2.0: 0.5,
                                                                                           4.0: 0.5, 8.0: 0.5}))
    assert tensor_parallel.choices(a, 4, moe=False) == (1.0, 2.0, 4.0)           # T divides A = 4
    assert tensor_parallel.choices(a, 8, moe=True) == ()                         # MoE: the fixed node model
    assert tensor_parallel.choices(a.replace(tensor_parallel=4.0), 8, moe=False) == (4.0,)
    assert tensor_parallel.choices(Assumptions(), 8, moe=False) == ()            # switch off: today's node


def test_switch_off_leaves_the_node_model_unchanged():
    s = tp_setting(20e9, 6144, 1048576, 640, {1.0: 0.4})
    off = s.replace(assumptions=Assumptions(mfu=0.4))
    v = _flat_one_node(off)
    assert "tensor_parallel" not in v
    assert v["t_comp_s"][0] == pytest.approx(6 * 20e9 * 1048576 / (PEAK * 0.4), rel=1e-12)
    assert v["state_bytes_per_node"][0] == pytest.approx(20e9 * 16, rel=1e-12)


def tp_free_case(setting, seed):
    """The random case, dense, with T free: u per degree drawn falling with T, NVLink 50-900 GB/s, a batch
    of 4,096 to 1,048,576 tokens, and a target most plans reach (so that the optimum is a plan)."""
    rng = np.random.default_rng(seed + 900_000)
    u1 = float(rng.uniform(0.35, 0.6))
    drops = np.cumprod(rng.uniform(0.85, 1.0, 3))
    us = {1.0: u1, 2.0: u1 * drops[0], 4.0: u1 * drops[1], 8.0: u1 * drops[2]}
    a = setting.assumptions.replace(search_tensor_parallel=True, tensor_parallel_utilisation=_utilisation(us),
                                    intra_node_gb_per_s=float(rng.uniform(50, 900)))
    return setting.replace(assumptions=a, local_batch_tokens=float(rng.choice([4096, 65536, 1048576])),
                           active_params=setting.params, moe_layers=0,          # dense: T is searched
                           window_s=5000 * 86400.0, target_flop=float(rng.choice([1e21, 1e22])))


def solvers_agree(setting, space, streaming, objective):
    """bnb = the brute force, and the exhaustive oracle = bnb (value and tie key)."""
    check_against_brute_force(setting, space, streaming, objective, rel=1e-12)
    bnb, _, _ = optimise(setting, space, objective_named(objective))
    oracle, _, _ = optimise(setting, space, objective_named(objective), solver="exhaustive")
    assert (oracle is None) == (bnb is None)
    if oracle is not None:
        assert oracle[1] == pytest.approx(bnb[1], rel=1e-12) and tie_key(setting, oracle[0], 0) == tie_key(setting, bnb[0], 0)


def with_activations(s, sequence_tokens, recompute="selective"):
    """The setting with the memory per accelerator on (`activation_memory`, docs/physics.md section 2b)."""
    return s.replace(assumptions=s.assumptions.replace(activation_memory=True, activation_recompute=recompute,
                                                       sequence_tokens=float(sequence_tokens)))


def memory_case(setting, seed):
    """`tp_free_case` with the activations on, sized so that they matter: a dense model of 7B to 70B on
    nodes of 8 x 40 or 8 x 80 GB, a sequence of 8,192 to 32,768 tokens (so that the floor of one sequence per
    group binds on some plans) and `selective` or `fit` recomputation (alternately); the optimum differs from
    the one without activations on 15 of the 30 (seed, objective) pairs below (tests/test_tp_memory.py)."""
    setting = tp_free_case(setting, seed)
    rng = np.random.default_rng(seed + 950_000)
    params = float(rng.choice([7e9, 20e9, 70e9]))
    setting = setting.replace(params=params, active_params=params, memory_bytes=float(rng.choice([320, 640])) * 1e9)
    return with_activations(setting, float(rng.choice([8192, 16384, 32768])), ("selective", "fit")[seed % 2])


@pytest.mark.parametrize("seed", range(10))
@pytest.mark.parametrize("objective", ["min_time", "min_cost", "max_compute"])
@pytest.mark.parametrize("activations", [False, True])
def test_bnb_and_exhaustive_match_brute_force_with_tp_free(seed, objective, activations):
    """T free (seeds 8100 + i), and T free with the memory per accelerator (`memory_case`, seeds 8700 + i)."""
    if activations:
        setting, space, streaming = random_case(8700 + seed)
        solvers_agree(memory_case(setting, seed), space, streaming, objective)
    else:
        setting, space, streaming = random_case(8100 + seed)
        solvers_agree(tp_free_case(setting, seed), space, streaming, objective)


@pytest.mark.parametrize("seed", range(6))
def test_chosen_degree_is_the_best_fixed_degree_for_the_search(seed):
    """The per-plan choice is each plan's best T: the optimum with T free equals the best of the optima
    with each T fixed (min_time), so no fixed degree the choice passes over would have done better."""
    setting, space, streaming = random_case(8300 + seed)
    setting = tp_free_case(setting, seed)
    space = dataclasses.replace(space, modes=("flat", "pp_group"))
    free = naive(setting, space, "min_time", streaming)
    fixed = [naive(setting.replace(assumptions=setting.assumptions.replace(tensor_parallel=t)), space, "min_time",
                   streaming) for t in (1.0, 2.0, 4.0, 8.0)]
    fixed = [f[0][0] for f in fixed if f is not None]
    if free is None:
        assert not fixed
        return
    assert free[0][0] == pytest.approx(min(fixed), rel=1e-12)


@pytest.mark.parametrize("seed", range(4))
def test_the_mip_sees_the_same_choice(seed):
    """The MIP backends build their tables from the same cost functions (planner/mip/tables.py), so HiGHS'
    optimum with T free is the branch and bound's (streaming syncs: the MIP's factoring)."""
    setting, space, _ = random_case(8500 + seed)
    highs_agrees(tp_free_case(setting, seed), space)


def highs_agrees(setting, space):
    """HiGHS' min_time optimum is the branch and bound's, with streaming syncs (the MIP's factoring)."""
    space = dataclasses.replace(space, streaming=(True,))
    objective = objective_named("min_time")
    found, _, _ = optimise(setting, space, objective)
    mip, _, _ = optimise(setting, space, objective, solver="highs")
    if found is None:
        assert mip is None
        return
    assert mip[1] == pytest.approx(found[1], rel=1e-9)


def _raw(constants, hardware="8xH100-SXM", pools=False):
    fleet = {"pools": [{"hardware": hardware, "count": 2}, {"hardware": "8xA100-80GB", "count": 2}]} if pools \
        else {"hardware": hardware, "nodes": 4}
    return {"model": {"params": 70.6e9, "hidden_size": 8192}, "training": {"tokens": 1e11, "local_batch_tokens": 65536},
            "fleet": fleet, "network": {"wan": {"up_mbps": 1000, "down_mbps": 1000, "rtt_ms": 10}},
            "assumptions": {"profile": "dtplan", "constants": {"model_shape": "llama3-70B", **constants}}}


def test_the_setting_resolves_u_per_degree_from_the_compute_model():
    """Llama 3 70B (64 heads, 8 KV heads) on H100: degrees 1, 2, 4, 8, each with the compute model's u at that T
    (physics.compute_model_mfu with tensor_parallel = T), which falls as the GEMMs narrow."""
    from planner.cost import physics
    from planner.schema.instance import parse_instance
    from planner.setting import setting_from_instance
    s = setting_from_instance(parse_instance(_raw({"search_tensor_parallel": True})))
    rows = s.assumptions.tensor_parallel_utilisation
    assert sorted({t for t, _, _ in rows}) == [1.0, 2.0, 4.0, 8.0]
    fp8 = {t: u for t, p, u in rows if p == "fp8"}
    for t in fp8:
        want = physics.compute_model_mfu(s.assumptions.replace(tensor_parallel=t), "NVIDIA H100 SXM5 80GB",
                                         70.6e9, 70.6e9, 8192)["fp8"]
        assert fp8[t] == want
    assert fp8[1.0] > fp8[8.0]


def test_pools_refuse_the_switch_and_the_plan_shows_the_choice():
    from planner.schema.errors import InputError
    from planner.schema.instance import parse_instance
    from planner.schema.plan import parse_plan
    from planner.evaluate import evaluate
    from planner.present.render import plan_table
    with pytest.raises(InputError) as err:
        parse_instance(_raw({"search_tensor_parallel": True}, pools=True))
    assert [p.path for p in err.value.problems] == ["assumptions.constants.search_tensor_parallel"]
    e = evaluate(parse_instance(_raw({"search_tensor_parallel": True})),
                 parse_plan({"mode": "pp_group", "nodes": 4, "precision": "fp8", "stages": 2, "micro_batches": 8}))
    t = e.values["tensor_parallel"]
    text = "\n".join(" | ".join(row) for row in plan_table(e).rows)
    assert "tensor parallel T" in text and "chosen per plan (dtplan)" in text
    assert f"{8 / t:g} data-parallel groups per node" in text
