"""The robust mixed-integer model (planner.mip.robust, docs/robust.md "The robust MIP"): its loop alone
on the hand-worked case (worst case and a quantile), its big-M against every plan of small spaces,
the certified answer against the robust branch and bound and the brute-force oracle on random
instances of every objective and both statistics, and the command line (scripts/check_robust_oracle.py
--solver highs runs 200 and more random instances; docs/robust.md gives its figure)."""

import json
import math

import numpy as np
import pyomo.environ as pyo
import pytest

from planner.mip.formulation import Grid, build
from planner.mip.robust import compute_range, outer_approximation, time_range
from planner.mip.tables import build_tables
from planner.objectives import MAX_COMPUTE, MIN_TIME, objective_named
from planner.evaluate import evaluate
from planner.questions.robust_scenarios import scenario_settings
from planner.robust import Statistic, optimise
from planner.robust_oracle import agree, brute_force, every_plan, random_instance
from planner.schema.instance import parse_instance
from planner.schema.plan import parse_plan
from planner.solvers import UnsupportedBySolver, backends
from planner.space import DecisionSpace

pytestmark = pytest.mark.skipif("highs" not in backends(), reason="HiGHS (highspy) is not installed")

QUALITY_SCENARIOS = {"inputs": [{"field": "assumptions.scenario",
                                 "distribution": "choice(\"optimistic\", \"expected\", \"conservative\")",
                                 "interval": None, "source": "test: the three columns of the quality tables"}]}


def _hand_raw() -> dict:
    return {"model": {"params": 7e9}, "training": {"target_flop": 1e23},
            "fleet": {"hardware": "16xH100-SXM", "nodes": 8},
            "network": {"wan": {"up_mbps": 16000, "down_mbps": 16000, "rtt_ms": 50}},
            "limits": {"max_days": 365},
            "search": {"modes": ["flat"], "precisions": ["fp16"], "min_nodes": 8, "max_inner_steps": 1,
                       "compression": [16, 500]},
            "objective": "min_time"}


def _hand(tmp_path):
    """tests/test_robust.py's hand-worked case: 8 nodes, flat, H = 1, compression 16x or 500x at 16 Gb/s,
    the quality scenario the only uncertain input (q(16) = 1.00 / 1.00 / 0.97, q(500) = 0.99 / 0.96 / 0.80)."""
    path = tmp_path / "quality.json"
    path.write_text(json.dumps(QUALITY_SCENARIOS))
    raw = _hand_raw()
    instance = parse_instance(raw)
    base = {"mode": "flat", "nodes": 8, "precision": "fp16", "inner_steps": 1}
    t16 = evaluate(instance, parse_plan({**base, "compression": 16}, "t")).values["time_to_target_s"]
    t500 = evaluate(instance, parse_plan({**base, "compression": 500}, "t")).values["time_to_target_s"]
    chosen, settings = scenario_settings(raw, paths=[path])
    assert [c.label for c in chosen] == ["as given", "scenario = optimistic", "scenario = conservative"]
    return instance, settings, t16, t500


def test_loop_alone_finds_the_hand_worked_robust_plan(tmp_path):
    """The worst case: 16x, T16 / 0.97 (T16 / 0.97 < 1.2 T500); the quantile of 2 of 3 (k = 2): the middle
    value, 500x at T500 (the expected column), below 16x's T16. The loop's own plan and value, before any
    certification, starting from the instance as given alone (the conservative scenario must join)."""
    instance, settings, t16, t500 = _hand(tmp_path)
    space = DecisionSpace.from_instance(instance, settings[0])
    plan, value, report = outer_approximation(settings, space, MIN_TIME, 1, "highs", [0])
    assert report.status == "optimal" and float(plan.compression[0]) == 16
    assert math.exp(value) == pytest.approx(t16 / 0.97, rel=1e-9)
    plan, value, report = outer_approximation(settings, space, MIN_TIME, 2, "highs", [0])
    assert report.status == "optimal" and float(plan.compression[0]) == 500
    assert math.exp(value) == pytest.approx(t500, rel=1e-9)


def test_big_m_ranges_hold_every_plan():
    """time_range / compute_range (the big-M of the statistic rows) against every plan of small random
    spaces under every scenario: lo <= ln T <= hi for every plan that reaches the target, ln C <= hi."""
    rng = np.random.default_rng(7)
    checked = 0
    while checked < 4:
        data = random_instance(rng)
        data["assumptions"]["profile"] = "reference"
        instance = parse_instance(data)
        _, settings = scenario_settings(data)
        space = DecisionSpace.from_instance(instance, settings[0])
        for s in settings[:3]:
            t = build_tables(s, space)
            if not t.sync:
                continue
            for objective in (MIN_TIME, MAX_COMPUTE):
                grid = Grid.initial_compute(t) if objective.maximise else Grid.initial(t)
                holder = pyo.ConcreteModel()
                holder.s = pyo.Block()
                f = build(t, grid, objective, block=holder.s)
                lo, hi = (compute_range if objective.maximise else time_range)(f)
                for b in every_plan(s, space):
                    if objective.maximise:
                        c = np.asarray(t.log_compute(b))
                        assert (c[np.isfinite(c)] <= hi).all()
                    else:
                        ln_t = t.log_time(b)
                        finite = ln_t[np.isfinite(ln_t)]
                        assert ((finite <= hi) & (finite >= lo)).all(), (finite.min(), finite.max(), lo, hi)
        checked += 1


