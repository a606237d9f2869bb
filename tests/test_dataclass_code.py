"""planner/cli/dataclass_code.py: the methods @dataclass writes, compiled once across runs, are the
methods it writes without the table (the same code, the same behaviour), and the table's file is
read, written and refused as the module docstring says."""

from __future__ import annotations

import dataclasses
import os
import re
import subprocess
import sys
import warnings
from pathlib import Path
from typing import ClassVar

import pytest

from planner.cli import dataclass_code
from planner.cli.dataclass_code import compiled_dataclass_methods, read_table, write_table

REPO = Path(__file__).resolve().parents[1]
METHODS = ("__init__", "__repr__", "__eq__", "__hash__", "__setattr__", "__delattr__", "__lt__", "__le__", "__gt__",
           "__ge__")


@pytest.fixture(autouse=True)
def _bytecode_written(monkeypatch):
    """As a user's Python: bytecode (and the table) written, whatever this machine's environment says."""
    monkeypatch.setattr(sys, "dont_write_bytecode", False)


def _classes() -> list[type]:
    """Dataclasses of every kind the generated methods come in (made afresh at each call)."""

    @dataclasses.dataclass(frozen=True)
    class Frozen:
        a: int
        b: str = "x"
        c: list = dataclasses.field(default_factory=list)
        d: ClassVar[int] = 3

    @dataclasses.dataclass(order=True, unsafe_hash=True)
    class Ordered:
        a: float
        b: tuple = ()

    @dataclasses.dataclass(kw_only=True, slots=True)
    class KeywordsOnly:
        a: int = 1
        b: "int | None" = None

    @dataclasses.dataclass
    class PostInit:
        a: int
        b: dataclasses.InitVar[int] = 2
        c: int = dataclasses.field(init=False, default=0)

        def __post_init__(self, b):
            self.c = self.a + b

    return [Frozen, Ordered, KeywordsOnly, PostInit]


def _methods(cls: type) -> dict:
    return {name: getattr(cls, name) for name in METHODS if name in vars(cls) and callable(vars(cls)[name])}


def _same_functions(mine: type, theirs: type) -> None:
    ours, builtin = _methods(mine), _methods(theirs)
    assert ours.keys() == builtin.keys() and ours
    for name, function in ours.items():
        function = getattr(function, "__wrapped__", function)          # __repr__'s recursion guard
        other = getattr(builtin[name], "__wrapped__", builtin[name])
        code, other_code = function.__code__, other.__code__
        assert code == other_code, (mine.__name__, name)
        assert (code.co_filename, code.co_qualname, code.co_flags, code.co_consts) == \
               (other_code.co_filename, other_code.co_qualname, other_code.co_flags, other_code.co_consts)
        assert (function.__qualname__, function.__annotations__, function.__defaults__, function.__kwdefaults__) == \
               (other.__qualname__, other.__annotations__, other.__defaults__, other.__kwdefaults__)


def _behaviour(classes: list[type]) -> list:
    Frozen, Ordered, KeywordsOnly, PostInit = classes
    out = [repr(Frozen(1)), Frozen(1) == Frozen(1), Frozen(1) == Frozen(2), hash(Frozen(1, "y", None)) == hash((1, "y", None))]
    with pytest.raises(dataclasses.FrozenInstanceError) as err:
        Frozen(1).a = 2
    out += [str(err.value), Ordered(1.0) < Ordered(2.0), hash(Ordered(1.0, (2,))), repr(KeywordsOnly(b=3)),
            PostInit(4).c, repr(PostInit(4, 5))]
    with pytest.raises(TypeError) as err:
        KeywordsOnly(1)
    return out + [str(err.value)]


def test_the_methods_are_those_dataclasses_writes(tmp_path):
    path = str(tmp_path / "t.methods")
    theirs = _classes()
    with compiled_dataclass_methods(path) as compiled:
        assert "exec" in vars(dataclasses)
        first = _classes()
    assert "exec" not in vars(dataclasses)        # the builtin again after the block
    assert len(compiled) >= 12 and os.path.exists(path)
    with compiled_dataclass_methods(path) as compiled_again:
        second = _classes()                       # now from the file's table
    assert compiled_again == {}
    for mine in (first, second):
        for a, b in zip(mine, theirs):
            _same_functions(a, b)
        assert _behaviour(mine) == _behaviour(theirs)
    for text, code in read_table(path).items():   # the file holds what compile() makes of each text
        assert code == compile(text, "<string>", "exec", dont_inherit=True)


