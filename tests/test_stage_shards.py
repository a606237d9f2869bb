"""A pipeline stage's gradients and optimizer state sharded over its data-parallel groups (dtplan,
`stage_state_shards`; planner/cost/stage_shards.py, docs/physics.md section 3): the state by hand, Llama 3's rows
with activation memory on, the sync left as it is, the plans refused, and the exact search on random cases."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from planner.cost import stage_shards
from planner.cost.assumptions import Assumptions
from planner.evaluate import check_plan_against, evaluate
from planner.objectives import objective_named
from planner.solve import optimise
from scripts import validate_published as vp
from tests.test_bnb import check_against_brute_force, random_case
from tests.test_tp_decision import memory_case

ACTIVATIONS = {"activation_memory": True, "activation_recompute": "fit"}


def test_state_factor_by_hand():
    """fp16 (beta 16 = 2 + 2 + 12): weights 2 bytes whole, gradients and optimizer state 14 / K; D = A / T groups
    in the server each hold the weights: (D 2 + 14 / K) / 16. K = 1 is the in-server ZeRO-1 node, unchanged."""
    a = Assumptions()
    assert stage_shards.state_factor(a, "fp16", 8, 64.0) == pytest.approx((2 + 14 / 64) / 16, rel=1e-15)
    assert stage_shards.state_factor(a, "fp8", 8, 4.0) == pytest.approx((1 + 13 / 4) / 14, rel=1e-15)
    tp2 = Assumptions(search_tensor_parallel=True, tensor_parallel=2.0)          # D = 8 / 2 = 4 groups
    assert stage_shards.state_factor(tp2, "fp16", 8, 4.0) == pytest.approx((4 * 2 + 14 / 4) / 16, rel=1e-15)
    assert stage_shards.state_factor(tp2, "fp16", 8, 1.0) == pytest.approx((4 * 4 + 12) / 16, rel=1e-15)
    assert stage_shards.shards(Assumptions(stage_state_shards=8.0), "pipeline_wan") == 1.0
    assert stage_shards.least_state_factor(a, "fp16", 64.0) == stage_shards.state_factor(a, "fp16", 8, 64.0)
    assert stage_shards.least_state_factor(a, "fp16", 1.0) == 1.0


def _llama3(name, constants):
    instance, plan, _, _ = vp.load_run(name, "dtplan", constants)
    return evaluate(instance, plan).values, vp.validate_run(name, with_solve=False, profile="dtplan",
                                                             constants=constants)


def test_llama3_8192_with_activations_by_hand():
    """16 stages of 405e9 / 16 = 25.3125e9 parameters, state (2 + 14 / 64) bytes each = 56.16 GB; 19.75
    micro-batches of 8,192 tokens in flight (v = 4), kept 708.2 GB (tests/test_validation_dtplan.py), working set
    8,192 x 34 x 16,384: r = (56.16 + 708.2 + 4.56 - 640) / (708.2 x 32 / 34) = 0.1935 (0.717 unsharded), and
    the MFU moves from -19.8% to -7.1% of the reported 0.43."""
    layers = 405e9 / (12 * 16384 ** 2 * 16)
    kept = 16 * (1 + 15 / 64) * 8192 * 34 * 16384 * layers
    working = 8192 * 34 * 16384
    state = 405e9 / 16 * (2 + 14 / 64)
    assert state / 1e9 == pytest.approx(56.162, abs=1e-3)
    r = (state + kept + working - 640e9) / (kept * (1 - 2 / 34))
    assert r == pytest.approx(0.19345, abs=1e-5)
    values, result = _llama3("llama3-405b-8192", ACTIVATIONS)
    assert values["recompute_share"] == pytest.approx(r, rel=1e-6)
    assert not result["violations"]
    assert vp.headline(result)["headline_error"] == pytest.approx(-0.0714, abs=5e-4)
    _, unsharded = _llama3("llama3-405b-8192", {**ACTIVATIONS, "stage_state_shards": 1.0})
    assert abs(vp.headline(unsharded)["headline_error"]) > 0.15


def test_llama3_16384_fits_without_recomputation():
    """128 groups: state 405e9 / 16 x (2 + 14 / 128) = 53.39 GB; 16 micro-batches of 8,192 tokens (M = 16 below
    the interleaved schedule's 19.75) keep 573.75 GB: 627.14 GB fits 640 GB, r = 0, the MFU as without activations."""
    layers = 405e9 / (12 * 16384 ** 2 * 16)
    state = 405e9 / 16 * (2 + 14 / 128)
    kept = 16 * 8192 * 34 * 16384 * layers
    assert (state + kept) / 1e9 == pytest.approx(627.14, abs=0.005)
    values, result = _llama3("llama3-405b-16384", ACTIVATIONS)
    assert values["recompute_share"] == 0.0
    assert values["state_bytes_per_node"] == pytest.approx(state + kept, rel=1e-9)
    _, off = _llama3("llama3-405b-16384", {})
    assert vp.headline(result)["headline_error"] == pytest.approx(vp.headline(off)["headline_error"], abs=1e-12)
    assert abs(vp.headline(result)["headline_error"]) <= 0.15


def test_sharding_keeps_the_sync():
    """A reduce-scatter and an all-gather over the G groups move the ring all-reduce's 2 (G - 1) / G v: the sync,
    the step and the time to target are those of the unsharded plan; only the state changes."""
    off = {"activation_memory": False}      # the state alone (with activations the unsharded node recomputes more)
    sharded, _ = _llama3("llama3-405b-8192", off)
    whole, _ = _llama3("llama3-405b-8192", {**off, "stage_state_shards": 1.0})
    for key in ("t_sync_s", "t_step_s", "outer_time_s", "time_to_target_s"):
        assert sharded[key] == whole[key], key
    assert whole["state_bytes_per_node"] == pytest.approx(405e9, rel=1e-12)
    assert sharded["state_bytes_per_node"] == pytest.approx(405e9 / 16 * (2 + 14 / 64), rel=1e-12)


def test_plans_that_cannot_shard_are_refused():
    """The groups share their optimizer state, so they sync every step (H = 1), and a plan needs the K groups."""
    instance, plan, _, _ = vp.load_run("llama3-405b-8192", "dtplan")
    assert check_plan_against(instance, plan) == []
    bad = check_plan_against(instance, plan.model_copy(update={"inner_steps": 2}))
    assert [p.path for p in bad] == ["plan.inner_steps"]
    bad = check_plan_against(instance, plan.model_copy(update={"nodes": 1008}))     # 63 groups of 16
    assert [p.path for p in bad] == ["plan.nodes"] and "63 groups" in bad[0].message


def sharded_case(seed):
    """`memory_case` (T free, activation memory on) made a datacenter pipeline case where the sharding decides:
    a dense 150B or 400B model on 8 x 80 GB nodes (fp16 state 2.4-6.4 TB, so without sharding at least 4 to 10
    stages), `fit` recomputation, 10-300 Gb/s links, 16 to 40 nodes, up to 8 stages, K = 2, 4 or 8, and a target
    every plan can reach. The space keeps H = 1, as `DecisionSpace.from_instance` does with K > 1."""
    setting, space, streaming = random_case(9100 + seed)
    setting = memory_case(setting, seed)
    rng = np.random.default_rng(seed + 960_000)
    params = float(rng.choice([150e9, 400e9]))
    a = setting.assumptions.replace(stage_state_shards=float(rng.choice([2, 4, 8])), activation_recompute="fit")
    return datacenter(setting.replace(params=params, active_params=params, assumptions=a), space, streaming, rng)


def datacenter(setting, space, streaming, rng):
    """The case on 640 GB nodes with 10-300 Gb/s links, 16 to 40 nodes, up to 8 stages and 4 micro-batches, H = 1,
    and a target every plan can reach (links and nodes drawn from `rng`)."""
    setting = setting.replace(memory_bytes=640e9, wan_up_bps=float(10 ** rng.uniform(10, 11.5)),
                              wan_down_bps=float(10 ** rng.uniform(10, 11.5)), wan_rtt_s=0.001,
                              pipeline_bps=float(10 ** rng.uniform(10, 11.5)), budget_usd=1e12,
                              window_s=5000 * 86400.0, target_flop=1e23)
    space = dataclasses.replace(space, max_inner_steps=1, max_nodes=int(rng.integers(16, 41)), max_stages=8,
                                max_micro_batches=4)
    return setting, space, streaming


@pytest.mark.parametrize("seed", range(10))
@pytest.mark.parametrize("objective", ["min_time", "min_cost", "max_compute"])
def test_bnb_matches_brute_force_with_sharded_stages(seed, objective):
    """`sharded_case`: the optimum moves with the sharding (against K = 1) on 26 of these 30 (seed, objective)
    pairs, in 18 from no feasible plan to a pipeline. The space keeps H = 1 and G >= K (`_pp_group`); the brute
    force scores every plan and drops pipelines of fewer than K groups. bnb and the exhaustive oracle agree."""
    setting, space, streaming = sharded_case(seed)
    agree_with_pipelines_of(setting.assumptions.stage_state_shards, setting, space, streaming, objective)


def agree_with_pipelines_of(groups, setting, space, streaming, objective):
    """The brute force, keeping only pipelines of at least `groups` groups, = bnb, and the exhaustive oracle = bnb."""
    def keep(mode, batch, scores):
        n = np.asarray(batch.nodes)
        return np.ones(n.shape, bool) if mode != "pp_group" else n // np.asarray(batch.stages) >= groups

    check_against_brute_force(setting, space, streaming, objective, rel=1e-12, keep=keep)
    bnb, _, _ = optimise(setting, space, objective_named(objective))
    oracle, _, _ = optimise(setting, space, objective_named(objective), solver="exhaustive")
    assert (oracle is None) == (bnb is None)
    if oracle is not None:
        assert oracle[1] == pytest.approx(bnb[1], rel=1e-12)
