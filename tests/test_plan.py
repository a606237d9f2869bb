"""The plan schema, its per-mode rules, and check_plan_against an instance."""

import json

import pytest

from planner.schema import catalog
from planner.schema.errors import InputError, Problem
from planner.schema.instance import parse_instance
from planner.evaluate import check_plan_against
from planner.schema.plan import Plan, load_plan, parse_plan


@pytest.fixture(autouse=True)
def models(tmp_path, monkeypatch):
    """A private models/ directory: hardware 8xH100 (fp16, fp8), LLM preset moe-100B."""
    (tmp_path / "models" / "hardware").mkdir(parents=True)
    (tmp_path / "models" / "llm").mkdir()
    (tmp_path / "models" / "hardware" / "8xH100.json").write_text(json.dumps({
        "accelerators_per_node": 8, "peak_tflops_per_accelerator": {"fp16": 990, "fp8": 1980},
        "hbm_gb_per_accelerator": 80}))
    (tmp_path / "models" / "llm" / "moe-100B.json").write_text(json.dumps(
        {"params": 1e11, "active_params": 1e10, "moe_layers": 24}))
    monkeypatch.setenv("DTPLAN_MODELS_DIR", str(tmp_path / "models"))
    catalog.cache_clear()
    yield
    catalog.cache_clear()


def problems(data) -> list[str]:
    with pytest.raises(InputError) as info:
        parse_plan(data, "p.json")
    return [str(p) for p in info.value.problems]


def instance(model=None, **limits):
    return parse_instance({"model": model or {"params": 7e9}, "fleet": {"hardware": "8xH100", "nodes": 100},
                           "limits": limits})


def test_defaults():
    p = parse_plan({"mode": "flat", "nodes": 10})
    assert (p.precision, p.inner_steps, p.compression, p.streaming, p.stages, p.group_size) == (
        "fp16", 1, 1, True, None, None)
    assert (p.regional_rounds, p.micro_batches, p.activation_compression, p.expert_parallel, p.description) == (
        1, 8, 4, None, "")


def test_full_hierarchical_plan():
    p = parse_plan({"mode": "hierarchical", "nodes": 64, "group_size": 8, "regional_rounds": 4, "inner_steps": 100,
                    "compression": 16, "precision": "fp8", "streaming": False, "expert_parallel": "regional"})
    assert (p.group_size, p.regional_rounds, p.inner_steps, p.compression, p.precision) == (8, 4, 100, 16, "fp8")


def test_required_fields_and_types():
    assert problems({"inner_steps": 0, "compression": 0.5, "streaming": 1, "precision": "bf16", "stage": 4}) == [
        "mode: required field missing",
        "nodes: required field missing",
        "precision: must be one of 'fp16', 'fp8', 'fp4'; got 'bf16' (did you mean 'fp16'?)",
        "inner_steps: must be an integer >= 1, got 0",
        "compression: must be a number >= 1, got 0.5",
        "streaming: must be true or false, got 1",
        "stage: unknown field (did you mean 'stages'?)",
    ]


def test_group_size_required_for_hierarchical_and_forbidden_otherwise():
    assert problems({"mode": "hierarchical", "nodes": 64}) == ["group_size: required for mode 'hierarchical'"]
    assert problems({"mode": "flat", "nodes": 64, "group_size": 8}) == [
        "group_size: only for mode 'hierarchical', not 'flat'"]
    assert problems({"mode": "hierarchical", "nodes": 64, "group_size": 1}) == [
        "group_size: must be an integer >= 2, got 1"]


def test_hierarchical_needs_two_groups():
    assert problems({"mode": "hierarchical", "nodes": 15, "group_size": 8}) == [
        "group_size: mode 'hierarchical' needs at least 2 groups, got nodes // group_size = 15 // 8 = 1"]
    assert parse_plan({"mode": "hierarchical", "nodes": 16, "group_size": 8}).group_size == 8


def test_stages_only_for_pipeline_modes():
    assert problems({"mode": "hierarchical", "nodes": 64, "group_size": 8, "stages": 4}) == [
        "stages: only for modes 'pp_group' and 'pipeline_wan', not 'hierarchical'"]
    assert parse_plan({"mode": "pp_group", "nodes": 64, "stages": 4}).stages == 4
    assert parse_plan({"mode": "pipeline_wan", "nodes": 64}).stages is None


def test_regional_expert_parallelism_only_with_hierarchical():
    assert problems({"mode": "flat", "nodes": 64, "expert_parallel": "regional"}) == [
        "expert_parallel: 'regional' needs mode 'hierarchical' (its groups are the regions), not 'flat'"]


def test_all_rule_violations_reported_together():
    assert problems({"mode": "flat", "nodes": 64, "group_size": 8, "stages": 2, "expert_parallel": "regional"}) == [
        "group_size: only for mode 'hierarchical', not 'flat'",
        "stages: only for modes 'pp_group' and 'pipeline_wan', not 'flat'",
        "expert_parallel: 'regional' needs mode 'hierarchical' (its groups are the regions), not 'flat'",
    ]


