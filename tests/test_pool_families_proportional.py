"""The proportional rule's families beyond 12 pools (planner.solvers.proportional_families) against the
full listing of every subset of pools on random fleets of up to 12 pools (fleet.sync_rule proportional
and auto), against the exhaustive oracle on small fleets, against the pools' MIP (--solver highs) on
13 and 16 pools; the fastest fill with pools that may hold no node by hand; what stays refused."""

import json

import numpy as np
import pytest
from click.testing import CliRunner

from planner.cli import main
from planner.fleet.samples import random_many_pools, random_rule_pools
from planner.schema.errors import InputError
from planner.schema.instance import parse_instance
from planner.solve import solve
from tests.test_pool_families import agree, by_families, equal_the_oracle


def test_the_fastest_fill_with_pools_that_may_hold_none(monkeypatch):
    """By hand: pools a (4 steps, 3 nodes), b (9 steps, 2 nodes), c (4 steps, 2 nodes, cheaper than a);
    only a forced. 1 node: a alone; 3: a, then b's two; 5: then c before a (cheaper at equal steps)."""
    from types import SimpleNamespace
    from planner.sync.proportional import rule
    pools = [SimpleNamespace(count=3, price=3.0), SimpleNamespace(count=2, price=9.0),
             SimpleNamespace(count=2, price=1.0)]
    monkeypatch.setattr(rule, "node_price_usd", lambda pool: pool.price)
    steps = {0: 4, 1: 9, 2: 4}
    assert rule.fastest_fill(pools, steps, 1, forced=(0,)) == [1, 0, 0]
    assert rule.fastest_fill(pools, steps, 3, forced=(0,)) == [1, 2, 0]
    assert rule.fastest_fill(pools, steps, 5, forced=(0,)) == [1, 2, 2]
    assert rule.fastest_fill(pools, steps, 7, forced=(0,)) == [3, 2, 2]
    assert rule.fastest_fill(pools, steps, 8, forced=(0,)) is None
    assert rule.fastest_fill(pools, steps, 1, forced=(0, 1)) is None
    ratios = {0: 4.0, 1: 9.0, 2: 4.0}         # H = 1: H_p = the ratios; W 4, 4+9, 13+9, 22+4, ...
    weighted, cost = rule.fill_row(pools, ratios, 1, 8, forced=(0,))
    assert list(weighted) == [0, 4, 13, 22, 26, 30, 34, 38, 0]
    assert list(cost[1:8]) == [3, 12, 21, 22, 23, 26, 29] and cost[0] == cost[8] == np.inf


