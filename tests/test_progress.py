"""Progress lines on standard error (planner/cli/progress.py): when they come, what they say,
--quiet on every command, standard output untouched. Driven by a fake clock; the one run of a
real command uses a 0.05 s interval and asserts only what was written, not when."""

from __future__ import annotations

import io
import json
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from planner.cli import main
from planner.cli import progress
from planner.cli.progress import progress_lines, report

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def loud(monkeypatch):
    """tests/conftest.py sets DTPLAN_QUIET for the suite; these tests want the lines."""
    monkeypatch.delenv(progress.QUIET_ENV, raising=False)


class FakeClock:
    def __init__(self):
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _ctx(command: str = "thresholds", quiet: bool = False) -> click.Context:
    ctx = click.Context(main, info_name="dtplan")
    ctx.invoked_subcommand = command
    if quiet:
        ctx.meta[progress.QUIET_KEY] = True
    return ctx


def test_lines_come_after_two_seconds_then_every_three_with_the_last_report():
    clock, out = FakeClock(), io.StringIO()
    lines = progress_lines(_ctx(), after_s=2.0, every_s=3.0, clock=clock, stream=out)   # ticked by hand
    report("")
    clock.now = 101.9
    assert lines.tick() is None                         # under 2 s: nothing
    clock.now = 102.0
    assert lines.tick() == "dtplan thresholds: 2 s, still working"
    clock.now = 104.9
    assert lines.tick() is None                         # the next is due at 5 s
    report("solving on 8xH200, 3 of 17 done")
    clock.now = 105.0
    assert lines.tick() == "dtplan thresholds: 5 s, still working (solving on 8xH200, 3 of 17 done)"
    clock.now = 120.0                                   # a long step: one line, not a burst of late ones
    assert lines.tick() == "dtplan thresholds: 20 s, still working (solving on 8xH200, 3 of 17 done)"
    clock.now = 122.9
    assert lines.tick() is None                         # three seconds after the last line
    report("")
    assert out.getvalue().splitlines() == ["dtplan thresholds: 2 s, still working",
                                           "dtplan thresholds: 5 s, still working (solving on 8xH200, 3 of 17 done)",
                                           "dtplan thresholds: 20 s, still working (solving on 8xH200, 3 of 17 done)"]


def test_quiet_and_serve_print_nothing():
    for ctx in (_ctx(quiet=True), _ctx("serve")):
        clock, out = FakeClock(), io.StringIO()
        lines = progress_lines(ctx, clock=clock, stream=out)
        clock.now += 60
        assert lines.tick() is None and out.getvalue() == ""


def test_dtplan_quiet_in_the_environment_is_quiet_on_every_command(monkeypatch):
    clock, out = FakeClock(), io.StringIO()
    lines = progress_lines(_ctx(), clock=clock, stream=out)
    clock.now += 60
    monkeypatch.setenv(progress.QUIET_ENV, "1")
    assert lines.tick() is None
    monkeypatch.setenv(progress.QUIET_ENV, "0")                 # "0" or "" mean not set
    assert lines.tick() == "dtplan thresholds: 60 s, still working"


def test_a_terminal_gets_no_lines_and_no_thread():
    class Terminal(io.StringIO):
        def isatty(self):
            return True
    with progress_lines(_ctx(), after_s=0, every_s=0.01, stream=Terminal()) as lines:
        assert lines.thread is None
    with progress_lines(_ctx(), after_s=0, every_s=0.01, stream=io.StringIO()) as lines:
        assert lines.thread is not None and lines.thread.daemon
    assert not lines.thread.is_alive()                      # stopped and joined on exit


def test_every_command_takes_quiet():
    commands = main.all_commands()
    assert len(commands) >= 12
    for name, command in commands.items():
        assert "--quiet" in [o for p in command.params for o in getattr(p, "opts", [])], name


def test_a_real_command_reports_on_stderr_and_json_stays_clean(monkeypatch):
    monkeypatch.setattr(progress, "AFTER_S", 0.0)
    monkeypatch.setattr(progress, "EVERY_S", 0.05)
    path = str(ROOT / "instances" / "compare-1e27.json")
    result = CliRunner().invoke(main, ["compare", path, "--hardware", "7xB200,9xB100,16xH100-SXM", "--json"])
    assert result.exit_code == 0, result.stderr
    assert [r["hardware"] for r in json.loads(result.stdout)][:1] == ["9xB100"]    # stdout: one JSON document
    lines = [x for x in result.stderr.splitlines() if "still working" in x]
    assert lines and all(x.startswith("dtplan compare: ") for x in lines)
    quiet = CliRunner().invoke(main, ["compare", path, "--hardware", "7xB200", "--json", "--quiet"])
    assert quiet.exit_code == 0 and "still working" not in quiet.stderr
    json.loads(quiet.stdout)
