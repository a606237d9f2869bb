"""`dtplan solve`: the optimum it prints is the evaluator's, and the exit codes."""

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from planner.cli import main
from planner.evaluate import evaluate
from planner.instance import load_instance, parse_instance
from planner.solve import solve

REPO = Path(__file__).resolve().parents[1]
SMALL = REPO / "instances" / "solve-1e24-64xh100.json"


def run(*args):
    result = CliRunner().invoke(main, [str(a) for a in args])
    assert "Traceback" not in result.output + (result.stderr or "")
    return result


def test_the_shipped_example_solves_and_rescores_exactly():
    instance = load_instance(SMALL)
    r = solve(instance)
    assert r.status == "optimal" and r.gap == 0.0
    again = evaluate(instance, r.plan)
    assert again.values["time_to_target_s"] == pytest.approx(r.objective_value, rel=1e-12)
    assert again.feasible
    assert r.objective_value <= 365 * 86400


def test_min_cost_uses_the_fewest_nodes_that_meet_the_deadline():
    data = json.loads(SMALL.read_text())
    data["objective"] = "min_cost"
    data["limits"] = {"max_days": 60}
    instance = parse_instance(data)
    r = solve(instance)
    assert r.status == "optimal"
    n = r.plan.nodes
    assert r.evaluation.values["time_to_target_s"] <= 60 * 86400
    assert r.objective_value == n * 16 * 25000
    # One node fewer cannot meet the deadline with any plan.
    data["fleet"]["nodes"] = n - 1
    data["objective"] = "min_time"
    fewer = solve(parse_instance(data))
    assert fewer.status == "infeasible"
    assert fewer.infeasibility and fewer.infeasibility[0].startswith("duration-limit")


def test_cli_solve_prints_status_plan_and_binding_limits():
    result = run("solve", SMALL)
    assert result.exit_code == 0, result.output
    for text in ("OPTIMAL", "min_time", "solver oracle", "Binding at the optimum", "Per outer step"):
        assert text in result.output


def test_cli_solve_json_agrees_with_the_evaluation():
    out = json.loads(run("solve", SMALL, "--json").stdout)
    assert out["status"] == "optimal"
    assert out["objective_value"] == pytest.approx(out["evaluation"]["values"]["time_to_target_s"], rel=1e-12)


def test_cli_solve_infeasible_exits_1_with_the_reason(tmp_path):
    data = json.loads(SMALL.read_text())
    data["limits"] = {"max_days": 1}
    path = tmp_path / "i.json"
    path.write_text(json.dumps(data))
    result = run("solve", path)
    assert result.exit_code == 1
    assert "INFEASIBLE" in result.output and "duration-limit" in result.output


def test_cli_solve_bad_input_exits_2(tmp_path):
    assert run("solve", tmp_path / "missing.json").exit_code == 2
    result = run("solve", SMALL, "--objective", "max_compute")
    assert result.exit_code == 2 and "--objective" in result.stderr
    result = run("solve", SMALL, "--solver", "gurobi")
    assert result.exit_code == 2 and "unknown solver" in result.stderr


def test_model_too_large_for_the_fleet_is_explained(tmp_path):
    data = json.loads(SMALL.read_text())
    data["model"] = {"params": 5e12}
    data["fleet"]["nodes"] = 8
    r = solve(parse_instance(data))
    assert r.status == "infeasible"
    assert "memory" in r.infeasibility[0]


def test_moe_plans_state_their_expert_parallel_scope():
    # A small-active-fraction MoE on A100s where keeping every expert on each node
    # (no expert parallelism) beats paying WAN all-to-alls: the printed plan must say
    # 'none' (unset means 'global' for MoE) and re-score to the solver's optimum.
    data = {"model": {"params": 98e9, "active_params": 6e9, "moe_layers": 58},
            "training": {"target_flop": 1e24}, "fleet": {"hardware": "50xA100-80GB", "nodes": 64},
            "limits": {"max_days": 365}}
    r = solve(parse_instance(data))
    assert r.status == "optimal"
    assert r.plan.expert_parallel in ("none", "global")
    assert evaluate(parse_instance(data), r.plan).values["time_to_target_s"] == pytest.approx(r.objective_value,
                                                                                                 rel=1e-12)
    assert r.plan.expert_parallel == "none"


@pytest.mark.parametrize("objective", ["min_time", "min_cost"])
def test_time_limit_returns_the_best_plan_and_a_valid_bound(objective):
    data = {"model": {"params": 70e9}, "training": {"target_flop": 1e26}, "fleet": {"hardware": "16xH100-SXM",
            "nodes": 20000}, "limits": {"max_days": 2000}, "objective": objective}
    instance = parse_instance(data)
    exact = solve(instance)
    assert exact.status == "optimal"
    cut = solve(instance, time_limit_s=1e-6)
    assert cut.status in ("time_limit", "optimal")
    assert cut.best_bound <= exact.objective_value * (1 + 1e-12)       # the bound is proven
    if cut.plan is not None:
        assert cut.objective_value >= exact.objective_value * (1 - 1e-12)
        assert cut.gap == pytest.approx((cut.objective_value - cut.best_bound) / cut.objective_value)
    if cut.status == "time_limit" and cut.plan is not None:
        assert cut.gap > 0
    generous = solve(instance, time_limit_s=600)
    assert generous.status == "optimal" and generous.plan == exact.plan


def test_cli_time_limit_prints_the_gap():
    result = run("solve", SMALL, "--time-limit", "0.000001")
    assert result.exit_code == 0, result.output
    assert ("TIME_LIMIT" in result.output and "gap" in result.output) or "OPTIMAL" in result.output
    assert run("solve", SMALL, "--time-limit", "-1").exit_code == 2
