"""Every constant of the cost model, in one place, and the named assumption profiles.

docs/cost_model.md states each constant as "an assumption, settable". They live in the
frozen dataclass `Assumptions`; a profile (models/assumptions/*.json) is a set of
overrides of the defaults below, and an instance may override any field again
(`assumptions.constants` in the instance file).

Profiles (see ../shared/conformance/README.md):
- `reference`: the MIRI calculator as published (evasion_calculator.py): relay
  straggler, error-feedback quality tables, Chinchilla-based replica penalty.
- `report-v1`: the assumptions behind the published report tables
  (simulator_output.txt): synchronous straggler, v1 quality tables, linear
  replica penalty.
- `simulator`: the minimal simulator.py: no straggler, no quality loss.
- `dtplan`: the reference with the terms of planner/cost/physics.py switched on (per-hardware
  achieved MFU, overlapped and concurrent syncs, per-stage payloads, compressor payloads from
  their parts, pipeline schedules, failures); docs/physics.md.

The dtplan terms are fields below whose defaults switch them off, so every other profile
scores exactly as before.
"""

from __future__ import annotations

import dataclasses
import json
import operator
import os
import reprlib
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import Any, Mapping

import numpy as np

from planner.presets_dir import bundled_models_dir

SCENARIOS = ("optimistic", "expected", "conservative")
STRAGGLER_STRATEGIES = ("synchronous", "relay", "threshold", "backup", "none")
REPLICA_PENALTIES = ("chinchilla", "linear_v1", "none", "fitted")   # fitted: planner/cost/quality_fit.py
PRECISIONS = ("fp16", "fp8", "fp4")
COMPRESSORS = ("ratio", "quantise", "topk")          # how a pseudo-gradient payload is built (physics.py)
SYNC_PATTERNS = ("all_reduce", "all_gather", "object_store")
PIPELINE_SCHEDULES = ("gpipe", "1f1b", "interleaved", "zero_bubble", "dualpipe")   # physics.pipeline_ticks
INNER_OPTIMIZERS = ("reference", "adamw", "muon", "demo")
ACTIVATION_RECOMPUTE = ("selective", "full", "fit")   # activation recomputation of pipeline stages (physics.py)
STAGE_SHARDED_STATES = ("gradients_and_optimizer", "optimizer")   # what stage_state_shards shards (stage_shards.py)
EXPERT_PERMUTATIONS = ("none", "alltoall", "fused_dispatch")   # MoE token dispatcher's permutations (compute/experts.py)

# A quality table maps a compression ratio to (optimistic, expected, conservative).
QualityTable = dict[float, tuple[float, float, float]]

# docs/cost_model.md section 5: pseudo-gradient compression quality, with and without
# error feedback (evasion_calculator.py COMPRESSION_QUALITY_EF / _NO_EF).
COMPRESSION_QUALITY_EF: QualityTable = {
    1: (1.00, 1.00, 1.00),
    4: (1.00, 1.00, 0.99),
    16: (1.00, 1.00, 0.97),
    100: (1.00, 0.99, 0.93),
    150: (1.00, 0.99, 0.91),
    500: (0.99, 0.96, 0.80),
}
COMPRESSION_QUALITY_NO_EF: QualityTable = {
    1: (1.00, 1.00, 1.00),
    4: (1.00, 1.00, 0.99),
    16: (1.00, 0.99, 0.95),
    100: (1.00, 0.98, 0.90),
    150: (0.99, 0.96, 0.85),
    500: (0.99, 0.95, 0.75),
}
# Per-boundary activation compression quality (pipeline modes).
ACTIVATION_QUALITY: QualityTable = {
    1: (1.00, 1.00, 1.00),
    2: (1.00, 1.00, 0.99),
    4: (1.00, 0.995, 0.96),
    10: (0.995, 0.98, 0.90),
}


