"""The `dtplan` command line: exit codes, messages, and the numbers it prints."""

import json
import math
from pathlib import Path

import pytest
from click.testing import CliRunner

from planner.objectives import MIN_TIME
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
    commands = main.all_commands()
    assert {"solve", "evaluate", "feasible", "sites"} <= set(commands)
    for command in commands.values():
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


# -- issue 10: exit codes, loading, bounds, limits, outputs, tables, --set / schema / presets ----------

import os
import subprocess
import sys

import importlib

from planner.cli.common import EXIT_INTERNAL, EXIT_TIME_LIMIT, dumps

SOLVE_MODULE = importlib.import_module("planner.solve")      # `planner.solve` is also the function


def strict_json(text):
    """json.loads that refuses NaN and Infinity (what strict parsers do)."""
    def refuse(name):
        raise ValueError(f"non-standard JSON constant {name}")
    return json.loads(text, parse_constant=refuse)


def test_exit_codes_are_in_the_help():
    result = run("--help")
    for text in ("0 success", "1 no plan meets every limit", "2 bad input", "3 the time limit",
                 "4 internal error", "DTPLAN_DEBUG=1"):
        assert text in " ".join(result.output.split()), text


def test_an_internal_error_exits_4_in_one_line(monkeypatch):
    def broken(*args, **kwargs):
        raise ZeroDivisionError("float division by zero")
    monkeypatch.setattr(SOLVE_MODULE, "solve", broken)
    monkeypatch.delenv("DTPLAN_DEBUG", raising=False)
    result = CliRunner().invoke(main, ["solve", str(BASELINE)])
    assert result.exit_code == EXIT_INTERNAL == 4
    assert "Traceback" not in result.stderr
    assert result.stderr.strip().count("\n") == 0
    assert "internal error (ZeroDivisionError: float division by zero)" in result.stderr
    assert "please report it" in result.stderr and "DTPLAN_DEBUG=1" in result.stderr
    monkeypatch.setenv("DTPLAN_DEBUG", "1")
    result = CliRunner().invoke(main, ["solve", str(BASELINE), "--json"])
    assert result.exit_code == 4 and "Traceback" in result.stderr
    assert strict_json(result.stdout)["error"]["kind"] == "internal_error"


def test_an_internal_error_exits_4_in_a_real_process():
    code = ("import importlib, sys\n"
            "s = importlib.import_module('planner.solve')\n"
            "def boom(*a, **k): raise RuntimeError('boom')\n"
            "s.solve = boom\n"
            "from planner.cli import main\n"
            "sys.argv = ['dtplan', 'solve', sys.argv[1]]\n"
            "main()\n")
    env = {k: v for k, v in os.environ.items() if k != "DTPLAN_DEBUG"}
    proc = subprocess.run([sys.executable, "-c", code, str(BASELINE)], capture_output=True, text=True, env=env,
                          timeout=120)
    assert proc.returncode == 4, proc.stderr
    assert "Traceback" not in proc.stderr and "internal error (RuntimeError: boom)" in proc.stderr


def _cut_at_once(monkeypatch):
    """The search stops before any plan: no plan, and a finite bound on what is left (no proof)."""
    monkeypatch.setattr(SOLVE_MODULE, "optimise", lambda *args, **kwargs: (None, 0, 1.0))


def test_a_time_limit_without_a_plan_exits_3_not_1(monkeypatch):
    _cut_at_once(monkeypatch)
    result = run("solve", BASELINE, "--json", "--time-limit", "60")
    out = strict_json(result.stdout)
    assert out["status"] == "time_limit" and out["plan"] is None
    assert result.exit_code == EXIT_TIME_LIMIT == 3
    result = run("solve", BASELINE, "--time-limit", "60")
    assert result.exit_code == 3 and "time limit was reached before any plan" in result.output


def test_feasible_without_a_verdict_in_time_exits_3(monkeypatch):
    _cut_at_once(monkeypatch)
    result = run("feasible", BASELINE, "--json", "--time-limit", "60")
    out = strict_json(result.stdout)
    assert out["timed_out"] is True and out["feasible"] is False
    assert result.exit_code == 3
    result = run("feasible", BASELINE, "--time-limit", "60")
    assert result.exit_code == 3 and "TIME LIMIT" in result.output


