"""The uncertain inputs of the cost model, read from an uncertainty file (default
models/assumptions/uncertainty/published.json): each input's field, its distribution truncated to the
published interval, and the source of both. Used by `feasible --monte-carlo`
(`planner.questions.uncertainty`) and by the robust plans' scenarios
(`planner.questions.robust_scenarios`); a module of its own so that neither reaches the other through
the sweep.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from planner.questions.sweep.distributions import Distribution
from planner.questions.sweep.fields import check_field
from planner.schema.errors import InputError, Problem

UNCERTAINTY_FILE = ("assumptions", "uncertainty", "published.json")   # under the presets folder (models/)


def default_uncertainty() -> Path:
    """models/assumptions/uncertainty/published.json (a folder of its own: the *.json files of
    models/assumptions/ are the assumption profiles)."""
    from planner.presets_dir import models_dir
    return models_dir().joinpath(*UNCERTAINTY_FILE)


@dataclass(frozen=True)
class UncertainInput:
    """One uncertain field: its distribution (truncated to the published interval) and source."""

    field: str
    distribution: Distribution
    source: str

    def to_dict(self) -> dict[str, Any]:
        return {"field": self.field, "distribution": str(self.distribution), "source": self.source}


def load_uncertainty(path: str | Path | None = None) -> list[UncertainInput]:
    """The uncertain inputs of an assumptions file (default models/assumptions/uncertainty/published.json);
    InputError naming the entry on any problem."""
    path = Path(path) if path is not None else default_uncertainty()
    source = str(path)
    from planner.schema.strict import read_input_text
    try:
        data = json.loads(read_input_text(path))
    except ValueError as err:
        raise InputError([Problem("<file>", f"cannot read the uncertainty file: {err}")], source) from None
    entries = data.get("inputs") if isinstance(data, dict) else None
    if not isinstance(entries, list) or not entries:
        raise InputError([Problem("inputs", "must be a non-empty list of uncertain inputs")], source)
    out, problems = [], []
    for i, e in enumerate(entries):
        where = f"inputs[{i}]"
        if not isinstance(e, dict) or set(e) != {"field", "distribution", "interval", "source"}:
            problems.append(Problem(where, "must have exactly: field, distribution, interval, source"))
            continue
        bad = check_field(e["field"])
        if bad:
            problems.append(Problem(f"{where}.field", f"{bad.path}: {bad.message}"))
            continue
        try:
            dist = Distribution.parse(e["distribution"], f"{where}.distribution")
        except InputError as err:
            problems += err.problems
            continue
        interval = e["interval"]
        if interval is not None:
            if (not isinstance(interval, list) or len(interval) != 2
                    or not all(isinstance(x, (int, float)) for x in interval) or not interval[0] < interval[1]):
                problems.append(Problem(f"{where}.interval", "must be [low, high] with low < high, or null"))
                continue
            dist = Distribution(dist.kind, dist.args, (float(interval[0]), float(interval[1])))
        elif dist.kind != "choice":
            problems.append(Problem(f"{where}.interval", "a continuous distribution needs its published interval"))
            continue
        if not isinstance(e["source"], str) or not e["source"].strip():
            problems.append(Problem(f"{where}.source", "say where the distribution comes from"))
            continue
        out.append(UncertainInput(e["field"], dist, e["source"]))
    if problems:
        raise InputError(problems, source)
    return out
