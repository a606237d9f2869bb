"""The pools' tables (`planner.mip.pools.pool_tables`) skip the presolve of a setting that nothing survives
(`presolve.beaten`) and pause the garbage collector (`pool_patterns.collector_paused`); both leave
every table, bound and plan the model is built on as the full presolves make them."""

from __future__ import annotations

import dataclasses
import gc
import math
import sys
from pathlib import Path

import pytest

from planner.fleet.pools import pool_settings
from planner.mip import pool_patterns, pools as pools_module, presolve as presolve_module
from planner.objectives import MIN_TIME
from planner.schema.instance import parse_instance

REPO = Path(__file__).resolve().parents[1]


def _cities(count: int):
    sys.path.insert(0, str(REPO / "scripts"))
    from bench_mixed import pools_data
    instance = parse_instance(pools_data(count))
    return instance, pool_settings(instance)


def _summary(pt) -> dict:
    """Everything of the tables the model and the certification read, as plain values."""
    m = pt.merged
    parts = []
    for part in pt.parts:
        bounds = None if part.node_bounds is None else tuple(a.tolist() for a in part.node_bounds)
        parts.append((repr(part.setting), part.lo, part.hi, part.dropped, bounds, part.sync_offset,
                      None if part.tables is None else [e.label for e in part.tables.sync]))
    return {"sync": [(e.label, e.kappa, e.ln_step, e.ln_sync_base, e.n_lo, e.n_hi) for e in m.sync],
            "fixed": [(f.label, f.nodes, f.log_time) for f in m.fixed],
            "lower": None if m.class_lower is None else m.class_lower.tolist(),
            "solved": sorted(pt.solved), "incumbent": pt.incumbent[0], "counts": pt.incumbent[1].counts,
            "plan": repr(pt.incumbent[1].batch), "parts": parts, "classes": pt.classes_total}


def test_a_beaten_setting_skipped_leaves_the_tables_as_its_presolve(monkeypatch):
    """6 pools in 6 cities, min_time: the settings of fewer nodes are beaten by the first one's plan and
    skip their presolve; the merged tables, bounds, solved classes, incumbent and every setting's
    `dropped` and node bounds equal those of the run where every setting is presolved."""
    instance, pools = _cities(6)
    calls = []
    real = presolve_module.beaten

    def counted(*args):
        calls.append(real(*args))
        return calls[-1]
    monkeypatch.setattr(pools_module, "beaten", counted)
    skipping = _summary(pools_module.pool_tables(instance, pools, MIN_TIME, None))
    assert sum(calls) >= 1, calls          # some settings skipped (the first has no plan to beat: not asked)
    monkeypatch.setattr(pools_module, "beaten", lambda *args: False)
    full = _summary(pools_module.pool_tables(instance, pools, MIN_TIME, None))
    assert skipping == full


def test_beaten_is_every_box_and_fixed_plan_above_the_cut():
    """`beaten` against the box bounds and fixed plans' times, on a real setting's tables: a cut just below
    the least of them is beaten, one at it is not."""
    from planner.mip.table_bounds import class_bounds
    from planner.mip.tables import build_tables
    from planner.solvers.pool_parts import base_space
    from planner.mip.pool_regions import model_sites
    from planner.sync.straggler.rule import mixed_setting
    instance, pools = _cities(2)
    space = base_space(instance, pools)
    setting = mixed_setting(pools, (0, 1), "fp8", model_sites(instance))
    t = build_tables(setting, dataclasses.replace(space, precisions=("fp8",)).for_objective(setting, MIN_TIME))
    bounds = class_bounds(t)
    least = min(float(bounds[0].min()), min(f.log_time for f in t.fixed))
    assert math.isfinite(least)
    assert presolve_module.beaten(t, least - 1e-9, bounds)
    assert not presolve_module.beaten(t, least, bounds)
    assert not presolve_module.beaten(t, least + 1.0, bounds)


@pytest.mark.parametrize("enabled", [True, False])
def test_the_collector_is_paused_inside_and_restored_after(enabled):
    seen = []

    @pool_patterns.collector_paused()
    def inside():
        seen.append(gc.isenabled())
        raise ValueError("leaves by an exception")
    (gc.enable if enabled else gc.disable)()
    try:
        with pytest.raises(ValueError):
            inside()
        assert seen == [False] and gc.isenabled() == enabled
    finally:
        gc.enable()


def test_min_cost_shared_bounds_and_costs_leave_the_tables_as_recomputed(monkeypatch):
    """6 pools in 6 cities, min_cost: `pool_tables` computes each setting's `class_bounds` once for
    `presolve` and `_feasible_classes`, and lays out each setting's `PatternCosts` once for its skip test
    and the cut at the incumbent; the merged tables, bounds, incumbent and every setting's classes equal
    those of the run where each of them computes its own (lead46's path). Prices differ by pool, so that
    the settings' cheapest counts differ (a setting cut at another's costs would show)."""
    from planner.objectives import MIN_COST
    sys.path.insert(0, str(REPO / "scripts"))
    from bench_mixed import pools_data
    data = pools_data(6)
    for i, pool in enumerate(data["fleet"]["pools"]):
        pool["price_usd_per_accelerator"] = 30000 - 2500 * i
    instance = parse_instance(data)
    pools = pool_settings(instance)
    shared = _summary(pools_module.pool_tables(instance, pools, MIN_COST, None))
    real_presolve, real_feasible, real_costs = pools_module.presolve, pools_module._feasible_classes, \
        pools_module._least_costs
    calls = {"presolve": 0, "feasible": 0, "costs": 0}

    def own_presolve(t, objective, bounds=None):
        calls["presolve"] += bounds is not None
        return real_presolve(t, objective)

    def own_feasible(t, ln_w, bounds=None):
        calls["feasible"] += bounds is not None
        return real_feasible(t, ln_w)

    def own_costs(pt, part, laid_out=None):
        calls["costs"] += laid_out is not None
        return real_costs(pt, part)
    monkeypatch.setattr(pools_module, "presolve", own_presolve)
    monkeypatch.setattr(pools_module, "_feasible_classes", own_feasible)
    monkeypatch.setattr(pools_module, "_least_costs", own_costs)
    recomputed = _summary(pools_module.pool_tables(instance, pools, MIN_COST, None))
    assert min(calls.values()) >= 2, calls        # the shared path was taken for several settings
    assert len(shared["parts"]) >= 3 and shared["sync"]
    assert shared == recomputed
