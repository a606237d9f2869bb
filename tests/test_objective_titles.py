"""Each objective shows its plan under its own title, in the text output and in --report
(issue 23: `solve --objective max_compute` said "Fastest ...")."""

from pathlib import Path

import pytest
from click.testing import CliRunner

from planner.cli import main

REPO = Path(__file__).resolve().parents[1]
INSTANCE = REPO / "instances" / "solve-1e24-64xh100.json"
NAME = "10^24 FLOP run of a 20B model on up to 64 nodes of 16x H100"
TITLES = {"min_time": "Fastest plan", "min_cost": "Cheapest plan reaching the target in time",
          "max_compute": "Most compute within the duration limit"}


@pytest.mark.parametrize("objective", sorted(TITLES))
def test_solve_titles_its_plan_by_the_objective(tmp_path, objective):
    report = tmp_path / "solve.md"
    result = CliRunner().invoke(main, ["solve", str(INSTANCE), "--objective", objective, "--report", str(report)])
    assert result.exit_code == 0, result.output
    heading = f"dtplan solve: {TITLES[objective]} - {NAME}"
    assert heading in result.output.splitlines()
    assert report.read_text().splitlines()[0] == f"# {heading}"
    others = [t for o, t in TITLES.items() if o != objective]
    assert not any(t in result.output or t in report.read_text() for t in others)
