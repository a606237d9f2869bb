"""`score.window_compute` (issue 27 item 5): its C_local is `run.local_compute`'s bit for bit under every
replica penalty (where eta_R does not read the tokens it is taken as C_thr g, the replica factor scored
once), and quality terms handed in (`terms`, as the branch and bound hands in those it bounded with) give
what it computes itself. Plans of every mode of random cases, at random n, H and R."""

from __future__ import annotations

import numpy as np
import pytest

from planner.cost import quality_fit, run
from planner.cost.modes import throughput
from planner.cost.score import window_compute
from tests.test_bnb import random_case
from tests.test_physics import _dtplan_case

PENALTIES = ("none", "linear_v1", quality_fit.FITTED, "chinchilla")


def _plans(setting, space, rng):
    """Up to 200 plans of each class group of the case, at random n, H and R of their ranges."""
    for mode in space.modes:
        for precision in space.precisions:
            c = space.classes(setting, mode, precision)
            if c is None:
                continue
            idx = rng.integers(0, c.size, 200)
            n = rng.integers(c.n_lo[idx], c.n_hi[idx] + 1)
            h = rng.integers(1, space.max_inner_steps + 1, idx.size)
            r = rng.integers(1, max(space.max_regional_rounds, c.member_count) + 1, idx.size)
            if mode != "hierarchical":
                r = np.minimum(r, c.member_count)
            yield c.plans(idx, n, h if mode != "pipeline_wan" else np.ones_like(h), r)


@pytest.mark.parametrize("penalty", PENALTIES)
@pytest.mark.parametrize("seed", (7103, 7104, 7105, 7106, 7107, 7111))
def test_c_local_is_local_compute_bit_for_bit(seed, penalty):
    setting, space, _ = (_dtplan_case if seed % 2 else random_case)(seed)
    setting = setting.replace(assumptions=setting.assumptions.replace(replica_penalty=penalty))
    rng = np.random.default_rng(seed)
    checked = 0
    for b in _plans(setting, space, rng):
        with np.errstate(all="ignore"):
            t = throughput(setting, b)
            eff = run.efficiency_without_replicas(setting, b, t)
            tokens = setting.training_window_s * (t["tokens_per_outer"] / t["outer_time_s"])
            expected = run.local_compute(setting, t, eff, tokens)[0]
            terms = run.quality_terms(setting, b, t, eff)
        out = window_compute(setting, b)
        given = window_compute(setting, b, t=t, eff=eff, terms=terms)
        assert out["c_local"].tobytes() == np.broadcast_to(expected, out["c_local"].shape).tobytes()
        for key in ("c_local", "c_quality"):
            assert given[key].tobytes() == out[key].tobytes()
        checked += b.size
    assert checked > 0


def test_a_broken_identity_is_seen():
    """Mutation: a replica factor counted twice in C_local (what the shortcut would give if g already
    held eta_R and eta_R were applied again) differs from `run.local_compute`: the comparison above can fail."""
    setting, space, _ = random_case(7104)
    setting = setting.replace(assumptions=setting.assumptions.replace(replica_penalty="linear_v1"))
    b = next(p for p in _plans(setting, space, np.random.default_rng(0)) if p.mode == "hierarchical")
    with np.errstate(all="ignore"):
        t = throughput(setting, b)
        eff = run.efficiency_without_replicas(setting, b, t)
        tokens = setting.training_window_s * (t["tokens_per_outer"] / t["outer_time_s"])
        c_local, eta_r, _ = run.local_compute(setting, t, eff, tokens)
    twice = window_compute(setting, b)["c_local"] * eta_r
    assert (eta_r < 1).any() and twice.tobytes() != c_local.tobytes()
