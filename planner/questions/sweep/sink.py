"""Sweep output: rows appended as they arrive (JSON Lines, CSV, Parquet through a journal), read
back on resume, and the rows as a pandas DataFrame."""

from __future__ import annotations

import csv
import io
import json
import os
from pathlib import Path
from typing import Any, Iterable

import numpy as np

from planner.schema.errors import InputError, Problem

OUTPUT_SUFFIXES = (".parquet", ".csv", ".jsonl")


def output_format(path: str | Path) -> str:
    suffix = Path(path).suffix.lower()
    if suffix not in OUTPUT_SUFFIXES:
        raise InputError([Problem("-o", f"{path}: unknown output format {suffix or '(none)'!r}; "
                                        f"use {', '.join(OUTPUT_SUFFIXES)}")])
    return suffix[1:]


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value)


def _uncell(text: str) -> Any:
    if text == "":
        return None
    try:
        return json.loads(text)
    except ValueError:
        return text


class RowSink:
    """Rows appended to the output as they arrive; the rows a previous run left there, read back.

    JSON Lines and CSV are appended to in place (one line a row; a line cut by a kill is
    dropped on resume). Parquet is written whole at the end (atomically), its rows kept
    meanwhile in a JSON Lines journal `<FILE>.partial.jsonl` beside it.
    """

    def __init__(self, path: str | Path, columns: list[str]):
        from planner.files import check_writable
        self.path = check_writable(path)
        self.format = output_format(path)
        self.columns = columns
        self.journal = self.path.with_name(self.path.name + ".partial.jsonl") if self.format == "parquet" \
            else self.path
        self.fh = None
        self.keep_bytes: int | None = None     # complete lines of the existing output (set by existing())

    def existing(self) -> list[dict[str, Any]]:
        """Rows already written (complete lines only; a partial last line, left by a kill, is cut off
        when the first new row is appended). A file that is not this sweep's output (another format,
        other columns, lines that are not rows) is refused with InputError naming -o, before anything
        is written: the file is left as it was."""
        rows = []
        if self.format == "parquet" and self.path.exists():
            rows += self._parquet_rows()
        if not self.journal.exists():
            return rows
        raw = self.journal.read_bytes()
        complete = raw[:raw.rfind(b"\n") + 1]
        try:
            text = complete.decode("utf-8")
            tail = raw[len(complete):].decode("utf-8", errors="replace")
        except UnicodeDecodeError:
            raise self._not_ours(self.journal, "it is not UTF-8 text") from None
        if self.format == "csv":
            rows += self._csv_rows(text, tail)
        else:
            rows += self._jsonl_rows(text, tail)
        self.keep_bytes = len(complete)
        return rows

    def _not_ours(self, path: Path, why: str) -> InputError:
        return InputError([Problem("-o", f"{path} exists and is not the output of a {self.format} sweep ({why}); "
                                         "it is left as it is: choose another output or remove it")])

    def _parquet_rows(self) -> list[dict[str, Any]]:
        import pandas as pd
        try:
            frame = pd.read_parquet(self.path)
        except Exception as err:  # noqa: BLE001 - pyarrow raises ArrowInvalid, OSError, ... for a non-Parquet file
            raise self._not_ours(self.path, f"not Parquet: {type(err).__name__}") from None
        if list(frame.columns) != self.columns:
            raise self._other_columns(list(frame.columns))
        return [{k: _py(v) for k, v in r.items()} for r in frame.to_dict("records")]

    def _other_columns(self, header: list[str]) -> InputError:
        return InputError([Problem("-o", f"{self.path} holds a sweep with other columns "
                                         f"({', '.join(map(str, header))[:300]}); choose another output")])

    def _csv_rows(self, text: str, tail: str) -> list[dict[str, Any]]:
        if not text:                      # the header and the first rows are written and synced together
            if tail:
                raise self._not_ours(self.journal, "its first line is not this sweep's header")
            return []
        try:
            records = list(csv.reader(io.StringIO(text)))
        except csv.Error as err:
            raise self._not_ours(self.journal, f"not CSV: {err}") from None
        header = records[0] if records else []
        if header != self.columns:
            if header[:2] == ["index", "key"]:
                raise self._other_columns(header)
            raise self._not_ours(self.journal, "its first line is not this sweep's header")
        text_columns = {"key", "status", "error"}      # read back as the strings they are ('36804643e5373775')
        return [{c: (v or None) if c in text_columns else _uncell(v) for c, v in zip(self.columns, r)}
                for r in records[1:] if len(r) == len(self.columns)]

    def _jsonl_rows(self, text: str, tail: str) -> list[dict[str, Any]]:
        prefix = '{"index": '                # how every row begins (json.dumps of the columns, index first)
        if tail and not (tail.startswith(prefix) or (text and prefix.startswith(tail))):
            raise self._not_ours(self.journal, "its last line is not a row of this sweep")
        rows = []
        for n, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError:
                raise self._not_ours(self.journal, f"line {n} is not JSON") from None
            if not isinstance(row, dict) or "index" not in row or "key" not in row:
                raise self._not_ours(self.journal, f"line {n} is not a row (an object with index and key)")
            if list(row) != self.columns:
                raise self._other_columns(list(row))
            rows.append(row)
        return rows

    def append(self, rows: Iterable[dict[str, Any]]) -> None:
        if self.fh is None:
            if self.keep_bytes is not None and self.journal.exists() \
                    and self.journal.stat().st_size > self.keep_bytes:
                with open(self.journal, "r+b") as fh:        # the partial line a kill left
                    fh.truncate(self.keep_bytes)
            new = not self.journal.exists() or self.journal.stat().st_size == 0
            self.fh = open(self.journal, "a", encoding="utf-8", newline="")
            if new and self.format == "csv":
                csv.writer(self.fh).writerow(self.columns)
        if self.format == "csv":
            w = csv.writer(self.fh)
            for r in rows:
                w.writerow([_cell(r.get(c)) for c in self.columns])
        else:
            for r in rows:
                self.fh.write(json.dumps({c: r.get(c) for c in self.columns}, default=_json_default) + "\n")
        self.fh.flush()
        os.fsync(self.fh.fileno())

    def finish(self, rows: list[dict[str, Any]]) -> None:
        """Rewrite the output whole, sorted by point index (atomically); drop the journal."""
        from planner.files import atomic_path, write_text
        if self.fh is not None:
            self.fh.close()
            self.fh = None
        if self.format == "parquet":
            with atomic_path(self.path) as tmp:
                frame_of(rows, self.columns).to_parquet(tmp, index=False)
            if self.journal.exists():
                self.journal.unlink()
        elif self.format == "csv":
            buf = io.StringIO()
            w = csv.writer(buf)
            w.writerow(self.columns)
            for r in rows:
                w.writerow([_cell(r.get(c)) for c in self.columns])
            write_text(self.path, buf.getvalue())
        else:
            write_text(self.path, "".join(json.dumps({c: r.get(c) for c in self.columns}, default=_json_default)
                                          + "\n" for r in rows))

    def close(self) -> None:
        if self.fh is not None:
            self.fh.close()
            self.fh = None


def _json_default(value: Any) -> Any:
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (np.floating,)):
        return float(value)
    if isinstance(value, np.bool_):
        return bool(value)
    return str(value)


def _py(value: Any) -> Any:
    """A pandas/numpy cell back to plain Python (NaN -> None)."""
    if isinstance(value, np.ndarray):
        return [_py(v) for v in value.tolist()]
    if isinstance(value, dict):
        return {k: _py(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_py(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and value != value:
        return None
    return value


def frame_of(rows: list[dict[str, Any]], columns: list[str]):
    """The rows as a pandas DataFrame with the sweep's columns, in point order."""
    import pandas as pd
    frame = pd.DataFrame(rows, columns=columns)
    for c in frame.columns:          # mixed None/str/number object columns would not go to Parquet
        if frame[c].dtype == object:
            kinds = {type(v) for v in frame[c] if v is not None}
            if len(kinds) > 1 and not kinds <= {int, float}:
                frame[c] = frame[c].map(lambda v: None if v is None else str(v))
    return frame
