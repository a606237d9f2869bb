"""The mixed-integer formulation and its backends.

1. Plan by plan: with every decision fixed to one plan, the model's optimum is the
   evaluator's ln(time to target) of that plan (to the backend's tolerance), and the
   plan is infeasible exactly when it misses the duration limit.
2. Whole spaces: each backend, certified by the exact search, returns the same optimum
   and the same plan (after tie-breaking) as the brute force of tests/test_bnb.py.
"""

import math

import numpy as np
import pytest

from planner.cost.score import time_to_target
from planner.mip.formulation import FormulationError, ModelTooLarge, UnsupportedTarget, build, estimate_size
from planner.solvers.bnb import tie_key
from planner.solvers import backends
from planner.solvers.certified import optimise
from tests.test_bnb import naive, random_case

BACKENDS = sorted(backends())


def test_both_backends_are_installed():
    assert BACKENDS == ["highs", "scip"]


def _feasible_case(seed):
    """A random case whose space has at least one class with a DiLoCo sync."""
    s, space, allowed = random_case(seed)
    f = build(s, space, "min_time")
    return s, space, allowed, f


@pytest.mark.parametrize("seed", range(12))
def test_model_equals_the_evaluator_plan_by_plan(seed):
    s, space, _, f = _feasible_case(seed)
    rng = np.random.default_rng(seed)
    backend = backends()["highs"]
    keys = f.sync_keys + f.fixed_keys
    if not keys:
        pytest.skip("no plan in this space")
    for _ in range(8):
        g, k = keys[int(rng.integers(len(keys)))]
        c = f.groups[g]
        n = int(rng.integers(c.n_lo[k], c.n_hi[k] + 1))
        if (g, k) in f.sync_keys and c.rows.mode == "flat" and n == 1 and (g, k) not in f.fixed_keys:
            continue
        h = int(rng.integers(1, space.max_inner_steps + 1)) if c.rows.mode != "pipeline_wan" else 1
        r = int(rng.integers(1, space.max_regional_rounds + 1)) if c.rows.mode == "hierarchical" else 1
        if (g, k) in f.fixed_keys and ((g, k) not in f.sync_keys or n == 1):
            n, h, r = 1, 1, 1
        plan = c.plans(np.array([k]), n, h, r)
        want = float(time_to_target(s, plan)["time_to_target_s"][0])
        result = backend.solve(f.model, fixed=f.fixing(g, k, n, h, r))
        if not want <= s.window_s * (1 - 1e-6):
            assert result.status == "infeasible" or want <= s.window_s * (1 + 1e-6)
            continue
        assert result.status == "optimal"
        assert result.objective == pytest.approx(math.log(want), abs=1e-6)
        decoded = f.decode(result.x)
        assert int(decoded.nodes[0]) == int(plan.nodes[0])
        assert int(decoded.inner_steps[0]) == h


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("objective", ["min_time", "min_cost"])
@pytest.mark.parametrize("seed", range(30))
def test_certified_backend_matches_brute_force(seed, objective, backend):
    s, space, streaming = random_case(seed)
    expected = naive(s, space, objective, streaming)
    found, _, bound, report = optimise(s, space, objective, backend)
    assert bound == math.inf
    assert report.backend == backend
    if expected is None:
        assert found is None
        assert report.status == "infeasible"
        return
    assert found is not None
    assert found[1] == pytest.approx(expected[0][0], rel=1e-12)
    assert tie_key(s, found[0], 0) == tie_key(s, expected[1], 0)
    # the backend alone is right to its tolerance, before certification
    assert report.status == "optimal"
    assert report.objective == pytest.approx(expected[0][0], rel=1e-5)
    assert not report.certified_improved


def test_c_quality_targets_are_refused_with_a_reason():
    s, space, _ = random_case(3, target_kind="c_quality")
    with pytest.raises(UnsupportedTarget, match="C_local targets only"):
        build(s, space, "min_time")


def test_size_guard_names_the_fields_to_narrow():
    s, space, _ = random_case(4)
    import dataclasses
    big = dataclasses.replace(space, max_nodes=100_000, max_inner_steps=10_000)
    with pytest.raises(ModelTooLarge, match="max_inner_steps"):
        build(s, big)


def test_size_estimate_is_close_to_the_built_model():
    for seed in range(6):
        s, space, _, f = _feasible_case(seed)
        est = estimate_size(s, space)
        assert est["nonzeros"] >= f.model.n_nonzeros * 0.5
        assert est["nonzeros"] <= f.model.n_nonzeros * 3 + 100


def test_every_row_belongs_to_a_named_family():
    s, space, _, f = _feasible_case(4)
    fams = f.model.families()
    assert {"choice", "structure", "node-limit", "sync-overlap", "efficiency", "time-to-target",
            "duration-limit"} <= set(fams)
    assert sum(fams.values()) == f.model.n_rows
    assert len(set(f.model.row_names)) == f.model.n_rows


