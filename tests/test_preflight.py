"""`dtplan validate` reports every problem `dtplan solve` would reject the instance for, at once
(planner.questions.preflight): instances with several problems of different stages."""

import json
from pathlib import Path

from click.testing import CliRunner

from planner.cli import main

ROOT = Path(__file__).resolve().parent.parent
CITIES = json.loads((ROOT / "instances" / "mixed-governance-cities.json").read_text())


def _cities(**edits):
    raw = json.loads(json.dumps(CITIES))
    raw["network"]["links"] = [x for x in raw["network"]["links"] if {x["a"], x["b"]} != {"Paris", "Madrid"}]
    for edit in edits.values():
        edit(raw)
    return raw


def _run(tmp_path, raw, *args):
    path = tmp_path / "i.json"
    path.write_text(json.dumps(raw))
    return CliRunner().invoke(main, ["validate", str(path), *args])


def _problems(tmp_path, raw) -> list[tuple[str, str]]:
    r = _run(tmp_path, raw, "--json")
    assert r.exit_code == 2, r.output
    return [(p["path"], p["message"]) for p in json.loads(r.stdout)["error"]["problems"]]


def test_a_disconnected_site_graph_that_solve_rejects_is_not_valid(tmp_path):
    raw = _cities()                    # Madrid (a pool's site) joined to nothing once Paris-Madrid is gone
    (tmp_path / "i.json").write_text(json.dumps(raw))
    solved = CliRunner().invoke(main, ["solve", str(tmp_path / "i.json")])
    assert solved.exit_code == 2 and "network.links" in solved.output
    problems = _problems(tmp_path, raw)
    assert [p for p, _ in problems] == ["network.links"]
    assert "'Madrid'" in problems[0][1]


def test_every_problem_of_every_stage_at_once(tmp_path):
    def bad(raw):
        raw["fleet"]["pools"][0]["count"] = -3              # a field
        raw["fleet"]["pools"][1]["site"] = "Berlin"         # a cross-field rule the schema runs after the fields
        raw["network"]["links"].append({"a": "Rome", "b": "Paris", "up_mbps": 10})     # a link's site
        raw["limits"]["max_days"] = -1
    problems = _problems(tmp_path, _cities(bad=bad))
    paths = [p for p, _ in problems]
    assert paths == ["fleet.pools[0].count", "network.links[5].a", "limits.max_days", "fleet.pools[1].site",
                     "network.links"]
    assert "unknown site 'Berlin'" in problems[3][1]
    assert "disconnected" in problems[4][1] and "'Madrid'" in problems[4][1]


def test_a_pool_site_and_the_graph_together(tmp_path):
    def bad(raw):
        raw["fleet"]["pools"][1]["site"] = "Berlin"
    paths = [p for p, _ in _problems(tmp_path, _cities(bad=bad))]
    assert paths == ["fleet.pools[1].site", "network.links"]


def test_the_solve_path_checks_are_run(tmp_path):
    raw = json.loads(json.dumps(CITIES))
    raw["fleet"]["pools"] = [{"name": f"p{i}", "hardware": "16xH100-SXM", "count": 2, "site": "London"}
                             for i in range(13)]             # planner.solvers.pool_parts.MAX_EXACT_POOLS = 12
    raw["fleet"]["sync_rule"] = "proportional"
    raw["training"]["target_kind"] = "c_quality"              # refused beyond 12 pools with sites under the proportional
                                                              # rule (proportional_subsets.refusal: its bounds need C_local)
    problems = _problems(tmp_path, raw)
    assert problems[0][0] == "fleet.pools" and "at most 12 pools" in problems[0][1]
    raw = {"training": {}, "fleet": {"hardware": "16xH100-SXM", "nodes": 8},
           "search": {"params": [7e9, 13e9]}}               # min_time with sizes and no target
    assert [p for p, _ in _problems(tmp_path, raw)] == ["training.target_flop"]


def test_valid_instances_stay_valid(tmp_path):
    for name in ("mixed-governance-cities", "baseline-1e25", "mixed-regions-chosen"):
        r = CliRunner().invoke(main, ["validate", str(ROOT / "instances" / f"{name}.json")])
        assert r.exit_code == 0 and "valid" in r.output