@pytest.mark.parametrize("content, message", [
    ("", "<file>: not valid JSON"),
    (None, "<file>: file not found"),
    ("DIR", "<file>: cannot read the file"),
    (b"\xff\xfe{", "<file>: not a UTF-8 text file"),
    ('{"name": "x",}', "<file>: not valid JSON"),
    ("[" * 5000 + "]" * 5000, "<file>: not readable: the JSON is nested too deeply"),
    ('{"name": ' + "[" * 100 + "]" * 100 + "}", "<file>: nested more than 32 levels deep"),
    ('{"fleet": {"nodes": ' + "9" * 5000 + "}}", "<file>: not readable"),
])
@pytest.mark.parametrize("command", ["validate", "solve", "feasible", "compare"])
def test_unreadable_files_exit_2_in_every_command(tmp_path, command, content, message):
    path = tmp_path / "i.json"
    if content == "DIR":
        path.mkdir()
    elif isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        path.write_text(content)
    result = run(command, path)
    assert result.exit_code == 2, (result.output, result.exception)
    assert message in result.stderr


def test_feasible_flag_over_a_malformed_section_names_the_field(tmp_path):
    path = write(tmp_path, "i.json", baseline(fleet=[]))
    result = run("feasible", path, "--nodes", "5")
    assert result.exit_code == 2
    assert "--nodes: cannot set fleet.nodes: fleet must be an object, got []" in result.stderr


def test_feasible_on_a_size_set_without_a_target_exits_2(tmp_path):
    data = baseline(model={}, training={}, search={"params": [7e9, 70e9]}, objective="max_compute")
    path = write(tmp_path, "i.json", data)
    assert run("solve", path).exit_code in (0, 1)            # solve accepts it
    result = run("feasible", path)
    assert result.exit_code == 2
    assert "training.target_flop: dtplan feasible asks whether a fixed target is reached in time" in result.stderr


@pytest.mark.parametrize("section, key, value, message", [
    ("fleet", "nodes", 10**30, "fleet.nodes: must be at most 10000000"),
    ("fleet", "nodes", 1e308, "fleet.nodes: must be at most 10000000"),
    ("model", "params", 1e308, "model.params: must be at most 1e15"),
    ("limits", "max_days", 1e308, "limits.max_days: must be at most 1e6"),
    ("fleet", "price_usd_per_accelerator", 1e30, "fleet.price_usd_per_accelerator: must be at most 1e9"),
    ("training", "local_batch_tokens", 1e308, "training.local_batch_tokens: must be at most 1073741824"),
    ("search", "compression", [float(x) for x in range(1, 1001)], "search.compression: must hold at most 64 values"),
    ("search", "group_sizes", list(range(2, 5001)), "search.group_sizes: must hold at most 64 values"),
    (None, "name", "bad \ud800 name", "name: must be valid Unicode text: character 5 is an unpaired surrogate"),
])
def test_values_beyond_what_the_model_computes_exit_2(tmp_path, section, key, value, message):
    data = baseline()
    if section is None:
        data[key] = value
    else:
        data.setdefault(section, {})[key] = value
        if section == "fleet":
            data["fleet"].setdefault("hardware", "16xGH200")
            data["fleet"].setdefault("nodes", 72)
    path = tmp_path / "i.json"
    path.write_text(json.dumps(data), encoding="utf-8", errors="surrogatepass")
    for command in ("validate", "solve", "feasible"):
        result = run(command, path)
        assert result.exit_code == 2, (command, result.output)
        assert message in result.stderr, (command, result.stderr)


def test_plan_values_beyond_the_bounds_exit_2(tmp_path):
    for key, value in (("inner_steps", 10**30), ("stages", 1e308), ("micro_batches", 10**30), ("nodes", 10**30)):
        plan = {"mode": "pp_group" if key in ("stages", "micro_batches") else "flat", "nodes": 72, key: value}
        result = run("evaluate", BASELINE, write(tmp_path, "p.json", plan))
        assert result.exit_code == 2 and f"{key}: must be at most" in result.stderr, result.stderr


def test_feasible_flags_beyond_the_bounds_exit_2():
    result = run("feasible", "--target-flop", "1e27", "--hardware", "16xH100-SXM", "--nodes", "2000",
                 "--wan-mbps", "1e308")
    assert result.exit_code == 2
    assert "network.wan.up_mbps: must be at most 1e12" in result.stderr


def test_the_time_limit_bounds_the_whole_feasible_command(tmp_path):
    import time
    path = write(tmp_path, "i.json", baseline(limits={"max_days": 50}))
    start = time.perf_counter()
    result = run("feasible", path, "--time-limit", "0.5", "--json")
    elapsed = time.perf_counter() - start
    out = strict_json(result.stdout)
    assert result.exit_code == 1
    assert any("not searched: the time limit was reached" in line for line in out["no_fix"])
    assert elapsed < 10          # generous for a shared machine; without the limit it runs ~8 solves


