"""`dtplan serve` driven in a real headless browser (Debian's chromium, through Playwright).

The server is the command itself (`python -m planner.cli serve --port 0`). The page loads a
shipped instance from its file, the bandwidth is changed and the days change to what the API
computes, optimise shows the optimal plan beside the user's (the API's optimum), the download
gives back the instance as loaded with the change, the link opens the same state in a new page,
the bandwidth slider moves both WAN fields and the days, a bad value shows the command line's message next to its field, and a long curve shows its
progress and is cancelled.

Needs chromium and the playwright package (test extras). Without a browser the test skips,
loudly; with DTPLAN_REQUIRE_BROWSER=1 (set by .ci/run) it fails instead.
"""

import json
import os
import shutil
import warnings
from pathlib import Path

import pytest

import planner
from planner.cost.duration import SECONDS_PER_DAY
from planner.web.app import spawn_server
from planner.web.fields import default_plan

REPO = Path(__file__).resolve().parents[1]
SHIPPED = REPO / "instances" / "solve-1e24-64xh100.json"
BROWSER = next((shutil.which(b) for b in ("chromium", "chromium-browser", "google-chrome") if shutil.which(b)), None)
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]


def _no_browser(reason: str):
    if os.environ.get("DTPLAN_REQUIRE_BROWSER"):
        pytest.fail(f"{reason}, and DTPLAN_REQUIRE_BROWSER is set")
    warnings.warn(f"the web page's browser test is SKIPPED: {reason}")
    pytest.skip(f"{reason}: the web page is not tested in a browser")


@pytest.fixture(scope="module")
def sync_playwright():
    if BROWSER is None:
        _no_browser("no headless browser (chromium) on this machine")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _no_browser("the playwright package is not installed (pip install -e '.[test]')")
    return sync_playwright


@pytest.fixture(scope="module")
def server():
    """`dtplan serve --port 0`: the address it prints once listening, with its token (the page is
    opened as the user opens it: the token in the address, kept by the page in a cookie)."""
    proc, url = spawn_server(cwd=REPO)
    try:
        yield f"{url}?token={proc.token}"
        assert not [x for x in proc.log if "Traceback" in x], "".join(proc.log)
    finally:
        proc.terminate()
        proc.wait(20)


def _days(page) -> float:
    return float(page.text_content("#days").replace(",", ""))


def _cli_line(instance: Path, *overrides: str) -> str:
    """The first problem as `dtplan validate INSTANCE --set ...` reports it: 'path: message'."""
    from click.testing import CliRunner

    from planner.cli import main
    r = CliRunner().invoke(main, ["validate", str(instance), "--json", *[a for o in overrides for a in ("--set", o)]])
    problem = json.loads(r.stdout)["error"]["problems"][0]
    return f"{problem['path']}: {problem['message']}"


def _download(page, tmp_path: Path, name: str) -> dict:
    with page.expect_download() as info:
        page.click("#download")
    path = tmp_path / name
    info.value.save_as(path)
    return json.loads(path.read_text())


