"""The proportional rule (and 'auto') with geography sites beyond 12 pools (planner.solvers.
proportional_families, proportional_subsets, pool_families with `keep`): against the full listing of
every subset on random fleets of up to 7 pools at 2 to 6 sites, against the pools' MIP (--solver
highs) on 13 pools in 13 cities, the pools that run the pace's steps by hand, and what stays refused."""

import json

import numpy as np
import pytest

from planner.fleet.pools import pool_settings
from planner.fleet.samples import add_sites, random_rule_pools, random_subset_rule_pools
from planner.schema.errors import InputError
from planner.schema.instance import parse_instance
from planner.solve import solve
from planner.solvers import proportional_families
from tests.test_pool_families import agree, by_families
from tests.test_pool_families_proportional import cli_refuses, equal_highs, refused


def cities_data(count: int) -> dict:
    """bench_mixed.py's pools_data(count): `count` pools of 40 nodes of 16x H100, one in each of `count`
    European cities, 1 Gb/s links along a chain, under 'proportional'."""
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
    from bench_mixed import pools_data
    data = pools_data(count)
    data["fleet"]["sync_rule"] = "proportional"
    return data


def compare_with_listing(rng, sample, monkeypatch, fleets: int = 4) -> int:
    """`fleets` fleets of 1 to 7 pools drawn by `sample`, at 2 to 6 sites (`add_sites`): the search
    beyond 12 pools (run at any pool count) gives the listing's status, value and cost, a plan within
    the limits; the number compared (a C_quality target is refused beyond 12 pools with sites)."""
    compared = 0
    for _ in range(fleets):
        data = sample(rng, int(rng.integers(1, 8)))
        add_sites(rng, data)
        instance = parse_instance(data)
        listed = solve(instance)
        try:
            families = by_families(instance, monkeypatch)
        except InputError as err:         # beyond 12 pools `pool_families.refusal` says it first
            assert err.problems[0].path == "fleet.pools" and "do not hold" in err.problems[0].message
            assert data["training"].get("target_kind") == "c_quality"
            continue
        assert agree(families, listed), (data, listed.objective_value, families.objective_value)
        if families.plan is not None:
            assert sum(families.plan.pool_nodes.values()) == families.plan.nodes
            assert not families.evaluation.violations
        compared += 1
    return compared


@pytest.mark.parametrize("seed", range(6))
def test_the_rule_with_sites_equals_the_listing(seed, monkeypatch):
    """min_time and max_compute without a budget (`random_rule_pools`): the straggler families on the
    pools of the pace's steps, then the search over subsets whose nodes of one set of sites are solved
    whole by the fastest split."""
    assert compare_with_listing(np.random.default_rng(4100 + seed), random_rule_pools, monkeypatch) >= 2


@pytest.mark.parametrize("seed", range(6))
def test_the_subsets_with_sites_equal_the_listing(seed, monkeypatch):
    """Budgets that bind, min_cost, Chinchilla's C_local (`random_subset_rule_pools`) with sites."""
    assert compare_with_listing(np.random.default_rng(4200 + seed), random_subset_rule_pools, monkeypatch) >= 2


def test_pools_at_one_site_share_the_links(monkeypatch):
    """Six pools at two sites, three each, so that the search over subsets meets nodes whose subsets all
    have one set of sites (solved whole, with that set's links) and nodes whose subsets do not (branched):
    the listing's answer under every objective and rule, with and without a budget."""
    rng = np.random.default_rng(4300)
    for k in range(6):
        data = (random_rule_pools if k % 2 else random_subset_rule_pools)(rng, 6, max_count=3)
        add_sites(rng, data)
        names = [s["name"] for s in data["network"]["sites"]][:2]
        for i, pool in enumerate(data["fleet"]["pools"]):
            pool["site"] = names[i % 2]
        data["training"]["target_kind"] = "c_local"
        instance = parse_instance(data)
        listed, families = solve(instance), by_families(instance, monkeypatch)
        assert agree(families, listed), (data, listed.objective_value, families.objective_value)


def test_the_pools_of_the_pace_by_hand():
    """`pace_pools`: with H up to 40 a pool p runs H_p = floor(H r_p) = H at every H exactly when
    r_p < 41/40. Two 48x A100 nodes (the slowest per node, s the first), a 16x H100 and an 8x B200 at
    fp16: s keeps the other A100 pool (r = 1) and drops the faster nodes (r >= 41/40), as
    `first_h_that_differs` says of each alone."""
    from planner.sync.proportional.rule import first_h_that_differs, step_ratios
    from planner.sync.straggler.rule import mixed_setting
    data = cities_data(4)
    for pool, kind in zip(data["fleet"]["pools"], ["48xA100-80GB", "48xA100-80GB", "16xH100-SXM", "8xB200"]):
        pool["hardware"] = kind
    data["search"] = {"precisions": ["fp16"], "max_inner_steps": 40}
    instance = parse_instance(data)
    pools = pool_settings(instance)
    keep = proportional_families.pace_pools(instance, pools, None)
    s = min(range(4), key=lambda i: (pools[i].rate("fp16"), i))
    assert s == 0
    eligible = (0, 1, 2, 3)
    ratios = step_ratios(mixed_setting(pools, (s,), "fp16"), pools, eligible, "fp16")
    assert ratios[1] == 1.0 and min(ratios[2], ratios[3]) >= 41 / 40
    assert keep("fp16", 0, eligible) == (0, 1)
    assert [first_h_that_differs({p: ratios[p]}, 40) is None for p in eligible] == [True, True, False, False]


