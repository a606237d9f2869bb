"""`dtplan sweep` and planner.questions.sweep: fields checked by the schema, grid and Monte Carlo
points, rows equal to solving each point on its own, identical rows in-process, in a local
pool and on a Dask LocalCluster, failed points kept as rows, outputs resumed without
recomputation (also after a SIGKILL), plots written."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from planner.cli import main
from planner.questions.sweep import (TIME_COLUMN, Distribution, SweepSpec, check_field, parse_grid, parse_vary,
                                     run_sweep)
from planner.schema.errors import InputError
from planner.schema.instance import parse_instance
from planner.solve import solve

ROOT = Path(__file__).resolve().parents[1]
BASE_PATH = ROOT / "instances" / "miri" / "baseline-1e25.json"
BASE = json.loads(BASE_PATH.read_text())
DTPLAN = [sys.executable, "-c", "from planner.cli import main; main()"]


def _strip(rows):
    return [{k: v for k, v in r.items() if k != TIME_COLUMN} for r in rows]


# -- fields and values ------------------------------------------------------------------


@pytest.mark.parametrize("path", ["network.wan.up_mbps", "fleet.nodes", "fleet.hardware", "limits.max_days",
                                  "assumptions.scenario", "assumptions.constants.straggler_relay_coefficient",
                                  "assumptions.constants.chinchilla_alpha", "search.compression", "objective",
                                  "network.wan", "network.wan.up_mbps+network.wan.down_mbps",
                                  "fleet.hardware.accelerators_per_node"])
def test_known_fields_are_accepted(path):
    assert check_field(path) is None


@pytest.mark.parametrize("path, words", [("network.wan.upmbps", "did you mean 'network.wan.up_mbps'"),
                                         ("fleet.nodes.x", "no sub-fields"),
                                         ("assumptions.constants.mfuu", "did you mean 'mfu'"),
                                         ("Fleet nodes", "dotted")])
def test_unknown_fields_are_named(path, words):
    problem = check_field(path)
    assert problem is not None and problem.path == path.split(" ")[0] or problem.path == path
    assert words in problem.message


def test_bad_values_name_the_field_and_the_value():
    with pytest.raises(InputError) as err:
        SweepSpec(BASE, grid={"fleet.nodes": [10, -1, 2.5], "assumptions.scenario": ["best"]}).check()
    text = str(err.value)
    assert "fleet.nodes: --grid value -1: must be an integer >= 1" in text
    assert "fleet.nodes: --grid value 2.5" in text
    assert "assumptions.scenario: --grid value \"best\": must be one of" in text
    assert len(err.value.problems) == 3


def test_cli_bad_field_exits_2_naming_it():
    r = CliRunner().invoke(main, ["sweep", str(BASE_PATH), "--grid", "network.wan.up_mbs=1,2"])
    assert r.exit_code == 2
    assert "network.wan.up_mbs: unknown field 'up_mbs' (did you mean 'network.wan.up_mbps'?)" in r.output
    assert "Traceback" not in r.output
    r = CliRunner().invoke(main, ["sweep", str(BASE_PATH), "--vary", "fleet.nodes=uniform(0, 10)",
                                  "--monte-carlo", "2"])
    assert r.exit_code == 2 and "fleet.nodes" in r.output and "must be an integer >= 1" in r.output
    r = CliRunner().invoke(main, ["sweep", str(BASE_PATH), "--grid", "fleet.nodes=1", "-o", "x.txt"])
    assert r.exit_code == 2 and "unknown output format" in r.output


def test_linked_fields_and_sections():
    spec = SweepSpec(BASE, grid={"network.wan.up_mbps+network.wan.down_mbps": [10],
                                 "network.regional": [{"mbps": 500, "rtt_ms": 7}]})
    result = run_sweep(spec, workers=1)
    data = json.loads(json.dumps(BASE))
    data["network"]["wan"].update(up_mbps=10, down_mbps=10)
    data["network"]["regional"] = {"mbps": 500, "rtt_ms": 7}
    assert result.rows[0]["objective_value"] == solve(parse_instance(data)).objective_value
    with pytest.raises(InputError) as err:
        SweepSpec(BASE, grid={"network.wan": [{"up_mbps": -1}], "network.wan.up_mbps+fleet.nodez": [1]}).check()
    text = str(err.value)
    assert "network.wan: --grid value {\"up_mbps\": -1}: network.wan.up_mbps: must be a number > 0" in text
    assert "network.wan.up_mbps+fleet.nodez: fleet.nodez: unknown field 'nodez'" in text


def test_grid_and_distribution_parsing():
    assert parse_grid("network.wan.up_mbps=10, 1e2,1000") == ("network.wan.up_mbps", [10, 100.0, 1000])
    assert parse_grid("fleet.hardware=16xH100-SXM,16xGH200") == ("fleet.hardware", ["16xH100-SXM", "16xGH200"])
    assert parse_vary("a.b=triangular(1, 2, 3)")[1] == Distribution("triangular", (1, 2, 3))
    for bad in ("normal(1)", "uniform(3, 1)", "loguniform(0, 1)", "gauss(1, 2)", "triangular(1, 5, 3)",
                "lognormal(-1, 1)", "choice()"):
        with pytest.raises(InputError):
            Distribution.parse(bad)


# -- points --------------------------------------------------------------------------------


def test_grid_points_are_the_product_first_field_slowest():
    spec = SweepSpec(BASE, grid={"network.wan.up_mbps": [10, 100], "fleet.nodes": [36, 72, 144]})
    points = spec.points()
    assert [p.inputs for p in points] == [{"network.wan.up_mbps": u, "fleet.nodes": n}
                                          for u in (10, 100) for n in (36, 72, 144)]
    assert [p.index for p in points] == list(range(6))
    assert len({p.key for p in points}) == 6


def test_monte_carlo_draws_depend_only_on_seed_and_index():
    vary = {"assumptions.mfu": Distribution.parse("uniform(0.3, 0.5)"),
            "fleet.nodes": Distribution.parse("loguniform(10, 1000)")}
    five = SweepSpec(BASE, vary=vary, samples=5, seed=7).points()
    ten = SweepSpec(BASE, vary=vary, samples=10, seed=7).points()
    assert [p.inputs for p in five] == [p.inputs for p in ten[:5]]
    other = SweepSpec(BASE, vary=vary, samples=5, seed=8).points()
    assert [p.inputs for p in five] != [p.inputs for p in other]
    # point i draws from default_rng([seed, i]), the fields in the order given
    rng = np.random.default_rng([7, 3])
    mfu = rng.uniform(0.3, 0.5)
    nodes = round(np.exp(rng.uniform(np.log(10), np.log(1000))))
    assert ten[3].inputs == {"assumptions.mfu": mfu, "fleet.nodes": nodes}
    assert all(isinstance(p.inputs["fleet.nodes"], int) and 10 <= p.inputs["fleet.nodes"] <= 1000 for p in ten)


def test_truncated_distribution_stays_inside_its_interval():
    d = Distribution("normal", (0.4, 0.2), bounds=(0.35, 0.45))
    rng = np.random.default_rng(0)
    draws = [d.draw(rng) for _ in range(500)]
    assert min(draws) >= 0.35 and max(draws) <= 0.45


# -- rows -----------------------------------------------------------------------------------


def test_rows_equal_solving_each_point_alone():
    grid = {"network.wan.up_mbps": [10, 1000], "fleet.nodes": [36, 72]}
    result = run_sweep(SweepSpec(BASE, grid=grid), workers=1)
    assert result.computed == 4 and result.where == "in-process"
    for row in result.rows:
        data = json.loads(json.dumps(BASE))
        data["network"]["wan"]["up_mbps"] = row["network.wan.up_mbps"]
        data["fleet"]["nodes"] = row["fleet.nodes"]
        alone = solve(parse_instance(data))
        assert row["status"] == alone.status == "optimal"
        assert row["objective_value"] == alone.objective_value
        assert row["inner_steps"] == alone.plan.inner_steps and row["nodes"] == alone.plan.nodes
        assert row["time_to_target_days"] == pytest.approx(alone.objective_value / 86400, rel=1e-12)
        assert row["gap"] == 0.0 and row["error"] is None
    frame = result.to_frame()
    assert list(frame.columns) == result.columns and len(frame) == 4


def test_failed_points_are_rows_with_their_error():
    data = json.loads(json.dumps(BASE))
    data["limits"]["max_nodes"] = 50
    result = run_sweep(SweepSpec(data, grid={"fleet.nodes": [72, 40]}), workers=1)
    ok, bad = result.rows
    assert ok["status"] == "optimal"
    assert bad["status"] == "error" and "limits.max_nodes: must be <= fleet.nodes (40), got 50" in bad["error"]
    assert len(result.errors) == 1


def test_evaluate_command_scores_the_plan_at_each_point():
    plan = {"mode": "flat", "nodes": 72, "precision": "fp16", "inner_steps": 128, "compression": 16,
            "streaming": True}
    result = run_sweep(SweepSpec(BASE, grid={"network.wan.up_mbps": [100]}, command="evaluate", plan=plan), workers=1)
    row = result.rows[0]
    # the report's own plan takes 331 days (instances/miri/baseline-1e25.json, from the reference)
    assert row["status"] == "feasible" and round(row["time_to_target_days"]) == 331


def test_local_pool_in_process_and_dask_give_identical_rows():
    distributed = pytest.importorskip("distributed")
    spec = dict(grid={"network.wan.up_mbps": [10, 30, 100, 1000], "assumptions.scenario": ["optimistic", "expected"]})
    serial = run_sweep(SweepSpec(BASE, **spec), workers=1)
    pool = run_sweep(SweepSpec(BASE, **spec), workers=2)
    assert pool.where == "local"
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster:
        dask = run_sweep(SweepSpec(BASE, **spec), scheduler=cluster.scheduler_address)
    assert dask.where.startswith(("inproc://", "tcp://"))
    assert _strip(serial.rows) == _strip(pool.rows) == _strip(dask.rows)


@pytest.mark.parametrize("suffix", [".jsonl", ".csv", ".parquet"])
def test_outputs_round_trip_and_resume_without_recomputing(tmp_path, suffix):
    out = tmp_path / f"rows{suffix}"
    spec = dict(grid={"network.wan.up_mbps": [10, 100]}, vary={"assumptions.mfu": Distribution.parse("uniform(0.3, 0.5)")},
                samples=2, seed=3)
    first = run_sweep(SweepSpec(BASE, **spec), workers=1, output=out)
    assert first.computed == 4 and out.exists()
    again = run_sweep(SweepSpec(BASE, **spec), workers=1, output=out)
    assert again.computed == 0 and again.resumed == 4
    assert _strip(again.rows) == _strip(first.rows)
    assert [r[TIME_COLUMN] for r in again.rows] == [r[TIME_COLUMN] for r in first.rows]   # read back, not redone
    with pytest.raises(InputError, match="another sweep"):
        run_sweep(SweepSpec(BASE, **{**spec, "seed": 4}), workers=1, output=out)


def _lines(path: Path) -> list[str]:
    return [line for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


def test_killed_sweep_resumes_with_every_point_once(tmp_path):
    out = tmp_path / "rows.jsonl"
    args = ["sweep", str(BASE_PATH), "--grid", "network.wan.up_mbps=" + ",".join(str(10 + i) for i in range(30)),
            "--grid", "fleet.nodes=36,72", "--workers", "1", "-o", str(out)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(DTPLAN + args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.time() + 120
    while len(_lines(out)) < 12 and time.time() < deadline and proc.poll() is None:
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    finished = len(_lines(out))
    assert 12 <= finished < 60, f"the sweep was not killed midway ({finished} rows)"
    with open(out, "a") as fh:          # a row cut in the middle by the kill
        fh.write('{"index": 59, "key": "abc')
    done = subprocess.run(DTPLAN + args, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert f"{60 - finished} computed, {finished} resumed" in done.stderr
    rows = [json.loads(line) for line in _lines(out)]
    assert sorted(r["index"] for r in rows) == list(range(60))
    spec = SweepSpec(BASE, grid={"network.wan.up_mbps": [10 + i for i in range(30)], "fleet.nodes": [36, 72]})
    reference = run_sweep(spec, workers=1)
    assert _strip(sorted(rows, key=lambda r: r["index"])) == _strip(reference.rows)


# -- plots --------------------------------------------------------------------------------------


def test_cli_writes_plots(tmp_path):
    r = CliRunner().invoke(main, ["sweep", str(BASE_PATH), "--grid", "network.wan.up_mbps=10,100,1000",
                                  "--grid", "fleet.nodes=36,72", "--workers", "1", "-o", str(tmp_path / "a.csv"),
                                  "--plot", str(tmp_path / "a.png")])
    assert r.exit_code == 0, r.output
    assert (tmp_path / "a.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    r = CliRunner().invoke(main, ["sweep", str(BASE_PATH), "--vary", "assumptions.mfu=uniform(0.3, 0.5)",
                                  "--monte-carlo", "8", "--workers", "1", "--plot", str(tmp_path / "b.svg")])
    assert r.exit_code == 0, r.output
    assert b"<svg" in (tmp_path / "b.svg").read_bytes()[:500]
    r = CliRunner().invoke(main, ["sweep", str(BASE_PATH), "--grid", "fleet.nodes=18,36,72",
                                  "--grid", "fleet.hardware=16xGH200,16xH100-SXM", "--workers", "1",
                                  "--plot", str(tmp_path / "c.png"), "--plot-kind", "pareto"])
    assert r.exit_code == 0, r.output
    assert (tmp_path / "c.png").stat().st_size > 1000


def test_pareto_front():
    from planner.present.sweep_plots import pareto_front
    pts = [(1, 5), (2, 3), (3, 4), (4, 1), (2, 6)]
    assert pareto_front(pts) == [0, 1, 3]


# -- dtplan feasible --monte-carlo ----------------------------------------------------------------


def test_uncertainty_file_draws_stay_inside_published_intervals():
    from planner.questions.uncertainty import load_uncertainty
    inputs = load_uncertainty()
    assert {i.field for i in inputs} >= {"assumptions.constants.chinchilla_alpha", "assumptions.mfu"}
    spec = SweepSpec(BASE, vary={i.field: i.distribution for i in inputs}, samples=200, seed=5, command="reach")
    for i in inputs:
        assert i.source.strip()
        values = [p.inputs[i.field] for p in spec.points()]
        if i.distribution.kind == "choice":
            assert set(values) <= set(i.distribution.args)
        else:
            low, high = i.distribution.bounds
            assert min(values) >= low and max(values) <= high
            assert max(values) > min(values)


def test_wilson_interval_is_where_the_score_test_accepts():
    from planner.questions.uncertainty import Z95, wilson_interval
    for k, n in ((9, 20), (0, 10), (40, 40), (3, 7)):
        low, high = wilson_interval(k, n)
        p_hat = k / n
        for p in (low, high):
            if 0 < p < 1:   # an endpoint solves |p_hat - p| = z sqrt(p (1 - p) / n)
                assert abs(abs(p_hat - p) - Z95 * (p * (1 - p) / n) ** 0.5) < 1e-12
        assert low <= p_hat <= high


def test_reach_rows_agree_with_solving_each_draw_under_the_limit():
    from planner.questions.uncertainty import reach
    data = json.loads((ROOT / "instances" / "miri" / "1e27-flat-a100.json").read_text())
    r = reach(data, 6, seed=2, workers=1)
    assert r.samples == 6 and r.failed == 0
    for row in r.sweep.rows:
        drawn = json.loads(json.dumps(data))
        from planner.questions.sweep import set_field
        for path in r.sweep.spec.vary:
            set_field(drawn, path, row[path])
        alone = solve(parse_instance(drawn))
        assert row["reachable"] == (alone.status == "optimal") == (row["days"] <= row["limit_days"])
        if alone.status == "optimal":
            assert row["days"] == pytest.approx(alone.objective_value / 86400, rel=1e-9)
    assert r.reachable == sum(row["reachable"] for row in r.sweep.rows)
    assert r.base_reachable is False      # instances/miri/1e27-flat-a100.expected.json: infeasible as given


def test_cli_feasible_monte_carlo_json():
    path = ROOT / "instances" / "miri" / "1e27-flat-a100.json"
    r = CliRunner().invoke(main, ["feasible", str(path), "--monte-carlo", "4", "--seed", "3", "--json"])
    assert r.exit_code == 1, r.output
    out = json.loads(r.stdout)
    assert out["samples"] == 4 and 0 <= out["probability"] <= 1 and out["as_given"]["reachable"] is False
    assert set(out["days_percentiles"]) == {"p5", "p25", "p50", "p75", "p95"}


# -- recipes (instances/sweeps) --------------------------------------------------------------------


def _make_sweep_expected():
    import importlib.util
    spec = importlib.util.spec_from_file_location("make_sweep_expected", ROOT / "scripts" / "make_sweep_expected.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


MAKE = _make_sweep_expected()


@pytest.mark.parametrize("recipe", MAKE.recipes(), ids=lambda p: p.stem)
def test_recipe_answers_as_stored(recipe):
    assert MAKE.expected_path(recipe).exists(), f"run scripts/make_sweep_expected.py for {recipe.stem}"
    columns, rows, result, _ = MAKE.answer(recipe)
    assert not result.errors
    assert MAKE.compare(recipe, columns, rows) == []


def test_recipes_agree_with_the_miri_instances_answered_alone():
    """The deployment-profile sweep point by point equals instances/miri/profile-*.expected.json, and the
    bandwidth sweep at 10 Mb/s and 16x equals countermeasure-bandwidth-cap-10mbps.expected.json."""
    miri = ROOT / "instances" / "miri"
    _, rows = MAKE.read_expected(ROOT / "instances" / "sweeps" / "deployment-profiles.expected.csv")
    by_network = {}
    for path in miri.glob("profile-*.json"):
        if path.name.endswith(".expected.json"):
            continue
        wan = json.loads(path.read_text())["network"]["wan"]
        by_network[(wan["up_mbps"], wan["rtt_ms"])] = json.loads(path.with_suffix(".expected.json").read_text())
    assert len(by_network) == len(rows) == 8
    for row in rows:
        expected = by_network[(row["network.wan"]["up_mbps"], row["network.wan"]["rtt_ms"])]
        assert row["objective_value"] == pytest.approx(expected["objective_value"], rel=1e-9)
        assert row["inner_steps"] == expected["plan"]["inner_steps"]
    _, rows = MAKE.read_expected(ROOT / "instances" / "sweeps" / "bandwidth.expected.csv")
    expected = json.loads((miri / "countermeasure-bandwidth-cap-10mbps.expected.json").read_text())
    row = next(r for r in rows if r["network.wan.up_mbps+network.wan.down_mbps"] == 10 and r["search.compression"] == [16])
    assert expected["verdict"] == "feasible" and row["inner_steps"] == expected["plan"]["inner_steps"]
    assert row["time_to_target_days"] == pytest.approx(expected["time_to_target_days"], rel=1e-9)


def test_bad_scheduler_address_is_bad_input():
    r = CliRunner().invoke(main, ["sweep", str(BASE_PATH), "--grid", "fleet.nodes=72", "--scheduler", "no port"])
    assert r.exit_code == 2 and "--scheduler: not a Dask scheduler address" in r.output


def test_cli_set_json_and_feasible_command():
    path = ROOT / "instances" / "miri" / "1e27-flat-a100.json"
    expected = json.loads((ROOT / "instances" / "miri" / "1e27-flat-a100.expected.json").read_text())
    fewest = expected["fixes"][0]["fields"]["fleet.nodes"]          # 4,136 nodes (the nodes fix)
    r = CliRunner().invoke(main, ["sweep", str(path), "--grid", f"fleet.nodes={fewest - 1},{fewest}",
                                  "--command", "feasible", "--workers", "1", "--json"])
    assert r.exit_code == 0, r.output
    rows = json.loads(r.stdout)["rows"]
    assert [row["status"] for row in rows] == ["infeasible", "feasible"]
    assert rows[0]["fixes"].startswith(f"{fewest:,} nodes instead of {fewest - 1:,}")
    assert rows[1]["nodes"] == fewest
    r = CliRunner().invoke(main, ["sweep", str(BASE_PATH), "--set", "fleet.nodes=36", "--grid",
                                  "network.wan.up_mbps=100", "--workers", "1", "--json"])
    assert r.exit_code == 0 and json.loads(r.stdout)["rows"][0]["nodes"] == 36
    r = CliRunner().invoke(main, ["sweep", str(BASE_PATH), "--grid", "fleet.nodez=1", "--json"])
    assert r.exit_code == 2 and "fleet.nodez: unknown field 'nodez'" in r.output
