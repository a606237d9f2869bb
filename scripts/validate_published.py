"""Validate dtplan against published training runs (issue 5).

For every run in instances/published/ (<name>.json, <name>.plan.json, <name>.reported.toml):
evaluate the run's own plan, derive the quantities the run reported, and print predicted vs
reported with the relative error (predicted / reported - 1). Then ask the planner (`solve`,
min_time, same hardware, network and target) what it would have chosen, and report the
predicted gain in time to target (both scored by dtplan's model, quality factors included).

Goodput: each instance gives `fleet.goodput` (the fraction of wall-clock spent training) and
states its basis (REPORTED or ASSUMED) after "GOODPUT:" in its description. Every run is
evaluated twice, as written and with fleet.goodput = 1. Quantities measured while training
(utilisation, tokens/s, MFU, TFLOP/s) use the rate while training, the same in both. Time
quantities say in the reported file whether the source meant wall-clock (`clock = "wall"`) or
time at the training rate (`clock = "training"`); wall-clock ones are shown from both
evaluations (without and with goodput), using the evaluator's wall-clock token rate (its window
view: tokens in the run-duration limit / that limit). Nothing in planner/cost is changed or fitted.

Two assumption profiles side by side (issue 14): `reference`, the instance as written, and
`dtplan` (docs/physics.md), the instance with its profile set to dtplan and the run's own
inputs from the `[dtplan]` table of its reported file (`drop`: instance assumptions to remove,
`constants`: how the run was done, `headline`: the quantity that must be within 15% (the throughput or
MFU the run measured), `headline_reason`: why that quantity where the run reports others, `missing_summary`:
where the headline or another row is not within 15%, the missing term and its size in one sentence,
`missing`: the evidence behind it,
`sensitivity`: other values of an assumed input,
`fitted`: set when a constant the profile uses was fitted on this run, `wan_prior_from`: a run whose
bandwidth derived under dtplan this run takes as its prior, `mfu_basis`: the model FLOPs per token the
run's reported MFU counts, with its source, planner/cost/model_flops.py; `[[dtplan_variants]]`: further
figures of the same source for other ways of running the setting, each a plan or constants change and a
reported bandwidth for 90%, predicted under dtplan in a table of their own). An input the instance derived from a
reported figure under the reference's formulas is derived again under dtplan's (`[calibrate]`:
`quantity` "sync_time_s", the WAN bandwidth from a sync time). The planner's own choice is solved under
the reference profile only.

Usage:  .venv/bin/python scripts/validate_published.py            # print and write docs/validation.md
        .venv/bin/python scripts/validate_published.py --check    # exit 1 if docs/validation.md is stale
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tomllib
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from planner.schema.instance import load_instance, parse_instance  # noqa: E402
from planner.schema.limits import MAX_MBPS  # noqa: E402
from planner.evaluate import check_plan_against  # noqa: E402
from planner.schema.plan import load_plan  # noqa: E402
from planner.evaluate import evaluate  # noqa: E402
from planner.cost import stage_shards  # noqa: E402
from planner.cost.model_flops import model_flops_per_token  # noqa: E402
from planner.solve import solve  # noqa: E402
from planner.cost.score import CONSTRAINTS, score  # noqa: E402
from planner.cost.setting import PlanBatch  # noqa: E402
from planner.setting import setting_from_instance  # noqa: E402

PUBLISHED = ROOT / "instances" / "published"
DOC = ROOT / "docs" / "validation.md"
DAY = 86400.0
SOLVE_TIME_LIMIT_S = 20.0

# quantity -> (label, how to read it off an evaluation)
QUANTITIES = {
    "compute_utilization": "compute utilisation",
    "outer_time_s": "time per outer step (s)",
    "tokens_per_s": "tokens/s",
    "hardware_mfu": "MFU (model FLOP/s over dense bf16/fp16 peak)",
    "tflops_per_gpu": "model TFLOP/s per accelerator",
    "run_days": "days for the run's tokens",
    "days_per_trillion_tokens": "days per 10^12 tokens",
    "gpu_hours_per_trillion_tokens": "accelerator-hours per 10^12 tokens",
    "bandwidth_for_90pct_gbps": "WAN bandwidth for 90% compute utilisation (Gb/s)",
    "data_parallel_bandwidth_for_90pct_gbps": "WAN bandwidth for 90% compute utilisation, as data parallelism (Gb/s)",
}
TIME_QUANTITIES = ("run_days", "days_per_trillion_tokens", "gpu_hours_per_trillion_tokens")   # need `clock`
CLOCKS = {"wall": "wall-clock", "training": "at the training rate"}
SEARCHED = {"bandwidth_for_90pct_gbps": 0.90}      # quantity -> utilisation whose bandwidth is searched


def bandwidth_for_utilisation(raw: dict, plan, target: float) -> float:
    """The symmetric WAN bandwidth (Gb/s) at which the plan's compute utilisation reaches
    `target`: a bisection in log space over the instance's wan.up_mbps = down_mbps, each
    point one `evaluate` (utilisation does not fall as bandwidth rises)."""
    def utilisation(mbps: float) -> float:
        wan = {**raw.get("network", {}).get("wan", {}), "up_mbps": mbps, "down_mbps": mbps}
        inst = parse_instance({**raw, "network": {**raw.get("network", {}), "wan": wan}})
        return evaluate(inst, plan).values["compute_utilization"]
    lo, hi = math.log(1e-6), math.log(MAX_MBPS)       # the schema's largest bandwidth
    if utilisation(math.exp(hi)) < target:
        return math.inf
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if utilisation(math.exp(mid)) < target else (lo, mid)
    return math.exp(hi) / 1e3


def bandwidth_range_for(raw: dict, plan, spec: dict | None) -> list[tuple[float, float]]:
    """[(utilisation, WAN Mb/s per node at which the plan reaches it)] for the utilisations a
    reported file lists under `[bandwidth_range] utilisation`: how far a prediction of compute
    utilisation rests on an assumed bandwidth."""
    if not spec:
        return []
    return [(float(u), bandwidth_for_utilisation(raw, plan, float(u)) * 1e3) for u in spec["utilisation"]]


def runs() -> list[str]:
    """Names of the published runs: every <name>.plan.json with its instance and reported file."""
    return sorted(p.name[: -len(".plan.json")] for p in PUBLISHED.glob("*.plan.json"))


def load_run(name: str, profile: str = "reference", constants: dict | None = None):
    """(instance, plan, reported, raw instance) of a run, under the `reference` profile as its
    instance is written, or under `dtplan` (`dtplan_raw`)."""
    reported = tomllib.loads((PUBLISHED / f"{name}.reported.toml").read_text())
    raw = json.loads((PUBLISHED / f"{name}.json").read_text())
    plan = load_plan(PUBLISHED / f"{name}.plan.json")
    if profile == "dtplan":
        spec = reported.get("dtplan", {})
        raw = dtplan_raw(raw, {**spec, "constants": {**spec.get("constants", {}), **(constants or {})}})
        if "wan_prior_from" in spec:
            raw = with_wan_prior(raw, spec["wan_prior_from"])
        if "calibrate" in reported:
            raw = calibrated(raw, plan, reported["calibrate"])
        instance = parse_instance(raw)
    else:
        instance = load_instance(PUBLISHED / f"{name}.json")
    problems = check_plan_against(instance, plan)
    if problems:
        raise ValueError(f"{name}: plan does not fit its instance: {problems}")
    return instance, plan, reported, raw


def dtplan_raw(raw: dict, spec: dict) -> dict:
    """The instance under the `dtplan` profile: its assumptions with the profile set to dtplan,
    the keys listed in the reported file's `[dtplan] drop` removed (e.g. an MFU derived from the
    run's own figures, so that the table's is used) and `[dtplan] constants` added (how the run
    was done: its pipeline schedule, compressor, failure inputs)."""
    a = {k: v for k, v in raw.get("assumptions", {}).items() if k not in spec.get("drop", [])}
    a["profile"] = "dtplan"
    a["constants"] = {**a.get("constants", {}), **spec.get("constants", {})}
    return {**raw, "assumptions": a}


def calibrated(raw: dict, plan, spec: dict) -> dict:
    """The instance with an unreported input derived again under its own profile from the
    reported figure the reported file's `[calibrate]` names (`quantity`, `value`). The one kind
    in use is "sync_time_s" (`calibrated_sync`): the WAN bandwidth from a reported sync time."""
    if spec.get("quantity") != "sync_time_s":
        raise ValueError(f"[calibrate] quantity must be 'sync_time_s', got {spec.get('quantity')!r}")
    return calibrated_sync(raw, plan, float(spec["value"]))


def with_wan_prior(raw: dict, source_run: str) -> dict:
    """The instance with the WAN bandwidth (up = down) another run derived under dtplan (`[dtplan]
    wan_prior_from`): a run whose bandwidth is a prior taken from another run's derived figure
    uses that run's figure under the same profile's sync formula."""
    mbps = load_run(source_run, "dtplan")[3]["network"]["wan"]["up_mbps"]
    wan = {**raw["network"]["wan"], "up_mbps": mbps, "down_mbps": mbps}
    return {**raw, "network": {**raw["network"], "wan": wan}}


def calibrated_sync(raw: dict, plan, target_s: float) -> dict:
    """The instance with its unreported WAN bandwidth (up = down) derived again under its own
    profile so that the plan's modelled sync t_sync_s equals a reported sync time (`[calibrate]`
    quantity = "sync_time_s"). The instance as written derived it under the reference's sync
    (v / up + v / down + lat); dtplan's ring over concurrent links moves 2 (G - 1) / G v each
    way at once, so the same bandwidth would give it a different sync than the one reported.
    A bisection in log space over the bandwidth (t_sync falls as it rises)."""
    def with_mbps(mbps: float) -> dict:
        wan = {**raw["network"]["wan"], "up_mbps": mbps, "down_mbps": mbps}
        return {**raw, "network": {**raw["network"], "wan": wan}}

    def sync_s(mbps: float) -> float:
        return float(evaluate(parse_instance(with_mbps(mbps)), plan).values["t_sync_s"])
    lo, hi = math.log(1e-3), math.log(MAX_MBPS)
    if not sync_s(math.exp(hi)) <= target_s <= sync_s(math.exp(lo)):
        raise ValueError(f"no WAN bandwidth gives a sync of {target_s} s")
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if sync_s(math.exp(mid)) > target_s else (lo, mid)
    return with_mbps(round(math.exp(hi), 4))


def mfu_flops_per_token(instance, basis: dict | None) -> float:
    """Model FLOPs per token of the MFU rows: dtplan's 6 P_act, or the run's own basis where its
    `[dtplan] mfu_basis` table gives one (`flops`: a basis of planner/cost/model_flops.py, `params`:
    the P the run's formula counts, `layers`, `attention_width`, `seq_len`, `source`): a reported MFU
    that counts attention is compared on that count, not on 6 P."""
    if not basis:
        return 6.0 * instance.model.active_params
    missing = [key for key in ("flops", "params", "source") if key not in basis]
    if missing:
        raise ValueError(f"[dtplan.mfu_basis] {', '.join(missing)}: missing (each basis names its FLOP count, "
                         "the parameters it counts and its source)")
    return model_flops_per_token(float(basis["params"]), basis["flops"], basis.get("layers"),
                                 basis.get("attention_width"), basis.get("seq_len"))


def predicted_quantities(instance, plan, evaluation, flops_per_token: float | None = None) -> dict[str, float]:
    """The reported kinds of quantity, derived from one evaluation (no new physics): rates
    while training, and time quantities at the training rate. MFU and model TFLOP/s count
    `flops_per_token` (default 6 P_act, `mfu_flops_per_token`)."""
    v = evaluation.values
    hw = instance.hardware
    tps = v["tokens_per_s"]
    model_flops = (flops_per_token or 6.0 * instance.model.active_params) * tps
    out = {
        "compute_utilization": v["compute_utilization"],
        "outer_time_s": v["outer_time_s"],
        "tokens_per_s": tps,
        "hardware_mfu": model_flops / (plan.nodes * hw.node_peak_flops("fp16")),
        "tflops_per_gpu": model_flops / (plan.nodes * hw.accelerators_per_node) / 1e12,
        **time_quantities(instance, plan, tps),
        # dtplan's own figures, shown for reference (not compared):
        "planner_global_mfu": v["global_mfu"],
        "eta": v["eta"],
        "goodput": v["goodput"],
        "training_time_days": v["training_time_s"] / DAY,
        "time_to_target_days": v["time_to_target_s"] / DAY,
    }
    return out


def time_quantities(instance, plan, tokens_per_s: float) -> dict[str, float]:
    """Days and accelerator-hours at a token rate (raw compute time: no quality factor)."""
    gpus = plan.nodes * instance.hardware.accelerators_per_node
    out = {"days_per_trillion_tokens": 1e12 / tokens_per_s / DAY,
           "gpu_hours_per_trillion_tokens": gpus * 1e12 / tokens_per_s / 3600.0}
    if instance.training.tokens is not None:
        out["run_days"] = instance.training.tokens / tokens_per_s / DAY
    return out


def wall_clock_tokens_per_s(evaluation) -> float:
    """Tokens per second of wall-clock, from the evaluator's window view: the tokens it trains
    within the run-duration limit over that limit (= goodput x tokens_per_s)."""
    return evaluation.values["tokens"] / evaluation.values["window_s"]


def at_goodput_one(raw: dict):
    """The instance as written but with fleet.goodput = 1 (no downtime) and, under the dtplan
    profile, no failure model (which would replace the goodput)."""
    a = raw.get("assumptions", {})
    a = {**a, "constants": {**a.get("constants", {}), "failures": False}} if a.get("profile") == "dtplan" else a
    return parse_instance({**raw, "fleet": {**raw["fleet"], "goodput": 1.0}, "assumptions": a})


def goodput_basis(description: str) -> str:
    """What the instance description says after 'GOODPUT:' (its basis, REPORTED or ASSUMED)."""
    return description.split("GOODPUT:", 1)[1].strip() if "GOODPUT:" in description else ""


def data_parallel_plan(plan):
    """The same nodes and precision as plain data parallelism: H = 1, no compression, blocking."""
    return plan.model_copy(update={"inner_steps": 1, "compression": 1.0, "streaming": False})


def rel_error(predicted: float, reported: float) -> float:
    return predicted / reported - 1.0


def validate_run(name: str, with_solve: bool = True, profile: str = "reference",
                 constants: dict | None = None) -> dict:
    """Predicted vs reported for one run under an assumption profile (`reference` as the
    instance is written, or `dtplan` with its `[dtplan]` inputs and `constants` on top), and
    (with_solve) the planner's own choice."""
    instance, plan, reported, raw = load_run(name, profile, constants)
    evaluation = evaluate(instance, plan)
    basis = reported.get("dtplan", {}).get("mfu_basis") if profile == "dtplan" else None
    pred = predicted_quantities(instance, plan, evaluation, mfu_flops_per_token(instance, basis))
    for key, target in SEARCHED.items():
        if key in reported.get("reported", {}):
            pred[key] = bandwidth_for_utilisation(raw, plan, target)
            pred["data_parallel_" + key] = bandwidth_for_utilisation(raw, data_parallel_plan(plan), target)
    bandwidth_range = bandwidth_range_for(raw, plan, reported.get("bandwidth_range"))
    goodput = evaluation.setting.goodput   # fleet.goodput, or the failure model's under dtplan
    wall = time_quantities(instance, plan, wall_clock_tokens_per_s(evaluation))                     # as written
    wall_g1 = time_quantities(instance, plan, wall_clock_tokens_per_s(evaluate(at_goodput_one(raw), plan)))
    rows = []
    for key, rep in reported.get("reported", {}).items():
        if key not in pred:
            raise KeyError(f"{name}: reported quantity {key!r} has no prediction; known: {', '.join(QUANTITIES)}")
        clock = rep.get("clock")
        if (key in TIME_QUANTITIES) != (clock in CLOCKS):
            raise ValueError(f"{name}: {key!r} needs clock = 'wall' or 'training' exactly when it is one of "
                             f"{', '.join(TIME_QUANTITIES)} (got {clock!r})")
        label = QUANTITIES.get(key, key) + (f" ({CLOCKS[clock]})" if clock else "")
        row = {"quantity": key, "label": label, "clock": clock, "reported": float(rep["value"]),
               "low": rep.get("low"), "high": rep.get("high"), "kind": rep.get("kind", ""),
               "source": rep.get("source", ""), "predicted": wall_g1[key] if clock == "wall" else pred[key]}
        row["error"] = rel_error(row["predicted"], row["reported"])
        if row["low"] is not None and row["high"] is not None:
            row["in_range"] = row["low"] <= row["predicted"] <= row["high"]
        if clock == "wall":
            row["predicted_with_goodput"] = wall[key]
            row["error_with_goodput"] = rel_error(row["predicted_with_goodput"], row["reported"])
            row["implied_goodput"] = row["predicted"] / row["reported"]
        rows.append(row)
    result = {"name": name, "profile": profile, "dtplan": reported.get("dtplan", {}),
              "run": reported.get("run", name), "source": reported.get("source", ""),
              "notes": reported.get("notes", ""), "reading": reported.get("reading", ""), "goodput": goodput,
              "goodput_basis": goodput_basis(instance.description), "rows": rows, "predicted": pred,
              "plan": plan.model_dump(exclude={"description"}), "bandwidth_range": bandwidth_range,
              "wan_mbps": instance.network.wan.up_mbps, "violations": evaluation.violations,
              "warnings": evaluation.warnings}
    if profile == "dtplan":
        result["variants"] = [variant_row(raw, plan, v) for v in reported.get("dtplan_variants", [])]
    if with_solve and profile == "reference":
        result["planner"] = planner_choice(instance, plan, evaluation)
    return result


def variant_row(raw: dict, plan, variant: dict) -> dict:
    """A further figure of the same source, another way of running the same setting (`[[dtplan_variants]]`
    of a reported file: `method`, `plan` fields and `constants` that differ from the run's, the reported
    `value` of the WAN bandwidth for 90% compute utilisation, `source`), predicted under dtplan by the
    same bisection as the run's own row (`bandwidth_for_utilisation`)."""
    a = raw.get("assumptions", {})
    raw_v = {**raw, "assumptions": {**a, "constants": {**a.get("constants", {}), **variant.get("constants", {})}}}
    plan_v = plan.model_copy(update=variant.get("plan", {}))
    check_plan_against(parse_instance(raw_v), plan_v)
    predicted = bandwidth_for_utilisation(raw_v, plan_v, SEARCHED["bandwidth_for_90pct_gbps"])
    reported = float(variant["value"])
    return {"method": variant["method"], "reported": reported, "predicted": predicted,
            "error": rel_error(predicted, reported), "source": variant.get("source", ""),
            "plan": _plan_text(plan_v.model_dump(exclude={"description"}))}


def _solve(instance, raw: dict | None = None) -> dict:
    if raw is not None:
        instance = parse_instance(raw)
    r = solve(instance, "min_time", time_limit_s=SOLVE_TIME_LIMIT_S)
    if r.plan is None:
        return {"status": r.status, "plan": None, "infeasibility": r.infeasibility}
    v = r.evaluation.values
    return {"status": r.status, "plan": r.plan.model_dump(exclude={"description"}),
            "time_to_target_days": v["time_to_target_s"] / DAY, "tokens_per_s": v["tokens_per_s"],
            "eta": v["eta"], "compute_utilization": v["compute_utilization"],
            **({"pipeline_chunks": v["pipeline_chunks"]} if "pipeline_chunks" in v else {}),
            **({"tensor_parallel": v["tensor_parallel"]} if "tensor_parallel" in v else {})}


def planner_choice(instance, plan, evaluation) -> dict:
    """min_time on the run's hardware, network and target: any precision the hardware has,
    and restricted to the run's precision."""
    raw = json.loads((PUBLISHED / f"{instance.name}.json").read_text())
    base = evaluation.values["time_to_target_s"] / DAY
    out = {"run_time_to_target_days": base, "run_tokens_per_s": evaluation.values["tokens_per_s"]}
    out["any_precision"] = _solve(instance)
    same = {**raw, "search": {**raw.get("search", {}), "precisions": [plan.precision]}}
    out["run_precision"] = _solve(None, same)
    for key in ("any_precision", "run_precision"):
        c = out[key]
        if c.get("plan"):
            c["speedup"] = base / c["time_to_target_days"]
            c["raw_throughput_gain"] = c["tokens_per_s"] / out["run_tokens_per_s"]
    return out


LAYOUT_SCHEDULES = (2, 3, 4, 5)     # 1F1B, interleaved, zero-bubble, DualPipe: the schedules dtplan's planner decides
LAYOUT_SHARDS = (1, 2, 4, 8, 16, 32, 64, 128, 256)   # ZeRO-3 shards of a flat replica (space.ZERO_SHARD_SIZES and none)


def synchronous_search(raw: dict, plan) -> dict:
    """The run's freedom: its hardware, nodes, network and batch as the instance has them, at the run's
    precision, trained as the run was (a sync every step, no compression, no activation compression,
    no streaming); the mode, stages, micro-batches, schedule, chunk count and ZeRO shards are free."""
    return {**raw.get("search", {}), "precisions": [plan.precision], "max_inner_steps": 1, "compression": [1],
            "activation_compression": [1], "streaming": [False], "modes": ["flat", "pp_group"]}


def layouts_at(instance, plan) -> list[PlanBatch]:
    """Every layout of the run's nodes N in that freedom: flat replicas sharded over Z nodes (Z <= N; dense
    models, as the planner's ZeRO-3 decision), and
    pipelines of S = 2..64 stages (at least two groups, and at least the K groups a run's `stage_state_shards`
    shards each stage's state over and the E servers its `stage_expert_parallel` spreads a stage's experts over)
    with M = 1..64 micro-batches under each schedule."""
    n = plan.nodes
    shards = [z for z in LAYOUT_SHARDS if z <= n and (z == 1 or not instance.model.is_moe)]   # ZeRO-3: dense only
    flat = PlanBatch.of("flat", plan.precision, nodes=n, streaming=False, zero_shards=np.array(shards))
    setting = setting_from_instance(instance)     # G >= max(K, E) (planner/cost/stage_shards.py)
    shards = stage_shards.min_groups(setting.assumptions, setting.accelerators_per_node, setting.is_moe)
    stages, micro, schedule = np.meshgrid(np.arange(2, min(64, int(n // max(2, shards))) + 1), np.arange(1, 65),
                                          LAYOUT_SCHEDULES)
    pipes = PlanBatch.of("pp_group", plan.precision, nodes=n, streaming=False, stages=stages.ravel(),
                         micro_batches=micro.ravel(), activation_compression=1.0, schedule=schedule.ravel())
    ep = [PlanBatch.of("flat", plan.precision, nodes=n, streaming=False, expert_parallel="global")] \
        if instance.model.is_moe else []         # a MoE model's experts spread over the nodes (the planner's scope)
    return [flat, *ep, pipes] if stages.size else [flat, *ep]


def layout_rank(name: str) -> dict | None:
    """Under dtplan with the run's inputs, for a run trained synchronously (H = 1, no compression): the
    planner's plan with the run's freedom (`synchronous_search`), and the rank of the run's own plan
    among every feasible layout of its nodes (`layouts_at`) by time to target (1 = the fastest)."""
    instance, plan, _, raw = load_run(name, "dtplan")
    if plan.inner_steps != 1 or plan.compression != 1 or plan.mode not in ("flat", "pp_group"):
        return None
    run_days = evaluate(instance, plan).values["time_to_target_s"] / DAY
    a = raw.get("assumptions", {})
    free = {**raw, "search": synchronous_search(raw, plan),      # a sync every step is data parallelism, not the
            "assumptions": {**a, "constants": {**a.get("constants", {}), "evidence_envelope": False}}}  # DiLoCo fit's
    out = {"run_days": run_days, **_ranked(instance, plan, free, setting_from_instance(instance), run_days)}
    dry_raw = _with_constants(raw, NO_ACTIVATIONS)      # T free alone: the node model without its activations
    dry = parse_instance(dry_raw)
    out["tp_free"] = _ranked(dry, plan, _with_constants(_tp_free(free), NO_ACTIVATIONS),
                             setting_from_instance(parse_instance(_tp_free(dry_raw))),
                             evaluate(dry, plan).values["time_to_target_s"] / DAY)
    own = parse_instance(_with_constants(raw, ACTIVATIONS))
    out["tp_memory"] = _ranked(own, plan, _with_constants(_tp_free(free), ACTIVATIONS),
                               setting_from_instance(parse_instance(_with_constants(_tp_free(raw), ACTIVATIONS))),
                               evaluate(own, plan).values["time_to_target_s"] / DAY)
    return out


ACTIVATIONS = {"activation_memory": True, "activation_recompute": "fit"}   # memory per accelerator (docs/physics.md 2b)
NO_ACTIVATIONS = {"activation_memory": False}   # the node's state alone, whatever the profile's default


def _with_constants(raw: dict, constants: dict) -> dict:
    """The instance with `constants` added to its assumptions' constants."""
    a = raw.get("assumptions", {})
    return {**raw, "assumptions": {**a, "constants": {**a.get("constants", {}), **constants}}}


def _tp_free(raw: dict) -> dict:
    """The instance under dtplan's node model with the tensor-parallel degree the planner's, per plan
    (`search_tensor_parallel`, planner/cost/tensor_parallel.py): the run's T is one of the candidates."""
    return _with_constants(raw, {"search_tensor_parallel": True, "tensor_parallel": 0.0})


def _ranked(instance, plan, free: dict, setting, run_days: float) -> dict:
    """The planner's plan for the instance `free` (the run's freedom) and the rank of the run's own time
    among every feasible layout of its nodes scored on `setting`."""
    chosen = _solve(None, free)
    for key in ("pipeline_chunks", "tensor_parallel"):      # the planner's v and T (values.*)
        if chosen.get("plan") and key in chosen:
            chosen["plan"][key] = chosen[key]
    times = []
    for batch in layouts_at(instance, plan):
        out = score(setting, batch)
        ok = ~np.any([out[f"violates:{c}"] for c in CONSTRAINTS], axis=0)
        times.append(out["time_to_target_s"][ok & np.isfinite(out["time_to_target_s"])] / DAY)
    times = np.concatenate(times)
    faster = int(np.sum(times < run_days * (1.0 - 1e-9)))
    return {"chosen": chosen, "layouts": int(times.size), "faster": faster, "rank": 1 + faster,
            "best_layout_days": float(times.min()) if times.size else None, "run_days": run_days}


# -- rendering ------------------------------------------------------------------------


def _num(x: float) -> str:
    if x is None:
        return "-"
    ax = abs(x)
    if ax >= 1e5:
        return f"{x:,.0f}"
    if ax >= 100:
        return f"{x:,.1f}"
    if ax >= 1:
        return f"{x:.2f}"
    return f"{x:.3f}"


def _days(x: float) -> str:
    """Days with one decimal, or three significant digits below 10 days (a 1B run takes hours)."""
    return f"{x:,.1f}" if x >= 10 else f"{x:.3g}"


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x * 100:+.1f}%"


def _plan_text(p: dict) -> str:
    parts = [p["mode"], f"N={p['nodes']}", p["precision"], f"H={p['inner_steps']}", f"Cr={p['compression']:g}",
             "streaming" if p["streaming"] else "blocking"]
    if p["mode"] in ("pp_group", "pipeline_wan"):
        parts += [f"S={p['stages']}", f"M={p['micro_batches']}", f"Ca={p['activation_compression']:g}"]
    if p.get("pipeline_schedule"):
        parts.append(p["pipeline_schedule"] + (f" v={p['pipeline_chunks']:g}" if p.get("pipeline_chunks", 1) > 1 else ""))
    if (p.get("zero_shards") or 1) > 1:
        parts.append(f"ZeRO-3 Z={p['zero_shards']}")
    if p.get("expert_parallel"):
        parts.append(f"EP={p['expert_parallel']}")
    if p.get("tensor_parallel"):
        parts.append(f"T={p['tensor_parallel']:g}")
    return ", ".join(parts)


HEADER = """# Validation against published training runs

<!-- GENERATED by scripts/validate_published.py from instances/published/: do not edit by hand.
     Regenerate: .venv/bin/python scripts/validate_published.py -->

**This page is generated** by `scripts/validate_published.py` from the instances, plans and reported
outcomes in `instances/published/` (sources: `../shared/data/published_runs.md`). Each run is
evaluated with its own plan; the error is predicted / reported - 1. Nothing is fitted to the
reported outcome except where a row's instance says so (INTELLECT-1's bandwidth is derived from its
reported sync time, under each profile with that profile's own sync formula, and under reference its MFU
from its reported compute time: see its notes). OpenDiLoCo's
bandwidth is the one derived for INTELLECT-1 under the same profile, used as a prior, not fitted to OpenDiLoCo. Every instance's `description` lists the inputs
that are assumed rather than reported.

How quantities are derived from an evaluation (no new physics): tokens/s = dtplan's `tokens_per_s`;
MFU = model FLOPs per token x tokens/s / (accelerators x dense bf16/fp16 peak), i.e. hardware utilisation,
not dtplan's `global_mfu` (which also multiplies by the quality factor eta and is listed separately). The
model FLOPs per token are 6 P_act in the reference column; in the dtplan column they are the run's own
count where its `[dtplan] mfu_basis` names one with its source (INTELLECT-1 and PaLM count attention,
6 P + 12 L H Q T: planner/cost/model_flops.py), so that a difference of counting is not read as one of time;
time quantities = the run's tokens (or 10^12) / a token rate (raw compute time, no quality factor);
accelerator-hours = accelerators x time. Each time quantity is marked as the source meant it: at the
training rate (tokens/s while training) or wall-clock. Goodput, the fraction of wall-clock spent
training, is an input of each instance (`fleet.goodput`, its basis stated as REPORTED or ASSUMED):
every run is evaluated as written and with fleet.goodput = 1, and a wall-clock quantity shows both,
"predicted" at goodput 1 and "with goodput" as written (the evaluator's wall-clock token rate,
goodput x tokens/s). Rates while training do not depend on goodput; days to target below are
wall-clock at the instance's goodput. Under the `dtplan` profile a run may replace its goodput by
the failure model's (docs/physics.md, section 7); its "with goodput" column then uses that.
"""


WITHIN = 0.15     # the acceptance: every published run's headline quantity within 15% under dtplan


def render(results: list[dict], skipped: list[tuple[str, str]], dtplan: list[dict] | None = None) -> str:
    dt = {(r["name"], row["quantity"]): row for r in (dtplan or []) for row in r["rows"]}
    lines = [HEADER, "## Predicted vs reported", "",
             "Both assumption profiles side by side: `reference` (the published calculator's physics, the instance "
             "as written) and `dtplan` (the terms of docs/physics.md; what each run sets is listed under "
             "\"The dtplan profile\" below).", "",
             "| run | quantity | reported | kind | reference | error | with goodput | error with goodput "
             "| dtplan | error | dtplan with goodput | error |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        for row in r["rows"]:
            rep = _num(row["reported"])
            if row.get("low") is not None:
                rep += f" ({_num(row['low'])}-{_num(row['high'])})"
            err = _pct(row["error"])
            if "in_range" in row:
                err += " (in range)" if row["in_range"] else " (outside range)"
            d = dt.get((r["name"], row["quantity"]), {})
            lines.append(f"| {r['run']} | {row['label']} | {rep} | {row['kind']} | {_num(row['predicted'])} | {err} "
                         f"| {_num(row.get('predicted_with_goodput'))} | {_pct(row.get('error_with_goodput'))} "
                         f"| {_num(d.get('predicted'))} | {_pct(d.get('error'))} "
                         f"| {_num(d.get('predicted_with_goodput'))} | {_pct(d.get('error_with_goodput'))} |")
    lines += ["", "## What the errors say", "",
              "The largest error of each run (without goodput) and what causes it, from each run's "
              "`reading` in its reported file; the sections below give the inputs and notes.", "",
              "| run | largest error | on | reading |", "|---|---|---|---|"]
    for r in results:
        worst = max(r["rows"], key=lambda row: abs(row["error"]))
        lines.append(f"| {r['run']} | {_pct(worst['error'])} | {worst['label']} | {' '.join(r['reading'].split())} |")
    if dtplan:
        lines += render_dtplan(results, dtplan)
    lines += ["", "## The runs", ""]
    for r in results:
        p = r["predicted"]
        lines += [f"### {r['run']} (`instances/published/{r['name']}.json`)", "",
                  f"Source: {r['source']}.", "", f"Plan: {_plan_text(r['plan'])}.", "",
                  f"dtplan's own figures for this plan: quality factor eta = {p['eta']:.3f}, global MFU (eta "
                  f"included) = {p['planner_global_mfu']:.3f}, time to target (eta included) = "
                  f"{_days(p['training_time_days'])} days of training"
                  + (f", {_days(p['time_to_target_days'])} days wall-clock at goodput {p['goodput']:g}."
                     if p["goodput"] < 1 else "."), ""]
        goodput = f"Goodput: fleet.goodput = {r['goodput']:g}. Basis: {r['goodput_basis']}"
        implied = [row["implied_goodput"] for row in r["rows"] if "implied_goodput" in row]
        if implied:
            goodput += f" The goodput the reported wall-clock implies is {implied[0]:.2f}."
        lines += [goodput, ""]
        if r["bandwidth_range"]:
            reached = ", ".join(f"{u:.0%} at {mbps:,.1f} Mb/s" for u, mbps in r["bandwidth_range"])
            lines += [f"Bandwidth range: dtplan predicts compute utilisation {reached} per node for this plan; the "
                      f"instance assumes {r['wan_mbps']:,.1f} Mb/s (predicted {p['compute_utilization']:.1%}).", ""]
        lines += ["Notes: " + " ".join(r["notes"].split()), ""]
        if r["warnings"]:
            lines += ["dtplan warnings: " + "; ".join(r["warnings"]) + ".", ""]
    lines += ["## What the planner would have chosen", "",
              "`solve` with objective min_time on each run's instance (same hardware, nodes, network and token "
              "target), once over every precision the hardware supports and once restricted to the run's "
              "precision. Both plans are scored by dtplan's model, quality factor included, so the gain is a "
              "prediction of the model, not a measured one; where the run's plan has a low eta (INTELLECT-1: "
              "DiLoCo with H = 100), most of the gain is the model's quality penalty, not throughput.", "",
              "| run | run's plan: days to target | planner, any precision | days | gain | planner, run's precision | days | gain |",
              "|---|---|---|---|---|---|---|---|"]
    for r in results:
        c = r.get("planner")
        if not c:
            continue
        cells = []
        for key in ("any_precision", "run_precision"):
            s = c[key]
            if s.get("plan"):
                cells += [_plan_text(s["plan"]), _days(s["time_to_target_days"]), f"{s['speedup']:.2f}x"]
            else:
                cells += [s["status"], "-", "-"]
        lines.append(f"| {r['run']} | {_days(c['run_time_to_target_days'])} | " + " | ".join(cells) + " |")
    lines += ["", "## Streaming DiLoCo: what the error means", "",
              "Table 4 of arXiv 2501.18512 gives each model's step time (pure compute: 0.1 s for 1B, 0.8 s for 10B, "
              "4.9 s for 100B) and layer count (24, 48, 108, in fragments of 3 layers: p = 8, 16, 36), so both of its "
              "bandwidths are predicted, nothing calibrated. At RTT 0 and 90% utilisation, with t the step time, P the "
              "parameters and f = 1.02 dtplan's straggler factor for 2 replicas: the reference profile sends the whole "
              "payload up then down, the data-parallel gradients (16 bits) after each step, t_sync = t / 9, and the "
              "Streaming DiLoCo payload (4 bits) behind the whole outer step, t_sync = H t / 0.9, so bw_dp = "
              "2 x 16 P f x 9 / t and bw_s = 2 x 4 P f x 0.9 / (H t). Under dtplan the data-parallel sync is a ring "
              "(each way at once) overlapped with the backward pass, t_sync = 7/9 t, bw_dp = 16 P f / (7/9 t), and "
              "Streaming DiLoCo syncs p fragments, each due tau inner steps after the step that produces it and sent "
              "during that step's backward pass (docs/physics.md, section 4), bw_s = 4 P f / (t (p (tau + 2/3) + "
              "H / 9)): for 1B, 16e9 x 1.02 / 0.0778 = 209.8 Gb/s and 4e9 x 1.02 / (0.1 x (8 x 5/3 + 100 / 9)) = "
              "1.669 Gb/s against the table's 184.2 and 1.7. Table 4's figures are points of a geometric grid "
              "(factor 1.207 between neighbours, see the runs' notes), so a figure stands for a threshold up to 17% "
              "below it; dtplan's Streaming DiLoCo figures fall inside that step for 1B and 10B and 6% above the "
              "100B figure, and its data-parallel figures 10-18% above the table's. published_runs.md's 1B figure, "
              "6.2 Gb/s, is the table's bf16 variant (\"w/ overlapped com.\"); the FP4 figure is 1.7 Gb/s. The "
              "simulator on the first author's site (arthurdouillard.com/diloco, read in the site's repository "
              "arthurdouillard/arthurdouillard.github.io, diloco/index.html, February 2026) is a reconstruction, "
              "not the paper's code: one network queue, the payload x 2 (1 - 1/M) for M datacenters, buckets released "
              "through the backward pass (forward a third of the step, backward two thirds), a "
              "fragment due tau + 1 steps after its step starts, zero latency, one step time for every size. Run at "
              "Table 4's step times it needs 207.1, 258.9 and 422.7 Gb/s for data parallelism and 1.64, 1.33 and "
              "1.15 Gb/s for Streaming DiLoCo (a re-implementation of its queue, not shipped), dtplan's figures "
              "without its straggler factor 1.02: dtplan models that simulator's windows; the paper's own DAG "
              "reaches 90% data-parallel utilisation with 9-15% less bandwidth than both, for reasons its text does "
              "not give."]
    ranged = [r for r in results if r["bandwidth_range"]]
    if ranged:
        targets = [u for u, _ in ranged[0]["bandwidth_range"]]
        lines += ["", "## How far a verdict rests on an assumed bandwidth", "",
                  "Where neither the compute time per step nor the bandwidth between nodes is reported, the predicted "
                  "compute utilisation is set by their ratio. For such runs, the per-node WAN bandwidth (up = down, "
                  "every other input as in the instance) at which dtplan predicts each reported bound, found by "
                  "bisection over `evaluate`:", "",
                  "| run | assumed bandwidth (Mb/s) | predicted utilisation | reported | "
                  + " | ".join(f"bandwidth for {u:.0%} (Mb/s)" for u in targets) + " | assumed bandwidth in that range |",
                  "|---|---|---|---|" + "---|" * len(targets) + "---|"]
        for r in ranged:
            row = next(x for x in r["rows"] if x["quantity"] == "compute_utilization")
            rep = _num(row["reported"]) + (f" ({_num(row['low'])}-{_num(row['high'])})" if row.get("low") is not None else "")
            mbps = [m for _, m in r["bandwidth_range"]]
            inside = "yes" if min(mbps) <= r["wan_mbps"] <= max(mbps) else ("no, above" if r["wan_mbps"] > max(mbps) else "no, below")
            lines.append(f"| {r['run']} | {r['wan_mbps']:,.1f} | {r['predicted']['compute_utilization']:.3f} | {rep} | "
                         + " | ".join(f"{m:,.1f}" for m in mbps) + f" | {inside} |")
    lines += ["", "## Runs not covered", "", COVERAGE, "", "Reported figures not compared:", ""]
    lines += [f"- **{name}**: {why}" for name, why in skipped]
    return "\n".join(lines) + "\n"


COVERAGE = ("None: every run listed in ../shared/data/published_runs.md has an instance here (OpenDiLoCo since its "
            "configuration was read from PrimeIntellect-ai/OpenDiloco; its GPU type, MFU and bandwidth are assumptions, "
            "see its section).")

SKIPPED = [
    ("INTELLECT-1, 96% US-only utilisation",
     "the nodes, bandwidth and sync time of the US-only phase are not in published_runs.md."),
    ("PaLM 540B, two pods at 1.95x one pod's throughput (97% weak scaling; arXiv 2204.02311 section 4)",
     "dtplan's compute utilisation for it depends on how the paper's 81 Tbps aggregate burst is read (see the instance)."),
    ("PaLM 540B, HFU 57.8%",
     "dtplan's HFU is its MFU / 0.8 (a constant of the cost model), so comparing it adds nothing to the MFU row."),
    ("Llama 3 405B, 16,384 GPUs with context parallelism 16 (131,072-token sequences; arXiv 2407.21783 Table 4)",
     "not in published_runs.md, and context parallelism is not in the schema."),
]


def headline(result: dict) -> dict:
    """The run's headline row (`[dtplan] headline` in its reported file) and the error that
    counts: with goodput for a wall-clock quantity (the wall-clock a user would see), else the rate."""
    row = next(x for x in result["rows"] if x["quantity"] == result["dtplan"]["headline"])
    error = row.get("error_with_goodput", row["error"])
    predicted = row.get("predicted_with_goodput", row["predicted"])
    return {**row, "headline_error": error, "headline_predicted": predicted}


def outside_row(result: dict) -> dict | None:
    """The row the run's missing term is about: the headline when it misses by more than WITHIN,
    else the row of largest error beyond WITHIN (with goodput where it has one) when the run's
    reported file explains it (`missing_summary`), else None. A row outside 15% that is not the
    headline (INTELLECT-1's wall-clock, which counts the run's node churn) is thus still explained."""
    if abs(headline(result)["headline_error"]) > WITHIN:
        return headline(result)
    if not result["dtplan"].get("missing_summary"):
        return None
    errors = [(abs(x.get("error_with_goodput", x["error"])), x) for x in result["rows"]
              if x.get("error") is not None]
    worst = max(errors, key=lambda e: e[0], default=(0.0, None))
    return worst[1] if worst[0] > WITHIN else None


def render_dtplan(results: list[dict], dtplan: list[dict]) -> list[str]:
    """The dtplan section: each run's headline quantity under both profiles, what the run sets
    under dtplan, and where 15% is not reached, the term that is missing."""
    ref = {r["name"]: r for r in results}
    within = sum(abs(headline(r)["headline_error"]) <= WITHIN for r in dtplan)
    fitted = sum(abs(headline(r)["headline_error"]) <= WITHIN and bool(r["dtplan"].get("fitted")) for r in dtplan)
    lines = ["", "## The dtplan profile", "",
             "`dtplan` (models/assumptions/dtplan.json, docs/physics.md) is the reference model with these terms on: "
             "the node's MFU from the compute model of planner/cost/compute on the accelerators it has "
             "figures for (docs/physics.md section 1b: the model's shape and the run's layout on a roofline of named "
             "microbenchmarks, with a training efficiency per accelerator calibrated on single-node vendor benchmarks "
             "that are not rows here; a mixture-of-experts model with its expert all-to-all when its shape is a "
             "preset), otherwise achieved MFU per accelerator from models/mfu.json (mixture-of-experts models "
             "without a shape preset take its MoE figure; no entry is fitted on a run here: TPU v4's, fitted on "
             "PaLM, was removed), "
             "a ring all-reduce over concurrent up and down links, the blocking "
             "sync overlapped bucket by bucket with the last backward pass, and per-stage payloads in PP-group "
             "DiLoCo, and the chunk count of an interleaved pipeline as the planner's choice where a run does not "
             "state it. What a run did (its pipeline schedule and chunks, tensor parallelism, model shape, expert "
             "parallelism and its overlap, compressor, "
             "streaming fragments, failure inputs) is set per run in its "
             "reported file's `[dtplan]` table, from the run's description, never fitted to the compared figure; "
             "a constant taken from one run is named and used unchanged on the others.", "",
             f"Headline quantity of each run (the wall-clock with goodput where it is one): **{within} of "
             f"{len(dtplan)} within {WITHIN:.0%}** under dtplan ({fitted} of them by a constant fitted on that run), "
             f"{sum(abs(headline(ref[r['name']])['headline_error']) <= WITHIN for r in dtplan)} under reference.", "",
             "| run | headline | reported | reference | error | dtplan | error | within 15% |",
             "|---|---|---|---|---|---|---|---|"]
    for r in dtplan:
        d, rf = headline(r), headline(ref[r["name"]])
        ok = "yes" if abs(d["headline_error"]) <= WITHIN else "no"
        if r["dtplan"].get("fitted"):
            ok += f" ({r['dtplan']['fitted']})"
        lines.append(f"| {r['run']} | {d['label']} | {_num(d['reported'])} | {_num(rf['headline_predicted'])} | "
                     f"{_pct(rf['headline_error'])} | {_num(d['headline_predicted'])} | {_pct(d['headline_error'])} "
                     f"| {ok} |")
    lines += ["", "What each run sets under dtplan, and what is missing where 15% is not reached:", ""]
    for r in dtplan:
        spec = r["dtplan"]
        consts = ", ".join(f"{k} = {v}" for k, v in spec.get("constants", {}).items()) or "nothing beyond the profile"
        drop = f"; dropped from the instance: {', '.join(spec['drop'])}" if spec.get("drop") else ""
        text = f"- **{r['run']}**: "
        outside = outside_row(r)
        if outside is not None and outside["quantity"] == spec["headline"]:
            text += (f"**Outside {WITHIN:.0%} ({_pct(headline(r)['headline_error'])}): "
                     f"{' '.join(spec['missing_summary'].split())}** ")
        elif outside is not None:
            text += (f"**Headline within {WITHIN:.0%} ({_pct(headline(r)['headline_error'])}); "
                     f"{outside['label']} outside ({_pct(outside.get('error_with_goodput', outside['error']))}): "
                     f"{' '.join(spec['missing_summary'].split())}** ")
        if spec.get("headline_reason"):
            text += f"Headline: {' '.join(spec['headline_reason'].split())} "
        text += f"Sets {consts}{drop}. {' '.join(spec.get('notes', '').split())}"
        if spec.get("mfu_basis"):
            b = spec["mfu_basis"]
            text += (f" MFU on the run's own basis ({b['flops']}, planner/cost/model_flops.py): "
                     f"{mfu_flops_per_token(None, b):.4g} FLOP per token. {' '.join(b['source'].split())}")
        if outside is not None:
            text += f" The missing term in detail: {' '.join(spec['missing'].split())}"
        if r.get("sensitivity"):
            text += " Sensitivity: " + "; ".join(f"{key} = {value:g}: {_num(h['headline_predicted'])} "
                                                 f"({_pct(h['headline_error'])})" for key, value, h in r["sensitivity"]) + "."
        if r["profile"] == "dtplan" and r["goodput"] < 1:
            text += f" Goodput used: {r['goodput']:.3f}."
        lines.append(text)
    ranked = [r for r in dtplan if r.get("layout")]
    if ranked:
        lines += ["", "### The run's layout among the plans", "",
                  "For each run trained synchronously (a sync every step, no compression), under dtplan with the "
                  "run's inputs: `solve` (min_time) with the run's freedom, its hardware, nodes, network, batch and "
                  "precision, the mode, stages, micro-batches, pipeline schedule and chunk count and ZeRO shards "
                  "free, outside the quality fit's evidence envelope (a sync every step is data parallelism, which "
                  "the DiLoCo fit's envelope does not describe; docs/quality.md); and the rank of the run's own plan among every feasible layout of its nodes (flat replicas "
                  "sharded over Z = 1, 2, 4, ... 256 nodes for dense models, with experts over all nodes for MoE; pipelines of S = 2 to 64 stages with M = 1 to 64 "
                  "micro-batches under 1F1B, interleaved, zero-bubble and DualPipe (where it runs: S even, M even and at "
                  "least 2 S)), by predicted time to target, 1 the "
                  "fastest (`layout_rank` in scripts/validate_published.py).", "",
                  "| run | run's plan: days | planner's plan | days | gain | run's rank | layouts | fastest layout: days |",
                  "|---|---|---|---|---|---|---|---|"]
        lines += [_rank_row(r["run"], r["layout"]["run_days"], r["layout"]) for r in ranked]
        lines += ["", "The same with the tensor-parallel degree T free as well (`search_tensor_parallel`, "
                  "planner/cost/tensor_parallel.py, docs/physics.md section 2b): a node of A accelerators is T-way "
                  "tensor parallel and A / T data parallel inside the server, T a power of two dividing A and the "
                  "model's heads and KV heads, chosen per plan as the fastest that fits. The run's own plan keeps its "
                  "stated T (its `[dtplan]` table) and is ranked among every layout of its nodes with T the planner's. "
                  "A run's node is its instance's (often one tensor-parallel group, so T can only fall); a run with no "
                  "feasible layout shows '-' (PaLM: one KV head allows only T = 1, and a node of 3,072 chips as 3,072 "
                  "data-parallel replicas does not fit). What T buys in practice beyond its collectives is mostly "
                  "activation memory: with activations off (the profile's default) and no floor of one sequence per "
                  "micro-batch and group, the model does not see it, so these gains (T = 1 or 2 where the runs used "
                  "4 or 8) are an upper bound on what the choice is worth, not a finding against the runs' layouts.", "",
                  "| run | run's plan: days | planner's plan, T free | days | gain | run's rank | layouts | "
                  "fastest layout: days |", "|---|---|---|---|---|---|---|---|"]
        lines += [_rank_row(r["run"], r["layout"]["tp_free"]["run_days"], r["layout"]["tp_free"]) for r in ranked]
        lines += ["", "The same with T free and the memory checked per accelerator (`activation_memory` on with "
                  "`activation_recompute` = fit, docs/physics.md section 2b): each accelerator holds its 1 / T "
                  "share of its stage's weights and gradients, its 1 / A share of the optimizer state (ZeRO-1 over "
                  "the server) and its activations, 34 s b h / T bytes per layer with sequence parallelism "
                  "(Korthikanti et al. 2022) for the micro-batches its schedule keeps in flight (a flat replica: one "
                  "micro-batch of every layer), at least one sequence per tensor-parallel group, and the least share "
                  "of layers recomputed that makes it fit. The run's own plan is scored under the same model with its "
                  "stated T (so its days differ from the tables above where it now recomputes). The run's T against "
                  "the planner's: " + "; ".join(
                      f"{r['run']} {_run_tp(r)} vs {_chosen_tp(r['layout']['tp_memory'])}" for r in ranked
                      if _run_tp(r) != "-") + ". Where they differ: an fp8 plan's stored activations are counted "
                  "at the profile's 1 byte per value (`activation_bytes_fp8`, the pipeline-boundary figure); at 2 "
                  "bytes (BF16; which saved activations an FP8 recipe keeps in FP8 is not modelled) the fastest "
                  "degree of the flat ZeRO-3 layout the planner picks becomes T = 4 for the 70B run and T = 8 for "
                  "both 405B runs (as run for the first two, twice the B200 run's 4), so the choice between 2, 4 and 8 "
                  "rests on that byte count. The Llama 3 runs shard each pipeline stage's gradients and optimizer "
                  "state over their 64 and 128 data-parallel groups (FSDP, arXiv 2407.21783 section 3.3.2; "
                  "`stage_state_shards`, planner/cost/stage_shards.py, docs/physics.md section 3), so their own "
                  "pipelines recompute r = 0.193 of their layers at 8,192 GPUs and none at 16,384 (without the "
                  "sharding 0.717 and 0.636), and the planner, held to at least that many groups per pipeline, "
                  "chooses pipelines with the runs' T = 8.", "",
                  "| run | run's plan: days | planner's plan, T free, memory per accelerator | days | gain | run's rank | "
                  "layouts | fastest layout: days |", "|---|---|---|---|---|---|---|---|"]
        lines += [_rank_row(r["run"], r["layout"]["tp_memory"]["run_days"], r["layout"]["tp_memory"]) for r in ranked]
    variants = [(r, v) for r in dtplan for v in r.get("variants", [])]
    if variants:
        lines += ["", "Further figures of the same sources, other ways of running the same setting, predicted under "
                  "dtplan with each run's inputs and the plan or constants the method changes (`[[dtplan_variants]]` "
                  "in the reported files; not headlines, no input fitted):", "",
                  "| run | method | plan | reported | dtplan | error |", "|---|---|---|---|---|---|"]
        lines += [f"| {r['run']} | {v['method']} | {v['plan']} | {_num(v['reported'])} | {_num(v['predicted'])} | "
                  f"{_pct(v['error'])} |" for r, v in variants]
    return lines


def _run_tp(r: dict) -> str:
    """The run's stated tensor-parallel degree (its `[dtplan]` constants), '-' where it states none."""
    t = r["dtplan"].get("constants", {}).get("tensor_parallel")
    return f"T={t:g}" if t else "-"


def _chosen_tp(lay: dict) -> str:
    """The planner's T in a layout table's plan, '-' without a plan or a choice (mixture-of-experts)."""
    c = lay["chosen"]
    return f"T={c['tensor_parallel']:g}" if c.get("plan") and c.get("tensor_parallel") else "-"


def _rank_row(run: str, run_days: float, lay: dict) -> str:
    """One row of a layout table: the planner's plan, its gain over the run's plan, the run's rank."""
    c = lay["chosen"]
    plan = (f"{_plan_text(c['plan'])} | {_days(c['time_to_target_days'])} | "
            f"{run_days / c['time_to_target_days']:.2f}x") if c.get("plan") else f"{c['status']} | - | -"
    if not lay["layouts"]:
        return f"| {run} | {_days(run_days)} | {plan} | - | 0 | - |"
    return f"| {run} | {_days(run_days)} | {plan} | {lay['rank']:,} | {lay['layouts']:,} | {_days(lay['best_layout_days'])} |"


def build(with_solve: bool = True) -> tuple[list[dict], str]:
    results = [validate_run(name, with_solve) for name in runs()]
    dtplan = [validate_run(name, False, "dtplan") for name in runs()]
    for r in dtplan:
        r["sensitivity"] = [(key, value, headline(validate_run(r["name"], False, "dtplan", {key: value})))
                            for key, values in r["dtplan"].get("sensitivity", {}).items() for value in values]
        if with_solve:
            r["layout"] = layout_rank(r["name"])
    return results, render(results, SKIPPED, dtplan)


def print_table(results: list[dict]) -> None:
    print(f"{'run':28} {'quantity':36} {'reported':>14} {'predicted':>14} {'error':>9} {'w/ goodput':>10}")
    for r in results:
        for row in r["rows"]:
            print(f"{r['run'][:28]:28} {row['quantity'][:36]:36} {_num(row['reported']):>14} "
                  f"{_num(row['predicted']):>14} {_pct(row['error']):>9} {_pct(row.get('error_with_goodput')):>10}")
    for r in results:
        c = r.get("planner")
        if c:
            s = c["any_precision"]
            gain = f"{s['speedup']:.2f}x" if s.get("plan") else s["status"]
            print(f"planner on {r['run']}: {gain} faster to target ({_plan_text(s['plan']) if s.get('plan') else ''})")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if docs/validation.md is not up to date")
    args = parser.parse_args(argv)
    results, text = build()
    print_table(results)
    if args.check:
        if not DOC.exists() or DOC.read_text() != text:
            print(f"{DOC.relative_to(ROOT)} is stale: run scripts/validate_published.py", file=sys.stderr)
            return 1
        return 0
    DOC.write_text(text)
    print(f"wrote {DOC.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
