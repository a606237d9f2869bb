"""The exchange through object storage (planner/cost/exchange.py, docs/physics.md section 4), against
numbers worked by hand, its bound facts, and Covenant-72B's round from the run's published setting."""

import json
import math
import tomllib
from pathlib import Path

import numpy as np
import pytest

from planner.cost import exchange, physics
from planner.cost.assumptions import Assumptions, apply_overrides
from planner.evaluate import evaluate
from planner.schema.errors import InputError
from planner.schema.instance import load_instance, parse_instance
from planner.schema.plan import load_plan
from tests.test_bnb import check_against_brute_force
from tests.test_physics import _dtplan_case, _instance

ROOT = Path(__file__).resolve().parents[1]
PUBLISHED = ROOT / "instances" / "published"
STORE = Assumptions(sync_pattern="object_store")

# Worked example of docs/physics.md: v = 1 Gbit among G = 5 peers, 100 Mb/s up, 400 Mb/s down, lat 0.1 s.
V, G, UP, DOWN, LAT = 1e9, 5, 100e6, 400e6, 0.1


@pytest.mark.parametrize("changes, expected_s", [
    ({}, 10.0 + 4 * 2.5 + 0.1),                                     # upload 10 s, then 4 downloads of 2.5 s
    ({"exchange_overlap_up_down": True}, max(10.0, 10.0) + 0.1),    # both at once: the longer
    ({"exchange_gather_peers": 2.0}, 10.0 + 2 * 2.5 + 0.1),         # a round's peer list of 2
    ({"exchange_gather_peers": 9.0}, 10.0 + 4 * 2.5 + 0.1),         # a list longer than the 4 others: all 4
    ({"exchange_store_gbps": 0.05}, 1e9 / 50e6 + 4 * 1e9 / 50e6 + 0.1),      # the store caps both links at 50 Mb/s
    ({"exchange_request_latency_s": 0.5, "exchange_parallel_requests": 3.0},  # 1 upload request, ceil(4 / 3) = 2 waves
     10.0 + 0.5 + 4 * 2.5 + 2 * 0.5 + 0.1),
    ({"exchange_request_latency_s": 0.5}, 10.0 + 0.5 + 4 * 2.5 + 0.5 + 0.1),  # all 4 downloads in one wave
])
def test_object_store_round_by_hand(changes, expected_s):
    a = STORE.replace(**changes)
    assert float(physics.sync_base_s(a, V, G, UP, DOWN, LAT)) == pytest.approx(expected_s, rel=1e-12)


def test_a_single_peer_fetches_nothing_and_pays_its_upload():
    assert float(exchange.fetched_payloads(STORE, 1)) == 0.0
    assert float(physics.sync_base_s(STORE.replace(exchange_request_latency_s=0.5), V, 1, UP, DOWN, LAT)) == \
        pytest.approx(10.0 + 0.5 + 0.1, rel=1e-12)


def test_the_other_patterns_are_unchanged_by_the_exchange_fields():
    """The exchange constants act only with sync_pattern object_store (all-reduce: 2 (G - 1) / G v each way)."""
    knobs = dict(exchange_gather_peers=2.0, exchange_store_gbps=0.01, exchange_request_latency_s=3.0,
                 exchange_parallel_requests=1.0, exchange_overlap_up_down=True)
    for a in (Assumptions(), Assumptions(concurrent_up_down=True), Assumptions(sync_pattern="all_gather")):
        assert float(physics.sync_base_s(a.replace(**knobs), V, G, UP, DOWN, LAT)) == \
            float(physics.sync_base_s(a, V, G, UP, DOWN, LAT))


@pytest.mark.parametrize("changes", [{}, {"exchange_gather_peers": 20.0}, {"exchange_overlap_up_down": True},
                                     {"exchange_store_gbps": 0.2, "exchange_request_latency_s": 0.3,
                                      "exchange_parallel_requests": 4.0}])
def test_the_round_never_falls_as_peers_join(changes):
    """The planner's bound needs the sync non-decreasing in the parties G (physics.sync_base_s)."""
    a = STORE.replace(**changes)
    t = physics.sync_base_s(a, V, np.arange(1, 200), UP, DOWN, LAT)
    assert np.all(np.diff(t) >= 0)


