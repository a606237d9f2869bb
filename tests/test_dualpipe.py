"""DualPipe as the fifth pipeline schedule (issue 25; docs/physics.md section 3).

Every figure here is worked from the comparison table of DualPipe's README (deepseek-ai/DualPipe, commit
3da1bbe, its comparison of schedules): bubble 1F1B (PP - 1)(F + B), ZB1P
(PP - 1)(F + B - 2 W), DualPipe (PP / 2 - 1)(F&B + B - 3 W); parameters per device 1x, 1x, 2x; activations
per device PP, PP, PP + 1 micro-batches. In the profile a slot is one micro-batch's forward and full
backward on one stage, F + B = 1, with F = 1/3, B = 2/3 and W = 1/3 (the weight gradient, half the backward)
and F&B = F + B. Its step() asserts an even number of ranks, an even number of micro-batches and at least
two per rank (dualpipe/dualpipe.py).
"""

import dataclasses
import math

import numpy as np
import pytest

from planner.cost import physics
from planner.cost.assumptions import Assumptions
from planner.cost.modes import throughput
from planner.cost.setting import PlanBatch
from planner.evaluate import evaluate, setting_from_instance
from planner.objectives import objective_named
from planner.schema.plan import parse_plan
from planner.solve import optimise
from planner.space import DecisionSpace, schedules_searched
from tests.test_bnb import check_against_brute_force
from tests.test_physics import _dtplan_case, _instance, _sharding_case

OFF = Assumptions()
DUALPIPE = OFF.replace(pipeline_schedule="dualpipe")
F, B, W = 1 / 3, 2 / 3, 1 / 3          # a slot's forward, full backward and weight gradient (F + B = 1)


def _plan(**fields):
    return parse_plan({"mode": "pp_group", "nodes": 8, "stages": 4, "micro_batches": 8, "precision": "fp16",
                       "activation_compression": 1, **fields})


# -- the bubble ---------------------------------------------------------------------------------------------


def test_the_readme_bubbles_by_hand():
    """S = 4: DualPipe (4 / 2 - 1)(F + B + B - 3 W) = 1 x (1 + 2/3 - 1) = 2/3 of a slot, where 1F1B's row
    gives (4 - 1)(F + B) = 3 (the profile's 1F1B, M + S - 1) and ZB1P's (4 - 1)(1 - 2/3) = 1. S = 16 (DeepSeek-V3's
    PP16): 7 x 2/3 = 14/3. S = 2: none."""
    for s, want in ((4, 2 / 3), (16, 14 / 3), (2, 0.0), (8, 2.0)):
        readme = (s / 2 - 1) * ((F + B) + B - 3 * W)
        assert readme == pytest.approx(want)
        assert physics.dualpipe_bubble_slots(OFF, s) == pytest.approx(want)
        assert physics.pipeline_ticks(DUALPIPE, s, 4 * s) == (pytest.approx(4 * s + want), 1.0)
    assert physics.pipeline_ticks(OFF.replace(pipeline_schedule="1f1b"), 4, 8)[0] == 8 + (4 - 1) * (F + B)
    # the split comes from the profile's backward_share: at 1/2, F = B = 1/2, W = 1/4: (1 + 1/2 - 3/4) = 3/4
    assert physics.dualpipe_bubble_slots(OFF.replace(backward_share=0.5), 4) == pytest.approx(0.75)


def test_the_step_of_a_dualpipe_plan_against_zero_bubble():
    """S = 4, M = 8 (M >= 2 S - 1: zero-bubble has no bubble): the same slot c + (x + lat) f, 8 + 2/3 slots
    against 8, so the step is 13/12 of zero-bubble's and the bubble 2/3 of 8 + 2/3 slots."""
    inst = _instance({"per_stage_payload": False})
    dp = evaluate(inst, _plan(pipeline_schedule="dualpipe")).values
    zb = evaluate(inst, _plan(pipeline_schedule="zero_bubble")).values
    assert dp["t_step_s"] == pytest.approx(zb["t_step_s"] * (8 + 2 / 3) / 8, rel=1e-12)
    assert dp["bubble_fraction"] == pytest.approx((2 / 3) / (8 + 2 / 3), rel=1e-12)
    assert dp["step_bubble_s"] == pytest.approx(2 / 3 * dp["step_compute_s"] / 8, rel=1e-12)
    assert dp["step_link_s"] == pytest.approx(zb["step_link_s"] * (8 + 2 / 3) / 8, rel=1e-12)


# -- the memory ---------------------------------------------------------------------------------------------


