"""The MIP's fast build (issue 27 item 4) writes the same model as Pyomo's plain `sum`, and the
presolve's rounded Chinchilla bound computed over the distinct (grid point, column) pairs equals
`Tables.psi_box` at the rounded ends, entry by entry.

The families build their long rows with `linear_expression` (one Pyomo LinearExpression) instead of
`sum(c * x for ...)`, which re-wraps the expression at each `+`; the written model must not change:
here both forms are written as CPLEX LP and MPS and compared byte for byte.
"""

import math

import numpy as np
import pyomo.environ as pyo
import pytest

from planner.objectives import MAX_COMPUTE
from planner.mip.formulation import linear_expression
from planner.mip.tables import build_tables
from tests.test_bnb import random_case


def _written(model, tmp_path, name: str, suffix: str) -> bytes:
    path = tmp_path / f"{name}.{suffix}"
    model.write(str(path), io_options={"symbolic_solver_labels": True})
    return path.read_bytes()


@pytest.mark.parametrize("seed", range(40))
def test_linear_expression_writes_as_pyomo_sum(seed, tmp_path):
    """Rows with zero, unit, negative, integer and float coefficients and a constant (or none, or no
    variable left): the model built with `linear_expression` is written exactly as the one built with
    `constant + sum(c * x)`, in both formats the backends and --write-model use."""
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(12):
        size = int(rng.integers(0, 9))
        pool = [0, 0.0, 1, 1.0, -1, -1.0, 2, 3, 0.5, -2.25, float(rng.normal()), float(rng.uniform(-1e3, 1e3))]
        coefs = [pool[int(k)] for k in rng.integers(0, len(pool), size)]
        picks = [int(k) for k in rng.integers(0, 10, size)]
        constant = [0, 0.0, 1, 2.5, -7][int(rng.integers(0, 5))]
        rows.append((coefs, picks, constant, str(rng.choice(["<=", ">=", "=="]))))
    written = []
    for fast in (False, True):
        m = pyo.ConcreteModel(name="rows")
        m.x = pyo.Var(range(10), bounds=(-5, 5))
        m.s = pyo.Var()
        m.rows = pyo.ConstraintList()
        for coefs, picks, constant, sense in rows:
            xs = [m.x[k] for k in picks]
            rhs = linear_expression(coefs, xs, constant) if fast else constant + sum(c * x for c, x in zip(coefs, xs))
            m.rows.add(m.s <= rhs if sense == "<=" else m.s >= rhs if sense == ">=" else m.s == rhs)
        m.o = pyo.Objective(expr=m.s + sum(m.x[k] for k in range(10)))
        written.append([_written(m, tmp_path, f"{fast}", suffix) for suffix in ("lp", "mps")])
    assert written[0] == written[1]


def test_linear_expression_value_and_edge_cases():
    """Its value is constant + sum c_i x_i; no term: the constant itself; one term: that term."""
    m = pyo.ConcreteModel()
    m.x = pyo.Var(range(3))
    assert linear_expression([], [], 4) == 4
    assert linear_expression([1], [m.x[0]]) is m.x[0]
    e = linear_expression([1, 0, -2.5], [m.x[0], m.x[1], m.x[2]], 3)
    m.x[0].value, m.x[1].value, m.x[2].value = 2.0, 100.0, 4.0
    assert pyo.value(e) == pytest.approx(2.0 - 10.0 + 3)


@pytest.mark.parametrize("seed", [0, 3, 8])
def test_psi_box_rounded_is_psi_box_at_the_rounded_ends(seed):
    """`Tables.psi_box_rounded` (the presolve's Chinchilla box bound, its costly terms computed once per
    distinct (grid point, column) pair) equals `Tables.psi_box` of each entry's own column with u_lo
    rounded down and u_hi up to the step (its docstring), including infinite entries."""
    s, space, _ = random_case(seed, target_kind="c_local", penalty="chinchilla")
    t = build_tables(s, space.for_objective(s, MAX_COMPUTE))
    assert t.tokens_scored_eta_r
    rng = np.random.default_rng(seed)
    n_col = np.sort(rng.integers(1, 5000, 7)).astype(float)
    cols = rng.integers(0, n_col.size, 400)
    u_lo = rng.uniform(14.0, 40.0, cols.size)
    u_hi = u_lo + rng.choice([0.0, 1e-4, 0.02, 0.7, 3.0], cols.size)
    u_lo[::37] = -np.inf                      # no plan in the box: inf, as documented
    h_eff, step = 37.0, 0.01
    got = t.psi_box_rounded(n_col, h_eff, u_lo, u_hi, cols, step=step)
    for e in range(cols.size):
        if not math.isfinite(u_lo[e]):
            assert got[e] == np.inf
            continue
        lo, hi = math.floor(u_lo[e] / step) * step, math.ceil(u_hi[e] / step) * step
        want = float(t.psi_box(n_col[cols[e]], h_eff, lo, hi))
        assert got[e] == pytest.approx(want, rel=1e-12, abs=1e-12), (e, n_col[cols[e]], lo, hi)
