"""fleet.pools: the schema, the mixed cost model against hand calculations, and the exact
reduction to the uniform model with one pool (every reference case through the mixed path)."""

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from planner.cli import main
from planner.cost.score import score
from planner.cost.setting import PlanBatch
from planner.evaluate import evaluate
from planner.fleet.pools import PoolSetting
from planner.fleet.replicas import affordable_nodes, cheapest_fill, fleet_cost_usd
from planner.sync.straggler.rule import mixed_setting
from planner.reference import conformance
from planner.schema.catalog import HardwareSpec
from planner.schema.errors import InputError
from planner.schema.instance import parse_instance
from planner.evaluate import check_plan_against
from planner.schema.plan import parse_plan
from tests.conftest import MISSING_REFERENCE, load_reference_cases

ROOT = Path(__file__).resolve().parents[1]
SLOW = {"id": "custom", "name": "slow node", "accelerators_per_node": 1, "peak_tflops_per_accelerator": {"fp16": 100},
        "hbm_gb_per_accelerator": 80, "price_usd_per_accelerator": 1000}
FAST = {"id": "custom", "name": "fast node", "accelerators_per_node": 2,
        "peak_tflops_per_accelerator": {"fp16": 150, "fp8": 300}, "hbm_gb_per_accelerator": 20,
        "price_usd_per_accelerator": 1500}


def mixed(**fleet):
    return {"model": {"params": 1e9}, "training": {"target_flop": 1e21},
            "fleet": {"pools": [{"name": "slow", "hardware": SLOW, "count": 4},
                                {"name": "fast", "hardware": FAST, "count": 3}], **fleet}}


def problems(data):
    with pytest.raises(InputError) as err:
        parse_instance(data)
    return [str(p) for p in err.value.problems]


# -- schema ----------------------------------------------------------------------------------


def test_pools_derive_the_fleet_size_and_labels():
    inst = parse_instance(mixed())
    assert inst.fleet.nodes == 7 and inst.fleet.is_mixed and inst.hardware is None
    assert inst.fleet.pool_labels() == ["slow", "fast"]
    unnamed = parse_instance({"model": {"params": 1e9}, "fleet": {"pools": [
        {"hardware": "16xH100-SXM", "count": 2}, {"hardware": "16xH100-SXM", "count": 1},
        {"hardware": "7xB200", "count": 1}]}})
    assert unnamed.fleet.pool_labels() == ["16xH100-SXM#0", "16xH100-SXM#1", "7xB200"]


def test_pool_errors_name_the_field():
    data = mixed()
    data["fleet"]["pools"].append({"hardware": "16xH100-SXM", "count": -8, "name": "slow"})
    found = problems(data)
    assert found == ["fleet.pools[2].count: must be an integer >= 1, got -8"]
    data["fleet"]["pools"][2]["count"] = 8
    assert problems(data) == ["fleet.pools[2].name: duplicate of fleet.pools[0].name ('slow'); pool names must "
                              "be unique"]
    assert problems(mixed(nodes=7)) == ["fleet.nodes: not with pools (a fleet is one hardware and a count, "
                                        "or a list of pools)"]
    assert problems(mixed(price_usd_per_accelerator=3)) == [
        "fleet.price_usd_per_accelerator: not with pools: give it per pool (fleet.pools[i].price_usd_per_accelerator)"]
    assert problems({"model": {"params": 1e9}, "fleet": {"pools": []}}) == ["fleet.pools: must be a non-empty list, got []"]
    assert problems({"model": {"params": 1e9}, "fleet": {}}) == [
        "fleet.hardware: required field missing (give hardware and nodes, or pools)",
        "fleet.nodes: required field missing (give hardware and nodes, or pools)"]
    assert problems({**mixed(), "search": {"precisions": ["fp4"]}}) == [
        "search.precisions[0]: no pool of fleet.pools supports 'fp4'; supported by some pool: fp16, fp8"]
    assert problems({**mixed(), "limits": {"max_nodes": 8}}) == ["limits.max_nodes: must be <= fleet.nodes (7), got 8"]


