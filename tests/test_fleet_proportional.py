"""The proportional sync rule (planner/sync/proportional/rule.py): hand calculations, the exact
reduction to today's model with one pool or pools of equal speed (every reference case, the
shipped plans), the errors naming the field, and the planner against its exhaustive oracle."""

import json
import math
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from planner.cli import main
from planner.cost.setting import PlanBatch
from planner.evaluate import evaluate
from planner.fleet.evaluate import score_on_pools
from planner.fleet.pools import PoolSetting
from planner.sync.proportional.rule import fastest_fill, plan_adjust
from planner.sync.straggler.rule import mixed_setting
from planner.fleet.samples import random_instance
from planner.reference import conformance
from planner.schema.errors import InputError
from planner.schema.instance import parse_instance
from planner.evaluate import check_plan_against
from planner.schema.plan import parse_plan
from planner.solve import solve
from planner.solvers.mixed_oracle import oracle
from tests.conftest import MISSING_REFERENCE, load_reference_cases
from tests.test_fleet import SLOW, _one_pool, as_one_pool

ROOT = Path(__file__).resolve().parents[1]
FAST = {"id": "custom", "name": "fast node", "accelerators_per_node": 2, "peak_tflops_per_accelerator": {"fp16": 125},
        "hbm_gb_per_accelerator": 40, "price_usd_per_accelerator": 1500}       # 250 TFLOP/s: 2.5 x SLOW


def fleet(**extra):
    return {"model": {"params": 1e9}, "training": {"target_flop": 1e21},
            "network": {"wan": {"up_mbps": 1000, "down_mbps": 1000, "rtt_ms": 50}},
            "fleet": {"pools": [{"name": "slow", "hardware": SLOW, "count": 4},
                                {"name": "fast", "hardware": FAST, "count": 3}], **extra}}


def test_each_pool_runs_the_steps_that_fit_and_the_tokens_add_up():
    """2 slow + 1 fast node, flat, H = 3: the fast node (2.5x) runs floor(7.5) = 7 steps, by hand."""
    inst = parse_instance(fleet())
    base = {"mode": "flat", "nodes": 3, "inner_steps": 3, "compression": 16, "pool_nodes": {"slow": 2, "fast": 1}}
    straggler = evaluate(inst, parse_plan(base))
    prop = evaluate(inst, parse_plan({**base, "sync_rule": "proportional"}))
    b = 131072
    assert straggler.values["tokens_per_outer"] == b * 3 * 3
    assert prop.values["tokens_per_outer"] == b * (2 * 3 + 7)
    assert prop.values["outer_time_s"] == straggler.values["outer_time_s"]      # the slow nodes' H steps
    alpha = 0.08                                                                # alpha(1e9) = 0.08 / 1
    assert prop.values["eta_h"] == pytest.approx(1 - alpha * math.log10(7), rel=1e-12)   # at H_max = 7
    assert prop.values["h_eff"] == 7
    rows = {r["pool"]: r for r in prop.pool_rows}
    assert (rows["slow"]["inner_steps"], rows["fast"]["inner_steps"]) == (3, 7)
    assert rows["fast"]["idle_fraction"] == pytest.approx(1 - 7 / 7.5, rel=1e-12) and rows["slow"]["sets_pace"]
    # C_local target: eta_R at the target point; time = C / (eta 6 P tokens/s)
    eta = prop.values["eta_target"]
    want = 1e21 / (eta * 6e9 * prop.values["tokens_per_outer"] / prop.values["outer_time_s"])
    assert prop.values["time_to_target_s"] == pytest.approx(want, rel=1e-12)
    assert prop.values["time_to_target_s"] < straggler.values["time_to_target_s"]


def test_the_fill_puts_nodes_on_the_pools_of_most_steps_first():
    pools = [PoolSetting("a", 3, None, None, None), PoolSetting("b", 5, None, None, None),
             PoolSetting("c", 2, None, None, None)]
    import planner.sync.proportional.rule as prop
    price = {"a": 1.0, "b": 2.0, "c": 0.5}
    old = prop.node_price_usd
    prop.node_price_usd = lambda p: price[p.label]
    try:
        assert fastest_fill(pools, {0: 4, 1: 9, 2: 4}, 6) == [1, 4, 1]        # b first, then c (cheaper)
        assert fastest_fill(pools, {0: 4, 1: 9, 2: 4}, 8) == [1, 5, 2]        # then a (dearer than c)
        assert fastest_fill(pools, {0: 4, 1: 9, 2: 4}, 9) == [2, 5, 2]
        assert fastest_fill(pools, {0: 4, 2: 4}, 1) is None                   # one node of each at least
    finally:
        prop.node_price_usd = old


