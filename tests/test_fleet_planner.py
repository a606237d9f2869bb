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
from planner.schema.errors import InputError
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


# -- sites ---------------------------------------------------------------------------------------

SIX_SITES = ROOT / "instances" / "mixed-six-sites.json"


def two_sites(link_mbps=50.0, **pool_sites):
    return {"model": {"params": 1e9}, "training": {"target_flop": 1e21},
            "fleet": {"pools": [{"name": "a", "hardware": "16xH100-SXM", "count": 2, "site": pool_sites.get("a", "X")},
                                {"name": "b", "hardware": "16xH100-SXM", "count": 2, "site": pool_sites.get("b", "Y")}]},
            "network": {"wan": {"up_mbps": 100, "down_mbps": 100, "rtt_ms": 100},
                        "sites": [{"name": "X", "city": "London", "lan_mbps": 400, "lan_rtt_ms": 2},
                                  {"name": "Y", "city": "Paris"}, {"name": "Z", "city": "Tokyo"}],
                        "links": [{"a": "X", "b": "Y", "up_mbps": link_mbps, "rtt_ms": 11},
                                  {"a": "Y", "b": "Z", "up_mbps": 1000}]}}


def test_a_sync_across_sites_is_limited_by_the_slowest_route_and_each_node_access():
    from planner.evaluate import evaluate
    from planner.schema.plan import parse_plan
    plan = {"mode": "flat", "nodes": 2, "inner_steps": 10, "compression": 16}
    across = evaluate(parse_instance(two_sites()), parse_plan({**plan, "pool_nodes": {"a": 1, "b": 1}}))
    v = 1e9 * 16 / 16                       # payload bits: P x 16 bits / Cr
    f = 1 + 0.02 * 1                        # straggler f(2), relay coefficient (reference profile)
    rtt = 0.020         # the largest of the link's 11 ms and each site's LAN (X: 2 ms, Y: network.regional's 20)
    assert across.values["t_sync_base_s"] == pytest.approx(v / 50e6 + v / 50e6 + rtt, rel=1e-12)
    assert across.values["t_sync_s"] == pytest.approx((v / 50e6 + v / 50e6 + rtt) * f, rel=1e-12)
    fast = evaluate(parse_instance(two_sites(link_mbps=5000)), parse_plan({**plan, "pool_nodes": {"a": 1, "b": 1}}))
    assert fast.values["t_sync_base_s"] == pytest.approx(v / 100e6 + v / 100e6 + rtt, rel=1e-12)  # access cap
    inside = evaluate(parse_instance(two_sites()), parse_plan({**plan, "pool_nodes": {"a": 2}}))
    assert inside.values["t_sync_base_s"] == pytest.approx(v / 400e6 + v / 400e6 + 0.002, rel=1e-12)  # X's LAN
    assert across.sites["nodes_per_site"] == {"X": 1, "Y": 1}


def test_pool_sites_are_checked():
    def problems(data):
        with pytest.raises(InputError) as err:
            parse_instance(data)
        return [str(p) for p in err.value.problems]
    assert problems(two_sites(a="Q")) == ["fleet.pools[0].site: unknown site 'Q'; network.sites: X, Y, Z"]
    data = two_sites()
    del data["fleet"]["pools"][1]["site"]
    assert problems(data) == ["fleet.pools[1].site: required when network.sites are given: the name of the "
                              "pool's site (one of 'X', 'Y', 'Z')"]
    data = two_sites()
    data["network"] = {}
    assert problems(data)[0].startswith("fleet.pools[0].site: names site 'X', but network.sites is empty")


def test_pools_at_unlinked_sites_exit_2_naming_the_links(tmp_path):
    data = two_sites()
    data["network"]["links"] = [{"a": "Y", "b": "Z", "up_mbps": 1000}]
    path = tmp_path / "i.json"
    path.write_text(json.dumps(data))
    result = CliRunner().invoke(main, ["solve", str(path)])
    assert result.exit_code == 2
    assert "network.links: no route between site 'X' and site 'Y', which both hold pools" in result.output


