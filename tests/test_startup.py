"""Start-up of the CLI (issue 10 item 10): what a plain `dtplan solve` loads, and that the
rich-free output for pipes is exactly what rich writes. The time itself is measured by
scripts/bench_cli.py, never here."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.present.plain import PlainConsole, PlainTable, Styled, is_plain_safe

REPO = Path(__file__).resolve().parents[1]
INSTANCES = REPO / "instances"


def _rich_console(width: int = 120):
    from rich.console import Console
    return Console(highlight=False, width=width, file=io.StringIO(), color_system=None)


def _both(render, *args) -> tuple[str, str]:
    """(what a PlainConsole writes, what rich writes) for `render(*args, console)`."""
    rich = _rich_console()
    render(*args, rich)
    stdout, sys.stdout = sys.stdout, io.StringIO()
    try:
        render(*args, PlainConsole())
        plain = sys.stdout.getvalue()
    finally:
        sys.stdout = stdout
    return plain, rich.file.getvalue()


@pytest.mark.parametrize("name, objective", [
    ("solve-1e24-64xh100", None), ("solve-1e24-64xh100", "max_compute"), ("solve-1e24-64xh100", "min_cost"),
    ("baseline-1e25", None), ("pp-group-480B-h100", None), ("moe-600B-a100", None)])
def test_plain_output_is_what_rich_writes(name, objective):
    from planner.present.render import render_solve
    from planner.schema.instance import load_instance
    from planner.solve import solve
    result = solve(load_instance(INSTANCES / f"{name}.json"), objective=objective)
    plain, rich = _both(render_solve, result)
    assert plain == rich
    assert "Plan" in plain or "No plan" in plain


def test_plain_output_of_an_infeasible_solve_and_a_broken_plan_is_what_rich_writes():
    from planner.evaluate import evaluate
    from planner.present.render import render_evaluation, render_solve
    from planner.schema.instance import load_instance, parse_instance
    from planner.schema.plan import load_plan
    from planner.solve import solve
    data = json.loads((INSTANCES / "baseline-1e25.json").read_text())
    data["limits"] = {"max_days": 5}
    result = solve(parse_instance(data))
    assert result.status == "infeasible"
    plain, rich = _both(render_solve, result)
    assert plain == rich and "No plan meets every limit" in plain
    evaluation = evaluate(load_instance(INSTANCES / "baseline-1e25.json"), load_plan(INSTANCES / "baseline-1e25.plan.json"))
    assert evaluation.violations
    plain, rich = _both(render_evaluation, evaluation)
    assert plain == rich and "Limits broken" in plain


def test_plain_console_hands_what_it_does_not_lay_out_to_rich():
    table = PlainTable(title="T")
    for _ in range(3):
        table.add_column()
    table.add_row("a", "b" * 200, "c")            # wider than 120 columns: rich wraps or stacks it
    assert table.lines(120) is None
    table = PlainTable(title="T")
    table.add_column()
    table.add_row("caf\u00e9")                     # not ASCII: rich measures cells
    assert table.lines(120) is None
    assert table.lines(120) is None
    for text in ("[red]x[/red]", "a :smile: b", "tab\there", "x" * 121, "\u2026"):
        assert not is_plain_safe(text, 120), text
    console = PlainConsole()
    console._rich = _rich_console()               # where the hand-over goes
    stdout, sys.stdout = sys.stdout, io.StringIO()
    try:
        console.print("[bold]markup[/bold] and " + "word " * 30)
        console.print(Styled.bullet("x", "red", "plain"))
        written = sys.stdout.getvalue()
    finally:
        sys.stdout = stdout
    assert written == "  x plain\n"
    handed = console.rich.file.getvalue()
    assert handed.startswith("markup and word") and "[bold]" not in handed
    assert max(len(line) for line in handed.splitlines()) <= 120


_LOADED = r"""
import json, os, sys
from planner.cli import main
try:
    main(sys.argv[1:], prog_name="dtplan")
except SystemExit:
    pass
sys.stderr.write("@@loaded " + json.dumps({"modules": sorted(sys.modules), "env": {k: os.environ.get(k) for k in
                 ("OPENBLAS_NUM_THREADS", "PYDANTIC_DISABLE_PLUGINS")}}) + "\n")
