"""The fragment window term (planner/cost/fragment_window.py, switch `fragment_backward_overlap`):
a streaming fragment's sync also hides behind the backward pass that produces it. Numbers by hand."""

import numpy as np
import pytest

from planner.cost import fragment_window, physics
from planner.cost.assumptions import Assumptions
from planner.evaluate import evaluate
from planner.schema.errors import InputError
from planner.schema.instance import parse_instance
from planner.schema.plan import parse_plan

OFF = Assumptions()
FRAG = OFF.replace(streaming_fragments=20.0, streaming_overlap_steps=1.0)


def test_window_is_the_backward_share_of_the_last_micro_batch():
    assert fragment_window.fragment_backward_window_s(OFF, 1.5) == 0.0            # switch off: no window
    on = OFF.replace(fragment_backward_overlap=True)
    assert fragment_window.fragment_backward_window_s(on, 1.5) == pytest.approx(1.0)   # 2/3 x 1.5 s
    assert fragment_window.fragment_backward_window_s(on.replace(backward_share=0.5), 3.0) == pytest.approx(1.5)


def test_outer_step_with_the_window_by_hand():
    # H = 100, t_step = 0.5 s, 20 fragments of 0.9 s each, tau = 1:
    # without the window each stalls 0.9 - 0.5 = 0.4 s: 50 + 20 x 0.4 = 58 s;
    # with w = 2/3 x 0.5 = 1/3 s each stalls 0.9 - 0.5 - 1/3 = 1/15 s: 50 + 20/15 = 51.333 s;
    # a fragment of 0.8 s fits (0.8 < 0.5 + 1/3): 50 s.
    assert physics.streaming_outer_s(FRAG, 100, 0.5, 18.0, 0.9) == pytest.approx(58.0)
    assert physics.streaming_outer_s(FRAG, 100, 0.5, 18.0, 0.9, 1.0 / 3.0) == pytest.approx(50.0 + 20.0 / 15.0)
    assert physics.streaming_outer_s(FRAG, 100, 0.5, 16.0, 0.8, 1.0 / 3.0) == pytest.approx(50.0)
    # without fragments (p = 1, tau = 0) the window changes nothing: the reference's max(H t_step, t_sync)
    assert physics.streaming_outer_s(OFF, 100, 1.0, 150.0, 150.0, 0.5) == pytest.approx(150.0)


def test_the_window_never_exceeds_the_interval_between_fragments():
    # H = 100, p = 100 fragments (one per inner step), tau = 1, t_step = 0.5 s, w = 1/3 s: tau t + w = 0.833 s
    # is longer than the 0.5 s between two fragments, and the fragments share one link. A fragment of
    # 0.75 s: 100 of them need 75 s of link time per outer step, so the outer step is 75 s (stall 0.75 - 0.5
    # per fragment), not the 50 s an uncapped window would give. A fragment of 0.4 s fits (50 s); without the
    # backward window the cap changes nothing (0.75 - 0.5 per fragment as well).
    many = OFF.replace(streaming_fragments=100.0, streaming_overlap_steps=1.0)
    assert physics.streaming_outer_s(many, 100, 0.5, 75.0, 0.75, 1.0 / 3.0) == pytest.approx(75.0)
    assert physics.streaming_outer_s(many, 100, 0.5, 40.0, 0.4, 1.0 / 3.0) == pytest.approx(50.0)
    assert physics.streaming_outer_s(many, 100, 0.5, 75.0, 0.75) == pytest.approx(75.0)
    # 20 fragments (5 steps apart) are far from the cap: the worked example above is unchanged
    assert physics.streaming_outer_s(FRAG, 100, 0.5, 18.0, 0.9, 1.0 / 3.0) == pytest.approx(50.0 + 20.0 / 15.0)


