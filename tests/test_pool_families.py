"""The search by families beyond 12 pools (planner.solvers.pool_families) against the full listing
of every subset of pools (planner.solvers.pool_parts.parts_until) on random fleets of up to 12 pools,
and against the pools' MIP (--solver highs) on fleets of 13 to 16; what stays refused beyond 12."""

import json

import numpy as np
import pytest
from click.testing import CliRunner

from planner.cli import main
from planner.fleet.samples import random_many_pools
from planner.schema.errors import InputError
from planner.schema.instance import parse_instance
from planner.solve import solve
from planner.solvers import decomposition, pool_families
from planner.solvers.mixed_oracle import oracle


def by_families(instance, monkeypatch, **kw):
    """The solve with the families at any pool count (the listing's limit set to 0 pools)."""
    with monkeypatch.context() as m:
        m.setattr(decomposition, "MAX_EXACT_POOLS", 0)
        return solve(instance, **kw)


def agree(a, b, rel=1e-9, cost=True) -> bool:
    """Same status and, with a plan, the same objective value and (`cost`) the same cost: the planner's
    ties go to the cheaper plan (the MIP's need not)."""
    if a.status != b.status:
        return False
    if a.objective_value is None or b.objective_value is None:
        return a.objective_value is None and b.objective_value is None
    cost_a, cost_b = a.evaluation.values["cost_usd"], b.evaluation.values["cost_usd"]
    return (abs(a.objective_value - b.objective_value) <= rel * abs(b.objective_value)
            and (not cost or abs(cost_a - cost_b) <= rel * max(abs(cost_b), 1.0)))


@pytest.mark.parametrize("seed", range(8))
def test_families_equal_the_listing_on_random_fleets(seed, monkeypatch):
    rng = np.random.default_rng(2700 + seed)
    for _ in range(4):
        data = random_many_pools(rng, int(rng.integers(1, 8)))
        instance = parse_instance(data)
        listed, families = solve(instance), by_families(instance, monkeypatch)
        assert agree(families, listed), (data, listed.objective_value, families.objective_value)
        if families.plan is not None:     # the plan is on the pools it names, within the limits
            assert sum(families.plan.pool_nodes.values()) == families.plan.nodes
            assert not families.evaluation.violations


@pytest.mark.parametrize("objective, count", [("min_time", 12), ("min_cost", 12), ("max_compute", 9)])
def test_families_equal_the_listing_on_twelve_pools(objective, count, monkeypatch):
    """12 pools of three kinds of node (4,095 subsets listed; max_compute, which prunes less, on 9),
    with a budget under min_time."""
    rng = np.random.default_rng(12)
    data = random_many_pools(rng, count, max_count=2)
    data["objective"] = objective
    data["limits"].pop("max_nodes", None)
    data["limits"]["budget_usd"] = 4e7 if objective == "min_time" else None
    instance = parse_instance(data)
    listed, families = solve(instance), by_families(instance, monkeypatch)
    assert listed.status == "optimal" and agree(families, listed)


@pytest.mark.parametrize("seed", range(3))
def test_families_equal_the_oracle(seed, monkeypatch):
    """Every assignment of nodes to pools scored one by one (planner.solvers.mixed_oracle)."""
    rng = np.random.default_rng(2750 + seed)
    for _ in range(3):
        instance = parse_instance(random_many_pools(rng, int(rng.integers(2, 4)), max_count=2))
        result, best = by_families(instance, monkeypatch), oracle(instance)
        assert (result.objective_value is None) == (best is None)
        if best is not None:
            assert result.objective_value == pytest.approx(best[0], rel=1e-9)


@pytest.mark.parametrize("count", [13, 16])
def test_families_equal_highs_beyond_twelve_pools(count):
    from planner.solvers import backends
    if "highs" not in backends():
        pytest.skip("HiGHS (pyomo + highspy) not installed")
    rng = np.random.default_rng(2790 + count)
    for objective in ("min_time", "min_cost", "max_compute"):
        data = random_many_pools(rng, count, max_count=6)
        data["objective"] = objective
        data.pop("assumptions", None)     # the MIP does not cover the dtplan profile's ZeRO-3 groups
        instance = parse_instance(data)
        exact, mip = solve(instance), solve(instance, solver="highs")
        assert exact.solver == "bnb" and agree(exact, mip, rel=1e-6, cost=False), (data, exact.objective_value,
                                                                       mip.objective_value)


def test_a_family_holds_the_fleet_beyond_twelve_pools():
    """16 pools of one kind: one family per (precision, slowest pool, memory); the fastest plan uses
    every node (a hand check: more nodes of the same kind never slow a C_local target here)."""
    data = random_many_pools(np.random.default_rng(5), 16)
    for pool in data["fleet"]["pools"]:
        pool.update(hardware="16xH100-SXM", count=2)
        pool.pop("price_usd_per_accelerator", None)
    data["limits"] = {"max_days": 365}
    data["objective"] = "min_time"
    instance = parse_instance(data)
    from planner.fleet.pools import pool_settings
    pools = pool_settings(instance)
    listed = pool_families.families(instance, pools, None)
    # H100 runs fp8 and fp16 (and bf16 where listed): per precision the first pool is the slowest
    # of every subset holding it (ties to the first listed), one memory: 16 families per precision
    precisions = {f.precision for f in listed}
    assert len(listed) == 16 * len(precisions)
    assert all(f.eligible == tuple(range(f.forced[0][0], 16)) for f in listed)


def test_sites_and_the_proportional_rule_stay_refused_beyond_twelve_pools(tmp_path):
    data = random_many_pools(np.random.default_rng(3), 13)
    data["fleet"]["sync_rule"] = "proportional"
    with pytest.raises(InputError) as err:
        solve(parse_instance(data))
    problem = err.value.problems[0]
    assert problem.path == "fleet.pools" and "at most 12 pools" in problem.message
    assert "proportional" in problem.message and "--solver highs" in problem.message
    path = tmp_path / "p.json"
    path.write_text(json.dumps(data))
    r = CliRunner().invoke(main, ["solve", str(path)])
    assert r.exit_code == 2 and "--solver highs" in r.output and "Traceback" not in r.output


def test_the_cli_solves_sixteen_pools_without_sites(tmp_path):
    data = random_many_pools(np.random.default_rng(16), 16, max_count=5)
    data["objective"] = "min_time"
    data["limits"] = {"max_days": 365}
    path = tmp_path / "p16.json"
    path.write_text(json.dumps(data))
    r = CliRunner().invoke(main, ["solve", str(path), "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert out["status"] in ("optimal", "infeasible")
