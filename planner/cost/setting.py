"""What the evaluator needs to know: the fixed setting (SI units) and a batch of plans.

`Setting` is an instance with presets and defaults resolved, in SI units (FLOP/s,
bytes, bits/s, seconds). `PlanBatch` is one or many plans of one mode and one
precision, as numpy arrays, so that the same formulas score one plan or a million.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Mapping

import numpy as np

from planner.cost.assumptions import Assumptions

MODES = ("flat", "hierarchical", "pp_group", "pipeline_wan")
EXPERT_PARALLEL = ("none", "regional", "global")


@dataclass(frozen=True)
class Setting:
    """A resolved instance (everything but the plan), in SI units."""

    params: float                        # P, total parameters
    active_params: float                 # P_act, parameters used per token (= P for dense)
    moe_layers: int                      # L_moe (0 for dense)
    hidden_size: float | None            # h; None = 0.03 * sqrt(P)
    local_batch_tokens: float            # B, tokens per inner step per replica
    peak_flops: Mapping[str, float]      # node peak FLOP/s per precision (fp16, fp8, fp4)
    memory_bytes: float                  # V, node memory (sum of HBM)
    accelerators_per_node: int
    price_usd_per_accelerator: float
    h100_equivalents: float              # node fp16 peak / 990e12
    wan_up_bps: float = 100e6
    wan_down_bps: float = 100e6
    wan_rtt_s: float = 0.100
    regional_bps: float = 1e9
    regional_rtt_s: float = 0.020
    pipeline_bps: float = 1e9
    pipeline_rtt_s: float = 0.020
    window_s: float = 47_336_400.0       # run-duration limit (the calculator's 1.5 years)
    goodput: float = 1.0                 # fraction of wall-clock spent training (downtime, restarts, churn)
    target_flop: float | None = None     # C_target; None = 6 * P_act * r * P_act (compute-optimal)
    target_kind: str = "c_local"         # c_local | c_quality
    max_nodes: int | None = None
    budget_usd: float | None = None
    assumptions: Assumptions = field(default_factory=Assumptions)

    @property
    def is_moe(self) -> bool:
        return self.active_params < self.params

    @property
    def node_price_usd(self) -> float:
        return self.accelerators_per_node * self.price_usd_per_accelerator

    @property
    def training_window_s(self) -> float:
        """Seconds of the run-duration limit spent training: W * goodput."""
        return self.window_s * self.goodput

    @property
    def target(self) -> float:
        """C_target in FLOP: explicit, else 6 * P_act * D with D compute-optimal (r * P_act)."""
        if self.target_flop is not None:
            return self.target_flop
        a = self.assumptions
        return 6.0 * self.active_params * (a.tokens_per_param * a.overtrain_target * self.active_params)

    @property
    def target_tokens(self) -> float:
        """D = C_target / (6 P_act)."""
        return self.target / (6.0 * self.active_params)

    def replace(self, **changes) -> "Setting":
        """`dataclasses.replace(self, **changes)`: a Setting with the fields of `changes`, the others this one's.
        Built as that call builds it, without its keyword round trip through the generated `__init__` (10 -> 4
        us warm; a sweep_model_sizes answer makes two, issue 27 item 3): that `__init__` of a frozen dataclass
        with no `__post_init__` and no `init=False` field, given every field, sets each one in field order
        (`object.__setattr__`, i.e. into the instance's `__dict__`) and nothing else; here the same values go
        into the same `__dict__` in the same order. A name that is no field raises TypeError, as there. A
        subclass takes `dataclasses.replace` itself (its `__init__` may do more). tests/test_setting_replace.py
        compares both on random changes."""
        if type(self) is not Setting:
            return replace(self, **changes)
        unknown = changes.keys() - _FIELD_SET
        if unknown:
            raise TypeError(f"Setting.__init__() got an unexpected keyword argument {min(unknown)!r}")
        values = {name: getattr(self, name) for name in _FIELD_NAMES}
        values.update(changes)
        new = object.__new__(Setting)
        new.__dict__.update(values)
        return new


_FIELD_NAMES = tuple(f.name for f in fields(Setting))     # `Setting.replace`: the fields, in field order
_FIELD_SET = frozenset(_FIELD_NAMES)


@dataclass
class PlanBatch:
    """Plans of one mode and one precision; every other decision an array (broadcastable).

    Fields a mode does not use are ignored by it. H = inner_steps, R = regional_rounds,
    k = group_size, S = stages, M = micro_batches, Ca = activation_compression,
    Cr = compression; schedule = the pipeline schedule's code (0: the profile's
    `pipeline_schedule`; 1-4: gpipe, 1f1b, interleaved, zero_bubble, a dtplan decision);
    zero_shards = Z, the co-located nodes of one flat replica that shard its training state
    (ZeRO-3/FSDP, a dtplan decision; 1 = every node holds the whole state).
    """

    mode: str
    precision: str
    nodes: np.ndarray
    inner_steps: np.ndarray
    compression: np.ndarray
    streaming: np.ndarray
    stages: np.ndarray
    group_size: np.ndarray
    regional_rounds: np.ndarray
    micro_batches: np.ndarray
    activation_compression: np.ndarray
    schedule: np.ndarray | None = None   # pipeline schedule code: 0 the profile's, 1.. SCHEDULES (dtplan decision)
    zero_shards: np.ndarray | None = None  # flat: nodes Z per replica sharding its state (ZeRO-3/FSDP); 1 = none
    expert_parallel: str = "none"

    @classmethod
    def of(cls, mode: str, precision: str = "fp16", *, nodes, inner_steps=1, compression=1.0, streaming=True,
           stages=1, group_size=1, regional_rounds=1, micro_batches=8, activation_compression=4.0,
           schedule=0, zero_shards=1, expert_parallel: str = "none") -> "PlanBatch":
        """Build a batch, broadcasting every array argument to one shape."""
        if mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
        if expert_parallel not in EXPERT_PARALLEL:
            raise ValueError(f"expert_parallel must be one of {', '.join(EXPERT_PARALLEL)}, got {expert_parallel!r}")
        arrays = np.broadcast_arrays(
            np.asarray(nodes, dtype=np.int64), np.asarray(inner_steps, dtype=np.int64),
            np.asarray(compression, dtype=float), np.asarray(streaming, dtype=bool),
            np.asarray(stages, dtype=np.int64), np.asarray(group_size, dtype=np.int64),
            np.asarray(regional_rounds, dtype=np.int64), np.asarray(micro_batches, dtype=np.int64),
            np.asarray(activation_compression, dtype=float), np.asarray(schedule, dtype=np.int64),
            np.asarray(zero_shards, dtype=np.int64))
        return cls(mode, precision, *(np.atleast_1d(x) for x in arrays), expert_parallel=expert_parallel)

    @property
    def size(self) -> int:
        return int(self.nodes.size)

    def __post_init__(self):
        if self.schedule is None:      # built field by field without a schedule: the profile's
            self.schedule = np.zeros_like(self.nodes)
        if self.zero_shards is None:   # nor ZeRO sharding: none
            self.zero_shards = np.ones_like(self.nodes)

    def take(self, index) -> "PlanBatch":
        """The sub-batch at `index` (an integer, slice or mask)."""
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        for name, value in values.items():
            if isinstance(value, np.ndarray):
                values[name] = np.atleast_1d(value[index])
        return PlanBatch(**values)
