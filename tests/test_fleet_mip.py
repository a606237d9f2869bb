"""The one-model path for fleets of pools (`--solver highs|scip`: planner.mip.pools,
planner.solvers.mixed_mip) against the exhaustive oracle over every assignment of nodes to pools
(planner.solvers.mixed_oracle), the exact decomposition (`bnb`) and brute force over pool subsets."""

from __future__ import annotations

import json
import math
from itertools import combinations
from pathlib import Path

import numpy as np
import pytest

from planner.objectives import objective_named
from planner.fleet.pools import pool_settings
from planner.fleet.replicas import sites_of
from planner.sync.straggler.rule import mixed_setting, slowest
from planner.fleet.samples import random_instance
from planner.mip.pool_patterns import key_counts, pool_keys
from planner.mip.pool_rows import FAMILIES
from planner.schema.instance import parse_instance
from planner.solve import solve
from planner.solvers import UnsupportedBySolver, backends
from planner.solvers.mixed_oracle import oracle

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif("highs" not in backends(), reason="needs highspy and pyomo")


def sample(seed: int, objective: str) -> dict:
    """A random small mixed instance (<= 3 pools, half on 2 to 6 sites), a third with a C_quality target;
    max_compute of C_local under the linear_v1 replica penalty (the model refuses the chinchilla one)."""
    rng = np.random.default_rng(1000 + seed)
    data = random_instance(rng)
    data["fleet"].pop("sync_rule", None)     # the straggler rule here (`rule_sample`: the other rules)
    data["objective"] = objective
    if rng.random() < 1 / 3:
        data["training"]["target_kind"] = "c_quality"
    elif objective == "max_compute":
        data.setdefault("assumptions", {}).setdefault("constants", {})["replica_penalty"] = "linear_v1"
    return data


def close(a, b, rel=1e-9) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return abs(a - b) <= rel * max(abs(a), abs(b))


def check_against_oracle(data: dict, backend: str, loop_closes: bool = True) -> bool:
    """The loop alone, the certified answer and bnb against the oracle; False when the model refuses.
    `loop_closes` False (another sync rule): the loop's bound must hold, its plan must be a real one,
    but its gap need not close."""
    instance = parse_instance(data)
    try:
        mip = solve(instance, solver=backend)
    except UnsupportedBySolver:
        return False
    best = oracle(instance)
    want = best[0] if best else None
    got = mip.objective_value if mip.status == "optimal" else None
    assert close(got, want), (mip.status, got, want)
    exact = solve(instance, solver="bnb")
    assert close(exact.objective_value if exact.status == "optimal" else None, want)
    maximise = instance.objective == "max_compute"
    for report in mip.mip:                 # the loop alone, before certification
        if maximise:        # capped rounds (`mixed_mip.CERTIFIED_COMPUTE_ROUNDS`): an upper bound, the plan within 1e-4 in ln C
            if report["bound"] is None:     # the wall-clock cap (0.01 s at least per round) met before any bound: a
                assert report["status"] == "time_limit", report      # loaded machine; the certification answered
                continue
            assert want is None or report["bound"] >= want * (1 - 1e-8)
            if report["status"] == "optimal" and want is not None:
                assert close(report["objective"], want, 2e-4)
            continue
        if not loop_closes:
            assert want is None or report["bound"] is None or report["bound"] <= want * (1 + 1e-8)
            assert want is None or report["objective"] is None or report["objective"] >= want * (1 - 1e-8)
            assert want is not None or report["objective"] is None
            if report["status"] == "optimal" and want is not None:
                assert close(report["objective"], want, 1e-8), (report["objective"], want)
            continue
        assert report["status"] in ("optimal", "infeasible"), report["status"]
        if want is None:
            assert report["objective"] is None
        else:
            assert close(report["objective"], want, 1e-8), (report["objective"], want)
            assert report["bound"] <= want * (1 + 1e-8)
    if mip.plan is not None:
        assert sum(mip.plan.pool_nodes.values()) == mip.plan.nodes
    return True


@pytest.mark.parametrize("objective", ["min_time", "min_cost", "max_compute"])
@pytest.mark.parametrize("seed", range(12))
def test_highs_matches_oracle_on_random_mixed_instances(seed, objective):
    check_against_oracle(sample(seed, objective), "highs")


@pytest.mark.parametrize("objective", ["min_time", "min_cost", "max_compute"])
@pytest.mark.parametrize("seed", range(12, 15))
def test_scip_matches_oracle_on_random_mixed_instances(seed, objective):
    if "scip" not in backends():
        pytest.skip("needs ortools")
    check_against_oracle(sample(seed, objective), "scip")


