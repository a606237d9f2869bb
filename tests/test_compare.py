"""`dtplan compare`: one workload on each hardware preset, ranked, with a plot.

Every row must be exactly what `solve()` returns for the instance with only
`fleet.hardware` replaced; the ranking follows the objective with ties by hardware id.
"""

import copy
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner

from planner.objectives import MAX_COMPUTE, MIN_TIME
from planner.schema.catalog import hardware_ids
from planner.cli import main
from planner.questions.compare import Comparison, compare, parse_hardware_list, plan_short, rank, variant
from planner.schema.errors import InputError
from planner.schema.instance import load_instance, parse_instance
from planner.schema.plan import parse_plan
from planner.present.plots import comparison_plot, uses_log_scale
from planner.solve import SolveResult, solve

REPO = Path(__file__).resolve().parents[1]
SMALL = REPO / "instances" / "solve-1e24-64xh100.json"   # 64 nodes, 20B, 10^24 FLOP: < 0.1 s per preset
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def raw(**limits) -> dict:
    data = json.loads(SMALL.read_text())
    data["limits"].update(limits)
    return data


def with_hardware(data: dict, hw: str) -> dict:
    data = copy.deepcopy(data)
    data["fleet"]["hardware"] = hw
    return data


def run(*args):
    result = CliRunner().invoke(main, [str(a) for a in args])
    assert "Traceback" not in result.output + (result.stderr or "")
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result


