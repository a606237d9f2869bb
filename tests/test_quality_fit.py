"""The fitted quality model (planner/cost/quality_fit.py), its fit (scripts/fit_quality.py) and the
evidence envelope (planner/cost/envelope.py); docs/quality.md."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import math
from pathlib import Path

import numpy as np
import pytest

from planner.cost import envelope, quality_fit
from planner.cost.assumptions import SCENARIOS, load_profile
from planner.evaluate import evaluate, setting_from_instance
from planner.schema.instance import parse_instance
from planner.schema.plan import parse_plan
from planner.space import DecisionSpace
from tests.test_bnb import check_against_brute_force, random_case

ROOT = Path(__file__).resolve().parents[1]
FIT = json.loads((ROOT / "models" / "quality" / "fit.json").read_text())
ROWS = {r["id"]: r for r in FIT["rows"]}
DTPLAN = load_profile("dtplan")


def _script():
    spec = importlib.util.spec_from_file_location("fit_quality", ROOT / "scripts" / "fit_quality.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _instance(constants=None, nodes=8, params=1e9, target_flop=1e22):
    return parse_instance({"model": {"params": params}, "training": {"target_flop": target_flop},
                           "fleet": {"hardware": "16xH100-SXM", "nodes": nodes},
                           "network": {"wan": {"up_mbps": 1000, "down_mbps": 1000, "rtt_ms": 50}},
                           "assumptions": {"profile": "dtplan", **({"constants": constants} if constants else {})}})


# -- the fit ------------------------------------------------------------------------------------------------


def test_the_written_fit_is_a_rerun_of_the_script():
    """models/quality/fit.json and the uncertainty file cannot drift from the data: a rerun writes them again."""
    script = _script()
    result = script.main()
    assert (ROOT / "models" / "quality" / "fit.json").read_text() == script.dumps(result["fit"])
    assert (ROOT / "models" / "assumptions" / "uncertainty" / "quality-fit.json").read_text() == \
        script.dumps(result["uncertainty"])


def test_loss_to_eta_by_hand():
    # Charles et al. 2025: DP fit L = 18.129 N^-0.0953 at D = 20 N, so L ~ C^(-0.0953 / 2). 2.4B, M = 4:
    # eta = (2.332 / 2.326)^(-2 / 0.0953); rounding half a unit of 0.001 on both losses
    eta = (2.332 / 2.326) ** (-2 / 0.0953)
    assert ROWS["charles-t4-2.4B-m4"]["eta_published"] == pytest.approx(eta, rel=1e-3)
    noise = eta * (2 / 0.0953) * (0.0005 / 2.332 + 0.0005 / 2.326)
    assert ROWS["charles-t4-2.4B-m4"]["rounding_noise"] == pytest.approx(noise, rel=1e-2)
    # Streaming DiLoCo: slope of log L on log C over its seven data-parallel rows (Table 5), by the normal equations
    flop = np.log([1.5e17, 9.4e17, 4e18, 1.4e19, 4.7e19, 1.9e20, 2e21])
    loss = np.log([3.51, 3.19, 2.97, 2.80, 2.67, 2.49, 2.25])
    b = ((flop - flop.mean()) * (loss - loss.mean())).sum() / ((flop - flop.mean()) ** 2).sum()
    assert FIT["dp_exponents"]["streaming2025"] == pytest.approx(b, rel=1e-5)
    assert ROWS["streaming-t6-1B-m4-h100"]["eta_published"] == pytest.approx((2.53 / 2.49) ** (1 / b), rel=1e-3)
    # DiLoCo 2023 Table 6, 75% pruned: log-perplexity against the unpruned run, through the two DP runs of Table 2
    b_ppl = math.log(math.log(14.72) / math.log(16.23)) / math.log(8)
    assert ROWS["diloco2023-t6-pruned-75"]["eta_published"] == pytest.approx(
        (math.log(15.27) / math.log(15.02)) ** (1 / b_ppl), rel=1e-3)


def test_rounding_interval_by_hand():
    """A row's eta lies between the two worst cases of the rounding (docs/quality.md, section 2)."""
    flop = np.log([1.5e17, 9.4e17, 4e18, 1.4e19, 4.7e19, 1.9e20, 2e21])
    loss = np.log([3.51, 3.19, 2.97, 2.80, 2.67, 2.49, 2.25])
    b = ((flop - flop.mean()) * (loss - loss.mean())).sum() / ((flop - flop.mean()) ** 2).sum()
    # Streaming DiLoCo 1B, M = 2, H = 30: 2.48 against data-parallel 2.49, each +-0.005
    row = ROWS["streaming-t5-1B-streaming-h30"]
    lo, hi = (2.485 / 2.485) ** (1 / b), (2.475 / 2.495) ** (1 / b)
    assert row["rounding_interval"] == pytest.approx([lo, hi], rel=1e-3)
    assert lo == 1.0 and hi == pytest.approx(1.189, abs=1e-3)
    assert row["outside_rounding_by"] == pytest.approx(lo - row["eta_predicted"], abs=2e-3)
    assert not row["within_rounding"] and not row["within_noise"]       # 0.944 predicted, 0.146 below 1.090
    # the rule: inside the interval, or within the floor of the published eta
    for r in FIT["rows"]:
        lo, hi = r["rounding_interval"]
        assert lo <= r["eta_published"] <= hi
        inside = lo <= r["eta_predicted"] <= hi
        assert r["within_rounding"] == inside
        assert r["within_noise"] == (inside or abs(r["residual"]) <= FIT["noise_floor"])