def test_fill_rows_are_the_per_node_listing_bit_for_bit(monkeypatch):
    """`rule.fill_row` and `rule.fill_rows` (every H at once: the fill order by lexsort, the spare
    nodes' H_p and prices gathered, running sums along rows) against the per-node lists they replaced
    (a concatenation of [H_p] x spare and [price] x spare in `fill_order`, then the same cumulative
    sums, one H at a time): W and cost bit for bit on random fleets of 1 to 9 pools (prices with
    fractions, so the order of the additions shows; ratios with ties in H_p, so the price and index
    keys decide), random H, node caps and forced pools; and W against `fastest_fill`'s counts N by N
    (the exchange argument's fill)."""
    import math
    from types import SimpleNamespace
    from planner.sync.proportional import rule
    monkeypatch.setattr(rule, "node_price_usd", lambda pool: pool.price)

    def per_node_lists(pools, ratios, h, max_nodes, forced):
        weighted, cost = np.zeros(max_nodes + 1), np.full(max_nodes + 1, math.inf)
        steps = {i: int(v) for i, v in rule.inner_steps(ratios, h).items()}
        order = rule.fill_order(pools, steps)
        spare = {i: pools[i].count - (i in forced) for i in order}
        extra_steps = np.concatenate([[steps[i]] * spare[i] for i in order] + [[]])
        extra_price = np.concatenate([[pools[i].price] * spare[i] for i in order] + [[]])
        base = len(forced)
        top = min(max_nodes, base + extra_steps.size)
        if top >= base:
            span = top - base + 1
            weighted[base:top + 1] = sum(steps[i] for i in forced) + np.concatenate([[0.0], np.cumsum(extra_steps)])[:span]
            cost[base:top + 1] = sum(pools[i].price for i in forced) + np.concatenate([[0.0], np.cumsum(extra_price)])[:span]
        return weighted, cost

    rng = np.random.default_rng(3100)
    for _ in range(300):
        size = int(rng.integers(1, 10))
        pools = [SimpleNamespace(count=int(rng.integers(1, 12)), price=float(rng.choice([1.5, 2.25, 0.1, 7.3, 0.7])))
                 for _ in range(size)]
        used = sorted(rng.choice(size, size=int(rng.integers(1, size + 1)), replace=False).tolist())
        ratios = {i: float(rng.choice([1.0, 1.5, 2.0, 3.7, 1.01, 2.3])) for i in used}   # 50 x 2.3 < 115: the slack
        forced = None if rng.random() < 0.3 else tuple(used[:int(rng.integers(1, len(used) + 1))])
        h, max_nodes = int(rng.integers(1, 40)), int(rng.integers(0, 80))
        weighted, cost = rule.fill_row(pools, ratios, h, max_nodes, forced)
        w_old, c_old = per_node_lists(pools, ratios, h, max_nodes, list(ratios) if forced is None else list(forced))
        assert weighted.tobytes() == w_old.tobytes() and cost.tobytes() == c_old.tobytes()
        h_values = np.append(rng.integers(1, 60, size=int(rng.integers(0, 6))), 50)
        rows_w, rows_c = rule.fill_rows(pools, ratios, h_values, max_nodes, forced)
        assert rows_w.shape == rows_c.shape == (h_values.size, max_nodes + 1)
        for k, hk in enumerate(h_values):
            w_old, c_old = per_node_lists(pools, ratios, int(hk), max_nodes,
                                          list(ratios) if forced is None else list(forced))
            assert rows_w[k].tobytes() == w_old.tobytes() and rows_c[k].tobytes() == c_old.tobytes()
        steps = {i: int(v) for i, v in rule.inner_steps(ratios, h).items()}
        for n in range(max_nodes + 1):
            counts = rule.fastest_fill(pools, steps, n, forced)
            assert weighted[n] == (0 if counts is None else sum(counts[i] * steps[i] for i in used))


@pytest.mark.parametrize("seed", range(8))
def test_rule_families_equal_the_listing_on_random_fleets(seed, monkeypatch):
    """1 to 7 pools under 'proportional' and 'auto' (`random_rule_pools`), the families against the
    listing of every subset (the brute force over pools used, each part solved exactly)."""
    equal_the_listing(np.random.default_rng(2900 + seed), random_rule_pools, monkeypatch)


def equal_the_listing(rng, sample, monkeypatch):
    """Four fleets of 1 to 7 pools drawn by `sample`: the search beyond 12 pools (run at any pool
    count) gives the listing's status, value and cost, a plan within the limits."""
    for _ in range(4):
        data = sample(rng, int(rng.integers(1, 8)))
        instance = parse_instance(data)
        listed, families = solve(instance), by_families(instance, monkeypatch)
        assert agree(families, listed), (data, listed.objective_value, families.objective_value)
        if families.plan is not None:
            assert sum(families.plan.pool_nodes.values()) == families.plan.nodes
            assert not families.evaluation.violations


def test_rule_families_equal_the_listing_on_twelve_pools(monkeypatch):
    """nosites_data(12) (four kinds of node, 20 to 110 nodes a pool), min_time at most 60 nodes
    (4,095 subsets listed)."""
    data = nosites_data(12)
    data["limits"]["max_nodes"] = 60
    instance = parse_instance(data)
    listed, families = solve(instance, "min_time"), by_families(instance, monkeypatch, objective="min_time")
    assert listed.status == "optimal" and agree(families, listed)
    assert families.plan.sync_rule == "proportional" and families.plan.nodes == 60


@pytest.mark.parametrize("seed", range(3))
def test_rule_families_equal_the_oracle(seed, monkeypatch):
    """Every assignment of nodes to pools scored one by one under each rule searched."""
    equal_the_oracle(np.random.default_rng(2950 + seed), random_rule_pools, monkeypatch)