def write(tmp_path, data, name="i.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return path


@pytest.fixture(scope="module")
def every_preset() -> list[Comparison]:
    return compare(raw(), "all")


# -- the library ----------------------------------------------------------------------


def test_every_preset_runs_on_the_shipped_instance(every_preset):
    ids = hardware_ids()
    assert len(ids) >= 12
    assert sorted(r.hardware for r in every_preset) == ids
    assert [r.rank for r in every_preset] == list(range(1, len(ids) + 1))
    assert all(r.feasible and r.result.status == "optimal" for r in every_preset)
    assert all(r.result.objective == "min_time" for r in every_preset)


def test_each_row_is_the_solve_of_the_instance_with_that_hardware(every_preset):
    for row in every_preset:
        alone = solve(parse_instance(with_hardware(raw(), row.hardware)))
        assert row.result.objective_value == alone.objective_value, row.hardware
        assert row.result.plan == alone.plan, row.hardware
        assert row.result.evaluation.instance.fleet.hardware.id == row.hardware
        assert row.result.evaluation.instance.fleet.nodes == 64            # the fleet size is kept
        assert row.days == pytest.approx(alone.objective_value / 86400, rel=1e-12)
        assert row.cost_usd == alone.evaluation.values["cost_usd"]
        assert row.bottleneck == alone.evaluation.bottleneck


def test_ranking_is_by_time_with_ties_broken_by_hardware_id(every_preset):
    keys = [(r.value, r.hardware) for r in every_preset]
    assert keys == sorted(keys)
    # B200 and B100 reach the target at exactly the same time (same fp4 node peak), as do
    # GH200 and H100 (same fp8 node peak): the smaller id ranks first.
    # The 8x B200 server (8/7 of the 7xB200 node's peak at every precision) is faster still.
    top, first, second, third, fourth = every_preset[:5]
    assert top.hardware == "8xB200" and top.value < first.value
    assert (first.hardware, second.hardware) == ("7xB200", "9xB100") and first.value == second.value
    assert (third.hardware, fourth.hardware) == ("16xGH200", "16xH100-SXM") and third.value == fourth.value
    assert first.value < third.value


def test_min_cost_ranks_by_cost_and_equals_solve():
    data = raw()
    ids = ["16xH100-SXM", "48xA100-80GB", "7xB200"]
    rows = compare(data, ids, objective="min_cost")
    assert [r.hardware for r in rows] == ["7xB200", "16xH100-SXM", "48xA100-80GB"]
    for row in rows:
        alone = solve(parse_instance(with_hardware(data, row.hardware)), objective="min_cost")
        assert row.value == alone.objective_value and row.result.plan == alone.plan
        assert row.value == row.cost_usd
    assert rows[1].cost_usd == rows[1].nodes * load_instance(SMALL).hardware.node_price_usd
    assert [r.value for r in rows] == sorted(r.value for r in rows)


def test_max_compute_ranks_the_most_compute_first():
    data = raw()
    data["fleet"]["nodes"] = 4
    rows = compare(data, ["50xA100-80GB", "16xH100-SXM", "7xB200"], objective="max_compute")
    assert [r.hardware for r in rows] == ["7xB200", "16xH100-SXM", "50xA100-80GB"]
    assert rows[0].value > rows[1].value > rows[2].value
    alone = solve(parse_instance(with_hardware(data, "16xH100-SXM")), objective="max_compute")
    assert rows[1].value == alone.objective_value and rows[1].result.plan == alone.plan


def _result(value, status="optimal"):
    plan = parse_plan({"mode": "flat", "nodes": 2}) if value is not None else None
    return SolveResult(MAX_COMPUTE, "bnb", status, value, value, 0.0, 0.0, 0, plan=plan)


def test_rank_orders_ties_by_id_and_puts_presets_without_a_plan_last():
    rows = [Comparison("b", _result(None, "infeasible")), Comparison("z", _result(2.0)),
            Comparison("a", _result(None, "infeasible")), Comparison("y", _result(2.0)), Comparison("x", _result(1.0))]
    ranked = rank(list(rows), MAX_COMPUTE)
    assert [(r.rank, r.hardware) for r in ranked] == [(1, "y"), (2, "z"), (3, "x"), (4, "a"), (5, "b")]
    ranked = rank(list(rows), MIN_TIME)
    assert [r.hardware for r in ranked] == ["x", "y", "z", "a", "b"]


def test_infeasible_presets_come_last_with_the_reason():
    rows = compare(raw(max_days=30), "all")                 # A100s and older TPUs need ~42 days
    feasible = [r for r in rows if r.feasible]
    missing = [r for r in rows if not r.feasible]
    # and the 8-accelerator H100/H200 servers (half a 16xH100 node: ~36 days) and A100 server (~189 days)
    sub_threshold = {"34xTPU-v5p", "48xA100-80GB", "50xA100-80GB", "57xTPU-v4", "80xTPU-v5e"}
    assert {r.hardware for r in missing} == sub_threshold | {"8xA100-80GB", "8xH100-SXM", "8xH200"}
    assert rows == feasible + missing
    assert [r.hardware for r in missing] == sorted(r.hardware for r in missing)
    for r in missing:
        assert r.result.status == "infeasible" and r.value is None
        assert r.reason.startswith("duration-limit: the fastest plan reaches the target in "
                                   + ("4" if r.hardware in sub_threshold else ""))
        assert "\n" not in r.reason


def test_a_validated_instance_and_its_raw_data_compare_alike():
    ids = ["16xH100-SXM", "7xB200"]
    from_dict = compare(raw(), ids)
    from_instance = compare(load_instance(SMALL), ids)
    assert [(r.hardware, r.value, r.result.plan) for r in from_dict] == \
           [(r.hardware, r.value, r.result.plan) for r in from_instance]


def test_a_price_override_applies_to_the_instance_hardware_only():
    data = raw()
    data["fleet"]["price_usd_per_accelerator"] = 1000.0
    rows = {r.hardware: r for r in compare(data, ["16xH100-SXM", "7xB200"], objective="min_cost")}
    h100, b200 = rows["16xH100-SXM"], rows["7xB200"]
    assert h100.cost_usd == h100.nodes * 16 * 1000.0 and not h100.notes
    assert b200.cost_usd == b200.nodes * parse_instance(with_hardware(raw(), "7xB200")).hardware.node_price_usd
    assert b200.notes and "price_usd_per_accelerator" in b200.notes[0]
    assert variant(data, "16xH100-SXM")[0]["fleet"]["price_usd_per_accelerator"] == 1000.0
    assert "price_usd_per_accelerator" not in variant(data, "7xB200")[0]["fleet"]


def test_a_precision_a_preset_lacks_makes_that_preset_infeasible_not_an_error():
    data = raw()
    data["search"] = {"precisions": ["fp8"]}
    rows = {r.hardware: r for r in compare(data, ["16xH100-SXM", "50xA100-80GB"])}
    assert rows["16xH100-SXM"].feasible and rows["16xH100-SXM"].rank == 1
    a100 = rows["50xA100-80GB"]
    assert not a100.feasible and a100.rank == 2
    assert "search.precisions[0]" in a100.reason and "'fp8'" in a100.reason


def test_bad_hardware_ids_name_the_field_and_the_closest_presets():
    with pytest.raises(InputError) as err:
        parse_hardware_list("H100,7xB200,,bogus")
    text = str(err.value)
    assert "--hardware: unknown hardware preset 'H100'; known (closest first): 16xH100-SXM" in text
    assert "entry 3 is empty" in text and "'bogus'" in text
    with pytest.raises(InputError, match="--hardware"):
        compare(raw(), ["7xB200", "B200"])
    assert parse_hardware_list(" ALL ") == hardware_ids()
    assert parse_hardware_list("7xB200, 16xGH200,7xB200") == ["7xB200", "16xGH200"]


def test_progress_is_reported_for_each_preset_and_at_the_end():
    calls = []
    compare(raw(), ["16xH100-SXM", "7xB200"], progress=lambda *a: calls.append(a))
    assert calls == [(0, 2, "16xH100-SXM"), (1, 2, "7xB200"), (2, 2, "")]


@pytest.mark.parametrize("plan, short", [
    ({"mode": "flat", "nodes": 8, "precision": "fp8", "inner_steps": 500, "compression": 100}, "flat fp8 H=500 Cr=100"),
    ({"mode": "hierarchical", "nodes": 8, "inner_steps": 2, "compression": 16, "group_size": 4, "regional_rounds": 3,
      "streaming": False}, "hier fp16 H=2 Cr=16 no-stream k=4 R=3"),
    ({"mode": "pp_group", "nodes": 12, "inner_steps": 100, "compression": 1, "stages": 6, "micro_batches": 16,
      "activation_compression": 1}, "pp_group fp16 H=100 Cr=1 S=6 M=16"),
    ({"mode": "pipeline_wan", "nodes": 6, "stages": 6, "expert_parallel": "none"},
     "pipeline_wan fp16 S=6 M=8 Ca=4 EP=none"),
])
def test_plan_short_form(plan, short):
    assert plan_short(parse_plan(plan)) == short


def test_log_scale_when_values_span_two_decades():
    assert uses_log_scale([1.0, 100.0]) and not uses_log_scale([1.0, 99.0]) and not uses_log_scale([])


def test_plot_marks_presets_without_a_plan(tmp_path):
    rows = rank([Comparison("a", _result(1e24)), Comparison("b", _result(5e26)), Comparison("c", _result(None, "infeasible"))],
                MAX_COMPUTE)
    svg = tmp_path / "p.svg"
    assert comparison_plot(rows, MAX_COMPUTE, [svg]) == [svg]
    text = svg.read_text()
    assert ET.fromstring(text).tag.endswith("svg")
    assert "infeasible" in text and "log scale" in text            # the text is kept as <text> in the SVG


# -- the command ----------------------------------------------------------------------


def test_cli_table_plots_and_json(tmp_path):
    png, svg = tmp_path / "c.png", tmp_path / "c.SVG"
    result = run("compare", SMALL, "--hardware", "16xH100-SXM,7xB200,48xA100-80GB", "--plot", png, "--plot", svg)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    row = {h: next(line for line in lines if f" {h} " in line) for h in ("16xH100-SXM", "7xB200", "48xA100-80GB")}
    assert row["7xB200"].split()[1:3] == ["1", "│"] and "10.4" in row["7xB200"]
    assert "hier fp4 H=1 Cr=500 k=2 R=6" in row["7xB200"] and "compute" in row["7xB200"]
    assert "15,680,000" in row["7xB200"] and " 64 " in row["7xB200"]
    assert "wan-sync" in row["48xA100-80GB"]
    assert png.read_bytes().startswith(PNG_MAGIC)
    assert ET.parse(svg).getroot().tag == "{http://www.w3.org/2000/svg}svg"

    out = json.loads(run("compare", SMALL, "--hardware", "16xH100-SXM,7xB200", "--json").stdout)
    assert [(r["rank"], r["hardware"]) for r in out] == [(1, "7xB200"), (2, "16xH100-SXM")]
    alone = solve(parse_instance(with_hardware(raw(), "16xH100-SXM")))
    assert out[1]["objective_value"] == alone.objective_value
    assert out[1]["plan"] == alone.plan.model_dump()
    assert out[1]["evaluation"]["values"]["cost_usd"] == alone.evaluation.values["cost_usd"]


def test_cli_objective_override_and_infeasible_rows(tmp_path):
    path = write(tmp_path, raw(max_days=30))
    result = run("compare", path, "--hardware", "50xA100-80GB,9xB100", "--objective", "min_cost")
    assert result.exit_code == 0
    assert "objective min_cost" in result.stdout
    assert "Without a plan" in result.stdout and "2. 50xA100-80GB: duration-limit" in result.stdout


def test_cli_all_infeasible_exits_1_and_still_plots(tmp_path):
    png = tmp_path / "none.png"
    result = run("compare", write(tmp_path, raw(max_days=5)), "--hardware", "7xB200,16xH100-SXM", "--plot", png)
    assert result.exit_code == 1
    assert "0 with a plan" in result.stdout and "duration-limit" in result.stdout
    assert png.read_bytes().startswith(PNG_MAGIC)


def test_cli_bad_hardware_exits_2_naming_the_field():
    result = run("compare", SMALL, "--hardware", "H100")
    assert result.exit_code == 2
    assert "--hardware: unknown hardware preset 'H100'; known (closest first): 16xH100-SXM" in result.output


@pytest.mark.parametrize("name", ["out.jpg", "out", "out.png.pdf"])
def test_cli_bad_plot_suffix_exits_2_before_solving(tmp_path, name):
    result = run("compare", SMALL, "--plot", tmp_path / "ok.png", "--plot", tmp_path / name)
    assert result.exit_code == 2
    assert "--plot:" in result.output and ".png or .svg" in result.output
    assert not any(tmp_path.iterdir())                      # nothing solved or written


def test_cli_unwritable_plot_exits_2(tmp_path):
    result = run("compare", SMALL, "--hardware", "7xB200", "--plot", tmp_path / "missing" / "c.png")
    assert result.exit_code == 2 and "--plot: cannot write" in result.output


def test_cli_bad_instance_exits_2(tmp_path):
    data = raw()
    data["fleet"]["nodes"] = 0
    result = run("compare", write(tmp_path, data))
    assert result.exit_code == 2 and "fleet.nodes" in result.output


def test_progress_bar_only_on_a_terminal_and_only_after_the_delay(monkeypatch):
    import time
    monkeypatch.delenv("DTPLAN_QUIET", raising=False)         # set for the suite by tests/conftest.py
    from rich.console import Console
    from planner.cli.common import progress_after as _progress_after
    bar = _progress_after(0.0, "solving")
    bar.console = Console(stderr=True, force_terminal=False)
    with bar as progress:
        progress(0, 1, "7xB200")
        assert progress.bar is None
    bar = _progress_after(0.2, "solving")
    bar.console = Console(stderr=True, force_terminal=True)
    with bar as progress:
        progress(0, 2, "7xB200")
        assert progress.bar is not None and not progress.bar.live.is_started
        time.sleep(0.5)
        assert progress.bar.live.is_started
        progress(2, 2, "")
    assert not progress.bar.live.is_started


def test_a_set_of_model_sizes_is_compared_from_a_validated_instance_too():
    data = {"model": {}, "training": {"target_flop": 1e23}, "fleet": {"hardware": "16xH100-SXM", "nodes": 4},
            "search": {"params": [7e9, 20e9]}, "limits": {"max_days": 365}}
    from_dict = compare(data, ["7xB200"], objective="min_cost")
    from_instance = compare(parse_instance(data), ["7xB200"], objective="min_cost")
    alone = solve(parse_instance(with_hardware(data, "7xB200")), objective="min_cost")
    for rows in (from_dict, from_instance):
        assert rows[0].value == alone.objective_value and rows[0].result.model_params == alone.model_params
        assert rows[0].result.plan == alone.plan
