"""A solver-neutral mixed-integer linear model: named columns, named rows grouped by family.

The formulation (`planner.mip.formulation`) fills one of these; each backend
(`planner.solvers`) translates it into its solver's own model. Building never solves.

Rows are `lo <= sum_k coef_k x_k <= hi`; every row belongs to a constraint family
(`memory-cap`, `sync-overlap`, `duration-limit`, ...) and has a unique name
`<family>.<index>` (hyphens written as underscores, which every file format accepts)
so that a written model (LP/MPS/CIP) can be read by a person.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

INF = float("inf")


def safe_name(text: str) -> str:
    """A name the LP and MPS formats accept: letters, digits and _ . ( ) only."""
    out = text.replace("-", "_").replace("=", "").replace(",", ".").replace(" ", "_")
    return "".join(ch if ch.isalnum() or ch in "_.()" else "_" for ch in out)


@dataclass
class Model:
    """Columns, rows and a linear objective to minimise."""

    name: str = "dtplan"
    col_names: list[str] = field(default_factory=list)
    col_lo: list[float] = field(default_factory=list)
    col_hi: list[float] = field(default_factory=list)
    col_integer: list[bool] = field(default_factory=list)
    objective: dict[int, float] = field(default_factory=dict)
    objective_offset: float = 0.0
    row_names: list[str] = field(default_factory=list)
    row_family: list[str] = field(default_factory=list)
    row_lo: list[float] = field(default_factory=list)
    row_hi: list[float] = field(default_factory=list)
    row_cols: list[np.ndarray] = field(default_factory=list)
    row_coefs: list[np.ndarray] = field(default_factory=list)
    _family_count: dict[str, int] = field(default_factory=dict)

    # -- building --------------------------------------------------------------------

    def add_col(self, name: str, lo: float, hi: float, integer: bool = False) -> int:
        self.col_names.append(safe_name(name))
        self.col_lo.append(float(lo))
        self.col_hi.append(float(hi))
        self.col_integer.append(bool(integer))
        return len(self.col_names) - 1

    def add_binaries(self, prefix: str, labels) -> np.ndarray:
        """One binary column per label, named `prefix[label]`; their indices."""
        return np.array([self.add_col(f"{prefix}.{label}", 0, 1, True) for label in labels], dtype=np.int64)

    def add_row(self, family: str, cols, coefs, lo: float = -INF, hi: float = INF) -> int:
        """Add `lo <= coefs . x[cols] <= hi` to `family` (duplicate columns are summed)."""
        cols = np.asarray(cols, dtype=np.int64)
        coefs = np.asarray(coefs, dtype=float)
        if cols.size:
            cols, inverse = np.unique(cols, return_inverse=True)
            coefs = np.bincount(inverse, weights=coefs, minlength=cols.size)
        k = self._family_count.get(family, 0)
        self._family_count[family] = k + 1
        self.row_names.append(f"{safe_name(family)}.{k}")
        self.row_family.append(family)
        self.row_lo.append(float(lo))
        self.row_hi.append(float(hi))
        self.row_cols.append(cols)
        self.row_coefs.append(coefs)
        return len(self.row_names) - 1

    # -- reading ---------------------------------------------------------------------

    @property
    def n_cols(self) -> int:
        return len(self.col_names)

    @property
    def n_rows(self) -> int:
        return len(self.row_names)

    @property
    def n_nonzeros(self) -> int:
        return int(sum(c.size for c in self.row_cols))

    @property
    def n_integer(self) -> int:
        return int(sum(self.col_integer))

    def families(self) -> dict[str, int]:
        """Rows per constraint family, in the order the families were added."""
        return dict(self._family_count)

    def csr(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(row starts, column indices, values) of the row-wise constraint matrix."""
        lengths = np.array([c.size for c in self.row_cols], dtype=np.int64)
        starts = np.concatenate([[0], np.cumsum(lengths)])
        cols = np.concatenate(self.row_cols) if self.row_cols else np.zeros(0, np.int64)
        vals = np.concatenate(self.row_coefs) if self.row_coefs else np.zeros(0)
        return starts, cols, vals

    def objective_vector(self) -> np.ndarray:
        c = np.zeros(self.n_cols)
        for j, v in self.objective.items():
            c[j] += v
        return c

    def activity(self, x: np.ndarray) -> np.ndarray:
        """Row activities at the point x."""
        return np.array([float(np.dot(coefs, x[cols])) for cols, coefs in zip(self.row_cols, self.row_coefs)])

    def violated_rows(self, x: np.ndarray, tol: float = 1e-9) -> list[str]:
        """Names of the rows the point x breaks (beyond `tol`, absolute), and broken column bounds."""
        act = self.activity(x)
        bad = [self.row_names[i] for i in range(self.n_rows)
               if act[i] < self.row_lo[i] - tol or act[i] > self.row_hi[i] + tol]
        bad += [f"bounds of {self.col_names[j]}" for j in range(self.n_cols)
                if x[j] < self.col_lo[j] - tol or x[j] > self.col_hi[j] + tol]
        return bad
