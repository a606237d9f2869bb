"""How a plan on sites is shown (planner.fleet.present.site_lines, the text output and --report):
with `network.sites` and regions that follow the map there are no chosen regions, so the line of
whole groups per region is absent (issue 23: it raised KeyError 'region_units', exit 4, in every
text output and report of such a fleet)."""

from pathlib import Path

import pytest
from click.testing import CliRunner

from planner.cli import main
from planner.fleet.present import site_lines

REPO = Path(__file__).resolve().parents[1]
SIX_SITES = REPO / "instances" / "mixed-six-sites.json"
CITIES = REPO / "instances" / "mixed-governance-cities.json"

# The shape planner.fleet.evaluate.site_rows builds, with round figures to check the sentences by hand.
SITES = {"nodes_per_site": {"LON": 2, "NYC": 1200}, "regions": [["LON"], ["NYC"]],
         "slowest_route_mbps": 1000.0, "slowest_route_rtt_ms": 78.04, "wan_up_mbps": 100.0,
         "wan_down_mbps": 2500.0, "wan_rtt_ms": 78.04, "regional_mbps": 5000.0, "regional_rtt_ms": 25.0}


def test_site_lines_without_chosen_regions_has_no_region_line():
    assert site_lines(dict(SITES)) == [
        "nodes per site: LON 2, NYC 1,200",
        "regions (groups and pipelines stay inside one): {LON}; {NYC}",
        "slowest route among the sites: 1,000 Mb/s, 78.0 ms RTT; WAN sync at 100 / 2,500 Mb/s "
        "(each node's access link included)",
        "regional and pipeline links: 5,000 Mb/s, 25.0 ms"]


def test_site_lines_with_chosen_regions_adds_the_groups_per_region():
    units = [{"sites": ["LON"], "nodes": 2, "units": 1, "cost_usd": 1500.0},
             {"sites": ["NYC"], "nodes": 1200, "units": 3, "cost_usd": 2e6}]
    lines = site_lines(dict(SITES, region_units=units))
    assert lines[:4] == site_lines(dict(SITES))
    assert lines[4] == ("regions of the plan (whole groups inside each): {LON}: 2 nodes, 1 group, 1,500 USD; "
                        "{NYC}: 1,200 nodes, 3 groups, 2,000,000 USD")


def _run(*args):
    result = CliRunner().invoke(main, [str(a) for a in args])
    assert result.exit_code == 0, result.output
    return result.output


def test_solve_on_sites_prints_the_sites_the_optimum_uses():
    # the optimum trains on London, Paris and New York in the regions {London, Paris}, {New York}
    # (the instance's description; README "Six sites on two continents")
    out = _run("solve", SIX_SITES)
    assert "nodes per site: LON 2, PAR 2, NYC 2" in out
    assert "regions (groups and pipelines stay inside one): {LON, PAR}; {NYC}" in out
    assert "regions of the plan" not in out


@pytest.mark.parametrize("suffix", [".html", ".md"])
def test_solve_report_on_sites_is_written(tmp_path, suffix):
    report = tmp_path / f"six-sites{suffix}"
    _run("solve", SIX_SITES, "--report", report)
    assert "nodes per site: LON 2, PAR 2, NYC 2" in report.read_text()


def test_feasible_on_sites_prints_the_verdict_and_the_sites(tmp_path):
    report = tmp_path / "cities.html"
    out = _run("feasible", CITIES, "--report", report)
    assert "nodes per site: London 40, Paris 40, Frankfurt 40, Amsterdam 40, Milan 40, Madrid 40" in out
    assert "nodes per site: London 40" in report.read_text()
