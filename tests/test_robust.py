"""Robust plans (planner.robust, planner.questions.robust, docs/robust.md): the statistic, the
scenario set, the search against the brute-force oracle (every plan under every scenario), a
hand-worked case where the robust plan is not the nominal one, and the command line."""

import json
import math
from pathlib import Path

import numpy as np
import pytest

from planner.objectives import MIN_TIME, objective_named
from planner.evaluate import evaluate
from planner.questions.robust import robust_solve
from planner.questions.robust_scenarios import scenario_settings, scenarios
from planner.robust import Statistic, optimise
from planner.robust_oracle import agree, brute_force, random_instance
from planner.schema.instance import parse_instance
from planner.schema.plan import parse_plan
from planner.space import DecisionSpace

QUALITY_SCENARIOS = {"inputs": [{"field": "assumptions.scenario",
                                 "distribution": "choice(\"optimistic\", \"expected\", \"conservative\")",
                                 "interval": None, "source": "test: the three columns of the quality tables"}]}


def test_statistic_is_the_kth_largest():
    values = np.array([[3.0, 1.0], [7.0, 2.0], [5.0, np.nan]])
    assert Statistic.of(3).of_values(values).tolist() == [7.0, np.inf]      # worst case; NaN counts as inf
    assert Statistic.of(3, 0.6).k == 2            # ceil(0.6 * 3) = 2 scenarios met: the 2nd largest
    assert Statistic.of(3, 0.6).of_values(values).tolist() == [5.0, 2.0]
    assert Statistic.of(10, 0.9).k == 2           # 9 of 10 met (no rounding up to 10)
    assert Statistic.of(13, 1.0).k == 1
    with pytest.raises(Exception, match="--quantile"):
        Statistic.of(3, 0.0)


def test_bound_of_order_statistics_is_valid():
    """kth(L) <= kth(m) whenever L <= m entrywise (the proof in planner.robust), on random vectors."""
    rng = np.random.default_rng(0)
    for _ in range(200):
        m = rng.random((7, 5))
        lower = m * rng.random((7, 5))
        for k in range(1, 8):
            stat = Statistic(k, 7)
            assert (stat.of_values(lower) <= stat.of_values(m)).all()


def test_scenarios_each_input_at_each_end():
    from planner.questions.uncertainty import default_uncertainty
    raw = {"model": {"params": 7e9}, "fleet": {"hardware": "16xH100-SXM", "nodes": 4}}
    published = [default_uncertainty()]
    listed = scenarios(raw, published)
    fields = [s.overrides for s, _ in listed]
    assert fields[0] == {}
    assert {"assumptions.mfu": 0.346} in fields and {"assumptions.mfu": 0.462} in fields
    assert {"assumptions.constants.chinchilla_e": 1.7584} in fields
    chosen, settings = scenario_settings(raw, paths=published)
    # the reference profile's scenario is "expected": its choice repeats the instance as given
    assert "scenario = expected" not in [c.label for c in chosen]
    assert len(chosen) == len(listed) - 1 == len(settings) == 13      # 1 + 4 x 2 + 2 + 2
    assert settings[[c.label for c in chosen].index("mfu = 0.346 (low)")].assumptions.mfu == 0.346


def test_scenarios_of_constants_the_model_does_not_read_are_dropped(tmp_path):
    """The linear v1 replica constant is read only under replica_penalty linear_v1: under the reference
    profile (Chinchilla penalty) its ends are the instance as given, under linear_v1 two scenarios."""
    path = tmp_path / "u.json"
    path.write_text(json.dumps({"inputs": [{"field": "assumptions.constants.linear_v1_coefficient",
                                            "distribution": "uniform(0.01, 0.05)", "interval": [0.01, 0.05],
                                            "source": "test"}]}))
    raw = {"model": {"params": 7e9}, "fleet": {"hardware": "16xH100-SXM", "nodes": 4}}
    assert [c.label for c in scenario_settings(raw, paths=[path])[0]] == ["as given"]
    raw["assumptions"] = {"constants": {"replica_penalty": "linear_v1"}}
    assert len(scenario_settings(raw, paths=[path])[0]) == 3