def test_expert_parallel_for():
    assert Plan(mode="flat", nodes=2).expert_parallel_for(is_moe=True) == "global"
    assert Plan(mode="flat", nodes=2).expert_parallel_for(is_moe=False) == "none"
    assert Plan(mode="flat", nodes=2, expert_parallel="none").expert_parallel_for(is_moe=True) == "none"


# -- against an instance --------------------------------------------------------------------


def test_a_fitting_plan_has_no_problems():
    assert check_plan_against(instance(), parse_plan({"mode": "flat", "nodes": 100, "precision": "fp8"})) == []


def test_nodes_within_fleet_and_limit():
    plan = parse_plan({"mode": "flat", "nodes": 120})
    assert check_plan_against(instance(max_nodes=50), plan) == [
        Problem("plan.nodes", "must be <= fleet.nodes (100), got 120"),
        Problem("plan.nodes", "must be <= limits.max_nodes (50), got 120"),
    ]
    assert check_plan_against(instance(max_nodes=50), parse_plan({"mode": "flat", "nodes": 60})) == [
        Problem("plan.nodes", "must be <= limits.max_nodes (50), got 60")]


def test_precision_must_be_supported():
    assert check_plan_against(instance(), parse_plan({"mode": "flat", "nodes": 10, "precision": "fp4"})) == [
        Problem("plan.precision", "hardware '8xH100' does not support 'fp4'; supported: fp16, fp8")]


def test_expert_parallel_on_a_dense_model():
    assert check_plan_against(instance(), parse_plan({"mode": "flat", "nodes": 10, "expert_parallel": "none"})) == [
        Problem("plan.expert_parallel", "only for a mixture-of-experts model; the model is dense, got 'none'")]


def test_pipeline_modes_on_moe_need_no_expert_parallelism():
    moe = instance({"preset": "moe-100B"})
    unset = parse_plan({"mode": "pp_group", "nodes": 10})
    assert check_plan_against(moe, unset) == []          # unset means 'none' in pipeline modes
    assert unset.expert_parallel_for(is_moe=True) == "none"
    assert parse_plan({"mode": "flat", "nodes": 10}).expert_parallel_for(is_moe=True) == "global"
    assert check_plan_against(moe, parse_plan({"mode": "pipeline_wan", "nodes": 10, "expert_parallel": "global"})) == [
        Problem("plan.expert_parallel", "'regional' and 'global' spread the experts across the plan's nodes, "
                                        "which pipeline modes do not model: set it to 'none' or leave it unset (to "
                                        "spread each stage's experts over the servers of its data-parallel groups "
                                        "in pp_group, set assumptions.constants.stage_expert_parallel and "
                                        "expert_parallel_degree), got 'global'")]
    assert check_plan_against(moe, parse_plan({"mode": "pp_group", "nodes": 10, "expert_parallel": "none"})) == []
    assert check_plan_against(moe, parse_plan({"mode": "flat", "nodes": 10})) == []


# -- files ----------------------------------------------------------------------------------


def test_load_plan(tmp_path):
    path = tmp_path / "plan.json"
    path.write_text(json.dumps({"mode": "pp_group", "nodes": 32, "stages": 4, "micro_batches": 16}))
    assert load_plan(path).micro_batches == 16
    path.write_text(json.dumps({"mode": "pp-group", "nodes": 0}))
    with pytest.raises(InputError) as info:
        load_plan(path)
    assert str(info.value).splitlines() == [
        f"{path}: mode: must be one of 'flat', 'hierarchical', 'pp_group', 'pipeline_wan'; got 'pp-group' "
        "(did you mean 'pp_group'?)",
        f"{path}: nodes: must be an integer >= 1, got 0",
    ]


def test_plan_file_that_is_not_json(tmp_path):
    path = tmp_path / "plan.json"
    path.write_text("mode: flat\n")
    with pytest.raises(InputError) as info:
        load_plan(path)
    assert info.value.problems == [Problem("<file>", "not valid JSON: Expecting value at line 1, column 1")]


def test_a_dump_leaves_out_what_the_mode_does_not_have():
    """Issue 23: fields that do not apply to a plan's mode are absent from its dump, not filled with
    defaults; a value the user gave (other than the default) is kept, and the dump parses back."""
    flat = parse_plan({"mode": "flat", "nodes": 8, "inner_steps": 30}).model_dump()
    assert set(flat) == {"mode", "nodes", "precision", "inner_steps", "compression", "streaming",
                         "expert_parallel", "description"}
    hier = parse_plan({"mode": "hierarchical", "nodes": 8, "group_size": 4}).model_dump()
    assert hier["group_size"] == 4 and hier["regional_rounds"] == 1
    assert not {"stages", "micro_batches", "activation_compression"} & set(hier)
    wan = parse_plan({"mode": "pipeline_wan", "nodes": 8, "stages": 8}).model_dump()
    assert wan["stages"] == 8 and wan["micro_batches"] == 8
    assert not {"inner_steps", "compression", "streaming", "group_size", "regional_rounds"} & set(wan)
    given = parse_plan({"mode": "flat", "nodes": 8, "micro_batches": 4}).model_dump()
    assert given["micro_batches"] == 4                      # given, not a default: kept
    for dumped in (flat, hier, wan, given):
        assert parse_plan(dumped).model_dump() == dumped