"""


def _child(*args: str, env: dict[str, str] | None = None) -> dict:
    base = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "PYDANTIC_DISABLE_PLUGINS")}
    done = subprocess.run([sys.executable, "-c", _LOADED, *args], cwd=REPO, capture_output=True, text=True,
                          env={**base, **(env or {})})
    line = next(l for l in done.stderr.splitlines() if l.startswith("@@loaded "))
    return json.loads(line.split(" ", 1)[1])


def test_a_piped_solve_loads_neither_rich_nor_the_other_commands():
    loaded = set(_child("solve", str(INSTANCES / "solve-1e24-64xh100.json"))["modules"])
    assert "planner.cli.solve" in loaded and "numpy" in loaded
    for module in ("rich", "planner.cli.sweep", "planner.cli.thresholds", "planner.cli.compare", "planner.cli.feasible",
                   "planner.questions.sweep", "difflib", "importlib.metadata", "email",
                   # pydantic.types imports `secrets` for SecretStr's __eq__ only: run on first use
                   "hashlib", "hmac", "_hashlib",
                   # only for a fleet of pools, an instance with sites, an internal error (docs/speed.md):
                   "planner.fleet.evaluate", "planner.sync.rules", "planner.sites.places", "traceback",
                   # the per-layer compute model: only where the assumptions use it (planner/cost/physics.py)
                   "planner.cost.compute", "planner.cost.compute.shape", "planner.cost.compute.utilisation"):
        assert module not in loaded, module


_PLUGINS = r"""
import json, os, sys
from planner.cli import pydantic_plugins as stand_in
import planner.schema.instance                      # builds the models: pydantic asks for its plugins
loader = sys.modules[stand_in.LOADER]
seen = {"stand_in": getattr(loader, "DTPLAN_STAND_IN", False), "metadata": "importlib.metadata" in sys.modules, "off": list(loader.get_plugins())}
os.environ["PYDANTIC_DISABLE_PLUGINS"] = "some_plugin"           # plugins on again, but one
seen["on"] = list(loader.get_plugins())
real = sys.modules[stand_in.LOADER]
seen["real_now"] = not hasattr(real, "DTPLAN_STAND_IN") and real.__file__.endswith("_loader.py")
seen["real_answer"] = list(real.get_plugins())
seen["group"] = loader.PYDANTIC_ENTRY_POINT_GROUP
seen["real_off"] = {v: (os.environ.__setitem__("PYDANTIC_DISABLE_PLUGINS", v), real.get_plugins())[1] == ()
                    for v in (*stand_in.ALL_OFF, "some_plugin", "")}
print(json.dumps(seen))
"""


def test_with_every_plugin_off_pydantics_loader_is_stood_in_for_and_behaves_as_pydantics():
    """planner/cli/pydantic_plugins.py: no plugins and no `importlib.metadata` while the
    environment turns them all off; pydantic's own loader (and answer) once it does not; and
    the values read as "all off" are pydantic's own (its loader returns () for exactly those)."""
    base = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "PYDANTIC_DISABLE_PLUGINS")}
    done = subprocess.run([sys.executable, "-c", _PLUGINS], cwd=REPO, capture_output=True, text=True, env=base)
    seen = json.loads(done.stdout)
    assert seen["stand_in"] and not seen["metadata"] and seen["off"] == []
    assert seen["real_now"] and seen["on"] == seen["real_answer"] and seen["group"] == "pydantic"
    assert seen["real_off"] == {"__all__": True, "1": True, "true": True, "some_plugin": False, "": False}


_SECRETS = r"""
import json, sys
import planner.cli, planner.schema.instance
seen = {"lazy": type(sys.modules["secrets"]).__name__, "hashlib": "hashlib" in sys.modules}
from pydantic import SecretBytes, SecretStr
seen["equal"] = [SecretStr("a") == SecretStr("a"), SecretStr("a") == SecretStr("b"), SecretBytes(b"a") == SecretBytes(b"a")]
import secrets
seen["after"] = [type(secrets).__name__, "hashlib" in sys.modules, secrets.__file__.endswith("secrets.py"),
                 len(secrets.token_hex(4)), callable(sys.modules["secrets"].compare_digest)]
print(json.dumps(seen))
"""


