"""--time-limit inside the loops that listed or scored everything before the first deadline check
(issue 23 item 6): the pool-subset enumeration of a fleet of pools (4,095 subsets on 12 pools, ~30 s
with chosen regions) and the exhaustive solver (10^5 nodes: minutes). A counting clock (one tick
per reading, tests/test_deadline.py) replaces the planner's: a loop may do one step per reading
taken before the deadline and none after the first reading past it, whatever the machine's load;
the answer cut short claims no bound on what it did not search."""

from __future__ import annotations

import importlib
import json
import math
import types
from pathlib import Path

import pytest

from planner.schema.instance import parse_instance
from planner.solvers import bnb, decomposition, exhaustive, pool_parts, uniform
from planner.sync.straggler import search as straggler_search
from tests.test_deadline import TickClock

REPO = Path(__file__).resolve().parents[1]
solve_module = importlib.import_module("planner.solve")
objectives = importlib.import_module("planner.solvers.objective_search")


def _clocked(monkeypatch, ticks: float, *modules) -> TickClock:
    clock = TickClock()
    clock.deadline = 1.0 + ticks                 # solve's first reading (tick 1) is its start
    fake = types.SimpleNamespace(perf_counter=clock.perf_counter)
    for module in (solve_module, uniform, objectives, bnb) + modules:
        monkeypatch.setattr(module, "time", fake)
    return clock


def _counted(monkeypatch, module, name: str, clock: TickClock) -> list[int]:
    """Wrap module.name: count its calls and fail any that starts after the deadline was seen."""
    calls, original = [], getattr(module, name)

    def run(*args, **kwargs):
        assert not clock.seen_past, f"{name} started after the clock showed the deadline passed"
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, run)
    return calls


def twelve_pools_chosen_regions() -> dict:
    """12 pools (H100, A100, B200 nodes of 3 to 6) at the five sites of instances/mixed-regions-chosen.json,
    regions chosen by the planner: 4,095 subsets of pools, each with its region partitions."""
    data = json.loads((REPO / "instances" / "mixed-regions-chosen.json").read_text())
    sites = data["fleet"]["pools"]
    hardware = ["16xH100-SXM", "48xA100-80GB", "7xB200"]
    data["fleet"]["pools"] = [{**sites[i % 5], "name": f"pool-{i}", "count": 3 + i % 4, "hardware": hardware[i % 3]}
                              for i in range(12)]
    data.pop("search", None)
    return data


@pytest.mark.parametrize("ticks", [0, 1, 7, 40])
@pytest.mark.parametrize("objective", ["min_time", "min_cost", "max_compute"])
def test_pool_subsets_are_listed_only_until_the_deadline(monkeypatch, ticks, objective):
    instance = parse_instance(twelve_pools_chosen_regions())
    clock = _clocked(monkeypatch, ticks, decomposition, pool_parts, straggler_search)
    listed = _counted(monkeypatch, pool_parts, "part_regions", clock)
    r = solve_module.solve(instance, objective=objective, time_limit_s=ticks)
    assert len(listed) <= ticks          # one subset per reading taken before the deadline (was: all 4,095)
    assert r.status == "time_limit"
    assert r.best_bound == (math.inf if objective == "max_compute" else 0.0)    # nothing claimed unsearched
    assert r.space_size is None


def test_the_parts_loop_stops_at_the_deadline(monkeypatch):
    """Parts listed in time, then solved until the deadline: no part is started after it."""
    instance = parse_instance(json.loads((REPO / "instances" / "mixed-a100-h100.json").read_text()))
    exact = solve_module.solve(instance, objective="min_time")
    for ticks in [3, 8, 20, 50]:
        with monkeypatch.context() as m:
            clock = _clocked(m, ticks, decomposition, pool_parts, straggler_search)
            _counted(m, straggler_search, "solve_part", clock)
            r = solve_module.solve(instance, objective="min_time", time_limit_s=ticks)
        if r.status == "optimal":
            assert r.objective_value == pytest.approx(exact.objective_value, rel=1e-12)
        else:
            assert r.status == "time_limit" and r.best_bound <= exact.objective_value * (1 + 1e-12)
            assert r.objective_value is None or r.objective_value >= exact.objective_value * (1 - 1e-12)


def _large_exhaustive() -> dict:
    data = json.loads((REPO / "instances" / "baseline-1e25.json").read_text())
    data["fleet"]["nodes"] = 100_000
    return data


@pytest.mark.parametrize("ticks", [0, 2, 5])
@pytest.mark.parametrize("objective", ["min_time", "min_cost", "max_compute"])
def test_the_exhaustive_solver_scores_only_until_the_deadline(monkeypatch, ticks, objective):
    instance = parse_instance(_large_exhaustive())
    clock = _clocked(monkeypatch, ticks, exhaustive)
    scored = _counted(monkeypatch, bnb, "_measure", clock)
    r = solve_module.solve(instance, objective=objective, solver="exhaustive", time_limit_s=ticks)
    assert len(scored) <= ticks          # one chunk of plans per reading before the deadline (was: every plan)
    assert r.status == "time_limit"
    assert r.best_bound == (math.inf if objective == "max_compute" else 0.0)


def test_the_exhaustive_solver_cut_short_keeps_a_plan_it_scored(monkeypatch):
    """A few chunks scored: the plan returned is one it scored, no better than the optimum (bnb's),
    the more chunks the better, and the gap stays open (no bound claimed on the plans not scored)."""
    instance = parse_instance(json.loads((REPO / "instances" / "solve-1e24-64xh100.json").read_text()))
    exact = solve_module.solve(instance, objective="min_time")
    values = []
    for ticks in [5, 10]:
        with monkeypatch.context() as m:
            _clocked(m, ticks, exhaustive)
            r = solve_module.solve(instance, objective="min_time", solver="exhaustive", time_limit_s=ticks)
        assert r.status == "time_limit" and r.best_bound == 0.0 and r.plan is not None
        assert r.objective_value >= exact.objective_value * (1 - 1e-12)
        values.append(r.objective_value)
    assert values[1] <= values[0]


def _pools_in_cities(count: int) -> dict:
    import sys
    sys.path.insert(0, str(REPO / "scripts"))
    from bench_mixed import pools_data
    return pools_data(count)


@pytest.mark.parametrize("ticks", [0, 3, 30])
def test_the_one_model_tables_are_built_only_until_the_deadline(monkeypatch, ticks):
    """16 pools in 16 cities (the one-model path: 131,071 patterns, ~100 s of tables at load 8, built
    whole before the first check): no pattern is listed after the clock showed the deadline passed,
    and the answer is the time limit with no plan and no bound."""
    pytest.importorskip("highspy")
    from planner.mip import pool_patterns as pools_module
    from planner.solvers import mixed_mip
    instance = parse_instance(_pools_in_cities(16))
    clock = _clocked(monkeypatch, ticks, pools_module, mixed_mip, decomposition, pool_parts, straggler_search)
    listed = _counted(monkeypatch, pools_module, "_covers", clock)
    r = solve_module.solve(instance, objective="min_time", solver="highs", time_limit_s=ticks)
    assert len(listed) <= ticks
    assert r.status == "time_limit" and r.plan is None and r.best_bound == 0.0
