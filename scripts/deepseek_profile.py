#!/usr/bin/env python3
"""DeepSeek's published training profile against dtplan's compute model (issue 25; docs/validation.md,
DeepSeek-V3).

The trace: train.json of deepseek-ai/profile-data (commit 4496024), a PyTorch-profiler (Chrome) trace of
one rank of DeepSeek's training framework on H800: one overlapped pair of DualPipe chunks, the forward
chunk of one micro-batch and the backward chunk of another, each chunk 4 MoE layers, EP64, TP1, 4K
sequences, perfectly balanced routing simulated, pipeline communication left out (its README). The trace
stays outside the project; get it with

    git -C <clone of deepseek-ai/profile-data> show 4496024:train.json > /tmp/train.json

Usage:  .venv/bin/python scripts/deepseek_profile.py /tmp/train.json

What it prints, per overlapped layer pair (the forward of one MoE layer for micro-batch A and the backward
of one for micro-batch B, as DualPipe pairs them), the mean over the trace's pairs:

- the wall time of a pair (the GPU span of the trace over its pairs) and the time no compute kernel runs;
- GPU time per kernel family (`kernel_family`), and per forward (F), backward (B) or weight-gradient (W)
  part, each kernel attributed to a part by the profiler range it was launched from (DeepSeek names
  its ranges attn(F), mlp(B), dispatch(F), combine(B), ...; `phase_of`), the FP8 GEMMs split into those
  of the attention block (attn ranges) and of the MoE block (mlp ranges): time with at least one kernel
  of the family running (kernels of one family on two streams at once count once; the `sum` column adds
  their durations);
- DeepEP's communication kernels: their time, the blocks (one per SM) they hold, and the share of the
  pair they run;
- the micro-batch: tokens per chunk from the grid of the per-token FP8 cast (one block per token) and
  from the attention kernel's grid (query tiles x heads);
- dtplan's compute model for the same work: one MoE layer, forward and backward, of the deepseek-v3 shape
  with the run's constants (instances/published/deepseek-v3.reported.toml [dtplan]), by the same
  families, raw (all 132 SMs), with the SMs DeepEP holds (x 132 / 112) and with the chip's training
  efficiency (the model's time per layer as its u counts it).
"""

from __future__ import annotations

import argparse
import bisect
import json
import re
import sys
import tomllib
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

PHASE = re.compile(r"^(?P<block>[a-z]+)\((?P<part>[FBW])\)$")   # DeepSeek's ranges: attn(F), mlp(W), ...
FAMILIES = ("gemm_fp8_attention", "gemm_fp8_moe", "gemm_bf16", "attention", "fp8_cast", "norm", "activation",
            "rotary", "permutation", "other_elementwise", "deepep")
COMPUTE = tuple(f for f in FAMILIES if f != "deepep")


def kernel_family(name: str, block: str | None = None) -> str:
    """The family of a GPU kernel from its name (DeepSeek's, DeepEP's, FlashAttention's, PyTorch's). FP8 GEMMs
    (DeepSeek's grouped_gemm GemmKernel) are split by the block they were launched from: `block` "attn" or
    "mlp" (gemm_fp8_attention, gemm_fp8_moe; the MoE one when the block is unknown)."""
    if "dpsk::ep::" in name:
        return "deepep"
    if "grouped_gemm" in name and "GemmKernel" in name:
        return "gemm_fp8_attention" if block == "attn" else "gemm_fp8_moe"
    if "xmma_gemm" in name or "cublas" in name.lower() or name.startswith("sm90_gemm"):
        return "gemm_bf16"
    if "flash::" in name or "flash_attn" in name.lower():
        return "attention"
    if "swiglu" in name:
        return "activation"
    if "layer_norm" in name or "rms_norm" in name.lower():
        return "norm"
    if "rotary" in name:
        return "rotary"
    if any(k in name for k in ("expand_to_fused", "reduce_fused", "get_fused_mapping", "clean_and_count_expert")):
        return "permutation"
    if "cast" in name or "transpose" in name:
        return "fp8_cast"
    return "other_elementwise"


