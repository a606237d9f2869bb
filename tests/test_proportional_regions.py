"""The proportional rule beyond 12 pools with regions chosen by the planner (fleet.sync_rule
'proportional' or 'auto', network.regions 'chosen': planner.solvers.proportional_subsets with
`chosen`, every subset's region partitions at its leaf) against the full listing of every subset of
pools and region partition (planner.solvers.pool_parts) and against the brute-force oracle
(planner.solvers.mixed_oracle: every assignment, every set partition, each rule searched)."""

import math

import numpy as np
import pytest

from planner.evaluate import evaluate
from planner.fleet.samples import random_subset_rule_pools
from planner.schema.errors import InputError
from planner.schema.instance import parse_instance
from planner.sites.samples import random_placement_instance, random_region_instance
from planner.solvers import pool_parts, proportional_subsets
from tests.test_pool_regions_families import as_the_oracle, by_choices, check, many_pools_chosen


def rule_pools_chosen(rng, count):
    """`many_pools_chosen` (2 to 6 sites, most with a LAN faster than the tier, chosen regions) under
    'proportional' or 'auto' with the objectives, targets and budgets of `random_subset_rule_pools`
    (C_local only: with sites a C_quality target is refused)."""
    data = many_pools_chosen(rng, count)
    rules = random_subset_rule_pools(rng, count, max_count=3)
    data["fleet"]["sync_rule"] = rules["fleet"]["sync_rule"]
    data["objective"] = rules["objective"]
    data["training"].pop("target_kind", None)
    data.get("assumptions", {}).get("constants", {}).pop("replica_penalty", None)
    data["limits"].pop("budget_usd", None)
    if "budget_usd" in rules["limits"]:
        data["limits"]["budget_usd"] = rules["limits"]["budget_usd"]
    return data


@pytest.mark.parametrize("seed", range(5))
def test_rule_with_chosen_regions_equals_the_listing(seed, monkeypatch):
    """2 to 7 pools forced through the search beyond 12 pools: the listing's status, value and cost,
    the plan re-scored on its regions."""
    rng = np.random.default_rng(6100 + seed)
    for k in range(3):
        data = rule_pools_chosen(rng, int(rng.integers(2, 8)))
        check(parse_instance(data), monkeypatch, (seed, k, data["fleet"]["sync_rule"], data["objective"]))


@pytest.mark.parametrize("draw", [random_region_instance, random_placement_instance])
@pytest.mark.parametrize("seed", range(3))
def test_rule_with_chosen_regions_equals_the_listing_and_the_oracle(draw, seed, monkeypatch):
    """The oracle's draws with a rule (several regions; placements that set the cost): the listing's
    answer, and the oracle's value (and, but for min_cost, cost); C_quality targets stay refused."""
    rng = np.random.default_rng(6200 + seed)
    for k in range(4):
        instance = parse_instance(draw(rng, sync_rule=True))
        try:
            result = check(instance, monkeypatch, (draw.__name__, seed, k))
        except InputError as err:
            assert instance.training.target_kind == "c_quality", err
            continue
        as_the_oracle(instance, result)


@pytest.mark.parametrize("first", [7001, 7021])
def test_rule_where_the_placement_binds_equals_the_listing(first, monkeypatch):
    """`random_placement_instance` with a rule, 10 draws (a seed each): several pools at a site, most nodes
    required, the placement rule binding (a node of the search solved whole without it, as without chosen
    regions, finds plans the listing has not: seed 7019)."""
    for seed in range(first, first + 20, 2):
        instance = parse_instance(random_placement_instance(np.random.default_rng(seed), sync_rule=True))
        if instance.training.target_kind != "c_quality":
            check(instance, monkeypatch, seed)


