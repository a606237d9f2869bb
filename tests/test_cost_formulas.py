"""Hand-checked values for each formula of docs/cost_model.md.

Every expected number is worked out in the test from the formula as printed in the
spec (or from exact powers of two that make it short), never copied from the code.
"""

import math

import numpy as np
import pytest

from planner.cost import chinchilla, memory, quality, timing
from planner.cost.assumptions import Assumptions, load_profile
from planner.cost.duration import max_run_days
from planner.cost.straggler import straggler_factor

REF = Assumptions()
V1 = load_profile("report-v1")


# -- section 3: straggler --------------------------------------------------------------

@pytest.mark.parametrize("strategy, expected", [
    ("synchronous", 1 + 0.05 * 10),      # log2 1024 = 10
    ("relay", 1 + 0.02 * 10),
    ("backup", 1 + 0.3 * 0.05 * 10),
    ("threshold", 1.0),
    ("none", 1.0),
])
def test_straggler_factor_at_1024(strategy, expected):
    assert float(straggler_factor(1024, REF.replace(straggler=strategy))) == pytest.approx(expected, rel=1e-15)


def test_straggler_factor_is_one_for_one_party_and_vectorises():
    f = straggler_factor(np.array([1, 2, 4]), REF.replace(straggler="synchronous"))
    assert f.tolist() == pytest.approx([1.0, 1.05, 1.10], rel=1e-15)


# -- section 5: efficiency ---------------------------------------------------------------

def test_alpha_at_round_sizes():
    assert float(quality.alpha(1e9, REF)) == pytest.approx(0.08)              # log10(1) = 0
    assert float(quality.alpha(100e9, REF)) == pytest.approx(0.08 / 1.4)      # 1 + 2/5
    assert float(quality.alpha(1e14, REF)) == pytest.approx(0.04)             # 1 + 5/5


def test_eta_sync_interval_formula_floor_and_threshold_divisor():
    assert float(quality.eta_sync_interval(100, 100e9, REF)) == pytest.approx(1 - 0.08 / 1.4 * 2)
    assert float(quality.eta_sync_interval(1e10, 1e9, REF)) == 0.4          # 1 - 0.08 * 10 < 0.4
    assert float(quality.eta_sync_interval(100, 1e9, REF, divisor=1.15)) == pytest.approx(0.84 / 1.15)
    assert float(quality.eta_sync_interval(1, 1e9, REF)) == 1.0


@pytest.mark.parametrize("ratio, scenario, ef, expected", [
    (0.5, "expected", True, 1.0),
    (16, "expected", True, 1.00),
    (100, "expected", True, 0.99),
    (500, "conservative", True, 0.80),
    (1000, "expected", True, 0.96),                       # clamped at the 500x row
    (40, "expected", True, (1.00 + 0.99) / 2),            # 40 = sqrt(16 * 100): log-midpoint
    (40, "conservative", True, (0.97 + 0.93) / 2),
    (40, "expected", False, (0.99 + 0.98) / 2),
    (2, "conservative", True, (1.00 + 0.99) / 2),         # 2 = sqrt(1 * 4)
])
def test_compression_quality_table_and_log_interpolation(ratio, scenario, ef, expected):
    a = REF.replace(scenario=scenario, error_feedback=ef)
    assert float(quality.compression_quality(ratio, a)) == pytest.approx(expected, rel=1e-12)


def test_report_v1_table_clamps_at_100x_and_ignores_error_feedback():
    assert float(quality.compression_quality(500, V1)) == pytest.approx(0.95)
    assert float(quality.compression_quality(16, V1.replace(error_feedback=False))) == pytest.approx(0.98)


def test_activation_quality_compounds_over_boundaries():
    # Ca = 4 expected: 0.995 per boundary; S = 3 -> 2 (S - 1) = 4 boundaries; 0.995^2 = 0.990025.
    assert float(quality.activation_quality(4, 3, REF)) == pytest.approx(0.990025 ** 2, rel=1e-14)
    assert float(quality.activation_quality(1, 8, REF)) == 1.0
    assert float(quality.activation_quality(10, 1, REF)) == 1.0
    assert float(quality.activation_quality(4, 2, V1)) == pytest.approx(0.995 ** 2)


def test_replica_loss_multiplier_h_scaling():
    beta0 = 1.0923 * 1e9 ** -0.2342
    # At H = 30 the H term is ln 30 / ln 30 = 1; at H = 900 = 30^2 it is 2.
    assert float(quality.replica_loss_multiplier(32, 1e9, 30, REF)) == pytest.approx(32 ** beta0, rel=1e-14)
    assert float(quality.replica_loss_multiplier(32, 1e9, 900, REF)) == pytest.approx(32 ** (2 * beta0), rel=1e-13)
    assert float(quality.replica_loss_multiplier(1, 1e9, 900, REF)) == 1.0
    assert float(quality.replica_loss_multiplier(32, 1e9, 1, REF)) == 1.0


def test_linear_v1_replica_factor():
    assert float(quality.linear_v1_replica_factor(1024, 240e9, V1)) == pytest.approx(1 - 0.005 * 2.4 / 240 * 10)
    assert float(quality.linear_v1_replica_factor(1024, 1e9, V1)) == pytest.approx(1 - 0.005 * 10)
    assert float(quality.linear_v1_replica_factor(2 ** 300, 1e9, V1)) == 0.0      # floored at 0
    assert float(quality.linear_v1_replica_factor(1, 1e9, V1)) == 1.0


