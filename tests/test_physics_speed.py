"""The dtplan decision space's reduction of pipeline rows to the least pipeline step per (S, Ca)
wherever the overlap window does not matter (DecisionSpace._least_step; docs/physics.md "Speed"),
against the brute force of tests/test_bnb.py, which scores every schedule and micro-batch count."""

import dataclasses

import pytest

from planner.objectives import MIN_TIME
from planner.evaluate import setting_from_instance
from planner.space import DecisionSpace
from tests.test_bnb import check_against_brute_force
from tests.test_physics import _dtplan_case, _instance


def _schedule_case(seed: int):
    """dtplan terms at random (tests/test_physics._dtplan_case) with the schedule a decision and no
    activation memory: the reduction applies to every streaming and pipeline-over-WAN row."""
    s, space, streaming = _dtplan_case(seed)
    s = s.replace(assumptions=s.assumptions.replace(search_pipeline_schedules=True, activation_memory=False))
    return s, space, streaming


@pytest.mark.parametrize("seed", range(5200, 5216))
@pytest.mark.parametrize("objective", ["min_time", "min_cost"])
def test_least_step_rows_match_the_brute_force(seed, objective):
    """A pipeline plan is the optimum in 11 of the 32 (8 PP-group, 2 of them with a blocking sync, and 3
    pipelines over the WAN); 18 have no plan reaching the target."""
    check_against_brute_force(*_schedule_case(seed), objective, rel=1e-12)


def test_least_step_keeps_one_row_per_stage_count_where_the_window_does_not_matter():
    # dtplan profile, streaming allowed: every pp_group class streams, so one (schedule, M) per (S, Ca, Cr)
    # (with the reference's quality factors: the fitted model charges an overlapped outer step, so there
    # blocking rows are listed too, docs/quality.md)
    inst = _instance({"replica_penalty": "chinchilla"})
    s = setting_from_instance(inst)
    space = DecisionSpace.from_instance(inst, s).for_objective(s, MIN_TIME)
    c = space.classes(s, "pp_group", "fp16")
    rows = c.rows
    per = {(int(a), float(b), float(cr)) for a, b, cr in zip(rows.stages, rows.activation_compression, rows.compression)}
    assert len(per) == c.size and rows.streaming.all()
    # blocking syncs under dp_overlap keep the rows of the (step, window) front of each (S, Ca): the window
    # c = t_comp / (S M) matters there (DecisionSpace._window_front, tests/test_window_front.py); the
    # space's size still counts every (S, Ca, Cr, M)
    blocking = dataclasses.replace(space, streaming=(False,), streaming_off_allowed=True)
    full = blocking.classes(s, "pp_group", "fp16")
    assert full.size > c.size and not full.rows.streaming.any()
    shapes = {}
    for a, b, cr, m in zip(full.rows.stages, full.rows.activation_compression, full.rows.compression,
                           full.rows.micro_batches):
        shapes.setdefault((int(a), float(b), float(cr)), set()).add(int(m))
    assert max(len(ms) for ms in shapes.values()) > 1
    assert int(full.listed.sum()) == len(shapes) * space.max_micro_batches


@pytest.mark.parametrize("seed", [5200, 5201, 5252, 5269, 5285])
@pytest.mark.parametrize("objective", ["min_time", "min_cost"])
def test_streaming_rows_that_read_the_fragment_window_are_all_kept(seed, objective):
    """With fragments whose window includes their backward pass (fragment_window.py) a streaming outer
    step reads the last micro-batch's compute, so the space keeps every (schedule, M) there too. Seeds
    5252, 5269 and 5285 (min_time) answer a slower plan if the streaming rows are cut to the least step
    (found by comparing the two spaces over seeds 5200-5285)."""
    s, space, streaming = _schedule_case(seed)
    s = s.replace(assumptions=s.assumptions.replace(streaming_fragments=4.0, streaming_overlap_steps=1.0,
                                                    fragment_backward_overlap=True))
    check_against_brute_force(s, space, streaming, objective, rel=1e-12)
