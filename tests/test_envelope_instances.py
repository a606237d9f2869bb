"""Every shipped instance solved under the dtplan profile (issue 24: "every shipped instance's optimum
lies inside the envelope, or the output says which bound it leaves and why"; docs/quality.md, section 6).

Each instance of instances/*.json and instances/miri/*.json is loaded as `dtplan solve PATH --set
assumptions.profile=dtplan` loads it and solved once; its --json answer (`SolveResult.to_dict`) and its
text (`render_solve`) are both checked. An optimum must cross no envelope bound. An answer with no plan
inside must name, in both outputs, the envelope bounds the best plan beyond the envelope crosses (each
checked against that plan's own decisions), or say that the envelope is not what stops it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from planner.cli.common import load_instance_or_exit
from planner.cost.envelope import ENVELOPE_NOTE
from planner.cost.duration import SECONDS_PER_DAY
from planner.evaluate import setting_from_instance
from planner.present.plain import PlainConsole
from planner.present.render import render_solve
from planner.solve import solve

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = sorted(p for p in [*ROOT.glob("instances/*.json"), *ROOT.glob("instances/miri/*.json")]
                 if not p.name.endswith((".expected.json", ".plan.json")) and p.name != "index.json")
DTPLAN = ("assumptions.profile=dtplan",)
BITS = {"fp32": 32, "bf16": 16, "fp16": 16, "fp8": 8, "fp4": 4}     # bits per value of each precision
STOPS = "evidence envelope stops it: "
NOT_IT = "the evidence envelope is not what stops it: beyond it (--beyond-evidence) no plan meets every limit either"


def _crossed(bound: dict, plan: dict) -> bool:
    """Whether the plan beyond the envelope really crosses `bound`, read from its own decisions where they
    carry it (R, bits per value), else from the value the bound reports against the range shown."""
    name, lo, hi = bound["bound"], *bound["shown"]
    if name == "R = 1":
        return plan["regional_rounds"] > 1 and bound["value"] == plan["regional_rounds"]
    if name.startswith("quantised to"):
        bits = BITS[plan["precision"]] / plan["compression"]
        return bits < lo and bound["value"] == pytest.approx(bits)
    return bound["value"] > hi


def test_the_shipped_instances_are_all_here():
    assert len(SHIPPED) == 35 and all("expected" not in p.name for p in SHIPPED)


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.relative_to(ROOT / "instances").as_posix())
def test_every_shipped_instance_under_dtplan_is_inside_or_names_the_bound_that_stops_it(path, capsys):
    instance, _ = load_instance_or_exit(path, DTPLAN)
    result = solve(instance, explain_envelope=True)
    answer = json.loads(json.dumps(result.to_dict()))
    render_solve(result, PlainConsole(width=10_000))
    text = capsys.readouterr().out
    assert result.status in ("optimal", "infeasible"), result.status
    if result.status == "optimal":
        # the optimum sits inside every envelope bound; it may only be marked on the instance's own quantities
        assert [x for x in answer["evaluation"]["envelope"] if x["bound"]] == []
        assert "beyond_evidence" not in answer
        assert "search kept inside the evidence envelope" in text
        return
    beyond = answer["beyond_evidence"]
    lines = [line for line in answer["infeasibility"] if line.startswith((STOPS, NOT_IT))]
    assert len(lines) == 1 and lines[0] in text
    assert answer["infeasibility"].count(ENVELOPE_NOTE) == 1 and ENVELOPE_NOTE in text
    if beyond["status"] == "infeasible":
        assert lines[0].startswith(NOT_IT)
        return
    assert beyond["status"] == "optimal" and lines[0].startswith(STOPS)
    plan = beyond["plan"]
    assert beyond["bounds"], "a plan beyond the envelope that no bound stopped would have been found inside"
    for bound in beyond["bounds"]:
        assert _crossed(bound, plan), bound
        assert f"{bound['bound']} (the plan beyond has {bound['message']}" in lines[0]
    window_days = setting_from_instance(instance).window_s / SECONDS_PER_DAY
    if beyond["objective"] == "min_time":
        assert beyond["objective_value"] / SECONDS_PER_DAY <= window_days * (1 + 1e-9)
        assert f"reaches the target in {beyond['objective_value'] / SECONDS_PER_DAY:,.1f} days" in lines[0]


def test_the_cli_says_it_in_text_and_json():
    """`dtplan solve` itself asks for the explanation (planner/cli/solve.py)."""
    from planner.cli import main
    path = str(ROOT / "instances" / "baseline-1e25.json")
    runner = CliRunner()
    text = runner.invoke(main, ["solve", path, "--set", DTPLAN[0]])
    data = runner.invoke(main, ["solve", path, "--set", DTPLAN[0], "--json"])
    assert text.exit_code == data.exit_code
    answer = json.loads(data.stdout)
    assert answer["status"] == "infeasible" and answer["beyond_evidence"]["status"] == "optimal"
    assert {b["bound"] for b in answer["beyond_evidence"]["bounds"]} >= {"replicas <= 8"}
    assert STOPS + "replicas <= 8" in " ".join(text.stdout.split())


def test_a_thresholds_row_unreachable_inside_names_the_bounds_that_stop_it():
    """The 1e27 thresholds rows (docs/quality.md, section 7): inside the envelope no row is reachable, and
    each row's binding names the bounds the cheapest plan beyond crosses (here the H100 row)."""
    from planner.cli import main
    out = CliRunner().invoke(main, ["thresholds", "--compute", "16", "--memory", "1024", "--target-flop", "1e27",
                                    "--set", DTPLAN[0], "--accelerator", "H100-SXM", "--json"])
    row, = json.loads(out.stdout)["answers"]
    assert row["reachable"] is False
    line, = [b for b in row["binding"] if b.startswith(STOPS)]
    for bound in ("replicas <= 8", "R = 1", "quantised to >= 4 bits per value"):
        assert f"{bound} (the plan beyond has " in line
    assert "The cheapest plan beyond it (--beyond-evidence) costs $" in line
