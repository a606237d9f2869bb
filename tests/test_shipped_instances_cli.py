"""Every shipped instance through every command that accepts it, as text, `--json` and `--report`
(issue 23 item 1): no internal error (exit 4) anywhere, and each output whole.

The instances are every instance file under instances/ (the rule of tests/test_instances.py:
not an index, a plan or a stored answer). Each is run through `validate`, `solve`, `feasible`,
`compare`, `evaluate` with the plan stored beside it, and `sites` when it places nodes at sites;
the sweep recipes (instances/sweeps/*.toml) through `sweep`, and the stored threshold questions
(instances/thresholds/, whose `--json` answers tests/test_threshold_instances.py checks) through
`thresholds` as text with a report. Two runs per command: text with an HTML report, then `--json`
(the Markdown report is the same page written as text: tests/test_report.py); both must give the same exit code, in {0, 1} (a shipped instance is never
bad input). The `--json` output of `solve`, `feasible`, `compare` and `evaluate` must be byte for byte
the one stored by scripts/make_cli_outputs.py (issue 26: refactorings change no output; the
solve's wall time set to 0). The runs are in-process (click's CliRunner: the same command objects the `dtplan`
entry point calls; tests/test_doc_commands.py runs the README through the real entry point).
"""

from __future__ import annotations

import json
from pathlib import Path

import importlib.util

import pytest
from click.testing import CliRunner

from planner.cli import main

_spec = importlib.util.spec_from_file_location(
    "make_cli_outputs", Path(__file__).resolve().parents[1] / "scripts" / "make_cli_outputs.py")
cli_outputs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cli_outputs)

ROOT = Path(__file__).resolve().parents[1]
INSTANCES = ROOT / "instances"


def _is_instance(path: Path) -> bool:
    return not (path.name == "index.json" or path.name.endswith((".plan.json", ".expected.json")))


INSTANCE_FILES = sorted(p for p in INSTANCES.rglob("*.json") if _is_instance(p))
RECIPES = sorted((INSTANCES / "sweeps").glob("*.toml"))
THRESHOLD_QUESTIONS = sorted((INSTANCES / "thresholds").glob("*.expected.json"))


def _has_sites(path: Path) -> bool:
    return bool(json.loads(path.read_text()).get("network", {}).get("sites"))


def _cases() -> list:
    cases = []
    for path in INSTANCE_FILES:
        name = str(path.relative_to(INSTANCES))
        plan = path.with_name(path.name.replace(".json", ".plan.json"))
        runs = [("solve", [path]), ("feasible", [path])]
        if plan.exists():
            runs.append(("evaluate", [path, plan]))
        if _has_sites(path):
            runs.append(("sites", [path]))
        cases += [pytest.param(cmd, args, id=f"{cmd}-{name}") for cmd, args in runs]
        # compare solves the workload on every hardware preset (0.1-10 s per instance)
        cases.append(pytest.param("compare", [path], id=f"compare-{name}", marks=pytest.mark.slow))
    return cases


def _invoke(args: list) -> "click.testing.Result":
    result = CliRunner().invoke(main, [str(a) for a in args])
    out = result.stdout + result.stderr
    assert result.exit_code != 4 and "Traceback" not in out and "internal error" not in out, \
        f"dtplan {' '.join(map(str, args))}: exit {result.exit_code}\n{out[-3000:]}"
    return result


def _text_json_and_report(tmp_path: Path, args: list, report: bool = True) -> int:
    """Text with an HTML report, then --json: the same exit code, 0 or 1; the --json output as stored."""
    html = tmp_path / "answer.html"
    text = _invoke([*args, *(["--report", html] if report else [])])
    as_json = _invoke([*args, "--json"])
    assert text.exit_code in (0, 1), text.stdout + text.stderr
    assert as_json.exit_code == text.exit_code
    assert text.stdout.strip()
    json.loads(as_json.stdout)
    if args[0] in ("solve", "feasible", "compare", "evaluate"):
        stored = cli_outputs.stored_output(args[0], Path(args[1]))
        assert cli_outputs.differences(cli_outputs.normalise(as_json.stdout), stored) == [], \
            f"dtplan {' '.join(map(str, args))} --json differs from {cli_outputs.stored_path(args[0], Path(args[1]))}"
    if report:
        assert "</html>" in html.read_text()
    return text.exit_code


@pytest.mark.parametrize("path", INSTANCE_FILES, ids=lambda p: str(p.relative_to(INSTANCES)))
def test_validate(path):
    text, as_json = _invoke(["validate", path]), _invoke(["validate", path, "--json"])
    assert text.exit_code == as_json.exit_code == 0, text.stdout + text.stderr
    json.loads(as_json.stdout)


@pytest.mark.parametrize("command, args", _cases())
def test_command_as_text_json_and_report(tmp_path, command, args):
    _text_json_and_report(tmp_path, [command, *args], report=command != "sites")


@pytest.mark.parametrize("recipe", RECIPES, ids=lambda p: p.stem)
def test_sweep_recipe_as_text_and_json(tmp_path, recipe):
    for i, mode in enumerate([["--plot", tmp_path / "plot.png"], ["--json"]]):
        out = tmp_path / f"rows{i}.csv"
        result = _invoke(["sweep", recipe, "-o", out, *mode])
        assert result.exit_code == 0, result.stdout + result.stderr
        assert out.read_text().count("\n") >= 2
        if "--json" in mode:
            assert json.loads(result.stdout)["points"] == out.read_text().count("\n") - 1
        else:
            assert "points" in result.stderr and (tmp_path / "plot.png").stat().st_size > 0


@pytest.mark.slow
@pytest.mark.parametrize("stored", THRESHOLD_QUESTIONS, ids=lambda p: p.name.removesuffix(".expected.json"))
def test_threshold_question_as_text_with_report(tmp_path, stored):
    question = json.loads(stored.read_text())
    html = tmp_path / "thresholds.html"
    result = _invoke(["thresholds", INSTANCES / question["instance"], *question["args"], "--report", html])
    assert result.exit_code == question["exit_code"]
    assert result.stdout.strip() and "</html>" in html.read_text()


def test_every_stored_output_belongs_to_a_run():
    """The stored `--json` outputs are exactly those of today's instances and questions (none stale, none missing)."""
    expected = {cli_outputs.stored_path(command, path) for command, path, _ in cli_outputs.runs()}
    assert set(cli_outputs.STORE.rglob("*.json")) == expected


def test_outputs_compare_to_the_twelfth_digit_with_the_search_counters_aside():
    """make_cli_outputs.differences: last-bit float noise between CPUs (measured up to 2.2e-14) and
    the count of plans scored are not differences; any other change is, including a float beyond 1e-12."""
    same = cli_outputs.differences
    assert same('{"t": 0.17352028030407243, "evaluations": 30100}', '{"t": 0.17352028030407632, "evaluations": 30104}') == []
    assert same('{"t": 1.0}', '{"t": 1.000000000002}') == ['.t: 1.0 != 1.000000000002']
    assert same('{"t": [1, 2]}', '{"t": [1, 3]}') == ['.t[1]: 2 != 3']
    assert same('{"ok": true}', '{"ok": 1}') == ['.ok: True != 1']
    assert same('{"plan": "flat"}', '{"plan": "pp_group"}') != []
    assert same('{"a": 1}', '{"a": 1, "b": 2}') == [": keys ['b']"]
    assert same('{"v": 0.0}', '{"v": 1e-300}') != []
