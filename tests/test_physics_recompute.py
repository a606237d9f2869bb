"""dtplan's activation recomputation of pipeline stages (physics.activation_parts_bytes,
physics.recompute_share; docs/physics.md section 3), against numbers worked by hand, and the
branch and bound against the brute force with it on."""

import math

import pytest

from planner.cost import physics
from planner.cost.assumptions import Assumptions
from planner.evaluate import evaluate
from planner.schema.errors import InputError
from planner.schema.instance import load_instance, parse_instance
from planner.schema.plan import load_plan, parse_plan
from tests.test_bnb import check_against_brute_force
from tests.test_physics import ROOT, _sharding_case

ON = Assumptions(activation_memory=True, pipeline_chunks=2.0)

# P_act = 1.2e10, h = 4096, B = 1e6 tokens, S = 4, M = 8, 1F1B (code 2): 4 micro-batches of 125,000 tokens held;
# a stage's L / S layers times h per token: 1.2e10 / (12 x 4096 x 4) = 61,035.15625
LAYERS_H = 1.2e10 / (12 * 4096 * 4)
KEPT = 4 * 125_000 * 34 * LAYERS_H            # 1.03759765625e12 bytes (selective: c = 34)
REDONE = 4 * 125_000 * 2 * LAYERS_H           # 6.103515625e10 bytes (full: each layer keeps its input, c = 2)
WORKING = 125_000 * 34 * 4096                 # 1.7408e10 bytes: one layer of one micro-batch, rebuilt
STATE = 1.2e10 * 16 / 4                       # 4.8e10 bytes of training state per stage


def test_activation_parts_by_hand():
    kept, redone, working = physics.activation_parts_bytes(ON, 1.2e10, 4096.0, 1e6, "fp16", 4, 8, 2)
    assert (kept, redone, working) == pytest.approx((KEPT, REDONE, WORKING), rel=1e-12)
    assert KEPT == pytest.approx(1.03759765625e12) and REDONE == pytest.approx(6.103515625e10)
    # fp8 activations: half of each
    assert physics.activation_parts_bytes(ON, 1.2e10, 4096.0, 1e6, "fp8", 4, 8, 2) == pytest.approx(
        (KEPT / 2, REDONE / 2, WORKING / 2), rel=1e-12)
    assert physics.activation_parts_bytes(Assumptions(), 1.2e10, 4096.0, 1e6, "fp16", 4, 8, 2) == (0.0, 0.0, 0.0)


def test_recompute_share_by_hand():
    fit = ON.replace(activation_recompute="fit")
    # 640 GB node: state + kept = 1.0856e12 > V, so r = (4.8e10 + 1.0376e12 + 1.7408e10 - 6.4e11) / (KEPT - REDONE)
    #   = 4.6300565625e11 / 9.765625e11 = 0.4741178
    r = float(physics.recompute_share(fit, STATE, KEPT, REDONE, WORKING, 640e9))
    assert r == pytest.approx(4.6300565625e11 / 9.765625e11, rel=1e-9) == pytest.approx(0.4741178, abs=1e-7)
    held = physics.recomputed_activation_bytes(KEPT, REDONE, WORKING, r)
    assert STATE + held <= 640e9 and STATE + held == pytest.approx(640e9, rel=1e-9)     # exactly fills the node
    assert physics.recompute_compute_factor(r) == pytest.approx(1 + 0.4741178 / 3, abs=1e-7)
    # it fits without recomputation: r = 0; it fits nowhere: r = 1 (the memory check then refuses it)
    assert physics.recompute_share(fit, STATE, KEPT, REDONE, WORKING, 2e12) == 0.0
    assert physics.recompute_share(fit, STATE, KEPT, REDONE, WORKING, 1e11) == 1.0
    # full: every layer, 4.8e10 + 6.1035e10 + 1.7408e10 bytes; selective: none
    full = ON.replace(activation_recompute="full")
    assert physics.recompute_share(full, STATE, KEPT, REDONE, WORKING, 2e12) == 1.0
    assert physics.recomputed_activation_bytes(KEPT, REDONE, WORKING, 1.0) == pytest.approx(7.8443156e10)
    assert physics.recompute_share(ON, STATE, KEPT, REDONE, WORKING, 640e9) == 0.0
    assert physics.recomputed_activation_bytes(KEPT, REDONE, WORKING, 0.0) == KEPT      # no working set at r = 0


