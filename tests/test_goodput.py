"""`fleet.goodput`: the fraction of wall-clock the fleet spends training (issue 5, item 3).

What is asserted, each against an independent figure:
- by hand: one node trains at 6 P D / (F u) seconds; the wall-clock is that / goodput;
- against the same instance at goodput 1 (the reference model, checked by the conformance
  cases): rates per training second are unchanged, wall-clock divides by the goodput, and the
  window view at (goodput g, limit W) is the window view at (1, g W);
- for the planner, with the exhaustive oracle and a MIP backend as well as the default branch
  and bound: every objective at (g, W) has the optimum of (1, g W), and the min_time optimum
  is the same plan at any goodput;
- `dtplan feasible`: the goodput fix is the fastest plan's training time over the limit,
  rounded up to 0.001, feasible there and not 0.001 below (re-solved here).
"""

import json
import math

import pytest
from click.testing import CliRunner

from planner.cli import main
from planner.cost.duration import SECONDS_PER_DAY
from planner.evaluate import evaluate
from planner.questions.feasible import feasible
from planner.schema.instance import parse_instance
from planner.schema.plan import parse_plan
from planner.solve import solve
from planner.solvers import installed
from tests.raw import with_fields as _with

BASE = {
    "name": "7B to 3e23 FLOP on 32 H100 nodes", "model": {"params": 7e9}, "training": {"target_flop": 3e23},
    "fleet": {"hardware": "16xH100-SXM", "nodes": 32},
    "network": {"wan": {"up_mbps": 1000, "down_mbps": 1000, "rtt_ms": 100}},
    "limits": {"max_days": 3000},
    "search": {"modes": ["flat"], "compression": [1, 4], "max_inner_steps": 200},
}
PLAN = {"mode": "flat", "nodes": 32, "precision": "fp16", "inner_steps": 100, "compression": 4, "streaming": False}


def _evaluate(raw: dict, plan: dict = PLAN):
    return evaluate(parse_instance(raw), parse_plan(plan))


# -- the instance field -----------------------------------------------------------------

def test_goodput_defaults_to_one_and_is_echoed():
    e = _evaluate(BASE)
    assert parse_instance(BASE).fleet.goodput == 1.0
    assert e.values["goodput"] == 1.0 and e.to_dict()["resolved"]["goodput"] == 1.0
    assert e.values["training_time_s"] == e.values["time_to_target_s"]


@pytest.mark.parametrize("bad, shown", [(0, "got 0"), (-0.5, "got -0.5"), (1.2, "got 1.2"), ("0.9", "'0.9'"),
                                        (True, "true"), (None, "null")])
def test_bad_goodput_names_the_field(bad, shown):
    from planner.schema.errors import InputError
    with pytest.raises(InputError) as err:
        parse_instance(_with(BASE, fleet__goodput=bad))
    message = str(err.value)
    assert "fleet.goodput: must be a number in (0, 1] (the fraction of wall-clock spent training" in message
    assert shown in message


def test_bad_goodput_in_a_file_exits_2_without_traceback(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(_with(BASE, fleet__goodput=1.5)))
    r = CliRunner().invoke(main, ["solve", str(path)])
    assert r.exit_code == 2 and "fleet.goodput" in r.output and "Traceback" not in r.output
    r = CliRunner().invoke(main, ["feasible", "--target-flop", "1e24", "--hardware", "16xH100-SXM",
                                  "--nodes", "8", "--goodput", "0"])
    assert r.exit_code == 2 and "--goodput" in r.output


# -- the evaluator ------------------------------------------------------------------------

def test_one_node_by_hand():
    """Local training: no sync, no efficiency factor; T_train = 6 P D / (F u)."""
    raw = _with(BASE, fleet__goodput=0.8)
    plan = {"mode": "flat", "nodes": 1, "precision": "fp16", "inner_steps": 1, "compression": 1, "streaming": False}
    e = _evaluate(raw, plan)
    peak = 16 * 990e12
    u = e.setting.assumptions.mfu
    training_s = 3e23 / (peak * u)
    assert e.values["training_time_s"] == pytest.approx(training_s, rel=1e-12)
    assert e.values["time_to_target_s"] == pytest.approx(training_s / 0.8, rel=1e-12)
    # in the 3,000-day window it trains 0.8 of the time: C = F u 0.8 W
    assert e.values["c_local"] == pytest.approx(peak * u * 0.8 * 3000 * SECONDS_PER_DAY, rel=1e-12)
    assert e.values["global_mfu"] == pytest.approx(0.8 * u, rel=1e-12)


TARGETS = [("c_local", 3e23), ("c_quality", 3e22)]     # both reached by PLAN


@pytest.mark.parametrize("target_kind, target_flop", TARGETS)
@pytest.mark.parametrize("goodput", [0.9, 0.37])
def test_rates_unchanged_wall_clock_divided(target_kind, target_flop, goodput):
    raw = _with(BASE, training__target_kind=target_kind, training__target_flop=target_flop)
    one = _evaluate(raw).values
    g = _evaluate(_with(raw, fleet__goodput=goodput)).values
    assert math.isfinite(one["time_to_target_s"])
    for key in ("t_step_s", "outer_time_s", "tokens_per_s", "compute_utilization", "duty_cycle", "eta_h",
                "eta_c", "eta_target", "eta_r_target", "cost_usd"):
        assert g[key] == pytest.approx(one[key], rel=1e-12), key
    assert g["training_time_s"] == pytest.approx(one["time_to_target_s"], rel=1e-12)
    assert g["time_to_target_s"] == pytest.approx(one["time_to_target_s"] / goodput, rel=1e-12)


