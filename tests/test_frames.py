"""Result frames and sweep rows carry `pool_nodes` (nodes used per pool) and only the plan fields
that apply to the plan's mode (planner.frames)."""

import json
from pathlib import Path

import planner
from planner.frames import MODE_FIELDS, PLAN_FIELDS, SYNC_FIELDS, plan_columns
from planner.schema.plan import Plan

ROOT = Path(__file__).resolve().parent.parent
POOLS = ROOT / "instances" / "mixed-a100-h100.json"


def test_a_pool_fleet_solve_frame_carries_pool_nodes():
    result = planner.solve(POOLS)
    frame = result.to_frame()
    assert frame.loc[0, "pool_nodes"] == result.plan.pool_nodes
    assert sum(result.plan.pool_nodes.values()) == frame.loc[0, "nodes"]


def test_fields_a_mode_has_not_are_absent():
    flat = plan_columns(Plan(mode="flat", nodes=8))
    assert set(flat) == {"mode", "nodes", "precision", "expert_parallel", *SYNC_FIELDS}
    hier = plan_columns(Plan(mode="hierarchical", nodes=8, group_size=4, regional_rounds=3))
    assert hier["group_size"] == 4 and hier["regional_rounds"] == 3 and "micro_batches" not in hier
    wan = plan_columns(Plan(mode="pipeline_wan", nodes=8, stages=4))
    assert "inner_steps" not in wan and wan["stages"] == 4 and "group_size" not in wan
    assert set(MODE_FIELDS["pp_group"]) <= set(plan_columns(Plan(mode="pp_group", nodes=8, stages=2)))
    assert "pool_nodes" not in flat
    pooled = plan_columns(Plan(mode="flat", nodes=3, pool_nodes={"a": 1, "b": 2}))
    assert pooled["pool_nodes"] == {"a": 1, "b": 2}
    assert set(pooled) <= set(PLAN_FIELDS)


def test_sweep_rows_of_a_pool_fleet_carry_pool_nodes():
    raw = json.loads(POOLS.read_text())
    result = planner.sweep(raw, grid={"limits.max_days": [200, 365]}, workers=1)
    for row in result.rows:
        alone = planner.solve(raw, overrides={"limits.max_days": row["limits.max_days"]})
        assert row["pool_nodes"] == alone.plan.pool_nodes
        if alone.plan.mode != "hierarchical":
            assert row["group_size"] is None and row["regional_rounds"] is None
    assert "pool_nodes" in result.to_frame().columns


def test_compare_frame_of_a_pool_fleet_says_which_row_is_which():
    frame = planner.compare(POOLS, ["7xB200"]).to_frame()
    assert list(frame["basis"])[0] == "as given"
    assert set(frame["basis"]) == {"as given", "equal H100-eq", "equal cost"}
    assert all(sum(p.values()) == n for p, n in zip(frame["pool_nodes"], frame["nodes"]))