# Forward references as pydantic's schema and typing_extensions' TypedDicts make them (string annotations)
_REFERENCES = ("int", "list[int] | None", "dict[str, 'Frozen']", "Annotated[float, 3]", "*Ts", "x if y else z")


def test_forward_references_have_the_code_typing_compiles(tmp_path):
    import typing
    path = str(tmp_path / "t.methods")
    theirs = [typing.ForwardRef(text) for text in _REFERENCES]
    with compiled_dataclass_methods(path) as compiled:
        assert "compile" in vars(typing)
        first = [typing.ForwardRef(text) for text in _REFERENCES]
    assert "compile" not in vars(typing)          # the builtin again after the block
    assert {("eval", "int"), ("eval", "(*Ts,)[0]")} <= compiled.keys()
    with compiled_dataclass_methods(path) as compiled_again:
        second = [typing.ForwardRef(text) for text in _REFERENCES]
    assert compiled_again == {}                   # now from the file's table
    for mine in (first, second):
        for ref, other in zip(mine, theirs):
            assert ref == other and ref.__forward_code__ == other.__forward_code__
            code, other_code = ref.__forward_code__, other.__forward_code__
            assert (code.co_filename, code.co_flags, code.co_consts, code.co_names) == \
                   (other_code.co_filename, other_code.co_flags, other_code.co_consts, other_code.co_names)
        assert mine[0]._evaluate({}, {}, frozenset()) is int
    for key, code in read_table(path).items():
        if isinstance(key, tuple):
            assert key[0] == "eval" and code == compile(key[1], "<string>", "eval", dont_inherit=True)
    with compiled_dataclass_methods(path):        # a text that is not an expression: typing's own error
        with pytest.raises(SyntaxError, match="Forward reference must be an expression -- got 'x ='"):
            typing.ForwardRef("x =")
        assert typing.compile("x", "f.py", "exec").co_filename == "f.py"      # other calls: the builtin's
    assert read_table(path).keys() >= {("eval", text) for text in ("int", "list[int] | None")}