def test_the_spread_that_would_take_a_prediction_in_by_hand():
    """spread_to_within: the sd s of the data-parallel run's loss that, with the rounding, puts the prediction on an
    end of the widened interval (docs/quality.md, section 2)."""
    flop = np.log([1.5e17, 9.4e17, 4e18, 1.4e19, 4.7e19, 1.9e20, 2e21])
    loss = np.log([3.51, 3.19, 2.97, 2.80, 2.67, 2.49, 2.25])
    b = ((flop - flop.mean()) * (loss - loss.mean())).sum() / ((flop - flop.mean()) ** 2).sum()
    # Streaming DiLoCo 1B, M = 2, H = 30: 2.48 against 2.49, prediction below the interval's lower end 1.0
    row = ROWS["streaming-t5-1B-streaming-h30"]
    pr = row["eta_predicted"]
    s = _bisect_root(lambda x: ((2.48 + 0.005) / (2.49 - 0.005 - x)) ** (1 / b) - pr, 0.0, 0.1)
    assert row["spread_to_within"] == pytest.approx(s, rel=2e-3)
    assert 0.006 < s < 0.007
    # Eager Updates 300M, H = 30: 2.86 against 2.80, prediction above the interval's upper end
    b_e = FIT["dp_exponents"]["eager2025"]
    row = ROWS["eager-t6-300M-eager-h30"]
    pr = row["eta_predicted"]
    s = _bisect_root(lambda x: ((2.86 - 0.005) / (2.80 + 0.005 + x)) ** (1 / b_e) - pr, 0.0, 0.1)
    assert row["spread_to_within"] == pytest.approx(s, rel=2e-3)
    # DiLoCo 2023 Table 2 (held out): log-perplexity at 8x the compute, eta = (ln P / ln P_DP)^(1/b) / 8
    b_ppl = math.log(math.log(14.72) / math.log(16.23)) / math.log(8)
    row = ROWS["diloco2023-t2-diloco"]
    pr, lp, lp_dp = row["eta_predicted"], math.log(15.02), math.log(16.23)
    u, u_dp = 0.005 / 15.02, 0.005 / 16.23          # its rounding: the row and the 1x run its eta runs through
    assert pr < row["rounding_interval"][0]
    s = _bisect_root(lambda x: ((lp + u) / (lp_dp - u_dp - x)) ** (1 / b_ppl) / 8 - pr, 0.0, 1.0)
    assert row["spread_to_within"] == pytest.approx(s, rel=2e-3)
    # inside the rounding interval: nothing to widen
    assert all((r["spread_to_within"] is None) == r["within_rounding"] for r in FIT["rows"])


