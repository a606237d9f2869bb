"""`dtplan solve`: the optimum it prints is the evaluator's, and the exit codes."""

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from planner.cli import main
from planner.evaluate import evaluate
from planner.schema.instance import load_instance, parse_instance
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
    for text in ("OPTIMAL", "min_time", "solver bnb", "Binding at the optimum", "Per outer step"):
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
    data = json.loads(SMALL.read_text())
    data["model"], data["training"] = {}, {"tokens": 1e12}
    data["search"] = {"params": [2e9, 7e9]}
    data["objective"] = "max_compute"
    sizes = tmp_path / "sizes.json"
    sizes.write_text(json.dumps(data))
    result = run("solve", sizes, "--objective", "min_time")     # sizes compared by a fixed FLOP target only
    assert result.exit_code == 2 and "training.target_flop: required with search.params" in result.stderr
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
    result = run("solve", SMALL, "--time-limit", "0.000001")    # a wall limit: past before the first plan is scored
    assert result.exit_code == 3, result.output
    assert "TIME_LIMIT" in result.output and "gap -" in result.output and "before any plan" in result.output
    assert run("solve", SMALL, "--time-limit", "-1").exit_code == 2


# -- max_compute ----------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["c_quality", "c_local"])
def test_max_compute_rescores_and_beats_the_min_time_plan(kind):
    data = json.loads(SMALL.read_text())
    data["training"]["target_kind"] = kind
    instance = parse_instance(data)
    r = solve(instance, objective="max_compute")
    assert r.status == "optimal" and r.gap == 0.0 and r.compute_kind == kind
    again = evaluate(instance, r.plan)
    assert again.values[kind] == pytest.approx(r.objective_value, rel=1e-12)
    fastest = solve(instance, objective="min_time")
    assert r.evaluation.feasible     # max_compute has no target: a missed one is a warning, not a broken limit
    if fastest.plan is None:     # no plan reaches the target in time: not even the most compute does
        assert fastest.status == "infeasible" and r.objective_value < instance.training.target_flop
        assert any("max_compute has no target" in w for w in r.evaluation.warnings)
        assert fastest.infeasibility == [f"duration-limit: the most C_quality any plan reaches in 365.0 days is "
                                         f"{r.objective_value:.3e} FLOP, the target is 1.000e+24 FLOP"]
    else:
        assert fastest.evaluation.values[kind] <= r.objective_value * (1 + 1e-12)


def test_cli_max_compute_exit_codes_and_json(tmp_path):
    result = run("solve", SMALL, "--objective", "max_compute")
    assert result.exit_code == 0, result.output
    assert "OPTIMAL  max_compute:" in result.output and "FLOP C_local within the duration limit" in result.output
    out = json.loads(run("solve", SMALL, "--objective", "max_compute", "--json").stdout)
    assert out["objective"] == "max_compute" and out["compute_kind"] == "c_local"
    assert out["evaluation"]["values"]["c_local"] == pytest.approx(out["objective_value"], rel=1e-12)
    data = json.loads(SMALL.read_text())
    data["model"] = {"params": 5e12}
    data["fleet"]["nodes"] = 8
    too_big = tmp_path / "too_big.json"
    too_big.write_text(json.dumps(data))
    result = run("solve", too_big, "--objective", "max_compute")
    assert result.exit_code == 1 and "memory-cap" in result.output


# -- model size as a decision (search.params) ----------------------------------------------

def _kind(objective):
    return "c_quality" if objective == "max_compute" else "c_local"


def _sizes(sizes, objective="max_compute", **training):
    """SMALL with candidate sizes (max_compute of C_quality: the faster max_compute search)."""
    data = json.loads(SMALL.read_text())
    data["model"] = {}
    data["training"] = training or {"target_flop": 1e24, "target_kind": _kind(objective)}
    data["search"] = {"params": sizes}
    data["objective"] = objective
    return data


