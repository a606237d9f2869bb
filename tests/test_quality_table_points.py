"""quality.interpolate_quality's table points, kept once per table contents (issue 27 item 1):
answers equal to a fresh computation bit for bit, and no table answers for another."""

import math

import numpy as np

from planner.cost import quality
from planner.cost.assumptions import ACTIVATION_QUALITY, COMPRESSION_QUALITY_EF


def _fresh(table, ratio, scenario_index):
    """The interpolation computed from nothing kept: the same numpy steps, the table's points built here."""
    keys = sorted(table)
    log_keys = np.log10(np.asarray(keys, dtype=float))
    values = np.asarray([table[k][scenario_index] for k in keys], dtype=float)
    r = np.asarray(ratio, dtype=float)
    return np.where(r <= 1.0, 1.0, np.interp(np.log10(np.maximum(r, 1.0)), log_keys, values))


def _bits(x):
    return np.asarray(x, dtype=float).view(np.uint64)


def test_kept_points_give_the_fresh_answer_bit_for_bit():
    rng = np.random.default_rng(1)
    ratios = np.concatenate([[0.5, 1.0, 1.5, 2.0, 1e6], np.exp(rng.uniform(0, math.log(5e3), 500))])
    for table in (dict(COMPRESSION_QUALITY_EF), dict(ACTIVATION_QUALITY)):
        for scenario in range(3):
            quality._POINTS.clear()
            first = quality.interpolate_quality(table, ratios, scenario)
            again = quality.interpolate_quality(table, ratios, scenario)   # from the kept points
            assert (tuple(table.items()), scenario) in quality._POINTS
            assert np.array_equal(_bits(first), _bits(_fresh(table, ratios, scenario)))
            assert np.array_equal(_bits(again), _bits(first))
            for r in ratios[:20]:                                          # single numbers too
                assert _bits(quality.interpolate_quality(table, float(r), scenario)) == _bits(_fresh(table, r, scenario))


def test_a_table_edited_in_place_is_not_answered_by_its_old_points():
    table = {1: (1.0, 1.0, 1.0), 10: (0.9, 0.8, 0.7), 100: (0.5, 0.4, 0.3)}
    assert quality.interpolate_quality(table, 10.0, 0) == 0.9
    table[10] = (0.6, 0.8, 0.7)
    assert quality.interpolate_quality(table, 10.0, 0) == 0.6
    # between the points: linear in log10(ratio), by hand: halfway from 10 to 100 in log10 is 10**1.5
    assert math.isclose(quality.interpolate_quality(table, 10**1.5, 0), (0.6 + 0.5) / 2, rel_tol=1e-12)


def test_signed_zero_qualities_are_not_conflated():
    """0.0 == -0.0 in python, but the two are different doubles: a table with either is not kept,
    so each answers with its own sign."""
    plus = {1: (1.0,), 10: (0.0,)}
    minus = {1: (1.0,), 10: (-0.0,)}
    assert math.copysign(1, quality.interpolate_quality(plus, 10.0, 0)) == 1.0
    assert math.copysign(1, quality.interpolate_quality(minus, 10.0, 0)) == -1.0
    assert math.copysign(1, quality.interpolate_quality(plus, 10.0, 0)) == 1.0


def test_unhashable_table_entries_still_answer():
    table = {1: [1.0, 1.0, 1.0], 10: [0.9, 0.8, 0.7]}
    assert quality.interpolate_quality(table, 10.0, 1) == 0.8
    assert quality.interpolate_quality(table, 1.0, 1) == 1.0
