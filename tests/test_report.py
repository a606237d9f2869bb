"""`--report FILE.html|.md`: self-contained reports, opened in a real headless browser.

The browser test needs Debian's chromium (installed by .ci/run, which sets
DTPLAN_REQUIRE_BROWSER=1 so that a missing browser fails instead of skipping).
"""

import json
import os
import re
import shutil
import subprocess

import pytest
from click.testing import CliRunner

from planner.objectives import MIN_TIME
from planner.cli import main
from planner.cost.duration import SECONDS_PER_DAY
from planner.schema.instance import load_instance
from planner.solve import solve
from tests.test_feasible import BASE

SHIPPED = "instances/solve-1e24-64xh100.json"
BROWSER = next((b for b in ("chromium", "chromium-browser", "google-chrome") if shutil.which(b)), None)


def _browser_text(path) -> str:
    """The page as a headless browser renders it (its DOM), and a screenshot that must not be empty."""
    if BROWSER is None:
        if os.environ.get("DTPLAN_REQUIRE_BROWSER"):
            pytest.fail("no chromium found, and DTPLAN_REQUIRE_BROWSER is set")
        pytest.skip("no headless browser (chromium) on this machine")
    args = [BROWSER, "--headless", "--no-sandbox", "--disable-gpu", "--user-data-dir=" + str(path.parent / "profile")]
    dom = subprocess.run(args + ["--dump-dom", path.resolve().as_uri()], capture_output=True, text=True, timeout=120)
    shot = path.parent / "shot.png"
    subprocess.run(args + [f"--screenshot={shot}", "--window-size=1000,1600", path.resolve().as_uri()],
                   capture_output=True, timeout=120)
    assert shot.exists() and shot.stat().st_size > 10_000
    return dom.stdout


