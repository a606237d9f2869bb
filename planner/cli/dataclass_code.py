"""The compiled code of the methods `@dataclass` writes, kept between runs of dtplan (issue 27 item 1;
docs/speed.md, "Start-up time").

Python's `dataclasses` writes each method it generates (`__init__`, `__repr__`, `__eq__`, `__hash__`,
`__setattr__`, ...) as source text and compiles it, `exec(text, globals, namespace)` in
`dataclasses._create_fn`, every time a dataclass is made: `dtplan solve` of the shipped 64-node instance
makes about 245 such texts (the dataclasses of pydantic, annotated_types and dtplan's own modules), and
parsing and compiling them was about 0.13 billion of its 1.28 billion instructions. The text of a method
depends only on the class's fields and options, so the same texts come back in every run.

While a dtplan command runs as its own process (`DtplanGroup.__call__`, as `process_collector`), and
while the command line's package imports click and its own modules (planner/cli/__init__.py, in any
process that imports it), the `dataclasses` module's `exec` is `_exec` below: it looks the text up in a table of code objects, each
compiled from exactly that text as `exec` compiles it (`compile(text, "<string>", "exec")`, no flags
inherited: dataclasses.py has no `__future__` import), compiles and notes any text not in the table,
and runs the code object with the same globals and namespace. A code object is a function of its text,
Python's version and the optimisation level only, so the functions made are the ones `exec(text)`
makes (tests/test_dataclass_code.py compares their code). When the command ends, the module's `exec`
is the builtin again and, if some texts were missing, the table with them is written beside this
module's bytecode (`importlib.util.cache_from_source`: `__pycache__/dataclass_code.<tag>.methods`, under
`sys.pycache_prefix` when set), headed by Python's bytecode magic number, written to a temporary file
and renamed, as Python writes its `.pyc` files, and only when Python writes bytecode
(`sys.dont_write_bytecode`, PYTHONDONTWRITEBYTECODE). A file that cannot be read, is not a table or was
written by another Python is ignored (and rewritten), one that cannot be written is not, silently, as a
`.pyc`: the run then compiles as before. The table keeps at most MAX_ENTRIES texts (beyond that it
starts again from the texts of the current run), so other versions of the libraries cannot grow it
without end. Whoever can write this file could also write the package's `.pyc` files beside it. A process
reads the file once while it stays the same (`_table_at`: its inode, size and modification time), so
the package's block and the command's share one read (~6 million instructions).

The same table keeps the code of the forward references `typing.ForwardRef` compiles
(`compile(text, "<string>", "eval")` in its `__init__`, keyed `("eval", text)`): pydantic_core's
`core_schema` module declares its 79 TypedDicts with string annotations, and typing_extensions makes
a ForwardRef of each (about 710 compiles per command, ~35 million instructions). While the block runs,
the `typing` module's `compile` is `_compile` below, which returns the table's code object for such a
call (the code `compile` makes of that text: typing.py has no `__future__` import, so inheriting its
flags is inheriting none) and hands any other call to the builtin unchanged.

It keeps, too, what `re` compiles a regular expression into (keyed `("re", is bytes, pattern, flags)`):
the modules a solve loads compile about 40 patterns at import, each parsed and translated by `re`'s
pure-Python parser and compiler (~0.5 million instructions a pattern). While the block runs,
`re._compiler.compile` is `_re_compile` below, which takes its steps (parse, translate, then
`_sre.compile(pattern, flags, code, groups, groupindex, indexgroup)`) and keeps the arguments of that
last call, so that a later run calls `_sre.compile` with them at once: the same arguments make the same
pattern (`Pattern.__eq__` compares the pattern, its flags and its code; tests/test_dataclass_code.py). A
pattern the parser warned about (a FutureWarning for a possible nested set, say) is not kept, so that it
warns in every run, from the same line; a pattern with `re.DEBUG` (which prints its code) is left to
`re`. These steps are those of `re._compiler.compile` in Python 3.11, read for this; under another
Python (`RE_STEPS_READ`) `re` is left alone.

And it keeps what `inspect.cleandoc` makes of a docstring (keyed `("doc", text)`): numpy's import cleans the
docstring of every function and type it documents (`add_newdoc`, ~350 texts, and its array functions'
dispatchers), pydantic the docstrings it reads, click its commands' help, about 390 texts of ~0.5 MB for a
solve, ~29 million instructions. `cleandoc` is a function of its text alone (it splits the lines, expands the
tabs and strips the common indentation), so while the block runs, `inspect.cleandoc` is `_cleandoc` below,
which returns the table's text for a `str` it has and hands anything else to `inspect`'s own.
"""

from __future__ import annotations

import _sre
import dataclasses
import inspect
import marshal
import os
import re
import sys
import typing
import warnings
from re import _compiler as _re_compiler, _parser as _re_parser
from contextlib import contextmanager
from importlib.util import MAGIC_NUMBER, cache_from_source
from types import CodeType
from typing import Iterator

MAX_ENTRIES = 4096       # entries kept: ~880 for `dtplan solve` (~380 of them docstrings), ~1,430 with the MIP's
_builtin_exec = exec
_builtin_compile = compile
_FORWARD_REF = ("<string>", "eval", 0, -1, -1)    # typing.ForwardRef's compile(text, "<string>", "eval")
_builtin_re_compile = _re_compiler.compile
_inspect_cleandoc = inspect.cleandoc
RE_STEPS_READ = ((3, 11),)          # Pythons whose re._compiler.compile takes the steps of _re_compile below


