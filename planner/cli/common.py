"""What every dtplan command shares: exit codes, errors (plain or JSON), the one way an instance
is loaded (file, `--set` overrides, flags), output-path checks, JSON output, progress.

Exit codes (the same for every command; `dtplan --help` and docs/cli.md list them):

    0  success: a plan (or instance) that meets every limit
    1  a verdict of "no": no plan meets every limit, or the plan given breaks one
    2  bad input: every problem listed with its JSON path (or the flag), no traceback
    3  the time limit was reached before any plan was found (neither a yes nor a no)
    4  internal error: a bug in dtplan (one line; DTPLAN_DEBUG=1 prints the traceback)
  141  standard output was closed before everything was written (e.g. `dtplan solve X | head -1`):
       dtplan stops quietly, as a standard tool killed by SIGPIPE does (128 + 13)

Under `--json`, standard output always holds exactly one JSON document: the result, or
`{"error": {...}}` with the exit code, the kind, a message and the problems (path and
message each); the plain message still goes to standard error.
"""

from __future__ import annotations

import gc
import json
import math
import os
import re
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterable

import click

from planner.schema.errors import InputError, Problem

EXIT_OK, EXIT_INFEASIBLE, EXIT_BAD_INPUT, EXIT_TIME_LIMIT, EXIT_INTERNAL = 0, 1, 2, 3, 4
EXIT_BROKEN_PIPE = 141      # 128 + SIGPIPE: what a shell reports for `yes | head -1`'s yes
DEBUG_ENV = "DTPLAN_DEBUG"
EXIT_CODES_HELP = ("Exit codes: 0 success; 1 no plan meets every limit (or the plan given breaks one); "
                   "2 bad input (each problem named by its JSON path or flag); 3 the time limit was "
                   "reached before any plan was found; 4 internal error (a bug: please report it; "
                   f"{DEBUG_ENV}=1 shows the traceback); 141 standard output closed before the end "
                   "(e.g. piped into head).")
_JSON_KEY = "dtplan.json"


# -- errors ------------------------------------------------------------------------


