"""The evidence envelope explained by `dtplan sweep` (issue 24; docs/quality.md, section 6).

Under the dtplan profile a sweep's point with no plan inside the envelope is answered again beyond it,
as `dtplan solve` answers (`planner.solve.with_beyond_evidence`): its row's `infeasibility` (or
`binding`) holds the same reason line, and the columns `beyond_status`, `beyond_objective_value`,
`beyond_bounds` and `beyond_plan` (`planner.cost.envelope.beyond_columns`) carry it in --json, CSV and
Parquet. Each test sweeps instances/solve-1e24-64xh100.json (min_time, 64 nodes over 100 Mb/s) at a
duration limit the envelope stops (365 days), one where no plan exists beyond it either (1 day) and
one with a plan inside (100,000 days). The plan beyond is found again by solving the point alone with
--beyond-evidence, and each bound the row names is read back from that plan: its own decisions (R, the
bits per value of its precision and ratio) and its re-scored evaluation. Under the reference profile
the columns stay empty and the table has no envelope column."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from planner.cli import main
from planner.cli.common import BEYOND_EVIDENCE, load_instance_or_exit
from planner.cost.duration import SECONDS_PER_DAY
from planner.cost.envelope import BEYOND_COLUMNS, plan_words
from planner.evaluate import evaluate
from planner.present.envelope import sweep_marker
from planner.questions.feasible import feasible
from planner.questions.sweep import SweepSpec, run_sweep
from planner.solve import solve

ROOT = Path(__file__).resolve().parents[1]
SOLVE_1E24 = ROOT / "instances" / "solve-1e24-64xh100.json"
DTPLAN = "assumptions.profile=dtplan"
STOPS = "evidence envelope stops it: "
NOT_IT = "the evidence envelope is not what stops it"
BITS = {"fp32": 32, "bf16": 16, "fp16": 16, "fp8": 8, "fp4": 4}     # bits per value of each precision
DAYS = [1, 365, 100000]          # no plan beyond either; stopped by the envelope; a plan inside


def _raw(*sets: str) -> dict:
    _, raw = load_instance_or_exit(SOLVE_1E24, sets)
    return raw


@pytest.fixture(scope="module")
def rows():
    result = run_sweep(SweepSpec(_raw(DTPLAN), str(SOLVE_1E24), grid={"limits.max_days": DAYS}), workers=1)
    return result.rows


def _bounds(cell: str) -> dict[str, float]:
    return {name: float(value) for name, value in (part.rsplit(": ", 1) for part in cell.split("; "))}


def test_a_point_stopped_by_the_envelope_names_each_bound_of_the_plan_beyond(rows):
    row = rows[1]
    assert row["status"] == "infeasible" and row["beyond_status"] == "optimal"
    # the same question alone with the envelope open: the plan beyond and what it reaches
    opened, _ = load_instance_or_exit(SOLVE_1E24, (DTPLAN, "limits.max_days=365", BEYOND_EVIDENCE))
    alone = solve(opened)
    assert alone.status == "optimal"
    assert row["beyond_objective_value"] == pytest.approx(alone.objective_value, rel=1e-9)
    plan = alone.plan.model_dump(exclude_none=True)
    assert row["beyond_plan"] == plan_words(plan)
    scored = evaluate(opened, alone.plan)
    assert scored.violations == []
    assert scored.values["time_to_target_s"] == pytest.approx(row["beyond_objective_value"], rel=1e-9)
    assert row["beyond_objective_value"] <= 365 * SECONDS_PER_DAY
    named = _bounds(row["beyond_bounds"])
    crossed = {x["bound"]: x for x in scored.envelope if x.get("bound")}
    assert set(named) == set(crossed) and named
    for name, value in named.items():
        assert value == pytest.approx(crossed[name]["value"], rel=1e-5)
        lo, hi = crossed[name]["shown"]
        if name == "R = 1":
            assert plan["regional_rounds"] == value > hi
        elif name.startswith("quantised to"):
            assert BITS[plan["precision"]] / plan["compression"] == pytest.approx(value) and value < lo
        else:                              # replicas <= 8, H <= 100
            assert value > hi
    assert "replicas <= 8" in named        # 64 nodes, more than 8 replicas
    # the reason line solve gives, among the row's reasons
    line = next(r for r in row["infeasibility"].split("; evidence envelope") if "stops it" in r)
    assert f"reaches the target in {row['beyond_objective_value'] / SECONDS_PER_DAY:,.1f} days" in line
    assert sweep_marker(row) == (f"{STOPS}{', '.join(named)} | beyond it (--beyond-evidence): "
                                 f"{row['beyond_objective_value'] / SECONDS_PER_DAY:,.1f} days: {row['beyond_plan']}")


def test_rows_match_solve_alone_with_the_explanation(rows):
    for days, row in zip(DAYS, rows):
        alone = solve(load_instance_or_exit(SOLVE_1E24, (DTPLAN, f"limits.max_days={days}"))[0],
                      explain_envelope=True)
        assert row["status"] == alone.status
        assert row["infeasibility"] == ("; ".join(alone.infeasibility) or None)
        beyond = alone.beyond_evidence
        assert row["beyond_status"] == (beyond["status"] if beyond else None)


def test_no_plan_beyond_either_says_the_envelope_is_not_the_cause(rows):
    row = rows[0]
    assert row["status"] == "infeasible" and row["beyond_status"] == "infeasible"
    assert row["beyond_objective_value"] is None and row["beyond_bounds"] is None and row["beyond_plan"] is None
    assert NOT_IT in row["infeasibility"]
    assert sweep_marker(row).startswith(NOT_IT)


def test_a_point_with_a_plan_inside_has_no_beyond_columns(rows):
    row = rows[2]
    assert row["status"] == "optimal"
    assert all(row[c] is None for c in BEYOND_COLUMNS) and sweep_marker(row) == ""


def test_feasible_rows_carry_the_verdicts_explanation():
    result = run_sweep(SweepSpec(_raw(DTPLAN), str(SOLVE_1E24), grid={"limits.max_days": [365]},
                                 command="feasible"), workers=1)
    (row,) = result.rows
    f = feasible(_raw(DTPLAN, "limits.max_days=365"), str(SOLVE_1E24))
    beyond = f.result.beyond_evidence
    assert row["feasible"] is False and beyond["status"] == "optimal"
    assert row["beyond_objective_value"] == pytest.approx(beyond["objective_value"], rel=1e-9)
    assert _bounds(row["beyond_bounds"]) == pytest.approx({b["bound"]: b["value"] for b in beyond["bounds"]}, rel=1e-5)
    assert STOPS in row["binding"]


def test_reference_profile_rows_and_table_are_unchanged():
    raw = _raw()
    result = run_sweep(SweepSpec(raw, str(SOLVE_1E24), grid={"limits.max_days": [1]}), workers=1)
    (row,) = result.rows
    assert row["status"] == "infeasible" and all(row[c] is None for c in BEYOND_COLUMNS)
    out = CliRunner().invoke(main, ["sweep", str(SOLVE_1E24), "--grid", "limits.max_days=1", "--workers", "1"])
    assert out.exit_code == 0 and "envelope" not in out.stdout and "point 0:" not in out.stdout


def test_cli_table_json_and_csv_carry_the_envelope(tmp_path):
    runner = CliRunner()
    args = ["sweep", str(SOLVE_1E24), "--set", DTPLAN, "--grid", "limits.max_days=365", "--workers", "1"]
    text = runner.invoke(main, args)
    assert text.exit_code == 0
    assert "envelope" in text.stdout and "stops it" in text.stdout      # the column and its flag
    note = next(line for line in text.stdout.splitlines() if line.startswith("point 0: "))
    assert note.startswith(f"point 0: {STOPS}replicas <= 8")
    data = json.loads(runner.invoke(main, args + ["--json"]).stdout)
    (row,) = data["rows"]
    assert row["beyond_status"] == "optimal" and "replicas <= 8" in _bounds(row["beyond_bounds"])
    out = tmp_path / "rows.csv"
    assert runner.invoke(main, args + ["-o", str(out)]).exit_code == 0
    (written,) = list(csv.DictReader(out.open()))
    assert written["beyond_bounds"] == row["beyond_bounds"] and written["beyond_plan"] == row["beyond_plan"]
    assert float(written["beyond_objective_value"]) == pytest.approx(row["beyond_objective_value"], rel=1e-12)