def _run(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def test_solve_report_in_a_browser(tmp_path):
    out = tmp_path / "solve.html"
    r = _run("solve", SHIPPED, "--report", out)
    assert r.exit_code == 0, r.output
    html = out.read_text()
    assert "http://" not in html and "https://" not in html          # self-contained
    assert len(re.findall(r"src='data:image/png;base64,", html)) == 2
    dom = _browser_text(out)
    result = solve(load_instance(SHIPPED))
    assert f"{result.objective_value / SECONDS_PER_DAY:,.2f} days to target" in dom
    assert result.plan.mode in dom and f"${result.evaluation.values['cost_usd']:,.0f}" in dom
    assert "Binding at the optimum" in dom


def test_feasible_report_in_a_browser(tmp_path):
    instance = tmp_path / "i.json"
    instance.write_text(json.dumps(BASE))
    out = tmp_path / "feasible.html"
    r = _run("feasible", instance, "--report", out, "--json")
    assert r.exit_code == 1
    fixes = json.loads(r.stdout)["fixes"]
    dom = _browser_text(out)
    assert "INFEASIBLE" in dom
    for fix in fixes:             # each fix as the --set options dtplan solve accepts (tests/test_pool_fixes.py)
        for arg in fix["set"]:
            assert f"--set {arg}" in dom


def test_compare_report_in_a_browser(tmp_path):
    out = tmp_path / "compare.html"
    r = _run("compare", SHIPPED, "--hardware", "16xH100-SXM,48xA100-80GB", "--report", out, "--json")
    assert r.exit_code == 0
    rows = json.loads(r.stdout)
    dom = _browser_text(out)
    for row in rows:
        assert row["hardware"] in dom
    assert "data:image/png;base64," in out.read_text()


def test_markdown_report_and_bad_suffix(tmp_path):
    out = tmp_path / "solve.md"
    assert _run("solve", SHIPPED, "--report", out).exit_code == 0
    text = out.read_text()
    assert "## Plan" in text and "## Breakdown" in text and "days to target" in text
    r = _run("solve", SHIPPED, "--report", tmp_path / "x.pdf")
    assert r.exit_code == 2 and "--report: unknown format '.pdf'" in r.output


def test_compare_ranks_every_preset_for_a_1e27_target(tmp_path):
    from planner.schema.catalog import hardware_ids
    png, out = tmp_path / "c.png", tmp_path / "c.html"
    r = _run("compare", "instances/compare-1e27.json", "--plot", png, "--report", out, "--json")
    assert r.exit_code == 0
    rows = json.loads(r.stdout)
    assert sorted(row["hardware"] for row in rows) == sorted(hardware_ids()) and len(rows) >= 12
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    html = out.read_text()
    for row in rows:
        assert row["hardware"] in html
    days = [row["evaluation"]["values"]["time_to_target_s"] for row in rows if row["plan"]]
    assert days == sorted(days)                      # ranked by time to target


# -- provenance, evaluate --report, fixes with plots, timeline, bar values, limit line (issue 10 items 12, 14) --

BASELINE, BASELINE_PLAN = "instances/baseline-1e25.json", "instances/baseline-1e25.plan.json"


def _provenance_ok(text: str, instance, command: list[str]) -> None:
    from planner.present.report import dtplan_version
    a = instance.resolved_assumptions()
    assert "Provenance" in text and f"dtplan: {dtplan_version()}" in text
    assert f"assumption profile: {a.profile}" in text and f"MFU: {a.mfu:g}" in text
    assert "overridden constants:" in text
    assert "dtplan " + " ".join(command) in text


def test_every_report_says_how_it_was_made(tmp_path):
    instance = tmp_path / "i.json"
    instance.write_text(json.dumps(BASE))
    runs = {"solve": ["solve", SHIPPED], "evaluate": ["evaluate", BASELINE, BASELINE_PLAN],
            "feasible": ["feasible", str(instance)],
            "compare": ["compare", SHIPPED, "--hardware", "16xH100-SXM,7xB200"]}
    for name, args in runs.items():
        out = tmp_path / f"{name}.md"
        command = args + ["--report", str(out)]
        r = _run(*command)
        assert r.exit_code in (0, 1), r.output
        _provenance_ok(out.read_text(), load_instance(args[1]), command)


def test_overridden_constants_are_listed(tmp_path):
    data = json.loads(open(SHIPPED).read())
    data.setdefault("assumptions", {})["constants"] = {"alpha_log_divisor": 9.0}
    data["assumptions"]["mfu"] = 0.35
    path = tmp_path / "i.json"
    path.write_text(json.dumps(data))
    out = tmp_path / "r.md"
    assert _run("solve", path, "--report", out).exit_code == 0
    text = out.read_text()
    assert "overridden constants: mfu = 0.35, alpha_log_divisor = 9.0" in text and "MFU: 0.35" in text


def test_evaluate_report_in_a_browser(tmp_path):
    from planner.evaluate import evaluate
    from planner.schema.plan import load_plan
    out = tmp_path / "evaluate.html"
    r = _run("evaluate", BASELINE, BASELINE_PLAN, "--report", out)
    e = evaluate(load_instance(BASELINE), load_plan(BASELINE_PLAN))
    assert r.exit_code == (0 if e.feasible else 1)
    html = out.read_text()
    assert len(re.findall(r"src='data:image/png;base64,", html)) == 2
    dom = _browser_text(out)
    assert ("MEETS EVERY LIMIT" if e.feasible else "BREAKS A LIMIT") in dom
    for violation in e.violations:
        assert violation in html.replace("&#x27;", "'")
    assert f"${e.values['cost_usd']:,.0f}" in dom and e.plan.mode in dom
    assert _run("evaluate", BASELINE, BASELINE_PLAN, "--report", tmp_path / "x.pdf").exit_code == 2


def test_infeasible_feasible_report_shows_each_fix_with_its_plots(tmp_path):
    instance = tmp_path / "i.json"
    instance.write_text(json.dumps(BASE))
    out = tmp_path / "feasible.html"
    r = _run("feasible", instance, "--report", out, "--json")
    assert r.exit_code == 1
    fixes = json.loads(r.stdout)["fixes"]
    assert fixes
    html = out.read_text()
    assert len(re.findall(r"src='data:image/png;base64,", html)) == 2 * len(fixes)
    for i, fix in enumerate(fixes, 1):
        assert f"Plan with fix {i} ({fix['limit']}" in html
        assert f"<td>mode</td><td>{fix['plan']['mode']}</td>" in html


def _lanes_end(lanes) -> float:
    return max(start + length for segments in lanes.values() for start, length in segments)


@pytest.mark.parametrize("streaming", [True, False])
@pytest.mark.parametrize("plan", [
    {"mode": "flat", "nodes": 64, "precision": "fp8", "inner_steps": 50, "compression": 16.0},
    {"mode": "hierarchical", "nodes": 64, "precision": "fp8", "inner_steps": 3, "compression": 16.0,
     "group_size": 8, "regional_rounds": 4},
])
def test_outer_step_timeline_matches_the_cost_model(plan, streaming):
    """The timeline's lanes end where the evaluator's outer step ends, and overlap exactly when streaming."""
    from planner.evaluate import evaluate
    from planner.present.plots import outer_step_lanes
    from planner.schema.plan import parse_plan
    instance = load_instance(SHIPPED)
    e = evaluate(instance, parse_plan({**plan, "streaming": streaming}, instance))
    v = e.values
    lanes = outer_step_lanes(v, plan["mode"], streaming, plan["inner_steps"], plan.get("regional_rounds"))
    assert _lanes_end(lanes) == pytest.approx(max(v["outer_time_s"], v["compute_block_s"]), rel=1e-12)
    compute, wan = lanes["compute"], lanes["WAN sync"]
    assert sum(d for _, d in compute) == pytest.approx(v["compute_block_s"], rel=1e-12)
    local = {k: seg for k, seg in lanes.items() if k != "WAN sync"}   # compute and regional syncs
    assert wan == [(0.0 if streaming else pytest.approx(_lanes_end(local)), pytest.approx(v["t_sync_s"]))]
    if plan["mode"] == "hierarchical":
        assert len(lanes["regional sync"]) == plan["regional_rounds"]
        assert all(d == pytest.approx(v["t_regional_s"]) for _, d in lanes["regional sync"])
    from planner.present.plots import outer_step_timeline, pyplot
    fig = outer_step_timeline(v, plan["mode"], streaming, plan["inner_steps"], plan.get("regional_rounds"))
    try:
        texts = {t.get_text() for t in fig.axes[0].texts}
        assert {f" {v['compute_block_s']:.3g} s", f" {v['t_sync_s']:.3g} s", f" outer step {v['outer_time_s']:.3g} s"} <= texts
        if plan["mode"] == "hierarchical":
            assert f" {v['t_regional_s'] * plan['regional_rounds']:.3g} s" in texts
    finally:
        pyplot().close(fig)
    if not streaming:       # without streaming nothing overlaps: the step is the sum of the lanes
        busy = sum(d for segments in lanes.values() for _, d in segments)
        assert _lanes_end(lanes) == pytest.approx(busy, rel=1e-12)


def test_efficiency_bars_carry_their_values():
    from planner.present.plots import EFFICIENCY_BARS, efficiency_figure, pyplot
    result = solve(load_instance(SHIPPED))
    v = result.evaluation.values
    fig = efficiency_figure(v)
    try:
        written = [t.get_text() for t in fig.axes[0].texts]
        assert written == [f"{float(v[key]):.4f}" for _, key in EFFICIENCY_BARS]
    finally:
        pyplot().close(fig)


def test_comparison_chart_draws_the_duration_limit():
    from planner.evaluate import max_days
    from planner.present.plots import comparison_figure, pyplot
    from planner.questions.compare import compare
    raw = json.loads(open(SHIPPED).read())
    rows = compare(raw, ["16xH100-SXM", "7xB200"], objective="min_time")
    limit = max_days(load_instance(SHIPPED))[0]
    fig = comparison_figure(rows, MIN_TIME, limit_days=limit)
    try:
        ax = fig.axes[0]
        assert any(list(line.get_xdata()) == [limit, limit] for line in ax.lines)
        assert [t.get_text() for t in ax.get_legend().get_texts()] == [f"duration limit {limit:,.0f} d"]
        assert ax.get_xlim()[1] > limit
    finally:
        pyplot().close(fig)


def test_a_failed_report_leaves_the_old_one_whole(tmp_path, monkeypatch):
    import planner.present.plots as plots
    out = tmp_path / "solve.html"
    out.write_text("the previous report")

    def broken(*args, **kwargs):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(plots, "efficiency_png", broken)
    r = _run("solve", SHIPPED, "--report", out)
    assert r.exit_code == 2 and "No space left on device" in r.output
    assert out.read_text() == "the previous report"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["solve.html"]


def test_presets_that_miss_the_duration_limit_are_drawn_at_their_fastest_time():
    """The fastest time of an infeasible preset equals the optimum with the duration limit lifted."""
    from planner.present.plots import comparison_figure, pyplot
    from planner.questions.compare import compare
    from planner.schema.instance import parse_instance
    raw = json.loads(open(SHIPPED).read())
    raw.setdefault("limits", {})["max_days"] = 40
    rows = compare(raw, ["16xH100-SXM", "48xA100-80GB"], objective="min_time")
    missed = [r for r in rows if not r.feasible]
    assert missed and all(r.result.fastest_time_s for r in missed)
    for row in missed:
        lifted = json.loads(json.dumps(raw))
        lifted["limits"]["max_days"] = 10_000
        lifted["fleet"]["hardware"] = row.hardware
        lifted["fleet"].pop("price_usd_per_accelerator", None)
        best = solve(parse_instance(lifted), objective="min_time")
        assert row.result.fastest_time_s == pytest.approx(best.objective_value, rel=1e-9)
        assert row.result.fastest_time_s / SECONDS_PER_DAY > 40
    fig = comparison_figure(rows, MIN_TIME, limit_days=40)
    try:
        ax = fig.axes[0]
        hatched = sorted(p.get_width() for p in ax.patches if p.get_hatch() == "///")
        assert hatched == pytest.approx(sorted(r.result.fastest_time_s / SECONDS_PER_DAY for r in missed))
        assert any("misses the limit" in t.get_text() for t in ax.texts)
    finally:
        pyplot().close(fig)


def test_thresholds_report_says_how_it_was_made(tmp_path):
    from planner.schema.instance import load_instance as load
    inst = "instances/miri/countermeasure-ccc-threshold-1.json"
    page = tmp_path / "t.md.html"
    command = ["thresholds", inst, "--compute", "4", "--fit-model", "--accelerator", "A100-80GB",
               "--report", str(page), "--curve", "4"]
    r = _run(*command)
    assert r.exit_code in (0, 1), r.output
    html = page.read_text()
    a = load(inst).resolved_assumptions()
    assert "<h2>Provenance</h2>" in html and f"<td>assumption profile</td><td>{a.profile} " in html
    assert f"<td>MFU</td><td>{a.mfu:g}</td>" in html and "dtplan thresholds " + inst in html