def load_trace(path: str | Path) -> list[dict]:
    """The trace's events (a Chrome trace: {"traceEvents": [...]} or a bare list)."""
    data = json.loads(Path(path).read_text())
    return data["traceEvents"] if isinstance(data, dict) else data


def phase_ranges(events: list[dict]) -> list[dict]:
    """DeepSeek's profiler ranges (user annotations named block(F|B|W)), in time order, each with its
    `index`: how many ranges of the same name came before it (the layer pair it belongs to)."""
    ranges = sorted((e for e in events if e.get("cat") == "user_annotation" and PHASE.match(e.get("name", ""))),
                    key=lambda e: e["ts"])
    seen: dict[str, int] = {}
    out = []
    for e in ranges:
        m = PHASE.match(e["name"])
        out.append({"name": e["name"], "block": m["block"], "part": m["part"], "ts": e["ts"],
                    "end": e["ts"] + e["dur"], "index": seen.get(e["name"], 0)})
        seen[e["name"]] = seen.get(e["name"], 0) + 1
    return out


def phase_of(launch_ts: float | None, ranges: list[dict]) -> dict | None:
    """The range open at the CPU time a kernel was launched (DeepSeek's ranges follow each other, none inside
    another), None outside every range."""
    if launch_ts is None:
        return None
    i = bisect.bisect_right([r["ts"] for r in ranges], launch_ts) - 1
    return ranges[i] if i >= 0 and launch_ts <= ranges[i]["end"] else None