REFERENCE = [c for c in load_reference_cases() if c["function"] not in conformance.SEARCH_FUNCTIONS]


def _same(got, want):
    assert set(got) == set(want)
    for key in want:
        assert got[key] == want[key] or (got[key] != got[key] and want[key] != want[key]), key


@pytest.mark.skipif(not REFERENCE, reason=MISSING_REFERENCE)
def test_with_one_pool_or_equal_speeds_every_reference_case_is_identical(monkeypatch):
    """Each reference case in a flat (no ZeRO-3) or hierarchical mode scored under the proportional
    rule on one pool, and on two pools of the same node, gives bit-identical figures."""
    uniform_score = conformance._score
    compared = []

    def through_rule(setting, plan: PlanBatch):
        want = {k: float(v) for k, v in uniform_score(setting, plan).items()}
        if plan.mode in ("flat", "hierarchical") and int(np.asarray(plan.zero_shards).ravel()[0]) <= 1:
            n, h = int(plan.nodes[0]), int(plan.inner_steps[0])
            one = _one_pool(setting)
            twins = one + [PoolSetting("twin", 10**7, one[0].hardware, None, setting)]
            for pools, counts in ((one, [n]), (twins, [n - 1, 1] if n > 1 else [n, 0])):
                used = tuple(i for i, c in enumerate(counts) if c)
                s = mixed_setting(pools, used, plan.precision)
                adjust, steps = plan_adjust(s, pools, counts, plan.precision, h)
                assert set(steps.values()) == {h}
                _same(score_on_pools(pools, counts, s, plan, None, adjust), want)
            compared.append(plan.mode)
        return uniform_score(setting, plan)

    monkeypatch.setattr(conformance, "_score", through_rule)
    for case in REFERENCE:
        assert conformance.check_case(case).status == "passed", case["id"]
    assert len(compared) >= 50 and {"flat", "hierarchical"} <= set(compared)


def test_shipped_plans_as_one_pool_under_the_rule_evaluate_identically():
    """baseline-1e25 (flat) as one pool under the proportional rule, and the shipped A100 + H100 plan
    (H = 1: floor(1.058) = 1 step on the H100 nodes too), are their straggler evaluations; the
    pipeline and expert-parallel plans are refused naming plan.sync_rule."""
    for name in ("baseline-1e25", "moe-600B-a100", "pp-group-480B-h100"):
        raw = json.loads((ROOT / "instances" / f"{name}.json").read_text())
        plan = json.loads((ROOT / "instances" / f"{name}.plan.json").read_text())
        inst = parse_instance(as_one_pool(raw))
        prop = parse_plan({**plan, "pool_nodes": {"only": plan["nodes"]}, "sync_rule": "proportional"})
        problems = check_plan_against(inst, prop)
        if problems:
            assert name != "baseline-1e25" and all(p.path == "plan.sync_rule" for p in problems), problems
            continue
        ref = evaluate(parse_instance(raw), parse_plan(plan))
        assert json.dumps(evaluate(inst, prop).values) == json.dumps(ref.values), name
    raw = json.loads((ROOT / "instances" / "mixed-a100-h100.json").read_text())
    plan = json.loads((ROOT / "instances" / "mixed-a100-h100.expected.json").read_text())["plan"]
    inst = parse_instance(raw)
    a = evaluate(inst, parse_plan(plan))
    b = evaluate(inst, parse_plan({**plan, "sync_rule": "proportional"}))
    assert json.dumps(a.values) == json.dumps(b.values)


