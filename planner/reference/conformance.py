"""Run the reference simulator's cases through dtplan's evaluator and compare.

A case of ../shared/conformance/reference_cases.json names a reference function, its
arguments and every effective input (`resolved_inputs`). Each reference function is
one fixed plan in dtplan's terms; this module states that correspondence once,
function by function (`_flat`, `_hierarchical`, ...): the `Setting`, the `PlanBatch`
(with the reference's rule for H and R, computed from dtplan's own times) and the
map from the reference's output names to dtplan's. The numbers all come from
`planner.cost`; nothing here re-implements a formula.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from planner.cost import chinchilla, quality, straggler
from planner.cost.assumptions import Assumptions, load_profile
from planner.cost.score import score
from planner.cost.setting import PlanBatch, Setting

REL_TOL = 1e-9
ABS_TOL = 1e-12
PROFILES = {"current": "reference", "v1_48xA100": "report-v1", "simulator.py": "simulator"}
SEARCH_FUNCTIONS = ("find_nodes_for_target", "find_optimal_config_for_target", "sweep_model_sizes")
LABEL_KEYS = {"config", "mode", "note"}  # reference display strings, not quantities
PRECISION_OF_BYTES = {16: "fp16", 14: "fp8", 13: "fp4"}
# The reference's node names -> dtplan hardware presets (for H100-equivalents of fp8 nodes).
PRESET_OF_CONFIG = {
    "50x A100 80GB": "50xA100-80GB", "48x A100 80GB": "48xA100-80GB", "16x GH200": "16xGH200",
    "16x H100 SXM": "16xH100-SXM", "16x H100 FP8": "16xH100-SXM", "16x GH200 FP8": "16xGH200",
    "49x Ascend 910B": "49xAscend-910B", "49x Ascend 910B FP8": "49xAscend-910B",
    "26x Ascend 910C": "26xAscend-910C", "26x Ascend 910C FP8": "26xAscend-910C",
    "57x TPU v4": "57xTPU-v4", "80x TPU v5e": "80xTPU-v5e", "34x TPU v5p": "34xTPU-v5p",
    "17x TPU v6e": "17xTPU-v6e", "17x TPU v6e FP8": "17xTPU-v6e",
}


@dataclass
class CaseResult:
    case_id: str
    function: str
    status: str                                   # passed | failed | skipped
    mismatches: list[str] = field(default_factory=list)
    max_rel_error: float = 0.0
    compared: int = 0


def check_case(case: dict) -> CaseResult:
    """Evaluate one reference case with dtplan and compare every output it has."""
    fn = case["function"]
    if fn in SEARCH_FUNCTIONS:
        return CaseResult(case["id"], fn, "skipped", ["search function: answered by the planner "
                                                      "(planner.reference.search)"])
    handler = HANDLERS.get(fn)
    if handler is None:
        return CaseResult(case["id"], fn, "failed", [f"no dtplan mapping for reference function {fn!r}"])
    got, expected = handler(case)
    return _compare(case["id"], fn, got, expected)


def _compare(case_id: str, fn: str, got: dict[str, Any], expected: dict[str, Any]) -> CaseResult:
    result = CaseResult(case_id, fn, "passed")
    for key, want in expected.items():
        if key in LABEL_KEYS:
            continue
        if key not in got:
            result.mismatches.append(f"{key}: no dtplan counterpart")
            continue
        have = got[key]
        result.compared += 1
        if isinstance(want, (bool, str)) or want is None:
            if have != want:
                result.mismatches.append(f"{key}: expected {want!r}, got {have!r}")
            continue
        have = float(have)
        err = abs(have - want) / abs(want) if want != 0 else abs(have)
        result.max_rel_error = max(result.max_rel_error, err if want != 0 else 0.0)
        if not (abs(have - want) <= max(REL_TOL * abs(want), ABS_TOL)):
            result.mismatches.append(f"{key}: expected {want!r}, got {have!r} (rel. error {err:.2e})")
    if result.mismatches:
        result.status = "failed"
    return result


# -- building blocks -----------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def profile(name: str) -> Assumptions:
    """The named profile (`load_profile`), read once per process (Assumptions is frozen: callers `replace` it)."""
    return load_profile(name)


def _assumptions(case: dict, ri: dict) -> Assumptions:
    changes: dict[str, Any] = {}
    for key in ("scenario", "straggler_mode", "error_feedback"):
        if ri.get(key) is not None:
            changes["straggler" if key == "straggler_mode" else key] = ri[key]
    consts = ri.get("module_constants", {})
    if "MFU" in consts:
        changes["mfu"] = consts["MFU"]
    return _profile_with(PROFILES[case["profile"]], tuple(sorted(changes.items())))


@functools.lru_cache(maxsize=256)
def _profile_with(name: str, changes: tuple) -> Assumptions:
    """`profile(name)` with `changes` ((field, value) pairs), built once per process (Assumptions is
    frozen, so the same object serves every case that asks; a replace of its ~150 fields costs
    about 50 us a search case). Where every change is the profile's own value (the same type and value, a
    float's sign too: `_same_value`), the profile itself, which `replace` would copy into an equal value
    field by field (a process's first sweep case: a median 0.09 -> 0.04 ms, 9 processes, load 6.7; the
    shipped search cases restate the profile's straggler, MFU, error feedback and scenario). The same
    value either way: every field the same object or an equal one of the same type and sign
    (tests/test_reference_conformance_profile.py)."""
    base = profile(name)
    if all(_same_value(getattr(base, field, _NOT_A_FIELD), value) for field, value in changes):
        return base
    return base.replace(**dict(changes))


_NOT_A_FIELD = object()     # `_profile_with`: a name that is no field goes to `replace` (its error)


def _same_value(old: Any, new: Any) -> bool:
    """Whether `new` would leave a field holding `old` the same value: the same type and equal, and for
    floats the same sign (0.0 == -0.0; NaN is never the same, so it is replaced)."""
    if type(old) is not type(new) or not old == new:
        return False
    return not isinstance(old, float) or math.copysign(1.0, old) == math.copysign(1.0, new)


def _precision(ri: dict, a: Assumptions) -> tuple[str, Assumptions]:
    """The dtplan precision of the reference's bytes per parameter; bits checked against it."""
    bpp = ri.get("bytes_per_param", 16)
    precision = PRECISION_OF_BYTES[int(bpp)]
    bits = ri.get("bits_per_pseudo_grad", a.bits_per_value(precision))
    if bits != a.bits_per_value(precision):
        a = a.replace(**{f"bits_per_value_{precision}": float(bits)})
    return precision, a


def _h100_equivalents(config_name: str | None, node: dict) -> float:
    return _h100_equivalents_of(config_name, "h100_equiv" in node, node.get("h100_equiv"), node["pflops"])


@functools.lru_cache(maxsize=256)
def _h100_equivalents_of(config_name: str | None, has_h100_equiv: bool, h100_equiv, pflops) -> float:
    """`_h100_equivalents` of a node by the fields it reads, worked out once per process (the
    preset's file is read, parsed and checked on each `load_hardware`: about 0.1 ms a search case)."""
    preset = PRESET_OF_CONFIG.get(config_name or "")
    if preset is not None:
        try:
            from planner.schema.catalog import load_hardware
            return load_hardware(preset).h100_equivalents
        except (ImportError, KeyError):
            pass
    if has_h100_equiv:
        return h100_equiv
    return pflops * 1e15 / 990e12


def _setting(case: dict, params: float, active: float | None = None, h100_equivalents: float | None = None,
             **network) -> tuple[Setting, str]:
    """The case's Setting and dtplan precision; `h100_equivalents` given where the caller reads none of
    the node's H100 equivalents (`search._setting`: no search answer reads them, and working them out
    reads the hardware preset through the schema's catalog, 0.5-1.5 ms a process's first case of a
    preset), else worked out as the reference's outputs report them (`_h100_equivalents`)."""
    ri = case["resolved_inputs"]
    node = ri["node"]
    a = _assumptions(case, ri)
    precision, a = _precision(ri, a)
    consts = ri.get("module_constants", {})
    setting = Setting(
        params=params, active_params=params if active is None else active,
        moe_layers=ri.get("n_moe_layers", 0) if active is not None else 0, hidden_size=None,
        local_batch_tokens=consts.get("LOCAL_BATCH_tokens", 131072),
        peak_flops={precision: node["pflops"] * 1e15}, memory_bytes=node["vram_gb"] * 1e9,
        accelerators_per_node=node["gpu_count"], price_usd_per_accelerator=node["gpu_cost_usd"],
        h100_equivalents=(_h100_equivalents(case["kwargs"].get("config_name"), node) if h100_equivalents is None
                          else h100_equivalents),
        window_s=ri.get("time_seconds", 47_336_400.0), assumptions=a, **network)
    return setting, precision


def _wan(ri: dict) -> dict[str, float]:
    consts = ri.get("module_constants", {})
    return {"wan_up_bps": ri.get("bw_up_bps", consts.get("BW_UP_BPS", 100e6)),
            "wan_down_bps": ri.get("bw_down_bps", consts.get("BW_DOWN_BPS", 100e6)),
            "wan_rtt_s": ri.get("latency_s", consts.get("LATENCY_S", 0.1))}


def _one(out: dict[str, np.ndarray]) -> dict[str, Any]:
    return {k: (v.item() if isinstance(v, np.ndarray) and v.size == 1 else v) for k, v in out.items()}


def _score(setting: Setting, plan: PlanBatch) -> dict[str, Any]:
    return _one(score(setting, plan))


def _compute_bound_h(sync_s: float, step_s: float, floor_one: bool = True) -> int:
    """The reference's H: the smallest compute-bound interval ceil(t_sync / t_step)."""
    h = math.ceil(sync_s / step_s)
    return max(1, h) if floor_one else h


def _common_outputs(s: Setting, o: dict[str, Any], plan: PlanBatch) -> dict[str, Any]:
    return {
        "n_nodes": int(plan.nodes[0]), "total_gpus": o["total_gpus"], "h100_equiv_per_node": s.h100_equivalents,
        "pflops_per_node": s.peak_flops[plan.precision] / 1e15, "vram_gb": s.memory_bytes / 1e9,
        "params_b": s.params / 1e9, "t_comp": o["t_comp_s"], "alpha": o["alpha"], "eta": o["eta"],
        "eta_replica": o["eta_r"], "c_throughput": o["c_throughput"], "c_local": o["c_local"], "chi": o["chi"],
        "c_quality": o["c_quality"], "total_tokens_T": o["tokens"] / 1e12,
        "chinchilla_tokens_T": o["chinchilla_tokens"] / 1e12, "overtraining_ratio": o["overtraining_ratio"],
        "cost_usd": o["cost_usd"], "strict_threshold_multiple": o["threshold_multiple"],
        "compression": float(plan.compression[0]), "max_params_b": o["max_params_one_node"] / 1e9,
        "time_seconds": o["window_s"], "bw_duty_cycle": o["duty_cycle"], "comm_gb_per_sync": o["comm_gb_per_sync"],
        "outer_step_time_s": o["outer_time_s"], "compute_block_s": o["compute_block_s"],
        "compute_utilization": o["compute_utilization"], "compute_utilization_vs_sync": o["compute_utilization"],
        "n_outer_steps": o["outer_steps"], "global_tokens_per_s": o["tokens_per_s"],
        "wall_clock_days": o["window_s"] / 86400.0,
    }


def _expected(case: dict) -> dict[str, Any]:
    expected = dict(case["outputs"])
    for key, value in case.get("derived", {}).items():
        if key not in LABEL_KEYS:
            expected[key] = value
    return expected


# -- one handler per reference function -----------------------------------------------

def _flat(case: dict) -> tuple[dict, dict]:
    """compute_scenario / compute_generic_scenario: flat DiLoCo, H = h_override or compute-bound."""
    ri = case["resolved_inputs"]
    kw = case["kwargs"]
    params_b = ri.get("target_params_b") or kw.get("target_params_b")
    bpp = ri.get("bytes_per_param", 16)
    params = (params_b if params_b is not None else ri["node"]["vram_gb"] / bpp) * 1e9
    setting, precision = _setting(case, params, **_wan(ri))
    return _flat_outputs(case, setting, precision, ri["n_nodes"], ri["compression"], ri.get("h_override"))


def _flat_outputs(case, setting, precision, n, compression, h_override):
    probe = _score(setting, PlanBatch.of("flat", precision, nodes=n, inner_steps=1, compression=compression))
    h_min = 1 if n == 1 else _compute_bound_h(probe["t_sync_s"], probe["t_comp_s"], floor_one=False)
    h = h_override if h_override is not None else (1 if n == 1 else h_min)
    plan = PlanBatch.of("flat", precision, nodes=n, inner_steps=h, compression=compression)
    o = _score(setting, plan)
    got = _common_outputs(setting, o, plan)
    got.update({"t_sync_base": o["t_sync_base_s"], "f_straggler": o["f_sync"], "t_sync": o["t_sync_s"],
                "h_min": h_min, "h_used": h, "bw_up_mbps": setting.wan_up_bps / 1e6,
                "bw_down_mbps": setting.wan_down_bps / 1e6, "latency_ms": setting.wan_rtt_s * 1e3})
    return got, _expected(case)


def _hierarchical(case: dict) -> tuple[dict, dict]:
    """compute_hierarchical_scenario: H and R at their smallest compute-bound values; flat below 2 groups."""
    ri = case["resolved_inputs"]
    bpp = ri.get("bytes_per_param", 16)
    params_b = ri.get("target_params_b")
    params = (params_b if params_b is not None else ri["node"]["vram_gb"] / bpp) * 1e9
    regional = {"regional_bps": ri["regional_bw_bps"], "regional_rtt_s": ri["regional_latency_s"]}
    setting, precision = _setting(case, params, **_wan(ri), **regional)
    n, k, cr = ri["n_nodes"], ri["nodes_per_group"], ri["compression"]
    if n // k < 2:
        return _flat_outputs(case, setting, precision, n, cr, None)
    probe = _score(setting, PlanBatch.of("hierarchical", precision, nodes=n, group_size=k, compression=cr))
    h = _compute_bound_h(probe["t_regional_s"], probe["t_comp_s"])
    probe = _score(setting, PlanBatch.of("hierarchical", precision, nodes=n, group_size=k, compression=cr,
                                         inner_steps=h))
    r = _compute_bound_h(probe["t_sync_s"], probe["regional_cycle_s"])
    plan = PlanBatch.of("hierarchical", precision, nodes=n, group_size=k, compression=cr, inner_steps=h,
                        regional_rounds=r)
    o = _score(setting, plan)
    got = _common_outputs(setting, o, plan)
    got.update({"n_groups": o["groups"], "nodes_per_group": k, "t_regional_sync": o["t_regional_s"],
                "t_global_sync": o["t_sync_s"], "f_regional": o["f_regional"], "f_global": o["f_sync"],
                "h_inner": h, "h_regional": r, "h_eff": o["h_eff"], "t_regional_cycle_s": o["regional_cycle_s"]})
    return got, _expected(case)


def _pp_group(case: dict) -> tuple[dict, dict]:
    """compute_pp_diloco_scenario: S = ceil(P beta / V), G = N // S, H compute-bound."""
    ri = case["resolved_inputs"]
    pipeline = {"pipeline_bps": ri["pp_bw_bps"], "pipeline_rtt_s": ri["pp_latency_s"]}
    setting, precision = _setting(case, ri["target_params_b"] * 1e9, **_wan(ri), **pipeline)
    n, cr = ri["n_nodes"], ri["compression"]
    common = {"micro_batches": ri["micro_batches"], "activation_compression": ri["pp_compression"]}
    stages = int(_score(setting, PlanBatch.of("pp_group", precision, nodes=n, compression=cr))["min_stages"])
    probe = _score(setting, PlanBatch.of("pp_group", precision, nodes=n, stages=stages, compression=cr, **common))
    if stages <= 1 or probe["groups"] < 2:   # the reference returns None: no PP-group plan exists
        return {"return": None}, {"return": case["outputs"]}
    h = _compute_bound_h(probe["t_sync_s"], probe["t_step_s"])
    plan = PlanBatch.of("pp_group", precision, nodes=n, stages=stages, compression=cr, inner_steps=h, **common)
    o = _score(setting, plan)
    got = _common_outputs(setting, o, plan)
    got.update({"pp_stages": stages, "n_groups": o["groups"], "pp_step_time": o["t_step_s"],
                "bubble_frac": o["bubble_fraction"], "t_sync": o["t_sync_s"], "f_straggler": o["f_sync"],
                "h_min": h, "eta_h_c_r": o["eta_h"] * o["eta_c"], "eta_activation": o["eta_a"],
                "pp_compression": ri["pp_compression"]})
    return got, _expected(case)


def _moe(case: dict) -> tuple[dict, dict]:
    """compute_moe_ep_scenario: flat DiLoCo with global expert parallelism, H = ceil(t_sync / t_step)."""
    ri = case["resolved_inputs"]
    setting, precision = _setting(case, ri["total_params_b"] * 1e9, ri["active_params_b"] * 1e9, **_wan(ri))
    n, cr = ri["n_nodes"], ri["compression"]
    probe = _score(setting, PlanBatch.of("flat", precision, nodes=n, compression=cr, expert_parallel="global"))
    h = 1 if n <= 1 else _compute_bound_h(probe["t_sync_s"], probe["t_step_s"], floor_one=False)
    plan = PlanBatch.of("flat", precision, nodes=n, inner_steps=h, compression=cr, expert_parallel="global")
    o = _score(setting, plan)
    got = _common_outputs(setting, o, plan)
    got.update({"total_params_b": setting.params / 1e9, "active_params_b": setting.active_params / 1e9,
                "params_b": setting.active_params / 1e9, "mem_node_gb": o["state_bytes_per_node"] / 1e9,
                "fits_on_node": not bool(o["violates:memory-cap"]), "t_ep": o["t_ep_s"],
                "ep_overhead_pct": o["t_ep_s"] / o["t_step_s"] * 100.0, "t_sync": o["t_sync_s"],
                "f_straggler": o["f_sync"], "h_min": h})
    return got, _expected(case)


def _simulate_diloco(case: dict) -> tuple[dict, dict]:
    """simulator.py: flat DiLoCo with no latency, no straggler, no quality loss; time to train D tokens."""
    cfg = case["kwargs"]["config"]
    model, hw, algo, training = cfg["model"], cfg["hardware"], cfg["algorithm"], cfg["training"]
    a = profile("simulator").replace(mfu=hw.get("mfu", 0.4))
    precision = {2: "fp16", 1: "fp8", 0.5: "fp4"}[model.get("precision_bytes", 2)]
    params = float(model["parameters"])
    setting = Setting(
        params=params, active_params=params, moe_layers=0, hidden_size=None,
        local_batch_tokens=training["local_batch_tokens"], peak_flops={precision: float(hw["flop_per_node"])},
        memory_bytes=float(hw["memory_per_node"]), accelerators_per_node=1, price_usd_per_accelerator=0.0,
        h100_equivalents=hw["flop_per_node"] / 990e12, wan_up_bps=hw["bandwidth_bps"],
        wan_down_bps=hw["bandwidth_bps"], wan_rtt_s=0.0, target_flop=6.0 * params * training["total_tokens"],
        assumptions=a)
    h = algo["inner_steps"]
    plan = PlanBatch.of("flat", precision, nodes=hw["num_nodes"], inner_steps=h,
                        compression=algo.get("compression_ratio", 1.0), streaming=algo.get("streaming", False))
    o = _score(setting, plan)
    days = o["time_to_target_s"] / 86400.0
    got = {"compute_time_per_inner_step": o["t_comp_s"], "comm_time_per_outer_step": o["t_sync_s"],
           "total_time_days": days, "feasibility": "Feasible" if days < 365 else "Impractical (>1 year)",
           "bottleneck": "Communication" if o["t_sync_s"] > h * o["t_comp_s"] else "Compute"}
    return got, dict(case["outputs"])


def _unit(fn: Callable[[dict, Assumptions], float]) -> Callable[[dict], tuple[dict, dict]]:
    def handler(case: dict) -> tuple[dict, dict]:
        a = profile(PROFILES[case["profile"]])
        return {"return": float(fn(case["kwargs"], a))}, dict(case["outputs"])
    return handler


def _efficiency(kw: dict, a: Assumptions) -> float:
    p = kw["params_billion"] * 1e9
    return quality.eta_sync_interval(kw["h"], p, a) * quality.compression_quality(kw.get("compression_ratio", 1), a)


HANDLERS: dict[str, Callable[[dict], tuple[dict, dict]]] = {
    "compute_scenario": _flat,
    "compute_generic_scenario": _flat,
    "compute_hierarchical_scenario": _hierarchical,
    "compute_pp_diloco_scenario": _pp_group,
    "compute_moe_ep_scenario": _moe,
    "simulate_diloco": _simulate_diloco,
    "straggler_factor": _unit(lambda kw, a: straggler.straggler_factor(kw["n"], a.replace(straggler=kw["mode"]))),
    "alpha": _unit(lambda kw, a: quality.alpha(kw["params_billion"] * 1e9, a)),
    "efficiency": _unit(_efficiency),
    "compression_quality": _unit(lambda kw, a: quality.compression_quality(
        kw["compression_ratio"], a.replace(scenario=kw.get("scenario", a.scenario),
                                           error_feedback=kw.get("error_feedback", a.error_feedback)))),
    "activation_compression_quality": _unit(lambda kw, a: quality.activation_quality(
        kw["pp_compression"], kw["pp_stages"], a.replace(scenario=kw.get("scenario", a.scenario)))),
    "replica_loss_multiplier": _unit(lambda kw, a: quality.replica_loss_multiplier(
        kw["n_replicas"], kw["params_billion"] * 1e9, kw.get("h", a.replica_h_ref), a)),
    "chinchilla_loss": _unit(lambda kw, a: chinchilla.chinchilla_loss(kw["params"], kw["tokens"], a)),
    "chinchilla_efficiency": _unit(lambda kw, a: chinchilla.chi(
        kw["params"], kw["tokens"], kw["c_flop"], a, kw.get("loss_multiplier", 1.0))),
}
