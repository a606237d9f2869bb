"""The `dtplan` command line: exit codes, messages, and the numbers it prints."""

import json
import math
from pathlib import Path

import pytest
from click.testing import CliRunner

from planner.cli import main

REPO = Path(__file__).resolve().parents[1]
BASELINE = REPO / "instances" / "baseline-1e25.json"
BASELINE_PLAN = REPO / "instances" / "baseline-1e25.plan.json"


def run(*args):
    result = CliRunner().invoke(main, [str(a) for a in args])
    assert "Traceback" not in result.output + (result.stderr or "")
    return result


def write(tmp_path, name, data):
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


def baseline(**changes):
    data = json.loads(BASELINE.read_text())
    for key, value in changes.items():
        data[key] = value
    return data


def test_every_command_has_help():
    for command in main.commands.values():
        assert command.help, command.name
        assert run(command.name, "--help").exit_code == 0


def test_evaluate_prints_the_breakdown_of_the_shipped_baseline():
    result = run("evaluate", BASELINE, BASELINE_PLAN)
    assert result.exit_code == 1, result.output          # the 12T-token target takes longer than 1.5 years
    for text in ("flat DiLoCo", "72 x 16x GH200", "17.873", "3,235.500", "wan-sync", "duration-limit"):
        assert text in result.output


def test_evaluate_json_values_by_hand():
    result = run("evaluate", BASELINE, BASELINE_PLAN, "--json")
    out = json.loads(result.stdout)
    v = out["values"]
    t_comp = 6 * 144e9 * 131072 / (15.84e15 * 0.4)
    t_sync = (2 * 144e9 * 16 / 16 / 100e6 + 0.1) * (1 + 0.02 * math.log2(72))
    assert v["t_comp_s"] == pytest.approx(t_comp, rel=1e-12)
    assert v["t_sync_s"] == pytest.approx(t_sync, rel=1e-12)
    assert v["outer_time_s"] == pytest.approx(t_sync, rel=1e-12)
    assert v["tokens_per_s"] == pytest.approx(131072 * 72 * 128 / t_sync, rel=1e-12)
    assert v["eta_h"] == pytest.approx(1 - 0.08 / (1 + math.log10(144) / 5) * math.log10(128), rel=1e-12)
    # time to target: C_target = eta * 6 P * tokens/s * T, C_target = 6 P D with D = 12e12.
    assert v["time_to_target_s"] * v["eta_target"] * 6 * 144e9 * v["tokens_per_s"] == pytest.approx(6 * 144e9 * 12e12)
    assert out["violations"] == [out["violations"][0]] and out["violations"][0].startswith("duration-limit")
    assert out["bottleneck"] == "wan-sync"
    assert out["resolved"]["max_days"] == 547.875


def test_evaluate_exits_zero_when_every_limit_is_met(tmp_path):
    instance = write(tmp_path, "i.json", baseline(training={"tokens": 1e12}))
    result = run("evaluate", instance, BASELINE_PLAN)
    assert result.exit_code == 0, result.output
    assert "All limits met" in result.output


def test_growth_rate_duration_limit(tmp_path):
    instance = write(tmp_path, "i.json", baseline(limits={"max_days": "growth"}))
    out = json.loads(run("evaluate", instance, BASELINE_PLAN, "--json").stdout)
    ooms = math.log10(1.37) + math.log10(3.0) + math.log10(3.5)
    assert out["resolved"]["max_days"] == pytest.approx(365 / (ooms * math.log(10)))


def test_validate_a_good_instance():
    result = run("validate", BASELINE)
    assert result.exit_code == 0
    assert "valid" in result.output and "144.0B" in result.output


@pytest.mark.parametrize("data, message", [
    (baseline(fleet={"hardware": "16xGH200", "nodes": "72"}), "fleet.nodes: must be an integer >= 1, got '72'"),
    (baseline(fleet={"hardware": "16xGH200", "nodes": -72}), "fleet.nodes: must be an integer >= 1, got -72"),
    (baseline(network={"wan": {"up_mbps": -100}}), "network.wan.up_mbps: must be a number > 0, got -100"),
    (baseline(fleet={"hardware": "16xGH200", "nodes": 72, "colour": "red"}), "fleet.colour: unknown field"),
    (baseline(fleet={"hardware": "16xGH200"}), "fleet.nodes: required field missing"),
    (baseline(fleet={"nodes": 2, "hardware": {"accelerators_per_node": 8, "hbm_gb_per_accelerator": -80,
                                              "peak_tflops_per_accelerator": {"fp16": 990}}}),
     "fleet.hardware.hbm_gb_per_accelerator: must be a number > 0, got -80"),
    ("{not json", "not valid JSON"),
])
def test_bad_instances_exit_2_naming_the_field(tmp_path, data, message):
    result = run("validate", write(tmp_path, "bad.json", data))
    assert result.exit_code == 2
    assert message in result.stderr


def test_all_problems_of_a_file_are_reported_at_once(tmp_path):
    data = baseline(fleet={"hardware": "16xGH200", "nodes": -1}, network={"wan": {"rtt_ms": "fast"}})
    result = run("validate", write(tmp_path, "bad.json", data))
    assert result.exit_code == 2
    assert "fleet.nodes" in result.stderr and "network.wan.rtt_ms" in result.stderr


def test_bad_plans_exit_2(tmp_path):
    plan = write(tmp_path, "p.json", {"mode": "flat", "nodes": 500, "precision": "fp4", "inner_steps": 0})
    result = run("evaluate", BASELINE, plan)
    assert result.exit_code == 2
    assert "inner_steps: must be an integer >= 1, got 0" in result.stderr
    plan = write(tmp_path, "p2.json", {"mode": "flat", "nodes": 500, "precision": "fp4"})
    result = run("evaluate", BASELINE, plan)
    assert result.exit_code == 2
    assert "plan.nodes" in result.stderr and "plan.precision" in result.stderr


def test_a_plan_that_does_not_fit_memory_is_flagged(tmp_path):
    instance = write(tmp_path, "i.json", baseline(model={"params": 300e9}))
    result = run("evaluate", instance, BASELINE_PLAN, "--json")
    assert result.exit_code == 1
    assert any(v.startswith("memory-cap") for v in json.loads(result.stdout)["violations"])


def test_hardware_lists_every_preset():
    result = run("hardware")
    assert result.exit_code == 0
    for preset in ("50xA100-80GB", "16xGH200", "16xH100-SXM", "9xB100", "7xB200", "17xTPU-v6e"):
        assert preset in result.output