@pytest.mark.parametrize("target_kind", ["c_local", "c_quality"])
def test_window_at_goodput_is_the_window_of_the_training_time(target_kind):
    g, days = 0.6, 400.0
    at_g = _evaluate(_with(BASE, training__target_kind=target_kind, fleet__goodput=g, limits__max_days=days)).values
    at_1 = _evaluate(_with(BASE, training__target_kind=target_kind, limits__max_days=days * g)).values
    for key in ("tokens", "c_throughput", "c_local", "c_quality", "eta_r", "eta", "chi", "outer_steps"):
        assert at_g[key] == pytest.approx(at_1[key], rel=1e-12), key
    assert at_g["global_mfu"] == pytest.approx(g * at_1["global_mfu"], rel=1e-12)   # over the whole wall-clock


def test_duration_limit_counts_the_wall_clock():
    training_days = _evaluate(BASE).values["time_to_target_s"] / SECONDS_PER_DAY
    limit = training_days / 0.75                     # exactly enough at goodput 0.75
    assert _evaluate(_with(BASE, fleet__goodput=0.76, limits__max_days=limit)).feasible
    e = _evaluate(_with(BASE, fleet__goodput=0.74, limits__max_days=limit))
    assert not e.feasible and "training at goodput 0.74" in e.violations[0]


# -- the planner ------------------------------------------------------------------------

def _cases():
    """(solver, objective, target kind, target FLOP): every combination a solver answers
    (the exhaustive oracle and the MIP backends: min_time and min_cost, both target kinds)."""
    solvers = ["bnb", "exhaustive"] + (["highs"] if installed("highspy") else [])
    for solver in solvers:
        for objective in ("min_time", "max_compute", "min_cost"):
            for kind, flop in TARGETS:
                if solver != "bnb" and objective == "max_compute":
                    continue
                yield solver, objective, kind, flop


@pytest.mark.parametrize("solver, objective, target_kind, target_flop", list(_cases()))
def test_each_objective_at_goodput_is_the_objective_over_the_training_time(solver, objective, target_kind,
                                                                           target_flop):
    g, days = 0.6, 100.0
    raw = _with(BASE, training__target_kind=target_kind, training__target_flop=target_flop)
    at_g = solve(parse_instance(_with(raw, fleet__goodput=g, limits__max_days=days)), objective, solver=solver)
    at_1 = solve(parse_instance(_with(raw, limits__max_days=days * g)), objective, solver=solver)
    assert at_g.status == at_1.status == "optimal"
    assert at_g.plan == at_1.plan
    scale = 1.0 / g if objective == "min_time" else 1.0
    assert at_g.objective_value == pytest.approx(at_1.objective_value * scale, rel=1e-9)


def test_min_time_plan_does_not_depend_on_goodput():
    plans = {g: solve(parse_instance(_with(BASE, fleet__goodput=g))) for g in (1.0, 0.5, 0.05)}
    assert len({r.plan for r in plans.values()}) == 1
    assert plans[0.05].objective_value == pytest.approx(plans[1.0].objective_value / 0.05, rel=1e-12)


# -- feasibility ----------------------------------------------------------------------------

def _ok(raw: dict) -> bool:
    return solve(parse_instance(raw)).status == "optimal"


def test_goodput_fix_is_training_time_over_the_limit():
    training_s = solve(parse_instance(BASE)).objective_value
    days = math.ceil(training_s / SECONDS_PER_DAY / 0.7)         # enough at goodput 0.7, not at 0.5
    raw = _with(BASE, fleet__goodput=0.5, limits__max_days=days)
    r = feasible(raw)
    assert not r.feasible
    fix = {f.limit: f for f in r.fixes}["goodput"]
    needed = fix.fields["fleet.goodput"]
    assert needed == pytest.approx(math.ceil(training_s / (days * SECONDS_PER_DAY) * 1000) / 1000, abs=1e-12)
    assert 0.5 < needed <= 0.7
    assert fix.current == {"fleet.goodput": 0.5}
    assert _ok(_with(raw, fleet__goodput=needed)) and not _ok(_with(raw, fleet__goodput=round(needed - 0.001, 6)))


def test_no_goodput_fix_when_even_full_goodput_is_too_slow():
    training_s = solve(parse_instance(BASE)).objective_value
    raw = _with(BASE, fleet__goodput=0.9, limits__max_days=math.floor(training_s / SECONDS_PER_DAY) - 1)
    r = feasible(raw)
    assert "goodput" not in {f.limit for f in r.fixes}
    assert any(reason.startswith("goodput:") for reason in r.no_fix)


def test_no_goodput_fix_without_downtime():
    raw = _with(BASE, limits__max_days=1)
    assert "goodput" not in {f.limit for f in feasible(raw).fixes}
    assert not any(reason.startswith("goodput") for reason in feasible(raw).no_fix)


def test_feasible_flag_sets_fleet_goodput():
    args = ["feasible", "--target-flop", "3e23", "--params", "7e9", "--hardware", "16xH100-SXM", "--nodes", "32",
            "--wan-mbps", "1000", "--rtt-ms", "100", "--json"]
    full = json.loads(CliRunner().invoke(main, args + ["--max-days", "3000"]).output)
    half = json.loads(CliRunner().invoke(main, args + ["--max-days", "3000", "--goodput", "0.5"]).output)
    assert half["result"]["objective_value"] == pytest.approx(full["result"]["objective_value"] / 0.5, rel=1e-12)