@pytest.mark.parametrize("objective", ["min_time", "min_cost", "max_compute"])
def test_every_mode_on_sites_against_oracle(objective):
    """Three pools on three sites (two fast ones in a region, a slow far one) with every mode allowed."""
    data = {
        "model": {"params": 3e9}, "training": {"target_flop": 2e21},
        "fleet": {"pools": [{"name": "h", "hardware": "16xH100-SXM", "count": 3, "site": "London"},
                            {"name": "a", "hardware": "48xA100-80GB", "count": 2, "site": "Paris"},
                            {"name": "b", "hardware": "7xB200", "count": 2, "site": "New York", "price_usd_per_accelerator": 0}]},
        "network": {"wan": {"up_mbps": 1000, "down_mbps": 1000},
                    "regional": {"mbps": 5000, "rtt_ms": 20},
                    "sites": [{"name": c, "city": c} for c in ("London", "Paris", "New York")],
                    "links": [{"a": "London", "b": "Paris", "up_mbps": 10000},
                              {"a": "Paris", "b": "New York", "up_mbps": 300}]},
        "limits": {"max_days": 60},
        "search": {"modes": ["flat", "hierarchical", "pp_group", "pipeline_wan"], "max_inner_steps": 12,
                   "max_regional_rounds": 3, "group_sizes": [2], "max_stages": 2, "max_micro_batches": 2,
                   "compression": [1.0, 16.0]},
        "objective": objective,
    }
    if objective == "max_compute":
        data["training"]["target_kind"] = "c_quality"
    assert check_against_oracle(data, "highs")


def brute_patterns(pools, precision: str, with_sites: bool) -> dict:
    """Every non-empty subset U of pools that all run `precision`, by its (slowest, least memory, sites)."""
    out = {}
    runs = [p for p in range(len(pools)) if precision in pools[p].precisions]
    for size in range(1, len(runs) + 1):
        for used in combinations(runs, size):
            key = (slowest(pools, used, precision), min(pools[p].setting.memory_bytes for p in used),
                   tuple(sorted(sites_of(pools, used))) if with_sites else ())
            out.setdefault(key, []).append(used)
    return out


@pytest.mark.parametrize("seed", range(8))
def test_patterns_are_exactly_the_subsets_of_pools(seed):
    """The compact patterns (slowest pool, least memory, sites) are the brute-force ones of all 2^P - 1
    subsets; each subset lies within its pattern's allowed pools and holds one of its covers; the
    setting of a pattern is the setting of each of its subsets."""
    rng = np.random.default_rng(500 + seed)
    data = random_instance(rng)
    while len(data["fleet"]["pools"]) < 3:
        data = random_instance(rng)
    instance = parse_instance(data)
    pools = pool_settings(instance)
    with_sites = bool(instance.network.sites)
    precisions = sorted({q for p in pools for q in p.precisions})
    keys = pool_keys(pools, precisions, with_sites)
    from planner.fleet.network import site_network
    net = site_network(instance)
    for precision in precisions:
        brute = brute_patterns(pools, precision, with_sites)
        mine = {(k.slowest, k.memory_bytes, k.sites): k for k in keys if k.precision == precision}
        assert set(mine) == set(brute)
        for pattern, subsets in brute.items():
            key = mine[pattern]
            holds = [set(u) for u in subsets if set(u) <= set(key.allowed)]      # the minimal covers, brute force
            minimal = {tuple(sorted(u)) for u in holds if not any(w < u for w in holds)}
            assert {tuple(sorted(c)) for c in key.covers} == minimal
            setting = mixed_setting(pools, key.covers[0], precision, net)
            for used in subsets:
                assert set(used) <= set(key.allowed)
                assert any(set(c) <= set(used) for c in key.covers)
                assert mixed_setting(pools, used, precision, net) == setting


def test_key_counts_is_the_cheapest_assignment_of_the_pattern():
    """key_counts against brute force over every count vector with the pattern's pools."""
    data = {"model": {"params": 1e9}, "training": {"target_flop": 1e20},
            "fleet": {"pools": [{"name": "slow", "hardware": "48xA100-80GB", "count": 3, "price_usd_per_accelerator": 9000},
                                {"name": "fast", "hardware": "16xH100-SXM", "count": 2, "price_usd_per_accelerator": 1000},
                                {"name": "fast2", "hardware": "16xH100-SXM", "count": 4, "price_usd_per_accelerator": 500}]}}
    instance = parse_instance(data)
    pools = pool_settings(instance)
    from itertools import product
    from planner.fleet.replicas import fleet_cost_usd
    for key in pool_keys(pools, ["fp16"], False):
        for nodes in range(1, 10):
            best = None
            for counts in product(*(range(p.count + 1) for p in pools)):
                used = tuple(i for i, c in enumerate(counts) if c)
                if sum(counts) != nodes or not used:
                    continue
                pattern = (slowest(pools, used, "fp16"), min(pools[p].setting.memory_bytes for p in used))
                if pattern != (key.slowest, key.memory_bytes):
                    continue
                cost = fleet_cost_usd(pools, counts)
                best = cost if best is None else min(best, cost)
            got = key_counts(pools, key, nodes)
            assert (got is None) == (best is None)
            if got is not None:
                assert fleet_cost_usd(pools, got) == pytest.approx(best, rel=1e-12)


