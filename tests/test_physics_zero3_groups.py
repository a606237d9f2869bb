"""dtplan's ZeRO-3 inside the co-located groups of hierarchical DiLoCo (modes.hierarchical with
zero_shards; docs/physics.md section 2), against numbers worked by hand, and the branch and bound
against the brute force where the decision wins."""

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from planner.cost.modes import throughput
from planner.cost.run import efficiency_without_replicas, time_to_target
from planner.cost.setting import PlanBatch

from planner.evaluate import evaluate
from planner.schema.errors import InputError
from planner.evaluate import check_plan_against
from planner.schema.plan import parse_plan
from planner.solve import solve
from planner.space import hierarchical_shards_valid
from tests.test_bnb import check_against_brute_force
from tests.test_bound_properties import _non_decreasing, _non_increasing, cases
from tests.test_physics import DTPLAN_TERMS, _instance, _sharding_case


def _sixteen_nodes():
    inst = _instance()
    data = inst.model_dump(exclude_none=True)
    data["fleet"]["nodes"] = 16
    return type(inst).model_validate(data)


def test_hierarchical_zero3_plan_by_hand():
    # 1e9 parameters at fp16 on 16 nodes of 16x H100 (u = 0.4496), groups of k = 8, Z = 4: K = 4 replicas of
    # 4 nodes, 2 replicas per group, G = 2 groups. Step: the regional link (1 Gb/s, 20 ms) moves
    # 3 x 3/4 x 16e9 bits, 36 s + 9 x 0.02 s, far above the compute 6e15 / (16 x 990e12 x 0.4496) / 4 s.
    # Each node syncs its quarter, 4e9 bits: regionally (2 x 4e9 / 1e9 + 0.02) x relay f(k / Z = 2) = 1.02,
    # and globally in a ring of G = 2 over concurrent 1 Gb/s links: 2 x 1/2 x 4e9 / 1e9 = 4 s x f(2).
    plan = parse_plan({"mode": "hierarchical", "nodes": 16, "group_size": 8, "precision": "fp16",
                       "inner_steps": 10, "regional_rounds": 2, "streaming": False, "zero_shards": 4})
    e = evaluate(_sixteen_nodes(), plan)
    v = e.values
    assert e.feasible
    t_step = 36.0 + 9 * 0.02
    assert v["t_step_s"] == pytest.approx(t_step, rel=1e-12)
    assert (v["replicas"], v["groups"]) == (4, 2)
    assert v["state_bytes_per_node"] == pytest.approx(4e9) and v["payload_bits"] == pytest.approx(4e9)
    assert v["t_regional_s"] == pytest.approx((8.0 + 0.02) * 1.02, rel=1e-12)
    assert v["t_sync_s"] == pytest.approx(4.0 * 1.02, rel=1e-12)
    # no streaming: regional cycle H t_step + t_reg, global cycle R of them + t_glob
    assert v["outer_time_s"] == pytest.approx(2 * (10 * t_step + 8.02 * 1.02) + 4.08, rel=1e-12)
    assert v["tokens_per_outer"] == pytest.approx(1e6 * 4 * 10 * 2)


@pytest.mark.parametrize("group_size, shards, ok", [(8, 4, True), (8, 2, True), (8, 8, False), (8, 3, False),
                                                    (6, 4, False), (4, 2, True), (4, 1, True)])
def test_zero_shards_must_tile_a_group_into_two_replicas(group_size, shards, ok):
    assert bool(hierarchical_shards_valid(group_size, shards)) == ok
    raw = {"mode": "hierarchical", "nodes": 16, "group_size": group_size, "precision": "fp16", "zero_shards": shards}
    if ok:
        assert not check_plan_against(_sixteen_nodes(), parse_plan(raw))
        return
    with pytest.raises(InputError) as info:
        parse_plan(raw)
    assert f"zero_shards: must divide group_size ({group_size}) into at least 2 replicas, got {shards}" in str(info.value)


def _groups_case(seed: int):
    """70B on 640 GB nodes (fits no node unsharded) with groups of 2 to 8 and a fast regional link: flat
    ZeRO-3, hierarchical ZeRO-3 and pipelines compete; targets at most 1e22 FLOP."""
    s, space, streaming = _sharding_case(seed)
    s = s.replace(target_flop=min(s.target_flop, 1e22))
    space = dataclasses.replace(space, group_sizes=(2, 4, 8), max_nodes=min(max(space.max_nodes, 8), 16))
    return s, space, streaming


@pytest.mark.parametrize("seed", range(8000, 8008))
@pytest.mark.parametrize("objective", ["min_time", "min_cost"])
def test_bnb_matches_brute_force_with_zero3_in_groups(seed, objective):
    """The brute force (tests/test_bnb.naive) lists every N, every Z that tiles a group, every H and R."""
    check_against_brute_force(*_groups_case(seed), objective, rel=1e-12)


def test_the_mip_refuses_zero3_in_groups():
    inst = _sixteen_nodes()
    with pytest.raises(Exception) as info:
        solve(inst, solver="highs")
    assert "does not cover these assumptions (ZeRO-3 sharding inside hierarchical groups" in str(info.value)
    assert "use --solver bnb" in str(info.value)


@settings(max_examples=60, deadline=None)
@given(case=cases(), terms=DTPLAN_TERMS, z=st.sampled_from([2, 4, 8, 32]), per_group=st.sampled_from([2, 3, 8]),
       h=st.integers(1, 10000), r=st.integers(1, 1000))
def test_hierarchical_zero3_keeps_the_bound_facts(case, terms, z, per_group, h, r):
    """A hierarchical ZeRO-3 class (k = Z x per_group, n replicas of Z nodes, N = n Z) has q = outer / (H R)
    non-increasing in H and R and non-decreasing in n, and the counting efficiency e non-increasing in n
    (docs/planner.md: what the branch and bound's bound needs), with every dtplan term drawn at random."""
    s, mode, ep, fixed = case
    if s.is_moe:
        return
    s = s.replace(assumptions=s.assumptions.replace(**terms))
    k = z * per_group
    fixed = {key: v for key, v in fixed.items() if key in ("compression", "streaming")}

    def q_e(n, hs, rs):
        b = PlanBatch.of("hierarchical", "fp16", nodes=np.asarray(n) * z, inner_steps=hs, regional_rounds=rs,
                         group_size=k, zero_shards=z, **fixed)
        t = throughput(s, b)
        target = time_to_target(s, b, t, efficiency_without_replicas(s, b, t))
        with np.errstate(divide="ignore", invalid="ignore"):
            e = s.target / (6 * s.active_params * target["tokens_per_s"] * target["time_to_target_s"])
        q = t["outer_time_s"] / (np.asarray(hs, float) * np.asarray(rs, float))
        return q, np.where(np.isfinite(target["time_to_target_s"]), e, 0.0)

    low = 2 * per_group                     # n Z >= 2 k: at least two groups
    hs = np.unique(np.geomspace(1, 10000, 40).astype(int))
    assert _non_increasing(q_e(low, hs, r)[0])
    rs = np.unique(np.geomspace(1, 1000, 30).astype(int))
    assert _non_increasing(q_e(low, h, rs)[0])
    ns = np.unique(np.geomspace(low, 100000, 40).astype(int))
    q, e = q_e(ns, h, r)
    assert _non_decreasing(q) and _non_increasing(e)