def test_secrets_runs_on_first_use_as_it_would_have_at_import():
    """planner/cli/pydantic_plugins.py: `secrets` (imported by pydantic.types) is in sys.modules but not
    run until something reads it; then it is the standard module, whole."""
    done = subprocess.run([sys.executable, "-c", _SECRETS], cwd=REPO, capture_output=True, text=True)
    seen = json.loads(done.stdout)
    assert seen["lazy"] == "_LazyModule" and not seen["hashlib"]
    assert seen["equal"] == [True, False, True]
    assert seen["after"] == ["module", True, True, 8, True]


def test_a_user_who_turns_plugins_on_gets_pydantics_own_loader():
    loaded = _child("solve", str(INSTANCES / "solve-1e24-64xh100.json"), env={"PYDANTIC_DISABLE_PLUGINS": "x"})
    assert loaded["env"]["PYDANTIC_DISABLE_PLUGINS"] == "x"
    assert "importlib.metadata" in loaded["modules"] and "pydantic.plugin._loader" in loaded["modules"]


def test_default_factories_make_what_the_classes_make():
    """planner.schema.strict.made_by: plain functions of no arguments (pydantic reads no text
    signature), each call a fresh default equal to the class's own."""
    import inspect

    from planner.schema.instance import Instance, Network
    from planner.schema.strict import made_by
    make = made_by(list)
    assert make() == [] and make() is not make() and not inspect.signature(make).parameters
    for model in (Instance, Network):
        for name, field in model.model_fields.items():
            if field.default_factory is not None:
                value = field.get_default(call_default_factory=True)
                assert not inspect.signature(field.default_factory).parameters, name
                assert value == type(value)() if isinstance(value, (list, dict)) else value == type(value)(), name


def test_bad_input_is_still_checked_with_the_start_up_defaults(tmp_path):
    """With pydantic's plugins off (the CLI's default) the schema still validates, and the
    suggestions of a misspelled preset (difflib, imported on bad input only) are still made."""
    data = json.loads((INSTANCES / "solve-1e24-64xh100.json").read_text())
    data["fleet"]["hardware"] = "16xH100-SMX"
    path = tmp_path / "typo.json"
    path.write_text(json.dumps(data))
    base = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "PYDANTIC_DISABLE_PLUGINS")}
    done = subprocess.run([sys.executable, "-c", _LOADED, "solve", str(path)], cwd=REPO, capture_output=True, text=True,
                          env=base)
    loaded = json.loads(next(l for l in done.stderr.splitlines() if l.startswith("@@loaded ")).split(" ", 1)[1])
    assert loaded["env"]["PYDANTIC_DISABLE_PLUGINS"] == "__all__"
    assert "fleet.hardware: unknown hardware preset '16xH100-SMX'; known (closest first): 16xH100-SXM," in done.stderr
    assert "difflib" in loaded["modules"]
    dtplan = Path(sys.executable).with_name("dtplan")
    assert subprocess.run([str(dtplan), "solve", str(path)], cwd=REPO, capture_output=True, env=base).returncode == 2


def test_the_cli_sets_its_thread_and_plugin_defaults_unless_the_user_did():
    assert _child("--help")["env"] == {"OPENBLAS_NUM_THREADS": "1", "PYDANTIC_DISABLE_PLUGINS": "__all__"}
    mine = {"OPENBLAS_NUM_THREADS": "2", "PYDANTIC_DISABLE_PLUGINS": ""}
    assert _child("--help", env=mine)["env"] == mine


_COLLECTOR = r"""
import gc, json, sys
from planner.cli import main
seen = []
gc.callbacks.append(lambda phase, info: seen.append(info["generation"]) if phase == "stop" else None)
before = gc.get_threshold()
try:
    main(sys.argv[1:], prog_name="dtplan")
except SystemExit as exc:
    code = exc.code
sys.stderr.write("@@gc " + json.dumps({"code": code, "collections": seen, "frozen": gc.get_freeze_count(),
                                       "before": before, "after": gc.get_threshold()}) + "\n")
"""


