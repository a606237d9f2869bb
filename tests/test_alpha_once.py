"""alpha(P) worked once in `run.efficiency_without_replicas` (for eta_H and the alpha shown), and the sweep's
answer scored with its rows' eta_C and alpha(P): the efficiencies are those worked as before, bit for bit."""

import numpy as np
import pytest

from planner.cost import modes, quality, run
from planner.cost.assumptions import load_profile
from planner.cost.setting import PlanBatch
from planner.cost.straggler import eta_h_divisor
from planner.reference import sweep_search
from tests.test_reference_sweep_search import _rows


def _bits(d):
    return {k: (np.asarray(v).dtype.str, np.shape(v), np.asarray(v).tobytes()) for k, v in d.items()}


def _as_before(s, b, t):
    """`efficiency_without_replicas` as written before: alpha(P) worked inside eta_H and again for the alpha shown."""
    a = s.assumptions
    synced = t["synchronised"] > 0
    h = np.asarray(t["h_eff"], dtype=float)
    eta_h = np.maximum(a.eta_h_floor, (1.0 - quality.alpha(s.params, a) * np.log10(h)) / eta_h_divisor(a))
    return {"eta_h": np.where(synced, eta_h, 1.0), "eta_c": np.where(synced, run.compression_efficiency(s, b), 1.0),
            "eta_a": t["eta_activation"], "alpha": np.where(synced, quality.alpha(s.params, a), 0.0)}


@pytest.mark.parametrize("profile", ("dtplan", "reference", "report-v1", "simulator"))
def test_efficiency_with_alpha_once_is_as_before(profile):
    """Random P (1e6 to 1e13), H_eff (1 to 1e4) and sync flags, 200 plans a profile: every field bit for bit.
    Mutation caught: eta_H given alpha(P) of a P 1% larger."""
    rows, base, space = _rows(0)
    a = load_profile(profile)
    rng = np.random.default_rng(7)
    for _ in range(200):
        p = float(np.exp(rng.uniform(np.log(1e6), np.log(1e13))))
        s = base.replace(params=p, active_params=p, assumptions=a)
        n = int(rng.integers(1, 4))
        b = PlanBatch.of("flat", space.precisions[0], nodes=[2] * n, inner_steps=[1] * n,
                         compression=float(rng.choice((1.0, 16.0, 150.0))), streaming=True)
        t = {"synchronised": rng.integers(0, 2, n).astype(float), "h_eff": np.exp(rng.uniform(0.0, np.log(1e4), n)),
             "eta_activation": rng.uniform(0.5, 1.0, n)}
        with np.errstate(divide="ignore", invalid="ignore"):
            assert _bits(run.efficiency_without_replicas(s, b, t)) == _bits(_as_before(s, b, t))


@pytest.mark.parametrize("seed", range(4))
def test_the_rows_eta_c_and_alpha_give_the_efficiencies_worked_again(seed):
    """`efficiency_without_replicas` given the rows' eta_C (`_Rows.eta_c`) and alpha(P) of the size
    (`sweep_search.size_alpha`), as `best_size` gives them, is the one worked from the plan and P, on random
    flat and pp_group plans of every size of perturbed sweep cases (`best_size` given the next size's alpha, a
    mutation, fails tests/test_reference_sweep_search.py's comparisons with the general search)."""
    rows, base, space = _rows(seed)
    alpha = sweep_search.size_alpha(rows.params, base.assumptions)
    rng = np.random.default_rng(seed)
    for _ in range(40):
        j = int(rng.integers(rows.params.size))
        p = [float(x) for x in rows.params][j]
        s = base.replace(params=p, active_params=p)
        mode = str(rng.choice(("flat", "pp_group")))
        stages = int(rng.integers(2, 30)) if mode == "pp_group" else 1
        b = PlanBatch.of(mode, space.precisions[0], nodes=stages * int(rng.integers(1, 200)),
                         inner_steps=int(rng.integers(1, 300)), compression=float(space.compression[0]),
                         streaming=True, stages=stages, micro_batches=int(rng.integers(1, 65)),
                         activation_compression=float(rng.choice((1.0, 2.0, 4.0, 10.0))) if mode == "pp_group" else 1.0)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            t = modes.throughput(s, b)
            got = run.efficiency_without_replicas(s, b, t, eta_c=rows.eta_c, alpha_p=alpha[j])
            assert _bits(got) == _bits(run.efficiency_without_replicas(s, b, t))