def test_the_second_copy_and_the_activations_by_hand():
    """1e9 parameters at fp16 on 4 stages: P beta / S = 1e9 x 16 / 4 = 4 GB, and the copy of the stage's
    weights and gradients (2 + 2 of beta's 16 bytes; the other 12 are the optimizer's fp32 master weights and
    moments, ZeRO's K = 12) 1e9 / 4 x 4 = 1 GB. With activation memory: S + 1 = 5 micro-batches of
    1e6 / 8 tokens at 34 P_act / (12 h S) bytes per token (h = 0.03 sqrt(P)), against 1F1B's 4."""
    assert physics.dualpipe_copy_bytes_per_param(OFF, "fp16") == 16 - 12
    assert (physics.dualpipe_copy_bytes_per_param(OFF, "fp8"), physics.dualpipe_copy_bytes_per_param(OFF, "fp4")) == (2, 1)
    got = evaluate(_instance(), _plan(pipeline_schedule="dualpipe")).values["state_bytes_per_node"]
    assert got == pytest.approx(1e9 * 16 / 4 + 1e9 / 4 * 4, rel=1e-12)
    assert evaluate(_instance(), _plan(pipeline_schedule="zero_bubble")).values["state_bytes_per_node"] == \
        pytest.approx(4e9, rel=1e-12)
    a = OFF.replace(activation_memory=True)
    assert list(physics.in_flight_micro_batches(a, 4, 8, [2, 4, 5])) == [4.0, 8.0, 5.0]    # 1F1B S, ZB-H2 2 S, S + 1
    h = 0.03 * math.sqrt(1e9)
    want = 1e9 * 16 / 4 + 1e9 / 4 * 4 + 5 * 1e6 / 8 * 34 * 1e9 / (12 * h * 4)
    on = evaluate(_instance({"activation_memory": True}), _plan(pipeline_schedule="dualpipe")).values
    assert on["state_bytes_per_node"] == pytest.approx(want, rel=1e-12)


# -- the condition ------------------------------------------------------------------------------------------


def test_dualpipe_runs_even_stages_with_an_even_count_of_at_least_two_micro_batches_per_stage():
    stages = np.array([4, 4, 4, 4, 3, 2, 2, 16, 16])
    micro = np.array([8, 10, 6, 9, 8, 4, 2, 64, 30])
    assert list(physics.dualpipe_allowed(stages, micro)) == [True, True, False, False, False, True, False, True, False]
    assert list(physics.schedule_allowed(OFF, 3, 5, [1, 2, 3, 4, 5])) == [True, True, True, True, False]
    assert physics.dualpipe_problem(4, 8) is None


@pytest.mark.parametrize("fields, reason", [
    ({"stages": 3, "nodes": 9}, "dualpipe needs an even number of stages (it pairs stage i with stage S - 1 - i), got 3"),
    ({"micro_batches": 6}, "at least 2 per stage (8 for 4 stages), got 6"),
    ({"micro_batches": 9}, "dualpipe needs an even number of micro-batches"),
])
def test_a_plan_dualpipe_cannot_run_is_refused_with_its_reason(fields, reason):
    e = evaluate(_instance(), _plan(pipeline_schedule="dualpipe", **fields))
    assert not e.feasible
    (message,) = [m for m in e.violations if m.startswith("structure: ")]
    assert message.startswith("structure: plan.pipeline_schedule: dualpipe needs") and reason in message
    assert math.isinf(e.values["t_step_s"]) and e.values["bubble_fraction"] == 1.0
    # the profile's schedule (a plan naming none) is named as such
    e = evaluate(_instance({"pipeline_schedule": "dualpipe"}), _plan(**fields))
    assert any(m.startswith("structure: the profile's pipeline_schedule: dualpipe needs") for m in e.violations)


def test_the_space_lists_dualpipe_only_where_it_runs():
    s, space, _ = _sharding_case(6)
    s = s.replace(assumptions=s.assumptions.replace(search_pipeline_schedules=True, activation_memory=True))
    space = dataclasses.replace(space, max_micro_batches=8, all_micro_batches=True)
    assert schedules_searched(s.assumptions) == (2, 3, 4, 5)
    rows, _ = space._pipeline_rows(s, "pp_group", "fp16")
    dp = rows.schedule == physics.DUALPIPE
    got = sorted(set(zip(rows.stages[dp].tolist(), rows.micro_batches[dp].tolist())))
    assert got == [(2, 4), (2, 6), (2, 8), (4, 8)]       # S even, M even, M >= 2 S, within S <= 4, M <= 8
    # the profile's DualPipe, not searched: odd S have no row, even S keep an M that runs
    fixed = s.assumptions.replace(search_pipeline_schedules=False, pipeline_schedule="dualpipe", activation_memory=False,
                                  dp_overlap=False)
    rows, _ = dataclasses.replace(space, all_micro_batches=False)._pipeline_rows(s.replace(assumptions=fixed),
                                                                                 "pp_group", "fp16")
    assert sorted(set(rows.stages.tolist())) == [2, 4]
    assert all(physics.dualpipe_allowed(rows.stages, rows.micro_batches))


