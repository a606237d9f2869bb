"""Input problems: what is wrong, and where, in a JSON file given by the user.

A `Problem` names one mistake by its JSON path (`fleet.nodes`, `search.compression[3]`,
`<file>` for the file as a whole). `InputError` carries every problem found in one
file, so a user fixes them all in one go instead of one per run.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Problem:
    """One mistake in an input file: a dotted JSON path and a plain-English message."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


class InputError(Exception):
    """Bad input: every problem found in one file (or dict), reported together."""

    def __init__(self, problems: list[Problem], source: str | None = None):
        self.problems = list(problems)
        self.source = source
        super().__init__(str(self))

    def __str__(self) -> str:
        prefix = f"{self.source}: " if self.source else ""
        return "\n".join(f"{prefix}{p}" for p in self.problems)
