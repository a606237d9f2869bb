"""`planner.solvers.bnb._time_box` scores a box's two corners (n1, H2, R_fast) and (n1, H1, R_slow) as one
batch of 2k plans. The cost model works plan by plan except the shared stop of chinchilla's Newton iteration
(rounding-level at most), so every figure should be the same double as when each corner is scored as its own
batch (the computation before issue 27's eleventh round, written out below): checked bit for bit on every box
the exact searches of shipped instances bound."""

from pathlib import Path

import numpy as np
import pytest

from planner.schema.instance import load_instance
from planner.solve import solve
from planner.solvers import bnb

ROOT = Path(__file__).resolve().parents[1]


def unshared_time_box(s, c, box, mono):
    """The bound and corners of `_time_box` with each corner scored in a batch of its own."""
    r_fast, r_slow = bnb._fast_slow_r(c, box)
    t_hi, e_hi, at_e1_hi = bnb._time_and_efficiency(s, c, box["i"], box["n1"], box["h2"], r_fast)
    t_lo, e_lo, _ = bnb._time_and_efficiency(s, c, box["i"], box["n1"], box["h1"], r_slow)
    t_best, e_best = t_lo, e_lo
    if not mono.eta_h_falls:
        t_best, e_best, _ = bnb._time_and_efficiency(s, c, box["i"], box["n1"], box["h1"], r_slow,
                                                     eta_h_also_at=bnb._h_eff(c, box["h2"], r_fast))
    with np.errstate(divide="ignore", invalid="ignore"):
        lower = np.where(e_best > 0, np.where(np.isfinite(t_hi), t_hi * (box["n1"] / box["n2"]) * e_hi,
                                              at_e1_hi * (box["n1"] / box["n2"])) / e_best, 0.0)
    lower = np.where(np.isinf(t_best), np.inf, lower)
    return lower, [(box["i"], box["n1"], box["h2"], r_fast, t_hi), (box["i"], box["n1"], box["h1"], r_slow, t_lo)]


@pytest.mark.parametrize("name", ["solve-1e24-64xh100", "sites-seven-cities", "mixed-a100-h100", "miri/1e27-pp-group",
                                  "miri/1e27-hierarchical-a100"])
def test_joined_corners_equal_unshared_bit_for_bit(monkeypatch, name):
    joined = bnb._time_box
    seen = []

    def checked(s, c, box, mono):
        got, want = joined(s, c, box, mono), unshared_time_box(s, c, box, mono)
        assert np.array_equal(got[0], want[0], equal_nan=True)
        for corner, corner_want in zip(got[1], want[1], strict=True):
            for x, y in zip(corner, corner_want, strict=True):
                assert np.array_equal(np.broadcast_to(x, np.shape(y)), y, equal_nan=True)
        seen.append(box["i"].size)
        return got

    monkeypatch.setattr(bnb, "_time_box", checked)
    instance = load_instance(ROOT / "instances" / f"{name}.json")
    for objective in ("min_time", "min_cost"):
        solve(instance, objective)
    assert seen and sum(seen) > len(seen)       # boxes were bounded, several at a time
