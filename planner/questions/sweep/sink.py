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
        from planner.present.output import check_writable
        self.path = check_writable(path)
        self.format = output_format(path)
        self.columns = columns
        self.journal = self.path.with_name(self.path.name + ".partial.jsonl") if self.format == "parquet" \
            else self.path
        self.fh = None

    def existing(self) -> list[dict[str, Any]]:
        """Rows already written (complete lines only; a partial last line is cut off)."""
        rows = []
        if self.format == "parquet" and self.path.exists():
            import pandas as pd
            frame = pd.read_parquet(self.path)
            rows += [{k: _py(v) for k, v in r.items()} for r in frame.to_dict("records")]
        if not self.journal.exists():
            return rows
        raw = self.journal.read_bytes()
        complete = raw[:raw.rfind(b"\n") + 1]
        if len(complete) != len(raw):
            with open(self.journal, "r+b") as fh:
                fh.truncate(len(complete))
        text = complete.decode("utf-8")
        if self.format == "csv":
            reader = csv.reader(io.StringIO(text))
            header = next(reader, None)
            if header is not None and header != self.columns:
                raise InputError([Problem("-o", f"{self.path} holds a sweep with other columns "
                                                f"({', '.join(header)}); choose another output")])
            rows += [dict(zip(self.columns, map(_uncell, r))) for r in reader if len(r) == len(self.columns)]
        else:
            for line in text.splitlines():
                if line.strip():
                    rows.append(json.loads(line))
        return rows

    def append(self, rows: Iterable[dict[str, Any]]) -> None:
        if self.fh is None:
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
        from planner.present.output import atomic_path, write_text
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