@pytest.mark.parametrize("count", [13, 16])
def test_rule_families_equal_highs_beyond_twelve_pools(count):
    """Where the MIP proves its answer (beyond 12 pools it refuses the proportional rule when its own
    bound leaves a gap after its loop's wall-clock seconds: 5 of these 16 instances on a machine at load
    10, more when loaded further), the same status and value; at least two answers compared per count
    (plans or 'infeasible')."""
    from planner.solvers import backends
    if "highs" not in backends():
        pytest.skip("HiGHS (pyomo + highspy) not installed")
    rng = np.random.default_rng(2960 + count)
    compared = 0
    for rule, objective in (("proportional", "min_time"), ("auto", "min_time"), ("proportional", "max_compute"),
                            ("auto", "max_compute")) * 2:
        data = random_rule_pools(rng, count, max_count=6)
        data["objective"], data["fleet"]["sync_rule"] = objective, rule
        data.pop("assumptions", None)     # the MIP does not cover the dtplan profile's ZeRO-3 groups
        if objective == "max_compute":
            data["assumptions"] = {"constants": {"replica_penalty": "linear_v1"}}
        compared += equal_highs(data)
    assert compared >= 2


def equal_highs(data) -> int:
    """1 when the branch and bound and `--solver highs` give the same status and value (relative 1e-6;
    the MIP's ties need not be the cheaper plan), 0 when the MIP refuses beyond 12 pools because its
    own bound did not prove its answer."""
    instance = parse_instance(data)
    exact = solve(instance)
    assert exact.solver == "bnb" and exact.status in ("optimal", "infeasible")
    try:
        mip = solve(instance, solver="highs")
    except InputError as err:         # the MIP's bound did not prove its answer
        assert "did not" in err.problems[0].message
        return 0
    if exact.plan is None:
        assert exact.status == mip.status == "infeasible" and mip.plan is None, (data, mip.objective_value)
        return 1
    assert agree(exact, mip, rel=1e-6, cost=False), (data, exact.objective_value, mip.objective_value)
    return 1


def nosites_data(count: int) -> dict:
    """bench_mixed.py's pools_nosites_data(count) (four kinds of node) under 'proportional', at fp16,
    which every kind runs (the speeds differ: the rule's inner steps differ)."""
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
    from bench_mixed import pools_nosites_data
    data = pools_nosites_data(count)
    data["fleet"]["sync_rule"] = "proportional"
    data["search"] = {"precisions": ["fp16"]}
    return data


def test_sixteen_pools_under_the_proportional_rule():
    """nosites_data(16), min_time: the answer `--solver highs` gives (2,898,155.57 s, its own bound the
    proof; scripts/bench_bnb_pools.py --rule proportional --precisions fp16), 600 nodes on 12 pools."""
    result = solve(parse_instance(nosites_data(16)), "min_time")
    assert result.solver == "bnb" and result.status == "optimal"
    assert result.objective_value == pytest.approx(2898155.5674264035, rel=1e-9)
    assert result.plan.sync_rule == "proportional" and result.plan.precision == "fp16"
    assert result.plan.nodes == 600 and len(result.plan.pool_nodes) == 12


def refused(data) -> str:
    with pytest.raises(InputError) as err:
        solve(parse_instance(data))
    problem = err.value.problems[0]
    assert problem.path == "fleet.pools" and "at most 12 pools" in problem.message
    assert "--solver highs" in problem.message
    return problem.message


def cli_refuses(tmp_path, data) -> None:
    """`dtplan solve` of the instance exits 2, naming --solver highs, without a traceback."""
    path = tmp_path / "p.json"
    path.write_text(json.dumps(data))
    r = CliRunner().invoke(main, ["solve", str(path)])
    assert r.exit_code == 2 and "--solver highs" in r.output and "Traceback" not in r.output


def test_what_stays_refused_beyond_twelve_pools(tmp_path):
    """The proportional rule with sites under chosen regions and a C_quality target: exit 2 naming
    fleet.pools, the reason and --solver highs (with a C_local target it is answered:
    tests/test_proportional_regions.py; with the geography's regions: tests/test_proportional_sites.py;
    a budget, min_cost and Chinchilla's C_local: tests/test_proportional_subsets.py)."""
    from planner.fleet.samples import add_sites
    sites = random_many_pools(np.random.default_rng(8), 13)
    add_sites(np.random.default_rng(9), sites)
    sites["fleet"]["sync_rule"] = "auto"
    sites["network"]["regions"] = "chosen"
    sites["training"]["target_kind"] = "c_quality"
    assert "C_quality" in refused(sites)
    cli_refuses(tmp_path, sites)