@pytest.mark.parametrize("seed", [5000, 5003, 5007])
def test_bnb_matches_brute_force_with_the_object_store(seed):
    setting, space, streaming = _dtplan_case(seed)
    terms = dict(sync_pattern="object_store", exchange_gather_peers=3.0, exchange_request_latency_s=0.2)
    setting = setting.replace(assumptions=setting.assumptions.replace(**terms))
    check_against_brute_force(setting, space, streaming, "min_time", rel=1e-12)


def test_instances_set_the_exchange_and_bad_values_name_the_field():
    a = _instance({"sync_pattern": "object_store", "exchange_gather_peers": 20}).resolved_assumptions()
    assert (a.sync_pattern, a.exchange_gather_peers) == ("object_store", 20.0)
    with pytest.raises(InputError) as info:
        _instance({"sync_pattern": "object_store", "exchange_gather_peers": -1})
    assert "assumptions.constants.exchange_gather_peers" in str(info.value)
    with pytest.raises(InputError) as info:
        _instance({"sync_pattern": "s3"})
    assert "assumptions.constants.sync_pattern" in str(info.value) and "object_store" in str(info.value)


# -- Covenant-72B ----------------------------------------------------------------------------------------------


def _covenant_dtplan():
    """The instance under dtplan with its reported file's [dtplan] constants, as scripts/validate_published.py."""
    reported = tomllib.loads((PUBLISHED / "covenant-72b.reported.toml").read_text())
    raw = json.loads((PUBLISHED / "covenant-72b.json").read_text())
    raw["assumptions"] = {**raw["assumptions"], "profile": "dtplan", "constants": reported["dtplan"]["constants"]}
    return parse_instance(raw), load_plan(PUBLISHED / "covenant-72b.plan.json"), reported


def test_covenant_round_from_the_published_setting_by_hand():
    """SparseLoCo's payload (one value in 64, 2-bit values, 12-bit indices) uploaded once at 110 Mb/s, then the
    round's 20 payloads, the peer's own among them, downloaded at 500 Mb/s, + 0.1 s RTT; the relay straggler
    factor of 20 peers on top."""
    instance, plan, reported = _covenant_dtplan()
    v = evaluate(instance, plan).values
    payload = 72e9 / 64 * (2 + 12)
    assert v["payload_bits"] == pytest.approx(payload, rel=1e-12) == pytest.approx(1.575e10)
    assert 32 / (payload / 72e9) == pytest.approx(146.3, abs=0.05)          # the report's "more than 146x"
    base = payload / 110e6 + 20 * payload / 500e6 + 0.1
    assert base == pytest.approx(143.18 + 630.0 + 0.1, abs=0.01)
    assert v["t_sync_base_s"] == pytest.approx(base, rel=1e-12)
    assert v["t_sync_s"] == pytest.approx(base * (1 + 0.02 * math.log2(20)), rel=1e-12)
    # the run does not overlap its exchange with compute: the round is H t_step + the whole sync
    assert v["outer_time_s"] == pytest.approx(30 * v["t_step_s"] + v["t_sync_s"], rel=1e-12)


def test_the_gather_reads_its_own_payload_when_listed():
    """Templar's gather downloads every uid on the round's list, the peer's own included (exchange_fetch_own):
    k = min(S, G) instead of min(S, G - 1); every other pattern ignores the flag."""
    own = STORE.replace(exchange_fetch_own=True)
    assert [float(exchange.fetched_payloads(own, g)) for g in (1, 5, 20, 30)] == [1.0, 5.0, 20.0, 30.0]
    listed = own.replace(exchange_gather_peers=20.0)
    assert [float(exchange.fetched_payloads(listed, g)) for g in (5, 20, 30)] == [5.0, 20.0, 20.0]
    assert float(physics.sync_base_s(own, V, G, UP, DOWN, LAT)) == pytest.approx(10.0 + 5 * 2.5 + 0.1, rel=1e-12)
    assert np.all(np.diff(physics.sync_base_s(listed, V, np.arange(1, 60), UP, DOWN, LAT)) >= 0)
    assert float(physics.sync_base_s(Assumptions(exchange_fetch_own=True), V, G, UP, DOWN, LAT)) == \
        float(physics.sync_base_s(Assumptions(), V, G, UP, DOWN, LAT))