def test_thirteen_cities_under_the_proportional_rule():
    """pools_data(13), min_time under 'proportional': the value `--solver highs` proves
    (2,660,887.34 s; scripts/bench_bnb_pools.py --sites --rule proportional), which the search over
    subsets alone (every subset of the 13 cities a leaf, 67 s) also gave; a proportional plan."""
    result = solve(parse_instance(cities_data(13)), "min_time")
    assert result.solver == "bnb" and result.status == "optimal"
    assert result.objective_value == pytest.approx(2660887.337477148, rel=1e-9)
    assert result.plan.sync_rule == "proportional"


def test_the_rule_with_sites_equals_highs_beyond_twelve_pools():
    """13 pools at 2 to 6 sites (`random_rule_pools`, c_local targets): where the MIP proves its answer,
    the same status and value; at least one answer compared."""
    from planner.solvers import backends
    if "highs" not in backends():
        pytest.skip("HiGHS (pyomo + highspy) not installed")
    rng = np.random.default_rng(4400)
    compared = 0
    for rule, objective in (("proportional", "min_time"), ("auto", "min_time"), ("proportional", "max_compute")):
        data = random_rule_pools(rng, 13, max_count=3)
        add_sites(rng, data)
        data["objective"], data["fleet"]["sync_rule"] = objective, rule
        data["training"]["target_kind"] = "c_local"
        data.pop("assumptions", None)     # the MIP does not cover the dtplan profile's ZeRO-3 groups
        data["assumptions"] = {"constants": {"replica_penalty": "linear_v1"}}
        compared += equal_highs(data)
    assert compared >= 1


def test_what_stays_refused_with_sites(tmp_path):
    """Beyond 12 pools with sites under the proportional rule: a C_quality target (the search over
    subsets prunes by the compute-only bound, which a C_quality target does not have): exit 2 naming
    fleet.pools, the reason and --solver highs, from the CLI too (chosen regions are answered:
    tests/test_proportional_regions.py)."""
    data = cities_data(13)
    quality = json.loads(json.dumps(data))
    quality["training"]["target_kind"] = "c_quality"
    assert "C_quality" in refused(quality)
    cli_refuses(tmp_path, quality)


def test_one_set_of_sites_and_its_links_by_hand():
    """`Search.one_site_set`: pools 0 and 1 at site a, 2 at b, 3 at c; a node forced {0} may add 1 (same
    site) but not 2 (a site 0 does not reach); forced {0, 2} may add 1 and 2. Without sites every node
    has one set. `node_setting`: the family's setting with the links `SiteNetwork.links` gives the
    forced pools' sites, as `mixed_setting` of those pools with the sites."""
    from types import SimpleNamespace as NS
    from planner.fleet.network import site_network
    from planner.solvers.proportional_subsets import Search
    from planner.sync.straggler.rule import mixed_setting
    pools = [NS(site="a"), NS(site="a"), NS(site="b"), NS(site="c")]
    run = NS(pools=pools, objective=None, instance=NS(limits=NS(budget_usd=None, max_nodes=None)))
    with_sites = Search(run, None, net=object())
    assert with_sites.one_site_set((0,), (0, 1))
    assert not with_sites.one_site_set((0,), (0, 1, 2))
    assert with_sites.one_site_set((0, 2), (0, 1, 2))
    assert not with_sites.one_site_set((0, 2), (0, 1, 2, 3))
    assert Search(run, None).one_site_set((0,), (0, 1, 2, 3))
    instance = parse_instance(cities_data(4))
    real = pool_settings(instance)
    net = site_network(instance)
    search = Search(NS(pools=real, objective=None, instance=instance), None, net)
    fields = ("wan_up_bps", "wan_down_bps", "wan_rtt_s", "regional_bps", "regional_rtt_s")
    checked = set()
    for family in proportional_families.families(instance, real, None):
        for forced in (family.forced, family.eligible):
            s = search.node_setting(family, forced)
            expected = mixed_setting(real, forced, family.part.precision, net)
            assert [getattr(s, f) for f in fields] == [getattr(expected, f) for f in fields]
            checked.add(tuple(getattr(s, f) for f in fields))
    assert len(checked) >= 2            # sets of sites of different links were compared