def _bisect_root(f, lo: float, hi: float) -> float:
    """Bisection for the root of a monotone f on [lo, hi] (a hand check independent of the script's closed form)."""
    f_lo = f(lo)
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if (f(mid) > 0) == (f_lo > 0):
            lo, f_lo = mid, f(mid)
        else:
            hi = mid
    return 0.5 * (lo + hi)


def test_the_interval_fit_reports_what_its_parameters_give():
    """The form fitted to the rounding intervals (a check of the form, docs/quality.md 'Forms tried'): its counts are
    those its own parameters give, recomputed here from the written rows' intervals."""
    script = _script()
    q = FIT["interval_fit"]
    p = [q["parameters"][k] for k in script.MAIN]
    data = json.loads((ROOT / "models" / "quality" / "rows.json").read_text())
    fitted = [r for r in data["rows"] if r["role"] == "fit"]
    pr = np.exp(script.model(p, script.features(fitted)))
    outside_noise = inside = 0
    for r, x in zip(fitted, pr):
        w = ROWS[r["id"]]
        lo, hi = w["rounding_interval"]
        ok = lo <= x <= hi
        inside += ok
        outside_noise += not (ok or abs(w["eta_published"] - x) <= FIT["noise_floor"])
    assert abs(outside_noise - q["rows_outside_noise"]) <= 1 and abs(inside - q["rows_within_rounding"]) <= 1
    assert q["rows_outside_noise"] > FIT["summary"]["fitted_rows"] - FIT["summary"]["within_noise"]


def test_the_fit_meets_the_published_noise_on_most_rows():
    s = FIT["summary"]
    assert s["fitted_rows"] == 74 and s["within_noise"] >= 70
    assert all(abs(r["residual"]) <= max(r["rounding_noise"], FIT["noise_floor"]) for r in FIT["rows"]
               if r["role"] == "fit" and r["paper"] == "charles2025")


# -- the factors ---------------------------------------------------------------------------------------------


def test_replica_interval_factor_by_hand():
    p = FIT["scenarios"]["expected"]
    # N = 10B (offset held at 2.4B, the largest size it was fitted on), K = 8, H = 100
    offset = p["fit_offset"] + p["fit_offset_size_slope"] * math.log(2.4)
    penalty = (p["fit_replica_coefficient"] * 10 ** -p["fit_replica_size_exponent"] * math.log(8) ** p["fit_replica_power"]
               * (math.log(100) / math.log(30)) ** p["fit_h_power"])
    got = float(quality_fit.replica_interval_factor(8, 1e10, 100, DTPLAN))
    assert got == pytest.approx(min(1.0, math.exp(offset - penalty)), rel=1e-12)
    assert got < 1.0


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_every_factor_is_at_most_one_and_never_rises_with_replicas_interval_or_compression(scenario):
    rng = np.random.default_rng(7)
    inputs = json.loads((ROOT / "models" / "assumptions" / "uncertainty" / "quality-fit.json").read_text())["inputs"]
    for draw in range(20):      # the fit's scenario, then parameters drawn inside their bootstrap intervals
        a = DTPLAN.replace(scenario=scenario)
        if draw:
            a = a.replace(**{i["field"].split(".")[-1]: float(rng.uniform(*i["interval"])) for i in inputs})
        k, h = np.meshgrid(np.arange(1, 200), np.unique(np.geomspace(1, 2000, 60).round()), indexing="ij")
        params = float(10 ** rng.uniform(7, 12.5))
        f = quality_fit.replica_interval_factor(k, params, h, a)
        assert (f <= 1).all() and (f[0, :] == 1).all() and (f[:, 0] == 1).all()
        assert (np.diff(f, axis=0) <= 0).all() and (np.diff(f, axis=1) <= 0).all()
        cr = np.geomspace(1, 1000, 50)
        for compressor in ("ratio", "quantise", "topk"):
            q = quality_fit.compression_quality(cr, 16.0, a.replace(compressor=compressor))
            assert (q <= 1).all() and (np.diff(q) <= 0).all()
        assert 0 < quality_fit.overlap_factor(params, a) <= 1


