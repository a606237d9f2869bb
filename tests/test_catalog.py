"""Hardware and LLM presets: loading, derived figures, unknown ids, broken files, caching."""

import json

import pytest
from pydantic import ValidationError

from planner.schema import catalog
from planner.schema.catalog import HardwareSpec, LLMSpec, hardware_ids, llm_ids, load_hardware, load_llm
from planner.schema.errors import InputError, Problem
from planner.schema.strict import problems_from

H100_NODE = {
    "id": "8xH100", "accelerator": "H100 SXM", "accelerators_per_node": 8,
    "peak_tflops_per_accelerator": {"fp16": 990, "fp8": 1980},
    "hbm_gb_per_accelerator": 80, "price_usd_per_accelerator": 25000,
}
A100_NODE = {"name": "4x A100", "accelerators_per_node": 4, "peak_tflops_per_accelerator": {"fp16": 312},
             "hbm_gb_per_accelerator": 80}


@pytest.fixture
def models(tmp_path, monkeypatch):
    """A private models/ directory with two hardware and two LLM presets."""
    for kind, presets in {
        "hardware": {"8xH100": H100_NODE, "4xA100": A100_NODE},
        "llm": {"dense-7B": {"params": 7e9, "hidden_size": 4096},
                "moe-100B": {"id": "moe-100B", "params": 1e11, "active_params": 1e10, "moe_layers": 24}},
    }.items():
        (tmp_path / kind).mkdir()
        for name, data in presets.items():
            (tmp_path / kind / f"{name}.json").write_text(json.dumps(data))
    monkeypatch.setenv("DTPLAN_MODELS_DIR", str(tmp_path))
    catalog.cache_clear()
    yield tmp_path
    catalog.cache_clear()


def test_ids_are_file_names_sorted(models):
    assert hardware_ids() == ["4xA100", "8xH100"]
    assert llm_ids() == ["dense-7B", "moe-100B"]


def test_hardware_derived_figures(models):
    hw = load_hardware("8xH100")
    assert hw.id == "8xH100" and hw.name == "8xH100"          # name defaults to the id
    assert hw.precisions == ("fp16", "fp8")
    assert hw.node_peak_flops("fp16") == 8 * 990e12
    assert hw.node_peak_flops("fp8") == 8 * 1980e12
    assert hw.node_hbm_gb == 640.0
    assert hw.node_hbm_bytes == 640e9
    assert hw.node_price_usd == 200_000.0
    assert hw.h100_equivalents == 8.0


def test_id_filled_from_file_name_and_price_defaults_to_zero(models):
    hw = load_hardware("4xA100")
    assert (hw.id, hw.name, hw.price_usd_per_accelerator, hw.precisions) == ("4xA100", "4x A100", 0.0, ("fp16",))


def test_unsupported_precision_names_the_supported_ones(models):
    with pytest.raises(ValueError) as info:
        load_hardware("4xA100").node_peak_flops("fp8")
    assert str(info.value) == "hardware '4xA100' has no 'fp8' peak; supported: fp16"


def test_unknown_id_lists_known_ids_closest_first(models):
    with pytest.raises(KeyError) as info:
        load_hardware("H100")
    assert info.value.args[0] == "unknown hardware preset 'H100'; known (closest first): 8xH100, 4xA100"
    with pytest.raises(KeyError) as info:
        load_llm("moe-100b")
    assert info.value.args[0] == "unknown model preset 'moe-100b'; known (closest first): moe-100B, dense-7B"


def test_loads_are_cached_until_cache_clear(models):
    first = load_hardware("8xH100")
    assert load_hardware("8xH100") is first
    (models / "hardware" / "8xH100.json").write_text(json.dumps({**H100_NODE, "hbm_gb_per_accelerator": 94}))
    assert load_hardware("8xH100").hbm_gb_per_accelerator == 80
    catalog.cache_clear()
    assert load_hardware("8xH100").hbm_gb_per_accelerator == 94