def _instance(constants):
    """At the table's u (the window is checked by hand against it; the compute model: test_compute_model.py)."""
    raw = {"model": {"params": 1e9}, "training": {"tokens": 1e11, "local_batch_tokens": 1_000_000},
           "fleet": {"hardware": "16xH100-SXM", "nodes": 8},
           "network": {"wan": {"up_mbps": 1000, "down_mbps": 1000, "rtt_ms": 0}},
           "assumptions": {"profile": "dtplan", "constants": {"mfu_from_compute_model": False, **constants}}}
    return parse_instance(raw)


def test_the_window_in_an_evaluation_by_hand():
    # dtplan, 8 nodes of 16x H100 at u = 0.4496: t = 6e15 / (16 x 990e12 x 0.4496) = 0.8425 s per step; fp16 payload
    # 16e9 bits in a ring over 8 with concurrent links: 2 x 7/8 x 16e9 = 28e9 bits at 1 Gb/s = 28 s, relay factor
    # f = 1 + 0.02 log2 8 = 1.06; 5 fragments of 28/5 x 1.06 = 5.936 s, tau = 1, H = 10:
    # outer = 10 t + 5 max(0, 5.936 - t - 2/3 t) with the window, 10 t + 5 max(0, 5.936 - t) without.
    t = 6e15 / (16 * 990e12 * 0.4496)
    frag = 28 / 5 * 1.06
    plan = parse_plan({"mode": "flat", "nodes": 8, "precision": "fp16", "inner_steps": 10, "streaming": True})
    base = {"streaming_fragments": 5, "streaming_overlap_steps": 1}
    without = evaluate(_instance(base), plan).values["outer_time_s"]
    with_window = evaluate(_instance({**base, "fragment_backward_overlap": True}), plan).values["outer_time_s"]
    assert without == pytest.approx(10 * t + 5 * (frag - t), rel=1e-12)
    assert with_window == pytest.approx(10 * t + 5 * (frag - t - 2 / 3 * t), rel=1e-12)
    assert without - with_window == pytest.approx(5 * 2 / 3 * t, rel=1e-12)


def test_the_switch_must_be_true_or_false():
    with pytest.raises(InputError, match="fragment_backward_overlap"):
        _instance({"fragment_backward_overlap": 3})


# -- the exact search's facts with the window on ---------------------------------------------------------------

from hypothesis import given, settings, strategies as st  # noqa: E402

from tests.test_bnb import check_against_brute_force  # noqa: E402
from tests.test_bound_properties import cases  # noqa: E402
from tests import test_physics as dtplan_tests  # noqa: E402  (a module: its tests are not collected twice)


@settings(max_examples=40, deadline=None)
@given(case=cases(), terms=dtplan_tests.DTPLAN_TERMS, n=st.integers(2, 100000), h=st.integers(1, 10000), r=st.integers(1, 1000))
def test_q_falls_with_h_and_r_and_rises_with_n_with_the_window(case, terms, n, h, r):
    """q = outer time / (H R) per inner step: the window w depends on neither H nor n, so the branch and
    bound's facts hold with it on: tests/test_physics.py's check (every other dtplan term drawn at random)
    with fragment_backward_overlap on."""
    dtplan_tests.test_dtplan_q_falls_with_h_and_r_and_rises_with_n.hypothesis.inner_test(
        case, {**terms, "fragment_backward_overlap": True}, n, h, r)


@pytest.mark.parametrize("seed", range(5000, 5006))
def test_bnb_matches_brute_force_with_the_window(seed):
    """The branch and bound against the brute force that scores every plan, with fragments forced on
    (p = 8, tau = 1) and the window on, over the same random cases as tests/test_physics.py."""
    setting, space, streaming = dtplan_tests._dtplan_case(seed)
    a = setting.assumptions.replace(streaming_fragments=8.0, streaming_overlap_steps=1.0,
                                    fragment_backward_overlap=True)
    check_against_brute_force(setting.replace(assumptions=a), space, streaming, "min_time", rel=1e-12)