def test_scenarios_order_the_reference_plan():
    ref = FIT["reference_plan"]
    eta = [float(quality_fit.replica_interval_factor(ref["replicas"], ref["params"], ref["h"], DTPLAN.replace(scenario=s)))
           for s in ("optimistic", "expected", "conservative")]
    assert eta[0] > eta[1] > eta[2]


def test_compression_by_method():
    p = FIT["scenarios"]["expected"]
    # quantise / ratio: 16-bit values to 4 bits (Cr = 4) cost nothing; to 2 bits, as 2x sparsification
    assert float(quality_fit.compression_quality(4.0, 16.0, DTPLAN)) == 1.0
    assert float(quality_fit.compression_quality(8.0, 16.0, DTPLAN)) == pytest.approx(math.exp(-p["fit_prune_coefficient"]))
    # fp8 values (8 bits) at Cr = 2 are 4 bits: free
    assert float(quality_fit.compression_quality(2.0, 8.0, DTPLAN)) == 1.0
    # top-k 4x (75% pruned) against DiLoCo 2023 Table 6: within the row's noise
    topk = float(quality_fit.compression_quality(4.0, 16.0, DTPLAN.replace(compressor="topk")))
    row = ROWS["diloco2023-t6-pruned-75"]
    assert abs(topk - row["eta_published"]) <= row["rounding_noise"]


def test_constants_set_per_instance_override_the_fit_and_are_checked():
    a = _instance({"fit_replica_coefficient": 0.2, "fit_offset": 0.0}).resolved_assumptions()
    assert quality_fit.parameter(a, "fit_replica_coefficient") == 0.2
    assert quality_fit.parameter(a, "fit_h_power") == FIT["scenarios"]["expected"]["fit_h_power"]
    from planner.schema.errors import InputError
    with pytest.raises(InputError) as info:
        _instance({"fit_h_power": 0})
    assert "assumptions.constants.fit_h_power" in str(info.value)


def test_the_uncertainty_file_loads_and_each_entry_is_a_constant():
    from planner.questions.uncertainty import load_uncertainty
    inputs = load_uncertainty(ROOT / "models" / "assumptions" / "uncertainty" / "quality-fit.json")
    names = {i.field.split(".")[-1] for i in inputs}
    assert names == set(quality_fit.PARAMETERS)
    raw = json.loads((ROOT / "models" / "assumptions" / "uncertainty" / "quality-fit.json").read_text())["inputs"]
    for end in (0, 1):
        _instance({i["field"].split(".")[-1]: i["interval"][end] for i in raw})


def test_eta_never_exceeds_one_and_data_parallel_is_one():
    inst = _instance(nodes=64)
    dp = evaluate(inst, parse_plan({"mode": "flat", "nodes": 64, "precision": "fp16", "inner_steps": 1,
                                    "streaming": False})).values
    assert dp["eta"] == 1.0
    # overlapped with the next step, the update lands a step late: charged as an overlapped outer step
    late = evaluate(inst, parse_plan({"mode": "flat", "nodes": 64, "precision": "fp16", "inner_steps": 1})).values
    assert late["eta"] == pytest.approx(quality_fit.overlap_factor(1e9, DTPLAN), rel=1e-12)
    m2 = evaluate(inst, parse_plan({"mode": "flat", "nodes": 2, "precision": "fp16", "inner_steps": 30,
                                    "streaming": False})).values
    assert m2["eta"] <= 1.0 and m2["eta_h"] == 1.0


def test_the_reference_profile_is_untouched():
    ref = parse_instance({"model": {"params": 1e9}, "training": {"target_flop": 1e22},
                          "fleet": {"hardware": "16xH100-SXM", "nodes": 8}})
    a = ref.resolved_assumptions()
    assert a.replica_penalty == "chinchilla" and not envelope.on(a)
    e = evaluate(ref, parse_plan({"mode": "flat", "nodes": 8, "precision": "fp16", "inner_steps": 30}))
    assert e.envelope is None and "envelope" not in e.to_dict()


# -- the envelope ----------------------------------------------------------------------------------------


