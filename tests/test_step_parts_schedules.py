"""Two small exact changes on the path that scores one plan (issue 27 item 3, a sweep's answer):

- `modes._step_parts` reads each plan's schedule code once (`physics.schedule_codes`) for both its GPipe test
  (the bubble and its fraction) and its interleaved test (the chunk count shown): the parts are checked here
  against the formulas of docs/cost_model.md section 4.C worked by hand, plan by plan, for every schedule
  code, the code 0 under each profile schedule, with a chunk count other than 1;
- `assumptions.load_profile` skips `apply_overrides` for a profile without constants: every profile loads as
  the defaults with its constants applied, field for field.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from planner.cost import assumptions as assumptions_module
from planner.cost import modes
from planner.cost.assumptions import PIPELINE_SCHEDULES, Assumptions, apply_overrides, load_profile, profile_names
from planner.cost.setting import PlanBatch
from tests.test_bnb import random_case


@pytest.mark.parametrize("profile_schedule", PIPELINE_SCHEDULES)
def test_step_parts_follow_each_plans_schedule(profile_schedule):
    setting, _, _ = random_case(7)
    setting = setting.replace(assumptions=setting.assumptions.replace(pipeline_schedule=profile_schedule))
    rng = np.random.default_rng(11)
    size = 240
    schedule = rng.integers(0, 6, size)                  # 0: the profile's schedule
    stages = rng.integers(2, 9, size).astype(float)
    m = rng.integers(1, 17, size).astype(float)
    c = rng.uniform(0.01, 1.0, size)
    ticks = m + stages - 1.0 + rng.integers(0, 3, size)  # any ticks: the non-GPipe bubble reads them
    k, x, f_pp, act, share = (rng.uniform(0.5, 2.0, size) for _ in range(5))
    chunks = np.full(size, 4.0)
    b = PlanBatch.of("pp_group", "fp16", nodes=2 * stages, stages=stages, micro_batches=m, schedule=schedule)
    parts = modes._step_parts(setting, b, stages, m, c, ticks, k, x, 0.01, f_pp, act, share, chunks)
    code = np.where(schedule == 0, PIPELINE_SCHEDULES.index(profile_schedule) + 1, schedule)
    for i in range(size):
        gpipe, interleaved = code[i] == 1, code[i] == 3
        bubble = (stages[i] - 1.0) * c[i] if gpipe else (ticks[i] - m[i]) * c[i]
        fraction = (stages[i] - 1.0) / (m[i] + stages[i] - 1.0) if gpipe else (ticks[i] - m[i]) / ticks[i]
        assert parts["step_bubble_s"][i] == bubble, i
        assert parts["bubble_fraction"][i] == fraction, i
        assert parts["pipeline_chunks"][i] == (4.0 if interleaved else 1.0), i
        assert parts["step_compute_s"][i] == m[i] * c[i], i


@pytest.mark.parametrize("name", profile_names())
def test_every_profile_loads_as_its_constants_applied(name):
    constants = json.loads((assumptions_module.PROFILES_DIR / f"{name}.json").read_text()).get("constants", {})
    want = apply_overrides(Assumptions(profile=name), constants)
    got = load_profile(name)
    assert got == want
    assert repr(got) == repr(want)


def test_a_profile_without_constants_is_the_defaults():
    names = [n for n in profile_names()
             if not json.loads((assumptions_module.PROFILES_DIR / f"{n}.json").read_text())["constants"]]
    assert names, "no profile without constants: the skipped step is not exercised"
    for name in names:
        assert load_profile(name) == Assumptions(profile=name)


def _state(obj) -> list:
    return list(vars(obj).items())


@pytest.mark.parametrize("name", profile_names())
def test_replace_is_dataclasses_replace(name):
    """`Assumptions.replace` (`_value_methods`' `_replaced`) against `dataclasses.replace` (which builds the
    value through __init__): the same fields, values and order, on random changes of every profile's fields
    to other profiles' values, from an instance whose quality points were cached (a fresh value has none)."""
    import dataclasses

    profiles = [load_profile(n) for n in profile_names()]
    base = load_profile(name)
    base.quality_points("compression_quality_ef")
    names = [f.name for f in dataclasses.fields(Assumptions)]
    rng = np.random.default_rng(len(name))
    for _ in range(40):
        chosen = rng.choice(names, size=int(rng.integers(0, 8)), replace=False)
        changes = {str(f): getattr(profiles[int(rng.integers(len(profiles)))], str(f)) for f in chosen}
        got, want = base.replace(**changes), dataclasses.replace(base, **changes)
        assert type(got) is Assumptions
        assert _state(got) == _state(want)
        assert "_quality_points" not in vars(got)
        assert got == want and repr(got) == repr(want)     # (hash: the tables are dicts, unhashable)
    with pytest.raises(TypeError, match="unexpected keyword argument 'nope'"):
        base.replace(mfu=0.3, nope=1)