def _solved_by_mip(seed: int, quantile: float | None = None, solver: str = "highs"):
    """The first of a seeded stream of random instances the MIP covers under every scenario (the dtplan
    profile's ZeRO-3 inside hierarchical groups is not: without hierarchical mode, as
    scripts/check_robust_oracle.py --solver does; nor a dtplan physics whose time does not factor), and
    its certified MIP answer: (settings, space, objective, statistic, labels, found, reports)."""
    rng = np.random.default_rng(500 + seed)
    while True:
        data = random_instance(rng)
        data["objective"] = ("min_time", "min_cost", "max_compute")[seed % 3]
        if data["assumptions"]["profile"] == "dtplan":
            data["search"]["modes"] = ["flat", "pp_group", "pipeline_wan"]
        chosen, settings = scenario_settings(data)
        space = DecisionSpace.from_instance(parse_instance(data), settings[0])
        objective, statistic = objective_named(data["objective"]), Statistic.of(len(settings), quantile)
        labels, reports = [c.label for c in chosen], []
        try:
            found, _, _ = optimise(settings, space, objective, statistic, labels, solver=solver, reports=reports)
        except UnsupportedBySolver:
            continue
        return settings, space, objective, statistic, labels, found, reports


@pytest.mark.parametrize("seed", range(12))
def test_robust_mip_matches_bnb_and_brute_force(seed):
    """Every objective (seed % 3), the worst case and quantile 0.8 (seed % 4 == 3): the certified MIP answer's
    value equals the robust branch and bound's and the oracle's (every plan under every scenario), and the
    loop's own best plan, where it ended optimal, has the oracle's robust value."""
    settings, space, objective, statistic, labels, found, reports = \
        _solved_by_mip(seed, 0.8 if seed % 4 == 3 else None)
    by_bnb, _, _ = optimise(settings, space, objective, statistic, labels)
    best = brute_force(settings, space, objective, statistic)
    assert agree(found, best), (found and found[1], best)
    assert agree(by_bnb, None if found is None else (found[1],))
    assert len(reports) == 1 and reports[0].backend == "highs"
    r = reports[0]
    if best is not None and r.status == "optimal":
        assert r.objective == pytest.approx(best[0], rel=1e-6)


def test_scip_matches_highs():
    if "scip" not in backends():
        pytest.skip("OR-Tools (SCIP) is not installed")
    settings, space, objective, statistic, labels, found, _ = _solved_by_mip(0)
    by_scip, _, _ = optimise(settings, space, objective, statistic, labels, solver="scip")
    assert agree(found, None if by_scip is None else (by_scip[1],))


def test_cli_solve_robust_with_highs(tmp_path):
    """solve --robust --solver highs: the same robust value as the branch and bound, the backend's report
    in --json, the regret table in text; refused with exit 2 naming --solver where the MIP does not cover
    the instance (ZeRO-3 inside hierarchical groups under the dtplan profile), and --write-model still refused."""
    from click.testing import CliRunner

    from planner.cli import main
    raw = _hand_raw()
    path = tmp_path / "i.json"
    path.write_text(json.dumps(raw))
    out = CliRunner().invoke(main, ["solve", str(path), "--robust", "--solver", "highs", "--json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    by_bnb = json.loads(CliRunner().invoke(main, ["solve", str(path), "--robust", "--json"]).stdout)
    assert data["robust"]["solver"] == "highs" and data["robust"]["status"] == "optimal"
    assert data["robust"]["objective_value"] == pytest.approx(by_bnb["robust"]["objective_value"], rel=1e-12)
    assert data["robust"]["mip"][0]["backend"] == "highs" and data["robust"]["mip"][0]["rounds"] >= 1
    worst = max(row["robust"] for row in data["regret"])
    assert data["robust"]["objective_value"] == pytest.approx(worst, rel=1e-9)
    text = CliRunner().invoke(main, ["solve", str(path), "--robust", "--solver", "highs"])
    assert text.exit_code == 0 and "Each plan under each scenario" in text.output and "highs" in text.output
    raw["assumptions"] = {"profile": "dtplan"}
    raw["search"]["modes"] = ["hierarchical"]
    path.write_text(json.dumps(raw))
    bad = CliRunner().invoke(main, ["solve", str(path), "--robust", "--solver", "highs"])
    assert bad.exit_code == 2 and "--solver" in bad.output and "hierarchical" in bad.output
    bad = CliRunner().invoke(main, ["solve", str(path), "--robust", "--solver", "highs", "--write-model",
                                    str(path.with_suffix(".lp"))])
    assert bad.exit_code == 2 and "--write-model" in bad.output


def test_robust_mip_refuses_what_the_nominal_mip_refuses():
    data = random_instance(np.random.default_rng(1))
    data["assumptions"] = {"profile": "dtplan", "constants": data["assumptions"].get("constants", {})}
    data["search"]["modes"] = ["hierarchical"]
    instance = parse_instance(data)
    chosen, settings = scenario_settings(data)
    space = DecisionSpace.from_instance(instance, settings[0])
    with pytest.raises(UnsupportedBySolver, match="hierarchical"):
        optimise(settings, space, MIN_TIME, Statistic.of(len(settings)), [c.label for c in chosen], solver="highs")