def test_evaluate_lists_each_way_a_plan_leaves_the_envelope():
    inst = _instance(nodes=72, params=20e9)
    e = evaluate(inst, parse_plan({"mode": "flat", "nodes": 72, "precision": "fp16", "inner_steps": 1,
                                   "compression": 16}))
    messages = [x["message"] for x in e.to_dict()["envelope"]]
    assert "replicas 72 > 8 shown" in messages
    assert "compression 16x at every step (H = 1): no published run" in messages
    assert "1 bits per value < 4 shown (charged as 4x sparsification)" in messages
    assert any(m.startswith("model 20B > 4B shown") for m in messages)
    row = next(x for x in e.envelope if x["message"] == "replicas 72 > 8 shown")
    assert (row["term"], row["value"], row["shown"]) == ("replicas and sync interval", 72, [1, 8])
    from planner.present.envelope import envelope_lines
    assert envelope_lines(e)[0].startswith("plan outside the evidence envelope")
    inside = evaluate(_instance(nodes=4, target_flop=6 * 1e9 * 20e9), parse_plan({"mode": "flat", "nodes": 4, "precision": "fp16",
                                                      "inner_steps": 30, "compression": 4, "streaming": False}))
    assert inside.envelope == [] and envelope_lines(inside)[0].startswith("plan inside the evidence envelope")


def test_the_search_space_is_cut_to_the_envelope():
    inst = _instance(nodes=64)
    s = setting_from_instance(inst)
    space = DecisionSpace.from_instance(inst, s)
    assert space.max_inner_steps == 100 and space.max_regional_rounds == 1 and space.activation_compression == (1.0,)
    for mode in ("flat", "hierarchical", "pp_group"):
        for precision in space.precisions:
            c = space.classes(s, mode, precision)
            if c is None:
                continue
            assert (c.n_hi <= 8).all()
            bits = s.assumptions.bits_per_value(precision)
            assert all(bits / cr >= 4 for cr in c.rows.compression)
    beyond = _instance({"evidence_envelope": False}, nodes=64)
    open_space = DecisionSpace.from_instance(beyond, setting_from_instance(beyond))
    assert open_space.max_inner_steps == inst.search.max_inner_steps


def _fitted_case(seed: int, inside: bool):
    setting, space, streaming = random_case(seed)
    rng = np.random.default_rng(seed + 24_000_000)
    a = setting.assumptions.replace(replica_penalty="fitted", evidence_envelope=inside,
                                    scenario=str(rng.choice(SCENARIOS)),
                                    compressor=str(rng.choice(["ratio", "quantise", "topk"])))
    setting = setting.replace(assumptions=a)
    space = dataclasses.replace(space, compression=(1.0, 2.0, 4.0, 16.0))
    if inside:
        space = space.within_envelope()

    def keep(mode, b, out):
        if mode == "pipeline_wan":
            return np.ones(b.size, dtype=bool)
        bits = a.bits_per_value(b.precision)
        return (out["replicas"] <= 8) & np.array([envelope.compression_shown(cr, bits, a.compressor)
                                                  for cr in b.compression], dtype=bool)
    return setting, space, streaming, keep if inside else None


@pytest.mark.parametrize("inside", [True, False])
@pytest.mark.parametrize("objective", ["min_time", "max_compute", "min_cost"])
@pytest.mark.parametrize("seed", range(24_000, 24_010))
def test_bnb_matches_brute_force_under_the_fitted_model(seed, objective, inside):
    """The envelope is a restriction of the decision space: the branch and bound on the cut space agrees
    with a brute force that scores every plan and keeps those inside (replicas <= 8, compression shown)."""
    setting, space, streaming, keep = _fitted_case(seed, inside)
    check_against_brute_force(setting, space, streaming, objective, rel=1e-12, keep=keep)


