"""Hostile site and link input: `dtplan validate` and `dtplan sites` exit 0 or 2 naming a network field,
never a traceback, whatever the sites and links hold (wrong types, huge or non-finite numbers,
unknown names, duplicates, missing fields, odd Unicode)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planner.cli import main

SHIPPED = json.loads((Path(__file__).resolve().parents[1] / "instances" / "sites-seven-cities.json").read_text())
FIELDS = {"sites": ["name", "city", "lat", "lon", "lan_mbps", "lan_rtt_ms"],
          "links": ["a", "b", "up_mbps", "down_mbps", "rtt_ms"]}

values = st.one_of(
    st.sampled_from([0, -1, -8, 91, -181, 1e308, -1e308, 10**30, 1e13, 0.5, float("nan"), float("inf"), -float("inf")]),
    st.sampled_from(["", " ", "tokio", "lon", "fra", "Tokio", "London", "UK South", "\ud800", "x" * 20000, "caf\u00e9"]),
    st.sampled_from([True, None, [], {}, [1, 2], {"a": 1}, "72"]),
)


def edit_rows(draw, rows: list, fields: list[str], values, actions=("set", "delete", "duplicate", "drop", "replace")):
    """One edit of a list of objects (sites, links, pools): a field set to a drawn value or deleted,
    a row duplicated, dropped or replaced by a drawn value."""
    action = draw(st.sampled_from(actions))
    i = draw(st.integers(0, len(rows) - 1)) if rows else None
    if i is None:
        return
    if action in ("set", "delete") and not isinstance(rows[i], dict):
        return                               # replaced by a non-object earlier
    if action == "set":
        rows[i][draw(st.sampled_from(fields))] = draw(values)
    elif action == "delete":
        rows[i].pop(draw(st.sampled_from(fields)), None)
    elif action == "duplicate":
        rows.append(copy.deepcopy(rows[i]))
    elif action == "drop":
        rows.pop(i)
    else:
        rows[i] = draw(values)


def fuzz_settings(examples: int):
    """Derandomised (the same cases in CI every time), no deadline per case (each runs dtplan)."""
    return settings(max_examples=examples, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def instance_file(tmp_path_factory, folder: str, text: str) -> Path:
    """The instance text written as a file (unpaired surrogates kept: the file is then not UTF-8)."""
    path = tmp_path_factory.mktemp(folder) / "instance.json"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    return path


@st.composite
def mutated(draw):
    data = copy.deepcopy(SHIPPED)
    network = data["network"]
    for _ in range(draw(st.integers(1, 3))):
        section = draw(st.sampled_from(["sites", "links"]))
        edit_rows(draw, network[section], FIELDS[section], values)
    return json.dumps(data)


def invoke(*args):
    result = CliRunner().invoke(main, [str(a) for a in args])
    output = result.stdout + result.stderr
    assert "Traceback" not in output, output
    assert result.exit_code in (0, 2), (args, result.exit_code, output[-2000:])
    if result.exit_code == 2:
        assert "network." in result.stderr, result.stderr
    return result


@fuzz_settings(40)
@given(mutated())
def test_hostile_sites_and_links_exit_0_or_2_naming_the_field(tmp_path_factory, text):
    path = instance_file(tmp_path_factory, "sites", text)
    validated = invoke("validate", path)
    shown = invoke("sites", path, "--json")
    if validated.exit_code == 2:
        assert shown.exit_code == 2
    elif shown.exit_code == 2:               # valid, but some sites have no route between them
        assert json.loads(shown.stdout)["error"]["problems"][0]["path"] == "network.links"