@pytest.mark.parametrize("command, flag", [("solve", "--report"), ("feasible", "--report"), ("compare", "--report"),
                                           ("compare", "--plot")])
def test_unwritable_outputs_exit_2_before_solving(tmp_path, monkeypatch, command, flag):
    def never(*args, **kwargs):
        raise AssertionError("solved before checking the output path")
    monkeypatch.setattr(SOLVE_MODULE, "solve", never)
    suffix = ".png" if flag == "--plot" else ".html"
    for target, reason in ((tmp_path / "missing" / f"out{suffix}", "does not exist"),
                           (tmp_path / f"dir{suffix}", "is a directory")):
        if reason == "is a directory":
            target.mkdir()
        result = run(command, BASELINE, flag, target)
        assert result.exit_code == 2, result.output
        assert result.stderr.startswith(f"{flag}: cannot write to") and reason in result.stderr


def test_a_report_is_written_whole(tmp_path):
    report = tmp_path / "r.md"
    report.write_text("old report")
    result = run("solve", BASELINE, "--report", report)
    assert result.exit_code == 0
    assert report.read_text() != "old report" and "dtplan" in report.read_text().lower()
    assert [p.name for p in tmp_path.iterdir()] == ["r.md"]      # no temporary file left behind


def test_json_output_never_holds_nan_or_infinity():
    import numpy as np
    text = dumps({"a": float("inf"), "b": [float("nan"), np.float64(-np.inf), np.int64(3)], "c": np.array([1.5])})
    assert strict_json(text) == {"a": None, "b": [None, None, 3], "c": [1.5]}
    for args in (("solve", BASELINE, "--json"), ("evaluate", BASELINE, BASELINE_PLAN, "--json"),
                 ("solve", BASELINE, "--objective", "max_compute", "--json")):
        strict_json(run(*args).stdout)


def _console(width):
    from rich.console import Console
    return Console(width=width, highlight=False, record=True, color_system=None)


def _numbers(text):
    import re
    return set(re.findall(r"\d[\d,]*\.?\d*(?:e[+-]\d+)?", text))


@pytest.mark.parametrize("width", [80, 60])
def test_tables_never_cut_a_number(width):
    from planner.present.render import render_feasibility, render_solve
    from planner.present.comparison import render_comparison
    from planner.questions.compare import compare as run_compare
    from planner.questions.feasible import feasible as run_feasible
    from planner.schema.instance import load_instance
    from planner.solve import solve as run_solve
    wide, narrow = _console(200), _console(width)
    result = run_solve(load_instance(BASELINE))
    render_solve(result, wide)
    render_solve(result, narrow)
    rows = run_compare(json.loads((REPO / "instances" / "compare-1e27.json").read_text()), ["16xH100-SXM", "7xB200"])
    render_comparison(rows, MIN_TIME, wide)
    render_comparison(rows, MIN_TIME, narrow)
    fixes = run_feasible(baseline(limits={"max_days": 50}))
    render_feasibility(fixes, wide)
    render_feasibility(fixes, narrow)
    text, wide_text = narrow.export_text(), wide.export_text()
    assert "\u2026" in _plain_comparison_table(width)    # a plain rich table is cut at this width
    assert "\u2026" not in text
    assert max(len(line) for line in text.splitlines()) <= width
    for number in ("979,755,000", "1,599,600,000", "32,256,000", "193.122", "56,623,104", "310"):
        assert number in wide_text and number in text, number


def _plain_comparison_table(width):
    """The comparison table printed by rich as it is (no stacking) at `width` columns."""
    from planner.questions.compare import compare as run_compare, comparison_table
    console = _console(width)
    rows = run_compare(json.loads((REPO / "instances" / "compare-1e27.json").read_text()), ["16xH100-SXM", "7xB200"])
    console.print(comparison_table(rows, MIN_TIME))
    return console.export_text()