def test_llm_presets(models):
    dense, moe = load_llm("dense-7B"), load_llm("moe-100B")
    assert (dense.params, dense.active_params, dense.moe_layers, dense.hidden_size) == (7e9, None, None, 4096.0)
    assert (moe.params, moe.active_params, moe.moe_layers, moe.name) == (1e11, 1e10, 24, "moe-100B")


def test_broken_preset_file_reports_every_problem(models):
    bad = {"id": "other", "accelerators_per_node": 0, "peak_tflops_per_accelerator": {"fp8": "1980"},
           "hbm_gb_per_accelerator": 80, "color": "green"}
    path = models / "hardware" / "bad.json"
    path.write_text(json.dumps(bad))
    with pytest.raises(InputError) as info:
        load_hardware("bad")
    assert info.value.source == str(path)
    assert info.value.problems == [
        Problem("id", "must match the file name 'bad', got 'other'"),
        Problem("accelerators_per_node", "must be an integer >= 1, got 0"),
        Problem("peak_tflops_per_accelerator.fp16", "required field missing (every hardware has an fp16 peak)"),
        Problem("peak_tflops_per_accelerator.fp8", "must be a number > 0 (TFLOP/s per accelerator, dense), "
                                                   "got '1980' (a string: write numbers without quotes)"),
        Problem("color", "unknown field; allowed: id, name, accelerator, accelerators_per_node, "
                         "peak_tflops_per_accelerator, hbm_gb_per_accelerator, price_usd_per_accelerator, "
                         "notes, sources"),
    ]


def test_preset_file_that_is_not_json(models):
    path = models / "llm" / "broken.json"
    path.write_text('{"params": 7e9,\n "name": }')
    with pytest.raises(InputError) as info:
        load_llm("broken")
    assert str(info.value) == f"{path}: <file>: not valid JSON: Expecting value at line 2, column 10"


def test_inline_hardware_spec_errors():
    with pytest.raises(ValidationError) as info:
        HardwareSpec.model_validate({"accelerators_per_node": 8.5, "hbm_gb_per_accelerator": -80,
                                     "peak_tflops_per_accelerator": {"fp16": 990, "bf16": 990}})
    assert [str(p) for p in problems_from(info.value, HardwareSpec)] == [
        "accelerators_per_node: must be an integer >= 1, got 8.5 (not a whole number)",
        "peak_tflops_per_accelerator.bf16: unknown precision (did you mean 'fp16'?); known: fp16, fp8, fp4",
        "hbm_gb_per_accelerator: must be a number > 0, got -80",
    ]


def test_inline_hardware_defaults():
    hw = HardwareSpec.model_validate({"accelerators_per_node": 2, "hbm_gb_per_accelerator": 24,
                                      "peak_tflops_per_accelerator": {"fp16": 165.0, "fp4": 660}})
    assert (hw.id, hw.name, hw.accelerator, hw.notes, hw.sources) == ("custom", "custom", "", "", {})
    assert hw.precisions == ("fp16", "fp4")
    assert hw.accelerators_per_node == 2 and isinstance(hw.accelerators_per_node, int)


def test_llm_active_params_at_most_params():
    with pytest.raises(ValidationError) as info:
        LLMSpec.model_validate({"id": "x", "params": 1e9, "active_params": 2e9})
    assert [str(p) for p in problems_from(info.value, LLMSpec)] == ["active_params: must be <= params (1e9), got 2e9"]


def test_real_h100_preset(monkeypatch):
    monkeypatch.delenv("DTPLAN_MODELS_DIR", raising=False)
    catalog.cache_clear()
    if "16xH100-SXM" not in hardware_ids():
        pytest.skip("models/hardware/16xH100-SXM.json not written yet")
    hw = load_hardware("16xH100-SXM")
    assert hw.accelerators_per_node == 16
    assert hw.node_peak_flops("fp16") == pytest.approx(15.84e15)
    assert hw.h100_equivalents == pytest.approx(16.0)
    assert "fp16" in hw.precisions
