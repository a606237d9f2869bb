"""Progress lines on standard error for a command that runs a while with stderr not a terminal.

A terminal gets rich's live bars and spinners (`common.progress_after`, the feasibility
spinner, the sweep bar); a log file or a pipe gets nothing from them, so a command of 5-20 s
(`thresholds`, `feasible` on a fleet of pools) used to print nothing until its answer. Every
command now runs inside `progress_lines`: once it has run AFTER_S seconds, and then every
EVERY_S seconds, one line goes to standard error,

    dtplan feasible: 6 s, still working (fewest nodes)

with what the command last reported through `report` (nothing when it reports nothing). Standard
output is never written (`--json` stays one document). `--quiet`, which every command takes
(`quiet_option`), or the environment variable DTPLAN_QUIET=1, turns the lines off (and the
terminal's progress bar of `progress_after`).
`serve` runs until stopped and writes its own log: it gets no lines.

The lines come from a daemon thread that sleeps on an Event between lines and is stopped and
joined when the command returns; `tick` holds all of the logic (clock in, line out), so tests
drive it with a fake clock, without the thread.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import Callable, TextIO

import click

AFTER_S = 2.0          # a command that runs longer than this reports (the issue: "over ~2 s")
EVERY_S = 3.0          # then one line every this many seconds (the issue: "every 2-5 s")
SILENT_COMMANDS = frozenset({"serve"})      # runs until stopped, logs each request itself
QUIET_KEY = "dtplan.quiet"
QUIET_ENV = "DTPLAN_QUIET"      # set (not "" or "0"): as --quiet on every command (CI logs, the test suite)

_label = [""]          # what the running command last reported (one command per process)

# A sweep forks its workers while the line thread may be writing: the fork waits for the write to
# end, so no child starts with standard error's lock held by a thread it does not have.
_writing = threading.Lock()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_writing.acquire, after_in_parent=_writing.release,
                        after_in_child=_writing.release)


def report(label: str) -> None:
    """Say what the command is doing now, e.g. 'solving on 8xH200 (3 of 17)'; shown by the next line."""
    _label[0] = label


def _set_quiet(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if value:
        ctx.meta[QUIET_KEY] = True      # ctx.meta is shared by the whole chain of contexts


def quiet_option() -> click.Option:
    """The `--quiet` flag added to every command (common.DtplanGroup.add_command)."""
    return click.Option(["--quiet"], is_flag=True, expose_value=False, is_eager=True, callback=_set_quiet,
                        help="No progress on standard error (the lines every few seconds when standard error is "
                             "not a terminal, the progress bar when it is). Warnings and errors still print.")


def is_quiet(ctx: click.Context | None = None) -> bool:
    """--quiet was given, or DTPLAN_QUIET is set."""
    if os.environ.get(QUIET_ENV, "") not in ("", "0"):
        return True
    ctx = ctx or click.get_current_context(silent=True)
    return bool(ctx and ctx.meta.get(QUIET_KEY))


class progress_lines:
    """Within `with progress_lines(ctx):`, a line on standard error every `every_s` seconds once the
    command has run `after_s` seconds, unless stderr is a terminal, --quiet was given or the command
    is in SILENT_COMMANDS (module docstring). `clock` and `stream` may be replaced (tests)."""

    def __init__(self, ctx: click.Context, after_s: float | None = None, every_s: float | None = None,
                 clock: Callable[[], float] = time.monotonic, stream: TextIO | None = None):
        self.ctx, self.clock = ctx, clock
        self.after_s = AFTER_S if after_s is None else after_s
        self.every_s = EVERY_S if every_s is None else every_s
        self.stream = stream
        self.start = clock()
        self.next_at = self.start + self.after_s
        self.stop = threading.Event()
        self.thread: threading.Thread | None = None

    def _stream(self) -> TextIO:
        return self.stream if self.stream is not None else sys.stderr

    def _wanted(self) -> bool:
        isatty = getattr(self._stream(), "isatty", None)
        return not (isatty is not None and isatty())

    def line(self, elapsed_s: float) -> str:
        """'dtplan NAME: 6 s, still working (LABEL)'."""
        name = self.ctx.invoked_subcommand
        label = f" ({_label[0]})" if _label[0] else ""
        return f"dtplan {name}: {elapsed_s:,.0f} s, still working{label}"

    def tick(self) -> str | None:
        """The line due now (written to the stream), or None: not yet due, --quiet, or a silent command."""
        now = self.clock()
        command = self.ctx.invoked_subcommand           # None until click has resolved the command
        if now < self.next_at or is_quiet(self.ctx) or command is None or command in SILENT_COMMANDS:
            return None
        self.next_at = now + self.every_s       # a late line (a long step) shifts the next, never a burst
        text = self.line(now - self.start)
        with _writing:
            stream = self._stream()
            stream.write(text + "\n")
            stream.flush()
        return text

    def _run(self) -> None:
        first = max(self.after_s, 0.0)
        while not self.stop.wait(first):
            self.tick()
            first = max(self.next_at - self.clock(), 0.01)

    def __enter__(self) -> "progress_lines":
        _label[0] = ""
        if self._wanted() and not is_quiet(self.ctx):
            self.thread = threading.Thread(target=self._run, name="dtplan-progress", daemon=True)
            self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        if self.thread is not None:
            self.thread.join()
        _label[0] = ""
