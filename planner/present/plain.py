"""Terminal output without importing rich when standard output is not a terminal.

rich (about 20 ms to import and 15-20 ms to lay out the tables of one solve) is what a
terminal deserves; a pipe, a file or a test gets the same characters. `PlainConsole`
writes that text itself for the simple cases the result pages are made of, and hands
anything else to a rich console built on first need (`PlainConsole.rich`):

- `Styled` lines (text with per-part styles: the styles are dropped, as rich drops them
  when it writes to a file) and plain strings without markup;
- `PlainTable`s of the result pages (no box, no header, no edge padding: columns two
  spaces apart, the title on its own line, every line padded to the table's width).

The fast path takes only printable ASCII no wider than the console, with no `[` (rich
markup) and no `:word:` (rich emoji codes), so that what it writes is exactly what rich
writes (tests/test_cli.py compares the two on the shipped instances); a longer line, any
other character, a boxed or too wide table goes to rich. Both objects also render in a
rich console (`__rich__`), so the same code prints to either.
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass, field
from typing import Any

PLAIN_WIDTH = 120                 # columns when standard output is not a terminal
_EMOJI_CODE = re.compile(r":\S*?:")   # rich replaces :name: by an emoji when it knows the name
_RICH_DECIDES = ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "JUPYTER_COLUMNS", "JUPYTER_LINES")


def is_plain_safe(text: str, width: int) -> bool:
    """Whether rich would write `text` unchanged on one line of `width` columns."""
    return (len(text) <= width and text.isascii() and text.isprintable()
            and "[" not in text and _EMOJI_CODE.search(text) is None)


def stdout_is_plain() -> bool:
    """Standard output is not a terminal, and no variable asks rich to decide otherwise
    (FORCE_COLOR, TTY_COMPATIBLE: rich's own rules then apply)."""
    if any(name in os.environ for name in _RICH_DECIDES):
        return False
    isatty = getattr(sys.stdout, "isatty", None)
    try:
        return not (isatty is not None and isatty())
    except ValueError:            # a closed stream
        return True


@dataclass
class Styled:
    """One line of text in parts, each with a rich style ('' for none): `Styled.line("x", "bold")`."""

    parts: tuple[tuple[str, str], ...]

    @classmethod
    def line(cls, text: str, style: str = "") -> "Styled":
        return cls(((text, style),))

    @classmethod
    def bullet(cls, mark: str, style: str, text: str) -> "Styled":
        """'  x text' with the mark styled (e.g. a red x before a broken limit)."""
        return cls((("  ", ""), (mark, style), (" " + text, "")))

    @property
    def plain(self) -> str:
        return "".join(text for text, _ in self.parts)

    def __rich__(self):
        from rich.text import Text
        return Text.assemble(*self.parts)


@dataclass
class Column:
    style: str = ""
    justify: str = "left"
    no_wrap: bool = False
    header: str = ""
    overflow: str | None = None


@dataclass
class PlainTable:
    """The subset of rich's Table the result pages use (same arguments); `to_rich()` builds
    the rich Table, `lines(width)` the text rich writes for it (None when rich must lay it out)."""

    title: str = ""
    title_justify: str = "left"
    title_style: str = ""
    show_header: bool = False
    box: Any = None
    pad_edge: bool = False
    columns: list[Column] = field(default_factory=list)
    rows: list[list[str]] = field(default_factory=list)

    def add_column(self, header: str = "", **options) -> None:
        self.columns.append(Column(header=header, **options))

    def add_row(self, *cells: str) -> None:
        self.rows.append([str(c) for c in cells])

    @property
    def row_count(self) -> int:
        return len(self.rows)

    def to_rich(self):
        from rich.table import Table
        table = Table(title=self.title or None, title_justify=self.title_justify, title_style=self.title_style,
                      show_header=self.show_header, box=self.box, pad_edge=self.pad_edge)
        for c in self.columns:
            options = {"overflow": c.overflow} if c.overflow else {}
            table.add_column(c.header, style=c.style or None, justify=c.justify, no_wrap=c.no_wrap, **options)
        for row in self.rows:
            table.add_row(*row)
        return table

    def __rich__(self):
        return self.to_rich()

    def lines(self, width: int) -> list[str] | None:
        """The lines rich writes for this table at `width` columns, or None unless the table is
        one the fast path lays out exactly (no box or header, ASCII cells, natural width fits)."""
        if self.box is not None or self.show_header or self.pad_edge or self.title_justify != "left" or not self.rows:
            return None
        if not all(is_plain_safe(cell, width) for row in self.rows for cell in row):
            return None
        if any(cell != cell.rstrip() or (c.justify != "left" and cell != cell.lstrip())
               for row in self.rows for cell, c in zip(row, self.columns)) or self.title != self.title.strip():
            return None           # rich trims such whitespace its own way
        widths = [max(len(row[i]) for row in self.rows) for i in range(len(self.columns))]
        total = sum(widths) + 2 * (len(widths) - 1)
        if total > width or not is_plain_safe(self.title, width) or len(self.title) > total:
            return None
        lines = [self.title.ljust(total)] if self.title else []
        for row in self.rows:
            cells = [cell.rjust(w) if c.justify == "right" else cell.ljust(w)
                     for cell, w, c in zip(row, widths, self.columns)]
            lines.append("  ".join(cells))
        return lines


_PIPE_CONSOLE: list[type] = []


def rich_console(**options: Any):
    """A rich Console whose closed-pipe handling is dtplan's: rich's own `on_broken_pipe` exits
    with code 1 (dtplan's "infeasible"); this one raises BrokenPipeError, which the CLI turns
    into a quiet exit 141 (planner/cli/common.py)."""
    if not _PIPE_CONSOLE:
        from rich.console import Console

        class PipeConsole(Console):
            def on_broken_pipe(self) -> None:
                self.quiet = True          # nothing more from this console
                raise BrokenPipeError("standard output was closed")

        _PIPE_CONSOLE.append(PipeConsole)
    return _PIPE_CONSOLE[0](**options)


class PlainConsole:
    """A console for standard output when it is not a terminal: `print` writes `Styled`
    lines, safe strings and simple `PlainTable`s itself, anything else through `rich` (a
    rich Console of the same width, built on first use). Other attributes are rich's."""

    is_terminal = False

    def __init__(self, width: int = PLAIN_WIDTH):
        self.width = width
        self._rich = None

    @property
    def rich(self):
        """The rich Console this one hands over to (standard output, `width` columns, no highlighting)."""
        if self._rich is None:
            self._rich = rich_console(highlight=False, width=self.width)
        return self._rich

    def __getattr__(self, name: str):
        return getattr(self.rich, name)

    def _text(self, obj: Any) -> str | None:
        if isinstance(obj, Styled):
            text = obj.plain
        elif isinstance(obj, str):
            text = obj
        else:
            return None
        return text if is_plain_safe(text, self.width) else None

    def print(self, *objects: Any, **options: Any) -> None:
        texts = [self._text(obj) for obj in objects]
        if options or len(objects) > 1 or None in texts:
            self.rich.print(*objects, **options)
            return
        sys.stdout.write((texts[0] if texts else "") + "\n")

    def print_lines(self, lines: list[str]) -> None:
        sys.stdout.write("".join(line + "\n" for line in lines))
