"""Presets from models/: hardware nodes (models/hardware/ID.json) and LLMs (models/llm/ID.json).

The id of a preset is its file name without `.json`; an `id` key in the file, if
present, must agree. The directory is `$DTPLAN_MODELS_DIR` if set, else the presets
shipped with dtplan (`<checkout>/models`, or `planner/models` in a wheel; see
planner/presets_dir.py).
Loads are cached per (directory, id); `cache_clear()` forgets them.
"""

import json
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Any

from pydantic import BeforeValidator, ConfigDict, Field, ValidationError, model_validator

from planner.cost.assumptions import PRECISIONS
from planner.presets_dir import MODELS_DIR_ENV, models_dir  # noqa: F401  (re-exported)
from planner.schema.errors import InputError, Problem
from planner.schema.limits import (MAX_ACCELERATORS_PER_NODE, MAX_HBM_GB, MAX_HIDDEN_SIZE, MAX_MOE_LAYERS,
                                   MAX_PARAMS, MAX_PRICE_USD, MAX_TFLOPS)
from planner.schema.strict import (Int, Num, StrictModel, Text, closest_first, did_you_mean, load_file, made_by, number_error,
                                   problems_from, raise_problems, show)

H100_FP16_TFLOPS = 990.0  # one H100-equivalent, dense FP16


def _check_tflops(value: Any) -> dict[str, float]:
    """{"fp16": 990, "fp8": 1980}: fp16 required, keys among fp16/fp8/fp4, values > 0."""
    if not isinstance(value, dict):
        raise_problems([Problem("", f"must be an object like {{\"fp16\": 990, \"fp8\": 1980}}, got {show(value)}")])
    problems = [Problem(k, f"unknown precision{did_you_mean(k, PRECISIONS)}; known: {', '.join(PRECISIONS)}")
                for k in value if k not in PRECISIONS]
    if "fp16" not in value:
        problems.append(Problem("fp16", "required field missing (every hardware has an fp16 peak)"))
    problems += [Problem(k, msg) for k in PRECISIONS if k in value
                 for msg in [number_error(value[k], gt=0, hint=" (TFLOP/s per accelerator, dense)", cap=MAX_TFLOPS)] if msg]
    if problems:
        raise_problems(problems)
    return {k: float(value[k]) for k in PRECISIONS if k in value}


def _default_name(data: Any) -> Any:
    """Raw input with `name` filled in from `id` (or 'custom') when absent."""
    if isinstance(data, dict) and "name" not in data:
        return {**data, "name": data["id"] if isinstance(data.get("id"), str) else "custom"}
    return data


class HardwareSpec(StrictModel):
    """One node type: a number of identical accelerators. Units: TFLOP/s, GB (1e9 bytes), USD."""

    id: Text = Field("custom", description="Preset id (the file name); 'custom' for an inline spec.")
    name: Text = Field("", description="Display name. Default: the id.")
    accelerator: Text = Field("", description="Accelerator model, e.g. 'NVIDIA H100 SXM5 80GB'. Default ''.")
    accelerators_per_node: Int(ge=1, cap=MAX_ACCELERATORS_PER_NODE) = Field(description="Accelerators in one node (required).")
    peak_tflops_per_accelerator: Annotated[dict[str, float], BeforeValidator(_check_tflops)] = Field(
        description="Dense peak TFLOP/s per accelerator by precision; 'fp16' required, 'fp8'/'fp4' optional.")
    hbm_gb_per_accelerator: Num(gt=0, cap=MAX_HBM_GB) = Field(description="Accelerator memory in GB (1e9 bytes), required.")
    price_usd_per_accelerator: Num(ge=0, cap=MAX_PRICE_USD) = Field(0.0, description="Purchase price per accelerator, USD. Default 0.")
    notes: Text = Field("", description="Free text. Default ''.")
    sources: dict[Text, Text] = Field(default_factory=made_by(dict), description="Field name -> citation. Default {}.")

    @model_validator(mode="before")
    @classmethod
    def _name_defaults_to_id(cls, data: Any) -> Any:
        return _default_name(data)

    @property
    def precisions(self) -> tuple[str, ...]:
        """Supported precisions, in the order fp16, fp8, fp4."""
        return tuple(p for p in PRECISIONS if p in self.peak_tflops_per_accelerator)

    def node_peak_flops(self, precision: str) -> float:
        """Node peak in FLOP/s at `precision`: accelerators_per_node * TFLOP/s * 1e12."""
        if precision not in self.peak_tflops_per_accelerator:
            raise ValueError(f"hardware {self.id!r} has no {precision!r} peak; supported: {', '.join(self.precisions)}")
        return self.accelerators_per_node * self.peak_tflops_per_accelerator[precision] * 1e12

    @property
    def node_hbm_gb(self) -> float:
        """Node memory in GB: accelerators_per_node * hbm_gb_per_accelerator."""
        return self.accelerators_per_node * self.hbm_gb_per_accelerator

    @property
    def node_hbm_bytes(self) -> float:
        return self.node_hbm_gb * 1e9

    @property
    def node_price_usd(self) -> float:
        return self.accelerators_per_node * self.price_usd_per_accelerator

    @property
    def h100_equivalents(self) -> float:
        """Node dense FP16 peak in H100s (990 TFLOP/s each)."""
        return self.accelerators_per_node * self.peak_tflops_per_accelerator["fp16"] / H100_FP16_TFLOPS


