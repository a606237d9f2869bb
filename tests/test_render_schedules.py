"""The per-step table names each pipeline schedule's own bubble and links formula (planner/present/render.py),
and the value beside it is that formula worked by hand.

c = step_compute_s / M (one micro-batch's compute on one stage); slots per schedule as docs/physics.md
section 3 gives them: GPipe and 1F1B M + S - 1; interleaved max(M + (S - 1) / v, S) with v transfers per slot;
zero-bubble M + max(0, 2 S - 1 - M) / 3; DualPipe M + (S / 2 - 1)(F&B + B - 3 W) = M + (S - 2) / 3 with the
profile's thirds (DualPipe README's comparison table, F = W = 1/3, B = 2/3).
"""

import pytest

from planner.evaluate import evaluate
from planner.present.render import step_table
from planner.schema.plan import parse_plan
from tests.test_physics import _instance

S = 4


def _row(table, label):
    return next(r for r in table.rows if r[0] == label)


def _number(cell: str) -> float:
    return float(cell.replace(",", ""))


@pytest.mark.parametrize("schedule, m, slots, label, links_label", [
    ("gpipe", 3, 3 + S - 1, "(S - 1) c", "(M + S - 1)(x + lat_pp)"),
    ("1f1b", 3, 3 + S - 1, "(S - 1) c", "(M + S - 1)(x + lat_pp)"),
    ("zero_bubble", 3, 3 + (2 * S - 1 - 3) / 3, "max(0, 2 S - 1 - M) c / 3",
     "(M + max(0, 2 S - 1 - M) / 3)(x + lat_pp)"),
    ("zero_bubble", 8, 8, "max(0, 2 S - 1 - M) c / 3", "(M + max(0, 2 S - 1 - M) / 3)(x + lat_pp)"),
    ("dualpipe", 8, 8 + (S - 2) / 3, "(S / 2 - 1)(F&B + B - 3 W) c", "(M + (S / 2 - 1)(F&B + B - 3 W))(x + lat_pp)"),
])
def test_the_bubble_row_names_the_plans_schedule_and_its_value_is_the_formula(schedule, m, slots, label, links_label):
    plan = parse_plan({"mode": "pp_group", "nodes": 8, "stages": S, "micro_batches": m, "precision": "fp16",
                       "activation_compression": 1, "pipeline_schedule": schedule})
    e = evaluate(_instance({"per_stage_payload": False}), plan)
    table = step_table(e)
    bubble, links = _row(table, "pipeline bubble"), _row(table, "pipeline links")
    assert bubble[2] == label and links[2] == links_label
    c = e.values["step_compute_s"] / m
    assert e.values["step_bubble_s"] == pytest.approx((slots - m) * c, rel=1e-12)
    assert _number(bubble[1]) == pytest.approx((slots - m) * c, abs=5e-4)
    # the links: slots transfers of (x + lat_pp) each, so their ratio to GPipe's M + S - 1 at the same M
    gpipe = evaluate(_instance({"per_stage_payload": False}),
                     parse_plan({"mode": "pp_group", "nodes": 8, "stages": S, "micro_batches": m, "precision": "fp16",
                                 "activation_compression": 1, "pipeline_schedule": "gpipe"}))
    assert e.values["step_link_s"] == pytest.approx(gpipe.values["step_link_s"] * slots / (m + S - 1), rel=1e-12)


def test_the_profiles_schedule_is_named_where_the_plan_gives_none():
    plan = parse_plan({"mode": "pp_group", "nodes": 8, "stages": S, "micro_batches": 3, "precision": "fp16",
                       "activation_compression": 1})
    e = evaluate(_instance({"pipeline_schedule": "zero_bubble", "per_stage_payload": False}), plan)
    assert _row(step_table(e), "pipeline bubble")[2] == "max(0, 2 S - 1 - M) c / 3"
    e = evaluate(_instance({"per_stage_payload": False}), plan)       # the profile's gpipe
    assert _row(step_table(e), "pipeline bubble")[2] == "(S - 1) c"


def test_interleaved_with_two_chunks_per_rank():
    """v = 2, S = 4, M = 3: max(3 + 3 / 2, 4) = 4.5 slots, bubble 1.5 c, links 2 x 4.5 transfers (GPipe: 6)."""
    terms = {"per_stage_payload": False, "pipeline_chunks": 2}
    fields = {"mode": "pp_group", "nodes": 8, "stages": S, "micro_batches": 3, "precision": "fp16",
              "activation_compression": 1}
    e = evaluate(_instance(terms), parse_plan({**fields, "pipeline_schedule": "interleaved"}))
    gpipe = evaluate(_instance(terms), parse_plan({**fields, "pipeline_schedule": "gpipe"}))
    table = step_table(e)
    assert _row(table, "pipeline bubble")[2] == "(max(M + (S - 1) / v, S) - M) c"
    assert _row(table, "pipeline links")[2] == "v max(M + (S - 1) / v, S)(x + lat_pp)"
    c = e.values["step_compute_s"] / 3
    assert e.values["step_bubble_s"] == pytest.approx(1.5 * c, rel=1e-12)
    assert e.values["step_link_s"] == pytest.approx(gpipe.values["step_link_s"] * 9 / 6, rel=1e-12)