def _store_round_s(params, peers, up_mbps, down_mbps, rtt_s=0.1):
    """The covenant preset's round for a model of `params` among `peers`: upload, then `peers` downloads, times
    the relay straggler factor 1 + 0.02 log2(G) (the profile's, docs/physics.md section 3)."""
    v = params / 64 * 14
    return (v / (up_mbps * 1e6) + peers * v / (down_mbps * 1e6) + rtt_s) * (1 + 0.02 * math.log2(peers))


def test_covenant_miss_is_stated_with_the_figures_the_model_gives():
    """Issue 25's target (the round's communication within 25% of the reported 70 s) is not met from the
    published setting; the reported file and docs/physics.md state the model's figures, checked here."""
    instance, plan, reported = _covenant_dtplan()
    v = evaluate(instance, plan).values
    comm = reported["communication"]
    assert comm["value_s"] == 70.0
    assert (instance.network.wan.up_mbps, instance.network.wan.down_mbps) == \
        (comm["limit_up_mbps"], comm["limit_down_mbps"])
    assert v["t_sync_s"] == pytest.approx(_store_round_s(72e9, 20, 110, 500), rel=1e-12)
    ratio = v["t_sync_s"] / comm["value_s"]
    assert ratio == pytest.approx(12.0, abs=0.05)
    # no order of the transfers reaches 70 s at the stated limits: the upload alone takes longer
    assert 72e9 / 64 * 14 / 110e6 > 2 * comm["value_s"]
    text = reported["dtplan"]["missing"] + reported["dtplan"]["missing_summary"]
    for figure in (f"{round(v['t_sync_base_s'])} s", f"{round(v['t_sync_s'])} s", "143 s", "630 s"):
        assert figure in text, figure
    physics_doc = (ROOT / "docs" / "physics.md").read_text()
    assert f"{v['t_sync_base_s']:.1f} s" in physics_doc and f"{v['t_sync_s']:.1f} s" in physics_doc
    utilisation = v["compute_utilization"]
    assert utilisation == pytest.approx(30 * v["t_step_s"] / v["outer_time_s"], rel=1e-12)
    assert f"{utilisation:.3f} against 0.945" in physics_doc and f"{utilisation / 0.945 - 1:+.1%}" in physics_doc


def test_the_limits_read_in_megabytes_by_hand():
    """The other reading of the report's units, 110 MB/s up and 500 MB/s down, evaluated on the instance (its
    figures are stated in the reported file, not used as its input): 17.9 s + 20 x 3.94 s + 0.1 s = 96.7 s, 105.1 s
    with the straggler factor, +50% against 70 s; 91.4 s (+31%) at the run's mean 16.9 contributing peers.
    The report's 8B SparseLoCo figure (R = 15, about 12 s) at both readings: 6.2 times as printed, -22% in MB/s."""
    instance, plan, reported = _covenant_dtplan()
    comm = reported["communication"]
    raw = instance.model_dump()
    raw["network"]["wan"].update(up_mbps=8 * comm["limit_up_mbps"], down_mbps=8 * comm["limit_down_mbps"])
    v = evaluate(parse_instance(raw), plan).values
    v_bits = 72e9 / 64 * 14
    assert v["t_sync_base_s"] == pytest.approx(v_bits / 880e6 + 20 * v_bits / 4000e6 + 0.1, rel=1e-12)
    assert v["t_sync_base_s"] == pytest.approx(96.75, abs=0.01)
    assert v["t_sync_s"] == pytest.approx(_store_round_s(72e9, 20, 880, 4000), rel=1e-12)
    assert v["t_sync_s"] / comm["value_s"] - 1 == pytest.approx(0.502, abs=0.001)
    mean = _store_round_s(72e9, comm["mean_contributing_peers"], 880, 4000)
    assert mean == pytest.approx(91.4, abs=0.05) and mean / 70 - 1 == pytest.approx(0.306, abs=0.001)
    small = [_store_round_s(8e9, comm["sparseloco_8b_peers"], up, down) for up, down in ((110, 500), (880, 4000))]
    assert small[0] / comm["sparseloco_8b_s"] == pytest.approx(6.16, abs=0.01)
    assert small[1] / comm["sparseloco_8b_s"] - 1 == pytest.approx(-0.222, abs=0.001)
    text = reported["dtplan"]["missing"]
    for figure in ("96.7 s", "105.1 s", "+50%", "91.4 s", "+31%", "-22%", "16 s"):
        assert figure in text, figure


