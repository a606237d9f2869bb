"""The proportional rule's search over subsets of pools beyond 12 pools
(planner.solvers.proportional_subsets: a budget, min_cost, max_compute of C_local under the Chinchilla
penalty) against the full listing of every subset on random fleets of up to 7 pools, against the
exhaustive oracle on small fleets, against the pools' MIP (--solver highs) on 13 and 16 pools; its
node bounds by hand."""

import json
from types import SimpleNamespace

import numpy as np
import pytest
from click.testing import CliRunner

from planner.cli import main
from planner.fleet.samples import random_rule_pools, random_subset_rule_pools
from planner.schema.instance import parse_instance
from planner.solve import solve
from planner.solvers import proportional_subsets
from tests.test_pool_families import equal_the_oracle
from tests.test_pool_families_proportional import equal_highs, equal_the_listing


def priced(count: int, price: float):
    return SimpleNamespace(count=count, hardware=SimpleNamespace(accelerators_per_node=1, price_usd_per_accelerator=price))


def test_node_top_and_rate_by_hand():
    """Pools a (3 nodes at 3 USD), b (2 at 9), c (2 at 1); a forced. The cheapest fill: a, then c, c,
    then a, a, then b, b: 3, 4, 5, 8, 11, 20, 29 USD for 1 to 7 nodes; so a budget of 10 USD buys 4
    nodes, 2 USD none. With r = (1, 2.5, 1.5): one node of a (1), then b, b (2.5 each), then c (1.5):
    R(4) = 7.5; R is at least N_top (the straggler twins: sum n_p = N)."""
    pools = [priced(3, 3.0), priced(2, 9.0), priced(2, 1.0)]
    top = proportional_subsets.node_top
    assert top(pools, (0,), (0, 1, 2), float("inf"), 10.0) == 4
    assert top(pools, (0,), (0, 1, 2), float("inf"), 29.0) == 7
    assert top(pools, (0,), (0, 1, 2), float("inf"), 28.9) == 6
    assert top(pools, (0,), (0, 1, 2), float("inf"), 2.0) == 0
    assert top(pools, (0,), (0, 1, 2), 5, None) == 5
    assert top(pools, (0, 1), (0, 1), float("inf"), None) == 5
    ratios = {0: 1.0, 1: 2.5, 2: 1.5}
    rate = proportional_subsets.node_rate
    assert rate(pools, ratios, (0,), (0, 1, 2), 4) == pytest.approx(7.5, rel=1e-11)
    assert rate(pools, ratios, (0, 2), (0, 2), 4) == pytest.approx(1.0 + 1.5 + 1.5 + 1.0, rel=1e-11)
    assert rate(pools, {0: 0.5, 1: 0.5, 2: 0.5}, (0,), (0, 1, 2), 3) == pytest.approx(3.0, rel=1e-11)


@pytest.mark.parametrize("seed", range(6))
def test_subsets_equal_the_listing_on_random_fleets(seed, monkeypatch):
    """1 to 7 pools under 'proportional' and 'auto' (`random_subset_rule_pools`: min_time, min_cost,
    Chinchilla's C_local, half with a budget that binds): the search over subsets against the listing
    of every subset (the brute force over pools used, each part solved exactly)."""
    equal_the_listing(np.random.default_rng(3100 + seed), random_subset_rule_pools, monkeypatch)


@pytest.mark.parametrize("seed", range(2))
def test_subsets_equal_the_oracle(seed, monkeypatch):
    """Every assignment of nodes to pools scored one by one under each rule searched."""
    equal_the_oracle(np.random.default_rng(3150 + seed), random_subset_rule_pools, monkeypatch)


@pytest.mark.parametrize("count", [13, 16])
def test_subsets_equal_highs_beyond_twelve_pools(count):
    """Where the MIP proves its answer (beyond 12 pools it refuses the proportional rule when its own
    bound leaves a gap), the same status and value; at least two answers compared per count."""
    from planner.solvers import backends
    if "highs" not in backends():
        pytest.skip("HiGHS (pyomo + highspy) not installed")
    rng = np.random.default_rng(3160 + count)
    compared = 0
    for rule, objective, budget in (("proportional", "min_cost", False), ("auto", "min_time", True),
                                    ("proportional", "max_compute", False), ("auto", "min_cost", True)) * 2:
        data = random_subset_rule_pools(rng, count, max_count=2)
        data["objective"], data["fleet"]["sync_rule"] = objective, rule
        data.pop("assumptions", None)     # the MIP does not cover the dtplan profile's ZeRO-3 groups
        if not budget:
            data["limits"].pop("budget_usd", None)
        elif "budget_usd" not in data["limits"]:
            data["limits"]["budget_usd"] = 2e6
        compared += equal_highs(data)
    assert compared >= 2


def test_answered_beyond_twelve_pools(tmp_path):
    """What was refused beyond 12 pools without sites is answered by the branch and bound: a budget,
    min_cost, max_compute of C_local under the Chinchilla penalty (exit 0 from the CLI)."""
    base = random_rule_pools(np.random.default_rng(7), 13, max_count=2)
    base.update(objective="min_time")
    budget = json.loads(json.dumps(base))
    budget["limits"]["budget_usd"] = 1e7
    cost = json.loads(json.dumps(base))
    cost["objective"] = "min_cost"
    chinchilla = json.loads(json.dumps(base))
    chinchilla["objective"] = "max_compute"
    chinchilla["training"].pop("target_kind", None)
    chinchilla["assumptions"] = {"constants": {"replica_penalty": "chinchilla"}}
    for data in (budget, cost, chinchilla):
        result = solve(parse_instance(data))
        assert result.solver == "bnb" and result.status in ("optimal", "infeasible")
    path = tmp_path / "p.json"
    path.write_text(json.dumps(budget))
    r = CliRunner().invoke(main, ["solve", str(path)])
    assert r.exit_code == 0 and "Traceback" not in r.output