def gpu_kernels(events: list[dict]) -> list[dict]:
    """The GPU's kernels, copies and sets in start order, each with its stream, family, and the range (phase)
    it was launched from: by its launch call (cuda_runtime or cuda_driver, same correlation id); a kernel
    launched outside every range (the Triton kernels DeepSeek launches through the driver API between two
    ranges) takes the phase of the kernel before it on its stream."""
    ranges = phase_ranges(events)
    launches = {e["args"]["correlation"]: e["ts"] for e in events
                if e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in (e.get("args") or {})}
    gpu = sorted((e for e in events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")),
                 key=lambda e: (e["ts"], e.get("tid", 0)))
    out, last_on_stream = [], {}
    for e in gpu:
        args = e.get("args") or {}
        stream = args.get("stream", e.get("tid"))
        phase = phase_of(launches.get(args.get("correlation")), ranges) or last_on_stream.get(stream)
        if phase is not None:
            last_on_stream[stream] = phase
        out.append({"name": e["name"], "ts": float(e["ts"]), "dur": float(e["dur"]), "stream": stream,
                    "grid": args.get("grid"), "phase": phase,
                    "family": kernel_family(e["name"], phase["block"] if phase else None)})
    return out


def busy_us(intervals: list[tuple[float, float]]) -> float:
    """Length of the union of [start, end) intervals (microseconds)."""
    total, cur_s, cur_e = 0.0, None, None
    for s, e in sorted(intervals):
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                total += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    return total + (cur_e - cur_s if cur_e is not None else 0.0)


def micro_batch_tokens(kernels: list[dict]) -> dict[str, int | None]:
    """Tokens per chunk, two ways: the grid of the first per-token FP8 cast of the attention forward (one block
    per token: cast_to_fp8 "per_token"), and the attention forward kernel's grid, query tiles x the tile's rows
    (FlashAttention-3's forward traits: Flash_fwd_kernel_traits<head dim, kBlockM, kBlockN, ...>)."""
    cast = next((k for k in kernels if "per_token_cast_to_fp8" in k["name"] and k["phase"]
                 and k["phase"]["name"] == "attn(F)" and k["grid"]), None)
    attn = next((k for k in kernels if k["family"] == "attention" and "fwd" in k["name"].lower() and k["grid"]), None)
    tile = re.search(r"Flash_fwd_kernel_traits<\s*\d+\s*,\s*(\d+)", attn["name"]) if attn else None
    return {"per_token_cast": int(cast["grid"][0]) if cast else None,
            "attention_tiles": int(attn["grid"][0]) * int(tile[1]) if attn and tile else None,
            "heads": int(attn["grid"][1]) if attn else None}


def summarise(kernels: list[dict]) -> dict:
    """Per overlapped pair (mean over the trace's pairs): wall, idle compute, busy time per family and per
    part (F, B, W), DeepEP's share and SMs, and the micro-batch (see the module docstring). Times in ms."""
    pairs = 1 + max((k["phase"]["index"] for k in kernels if k["phase"]), default=0)
    start = min(k["ts"] for k in kernels)
    end = max(k["ts"] + k["dur"] for k in kernels)
    compute = [k for k in kernels if k["family"] != "deepep"]
    comm = [k for k in kernels if k["family"] == "deepep"]
    per_pair = 1e-3 / pairs
    fam = {f: busy_us([(k["ts"], k["ts"] + k["dur"]) for k in kernels if k["family"] == f]) * per_pair
           for f in FAMILIES}
    parts = {f: {p: busy_us([(k["ts"], k["ts"] + k["dur"]) for k in kernels
                              if k["family"] == f and k["phase"] and k["phase"]["part"] == p]) * per_pair
                 for p in "FBW"} for f in FAMILIES}
    summed = {f: sum(k["dur"] for k in kernels if k["family"] == f) * per_pair for f in FAMILIES}
    compute_busy = busy_us([(k["ts"], k["ts"] + k["dur"]) for k in compute]) * per_pair
    compute_parts = {p: busy_us([(k["ts"], k["ts"] + k["dur"]) for k in compute
                                 if k["phase"] and k["phase"]["part"] == p]) * per_pair for p in "FBW"}
    wall = (end - start) * per_pair
    return {"pairs": pairs, "wall_ms": wall, "compute_busy_ms": compute_busy, "compute_idle_ms": wall - compute_busy,
            "family_ms": fam, "family_sum_ms": summed, "family_parts_ms": parts, "compute_parts_ms": compute_parts,
            "compute_sum_ms": sum(summed[f] for f in COMPUTE),
            "deepep_busy_ms": fam["deepep"], "deepep_share": fam["deepep"] / wall if wall else 0.0,
            "deepep_blocks": max((k["grid"][0] * k["grid"][1] * k["grid"][2] for k in comm
                                  if k["grid"] and ("dispatch<" in k["name"] or "combine<" in k["name"])),
                                 default=0),
            "tokens": micro_batch_tokens(kernels)}


# -- dtplan's compute model for one MoE layer ---------------------------------------------------------------------

MODEL_FAMILIES = ("gemm_fp8_attention", "gemm_fp8_moe", "gemm_bf16", "attention", "memory", "permutation")


def _instance_assumptions():
    """The deepseek-v3 instance's assumptions under dtplan with its reported file's [dtplan] constants, as
    scripts/validate_published.py evaluates it."""
    from planner.schema.instance import parse_instance
    published = ROOT / "instances" / "published"
    reported = tomllib.loads((published / "deepseek-v3.reported.toml").read_text())
    raw = json.loads((published / "deepseek-v3.json").read_text())
    raw["assumptions"] = {**raw["assumptions"], "profile": "dtplan", "constants": reported["dtplan"]["constants"]}
    instance = parse_instance(raw)
    return instance, instance.resolved_assumptions()


def model_layer_ms() -> dict:
    """dtplan's times (ms) of one MoE layer of the deepseek-v3 shape, forward and backward, one micro-batch on one
    GPU, by family: the layer is the difference between the shape with L + 1 and with L MoE layers (no MTP), so
    the output layer and everything per model cancel; GEMMs classified by their forward shape (router: n =
    experts; the routed experts by their flag; the shared expert by n or k = its width; the rest are MLA's
    projections, recomputed ones included). Also the same x 132 / 112 (the SMs DeepEP holds) and / e_train."""
    from planner.cost import physics
    from planner.cost.compute.experts import all_to_all_s, imbalance_floor, permutation_bytes
    from planner.cost.compute.ops import Memory, Recipe, micro_batch_ops
    from planner.cost.compute.roofline import attention_time_s, chip_for, gemm_time_s, memory_time_s
    from planner.cost.compute.utilisation import gemm_precision, moe_micro_batch_time_s

    instance, a = _instance_assumptions()
    chip = chip_for(instance.hardware.accelerator)
    base = physics.compute_model_shape(a, instance.model.params, instance.model.hidden_size)
    m = base.sequence_tokens * a.micro_batch_sequences
    fabric = physics.expert_fabric(a, a.expert_parallel_degree)
    recipe = Recipe(high_precision_head=a.high_precision_head, recompute_mla_up=a.recompute_mla_up)
    precision = "fp8"
    shared_width = base.shared_experts * base.expert_ffn

    def family(g) -> str:
        if g.high_precision:
            return "gemm_bf16"
        _, n, k = g.forward
        if g.routed or n == base.experts or n == 2 * shared_width or k == shared_width:
            return "gemm_fp8_moe"
        return "gemm_fp8_attention"

    def part(g, seen: set) -> str:
        """F for a forward GEMM (a recomputed one, met again, runs in the backward: B), B for the input
        gradient, W for the weight gradient (planner/cost/compute/ops.py, _gemm_fwd_bwd)."""
        fm, fn, fk = g.forward
        if (g.m, g.n, g.k) == (fm, fn, fk):
            first = g.forward not in seen
            seen.add(g.forward)
            return "F" if first else "B"
        return "B" if (g.m, g.n, g.k) == (fm, fk, fn) else "W"

    def times(layers: int) -> tuple[dict[str, float], dict[str, dict[str, float]]]:
        shape = replace(base, layers=layers, moe_layers=layers, mtp_modules=0)
        gemms, attention, memory = micro_batch_ops(shape, m, 1.0, a.expert_parallel_degree, recipe)
        load = imbalance_floor(shape, m, fabric)
        out = dict.fromkeys(MODEL_FAMILIES, 0.0)
        parts = {f: dict.fromkeys("FBW", 0.0) for f in MODEL_FAMILIES}
        seen: set = set()
        for g in gemms:
            t = gemm_time_s(g, chip, gemm_precision(g, precision)) * (load if g.routed else 1.0)
            out[family(g)] += t
            parts[family(g)][part(g, seen)] += t
        for x in attention:
            out["attention"] += attention_time_s(x, chip)
            parts["attention"]["B" if x.backward else "F"] += attention_time_s(x, chip)
        out["memory"] = sum(memory_time_s(x, chip) for x in memory)
        out["permutation"] = memory_time_s(Memory(permutation_bytes(shape, m, fabric)), chip)
        return out, parts

    (one, one_parts), (two, two_parts) = times(1), times(2)
    raw = {f: (two[f] - one[f]) * 1e3 for f in MODEL_FAMILIES}
    raw_parts = {f: {p: (two_parts[f][p] - one_parts[f][p]) * 1e3 for p in "FBW"} for f in MODEL_FAMILIES}
    sm_factor = chip.sms / (chip.sms - a.communication_sms) if fabric.overlap else 1.0
    e_train = chip.training_efficiency.get(precision, 1.0)
    total = sum(raw.values())
    full = sum(moe_micro_batch_time_s(base, chip, precision, m, 1.0, a.expert_parallel_degree, fabric,
                                      recipe).values()) * 1e3
    return {"family_ms": raw, "family_parts_ms": raw_parts, "total_ms": total, "sm_factor": sm_factor,
            "e_train": e_train, "with_sms_ms": total * sm_factor, "as_counted_ms": total * sm_factor / e_train,
            "micro_batch_tokens": m, "sms": chip.sms, "communication_sms": a.communication_sms,
            "moe_blocks": base.moe_layers + base.mtp_modules,
            "all_to_all_ms": all_to_all_s(base, m, fabric) * 1e3 / (base.moe_layers + base.mtp_modules),
            "micro_batch_as_counted_ms": full * sm_factor / e_train}


def prediction_with_scaled_compute(scale: float) -> tuple[float, float]:
    """(tokens/s, tokens/s with the compute of each micro-batch x `scale`) of the deepseek-v3 run under dtplan, as
    scripts/validate_published.py evaluates it: a what-if, not a model change: the chip's training efficiency
    divided by `scale` for the second evaluation (the micro-batch's time as u counts it is its raw time x the SM
    factor / e_train, the all-to-all hidden), restored after."""
    import dataclasses
    import importlib.util

    from planner.cost.compute import roofline
    from planner.evaluate import evaluate

    spec = importlib.util.spec_from_file_location("validate_published", ROOT / "scripts" / "validate_published.py")
    vp = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(vp)

    def tokens_per_s() -> float:
        instance, plan, _, _ = vp.load_run("deepseek-v3", "dtplan")
        return float(evaluate(instance, plan).values["tokens_per_s"])

    base = tokens_per_s()
    chip = roofline.chip_for(_instance_assumptions()[0].hardware.accelerator)
    table = roofline.chips()
    try:
        for name, c in list(table.items()):
            if c.id == chip.id:
                table[name] = dataclasses.replace(c, training_efficiency={
                    p: e / scale for p, e in c.training_efficiency.items()})
        scaled = tokens_per_s()
    finally:
        roofline.chips.cache_clear()
    return base, scaled


def render(s: dict, model: dict | None) -> str:
    """The decomposition as text (see the module docstring)."""
    t = s["tokens"]
    lines = [f"Overlapped layer pairs in the trace: {s['pairs']} (forward of one MoE layer + backward of another)",
             f"Tokens per chunk: {t['per_token_cast']} (per-token FP8 cast grid); {t['attention_tiles']} "
             f"(attention forward: query tiles x rows), {t['heads']} heads",
             f"Wall of the chunk pair: {s['wall_ms'] * s['pairs']:.2f} ms; per layer pair {s['wall_ms']:.2f} ms: compute "
             f"kernels busy {s['compute_busy_ms']:.2f} ms (forward {s['compute_parts_ms']['F']:.2f}, backward "
             f"{s['compute_parts_ms']['B']:.2f}, weight gradients {s['compute_parts_ms']['W']:.2f}), none running "
             f"{s['compute_idle_ms']:.2f} ms ({s['compute_idle_ms'] / s['wall_ms']:.1%})",
             f"DeepEP kernels: {s['deepep_busy_ms']:.2f} ms per pair ({s['deepep_share']:.1%} of the wall) on "
             f"{s['deepep_blocks']} blocks (SMs) of dispatch/combine",
             "",
             f"{'family':22} {'busy ms':>8} {'sum ms':>8} {'F':>7} {'B':>7} {'W':>7}"]
    for f in FAMILIES:
        p = s["family_parts_ms"][f]
        lines.append(f"{f:22} {s['family_ms'][f]:8.3f} {s['family_sum_ms'][f]:8.3f} {p['F']:7.3f} {p['B']:7.3f} "
                     f"{p['W']:7.3f}")
    lines.append(f"{'compute, all':22} {s['compute_busy_ms']:8.3f} {s['compute_sum_ms']:8.3f}")
    if model:
        fm = model["family_ms"]
        memory_measured = sum(s["family_ms"][f] for f in ("fp8_cast", "norm", "activation", "rotary",
                                                            "other_elementwise"))
        measured = {"gemm_fp8_attention": s["family_ms"]["gemm_fp8_attention"],
                    "gemm_fp8_moe": s["family_ms"]["gemm_fp8_moe"], "gemm_bf16": s["family_ms"]["gemm_bf16"],
                    "attention": s["family_ms"]["attention"], "memory": memory_measured,
                    "permutation": s["family_ms"]["permutation"]}
        k = model["sm_factor"]
        mp, tp = model["family_parts_ms"], s["family_parts_ms"]
        lines += ["", f"dtplan's compute model, one MoE layer forward + backward, m = {model['micro_batch_tokens']:g} "
                      f"tokens (ms; 'x SMs': x {model['sms']} / {model['sms'] - model['communication_sms']:g}; "
                      "F, B, W: the model's x SMs / the trace's kernel time):",
                  f"{'family':22} {'model':>8} {'x SMs':>8} {'trace':>8} {'ratio':>7}   {'F':>13} {'B':>13} {'W':>13}"]
        for f in MODEL_FAMILIES:
            ratio = measured[f] / (fm[f] * k) if fm[f] else float("nan")
            split = ""
            if any(mp[f].values()):
                split = "   " + " ".join(f"{mp[f][p] * k:6.3f}/{tp[f][p]:6.3f}" for p in "FBW")
            lines.append(f"{f:22} {fm[f]:8.3f} {fm[f] * k:8.3f} {measured[f]:8.3f} {ratio:7.3f}{split}")
        total = sum(measured.values())
        lines += [f"{'sum':22} {model['total_ms']:8.3f} {model['with_sms_ms']:8.3f} {total:8.3f} "
                  f"{total / model['with_sms_ms']:7.3f}",
                  f"Model per layer as u counts it (/ e_train {model['e_train']:g}): {model['as_counted_ms']:.2f} ms; "
                  f"the trace's wall per pair {s['wall_ms']:.2f} ms = {s['wall_ms'] / model['as_counted_ms']:.3f} x "
                  f"that, {s['wall_ms'] / model['with_sms_ms']:.3f} x the model before e_train"]
        blocks, whole = model["moe_blocks"], model["micro_batch_as_counted_ms"]
        swapped = whole + blocks * (s["wall_ms"] - model["as_counted_ms"])
        lines.append(f"Whole micro-batch as u counts it: {whole:.1f} ms; with its {blocks:g} MoE blocks at the trace's "
                     f"wall per pair: {swapped:.1f} ms ({swapped / whole:.3f} x)")
        lines.append(f"All-to-all per MoE block in the model: {model['all_to_all_ms']:.2f} ms (hidden); DeepEP's kernels "
                     f"in the trace: {s['deepep_busy_ms']:.2f} ms per pair, waiting for data included")
        if "tokens_per_s" in model:
            lines.append(f"The run's prediction (tokens/s) with that micro-batch: {model['tokens_per_s']:,.0f} -> "
                         f"{model['tokens_per_s_with_trace']:,.0f}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("trace", help="train.json of deepseek-ai/profile-data (commit 4496024)")
    p.add_argument("--no-model", action="store_true", help="the trace's decomposition only")
    args = p.parse_args(argv)
    try:
        events = load_trace(args.trace)
    except (OSError, ValueError, KeyError) as exc:
        print(f"trace: cannot read {args.trace}: {exc}", file=sys.stderr)
        return 2
    kernels = gpu_kernels(events)
    if not kernels:
        print(f"trace: {args.trace} has no GPU kernels", file=sys.stderr)
        return 2
    summary = summarise(kernels)
    model = None
    if not args.no_model:
        model = model_layer_ms()
        whole = model["micro_batch_as_counted_ms"]
        scale = (whole + model["moe_blocks"] * (summary["wall_ms"] - model["as_counted_ms"])) / whole
        model["tokens_per_s"], model["tokens_per_s_with_trace"] = prediction_with_scaled_compute(scale)
    print(render(summary, model))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
