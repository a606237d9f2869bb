"""Limits of the command line (issue 23 item 6): input files over the size cap are refused before
they are parsed, with exit 2 naming the file and the cap (sparse files: no 64 MB is written);
`thresholds` count limits that would build a node beyond the schema's bound exit 2 naming the flag
and its largest valid value (--compute 1e308 was an OverflowError, exit 4; --compute 1e20 named
fleet.hardware.accelerators_per_node)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from planner.cli import main
from planner.questions.thresholds import load_accelerators
from planner.schema.catalog import H100_FP16_TFLOPS
from planner.schema.limits import MAX_ACCELERATORS_PER_NODE
from planner.schema.strict import MAX_INPUT_ENV, MAX_INPUT_MB

ROOT = Path(__file__).resolve().parents[1]
BASE = ROOT / "instances" / "baseline-1e25.json"
PLAN = ROOT / "instances" / "baseline-1e25.plan.json"
RECIPE = ROOT / "instances" / "sweeps" / "bandwidth.toml"


def _run(args, env=None):
    return CliRunner().invoke(main, args, env=env)


# -- input files over the cap ---------------------------------------------------------------


def _sparse(path: Path, size: int) -> Path:
    with open(path, "wb") as fh:
        fh.truncate(size)                 # no data written: the test stays fast
    return path


def _commands(big: Path, tmp_path: Path) -> list[list[str]]:
    return [["validate", str(big)], ["solve", str(big)], ["evaluate", str(big), str(PLAN)],
            ["evaluate", str(BASE), str(big)], ["feasible", str(big)], ["compare", str(big)],
            ["thresholds", str(big), "--compute", "16"], ["sites", str(big)],
            ["sweep", str(big), "--grid", "fleet.nodes=36", "--workers", "1"],
            ["sweep", str(BASE), "--grid", "fleet.nodes=36", "--command", "evaluate", "--plan", str(big),
             "--workers", "1"]]


def test_an_input_file_over_the_cap_is_refused_before_parsing(tmp_path):
    big = _sparse(tmp_path / "huge.json", MAX_INPUT_MB * 10**6 + 1)
    for args in _commands(big, tmp_path):
        r = _run(args)
        assert r.exit_code == 2, (args, r.output)
        assert str(big) in r.output and f"{MAX_INPUT_MB} MB" in r.output and MAX_INPUT_ENV in r.output, (args, r.output)
        assert "not valid JSON" not in r.output                # refused before it was parsed


def test_a_recipe_over_the_cap_is_refused(tmp_path):
    big = _sparse(tmp_path / "huge.toml", MAX_INPUT_MB * 10**6 + 1)
    r = _run(["sweep", str(big), "--workers", "1"])
    assert r.exit_code == 2 and str(big) in r.output and f"{MAX_INPUT_MB} MB" in r.output, r.output


def test_a_file_at_the_cap_is_read_and_the_cap_can_be_raised(tmp_path):
    """A file of exactly the cap is parsed (its NUL bytes are not JSON); one byte more is refused,
    unless DTPLAN_MAX_INPUT_MB raises the cap."""
    at_cap = _sparse(tmp_path / "at.json", 2 * 10**6)
    over = _sparse(tmp_path / "over.json", 2 * 10**6 + 1)
    env = {MAX_INPUT_ENV: "2"}
    assert "not valid JSON" in _run(["validate", str(at_cap)], env).output
    r = _run(["validate", str(over)], env)
    assert r.exit_code == 2 and "cap on input files, 2 MB" in r.output
    r = _run(["validate", str(over)], {MAX_INPUT_ENV: "2.5"})
    assert r.exit_code == 2 and "not valid JSON" in r.output


def test_a_file_without_a_size_is_read_up_to_the_cap(tmp_path):
    """A FIFO reports size 0: at most cap + 1 bytes are read, then it is refused."""
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    pid = os.fork()
    if pid == 0:                                     # the writer: more than the cap, then exit
        try:
            with open(fifo, "wb") as fh:
                for _ in range(3):
                    fh.write(b" " * 10**6)
        except BrokenPipeError:
            pass
        os._exit(0)
    try:
        r = _run(["validate", str(fifo)], {MAX_INPUT_ENV: "2"})
    finally:
        os.waitpid(pid, 0)
    assert r.exit_code == 2 and "cap on input files, 2 MB" in r.output, r.output


@pytest.mark.parametrize("value", ["0", "-1", "x", "nan", "inf"])
def test_a_bad_cap_names_the_variable(value):
    r = _run(["validate", str(BASE)], {MAX_INPUT_ENV: value})
    assert r.exit_code == 2 and MAX_INPUT_ENV in r.output, r.output


# -- thresholds: node sizes beyond the schema's bound -----------------------------------------


def _largest_valid_compute() -> tuple[float, str]:
    """100,000 x the smallest H100-equivalents of one accelerator of the catalogue, by hand from the
    catalogue's figures (FP16 TFLOP/s / 990)."""
    catalog = load_accelerators()
    smallest = min(catalog.values(), key=lambda a: a.peak_tflops["fp16"])
    return MAX_ACCELERATORS_PER_NODE * smallest.peak_tflops["fp16"] / H100_FP16_TFLOPS, smallest.id


