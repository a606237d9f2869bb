"""The planner's decision space (PLANNER.md, "Decisions"), narrowed by the instance.

A plan is (mode, precision, nodes N, pipeline stages S, group size k, inner steps H,
regional rounds R, compression Cr, micro-batches M, activation compression Ca,
streaming, expert-parallel scope). `DecisionSpace.tuples(...)` yields every valid
combination of all decisions but H and R as one `PlanBatch` (H = R = 1 placeholders);
the solvers choose H and R. A tuple is valid when it meets every limit that does not
depend on H or R: memory per node, node count, the mode's structure, budget.

Three reductions are applied, each exact for the time and cost objectives:
- Streaming: the outer step with overlap, max(H t_step, t_sync), never exceeds the one
  without, H t_step + t_sync (at both levels of a hierarchy), all else equal; so when
  streaming is allowed, plans without it are never better and lose ties (streaming on
  is preferred), and are not listed.
- PP-group: T depends on N only through G = floor(N / S), so only N = G S is listed
  (a larger N with the same G is slower by nothing and costs more; the tie-break
  prefers fewer nodes). Pipeline over the WAN uses N = S.
- Pipelines: M enters only the pipeline step time t_pp, and the time to target is
  non-decreasing in t_pp for every H, so per (precision, S, Ca) only the M of least
  t_pp is listed (ties to the smaller M).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from planner.cost import memory
from planner.cost.modes import throughput
from planner.cost.setting import PlanBatch, Setting

MODE_ORDER = ("flat", "hierarchical", "pp_group", "pipeline_wan")
PRECISION_ORDER = ("fp16", "fp8", "fp4")


@dataclass(frozen=True)
class DecisionSpace:
    """The declared decision space of one instance."""

    modes: tuple[str, ...]
    precisions: tuple[str, ...]
    min_nodes: int
    max_nodes: int
    max_stages: int
    group_sizes: tuple[int, ...]
    max_inner_steps: int
    max_regional_rounds: int
    compression: tuple[float, ...]
    max_micro_batches: int
    activation_compression: tuple[float, ...]
    streaming: tuple[bool, ...]
    expert_parallel: tuple[str, ...] | None

    @classmethod
    def from_instance(cls, instance, setting: Setting) -> "DecisionSpace":
        search = instance.search
        caps = [instance.fleet.nodes] + ([instance.limits.max_nodes] if instance.limits.max_nodes else [])
        precisions = tuple(search.precisions) if search.precisions else instance.hardware.precisions
        return cls(
            modes=tuple(m for m in MODE_ORDER if m in search.modes),
            precisions=tuple(p for p in PRECISION_ORDER if p in precisions),
            min_nodes=search.min_nodes, max_nodes=min(caps), max_stages=search.max_stages,
            group_sizes=tuple(sorted(set(search.group_sizes))) if search.group_sizes else tuple(range(2, 65)),
            max_inner_steps=search.max_inner_steps, max_regional_rounds=search.max_regional_rounds,
            compression=tuple(sorted(set(float(c) for c in search.compression))),
            max_micro_batches=search.max_micro_batches,
            activation_compression=tuple(sorted(set(float(c) for c in search.activation_compression))),
            streaming=(True,) if True in search.streaming else (False,),
            expert_parallel=tuple(search.expert_parallel) if search.expert_parallel else None)

    def expert_scopes(self, setting: Setting, mode: str) -> tuple[str, ...]:
        """The EP scopes that apply to a mode: none for dense models and pipelines."""
        if not setting.is_moe or mode in ("pp_group", "pipeline_wan"):
            return ("none",)
        scopes = ("none", "global") if mode == "flat" else ("none", "regional", "global")
        if self.expert_parallel is not None:
            scopes = tuple(s for s in scopes if s in self.expert_parallel)
        return scopes

    def tuples(self, setting: Setting, mode: str, precision: str, expert_parallel: str = "none") -> PlanBatch | None:
        """Every valid (all decisions but H, R) combination of one mode, precision and EP scope."""
        build = {"flat": self._flat, "hierarchical": self._hierarchical,
                 "pp_group": self._pp_group, "pipeline_wan": self._pipeline_wan}[mode]
        batch = build(setting, precision, expert_parallel)
        if batch is None or batch.size == 0:
            return None
        return self._within_limits(setting, batch)

    # -- per mode ---------------------------------------------------------------------

    def _grid(self, **axes) -> dict[str, np.ndarray]:
        names = list(axes)
        grids = np.meshgrid(*[np.asarray(axes[n]) for n in names], indexing="ij")
        return {n: g.ravel() for n, g in zip(names, grids)}

    def _node_range(self, low: int = 1) -> np.ndarray:
        return np.arange(max(low, self.min_nodes), self.max_nodes + 1)

    def _flat(self, s: Setting, precision: str, ep: str) -> PlanBatch:
        g = self._grid(nodes=self._node_range(), compression=self.compression, streaming=self.streaming)
        return PlanBatch.of("flat", precision, expert_parallel=ep, **g)

    def _hierarchical(self, s: Setting, precision: str, ep: str) -> PlanBatch | None:
        parts = []
        for k in self.group_sizes:
            nodes = self._node_range(low=2 * k)
            if nodes.size == 0:
                continue
            g = self._grid(nodes=nodes, compression=self.compression, streaming=self.streaming)
            parts.append(PlanBatch.of("hierarchical", precision, group_size=k, expert_parallel=ep, **g))
        return _concat(parts)

    def _stage_range(self, s: Setting, precision: str) -> np.ndarray:
        beta = s.assumptions.bytes_per_param(precision)
        s_min = max(2, int(memory.min_stages(s.params, beta, s.memory_bytes)))
        return np.arange(s_min, self.max_stages + 1)

    def _best_micro_batches(self, s: Setting, precision: str, stages: int, ca: float) -> int:
        """argmin over M of the pipeline step time (exact; ties to the smaller M)."""
        m = np.arange(1, self.max_micro_batches + 1)
        probe = PlanBatch.of("pp_group", precision, nodes=2 * stages, stages=stages, micro_batches=m,
                             activation_compression=ca)
        return int(m[np.argmin(throughput(s, probe)["t_step_s"])])

    def _pp_group(self, s: Setting, precision: str, ep: str) -> PlanBatch | None:
        parts = []
        for stages in self._stage_range(s, precision):
            groups = np.arange(2, self.max_nodes // stages + 1)
            groups = groups[groups * stages >= self.min_nodes]
            if groups.size == 0:
                continue
            for ca in self.activation_compression:
                m = self._best_micro_batches(s, precision, int(stages), ca)
                g = self._grid(nodes=groups * stages, compression=self.compression, streaming=self.streaming)
                parts.append(PlanBatch.of("pp_group", precision, stages=stages, micro_batches=m,
                                          activation_compression=ca, **g))
        return _concat(parts)

    def _pipeline_wan(self, s: Setting, precision: str, ep: str) -> PlanBatch | None:
        parts = []
        for stages in self._stage_range(s, precision):
            if not self.min_nodes <= stages <= self.max_nodes:
                continue
            for ca in self.activation_compression:
                probe = PlanBatch.of("pipeline_wan", precision, nodes=stages, stages=stages,
                                     micro_batches=np.arange(1, self.max_micro_batches + 1), activation_compression=ca)
                m = int(probe.micro_batches[np.argmin(throughput(s, probe)["t_step_s"])])
                parts.append(PlanBatch.of("pipeline_wan", precision, nodes=stages, stages=stages, micro_batches=m,
                                          activation_compression=ca))
        return _concat(parts)

    def _within_limits(self, s: Setting, b: PlanBatch) -> PlanBatch | None:
        """Drop the tuples that break a limit independent of H and R (memory, structure, budget)."""
        t = throughput(s, b)
        ok = t["state_bytes_per_node"] <= s.memory_bytes
        if b.mode in ("hierarchical", "pp_group"):
            ok &= t["groups"] >= 2
        if s.budget_usd is not None:
            ok &= b.nodes * s.node_price_usd <= s.budget_usd
        return b.take(ok) if ok.any() else None

    def size(self, setting: Setting) -> int:
        """Number of plans in the declared space (every H and R counted)."""
        total = 0
        for mode in self.modes:
            for precision in self.precisions:
                for ep in self.expert_scopes(setting, mode):
                    batch = self.tuples(setting, mode, precision, ep)
                    if batch is not None:
                        per_tuple = {"pipeline_wan": 1, "hierarchical": self.max_inner_steps * self.max_regional_rounds}
                        total += batch.size * per_tuple.get(mode, self.max_inner_steps)
        return total


def _concat(parts: list[PlanBatch]) -> PlanBatch | None:
    if not parts:
        return None
    first = parts[0]
    fields = ("nodes", "inner_steps", "compression", "streaming", "stages", "group_size", "regional_rounds",
              "micro_batches", "activation_compression")
    arrays = {f: np.concatenate([getattr(p, f) for p in parts]) for f in fields}
    return PlanBatch(first.mode, first.precision, expert_parallel=first.expert_parallel, **arrays)
