"""The evidence envelope explained by `feasible`, `compare` and the web page's answers (issue 24: "the
output says which bound it leaves and why"; docs/quality.md, section 6).

Under the dtplan profile an answer with no plan inside the envelope is solved again beyond it
(`planner.solve.with_beyond_evidence`), as `solve` and `thresholds` do. Each test runs a shipped instance
that the envelope stops (tests/test_envelope_instances.py names them) and checks the answer's reason line
and its `beyond_evidence` against the plan beyond: each named bound is read back from the plan's own
decisions, and the plan, scored by `evaluate` on the instance opened with --beyond-evidence, meets every
limit and reaches the target in the time the answer says. Under the reference profile nothing changes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from planner.cli import main
from planner.cli.common import BEYOND_EVIDENCE, load_instance_or_exit
from planner.cost.duration import SECONDS_PER_DAY
from planner.evaluate import evaluate, setting_from_instance
from planner.objectives import objective_named
from planner.questions.compare import compare
from planner.questions.feasible import feasible
from planner.schema.plan import parse_plan
from planner.web import answers

ROOT = Path(__file__).resolve().parents[1]
SOLVE_1E24 = ROOT / "instances" / "solve-1e24-64xh100.json"    # min_time, 365 days; stopped by the envelope
POOLS = ROOT / "instances" / "mixed-a100-h100.json"            # a fleet of pools stopped by the envelope
WORST_CASE = ROOT / "instances" / "miri" / "profile-global-worst-case.json"   # max_compute; only 16x listed (1 bit at fp16)
DTPLAN = "assumptions.profile=dtplan"
STOPS = "evidence envelope stops it: "
NOT_IT = "the evidence envelope is not what stops it: beyond it (--beyond-evidence) no plan meets every limit either"
BITS = {"fp32": 32, "bf16": 16, "fp16": 16, "fp8": 8, "fp4": 4}     # bits per value of each precision


def _loaded(path: Path, *sets: str):
    return load_instance_or_exit(path, (DTPLAN, *sets))


def _check_beyond(path: Path, beyond: dict, reasons: list[str], *sets: str) -> None:
    """`beyond` (a `beyond_evidence` summary) names only bounds its plan crosses, and its plan, scored on the
    instance opened beyond the envelope, meets every limit in the time it states; `reasons` holds its line."""
    lines = [r for r in reasons if r.startswith((STOPS, NOT_IT))]
    assert len(lines) == 1
    assert beyond["status"] == "optimal" and lines[0].startswith(STOPS)
    plan = beyond["plan"]
    assert beyond["bounds"]
    for bound in beyond["bounds"]:
        name, (lo, hi) = bound["bound"], bound["shown"]
        if name == "R = 1":
            assert plan["regional_rounds"] == bound["value"] > 1
        elif name.startswith("quantised to"):
            assert BITS[plan["precision"]] / plan["compression"] == pytest.approx(bound["value"]) and bound["value"] < lo
        elif name.startswith("replicas"):
            assert bound["value"] > hi
        else:
            assert bound["value"] > hi, bound
        assert f"{bound['bound']} (the plan beyond has {bound['message']}" in lines[0]
    opened, _ = _loaded(path, *sets, BEYOND_EVIDENCE)
    scored = evaluate(opened, parse_plan(plan, "<beyond>"))
    setting = setting_from_instance(opened)
    if beyond["objective"] == "min_time":
        assert scored.violations == []
        assert scored.values["time_to_target_s"] == pytest.approx(beyond["objective_value"], rel=1e-9)
        assert beyond["objective_value"] <= setting.window_s * (1 + 1e-9)
        assert f"reaches the target in {beyond['objective_value'] / SECONDS_PER_DAY:,.1f} days" in lines[0]
    else:      # max_compute: the compute of the instance's kind within the duration limit
        assert beyond["objective"] == "max_compute"
        assert not [v for v in scored.violations if not v.startswith("duration-limit")]
        field = objective_named("max_compute").value_field(setting.target_kind)
        assert scored.values[field] == pytest.approx(beyond["objective_value"], rel=1e-9)
        assert f"reaches {beyond['objective_value']:.4g} FLOP" in lines[0]


def test_feasible_under_dtplan_names_the_envelope_bounds_that_stop_it():
    _, raw = _loaded(SOLVE_1E24)
    f = feasible(raw, str(SOLVE_1E24))
    assert not f.feasible and not f.timed_out
    beyond = f.result.beyond_evidence
    assert beyond is not None
    _check_beyond(SOLVE_1E24, beyond, f.result.infeasibility)
    # the bounds: 64 replicas > 8 shown among them (the instance's 64 nodes, one replica each at most)
    assert "replicas <= 8" in [b["bound"] for b in beyond["bounds"]]
    out = f.to_dict()
    assert out["result"]["beyond_evidence"] == beyond and out["binding"] == f.result.infeasibility
    assert f.fixes, "the single fixes are still searched inside the envelope"


def test_feasible_cli_text_and_json_carry_the_explanation():
    runner = CliRunner()
    text = runner.invoke(main, ["feasible", str(SOLVE_1E24), "--set", DTPLAN])
    data = json.loads(runner.invoke(main, ["feasible", str(SOLVE_1E24), "--set", DTPLAN, "--json"]).output)
    assert text.exit_code == 1
    line = next(r for r in data["binding"] if r.startswith(STOPS))
    assert " ".join(line.split()) in " ".join(text.output.split())       # the terminal wraps long lines
    _check_beyond(SOLVE_1E24, data["result"]["beyond_evidence"], data["binding"])


def test_feasible_under_the_reference_profile_is_unchanged():
    raw = json.loads(SOLVE_1E24.read_text())
    raw.setdefault("limits", {})["max_days"] = 1.0        # infeasible under the reference profile too
    f = feasible(raw, str(SOLVE_1E24))
    assert not f.feasible and f.result.beyond_evidence is None
    assert "beyond_evidence" not in f.to_dict()["result"]
    assert not any("evidence envelope" in r for r in f.result.infeasibility)


def test_compare_under_dtplan_explains_each_preset_stopped_by_the_envelope():
    _, raw = _loaded(SOLVE_1E24)
    rows = compare(raw, ["16xH100-SXM", "8xH100-SXM"])
    assert [r.feasible for r in rows] == [False, False]
    for row in rows:
        beyond = row.result.beyond_evidence
        assert beyond is not None and row.to_dict()["beyond_evidence"] == beyond
        line = next(r for r in row.result.infeasibility if r.startswith(STOPS))
        assert line in row.reason
        _check_beyond(SOLVE_1E24, beyond, row.result.infeasibility, f"fleet.hardware={row.hardware}")


def test_compare_of_max_compute_names_the_bounds_and_the_compute_beyond():
    _, raw = _loaded(WORST_CASE)
    (row,) = compare(raw, ["48xA100-80GB"])
    assert not row.feasible and row.result.objective.key == "max_compute"
    beyond = row.result.beyond_evidence
    _check_beyond(WORST_CASE, beyond, row.result.infeasibility)
    # its only listed ratio, 16x at fp16, is 1 bit per value: a bound of every plan beyond
    assert "quantised to >= 4 bits per value" in [b["bound"] for b in beyond["bounds"]]


def test_compare_cli_json_carries_the_explanation_per_row():
    r = CliRunner().invoke(main, ["compare", str(SOLVE_1E24), "--hardware", "16xH100-SXM", "--set", DTPLAN, "--json"])
    assert r.exit_code == 1
    (row,) = json.loads(r.stdout)
    _check_beyond(SOLVE_1E24, row["beyond_evidence"], row["infeasibility"])


def test_compare_of_a_fleet_of_pools_explains_the_fleet_as_given():
    _, raw = _loaded(POOLS)
    (row,) = compare(raw, [])
    assert row.basis == "as given" and not row.feasible
    _check_beyond(POOLS, row.result.beyond_evidence, row.result.infeasibility)
    assert "pool_nodes" in row.result.beyond_evidence["plan"]


def test_web_solve_job_explains_and_says_when_the_envelope_is_not_the_cause():
    _, raw = _loaded(SOLVE_1E24)
    view = answers.solve_job({"instance": raw}, lambda *a, **k: None)
    assert view["status"] == "infeasible"
    _check_beyond(SOLVE_1E24, view["beyond_evidence"], view["infeasibility"])
    # one day: no plan beyond the envelope either; the answer says the envelope is not the cause
    _, short = _loaded(SOLVE_1E24, "limits.max_days=1")
    view = answers.solve_job({"instance": short}, lambda *a, **k: None)
    assert view["beyond_evidence"]["status"] == "infeasible"
    assert [r for r in view["infeasibility"] if r.startswith(NOT_IT)]
    # a feasible answer carries none
    _, easy = _loaded(SOLVE_1E24, "limits.max_days=100000")
    view = answers.solve_job({"instance": easy}, lambda *a, **k: None)
    assert view["status"] == "optimal" and view["beyond_evidence"] is None


def test_web_feasible_view_carries_the_reason():
    _, raw = _loaded(SOLVE_1E24)
    view = answers.feasible_job({"instance": raw}, lambda *a, **k: None)
    assert view["result"]["beyond_evidence"]["status"] == "optimal"
    assert [r for r in view["binding"] if r.startswith(STOPS)]