@pytest.mark.parametrize("suffix", [".lp", ".mps", ".cip"])
def test_written_model_names_its_families(tmp_path, suffix):
    s, space, _, f = _feasible_case(4)
    path = tmp_path / f"model{suffix}"
    backends()["scip" if suffix == ".cip" else "highs"].write(f.model, str(path))
    text = path.read_text()
    assert "duration_limit.0" in text and "sync_overlap.0" in text and "u.1" in text


def test_formulation_error_is_an_assertion():
    assert issubclass(FormulationError, AssertionError)


@pytest.mark.parametrize("objective", ["min_time", "min_cost"])
@pytest.mark.parametrize("seed", range(40))
def test_exhaustive_oracle_matches_brute_force(seed, objective):
    from planner.solvers import exhaustive
    s, space, streaming = random_case(seed)
    expected = naive(s, space, objective, streaming)
    found, evaluations = exhaustive.optimise(s, space, objective)
    if expected is None:
        assert found is None
        return
    assert found[1] == pytest.approx(expected[0][0], rel=1e-12)
    assert tie_key(s, found[0], 0) == tie_key(s, expected[1], 0)
    assert evaluations == space.size(s)


# -- through the CLI -------------------------------------------------------------------

SMALL = {
    "name": "small", "model": {"params": 20e9}, "training": {"target_flop": 1e23},
    "fleet": {"hardware": "16xH100-SXM", "nodes": 12},
    "network": {"wan": {"up_mbps": 100, "down_mbps": 100, "rtt_ms": 100}},
    "limits": {"max_days": 365},
    "search": {"max_inner_steps": 60, "max_regional_rounds": 3, "group_sizes": [2, 3], "max_stages": 4,
               "compression": [1, 16, 500]},
}


def _cli(tmp_path, instance, *args):
    import json as _json
    from click.testing import CliRunner
    from planner.cli import main
    path = tmp_path / "instance.json"
    path.write_text(_json.dumps(instance))
    return CliRunner().invoke(main, ["solve", str(path), *[str(a) for a in args]])


@pytest.mark.parametrize("objective", ["min_time", "min_cost"])
def test_cli_backends_agree_with_the_default_solver(tmp_path, objective):
    import json as _json
    results = {}
    for solver in ("bnb", "highs", "scip", "exhaustive"):
        r = _cli(tmp_path, SMALL, "--objective", objective, "--solver", solver, "--json")
        assert r.exit_code == 0, r.output
        results[solver] = _json.loads(r.output)
    for solver in ("highs", "scip", "exhaustive"):
        assert results[solver]["plan"] == results["bnb"]["plan"]
        assert results[solver]["objective_value"] == pytest.approx(results["bnb"]["objective_value"], rel=1e-12)
    for solver in ("highs", "scip"):
        (mip,) = results[solver]["mip"]
        assert mip["backend"] == solver and mip["status"] == "optimal"
        assert mip["objective"] == pytest.approx(results["bnb"]["objective_value"], rel=1e-6)
        assert mip["families"]["duration-limit"] == 1
    assert results["bnb"]["mip"] == []


@pytest.mark.parametrize("suffix", [".lp", ".mps", ".cip"])
def test_cli_writes_the_model(tmp_path, suffix):
    out = tmp_path / f"model{suffix}"
    r = _cli(tmp_path, SMALL, "--write-model", out)
    assert r.exit_code == 0, r.output
    assert "time_to_target.0" in out.read_text()


def test_cli_refuses_what_a_backend_cannot_answer(tmp_path):
    r = _cli(tmp_path, SMALL, "--solver", "highs", "--objective", "max_compute")
    assert r.exit_code == 2
    assert "--solver" in r.output and "use --solver bnb" in r.output
    r = _cli(tmp_path, SMALL, "--write-model", tmp_path / "model.txt")
    assert r.exit_code == 2 and "unknown format '.txt'" in r.output
    big = dict(SMALL, search={}, fleet={"hardware": "16xH100-SXM", "nodes": 1000})
    r = _cli(tmp_path, big, "--solver", "scip")
    assert r.exit_code == 2
    assert "non-zeros" in r.output and "search.max_inner_steps" in r.output
    assert "Traceback" not in r.output


@pytest.mark.parametrize("backend", BACKENDS)
def test_time_limit_reports_a_valid_bound(backend):
    from planner.schema.instance import parse_instance
    from planner.solve import solve
    inst = parse_instance(dict(SMALL, fleet={"hardware": "16xH100-SXM", "nodes": 48},
                               search=dict(SMALL["search"], max_inner_steps=300)))
    exact = solve(inst, solver="bnb")
    r = solve(inst, solver=backend, time_limit_s=0.05)
    assert r.status in ("time_limit", "optimal")
    assert r.best_bound is not None and r.best_bound <= exact.objective_value * (1 + 1e-12)
    if r.objective_value is not None:
        assert r.objective_value >= exact.objective_value * (1 - 1e-12)
        assert r.best_bound <= r.objective_value * (1 + 1e-12)