def test_the_payload_as_the_runs_code_builds_it_by_hand():
    """tplr-ai/templar at c2397ac stores each kept value, quantised to 4 levels, in one byte (src/tplr/compress.py):
    20 bits per kept value, 72e9 / 64 x 20 = 22.5e9 bits (2.81 GB, 102x of 32 bits). The model with
    compressor_value_bits = 8 gives 204.5 s up + 20 x 45.0 s down + 0.1 s = 1,104.6 s as printed and
    25.6 s + 112.5 s + 0.1 s = 138.2 s in megabytes; the 70 s deadline (time_window_delta_seconds) needs an upload
    link of 15.75e9 / 70 = 225 Mb/s (321 Mb/s at the coded payload). The reported file states these figures."""
    instance, plan, reported = _covenant_dtplan()
    bits = 72e9 / 64 * 20
    assert 32 / (20 / 64) == pytest.approx(102.4)
    figures = []
    for scale in (1, 8):
        raw = instance.model_dump()
        raw["assumptions"]["constants"] = {**raw["assumptions"]["constants"], "compressor_value_bits": 8.0}
        raw["network"]["wan"].update(up_mbps=scale * 110.0, down_mbps=scale * 500.0)
        v = evaluate(parse_instance(raw), plan).values
        up, down = bits / (scale * 110e6), 20 * bits / (scale * 500e6)
        assert v["t_sync_base_s"] == pytest.approx(up + down + 0.1, rel=1e-12)
        figures.append((up, down))
    assert figures[0] == pytest.approx((204.5, 900.0), abs=0.05)
    assert figures[1] == pytest.approx((25.6, 112.5), abs=0.05)
    assert 72e9 / 64 * 14 / 70 / 1e6 == pytest.approx(225.0) and bits / 70 / 1e6 == pytest.approx(321.4, abs=0.05)
    text = reported["dtplan"]["missing"]
    for figure in ("2.81 GB", "102x", "204.5 s + 900.0 s = 1,104.5 s", "25.6 s + 112.5 s = 138.1 s", "225 Mb/s",
                   "321 Mb/s", "time_window_delta_seconds = 70", "1,200 / (1,200 + 70)"):
        assert figure in text, figure
    assert 1200 / 1270 == pytest.approx(reported["reported"]["compute_utilization"]["value"], abs=5e-4)


def test_the_reference_report_figure_and_the_reference_profile_by_hand():
    """The reference report (Covenant_72B_Analysis.md 3.2): 72B x 16 bits / 146 at 100 Mb/s = 78.9 s, upload only.
    The reference profile on the instance as written: Cr = 64 read as 16 / 64 bits, v / up + v / down + RTT."""
    assert 72e9 * 16 / 146 / 100e6 == pytest.approx(78.9, abs=0.05)
    reported = tomllib.loads((PUBLISHED / "covenant-72b.reported.toml").read_text())
    assert reported["communication"]["reference_report_s"] == round(72e9 * 16 / 146 / 100e6)
    v = evaluate(load_instance(PUBLISHED / "covenant-72b.json"), load_plan(PUBLISHED / "covenant-72b.plan.json")).values
    payload = 72e9 * 16 / 64
    assert v["t_sync_base_s"] == pytest.approx(payload / 110e6 + payload / 500e6 + 0.1, rel=1e-12)
    assert v["t_sync_base_s"] == pytest.approx(199.7, abs=0.05)


def test_covenant_compute_is_the_reported_20_minutes_per_round():
    """The instance's MFU is derived from the reported ~20 min of compute per 30-step round (40 s a step):
    6 x 72e9 x 393,216 FLOP / (8 x 2,250 TFLOP/s x 0.2359) = 40.0 s."""
    v = evaluate(load_instance(PUBLISHED / "covenant-72b.json"), load_plan(PUBLISHED / "covenant-72b.plan.json")).values
    assert v["t_comp_s"] == pytest.approx(6 * 72e9 * 393216 / (8 * 2250e12 * 0.2359), rel=1e-12)
    assert 30 * v["t_comp_s"] == pytest.approx(1200.0, rel=1e-3)


def test_the_covenant_preset_is_the_runs_exchange():
    a = apply_overrides(Assumptions(), {"compressor_preset": "covenant"})
    assert (a.sync_pattern, a.exchange_gather_peers, a.exchange_overlap_up_down) == ("object_store", 20.0, False)
