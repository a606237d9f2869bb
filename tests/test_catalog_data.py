"""Checks on the preset data files under models/hardware and models/llm.

Loads the JSON with the json module only (no planner imports). The expected
node figures below are written out by hand from the reference calculator
(MIRI decentralized-training report, evasion_calculator.py CONFIGS and
CONFIGS_FP8, plus the B100/B200 presets of its web simulator); they are not
derived from the files under test.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HW_DIR = ROOT / "models" / "hardware"
LLM_DIR = ROOT / "models" / "llm"

H100_FP16_TFLOPS = 990.0
CCC_H100_EQUIV = 16.0

HW_KEYS = {
    "id",
    "name",
    "accelerator",
    "accelerators_per_node",
    "peak_tflops_per_accelerator",
    "hbm_gb_per_accelerator",
    "price_usd_per_accelerator",
    "notes",
    "sources",
}
HW_SOURCE_KEYS = {
    "peak_tflops_per_accelerator",
    "hbm_gb_per_accelerator",
    "price_usd_per_accelerator",
}
PRECISIONS = {"fp16", "fp8", "fp4"}

LLM_REQUIRED = {"id", "name", "params", "source"}
LLM_OPTIONAL = {"active_params", "moe_layers", "hidden_size", "notes"}

# Hand-written expectations: node peak FP16 FLOP/s (the calculator's per-node
# PFLOPS x 1e15), node HBM in GB, node peak FP8 FLOP/s (None: no FP8).
EXPECTED_NODES = {
    "50xA100-80GB": (15.6e15, 4000, None),
    "48xA100-80GB": (14.976e15, 3840, None),
    "16xGH200": (15.84e15, 2304, 31.68e15),
    "16xH100-SXM": (15.84e15, 1280, 31.68e15),
    "49xAscend-910B": (15.68e15, 3136, 31.36e15),
    "26xAscend-910C": (15.6e15, 3328, 31.2e15),
    "57xTPU-v4": (15.675e15, 1824, None),
    "80xTPU-v5e": (15.76e15, 1280, None),
    "34xTPU-v5p": (15.606e15, 3230, None),
    "17xTPU-v6e": (15.606e15, 544, 31.212e15),
    "9xB100": (15.75e15, 1728, 31.5e15),
    "7xB200": (15.75e15, 1344, 31.5e15),
}

# The 8-accelerator servers (DGX/HGX and AMD's MI300X platform): node totals written out by
# hand from the vendor datasheets (dense = half the sparse headline): DGX H100 640 GB;
# DGX H200 1,128 GB; DGX B200 1,440 GB, 72 PFLOPS FP8 and 144 PFLOPS FP4 sparse (36 and 72
# dense); DGX A100 640 GB, 8 x 312 TFLOPS; MI300X platform 1,536 GB, 8 x 1,307.4 / 2,614.9.
# These are not sized to the threshold.
SERVER_NODES = {
    "8xH100-SXM": (7.92e15, 640, 15.84e15),
    "8xH200": (7.92e15, 1128, 15.84e15),
    "8xB200": (18.0e15, 1440, 36.0e15),
    "8xA100-80GB": (2.496e15, 640, None),
    "8xMI300X": (10.4592e15, 1536, 20.9192e15),
}
EXPECTED_NODES |= SERVER_NODES

# Hand-written per-accelerator prices (USD) expected by the calculator profiles.
EXPECTED_PRICES = {
    "50xA100-80GB": 7000,
    "48xA100-80GB": 15000,
    "16xGH200": 28000,
    "16xH100-SXM": 25000,
    "49xAscend-910B": 16000,
    "26xAscend-910C": 26000,
    "57xTPU-v4": 12000,
    "80xTPU-v5e": 6000,
    "34xTPU-v5p": 20000,
    "17xTPU-v6e": 25000,
    # The servers: the calculator's H100 and A100 estimates, the 7xB200 preset's B200
    # estimate, midpoints of reported street-price ranges for H200 and MI300X.
    "8xH100-SXM": 25000,
    "8xA100-80GB": 7000,
    "8xB200": 35000,
    "8xH200": 30000,
    "8xMI300X": 12500,
}

EXPECTED_LLMS = {
    # id: (params, active_params, moe_layers, hidden_size)
    "dense-144B": (144e9, None, None, None),
    "covenant-72B": (72e9, None, None, 8192),
    "intellect-1-10B": (10e9, None, None, 4096),
    "opendiloco-1.1B": (1.1e9, None, None, None),
    "llama3-405B": (405e9, None, None, 16384),
    "deepseek-v3": (671e9, 37e9, 58, 7168),
    "palm-540B": (540e9, None, None, 18432),
    "moe-600B-100B": (600e9, 100e9, 32, None),
    "dense-480B": (480e9, None, None, None),
    "dense-960B": (960e9, None, None, None),
}

# The one preset that is deliberately not the largest count under the threshold.
NOT_MAXIMAL = {"48xA100-80GB"}


def _load(directory: Path) -> dict[str, tuple[Path, dict]]:
    out = {}
    for path in sorted(directory.glob("*.json")):
        with path.open(encoding="utf-8") as fh:
            out[path.stem] = (path, json.load(fh))
    return out


HARDWARE = _load(HW_DIR)
LLMS = _load(LLM_DIR)


def _is_pos_number(x) -> bool:
    return (
        isinstance(x, (int, float))
        and not isinstance(x, bool)
        and math.isfinite(x)
        and x > 0
    )


def _node_fp16_flops(d: dict) -> float:
    return d["accelerators_per_node"] * d["peak_tflops_per_accelerator"]["fp16"] * 1e12


# ---------------------------------------------------------------- hardware


def test_hardware_set_is_complete():
    assert set(HARDWARE) == set(EXPECTED_NODES)


@pytest.mark.parametrize("stem", sorted(HARDWARE))
def test_hardware_schema(stem):
    path, d = HARDWARE[stem]
    assert isinstance(d, dict), path
    assert set(d) == HW_KEYS, f"{path}: keys {sorted(set(d) ^ HW_KEYS)}"
    assert d["id"] == stem
    for key in ("name", "accelerator", "notes"):
        assert isinstance(d[key], str) and d[key].strip(), key

    n = d["accelerators_per_node"]
    assert isinstance(n, int) and not isinstance(n, bool) and n > 0

    peaks = d["peak_tflops_per_accelerator"]
    assert isinstance(peaks, dict)
    assert "fp16" in peaks
    assert set(peaks) <= PRECISIONS, sorted(set(peaks) - PRECISIONS)
    for prec, v in peaks.items():
        assert _is_pos_number(v), (prec, v)
    # Lower precision is never slower than higher precision.
    if "fp8" in peaks:
        assert peaks["fp8"] >= peaks["fp16"]
    if "fp4" in peaks:
        assert "fp8" in peaks and peaks["fp4"] >= peaks["fp8"]

    assert _is_pos_number(d["hbm_gb_per_accelerator"])
    assert _is_pos_number(d["price_usd_per_accelerator"])

    src = d["sources"]
    assert isinstance(src, dict)
    assert set(src) == HW_SOURCE_KEYS, sorted(set(src) ^ HW_SOURCE_KEYS)
    for key, text in src.items():
        assert isinstance(text, str) and text.strip(), key


@pytest.mark.parametrize("stem", sorted(EXPECTED_NODES))
def test_hardware_node_figures_match_calculator(stem):
    _, d = HARDWARE[stem]
    fp16_flops, hbm_gb, fp8_flops = EXPECTED_NODES[stem]
    n = d["accelerators_per_node"]
    peaks = d["peak_tflops_per_accelerator"]

    assert _node_fp16_flops(d) == pytest.approx(fp16_flops, rel=1e-12)
    assert n * d["hbm_gb_per_accelerator"] == pytest.approx(hbm_gb, rel=1e-12)
    if fp8_flops is None:
        assert "fp8" not in peaks
    else:
        assert n * peaks["fp8"] * 1e12 == pytest.approx(fp8_flops, rel=1e-12)


@pytest.mark.parametrize("stem", sorted(EXPECTED_PRICES))
def test_hardware_prices_match_calculator(stem):
    _, d = HARDWARE[stem]
    assert d["price_usd_per_accelerator"] == pytest.approx(EXPECTED_PRICES[stem], rel=1e-12)


def test_blackwell_fp4_figures():
    # Dense FP4 = 2x dense FP8 for both Blackwell parts (hand-written node totals).
    _, b100 = HARDWARE["9xB100"]
    _, b200 = HARDWARE["7xB200"]
    assert 9 * b100["peak_tflops_per_accelerator"]["fp4"] * 1e12 == pytest.approx(63.0e15, rel=1e-12)
    assert 7 * b200["peak_tflops_per_accelerator"]["fp4"] * 1e12 == pytest.approx(63.0e15, rel=1e-12)
    _, dgx_b200 = HARDWARE["8xB200"]
    assert 8 * dgx_b200["peak_tflops_per_accelerator"]["fp4"] * 1e12 == pytest.approx(72.0e15, rel=1e-12)


@pytest.mark.parametrize("stem", sorted(set(HARDWARE) - set(SERVER_NODES)))
def test_hardware_under_ccc_threshold(stem):
    _, d = HARDWARE[stem]
    h100_eq = _node_fp16_flops(d) / (H100_FP16_TFLOPS * 1e12)
    assert h100_eq <= CCC_H100_EQUIV + 1e-9


@pytest.mark.parametrize("stem", sorted(set(HARDWARE) - NOT_MAXIMAL - set(SERVER_NODES)))
def test_hardware_is_largest_count_under_threshold(stem):
    _, d = HARDWARE[stem]
    per_acc = d["peak_tflops_per_accelerator"]["fp16"]
    one_more = (d["accelerators_per_node"] + 1) * per_acc / H100_FP16_TFLOPS
    assert one_more > CCC_H100_EQUIV + 1e-9


@pytest.mark.parametrize("stem", sorted(SERVER_NODES))
def test_servers_hold_eight_accelerators_and_say_so(stem):
    _, d = HARDWARE[stem]
    assert d["accelerators_per_node"] == 8 and d["name"].startswith("8x ")
    assert "not sized to the 16 H100-equivalent threshold" in d["notes"]


def test_v1_node_is_flagged_in_notes():
    _, d = HARDWARE["48xA100-80GB"]
    assert "v1" in d["notes"]


# ---------------------------------------------------------------- LLMs


def test_llm_set_is_complete():
    assert set(LLMS) == set(EXPECTED_LLMS)


@pytest.mark.parametrize("stem", sorted(LLMS))
def test_llm_schema(stem):
    path, d = LLMS[stem]
    assert isinstance(d, dict), path
    missing = LLM_REQUIRED - set(d)
    unknown = set(d) - LLM_REQUIRED - LLM_OPTIONAL
    assert not missing, f"{path}: missing {sorted(missing)}"
    assert not unknown, f"{path}: unknown {sorted(unknown)}"
    assert d["id"] == stem
    assert isinstance(d["name"], str) and d["name"].strip()
    assert isinstance(d["source"], str) and d["source"].strip()
    assert d.get("notes") is None or (isinstance(d["notes"], str) and d["notes"].strip())
    assert _is_pos_number(d["params"])
    # Raw counts, not billions.
    assert d["params"] >= 1e8

    active = d.get("active_params")
    moe_layers = d.get("moe_layers")
    hidden = d.get("hidden_size")
    if active is not None:
        assert _is_pos_number(active)
        assert active < d["params"]
        assert isinstance(moe_layers, int) and not isinstance(moe_layers, bool) and moe_layers > 0
    else:
        assert moe_layers is None
    if moe_layers is not None:
        assert active is not None
    if hidden is not None:
        assert isinstance(hidden, int) and not isinstance(hidden, bool) and hidden > 0


@pytest.mark.parametrize("stem", sorted(EXPECTED_LLMS))
def test_llm_figures(stem):
    _, d = LLMS[stem]
    params, active, moe_layers, hidden = EXPECTED_LLMS[stem]
    assert d["params"] == pytest.approx(params, rel=1e-12)
    if active is None:
        assert d.get("active_params") is None
    else:
        assert d["active_params"] == pytest.approx(active, rel=1e-12)
    assert d.get("moe_layers") == moe_layers
    assert d.get("hidden_size") == hidden


def test_baseline_fits_one_gh200_node():
    # The 144B baseline is the largest dense model one 16x GH200 node holds at
    # 16 bytes/param (2,304 GB): hand-written check on both files.
    _, node = HARDWARE["16xGH200"]
    _, llm = LLMS["dense-144B"]
    node_bytes = node["accelerators_per_node"] * node["hbm_gb_per_accelerator"] * 1e9
    assert llm["params"] * 16 == pytest.approx(node_bytes, rel=1e-12)
