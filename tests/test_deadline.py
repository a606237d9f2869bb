"""--time-limit is a wall limit for the whole search (issue 10 item 7), tested without wall-clock
flakiness: the planner's clock is replaced by a counter that moves one tick per reading, so a
limit of K ticks is passed after exactly K readings whatever the machine's load. No search
work (building classes, scoring seeds, bounding boxes) may start once a reading has shown the
deadline passed, and whatever is returned must still be proven: a plan no better than the
optimum, a bound on the right side of it. (scripts/bench_cli.py prints the wall time of the
large case, max_compute on 10^7 nodes under the dtplan profile, against its limit.)"""

from __future__ import annotations

import importlib
import json
import math
import types
from pathlib import Path

import pytest

from planner.schema.instance import parse_instance
from planner.solvers import bnb, uniform
from planner.space import DecisionSpace

REPO = Path(__file__).resolve().parents[1]
SMALL = REPO / "instances" / "solve-1e24-64xh100.json"
solve_module = importlib.import_module("planner.solve")
objectives = importlib.import_module("planner.solvers.objective_search")


class TickClock:
    """perf_counter() that advances one tick per reading; notes when a reading passed `deadline`."""

    def __init__(self):
        self.now = 0.0
        self.deadline = math.inf
        self.seen_past = False

    def perf_counter(self) -> float:
        self.now += 1.0
        if self.now > self.deadline:
            self.seen_past = True
        return self.now


@pytest.fixture
def clock(monkeypatch):
    """The planner's clock (planner.solve, planner.solvers.objective_search, planner.solvers.bnb) as a TickClock,
    and the search's costly steps wrapped to fail if they start after the deadline was seen."""
    tick = TickClock()
    fake = types.SimpleNamespace(perf_counter=tick.perf_counter)
    for module in (solve_module, uniform, objectives, bnb):
        monkeypatch.setattr(module, "time", fake)
    solve_deadline = solve_module.solve

    def guarded(name, function):
        def run(*args, **kwargs):
            assert not tick.seen_past, f"{name} started after the deadline was seen"
            return function(*args, **kwargs)
        return run

    monkeypatch.setattr(DecisionSpace, "_classes_of", guarded("building classes", DecisionSpace._classes_of))
    # max_compute lists the pp_group classes from their pipe rows (`pp_group_rows`, then `classes_of_rows`)
    monkeypatch.setattr(DecisionSpace, "_pp_group_rows", guarded("building classes", DecisionSpace._pp_group_rows))
    monkeypatch.setattr(DecisionSpace, "_finish", guarded("building classes", DecisionSpace._finish))
    monkeypatch.setattr(bnb, "_seeds", guarded("scoring seeds", bnb._seeds))
    monkeypatch.setattr(bnb, "_box_bound", guarded("bounding boxes", bnb._box_bound))

    def solve(instance, objective, ticks):
        tick.now, tick.seen_past = 0.0, False
        tick.deadline = 1.0 + ticks           # solve's first reading is its start (tick 1)
        return solve_deadline(instance, objective=objective, time_limit_s=ticks)

    return solve


def _instance(**changes) -> dict:
    data = json.loads(SMALL.read_text())
    data["assumptions"] = {"profile": "dtplan",        # every micro-batch count a class: many groups
                           "constants": {"evidence_envelope": False}}   # the whole space (docs/quality.md)
    for path, value in changes.items():
        *parents, key = path.split(".")
        node = data
        for part in parents:
            node = node.setdefault(part, {})
        node[key] = value
    return data


@pytest.mark.parametrize("objective", ["max_compute", "min_time", "min_cost"])
def test_a_deadline_already_past_does_no_search_work(clock, objective):
    instance = parse_instance(_instance(**{"fleet.nodes": 10_000_000}))
    r = clock(instance, objective, 0)
    assert r.status == "time_limit" and r.plan is None and r.evaluations == 0
    assert r.space_size is None          # the declared space is not counted past the deadline either


@pytest.mark.parametrize("objective", ["max_compute", "min_time", "min_cost"])
def test_every_deadline_stops_the_search_and_keeps_the_answer_proven(clock, objective):
    instance = parse_instance(_instance(**{"limits.max_days": 120}))
    exact = solve_module.solve(instance, objective=objective)
    assert exact.status == "optimal"
    best = exact.objective_value
    statuses = set()
    for ticks in [0, 1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144, 233, 377, 610]:
        r = clock(instance, objective, ticks)
        statuses.add(r.status)
        if r.status == "optimal":
            assert r.objective_value == pytest.approx(best, rel=1e-12) and r.plan == exact.plan
            continue
        assert r.status == "time_limit"
        if objective == "max_compute":           # compute: the plan's is at most the optimum, the bound at least
            assert r.best_bound >= best * (1 - 1e-12)
            if r.plan is not None:
                assert r.objective_value <= best * (1 + 1e-12)
        else:                                    # time or cost: the plan's is at least the optimum, the bound at most
            assert r.best_bound <= best * (1 + 1e-12)
            if r.plan is not None:
                assert r.objective_value >= best * (1 - 1e-12)
    assert statuses == {"time_limit", "optimal"}     # the ladder of limits crosses from cut short to finished


def test_the_fake_clock_is_what_the_search_reads(clock):
    """The guard itself can fail: with a deadline of 0 ticks and the checks removed from the
    listing of class groups, building classes starts after the deadline was seen."""
    instance = parse_instance(_instance())
    original = bnb.batches_most_promising_first

    def without_checks(s, space, measure=bnb.TIME, deadline=math.inf, **options):
        return original(s, space, measure, **options)       # ignores the deadline, as before issue 10 item 7

    bnb.batches_most_promising_first = without_checks
    try:
        with pytest.raises(AssertionError, match="after the deadline"):
            clock(instance, "max_compute", 0)
    finally:
        bnb.batches_most_promising_first = original
