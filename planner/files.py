"""Writing files a user asked for (reports, plots, models, sweep results) safely.

Every output goes to a temporary file in the destination's folder and is renamed over
the destination only once it is complete, so a failed or interrupted write (a full
disk, a crash, Ctrl-C) never leaves a truncated file and never replaces an existing
one with a partial one. `check_writable` is called before any solving, so that a bad
path fails in milliseconds with exit 2 rather than after the work.

Layer: schema, the lowest (docs/architecture.md): it imports nothing of the planner, so that every
layer that writes a file (the MIP export, the sweep's rows, the reports) may use it.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from typing import Iterator


class OutputPathError(ValueError):
    """A path an output cannot be written to (missing folder, a directory, no permission)."""


def check_writable(path: str | Path) -> Path:
    """`path` as a Path if a file can be created or replaced there; else OutputPathError saying why."""
    path = Path(path)
    if path.exists() and path.is_dir():
        raise OutputPathError(f"{path} is a directory, not a file")
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.exists():
        raise OutputPathError(f"folder {folder} does not exist")
    if not folder.is_dir():
        raise OutputPathError(f"{folder} is not a folder")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise OutputPathError(f"folder {folder} is not writable")
    if path.exists() and not os.access(path, os.W_OK):
        raise OutputPathError(f"{path} is not writable")
    return path


@contextlib.contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """A temporary path beside `path` to write to; renamed to `path` when the block ends without
    an exception (removed otherwise). For writers that insist on a file name (solvers, matplotlib):
    the temporary name keeps the destination's suffix."""
    path = check_writable(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=path.suffix or ".tmp", dir=path.parent or ".")
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        if not tmp_path.exists():
            raise OSError(f"nothing was written to {path}")
        with open(tmp_path, "rb+") as fh:      # make sure the bytes are on disk before the rename
            os.fsync(fh.fileno())
        os.chmod(tmp_path, 0o644)
        os.replace(tmp_path, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp_path.unlink()


def write_bytes(path: str | Path, data: bytes) -> Path:
    """Write `data` to `path` atomically (see the module docstring); returns the path."""
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
    return Path(path)


def write_text(path: str | Path, text: str) -> Path:
    """Write `text` (UTF-8) to `path` atomically."""
    return write_bytes(path, text.encode("utf-8"))