def _big_instance(constants):
    raw = {"model": {"params": 7e10}, "training": {"tokens": 1e10, "local_batch_tokens": 1_000_000},
           "fleet": {"hardware": "16xH100-SXM", "nodes": 8},
           "network": {"wan": {"up_mbps": 1000, "down_mbps": 1000, "rtt_ms": 0}},
           "assumptions": {"profile": "dtplan", "constants": {"activation_memory": True, **constants}}}
    return parse_instance(raw)


def test_fit_recomputes_the_fewest_layers_in_an_evaluation():
    # 70B at fp16 on 16 x 80 GB = 1,280 GB nodes, S = 2, M = 8, 1F1B: state 5.6e11 bytes; h = 0.03 sqrt(7e10);
    # 1F1B holds min(8, 2) = 2 micro-batches of 125,000 tokens; kept = 250,000 x 34 x 7e10 / (12 h 2)
    plan = parse_plan({"mode": "pp_group", "nodes": 8, "stages": 2, "micro_batches": 8, "precision": "fp16",
                       "pipeline_schedule": "1f1b"})
    h = 0.03 * math.sqrt(7e10)
    layers_h = 7e10 / (12 * h * 2)
    kept, redone, working = 250_000 * 34 * layers_h, 250_000 * 2 * layers_h, 125_000 * 34 * h
    state, v = 7e10 * 16 / 2, 1280e9
    r = (state + kept + working - v) / (kept - redone)
    assert r == pytest.approx(0.82905, abs=1e-5)
    fit = evaluate(_big_instance({"activation_recompute": "fit"}), plan)
    assert fit.feasible and fit.values["recompute_share"] == pytest.approx(r, rel=1e-9)
    assert fit.values["state_bytes_per_node"] == pytest.approx(v, rel=1e-9)
    # the stage's compute grows by r / 3 (a recomputed forward pass is 2 of the 6 P FLOP per token)
    plain = evaluate(_big_instance({"activation_memory": False}), plan)
    assert fit.values["step_compute_s"] == pytest.approx(plain.values["step_compute_s"] * (1 + r / 3), rel=1e-12)
    # selective (the reference's default; dtplan's is fit): the plan does not fit, named as a memory violation
    sel = evaluate(_big_instance({"activation_recompute": "selective"}), plan)
    assert not sel.feasible and any("memory" in m for m in sel.violations)
    assert sel.values["recompute_share"] == 0.0
    full = evaluate(_big_instance({"activation_recompute": "full"}), plan)
    assert full.values["recompute_share"] == 1.0
    assert full.values["state_bytes_per_node"] == pytest.approx(state + redone + working, rel=1e-12)


def test_an_unknown_recompute_choice_is_refused_naming_the_field():
    with pytest.raises(InputError) as info:
        _big_instance({"activation_recompute": "some"})
    assert "activation_recompute" in str(info.value)


