"""`dtplan compare` on a fleet of pools: the fleet as given first (inline hardware included), then
each preset replacing every pool at its site at equal H100-equivalents and at equal cost; every
row equal to the solve of the instance built here by hand."""

import json
import math
from pathlib import Path

from click.testing import CliRunner

from planner.cli import main
from planner.questions.compare import compare
from planner.schema.instance import parse_instance
from planner.solve import solve

ROOT = Path(__file__).resolve().parent.parent
POOLS = json.loads((ROOT / "instances" / "mixed-a100-h100.json").read_text())   # 12 x 48xA100-80GB + 8 x 16xH100-SXM
A100_NODE_USD, H100_NODE_USD, B200_NODE_USD = 720_000, 400_000, 245_000           # `dtplan hardware`: $ per node


def _with_pools(raw, pools):
    out = json.loads(json.dumps(raw))
    out["fleet"]["pools"] = pools
    return out


def test_the_fleet_as_given_first_then_each_preset_at_equal_h100_eq_and_equal_cost():
    rows = compare(POOLS, ["7xB200"])
    assert rows[0].basis == "as given" and rows[0].hardware == "your fleet (as given)"
    assert {r.basis for r in rows} == {"as given", "equal H100-eq", "equal cost"}
    given = rows[0]
    assert given.value == solve(parse_instance(POOLS)).objective_value
    by_basis = {r.basis: r for r in rows}
    # equal cost: floor(12 x 720,000 / 245,000) = 35, floor(8 x 400,000 / 245,000) = 13
    cost = by_basis["equal cost"]
    assert [p["count"] for p in cost.pools] == [35, 13]
    hand = _with_pools(POOLS, [{"name": "a100", "hardware": "7xB200", "count": 35},
                               {"name": "h100", "hardware": "7xB200", "count": 13}])
    assert cost.value == solve(parse_instance(hand)).objective_value
    assert 48 * B200_NODE_USD <= 12 * A100_NODE_USD + 8 * H100_NODE_USD
    # equal H100-eq: count x the pool's H100-eq per node / 7xB200's (15.13 and 16.00 over 15.91, `dtplan hardware`)
    from planner.schema.catalog import load_hardware
    eq = {h: load_hardware(h).h100_equivalents for h in ("48xA100-80GB", "16xH100-SXM", "7xB200")}
    counts = [round(12 * eq["48xA100-80GB"] / eq["7xB200"]), round(8 * eq["16xH100-SXM"] / eq["7xB200"])]
    assert counts == [11, 8]
    assert [p["count"] for p in by_basis["equal H100-eq"].pools] == counts
    ranks = sorted(r.rank for r in rows)
    assert ranks == [1, 2, 3]
    order = sorted(rows, key=lambda r: r.value)                    # min_time: least time ranks first
    assert [r.rank for r in order] == [1, 2, 3]


def test_inline_hardware_and_sites_are_kept():
    inline = {"id": "custom", "name": "my node", "accelerators_per_node": 8,
              "peak_tflops_per_accelerator": {"fp16": 989.0}, "hbm_gb_per_accelerator": 80,
              "price_usd_per_accelerator": 25000}
    raw = _with_pools(POOLS, [{"name": "mine", "hardware": inline, "count": 30, "site": "east"},
                              {"name": "h100", "hardware": "16xH100-SXM", "count": 8, "site": "west"}])
    raw["network"]["sites"] = [{"name": "east", "city": "New York"}, {"name": "west", "city": "Seattle"}]
    raw["network"]["links"] = [{"a": "east", "b": "west", "up_mbps": 1000}]
    rows = compare(raw, ["16xH100-SXM"])
    assert rows[0].basis == "as given" and rows[0].value == solve(parse_instance(raw)).objective_value
    cost = next(r for r in rows if r.basis == "equal cost")
    # 30 x 8 x 25,000 / 400,000 = 15 nodes at east; 8 at west
    assert cost.pools == [{"name": "mine", "hardware": "16xH100-SXM", "count": 15, "site": "east"},
                          {"name": "h100", "hardware": "16xH100-SXM", "count": 8, "site": "west"}]
    hand = _with_pools(raw, cost.pools)
    assert cost.value == solve(parse_instance(hand)).objective_value


def test_cli_table_json_and_report_carry_the_rows_and_the_whole_note(tmp_path):
    path = ROOT / "instances" / "mixed-a100-h100.json"
    r = CliRunner().invoke(main, ["compare", str(path), "--hardware", "7xB200", "--report", str(tmp_path / "r.md")])
    assert r.exit_code == 0, r.output
    text = " ".join(r.output.split())
    assert "your fleet (as given)" in text and "7xB200 (equal cost)" in text and "7xB200 (equal H100-eq)" in text
    assert "'(equal cost)' rows cost at most as much per pool (rounded down)" in text      # the note, whole
    report = " ".join((tmp_path / "r.md").read_text().split())
    assert "rounded down" in report and "7xB200 (equal H100-eq)" in report
    data = json.loads(CliRunner().invoke(main, ["compare", str(path), "--hardware", "7xB200", "--json"]).stdout)
    assert [d["basis"] for d in data][0] == "as given"
    assert {d["basis"] for d in data} == {"as given", "equal H100-eq", "equal cost"}
    assert all(d["pools"] for d in data)
