"""The planner over fleets of pools (planner.solvers.mixed) against its exhaustive oracle
(planner.solvers.mixed_oracle), on seeded random small instances and on the shipped A100 + H100
fleet. scripts/check_mixed_oracle.py runs the same comparison on 200 instances."""

import copy
import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from planner.cli import main
from planner.fleet.samples import random_instance
from planner.schema.instance import parse_instance
from planner.solve import solve
from planner.solvers.mixed_oracle import oracle

ROOT = Path(__file__).resolve().parents[1]
A100_H100 = ROOT / "instances" / "mixed-a100-h100.json"
SMALL_SEARCH = {"max_inner_steps": 12, "max_regional_rounds": 3, "compression": [1, 16], "max_stages": 4,
                "group_sizes": [2, 3], "max_micro_batches": 4, "activation_compression": [1, 4]}


def same(result, best) -> bool:
    value = result.objective_value if result.status == "optimal" else None
    if value is None or best is None:
        return value is None and best is None
    return abs(value - best[0]) <= 1e-9 * abs(best[0])


@pytest.mark.parametrize("seed", range(6))
def test_planner_agrees_with_the_oracle_on_random_mixed_fleets(seed):
    rng = np.random.default_rng(1000 + seed)
    for _ in range(6):
        instance = parse_instance(random_instance(rng, max_count=3))
        result, best = solve(instance), oracle(instance)
        assert same(result, best), (instance.model_dump(mode="json"), result.objective_value, best)
        if result.plan is not None:         # the plan returned is on the pools it names, re-scored
            assert sum(result.plan.pool_nodes.values()) == result.plan.nodes


def test_free_pools_tie_on_cost_and_the_faster_plan_wins():
    """A pool of price 0 makes several node counts cost the same: min_cost takes the fastest."""
    data = {"model": {"params": 2e9}, "training": {"target_flop": 5e21},
            "fleet": {"pools": [{"name": "donated", "hardware": "48xA100-80GB", "count": 3,
                                 "price_usd_per_accelerator": 0},
                                {"name": "bought", "hardware": "16xH100-SXM", "count": 2}]},
            "network": {"wan": {"up_mbps": 10000, "down_mbps": 10000}},
            "limits": {"max_days": 20}, "search": SMALL_SEARCH, "objective": "min_cost"}
    instance = parse_instance(data)
    result, best = solve(instance), oracle(instance)
    assert result.status == "optimal" and same(result, best)
    assert result.objective_value == 0.0 and result.plan.pool_nodes == {"donated": 3}
    # among the free plans, the fastest (3 nodes), not the fewest
    fewest = solve(parse_instance({**data, "limits": {"max_days": 20, "max_nodes": 1}}))
    assert fewest.objective_value == 0.0 and fewest.plan.pool_nodes == {"donated": 1}
    assert fewest.evaluation.values["time_to_target_s"] > result.evaluation.values["time_to_target_s"]


def test_a_budget_caps_each_subset_of_pools():
    data = {"model": {"params": 2e9}, "training": {"target_flop": 5e21},
            "fleet": {"pools": [{"name": "a", "hardware": "48xA100-80GB", "count": 3},
                                {"name": "h", "hardware": "16xH100-SXM", "count": 2}]},
            "limits": {"max_days": 60, "budget_usd": 2.5e6}, "search": SMALL_SEARCH, "objective": "min_time"}
    instance = parse_instance(data)
    result, best = solve(instance), oracle(instance)
    assert same(result, best) and result.evaluation.values["cost_usd"] <= 2.5e6


def test_the_a100_h100_fleet_is_fastest_with_both_pools():
    """The shipped instance: the oracle agrees, and both pools together beat each alone."""
    data = json.loads(A100_H100.read_text())
    instance = parse_instance(data)
    result = solve(instance)
    assert result.status == "optimal" and same(result, oracle(instance))
    assert result.plan.pool_nodes == {"a100": 12, "h100": 8}
    alone = {}
    for pool in data["fleet"]["pools"]:
        one = copy.deepcopy(data)
        one["fleet"]["pools"] = [pool]
        alone[pool["name"]] = solve(parse_instance(one))
    assert all(r.status == "optimal" for r in alone.values())
    assert result.objective_value < min(r.objective_value for r in alone.values())
    assert alone["h100"].plan.precision == "fp8" and result.plan.precision == "fp16"


def test_the_mip_backends_solve_the_same_parts():
    from planner.solvers import backends
    if "highs" not in backends():
        pytest.skip("HiGHS (pyomo + highspy) not installed")
    instance = parse_instance(json.loads(A100_H100.read_text()))
    exact, mip = solve(instance), solve(instance, solver="highs")
    assert mip.status == "optimal" and mip.objective_value == pytest.approx(exact.objective_value, rel=1e-9)


def test_solve_command_prints_and_writes_the_pools(tmp_path):
    result = CliRunner().invoke(main, ["solve", str(A100_H100), "--json"])
    assert result.exit_code == 0
    out = json.loads(result.output)
    assert out["plan"]["pool_nodes"] == {"a100": 12, "h100": 8}
    assert [(p["pool"], p["nodes_used"], p["sets_pace"]) for p in out["evaluation"]["pools"]] == [
        ("a100", 12, True), ("h100", 8, False)]
    report = tmp_path / "r.html"
    text = CliRunner().invoke(main, ["solve", str(A100_H100), "--report", str(report)])
    assert text.exit_code == 0 and "12 x a100 (48xA100-80GB) + 8 x h100 (16xH100-SXM)" in text.output
    assert "Pools" in report.read_text()