def test_nothing_is_written_when_python_writes_no_bytecode(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    path = tmp_path / "t.methods"
    with compiled_dataclass_methods(str(path)) as compiled:
        _classes()
    assert compiled and not path.exists()


@pytest.mark.parametrize("content", [b"", b"not a table", None, b"marshalled list"])
def test_a_file_this_python_cannot_use_is_ignored_and_rewritten(tmp_path, content):
    import marshal
    from importlib.util import MAGIC_NUMBER
    path = tmp_path / "t.methods"
    if content is None:
        path.write_bytes(b"\0\0\0\0" + marshal.dumps({"x": compile("x = 1", "<string>", "exec")}))  # another Python
    elif content == b"marshalled list":
        path.write_bytes(MAGIC_NUMBER + marshal.dumps([1, 2]))
    else:
        path.write_bytes(content)
    assert read_table(str(path)) == {}
    with compiled_dataclass_methods(str(path)) as compiled:
        made = _classes()
    assert compiled and read_table(str(path)).keys() == compiled.keys()
    for a, b in zip(made, _classes()):
        _same_functions(a, b)


def test_an_unwritable_place_is_no_error(tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    path = str(blocker / "t.methods")             # its directory would be a file
    assert not write_table(path, {})
    with compiled_dataclass_methods(path) as compiled:
        made = _classes()
    assert compiled and not os.path.exists(path)
    for a, b in zip(made, _classes()):
        _same_functions(a, b)


def test_the_table_starts_again_beyond_its_size(tmp_path, monkeypatch):
    path = str(tmp_path / "t.methods")
    foreign = {f"x = {i}": compile(f"x = {i}", "<string>", "exec") for i in range(5)}
    assert write_table(path, foreign)
    with compiled_dataclass_methods(path) as compiled:
        _classes()
    assert read_table(path).keys() == foreign.keys() | compiled.keys()      # under the limit: kept
    monkeypatch.setattr(dataclass_code, "MAX_ENTRIES", len(compiled) + 2)
    write_table(path, foreign)
    with compiled_dataclass_methods(path) as compiled:
        _classes()
    assert read_table(path).keys() == compiled.keys()                        # beyond it: this run's only


def test_the_table_beside_the_bytecode_of_a_dtplan_process(tmp_path):
    """Two runs of `dtplan solve`: the first writes the table (under PYTHONPYCACHEPREFIX here), the
    second reads it; the same output both times, and as a command run in-process writes it."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(tmp_path)
    args = [sys.executable, "-m", "planner.cli", "solve", str(REPO / "instances" / "solve-1e24-64xh100.json"), "--json"]
    first = subprocess.run(args, cwd=REPO, env=env, capture_output=True, text=True)
    tables = list(tmp_path.rglob("dataclass_code.*.methods"))
    second = subprocess.run(args, cwd=REPO, env=env, capture_output=True, text=True)
    assert first.returncode == second.returncode == 0, first.stderr + second.stderr
    assert len(tables) == 1 and len(read_table(str(tables[0]))) > 100

    def plan(out: str) -> str:
        import json
        result = json.loads(out)
        result.pop("solve_time_s")
        return json.dumps(result, sort_keys=True)
    assert plan(first.stdout) == plan(second.stdout)
    from click.testing import CliRunner
    from planner.cli import main
    inside = CliRunner().invoke(main, args[3:])
    assert "exec" not in vars(dataclasses) and plan(inside.stdout) == plan(first.stdout)


# Regular expressions as the command's modules compile them: str and bytes, flags, groups, named groups
_PATTERNS = ((r"(-?(?:0|[1-9]\d*))(\.\d+)?([eE][-+]?\d+)?", 0), (r"(?P<key>\w+)=(?P<value>.*?)(?P=key)?$", 0),
             ("\n  ( # a comment\n [ \\t]+ ) | (?<=[\\w!]) -{2,} (?=\\w)", re.VERBOSE), (r"^[ \t]+$", re.MULTILINE),
             (b"(__libc_init)|(GLIBC_([0-9.]+))", 0), ("[é-ü]+", re.IGNORECASE), (r"(?i)ab(c)", 0),
             (r"\s*,\s*", re.ASCII), (r"(?s:.*\.json)\Z", 0), (r"(a)|(b)|(?P<c>c)", re.DOTALL))


def _compiled(patterns) -> list[re.Pattern]:
    re.purge()                                    # re's own cache would answer without compiling
    return [re.compile(p, f) for p, f in patterns]


@pytest.mark.skipif(sys.version_info[:2] not in dataclass_code.RE_STEPS_READ, reason="re left alone on this Python")
def test_regular_expressions_are_those_re_compiles(tmp_path):
    path = str(tmp_path / "t.methods")
    theirs = _compiled(_PATTERNS)
    with compiled_dataclass_methods(path) as compiled:
        assert re._compiler.compile is not dataclass_code._builtin_re_compile
        first = _compiled(_PATTERNS)
    assert re._compiler.compile is dataclass_code._builtin_re_compile      # the stdlib's again
    assert len([key for key in compiled if key[0] == "re"]) == len(_PATTERNS)
    with compiled_dataclass_methods(path) as compiled_again:
        second = _compiled(_PATTERNS)
    assert compiled_again == {}                   # now from the file's table
    for mine in (first, second):
        for pattern, other in zip(mine, theirs):  # Pattern == compares the pattern, its flags and its code
            assert pattern == other and pattern is not other
            assert (pattern.flags, pattern.groups, pattern.groupindex) == (other.flags, other.groups, other.groupindex)
        assert mine[1].match("k=v").groupdict() == {"key": "k", "value": "v"}
        assert mine[4].findall(b"GLIBC_2.34") == [(b"", b"GLIBC_2.34", b"2.34")]


def test_a_regular_expression_the_parser_warns_about_warns_every_time_and_is_not_kept(tmp_path):
    path = str(tmp_path / "t.methods")
    text = "[[a]"                                 # FutureWarning: possible nested set

    def warned() -> list[tuple[str, int]]:
        re.purge()
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            re.compile(text)                      # the line the warning names
        return [(w.category.__name__, w.filename, w.lineno) for w in seen]
    theirs = warned()
    assert theirs and theirs[0][0] == "FutureWarning" and theirs[0][1] == __file__
    for _ in range(2):
        with compiled_dataclass_methods(path) as compiled:
            assert warned() == theirs
        assert not any(key[0] == "re" for key in compiled)
    assert not any(isinstance(key, tuple) and key[0] == "re" for key in read_table(path))


def test_the_command_lines_import_runs_in_a_block_and_leaves_nothing_behind(tmp_path):
    """planner/cli/__init__.py imports click and its own modules within a block: a fresh process writes the
    table (under PYTHONPYCACHEPREFIX here), and after the import dataclasses, typing, re and inspect are as they
    were."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(tmp_path)
    code = ("import dataclasses, inspect, re, typing, planner.cli; from planner.cli import dataclass_code; "
            "print('exec' in vars(dataclasses), 'compile' in vars(typing), "
            "re._compiler.compile is dataclass_code._builtin_re_compile, "
            "inspect.cleandoc is dataclass_code._inspect_cleandoc)")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True)
    assert done.stdout.split() == ["False", "False", "True", "True"], done.stderr
    tables = list(tmp_path.rglob("dataclass_code.*.methods"))
    assert len(tables) == 1 and read_table(str(tables[0]))


def test_the_table_is_read_once_a_process_while_its_file_stays_the_same(tmp_path, monkeypatch):
    path = str(tmp_path / "t.methods")
    reads = []
    monkeypatch.setattr(dataclass_code, "read_table", lambda p: reads.append(p) or read_table(p))
    with compiled_dataclass_methods(path):
        _classes()                                # writes the file (it had nothing)
    for _ in range(2):
        with compiled_dataclass_methods(path) as compiled:
            _classes()
        assert compiled == {}
    assert reads == [path]                        # the file read once, after it was written
    write_table(path, {})                         # another process rewrites it: read again
    with compiled_dataclass_methods(path) as compiled:
        _classes()
    assert reads == [path, path] and compiled


# Docstrings as numpy's add_newdoc, pydantic and click hand them to inspect.cleandoc: indented, tabbed,
# blank first or last lines, a single line, empty, non-ASCII
_DOCS = ("\n    Sum of array elements.\n\n    Parameters\n    ----------\n    a : array_like\n    ",
         "One line.", "", "  \n\tTabbed\n\t  more\n\n", "First line\n        indented more\n    less\n",
         "π ≈ 3.14159\n   é\n", "\n\n\n")


def test_docstrings_are_cleaned_as_inspect_cleans_them(tmp_path):
    import inspect
    path = str(tmp_path / "t.methods")
    theirs = [inspect.cleandoc(doc) for doc in _DOCS]
    with compiled_dataclass_methods(path) as compiled:
        assert inspect.cleandoc is not dataclass_code._inspect_cleandoc
        first = [inspect.cleandoc(doc) for doc in _DOCS]
    assert inspect.cleandoc is dataclass_code._inspect_cleandoc          # inspect's own again after the block
    assert {("doc", doc) for doc in _DOCS} <= compiled.keys()
    with compiled_dataclass_methods(path) as compiled_again:
        second = [inspect.cleandoc(doc) for doc in _DOCS]
        with pytest.raises(AttributeError):                              # not a str: inspect's own, its own error
            inspect.cleandoc(None)
    assert compiled_again == {}                                          # now from the file's table
    assert first == second == theirs
    assert all(type(text) is str for text in first + second)
    for key, value in read_table(path).items():                         # the file holds what cleandoc makes
        if isinstance(key, tuple) and key[0] == "doc":
            assert value == dataclass_code._inspect_cleandoc(key[1])