@pytest.mark.parametrize("compute", ["1e308", "1.7976931348623157e308", "1e20", "1e6"])
def test_thresholds_compute_beyond_the_bound_names_compute(compute):
    r = _run(["thresholds", str(BASE), "--compute", compute, "--max-nodes", "100"])
    assert r.exit_code == 2, r.output
    largest, smallest = _largest_valid_compute()
    assert r.output.startswith("--compute: must be at most"), r.output
    assert f"{largest:.6g} H100-eq" in r.output and smallest in r.output
    assert "accelerators_per_node" not in r.output


def test_thresholds_compute_at_the_bound_is_answered():
    largest, smallest = _largest_valid_compute()
    r = _run(["thresholds", str(BASE), "--compute", repr(largest * (1 - 1e-6)), "--accelerator", smallest,
              "--max-nodes", "100", "--json"])
    assert r.exit_code in (0, 1), r.output
    assert re.search(r'"count": %d\b' % (MAX_ACCELERATORS_PER_NODE - 1), r.output), r.output[:2000]


@pytest.mark.parametrize("flag", ["--tpp", "--memory"])
def test_thresholds_tpp_and_memory_beyond_the_bound_name_their_flag(flag):
    r = _run(["thresholds", str(BASE), flag, "1e308", "--max-nodes", "100"])
    assert r.exit_code == 2 and r.output.startswith(f"{flag}: must be at most"), r.output


def test_a_huge_limit_that_does_not_bind_is_accepted():
    """The node's count is the smallest its limits allow: --memory binds, --compute 1e300 does not."""
    r = _run(["thresholds", str(BASE), "--compute", "1e300", "--memory", "1024", "--accelerator", "H100-SXM",
              "--max-nodes", "100", "--json"])
    assert r.exit_code in (0, 1), r.output
    assert '"count": 12' in r.output          # floor(1024 GB / 80 GB) = 12 H100


THRESHOLD_OPTIONS = ["--compute", "--tpp", "--memory", "--interconnect", "--wan-cap", "--target-flop", "--params",
                     "--wan-mbps", "--rtt-ms", "--max-days", "--budget-usd", "--max-nodes"]


# within range: a huge cap caps nothing; 10^20 FLOP is a target (the flag replaces the file's tokens)
ACCEPTED = {("--interconnect", "1e20"), ("--interconnect", "1e308"), ("--wan-cap", "1e20"), ("--wan-cap", "1e308"),
            ("--target-flop", "1e20")}


@pytest.mark.parametrize("value", ["1e308", "nan", "-1", "1e20", "-inf"])
@pytest.mark.parametrize("flag", THRESHOLD_OPTIONS)
def test_every_numeric_option_of_thresholds_out_of_range_exits_2_naming_it(flag, value):
    """Each option alone beyond what dtplan can represent: exit 2 naming the option, never exit 4 (or
    an answer, for the values no option accepts)."""
    sizes = ("--compute", "--tpp", "--memory")          # alone, so that the one given sets the node's size
    base = ["thresholds", str(BASE), "--accelerator", "H100-SXM"] + ([] if flag in sizes else ["--compute", "16"])
    r = _run(base + [flag, value])
    if (flag, value) in ACCEPTED:
        assert r.exit_code in (0, 1), r.output
        return
    assert r.exit_code == 2, (flag, value, r.output)
    assert flag in r.output and "Traceback" not in r.output, (flag, value, r.output)