@dataclass(init=False, repr=False, eq=False)     # frozen: its methods, as @dataclass(frozen=True)'s, by _value_methods
class Assumptions:
    """The settable constants of docs/cost_model.md, with the calculator's values as defaults."""

    # -- selection ---------------------------------------------------------------
    profile: str = "reference"
    scenario: str = "expected"               # optimistic | expected | conservative
    straggler: str = "relay"                 # synchronous | relay | threshold | backup | none
    error_feedback: bool = True
    replica_penalty: str = "chinchilla"      # chinchilla | linear_v1 | none | fitted (the whole quality model)
    mfu: float = 0.40                        # model FLOP utilisation u
    # -- dtplan profile terms (planner/cost/physics.py, docs/physics.md); defaults = off --
    mfu_from_table: bool = False                 # u from models/mfu.json by accelerator and precision
    mfu_fp8: float = 0.0                         # u at fp8 (of the fp8 peak); 0 = the same as mfu
    mfu_fp4: float = 0.0                         # u at fp4 (of the fp4 peak); 0 = the same as mfu
    dp_overlap: bool = False                     # sync buckets hide behind the last backward pass
    backward_share: float = 2.0 / 3.0            # backward share of a step's compute (4 of 6 P FLOP)
    dp_overlap_buckets: float = 25.0             # buckets per sync; the last one is never hidden
    concurrent_up_down: bool = False             # up and down links transfer at once: max, not sum
    per_stage_payload: bool = False              # pp_group: each stage node syncs only its P / S
    compressor_preset: str = ""                  # a preset of models/compressors.json (expanded on loading)
    compressor: str = "ratio"                    # ratio | quantise | topk
    compressor_value_bits: float = 2.0           # topk: bits per kept value
    compressor_index_bits: float = 12.0          # topk: bits per kept value's index
    compressor_scale_bits: float = 0.0           # quantise/topk: scale bits per parameter (block scales)
    sync_pattern: str = "all_reduce"             # all_reduce | all_gather | object_store (planner/cost/exchange.py)
    error_feedback_bytes: float = 0.0            # memory of the error-feedback buffer, bytes per parameter
    inner_optimizer: str = "reference"           # reference | adamw | muon | demo (models/optimizers.json)
    pipeline_schedule: str = "gpipe"             # gpipe | 1f1b | interleaved | zero_bubble | dualpipe
    pipeline_chunks: float = 1.0                 # interleaved: model chunks v per pipeline rank; 0 = the planner's, per plan
    search_pipeline_schedules: bool = False      # the planner chooses the schedule per pipeline plan (a decision)
    activation_memory: bool = False              # nodes hold their activations, per accelerator (physics.py, docs/physics.md 2b, 3)
    activation_bytes_per_token_layer_h: float = 34.0   # bytes per token per layer / h (Korthikanti et al. 2022)
    activation_recompute: str = "selective"      # selective | full | fit: layers recomputed in the backward pass
    recompute_bytes_per_token_layer_h: float = 2.0   # full recomputation keeps a layer's input only (2 bytes x h)
    search_zero_shards: bool = False             # the planner may shard a flat replica's state over Z nodes (ZeRO-3)
    stage_state_shards: float = 1.0              # pp_group: a stage's gradients and optimizer state sharded over the G >= K
                                                 # data-parallel groups, charged at K (FSDP; stage_shards.py); 1 = not
    stage_sharded_state: str = "gradients_and_optimizer"   # what K shards: gradients and optimizer state (Llama 3's
                                                 # FSDP) | optimizer (ZeRO-1, DeepSeek-V3); stage_shards.py
    stage_expert_parallel: bool = False          # pp_group, MoE: a stage's routed experts sharded over the E =
                                                 # expert_parallel_degree / A servers of its expert-parallel groups
                                                 # (H = 1, G >= E; stage_shards.py)
    tensor_parallel: float = 0.0                 # T accelerators per tensor-parallel group inside a node; 0 = in u
                                                 # (with search_tensor_parallel: 0 = the planner's, per plan)
    search_tensor_parallel: bool = False         # the node's A accelerators are T-way TP groups, A / T data-parallel
                                                 # (physics.tensor_parallel_choices); T 0 is then a planner decision
    intra_node_gb_per_s: float = 450.0           # per accelerator and direction (H100 NVLink 4: 900 GB/s both ways)
    failures: bool = False                       # goodput from MTBF and checkpoints (replaces fleet.goodput)
    accelerator_mtbf_h: float = 50_000.0         # hours between failures of one accelerator
    checkpoint_write_s: float = 60.0             # time to write one checkpoint (training paused)
    checkpoint_restore_s: float = 600.0          # time to restart and restore after a failure
    churn_per_node_h: float = 0.0                # volunteer departures per node per hour (each costs a restore)
    streaming_fragments: float = 1.0             # streaming sync in p fragments (Streaming DiLoCo); 1 = whole model
    streaming_overlap_steps: float = 0.0         # inner steps a fragment may overlap (tau); 0 = the whole interval
    demonstrated_warnings: bool = False          # warn where a plan leaves the settings shown at scale
    fragment_backward_overlap: bool = False      # a streaming fragment's sync also hides behind its backward pass
    # -- the exchange through object storage (sync_pattern "object_store", planner/cost/exchange.py,
    # docs/physics.md section 4); defaults leave every other pattern as it is --
    exchange_gather_peers: float = 0.0           # payloads a peer downloads per round (the round's peer list); 0 = all others
    exchange_store_gbps: float = 0.0             # object-store throughput per peer and direction, Gb/s; 0 = no cap
    exchange_request_latency_s: float = 0.0      # latency of one request to the store (upload, each download wave)
    exchange_parallel_requests: float = 0.0      # downloads in flight at once; 0 = all at once (one wave)
    exchange_overlap_up_down: bool = False       # upload and download at once; default: download after upload (Templar)
    exchange_fetch_own: bool = False             # a peer on the round's list downloads its own payload too (Templar's gather)
    # -- compute model (issue 25; planner/cost/compute, docs/physics.md section 1b); defaults = off --
    mfu_from_compute_model: bool = False         # u from the per-layer compute model where the accelerator has figures
    model_shape: str = ""                        # a shape preset of models/llm/shapes ("" = standard aspect ratios)
    sequence_tokens: float = 0.0                 # training sequence length; 0 = the shape's
    micro_batch_sequences: float = 1.0           # sequences per micro-batch (the GEMMs' m = s x this)
    expert_parallel_degree: float = 0.0          # GPUs a MoE layer's experts are spread over; 0 = one expert per GPU
    fabric_preset: str = ""                      # a server fabric of models/fabrics (expanded on loading: intra_node_gb_per_s)
    scale_out_gb_per_s: float = 50.0             # network across servers per accelerator and direction (DGX H100: 400 Gb/s ConnectX-7 per GPU)
    accelerators_per_server: float = 8.0         # GPUs sharing a server's NVLink (HGX/DGX H100, B200: 8)
    expert_node_limit: float = 0.0               # MoE: servers a token is dispatched to at most (DeepSeek-V3: 4); 0 = no limit
    expert_dispatch_bytes: float = 2.0           # MoE: bytes per value of the dispatches (DeepSeek-V3: 1, FP8)
    expert_a2a_overlap: bool = False             # MoE: the all-to-all hidden behind another micro-batch's compute (DualPipe)
    communication_sms: float = 0.0               # SMs reserved for communication kernels while overlapping (DeepSeek-V3: 20)
    high_precision_head: bool = False            # fp8 plans: output layer and MoE router GEMMs in BF16 (DeepSeek-V3 3.3.1)
    recompute_mla_up: bool = False               # MLA up-projections and RMSNorms recomputed in backward (DeepSeek-V3 3.2.3)
    expert_permutation: str = "none"             # MoE: token permutation kernels priced at HBM speed (EXPERT_PERMUTATIONS)
    expert_imbalance: bool = False               # MoE: routed GEMMs at the slowest GPU's load (a statistical floor)
    # -- resolved on loading a setting (physics.resolve_mfu), never set by a profile or an instance --
    tensor_parallel_utilisation: tuple = ()      # (T, precision, u) of each TP degree the model's heads allow
    # -- section 3: straggler factor f(n) -----------------------------------------
    straggler_sync_coefficient: float = 0.05     # synchronous: 1 + c log2 n
    straggler_relay_coefficient: float = 0.02    # relay: 1 + c log2 n
    straggler_backup_scale: float = 0.3          # backup: 1 + scale * sync_coeff * log2 n
    backup_spare_factor: float = 1.1             # backup: effective nodes N / factor
    threshold_eta_divisor: float = 1.15          # threshold: eta_H divided by this
    # -- section 1: precision -----------------------------------------------------
    bytes_per_param_fp16: float = 16.0
    bytes_per_param_fp8: float = 14.0
    bytes_per_param_fp4: float = 13.0
    bits_per_value_fp16: float = 16.0
    bits_per_value_fp8: float = 8.0
    bits_per_value_fp4: float = 4.0
    activation_bytes_fp16: float = 2.0
    activation_bytes_fp8: float = 1.0
    activation_bytes_fp4: float = 0.5
    hidden_size_coefficient: float = 0.03        # h = c * sqrt(P)
    # -- section 5: algorithmic efficiency ----------------------------------------
    alpha_coefficient: float = 0.08              # alpha(P) = c / (1 + log10(P/1e9)/d)
    alpha_log_divisor: float = 5.0
    eta_h_floor: float = 0.4
    replica_beta_coefficient: float = 1.0923     # beta0(P) = c * P ** e
    replica_beta_exponent: float = -0.2342
    replica_h_ref: float = 30.0                  # Charles et al. (2025) H
    linear_v1_coefficient: float = 0.005         # 1 - c * min(cap, P_B) / P_B * log2 K
    linear_v1_cap_b: float = 2.4
    # -- the fitted quality model (replica_penalty "fitted", planner/cost/quality_fit.py, docs/quality.md);
    # -1 = the value of models/quality/fit.json for the assumed scenario
    fit_offset: float = -1.0                     # a0: ln eta of DiLoCo M = 1 over data-parallel at 1B
    fit_offset_size_slope: float = -1.0          # a1: offset growth per unit of ln(N / 1B)
    fit_replica_coefficient: float = -1.0        # c: penalty c n^-e (ln K)^g (ln H / ln 30)^d
    fit_replica_size_exponent: float = -1.0      # e
    fit_replica_power: float = -1.0              # g
    fit_h_power: float = -1.0                    # d
    fit_overlap_coefficient: float = -1.0        # o: overlapped outer step costs exp(-o n^-f)
    fit_overlap_size_exponent: float = -1.0      # f
    fit_prune_coefficient: float = -1.0          # k: sparsification r costs exp(-k (r - 1)^p)
    fit_prune_power: float = -1.0                # p
    evidence_envelope: bool = False              # the search keeps inside the fit's evidence (planner/cost/envelope.py)
    compression_quality_ef: QualityTable = field(default_factory=lambda: dict(COMPRESSION_QUALITY_EF))
    compression_quality_no_ef: QualityTable = field(default_factory=lambda: dict(COMPRESSION_QUALITY_NO_EF))
    activation_quality: QualityTable = field(default_factory=lambda: dict(ACTIVATION_QUALITY))
    # -- section 6: Chinchilla law (Besiroglu et al. 2024) ------------------------
    chinchilla_e: float = 1.8172
    chinchilla_a: float = 482.01
    chinchilla_alpha: float = 0.3478
    chinchilla_b: float = 2085.43
    chinchilla_beta: float = 0.3658
    tokens_per_param: float = 25.6
    overtrain_target: float = 1.0
    chi_search_low_flop: float = 1e10            # the reference's bisection bracket
    chi_search_high_factor: float = 10.0
    # -- section 7: run-level ------------------------------------------------------
    mfu_per_hfu: float = 0.8                     # HFU = MFU / 0.8
    h100_fp16_flops: float = 990e12              # one H100-equivalent
    # -- section 8: maximum run duration ------------------------------------------
    growth_hardware_x_per_year: float = 1.37
    growth_software_x_per_year: float = 3.0
    growth_investment_x_per_year: float = 3.5
    days_per_year: float = 365.0

    def bytes_per_param(self, precision: str) -> float:
        """Training-state bytes per parameter beta (docs/cost_model.md section 1).

        dtplan terms (off by default): an inner-optimizer preset replaces AdamW's 8 bytes of
        fp32 moments by its own state (models/optimizers.json), and error feedback adds its
        buffer: beta = beta_ref - 8 + optimizer_state_bytes + error_feedback_bytes."""
        beta = float(getattr(self, f"bytes_per_param_{precision}"))
        if self.inner_optimizer != "reference":
            beta += optimizer_preset(self.inner_optimizer)["state_bytes_per_param"] - ADAMW_STATE_BYTES
        return beta + self.error_feedback_bytes if self.error_feedback_bytes else beta

    def mfu_for(self, precision: str) -> float:
        """Model FLOP utilisation u at a precision (of that precision's peak): `mfu` unless a
        per-precision value is set (dtplan's table gives fp8 its own)."""
        value = getattr(self, f"mfu_{precision}", 0.0) if precision != "fp16" else 0.0
        return float(value) if value else self.mfu

    def bits_per_value(self, precision: str) -> float:
        """Bits per exchanged pseudo-gradient value b (section 1)."""
        return float(getattr(self, f"bits_per_value_{precision}"))

    def activation_bytes(self, precision: str) -> float:
        """Bytes per activation value at a pipeline boundary (section 1)."""
        return float(getattr(self, f"activation_bytes_{precision}"))

    @property
    def scenario_index(self) -> int:
        return SCENARIOS.index(self.scenario)

    def quality_points(self, table_field: str) -> tuple[np.ndarray, np.ndarray]:
        """`table_points` of one of the TABLE_FIELDS at the assumed scenario, built once per Assumptions:
        the tables are part of this frozen value (nothing edits them in place), and a solve interpolates
        the same two or three of them about a hundred times (issue 27 item 1). Each table's points are built
        on its first use, by the same `table_points` call, so the same arrays: a sweep reads two of the three
        tables (its first call's first points: a median 0.10-0.14 -> 0.08-0.11 ms, load 4.9-7)."""
        points = self._quality_points.get(table_field)
        if points is None:
            if table_field not in TABLE_FIELDS:
                raise KeyError(table_field)
            points = self._quality_points[table_field] = table_points(getattr(self, table_field),
                                                                      self.scenario_index)
        return points

    @cached_property
    def _quality_points(self) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """The points of the TABLE_FIELDS used so far (`quality_points`), per field."""
        return {}

    def replace(self, **changes: Any) -> "Assumptions":
        """`dataclasses.replace(self, **changes)`, by `_value_methods`' `_replaced` (the same value)."""
        return self._replaced(changes)