def test_llama3_16_stage_plan_fits_with_recomputation():
    """Llama 3 405B's published plan (16 stages, 1F1B-interleaved, v = 4 as its reported file assumes, 32
    micro-batches of 8,192 tokens, 640 GB nodes) with activation memory on: with selective recomputation
    it needs 1,113 GB per node; `fit` recomputes r of its layers so that it fits.
    By hand: state 405e9 x 16 / 16 = 4.05e11; the first rank holds 16 (1 + 15 / 64) = 19.75 micro-batches;
    a stage's layers times h per token 405e9 / (12 x 16,384 x 16) = 128,746.03."""
    inst = load_instance(ROOT / "instances" / "published" / "llama3-405b-8192.json")
    plan = load_plan(ROOT / "instances" / "published" / "llama3-405b-8192.plan.json")
    data = inst.model_dump(exclude_none=True)
    constants = {"pipeline_schedule": "interleaved", "pipeline_chunks": 4.0, "activation_memory": True}
    layers_h = 405e9 / (12 * 16384 * 16)
    kept, redone, working = 19.75 * 8192 * 34 * layers_h, 19.75 * 8192 * 2 * layers_h, 8192 * 34 * 16384
    r = (4.05e11 + kept + working - 640e9) / (kept - redone)
    data["assumptions"] = {"profile": "dtplan", "constants": {**constants, "activation_recompute": "selective"}}
    sel = evaluate(parse_instance(data), plan)
    assert not sel.feasible and sel.values["state_bytes_per_node"] == pytest.approx(4.05e11 + kept, rel=1e-12)
    data["assumptions"]["constants"] = {**constants, "activation_recompute": "fit"}
    fit = evaluate(parse_instance(data), plan)
    assert fit.feasible and fit.values["recompute_share"] == pytest.approx(r, rel=1e-9) == pytest.approx(0.717, abs=1e-3)


@pytest.mark.parametrize("seed", range(8000, 8010))
@pytest.mark.parametrize("objective", ["min_time", "min_cost"])
@pytest.mark.parametrize("recompute", ["fit", "full"])
def test_bnb_matches_brute_force_with_recomputation(seed, objective, recompute):
    """Memory-tight cases (70B on 640 GB nodes, targets at most 1e22 FLOP so that plans reach them) with
    activation memory and recomputation on: the brute force scores every plan, memory check included.
    Under `fit` the optimum recomputes a share 0.32 to 0.88 of its layers in 14 of the 20."""
    s, space, streaming = _sharding_case(seed)
    s = s.replace(target_flop=min(s.target_flop, 1e22),
                  assumptions=s.assumptions.replace(search_pipeline_schedules=True, activation_memory=True,
                                                    activation_bytes_per_token_layer_h=34.0,
                                                    activation_recompute=recompute))
    check_against_brute_force(s, space, streaming, objective, rel=1e-12)


def test_full_recomputation_costs_a_forward_pass_in_every_mode():
    """`full` counts its compute with or without the memory model: a flat replica (INTELLECT-1's
    act_ckpt) computes 6 P B / (F u) x 4/3 per step; a pipeline stage's compute grows by the same 4/3."""
    from tests.test_physics import _instance
    flat = parse_plan({"mode": "flat", "nodes": 1, "precision": "fp16"})
    plain = evaluate(_instance(), flat).values["t_comp_s"]
    assert plain == pytest.approx(6e15 / (16 * 990e12 * 0.4496), rel=1e-12)        # 0.842500 s
    full = evaluate(_instance({"activation_recompute": "full"}), flat).values
    assert full["t_comp_s"] == pytest.approx(plain * 4 / 3, rel=1e-12) == pytest.approx(1.123333, abs=1e-6)
    hier = parse_plan({"mode": "hierarchical", "nodes": 8, "group_size": 4, "precision": "fp16"})
    assert evaluate(_instance({"activation_recompute": "full"}), hier).values["t_step_s"] == \
        pytest.approx(evaluate(_instance(), hier).values["t_step_s"] * 4 / 3, rel=1e-12)
    pipe = parse_plan({"mode": "pp_group", "nodes": 8, "stages": 4, "micro_batches": 8, "precision": "fp16"})
    base, redo = evaluate(_instance(), pipe).values, evaluate(_instance({"activation_recompute": "full"}), pipe).values
    assert redo["step_compute_s"] == pytest.approx(base["step_compute_s"] * 4 / 3, rel=1e-12)
    assert redo["recompute_share"] == 1.0
    assert redo["state_bytes_per_node"] == base["state_bytes_per_node"]     # no activation memory model: state only
    # `fit` without the memory model recomputes nothing
    assert evaluate(_instance({"activation_recompute": "fit"}), pipe).values["step_compute_s"] == base["step_compute_s"]
