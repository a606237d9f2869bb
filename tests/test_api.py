"""The Python API (planner.api, re-exported by planner): answers equal to the stored expected
results and to the CLI's, one exception type with the CLI's JSON-path messages, frames
consistent with to_dict(), and a cheap `import planner`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

import planner
from planner.cli import main

ROOT = Path(__file__).resolve().parents[1]
MIRI = ROOT / "instances" / "miri"
BASELINE = MIRI / "baseline-1e25.json"
EXPECTED = json.loads((MIRI / "baseline-1e25.expected.json").read_text())


def test_import_planner_is_cheap_and_lazy():
    code = ("import sys, planner; heavy = [m for m in ('numpy', 'pandas', 'pydantic', 'planner.solve') "
            "if m in sys.modules]; print(heavy); print(callable(planner.solve), 'planner.api' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True).stdout
    assert out.split("\n")[:2] == ["[]", "True True"]


def test_solve_and_evaluate_are_the_functions_even_after_their_modules_are_imported():
    import planner.evaluate  # noqa: F401 - binds the module as an attribute of the package
    import planner.solve  # noqa: F401
    from planner import api
    assert planner.solve is api.solve and planner.evaluate is api.evaluate
    assert sys.modules["planner.solve"].solve is not api.solve


def test_solve_matches_the_stored_expected_answer():
    for given in (BASELINE, str(BASELINE), json.loads(BASELINE.read_text()), planner.load_instance(BASELINE)):
        result = planner.solve(given)
        assert result.status == EXPECTED["status"]
        assert result.objective_value == pytest.approx(EXPECTED["objective_value"], rel=1e-9)
        assert result.plan.model_dump() == EXPECTED["plan"]


def test_overrides_by_dotted_path_equal_editing_the_json():
    data = json.loads(BASELINE.read_text())
    inst = planner.instance_from_dict(data, overrides={"network.wan.up_mbps": 30, "assumptions.constants.mfu": 0.3})
    edited = json.loads(BASELINE.read_text())
    edited["network"]["wan"]["up_mbps"] = 30
    edited["assumptions"]["constants"] = {"mfu": 0.3}
    assert inst == planner.instance_from_dict(edited)
    assert inst.network.wan.up_mbps == 30 and inst.resolved_assumptions().mfu == 0.3
    assert data["network"]["wan"]["up_mbps"] == 100          # the caller's dict is not changed


def test_bad_input_raises_input_error_with_the_cli_messages(tmp_path):
    bad = json.loads(BASELINE.read_text())
    bad["fleet"]["nodes"] = -3
    bad["network"]["wan"]["rtt_ms"] = "fast"
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(bad))
    with pytest.raises(planner.InputError) as err:
        planner.load_instance(path)
    cli = CliRunner().invoke(main, ["validate", str(path)])
    assert cli.exit_code == 2
    assert {p.path for p in err.value.problems} == {"fleet.nodes", "network.wan.rtt_ms"}
    for problem in err.value.problems:
        assert f"{path}: {problem.path}: {problem.message}" in cli.output
    with pytest.raises(planner.InputError) as err:
        planner.solve(BASELINE, overrides={"fleet.node": 3})
    assert err.value.problems[0].path == "fleet.node" and "did you mean 'fleet.nodes'" in err.value.problems[0].message
    with pytest.raises(planner.InputError, match="objective"):
        planner.solve(BASELINE, objective="fastest")
    with pytest.raises(planner.InputError, match="inner_steps"):
        planner.evaluate(BASELINE, {"mode": "flat", "nodes": 72, "precision": "fp16", "inner_steps": 0})
    with pytest.raises(planner.InputError):
        planner.sweep(BASELINE, grid={"fleet.nodes": [0]})
    assert issubclass(planner.InputError, Exception) and planner.InputError is planner.api.InputError


def test_solve_frame_matches_to_dict():
    result = planner.solve(BASELINE)
    frame = result.to_frame()
    d = result.to_dict()
    assert len(frame) == 1
    row = frame.iloc[0]
    assert row["status"] == d["status"] and row["objective_value"] == d["objective_value"]
    assert row["inner_steps"] == d["plan"]["inner_steps"] and row["nodes"] == d["plan"]["nodes"]
    assert row["time_to_target_days"] == pytest.approx(EXPECTED["time_to_target_days"], rel=1e-12)
    assert row["cost_usd"] == EXPECTED["cost_usd"]


def test_evaluate_a_dict_plan():
    # the report's own plan (H = 128, 16x) takes 331 days (instances/miri/baseline-1e25.json)
    plan = {"mode": "flat", "nodes": 72, "precision": "fp16", "inner_steps": 128, "compression": 16, "streaming": True}
    e = planner.evaluate(BASELINE, plan)
    assert round(e.values["time_to_target_s"] / 86400) == 331
    frame = e.to_frame()
    assert frame.loc[0, "time_to_target_s"] == e.values["time_to_target_s"] and bool(frame.loc[0, "feasible"])


def test_feasible_frame_lists_the_verdict_then_the_fixes():
    path = MIRI / "1e27-flat-a100.json"
    expected = json.loads((MIRI / "1e27-flat-a100.expected.json").read_text())
    f = planner.feasible(path)
    assert expected["verdict"] == "infeasible" and f.feasible is False
    frame = f.to_frame()
    assert list(frame["change"]) == ["as given"] + [x.summary for x in f.fixes]
    assert list(frame["limit"][1:]) == [fix["limit"] for fix in expected["fixes"]]
    assert list(frame["nodes"][1:]) == [fix["plan"]["nodes"] for fix in expected["fixes"]]
    assert frame["time_to_target_days"][1] == pytest.approx(expected["fixes"][0]["time_to_target_days"], rel=1e-9)


def test_compare_table():
    table = planner.compare(BASELINE, ["16xGH200", "16xH100-SXM"])
    frame = table.to_frame()
    assert list(frame["rank"]) == [1, 2] and len(table) == 2
    best = table.rows[0]
    assert frame.loc[0, "hardware"] == best.hardware and frame.loc[0, "objective_value"] == best.value


def test_sweep_through_the_api():
    result = planner.sweep(BASELINE, grid={"network.wan.up_mbps": [100]}, workers=1)
    frame = result.to_frame()
    assert frame.loc[0, "objective_value"] == pytest.approx(EXPECTED["objective_value"], rel=1e-12)
    assert frame.loc[0, "status"] == "optimal"
