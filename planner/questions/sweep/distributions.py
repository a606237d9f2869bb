"""Monte Carlo draws of one field: the distributions `--vary FIELD=DIST(...)` accepts."""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from planner.questions.sweep.fields import _split_args, parse_value
from planner.schema.errors import InputError, Problem


DISTRIBUTIONS = {
    "normal": ("mean", "sd"),
    "lognormal": ("median", "sigma"),
    "uniform": ("low", "high"),
    "loguniform": ("low", "high"),
    "triangular": ("low", "mode", "high"),
    "choice": None,
}
DISTRIBUTION_HELP = ("normal(mean, sd); lognormal(median, sigma): exp(N(ln median, sigma)); uniform(low, high); "
                     "loguniform(low, high): exp(U(ln low, ln high)); triangular(low, mode, high); "
                     "choice(a, b, ...): one of the values, equally likely")


@dataclass(frozen=True)
class Distribution:
    """A distribution of one field's value (see DISTRIBUTION_HELP), optionally truncated to
    [low, high] by redrawing (`bounds`: a published interval the draws must stay inside)."""

    kind: str
    args: tuple
    bounds: tuple[float, float] | None = None

    @classmethod
    def parse(cls, text: str, where: str = "--vary") -> "Distribution":
        m = re.fullmatch(r"\s*([a-z]+)\s*\((.*)\)\s*", text)
        if not m or m.group(1) not in DISTRIBUTIONS:
            raise InputError([Problem(where, f"must be DIST(...) with DIST one of {', '.join(DISTRIBUTIONS)}, "
                                             f"got {text!r}")])
        kind = m.group(1)
        args = tuple(parse_value(a) for a in _split_args(m.group(2)))
        dist = cls(kind, args)
        problem = dist.problem()
        if problem:
            raise InputError([Problem(where, f"{text.strip()}: {problem}")])
        return dist

    def problem(self) -> str | None:
        names = DISTRIBUTIONS[self.kind]
        if names is None:
            return None if self.args else "give at least one value"
        if len(self.args) != len(names):
            return f"takes {len(names)} numbers ({', '.join(names)}), got {len(self.args)}"
        if not all(isinstance(a, (int, float)) and not isinstance(a, bool) and math.isfinite(a) for a in self.args):
            return f"takes numbers ({', '.join(names)})"
        a = [float(x) for x in self.args]
        if self.kind in ("normal", "lognormal") and a[1] < 0:
            return f"{names[1]} must be >= 0"
        if self.kind == "lognormal" and a[0] <= 0:
            return "median must be > 0"
        if self.kind in ("uniform", "loguniform") and not a[0] <= a[1]:
            return "low must be <= high"
        if self.kind == "loguniform" and a[0] <= 0:
            return "low must be > 0"
        if self.kind == "triangular" and not (a[0] <= a[1] <= a[2] and a[0] < a[2]):
            return "needs low <= mode <= high and low < high"
        return None

    def support(self) -> list[Any]:
        """Values that bound the draws (for checking them against the schema before sampling)."""
        if self.kind == "choice":
            return list(self.args)
        if self.bounds is not None:
            return list(self.bounds)
        if self.kind in ("uniform", "loguniform"):
            return [self.args[0], self.args[1]]
        if self.kind == "triangular":
            return [self.args[0], self.args[2]]
        if self.kind == "lognormal":
            return [self.args[0]]
        return [self.args[0]]

    def draw(self, rng: np.random.Generator) -> Any:
        """One value; redrawn until inside `bounds` (at most 10,000 tries, then clipped)."""
        for _ in range(10_000):
            x = self._draw(rng)
            if self.bounds is None or self.kind == "choice" or self.bounds[0] <= x <= self.bounds[1]:
                return x
        return min(max(x, self.bounds[0]), self.bounds[1])

    def _draw(self, rng: np.random.Generator) -> Any:
        a = self.args
        if self.kind == "choice":
            return a[int(rng.integers(len(a)))]
        if self.kind == "normal":
            return float(rng.normal(a[0], a[1]))
        if self.kind == "lognormal":
            return float(math.exp(rng.normal(math.log(a[0]), a[1])))
        if self.kind == "uniform":
            return float(rng.uniform(a[0], a[1]))
        if self.kind == "loguniform":
            return float(math.exp(rng.uniform(math.log(a[0]), math.log(a[1]))))
        return float(rng.triangular(a[0], a[1], a[2]))

    def __str__(self) -> str:
        text = f"{self.kind}({', '.join(json.dumps(x) for x in self.args)})"
        return text + (f" in [{self.bounds[0]:g}, {self.bounds[1]:g}]" if self.bounds else "")


def parse_vary(spec: str) -> tuple[str, Distribution]:
    """'FIELD=DIST(...)' -> (FIELD, Distribution)."""
    path, sep, dist = spec.partition("=")
    if not sep or not path.strip():
        raise InputError([Problem("--vary", f"must be FIELD=DIST(...), got {spec!r}")])
    return path.strip(), Distribution.parse(dist, f"--vary {path.strip()}")
