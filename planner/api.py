"""The Python API of dtplan: build or load an instance, then solve, evaluate, ask whether it is
feasible, compare hardware, or sweep its fields. docs/api.md shows it; scripts/example_api.py
runs it end to end.

    import planner
    inst = planner.load_instance("instances/miri/baseline-1e25.json",
                                 overrides={"network.wan.up_mbps": 30})
    result = planner.solve(inst)                 # SolveResult: .plan, .objective_value, .to_frame()
    table = planner.sweep(inst, grid={"fleet.nodes": [36, 72]}).to_frame()

Every function takes an instance as a validated `Instance`, raw JSON data (a dict) or a
file path. Bad input of any kind (a file, a dict, an override's path or value, a plan, an
option) raises `InputError`, whose `problems` carry the same JSON paths and messages as
the command line prints.

Results are dataclasses with `to_dict()` (plain JSON-able data) and `to_frame()` (a pandas
DataFrame): `SolveResult`, `Evaluation`, `Feasibility`, `ComparisonTable`, `SweepResult`,
`ReachResult`.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from planner.schema.errors import InputError, Problem

__all__ = ["InputError", "Problem", "load_instance", "instance_from_dict", "solve", "evaluate", "feasible",
           "compare", "sweep", "feasible_monte_carlo", "ComparisonTable"]

InstanceLike = Any      # Instance | Mapping | str | Path


def _raw(instance: InstanceLike) -> tuple[dict, str]:
    """Raw instance data and its source name for any accepted form of instance."""
    from planner.schema.instance import Instance
    if isinstance(instance, Instance):
        from planner.questions.compare import raw_instance
        return raw_instance(instance), instance.name or "<instance>"
    if isinstance(instance, Mapping):
        return copy.deepcopy(dict(instance)), "<dict>"
    if isinstance(instance, (str, Path)):
        from planner.schema.strict import read_json
        raw, problems = read_json(instance)
        if problems:
            raise InputError(problems, str(instance))
        if not isinstance(raw, dict):
            raise InputError([Problem("<file>", "an instance must be a JSON object")], str(instance))
        return raw, str(instance)
    raise InputError([Problem("<instance>", f"must be an Instance, a dict or a file path, got "
                                            f"{type(instance).__name__}")])


def _apply(raw: dict, overrides: Mapping[str, Any] | None) -> dict:
    if not overrides:
        return raw
    from planner.questions.sweep import check_field, with_fields
    problems = [p for p in (check_field(path) for path in overrides) if p]
    if problems:
        raise InputError(problems, "overrides")
    return with_fields(raw, dict(overrides))


def instance_from_dict(data: Mapping[str, Any], overrides: Mapping[str, Any] | None = None,
                       source: str = "<dict>"):
    """A validated `Instance` from raw JSON data, with `overrides` {dotted.path: value} applied
    first (e.g. {"network.wan.up_mbps": 30, "assumptions.constants.mfu": 0.35})."""
    from planner.schema.instance import parse_instance
    if not isinstance(data, Mapping):
        raise InputError([Problem("<root>", "an instance must be a JSON object (a dict)")], source)
    return parse_instance(_apply(copy.deepcopy(dict(data)), overrides), source)


def load_instance(path: str | Path, overrides: Mapping[str, Any] | None = None):
    """A validated `Instance` from a JSON file, with `overrides` {dotted.path: value} applied."""
    raw, source = _raw(Path(path))
    return instance_from_dict(raw, overrides, source)


def _instance(instance: InstanceLike, overrides: Mapping[str, Any] | None = None):
    from planner.schema.instance import Instance
    if isinstance(instance, Instance) and not overrides:
        return instance
    raw, source = _raw(instance)
    return instance_from_dict(raw, overrides, source)


def solve(instance: InstanceLike, objective: str | None = None, solver: str = "bnb",
          time_limit_s: float | None = None, overrides: Mapping[str, Any] | None = None):
    """The optimal plan (`planner.solve.SolveResult`) for `objective` (default: the instance's)."""
    from planner.solve import SOLVERS, SUPPORTED_OBJECTIVES, solve as run
    inst = _instance(instance, overrides)
    if objective is not None and objective not in SUPPORTED_OBJECTIVES:
        raise InputError([Problem("objective", f"must be one of {', '.join(SUPPORTED_OBJECTIVES)}, got {objective!r}")])
    if solver not in SOLVERS:
        raise InputError([Problem("solver", f"must be one of {', '.join(SOLVERS)}, got {solver!r}")])
    from planner.solvers import UnsupportedBySolver
    try:
        return run(inst, objective=objective, solver=solver, time_limit_s=time_limit_s)
    except UnsupportedBySolver as err:
        raise InputError([Problem("solver", str(err))]) from None


def evaluate(instance: InstanceLike, plan: Any, overrides: Mapping[str, Any] | None = None):
    """Score one fixed plan (a `Plan`, a dict or a plan file) -> `planner.evaluate.Evaluation`."""
    from planner.evaluate import evaluate as run
    from planner.evaluate import check_plan_against
    from planner.schema.plan import Plan, load_plan, parse_plan
    inst = _instance(instance, overrides)
    if isinstance(plan, (str, Path)):
        plan = load_plan(plan)
    elif isinstance(plan, Mapping):
        plan = parse_plan(dict(plan), "<plan>")
    elif not isinstance(plan, Plan):
        raise InputError([Problem("<plan>", f"must be a Plan, a dict or a file path, got {type(plan).__name__}")])
    problems = check_plan_against(inst, plan)
    if problems:
        raise InputError(problems, "<plan>")
    return run(inst, plan)


def feasible(instance: InstanceLike, overrides: Mapping[str, Any] | None = None,
             progress: Callable[[str], None] | None = None):
    """Can the target be reached, and if not, the smallest single fixes
    (`planner.questions.feasible.Feasibility`)."""
    from planner.questions.feasible import feasible as run
    raw, source = _raw(instance)
    raw = _apply(raw, overrides)
    from planner.schema.instance import parse_instance
    parse_instance(copy.deepcopy(raw), source)
    return run(raw, source, progress=progress)


@dataclass
class ComparisonTable:
    """`compare`'s answer: one `Comparison` per hardware preset, best first."""

    rows: list
    objective: str

    def to_dict(self) -> dict[str, Any]:
        return {"objective": self.objective, "rows": [r.to_dict() for r in self.rows]}

    def to_frame(self):
        import pandas as pd
        pools = any(r.basis is not None for r in self.rows)      # a fleet of pools: which row is which
        return pd.DataFrame([{"rank": r.rank, "hardware": r.hardware, **({"basis": r.basis} if pools else {}),
                              "status": r.result.status,
                              "objective_value": r.value, "time_to_target_days": r.days, "nodes": r.nodes,
                              **({"pool_nodes": r.result.plan.pool_nodes if r.result.plan else None} if pools else {}),
                              "cost_usd": r.cost_usd, "bottleneck": r.bottleneck, "reason": r.reason}
                             for r in self.rows])

    def __iter__(self):
        return iter(self.rows)

    def __len__(self) -> int:
        return len(self.rows)


def compare(instance: InstanceLike, hardware: Iterable[str] | str = "all", objective: str | None = None,
            overrides: Mapping[str, Any] | None = None) -> ComparisonTable:
    """The workload solved on each hardware preset, ranked (`planner.questions.compare`)."""
    from planner.questions.compare import compare as run
    raw, _ = _raw(instance)
    raw = _apply(raw, overrides)
    rows = run(raw, hardware, objective=objective)
    from planner.schema.instance import parse_instance
    return ComparisonTable(rows, str(objective or parse_instance(copy.deepcopy(raw)).objective))    # the key


def sweep(instance: InstanceLike, grid: Mapping[str, Iterable[Any]] | None = None,
          vary: Mapping[str, Any] | None = None, samples: int = 0, seed: int = 0, command: str = "solve",
          objective: str | None = None, solver: str = "bnb", time_limit_s: float | None = None,
          plan: Any = None, workers: int | None = None, scheduler: Any = None,
          output: str | Path | None = None, progress: Callable[[int, int], None] | None = None):
    """Answer `instance` at every point of a grid ({path: values}) and/or of `samples` Monte Carlo
    draws ({path: "uniform(10, 100)"} or `Distribution`s) -> `planner.questions.sweep.SweepResult`.

    `command`: "solve", "feasible" or "evaluate" (with `plan`). `workers`: local processes
    (default every core; 1 = in this process); `scheduler`: a Dask scheduler address or
    `distributed.Client`. `output`: .parquet/.csv/.jsonl, written as points finish and resumed."""
    from planner.questions.sweep import Distribution, SweepSpec, run_sweep
    raw, source = _raw(instance)
    dists = {}
    for path, d in (vary or {}).items():
        dists[path] = d if isinstance(d, Distribution) else Distribution.parse(str(d), f"vary[{path!r}]")
    if isinstance(plan, (str, Path)):
        from planner.schema.strict import read_json
        plan, problems = read_json(plan)
        if problems:
            raise InputError(problems, "<plan>")
    elif plan is not None and not isinstance(plan, Mapping):
        plan = plan.model_dump(exclude_none=True)
    spec = SweepSpec(raw, source, grid={k: list(v) for k, v in (grid or {}).items()}, vary=dists,
                     samples=samples, seed=seed, command=command, objective=objective, solver=solver,
                     time_limit_s=time_limit_s, plan=dict(plan) if plan is not None else None)
    return run_sweep(spec, workers=workers, scheduler=scheduler, output=output, progress=progress)


def feasible_monte_carlo(instance: InstanceLike, samples: int, seed: int = 0, uncertainty: str | Path | None = None,
                         workers: int | None = None, scheduler: Any = None, output: str | Path | None = None,
                         progress: Callable[[int, int], None] | None = None):
    """Probability that the target is reachable within the limits, and the distribution of days,
    over the uncertain inputs of `uncertainty` (default models/assumptions/uncertainty/published.json)
    -> `planner.questions.uncertainty.ReachResult`."""
    from planner.questions.uncertainty import reach
    raw, source = _raw(instance)
    return reach(raw, samples, seed=seed, uncertainty=uncertainty, source=source, workers=workers,
                 scheduler=scheduler, output=output, progress=progress)
