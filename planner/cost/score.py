"""Score plans: every figure of the cost model, and which limits each plan breaks.

`score(setting, batch)` is the evaluator's one entry point; it is vectorised over the
plans of a `PlanBatch` and returns a dict of arrays (names carry units). The scalar
evaluator (`planner.evaluate`) and, later, the planner and the brute-force oracle
all call it, so the physics exists once.

Constraint families (stable names, shared with the MIP):
    memory-cap        training state per node exceeds node memory V
    node-limit        more nodes than the fleet, or than limits.max_nodes
    structure         the mode's shape is impossible (e.g. fewer than 2 DiLoCo groups, or a pipeline
                      schedule that cannot run its stages and micro-batches: DualPipe)
    duration-limit    the target is not reached within the run-duration limit
    budget-limit      hardware cost above the budget
"""

from __future__ import annotations

import numpy as np

from planner.cost import chinchilla, memory, modes, physics, run, stage_shards
from planner.cost.setting import PlanBatch, Setting

CONSTRAINTS = ("memory-cap", "node-limit", "structure", "duration-limit", "budget-limit")
STRICT_THRESHOLD_FLOP = 1e24  # the MIRI proposal's strict compute threshold, for C_local / 1e24
BOTTLENECKS = ("compute", "wan-sync", "regional-sync", "pipeline-bubble", "pipeline-link", "expert-all-to-all")


def score(s: Setting, b: PlanBatch, fleet_nodes: int | None = None, adjust=None) -> dict[str, np.ndarray]:
    """All outputs for every plan of the batch (see module docstring for the limit names).

    Structurally impossible plans (e.g. a pipeline group with no group) score as NaN or
    infinity where a quantity has no meaning; their `violates:structure` is True.
    `adjust` (here and in `time_to_target`, `window_compute`): None, or a function that takes the
    mode's throughput dict and returns it changed (a fleet's synchronisation rule,
    `planner.sync.proportional.rule`); every figure is then computed from the changed dict.
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        return _score(s, b, fleet_nodes, adjust)


def _throughput(s: Setting, b: PlanBatch, adjust) -> dict[str, np.ndarray]:
    t = modes.throughput(s, b)
    return t if adjust is None else adjust(t)


def _score(s: Setting, b: PlanBatch, fleet_nodes: int | None, adjust=None) -> dict[str, np.ndarray]:
    t = _throughput(s, b, adjust)
    eff = run.efficiency_without_replicas(s, b, t)
    out = dict(t)
    out.update(eff)
    out.update(run.window_view(s, b, t, eff, s.window_s))
    out.update(run.time_to_target(s, b, t, eff))
    n = np.asarray(b.nodes, dtype=float)
    synced = t["synchronised"] > 0
    out["cost_usd"] = n * s.node_price_usd
    out["duty_cycle"] = np.where(synced, t["t_sync_s"] / t["outer_time_s"], 0.0)
    out["comm_gb_per_sync"] = 2.0 * t["payload_bits"] / 8.0 / 1e9
    out["memory_bytes"] = np.full(n.shape, s.memory_bytes)
    least = stage_shards.least_bytes_per_param(s.assumptions, b.precision, b.mode, s.is_moe, s.accelerators_per_node,
                                               s.params, s.active_params)     # beta, or with K or E > 1 less
    out["min_stages"] = np.broadcast_to(memory.min_stages(s.params, least, s.memory_bytes), n.shape)
    out["max_params_one_node"] = np.full(n.shape, s.memory_bytes / s.assumptions.bytes_per_param(b.precision))
    out["chinchilla_tokens"] = np.full(n.shape, chinchilla.tokens_per_param(s.assumptions) * s.active_params)
    out["overtraining_ratio"] = out["tokens"] / out["chinchilla_tokens"]
    out["threshold_multiple"] = out["c_local"] / STRICT_THRESHOLD_FLOP
    out["compute_utilization"] = t["compute_block_s"] / t["outer_time_s"]
    out["outer_steps"] = s.training_window_s / t["outer_time_s"]
    out["goodput"] = np.full(n.shape, s.goodput)
    out["total_gpus"] = n * s.accelerators_per_node
    out["bottleneck"] = bottleneck_code(b, t)
    out.update(violations(s, b, out, fleet_nodes))
    return out


def time_to_target(s: Setting, b: PlanBatch, adjust=None) -> dict[str, np.ndarray]:
    """Only what the `min_time` objective needs: time to target and the efficiency it used.

    Same functions as `score` (modes.throughput, run.efficiency_without_replicas,
    run.time_to_target), without the window view (so, for a C_quality target, without
    eta_target and eta_r_target); for the planner's enumeration.
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        t = _throughput(s, b, adjust)
        eff = run.efficiency_without_replicas(s, b, t)
        out = run.time_to_target(s, b, t, eff, details=False)
        out["outer_time_s"] = t["outer_time_s"]
        out["state_bytes_per_node"] = t["state_bytes_per_node"]
        out["groups"] = t["groups"]
        out["eta_h"] = eff["eta_h"]
        return out