def test_regions_and_rule_matter_in_the_draws(monkeypatch):
    """The draws above reach what the new path must get right: optima under the proportional rule on
    plans of several regions (else the tests would compare nothing new)."""
    several = 0
    for seed in range(3):
        rng = np.random.default_rng(6200 + seed)
        for _ in range(4):
            instance = parse_instance(random_placement_instance(rng, sync_rule=True))
            if instance.training.target_kind == "c_quality":
                continue
            result = by_choices(instance, monkeypatch)
            plan = result.plan
            several += plan is not None and plan.sync_rule == "proportional" and len(plan.regions or []) > 1
    assert several >= 2


def test_thirteen_cities_under_the_proportional_rule_with_chosen_regions():
    """`bench_mixed.py`'s 13 pools of one kind in 13 cities, the regional tier at 20 ms, chosen regions,
    under 'proportional' (refused before, exit 2): every pool runs the pace's steps, so the plans are
    straggler twins and the optimum is the straggler rule's (tests/test_pool_regions_families.py: a flat
    plan on every node), put on the proportional rule."""
    import sys
    from pathlib import Path

    from planner.solve import solve
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
    from bench_mixed import pools_data
    data = pools_data(13)
    data["network"]["regions"], data["network"]["regional"]["rtt_ms"] = "chosen", 20.0
    data["fleet"]["sync_rule"] = "proportional"
    instance = parse_instance(data)
    result = solve(instance, "min_time")
    assert result.status == "optimal" and result.objective_value == pytest.approx(2660887.33747715, rel=1e-9)
    assert result.plan.nodes == 520 and result.plan.sync_rule == "proportional"
    assert evaluate(instance, result.plan).values == result.evaluation.values



def test_thirteen_cities_of_two_kinds_under_the_proportional_rule_with_chosen_regions():
    """The same 13 cities with the pools alternating 16x H100 and 8x B200 (`bench_bnb_pools.py --kinds
    16xH100-SXM,8xB200`): the B200 pools run more inner steps than the H100 pace, so the search over
    subsets visits the mixed subsets; the relaxation per link setting closes every node of theirs (5-8 s
    here, 268 s when every leaf was solved). The optimum is the six B200 pools' plan, 2,483,807.18 s on 240
    nodes: the value the full listing gives on the first 12 of these cities (every subset and partition
    solved, 110 s; the 13th city holds an H100 pool), and the one the search gave before with every leaf
    solved."""
    import sys
    from pathlib import Path

    from planner.solve import solve
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
    from bench_mixed import pools_data
    data = pools_data(13)
    data["network"]["regions"], data["network"]["regional"]["rtt_ms"] = "chosen", 20.0
    data["fleet"]["sync_rule"] = "proportional"
    for i, pool in enumerate(data["fleet"]["pools"]):
        pool["hardware"] = ("16xH100-SXM", "8xB200")[i % 2]
    instance = parse_instance(data)
    result = solve(instance, "min_time")
    assert result.status == "optimal" and result.objective_value == pytest.approx(2483807.180578816, rel=1e-9)
    assert result.plan.nodes == 240 and sorted(result.plan.pool_nodes) == sorted(
        pool["name"] for pool in data["fleet"]["pools"][1::2])
    assert evaluate(instance, result.plan).values == result.evaluation.values

def audit_unplaced(monkeypatch, audits):
    """Wrap `Search.unplaced` (the relaxation of a node under chosen regions, `link_groups`): at each
    call, its bound with no incumbent, against the best value of every leaf U under the node (F within U
    within E), each solved alone by the listing's own search of its parts (no incumbent either); then the
    search goes on with the real call. Appends (maximise, bound, best leaf value or None, whether the node's
    subsets have several sets of sites) to `audits`."""
    original = proportional_subsets.Search.unplaced

    def audited(self, family, forced, eligible):
        run = self.run
        saved = run.incumbent, self.best
        run.incumbent, self.best = math.inf, -math.inf
        bound = original(self, family, forced, eligible)
        run.incumbent, self.best = saved
        values = []
        optional = [p for p in eligible if p not in forced]
        for mask in range(1 << len(optional)):
            used = tuple(sorted(forced + tuple(p for k, p in enumerate(optional) if mask >> k & 1)))
            alone = pool_parts.PartsRun(run.instance, run.pools, run.objective, run.solver, run.deadline, [],
                                        run.rules, bound=run.objective.empty_bound)
            proportional_subsets.Search(alone, self.params, self.net, self.chosen).leaf(family, used)
            values += [r.value for r in alone.found]
        best = (max(values) if run.objective.maximise else min(values)) if values else None
        audits.append((run.objective.maximise, bound, best, not self.one_site_set(forced, eligible)))
        return original(self, family, forced, eligible)

    monkeypatch.setattr(proportional_subsets.Search, "unplaced", audited)


