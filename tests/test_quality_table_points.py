"""The quality tables' points (log10 ratios, qualities), built once per Assumptions (issue 27 item 1):
every answer equal to a fresh computation bit for bit, in every profile and scenario, and no table
answers for another (a replaced table, a table edited in place outside an Assumptions, signed zeros)."""

import math

import numpy as np
import pytest

from planner.cost import quality
from planner.cost.assumptions import ACTIVATION_QUALITY, COMPRESSION_QUALITY_EF, SCENARIOS, load_profile, profile_names


def _fresh(table, ratio, scenario_index):
    """The interpolation computed from nothing kept: the same numpy steps, the table's points built here."""
    keys = sorted(table)
    log_keys = np.log10(np.asarray(keys, dtype=float))
    values = np.asarray([table[k][scenario_index] for k in keys], dtype=float)
    r = np.asarray(ratio, dtype=float)
    return np.where(r <= 1.0, 1.0, np.interp(np.log10(np.maximum(r, 1.0)), log_keys, values))


def _bits(x):
    return np.asarray(x, dtype=float).view(np.uint64)


RATIOS = np.concatenate([[0.5, 1.0, 1.5, 2.0, 1e6], np.exp(np.random.default_rng(1).uniform(0, math.log(5e3), 500))])


@pytest.mark.parametrize("profile", profile_names())
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_the_assumptions_points_give_the_fresh_answer_bit_for_bit(profile, scenario):
    for error_feedback in (True, False):
        a = load_profile(profile).replace(scenario=scenario, error_feedback=error_feedback)
        table = a.compression_quality_ef if error_feedback else a.compression_quality_no_ef
        for _ in range(2):                                                # built, then kept
            got = quality.compression_quality(RATIOS, a)
            assert np.array_equal(_bits(got), _bits(_fresh(table, RATIOS, a.scenario_index)))
        for r in RATIOS[:20]:                                             # single numbers too
            assert _bits(quality.compression_quality(float(r), a)) == _bits(_fresh(table, r, a.scenario_index))
        per_boundary = _fresh(a.activation_quality, RATIOS, a.scenario_index)
        got = quality.activation_quality(RATIOS, 3, a)
        assert np.array_equal(_bits(got), _bits(np.where(RATIOS <= 1.0, 1.0, per_boundary ** 4.0)))


def test_a_replaced_table_or_scenario_is_not_answered_by_the_old_points():
    a = load_profile("reference")
    assert quality.compression_quality(100.0, a) == _fresh(a.compression_quality_ef, 100.0, a.scenario_index)
    table = {1: (1.0, 1.0, 1.0), 10: (0.9, 0.8, 0.7), 100: (0.5, 0.4, 0.3)}
    b = a.replace(compression_quality_ef=table)
    assert quality.compression_quality(100.0, b) == 0.4                          # expected scenario, by hand
    assert quality.compression_quality(100.0, b.replace(scenario="conservative")) == 0.3
    assert quality.compression_quality(100.0, a) == _fresh(a.compression_quality_ef, 100.0, a.scenario_index)


def test_a_table_edited_in_place_is_not_answered_by_its_old_points():
    table = {1: (1.0, 1.0, 1.0), 10: (0.9, 0.8, 0.7), 100: (0.5, 0.4, 0.3)}
    assert quality.interpolate_quality(table, 10.0, 0) == 0.9
    table[10] = (0.6, 0.8, 0.7)
    assert quality.interpolate_quality(table, 10.0, 0) == 0.6
    # between the points: linear in log10(ratio), by hand: halfway from 10 to 100 in log10 is 10**1.5
    assert math.isclose(quality.interpolate_quality(table, 10**1.5, 0), (0.6 + 0.5) / 2, rel_tol=1e-12)


def test_signed_zero_qualities_are_not_conflated():
    """0.0 == -0.0 in python, but the two are different doubles: each answers with its own sign."""
    plus = {1: (1.0,), 10: (0.0,)}
    minus = {1: (1.0,), 10: (-0.0,)}
    assert math.copysign(1, quality.interpolate_quality(plus, 10.0, 0)) == 1.0
    assert math.copysign(1, quality.interpolate_quality(minus, 10.0, 0)) == -1.0
    assert math.copysign(1, quality.interpolate_quality(plus, 10.0, 0)) == 1.0


def test_unhashable_table_entries_still_answer():
    table = {1: [1.0, 1.0, 1.0], 10: [0.9, 0.8, 0.7]}
    assert quality.interpolate_quality(table, 10.0, 1) == 0.8
    assert quality.interpolate_quality(table, 1.0, 1) == 1.0


def test_the_built_in_tables_interpolate_as_by_hand():
    """Between two printed points of the error-feedback table: linear in log10 of the ratio."""
    keys = sorted(COMPRESSION_QUALITY_EF)
    lo, hi = keys[1], keys[2]
    mid = math.sqrt(lo * hi)
    want = (COMPRESSION_QUALITY_EF[lo][1] + COMPRESSION_QUALITY_EF[hi][1]) / 2
    assert math.isclose(quality.interpolate_quality(dict(COMPRESSION_QUALITY_EF), mid, 1), want, rel_tol=1e-12)
    assert quality.interpolate_quality(dict(ACTIVATION_QUALITY), 1.0, 1) == 1.0