def test_a_dtplan_process_starts_without_collections_and_freezes_what_is_left():
    done = subprocess.run([sys.executable, "-c", _COLLECTOR, "solve", str(INSTANCES / "solve-1e24-64xh100.json")],
                          cwd=REPO, capture_output=True, text=True)
    seen = json.loads(next(l for l in done.stderr.splitlines() if l.startswith("@@gc ")).split(" ", 1)[1])
    assert seen["code"] == 0
    assert seen["collections"] == []            # dozens at CPython's default threshold (docs/speed.md)
    assert seen["frozen"] > 20_000              # what start-up made: not traced again at exit
    assert seen["after"] == seen["before"]      # the thresholds are given back


def test_a_command_run_in_process_leaves_the_collector_as_it_was():
    import gc

    from click.testing import CliRunner

    from planner.cli import main
    before, frozen = gc.get_threshold(), gc.get_freeze_count()
    result = CliRunner().invoke(main, ["solve", str(INSTANCES / "solve-1e24-64xh100.json")])
    assert result.exit_code == 0, result.output
    assert (gc.get_threshold(), gc.get_freeze_count()) == (before, frozen)
    main(["--version"], prog_name="dtplan", standalone_mode=False)      # called, but not as a process
    assert (gc.get_threshold(), gc.get_freeze_count()) == (before, frozen)


def test_lazy_commands_are_the_registered_commands():
    from planner.cli import COMMANDS, main
    commands = main.all_commands()
    assert sorted(commands) == sorted(COMMANDS)
    for name, command in commands.items():
        assert command.name == name and command.help


# -- a closed standard output (issue 10: `dtplan solve X | head -1`) ------------------------------


@pytest.mark.parametrize("args", [["solve", str(INSTANCES / "solve-1e24-64xh100.json")],
                                  ["solve", str(INSTANCES / "solve-1e24-64xh100.json"), "--json"],
                                  ["hardware"], ["--help"]])
@pytest.mark.parametrize("buffered", [True, False])
def test_a_closed_pipe_ends_quietly_with_141(args, buffered):
    read, write = os.pipe()
    os.close(read)                    # the reader is gone before dtplan writes anything: EPIPE for sure
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    if not buffered:
        env["PYTHONUNBUFFERED"] = "1"
    dtplan = Path(sys.executable).with_name("dtplan")
    try:
        done = subprocess.run([str(dtplan), *args], cwd=REPO, stdout=write, stderr=subprocess.PIPE, text=True,
                              env=env, timeout=120)
    finally:
        os.close(write)
    assert done.returncode == 141, done.stderr
    assert done.stderr == ""


def _rich_lines(table: PlainTable, width: int) -> list[str]:
    console = _rich_console(width)
    console.print(table.to_rich())
    return console.file.getvalue().splitlines()


_CELL = st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=30)


@settings(max_examples=150, deadline=None, derandomize=True)
@given(rows=st.lists(st.tuples(_CELL, _CELL, _CELL), min_size=1, max_size=6), title=_CELL,
       width=st.sampled_from([40, 80, 120]))
def test_plain_tables_are_what_rich_writes_or_handed_over(rows, title, width):
    """Any table of printable ASCII: either the plain layout is exactly rich's, or the plain
    path declines it (markup, emoji codes, too wide) and rich lays it out."""
    table = PlainTable(title=title, title_justify="left", title_style="bold", show_header=False, box=None,
                       pad_edge=False)
    table.add_column(style="cyan", no_wrap=True)
    table.add_column(justify="right")
    table.add_column(style="dim")
    for row in rows:
        table.add_row(*row)
    lines = table.lines(width)
    if lines is not None:
        assert lines == _rich_lines(table, width)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(text=st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=130))
def test_plain_lines_are_what_rich_writes_or_handed_over(text):
    """A line the plain path writes itself is exactly the line rich writes for it."""
    if is_plain_safe(text, 120):
        rich = _rich_console()
        rich.print(text)
        assert rich.file.getvalue() == text + "\n"