def test_errors_name_the_field(tmp_path):
    inst, plan = tmp_path / "i.json", tmp_path / "p.json"
    inst.write_text(json.dumps(fleet()))
    plan.write_text(json.dumps({"mode": "pp_group", "nodes": 4, "stages": 2, "sync_rule": "proportional",
                                "pool_nodes": {"slow": 4}}))
    bad = CliRunner().invoke(main, ["evaluate", str(inst), str(plan)])
    assert bad.exit_code == 2 and "plan.sync_rule: 'proportional' needs replicas of one node" in bad.output
    plan.write_text(json.dumps({"mode": "flat", "nodes": 2, "sync_rule": "sometimes", "pool_nodes": {"slow": 2}}))
    bad = CliRunner().invoke(main, ["evaluate", str(inst), str(plan)])
    assert bad.exit_code == 2 and "sync_rule" in bad.output
    uniform = {**fleet(), "fleet": {"hardware": SLOW, "nodes": 2}}
    inst.write_text(json.dumps(uniform))
    plan.write_text(json.dumps({"mode": "flat", "nodes": 2, "sync_rule": "proportional"}))
    bad = CliRunner().invoke(main, ["evaluate", str(inst), str(plan)])
    assert bad.exit_code == 2 and "plan.sync_rule: only for a fleet of pools" in bad.output
    with pytest.raises(InputError) as err:
        parse_instance({**fleet(), "fleet": {"hardware": SLOW, "nodes": 2, "sync_rule": "auto"}})
    assert "fleet.sync_rule: only for a fleet of pools (fleet.pools), got 'auto'" in str(err.value)
    big = {**fleet(sync_rule="proportional"), "search": {"max_inner_steps": 2, "max_regional_rounds": 1,
                                                 "group_sizes": [2], "compression": [1]}}
    for pool in big["fleet"]["pools"]:
        pool["count"] = 5000
    # C_local max_compute (Chinchilla): 2.5e7 splits, answered without listing them (split_table)
    assert solve(parse_instance({**big, "objective": "max_compute"})).status == "optimal"
    more = [{**p, "name": p["name"] + "2",
             "hardware": {**p["hardware"], "peak_tflops_per_accelerator": {"fp16": 1.5 * p["hardware"]
                                                                           ["peak_tflops_per_accelerator"]["fp16"]}}}
            for p in big["fleet"]["pools"]]
    four = {**big, "fleet": {**big["fleet"], "pools": big["fleet"]["pools"] + more}, "objective": "max_compute"}
    with pytest.raises(InputError) as err:    # four pools: 5000^2 prefixes of the split table, then 6e14 splits
        solve(parse_instance(four))
    assert err.value.problems[0].path == "fleet.sync_rule" and "splits" in err.value.problems[0].message


def test_min_cost_and_a_budget_compare_every_split():
    """min_cost: at the least cost (6,000 USD under either rule) the proportional split is the faster
    and wins the tie; min_time with a budget: the fastest fill is over it and a slower split is
    taken. Both against the oracle."""
    data = {**fleet(sync_rule="auto"), "objective": "min_cost", "limits": {"max_days": 80},
            "search": {"max_inner_steps": 12, "group_sizes": [2], "compression": [1, 16]}}
    data["network"]["wan"] = {"up_mbps": 20, "down_mbps": 20, "rtt_ms": 80}
    inst = parse_instance(data)
    result, best = solve(inst), oracle(inst)
    assert result.plan.sync_rule == "proportional" and result.plan.pool_nodes == {"slow": 3, "fast": 1}
    assert result.objective_value == best[0] == 3 * 1000 + 1 * 3000
    straggler = solve(parse_instance({**data, "fleet": {**data["fleet"], "sync_rule": "straggler"}}))
    assert straggler.objective_value == result.objective_value          # same cost: the faster plan wins
    t = lambda r: r.evaluation.values["time_to_target_s"]
    assert t(result) < t(straggler)
    data["objective"] = "min_time"
    data["limits"] = {"max_days": 365, "budget_usd": 8000.0}
    inst = parse_instance(data)
    result, best = solve(inst), oracle(inst)
    # the fastest fill of 4 nodes (1 slow + 3 fast) costs 10,000: 2 + 2 is the best split within budget
    assert result.plan.sync_rule == "proportional" and result.plan.pool_nodes == {"slow": 2, "fast": 2}
    assert result.objective_value == pytest.approx(best[0], rel=1e-9) and best[2] == [2, 2]
    assert result.evaluation.values["cost_usd"] == 8000.0


