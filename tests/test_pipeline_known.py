"""`modes.pp_group_pipeline`'s `known` (the `_chunk_free` figures a caller has already) and
`sweep_search._Rows.known` (a pipeline row's act, f(S) and eta_A): the sweep's answer scored with its
row's figures is the pipeline, throughput, window value and limits of the cost model worked from scratch,
bit for bit, on random rows of perturbed sweep cases (both recomputation rules) and with the figures given
one at a time, under a fixed chunk count and the planner's (`pipeline_chunks` 0)."""

import numpy as np
import pytest

from planner.cost import modes
from planner.cost.score import window_compute
from planner.cost.setting import PlanBatch
from planner.reference import search, sweep_search
from tests.test_reference_sweep_search import _rows


def _bits(x):
    x = np.asarray(x)
    return x.dtype.str, x.shape, x.tobytes()


def _pipe_bits(pipe):
    out, (t_pp, parts, state, eta_a, c) = pipe
    return ({k: _bits(v) for k, v in out.items()}, _bits(t_pp), {k: _bits(v) for k, v in parts.items()},
            _bits(state), _bits(eta_a), _bits(c))


def _row_plans(seed: int, count: int):
    """(rows, setting of the row's size, the row's plan at a random K and H, row index) for `count` random
    pipeline rows of `_rows(seed)`, M the row's M* (`make_exact`)."""
    rows, base, space = _rows(seed)
    rng = np.random.default_rng(100 + seed)
    pipe_rows = np.arange(rows.n_flat, rows.j.size)
    if pipe_rows.size == 0:
        pytest.skip("no pipeline rows")
    picked = rng.choice(pipe_rows, size=min(count, pipe_rows.size), replace=False)
    rows.make_exact(np.sort(picked))
    for r in picked.tolist():
        p = float(rows.params[rows.j[r]])
        s = base.replace(params=p, active_params=p)
        stages = int(rows.stages[r])
        k = int(rng.integers(2, max(3, int(rows.k_max_f[r]) + 1)))
        b = PlanBatch.of("pp_group", space.precisions[0], nodes=k * stages, inner_steps=int(rng.integers(1, 300)),
                         compression=float(space.compression[0]), streaming=True, stages=stages,
                         micro_batches=int(rows.m[r]), activation_compression=float(rows.ca[r]))
        yield rows, s, b, r


@pytest.mark.parametrize("seed", range(6))
def test_a_rows_known_figures_give_the_pipeline_worked_from_scratch(seed):
    """`pp_group_pipeline(lean=True, known=rows.known(r))` is `pp_group_pipeline(lean=True)` of the row's plan,
    every array bit for bit, and so are `sweep_search._throughput`'s fields and the window value and limits
    against `modes.throughput`'s (but `PIPELINE_PARTS_LEFT`). Mutations caught: `_Rows.known` taking the
    figures of the next row (q + 1), or not subtracting the flat rows (q = r); `_chunk_free` reading
    known["act"] for f_pp."""
    checked = 0
    for rows, s, b, r in _row_plans(seed, 40):
        known = rows.known(r)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            want = modes.pp_group_pipeline(s, b, lean=True)
            assert _pipe_bits(modes.pp_group_pipeline(s, b, lean=True, known=known)) == _pipe_bits(want)
            full, got = modes.throughput(s, b), sweep_search._throughput(s, b, known)
            assert set(got) == set(full) - set(modes.PIPELINE_PARTS_LEFT)
            for k in got:
                assert _bits(got[k]) == _bits(full[k]), k
            assert _bits(window_compute(s, b, "c_quality", t=got)["c_quality"]) == \
                _bits(window_compute(s, b, "c_quality", t=full)["c_quality"])
            assert search._limits(s, b, got) == search._limits(s, b, full)
        checked += 1
    assert checked >= 10


@pytest.mark.parametrize("chunks", (0, 2))
@pytest.mark.parametrize("seed", range(2))
def test_each_known_figure_alone_and_either_chunk_rule(seed, chunks):
    """Each of act, f_pp and eta_a given alone (the others worked), under `pipeline_chunks` 0 (the planner's
    count, `_pipeline`'s own `_chunk_free`) and 2 (`_pipeline_at`'s), gives the pipeline worked from scratch."""
    for rows, s, b, r in _row_plans(seed, 12):
        s = s.replace(assumptions=s.assumptions.replace(pipeline_chunks=chunks))
        known = rows.known(r)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            want = _pipe_bits(modes.pp_group_pipeline(s, b, lean=True))
            for name in known:
                assert _pipe_bits(modes.pp_group_pipeline(s, b, lean=True, known={name: known[name]})) == want, name


def test_the_answer_is_scored_with_its_rows_figures(monkeypatch):
    """`best_size` hands the answer's own row to `_throughput` (`_answer` returns it): the run's throughput is
    `modes.throughput`'s of the answer's plan on the shipped sweeps answered with a pipeline plan."""
    from tests.test_reference_sweep_search import _sweep_cases
    given = []
    original = sweep_search._throughput
    monkeypatch.setattr(sweep_search, "_throughput", lambda s, b, known=None: given.append(known) or original(s, b, known))
    pipelines = 0
    for case in _sweep_cases():
        outcome_runs = []
        best = sweep_search.best_size
        monkeypatch.setattr(sweep_search, "best_size", lambda *a: outcome_runs.append(best(*a)) or outcome_runs[-1])
        search.answer(case)
        monkeypatch.setattr(sweep_search, "best_size", best)
        for run in [x for x in outcome_runs if x is not None and x.found[0].mode == "pp_group"]:
            b = run.found[0]
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                full = modes.throughput(run.setting, b)
            assert all(_bits(run.throughput[k]) == _bits(full[k]) for k in run.throughput)
            pipelines += 1
    assert pipelines >= 1 and any(k is not None for k in given)