def test_more_pools_than_the_decomposition_takes():
    """14 pools (beyond the decomposition's 12) that are splits of two pools of one hardware and price
    each: the one model answers, proven by its own bound, with the optimum of the two merged pools
    (same hardware and price: the same plans, the same costs)."""
    split = [{"name": f"h{i}", "hardware": "16xH100-SXM", "count": 2} for i in range(7)] + \
        [{"name": f"a{i}", "hardware": "48xA100-80GB", "count": 3} for i in range(7)]
    merged = [{"name": "h", "hardware": "16xH100-SXM", "count": 14}, {"name": "a", "hardware": "48xA100-80GB", "count": 21}]
    base = {"model": {"params": 7e9}, "training": {"target_flop": 3e22},
            "network": {"wan": {"up_mbps": 500, "down_mbps": 500}}, "limits": {"max_days": 200},
            "search": {"max_inner_steps": 64}}
    for objective in ("min_time", "min_cost", "max_compute"):
        data = dict(base, objective=objective)
        if objective == "max_compute":
            data["training"] = {"target_flop": 3e22, "target_kind": "c_quality"}
        many = solve(parse_instance(dict(data, fleet={"pools": split})), solver="highs")
        two = solve(parse_instance(dict(data, fleet={"pools": merged})), solver="bnb")
        assert many.status == two.status == "optimal"
        assert many.objective_value == pytest.approx(two.objective_value, rel=1e-9)
        # the loop's bound, or (a loop that did not close) the families' branch and bound
        assert many.mip[0]["certified_by"] == ("the loop's bound" if many.mip[0]["status"] == "optimal"
                                               else "decomposition")
        by_type = {"h": 0, "a": 0}
        for name, n in many.plan.pool_nodes.items():
            by_type[name[0]] += n
        assert sum(by_type.values()) == many.plan.nodes


@pytest.mark.parametrize("name", ["mixed-a100-h100", "mixed-six-sites", "mixed-governance-cities"])
def test_write_model_of_shipped_pools_instances(tmp_path, name):
    """--write-model writes the one model of a fleet of pools, with the pool families, under 1 MB."""
    from click.testing import CliRunner
    from planner.cli import main
    for objective in ("min_time", "min_cost", "max_compute"):
        if name != "mixed-a100-h100" and objective != "min_time":     # 63 site sets, tables for each: slow
            continue
        path = tmp_path / f"{name}.{objective}.lp"
        result = CliRunner().invoke(main, ["solve", str(ROOT / "instances" / f"{name}.json"), "--solver", "highs",
                                           "--objective", objective, "--write-model", str(path), "--json"]
                                    + (["--set", "training.target_kind=c_quality"] if objective == "max_compute" else []))
        assert result.exit_code == 0, result.output
        text = path.read_text()
        assert path.stat().st_size < 1_000_000
        sites = bool(json.loads((ROOT / "instances" / f"{name}.json").read_text())["network"].get("sites"))
        for family in FAMILIES:
            if family != "pool-budget" and (family != "pool-links" or sites):
                assert family.replace("-", "_") in text
        answer = json.loads(result.stdout)
        assert answer["mip"][0]["families"]["pool-allowed"] >= 1


def test_max_compute_of_c_local_under_chinchilla_matches_bnb():
    """max_compute of C_local under the default (chinchilla) replica penalty, on the shipped A100 + H100
    fleet with H <= 8, R <= 2: the loop alone and the certified answer against the decomposition."""
    data = json.loads((ROOT / "instances" / "mixed-a100-h100.json").read_text())
    data["search"] = {"max_inner_steps": 8, "max_regional_rounds": 2}
    data["objective"] = "max_compute"
    instance = parse_instance(data)
    mip, exact = solve(instance, solver="highs"), solve(instance, solver="bnb")
    assert mip.status == exact.status == "optimal"
    assert mip.objective_value == pytest.approx(exact.objective_value, rel=1e-9)
    loop = mip.mip[0]       # the loop is capped by wall clock before its certification: on a loaded machine it may
    assert (loop["bound"] is None and loop["status"] == "time_limit") or \
        loop["bound"] >= exact.objective_value * (1 - 1e-9)      # stop without a bound; a bound it gives must hold


def test_candidate_model_sizes_on_pools():
    """search.params: one model per size, the best kept, certified; against the oracle over every size."""
    data = {"model": {}, "training": {"target_flop": 3e21},
            "fleet": {"pools": [{"name": "a", "hardware": "48xA100-80GB", "count": 2},
                                {"name": "h", "hardware": "16xH100-SXM", "count": 2}]},
            "limits": {"max_days": 30},
            "search": {"max_inner_steps": 8, "max_regional_rounds": 2, "max_stages": 2, "max_micro_batches": 2,
                       "params": [1e9, 3e9]}}
    for objective in ("min_time", "min_cost", "max_compute"):
        instance = parse_instance({**data, "objective": objective})
        result = solve(instance, solver="highs")
        best = oracle(instance)
        assert result.status == "optimal" and close(result.objective_value, best[0]), objective
        assert len(result.mip) == 2 and result.model_params in (1e9, 3e9)