@pytest.mark.parametrize("objective", ["max_compute", "min_time", "min_cost"])
def test_a_size_set_picks_the_best_single_size(objective):
    sizes = [2e9, 20e9, 7e9]
    r = solve(parse_instance(_sizes(sizes, objective)))
    single = {}
    for p in sizes:
        data = json.loads(SMALL.read_text())
        data["model"] = {"params": p}
        data["training"]["target_kind"] = _kind(objective)
        data["objective"] = objective
        single[p] = solve(parse_instance(data)).objective_value
    best = (max if objective == "max_compute" else min)(single.values())
    assert r.objective_value == pytest.approx(best, rel=1e-12)
    assert single[r.model_params] == pytest.approx(best, rel=1e-12)
    assert [c["params"] for c in r.candidates] == sorted(sizes)
    assert r.evaluation.setting.params == r.model_params
    assert r.to_dict()["model_params"] == r.model_params


def test_tied_sizes_go_to_the_smaller_model():
    # min_cost by a target any size reaches with one node: same cost, then the faster (smaller) model
    data = _sizes([7e9, 2e9], "min_cost", target_flop=1e18)
    r = solve(parse_instance(data))
    assert r.plan.nodes == 1 and r.model_params == 2e9


def test_cli_shows_the_chosen_size(tmp_path):
    path = tmp_path / "sizes.json"
    path.write_text(json.dumps(_sizes([2e9, 7e9])))
    result = run("solve", path)
    assert result.exit_code == 0, result.output
    assert "best of the candidates 2B, 7B (search.params)" in result.output
    out = json.loads(run("solve", path, "--json").stdout)
    assert out["model_params"] in (2e9, 7e9) and len(out["candidates"]) == 2
    assert out["evaluation"]["resolved"]["params"] == out["model_params"]
    assert "candidate sizes 2B, 7B" in run("validate", path).output


@pytest.mark.parametrize("change, message", [
    (lambda d: d["search"].update(params=[2e9, 2e9]), "search.params[1]: duplicate of search.params[0]"),
    (lambda d: d["search"].update(params=[2e9, 5]), "search.params[1]: must be a number >= 1e6"),
    (lambda d: d["search"].update(params=[]), "search.params: must be a non-empty list"),
    (lambda d: d["model"].update(params=7e9), "model.params: not with search.params"),
    (lambda d: d["model"].update(preset="covenant-72B"), "model.preset: not with search.params"),
    (lambda d: d.update(objective="min_time", training={"tokens": 1e12}),
     "training.target_flop: required with search.params for objective min_time"),
    (lambda d: d.update(objective="min_cost", training={}),
     "training.target_flop: required with search.params for objective min_cost"),
])
def test_size_set_errors_name_the_field(tmp_path, change, message):
    data = _sizes([2e9, 7e9])
    change(data)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    for command in ("validate", "solve"):
        result = run(command, path)
        assert result.exit_code == 2 and message in result.stderr, result.stderr


def test_max_compute_time_limit_returns_the_best_plan_and_a_valid_upper_bound():
    data = json.loads(SMALL.read_text())
    data["training"]["target_kind"] = "c_quality"
    data["fleet"]["nodes"] = 2000
    instance = parse_instance(data)
    exact = solve(instance, objective="max_compute")
    assert exact.status == "optimal" and exact.best_bound == exact.objective_value
    cut = solve(instance, objective="max_compute", time_limit_s=1e-6)
    assert cut.status in ("time_limit", "optimal")
    assert cut.best_bound >= exact.objective_value * (1 - 1e-12)      # an upper bound on the compute
    if cut.plan is not None:
        assert cut.objective_value <= exact.objective_value * (1 + 1e-12)
        assert cut.gap == pytest.approx((cut.best_bound - cut.objective_value) / cut.objective_value)


def test_equal_compute_across_sizes_goes_to_the_smaller_model():
    # One node reaches C_quality = C_thr = F u W whatever the size (no sync, chi = 1): an exact tie.
    data = _sizes([7e9, 2e9, 4e9])
    data["fleet"]["nodes"] = 1
    r = solve(parse_instance(data))
    values = [c["objective_value"] for c in r.candidates]
    assert max(values) == pytest.approx(min(values), rel=1e-12)
    assert r.model_params == 2e9 and r.plan.nodes == 1