@pytest.mark.parametrize("first", [7100, 7140])
def test_unplaced_bound_holds_for_every_leaf_under_it(first, monkeypatch):
    """The relaxation of a node (no placement rule, no budget, one per link setting of its subsets' sets of
    sites and partitions) is at most (min_time) / at least (max_compute) the best placed plan of every subset
    under the node, at nodes of one set of sites and of several, on random fleets of 3 to 7 pools at 2 to 6
    sites, several pools at a site; it is exact (equal) at some nodes, and the search still answers as the
    listing."""
    audited_draws(first, "chosen", monkeypatch)


@pytest.mark.parametrize("first", [7400])
def test_unplaced_bound_holds_with_the_geography(first, monkeypatch):
    """With the geography's regions a node of several sets of sites is bounded the same way (one
    relaxation per set of sites' links, `SiteNetwork.links` of the set): at most (min_time) / at least
    (max_compute) the best plan of every subset under the node, each solved alone by the listing's own
    search; the search still answers as the listing."""
    audited_draws(first, "geography", monkeypatch)


def audited_draws(first: int, regions: str, monkeypatch) -> None:
    """40 draws of `rule_pools_chosen` from seed `first` with network.regions `regions` (min_cost left
    out: no relaxation), each checked against the listing with every relaxation audited
    (`audit_unplaced`): at least 5 nodes of several sets of sites, every bound holding, one tight."""
    audits = []
    audit_unplaced(monkeypatch, audits)
    for seed in range(first, first + 40):
        rng = np.random.default_rng(seed)
        data = rule_pools_chosen(rng, int(rng.integers(3, 8)))
        data["network"]["regions"] = regions
        if data["objective"] == "min_cost":
            continue
        check(parse_instance(data), monkeypatch, seed)
    assert sum(spread for *_, spread in audits) >= 5          # nodes of several sets of sites, one link setting each
    tight = 0
    for maximise, bound, best, _ in audits:
        if best is None:
            assert bound is True or isinstance(bound, float)
            continue
        assert bound is not True, (bound, best)
        assert (bound >= best * (1 - 1e-12)) if maximise else (bound <= best * (1 + 1e-12)), (bound, best)
        tight += bound == pytest.approx(best, rel=1e-12)
    assert tight >= 1


