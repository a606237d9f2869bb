"""Fit the dtplan quality model to published same-compute experiments (docs/quality.md).

Reads models/quality/rows.json (each row a published loss with its paper, table and setting) and
writes models/quality/fit.json (parameters, their uncertainty, the three scenarios, every row's
published and predicted eta) and models/assumptions/uncertainty/quality-fit.json (the parameters as
uncertain inputs of `assumptions.constants`, the format of planner/questions/uncertainty.py).
Deterministic: numpy only, a seeded bootstrap, figures rounded to 6 significant digits; a test
reruns it and compares (tests/test_quality_fit.py).

1. Loss -> eta. eta = C_DP(L) / C: the compute a data-parallel run needs to reach the loss L,
   over the run's compute, through the paper's own data-parallel fit L ~ C^b, anchored at the
   paper's data-parallel run of the same size and compute: eta = (L / L_DP)^(1 / b).
   Charles et al. 2025: Table 7, L = 18.129 N^-0.0953 at D = 20 N, so C = 120 N^2 and b = -0.0953 / 2.
   Streaming DiLoCo and Eager Updates: b fitted (least squares, log L on log C) to the paper's own
   data-parallel rows (its printed slope -0.13149 does not state its axes). DiLoCo 2023 (perplexity):
   b of log-perplexity through its two data-parallel runs of Table 2 (1x compute, 8x updates).
   Noise of a row: the loss is rounded to `decimals`, so L and L_DP are each known to half a unit of
   the last digit, u = 0.5 10^-decimals. The rows' eta lies in the rounding interval
   [((L + u) / (L_DP - u))^(1/b), ((L - u) / (L_DP + u))^(1/b)] (b < 0; asymmetric: wider above), of
   half-width about eta * |1/b| (u / L + u / L_DP) (`rounding_noise`). No paper of the fitted tables
   reports a seed spread; the issue's estimate of run-to-run noise, +-0.05 in eta at 1-2B (NOISE_FLOOR),
   is the floor: a row is within noise when its prediction lies in its rounding interval or within
   NOISE_FLOOR of its published eta.
2. The fitted form (ln eta of a row, n = N / 1e9):
      offset_paper - c n^-e (ln M)^g (ln H / ln 30)^d - [overlapped outer step] o n^-f
   offset_paper = a0 + a1 ln n for Charles et al. (tuned per size), one constant for the Streaming /
   Eager protocol (outer learning rate fixed at all sizes). Levenberg-Marquardt in numpy.
3. Uncertainty: bootstrap over the fitted rows (B = 400, seed 20250312); sd and 2.5-97.5 percentiles
   per parameter. The scenarios (assumption `scenario`) are whole bootstrap fits, so that the
   parameters' correlation is kept: optimistic / conservative = the replicates at the 95th / 5th
   percentile of the planner's eta at a reference plan (N = 10B, M = 8, H = 100, blocking), expected
   the fit itself.
4. Compression (DiLoCo 2023 Table 6, pruned outer gradients, 150M, k = 8, H = 500):
   ln eta_C = -k (r - 1)^p, r = 1 / (1 - pruned fraction) the sparsification; eta_C against the
   unpruned run (0%). Three rows, two parameters: the scenarios refit with every loss moved by its
   rounding half-unit the favourable / unfavourable way.
5. Checks written beside the fit (not used by the planner): per row outside its rounding interval, the
   run-to-run sd of the data-parallel run's loss that would take the prediction in (`spread_to_within`);
   and the same form fitted to the rows' rounding intervals instead of their printed values
   (`interval_fit`), which shows the rows outside are the form's, not the least-squares choice's.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
ROWS = ROOT / "models" / "quality" / "rows.json"
FIT = ROOT / "models" / "quality" / "fit.json"
UNCERTAINTY = ROOT / "models" / "assumptions" / "uncertainty" / "quality-fit.json"
SEED = 20250312
BOOTSTRAP = 400
REFERENCE_PLAN = {"params": 1e10, "replicas": 8, "h": 100}
NOISE_FLOOR = 0.05     # the estimate of run-to-run noise in eta at 1-2B (not published by the papers)
MAIN = ("fit_offset", "fit_offset_size_slope", "fixed_hp_offset", "fit_replica_coefficient",
        "fit_replica_size_exponent", "fit_replica_power", "fit_h_power", "fit_overlap_coefficient",
        "fit_overlap_size_exponent")
MEANING = {
    "fit_offset": "a0: ln eta of DiLoCo M = 1 against data-parallel at 1B (Charles et al., tuned per size)",
    "fit_offset_size_slope": "a1: growth of that offset per unit of ln(N / 1B)",
    "fixed_hp_offset": "the offset under the Streaming / Eager protocol (outer LR fixed at all sizes); fitting only",
    "fit_replica_coefficient": "c: replica penalty at N = 1B, H = 30, ln M = 1",
    "fit_replica_size_exponent": "e: the replica penalty falls as N^-e",
    "fit_replica_power": "g: the penalty grows as (ln M)^g",
    "fit_h_power": "d: the penalty grows as (ln H / ln 30)^d (0 at H = 1, data-parallel)",
    "fit_overlap_coefficient": "o: cost of an outer step overlapped with the next (eager updates) at N = 1B",
    "fit_overlap_size_exponent": "f: the overlap cost falls as N^-f",
    "fit_prune_coefficient": "k: ln eta_C = -k (r - 1)^p for a sparsification r (fraction kept 1 / r)",
    "fit_prune_power": "p: see fit_prune_coefficient",
}


def sig(x: float, digits: int = 6) -> float:
    return float(f"{x:.{digits}g}")


def levenberg_marquardt(residual, p0, iterations: int = 200):
    """Minimise |residual(p)|^2 (numerical Jacobian, damped Gauss-Newton); returns (p, jacobian)."""
    p = np.asarray(p0, dtype=float)
    lam = 1e-3
    r = residual(p)
    for _ in range(iterations):
        jac = np.empty((r.size, p.size))
        for j in range(p.size):
            step = 1e-7 * max(1.0, abs(p[j]))
            q = p.copy()
            q[j] += step
            jac[:, j] = (residual(q) - r) / step
        a = jac.T @ jac
        g = jac.T @ r
        while True:
            delta = np.linalg.solve(a + lam * np.diag(np.diag(a) + 1e-12), -g)
            r_new = residual(p + delta)
            if np.all(np.isfinite(r_new)) and r_new @ r_new < r @ r:
                p, r, lam = p + delta, r_new, max(lam / 3.0, 1e-9)
                break
            lam *= 4.0
            if lam > 1e12:
                return p, jac
        if np.max(np.abs(delta)) < 1e-12:
            break
    return p, jac


def dp_exponents(data: dict) -> dict[str, float]:
    """b of L ~ C^b per paper (module docstring, 1)."""
    rows = data["rows"]
    out = {"charles2025": data["papers"]["charles2025"]["dp_fit"]["alpha"] / 2.0}
    for paper in ("streaming2025", "eager2025"):
        dp = [r for r in rows if r["paper"] == paper and r["method"] == "data-parallel"]
        out[paper] = float(np.polyfit(np.log([r["flop"] for r in dp]), np.log([r["loss"] for r in dp]), 1)[0])
    by_id = {r["id"]: r for r in rows}
    one, eight = by_id["diloco2023-t2-baseline"], by_id["diloco2023-t2-8x-updates"]
    out["diloco2023"] = math.log(math.log(eight["perplexity"]) / math.log(one["perplexity"])) / math.log(8.0)
    return out


def _loss(row: dict) -> float:
    return row["loss"] if "loss" in row else math.log(row["perplexity"])


def published_eta(data: dict, b: dict[str, float]) -> dict[str, dict]:
    """eta and its rounding noise for every row with a baseline (module docstring, 1)."""
    by_id = {r["id"]: r for r in data["rows"]}
    out = {}
    for r in data["rows"]:
        if "baseline" not in r or r["role"] == "not_converted":
            continue
        base = by_id[r["baseline"]]
        inv = 1.0 / b[r["paper"]]
        loss, loss_dp = _loss(r), _loss(base)
        ln_eta = inv * math.log(loss / loss_dp)
        if r["paper"] == "diloco2023" and r["role"] != "compression":   # DiLoCo at 8x compute, DP curve from 1x
            base = by_id["diloco2023-t2-baseline"]        # its rounding too (the 8x-batch run is not in eta)
            ln_eta = inv * math.log(loss / _loss(base)) - math.log(r["compute_multiple"])
            loss_dp = _loss(base)
        u = 0.5 * 10.0 ** -r["decimals"]
        if "perplexity" in r:      # rounding of the perplexity, in log-perplexity
            du, du_dp = u / r["perplexity"], u / base["perplexity"]
        else:
            du, du_dp = u, u
        rel = du / loss + du_dp / loss_dp
        eta = math.exp(ln_eta)
        ends = sorted(math.exp(ln_eta + inv * (math.log((loss + s * du) / loss) - math.log((loss_dp - s * du_dp) / loss_dp)))
                      for s in (1.0, -1.0))          # the rounding's two worst cases
        out[r["id"]] = {"eta": eta, "noise": eta * abs(inv) * rel, "interval": ends, "ln_eta": ln_eta,
                        "loss": loss, "loss_dp": loss_dp, "half_unit": du, "half_unit_dp": du_dp, "b": b[r["paper"]]}
    return out


def noise_rule(eta, pr, lo, hi):
    """(inside the rounding interval, within noise) of predictions pr against published eta (module docstring, 1):
    within noise = inside [lo, hi] or within NOISE_FLOOR of eta. Scalars or numpy arrays alike."""
    inside = (pr >= lo) & (pr <= hi)
    return inside, inside | (abs(eta - pr) <= NOISE_FLOOR)


def spread_to_within(e: dict, pr: float) -> float | None:
    """The run-to-run spread s of the data-parallel baseline's loss (in the row's loss units: nats, or
    log-perplexity) that, added to the rounding on that one run, would widen the row's interval to take
    in the prediction pr (module docstring, 1). The interval's ends move the losses by their half-units
    u, u_DP the unfavourable ways, ln eta_end = ln eta + (1/b) (ln((L + u) / L) - ln((L_DP - u_DP - s) / L_DP))
    below (b < 0) and the signs reversed above; pr on an end gives, with x = exp(-b (ln pr - ln eta)),
        below:  s = L_DP - u_DP - L_DP x (L + u) / L        above:  s = L_DP x (L - u) / L - L_DP - u_DP,
    for a plain row (eta = (L / L_DP)^(1/b)) s = L_DP - u_DP - (L + u) pr^-b and (L - u) pr^-b - L_DP - u_DP.
    None when pr is inside the rounding interval already."""
    lo, hi = e["interval"]
    if lo <= pr <= hi:
        return None
    loss, loss_dp, u, u_dp, b = e["loss"], e["loss_dp"], e["half_unit"], e["half_unit_dp"], e["b"]
    x = math.exp(-b * (math.log(pr) - e["ln_eta"]))
    if pr < lo:
        return loss_dp - u_dp - loss_dp * x * (loss + u) / loss
    return loss_dp * x * (loss - u) / loss - loss_dp - u_dp


def interval_fit(rows: list[dict], eta: dict[str, dict], p0) -> dict:
    """The same form fitted to the rows' rounding intervals instead of their printed values: least squares of
    each prediction's distance (in ln eta) outside its row's interval, with the printed values at weight
    1e-3 to choose among equal fits. A check of the form (docs/quality.md, "Forms tried"), not the model."""
    f = features(rows)
    lo = np.log([eta[r["id"]]["interval"][0] for r in rows])
    hi = np.log([eta[r["id"]]["interval"][1] for r in rows])
    y = np.log([eta[r["id"]]["eta"] for r in rows])

    def outside(q):
        m = model(q, f)
        return np.maximum(lo - m, 0.0) + np.maximum(m - hi, 0.0)
    p, _ = levenberg_marquardt(lambda q: np.concatenate([outside(q), 1e-3 * (model(q, f) - y)]), p0)
    inside, within = noise_rule(np.exp(y), np.exp(model(p, f)), np.exp(lo), np.exp(hi))
    return {"rows_outside_noise": int((~within).sum()), "rows_within_rounding": int(inside.sum()),
            "largest_outside_ln_eta": sig(float(outside(p).max()), 3),
            "parameters": {k: sig(v) for k, v in zip(MAIN, p)}}


def features(rows: list[dict]) -> dict[str, np.ndarray]:
    return {"n": np.array([r["params"] for r in rows]) / 1e9,
            "m": np.array([r["replicas"] for r in rows], dtype=float),
            "h": np.array([r["h"] for r in rows], dtype=float),
            "overlap": np.array([1.0 if r.get("overlap_outer_steps") == 1 else 0.0 for r in rows]),
            "tuned": np.array([1.0 if r["paper"] == "charles2025" else 0.0 for r in rows])}


def model(p, f) -> np.ndarray:
    """ln eta of rows (module docstring, 2)."""
    a0, a1, fixed, c, e, g, d, o, fo = p
    offset = np.where(f["tuned"] > 0, a0 + a1 * np.log(f["n"]), fixed)
    penalty = c * f["n"] ** -e * np.log(f["m"]) ** g * (np.log(f["h"]) / math.log(30.0)) ** d
    return offset - penalty - f["overlap"] * o * f["n"] ** -fo


def planner_ln_eta(p, n_b, m, h) -> float:
    """The planner's ln eta of a blocking plan (planner/cost/quality_fit.py): min(0, offset - penalty)."""
    a0, a1, _, c, e, g, d, _, _ = p
    return min(0.0, a0 + a1 * math.log(n_b) - c * n_b ** -e * math.log(m) ** g * (math.log(h) / math.log(30.0)) ** d)