def rule_sample(seed: int, objective: str) -> dict:
    """`sample` with fleet.sync_rule proportional or auto (drawn by the seed)."""
    data = sample(seed, objective)
    data["fleet"]["sync_rule"] = ["proportional", "auto"][seed % 2]
    return data


@pytest.mark.parametrize("objective", ["min_time", "min_cost", "max_compute"])
@pytest.mark.parametrize("seed", [0, 1, 2, 3, 5, 6, 8, 9])
def test_highs_matches_oracle_under_the_rule(seed, objective):
    """Random small fleets under fleet.sync_rule proportional or auto: the loop (its bound, and its plan
    when it closes), the certified answer and bnb against the oracle, which scores every assignment
    under the rule."""
    check_against_oracle(rule_sample(seed, objective), "highs", loop_closes=False)


@pytest.mark.parametrize("objective", ["min_time", "max_compute"])
def test_scip_matches_oracle_under_the_rule(objective):
    if "scip" not in backends():
        pytest.skip("needs ortools")
    check_against_oracle(rule_sample(13, objective), "scip", loop_closes=False)


def _speed_gap(rule: str, objective: str) -> dict:
    """4 slow and 3 fast nodes (2.5 x), four nodes at most, a slow WAN: under 'auto' the optimum runs the
    proportional rule on 1 slow + 3 fast nodes (tests/test_fleet_proportional.py)."""
    from tests.test_fleet_proportional import fleet
    data = {**fleet(sync_rule=rule), "limits": {"max_nodes": 4}, "objective": objective,
            "search": {"max_inner_steps": 12, "group_sizes": [2], "compression": [1, 16],
                       "modes": ["flat", "hierarchical"]}}
    data["network"]["wan"] = {"up_mbps": 20, "down_mbps": 20, "rtt_ms": 80}
    return data


@pytest.mark.parametrize("objective", ["min_time", "max_compute"])
def test_the_rule_beats_every_straggler_plan_through_the_model(objective):
    """A fleet where the proportional plan beats every straggler plan: the one model answers 'auto' and
    'proportional' with it (1 slow + 3 fast nodes, as the oracle), and the loop's own plan, before the
    certification, already beats the straggler optimum (the model's rows of the rule chose it)."""
    straggler = solve(parse_instance(_speed_gap("straggler", objective)), solver="highs")
    for rule in ("auto", "proportional"):
        instance = parse_instance(_speed_gap(rule, objective))
        result, best = solve(instance, solver="highs"), oracle(instance)
        assert result.status == "optimal" and close(result.objective_value, best[0])
        assert result.plan.sync_rule == "proportional" and result.plan.pool_nodes == {"slow": 1, "fast": 3}
        loop = result.mip[0]
        if objective == "min_time":
            assert result.objective_value < straggler.objective_value
            assert loop["objective"] < straggler.objective_value * (1 - 1e-3) and loop["bound"] <= best[0]
        else:
            assert result.objective_value > straggler.objective_value
            assert loop["objective"] > straggler.objective_value * (1 + 1e-3) and loop["bound"] >= best[0]
        assert "rule-replicas" in loop["families_added"] and loop["families"]["rule-replicas"] >= 2