def test_a_small_world_of_sites_agrees_with_the_oracle():
    """Four of the six sites (one pool each, two nodes), every assignment scored by the oracle."""
    data = json.loads(SIX_SITES.read_text())
    keep = {"LON", "PAR", "NYC", "LAX"}
    data["fleet"]["pools"] = [p for p in data["fleet"]["pools"] if p["site"] in keep]
    data["network"]["sites"] = [s for s in data["network"]["sites"] if s["name"] in keep]
    data["network"]["links"] = [l for l in data["network"]["links"] if {l["a"], l["b"]} <= keep]
    data["search"] = {**SMALL_SEARCH, "compression": [1, 16, 100]}
    for objective in ("min_time", "min_cost", "max_compute"):
        instance = parse_instance({**data, "objective": objective})
        assert same(solve(instance), oracle(instance)), objective


def test_the_six_site_world_trains_on_both_coasts_of_the_atlantic_in_two_regions():
    result = solve(parse_instance(json.loads(SIX_SITES.read_text())))
    assert result.status == "optimal"
    sites = result.evaluation.sites
    assert sites["nodes_per_site"] == {"LON": 2, "PAR": 2, "NYC": 2}      # H100 pools, fp8; not LA's 100 Mb/s
    assert sites["regions"] == [["LON", "PAR"], ["NYC"]]
    assert sites["slowest_route_mbps"] == 1000 and sites["slowest_route_rtt_ms"] == 78   # measured Paris-New York


def test_compare_on_the_governance_cities_keeps_the_pools_at_their_sites(tmp_path):
    """16x H100 replacing 16x H100 pools is the fleet as given, at equal H100-eq and at equal cost
    (40 nodes per city both ways): its rows take the given fleet's 62.9 days (docs/fleet.md)."""
    path = ROOT / "instances" / "mixed-governance-cities.json"
    result = CliRunner().invoke(main, ["compare", str(path), "--hardware", "16xH100-SXM", "--json"])
    assert result.exit_code == 0
    rows = json.loads(result.output)
    assert [r["hardware"] for r in rows][0] == "your fleet (as given)"
    assert {r["hardware"] for r in rows[1:]} == {"16xH100-SXM (equal H100-eq)", "16xH100-SXM (equal cost)"}
    given = json.loads(path.read_text())["fleet"]["pools"]
    for r in rows:
        assert r["pools"] == [{k: p[k] for k in ("name", "hardware", "count", "site")} for p in given]
        assert r["objective_value"] == rows[0]["objective_value"]
    assert rows[0]["objective_value"] / 86400 == pytest.approx(62.9, abs=0.05)


def test_candidate_model_sizes_on_pools_agree_with_the_oracle():
    data = {"model": {}, "training": {"target_flop": 3e21},
            "fleet": {"pools": [{"name": "a", "hardware": "48xA100-80GB", "count": 2},
                                {"name": "h", "hardware": "16xH100-SXM", "count": 2}]},
            "limits": {"max_days": 30}, "search": {**SMALL_SEARCH, "params": [1e9, 3e9]}}
    for objective in ("min_time", "min_cost", "max_compute"):
        instance = parse_instance({**data, "objective": objective})
        result = solve(instance)
        assert same(result, oracle(instance)), objective
        assert result.model_params in (1e9, 3e9) and len(result.candidates) == 2


def test_write_model_writes_the_pools_model(tmp_path):
    """A fleet of pools is one model now (planner.mip.pools; tests/test_fleet_mip.py checks it)."""
    path = tmp_path / "pools.lp"
    result = CliRunner().invoke(main, ["solve", str(A100_H100), "--write-model", str(path)])
    assert result.exit_code == 0 and "pool_allowed" in path.read_text()


def test_an_infeasible_fleet_names_its_fastest_pools():
    """A 2T model fits only on the A100 nodes (3,840 GB each): the fastest plan uses them alone."""
    data = json.loads(A100_H100.read_text())
    data["model"] = {"params": 2e12}
    result = solve(parse_instance(data))
    assert result.status == "infeasible" and len(result.infeasibility) == 1
    unlimited = solve(parse_instance({**data, "limits": {"max_days": 1e6}}))
    assert unlimited.plan.pool_nodes == {"a100": 9}
    assert result.fastest_time_s == unlimited.objective_value
    assert result.infeasibility[0].startswith("duration-limit: the fastest plan (9 x a100) reaches the target in")