def test_link_groups_hold_every_subset_and_partition_under_a_node():
    """`Search.link_groups` (the relaxation's link settings of a node) against the listing, one subset at a
    time: for random nodes (F within E) of fleets of 3 to 7 pools at 2 to 6 sites, every subset U (F within
    U within E) and every partition P the listing tries for S(U) (`region_choices`, from the route graph)
    has a group whose links are `SiteNetwork.links` of P's view of S(U) (the five numbers a setting takes)
    and whose pools hold U; each group's pools are exactly the union of those U; the same with the
    geography's regions (one view per set, the network's own); and the draws have partitions whose links
    are not the geography's (else taking the geography's links would pass)."""
    from planner.fleet.network import site_network
    from planner.fleet.pools import pool_settings
    from planner.fleet.region_plans import region_choices
    from planner.fleet.replicas import sites_of
    from planner.objectives import MIN_TIME

    def numbers(links):
        return (links.wan_up_bps, links.wan_down_bps, links.wan_rtt_s, links.regional_bps, links.regional_rtt_s)

    unlike_geography = 0
    for seed, draw in enumerate(((rule_pools_chosen, random_region_instance) + (random_placement_instance,) * 4) * 6):
        rng = np.random.default_rng(7300 + seed)
        data = draw(rng, int(rng.integers(3, 8))) if draw is rule_pools_chosen else draw(rng, sync_rule=True)
        instance = parse_instance(data)
        pools, net = pool_settings(instance), site_network(instance)
        if net is None:
            continue
        run = pool_parts.PartsRun(instance, pools, MIN_TIME, "bnb", math.inf, [], ("proportional",))
        chosen, geography = (proportional_subsets.Search(run, None, net, c) for c in (True, False))
        for _ in range(5):
            eligible = tuple(sorted(int(p) for p in rng.choice(len(pools), int(rng.integers(1, len(pools) + 1)),
                                                               replace=False)))
            forced = tuple(p for p in eligible if rng.random() < 0.4) or eligible[:1]
            for search in (chosen, geography):       # the geography's: one view per set of sites, its own
                groups = [(numbers(links), set(within)) for links, within in search.link_groups(forced, eligible)]
                assert len({key for key, _ in groups}) == len(groups)
                reached = {key: set() for key, _ in groups}
                optional = [p for p in eligible if p not in forced]
                for mask in range(1 << len(optional)):
                    used = forced + tuple(p for k, p in enumerate(optional) if mask >> k & 1)
                    sites = sites_of(pools, used)
                    for partition in region_choices(net, sites) if search is chosen else [None]:
                        view = net if partition is None else net.with_regions(partition)
                        key = numbers(view.links(sites))
                        assert key in reached, (seed, forced, eligible, used, partition)
                        reached[key] |= set(used)
                        unlike_geography += key != numbers(net.links(sites))
                assert all(reached[key] == within for key, within in groups), (seed, forced, eligible)
    assert unlike_geography >= 5


def test_link_groups_leave_a_node_unbounded_where_a_set_of_sites_has_too_many_partitions(monkeypatch):
    """Sets of sites whose partitions the listing refuses (more than `partition.MAX_PARTITIONS`; here the
    sets named refuse): a node reaching several sets of sites gets no bound (None: it is branched, and only
    a leaf refuses, as before), whether the refused set is a larger one or its forced pools' own; a node
    of one set of sites refuses as the listing does (InputError)."""
    from planner.fleet.network import site_network
    from planner.fleet.pools import pool_settings
    from planner.objectives import MIN_TIME
    from planner.solvers.pool_parts import SiteSetViews

    instance = parse_instance(random_placement_instance(np.random.default_rng(3), sync_rule=True))
    pools, net = pool_settings(instance), site_network(instance)
    run = pool_parts.PartsRun(instance, pools, MIN_TIME, "bnb", math.inf, [], ("proportional",))
    original = SiteSetViews.link_numbers         # what `link_groups` reads of a set (it refuses as `partitions`)
    refused = set()

    def link_numbers(self, mask):
        if mask in refused:
            raise InputError([])
        return original(self, mask)

    monkeypatch.setattr(SiteSetViews, "link_numbers", link_numbers)
    sites = [p.site for p in pools]
    one, other = 0, next(k for k, site in enumerate(sites) if site != sites[0])

    def groups(forced, eligible):
        return proportional_subsets.Search(run, None, net, True).link_groups(forced, eligible)

    views = SiteSetViews(net, pools)
    assert groups((one,), (one, other)) is not None and groups((one,), (one,)) is not None
    refused.add(views.mask((one, other)))                           # the larger set
    assert groups((one,), (one, other)) is None
    assert groups((one,), (one,)) is not None
    refused.clear()
    refused.add(views.mask((one,)))                                 # the forced pools' own set
    assert groups((one,), (one, other)) is None
    with pytest.raises(InputError):
        groups((one,), (one,))
