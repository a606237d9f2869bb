"""A Pyomo model as the arrays of the MPS file Pyomo's writer makes of it, without the file.

The HiGHS backend used to have Pyomo write the model as MPS (`backend.written_as_mps`) and HiGHS read
it back; on the pools' models that text was as long to write and read as HiGHS's own run (docs/mip.md,
"16 pools in 16 cities"). `model_arrays` makes the same linear program directly: the rows, columns,
coefficients and bounds HiGHS reads from that file, in its order, and `passModel` hands them over
(HiGHS's documented `HighsLp`). What the MPS writer of Pyomo 6.x (`pyomo.repn.plugins.mps`, options
as `written_as_mps` passes them) writes, and so what this module reproduces:

- columns: the active blocks' variables in declaration order, indices sorted (its default
  `file_determinism` 1), those with no coefficient in the objective or a row left out; a
  variable's column lists its rows in row order; a constant of the objective is a last column
  ONE_VAR_CONSTANT of that cost, fixed to 1 by a last row `ONE_VAR_CONSTANT = 1` (bounds [0, inf],
  the MPS default);
- rows, in the order of the active constraints: an equality is one row (lower = upper); a
  ranged constraint two, `>= lower` first, then `<= upper`; each side's bound minus the body's
  constant (`generate_standard_repn`, the very coefficients the writer prints, with 17 significant
  digits: read back exactly); a constraint with no bound is left out, one with no variable kept
  (an empty row);
- bounds: a binary variable of bounds (0, 1) is BV; another integer variable's bounds are LI / UI
  (unbounded: -10E20 / 10E20, infinite to HiGHS); a continuous one's LO / UP, missing sides infinite;
- sense: the objective's own.

`tests/test_mps_arrays.py` checks that HiGHS holds the same model both ways (`Highs.getLp`: every
array equal, bit for bit) on the MIP models of shipped and random instances, single pools and fleets
of pools.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

INF = float("inf")


@dataclass
class ModelArrays:
    """The model as HiGHS's `HighsLp` holds it, column-wise; `variables[j]` is column j's Pyomo variable
    (None for ONE_VAR_CONSTANT)."""

    variables: list
    col_cost: np.ndarray
    col_lower: np.ndarray
    col_upper: np.ndarray
    integer: np.ndarray            # bool per column
    row_lower: np.ndarray
    row_upper: np.ndarray
    start: np.ndarray              # int32, len columns + 1
    index: np.ndarray              # int32 row of each entry
    value: np.ndarray
    maximise: bool

    def highs_lp(self, highspy):
        """The `highspy.HighsLp` of these arrays."""
        lp = highspy.HighsLp()
        lp.num_col_, lp.num_row_ = len(self.variables), len(self.row_lower)
        lp.col_cost_, lp.col_lower_, lp.col_upper_ = self.col_cost, self.col_lower, self.col_upper
        lp.row_lower_, lp.row_upper_ = self.row_lower, self.row_upper
        lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
        lp.a_matrix_.num_col_, lp.a_matrix_.num_row_ = lp.num_col_, lp.num_row_
        lp.a_matrix_.start_, lp.a_matrix_.index_, lp.a_matrix_.value_ = self.start, self.index, self.value
        lp.sense_ = highspy.ObjSense.kMaximize if self.maximise else highspy.ObjSense.kMinimize
        if self.integer.any():
            kind = highspy.HighsVarType
            lp.integrality_ = [kind.kInteger if i else kind.kContinuous for i in self.integer]
        return lp


def model_arrays(model) -> ModelArrays:
    """The arrays of `model` (module docstring): those of the MPS Pyomo writes of it."""
    from pyomo.core.base import Constraint, Objective, SortComponents, Var
    from pyomo.core.expr import value
    from pyomo.repn import generate_standard_repn

    sort = SortComponents.indices
    blocks = list(model.block_data_objects(active=True, sort=sort))
    variables = [v for b in blocks for v in b.component_data_objects(Var, active=True, sort=sort, descend_into=False)]
    column = {id(v): j for j, v in enumerate(variables)}
    objectives = [o for b in blocks for o in b.component_data_objects(Objective, active=True, sort=sort,
                                                                      descend_into=False)]
    if len(objectives) != 1:
        raise ValueError(f"the model has {len(objectives)} active objectives; one is needed")
    objective = objectives[0]
    repn = generate_standard_repn(objective.expr)
    _linear_only(repn, objective)
    cost = np.zeros(len(variables))
    used = np.zeros(len(variables), dtype=bool)
    for var, coef in zip(repn.linear_vars, repn.linear_coefs):
        cost[column[id(var)]] = coef
        used[column[id(var)]] = True
    constant = float(repn.constant)
    forced = repn.polynomial_degree() == 0          # the writer then writes the constant column even at 0

    rows, cols, vals, lower, upper = [], [], [], [], []

    def row(repn, lo: float, up: float) -> None:
        k = len(repn.linear_vars)
        rows.extend([len(lower)] * k)
        cols.extend([column[id(var)] for var in repn.linear_vars])
        vals.extend(repn.linear_coefs)
        lower.append(lo)
        upper.append(up)

    for block in blocks:
        for con in block.component_data_objects(Constraint, active=True, sort=sort, descend_into=False):
            has_lb, has_ub = con.has_lb(), con.has_ub()
            if not has_lb and not has_ub:
                continue
            repn = con.canonical_form() if con._linear_canonical_form else generate_standard_repn(con.body)
            _linear_only(repn, con)
            offset = repn.constant
            if con.equality:
                rhs = _plain(value(con.lower) - offset)
                row(repn, rhs, rhs)
                continue
            if has_lb:
                row(repn, _plain(value(con.lower) - offset), INF)
            if has_ub:
                row(repn, -INF, _plain(value(con.upper) - offset))

    used[np.asarray(cols, dtype=np.int64)] = True
    keep = np.flatnonzero(used)
    kept = [variables[j] for j in keep]
    position = np.full(len(variables), -1, dtype=np.int64)
    position[keep] = np.arange(len(keep))
    cols_kept = position[np.asarray(cols, dtype=np.int64)] if cols else np.zeros(0, dtype=np.int64)
    rows_arr = np.asarray(rows, dtype=np.int64)
    vals_arr = np.asarray(vals, dtype=float) + 0.0   # -0 as 0, as the writer prints it
    col_cost = cost[keep] + 0.0
    if forced or constant != 0.0:                    # ONE_VAR_CONSTANT: a column of that cost, a row = 1
        one_row = len(lower)
        lower.append(1.0)
        upper.append(1.0)
        kept.append(None)
        cols_kept = np.append(cols_kept, len(keep))
        rows_arr = np.append(rows_arr, one_row)
        vals_arr = np.append(vals_arr, 1.0)
        col_cost = np.append(col_cost, _plain(constant))
    order = np.argsort(cols_kept, kind="stable")     # column-wise, each column's entries in row order
    start = np.searchsorted(cols_kept[order], np.arange(len(kept) + 1)).astype(np.int32)
    col_lower, col_upper, integer = _bounds(kept)
    return ModelArrays(kept, col_cost, col_lower, col_upper, integer, np.asarray(lower, dtype=float),
                       np.asarray(upper, dtype=float), start, rows_arr[order].astype(np.int32), vals_arr[order],
                       not objective.is_minimizing())


def _bounds(variables) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Columns' bounds and integrality as the MPS BOUNDS section gives them (module docstring)."""
    n = len(variables)
    lo, up, integer = np.zeros(n), np.full(n, INF), np.zeros(n, dtype=bool)
    for j, var in enumerate(variables):
        if var is None:                              # ONE_VAR_CONSTANT: no bounds written, [0, inf]
            continue
        if var.fixed:
            raise ValueError(f"variable {var.name} is fixed inside the model (the MPS writer refuses it)")
        lb = _plain(var.lb) if var.has_lb() else None
        ub = _plain(var.ub) if var.has_ub() else None
        if var.is_integer() or var.is_binary():
            integer[j] = True
        lo[j] = -INF if lb is None else lb
        up[j] = INF if ub is None else ub
    return lo, up, integer


def _plain(x) -> float:
    """A bound as the writer prints it: a float, -0 as 0."""
    x = float(x)
    return 0.0 if x == 0 else x


def _linear_only(repn, component) -> None:
    if repn.polynomial_degree() not in (0, 1):
        raise ValueError(f"{component.name} is not linear: the model has no MPS arrays")
