"""Issue 15: threshold node builder, planner answers per threshold, stop points and collateral damage.

Expected values are hand calculations (floor(threshold x 990 / TFLOP/s), memory / GB per chip,
TPP = TFLOP/s x bits) or answers stored by another question (instances/miri/*.expected.json,
written by `dtplan feasible` through scripts/make_expected.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from planner.questions.thresholds import (Thresholds, answer, build_node, caught, check_thresholds, collateral,
                                          fit_params, load_accelerators, load_deployments, stop_point)

ROOT = Path(__file__).resolve().parents[1]
MIRI = ROOT / "instances" / "miri"


@pytest.fixture(scope="module")
def accs():
    return load_accelerators()


def _miri(name: str) -> tuple[dict, dict]:
    return (json.loads((MIRI / f"{name}.json").read_text()),
            json.loads((MIRI / f"{name}.expected.json").read_text()))


# -- catalog -----------------------------------------------------------------------------------


def test_catalog_has_sources_and_matches_hardware_presets(accs):
    for a in accs.values():
        assert {"peak_tflops", "hbm_gb", "price_usd", "interconnect_gb_s"} <= set(a.sources), a.id
        if a.derived_from:
            hw = json.loads((ROOT / a.derived_from).read_text())
            assert a.peak_tflops == hw["peak_tflops_per_accelerator"]
            assert a.hbm_gb == hw["hbm_gb_per_accelerator"]
            assert a.price_usd == hw["price_usd_per_accelerator"]


def test_tpp_is_tflops_times_bit_length(accs):
    assert accs["H100-SXM"].tpp == 1980 * 8 == 990 * 16 == 15840
    assert accs["A100-80GB"].tpp == 312 * 16 == 4992      # the published A100 TPP
    assert accs["B200"].tpp == 9000 * 4
    assert accs["RTX-4090"].tpp == pytest.approx(660.6 * 8)    # published dense FP8 rate, not the report's FP16
    assert all(a.tpp_published is None or "tpp_published" in a.sources for a in accs.values())


def test_deployments_reference_known_accelerators():
    deps = load_deployments()
    assert len(deps) == 21 and len({d.id for d in deps}) == 21
    assert all(d.source for d in deps)


# -- node builder --------------------------------------------------------------------------------


@pytest.mark.parametrize("h100e, a100, h100, b200", [
    (16, 50, 16, 7),      # floor(16*990/312) = floor(50.77); 16*990/990 = 16 exactly (not caught: strict >)
    (8, 25, 8, 3),        # 25.38; 7920/2250 = 3.52
    (4, 12, 4, 1),        # 12.69; 1.76
    (2, 6, 2, 0),         # 6.35; 0.88: no B200 node
    (1, 3, 1, 0),         # 3.17
])
def test_compute_threshold_node(accs, h100e, a100, h100, b200):
    th = Thresholds(compute_h100e=h100e)
    assert build_node(accs["A100-80GB"], th).count == a100
    assert build_node(accs["H100-SXM"], th).count == h100
    assert build_node(accs["B200"], th).count == b200


def test_memory_tpp_interconnect_and_combined(accs):
    a100, h100 = accs["A100-80GB"], accs["H100-SXM"]
    assert build_node(a100, Thresholds(memory_gb=512)).count == 6           # 512 / 80 = 6.4
    assert build_node(a100, Thresholds(memory_gb=1024)).count == 12         # 12.8
    both = build_node(a100, Thresholds(compute_h100e=16, memory_gb=1024))
    assert both.count == 12 and both.binding == ["memory"]
    assert both.memory_gb == 960 and both.price_usd == 12 * 15000
    tie = build_node(h100, Thresholds(compute_h100e=16, memory_gb=1280))   # 16 and 16
    assert tie.count == 16 and tie.binding == ["compute", "memory"]
    assert build_node(a100, Thresholds(tpp=15840)).count == 3               # 15840 / 4992 = 3.17
    assert build_node(h100, Thresholds(tpp=4800)).count == 0                # 15840 > 4800
    assert build_node(h100, Thresholds(compute_h100e=16, interconnect_gb_s=600)).count == 0   # NVLink 900
    assert build_node(a100, Thresholds(compute_h100e=16, interconnect_gb_s=600)).count == 50  # 600 = cap
    with pytest.raises(ValueError):
        build_node(a100, Thresholds(interconnect_gb_s=600))


def test_node_is_an_inline_hardware_spec_the_planner_accepts(accs):
    from planner.schema.instance import parse_instance
    node = build_node(accs["TPU-v6e"], Thresholds(compute_h100e=16))
    inst = parse_instance({"model": {"params": 7e9}, "training": {"target_flop": 1e24},
                           "fleet": {"hardware": node.hardware(), "nodes": 4}})
    assert inst.hardware.accelerators_per_node == 17                         # floor(15840 / 918) = 17.25
    assert inst.hardware.node_hbm_gb == 17 * 32


def test_bad_thresholds_are_named(accs):
    every = list(accs.values())
    assert [p.path for p in check_thresholds(Thresholds(compute_h100e=0), every)] == ["--compute"]
    assert [p.path for p in check_thresholds(Thresholds(memory_gb=-5), every)] == ["--memory"]
    below = check_thresholds(Thresholds(compute_h100e=0.05), every)          # RTX 5090 is 104/990 = 0.105
    assert [p.path for p in below] == ["--compute"] and "below one accelerator" in below[0].message
    assert check_thresholds(Thresholds(compute_h100e=0.11), every) == []


def test_fit_params_is_node_memory_over_bytes_per_param(accs):
    raw, _ = _miri("countermeasure-ccc-threshold-1")
    assert fit_params(raw, build_node(accs["A100-80GB"], Thresholds(compute_h100e=1))) == 15e9   # 240 GB / 16
    assert fit_params(raw, build_node(accs["A100-80GB"], Thresholds(compute_h100e=16))) == 250e9  # 4000 / 16


def _quadratic_fit(memory_bytes: float, beta: float, c: float, c_f: float, seq: float, k: float = 0.03) -> float:
    """The largest P with P beta + least activations <= V, by hand: h = k sqrt(P), one sequence of s tokens,
    every layer recomputed (its input, c_f h L bytes per token, L = P / (12 h^2), plus one layer's c h):
    s (c_f / (12 k) + c k) sqrt(P), so beta x^2 + a x - V = 0 in x = sqrt(P); floored to 3 digits."""
    a = seq * (c_f / (12 * k) + c * k)
    x = (-a + (a * a + 4 * beta * memory_bytes) ** 0.5) / (2 * beta)
    p = x * x
    scale = 10 ** (len(str(int(p))) - 3)
    return (p // scale) * scale


def test_fit_params_leaves_room_for_the_least_activations(accs):
    """dtplan (activation memory on, `fit`): 25 A100-40GB = 1,000 GB at 16 bytes per parameter. The least
    activations of a node holding the whole model are one 2,048-token sequence with every layer recomputed:
    2,048 x (2 / 0.36 + 34 x 0.03) sqrt(P) = 13,466.7 sqrt(P) bytes, so 16 x^2 + 13,466.7 x = 1e12, x = 249,579.5,
    P = 62.29e9 -> 62.2e9 (the report's rule, 1e12 / 16 = 62.5e9, would leave no byte for them)."""
    raw = {"model": {"params": 1e9}, "training": {"tokens": 1e12}, "fleet": {"hardware": "8xH100-SXM", "nodes": 1},
           "assumptions": {"profile": "dtplan"}}          # activation memory on, `fit` (models/assumptions/dtplan.json)
    node = build_node(accs["A100-40GB"], Thresholds(compute_h100e=16, memory_gb=1024))
    explicit = {**raw, "assumptions": {"profile": "reference",
                                       "constants": {"activation_memory": True, "activation_recompute": "fit"}}}
    assert fit_params(explicit, node) == 62.2e9                  # the rule reads the switches, not the profile's name
    assert node.memory_gb == 1000
    expected = _quadratic_fit(1e12, 16, 34, 2, 2048)
    assert expected == 62.2e9
    assert fit_params(raw, node) == pytest.approx(expected, rel=1e-12)
    selective = {**raw, "assumptions": {"profile": "dtplan", "constants": {"activation_recompute": "selective"}}}
    # selective keeps every layer's 34 h bytes per token: 2,048 x 34 / 0.36 sqrt(P) = 193,422 sqrt(P), x = 244,029
    a = 2048 * 34 / 0.36
    x = (-a + (a * a + 64e12) ** 0.5) / 32
    assert fit_params(selective, node) == pytest.approx((x * x // 1e8) * 1e8, rel=1e-12) == 59.5e9
    off = {**raw, "assumptions": {"profile": "dtplan", "constants": {"activation_memory": False}}}
    assert fit_params(off, node) == 62.5e9                       # 1,000 GB / 16, as the reference profile
    assert fit_params({**raw, "assumptions": {"profile": "reference"}}, node) == 62.5e9


# -- planner answers -----------------------------------------------------------------------------


@pytest.mark.parametrize("name, th", [
    ("countermeasure-ccc-threshold-1", Thresholds(compute_h100e=1)),
    ("countermeasure-memory-512gb", Thresholds(memory_gb=512)),
])
def test_answer_agrees_with_the_stored_feasible_fix(accs, name, th):
    """The node built from the threshold equals the instance's hand-written node, and the fewest
    nodes equal the `feasible` nodes fix stored for that instance."""
    raw, expected = _miri(name)
    node = build_node(accs["A100-80GB"], th)
    assert node.count == raw["fleet"]["hardware"]["accelerators_per_node"]
    a = answer(raw, node, th, fit=True)
    assert a.model_params == raw["model"]["params"]
    fix = next(f for f in expected["fixes"] if f["limit"] == "nodes")
    assert a.reachable and a.nodes == fix["fields"]["fleet.nodes"]
    assert a.cost_usd == a.nodes * node.count * 15000
    assert a.time_to_target_days == pytest.approx(fix["time_to_target_days"], rel=1e-9)


def test_answer_unreachable_within_a_node_cap(accs):
    raw, _ = _miri("countermeasure-ccc-threshold-1")
    raw = {**raw, "limits": {**raw["limits"], "max_nodes": 62}}
    a = answer(raw, build_node(accs["A100-80GB"], Thresholds(compute_h100e=1)), Thresholds(compute_h100e=1), fit=True)
    assert not a.reachable and a.nodes is None and a.binding


def test_stop_point_compute_within_a_node_count(accs):
    """Within 20 nodes of A100 nodes (model fitted to the node): the ccc-threshold answers show 16 nodes
    of 12 reach 10^24 and 32 of 6 are needed, so the boundary count lies in 7..12 and is verified."""
    raw, _ = _miri("countermeasure-ccc-threshold-1")
    sp = stop_point(raw, accs["A100-80GB"], Thresholds(compute_h100e=16), ("compute",), max_nodes=20, fit=True)
    assert sp.status == "found" and 7 <= sp.count_reachable <= 12
    assert sp.count_unreachable == sp.count_reachable - 1
    assert sp.reachable_at.compute_h100e == pytest.approx(sp.count_reachable * 312 / 990)
    assert sp.nodes_reachable <= 20


def test_stop_point_bandwidth_cap_is_verified(accs):
    raw, _ = _miri("countermeasure-bandwidth-cap-10mbps")
    raw = {**raw, "network": {"wan": {"up_mbps": 100, "down_mbps": 100, "rtt_ms": 100}}}
    th = Thresholds(compute_h100e=16, wan_mbps=100)
    sp = stop_point(raw, accs["A100-80GB"], th, ("wan",), max_nodes=72)
    assert sp.status in ("found", "never-stops")
    if sp.status == "found":
        assert sp.reachable_at.wan_mbps / sp.unreachable_at.wan_mbps <= 1.01 + 1e-9


# -- collateral damage ---------------------------------------------------------------------------


def test_collateral_counts_by_hand():
    """H100-eq of each deployment = count x TFLOP/s / 990; memory = count x GB; caught when strictly above.
    > 16 H100-eq: only 80x A100 (25.2). > 4: also the four 8x H100 systems (8.0), 24x A100 (7.56),
    20x A100 (6.30), 16x A100 (5.04). > 512 GB: the 640 GB systems (8x A100 80GB, DGX A100, 8x H100 x4)
    and the 16/20/24/80x A100 clusters; not the Atlas node (exactly 512 GB)."""
    def ids(th):
        return {d.id for d, why in collateral(th) if why}
    assert ids(Thresholds(compute_h100e=16)) == {"university-cluster-80x-a100"}
    four = {"university-cluster-80x-a100", "aws-p5-48xlarge", "md-cluster-8x-h100", "princeton-node-8x-h100",
            "dgx-h100", "3x-dgx-a100-405b-inference", "university-cluster-20x-a100", "2x-dgx-a100"}
    assert ids(Thresholds(compute_h100e=4)) == four
    assert ids(Thresholds(memory_gb=512)) == {"lab-server-8x-a100-80gb", "dgx-a100", "aws-p5-48xlarge",
                                              "md-cluster-8x-h100", "princeton-node-8x-h100", "dgx-h100",
                                              "2x-dgx-a100", "3x-dgx-a100-405b-inference",
                                              "university-cluster-20x-a100", "university-cluster-80x-a100"}
    assert ids(Thresholds(memory_gb=1280)) == {"3x-dgx-a100-405b-inference", "university-cluster-20x-a100",
                                               "university-cluster-80x-a100"}    # 2x DGX A100 = 1,280 exactly


def test_caught_reasons(accs):
    dgx = next(d for d in load_deployments() if d.id == "dgx-h100")
    assert caught(dgx, accs["H100-SXM"], Thresholds(compute_h100e=4, memory_gb=512, tpp=4800)) == \
        ["compute", "tpp", "memory"]
    assert caught(dgx, accs["H100-SXM"], Thresholds(compute_h100e=8, memory_gb=640)) == []


# -- command line ----------------------------------------------------------------------------------


def _cli(*args):
    from click.testing import CliRunner
    from planner.cli import main
    return CliRunner().invoke(main, ["thresholds", *args])


@pytest.mark.parametrize("args, flag", [
    (["--compute", "0"], "--compute"),
    (["--compute", "-4"], "--compute"),
    (["--memory", "0"], "--memory"),
    (["--compute", "16", "--memory", "-1"], "--memory"),
    (["--tpp", "nan"], "--tpp"),
    (["--compute", "0.01"], "--compute"),                     # below one RTX 5090 (0.105 H100-eq)
    (["--compute", "0.2", "--accelerator", "A100-80GB"], "--compute"),   # one A100 is 0.315
    (["--memory", "10", "--accelerator", "H100-SXM"], "--memory"),       # one H100 holds 80 GB
    (["--compute", "16", "--wan-cap", "0"], "--wan-cap"),
    (["--compute", "16", "--interconnect", "32"], "--interconnect"),     # the slowest link is PCIe 4, 64 GB/s
])
def test_bad_thresholds_exit_2_naming_the_flag(args, flag):
    r = _cli(*args, "--target-flop", "1e24")
    assert r.exit_code == 2, r.output
    assert flag in r.output and "Traceback" not in r.output


def test_cli_other_bad_input_exits_2():
    assert _cli("--target-flop", "1e24").exit_code == 2                       # no threshold
    assert _cli("--compute", "16").exit_code == 2                             # no target
    r = _cli("--compute", "16", "--target-flop", "1e24", "--accelerator", "A100")
    assert r.exit_code == 2 and "A100-80GB" in r.output
    assert _cli("--compute", "16", "--target-flop", "1e24", "--stop", "memory", "--within-nodes", "5").exit_code == 2
    assert _cli("--compute", "16", "--target-flop", "1e24", "--stop", "compute").exit_code == 2
    assert _cli("--compute", "16", "--target-flop", "1e24", "--report", "/nonexistent/x.html").exit_code == 2
    assert _cli("--compute", "16", "--target-flop", "1e24", "--report", "page.md").exit_code == 2   # HTML only
    assert _cli("--compute", "16", "--target-flop", "1e24", "--curve", "4,2").exit_code == 2        # needs --report


def test_cli_json_matches_the_library(tmp_path):
    inst = str(MIRI / "countermeasure-memory-512gb.json")
    r = _cli(inst, "--memory", "512", "--accelerator", "A100-80GB", "--json")
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    (a,) = out["answers"]
    assert a["node"]["count"] == 6 and a["nodes"] == 32 and a["reachable"]
    assert a["cost_usd"] == 32 * 6 * 15000
    caught_ids = {c["deployment"] for c in out["collateral"] if c["caught_by"]}
    assert len(caught_ids) == 10 and "dgx-h100" in caught_ids


def test_cli_max_nodes_caps_the_fleet():
    inst = str(MIRI / "countermeasure-ccc-threshold-1.json")
    r = _cli(inst, "--compute", "4", "--fit-model", "--accelerator", "A100-80GB", "--max-nodes", "20", "--json")
    assert r.exit_code == 0 and json.loads(r.output)["answers"][0]["nodes"] == 16       # 16 <= 20
    r = _cli(inst, "--compute", "1", "--fit-model", "--accelerator", "A100-80GB", "--max-nodes", "62", "--json")
    assert r.exit_code == 1, r.output                                                   # 63 needed
    (a,) = json.loads(r.output)["answers"]
    assert not a["reachable"] and a["binding"]


def test_cli_accelerator_the_instance_does_not_suit():
    """1e27-fp8-h100 asks for fp8 (search.precisions); the A100 has none: its row says so, the H100 row answers."""
    r = _cli(str(MIRI / "1e27-fp8-h100.json"), "--compute", "16", "--accelerator", "A100-80GB",
             "--accelerator", "H100-SXM", "--fit-model", "--json")
    assert r.exit_code == 0, r.output
    a100, h100 = json.loads(r.output)["answers"]
    assert not a100["reachable"] and "fp8" in a100["binding"][0]
    assert h100["reachable"] and h100["node"]["count"] == 16
    assert _cli(str(MIRI / "1e27-fp8-h100.json"), "--compute", "16", "--accelerator", "A100-80GB").exit_code == 2


def test_cli_stop_and_report(tmp_path):
    inst = str(MIRI / "countermeasure-ccc-threshold-1.json")
    page = tmp_path / "t.html"
    r = _cli(inst, "--compute", "4", "--fit-model", "--accelerator", "A100-80GB", "--stop", "compute",
             "--within-nodes", "20", "--report", str(page), "--curve", "4,2")
    assert r.exit_code == 0, r.output
    html = page.read_text()
    assert "Threshold curve" in html and "data:image/png;base64" in html and "Collateral" in html
    assert "Where the target stops being reachable" in html


@pytest.mark.parametrize("h100e", [16, 8, 4, 2, 1])
def test_fewest_nodes_confirmed_by_the_exhaustive_oracle(accs, h100e):
    """The report's lowered-CCC rows (A100 80GB, 10^24 FLOP, model fitted to the node): the exhaustive
    solver (planner/solvers/exhaustive.py, no pruning) finds a plan with the fewest nodes and none with one fewer."""
    from planner.questions.thresholds import node_instance
    from planner.schema.instance import parse_instance
    from planner.solve import solve
    raw, _ = _miri("countermeasure-ccc-threshold-1")
    th = Thresholds(compute_h100e=h100e)
    node = build_node(accs["A100-80GB"], th)
    a = answer(raw, node, th, fit=True)
    assert a.nodes == {16: 4, 8: 8, 4: 16, 2: 32, 1: 63}[h100e]

    def status(n):
        return solve(parse_instance(node_instance(raw, node, th, n, True)), objective="min_time",
                     solver="exhaustive").status
    assert status(a.nodes) == "optimal" and status(a.nodes - 1) == "infeasible"


def test_stop_point_compute_and_wan_combined(accs):
    """Lowering a compute threshold and a WAN cap together (one factor): the bracket is within 1% and
    both of its sides were re-solved (stop_point raises if either side disagrees)."""
    raw, _ = _miri("countermeasure-bandwidth-cap-10mbps")
    raw = {**raw, "network": {"wan": {"up_mbps": 100, "down_mbps": 100, "rtt_ms": 100}}}
    th = Thresholds(compute_h100e=16, wan_mbps=100)
    sp = stop_point(raw, accs["A100-80GB"], th, ("compute", "wan"), max_nodes=72)
    assert sp.status == "found"
    hi, lo = sp.reachable_at, sp.unreachable_at
    assert hi.wan_mbps / lo.wan_mbps <= 1.01 + 1e-9
    assert hi.compute_h100e / hi.wan_mbps == pytest.approx(16 / 100)      # scaled together
    assert sp.count_reachable == build_node(accs["A100-80GB"], hi).count


def test_the_reports_collateral_counts_on_its_17_systems():
    """The first 17 deployments are the report calculator's LEGITIMATE_SYSTEMS. The report: 0 caught at
    16 H100-eq, 4 at 4 (the 8x H100 systems, 8.0 each), 6 at 512 GB (the 640 GB systems), 0 at 1 TB.
    At 1 H100-eq every system of at least 1.26 H100-eq: 17 minus the RTX 5090 (0.105), 2x RTX 4090
    (0.333) and 4x RTX 6000 Ada (0.603) = 14. At 2: the 8x A100 80GB, p4d and DGX A100 (2.52), the Atlas node
    (2.59), the TPU v4 slice (2.22) and the four 8x H100 systems = 9. Above 256 GB: the eleven systems of
    320-640 GB (the TPU v4 slice holds exactly 256)."""
    deps = load_deployments()[:17]

    def count(th):
        return sum(1 for _, why in collateral(th, deps) if why)
    assert [count(Thresholds(compute_h100e=t)) for t in (16, 8, 4, 2, 1)] == [0, 0, 4, 9, 14]
    assert [count(Thresholds(memory_gb=m)) for m in (2048, 1024, 512, 256)] == [0, 0, 6, 11]


def test_cli_set_overrides_the_instance():
    inst = str(MIRI / "countermeasure-ccc-threshold-1.json")
    r = _cli(inst, "--set", "limits.max_days=100", "--compute", "4", "--fit-model", "--accelerator", "A100-80GB",
             "--json")
    assert r.exit_code == 0, r.output
    (a,) = json.loads(r.output)["answers"]
    assert a["time_to_target_days"] <= 100 and a["nodes"] > 16        # a shorter run needs more than 16 nodes


@pytest.mark.parametrize("th, kinds, field, value", [
    (Thresholds(tpp=250_000), ("tpp",), "tpp", 40 * 4992),                   # 50 A100s at the start
    (Thresholds(memory_gb=4000), ("memory",), "memory_gb", 40 * 80),
    (Thresholds(compute_h100e=16), ("compute",), "compute_h100e", 40 * 312 / 990),
])
def test_stop_point_is_the_same_count_whatever_the_metric(accs, th, kinds, field, value):
    """Every count threshold acts through the A100s per node, so within 5 nodes each stops at the same
    count (40 reach 10^24, 39 do not: the stored stop-compute-within-5-nodes answer) at its own value."""
    raw, _ = _miri("countermeasure-ccc-threshold-1")
    sp = stop_point(raw, accs["A100-80GB"], th, kinds, max_nodes=5, fit=True)
    assert (sp.count_reachable, sp.count_unreachable) == (40, 39)
    assert getattr(sp.reachable_at, field) == pytest.approx(value)
    assert getattr(sp.unreachable_at, field) < value