def _value_methods(cls: type) -> type:
    """Give a dataclass made with `init=False, repr=False, eq=False` the `__init__`, `__repr__`, `__eq__`,
    `__hash__`, `__setattr__` and `__delattr__` that `@dataclass(frozen=True)` would write, behaving the same
    (every field a keyword or, in field order, a positional argument with its default or default factory; the
    repr `Name(field=value!r, ...)`, "..." on recursion; equality of the same class's field tuples, else
    NotImplemented; the hash of that tuple; FrozenInstanceError on assigning or deleting a field), as loops
    over the fields instead of source text: Python 3.11 writes and compiles each generated method of a
    130-field class at import (issue 27 item 1; docs/speed.md, "Start-up time").
    tests/test_assumptions_methods.py compares them with those @dataclass(frozen=True) writes."""
    fields = dataclasses.fields(cls)
    names = tuple(f.name for f in fields)
    defaults = {f.name: f.default for f in fields}
    factories = {f.name: f.default_factory for f in fields if f.default_factory is not dataclasses.MISSING}
    values_of = operator.attrgetter(*names)         # the fields' values as one tuple, in field order
    qualname = cls.__qualname__

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if len(args) > len(names):
            raise TypeError(f"{qualname}.__init__() takes from 1 to {len(names) + 1} positional arguments "
                            f"but {len(args) + 1} were given")
        values = dict(defaults)
        values.update(zip(names, args))
        for name, value in kwargs.items():
            if name not in values:
                raise TypeError(f"{qualname}.__init__() got an unexpected keyword argument {name!r}")
            if name in names[:len(args)]:
                raise TypeError(f"{qualname}.__init__() got multiple values for argument {name!r}")
            values[name] = value
        for name, factory in factories.items():
            if name not in kwargs and name not in names[:len(args)]:
                values[name] = factory()
        self.__dict__.update(values)        # as object.__setattr__ field by field, in field order

    @reprlib.recursive_repr()
    def __repr__(self) -> str:
        return f"{self.__class__.__qualname__}(" + ", ".join(
            [f"{name}={value!r}" for name, value in zip(names, values_of(self))]) + ")"

    def __eq__(self, other: object) -> bool:
        if other.__class__ is self.__class__:
            return values_of(self) == values_of(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(values_of(self))

    field_names = frozenset(names)

    def __setattr__(self, name: str, value: Any) -> None:
        if type(self) is cls or name in field_names:
            raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")
        super(cls, self).__setattr__(name, value)

    def __delattr__(self, name: str) -> None:
        if type(self) is cls or name in field_names:
            raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")
        super(cls, self).__delattr__(name)

    every_field_in_init = all(f.init for f in fields)

    def _replaced(self, changes: dict[str, Any]) -> Any:
        """`dataclasses.replace(self, **changes)` without its per-field checks and its __init__ of ~150
        keywords (about 0.1 ms a call: a process's first search case of a profile pays it). That function
        gives __init__ every field (a change, else the field's value) and __init__ writes them into a
        fresh instance's __dict__ in field order, calling no default factory (every field is given); this
        writes the same values in the same order into a fresh instance (so the same fields, repr,
        equality and hash, and no cached `_quality_points`). A subclass, a field outside __init__ or a name
        that is not a field goes through `dataclasses.replace` itself (its errors unchanged)
        (tests/test_assumptions_methods.py, tests/test_step_parts_schedules.py compare the two)."""
        if type(self) is not cls or not every_field_in_init or not field_names.issuperset(changes):
            return dataclasses.replace(self, **changes)
        values = dict(zip(names, values_of(self)))
        values.update(changes)
        new = object.__new__(cls)
        new.__dict__.update(values)
        return new

    for method in (__init__, __repr__, __eq__, __hash__, __setattr__, __delattr__, _replaced):
        method.__qualname__ = f"{qualname}.{method.__name__}"
        setattr(cls, method.__name__, method)
    return cls


_value_methods(Assumptions)

ADAMW_STATE_BYTES = 8.0      # two fp32 moments per parameter, inside beta_ref = 16 (fp16)
MODELS_DIR = bundled_models_dir()   # checkout or wheel; see planner/presets_dir.py


@lru_cache(maxsize=None)
def _optimizer_table() -> dict[str, Any]:
    return json.loads((MODELS_DIR / "optimizers.json").read_text())["optimizers"]


@lru_cache(maxsize=None)
def _compressor_table() -> dict[str, Any]:
    return json.loads((MODELS_DIR / "compressors.json").read_text())["presets"]


def compressor_preset_names() -> tuple[str, ...]:
    return tuple(sorted(_compressor_table()))


@lru_cache(maxsize=None)
def _fabric_table() -> dict[str, Any]:
    return {p.stem: json.loads(p.read_text()) for p in sorted((MODELS_DIR / "fabrics").glob("*.json"))}


def fabric_preset_names() -> tuple[str, ...]:
    """Ids of the server fabric presets (models/fabrics/*.json)."""
    return tuple(_fabric_table())


def model_shape_names() -> tuple[str, ...]:
    """Ids of the compute model's shape presets (models/llm/shapes/*.json), and "" (no preset)."""
    return ("",) + tuple(sorted(p.stem for p in (MODELS_DIR / "llm" / "shapes").glob("*.json")))


def optimizer_preset(name: str) -> dict[str, Any]:
    """An inner-optimizer preset of models/optimizers.json (state bytes, reported quality penalty)."""
    return _optimizer_table()[name]


# Constants that take one of a few words, that are true/false, or for which 0 is meaningful
# (the schema checks instance overrides with these).
CHOICE_CONSTANTS = {"scenario": SCENARIOS, "straggler": STRAGGLER_STRATEGIES, "replica_penalty": REPLICA_PENALTIES,
                    "compressor": COMPRESSORS, "sync_pattern": SYNC_PATTERNS, "pipeline_schedule": PIPELINE_SCHEDULES,
                    "inner_optimizer": INNER_OPTIMIZERS, "compressor_preset": compressor_preset_names(),
                    "activation_recompute": ACTIVATION_RECOMPUTE, "model_shape": model_shape_names(),
                    "fabric_preset": fabric_preset_names(), "stage_sharded_state": STAGE_SHARDED_STATES,
                    "expert_permutation": EXPERT_PERMUTATIONS}
BOOL_CONSTANTS = ("error_feedback", "mfu_from_table", "dp_overlap", "concurrent_up_down", "per_stage_payload",
                  "failures", "demonstrated_warnings", "search_pipeline_schedules", "activation_memory",
                  "search_zero_shards", "fragment_backward_overlap", "search_tensor_parallel",
                  "evidence_envelope", "exchange_overlap_up_down", "exchange_fetch_own", "mfu_from_compute_model",
                  "expert_a2a_overlap", "high_precision_head", "recompute_mla_up", "stage_expert_parallel",
                  "expert_imbalance")
PHYSICS_ZERO_ALLOWED = ("pipeline_chunks", "expert_node_limit", "communication_sms", "sequence_tokens", "expert_parallel_degree", "mfu_fp8", "mfu_fp4", "streaming_overlap_steps", "tensor_parallel", "compressor_scale_bits", "error_feedback_bytes", "churn_per_node_h", "checkpoint_write_s",
                        "checkpoint_restore_s", "compressor_index_bits", "fit_offset", "fit_offset_size_slope",
                        "fit_replica_coefficient", "fit_replica_size_exponent", "fit_overlap_coefficient",
                        "fit_overlap_size_exponent", "fit_prune_coefficient", "exchange_gather_peers",
                        "exchange_store_gbps", "exchange_request_latency_s", "exchange_parallel_requests")

TABLE_FIELDS = ("compression_quality_ef", "compression_quality_no_ef", "activation_quality")
NUMERIC_FIELDS = tuple(
    f.name for f in dataclasses.fields(Assumptions)
    if f.type in ("float", float) and f.name not in TABLE_FIELDS
)
RESOLVED_FIELDS = ("tensor_parallel_utilisation",)     # filled by physics.resolve_mfu, not settable
SETTABLE_FIELDS = tuple(f.name for f in dataclasses.fields(Assumptions) if f.name not in ("profile",) + RESOLVED_FIELDS)

PROFILES_DIR = bundled_models_dir() / "assumptions"  # checkout or wheel; see planner/presets_dir.py
_PROFILES_PATH = os.fspath(PROFILES_DIR)      # as a string, for `load_profile`'s os.path.join


def table_points(table: QualityTable, scenario_index: int) -> tuple[np.ndarray, np.ndarray]:
    """(log10 of the table's ratios in increasing order, the scenario's qualities at them), read-only arrays:
    the points `planner.cost.quality.interpolate_points` interpolates between."""
    keys = sorted(table)
    log_keys = np.log10(np.asarray(keys, dtype=float))
    values = np.asarray([table[k][scenario_index] for k in keys], dtype=float)
    log_keys.flags.writeable = values.flags.writeable = False
    return log_keys, values


def table_from_json(rows: Mapping[str, Any]) -> QualityTable:
    """A quality table from JSON: {"16": [opt, exp, cons], ...}."""
    return {float(k): tuple(float(x) for x in v) for k, v in rows.items()}  # type: ignore[misc]


def profile_names() -> list[str]:
    """Names of the assumption profiles: the files of models/assumptions with a `constants` object
    (the folder also holds other data, e.g. uncertainty.json for `feasible --monte-carlo`)."""
    return sorted(p.stem for p in PROFILES_DIR.glob("*.json") if "constants" in json.loads(p.read_text()))


def load_profile(name: str) -> Assumptions:
    """The Assumptions of a named profile (models/assumptions/NAME.json). A profile without constants (the
    `reference` one) is the defaults as built: `apply_overrides` of no overrides would only copy them field
    by field into an equal value, so it is skipped (tests/test_step_parts_schedules.py).
    The file is read as bytes, which `json.loads` decodes as UTF-8 (JSON's encoding; `read_text` used the
    locale's, UTF-8 here, and the shipped profiles are ASCII), and a missing file is known by `open`'s
    FileNotFoundError instead of a stat before it: a process's first read of the reference profile, after
    the reference calculator's first sweep, took a median 0.20-0.31 ms through `Path.exists` and
    `read_text` (a text wrapper and its decoder) and takes 0.14-0.22 ms so (three runs of 7-9 processes
    each, load 4.9-7; issue 27 item 3; the same dict, tests/test_profile_loading.py)."""
    try:
        with open(os.path.join(_PROFILES_PATH, f"{name}.json"), "rb") as file:
            data = json.loads(file.read())
    except FileNotFoundError:
        raise KeyError(f"unknown assumption profile {name!r}; known: {', '.join(profile_names())}") from None
    constants = data.get("constants", {})
    base = Assumptions(profile=name)
    return apply_overrides(base, constants) if constants else base


def apply_overrides(base: Assumptions, overrides: Mapping[str, Any]) -> Assumptions:
    """Return `base` with some fields replaced; quality tables may be given as JSON objects.
    A `compressor_preset` expands into its constants (models/compressors.json) first, and a
    `fabric_preset` into its own (models/fabrics), so that constants given beside them override the
    presets'."""
    preset = overrides.get("compressor_preset")
    if preset:
        base = apply_overrides(base, _compressor_table()[preset]["constants"])
    fabric = overrides.get("fabric_preset")
    if fabric:
        base = apply_overrides(base, _fabric_table()[fabric]["constants"])
    changes: dict[str, Any] = {}
    for key, value in overrides.items():
        if key not in SETTABLE_FIELDS:
            raise KeyError(f"unknown assumption constant {key!r}")
        changes[key] = table_from_json(value) if key in TABLE_FIELDS and not _is_table(value) else value
    return base.replace(**changes)


def _is_table(value: Any) -> bool:
    return isinstance(value, dict) and all(isinstance(k, (int, float)) for k in value)