def test_plan_pool_nodes_are_checked_against_the_pools():
    inst = parse_instance(mixed())
    plan = parse_plan({"mode": "flat", "nodes": 6, "precision": "fp8", "pool_nodes": {"slow": 1, "fast": 4, "x": 0}})
    assert [str(p) for p in check_plan_against(inst, plan)] == [
        "plan.pool_nodes.x: unknown pool; pools: slow, fast",
        "plan.precision: pool 'slow' (custom) does not support 'fp8'; supported: fp16",
        "plan.pool_nodes.fast: must be <= the pool's count (3), got 4",
        "plan.nodes: must equal the sum of plan.pool_nodes (5), got 6"]
    uniform = parse_instance({"model": {"params": 1e9}, "fleet": {"hardware": "16xH100-SXM", "nodes": 4}})
    assert [str(p) for p in check_plan_against(uniform, parse_plan({"mode": "flat", "nodes": 2,
                                                                   "pool_nodes": {"a": 2}}))] == [
        "plan.pool_nodes: only for a fleet of pools (fleet.pools); this fleet is 4 x 16xH100-SXM"]
    assert [str(p) for p in check_plan_against(inst, parse_plan({"mode": "flat", "nodes": 2}))] == [
        "plan.pool_nodes: required for a fleet of pools: the nodes used of each of 'slow', 'fast'"]


# -- the cost model by hand ---------------------------------------------------------------------


def test_a_mixed_plan_waits_for_its_slowest_node_and_fits_the_smallest():
    """2 slow + 1 fast nodes, flat, H = 10: by hand from the specs (reference profile, u = 0.4)."""
    inst = parse_instance(mixed())
    plan = parse_plan({"mode": "flat", "nodes": 3, "inner_steps": 10, "compression": 16,
                       "pool_nodes": {"slow": 2, "fast": 1}})
    e = evaluate(inst, plan)
    u = inst.resolved_assumptions().mfu
    slow_flops, fast_flops = 100e12, 2 * 150e12
    t_comp = 6 * 1e9 * 131072 / (slow_flops * u)              # the slow node sets the pace
    assert e.values["t_comp_s"] == pytest.approx(t_comp, rel=1e-12)
    assert e.values["memory_bytes"] == 40e9                   # the fast node holds 2 x 20 GB
    assert e.values["cost_usd"] == 2 * 1000 + 2 * 1500
    assert e.values["total_gpus"] == 4
    # global MFU over the peak of the nodes used, not 3 x the slow node's
    assert e.values["global_mfu"] == pytest.approx(
        e.values["c_local"] / ((2 * slow_flops + fast_flops) * e.setting.window_s), rel=1e-12)
    fast = next(r for r in e.pool_rows if r["pool"] == "fast")
    assert fast["idle_fraction"] == pytest.approx(1 - slow_flops / fast_flops) and not fast["sets_pace"]
    # the rest is the uniform model of N = 3 nodes at that pace: same as 3 slow nodes with 40 GB
    uniform = parse_instance({**mixed(), "fleet": {"hardware": {**SLOW, "hbm_gb_per_accelerator": 40},
                                                    "nodes": 3}})
    u_e = evaluate(uniform, plan.model_copy(update={"pool_nodes": None}))
    for key in ("t_step_s", "t_sync_s", "outer_time_s", "tokens_per_outer", "eta", "time_to_target_s", "c_local"):
        assert e.values[key] == u_e.values[key], key


def test_memory_is_checked_on_every_pool_used():
    """A 3B model at fp16 (16 B/param = 48 GB) fits the 80 GB slow node, not the 40 GB fast one."""
    inst = parse_instance({**mixed(), "model": {"params": 3e9}})
    alone = evaluate(inst, parse_plan({"mode": "flat", "nodes": 2, "pool_nodes": {"slow": 2}}))
    both = evaluate(inst, parse_plan({"mode": "flat", "nodes": 2, "pool_nodes": {"slow": 1, "fast": 1}}))
    assert not any(v.startswith("memory-cap") for v in alone.violations)
    assert any(v.startswith("memory-cap") for v in both.violations)


def _pools():
    inst = parse_instance(mixed())
    from planner.fleet.pools import pool_settings
    return pool_settings(inst)


def test_cheapest_fill_and_the_budget():
    pools = _pools()          # slow: $1,000 a node (4), fast: $3,000 a node (3)
    assert cheapest_fill(pools, (0, 1), 5) == [4, 1]
    assert cheapest_fill(pools, (1,), 2) == [0, 2]
    assert cheapest_fill(pools, (0, 1), 1) is None and cheapest_fill(pools, (0, 1), 8) is None
    assert fleet_cost_usd(pools, [4, 1]) == 7000
    assert affordable_nodes(pools, (0, 1), 9999) == 5          # 4 slow + 1 fast = 7000; + 1 fast = 10000
    assert affordable_nodes(pools, (0, 1), 10000) == 6
    assert affordable_nodes(pools, (0, 1), 3999) == 0
    assert affordable_nodes(pools, (1,), None) == 3


# -- one pool is exactly the uniform model -------------------------------------------------------


