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
    for fix in fixes:
        for field, value in fix["fields"].items():
            assert f"{field} = {value}" in dom


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