# -- the exact search ---------------------------------------------------------------------------------------


def _dualpipe_case(seed: int, maker=_sharding_case, **terms):
    """A brute-force case with room for DualPipe (M up to 8, so S = 2 and 4 can run it) and the schedule a
    decision with activation memory (where DualPipe's S + 1 micro-batches trade against zero-bubble's 2 S)."""
    s, space, streaming = maker(seed)
    s = s.replace(assumptions=s.assumptions.replace(**{"search_pipeline_schedules": True, "activation_memory": True,
                                                       **terms}))
    space = dataclasses.replace(space, max_micro_batches=8, max_stages=min(space.max_stages, 6),
                                max_nodes=min(space.max_nodes, 12), max_inner_steps=min(space.max_inner_steps, 12))
    return s, space, streaming


DUALPIPE_WINS = (6, 7, 35)     # _sharding_case seeds whose optimum (min_time) is a DualPipe plan


@pytest.mark.parametrize("seed", [*DUALPIPE_WINS, 3, 12, 13])
@pytest.mark.parametrize("objective", ["min_time", "min_cost"])
def test_bnb_matches_brute_force_with_dualpipe(seed, objective):
    """The brute force (tests/test_bnb.py) scores every (S, M, schedule) the space declares, DualPipe's
    impossible ones refused by the evaluator (structure), against the branch and bound on the space's classes."""
    check_against_brute_force(*_dualpipe_case(seed), objective, rel=1e-12)


@pytest.mark.parametrize("seed", [6, 7, 35, 5000, 5003])
def test_bnb_matches_brute_force_with_dualpipe_without_activation_memory(seed):
    """Without activation memory the space keeps per (S, Ca, M), or per (S, Ca), only the schedule of least
    step (ties to the first listed): exact with DualPipe too, which is never faster than zero-bubble where it
    runs (M >= 2 S: zero-bubble has no bubble) and holds more (its second copy)."""
    maker = _sharding_case if seed < 1000 else _dtplan_case
    check_against_brute_force(*_dualpipe_case(seed, maker, activation_memory=False), "min_time", rel=1e-12)


@pytest.mark.parametrize("seed", DUALPIPE_WINS)
def test_dualpipe_is_the_optimum_of_these_cases(seed):
    """So that the comparison above covers a DualPipe optimum: activation memory leaves zero-bubble's 2 S micro-batches
    no room, and DualPipe's bubble (S - 2) / 3 is below 1F1B's S - 1."""
    found, _, _ = optimise(*_dualpipe_case(seed)[:2], objective_named("min_time"))
    assert int(found[0].schedule[0]) == physics.DUALPIPE


@pytest.mark.parametrize("seed", [5000, 5003, 5007, 5138])
def test_bnb_matches_brute_force_with_the_profiles_dualpipe(seed):
    """The profile's schedule DualPipe, not searched (plans name none): the space keeps, per S, an M it runs."""
    check_against_brute_force(*_dualpipe_case(seed, _dtplan_case, search_pipeline_schedules=False,
                                              pipeline_schedule="dualpipe", activation_memory=False),
                              "min_time", rel=1e-12)


def test_the_mip_encodes_dualpipe_classes_like_the_others():
    """The MIP backends take the space's classes (planner/mip/tables.py), DualPipe's among them: on a case with
    the schedule decision and activation memory as the only dtplan terms (others, such as a blocking sync's
    overlap, do not factor as the MIP needs and are refused naming --solver) and streaming syncs, whose
    optimum is DualPipe, HiGHS' answer is the branch and bound's and the certification changes nothing."""
    s, space, _ = _dualpipe_case(6)
    s = s.replace(assumptions=Assumptions(straggler=s.assumptions.straggler, error_feedback=s.assumptions.error_feedback,
                                          search_pipeline_schedules=True, activation_memory=True))
    space = dataclasses.replace(space, streaming=(True,))
    objective = objective_named("min_time")
    (batch, value), _, _ = optimise(s, space, objective)
    assert int(batch.schedule[0]) == physics.DUALPIPE
    reports = []
    (mip_batch, mip_value), _, _ = optimise(s, space, objective, solver="highs", reports=reports)
    assert mip_value == pytest.approx(value, rel=1e-12) and int(mip_batch.schedule[0]) == physics.DUALPIPE
    (report,) = reports
    assert report.status == "optimal" and not report.certified_changed_plan
