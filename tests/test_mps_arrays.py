"""The HiGHS backend hands HiGHS the arrays of the MPS Pyomo writes (`planner.solvers.mps_arrays`)
instead of the file: HiGHS must hold the very same model both ways. Compared here with
`Highs.getLp()` after `readModel` of the written MPS and after `passModel` of the arrays, every array
bit for bit, on a small model of every case the writer treats apart (its arrays also stated by hand)
and on every round's model of solves of shipped and random instances, one pool and fleets of pools.
"""

from __future__ import annotations

import json
from pathlib import Path

import highspy
import numpy as np
import pyomo.environ as pyo
import pytest

from planner.schema.instance import parse_instance
from planner.solve import solve
from planner.solvers.backend import written_as_mps
from planner.solvers.highs import HighsBackend, quiet_highs
from planner.solvers.mps_arrays import model_arrays
from tests.test_fleet_mip import sample

INSTANCES = Path(__file__).resolve().parents[1] / "instances"
INF = highspy.kHighsInf


def held(h) -> dict:
    """What a Highs object holds of its model, as numpy arrays and numbers."""
    lp = h.getLp()
    a = lp.a_matrix_
    return {"cost": np.array(lp.col_cost_), "col_lower": np.array(lp.col_lower_), "col_upper": np.array(lp.col_upper_),
            "row_lower": np.array(lp.row_lower_), "row_upper": np.array(lp.row_upper_),
            "start": np.array(a.start_), "index": np.array(a.index_), "value": np.array(a.value_),
            "integrality": np.array([int(k) for k in lp.integrality_]), "format": int(a.format_),
            "sense": int(lp.sense_), "offset": lp.offset_, "shape": (lp.num_col_, lp.num_row_)}


def both_ways(model):
    """(held after reading the written MPS, held after passing the arrays, the arrays, the columns' Pyomo
    variables by the MPS's names)."""
    with written_as_mps(model) as (path, smap):
        read = quiet_highs(highspy)
        read.readModel(path)
        by_name = [smap.bySymbol.get(name) for name in read.getLp().col_names_]
    arrays = model_arrays(model)
    passed = quiet_highs(highspy)
    passed.passModel(arrays.highs_lp(highspy))
    return held(read), held(passed), arrays, by_name


def assert_same(model) -> None:
    a, b, arrays, by_name = both_ways(model)
    assert a.keys() == b.keys()
    for key in a:
        if isinstance(a[key], np.ndarray):
            assert a[key].shape == b[key].shape and a[key].tobytes() == b[key].tobytes(), key   # bit for bit
        else:
            assert a[key] == b[key], key
    assert all(v is w for v, w in zip(arrays.variables, by_name)) and len(arrays.variables) == len(by_name)


def edge_model():
    """Every case of the writer: a constant in the objective, a ranged row, a row of no variable, a
    duplicated variable, a zero and a -0 coefficient, an unused variable, a free, a
    negative-bounded, a binary, an integer without bounds and a binary with other bounds, maximisation."""
    m = pyo.ConcreteModel(name="edges")
    m.x = pyo.Var(bounds=(-3.5, 2.25))
    m.free = pyo.Var()
    m.neg = pyo.Var(bounds=(None, -1.0))
    m.b = pyo.Var(within=pyo.Binary)
    m.k = pyo.Var(within=pyo.Integers)
    m.bb = pyo.Var(within=pyo.Binary, bounds=(1, 1))
    m.unused = pyo.Var(bounds=(0, 7))
    m.z = pyo.Var(bounds=(0, None))
    m.p = pyo.Param(initialize=0.1, mutable=True)
    m.o = pyo.Objective(expr=2 * m.x - m.free + 0.3 + m.p * m.k, sense=pyo.maximize)
    m.c = pyo.ConstraintList()
    m.c.add(pyo.inequality(-1.0, m.x + 3 * m.b + 1.0, 4.0))            # ranged: two rows
    m.c.add(m.x + m.x + 0 * m.z - 0.0 * m.free <= 1e-3)              # duplicate, zero coefficients
    m.c.add(m.neg + m.k == 5.5)
    m.c.add(m.k * 1.0 >= -2 + m.bb)
    m.fixed_row = pyo.Constraint(expr=m.p + 1 <= 3)                   # no variable: an empty row
    m.c.add(m.unused * 0 <= 1)                                        # unused: its only coefficient is 0
    return m