def _printable(text: str) -> str:
    """`text` safe for any terminal encoding (lone surrogates and the like escaped)."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _json_mode() -> bool:
    ctx = click.get_current_context(silent=True)
    return bool(ctx and ctx.find_root().meta.get(_JSON_KEY))


def emit_error(exit_code: int, kind: str, message: str, problems: Iterable[Problem] = (),
               source: str | None = None, as_json: bool | None = None) -> None:
    """The error on standard error (plain) and, under --json, as a JSON document on standard output."""
    click.echo(_printable(message), err=True)
    if as_json if as_json is not None else _json_mode():
        error = {"exit_code": exit_code, "kind": kind, "message": _printable(message),
                 "problems": [{"source": source, "path": p.path, "message": _printable(p.message)}
                              for p in problems]}
        click.echo(dumps({"error": error}))


class BadInput(click.ClickException):
    """Bad input: printed without a traceback, exit code 2 (JSON under --json)."""

    exit_code = EXIT_BAD_INPUT

    def __init__(self, message: str, problems: Iterable[Problem] = (), source: str | None = None):
        super().__init__(message)
        self.problems, self.source = list(problems), source

    @classmethod
    def from_error(cls, err: InputError, source: str | None = None) -> "BadInput":
        source = source or err.source
        return cls(str(InputError(err.problems, source)), err.problems, source)

    def show(self, file=None, as_json: bool | None = None) -> None:  # noqa: D102 - click API
        problems = self.problems or [Problem(self.message.split(":", 1)[0] if self.message.startswith("--") else "",
                                             self.message)]
        emit_error(self.exit_code, "bad_input", self.format_message(), problems, self.source, as_json)


class DtplanGroup(click.Group):
    """The `dtplan` group: notes whether --json was asked for (before parsing, so that even a
    usage error comes as JSON), and turns any unexpected exception into exit code 4. It also
    remembers the arguments it was called with, for the provenance of reports (`command_line`)."""

    def __init__(self, *args, lazy_commands: dict[str, str] | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.lazy_commands = dict(lazy_commands or {})     # name -> "module:attribute", imported when used

    def add_command(self, cmd: click.Command, name: str | None = None) -> None:
        """Every command takes --quiet (planner/cli/progress.py)."""
        from planner.cli.progress import quiet_option
        if not any(p.name == "quiet" for p in cmd.params):
            cmd.params.append(quiet_option())
        super().add_command(cmd, name)

    def list_commands(self, ctx: click.Context) -> list[str]:  # noqa: D102 - click API
        return sorted({*super().list_commands(ctx), *self.lazy_commands})

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:  # noqa: D102 - click API
        if name not in self.commands and name in self.lazy_commands:
            import importlib
            module, _, attribute = self.lazy_commands[name].partition(":")
            self.add_command(getattr(importlib.import_module(module), attribute), name)
        return super().get_command(ctx, name)

    def all_commands(self) -> dict[str, click.Command]:
        """Every command by name, importing those not yet loaded (for help and tests)."""
        ctx = click.Context(self)
        return {name: self.get_command(ctx, name) for name in self.list_commands(ctx)}

    def __call__(self, *args, **kwargs):
        """The process's own command line (the `dtplan` script, `python -m planner.cli`), which ends the
        process with `sys.exit` (click's standalone mode): under `process_collector`, and with the
        dataclasses' generated methods compiled once across runs (planner/cli/dataclass_code.py). Tests
        call `main.main` in-process (click's test runner) and keep the collector and dataclasses as they
        were."""
        if not kwargs.get("standalone_mode", True):
            return super().__call__(*args, **kwargs)
        from planner.cli.dataclass_code import compiled_dataclass_methods
        with process_collector(), compiled_dataclass_methods():
            return super().__call__(*args, **kwargs)

    def main(self, args=None, prog_name=None, **extra):  # noqa: D102 - click API
        _invocation[:] = ["dtplan", *(sys.argv[1:] if args is None else args)]
        try:
            return super().main(args, prog_name, **extra)
        except SystemExit:
            # click met the closed pipe itself (e.g. writing --help): it wraps stdout and exits 1
            if type(sys.stdout).__name__.endswith("PacifyFlushWrapper"):
                _silence_stdout()
                raise SystemExit(EXIT_BROKEN_PIPE) from None
            raise
        finally:      # what is still buffered goes out now, so that a closed pipe is seen here
            if _flush_stdout_or_silence():
                raise SystemExit(EXIT_BROKEN_PIPE)

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        ctx.meta[_JSON_KEY] = "--json" in args[: args.index("--")] if "--" in args else "--json" in args
        from planner.cli.progress import QUIET_KEY          # known before the command starts (no first line)
        ctx.meta[QUIET_KEY] = "--quiet" in (args[: args.index("--")] if "--" in args else args)
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        from planner.cli.progress import progress_lines
        as_json = bool(ctx.meta.get(_JSON_KEY))
        try:
            with quiet_float_limits(), progress_lines(ctx):
                return super().invoke(ctx)
        except BadInput as err:
            err.show(as_json=as_json)
            raise click.exceptions.Exit(err.exit_code) from None
        except click.ClickException as err:       # usage errors: exit 2 (click's own code)
            if not as_json:
                raise
            emit_error(err.exit_code, "usage", f"Error: {err.format_message()}", as_json=True)
            raise click.exceptions.Exit(err.exit_code) from None
        except (click.exceptions.Exit, click.exceptions.Abort, KeyboardInterrupt):
            raise
        except OSError as err:
            if not _is_broken_pipe(err):
                return self._internal_error(err, as_json)
            _silence_stdout()
            raise click.exceptions.Exit(EXIT_BROKEN_PIPE) from None
        except Exception as err:                   # a bug: never a traceback, never exit 1
            return self._internal_error(err, as_json)

    @staticmethod
    def _internal_error(err: Exception, as_json: bool) -> None:
        if os.environ.get(DEBUG_ENV, "") not in ("", "0"):
            import traceback            # only on a bug, and only when asked for (start-up, docs/speed.md)
            traceback.print_exception(err, file=sys.stderr)
        kind = type(err).__name__
        detail = str(err).splitlines()[0][:300] if str(err) else ""
        emit_error(EXIT_INTERNAL, "internal_error",
                   f"dtplan: internal error ({kind}{': ' + detail if detail else ''}). This is a bug in "
                   f"dtplan: please report it with the command and its input files; run with "
                   f"{DEBUG_ENV}=1 for the traceback.", as_json=as_json)
        raise click.exceptions.Exit(EXIT_INTERNAL) from None


# -- the cyclic garbage collector of a dtplan process ------------------------------------


# Collect the youngest generation after this many new tracked objects (CPython's default: 700).
# Measured: `dtplan solve` of the shipped 64-node instance makes ~56,000 tracked objects (net of
# those freed), ~42,000 of them after the command line's own import, nearly all long-lived
# modules, classes and tables of start-up (numpy, pydantic and the schema's models, the cost
# model); at the default they cost 72 young and 6 middle collections, the solve itself one
# (docs/speed.md, "Start-up time"). Twice that, so that a command importing more still starts
# without a collection.
PROCESS_GC_THRESHOLD0 = 100_000


@contextmanager
def process_collector():
    """The collector for a whole dtplan process: what start-up makes is long-lived, so
    - the youngest generation is collected after PROCESS_GC_THRESHOLD0 new objects instead of 700
      (the older generations' thresholds unchanged): start-up runs without a collection, and a
      long command (a sweep, `serve`) still collects, leaving at most that many objects of cyclic
      garbage uncollected between two collections;
    - at the end every object still alive is frozen (`gc.freeze`), so that the interpreter's
      exit does not trace them all again in its final collections: the process's memory goes
      back to the system as a whole. Objects in reference cycles then left are not finalised at
      exit (which Python does not promise for objects alive at exit either); dtplan's files are
      written in `with` blocks or closed and flushed by their owners before the command returns.
    """
    thresholds = gc.get_threshold()
    gc.set_threshold(max(PROCESS_GC_THRESHOLD0, thresholds[0]), *thresholds[1:])
    try:
        yield
    finally:
        gc.freeze()                         # first: it also empties the youngest generation's count
        gc.set_threshold(*thresholds)


# -- floating-point limits -----------------------------------------------------------


FLOAT_LIMIT_WARNINGS = r"(overflow|underflow|divide by zero) encountered"


@contextmanager
def quiet_float_limits():
    """numpy's RuntimeWarnings for overflow, underflow and division by zero, not shown while a
    command runs: on extreme but valid inputs (a WAN of 1e-300 Mbit/s, goodput 1e-300) the cost
    model's IEEE results are the right limits (a sync that never ends takes inf seconds, a
    vanishing share is 0) and the answer says so; a warning would only add noise to standard
    error. "invalid value" (a NaN) is still shown: no valid input should produce one. The
    filters are restored afterwards (tests run commands in-process)."""
    import warnings
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", FLOAT_LIMIT_WARNINGS, RuntimeWarning)
        yield


# -- a closed standard output ---------------------------------------------------------


def _is_broken_pipe(err: BaseException) -> bool:
    import errno
    return isinstance(err, BrokenPipeError) or (isinstance(err, OSError) and err.errno == errno.EPIPE)


def _silence_stdout() -> None:
    """Point standard output's file descriptor at /dev/null, so that what is still buffered (and
    the interpreter's last flush) goes nowhere instead of raising again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):    # no file descriptor (e.g. a test's buffer)
        pass


def _flush_stdout_or_silence() -> bool:
    """Flush standard output; True (and silenced) when the reader had closed the pipe."""
    try:
        sys.stdout.flush()
    except (OSError, ValueError) as err:
        if isinstance(err, OSError) and _is_broken_pipe(err):
            _silence_stdout()
            return True
    return False


# -- options shared by commands ------------------------------------------------------


def json_option(help_text: str = "Write the result as JSON to standard output (errors too, as {\"error\": ...}).") -> Callable:
    return click.option("--json", "as_json", is_flag=True, help=help_text)


BEYOND_EVIDENCE = "assumptions.constants.evidence_envelope=false"   # --beyond-evidence, as a --set (docs/quality.md)


def _beyond_evidence(ctx, param, value):
    """--beyond-evidence appends BEYOND_EVIDENCE to the --set overrides, whichever is parsed first."""
    if value:
        ctx.meta["beyond_evidence"] = True
        if "overrides" in ctx.params:
            ctx.params["overrides"] = tuple(ctx.params["overrides"]) + (BEYOND_EVIDENCE,)


def _with_beyond_evidence(ctx, param, value):
    return tuple(value) + ((BEYOND_EVIDENCE,) if ctx.meta.get("beyond_evidence") else ())


def set_option(f: Callable) -> Callable:
    f = click.option("--beyond-evidence", is_flag=True, expose_value=False, callback=_beyond_evidence,
                     help="dtplan profile: search beyond the evidence envelope of the fitted quality model "
                          "(docs/quality.md); plans outside it are marked. Same as --set "
                          f"{BEYOND_EVIDENCE}.")(f)
    return click.option("--set", "overrides", multiple=True, metavar="FIELD=VALUE", callback=_with_beyond_evidence,
                        help="Override one instance field by its dotted JSON path (e.g. fleet.nodes=500, "
                             "network.wan.up_mbps=1000, search.compression=[1,16]); VALUE is parsed as JSON, "
                             "else taken as a string. May be given several times; applied in order, after "
                             "the file and before the command's own flags.")(f)


def _finite_seconds(ctx, param, value):
    if value is not None and not math.isfinite(value):
        raise click.BadParameter(f"must be a finite number of seconds, got {value}")
    return value


def time_limit_option(help_text: str) -> Callable:
    return click.option("--time-limit", "time_limit_s", type=click.FloatRange(min=0, min_open=True, max=1e6),
                        callback=_finite_seconds, help=help_text)


# -- loading: one path for every command ----------------------------------------------


def read_instance_data(path: Path) -> tuple[Any, list[Problem]]:
    """The raw JSON of an instance file and its file-level problems; BadInput if unreadable."""
    from planner.schema.strict import read_json
    try:
        return read_json(path)
    except InputError as err:
        raise BadInput.from_error(err, str(path)) from None


def parse_set(text: str) -> tuple[str, Any]:
    """'fleet.nodes=500' -> ('fleet.nodes', 500); the value as JSON, else as a string."""
    field, sep, value = text.partition("=")
    field = field.strip()
    if not sep or not field or any(not part for part in field.split(".")):
        raise BadInput(f"--set: expected FIELD=VALUE with a dotted field path (e.g. fleet.nodes=500), "
                       f"got {_printable(repr(text))}", [Problem("--set", "expected FIELD=VALUE")])
    try:
        parsed = json.loads(value)
    except (ValueError, RecursionError):
        parsed = value
    return field, parsed


_PATH_PART = re.compile(r"([^\[\]]+)((?:\[\d+\])*)")


def field_keys(field: str) -> list[str | int] | None:
    """'fleet.pools[2].count' -> ['fleet', 'pools', 2, 'count']; None if not a dotted path whose
    parts are names, each optionally followed by list indices [N]."""
    keys: list[str | int] = []
    for part in field.split("."):
        m = _PATH_PART.fullmatch(part)
        if m is None:
            return None
        keys.append(m.group(1))
        keys += [int(i) for i in re.findall(r"\[(\d+)\]", m.group(2))]
    return keys


def set_field(raw: Any, field: str, value: Any, flag: str) -> None:
    """Set the dotted `field` of the raw instance to `value`, creating objects on the way.
    A part may index a list, `fleet.pools[2].count`; the index one past the last entry appends
    (`fleet.pools[6]={...}` on six pools adds a seventh). BadInput naming the field when a
    section on the path is not an object (or list), or an index is out of range."""
    from planner.schema.strict import show
    keys = field_keys(field)
    if keys is None:
        raise BadInput(f"{flag}: cannot set {field}: expected a dotted path of names, each optionally indexed "
                       f"[N] (e.g. fleet.pools[0].count)", [Problem(field, "not a field path")])
    if not isinstance(raw, dict):
        raise BadInput(f"{flag}: cannot set {field}: the instance is not a JSON object",
                       [Problem("<root>", "must be an object")])
    node, where = raw, ""
    for depth, key in enumerate(keys):
        last = depth == len(keys) - 1
        if isinstance(key, int):
            if not isinstance(node, list):
                raise BadInput(f"{flag}: cannot set {field}: {where} must be a list to index, got {show(node)}",
                               [Problem(where, f"must be a list, got {show(node)}")])
            if key > len(node) or (key == len(node) and not last):
                raise BadInput(f"{flag}: cannot set {field}: {where} has {len(node)} entries; index {key} is out "
                               f"of range (0 to {len(node) - 1}, or {len(node)} to append one)",
                               [Problem(f"{where}[{key}]", "index out of range")])
            if last:
                node[key:key + 1] = [value]
                return
            where, node = f"{where}[{key}]", node[key]
            continue
        if not isinstance(node, dict):
            raise BadInput(f"{flag}: cannot set {field}: {where} must be an object, got {show(node)}",
                           [Problem(where, f"must be an object, got {show(node)}")])
        if last:
            node[key] = value
            return
        child = node.setdefault(key, [] if isinstance(keys[depth + 1], int) else {})
        where, node = f"{where}.{key}" if where else key, child


def apply_overrides(raw: Any, overrides: Iterable[str]) -> Any:
    from planner.schema.strict import MAX_DEPTH, NESTING_MESSAGE, nesting
    for text in overrides:
        field, value = parse_set(text)
        if nesting(value) > MAX_DEPTH:
            raise BadInput(f"--set: {field}: {NESTING_MESSAGE}", [Problem(field, NESTING_MESSAGE)])
        set_field(raw, field, value, "--set")
    return raw


def parse_or_exit(raw: Any, source: str, file_problems: list[Problem] = ()):
    """The validated Instance of `raw`; BadInput listing the file's problems and the schema's."""
    from planner.schema.instance import parse_instance
    from planner.schema.strict import MAX_DEPTH, NESTING_MESSAGE, nesting
    problems = list(file_problems)
    instance = None
    if nesting(raw) > MAX_DEPTH:          # e.g. a --set value nested deeper than any field
        raise BadInput.from_error(InputError([Problem("<root>", NESTING_MESSAGE)], source))
    try:
        instance = parse_instance(raw, source)
    except InputError as err:
        problems += err.problems
    except RecursionError:
        problems.append(Problem("<file>", "nested too deeply"))
    if problems:
        raise BadInput.from_error(InputError(problems, source))
    warn_ignored_fields(instance, source)
    return instance


def warn_ignored_fields(instance, source: str) -> None:
    """Fields the input gives that the model does not use, one `warning:` line each on standard
    error (every command, text and --json alike; the evaluations' warnings carry it too)."""
    from planner.schema.sites import ignored_wan_rtt
    for warning in filter(None, [ignored_wan_rtt(instance)]):
        click.echo(_printable(f"{source}: warning: {warning}"), err=True)


def load_instance_or_exit(path: Path, overrides: Iterable[str] = ()):
    """(Instance, raw data with the overrides applied): the one loading path of every command."""
    raw, problems = read_instance_data(path)
    raw = apply_overrides(raw, overrides)
    return parse_or_exit(raw, str(path), problems), raw


def load_or_exit(loader, path: Path):
    try:
        return loader(path)
    except InputError as err:
        raise BadInput.from_error(err) from None


def check_plan(instance, plan, plan_path: Path) -> None:
    from planner.evaluate import check_plan_against
    problems = check_plan_against(instance, plan)
    if problems:
        raise BadInput.from_error(InputError(problems, source=str(plan_path)))


# -- outputs ------------------------------------------------------------------------


def check_output(flag: str, path: Path | None) -> None:
    """A path given to `flag` that a file can be written to (checked before any solving)."""
    if path is None:
        return
    from planner.files import OutputPathError, check_writable
    try:
        check_writable(path)
    except OutputPathError as err:
        raise BadInput(f"{flag}: cannot write to {path}: {err}", [Problem(flag, str(err))]) from None


_invocation: list[str] = []


def command_line() -> str | None:
    """This run's command line (`dtplan solve ...`, shell-quoted); None outside the CLI."""
    import shlex
    return shlex.join(_invocation) if _invocation else None


def check_report(path: Path | None) -> None:
    """A --report path with a suffix the report writer knows, in a writable place."""
    if path is not None:
        from planner.files import OutputPathError
        from planner.present.report import UnknownReportFormat, check_report_path
        try:
            check_report_path(path)
        except UnknownReportFormat as err:
            raise BadInput(f"--report: {err}", [Problem("--report", str(err))]) from None
        except OutputPathError as err:
            raise BadInput(f"--report: cannot write to {path}: {err}", [Problem("--report", str(err))]) from None


def write_output(flag: str, path: Path, writer: Callable[[Path], Any]) -> Path:
    """Run `writer(tmp)` on a temporary file beside `path` and rename it over `path` when it
    succeeded (planner.files.atomic_path); BadInput naming `flag` on an OS error."""
    from planner.files import OutputPathError, atomic_path
    try:
        with atomic_path(path) as tmp:
            writer(tmp)
    except (OSError, OutputPathError) as err:
        reason = getattr(err, "strerror", None) or str(err)
        raise BadInput(f"{flag}: cannot write {path}: {reason}", [Problem(flag, reason)]) from None
    return Path(path)


def _finite(value: Any) -> Any:
    """JSON-ready data: non-finite floats become null, numpy scalars and arrays plain Python."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, (str, int, bool)) or value is None:
        return value
    if isinstance(value, dict):
        return {str(k): _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    if hasattr(value, "tolist"):           # numpy scalars and arrays
        return _finite(value.tolist())
    if isinstance(value, Path):
        return str(value)
    return str(value)


def dumps(data: Any) -> str:
    """JSON text that strict parsers accept: never NaN or Infinity (written as null)."""
    return json.dumps(_finite(data), indent=2, allow_nan=False, ensure_ascii=True)


def echo_json(data: Any) -> None:
    click.echo(dumps(data))


class progress_after:
    """A rich progress bar on stderr that appears only once the work has run `delay_s` seconds,
    and never when stderr is not a terminal or under --quiet (each report also feeds the progress
    lines of planner/cli/progress.py). Used as `with ... as progress:`; `progress(done,
    total, label)` reports."""

    def __init__(self, delay_s: float, verb: str):
        from rich.console import Console
        self.console = Console(stderr=True)
        self.delay_s, self.verb = delay_s, verb
        self.bar = self.task = self.timer = None

    def __enter__(self):
        from planner.cli.progress import is_quiet
        if self.console.is_terminal and not is_quiet():
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
        from planner.cli.progress import report
        report(f"{self.verb} {label}, {done} of {total} done" if label else f"{done} of {total} done")
        if self.bar is not None:
            self.bar.update(self.task, completed=done, total=total,
                            description=f"{self.verb} {label}" if label else "done")

    def __exit__(self, *exc) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer.join()
            self.bar.stop()


def solve_exit_code(status: str, has_plan: bool) -> int:
    """0 with a plan; 3 when the time limit came before any plan; 1 when proven infeasible."""
    if has_plan:
        return EXIT_OK
    return EXIT_TIME_LIMIT if status == "time_limit" else EXIT_INFEASIBLE


def json_default(value):
    """`default=` for json.dumps of results holding numpy values (prefer `dumps`, which also
    writes non-finite numbers as null)."""
    return _finite(value)