def test_the_page_in_a_browser(sync_playwright, server, tmp_path):
    raw = json.loads(SHIPPED.read_text())
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=BROWSER, args=FLAGS)
        try:
            # without the token the page's API is refused (a page in another browser, or another site)
            stranger = browser.new_page()
            stranger.goto(server.split("?")[0])
            assert "no token" in stranger.content()
            stranger.close()

            context = browser.new_context(viewport={"width": 1280, "height": 900}, accept_downloads=True)
            page = context.new_page()
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(server)
            page.wait_for_selector("#days")
            assert "token" not in page.url          # the token left the address once the page had it

            # a fix's fields are pasted as the CLI reads them: `fleet.pools[1].count` sets the second pool's
            # count, and index N on N pools appends a pool (the pool fixes of `feasible`)
            edited = page.evaluate("""() => {
                const o = {fleet: {pools: [{hardware: "a", count: 1}, {hardware: "b", count: 2}]}};
                setPath(o, "fleet.pools[1].count", 12);
                setPath(o, "fleet.pools[2].hardware", "7xB200");
                setPath(o, "fleet.pools[2].count", 4);
                return [o, getPath(o, "fleet.pools[2].count")];
            }""")
            assert edited == [{"fleet": {"pools": [{"hardware": "a", "count": 1}, {"hardware": "b", "count": 12},
                                                  {"hardware": "7xB200", "count": 4}]}}, 4]

            # a shipped instance, loaded from its file; no plan in it: the page's default plan
            page.set_input_files("#load-file", str(SHIPPED))
            page.wait_for_function("n => document.querySelector('#i-name').value === n", arg=raw["name"])
            plan = default_plan(64)
            before = planner.evaluate(raw, plan).values["time_to_target_s"] / SECONDS_PER_DAY
            page.wait_for_function("d => Math.abs(parseFloat(document.querySelector('#days').textContent"
                                   ".replace(/,/g, '')) - d) <= 1e-4 * d", arg=before)
            assert _days(page) == pytest.approx(before, rel=1e-4)

            # the bandwidth changes, and so do the days: to what the API computes
            page.fill("#i-network-wan-up-mbps", "1000")
            page.fill("#i-network-wan-down-mbps", "1000")
            link = {"network.wan.up_mbps": 1000, "network.wan.down_mbps": 1000}
            after = planner.evaluate(raw, plan, overrides=link).values["time_to_target_s"] / SECONDS_PER_DAY
            assert abs(after - before) > 1e-3 * before
            page.wait_for_function("d => Math.abs(parseFloat(document.querySelector('#days').textContent"
                                   ".replace(/,/g, '')) - d) <= 1e-4 * d", arg=after)

            # optimise: the optimal plan beside the user's
            page.click("#optimise")
            page.wait_for_selector("#optimum-status", timeout=60_000)
            best = planner.solve(raw, overrides=link)
            status = page.text_content("#optimum-status")
            assert status.startswith("OPTIMAL (min_time)")
            assert f"{best.objective_value / SECONDS_PER_DAY:,.3f} days to target" in status
            assert page.is_hidden("#optimum-card .stale")
            side = page.text_content("#side-by-side")
            assert "your plan" in side and "optimal plan" in side and best.plan.mode in side

            # the instance downloaded is the file with the change, and the link holds the same state
            expected = json.loads(SHIPPED.read_text())
            expected["network"]["wan"].update(up_mbps=1000, down_mbps=1000)
            assert _download(page, tmp_path, "one.json") == expected
            with page.expect_download() as info:
                page.click("#download-plan")
            info.value.save_as(tmp_path / "plan.json")
            assert json.loads((tmp_path / "plan.json").read_text()) == plan
            with page.expect_download() as info:
                page.click("#download-report")
            info.value.save_as(tmp_path / "report.html")
            report = (tmp_path / "report.html").read_text()
            assert "dtplan evaluate" in report and f"{after:,.2f} days" in report
            shared = context.new_page()          # the same browser: its cookie holds the token
            shared.goto(page.url)
            shared.wait_for_selector("#days")
            assert _download(shared, tmp_path, "two.json") == expected
            assert _days(shared) == pytest.approx(after, rel=1e-4)
            shared.close()

            # the bandwidth slider (log scale, 1 Mb/s to 100 Gb/s): half way is 10^2.5 = 316 Mb/s, both ways
            page.fill("#slide-bandwidth", "500")
            assert page.input_value("#i-network-wan-up-mbps") == page.input_value("#i-network-wan-down-mbps") == "316"
            slid = planner.evaluate(raw, plan, overrides={"network.wan.up_mbps": 316, "network.wan.down_mbps": 316})
            slid_days = slid.values["time_to_target_s"] / SECONDS_PER_DAY
            page.wait_for_function("d => Math.abs(parseFloat(document.querySelector('#days').textContent"
                                   ".replace(/,/g, '')) - d) <= 1e-4 * d", arg=slid_days)
            assert page.is_visible("#optimum-card .stale")       # the optimum was for 1000 Mb/s

            # a bad value: the command line's message next to its field, and no figures
            page.fill("#i-fleet-nodes", "-8")
            error = page.locator('[data-error-for="fleet.nodes"]')
            error.wait_for(state="visible")
            assert error.text_content() == _cli_line(SHIPPED, "fleet.nodes=-8")
            assert "invalid" in page.get_attribute("#i-fleet-nodes", "class")
            page.wait_for_selector("#no-evaluation")
            page.fill("#i-fleet-nodes", "64")
            page.wait_for_selector("#days")

            # a list of objects (network.sites) is a table; a bad cell's message sits under its row
            page.select_option("#example", "sites-seven-cities")
            city = page.locator('[data-path="network.sites[2].city"]')
            city.wait_for()
            assert city.input_value() == "Paris"
            city.fill("Parris")
            row_error = page.locator('[data-error-for="network.sites[2]"]')
            row_error.wait_for(state="visible")
            bad = json.loads((REPO / "instances" / "sites-seven-cities.json").read_text())
            bad["network"]["sites"][2]["city"] = "Parris"
            (tmp_path / "bad-city.json").write_text(json.dumps(bad))
            assert row_error.text_content() == _cli_line(tmp_path / "bad-city.json")
            assert "unknown city or region 'Parris'" in row_error.text_content()

            # a fleet of pools starts on the baseline plan on every node of every pool, evaluated
            page.select_option("#example", "mixed-a100-h100")
            mixed = json.loads((REPO / "instances" / "mixed-a100-h100.json").read_text())
            everyone = {**default_plan(20), "pool_nodes": {"a100": 12, "h100": 8}}
            pooled = planner.evaluate(mixed, everyone).values["time_to_target_s"] / SECONDS_PER_DAY
            page.wait_for_function("d => Math.abs(parseFloat(document.querySelector('#days')?.textContent"
                                   ".replace(/,/g, '')) - d) <= 1e-4 * d", arg=pooled)

            # a max_compute question: the compute reached within the limit is the headline
            page.select_option("#example", "miri/profile-colocated")
            page.wait_for_selector("#compute")
            colocated = REPO / "instances" / "miri" / "profile-colocated.json"
            reached = planner.evaluate(colocated, default_plan(72)).values["c_local"]
            assert float(page.text_content("#compute")) == pytest.approx(reached, rel=1e-3)

            # a long answer shows its progress and can be cancelled
            page.select_option("#curve-input", "nodes")
            page.fill("#curve-low", "8")
            page.fill("#curve-high", "4000")
            page.fill("#curve-points", "60")
            page.click("#curve-draw")
            page.wait_for_function("document.querySelector('#curve-card .job-label')?.textContent.includes(' of ')")
            page.click("#curve-card .cancel")
            assert page.text_content("#curve-ended", timeout=10_000) == "cancelled"
            assert errors == []
        finally:
            browser.close()
