"""Extreme but valid inputs (issue 10): nothing but the answer on standard error, and the answer
right. Run as real processes: in-process, pytest would catch the warnings itself and a test
could not see them printed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
INSTANCE = REPO / "instances" / "solve-1e24-64xh100.json"
DTPLAN = str(Path(sys.executable).with_name("dtplan"))


def dtplan(*args: str) -> tuple[dict, str, int]:
    env_args = ["-W", "default"]          # every warning shown once per place, as a user's python does
    done = subprocess.run([sys.executable, *env_args, DTPLAN, *args, "--json"], capture_output=True, text=True,
                          cwd=REPO)
    return json.loads(done.stdout), done.stderr, done.returncode


def solve(*sets: str, objective: str = "min_time") -> dict:
    out, err, code = dtplan("solve", str(INSTANCE), "--objective", objective, *[a for s in sets for a in ("--set", s)])
    assert err == "", err                  # before: RuntimeWarning: overflow encountered in divide (run.py, bnb.py)
    return out


MODES_WITHOUT = {"hierarchical": '["flat","pp_group","pipeline_wan"]', "pipeline": '["flat","hierarchical"]'}


@pytest.mark.parametrize("objective", ["min_time", "max_compute", "min_cost"])
@pytest.mark.parametrize("link, modes", [("network.regional.mbps", "hierarchical"), ("network.pipeline.mbps", "pipeline")])
def test_a_link_of_1e_300_mbps_is_a_link_never_worth_using(objective, link, modes):
    """Every plan over that link takes forever (inf, not a warning): the optimum is the optimum of
    the modes that do not use it, found independently by removing them."""
    extreme = solve(f"{link}=1e-300", objective=objective)
    without = solve(f"search.modes={MODES_WITHOUT[modes]}", objective=objective)
    assert extreme["status"] == without["status"] == "optimal"
    assert extreme["objective_value"] == pytest.approx(without["objective_value"], rel=1e-12)
    assert extreme["plan"] == without["plan"]


@pytest.mark.parametrize("field", ["network.wan.up_mbps", "network.wan.down_mbps"])
def test_a_wan_of_1e_300_mbps_leaves_only_local_training(field):
    extreme = solve(f"{field}=1e-300")
    one_node = solve("fleet.nodes=1")          # the only plans whose time is finite: one node, no sync
    assert extreme["status"] == one_node["status"] == "infeasible"      # 913 days on one node, limit 365
    assert extreme["fastest_time_s"] == pytest.approx(one_node["fastest_time_s"], rel=1e-12)


def test_goodput_of_1e_300_divides_the_fastest_time():
    extreme = solve("fleet.goodput=1e-300")
    plain = solve()
    assert extreme["status"] == "infeasible"
    assert extreme["fastest_time_s"] == pytest.approx(plain["objective_value"] / 1e-300, rel=1e-12)


def test_evaluate_and_feasible_at_the_extremes_print_only_the_answer():
    for args in (["evaluate", str(REPO / "instances" / "baseline-1e25.json"),
                  str(REPO / "instances" / "baseline-1e25.plan.json"), "--set", "network.wan.up_mbps=1e-300"],
                 ["feasible", str(INSTANCE), "--set", "network.regional.mbps=1e-300"],
                 ["feasible", str(INSTANCE), "--set", "limits.max_days=1e-300"]):
        out, err, code = dtplan(*args)
        assert err == "" and code in (0, 1), (args, err)
