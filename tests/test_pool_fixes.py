"""The nodes fixes of `dtplan feasible` on a fleet of pools (planner.questions.pool_fixes), each
checked here against a linear scan of the count (the brute-force oracle: solve at count+1,
count+2, ... until the first feasible one), and every printed `--set` parsed back by the CLI."""

import json
import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner

from planner.cli import main
from planner.questions.feasible import feasible
from planner.schema.instance import parse_instance
from planner.solve import solve
from tests.raw import with_fields

ROOT = Path(__file__).resolve().parent.parent
POOLS = with_fields(json.loads((ROOT / "instances" / "mixed-a100-h100.json").read_text()), limits__max_days=100)
A100_NODE_USD, H100_NODE_USD, B200_NODE_USD = 720_000, 400_000, 245_000    # `dtplan hardware`: $ per node


def _feasible(raw) -> bool:
    return solve(parse_instance(raw)).status == "optimal"


def _scan(raw, edit, start: int) -> int:
    """The first count c >= start at which edit(raw, c) is feasible (a linear scan)."""
    c = start
    while not _feasible(edit(raw, c)):
        c += 1
    return c


def _grown(raw, i, c):
    out = json.loads(json.dumps(raw))
    out["fleet"]["pools"][i]["count"] = c
    return out


def _added(pool):
    def edit(raw, c):
        out = json.loads(json.dumps(raw))
        out["fleet"]["pools"].append({**pool, "count": c})
        return out
    return edit


def test_pool_fixes_are_the_fewest_nodes_by_linear_scan():
    f = feasible(POOLS, presets=["7xB200"])
    assert not f.feasible
    grown = {next(iter(x.fields)): x for x in f.fixes if x.limit == "pool-nodes"}
    assert set(grown) == {"fleet.pools[0].count", "fleet.pools[1].count"}
    a100, h100 = grown["fleet.pools[0].count"], grown["fleet.pools[1].count"]
    assert a100.fields["fleet.pools[0].count"] == _scan(POOLS, lambda r, c: _grown(r, 0, c), 13) == 18
    assert h100.fields["fleet.pools[1].count"] == _scan(POOLS, lambda r, c: _grown(r, 1, c), 9) == 12
    assert a100.added_cost_usd == 6 * A100_NODE_USD and h100.added_cost_usd == 4 * H100_NODE_USD
    assert a100.current == {"fleet.pools[0].count": 12}
    new = [x for x in f.fixes if x.limit == "new-pool"]
    assert len(new) == 1
    pool = new[0].fields["fleet.pools[2]"]
    assert pool == {"name": "added-7xB200", "hardware": "7xB200", "count": 4}
    assert _scan(POOLS, _added({"name": "b", "hardware": "7xB200"}), 1) == 4
    assert new[0].added_cost_usd == 4 * B200_NODE_USD
    assert "+6, $4,320,000" in a100.summary


def test_with_a_budget_the_count_is_bisected_and_still_the_fewest():
    raw = with_fields(POOLS, limits__budget_usd=9_000_000)
    f = feasible(raw, presets=[])
    grown = {next(iter(x.fields)): x.fields for x in f.fixes if x.limit == "pool-nodes"}
    assert grown["fleet.pools[1].count"]["fleet.pools[1].count"] == _scan(raw, lambda r, c: _grown(r, 1, c), 9)
    if "fleet.pools[0].count" in grown:
        assert grown["fleet.pools[0].count"]["fleet.pools[0].count"] == _scan(raw, lambda r, c: _grown(r, 0, c), 13)


SITES = with_fields(POOLS, network__sites=[{"name": "east", "city": "New York"}, {"name": "west", "city": "Seattle"}],
                    network__links=[{"a": "east", "b": "west", "up_mbps": 1000}])
SITES["fleet"]["pools"][0]["site"], SITES["fleet"]["pools"][1]["site"] = "east", "west"