@pytest.mark.parametrize("objective", ["min_time", "max_compute"])
@pytest.mark.parametrize("rule", ["proportional", "auto"])
def test_rule_rows_bound_every_plan_from_below(rule, objective):
    """The relaxation against brute force: for every split of the nodes of two pools of unequal speed and
    plans of every class the rule applies to (several n, H, R), the model with the split, the class and
    n, H, R fixed has an optimum no better than the plan's own value under the rule (ln T from below,
    ln C from above), and under 'auto' than its straggler value too."""
    import math
    from planner.sync.proportional.mip_rows import eligible_class, rule_value
    from planner.mip.pool_patterns import price_scale
    from planner.mip.pool_rows import build_pools, initial_grid
    from planner.mip.pools import pool_tables
    from planner.solvers.certified import incumbent_value
    from planner.solvers.pool_parts import unit_price
    data = _speed_gap(rule, objective)
    data["limits"] = {"max_days": 3650}
    data["search"]["max_inner_steps"] = 8
    instance = parse_instance(data)
    pools = pool_settings(instance)
    pt = pool_tables(instance, pools, objective_named(objective), None)
    grid = initial_grid(pt, objective_named(objective), None)
    grid.h_points |= {2, 3, 4, 5, 6, 8}          # single values of H: the rows at floor(H rho_p) / H too
    f = build_pools(pt, grid, objective_named(objective), None)
    m, t, solver = f.model, pt.merged, backends()["highs"]
    checked = 0
    splits = [(a, b) for a in range(1, 5) for b in range(1, 4)] if objective == "min_time" else [(1, 3), (3, 1), (4, 3)]
    for counts in splits:
        n_nodes = sum(counts)
        s = unit_price(mixed_setting(pools, (0, 1), "fp16", None))
        (j,) = [j for j, part in enumerate(pt.parts) if part.tables is not None and repr(part.setting) == repr(s)]
        part = pt.parts[j]
        for a, e in enumerate(part.tables.sync):
            i = part.sync_offset + a
            if not (eligible_class(t, e) and e.n_lo <= n_nodes <= e.n_hi):
                continue
            for h, r in ((1, 1), (3, 2), (8, 1), (5, 3)):
                r = r if e.mode == "hierarchical" else 1
                batch = t.plan(e.group, e.index, n_nodes, h, r)
                true = rule_value(objective_named(objective), s, batch, list(counts), pools, price_scale(pools))
                if rule == "auto":
                    twin = dataclasses_replace_nodes(batch, n_nodes)
                    true = min(true, incumbent_value(s, twin, objective_named(objective)))
                if not math.isfinite(true):
                    continue
                for k, y in enumerate(m.yv):
                    y.fix(1 if k == i else 0)
                for lam in m.lamv:
                    lam.fix(0)
                for v, x in ((m.n, n_nodes), (m.H, h), (m.R, r), (m.cntv[0], counts[0]), (m.cntv[1], counts[1])):
                    v.fix(x)
                got = solver.solve(m)
                assert got.status == "optimal", (counts, e.label, h, r, got.status)
                assert got.objective <= true + 1e-7, (counts, e.label, h, r, got.objective, true)
                checked += 1
    assert checked >= (40 if objective == "min_time" else 15), checked


def dataclasses_replace_nodes(batch, nodes: int):
    import dataclasses
    return dataclasses.replace(batch, nodes=np.array([nodes], dtype=np.int64))


def test_max_compute_beyond_twelve_pools_is_proven_by_the_families():
    """13 pools in 13 cities (scripts/bench_mixed.py), max_compute with --solver highs: the loop's first round
    does not close its bound, so the families' branch and bound certifies it (before: status time_limit with a
    gap of about 96%); the answer is bnb's, proven."""
    import sys
    sys.path.insert(0, str(ROOT / "scripts"))
    from bench_mixed import pools_data
    instance = parse_instance(dict(pools_data(13), objective="max_compute"))
    mip, exact = solve(instance, solver="highs"), solve(instance, solver="bnb")
    assert mip.status == exact.status == "optimal" and mip.gap == 0.0
    assert mip.objective_value == pytest.approx(exact.objective_value, rel=1e-9)
    assert mip.plan.pool_nodes == exact.plan.pool_nodes
    assert mip.mip[0]["certified_by"] == "decomposition" and mip.mip[0]["status"] != "optimal"


def test_an_interrupted_certification_keeps_the_better_plan_and_the_tighter_bound():
    """Beyond 12 pools a certification the deadline stops (`mixed_mip.with_loop`): the better plan of the families
    and the loop (the families' on a tie), the tighter proven bound (max_compute: the smaller upper bound; min_*: the
    larger lower bound), gap and status from them, by hand."""
    from planner.objectives import MAX_COMPUTE, MIN_TIME
    from planner.solvers.mixed_mip import with_loop
    from planner.solvers.uniform import SolveResult

    def result(objective, value, bound):
        return SolveResult(objective, "highs", "time_limit", value, bound, None, 1.0, 0)
    # max_compute: the families found nothing in time, the loop a plan of 1e26 FLOP under its bound 2e26
    loop = result(MAX_COMPUTE, 1e26, 2e26)
    r = with_loop(result(MAX_COMPUTE, None, math.inf), loop, True)
    assert r is loop and r.best_bound == 2e26 and r.gap == pytest.approx(1.0) and r.status == "time_limit"
    # the families found more compute (1.5e26) before the deadline: their plan, the loop's bound
    fam = result(MAX_COMPUTE, 1.5e26, math.inf)
    r = with_loop(fam, result(MAX_COMPUTE, 1e26, 2e26), True)
    assert r is fam and r.best_bound == 2e26 and r.gap == pytest.approx(0.5 / 1.5)
    # the loop's bound meets the families' plan: proven
    r = with_loop(result(MAX_COMPUTE, 1.5e26, math.inf), result(MAX_COMPUTE, 1e26, 1.5e26), True)
    assert r.status == "optimal" and r.gap == 0.0 and r.objective_value == 1.5e26
    # min_time: the families' 100 s (their bound 0 s) against the loop's 120 s (bound 90 s): 100 s, bound 90 s
    fam = result(MIN_TIME, 100.0, 0.0)
    r = with_loop(fam, result(MIN_TIME, 120.0, 90.0), False)
    assert r is fam and r.best_bound == 90.0 and r.gap == pytest.approx(0.1) and r.status == "time_limit"
    # a tie of values goes to the families' plan (they break time ties by cost)
    fam = result(MIN_TIME, 100.0, 0.0)
    assert with_loop(fam, result(MIN_TIME, 100.0, 95.0), False) is fam