def _one_pool(setting) -> list[PoolSetting]:
    """A pool holding exactly `setting`'s node (some cases give only an fp8 peak: not validated)."""
    acc = setting.accelerators_per_node
    hw = HardwareSpec.model_construct(accelerators_per_node=acc, hbm_gb_per_accelerator=setting.memory_bytes / acc / 1e9,
                      peak_tflops_per_accelerator={p: f / acc / 1e12 for p, f in setting.peak_flops.items()},
                      price_usd_per_accelerator=setting.price_usd_per_accelerator)
    return [PoolSetting("only", 10**7, hw, None, setting)]


REFERENCE = [c for c in load_reference_cases() if c["function"] not in conformance.SEARCH_FUNCTIONS]


@pytest.mark.skipif(not REFERENCE, reason=MISSING_REFERENCE)
def test_every_reference_case_through_the_mixed_path_is_identical(monkeypatch):
    """Each reference case scored by the mixed cost model on one pool gives bit-identical figures
    to the uniform model (and so still matches the reference)."""
    from planner.fleet.evaluate import score_on_pools
    uniform_score = conformance._score
    compared = []

    def through_pools(setting, plan: PlanBatch):
        pools = _one_pool(setting)
        s = mixed_setting(pools, (0,), plan.precision)
        got = score_on_pools(pools, [int(plan.nodes[0])], s, plan, None)
        want = {k: float(v) for k, v in uniform_score(setting, plan).items()}
        assert set(got) == set(want)
        for key in want:
            assert got[key] == want[key] or (got[key] != got[key] and want[key] != want[key]), key
        compared.append(len(want))
        return uniform_score(setting, plan)

    monkeypatch.setattr(conformance, "_score", through_pools)
    for case in REFERENCE:
        assert conformance.check_case(case).status == "passed", case["id"]
    assert len(compared) >= 100


def as_one_pool(raw: dict) -> dict:
    """A uniform instance's raw data with its fleet written as one pool named 'only'."""
    fleet = raw["fleet"]
    pool = {"name": "only", "hardware": fleet["hardware"], "count": fleet["nodes"]}
    if "price_usd_per_accelerator" in fleet:
        pool["price_usd_per_accelerator"] = fleet["price_usd_per_accelerator"]
    rest = {k: v for k, v in fleet.items() if k not in ("hardware", "nodes", "price_usd_per_accelerator")}
    return {**raw, "fleet": {"pools": [pool], **rest}}


@pytest.mark.parametrize("profile", ["reference", "dtplan"])
def test_shipped_instances_as_one_pool_evaluate_identically(profile):
    """Under either profile (the dtplan one resolves MFU per accelerator and goodput from the fleet)."""
    for name in ("baseline-1e25", "moe-600B-a100", "pp-group-480B-h100"):
        raw = json.loads((ROOT / "instances" / f"{name}.json").read_text())
        raw["assumptions"] = {**raw.get("assumptions", {}), "profile": profile}
        plan = json.loads((ROOT / "instances" / f"{name}.plan.json").read_text())
        one = evaluate(parse_instance(as_one_pool(raw)), parse_plan({**plan, "pool_nodes": {"only": plan["nodes"]}}))
        ref = evaluate(parse_instance(raw), parse_plan(plan))
        assert one.violations == ref.violations and one.warnings == ref.warnings
        assert json.dumps(one.values) == json.dumps(ref.values), name


# -- the commands ----------------------------------------------------------------------------------


def test_evaluate_and_validate_show_every_pool(tmp_path):
    inst, plan = tmp_path / "i.json", tmp_path / "p.json"
    inst.write_text(json.dumps(mixed()))
    plan.write_text(json.dumps({"mode": "flat", "nodes": 3, "inner_steps": 10, "pool_nodes": {"slow": 2, "fast": 1}}))
    result = CliRunner().invoke(main, ["evaluate", str(inst), str(plan), "--json"])
    out = json.loads(result.output)
    assert [(r["pool"], r["nodes_used"]) for r in out["pools"]] == [("slow", 2), ("fast", 1)]
    assert out["plan"]["pool_nodes"] == {"slow": 2, "fast": 1}
    text = CliRunner().invoke(main, ["evaluate", str(inst), str(plan)]).output
    assert "2 x slow (slow node) + 1 x fast (fast node)" in text and "Pools" in text
    valid = CliRunner().invoke(main, ["validate", str(inst)])
    assert valid.exit_code == 0 and "4 x slow (slow node) + 3 x fast (fast node)" in valid.output
    plan.write_text(json.dumps({"mode": "flat", "nodes": 3, "pool_nodes": {"slow": 9}}))
    bad = CliRunner().invoke(main, ["evaluate", str(inst), str(plan)])
    assert bad.exit_code == 2 and "plan.pool_nodes.slow: must be <= the pool's count (4), got 9" in bad.output
