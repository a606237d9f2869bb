"""The search by families beyond 12 pools (planner.solvers.pool_families) against the full listing
of every subset of pools (planner.solvers.pool_parts.parts_until) on random fleets of up to 12 pools,
and against the pools' MIP (--solver highs) on fleets of 13 to 16; what stays refused beyond 12."""

import json

import numpy as np
import pytest
from click.testing import CliRunner

from planner.cli import main
from planner.fleet.samples import add_sites, random_many_pools
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


def with_sites(rng, count, max_count=3):
    """`random_many_pools` with the pools at 2 to 6 sites (`add_sites`: a ring of links, regional groups)."""
    data = random_many_pools(rng, count, max_count=max_count)
    add_sites(rng, data)
    return data


@pytest.mark.parametrize("sites", [False, True])
@pytest.mark.parametrize("seed", range(8))
def test_families_equal_the_listing_on_random_fleets(seed, sites, monkeypatch):
    """Without sites, and with them (the families of each set of sites)."""
    rng = np.random.default_rng((2800 if sites else 2700) + seed)
    for _ in range(4):
        data = with_sites(rng, int(rng.integers(1, 8))) if sites else random_many_pools(rng, int(rng.integers(1, 8)))
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


def equal_the_oracle(rng, sample, monkeypatch):
    """Three fleets of 2 or 3 pools of 1 or 2 nodes drawn by `sample`: the families' value is the
    oracle's (every assignment of nodes to pools scored one by one, planner.solvers.mixed_oracle)."""
    for _ in range(3):
        instance = parse_instance(sample(rng, int(rng.integers(2, 4)), max_count=2))
        result, best = by_families(instance, monkeypatch), oracle(instance)
        assert (result.objective_value is None) == (best is None)
        if best is not None:
            assert result.objective_value == pytest.approx(best[0], rel=1e-9)


@pytest.mark.parametrize("seed", range(3))
def test_families_equal_the_oracle(seed, monkeypatch):
    equal_the_oracle(np.random.default_rng(2750 + seed), random_many_pools, monkeypatch)


@pytest.mark.parametrize("sites", [False, True])
@pytest.mark.parametrize("count", [13, 16])
def test_families_equal_highs_beyond_twelve_pools(count, sites):
    from planner.solvers import backends
    if "highs" not in backends():
        pytest.skip("HiGHS (pyomo + highspy) not installed")
    rng = np.random.default_rng((2840 if sites else 2790) + count)
    plans = 0
    for objective in ("min_time", "min_cost", "max_compute"):
        data = with_sites(rng, count, max_count=4) if sites else random_many_pools(rng, count, max_count=6)
        data["objective"] = objective
        data.pop("assumptions", None)     # the MIP does not cover the dtplan profile's ZeRO-3 groups
        instance = parse_instance(data)
        exact, mip = solve(instance), solve(instance, solver="highs")
        assert exact.solver == "bnb"
        if exact.plan is None:     # no plan: both say so (seed 2856, min_time: the MIP path once answered
            # "optimal" with a plan past the duration limit, at an infinite time)
            assert exact.status == mip.status == "infeasible" and mip.plan is None, (data, mip.objective_value)
            continue
        assert agree(exact, mip, rel=1e-6, cost=False), (data, exact.objective_value, mip.objective_value)
        plans += 1
    assert plans >= 1


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
    # the 16 pools' settings are equal (one class): one family per precision, holding each pool i as the
    # slowest of the subsets whose first pool it is, with pools i..15 eligible beside it
    assert len(listed) == len(precisions)
    for f in listed:
        assert sorted(m.forced for m in f.members) == [(i,) for i in range(16)]
        assert all(m.eligible == tuple(range(m.forced[0], 16)) for m in f.members)


@pytest.mark.parametrize("objective, cities", [("min_time", 8), ("min_cost", 8), ("max_compute", 6)])
def test_families_equal_the_listing_on_pools_in_cities(objective, cities, monkeypatch):
    """bench_mixed.py's fleet of P pools in P cities (255 subsets listed at 8; max_compute, which prunes
    less, at 6), a budget under min_time."""
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
    from bench_mixed import pools_data
    data = pools_data(cities)
    data["objective"] = objective
    for k, pool in enumerate(data["fleet"]["pools"]):       # prices and sizes varied
        pool.update(count=2 + k % 3, price_usd_per_accelerator=10000 + 1000 * (k % 4))
    data["limits"] = {"max_days": 365 * 20, "budget_usd": 3e7 if objective == "min_time" else None}
    instance = parse_instance(data)
    listed, families = solve(instance), by_families(instance, monkeypatch)
    assert listed.status == "optimal" and agree(families, listed), (listed.objective_value, families.objective_value)


def test_site_set_links_equal_the_network_links():
    """Every set of sites' row of `site_set_links` against `SiteNetwork.links` of that set."""
    from planner.fleet.network import site_network, site_set_links
    rng = np.random.default_rng(2830)
    for _ in range(6):
        instance = parse_instance(with_sites(rng, 6))
        net = site_network(instance)
        if net is None:
            continue
        names = sorted({p.site for p in instance.fleet.pools})
        table = site_set_links(net, names)
        for mask in range(1, 1 << len(names)):
            links = net.links([n for i, n in enumerate(names) if mask >> i & 1])
            assert tuple(table[mask]) == (links.wan_up_bps, links.wan_down_bps, links.wan_rtt_s, links.regional_bps,
                                          links.regional_rtt_s)


def test_sixteen_pools_in_sixteen_cities():
    """bench_mixed.py's pools_data(16): min_time 2,196,476.48 s (25.42 days), the value `--solver highs`
    answers (its own bound the proof; scripts/bench_mixed.py --pools 16 --solvers highs), on every pool."""
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
    from bench_mixed import pools_data
    result = solve(parse_instance(pools_data(16)), "min_time")
    assert result.solver == "bnb" and result.status == "optimal"
    assert result.objective_value == pytest.approx(2196476.4801184256, rel=1e-9)
    assert result.plan.nodes == 640 and len(result.plan.pool_nodes) == 16


def test_the_proportional_rule_with_a_budget_is_answered_beyond_twelve_pools(tmp_path):
    """13 pools under 'proportional' with a budget and min_cost: answered by the search over subsets
    (planner.solvers.proportional_subsets; tests/test_proportional_subsets.py; a pool at price 0: 0 USD),
    the CLI's exit 0 (with chosen regions: tests/test_proportional_regions.py)."""
    data = random_many_pools(np.random.default_rng(3), 13)
    data["fleet"]["sync_rule"] = "proportional"
    assert data["objective"] == "min_cost" and data["limits"]["budget_usd"] is not None
    result = solve(parse_instance(data))
    assert result.solver == "bnb" and result.status == "optimal" and result.objective_value == 0.0
    path = tmp_path / "p.json"
    path.write_text(json.dumps(data))
    r = CliRunner().invoke(main, ["solve", str(path)])
    assert r.exit_code == 0 and "Traceback" not in r.output


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