def test_the_planner_picks_the_rule_and_the_fastest_fill(tmp_path):
    """Four nodes at most of 4 slow and 3 fast: with 'auto' the optimum runs the proportional rule on
    1 slow + 3 fast nodes (every fast node first); the oracle over every split agrees."""
    data = {**fleet(sync_rule="auto"), "limits": {"max_nodes": 4},
            "search": {"max_inner_steps": 12, "group_sizes": [2], "compression": [1, 16], "modes": ["flat", "hierarchical"]}}
    data["network"]["wan"] = {"up_mbps": 20, "down_mbps": 20, "rtt_ms": 80}
    inst = parse_instance(data)
    result, best = solve(inst), oracle(inst)
    assert result.status == "optimal" and result.plan.sync_rule == "proportional"
    assert result.plan.pool_nodes == {"slow": 1, "fast": 3}
    assert result.objective_value == pytest.approx(best[0], rel=1e-9) and best[2] == [1, 3]
    straggler = solve(parse_instance({**data, "fleet": {**data["fleet"], "sync_rule": "straggler"}}))
    assert straggler.objective_value > result.objective_value
    (tmp_path / "i.json").write_text(json.dumps(data))
    out = json.loads(CliRunner().invoke(main, ["solve", str(tmp_path / "i.json"), "--json"]).output)
    assert out["plan"]["sync_rule"] == "proportional"
    assert [p["inner_steps"] for p in out["evaluation"]["pools"]] == [
        result.plan.inner_steps, math.floor(result.plan.inner_steps * 2.5)]


@pytest.mark.parametrize("seed", range(4))
def test_planner_agrees_with_the_oracle_with_the_rule(seed):
    """Random small fleets with fleet.sync_rule 'proportional' or 'auto' (every objective, budgets)."""
    rng = np.random.default_rng(5000 + seed)
    checked = 0
    while checked < 5:
        data = random_instance(rng, max_count=3)
        if "sync_rule" not in data["fleet"]:
            continue
        assert_agrees_with_oracle(data)
        checked += 1


def assert_agrees_with_oracle(data: dict) -> None:
    """The planner and the exhaustive oracle: same verdict, same objective value to 1e-9."""
    instance = parse_instance(data)
    result, best = solve(instance), oracle(instance)
    value = result.objective_value if result.status == "optimal" else None
    assert (value is None) == (best is None), data
    if value is not None:
        assert abs(value - best[0]) <= 1e-9 * abs(best[0]), (data, value, best)


def test_compare_keeps_the_rule_with_the_pools():
    """`dtplan compare` replaces each pool by one preset's nodes in place: fleet.sync_rule stays."""
    from planner.questions.compare import pool_variant
    data = fleet(sync_rule="auto")
    out, _ = pool_variant(data, parse_instance(data), "16xH100-SXM", "equal H100-eq")
    assert out["fleet"]["sync_rule"] == "auto"
    assert [p["hardware"] for p in out["fleet"]["pools"]] == ["16xH100-SXM"] * 2
    parse_instance(out)
    out, notes = pool_variant(data, parse_instance(data), "16xH100-SXM", "equal cost")
    assert out["fleet"]["pools"] == [] and notes           # the custom nodes cost nothing: no node bought
    from planner.questions.compare import compare
    row = next(r for r in compare(data, ["16xH100-SXM"]) if r.basis == "equal cost")
    assert not row.feasible and "at equal cost no pool buys one 16xH100-SXM node" in row.reason


def test_pools_of_equal_speed_solve_as_the_straggler_rule():
    """Two pools of one node type: every H_p = H, so 'auto' and 'proportional' (which searches the
    flat and hierarchical modes only) answer what 'straggler' answers, for every objective."""
    data = {**fleet(), "search": {"max_inner_steps": 12, "group_sizes": [2], "compression": [1, 16],
                                  "modes": ["flat", "hierarchical"]}}
    data["fleet"]["pools"][1] = {"name": "twin", "hardware": SLOW, "count": 3}
    data["limits"] = {"max_days": 200}
    data["assumptions"] = {"constants": {"replica_penalty": "linear_v1"}}
    for objective in ("min_time", "min_cost", "max_compute"):
        answers = [solve(parse_instance({**data, "objective": objective,
                                         "fleet": {**data["fleet"], "sync_rule": rule}}))
                   for rule in ("straggler", "auto", "proportional")]
        assert answers[0].status == "optimal"
        assert answers[1].objective_value == answers[0].objective_value
        assert answers[2].objective_value == pytest.approx(answers[0].objective_value, rel=1e-12)
        assert answers[1].plan.sync_rule is None
