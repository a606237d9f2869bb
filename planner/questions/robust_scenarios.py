"""The scenario set of a robust question (docs/robust.md; the search over it is `planner.robust`).

A *scenario* is the instance with some assumption fields overridden: one `Setting` (one
`Assumptions` object) per scenario. The set (`scenarios`) is the instance as given plus, one input
at a time, each value an entry of the uncertainty files (models/assumptions/uncertainty/*.json,
read generically: every entry, whatever field it names) can take at the ends of its published
interval, or each of its choices (the optimistic / expected / conservative quality scenario is
such an entry); duplicates of the instance as given are dropped (`scenario_settings`).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from planner.cost.score import score
from planner.cost.setting import PlanBatch, Setting
from planner.evaluate import setting_from_instance, with_params
from planner.fleet.pools import PoolSetting, pool_settings
from planner.questions.sweep.fields import is_integer_field, with_fields
from planner.questions.uncertainty_inputs import default_uncertainty, load_uncertainty
from planner.robust import ROBUST_OPTION, recording
from planner.schema.errors import InputError, Problem
from planner.schema.instance import parse_instance
from planner.space import MODE_ORDER


@dataclass(frozen=True)
class Scenario:
    """One scenario: its label, the fields it overrides and their values."""

    label: str
    overrides: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {"label": self.label, "overrides": self.overrides}


def uncertainty_files(paths: list[str | Path] | None = None) -> list[Path]:
    """The uncertainty files read: `paths`, else every *.json of models/assumptions/uncertainty/."""
    if paths:
        return [Path(p) for p in paths]
    return sorted(default_uncertainty().parent.glob("*.json"))


def interval_ends(entry) -> list[Any]:
    """The values one uncertainty entry takes in the scenario set: each choice of a `choice`
    distribution, else the two ends of its published interval."""
    d = entry.distribution
    if d.kind == "choice":
        return list(d.args)
    low, high = d.bounds
    if is_integer_field(entry.field):
        return [math.ceil(low), math.floor(high)]
    return [low, high]


def scenarios(raw: dict, paths: list[str | Path] | None = None) -> list[tuple[Scenario, dict]]:
    """(scenario, raw instance data) of the scenario set (module docstring): the instance as given
    first, then each entry of each uncertainty file at each of its values, one at a time.
    InputError names the entry whose value the instance rejects."""
    out = [(Scenario("as given", {}), raw)]
    for path in uncertainty_files(paths):
        for entry in load_uncertainty(path):
            values = interval_ends(entry)
            for value, end in zip(values, ("low", "high") if entry.distribution.kind != "choice" else values):
                label = f"{entry.field.removeprefix('assumptions.')} = {value:g}" if isinstance(value, float) \
                    else f"{entry.field.removeprefix('assumptions.')} = {value}"
                if entry.distribution.kind != "choice":
                    label += f" ({end})"
                out.append((Scenario(label, {entry.field: value}), with_fields(raw, {entry.field: value})))
    return out


def scenario_settings(raw: dict, params: float | None = None, paths: list[str | Path] | None = None,
                      source: str = "<instance>", scored: tuple | None = None) -> tuple[list[Scenario], list[Setting]]:
    """The scenarios and their Settings (with `params`: that model size), duplicates of an
    earlier scenario's Setting dropped (e.g. the choice equal to the instance's own value), and
    so are scenarios that change only constants the evaluator never reads (`_unused`). `scored`:
    (modes, precisions) of every plan the caller will score (its decision space), else all."""
    kept: list[Scenario] = []
    settings: list[Setting] = []
    for scenario, instance in _parsed(raw, paths, source):
        s = setting_from_instance(instance)
        s = s if params is None else with_params(s, params)
        if any(_same_setting(s, t) for t in settings):
            continue
        if settings and _unused(s, settings[0], scored):
            continue
        kept.append(scenario)
        settings.append(s)
    return kept, settings


def scenario_pools(raw: dict, paths: list[str | Path] | None = None, source: str = "<instance>",
                   scored: tuple | None = None) -> tuple[list[Scenario], list[list[PoolSetting]]]:
    """`scenario_settings` for a fleet of pools: each scenario's pools (`planner.fleet.pools.pool_settings`),
    a scenario dropped when every pool's Setting equals that of an earlier scenario, or differs from
    the nominal one only in constants the evaluator never reads (`_unused`, pool by pool)."""
    kept: list[Scenario] = []
    out: list[list[PoolSetting]] = []
    for scenario, instance in _parsed(raw, paths, source):
        pools = pool_settings(instance)
        if any(all(_same_setting(p.setting, q.setting) for p, q in zip(pools, other)) for other in out):
            continue
        if out and all(_unused(p.setting, q.setting, scored) for p, q in zip(pools, out[0])):
            continue
        kept.append(scenario)
        out.append(pools)
    return kept, out


def _parsed(raw: dict, paths, source: str):
    """(scenario, parsed instance) of each scenario; InputError names the scenario an instance fails in."""
    for scenario, data in scenarios(raw, paths):
        try:
            yield scenario, parse_instance(data, source)
        except InputError as err:
            raise InputError([Problem(f"{ROBUST_OPTION} scenario {scenario.label}", f"{p.path}: {p.message}")
                              for p in err.problems], source) from None


def _unused(s: Setting, nominal: Setting, scored: tuple | None = None) -> bool:
    """Whether `s` differs from the instance as given only in assumption constants the evaluator never
    reads for it (e.g. the fitted quality constants under a profile whose replica penalty is not
    'fitted'): the same model, whatever the plan. The reads are recorded while `score` scores one
    synchronised plan of every mode and precision of `scored` (`planner.robust.recording`); the cost model branches
    on the profile's switches and on the mode and precision, not on other plan values, in choosing
    which constants to read. Only plans of those modes and precisions are scored, so a constant
    none of them reads changes no figure."""
    if s.replace(assumptions=nominal.assumptions) != nominal:
        return False
    changed = {f.name for f in dataclasses.fields(nominal.assumptions)
               if getattr(s.assumptions, f.name) != getattr(nominal.assumptions, f.name)}
    return not (changed & _scoring_reads(nominal, scored))


def _scoring_reads(nominal: Setting, scored: tuple | None = None) -> set[str]:
    held = _READS.get(id(nominal))
    if held is not None and held[0] is nominal and held[2] == scored:
        return held[1]
    copy, read = recording(nominal.assumptions)
    probe = nominal.replace(assumptions=copy)
    modes, precisions = scored or (MODE_ORDER, tuple(nominal.peak_flops))
    for mode in modes:
        for precision in (p for p in precisions if p in nominal.peak_flops):    # a pool may lack one
            b = PlanBatch.of(mode, precision, nodes=np.array([2, 8]), inner_steps=np.array([1, 30]),
                             compression=np.array([1.0, 16.0]), streaming=np.array([True, False]), stages=2,
                             group_size=2, regional_rounds=np.array([1, 2]), micro_batches=4)
            with np.errstate(all="ignore"):
                score(probe, b)
    if len(_READS) >= MAX_READS_HELD:
        _READS.clear()
    _READS[id(nominal)] = (nominal, read, scored)
    return read


_READS: dict[int, tuple[Setting, set[str], tuple | None]] = {}
MAX_READS_HELD = 64       # nominal Settings whose reads are held: one per pool of a fleet (at most 64 pools)


def _same_setting(a: Setting, b: Setting) -> bool:
    try:
        return bool(a == b)
    except (TypeError, ValueError):      # fields that do not compare (arrays): keep both
        return False