# -- section 6: Chinchilla -----------------------------------------------------------------

def _bisect_equivalent_compute(loss, c_hi, a=REF):
    """An independent oracle: the reference's geometric bisection, written out here."""
    lo, hi = 1e10, c_hi
    for _ in range(200):
        mid = math.sqrt(lo * hi)
        n = math.sqrt(mid / (6 * 25.6))
        l_mid = a.chinchilla_e + a.chinchilla_a * n ** -a.chinchilla_alpha + a.chinchilla_b * (25.6 * n) ** -a.chinchilla_beta
        lo, hi = (mid, hi) if l_mid > loss else (lo, mid)
    return math.sqrt(lo * hi)


def test_chinchilla_loss_formula():
    n, d = 1e10, 2e11
    assert float(chinchilla.chinchilla_loss(n, d, REF)) == pytest.approx(
        1.8172 + 482.01 / n ** 0.3478 + 2085.43 / d ** 0.3658, rel=1e-15)


def test_chi_is_one_at_the_compute_optimal_point():
    c = 1e24
    n = math.sqrt(c / (6 * 25.6))
    assert float(chinchilla.chi(n, 25.6 * n, c, REF)) == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize("n, d, m", [(100e9, 20e12, 1.0), (144e9, 25e12, 1.0), (10e9, 1e12, 1.01), (240e9, 98e12, 1.002)])
def test_chi_matches_a_bisection_oracle(n, d, m):
    c = 6 * n * d
    loss = (1.8172 + 482.01 / n ** 0.3478 + 2085.43 / d ** 0.3658) * m
    expected = min(1.0, _bisect_equivalent_compute(loss, 10 * c) / c)
    assert float(chinchilla.chi(n, d, c, REF, m)) == pytest.approx(expected, rel=1e-12)


def test_chi_below_the_irreducible_loss_is_capped_at_one():
    # m < 1 pushes the target loss below E only for absurd inputs; any loss <= E has no C'.
    assert float(chinchilla.equivalent_optimal_compute(1.8, REF)) == math.inf
    assert float(chinchilla.chi(1e9, 1e9, 6e18, REF, 0.5)) == 1.0


# -- sections 2-4: memory and time ------------------------------------------------------------

def test_min_stages_lands_exactly_on_integers():
    assert int(memory.min_stages(144e9, 16, 2304e9)) == 1          # 144B x 16 B = 2304 GB exactly
    assert int(memory.min_stages(145e9, 16, 2304e9)) == 2
    assert int(memory.min_stages(480e9, 14, 1280e9)) == 6          # 6720 / 1280 = 5.25


def test_moe_state_per_node():
    # 600B total, 100B active, 72-way EP, 16 B/param: (100 + 500 / 72) x 16 GB.
    assert float(memory.moe_state_bytes_per_node(600e9, 100e9, 16, 72)) == pytest.approx((100e9 + 500e9 / 72) * 16)


def test_compute_time_of_the_1e25_baseline():
    # 6 x 144e9 x 131072 = 1.13246208e17 FLOP; 15.84e15 x 0.4 = 6.336e15 FLOP/s.
    assert float(timing.compute_time_s(144e9, 131072, 15.84e15, 0.4)) == pytest.approx(1.13246208e17 / 6.336e15)


def test_wan_and_regional_sync_times():
    v = float(timing.payload_bits(144e9, 16, 16))                  # 144e9 bits
    assert v == 144e9
    assert float(timing.wan_sync_base_s(v, 100e6, 50e6, 0.1)) == pytest.approx(1440 + 2880 + 0.1)
    assert float(timing.regional_sync_base_s(v, 1e9, 0.02)) == pytest.approx(288 + 0.02)
    assert float(timing.expert_all_to_all_time_s(0.1, 32)) == pytest.approx(6.4)


def test_pipeline_step_by_hand():
    # S = 2, M = 2, t_comp = 4 s -> c = 1 s; a = 1000 x 100 x 2 x 8 / 4 = 4e5 bits;
    # x = (2 a / M) / 1e9 = 4e-4 s; relay f(2) = 1.02; t_pp = 3 (1 + (4e-4 + 0.02) 1.02).
    act = float(timing.activation_bits(1000, 100, 2, 4))
    assert act == 4e5
    t_pp, ticks, c, x = timing.pipeline_parts_s(4.0, 2, 2, act, 1e9, 0.02, 1.02)
    assert float(ticks) == 3 and float(c) == 1.0 and float(x) == pytest.approx(4e-4)
    assert float(t_pp) == pytest.approx(3 * (1 + (4e-4 + 0.02) * 1.02))
    assert float(timing.bubble_fraction(2, 2)) == pytest.approx(1 / 3)


def test_outer_time_with_and_without_streaming():
    assert float(timing.outer_time_s(20.0, 25.0, True)) == 25.0
    assert float(timing.outer_time_s(20.0, 25.0, False)) == 45.0


def test_hidden_size_default():
    assert float(timing.hidden_size(1e10)) == pytest.approx(0.03 * 1e5)


# -- section 8 -------------------------------------------------------------------------------

def test_max_run_duration_from_growth_rates():
    ooms = math.log10(1.37) + math.log10(3.0) + math.log10(3.5)
    assert max_run_days(1.37, 3.0, 3.5) == pytest.approx(365 / (ooms * math.log(10)))
    assert max_run_days(1.37, 3.0, 3.5) == pytest.approx(136.9, abs=0.05)   # docs/cost_model.md section 8
