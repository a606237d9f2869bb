"""The evidence envelope of the fitted quality model (docs/quality.md, section "The envelope").

Every term of planner/cost/quality_fit.py rests on published rows (models/quality/rows.json) that
span a range of settings; `SHOWN` lists them with their source. `leaves` lists each way a plan
leaves them (term, value, shown range, message), for `evaluate` and the search's output.

Under the dtplan profile (`evidence_envelope` on, with replica_penalty "fitted") the planner's
search keeps inside the ranges that are decisions, as bounds of the decision space
(planner/space.py: `limits`): replicas K <= 8, H <= 100, R = 1 (no hierarchical rounds),
compression shown for its method (quantise: >= 4 bits per value; topk: at most 4x), no activation
compression. Model size and tokens per parameter are the instance's, not decisions: a plan outside
them is marked, and the fitted law's size trend is used (Charles et al. 2025 found their laws
predicted 4B and 10B from <= 2.4B). Compression at every step (H = 1) is marked, not excluded: H is
the solver's variable, and excluding H = 1 for compressed classes only is no bound of its box.
With `evidence_envelope` off (`--beyond-evidence`) the search is open and every factor is the
fitted law extrapolated (docs/quality.md gives why each extrapolation is conservative).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from planner.cost import quality_fit
from planner.cost.assumptions import Assumptions
from planner.cost.duration import SECONDS_PER_DAY


@dataclass(frozen=True)
class Shown:
    lo: float
    hi: float
    source: str


SHOWN = {
    "params": Shown(35e6, 4e9, "Charles et al. 2025 Table 4 (35M-2.4B), Streaming DiLoCo Tables 5-6 (35M-4B)"),
    "replicas": Shown(1, 8, "Charles et al. 2025 Table 4 (M = 1-8); Streaming DiLoCo Table 6 (M = 2, 4)"),
    "h_eff": Shown(1, 100, "H = 30 (Charles et al. Table 4) and 100 (Streaming DiLoCo Tables 5-6); H = 1 is "
                           "data-parallel and eta is monotone in H, so it is bracketed in between"),
    "regional_rounds": Shown(1, 1, "no published hierarchical DiLoCo run among the fitted tables"),
    "tokens_per_param": Shown(15, 25, "the chinchilla budgets of every fitted row (Streaming DiLoCo Table 2: 15-25; "
                                      "Charles et al.: 20)"),
    "quantise_bits": Shown(4, 32, "Streaming DiLoCo: FP4 (E3M0) outer gradients, no measurable loss"),
    "sparsification": Shown(1, 4, "DiLoCo 2023 Table 6: 0-75% of the outer gradient pruned, no error feedback"),
    "activation_compression": Shown(1, 1, "no fitted table (eta_A is the reference's)"),
    "overlap_params": Shown(35e6, 1e9, "Eager Updates Table 6: one outer step overlapped, 35M-1B"),
}
ENVELOPE_NOTE = ("search kept inside the evidence envelope of the fitted quality model (replicas <= 8, "
                 "H <= 100, R = 1, quantised to >= 4 bits or sparsified <= 4x, no activation compression; "
                 "docs/quality.md); --beyond-evidence opens the rest")


def on(a: Assumptions) -> bool:
    """Whether the search keeps inside the envelope (dtplan profile, unless --beyond-evidence)."""
    return quality_fit.fitted(a) and bool(a.evidence_envelope)


def compression_shown(compression: float, bits_per_value: float, compressor: str) -> bool:
    """Whether a compression of a method has been shown: quantise (and ratio) to >= 4 bits per value,
    topk to at most 4x."""
    if compression <= 1:
        return True
    if compressor == "topk":
        return compression <= SHOWN["sparsification"].hi
    return bits_per_value / compression >= SHOWN["quantise_bits"].lo


def limits() -> dict[str, float]:
    """The decision bounds of the envelope (planner/space.py applies them)."""
    return {"max_replicas": SHOWN["replicas"].hi, "max_inner_steps": SHOWN["h_eff"].hi,
            "max_regional_rounds": SHOWN["regional_rounds"].hi,
            "max_activation_compression": SHOWN["activation_compression"].hi}


def _leave(term: str, value: float, shown: Shown, message: str, bound: str | None = None) -> dict:
    """One way a plan leaves the envelope; `bound` names the search bound it crosses (None where the
    quantity is the instance's, or is marked only)."""
    return {"term": term, "value": value, "shown": [shown.lo, shown.hi], "message": message, "source": shown.source,
            "bound": bound}


def leaves(a: Assumptions, params: float, tokens_per_param: float, values: dict[str, float], compression: float,
           bits_per_value: float, streaming: bool, regional_rounds: float, stages: float,
           activation_compression: float) -> list[dict]:
    """Each way one scored plan leaves the envelope (empty for plain data-parallel training and
    for a pipeline over the WAN, whose eta is 1 by definition)."""
    if not quality_fit.fitted(a) or not values["synchronised"]:
        return []
    out = []
    h_eff, k = values["h_eff"], values["replicas"]
    diloco = h_eff > 1 or compression > 1
    if diloco:
        s = SHOWN["params"]
        if params > s.hi:
            out.append(_leave("replicas and sync interval", params, s, f"model {params / 1e9:,.4g}B > "
                              f"{s.hi / 1e9:g}B shown: the fitted size trend is extrapolated"))
        tpp = tokens_per_param
        s = SHOWN["tokens_per_param"]
        if math.isfinite(tpp) and not s.lo <= tpp <= s.hi:
            out.append(_leave("replicas and sync interval", tpp, s, f"{tpp:,.4g} tokens per parameter outside the "
                              f"{s.lo:g}-{s.hi:g} shown"))
        s = SHOWN["replicas"]
        if k > s.hi:
            out.append(_leave("replicas and sync interval", k, s, f"replicas {k:g} > {s.hi:g} shown",
                              f"replicas <= {s.hi:g}"))
        s = SHOWN["h_eff"]
        if h_eff > s.hi:
            out.append(_leave("replicas and sync interval", h_eff, s, f"H_eff {h_eff:,.4g} > {s.hi:g} shown",
                              f"H <= {s.hi:g}"))
        s = SHOWN["regional_rounds"]
        if regional_rounds > s.hi:
            out.append(_leave("replicas and sync interval", regional_rounds, s,
                              f"R = {regional_rounds:g} regional rounds: no published hierarchical DiLoCo run",
                              "R = 1"))
    if compression > 1:
        if a.compressor == "topk":
            s = SHOWN["sparsification"]
            if compression > s.hi:
                out.append(_leave("compression", compression, s, f"top-k sparsification {compression:g}x > "
                                  f"{s.hi:g}x shown (pruning law extrapolated)", f"top-k at most {s.hi:g}x"))
        else:
            s = SHOWN["quantise_bits"]
            bits = bits_per_value / compression
            if bits < s.lo:
                out.append(_leave("compression", bits, s, f"{bits:g} bits per value < {s.lo:g} shown (charged as "
                                  f"{s.lo / bits:g}x sparsification)", f"quantised to >= {s.lo:g} bits per value"))
        if h_eff <= 1:
            out.append(_leave("compression", compression, Shown(1, 1, "every compressed row syncs every 30-500 steps"),
                              f"compression {compression:g}x at every step (H = 1): no published run"))
    if streaming and diloco:
        s = SHOWN["overlap_params"]
        if params > s.hi:
            out.append(_leave("overlap", params, s, f"overlapped outer step at {params / 1e9:,.4g}B > {s.hi / 1e9:g}B "
                              "shown: the fitted size trend is extrapolated"))
    if stages > 1 and activation_compression > 1:
        s = SHOWN["activation_compression"]
        out.append(_leave("activations", activation_compression, s,
                          f"activation compression {activation_compression:g}x: no fitted table",
                          "no activation compression"))
    return out


def unshown_compression_note(compression, precisions, bits_per_value, compressor: str) -> str | None:
    """A note when the envelope leaves no listed compression ratio for any precision (else None)."""
    if any(compression_shown(cr, bits_per_value(p), compressor) for cr in compression for p in precisions):
        return None
    return (f"search.compression {', '.join(f'{c:g}' for c in compression)}: no ratio shown for the {compressor} "
            f"method at {', '.join(precisions)} (quantised to >= {SHOWN['quantise_bits'].lo:g} bits per value, "
            f"top-k at most {SHOWN['sparsification'].hi:g}x)")


def binding(values: dict[str, float], compression: float, bits_per_value: float, compressor: str) -> list[str]:
    """The envelope's decision bounds a synchronised optimum sits on (where --beyond-evidence could help)."""
    if not values["synchronised"]:
        return []
    out = []
    if values["replicas"] == SHOWN["replicas"].hi:
        out.append(f"evidence envelope: {values['replicas']:g} replicas, the most shown")
    if values["h_eff"] == SHOWN["h_eff"].hi:
        out.append(f"evidence envelope: H = {values['h_eff']:g}, the longest shown")
    next_ratio = compression * 2.0
    if compression > 1 and not compression_shown(next_ratio, bits_per_value, compressor):
        out.append(f"evidence envelope: compression {compression:g}x, the most shown for {compressor}")
    return out


def beyond_summary(objective: str, status: str, value: float | None, plan: dict | None, leaves_: list[dict],
                   fastest_time_s: float | None) -> dict:
    """What the same question answers with the envelope open (--beyond-evidence), for an answer with no
    plan inside it: the status, the objective value, the plan, the envelope bounds its plan crosses
    (`bounds`: the ones that stopped the search inside) and the quantities it is only marked on."""
    return {"objective": objective, "status": status, "objective_value": value, "plan": plan,
            "bounds": [{k: x[k] for k in ("bound", "value", "shown", "message", "source")} for x in leaves_
                       if x.get("bound")],
            "marked": [x["message"] for x in leaves_ if not x.get("bound")], "fastest_time_s": fastest_time_s}


def plan_words(plan: dict) -> str:
    """A plan in one line: mode, nodes (per pool), precision, then its decisions."""
    words = [str(plan.get("mode")), f"{plan.get('nodes', 0):,} nodes", str(plan.get("precision"))]
    if plan.get("pool_nodes"):
        words[1] += " (" + ", ".join(f"{n:,} {p}" for p, n in plan["pool_nodes"].items()) + ")"
    for key, name in (("inner_steps", "H"), ("compression", "Cr"), ("group_size", "k"), ("regional_rounds", "R"),
                      ("stages", "stages"), ("zero_shards", "ZeRO-3 shards")):
        if plan.get(key) is not None:
            words.append(f"{name} = {plan[key]:g}")
    if plan.get("streaming"):
        words.append("streaming")
    return ", ".join(words)


def value_words(objective: str, value: float) -> str:
    """The answer's value in words, by the objective's key (the summary holds the key, as --json prints it)."""
    words = {"min_time": f"reaches the target in {value / SECONDS_PER_DAY:,.1f} days", "min_cost": f"costs ${value:,.0f}"}
    return words.get(objective, f"reaches {value:.4g} FLOP")


def beyond_line(s: dict) -> str:
    """The reason line naming which envelope bounds stop an answer inside it, and why (`beyond_summary`)."""
    best = {"min_time": "fastest", "min_cost": "cheapest", "max_compute": "best"}[s["objective"]]
    if s["status"] != "optimal" or s["plan"] is None:
        if s["status"] == "time_limit":
            return "evidence envelope: beyond it (--beyond-evidence) the search reached its time limit without a plan"
        fastest = "" if s["fastest_time_s"] is None else \
            f" (the fastest plan reaches the target in {s['fastest_time_s'] / SECONDS_PER_DAY:,.1f} days)"
        return (f"the evidence envelope is not what stops it: beyond it (--beyond-evidence) no plan meets every "
                f"limit either{fastest}")
    crossed = "; ".join(f"{b['bound']} (the plan beyond has {b['message']}; shown: {b['source']})" for b in s["bounds"])
    marked = f"; it is also marked: {'; '.join(s['marked'])}" if s["marked"] else ""
    return (f"evidence envelope stops it: {crossed or 'no decision bound (only marked quantities)'}. The {best} "
            f"plan beyond it (--beyond-evidence) {value_words(s['objective'], s['objective_value'])}: "
            f"{plan_words(s['plan'])}{marked}")


BEYOND_COLUMNS = ("beyond_status", "beyond_objective_value", "beyond_bounds", "beyond_plan")


def beyond_columns(s: dict | None) -> dict:
    """A `beyond_summary` as flat columns (a sweep's row: CSV, Parquet, --json): the status beyond the
    envelope, its objective value (seconds, FLOP or dollars, as `objective_value`), each envelope bound
    its plan crosses with the plan's value there ("replicas <= 8: 64; H <= 100: 140.872"), and the plan in
    one line; every column None when `s` is None (a plan inside the envelope, or the envelope off)."""
    if s is None:
        return dict.fromkeys(BEYOND_COLUMNS)
    bounds = "; ".join(f"{b['bound']}: {b['value']:.6g}" for b in s["bounds"])
    return {"beyond_status": s["status"], "beyond_objective_value": s["objective_value"],
            "beyond_bounds": bounds or None, "beyond_plan": plan_words(s["plan"]) if s["plan"] else None}