def test_set_overrides_a_field_in_every_command(tmp_path):
    out = strict_json(run("validate", BASELINE, "--json", "--set", "fleet.nodes=500",
                          "--set", "name=renamed").stdout)
    assert out["nodes"] == 500 and out["name"] == "renamed"
    evaluation = strict_json(run("evaluate", BASELINE, BASELINE_PLAN, "--json", "--set",
                                 "network.wan.up_mbps=1000", "--set", "network.wan.down_mbps=1000").stdout)
    t_sync = (2 * 144e9 * 16 / 16 / 1000e6 + 0.1) * (1 + 0.02 * math.log2(72))
    assert evaluation["values"]["t_sync_s"] == pytest.approx(t_sync, rel=1e-12)
    solved = strict_json(run("solve", BASELINE, "--json", "--set", "search.modes=[\"flat\"]").stdout)
    assert solved["plan"]["mode"] == "flat"
    assert run("feasible", BASELINE, "--set", "limits.max_days=50").exit_code == 1
    result = run("compare", BASELINE, "--hardware", "16xGH200", "--set", "fleet.nodes=0")
    assert result.exit_code == 2 and "fleet.nodes: must be an integer >= 1, got 0" in result.stderr


@pytest.mark.parametrize("text, message", [
    ("fleet.nodes", "--set: expected FIELD=VALUE"),
    ("=5", "--set: expected FIELD=VALUE"),
    ("fleet..nodes=5", "--set: expected FIELD=VALUE"),
    ("name.first=x", "--set: cannot set name.first: name must be an object"),
    ("fleet.nodes=\"many\"", "fleet.nodes: must be an integer >= 1, got 'many'"),
    ("fleet.nodes=many", "fleet.nodes: must be an integer >= 1, got 'many'"),
    ("fleet.nodes=NaN", "fleet.nodes: must be an integer >= 1, got nan"),
    ("fleet.colour=red", "fleet.colour: unknown field"),
    ("name=" + "[" * 900 + "]" * 900, "--set: name: nested more than 32 levels deep"),
])
def test_bad_set_overrides_name_the_field(text, message):
    result = run("validate", BASELINE, "--set", text)
    assert result.exit_code == 2
    assert message in result.stderr


def test_a_time_limit_must_be_finite():
    result = run("solve", BASELINE, "--time-limit", "nan")
    assert result.exit_code == 2 and "--time-limit" in result.stderr and "finite" in result.stderr


def test_errors_as_json_under_json():
    result = run("validate", BASELINE, "--json", "--set", "fleet.nodes=-1", "--set", "network.wan.rtt_ms=\"x\"")
    assert result.exit_code == 2
    error = strict_json(result.stdout)["error"]
    assert error["exit_code"] == 2 and error["kind"] == "bad_input"
    assert [p["path"] for p in error["problems"]] == ["fleet.nodes", "network.wan.rtt_ms"]
    assert "fleet.nodes" in result.stderr                    # the plain message still on stderr
    result = run("solve", BASELINE, "--json", "--no-such-flag")
    assert result.exit_code == 2 and strict_json(result.stdout)["error"]["kind"] == "usage"


def test_schema_is_pydantics_json_schema_of_an_instance():
    from planner.schema.instance import Instance
    result = run("schema")
    assert result.exit_code == 0
    schema = strict_json(result.stdout)
    assert schema["properties"].keys() == Instance.model_json_schema()["properties"].keys()
    nodes = schema["$defs"]["Fleet"]["properties"]["nodes"]       # optional since fleet.pools: int or null
    fleet = next(branch for branch in nodes["anyOf"] if branch.get("type") == "integer")
    assert fleet["minimum"] == 1 and fleet["maximum"] == 10**7
    assert schema["$defs"]["Pool"]["properties"]["count"]["minimum"] == 1


def test_presets_and_hardware_as_json():
    from planner.cost.assumptions import SETTABLE_FIELDS, profile_names
    from planner.schema.catalog import hardware_ids, llm_ids, load_hardware
    out = strict_json(run("presets", "--json").stdout)
    assert [h["id"] for h in out["hardware"]] == hardware_ids()
    assert [m["id"] for m in out["models"]] == llm_ids()
    assert out["profiles"] == profile_names()
    assert [c["name"] for c in out["constants"]] == list(SETTABLE_FIELDS)
    mfu = next(c for c in out["constants"] if c["name"] == "mfu")
    assert mfu["values"]["reference"] == 0.4
    rows = strict_json(run("hardware", "--json").stdout)
    gh200 = next(r for r in rows if r["id"] == "16xGH200")
    assert gh200["node_peak_fp16_pflops"] == pytest.approx(load_hardware("16xGH200").node_peak_flops("fp16") / 1e15)
    assert gh200["node_hbm_gb"] == 2304
    result = run("presets")
    assert result.exit_code == 0 and "dense-144B" in result.output and "chinchilla_alpha" in result.output


def test_every_command_that_reads_an_instance_takes_set():
    for name, command in main.all_commands().items():
        if name in ("hardware", "presets", "schema"):
            continue
        assert any(p.name == "overrides" and "--set" in p.opts for p in command.params), name
