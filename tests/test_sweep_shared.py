"""Sweeps that share their work (planner/questions/sweep/shared.py, issue 27 item 2): every row of a
shared search equals the row of the point solved alone (planner.solve.solve, what `dtplan solve`
runs), field for field but the wall time; the parts of `bnb.minimise_time` equal separate
searches; the bands above the point below are settled, or searched whole, as proven."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from planner.cli import main
from planner.objectives import MIN_TIME
from planner.questions.sweep import TIME_COLUMN, SweepSpec, run_point, run_sweep, shared
from planner.schema.instance import parse_instance
from planner.setting import setting_from_instance
from planner.solvers import bnb
from planner.space import DecisionSpace

ROOT = Path(__file__).resolve().parents[1]
INSTANCE = ROOT / "instances" / "solve-1e24-64xh100.json"
BASE = json.loads(INSTANCE.read_text())
BANDWIDTH = "network.wan.up_mbps+network.wan.down_mbps"


def _strip(rows):
    return [{k: v for k, v in r.items() if k != TIME_COLUMN} for r in rows]


def _alone_and_shared(spec: SweepSpec, monkeypatch):
    """(rows solved one by one, rows of `run_chunk`, points `run_chunk` answered alone)."""
    spec.check()
    points, payload = spec.points(), spec.payload()
    alone = [run_point(payload, p) for p in points]
    singles = []

    def counted(payload_, point):
        singles.append(point.index)
        return run_point(payload_, point)

    monkeypatch.setattr(shared, "run_point", counted)
    together = shared.run_chunk(payload, points)
    return alone, together, singles


def test_a_grid_of_bandwidth_and_nodes_equals_single_solves(monkeypatch):
    grid = {BANDWIDTH: [10, 100, 1000], "fleet.nodes": [1, 2, 3, 5, 8, 24, 64, 100]}
    alone, together, singles = _alone_and_shared(SweepSpec(BASE, grid=grid), monkeypatch)
    assert _strip(together) == _strip(alone)
    solved = [r for r in alone if r["status"] == "optimal"]
    assert len(solved) >= 15                       # most points have a plan: they were answered together
    # only the points without a plan are answered alone (for their explanation)
    assert sorted(singles) == [r["index"] for r in alone if r["status"] != "optimal"]


def test_points_where_more_nodes_stop_helping_are_searched_whole(monkeypatch):
    """A budget of 20 nodes: above it the band is empty, the whole space is searched, the answer is
    the one at 20 nodes (the proof's 'otherwise' branch)."""
    data = json.loads(json.dumps(BASE))
    data["limits"]["budget_usd"] = 20 * 16 * 25_000.0 + 1.0     # 16 H100 at $25k each (models/hardware) per node
    spec = SweepSpec(data, grid={"fleet.nodes": [8, 16, 24, 32]})
    calls = []
    original = shared.least_times

    def counted(*args, **kwargs):
        calls.append(args[-1])
        return original(*args, **kwargs)

    monkeypatch.setattr(shared, "least_times", counted)
    alone, together, singles = _alone_and_shared(spec, monkeypatch)
    assert _strip(together) == _strip(alone) and singles == []
    assert len(calls) >= 2                        # the bands, then at least one whole space
    assert together[2]["nodes"] == together[3]["nodes"] <= 20


def test_points_differing_in_more_than_the_node_limit_and_other_objectives(monkeypatch):
    grid = {"network.wan.rtt_ms": [20, 300], "fleet.nodes": [16, 48]}
    alone, together, singles = _alone_and_shared(SweepSpec(BASE, grid=grid), monkeypatch)
    assert _strip(together) == _strip(alone) and singles == []
    alone, together, singles = _alone_and_shared(SweepSpec(BASE, grid={"fleet.nodes": [16, 48]},
                                                           objective="min_cost"), monkeypatch)
    assert _strip(together) == _strip(alone) and singles == [0, 1]     # min_cost: one by one


def _bench_grid():
    spec = importlib.util.spec_from_file_location("bench_sweep", ROOT / "scripts" / "bench_sweep.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.grid("bandwidth-nodes", 1000)


def test_a_random_sample_of_the_benchmark_grid_equals_dtplan_solve(monkeypatch, tmp_path):
    """2 of the 50 bandwidths x 6 of the 20 node counts of scripts/bench_sweep.py, drawn at random: the
    shared rows equal single solves; two of them also equal `dtplan solve --json` of the instance
    file with the values set."""
    full = _bench_grid()
    rng = np.random.default_rng(27)
    grid = {BANDWIDTH: sorted(rng.choice(full[BANDWIDTH], 2, replace=False).tolist()),
            "fleet.nodes": sorted(rng.choice(full["fleet.nodes"], 6, replace=False).tolist())}
    alone, together, _ = _alone_and_shared(SweepSpec(BASE, grid=grid), monkeypatch)
    assert _strip(together) == _strip(alone)
    for row in (together[0], together[-1]):
        data = json.loads(json.dumps(BASE))
        data["network"]["wan"]["up_mbps"] = data["network"]["wan"]["down_mbps"] = row[BANDWIDTH]
        data["fleet"]["nodes"] = int(row["fleet.nodes"])
        path = tmp_path / "point.json"
        path.write_text(json.dumps(data))
        r = CliRunner().invoke(main, ["solve", str(path), "--json"])
        assert r.exit_code == 0, r.output
        cli = json.loads(r.output)
        assert row["status"] == cli["status"] and row["objective_value"] == cli["objective_value"]
        assert row["best_bound"] == cli["best_bound"] and row["gap"] == cli["gap"]
        assert row["cost_usd"] == cli["evaluation"]["values"]["cost_usd"]
        for field, value in cli["plan"].items():
            if field in row and value is not None:
                assert row[field] == value, field


def test_parts_of_minimise_time_equal_separate_searches():
    """Two node limits' hierarchical classes joined and searched with parts: each part's plans and times
    are those of its classes searched alone."""
    instance = parse_instance(json.loads(json.dumps(BASE)))
    s = setting_from_instance(instance)
    space = DecisionSpace.from_instance(instance, s).for_objective(s, MIN_TIME)
    spaces = [space.with_max_nodes(n) for n in (12, 40)]
    classes = [sp.classes(s, "hierarchical", "fp8") for sp in spaces]
    h, r = space.max_inner_steps, space.max_regional_rounds
    joined = shared.join_classes(classes)
    parts = np.repeat([0, 1], [c.size for c in classes])
    together = bnb.minimise_time(s, joined, h, r, s.window_s, parts=parts)
    for k, c in enumerate(classes):
        alone = bnb.minimise_time(s, c, h, r, s.window_s)
        mine = parts[together.classes] == k
        assert together.time_s[mine].tolist() == alone.time_s.tolist()
        assert together.batch.take(mine).nodes.tolist() == alone.batch.nodes.tolist()
        assert together.batch.take(mine).inner_steps.tolist() == alone.batch.inner_steps.tolist()


def test_the_band_above_a_point_keeps_only_plans_it_does_not_have():
    instance = parse_instance(json.loads(json.dumps(BASE)))
    s = setting_from_instance(instance)
    space = DecisionSpace.from_instance(instance, s).for_objective(s, MIN_TIME)
    low, high = (space.with_max_nodes(n).classes(s, "flat", "fp16") for n in (10, 30))
    band = shared.above_limit(high, low)
    assert band.size == high.size and (band.n_lo == 11).all() and (band.n_hi == 30).all()
    assert shared.above_limit(low, low) is None


def test_tasks_keep_the_points_of_one_node_group_together_whatever_the_field_order():
    """fleet.nodes listed first (varying slowest): the points that differ only in it still form one
    group each, and the sweep's tasks keep each group whole."""
    spec = SweepSpec(BASE, grid={"fleet.nodes": [8, 16, 24], "network.wan.rtt_ms": [10, 20, 30, 40]})
    groups = shared.node_groups(spec.points())
    assert [[p.index for p in g] for g in groups] == [[0, 4, 8], [1, 5, 9], [2, 6, 10], [3, 7, 11]]
    linked = SweepSpec(BASE, grid={"fleet.nodes+limits.max_nodes": [8, 16], BANDWIDTH: [10, 100]})
    assert [[p.index for p in g] for g in shared.node_groups(linked.points())] == [[0, 2], [1, 3]]
    result = run_sweep(spec, workers=2)
    alone = [run_point(spec.payload(), p) for p in spec.points()]
    assert _strip(result.rows) == _strip(alone)