def _check_one(data: dict, quantile=None):
    instance = parse_instance(data)
    chosen, settings = scenario_settings(data)
    statistic = Statistic.of(len(settings), quantile)
    space = DecisionSpace.from_instance(instance, settings[0])
    found, _, bound = optimise(settings, space, objective_named(instance.objective), statistic, [c.label for c in chosen])
    assert bound == (0.0 if instance.objective == "max_compute" else math.inf)     # the search finished
    best = brute_force(settings, space, objective_named(instance.objective), statistic)
    assert agree(found, best), (found and found[1], best)


@pytest.mark.parametrize("seed", range(12))
def test_robust_search_matches_brute_force(seed):
    """scripts/check_robust_oracle.py runs 200 and more of these (docs/robust.md gives its figure)."""
    rng = np.random.default_rng(100 + seed)
    data = random_instance(rng)
    data["objective"] = ("min_time", "min_cost", "max_compute")[seed % 3]
    _check_one(data, quantile=0.8 if seed % 4 == 3 else None)


def _hand_instance(uncertainty, up_mbps: float = 16000) -> dict:
    return {"model": {"params": 7e9}, "training": {"target_flop": 1e23},
            "fleet": {"hardware": "16xH100-SXM", "nodes": 8},
            "network": {"wan": {"up_mbps": up_mbps, "down_mbps": up_mbps, "rtt_ms": 50}},
            "limits": {"max_days": 365},
            "search": {"modes": ["flat"], "precisions": ["fp16"], "min_nodes": 8, "max_inner_steps": 1,
                       "compression": [16, 500]},
            "objective": "min_time"}


def test_hand_worked_robust_plan_differs_from_nominal(tmp_path):
    """8 nodes, flat, H = 1, compression 16x or 500x, the quality scenario the only uncertain input.
    Reference quality table with error feedback: q(16) = 1.00 / 1.00 / 0.97 and q(500) = 0.99 / 0.96 /
    0.80 (optimistic / expected / conservative). At 16 Gb/s the 500x plan is compute-bound and the
    16x plan waits on its sync, so under `expected` 500x is faster (the nominal plan); every time is
    (the scenario-free time) / q, so the worst case of 500x is T500 * 0.96 / 0.80 = 1.2 T500 and that
    of 16x is T16 / 0.97; 16x is the robust plan exactly when T16 / 0.97 < 1.2 T500."""
    path = tmp_path / "quality.json"
    path.write_text(json.dumps(QUALITY_SCENARIOS))
    raw = _hand_instance(path)
    instance = parse_instance(raw)
    base = {"mode": "flat", "nodes": 8, "precision": "fp16", "inner_steps": 1}
    t16 = evaluate(instance, parse_plan({**base, "compression": 16}, "t")).values["time_to_target_s"]
    t500 = evaluate(instance, parse_plan({**base, "compression": 500}, "t")).values["time_to_target_s"]
    assert t500 < t16                               # nominal: 500x
    assert t16 / 0.97 < 1.2 * t500                  # robust: 16x
    result = robust_solve(instance, raw, paths=[path])
    assert result.nominal.plan.compression == 500 and result.robust.plan.compression == 16
    assert result.robust.objective_value == pytest.approx(t16 / 0.97, rel=1e-9)
    rows = {r["scenario"]: r for r in result.rows}
    assert set(rows) == {"as given", "scenario = optimistic", "scenario = conservative"}
    assert rows["scenario = conservative"]["nominal"] == pytest.approx(1.2 * t500, rel=1e-9)
    assert rows["scenario = optimistic"]["nominal"] == pytest.approx(t500 * 0.96 / 0.99, rel=1e-9)
    assert rows["scenario = optimistic"]["robust"] == pytest.approx(t16, rel=1e-9)
    assert rows["as given"]["robust"] == pytest.approx(t16, rel=1e-9)