def fit_main(rows, y, p0):
    f = features(rows)
    p, jac = levenberg_marquardt(lambda q: model(q, f) - y, p0)
    return p


def fit_prune(r, y):
    p, _ = levenberg_marquardt(lambda q: -q[0] * (r - 1.0) ** q[1] - y, [0.1, 1.0])
    return p


def main() -> dict:
    data = json.loads(ROWS.read_text())
    b = dp_exponents(data)
    eta = published_eta(data, b)
    fitted = [r for r in data["rows"] if r["role"] == "fit"]
    y = np.log([eta[r["id"]]["eta"] for r in fitted])
    p0 = [0.05, 0.01, 0.0, 0.1, 0.3, 1.0, 1.0, 0.1, 0.3]
    central = fit_main(fitted, y, p0)
    rng = np.random.default_rng(SEED)
    boots = []
    for _ in range(BOOTSTRAP):
        pick = rng.integers(0, len(fitted), len(fitted))
        boots.append(fit_main([fitted[i] for i in pick], y[pick], central))
    boots = np.array(boots)
    ref = REFERENCE_PLAN
    score = np.array([planner_ln_eta(q, ref["params"] / 1e9, ref["replicas"], ref["h"]) for q in boots])
    order = np.argsort(score, kind="stable")
    conservative = boots[order[int(0.05 * (len(order) - 1))]]
    optimistic = boots[order[int(0.95 * (len(order) - 1))]]
    # compression law (module docstring, 4)
    comp = [r for r in data["rows"] if r["role"] == "compression"]
    ratio = np.array([1.0 / (1.0 - r["pruned_fraction"]) for r in comp])
    y_c = np.log([eta[r["id"]]["eta"] for r in comp])
    w_c = np.array([eta[r["id"]]["noise"] / eta[r["id"]]["eta"] for r in comp])
    prune = {"expected": fit_prune(ratio, y_c), "optimistic": fit_prune(ratio, y_c + w_c),
             "conservative": fit_prune(ratio, y_c - w_c)}
    scenarios = {name: {k: sig(v) for k, v in zip(MAIN, q) if k != "fixed_hp_offset"}
                 for name, q in (("optimistic", optimistic), ("expected", central), ("conservative", conservative))}
    for name in scenarios:
        scenarios[name].update(fit_prune_coefficient=sig(prune[name][0]), fit_prune_power=sig(prune[name][1]))
    parameters = {}
    for j, name in enumerate(MAIN):
        lo, hi = np.percentile(boots[:, j], [2.5, 97.5])
        parameters[name] = {"central": sig(central[j]), "sd": sig(boots[:, j].std(ddof=1)),
                            "interval95": [sig(lo), sig(hi)], "meaning": MEANING[name]}
    for j, name in enumerate(("fit_prune_coefficient", "fit_prune_power")):
        values = sorted(prune[s][j] for s in prune)
        parameters[name] = {"central": sig(prune["expected"][j]), "sd": sig((values[2] - values[0]) / 2.0),
                            "interval95": [sig(values[0]), sig(values[2])], "meaning": MEANING[name]}
    # every converted row: published and predicted eta, residual, noise
    table = []
    f_all = [r for r in data["rows"] if r["id"] in eta and r["role"] in ("fit", "held_out")
             and r["method"] in ("diloco", "streaming", "streaming-eager", "diloco-eager")
             and r.get("overlap_outer_steps", 0) <= 1]
    pred = np.exp(model(central, features(f_all)))
    def judged(e: dict, pr: float) -> dict:
        """The row's noise and whether the prediction pr is within it (module docstring, 1)."""
        lo, hi = e["interval"]
        inside, within = noise_rule(e["eta"], pr, lo, hi)
        return {"eta_published": sig(e["eta"], 4), "rounding_noise": sig(e["noise"], 3),
                "rounding_interval": [sig(lo, 4), sig(hi, 4)], "eta_predicted": sig(float(pr), 4),
                "residual": sig(e["eta"] - float(pr), 3), "outside_rounding_by": sig(max(lo - pr, pr - hi, 0.0), 3),
                "spread_to_within": None if (s := spread_to_within(e, float(pr))) is None else sig(s, 3),
                "within_rounding": bool(inside), "within_noise": bool(within)}

    for r, pr in zip(f_all, pred):
        table.append({"id": r["id"], "paper": r["paper"], "table": r["table"], "role": r["role"],
                      "params": r["params"], "replicas": r["replicas"], "h": r["h"],
                      "overlap_outer_steps": r.get("overlap_outer_steps", 0), **judged(eta[r["id"]], float(pr))})
    for r, rr in zip(comp, ratio):
        pr = math.exp(-prune["expected"][0] * (rr - 1.0) ** prune["expected"][1])
        table.append({"id": r["id"], "paper": r["paper"], "table": r["table"], "role": "fit (compression)",
                      "params": r["params"], "replicas": r["replicas"], "h": r["h"], "sparsification": sig(rr),
                      **judged(eta[r["id"]], pr)})
    fitted_rows = [t for t in table if t["role"].startswith("fit")]
    out = {
        "description": "The dtplan quality model's fit (written by scripts/fit_quality.py from models/quality/rows.json; "
                       "do not edit by hand). Form, conversion and uncertainty in the script's docstring and docs/quality.md.",
        "dp_exponents": {k: sig(v) for k, v in b.items()},
        "reference_plan": REFERENCE_PLAN, "bootstrap": {"replicates": BOOTSTRAP, "seed": SEED},
        "noise_floor": NOISE_FLOOR,
        "parameters": parameters, "scenarios": scenarios,
        "summary": {"fitted_rows": len(fitted_rows),
                    "within_noise": sum(t["within_noise"] for t in fitted_rows),
                    "within_rounding": sum(t["within_rounding"] for t in fitted_rows),
                    "rms_residual": sig(float(np.sqrt(np.mean([t["residual"] ** 2 for t in fitted_rows]))), 3)},
        "interval_fit": interval_fit(fitted, eta, central),
        "rows": table,
    }
    inputs = []
    for name in list(MAIN) + ["fit_prune_coefficient", "fit_prune_power"]:
        if name == "fixed_hp_offset":
            continue
        q = parameters[name]
        lo, hi = q["interval95"]
        lo = max(lo, 0.0)
        if name in ("fit_replica_power", "fit_h_power", "fit_prune_power"):
            lo = max(lo, 1e-3)      # must stay > 0 (the penalty must grow with M, H and r)
        inputs.append({"field": f"assumptions.constants.{name}",
                       "distribution": f"normal({q['central']}, {q['sd']})", "interval": [sig(lo), sig(hi)],
                       "source": f"scripts/fit_quality.py on models/quality/rows.json: {q['meaning']}; central value "
                                 f"and bootstrap standard deviation; interval = bootstrap 2.5-97.5 percentiles"
                                 + (" (compression: the fits with every loss moved by its rounding half-unit)"
                                    if "prune" in name else "")})
    uncertainty = {"description": "The dtplan quality fit's parameters as uncertain inputs (written by "
                                  "scripts/fit_quality.py; do not edit by hand). Each entry is an assumption constant "
                                  "of planner/cost/quality_fit.py; draws are independent, so the parameters' "
                                  "correlation (kept by the scenarios of models/quality/fit.json) is ignored, which "
                                  "widens the spread. Applies to the dtplan profile (replica_penalty 'fitted').",
                   "inputs": inputs}
    return {"fit": out, "uncertainty": uncertainty}


def dumps(obj) -> str:
    return json.dumps(obj, indent=1) + "\n"


if __name__ == "__main__":
    result = main()
    FIT.write_text(dumps(result["fit"]))
    UNCERTAINTY.write_text(dumps(result["uncertainty"]))
    s = result["fit"]["summary"]
    print(f"wrote {FIT.relative_to(ROOT)} and {UNCERTAINTY.relative_to(ROOT)}: {s['within_noise']} of "
          f"{s['fitted_rows']} fitted rows within noise, {s['within_rounding']} within rounding, rms {s['rms_residual']}")
    sys.exit(0)
