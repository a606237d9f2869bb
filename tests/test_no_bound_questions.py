"""Constants with no valid search bound (planner/solvers/monotone.py: alpha(P) undefined when
1 + log10(P / 1e9) / alpha_log_divisor = 0, here P = 1e8 and divisor 1): every question falls
back to scoring every plan when the space is small, or says which constants (exit 2) when it
is not; `feasible` lists a fix it could not search exactly, naming them, and keeps the others.
Before: an infeasible such instance crashed `solve`'s explanation and `feasible` (exit 2 from an
InputError of the branch and bound's refusal), and `feasible` blamed "a fixed target"."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from planner.cli import main
from planner.questions.compare import compare
from planner.questions.feasible import feasible
from planner.schema.instance import parse_instance
from planner.solve import solve

NO_BOUND = {"name": "no bound", "model": {"params": 1e8}, "training": {"target_flop": 1e21},
            "fleet": {"hardware": "16xH100-SXM", "nodes": 8}, "limits": {"max_days": 1},
            "assumptions": {"constants": {"alpha_log_divisor": 1}},
            "search": {"max_inner_steps": 16, "max_regional_rounds": 4, "compression": [1, 16], "max_micro_batches": 4,
                       "group_sizes": [2, 4], "activation_compression": [1]}}
CONSTANT = "assumptions.constants.alpha_log_divisor"


def _data(**limits) -> dict:
    data = json.loads(json.dumps(NO_BOUND))
    data["limits"].update(limits)
    return data


def _fastest_s(data: dict) -> float:
    """The fastest plan whatever the duration limit, by the exhaustive oracle (independent of
    the explanation's own search)."""
    free = json.loads(json.dumps(data))
    free["limits"]["max_days"] = 1e6
    r = solve(parse_instance(free), solver="exhaustive")
    assert r.status == "optimal"
    return r.objective_value


def test_an_infeasible_solve_explains_itself_by_scoring_every_plan():
    data = _data(max_days=0.05)
    r = solve(parse_instance(data))
    assert r.status == "infeasible"
    assert r.fastest_time_s == pytest.approx(_fastest_s(data), rel=1e-12)
    assert r.infeasibility[0].startswith("duration-limit: the fastest plan reaches the target in 0.9 days")


def test_feasible_keeps_the_fixes_it_can_search_and_names_the_constants_for_the_others():
    data = _data(max_days=0.05)
    f = feasible(data)
    assert not f.feasible
    duration = [fix for fix in f.fixes if fix.limit == "duration"]
    assert duration and duration[0].fields["limits.max_days"] == pytest.approx(1.0)
    assert duration[0].result.objective_value == pytest.approx(_fastest_s(data), rel=1e-12)
    nodes = [line for line in f.no_fix if line.startswith("nodes:")]
    assert nodes and "not searched" in nodes[0] and CONSTANT in nodes[0] and "too large to score" in nodes[0]


def test_feasible_and_compare_on_a_small_space_answer_as_solve_does():
    data = _data()
    exact = solve(parse_instance(data), solver="exhaustive")
    assert exact.status == "optimal"
    f = feasible(data)
    assert f.feasible and f.result.objective_value == pytest.approx(exact.objective_value, rel=1e-12)
    rows = compare(data, ["16xH100-SXM"])
    assert rows[0].result.objective_value == pytest.approx(exact.objective_value, rel=1e-12)


@pytest.mark.parametrize("command", [["solve"], ["feasible"], ["compare", "--hardware", "16xH100-SXM"]])
def test_a_space_too_large_to_score_is_exit_2_naming_the_constant(tmp_path, command):
    path = tmp_path / "big.json"
    data = _data()
    data["fleet"]["nodes"] = 100_000
    path.write_text(json.dumps(data))
    result = CliRunner().invoke(main, [command[0], str(path), *command[1:], "--json"])
    assert result.exit_code == 2, result.output
    error = json.loads(result.stdout)["error"]
    assert [p["path"] for p in error["problems"]] == [CONSTANT]
    assert "too large to score every plan" in error["problems"][0]["message"]
    assert "fixed target" not in error["message"]


def test_the_infeasible_cli_answers_are_verdicts_not_errors(tmp_path):
    path = tmp_path / "tight.json"
    path.write_text(json.dumps(_data(max_days=0.05)))
    for args in (["solve", str(path)], ["feasible", str(path)], ["compare", str(path), "--hardware", "16xH100-SXM"]):
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 1, (args, result.output)
        assert "duration-limit" in result.output


def test_the_answer_names_the_solver_that_gave_it():
    """bnb refuses these constants and every plan is scored: the result says "exhaustive", not
    "bnb" (a reader must not take it for a branch-and-bound certificate); ordinary constants
    keep "bnb"."""
    r = solve(parse_instance(_data()))
    assert r.status == "optimal" and r.solver == "exhaustive"
    ordinary = _data()
    del ordinary["assumptions"]["constants"]["alpha_log_divisor"]
    ordinary["model"]["params"] = 1e10
    assert solve(parse_instance(ordinary)).solver == "bnb"
