"""Expert parallelism inside a pipeline stage and ZeRO-1 over its data-parallel groups (dtplan,
`stage_expert_parallel`, `stage_sharded_state`; planner/cost/stage_shards.py, docs/physics.md section 3):
DeepSeek-V3's stage node by hand with and without them, the sync of the parameters a node holds, the plans and
instances refused, and the exact search on random mixture-of-experts cases against the brute force."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from planner.cost import stage_shards
from planner.cost.assumptions import Assumptions
from planner.evaluate import check_plan_against, evaluate
from planner.schema.errors import InputError
from scripts import validate_published as vp
from tests.test_bnb import random_case
from tests.test_stage_shards import agree_with_pipelines_of, datacenter

# DeepSeek-V3 (arXiv 2412.19437; models/llm/shapes/deepseek-v3.json): 58 MoE layers of 256 routed experts, each a
# gated FFN of width 2,048 on h = 7,168 (3 matrices), of the 671e9 parameters of the main model
ROUTED = 58 * 256 * 3 * 7168 * 2048
WHOLE = 671e9 - ROUTED
NONE = {"stage_expert_parallel": False, "stage_state_shards": 1.0, "stage_sharded_state": "gradients_and_optimizer"}
STATE_ONLY = {"activation_memory": False}     # the node's state alone, whatever the profile's default


def _deepseek(constants):
    instance, plan, _, _ = vp.load_run("deepseek-v3", "dtplan", constants)
    return evaluate(instance, plan)


def test_deepseek_routed_parameters_from_its_shape():
    """653.9e9 routed of 671e9; P - P_act (the reference's split) would say 634e9."""
    a = Assumptions(model_shape="deepseek-v3")
    assert ROUTED == 653_908_770_816
    assert float(stage_shards.routed_params(a, 671e9, 37e9)) == ROUTED
    assert float(stage_shards.routed_params(Assumptions(), 671e9, 37e9)) == 634e9


@pytest.mark.parametrize("constants, gb", [
    # every expert of a stage on each server (as before): 671e9 / 16 x (14 + 2 DualPipe's copy) = 671.0 GB
    (NONE, 671e9 / 16 * (14 + 2) / 1e9),
    # EP over E = 64 / 8 = 8 servers: shared whole, experts 1/8 (weights, gradients and optimizer state), and the
    # copy of the node's own weights and gradients
    ({**NONE, "stage_expert_parallel": True},
     (WHOLE / 16 * 14 + ROUTED / 16 * 14 / 8 + (WHOLE + ROUTED / 8) / 16 * 2) / 1e9),
    # ZeRO-1 over the 16 groups without EP: weights and gradients whole (1 + 1 bytes at fp8), 12 / 16 of the rest
    ({**NONE, "stage_state_shards": 16.0, "stage_sharded_state": "optimizer"}, 671e9 / 16 * (2 + 12 / 16 + 2) / 1e9),
    # both, as the run (its reported file): shared (2 + 12 / 16), experts (2 / 8 + 12 / 16),
    # copy (shared + experts / 8) x 2
    ({}, (WHOLE / 16 * (2 + 12 / 16) + ROUTED / 16 * (2 / 8 + 12 / 16) + (WHOLE + ROUTED / 8) / 16 * 2) / 1e9),
])
def test_deepseek_stage_node_memory_by_hand(constants, gb):
    """fp8: beta = 14 bytes per parameter (weights 1, gradients 1, fp32 master and moments 12); 16 stages of 16
    groups of one 8-GPU server; DualPipe keeps a second copy of the weights and gradients (2 bytes)."""
    ev = _deepseek({**constants, **STATE_ONLY})
    assert ev.values["state_bytes_per_node"] / 1e9 == pytest.approx(gb, rel=1e-12)
    broken = any(v.startswith("memory-cap") for v in ev.violations)
    assert broken == (gb > 640.0)


def test_deepseek_as_run_fits_and_its_figures():
    """The run's settings: 56.16 GB on 640 GB (against 671.0 GB without EP and ZeRO-1), 98.83 GB with EP alone,
    199.2 GB with ZeRO-1 alone."""
    assert _deepseek(STATE_ONLY).values["state_bytes_per_node"] / 1e9 == pytest.approx(56.16, abs=0.005)
    assert _deepseek({**NONE, **STATE_ONLY, "stage_expert_parallel": True}).values["state_bytes_per_node"] / 1e9 == \
        pytest.approx(98.83, abs=0.005)
    assert _deepseek({**NONE, **STATE_ONLY}).values["state_bytes_per_node"] / 1e9 == pytest.approx(671.0, abs=0.005)


def test_deepseek_node_syncs_the_parameters_it_holds():
    """Per-stage payloads at fp8 (8 bits, no compression): P / S without EP; with it the node holds P_w + P_r / 8
    of them, and its experts are reduced among their G / E = 16 / 8 = 2 replicas only: the ring moves
    2 (2 - 1) / 2 of them where the sync charges 2 (16 - 1) / 16 of its payload, so they count (16 - 8) / 15."""
    assert _deepseek(NONE).values["payload_bits"] == pytest.approx(671e9 / 16 * 8, rel=1e-12)
    payload = (WHOLE + ROUTED / 8 * 8 / 15) / 16 * 8
    assert payload * 2 * 15 / 16 == pytest.approx((WHOLE * 2 * 15 / 16 + ROUTED / 8 * 2 * 1 / 2) / 16 * 8, rel=1e-12)
    assert _deepseek({}).values["payload_bits"] == pytest.approx(payload, rel=1e-12)


def test_experts_reduced_among_their_replicas_by_hand():
    """payload_params with G groups (ring all-reduce over concurrent links): P_w + P_r / E (G - E) / (G - 1);
    the experts drop out at G = E (one copy each), reach P_r / E only as G grows, and other patterns keep P_r / E."""
    a = Assumptions(model_shape="deepseek-v3", stage_expert_parallel=True, expert_parallel_degree=64.0,
                    concurrent_up_down=True)
    def held(groups, b=a):
        return float(stage_shards.payload_params(b, 8, "pp_group", True, 671e9, 37e9, groups))
    assert held(8.0) == pytest.approx(WHOLE, rel=1e-12)
    assert held(16.0) == pytest.approx(WHOLE + ROUTED / 8 * 8 / 15, rel=1e-12)
    assert held(64.0) == pytest.approx(WHOLE + ROUTED / 8 * 56 / 63, rel=1e-12)
    assert held(8.0) < held(16.0) < held(64.0) < WHOLE + ROUTED / 8
    assert held(16.0, a.replace(concurrent_up_down=False)) == pytest.approx(WHOLE + ROUTED / 8, rel=1e-12)
    assert held(16.0, a.replace(sync_pattern="all_gather")) == pytest.approx(WHOLE + ROUTED / 8, rel=1e-12)
    assert float(stage_shards.payload_params(a, 8, "pp_group", True, 671e9, 37e9)) == pytest.approx(WHOLE + ROUTED / 8)


def test_activation_memory_on_deepseek_as_run():
    """With activation memory on (and `fit` recomputation) the run's stage node now fits without recomputing
    (r = 0), so the prediction is the one without activations; before EP and ZeRO-1 it broke the cap even fully
    recomputed (706.6 GB) and `fit`'s full recomputation made it a spurious 3,128,071 tokens/s (+0.0%)."""
    on = {"activation_memory": True, "activation_recompute": "fit"}
    ev = _deepseek(on)
    assert ev.values["recompute_share"] == 0.0 and not ev.violations
    assert 56.2e9 < ev.values["state_bytes_per_node"] < 640e9
    off = _deepseek({"activation_memory": False})
    assert off.values["state_bytes_per_node"] < ev.values["state_bytes_per_node"]     # the activations are counted
    assert ev.values["t_step_s"] == off.values["t_step_s"]
    before = _deepseek({**NONE, **on})
    assert before.values["recompute_share"] == 1.0
    assert before.values["state_bytes_per_node"] / 1e9 == pytest.approx(706.6, abs=0.05)


def test_least_bytes_per_param_is_the_state_at_one_group_per_node():
    """S_min's beta' (planner/space.py) equals the stage state at D = 1 per P / S, so S_min stays a bound."""
    for k, what, e in [(1.0, "optimizer", 2.0), (8.0, "optimizer", 4.0), (4.0, "gradients_and_optimizer", 8.0),
                       (2.0, "gradients_and_optimizer", 1.0)]:
        a = Assumptions(stage_expert_parallel=True, expert_parallel_degree=8 * e, stage_state_shards=k,
                        stage_sharded_state=what)
        for precision in ("fp16", "fp8"):
            state = stage_shards.state_bytes(a, precision, 8, "pp_group", True, 400e9, 50e9, 4.0)
            beta = stage_shards.least_bytes_per_param(a, precision, "pp_group", True, 8, 400e9, 50e9)
            assert float(state) == pytest.approx(400e9 / 4 * beta, rel=1e-14)


def test_plans_refused_below_e_groups_or_with_h_above_one():
    """DeepSeek-V3's 256 nodes in 16 stages give 16 groups >= E = 8; 64 stages (4 groups) are refused, and so is
    H = 2 (the expert-parallel groups hold one model between them). K = 1 here: E alone sets the floor."""
    instance, plan, _, _ = vp.load_run("deepseek-v3", "dtplan", {"stage_state_shards": 1.0})
    assert check_plan_against(instance, plan) == []
    bad = check_plan_against(instance, plan.model_copy(update={"inner_steps": 2}))
    assert [p.path for p in bad] == ["plan.inner_steps"] and "expert_parallel_degree" in bad[0].message
    bad = check_plan_against(instance, plan.model_copy(update={"stages": 64}))
    assert [p.path for p in bad] == ["plan.nodes"] and "4 groups" in bad[0].message


@pytest.mark.parametrize("constants, path", [
    ({"stage_expert_parallel": True, "expert_parallel_degree": 12.0}, "assumptions.constants.expert_parallel_degree"),
    ({"stage_expert_parallel": True}, "assumptions.constants.expert_parallel_degree"),
    ({"stage_sharded_state": "weights"}, "assumptions.constants.stage_sharded_state"),
])
def test_instances_refused(constants, path):
    """EP inside a stage needs whole servers (a degree that is a multiple of the node's 8 accelerators)."""
    _, _, _, raw = vp.load_run("deepseek-v3", "dtplan", NONE)
    raw = vp._with_constants(raw, {"expert_parallel_degree": 0.0, **constants})
    with pytest.raises(InputError) as err:
        vp.parse_instance(raw)
    assert path in [p.path for p in err.value.problems]


def test_dense_model_refuses_stage_expert_parallel():
    _, _, _, raw = vp.load_run("llama3-405b-8192", "dtplan")
    with pytest.raises(InputError) as err:
        vp.parse_instance(vp._with_constants(raw, {"stage_expert_parallel": True, "expert_parallel_degree": 64.0}))
    assert [p.path for p in err.value.problems] == ["assumptions.constants.stage_expert_parallel"]


def moe_case(seed):
    """A datacenter case where a stage's experts decide: a mixture-of-experts model of 400e9 or 1e12 parameters
    (1/8 active, P - P_act routed) on 8 x 80 GB nodes, per-stage payloads, E = 2 or 4 servers per expert-parallel
    group, K = 1, 2 or 8 groups sharding the rest (ZeRO-1 or gradients too, alternately), activation memory with
    `fit` recomputation on every other seed, 16 to 40 nodes, up to 8 stages, H = 1 (as
    `DecisionSpace.from_instance` keeps it) and a target every plan can reach."""
    setting, space, streaming = random_case(9300 + seed)
    rng = np.random.default_rng(seed + 970_000)
    params = float(rng.choice([400e9, 1e12]))
    a = setting.assumptions.replace(stage_expert_parallel=True, expert_parallel_degree=8.0 * float(rng.choice([2, 4])),
                                    stage_state_shards=float(rng.choice([1, 2, 8])), per_stage_payload=True,
                                    stage_sharded_state=("optimizer", "gradients_and_optimizer")[seed % 2],
                                    activation_memory=seed % 2 == 0, activation_recompute="fit",
                                    sequence_tokens=4096.0)
    return datacenter(setting.replace(params=params, active_params=params / 8, moe_layers=16, assumptions=a), space,
                      streaming, rng)


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("objective", ["min_time", "min_cost", "max_compute"])
def test_bnb_and_exhaustive_match_brute_force_with_stage_experts(seed, objective):
    """`moe_case`: the optimum moves with the experts' sharding (against `stage_expert_parallel` off) on 17 of these
    24 (seed, objective) pairs, in 6 from no feasible plan to a pipeline (seeds 5 and 6 have none either way). The
    brute force scores every plan and drops pipelines of fewer than max(K, E) groups; bnb and the exhaustive oracle
    agree with it (value and tie key)."""
    setting, space, streaming = moe_case(seed)
    a = setting.assumptions
    groups = max(a.stage_state_shards, a.expert_parallel_degree / setting.accelerators_per_node)     # K, E
    agree_with_pipelines_of(groups, setting, space, streaming, objective)


def test_the_fewest_stages_shown_count_the_sharded_state():
    """`min_stages` (what `explain` shows and the memory-cap note reads) is the search's own S_min, ceil(P beta' / V)
    with beta' the least state per parameter of a stage node (`least_bytes_per_param`): DeepSeek-V3 as run, shared
    17.09e9 x (2 + 12 / 16) + routed 653.9e9 x (2 / 8 + 12 / 16) = 700.9e9 bytes on 640 GB, 2 stages (it was
    ceil(671e9 x 14 / 640e9) = 15 before the sharding was counted); without EP and ZeRO-1 it stays 15."""
    assert (WHOLE * (2 + 12 / 16) + ROUTED * (2 / 8 + 12 / 16)) / 1e9 == pytest.approx(700.9, abs=0.05)
    assert _deepseek({}).values["min_stages"] == 2
    assert _deepseek(NONE).values["min_stages"] == 15 == int(np.ceil(671e9 * 14 / 640e9))


@pytest.mark.parametrize("seed", range(8))
def test_no_stage_count_below_the_shown_minimum_fits(seed):
    """On the random mixture-of-experts cases: every pp_group layout with fewer stages than `min_stages` breaks
    memory with its state alone at one tensor-parallel group per node (D = 1, the least state at any degree), the
    shown count fits there (the bound is tight), and it is the search's S_min (at least 2; none searched above
    max_stages)."""
    from planner.cost.score import _score
    from planner.cost.setting import PlanBatch
    setting, space, _ = moe_case(seed)
    a, gpus = setting.assumptions, setting.accelerators_per_node
    groups = int(max(a.stage_state_shards, a.expert_parallel_degree / gpus))
    for precision in ("fp16", "fp8"):
        stages = np.arange(1, 41)
        batch = PlanBatch.of("pp_group", precision, nodes=stages * groups, stages=stages, inner_steps=1)
        shown = int(_score(setting, batch, None)["min_stages"][0])
        least = stage_shards.state_bytes(a.replace(tensor_parallel=float(gpus)), precision, gpus, "pp_group", True,
                                         setting.params, setting.active_params, stages)
        assert np.all(least[stages < shown] > setting.memory_bytes) and least[shown - 1] <= setting.memory_bytes
        searched = space._stage_range(setting, precision, "pp_group")         # empty when S_min > max_stages
        assert (searched[0] == max(2, shown)) if searched.size else shown > space.max_stages


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("objective", ["min_time", "min_cost", "max_compute"])
def test_bnb_and_exhaustive_match_brute_force_with_experts_reduced_among_replicas(seed, objective):
    """`moe_case` with the ring over concurrent links (`concurrent_up_down`), where a node's experts count as reduced
    among their G / E replicas (`payload_params` with G), blocking syncs (no streaming) over 1 Gb/s links, so the
    G-dependent payload reaches the outer step (it moves the optimum's value on 10 of these 18 pairs against the
    experts synced among all G groups): bnb and the exhaustive oracle agree with the brute force over every plan."""
    setting, space, _ = moe_case(seed)
    a = setting.assumptions.replace(concurrent_up_down=True)
    setting = setting.replace(assumptions=a, wan_up_bps=1e9, wan_down_bps=1e9)
    space = dataclasses.replace(space, streaming=(False,))
    groups = max(a.stage_state_shards, a.expert_parallel_degree / setting.accelerators_per_node)
    agree_with_pipelines_of(groups, setting, space, (False,), objective)