def window_compute(s: Setting, b: PlanBatch, kind: str | None = None, adjust=None, t=None,
                   eff=None, terms=None) -> dict[str, np.ndarray]:
    """Only what the `max_compute` objective needs: the compute reached within the duration
    limit (window view) as c_quality and c_local (only `kind` when given), and the
    ingredients of the bound: tokens_per_s (while training; the window trains for
    `s.training_window_s`) and g, mu, with_chi of `run.quality_terms`.
    Same functions as `score` (`run.quality_compute`, `run.local_compute`), for the search.
    `t`, `eff`: the plans' `modes.throughput` (after `adjust`) and `run.efficiency_without_replicas`
    when the caller scored them already, one value per plan of `b` (the search's box bounds,
    planner.solvers.bnb: the figures are then those it bounded with, not scored again); `terms`: likewise
    their `run.quality_terms`.

    C_local is C_thr g where eta_R does not read the tokens (every replica penalty but Chinchilla's):
    `run.local_compute`'s eta = eta_H eta_C eta_A eta_R is then, factor for factor and in the same order,
    `run.quality_terms`' g (eta_R = the linear v1 or fitted replica factor where synchronised, else 1;
    1 under no penalty; g times a factor 1 where the other has none, which is exact), so the same
    double; the replica factor is not scored a second time (tests/test_window_compute.py)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        t = _throughput(s, b, adjust) if t is None else t
        eff = run.efficiency_without_replicas(s, b, t) if eff is None else eff
        out = {"tokens_per_s": t["tokens_per_outer"] / t["outer_time_s"]}
        out["g"], out["mu"], out["with_chi"] = run.quality_terms(s, b, t, eff) if terms is None else terms
        tokens = s.training_window_s * out["tokens_per_s"]
        if kind in (None, "c_quality"):
            out["c_quality"] = run.quality_compute(s, tokens, out["g"], out["mu"], out["with_chi"])
        if kind in (None, "c_local"):
            out["c_local"] = run.local_compute(s, t, eff, tokens)[0] if s.assumptions.replica_penalty == "chinchilla" \
                else 6.0 * s.active_params * np.asarray(tokens, dtype=float) * out["g"]
        return out


INT64_MAX = int(np.iinfo(np.int64).max)   # `violations`' node cap without a limit: the same int, not an iinfo a call


def violations(s: Setting, b: PlanBatch, out: dict[str, np.ndarray], fleet_nodes: int | None) -> dict[str, np.ndarray]:
    """One boolean array per constraint family, True where the plan breaks it."""
    n = np.asarray(b.nodes)
    groups = out["groups"]
    node_cap = min(x for x in (fleet_nodes, s.max_nodes, INT64_MAX) if x is not None)
    if b.mode in ("hierarchical", "pp_group"):
        bad_shape = groups < 2
    elif b.mode == "pipeline_wan":
        bad_shape = (n < b.stages) | (b.stages < 2)
    else:   # flat: at least one replica (dtplan's ZeRO-3 replicas are Z nodes: floor(N / Z) >= 1)
        bad_shape = np.asarray(groups) < 1
    if b.mode in ("pp_group", "pipeline_wan"):    # a schedule that cannot run its (S, M): DualPipe's
        bad_shape = bad_shape | ~physics.schedule_allowed(s.assumptions, b.stages, b.micro_batches, b.schedule)
    budget = np.inf if s.budget_usd is None else s.budget_usd
    return {
        "violates:memory-cap": out["state_bytes_per_node"] > s.memory_bytes,
        "violates:node-limit": n > node_cap,
        "violates:structure": np.asarray(bad_shape),
        "violates:duration-limit": ~(out["time_to_target_s"] <= s.window_s),
        "violates:budget-limit": out["cost_usd"] > budget,
    }


def bottleneck_code(b: PlanBatch, t: dict[str, np.ndarray]) -> np.ndarray:
    """Index into BOTTLENECKS of what sets the pace.

    First the outer step: the WAN sync when it lasts longer than the compute it
    overlaps (or adds to, without streaming), then likewise the regional sync of a
    hierarchical cycle. Otherwise the largest part of an inner step: useful compute,
    pipeline bubble, pipeline link time (with its straggler share) or expert all-to-all.
    """
    hierarchical = b.mode == "hierarchical"
    r = np.asarray(b.regional_rounds, dtype=float) if hierarchical else 1.0
    h = np.asarray(b.inner_steps, dtype=float)
    paced_by_wan = (t["synchronised"] > 0) & (t["t_sync_s"] > (r * t["regional_cycle_s"] if hierarchical
                                                                else t["compute_block_s"]))
    paced_by_region = hierarchical & (t["t_regional_s"] > h * t["t_step_s"])
    step_parts = np.stack([t["step_compute_s"], np.zeros_like(h), np.zeros_like(h), t["step_bubble_s"],
                           t["step_link_s"] + t["step_link_straggler_s"], t["t_ep_s"] * np.ones_like(h)])
    code = np.argmax(step_parts, axis=0)
    code = np.where(paced_by_region, BOTTLENECKS.index("regional-sync"), code)
    return np.where(paced_by_wan, BOTTLENECKS.index("wan-sync"), code)