def test_quantile_of_three_scenarios_takes_the_middle(tmp_path):
    """Quantile 0.6 of 3 scenarios: the 2nd largest (met by 2). In the hand-worked case the 500x plan's
    2nd largest time is the expected one (T500), below the 16x plan's (T16): the nominal plan again."""
    path = tmp_path / "quality.json"
    path.write_text(json.dumps(QUALITY_SCENARIOS))
    raw = _hand_instance(path)
    instance = parse_instance(raw)
    result = robust_solve(instance, raw, paths=[path], quantile=0.6)
    assert result.statistic.k == 2
    assert result.robust.plan.compression == 500
    assert result.robust.objective_value == pytest.approx(result.nominal.objective_value, rel=1e-12)


def test_cli_solve_robust(tmp_path):
    from click.testing import CliRunner

    from planner.cli import main
    path = tmp_path / "i.json"
    path.write_text(json.dumps(_hand_instance(None, 16000)))
    out = CliRunner().invoke(main, ["solve", str(path), "--robust", "--json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    assert data["robust"]["status"] == "optimal" and data["statistic"]["k"] == 1
    assert len(data["regret"]) == data["statistic"]["scenarios"] == len(data["scenarios"])
    text = CliRunner().invoke(main, ["solve", str(path), "--robust"])
    assert text.exit_code == 0 and "Each plan under each scenario" in text.output and "mfu = 0.346 (low)" in text.output
    bad = CliRunner().invoke(main, ["solve", str(path), "--robust", "--write-model", str(path.with_suffix(".lp"))])
    assert bad.exit_code == 2 and "--write-model" in bad.output
    bad = CliRunner().invoke(main, ["solve", str(path), "--quantile", "0.5"])
    assert bad.exit_code == 2 and "--robust" in bad.output
    bad = CliRunner().invoke(main, ["solve", str(path), "--robust", "--quantile", "1.5"])
    assert bad.exit_code == 2 and "--quantile" in bad.output


def _write_quality_only(tmp_path):
    """The hand-worked instance and an uncertainty folder with only the quality scenarios (the CLI
    reads models/assumptions/uncertainty/*.json: the files of the shipped folder)."""
    path = tmp_path / "i.json"
    path.write_text(json.dumps(_hand_instance(None, 16000)))
    return path


def test_cli_feasible_robust_names_the_scenarios(tmp_path):
    """A 30-day limit between the hand-worked plans' times under the scenarios: reachable under some."""
    from click.testing import CliRunner

    from planner.cli import main
    data = _hand_instance(None, 16000)
    raw_instance = parse_instance(data)
    chosen, settings = scenario_settings(data)
    # the fastest plan's days under each scenario, solved one by one: the verdict's reference
    from planner.solve import solve
    from planner.questions.robust import scenario_instances
    days = [solve(i, "min_time").objective_value / 86400 for i in scenario_instances(raw_instance, data, chosen)]
    limit = (min(days) + max(days)) / 2
    data["limits"]["max_days"] = limit
    path = tmp_path / "i.json"
    path.write_text(json.dumps(data))
    out = CliRunner().invoke(main, ["feasible", str(path), "--robust", "--json"])
    assert out.exit_code == 1, out.output            # no single plan reaches it under every scenario
    result = json.loads(out.stdout)
    assert result["verdict"] == "some"
    reachable = {r["scenario"]: r["reachable"] for r in result["scenarios"]}
    assert reachable == {c.label: d <= limit for c, d in zip(chosen, days)}
    text = CliRunner().invoke(main, ["feasible", str(path), "--robust"])
    assert "reachable under some scenarios" in text.output and "not under" in text.output


def test_cli_sweep_robust_rows_are_robust_solves(tmp_path):
    from click.testing import CliRunner

    from planner.cli import main
    path = _write_quality_only(tmp_path)
    out = CliRunner().invoke(main, ["sweep", str(path), "--grid", "fleet.nodes=8", "--robust", "--workers", "1",
                                    "--json"])
    assert out.exit_code == 0, out.output
    row = json.loads(out.stdout)["rows"][0]
    data = _hand_instance(None, 16000)
    result = robust_solve(parse_instance(data), data)
    assert row["status"] == "optimal"
    assert row["objective_value"] == pytest.approx(result.robust.objective_value, rel=1e-12)
    bad = CliRunner().invoke(main, ["sweep", str(path), "--grid", "fleet.nodes=8", "--robust", "--command", "feasible"])
    assert bad.exit_code == 2 and "--robust" in bad.output


def test_cli_thresholds_robust_row_is_the_robust_min_cost():
    from click.testing import CliRunner

    from planner.cli import main
    from planner.questions import thresholds as q
    out = CliRunner().invoke(main, ["thresholds", "--compute", "16", "--target-flop", "1e24", "--accelerator",
                                    "H100-SXM", "--robust", "--json"])
    assert out.exit_code == 0, out.output
    answer = json.loads(out.stdout)["answers"][0]
    th = q.Thresholds(16.0, None, None, None, None)
    node = q.build_node(q.load_accelerators()["H100-SXM"], th)
    raw = {"model": {"params": answer["model_params"]}, "training": {"target_flop": 1e24}}
    data = q.node_instance(raw, node, th, q.node_cap(raw), False)
    robust = robust_solve(parse_instance(data), data, "min_cost")
    assert answer["nodes"] == robust.robust.plan.nodes
    assert answer["verified"].startswith("robust (worst case")
    # the worst case needs at least the nodes the instance as given needs
    assert answer["nodes"] >= robust.nominal.plan.nodes


def _check_pools(data: dict, quantile=None):
    from planner.fleet.pools import pool_settings
    from planner.questions.robust import robust_optimum
    from planner.questions.robust_scenarios import scenario_pools
    from planner.robust_oracle import brute_force_pools
    from planner.solvers.pool_parts import base_space
    instance = parse_instance(data)
    result, chosen, statistic, _ = robust_optimum(instance, data, objective_named(instance.objective), quantile)
    space = base_space(instance, pool_settings(instance))
    _, pools = scenario_pools(data, scored=(space.modes, space.precisions))
    assert [c.label for c in chosen] == [c.label for c in scenario_pools(data, scored=(space.modes, space.precisions))[0]]
    best = brute_force_pools(instance, pools, objective_named(instance.objective), Statistic.of(len(pools), quantile))
    assert (result.plan is None) == (best is None), (result.objective_value, best)
    if best is not None:
        assert result.status == "optimal" and math.isclose(result.objective_value, best, rel_tol=1e-9), \
            (result.objective_value, best)
        assert sum(result.plan.pool_nodes.values()) == result.plan.nodes


@pytest.mark.parametrize("seed", range(6))
def test_robust_pools_match_brute_force(seed):
    """Fleets of two pools: the decomposition (planner.robust_pools) against every assignment of
    nodes to pools under every scenario (scripts/check_robust_oracle.py --pools runs more)."""
    from planner.robust_oracle import random_pool_instance
    data = random_pool_instance(np.random.default_rng(300 + seed))
    data["objective"] = ("min_time", "min_cost", "max_compute")[seed % 3]
    _check_pools(data, quantile=0.8 if seed == 4 else None)


def test_robust_on_pools_from_the_command_line():
    """mixed-a100-h100: solve --robust answers (exit 0) with the plan's pools and the regret table; the
    proportional rule is refused with exit 2 naming fleet.sync_rule."""
    from click.testing import CliRunner

    from planner.cli import main
    path = Path(__file__).resolve().parent.parent / "instances" / "mixed-a100-h100.json"
    out = CliRunner().invoke(main, ["solve", str(path), "--robust", "--json"])
    assert out.exit_code == 0, out.output
    answer = json.loads(out.output)
    plan = answer["robust"]["plan"]
    assert sum(plan["pool_nodes"].values()) == plan["nodes"]
    assert len(answer["regret"]) == answer["statistic"]["scenarios"]
    worst = max(row["robust"] for row in answer["regret"])      # min_time, worst case: the largest time
    assert math.isclose(answer["robust"]["objective_value"], worst, rel_tol=1e-9)
    out = CliRunner().invoke(main, ["solve", str(path), "--robust", "--set", "fleet.sync_rule=proportional"])
    assert out.exit_code == 2 and "fleet.sync_rule" in out.output and "--robust" in out.output


def test_incumbent_prunes_only_what_cannot_tie():
    """robust.optimise with an incumbent: just above the optimum it finds the same value, just below
    it finds nothing (no plan is that good)."""
    data = random_instance(np.random.default_rng(7))
    data["objective"] = "min_time"
    data["limits"]["max_days"] = 5000
    instance = parse_instance(data)
    chosen, settings = scenario_settings(data)
    statistic = Statistic.of(len(settings))
    labels = [c.label for c in chosen]
    space = DecisionSpace.from_instance(instance, settings[0])
    found, _, _ = optimise(settings, space, MIN_TIME, statistic, labels)
    assert found is not None
    again, _, _ = optimise(settings, space, MIN_TIME, statistic, labels, incumbent=found[1] * (1 + 1e-9))
    assert again is not None and math.isclose(again[1], found[1], rel_tol=1e-12)
    none, _, _ = optimise(settings, space, MIN_TIME, statistic, labels, incumbent=found[1] * 0.99)
    assert none is None


def test_reduced_space_searched_when_scenarios_list_its_classes():
    """SpaceCheck.space_for: the reduced space for a group of scenarios exactly when each lists the
    nominal reduced classes (built here afresh under each scenario's Setting and compared)."""
    from planner.robust import SpaceCheck, same_classes
    data = json.loads((Path(__file__).resolve().parent.parent / "instances" / "compare-1e27.json").read_text())
    instance = parse_instance(data)
    chosen, settings = scenario_settings(data)
    labels = [c.label for c in chosen]
    space = DecisionSpace.from_instance(instance, settings[0])
    seen = set()
    for j in range(1, len(settings)):
        check = SpaceCheck(space, MIN_TIME, settings, labels)
        check.prime()
        searched, orders = check.space_for([0, j])
        nominal, mine = DecisionSpace.from_instance(instance, settings[0]).for_objective(settings[0], MIN_TIME), \
            DecisionSpace.from_instance(instance, settings[0]).for_objective(settings[0], MIN_TIME)
        same = all(same_classes(nominal.classes(settings[0], m, p, e), mine.classes(settings[j], m, p, e))
                   for m in nominal.modes for p in nominal.precisions for e in nominal.expert_scopes(settings[0], m))
        assert (searched is check.reduced) == same, labels[j]
        seen.add(same)
    assert seen == {True, False}      # both paths met on this instance


def test_cli_solve_robust_report_holds_both_answers_and_the_regret_table(tmp_path):
    """solve --robust --report (planner.present.robust.robust_report): the robust and the nominal
    answer and one regret row per scenario, each scenario's label in the page."""
    from click.testing import CliRunner

    from planner.cli import main
    path = Path(__file__).resolve().parent.parent / "instances" / "solve-1e24-64xh100.json"
    report = tmp_path / "robust.html"
    out = CliRunner().invoke(main, ["solve", str(path), "--robust", "--report", str(report), "--json"])
    assert out.exit_code == 0, out.output
    answer = json.loads(out.output[:out.output.rindex("}") + 1])
    page = report.read_text()
    assert "Robust answer (worst case over" in page and "Nominal answer" in page
    assert all(row["scenario"].replace("&", "&amp;") in page for row in answer["regret"])


def test_robust_solve_counts_the_space_as_the_nominal_solve_does():
    """The robust optimum is searched over the nominal plan space (each plan scored under every
    scenario), so its space size is the nominal solve's count; it was reported as 0 ("of 0.00e+00 plans
    scored"). A fleet of pools is not counted under --robust and says why."""
    from click.testing import CliRunner

    from planner.cli import main
    from planner.solve import solve
    root = Path(__file__).resolve().parents[1]
    path = root / "instances" / "solve-1e24-64xh100.json"
    data = json.loads(path.read_text())
    nominal = solve(parse_instance(data), MIN_TIME)
    robust = robust_solve(parse_instance(data), data).robust
    assert nominal.space_size > 10 ** 11 and robust.space_size == nominal.space_size
    out = CliRunner().invoke(main, ["solve", "--robust", str(root / "instances" / "mixed-a100-h100.json")])
    assert out.exit_code == 0, out.output
    assert "plans scored (the space's size not counted: a fleet of pools under --robust)" in out.output