class LLMSpec(StrictModel):
    """A model preset. Parameter counts are raw counts (7e9, not 7)."""

    # Built by pydantic when first used (`defer_build`): a model preset is read only when an
    # instance names one, and no other model nests this one (docs/speed.md, "Start-up time").
    # (A comment, not the docstring: the docstring is the JSON schema's description.)
    model_config = ConfigDict(**StrictModel.model_config, defer_build=True)

    id: Text = Field(description="Preset id (the file name).")
    name: Text = Field("", description="Display name. Default: the id.")
    params: Num(gt=0, cap=MAX_PARAMS) = Field(description="Total parameters P (raw count).")
    active_params: Num(gt=0, cap=MAX_PARAMS) | None = Field(None, description="Parameters used per token (MoE); None = dense.")
    moe_layers: Int(ge=1, cap=MAX_MOE_LAYERS) | None = Field(None, description="Number of MoE layers; None for dense.")
    hidden_size: Num(gt=0, cap=MAX_HIDDEN_SIZE) | None = Field(None, description="Hidden size h; None = not published.")
    notes: Text = Field("", description="Free text. Default ''.")
    source: Text = Field("", description="Citation. Default ''.")

    @model_validator(mode="before")
    @classmethod
    def _name_defaults_to_id(cls, data: Any) -> Any:
        return _default_name(data)

    @model_validator(mode="after")
    def _active_at_most_total(self) -> "LLMSpec":
        if self.active_params is not None and self.active_params > self.params:
            raise_problems([Problem("active_params", f"must be <= params ({show(self.params)}), got {show(self.active_params)}")])
        return self


def _ids(kind: str) -> list[str]:
    return sorted(p.stem for p in (models_dir() / kind).glob("*.json"))


@lru_cache(maxsize=None)
def _load(cls: type[StrictModel], directory: str, id: str) -> Any:
    path = Path(directory) / f"{id}.json"

    def parse(data: Any, source: str) -> Any:
        problems = []
        if isinstance(data, dict):
            if "id" in data and data["id"] != id:
                problems.append(Problem("id", f"must match the file name {id!r}, got {show(data['id'])}"))
            data = {**data, "id": id}
        try:
            spec = cls.model_validate(data)
        except ValidationError as exc:
            problems += problems_from(exc, cls)
        if problems:
            raise InputError(problems, source)
        return spec

    return load_file(path, parse)


def _lookup(kind: str, noun: str, cls: type[StrictModel], id: str) -> Any:
    known = _ids(kind)
    if id not in known:
        listed = ", ".join(closest_first(str(id), known)) or "(none)"
        raise KeyError(f"unknown {noun} {id!r}; known (closest first): {listed}")
    return _load(cls, str(models_dir() / kind), id)


# An inline hardware object (the fields HardwareSpec requires, plus a price and a name) shown
# by the unknown-hardware error: one 8x H100 SXM server at the figures of models/hardware/8xH100-SXM.json.
INLINE_HARDWARE_EXAMPLE = {"name": "my 8x H100", "accelerators_per_node": 8,
                           "peak_tflops_per_accelerator": {"fp16": 990, "fp8": 1980},
                           "hbm_gb_per_accelerator": 80, "price_usd_per_accelerator": 25000}


def inline_hardware_hint() -> str:
    """The sentence appended to an unknown hardware id: an inline object is allowed, with one in JSON."""
    return "or give an inline hardware object instead of an id, e.g. " + json.dumps(INLINE_HARDWARE_EXAMPLE)


def hardware_ids() -> list[str]:
    """Ids of the hardware presets (models/hardware/*.json), sorted."""
    return _ids("hardware")


def llm_ids() -> list[str]:
    """Ids of the LLM presets (models/llm/*.json), sorted."""
    return _ids("llm")


def load_hardware(id: str) -> HardwareSpec:
    """The hardware preset `id`; KeyError (listing known ids) if unknown, InputError if invalid."""
    return _lookup("hardware", "hardware preset", HardwareSpec, id)


def load_llm(id: str) -> LLMSpec:
    """The LLM preset `id`; KeyError (listing known ids) if unknown, InputError if invalid."""
    return _lookup("llm", "model preset", LLMSpec, id)


def cache_clear() -> None:
    """Forget cached presets (files are re-read on the next load)."""
    _load.cache_clear()