def test_a_new_pool_goes_to_the_site_named_or_the_cheapest():
    named = feasible(SITES, site="west", presets=["7xB200"])
    new = [x for x in named.fixes if x.limit == "new-pool"][0].fields["fleet.pools[2]"]
    assert new["site"] == "west"
    assert new["count"] == _scan(SITES, _added({"name": "b", "hardware": "7xB200", "site": "west"}), 1)
    default = feasible(SITES, presets=["7xB200"])
    grown = [x for x in default.fixes if x.limit == "pool-nodes"]
    cheapest = min(grown, key=lambda x: x.added_cost_usd)          # the site of the cheapest growth
    site = SITES["fleet"]["pools"][int(next(iter(cheapest.fields))[12])]["site"]
    added = [x for x in default.fixes if x.limit == "new-pool"][0]
    assert added.fields["fleet.pools[2]"]["site"] == site and "(the cheapest site)" in added.summary


def _run(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def _pasted_sets(output: str) -> list[list[str]]:
    """The lines after 'Each fix as options', each split as a shell would."""
    lines = output.split("Each fix as options", 1)[1].splitlines()[1:]
    return [shlex.split(line) for line in lines if line.strip().startswith("--set")]


UNIFORM = with_fields(json.loads((ROOT / "instances" / "baseline-1e25.json").read_text()), limits__max_days=12)


@pytest.mark.parametrize("raw", [POOLS, UNIFORM], ids=["pools", "uniform"])     # uniform: 1,437 nodes needed
def test_every_printed_set_is_accepted_by_solve_and_makes_it_feasible(tmp_path, raw):
    path = tmp_path / "i.json"
    path.write_text(json.dumps(raw))
    r = _run("feasible", path)
    assert r.exit_code == 1, r.output
    sets = _pasted_sets(r.output)
    assert sets, r.output
    fixes = json.loads(_run("feasible", path, "--json").output)["fixes"]
    assert len(sets) == len(fixes)
    for args, fix in zip(sets, fixes):
        assert args == [a for s in fix["set"] for a in ("--set", s)]
        for value in args[1::2]:
            field, _, text = value.partition("=")
            assert json.loads(text) == fix["fields"][field]       # exact: no separators, every digit
        solved = _run("solve", path, *args)
        assert solved.exit_code == 0, (args, solved.output)


def test_site_option_is_checked():
    path = ROOT / "instances" / "mixed-a100-h100.json"
    r = _run("feasible", path, "--site", "Mars")
    assert r.exit_code == 2 and "--site: the instance has no network.sites" in r.output
    r = _run("feasible", ROOT / "instances" / "mixed-governance-cities.json", "--site", "Mars")
    assert r.exit_code == 2 and "--site: 'Mars' is not a site of network.sites" in r.output
    r = _run("feasible", ROOT / "instances" / "baseline-1e25.json", "--site", "Paris")
    assert r.exit_code == 2 and "--site: only for a fleet of pools" in r.output


def test_unnamed_pools_are_found_by_their_labels():
    raw = json.loads(json.dumps(POOLS))
    for pool in raw["fleet"]["pools"]:
        del pool["name"]                  # labelled by their hardware ids in a plan's pool_nodes
    f = feasible(raw, presets=[])
    grown = {next(iter(x.fields)): x for x in f.fixes if x.limit == "pool-nodes"}
    assert grown["fleet.pools[0].count"].fields == {"fleet.pools[0].count": 18}
    assert grown["fleet.pools[1].count"].fields == {"fleet.pools[1].count": 12}
    assert "pool 48xA100-80GB" in grown["fleet.pools[0].count"].summary


def test_a_node_cap_is_named_when_growing_a_pool_cannot_help():
    raw = with_fields(POOLS, limits__max_nodes=20)          # 12 + 8 = 20: no room for more A100 nodes in a plan
    f = feasible(raw, presets=[])
    assert any(line.startswith("nodes of pool a100: no count up to") and "limits.max_nodes = 20 also caps" in line
               for line in f.no_fix)
    h100 = next(x for x in f.fixes if x.limit == "pool-nodes")
    assert h100.fields == {"fleet.pools[1].count": _scan(raw, lambda r, c: _grown(r, 1, c), 9)}
