"""`dtplan solve --write-model FILE`: the instance's model, written for a person to read.

The suffix picks the format: `.lp` and `.mps` (HiGHS's writer), `.cip` (SCIP's). With
several candidate model sizes (`search.params`) one file per size is written, the size
in its name (`model.70B.lp`). Building never solves.
"""

from __future__ import annotations

from pathlib import Path

from planner.evaluate import setting_from_instance, with_params
from planner.schema.instance import Instance
from planner.mip.formulation import build
from planner.solvers import backends
from planner.space import DecisionSpace

FORMATS = {".lp": "highs", ".mps": "highs", ".cip": "scip"}


class UnknownFormat(ValueError):
    pass


def write_model(instance: Instance, objective: str, path: Path) -> list[Path]:
    """Build and write the model(s); the paths written."""
    path = Path(path)
    writer = FORMATS.get(path.suffix.lower())
    if writer is None:
        raise UnknownFormat(f"unknown format {path.suffix!r}; use one of {', '.join(FORMATS)}")
    base = setting_from_instance(instance)
    sizes = instance.search.params or [None]
    written = []
    for params in sizes:
        setting = base if params is None else with_params(base, params)
        space = DecisionSpace.from_instance(instance, setting).for_objective(setting, objective)
        f = build(setting, space, objective)
        target = path if params is None else path.with_name(f"{path.stem}.{params / 1e9:g}B{path.suffix}")
        backends()[writer].write(f.model, str(target))
        written.append(target)
    return written
