"""What every dtplan command shares: exit codes, the bad-input exception, loading, output checks, progress."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import click

from planner.schema.errors import InputError

EXIT_OK, EXIT_INFEASIBLE, EXIT_BAD_INPUT = 0, 1, 2


class BadInput(click.ClickException):
    """Bad input: printed without a traceback, exit code 2."""

    exit_code = EXIT_BAD_INPUT

    def show(self, file=None) -> None:  # noqa: D102 - click API
        click.echo(self.format_message(), err=True)


class RecordingGroup(click.Group):
    """The `dtplan` command group; remembers the arguments it was called with, so that reports can
    say which command made them (`command_line`)."""

    def main(self, args=None, prog_name=None, **extra):  # noqa: D102 - click API
        _invocation[:] = ["dtplan", *(sys.argv[1:] if args is None else args)]
        return super().main(args, prog_name, **extra)


_invocation: list[str] = []


def command_line() -> str | None:
    """The command line of this run (`dtplan solve ...`, shell-quoted), None outside the CLI."""
    return shlex.join(_invocation) if _invocation else None


def load_or_exit(loader, path: Path):
    try:
        return loader(path)
    except InputError as err:
        raise BadInput(str(err)) from None


def check_report(path: Path | None) -> None:
    """A --report path with a suffix the report writer knows (checked before any solving)."""
    if path is not None:
        from planner.present.output import OutputPathError
        from planner.present.report import UnknownReportFormat, check_report_path
        try:
            check_report_path(path)
        except (UnknownReportFormat, OutputPathError) as err:
            raise BadInput(f"--report: {err}") from None


def check_plan(instance, plan, plan_path: Path) -> None:
    from planner.schema.plan import check_plan_against
    problems = check_plan_against(instance, plan)
    if problems:
        raise BadInput(str(InputError(problems, source=str(plan_path))))


class progress_after:
    """A rich progress bar on stderr that appears only once the work has run `delay_s` seconds,
    and never when stderr is not a terminal. Used as `with ... as progress:`; `progress(done,
    total, label)` reports."""

    def __init__(self, delay_s: float, verb: str):
        from rich.console import Console
        self.console = Console(stderr=True)
        self.delay_s, self.verb = delay_s, verb
        self.bar = self.task = self.timer = None

    def __enter__(self):
        if self.console.is_terminal:
            import threading
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
            self.bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                TimeElapsedColumn(), console=self.console, transient=True)
            self.task = self.bar.add_task(self.verb, total=None)
            self.timer = threading.Timer(self.delay_s, self.bar.start)
            self.timer.daemon = True
            self.timer.start()
        return self

    def __call__(self, done: int, total: int, label: str) -> None:
        if self.bar is not None:
            self.bar.update(self.task, completed=done, total=total,
                            description=f"{self.verb} {label}" if label else "done")

    def __exit__(self, *exc) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer.join()
            self.bar.stop()


def json_default(value):
    if isinstance(value, float) and value != value:
        return None
    return str(value)