def test_edge_model_by_hand():
    """The arrays of `edge_model`, written out by hand from the writer's rules (module docstring of
    planner.solvers.mps_arrays), then the same as HiGHS reads them from the MPS."""
    m = edge_model()
    arrays = model_arrays(m)
    # columns in declaration order, those with a coefficient (the repn drops zeros: unused and z have
    # none), then ONE_VAR_CONSTANT
    assert [v.name if v is not None else None for v in arrays.variables] == ["x", "free", "neg", "b", "k", "bb", None]
    assert arrays.col_cost.tolist() == [2.0, -1.0, 0.0, 0.0, 0.1, 0.0, 0.3]
    assert arrays.col_lower.tolist() == [-3.5, -INF, -INF, 0.0, -INF, 1.0, 0.0]
    assert arrays.col_upper.tolist() == [2.25, INF, -1.0, 1.0, INF, 1.0, INF]
    assert arrays.integer.tolist() == [False, False, False, True, True, True, False]
    # rows in declaration order: ranged (>= -2, <= 3 after the constant 1), duplicate, equality, k >= -2 + bb
    # (Pyomo keeps it as -2 + bb - k <= 0: <= 2), unused (empty), no variable (empty, 3 - (0.1 + 1)), ONE = 1
    assert arrays.row_lower.tolist() == [-2.0, -INF, -INF, 5.5, -INF, -INF, -INF, 1.0]
    assert arrays.row_upper.tolist() == [INF, 3.0, 1e-3, 5.5, 2.0, 1.0, 3 - (0.1 + 1), 1.0]
    dense = np.zeros((8, 7))
    for j in range(7):
        for k in range(arrays.start[j], arrays.start[j + 1]):
            dense[arrays.index[k], j] = arrays.value[k]
    assert dense[0].tolist() == [1, 0, 0, 3, 0, 0, 0] and dense[1].tolist() == dense[0].tolist()
    assert dense[2].tolist() == [2, 0, 0, 0, 0, 0, 0]       # x + x; 0 z and -0 free dropped by the repn
    assert dense[3].tolist() == [0, 0, 1, 0, 1, 0, 0]
    assert dense[4].tolist() == [0, 0, 0, 0, -1, 1, 0]
    assert not dense[5].any() and not dense[6].any()
    assert dense[7].tolist() == [0] * 6 + [1]
    assert arrays.maximise
    assert_same(m)


def captured(monkeypatch, data: dict, objective: str | None = None, solver: str = "highs") -> list:
    """The models of every backend round of a solve."""
    models = []
    solve_one = HighsBackend.solve

    def record(self, model, time_limit_s=None):
        models.append(model)
        return solve_one(self, model, time_limit_s)
    monkeypatch.setattr(HighsBackend, "solve", record)
    solve(parse_instance(data), objective, solver=solver)
    assert models
    return models


@pytest.mark.parametrize("name,objective", [("solve-1e24-64xh100", "min_time"), ("solve-1e24-64xh100", "min_cost"),
                                            ("solve-1e24-64xh100", "max_compute"), ("baseline-1e25", None),
                                            ("mixed-a100-h100", "min_time"), ("mixed-a100-h100", "min_cost"),
                                            ("mixed-six-sites", None), ("mixed-governance-cities", None)])
def test_shipped_models_the_same_both_ways(monkeypatch, name, objective):
    for model in captured(monkeypatch, json.loads((INSTANCES / f"{name}.json").read_text()), objective):
        assert_same(model)


@pytest.mark.parametrize("seed,objective", [(s, o) for s in (4, 6) for o in ("min_time", "min_cost", "max_compute")] +
                         [(8, "min_time"), (10, "min_cost"), (11, "min_time")])
def test_random_pools_models_the_same_both_ways(monkeypatch, seed, objective):
    """The random fleets of the oracle tests (tests/test_fleet_mip.py: up to 3 pools, half on sites, a third
    with a C_quality target); seeds whose solves reach the backend in each objective."""
    for model in captured(monkeypatch, sample(seed, objective)):
        assert_same(model)