@pytest.mark.parametrize("rule", ["proportional", "auto"])
def test_the_rule_beyond_the_decomposition(rule, tmp_path, monkeypatch):
    """14 pools (splits of an H100 and an A100 pool) under the rule, beyond the decomposition's 12: min_time
    and min_cost are answered when the loop's own bound proves them, with the optimum of the two merged
    pools (bnb; the rule's W and the cost depend on the nodes per hardware only); max_compute of C_quality,
    whose loop does not close, is certified by the rule's families (`pool_families.refusal` is None here)
    with that same optimum, and where the families do not apply (refusal monkeypatched to a reason) exits 2
    naming fleet.sync_rule and the gap."""
    from click.testing import CliRunner
    from planner.cli import main
    split = [{"name": f"h{i}", "hardware": "16xH100-SXM", "count": 2} for i in range(7)] + \
        [{"name": f"a{i}", "hardware": "48xA100-80GB", "count": 3} for i in range(7)]
    merged = [{"name": "h", "hardware": "16xH100-SXM", "count": 14}, {"name": "a", "hardware": "48xA100-80GB", "count": 21}]
    base = {"model": {"params": 7e9}, "training": {"target_flop": 3e22},
            "network": {"wan": {"up_mbps": 500, "down_mbps": 500}}, "limits": {"max_days": 200},
            "search": {"max_inner_steps": 64, "precisions": ["fp16"]}}
    for objective in ("min_time", "min_cost"):
        data = dict(base, objective=objective)
        many = solve(parse_instance(dict(data, fleet={"pools": split, "sync_rule": rule})), solver="highs")
        two = solve(parse_instance(dict(data, fleet={"pools": merged, "sync_rule": rule})), solver="bnb")
        assert many.status == two.status == "optimal"
        assert many.objective_value == pytest.approx(two.objective_value, rel=1e-9)
        assert many.mip[0]["certified_by"] == "the loop's bound" and many.mip[0]["status"] == "optimal"
        assert sum(many.plan.pool_nodes.values()) == many.plan.nodes
    data = dict(base, objective="max_compute", training={"target_flop": 3e22, "target_kind": "c_quality"},
                fleet={"pools": split, "sync_rule": rule})
    many = solve(parse_instance(data), solver="highs")
    two = solve(parse_instance(dict(data, fleet={"pools": merged, "sync_rule": rule})), solver="bnb")
    assert many.status == two.status == "optimal"
    assert many.objective_value == pytest.approx(two.objective_value, rel=1e-9)
    assert many.mip[0]["certified_by"] == "decomposition" and many.mip[0]["status"] != "optimal"
    import planner.solvers.pool_families as families
    monkeypatch.setattr(families, "refusal", lambda instance, pools: "a reason the families do not apply")
    path = tmp_path / "many.json"
    path.write_text(json.dumps(data))
    out = CliRunner().invoke(main, ["solve", str(path), "--solver", "highs"])
    assert out.exit_code == 2, out.output
    assert "fleet.sync_rule" in out.output and "only when its own bound proves" in out.output
    assert "Traceback" not in out.output


@pytest.mark.parametrize("rule", ["proportional", "auto"])
def test_shipped_fleet_under_the_rule_matches_bnb(rule):
    """The shipped A100 + H100 fleet under the rule: the one model and bnb give the same answer."""
    data = json.loads((ROOT / "instances" / "mixed-a100-h100.json").read_text())
    data["fleet"]["sync_rule"] = rule
    data["search"] = {"max_inner_steps": 8, "max_regional_rounds": 2}
    instance = parse_instance(data)
    mip, exact = solve(instance, solver="highs"), solve(instance, solver="bnb")
    assert mip.status == exact.status == "optimal"
    assert mip.objective_value == pytest.approx(exact.objective_value, rel=1e-9)
    assert mip.mip[0]["certified_by"] == "decomposition"


def _part_bounds_checked(seed: int, objective: str) -> tuple[list[float], list[float]]:
    """(the certification's bound of every part, the exact optimum of every part with a plan) of the
    random pools instance `seed`, asserting each bound against its part's optimum."""
    from planner.mip.pools import pool_tables
    from planner.solvers.mixed_mip import SettingBounds
    instance = parse_instance(sample(40 + seed, objective))
    pools = pool_settings(instance)
    try:
        pt = pool_tables(instance, pools, objective_named(objective), None)
    except UnsupportedBySolver:
        pytest.skip("the model refuses this instance (as for one pool)")
    bounds = SettingBounds(objective_named(objective))
    bounds.add(pt)
    return part_bounds_against_optima(instance, pools, objective, bounds)


