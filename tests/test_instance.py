"""The instance schema: strict types, every problem at once, presets, defaults, assumptions."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from planner.schema import catalog
from planner.cost.assumptions import BOOL_CONSTANTS, CHOICE_CONSTANTS, NUMERIC_FIELDS, SETTABLE_FIELDS, TABLE_FIELDS
from planner.schema.errors import InputError, Problem
from planner.schema.instance import DEFAULT_MAX_DAYS, Instance, load_instance, parse_instance

H100_NODE = {"accelerators_per_node": 8, "peak_tflops_per_accelerator": {"fp16": 990, "fp8": 1980},
             "hbm_gb_per_accelerator": 80, "price_usd_per_accelerator": 25000}


@pytest.fixture(autouse=True)
def models(tmp_path, monkeypatch):
    """A private models/ directory: hardware 8xH100, 4xA100; LLMs dense-7B, moe-100B."""
    presets = {
        "hardware": {"8xH100": H100_NODE,
                     "4xA100": {"accelerators_per_node": 4, "peak_tflops_per_accelerator": {"fp16": 312},
                                "hbm_gb_per_accelerator": 80, "price_usd_per_accelerator": 10000}},
        "llm": {"dense-7B": {"params": 7e9, "hidden_size": 4096},
                "moe-100B": {"params": 1e11, "active_params": 1e10, "moe_layers": 24}},
    }
    for kind, files in presets.items():
        (tmp_path / "models" / kind).mkdir(parents=True)
        for name, data in files.items():
            (tmp_path / "models" / kind / f"{name}.json").write_text(json.dumps(data))
    monkeypatch.setenv("DTPLAN_MODELS_DIR", str(tmp_path / "models"))
    catalog.cache_clear()
    yield
    catalog.cache_clear()


def base(**sections):
    """A valid instance dict with some sections replaced."""
    return {"model": {"params": 7e9}, "fleet": {"hardware": "8xH100", "nodes": 100}, **sections}


def problems(data) -> list[str]:
    with pytest.raises(InputError) as info:
        parse_instance(data, "i.json")
    assert info.value.source == "i.json"
    return [str(p) for p in info.value.problems]


# -- defaults and resolution -----------------------------------------------------------


def test_minimal_instance_gets_documented_defaults():
    inst = parse_instance(base())
    assert (inst.name, inst.description, inst.objective) == ("", "", "min_time")
    assert (inst.model.params, inst.model.active_params, inst.model.moe_layers) == (7e9, 7e9, 0)
    assert inst.model.hidden_size is None and inst.model.preset is None and not inst.model.is_moe
    t = inst.training
    assert (t.local_batch_tokens, t.tokens, t.target_flop, t.target_kind) == (131072, None, None, "c_local")
    n = inst.network
    assert (n.wan.up_mbps, n.wan.down_mbps, n.wan.rtt_ms) == (100, 100, 100)
    assert (n.regional.mbps, n.regional.rtt_ms, n.pipeline.mbps, n.pipeline.rtt_ms) == (1000, 20, 1000, 20)
    lim = inst.limits
    assert (lim.max_days, lim.budget_usd, lim.max_nodes) == (DEFAULT_MAX_DAYS, None, None) == (547.875, None, None)
    g = lim.growth_x_per_year
    assert (g.hardware, g.software, g.investment) == (1.37, 3.0, 3.5)
    a = inst.assumptions
    assert (a.profile, a.scenario, a.straggler, a.error_feedback, a.mfu, a.constants) == (
        "reference", None, None, None, None, {})
    s = inst.search
    assert s.modes == ["flat", "hierarchical", "pp_group", "pipeline_wan"]
    assert (s.min_nodes, s.max_stages, s.group_sizes, s.max_inner_steps, s.max_regional_rounds) == (
        1, 64, None, 10000, 1000)
    assert s.compression == [1, 2, 4, 8, 16, 32, 64, 100, 150, 250, 500]
    assert (s.precisions, s.max_micro_batches, s.activation_compression, s.streaming, s.expert_parallel) == (
        None, 64, [1, 2, 4, 10], [True, False], None)


def test_instance_is_frozen():
    inst = parse_instance(base())
    with pytest.raises(ValidationError):
        inst.objective = "min_cost"


def test_model_preset_with_override():
    inst = parse_instance(base(model={"preset": "moe-100B", "params": 2e11}))
    m = inst.model
    assert (m.preset, m.params, m.active_params, m.moe_layers, m.is_moe) == ("moe-100B", 2e11, 1e10, 24, True)


def test_dense_preset_keeps_hidden_size():
    m = parse_instance(base(model={"preset": "dense-7B"})).model
    assert (m.params, m.active_params, m.moe_layers, m.hidden_size, m.is_moe) == (7e9, 7e9, 0, 4096, False)


def test_explicit_moe_gets_32_layers_by_default():
    m = parse_instance(base(model={"params": 6e11, "active_params": 1e11})).model
    assert (m.moe_layers, m.is_moe) == (32, True)


def test_model_size_rules():
    assert problems(base(model={"params": 1e11, "active_params": 2e11, "moe_layers": 4})) == [
        "model.active_params: must be <= params (1e11), got 2e11",
        "model.moe_layers: only for a mixture-of-experts model (active_params < params), got 4 for a dense model",
    ]
    assert problems(base(model={"params": 7})) == [
        "model.params: must be a number >= 1e6 (a raw parameter count, e.g. 7e9), got 7"]
    assert problems(base(model={"hidden_size": 4096})) == [
        "model.params: required field missing (give params, or a preset)"]


def test_unknown_model_preset_lists_known_ids():
    assert problems(base(model={"preset": "moe-100b"})) == [
        "model.preset: unknown model preset 'moe-100b'; known (closest first): moe-100B, dense-7B"]


def test_instance_round_trips_through_json():
    inst = parse_instance(base(model={"preset": "moe-100B"}, limits={"max_days": "growth", "max_nodes": 50},
                               assumptions={"profile": "report-v1", "constants": {"activation_quality": {"1": [1, 1, 1]}}}))
    again = parse_instance(json.loads(inst.model_dump_json()))
    assert again == inst


# -- wrong types, ranges, unknown and missing fields -----------------------------------------


def test_strings_and_booleans_are_not_numbers():
    assert problems(base(fleet={"hardware": "8xH100", "nodes": "100"}, network={"wan": {"up_mbps": True}})) == [
        "fleet.nodes: must be an integer >= 1, got '100' (a string: write numbers without quotes)",
        "network.wan.up_mbps: must be a number > 0, got true",
    ]


def test_whole_floats_count_as_integers_but_fractions_do_not():
    inst = parse_instance(base(fleet={"hardware": "8xH100", "nodes": 1e4}, limits={"max_nodes": 72.0}))
    assert inst.fleet.nodes == 10000 and isinstance(inst.fleet.nodes, int)
    assert inst.limits.max_nodes == 72 and isinstance(inst.limits.max_nodes, int)
    assert problems(base(limits={"max_nodes": 72.5})) == [
        "limits.max_nodes: must be an integer >= 1, got 72.5 (not a whole number)"]


@settings(max_examples=50, deadline=None)
@given(st.floats(min_value=1.001, max_value=1e6).filter(lambda x: not x.is_integer()))
def test_any_fractional_node_count_is_rejected(x):
    with pytest.raises(InputError) as info:
        parse_instance(base(fleet={"hardware": "8xH100", "nodes": x}))
    assert [p.path for p in info.value.problems] == ["fleet.nodes"]
    assert info.value.problems[0].message.endswith("(not a whole number)")


def test_negative_sizes():
    assert problems(base(fleet={"hardware": "8xH100", "nodes": -4},
                         network={"regional": {"mbps": -1, "rtt_ms": -20}},
                         limits={"max_days": -1, "budget_usd": 0})) == [
        "fleet.nodes: must be an integer >= 1, got -4",
        "network.regional.mbps: must be a number > 0, got -1",
        "network.regional.rtt_ms: must be a number >= 0, got -20",
        "limits.max_days: must be a number of days > 0 or 'growth', got -1",
        "limits.budget_usd: must be a number > 0, got 0",
    ]


def test_unknown_fields_suggest_the_right_name():
    assert problems({**base(model={"parmas": 7e9, "params": 7e9}), "objectve": "min_cost"}) == [
        "model.parmas: unknown field (did you mean 'params'?)",
        "objectve: unknown field (did you mean 'objective'?)",
    ]


def test_a_field_in_the_wrong_section_points_to_its_place():
    assert problems(base(fleet={"hardware": "8xH100", "nodes": 10, "max_nodes": 5})) == [
        "fleet.max_nodes: unknown field here; 'max_nodes' belongs at 'limits.max_nodes' (or did you mean 'nodes'?)"]


def test_unknown_field_without_a_close_match_lists_the_allowed_ones():
    assert problems(base(network={"wan": {"latency": 5}})) == [
        "network.wan.latency: unknown field; allowed: up_mbps, down_mbps, rtt_ms"]


def test_missing_required_fields():
    assert problems({}) == ["model: required field missing", "fleet: required field missing"]
    assert problems(base(fleet={"hardware": "8xH100"})) == ["fleet.nodes: required field missing"]


def test_sections_and_root_must_be_objects():
    assert problems([]) == ["<root>: must be an object, got []"]
    assert problems(base(network=5)) == ["network: must be an object, got 5"]


def test_choices_suggest_the_closest():
    assert problems(base(objective="min-cost", search={"modes": ["flat", "pipline_wan"]})) == [
        "search.modes[1]: must be one of 'flat', 'hierarchical', 'pp_group', 'pipeline_wan'; "
        "got 'pipline_wan' (did you mean 'pipeline_wan'?)",
        "objective: must be one of 'min_time', 'max_compute', 'min_cost'; got 'min-cost' (did you mean 'min_cost'?)",
    ]


def test_both_tokens_and_target_flop():
    assert problems(base(training={"tokens": 1e12, "target_flop": 1e25})) == [
        "training: give at most one of tokens and target_flop, got both (tokens=1e12, target_flop=1e25)"]


def test_search_shapes_and_ranges():
    assert problems(base(search={"modes": [], "max_stages": 65, "group_sizes": [1, 4], "compression": [1, 0.5],
                                 "streaming": [True, "no"], "max_inner_steps": 0})) == [
        "search.modes: must be a non-empty list, got []",
        "search.max_stages: must be an integer in 1..64, got 65",
        "search.group_sizes[0]: must be an integer >= 2, got 1",
        "search.max_inner_steps: must be an integer in 1..10000, got 0",
        "search.compression[1]: must be a number >= 1, got 0.5",
        "search.streaming[1]: must be true or false, got 'no'",
    ]


# -- hardware ---------------------------------------------------------------------------


def test_unknown_hardware_preset_lists_close_matches_and_shows_an_inline_object():
    [message] = problems(base(fleet={"hardware": "H100", "nodes": 10}))
    head, shown = message.split(" e.g. ")
    assert head == ("fleet.hardware: unknown hardware preset 'H100'; known (closest first): 8xH100, 4xA100; "
                    "or give an inline hardware object instead of an id,")
    # The object shown, pasted into an instance as it is, validates: as the fleet's hardware and as a pool's.
    pasted = json.loads(shown)
    hw = parse_instance(base(fleet={"hardware": pasted, "nodes": 10})).hardware
    assert (hw.id, hw.name, hw.accelerators_per_node, hw.node_peak_flops("fp8")) == ("custom", "my 8x H100", 8, 8 * 1980e12)
    pools = base(fleet={"pools": [{"hardware": pasted, "count": 3}]})
    assert parse_instance(pools).fleet.pools[0].hardware.node_hbm_gb == 640


def test_hardware_must_be_an_id_or_an_object():
    assert problems(base(fleet={"hardware": 16, "nodes": 10})) == [
        "fleet.hardware: must be a hardware preset id (e.g. '16xH100-SXM') or an inline hardware object, got 16"]


def test_inline_hardware():
    inst = parse_instance(base(fleet={"hardware": {**H100_NODE, "name": "my rig"}, "nodes": 10}))
    hw = inst.hardware
    assert (hw.id, hw.name, hw.precisions, hw.node_hbm_gb, hw.node_price_usd) == (
        "custom", "my rig", ("fp16", "fp8"), 640, 200_000)


def test_inline_hardware_errors_are_under_fleet_hardware():
    bad = {"accelerators_per_node": 0, "peak_tflops_per_accelerator": {"fp8": 1980}, "hbm_gb": 80}
    assert problems(base(fleet={"hardware": bad, "nodes": 10})) == [
        "fleet.hardware.accelerators_per_node: must be an integer >= 1, got 0",
        "fleet.hardware.peak_tflops_per_accelerator.fp16: required field missing (every hardware has an fp16 peak)",
        "fleet.hardware.hbm_gb_per_accelerator: required field missing",
        "fleet.hardware.hbm_gb: unknown field (did you mean 'hbm_gb_per_accelerator'?)",
    ]


def test_price_override():
    inst = parse_instance(base(fleet={"hardware": "8xH100", "nodes": 10, "price_usd_per_accelerator": 30000}))
    assert inst.hardware.price_usd_per_accelerator == 30000
    assert inst.hardware.node_price_usd == 240_000
    assert inst.fleet.hardware.price_usd_per_accelerator == 25000      # the preset itself is untouched
    assert parse_instance(base()).hardware.price_usd_per_accelerator == 25000


def test_search_precisions_must_be_supported_by_the_hardware():
    assert problems(base(fleet={"hardware": "4xA100", "nodes": 10}, search={"precisions": ["fp16", "fp8"]})) == [
        "search.precisions[1]: hardware '4xA100' does not support 'fp8'; supported: fp16"]


# -- cross-field checks ---------------------------------------------------------------------


def test_node_bounds_must_fit_the_fleet():
    assert problems(base(limits={"max_nodes": 200}, search={"min_nodes": 150})) == [
        "limits.max_nodes: must be <= fleet.nodes (100), got 200",
        "search.min_nodes: must be <= fleet.nodes (100), got 150",
    ]
    assert problems(base(limits={"max_nodes": 20}, search={"min_nodes": 30})) == [
        "search.min_nodes: must be <= limits.max_nodes (20), got 30"]


def test_cross_checks_are_reported_with_unrelated_field_errors():
    assert problems(base(network={"wan": {"rtt_ms": "fast"}}, limits={"max_nodes": 200})) == [
        "network.wan.rtt_ms: must be a number >= 0, got 'fast'",
        "limits.max_nodes: must be <= fleet.nodes (100), got 200",
    ]


def test_cross_checks_skip_sections_that_did_not_parse():
    assert problems(base(fleet={"hardware": "8xH100", "nodes": "many"}, limits={"max_nodes": 200})) == [
        "fleet.nodes: must be an integer >= 1, got 'many'"]


# -- assumptions ------------------------------------------------------------------------------


def test_default_profile_is_the_reference():
    a = parse_instance(base()).resolved_assumptions()
    assert (a.profile, a.straggler, a.mfu, a.replica_penalty) == ("reference", "relay", 0.40, "chinchilla")


def test_profile_then_constants_then_explicit_fields():
    a = parse_instance(base(assumptions={"profile": "report-v1"})).resolved_assumptions()
    assert (a.profile, a.straggler, a.replica_penalty) == ("report-v1", "synchronous", "linear_v1")
    a = parse_instance(base(assumptions={"profile": "report-v1", "constants": {"mfu": 0.5}})).resolved_assumptions()
    assert (a.straggler, a.mfu) == ("synchronous", 0.5)
    a = parse_instance(base(assumptions={"constants": {"straggler": "backup", "mfu": 0.5},
                                         "straggler": "threshold", "scenario": "conservative",
                                         "error_feedback": False})).resolved_assumptions()
    assert (a.straggler, a.mfu, a.scenario, a.error_feedback) == ("threshold", 0.5, "conservative", False)


def test_quality_tables_and_signed_constants():
    a = parse_instance(base(assumptions={"constants": {
        "compression_quality_ef": {"1": [1, 1, 1], "64": [1, 0.97, 0.9]},
        "replica_beta_exponent": -0.3, "alpha_coefficient": 0}})).resolved_assumptions()
    assert a.compression_quality_ef == {1.0: (1.0, 1.0, 1.0), 64.0: (1.0, 0.97, 0.9)}
    assert (a.replica_beta_exponent, a.alpha_coefficient) == (-0.3, 0.0)


def test_growth_rates_given_in_limits_override_the_constants():
    a = parse_instance(base(limits={"growth_x_per_year": {"hardware": 2}},
                            assumptions={"constants": {"growth_hardware_x_per_year": 1.5,
                                                       "growth_software_x_per_year": 4}})).resolved_assumptions()
    assert (a.growth_hardware_x_per_year, a.growth_software_x_per_year, a.growth_investment_x_per_year) == (2, 4, 3.5)


def test_bad_assumptions():
    assert problems(base(assumptions={"profile": "report-v2", "mfu": 1.5, "constants": {
        "profile": "simulator", "stragler": "relay", "straggler": "relays", "error_feedback": "yes", "alpha_coefficient": -1,
        "chinchilla_e": 0, "activation_quality": {"0.5": [1, 1, 1], "4": [1, 1.2, 0.9], "x": [1, 1, 1]},
        "compression_quality_no_ef": []}})) == [
        "assumptions.profile: must be one of 'dtplan', 'reference', 'report-v1', 'simulator'; got 'report-v2' "
        "(did you mean 'report-v1'?)",
        "assumptions.mfu: must be a number in (0, 1], got 1.5",
        "assumptions.constants.profile: not a constant: set assumptions.profile instead",
        "assumptions.constants.stragler: unknown assumption constant (did you mean 'straggler'?)",
        "assumptions.constants.straggler: must be one of 'synchronous', 'relay', 'threshold', 'backup', 'none'; "
        "got 'relays' (did you mean 'relay'?)",
        "assumptions.constants.error_feedback: must be true or false, got 'yes'",
        "assumptions.constants.alpha_coefficient: must be a number >= 0, got -1",
        "assumptions.constants.chinchilla_e: must be a number > 0, got 0",
        "assumptions.constants.activation_quality.0.5: key must be a compression ratio >= 1, got '0.5'",
        "assumptions.constants.activation_quality.4: must be [optimistic, expected, conservative], "
        "three numbers in [0, 1], got [1, 1.2, 0.9]",
        "assumptions.constants.activation_quality.x: key must be a compression ratio >= 1, got 'x'",
        "assumptions.constants.compression_quality_no_ef: must be a non-empty object like "
        "{\"16\": [1.0, 0.98, 0.95]}, got []",
    ]


def test_every_settable_constant_has_a_check():
    checked = set(NUMERIC_FIELDS) | set(TABLE_FIELDS) | set(CHOICE_CONSTANTS) | set(BOOL_CONSTANTS)
    assert set(SETTABLE_FIELDS) <= checked


# -- files ----------------------------------------------------------------------------------------


def test_load_instance_reports_every_problem_prefixed_by_the_file(tmp_path):
    path = tmp_path / "inst.json"
    path.write_text(json.dumps({"model": {"parmas": 7e9}, "fleet": {"hardware": "8xH100", "nodes": -4},
                                "training": {"tokens": 1e12, "target_flop": 1e25}}))
    with pytest.raises(InputError) as info:
        load_instance(path)
    assert str(info.value).splitlines() == [
        f"{path}: model.parmas: unknown field (did you mean 'params'?)",
        f"{path}: training: give at most one of tokens and target_flop, got both (tokens=1e12, target_flop=1e25)",
        f"{path}: fleet.nodes: must be an integer >= 1, got -4",
    ]


def test_load_instance_ok(tmp_path):
    path = tmp_path / "inst.json"
    path.write_text(json.dumps(base(name="demo")))
    assert load_instance(path).name == "demo"
    assert load_instance(str(path)).fleet.nodes == 100


def test_non_json_file(tmp_path):
    path = tmp_path / "inst.json"
    path.write_text('{\n  "model": {"params": 7e9}\n  "fleet": {}\n}\n')
    with pytest.raises(InputError) as info:
        load_instance(path)
    assert info.value.problems == [Problem("<file>", "not valid JSON: Expecting ',' delimiter at line 3, column 3")]


def test_missing_file(tmp_path):
    with pytest.raises(InputError) as info:
        load_instance(tmp_path / "nope.json")
    assert str(info.value) == f"{tmp_path / 'nope.json'}: <file>: file not found: {tmp_path / 'nope.json'}"


def test_duplicate_keys_are_reported_with_the_other_problems(tmp_path):
    path = tmp_path / "inst.json"
    path.write_text('{"model": {"params": 7e9}, "fleet": {"hardware": "8xH100", "nodes": 1, "nodes": 0}}')
    with pytest.raises(InputError) as info:
        load_instance(path)
    assert [str(p) for p in info.value.problems] == [
        "<file>: duplicate key 'nodes' in one object (only the last value would count)",
        "fleet.nodes: must be an integer >= 1, got 0",
    ]


def test_model_validate_direct_use_is_also_strict():
    with pytest.raises(ValidationError):
        Instance.model_validate(base(limits={"max_nodes": 500}))


def test_the_inline_hardware_pool_of_docs_fleet_md_validates():
    """docs/fleet.md shows a pool with an inline hardware object; pasted into an instance it is valid."""
    from pathlib import Path
    text = (Path(__file__).resolve().parents[1] / "docs" / "fleet.md").read_text()
    [block] = [b.split("\n", 1)[1] for b in text.split("```")[1::2] if b.startswith("json") and "my 8x H100" in b]
    pool = json.loads(block)
    inst = parse_instance(base(fleet={"pools": [pool]}))
    hw = inst.fleet.pools[0].hardware
    assert (inst.fleet.nodes, hw.name, hw.node_price_usd, hw.node_hbm_gb) == (5, "my 8x H100", 200_000, 640)
