"""Input fields the model does not use are named in a warning: `network.wan.rtt_ms` with
network.sites and fleet.pools (each sync's RTT is its route's, planner/fleet/network.py)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

import planner
from planner.cli import main
from planner.schema.instance import parse_instance
from planner.schema.sites import ignored_wan_rtt

ROOT = Path(__file__).resolve().parents[1]
SIX = ROOT / "instances" / "mixed-six-sites.json"        # five pools at six sites, no network.wan.rtt_ms


def _raw(**wan) -> dict:
    raw = json.loads(SIX.read_text())
    raw["network"]["wan"] |= wan
    return raw


def test_warned_only_when_given_with_sites_and_pools():
    assert ignored_wan_rtt(parse_instance(_raw())) is None                 # not given
    given = ignored_wan_rtt(parse_instance(_raw(rtt_ms=100)))               # the default, but written
    assert given.startswith("network.wan.rtt_ms (100 ms) is ignored")
    no_sites = _raw(rtt_ms=30)
    no_sites["network"] = {"wan": {"rtt_ms": 30}}
    no_sites["fleet"]["pools"] = [{k: v for k, v in p.items() if k != "site"} for p in no_sites["fleet"]["pools"]]
    assert ignored_wan_rtt(parse_instance(no_sites)) is None                # used: the uniform network
    one_type = _raw(rtt_ms=30)
    one_type["fleet"] = {"hardware": "16xH100-SXM", "nodes": 4}
    assert ignored_wan_rtt(parse_instance(one_type)) is None                # no pools: wan.rtt_ms is used


def test_shipped_instances_give_no_ignored_rtt():
    for path in sorted(ROOT.glob("instances/*.json")):
        raw = json.loads(path.read_text())
        if isinstance(raw, dict) and "fleet" in raw:
            assert ignored_wan_rtt(parse_instance(raw)) is None, path


def test_the_warning_is_true_the_rtt_changes_nothing():
    """The same plan scores the same with a WAN RTT of 1 ms and of 3,000 ms."""
    result = planner.solve(_raw(rtt_ms=1))
    fast, slow = (planner.evaluate(_raw(rtt_ms=rtt), result.plan) for rtt in (1, 3000))
    assert fast.values["time_to_target_s"] == slow.values["time_to_target_s"]
    assert any(w.startswith("network.wan.rtt_ms (3000 ms) is ignored") for w in slow.warnings)


def test_every_command_warns_on_stderr_and_json_stays_clean(tmp_path):
    path = tmp_path / "six.json"
    path.write_text(json.dumps(_raw(rtt_ms=30)))
    for args in (["validate", path], ["validate", path, "--json"], ["solve", path, "--json"]):
        result = CliRunner().invoke(main, [str(a) for a in args])
        assert result.exit_code == 0, result.output
        assert f"{path}: warning: network.wan.rtt_ms (30 ms) is ignored" in result.stderr
        assert "warning" not in result.stdout.split("{", 1)[0]
        if "--json" in args:
            data = json.loads(result.stdout)                           # standard output holds only JSON
            if args[0] == "solve":
                assert any("network.wan.rtt_ms" in w for w in data["evaluation"]["warnings"])
