"""`planner.questions.feasible`: the verdict and the smallest single fixes, each re-checked here
independently (apply the fix to the raw instance, solve; one step less, solve)."""

import math

import pytest

from planner.cost.duration import SECONDS_PER_DAY
from planner.questions.feasible import feasible
from planner.schema.instance import parse_instance
from planner.solve import solve
from tests.raw import with_fields as _with

BASE = {
    "name": "10^23 FLOP, 7B, H100 nodes", "model": {"params": 7e9}, "training": {"target_flop": 3e23},
    "fleet": {"hardware": "16xH100-SXM", "nodes": 32},
    "network": {"wan": {"up_mbps": 10, "down_mbps": 20, "rtt_ms": 100}},
    "limits": {"max_days": 30},
    "search": {"modes": ["flat"], "compression": [1, 4], "max_inner_steps": 50},
}


def _ok(raw) -> bool:
    return solve(parse_instance(raw)).status == "optimal"


def test_a_feasible_instance_has_no_fixes():
    raw = _with(BASE, limits__max_days=3000)
    r = feasible(raw)
    assert r.feasible and r.fixes == [] and r.result.status == "optimal"
    assert r.result.objective_value <= 3000 * SECONDS_PER_DAY


def test_fixes_are_feasible_and_minimal():
    r = feasible(BASE)
    assert not r.feasible
    assert any(line.startswith("duration-limit") for line in r.result.infeasibility)
    limits = {f.limit: f for f in r.fixes}
    assert set(limits) == {"nodes", "wan-bandwidth", "duration"}      # no budget in the instance

    nodes = limits["nodes"].fields["fleet.nodes"]
    assert _ok(_with(BASE, fleet__nodes=nodes)) and not _ok(_with(BASE, fleet__nodes=nodes - 1))

    up = limits["wan-bandwidth"].fields["network.wan.up_mbps"]
    down = limits["wan-bandwidth"].fields["network.wan.down_mbps"]
    assert up > 10 and down > 20
    faster = _with(BASE, network__wan={"up_mbps": up, "down_mbps": down, "rtt_ms": 100})
    slower = _with(BASE, network__wan={"up_mbps": up / 1.02, "down_mbps": down / 1.02, "rtt_ms": 100})
    assert _ok(faster) and not _ok(slower)

    days = limits["duration"].fields["limits.max_days"]
    fastest = solve(parse_instance(_with(BASE, limits__max_days=1e5)))
    assert days == pytest.approx(math.ceil(fastest.objective_value / SECONDS_PER_DAY * 10) / 10)
    assert _ok(_with(BASE, limits__max_days=days)) and not _ok(_with(BASE, limits__max_days=days - 0.1))


def test_fewest_nodes_equals_a_scan():
    raw = _with(BASE, limits__max_days=150, fleet__nodes=2,
                network__wan={"up_mbps": 1000, "down_mbps": 1000, "rtt_ms": 50})
    r = feasible(raw)
    (fix,) = [f for f in r.fixes if f.limit == "nodes"]
    scan = next(n for n in range(2, 40) if _ok(_with(raw, fleet__nodes=n)))
    assert fix.fields["fleet.nodes"] == scan


def test_budget_fix_is_the_cost_of_the_fewest_nodes():
    raw = _with(BASE, limits__max_days=150, limits__budget_usd=1e6, fleet__nodes=100,
                network__wan={"up_mbps": 1000, "down_mbps": 1000, "rtt_ms": 50})
    r = feasible(raw)
    assert not r.feasible
    (fix,) = [f for f in r.fixes if f.limit == "budget"]
    price = 16 * parse_instance(raw).hardware.price_usd_per_accelerator
    cost = fix.fields["limits.budget_usd"]
    assert cost % price == 0 and cost > 1e6
    assert _ok(_with(raw, limits__budget_usd=cost)) and not _ok(_with(raw, limits__budget_usd=cost - 1))
    assert not [f for f in r.fixes if f.limit == "nodes"]     # more nodes alone cannot help: the budget caps them
    assert any(line.startswith("nodes:") and "budget" in line for line in r.no_fix)


def test_what_no_single_change_fixes_is_said():
    raw = _with(BASE, fleet__nodes=2, network__wan={"up_mbps": 10000, "down_mbps": 10000, "rtt_ms": 1},
                limits__max_days=1)
    r = feasible(raw)
    assert not r.feasible
    assert any(line.startswith("WAN bandwidth") for line in r.no_fix)


# -- dtplan feasible -----------------------------------------------------------------------

def _cli(*args):
    from click.testing import CliRunner
    from planner.cli import main
    return CliRunner().invoke(main, ["feasible", *[str(a) for a in args]])


def test_cli_infeasible_instance_lists_binding_limits_and_fixes(tmp_path):
    import json
    path = tmp_path / "i.json"
    path.write_text(json.dumps(BASE))
    r = _cli(path)
    assert r.exit_code == 1, r.output
    assert "INFEASIBLE" in r.output and "duration-limit" in r.output
    assert "fleet.nodes=" in r.output and "limits.max_days=" in r.output
    data = json.loads(_cli(path, "--json").output)
    assert data["feasible"] is False
    assert {f["limit"] for f in data["fixes"]} == {"nodes", "wan-bandwidth", "duration"}
    expected = feasible(BASE)
    assert data["fixes"][0]["fields"] == expected.fixes[0].fields


def test_cli_short_form_and_overrides(tmp_path):
    r = _cli("--target-flop", 3e23, "--hardware", "16xH100-SXM", "--nodes", 64, "--wan-mbps", 1000,
             "--rtt-ms", 50, "--max-days", 365, "--params", 7e9)
    assert r.exit_code == 0, r.output
    assert "FEASIBLE" in r.output
    r = _cli("--target-flop", 1e24, "--hardware", "16xH100-SXM", "--nodes", 8, "--max-days", 10, "--json")
    assert r.exit_code == 1
    import json
    data = json.loads(r.output)
    assert "compute-optimal size" in data["notes"][0]


@pytest.mark.parametrize("args, message", [
    (["--hardware", "16xH100-SXM", "--nodes", "8"], "--target-flop"),
    (["--target-flop", "1e24", "--hardware", "16xH100-SXM", "--nodes", "8", "--max-days", "soon"], "--max-days"),
    (["--target-flop", "1e24", "--hardware", "H100", "--nodes", "8"], "fleet.hardware"),
])
def test_cli_bad_input_exits_2(args, message):
    r = _cli(*args)
    assert r.exit_code == 2
    assert message in r.output and "Traceback" not in r.output


def test_cli_growth_rate_duration_limit():
    import json
    from planner.cost.duration import max_run_days
    r = _cli("--target-flop", 1e25, "--hardware", "16xH100-SXM", "--nodes", 100, "--max-days", "growth",
             "--growth-software", 2, "--json")
    assert r.exit_code == 1
    data = json.loads(r.stdout)
    limit = max_run_days(1.37, 2.0, 3.5)          # hardware and investment at their defaults
    (line,) = data["binding"]
    assert f"the limit is {limit:,.1f} days" in line
    (duration,) = [f for f in data["fixes"] if f["limit"] == "duration"]
    assert duration["current"] == {"limits.max_days": "growth"}
    r = _cli("--target-flop", 1e25, "--hardware", "16xH100-SXM", "--nodes", 100, "--growth-investment", 1)
    assert r.exit_code == 2 and "--growth-investment" in r.output
