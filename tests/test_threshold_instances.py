"""The stored threshold questions (instances/thresholds/, written by scripts/make_thresholds_expected.py):
every one is re-answered with `dtplan thresholds ... --json` and must agree with its stored answer, and
print byte for byte the output stored by scripts/make_cli_outputs.py (issue 26: refactorings change no output)."""

from __future__ import annotations

import json
from pathlib import Path

import importlib.util

import pytest
from click.testing import CliRunner

from planner.cli import main

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("make_cli_outputs", ROOT / "scripts" / "make_cli_outputs.py")
cli_outputs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cli_outputs)
STORED = sorted((ROOT / "instances" / "thresholds").glob("*.expected.json"))


def _same(a, b) -> list[str]:
    """The stored answer's comparison: floats to 1e-9 relative, every field compared."""
    return cli_outputs.json_differences(a, b, rel_tol=1e-9, ignore=frozenset())


def test_the_report_questions_are_stored():
    names = {p.name.removesuffix(".expected.json") for p in STORED}
    assert {f"ccc-{t}-a100" for t in (16, 8, 4, 2, 1)} | {f"memory-{m}-a100" for m in (2048, 1024, 512, 256)} <= names
    assert {"stop-compute-within-5-nodes", "stop-wan-cap-within-72-nodes"} <= names


@pytest.mark.parametrize("path", STORED, ids=lambda p: p.name.removesuffix(".expected.json"))
def test_every_stored_question_answers_as_stored(path):
    stored = json.loads(path.read_text())
    r = CliRunner().invoke(main, ["thresholds", str(ROOT / "instances" / stored["instance"]), *stored["args"], "--json"])
    assert r.exit_code == stored["exit_code"], r.output
    assert _same(json.loads(r.stdout), stored["answer"]) == []
    assert cli_outputs.differences(cli_outputs.normalise(r.stdout), cli_outputs.stored_output("thresholds", path)) == []


def test_stored_answers_agree_with_hand_calculations():
    """Node counts: floor(T x 990 / 312) and floor(M / 80); compute stop within 5 nodes: 40 A100s per node
    (40 x 312 / 990 = 12.606 H100-eq); 10 of 21 deployments hold more than 512 GB (test_thresholds)."""
    def load(name):
        return json.loads((ROOT / "instances" / "thresholds" / f"{name}.expected.json").read_text())["answer"]
    for t, n in ((16, 50), (8, 25), (4, 12), (2, 6), (1, 3)):
        assert load(f"ccc-{t}-a100")["answers"][0]["node"]["count"] == n
    for m, n in ((2048, 25), (1024, 12), (512, 6), (256, 3)):
        assert load(f"memory-{m}-a100")["answers"][0]["node"]["count"] == n
    stop = load("stop-compute-within-5-nodes")["stop_points"][0]
    assert stop["count_reachable"] == 40 and stop["count_unreachable"] == 39
    assert stop["reachable_at"]["compute_h100e"] == pytest.approx(40 * 312 / 990)
    assert sum(1 for c in load("memory-512-a100")["collateral"] if c["caught_by"]) == 10