def part_bounds_against_optima(instance, pools, objective: str, bound_of) -> tuple[list[float], list[float]]:
    """(`bound_of(part)` of every part of the decomposition, the exact optimum of every part with a plan),
    asserting each bound against its part's optimum (the branch and bound, no incumbent): never above
    it for min_time, never below it for max_compute (also tests/test_regions_mip.py)."""
    import math
    from planner.sync.straggler.search import solve_part
    from planner.solvers.pool_parts import parts
    values, known = [], []
    for part in parts(instance, pools, None):
        found, _, _ = solve_part(instance, pools, part, objective_named(objective), "bnb", math.inf)
        bound = bound_of(part)
        known.append(bound)
        if found is None:
            continue
        values.append(found.value)
        where = (part.used, part.precision, getattr(part.sites, "partition", None), bound, found.value)
        if objective == "min_time":
            assert bound <= found.value * (1 + 1e-9), where
        else:
            assert bound >= found.value * (1 - 1e-9), where
    return known, values


@pytest.mark.parametrize("objective", ["min_time", "max_compute"])
@pytest.mark.parametrize("seed", range(10))
def test_setting_bounds_hold_for_every_part(seed, objective):
    """The bound by which the certification skips a part of the decomposition (`SettingBounds`, from the
    model's tables after the presolves) against each part's exact optimum (the branch and bound, no
    incumbent): never above it for min_time, never below it for max_compute, whatever the presolves
    dropped; a part the bound says is worse than the best plan by more than 1e-9 holds no optimum."""
    _part_bounds_checked(seed, objective)


def test_setting_bounds_skip_parts():
    """The bounds are not vacuous: over the 20 instances of the test above, on most of those with
    several parts and a plan, some part is skipped (bound worse than the best plan by > 1e-9)."""
    with_choice = useful = 0
    for objective in ("min_time", "max_compute"):
        for seed in range(10):
            try:
                known, values = _part_bounds_checked(seed, objective)
            except pytest.skip.Exception:
                continue
            if len(known) < 2 or not values:
                continue
            best = (min if objective == "min_time" else max)(values)
            with_choice += 1
            useful += any(b > best * (1 + 1e-9) if objective == "min_time" else b < best * (1 - 1e-9)
                          for b in known)
    assert with_choice >= 5 and useful >= with_choice / 2, (useful, with_choice)


@pytest.mark.parametrize("seed", range(8))
def test_links_of_a_set_of_sites_are_those_of_its_items(seed):
    """What the model's `pool-links` rows rest on (`pools.SiteItems`): for every set S of the sites holding
    pools (brute force over all of them), each field of the links the setting takes is the least
    (bandwidths) or the largest (RTTs) over the sites and pairs within S of their own links; and the
    columns group the patterns by exactly those links."""
    from planner.fleet.network import site_network
    from planner.mip.pool_patterns import LINK_LEAST, link_values, pattern_groups, site_items
    rng = np.random.default_rng(700 + seed)
    data = random_instance(rng)
    while not data.get("network", {}).get("sites") or len({p.get("site") for p in data["fleet"]["pools"]}) < 3:
        data = random_instance(rng)
    instance = parse_instance(data)
    pools = pool_settings(instance)
    net = site_network(instance)
    precisions = sorted({q for p in pools for q in p.precisions})
    keys = pool_keys(pools, precisions, True)
    items = site_items(pools, keys, net)
    hosts = items.hosts
    for size in range(1, len(hosts) + 1):
        for chosen in combinations(range(len(hosts)), size):
            inside = [a for a, e in enumerate(items.items) if set(e) <= set(chosen)]
            want = link_values(net.links([hosts[j] for j in chosen]))
            got = tuple(float(items.values[inside, f].min() if least else items.values[inside, f].max())
                        for f, least in enumerate(LINK_LEAST))
            assert got == want, (chosen, got, want)
            assert items.links_of([hosts[j] for j in chosen]) == want, chosen     # the table of all sets
    groups = pattern_groups(pools, keys, net)
    assert groups == pattern_groups(pools, keys, net, items.key_links(keys))      # links from the table
    assert sorted(k for g in groups for k in g.keys) == list(range(len(keys)))
    for g in groups:
        for k in g.keys:
            key = keys[k]
            assert (key.precision, key.slowest, key.memory_bytes) == (g.precision, g.slowest, g.memory_bytes)
            assert link_values(net.links(key.sites)) == g.links
            assert set(key.allowed) <= set(g.allowed)