def test_beyond_evidence_flag_opens_the_space(tmp_path):
    from click.testing import CliRunner

    from planner.cli import main
    path = tmp_path / "i.json"
    path.write_text(json.dumps({"model": {"params": 1e9}, "training": {"target_flop": 1.2e20},
                                "fleet": {"hardware": "16xH100-SXM", "nodes": 16},
                                "network": {"wan": {"up_mbps": 1000, "down_mbps": 1000, "rtt_ms": 50}},
                                "assumptions": {"profile": "dtplan"}}))
    inside = json.loads(CliRunner().invoke(main, ["solve", str(path), "--json"]).output)
    beyond = json.loads(CliRunner().invoke(main, ["solve", str(path), "--beyond-evidence", "--json"]).output)
    assert inside["evaluation"]["envelope_search"] is True and inside["evaluation"]["envelope"] == []
    assert beyond["evaluation"]["envelope_search"] is False
    assert beyond["objective_value"] <= inside["objective_value"]


def test_compressor_presets_name_their_method_and_evidence():
    from planner.cost.assumptions import apply_overrides
    presets = json.loads((ROOT / "models" / "compressors.json").read_text())["presets"]
    for name, preset in presets.items():
        q = preset["quality"]
        a = apply_overrides(DTPLAN, {"compressor_preset": name})
        assert q["method"] == a.compressor and q["evidence"]
        cr = 16 / q["bits_per_value"] if q["method"] == "quantise" else 1 / q["fraction_kept"]
        shown = envelope.compression_shown(cr, 16.0, a.compressor)
        assert (q["eta_c"] is not None) == shown
        if shown:
            assert float(quality_fit.compression_quality(cr, 16.0, a)) == q["eta_c"]


def test_docs_quality_lists_every_fitted_and_held_out_row_as_fit_json_has_it():
    doc = (ROOT / "docs" / "quality.md").read_text()
    listed = {}
    for line in doc.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) == 11 and cells[0].startswith("`") and cells[0].strip("`") in ROWS:
            listed[cells[0].strip("`")] = cells
    assert set(listed) == set(ROWS)
    for name, cells in listed.items():
        r = ROWS[name]
        assert cells[6].startswith(f"{r['eta_published']:.3f} ") and cells[7] == f"{r['eta_predicted']:.3f}"
        assert cells[8] == f"{r['residual']:+.3f}" and cells[9].startswith("yes" if r["within_noise"] else "no")


def test_sparsification_beyond_the_shown_pruning_is_the_tangent_in_log_log():
    """Beyond 4x (75% pruned, DiLoCo 2023 Table 6) eta_C follows the pruning law's log-log tangent at 4x:
    finite, continuous with a continuous slope at 4x, and falling as a power of the kept fraction."""
    a = DTPLAN.replace(compressor="topk")
    q = lambda r: float(quality_fit.compression_quality(r, 16.0, a))     # noqa: E731
    # by hand with the fit's central k = 0.0735, p = 1.434 (docs/quality.md): q(4) = exp(-0.0735 3^1.434) = 0.701,
    # slope -0.0735 x 1.434 x 3^0.434 x 4 = -0.679, so SparseLoCo / Covenant's one in 64 kept: 0.701 x 16^-0.679
    assert q(4.0) == pytest.approx(0.701, abs=5e-4)
    assert q(64.0) == pytest.approx(0.701 * 16 ** -0.679, rel=5e-3)
    assert q(64.0) == pytest.approx(0.1065, abs=5e-4)
    # the same slope on both sides of 4x (finite differences in ln r), and a constant slope beyond
    d = 1e-4
    below = (math.log(q(4.0)) - math.log(q(4.0 * math.exp(-d)))) / d
    above = (math.log(q(4.0 * math.exp(d))) - math.log(q(4.0))) / d
    assert below == pytest.approx(above, rel=1e-3) and below == pytest.approx(-0.679, abs=2e-3)
    assert math.log(q(128.0) / q(64.0)) == pytest.approx(math.log(q(16.0) / q(8.0)), rel=1e-9)
    # the fitted law itself, carried on, would give exp(-28) at 64x (no run could train)
    p = FIT["scenarios"]["expected"]
    assert math.exp(-p["fit_prune_coefficient"] * 63 ** p["fit_prune_power"]) < 1e-11 < q(500.0)
    # quantisation below 4 bits is charged as sparsification by 4 / bits: 0.25 bits (fp8 at 32x) as 16x
    assert float(quality_fit.compression_quality(32.0, 8.0, DTPLAN)) == pytest.approx(q(16.0), rel=1e-12)