def table_path() -> str | None:
    """Where the table is kept: beside this module's bytecode (None where Python keeps no bytecode)."""
    try:
        return cache_from_source(__file__).removesuffix(".pyc") + ".methods"
    except NotImplementedError:        # sys.implementation.cache_tag is None
        return None


def read_table(path: str) -> dict[str | tuple[str, str], CodeType]:
    """The table in `path`, or {} when there is none this Python can use."""
    try:
        with open(path, "rb") as file:
            data = file.read()
    except OSError:
        return {}
    if not data.startswith(MAGIC_NUMBER):
        return {}
    try:
        table = marshal.loads(memoryview(data)[len(MAGIC_NUMBER):])
    except (ValueError, EOFError, TypeError):
        return {}
    return table if type(table) is dict else {}


def write_table(path: str, table: dict[str | tuple[str, str], CodeType]) -> bool:
    """Write `table` to `path` as a whole (a temporary file renamed); False if it could not be."""
    temporary = f"{path}.{os.getpid()}.tmp"
    try:
        data = MAGIC_NUMBER + marshal.dumps(table)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(temporary, "wb") as file:
            file.write(data)
        os.replace(temporary, path)
        return True
    except (OSError, ValueError):
        try:
            os.unlink(temporary)
        except OSError:
            pass
        return False


_held: dict[str, tuple[tuple[int, int, int], dict]] = {}     # path -> (the file's identity, its table) read here


def _table_at(path: str) -> dict:
    """`read_table(path)`, read once a process while the file stays the same (inode, size, mtime): the command
    line's package and the command each hold the table in a block (planner/cli/__init__.py, common.py)."""
    try:
        stat = os.stat(path)
    except OSError:
        return {}
    identity = (stat.st_ino, stat.st_size, stat.st_mtime_ns)
    held = _held.get(path)
    if held is None or held[0] != identity:
        held = _held[path] = (identity, read_table(path))
    return held[1]


@contextmanager
def compiled_dataclass_methods(path: str | None = None) -> Iterator[dict[str | tuple[str, str], CodeType]]:
    """Within the block, `dataclasses` compiles each method text once across runs (module docstring).
    Yields the texts compiled in this block (those the table did not have)."""
    path = path or table_path()
    if path is None or "exec" in vars(dataclasses) or "compile" in vars(typing):  # no place, or already within
        yield {}
        return
    table = _table_at(path)
    missing: dict[str | tuple[str, str], CodeType] = {}
    used: set[str | tuple[str, str]] = set()

    def _exec(source, globals=None, locals=None, /):
        if type(source) is str and type(globals) is dict:
            code = table.get(source)
            if type(code) is not CodeType:
                code = missing[source] = compile(source, "<string>", "exec", dont_inherit=True)
            used.add(source)
            source = code
        return _builtin_exec(source, globals, locals)

    def _compile(source, filename, mode, flags=0, dont_inherit=False, optimize=-1, *, _feature_version=-1):
        # typing.py has no __future__ import: inheriting its flags is inheriting none (dont_inherit=True)
        if type(source) is not str or (filename, mode, flags, optimize, _feature_version) != _FORWARD_REF:
            return _builtin_compile(source, filename, mode, flags, True, optimize, _feature_version=_feature_version)
        key = ("eval", source)
        code = table.get(key)
        if type(code) is not CodeType:
            code = missing[key] = _builtin_compile(source, filename, mode, dont_inherit=True)
        used.add(key)
        return code

    def _re_compile(p, flags=0):
        # re._compiler.compile's own steps (Python 3.11-3.13), called from the same depth, so that a
        # warning of the parser names the same line; a pattern the parser warned about is not kept
        if type(p) not in (str, bytes) or type(flags) is not int or flags & re.DEBUG:
            return _builtin_re_compile(p, flags)
        key = ("re", type(p) is bytes, p, flags)
        arguments = table.get(key)
        if type(arguments) is not tuple or len(arguments) != 5:
            warned = []

            def counted(message, category=None, stacklevel=1, source=None):
                warned.append(category)
                return _warn(message, category, stacklevel + 1, source)
            _warn, warnings.warn = warnings.warn, counted
            try:
                parsed = _re_parser.parse(p, flags)
            finally:
                warnings.warn = _warn
            code = [int(word) for word in _re_compiler._code(parsed, flags)]    # marshal takes no int subclass
            groupindex = parsed.state.groupdict
            indexgroup = [None] * parsed.state.groups
            for k, i in groupindex.items():
                indexgroup[i] = k
            arguments = (flags | parsed.state.flags, code, parsed.state.groups - 1, groupindex, tuple(indexgroup))
            if warned:
                return _sre.compile(p, *arguments)
            missing[key] = arguments
        used.add(key)
        return _sre.compile(p, *arguments)

    def _cleandoc(doc):
        # inspect.cleandoc reads only the text: the same text, the same result (module docstring)
        if type(doc) is not str:
            return _inspect_cleandoc(doc)
        key = ("doc", doc)
        cleaned = table.get(key)
        if type(cleaned) is not str:
            cleaned = missing[key] = _inspect_cleandoc(doc)
        used.add(key)
        return cleaned

    dataclasses.exec = _exec
    typing.compile = _compile
    inspect.cleandoc = _cleandoc
    if sys.version_info[:2] in RE_STEPS_READ:
        _re_compiler.compile = _re_compile
    try:
        yield missing
    finally:
        del dataclasses.exec, typing.compile
        inspect.cleandoc = _inspect_cleandoc
        _re_compiler.compile = _builtin_re_compile
        if missing and not sys.dont_write_bytecode:
            merged = {**table, **missing}
            if len(merged) > MAX_ENTRIES:
                merged = {text: code for text, code in merged.items() if text in used}
            write_table(path, merged)