@pytest.mark.parametrize("seed", range(4))
def test_links_of_many_sites_are_those_of_their_items(seed):
    """As above on six pools in six European cities with random links (a random tree plus chords, 100 Mb/s
    to 10 Gb/s) and a regional tier some pairs meet: every one of the 63 sets of sites."""
    from planner.fleet.network import site_network
    from planner.mip.pool_patterns import LINK_LEAST, link_values, site_items
    rng = np.random.default_rng(900 + seed)
    cities = ["London", "Paris", "Frankfurt", "Amsterdam", "Madrid", "Warsaw"]
    links = [{"a": cities[i], "b": cities[int(rng.integers(0, i))], "up_mbps": float(rng.choice([100, 1000, 10000]))}
             for i in range(1, 6)]
    if not any({link["a"], link["b"]} == {"London", "Warsaw"} for link in links):
        links += [{"a": "London", "b": "Warsaw", "up_mbps": float(rng.choice([300, 3000]))}]
    data = {"model": {"params": 1e9}, "training": {"target_flop": 1e20},
            "fleet": {"pools": [{"name": c.lower(), "hardware": "16xH100-SXM", "count": 2, "site": c} for c in cities]},
            "network": {"wan": {"up_mbps": 2000, "down_mbps": 500}, "regional": {"mbps": 1000, "rtt_ms": 25},
                        "sites": [{"name": c, "city": c} for c in cities], "links": links}}
    instance = parse_instance(data)
    pools = pool_settings(instance)
    net = site_network(instance)
    items = site_items(pools, pool_keys(pools, ["fp16"], True), net)
    assert len({r for r in (tuple(sorted(g)) for g in net.candidates)}) >= 1
    for size in range(1, 7):
        for chosen in combinations(range(6), size):
            inside = [a for a, e in enumerate(items.items) if set(e) <= set(chosen)]
            want = link_values(net.links([items.hosts[j] for j in chosen]))
            got = tuple(float(items.values[inside, f].min() if least else items.values[inside, f].max())
                        for f, least in enumerate(LINK_LEAST))
            assert got == want, (chosen, got, want)
            assert items.links_of([items.hosts[j] for j in chosen]) == want, chosen


@pytest.mark.parametrize("objective,backend", [("min_time", "highs"), ("min_cost", "highs"), ("max_compute", "highs"),
                                               ("min_time", "scip")])
def test_seven_pools_in_seven_cities_against_bnb(objective, backend):
    """A pool (2 nodes of H100 or A100) in each of seven cities along a chain of 10 and 1 Gb/s links, a
    100 Mb/s access link and a 1 Gb/s, 20 ms regional tier: 142 sets of sites in 47 columns (groups by
    their links). The loop alone (the pool-links rows choose the links of the sites used) closes its gap
    at the decomposition's optimum, and the certified answer is the decomposition's. (min_time: the
    optimum uses four of the seven, not next to each other.)"""
    cities = ["London", "Paris", "Frankfurt", "Amsterdam", "Madrid", "Milan", "Warsaw"]
    data = {"model": {"params": 3e9}, "training": {"target_flop": 3e22},
            "fleet": {"pools": [{"name": c.lower(), "hardware": "16xH100-SXM" if i % 3 else "48xA100-80GB", "count": 2,
                                 "site": c} for i, c in enumerate(cities)]},
            "network": {"wan": {"up_mbps": 100, "down_mbps": 100}, "regional": {"mbps": 1000, "rtt_ms": 20},
                        "sites": [{"name": c, "city": c} for c in cities],
                        "links": [{"a": a, "b": b, "up_mbps": 1000 if i % 2 else 10000}
                                  for i, (a, b) in enumerate(zip(cities, cities[1:]))]},
            "limits": {"max_days": 365},
            "search": {"max_inner_steps": 16, "max_regional_rounds": 2, "max_stages": 2, "max_micro_batches": 2},
            "objective": objective}
    if backend not in backends():
        pytest.skip(f"needs {backend}")
    instance = parse_instance(data)
    mip, exact = solve(instance, solver=backend), solve(instance, solver="bnb")
    assert mip.status == exact.status == "optimal"
    assert close(mip.objective_value, exact.objective_value)
    report = mip.mip[0]
    assert report["site_sets"] > report["patterns"]
    assert report["status"] == "optimal"
    tol = 2e-4 if objective == "max_compute" else 1e-8
    assert close(report["objective"], exact.objective_value, tol)
    if objective == "min_time":
        assert len(mip.plan.pool_nodes) == 4


def test_too_many_sets_of_sites_exit_2(tmp_path):
    """17 pools in 17 cities: 2 x 65,535 sets of sites to list for the node ranges, beyond MAX_SITE_SETS:
    exit 2 naming --solver, quickly (the listing stops at the limit)."""
    import sys
    from click.testing import CliRunner
    from planner.cli import main
    from planner.mip.pool_patterns import MAX_SITE_SETS
    sys.path.insert(0, str(ROOT / "scripts"))
    from bench_mixed import pools_data
    path = tmp_path / "cities.json"
    path.write_text(json.dumps(pools_data(17)))
    out = CliRunner().invoke(main, ["solve", str(path), "--solver", "highs"])
    assert out.exit_code == 2, out.output
    assert "--solver" in out.output and str(MAX_SITE_SETS) in out.output
