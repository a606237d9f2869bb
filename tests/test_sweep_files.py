"""Sweep output files (issue 23 item 6): an existing -o file that is not this sweep's output is
refused with exit 2 naming -o and left byte for byte as it was, in every format; point keys are read
back as the strings they are (a key such as 36804643e5373775 is not the float inf), so a finished
sweep reruns with 0 points computed in every format."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from planner.cli import main
from planner.questions.sweep import SweepSpec, run_sweep, spec as spec_module

ROOT = Path(__file__).resolve().parents[1]
BASE_PATH = ROOT / "instances" / "miri" / "baseline-1e25.json"
BASE = json.loads(BASE_PATH.read_text())
FORMATS = (".csv", ".jsonl", ".parquet")
ARGS = ["sweep", str(BASE_PATH), "--grid", "fleet.nodes=36,72", "--workers", "1"]

# keys that a reader guessing types would take for numbers or constants
NUMBER_LIKE_KEYS = ["36804643e5373775", "1234567890123456", "0000000000000042", "0e00000000000000", "inf", "nan",
                    "Infinity", "NaN", "-0", "true", "null", "1e5"]


def _sweep(out: Path):
    return CliRunner().invoke(main, ARGS + ["-o", str(out)])


def _parquet_bytes_of_another_sweep(tmp_path: Path) -> bytes:
    other = tmp_path / "other.parquet"
    run_sweep(SweepSpec(BASE, grid={"network.wan.up_mbps": [10]}), workers=1, output=other)
    return other.read_bytes()


def _foreign_contents(tmp_path: Path, suffix: str) -> dict[str, bytes]:
    """Files that are not this sweep's output in `suffix`'s format: text, binary, this sweep's rows
    in the other formats, a line with no end."""
    mine = {}
    for fmt in FORMATS:
        path = tmp_path / f"mine{fmt}"
        r = _sweep(path)
        assert r.exit_code == 0, r.output
        mine[fmt] = path.read_bytes()
    contents = {"text": b"hello, world\nsecond line\n", "no newline": b'{"a": 1}', "binary": bytes(range(256)),
                "one word": b"index", "json list": b"[1, 2, 3]\n", "other sweep": _parquet_bytes_of_another_sweep(tmp_path)}
    contents.update({f"this sweep as {fmt}": data for fmt, data in mine.items() if fmt != suffix})
    return contents


@pytest.mark.parametrize("suffix", FORMATS)
def test_an_existing_file_in_another_format_is_refused_and_left_untouched(tmp_path, suffix):
    for what, data in _foreign_contents(tmp_path, suffix).items():
        out = tmp_path / f"existing{suffix}"
        out.write_bytes(data)
        r = _sweep(out)
        assert r.exit_code == 2, (what, r.output)
        assert "-o" in r.output and str(out) in r.output and "Traceback" not in r.output, (what, r.output)
        assert out.read_bytes() == data, f"{what}: the file was changed"
        assert not Path(str(out) + ".partial.jsonl").exists()


@pytest.mark.parametrize("suffix", FORMATS)
def test_a_cut_last_row_of_this_sweep_is_still_resumed(tmp_path, suffix):
    """What a kill leaves (complete rows and part of one) is this sweep's output: resumed, not refused."""
    out = tmp_path / f"rows{suffix}"
    assert _sweep(out).exit_code == 0
    journal = out if suffix != ".parquet" else Path(str(out) + ".partial.jsonl")
    if suffix == ".parquet":
        assert _sweep(tmp_path / "rows.jsonl").exit_code == 0      # the journal holds the same lines
        rows = (tmp_path / "rows.jsonl").read_text().splitlines()
        out.unlink()
        journal.write_text(rows[0] + "\n" + rows[1][:25])
    else:
        data = out.read_bytes()
        journal.write_bytes(data[:len(data) - 20])           # the last row cut
    r = _sweep(out)
    assert r.exit_code == 0, r.output
    assert "1 computed, 1 resumed" in r.output


@pytest.mark.parametrize("suffix", FORMATS)
def test_number_like_keys_are_read_back_as_strings(tmp_path, monkeypatch, suffix):
    points = spec_module.SweepSpec.points

    def keyed(self):
        return [spec_module.Point(p.index, p.inputs, NUMBER_LIKE_KEYS[p.index]) for p in points(self)]

    monkeypatch.setattr(spec_module.SweepSpec, "points", keyed)
    spec = dict(grid={"fleet.nodes": [36 * (i + 1) for i in range(len(NUMBER_LIKE_KEYS))]})
    out = tmp_path / f"rows{suffix}"
    first = run_sweep(SweepSpec(BASE, **spec), workers=1, output=out)
    assert first.computed == len(NUMBER_LIKE_KEYS)
    again = run_sweep(SweepSpec(BASE, **spec), workers=1, output=out)
    assert again.computed == 0 and again.resumed == len(NUMBER_LIKE_KEYS)
    assert [r["key"] for r in again.rows] == NUMBER_LIKE_KEYS
