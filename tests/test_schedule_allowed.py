"""`physics.schedule_allowed` without `dualpipe_allowed` where no plan's schedule is DualPipe: the value the
expression as written before gives, type, dtype, shape and elements, on random schedules (profile's and
given, with and without DualPipe), stage and micro-batch counts of every broadcast shape, and scalars."""

import numpy as np
import pytest

from planner.cost import physics
from planner.cost.assumptions import load_profile
from planner.cost.physics import PIPELINE_SCHEDULES


def _as_before(a, stages, micro_batches, schedule=0):
    code = physics.schedule_codes(a, schedule)
    return (code != physics.DUALPIPE) | physics.dualpipe_allowed(stages, micro_batches)


def _same(x, y) -> bool:
    return type(x) is type(y) and np.asarray(x).dtype == np.asarray(y).dtype and np.shape(x) == np.shape(y) \
        and np.array_equal(x, y)


@pytest.mark.parametrize("profile_schedule", PIPELINE_SCHEDULES)
def test_schedule_allowed_is_the_expression_as_before(profile_schedule):
    """500 random draws a profile schedule; mutations caught: the short cut taken where some plan's code is
    DualPipe (`.all()` for `.any()`), a 0-d array returned for three scalars."""
    a = load_profile("dtplan").replace(pipeline_schedule=profile_schedule)
    rng = np.random.default_rng(len(profile_schedule))
    shapes = [(), (1,), (4,), (3, 1), (1, 4), (3, 4)]
    checked = 0
    for _ in range(500):
        def draw(low, high):
            shape = shapes[rng.integers(len(shapes))]
            x = rng.integers(low, high, size=shape)
            return int(x) if shape == () and rng.integers(2) else x
        stages, micro = draw(1, 9), draw(1, 20)
        schedule = draw(0, 6) if rng.integers(2) else 0
        if rng.integers(2) and np.ndim(schedule):
            schedule = np.where(schedule == physics.DUALPIPE, 1, schedule)     # no DualPipe given
        try:
            want = _as_before(a, stages, micro, schedule)
        except ValueError:                  # shapes that do not broadcast: refused as before
            with pytest.raises(ValueError):
                physics.schedule_allowed(a, stages, micro, schedule)
            continue
        assert _same(physics.schedule_allowed(a, stages, micro, schedule), want)
        checked += 1
    assert checked >= 200
