"""The planning problem as a mixed-integer linear program in log space.

Every coefficient is a number computed by the cost model (`planner.cost`) for one plan
or one factor; the formulation only arranges them. Building never solves.

Decisions (columns)
    y[c]        1 if class c is chosen: every decision but n, H and R (mode, precision,
                EP scope, S, k, M, Ca, Cr, streaming), as `DecisionSpace.classes` lists
                them (with its exact reductions), c over the classes with a DiLoCo sync
    lam[c]      1 if fixed plan c is chosen: one node training alone (flat, n = 1) or a
                pipeline over the WAN (N = S); their time is a single number
    u[i]        1 if n = i (replicas: nodes in flat and hierarchical modes, pipeline
                groups in PP-group mode), i = 1 .. n_max
    v[j]        1 if H = j, j = 1 .. H_max
    w[r]        1 if R = r, r = 1 .. R_max (hierarchical; other modes use R = 1)
    z           ln(outer step time / (H R)), the time per inner step of one replica
    omega       ln(eta_H(H_eff) eta_R(n, H_eff)), the efficiency that depends on n and H
    L           ln(time to target)
    nodes       nodes used (min_cost)

The time to target of a synchronised plan factors as (COST_MODEL.md section 7)

    T = C_target / (6 P_act tokens/s eta),   tokens/s = B tf n H R / outer_time,

so ln T = kappa_c - ln n + z - omega, with kappa_c = ln(C_target / (6 P_act B tf
eta_C eta_A)) per class. kappa_c is read off the evaluator at one plan of the class and
the factorisation is checked at a second plan (`FormulationError` if they disagree).

Constraint families (one function each, stable names)
    choice            exactly one class or fixed plan; exactly one n, H and R
    structure         n >= the mode's minimum (2 replicas; 2 groups of k in hierarchical)
    node-limit        N = n * unit within search.min_nodes .. min(fleet, limits.max_nodes)
    budget-limit      N * node price <= budget
    memory-cap        with global expert parallelism the state per node falls with n:
                      n >= the smallest n that fits (classes that never fit are not listed)
    fixed-shape       fixed plans take n = H = R = 1; non-hierarchical classes R = 1
    sync-overlap      z >= each part of the outer step: with streaming, z >= ln t_step,
                      z >= ln(t_sync(n)) - ln H (flat, PP-group), plus z >= ln t_reg - ln H
                      and the WAN sync over H R (hierarchical); without streaming, z >= the
                      tabulated ln(outer/(H R)) per (class, n) (and R)
    efficiency        omega <= ln(eta_H eta_R)(n, H sqrt R), tabulated per (n, R) over H
    time-to-target    L >= kappa_c - ln n + z - omega for the chosen class
    duration-limit    L <= ln(run-duration limit)
    nodes-used        nodes >= N of the chosen class (min_cost)

Every "for the chosen class / n / R" row is switched off by a big-M computed from the
tables' own ranges. The objective pushes z and L down and omega up, so at an optimum
they equal their definitions and the model's objective is the evaluator's time (or
cost) of the decoded plan: `planner.solvers` re-scores it and certifies it exactly.

The model grows with the domains: n_max + H_max + R_max binaries, and (n_max R_max) H_max
non-zeros in the efficiency rows, since eta_R couples n and H_eff (and, without streaming,
the sync rows couple class, n and H too). `estimate_size` says how large it would be.
Only C_local targets: a C_quality target scores eta_R at the run's own tokens, which
couples every decision (`UnsupportedTarget`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from planner.solvers import bnb
from planner.cost import quality
from planner.cost.modes import throughput
from planner.cost.run import replica_efficiency
from planner.cost.score import time_to_target
from planner.cost.setting import PlanBatch, Setting
from planner.cost.straggler import eta_h_divisor
from planner.mip.model import INF, Model
from planner.solvers import UnsupportedBySolver
from planner.space import Classes, DecisionSpace

OMEGA_FLOOR = -200.0      # ln of an efficiency of ~1e-87: the plan never reaches its target
CHECK_REL = 1e-9


MAX_NONZEROS = 20_000_000     # above this the model is not built (memory and build time): say so


class ModelTooLarge(UnsupportedBySolver):
    """The model would be too large to build here."""


class FormulationError(AssertionError):
    """The cost model did not factor as the formulation assumes (a bug, never an input error)."""


class UnsupportedTarget(UnsupportedBySolver):
    """A question this formulation cannot express."""


@dataclass
class Formulation:
    """A built model and what is needed to read a plan back from a solution."""

    model: Model
    objective: str
    groups: list[Classes]            # class groups (one mode, precision and EP scope each)
    sync_keys: list[tuple[int, int]]  # y[c] -> (group, class)
    fixed_keys: list[tuple[int, int]]  # lam[c] -> (group, class)
    fixed_log_time: np.ndarray       # ln T of each fixed plan
    y: np.ndarray
    lam: np.ndarray
    u: np.ndarray
    v: np.ndarray
    w: np.ndarray
    col_L: int
    col_nodes: int | None

    def decode(self, x: np.ndarray) -> PlanBatch:
        """The plan a solution vector chooses (one row)."""
        n = int(np.argmax(x[self.u])) + 1
        h = int(np.argmax(x[self.v])) + 1
        r = int(np.argmax(x[self.w])) + 1
        chosen = np.concatenate([x[self.y], x[self.lam]])
        k = int(np.argmax(chosen))
        if k >= self.y.size:
            g, c = self.fixed_keys[k - self.y.size]
            return self.groups[g].plans(np.array([c]), 1, 1, 1)
        g, c = self.sync_keys[k]
        return self.groups[g].plans(np.array([c]), n, h, r)

    def fixing(self, group: int, cls: int, n: int, h: int = 1, r: int = 1) -> dict[int, tuple[float, float]]:
        """Column bounds that fix the model to one plan (class `cls` of `group` with n, H, R):
        for checking the model against the evaluator plan by plan."""
        bounds = {int(j): (0.0, 0.0) for j in np.concatenate([self.y, self.lam, self.u, self.v, self.w])}
        key = (group, cls)
        if key in self.sync_keys and not (n == 1 and key in self.fixed_keys):
            bounds[int(self.y[self.sync_keys.index(key)])] = (1.0, 1.0)
            n_, h_, r_ = n, h, r
        else:
            bounds[int(self.lam[self.fixed_keys.index(key)])] = (1.0, 1.0)
            n_, h_, r_ = 1, 1, 1
        for cols, k in ((self.u, n_), (self.v, h_), (self.w, r_)):
            bounds[int(cols[k - 1])] = (1.0, 1.0)
        return bounds


def estimate_size(setting: Setting, space: DecisionSpace, groups: list[Classes] | None = None) -> dict[str, int]:
    """Binaries and non-zeros the model would have (to within a few per cent), without building it."""
    groups = list(bnb.batches(setting, space)) if groups is None else groups
    n_max, h_max, r_max = _domains(groups, space)
    classes = fixed = nonzeros = 0
    for c in groups:
        if c.rows.mode == "pipeline_wan":
            fixed += c.size
            continue
        classes += c.size
        width = (c.n_hi - c.n_lo + 1)
        nonzeros += c.size * (n_max + 4)                                  # time-to-target
        if c.rows.mode == "hierarchical":
            nonzeros += np.where(c.rows.streaming, width + 2 * h_max + r_max + 6,
                                 width * r_max * (h_max + 3)).sum()
        else:
            nonzeros += np.where(c.rows.streaming, width + h_max + 4, width * (h_max + 2)).sum()
    nonzeros += 6 * (n_max + classes + fixed) + 8 * fixed                 # choice, limits, fixed shape
    nonzeros += n_max * r_max * (h_max + 3)                               # efficiency
    return {"binaries": int(classes + fixed + n_max + h_max + r_max), "nonzeros": int(nonzeros)}


def _domains(groups: list[Classes], space: DecisionSpace):
    n_max = max((int(c.n_hi.max()) for c in groups if c.rows.mode != "pipeline_wan"), default=1)
    h_max = space.max_inner_steps if any(c.rows.mode != "pipeline_wan" for c in groups) else 1
    r_max = space.max_regional_rounds if any(c.rows.mode == "hierarchical" for c in groups) else 1
    return max(n_max, 1), h_max, r_max


def build(setting: Setting, space: DecisionSpace, objective: str = "min_time") -> Formulation:
    """The model of `space` for `objective` (min_time or min_cost); see the module docstring."""
    if setting.target_kind != "c_local":
        raise UnsupportedTarget("the mixed-integer formulation covers C_local targets only (a C_quality "
                                "target scores eta_R at the run's own tokens, which couples every decision); "
                                "use --solver bnb")
    if objective not in ("min_time", "min_cost"):
        raise UnsupportedTarget(f"the mixed-integer formulation covers min_time and min_cost, not {objective!r}")
    groups = list(bnb.batches(setting, space))
    size = estimate_size(setting, space, groups)
    if size["nonzeros"] > MAX_NONZEROS:
        raise ModelTooLarge(
            f"the mixed-integer model would have about {size['nonzeros']:,} non-zeros ({size['binaries']:,} "
            f"binaries; eta_R couples n and H, so it grows as n_max x R_max x H_max); narrow the search "
            f"(search.max_inner_steps, fleet.nodes) or use --solver bnb")
    n_max, h_max, r_max = _domains(groups, space)
    m = Model(name="dtplan")
    b = _Builder(setting, space, m, groups, n_max, h_max, r_max, objective)
    b.columns()
    b.tables()
    b.choice()
    b.fixed_shape()
    b.structure()
    b.node_limit()
    b.budget_limit()
    b.memory_cap()
    b.sync_overlap()
    b.efficiency()
    b.time_to_target()
    b.duration_limit()
    if objective == "min_cost":
        b.nodes_used()
        m.objective = {b.col_nodes: setting.node_price_usd if setting.node_price_usd > 0 else 1.0}
    else:
        m.objective = {b.col_L: 1.0}
    return Formulation(m, objective, groups, b.sync_keys, b.fixed_keys, b.fixed_log_time,
                       b.y, b.lam, b.u, b.v, b.w, b.col_L, b.col_nodes)


class _Builder:
    """Fills the model family by family (one method each, named after the family)."""

    def __init__(self, s, space, m, groups, n_max, h_max, r_max, objective):
        self.s, self.space, self.m, self.groups = s, space, m, groups
        self.n_max, self.h_max, self.r_max, self.objective = n_max, h_max, r_max, objective
        self.sync_keys: list[tuple[int, int]] = []
        self.fixed_keys: list[tuple[int, int]] = []
        for g, c in enumerate(groups):
            for k in range(c.size):
                if c.rows.mode == "pipeline_wan":
                    self.fixed_keys.append((g, k))
                    continue
                if c.rows.mode == "flat" and c.n_lo[k] == 1:
                    self.fixed_keys.append((g, k))        # n = 1: local training
                if c.rows.mode != "flat" or c.n_hi[k] >= 2:
                    self.sync_keys.append((g, k))
        self.col_nodes = None

    # -- columns and tables -------------------------------------------------------------

    def columns(self):
        m = self.m
        self.y = m.add_binaries("y", [self._label(g, k) for g, k in self.sync_keys])
        self.lam = m.add_binaries("lam", [self._label(g, k) + ",n=1" for g, k in self.fixed_keys])
        self.u = m.add_binaries("u", range(1, self.n_max + 1))
        self.v = m.add_binaries("v", range(1, self.h_max + 1))
        self.w = m.add_binaries("w", range(1, self.r_max + 1))
        self.ln_i = np.log(np.arange(1, self.n_max + 1))
        self.ln_h = np.log(np.arange(1, self.h_max + 1))
        self.ln_r = np.log(np.arange(1, self.r_max + 1))

    def _label(self, g, k):
        c = self.groups[g]
        r = c.rows
        parts = [r.mode, r.precision]
        if r.expert_parallel != "none":
            parts.append(f"ep={r.expert_parallel}")
        if r.mode == "hierarchical":
            parts.append(f"k={int(r.group_size[k])}")
        if r.mode in ("pp_group", "pipeline_wan"):
            parts += [f"S={int(r.stages[k])}", f"M={int(r.micro_batches[k])}", f"Ca={float(r.activation_compression[k]):g}"]
        if r.mode != "pipeline_wan":
            parts += [f"Cr={float(r.compression[k]):g}", "stream" if r.streaming[k] else "nostream"]
        return ",".join(parts)

    def _plans(self, g, k, n, h, r) -> PlanBatch:
        c = self.groups[g]
        n, h, r = np.broadcast_arrays(np.asarray(n), np.asarray(h), np.asarray(r))
        return c.plans(np.full(n.shape, k), n, h, r)

    def tables(self):
        """Per class: n range, ln t_step, sync parts, kappa; per fixed plan: ln T. All from the
        evaluator, one vectorised call per class group and quantity."""
        s = self.s
        self.fixed_log_time = np.empty(len(self.fixed_keys))
        for j, (g, k) in enumerate(self.fixed_keys):
            t = time_to_target(s, self._plans(g, k, 1, 1, 1))["time_to_target_s"][0]
            self.fixed_log_time[j] = math.log(t) if np.isfinite(t) and t > 0 else INF
        self.cls = []
        for g, c in enumerate(self.groups):
            ks = np.array([k for gg, k in self.sync_keys if gg == g], dtype=np.int64)
            if ks.size:
                self.cls += self._group_tables(g, c, ks)

    def _group_tables(self, g: int, c: Classes, ks: np.ndarray) -> list[dict]:
        s = self.s
        mode = c.rows.mode
        lo = np.maximum(c.n_lo[ks], 2) if mode == "flat" else c.n_lo[ks]
        hi = c.n_hi[ks]
        width = hi - lo + 1
        owner = np.repeat(np.arange(ks.size), width)
        ns = np.arange(owner.size) - np.repeat(np.cumsum(width) - width, width) + lo[owner]
        t = throughput(s, c.plans(ks[owner], ns, 1, 1))
        step = t["t_step_s"]
        if np.any(np.abs(step - step[np.repeat(np.cumsum(width) - width, width)]) > 1e-12 * step):
            raise FormulationError(f"t_step varies with n in a {mode} class")
        kappa = self._kappa(c, ks, lo)
        hierarchical = mode == "hierarchical"
        for n, h, r in ((hi, self.h_max, self.r_max), (lo, max(1, self.h_max // 2), 1)):
            r = r if hierarchical else 1
            z = self._z(c, ks, n, h, r)
            got = kappa - np.log(n) + z - self.omega_table(n, np.full(n.shape, h * math.sqrt(r)))
            want = np.log(time_to_target(s, c.plans(ks, n, h, r))["time_to_target_s"])
            bad = np.isfinite(want) & np.isfinite(kappa) & (np.abs(got - want) > CHECK_REL * np.maximum(1.0, np.abs(want)))
            if bad.any():
                k = int(ks[np.argmax(bad)])
                raise FormulationError(f"ln T does not factor for {self._label(g, k)} at H={h}, R={r}")
        starts = np.cumsum(width) - width
        out = []
        for a, k in enumerate(ks):
            part = slice(starts[a], starts[a] + width[a])
            out.append({"g": g, "k": int(k), "lo": int(lo[a]), "hi": int(hi[a]), "unit": int(c.unit[k]),
                        "mode": mode, "streaming": bool(c.rows.streaming[k]), "ns": ns[part],
                        "ln_step": float(np.log(step[starts[a]])),
                        "ln_sync_base": float(np.log(t["t_sync_base_s"][starts[a]])),
                        "ln_f": np.log(t["f_sync"][part]),
                        "ln_reg": float(np.log(t["t_regional_s"][starts[a]])) if hierarchical else None,
                        "kappa": float(kappa[a])})
        return out

    def _z(self, c: Classes, ks, n, h, r) -> np.ndarray:
        """ln(outer step / (H R)) of the classes ks at (n, H, R)."""
        t = throughput(self.s, c.plans(ks, n, h, r))
        return np.log(t["outer_time_s"] / (h * r))

    def omega_table(self, n, h_eff) -> np.ndarray:
        """ln(eta_H(H_eff) * eta_R(n, H_eff)) at the target point (COST_MODEL.md sections 5, 7), floored."""
        s = self.s
        a = s.assumptions
        eta_h = quality.eta_sync_interval(h_eff, s.params, a, eta_h_divisor(a))
        eta_r = replica_efficiency(s, n, h_eff, s.target_tokens, s.target)
        with np.errstate(divide="ignore"):
            return np.maximum(np.log(eta_h * eta_r), OMEGA_FLOOR)

    def _kappa(self, c: Classes, ks, n) -> np.ndarray:
        """kappa_c = ln T + ln n - z + omega at (n, H = 1, R = 1) of each class (inf: never reaches the target)."""
        t = time_to_target(self.s, c.plans(ks, n, 1, 1))["time_to_target_s"]
        ok = np.isfinite(t) & (t > 0)
        with np.errstate(divide="ignore", invalid="ignore"):
            kappa = np.log(t) + np.log(n) - self._z(c, ks, n, 1, 1) + self.omega_table(n, np.ones(n.shape))
        return np.where(ok, kappa, INF)

    # -- families -------------------------------------------------------------------------

    def choice(self):
        m = self.m
        m.add_row("choice", np.concatenate([self.y, self.lam]), np.ones(self.y.size + self.lam.size), 1, 1)
        for cols in (self.u, self.v, self.w):
            m.add_row("choice", cols, np.ones(cols.size), 1, 1)

    def fixed_shape(self):
        """Fixed plans use n = H = R = 1; classes other than hierarchical use R = 1."""
        m = self.m
        for lam in self.lam:
            for first in (self.u[0], self.v[0], self.w[0]):
                m.add_row("fixed-shape", [first, lam], [1.0, -1.0], 0)
        flat_like = [int(self.y[j]) for j, e in enumerate(self.cls) if e["mode"] != "hierarchical"]
        if flat_like and self.r_max > 1:
            m.add_row("fixed-shape", [self.w[0]] + flat_like, [1.0] + [-1.0] * len(flat_like), 0)

    def _n_row(self, family, bound_of, sense):
        """n >= (or <=) sum_c bound_c y_c (+ 1 for fixed plans, which use n = 1)."""
        bounds = np.array([bound_of(e) for e in self.cls], dtype=float)
        cols = np.concatenate([self.u, self.y, self.lam])
        coefs = np.concatenate([np.arange(1, self.n_max + 1), -bounds, -np.ones(self.lam.size)])
        if sense == ">=":
            self.m.add_row(family, cols, coefs, lo=0)
        else:
            self.m.add_row(family, cols, coefs, hi=0)

    def structure(self):
        """Two DiLoCo replicas at least (two groups of k nodes in hierarchical mode)."""
        def least(e):
            c = self.groups[e["g"]]
            return 2 * int(c.rows.group_size[e["k"]]) if e["mode"] == "hierarchical" else 2
        self._n_row("structure", least, ">=")

    def node_limit(self):
        """search.min_nodes <= n * unit <= min(fleet nodes, limits.max_nodes)."""
        sp = self.space
        self._n_row("node-limit", lambda e: sp.max_nodes // e["unit"], "<=")
        self._n_row("node-limit", lambda e: max(1, -(-sp.min_nodes // e["unit"])), ">=")

    def budget_limit(self):
        s = self.s
        if s.budget_usd is None or s.node_price_usd <= 0:
            return
        self._n_row("budget-limit", lambda e: math.floor(s.budget_usd / (e["unit"] * s.node_price_usd)), "<=")

    def memory_cap(self):
        """With global EP the state per node falls with n: n >= the least n that fits (by the
        evaluator's memory figure, `DecisionSpace.classes`); other classes fit at every n."""
        if any(self.groups[e["g"]].rows.expert_parallel == "global" for e in self.cls):
            self._n_row("memory-cap", lambda e: e["lo"] if self.groups[e["g"]].rows.expert_parallel == "global"
                        else 1, ">=")
        for e in self.cls:     # the interval the space derived must be what the rows allow
            if e["lo"] > e["hi"]:
                raise FormulationError(f"empty n range for {self._label(e['g'], e['k'])}")

    def sync_overlap(self):
        """z >= each part of the outer step per inner step of one replica.

        Rows shared by many classes carry each class's constant on its y column (and a
        constant low enough to switch the row off on the y of classes it does not
        concern): z >= sum_c ln t_step_c y_c for every class; for streaming classes with
        the same straggler table (flat and PP-group: f of n; hierarchical: f of n // k)
        z >= sum_c ln t_sync_base_c y_c + sum_i ln f(i) u_i - ln H (- ln R); for streaming
        hierarchical classes z >= sum_c ln t_reg_c y_c - ln H. Without streaming the
        outer step is a sum, tabulated per (class, n, R) over H, switched by big-M.
        A fixed plan (lam) has z = 0: z >= z_lo (1 - sum lam).
        """
        m = self.m
        z_lo = min((e["ln_step"] for e in self.cls), default=0.0)
        z_lo = min(z_lo, 0.0)
        self.col_z = m.add_col("z", z_lo, INF)
        all_y = [int(c) for c in self.y]
        lam = [int(c) for c in self.lam]
        if lam:
            m.add_row("sync-overlap", [self.col_z] + lam, [1.0] + [z_lo] * len(lam), lo=z_lo)
        if all_y:
            m.add_row("sync-overlap", [self.col_z] + all_y, [1.0] + [-e["ln_step"] for e in self.cls], lo=0.0)
        z_hi = max([0.0] + [e["ln_step"] for e in self.cls])
        shared: dict[tuple, list[int]] = {}   # straggler-table key -> classes
        for j, e in enumerate(self.cls):
            if e["streaming"]:
                key = ("k", int(self.groups[e["g"]].rows.group_size[e["k"]])) if e["mode"] == "hierarchical" else ("n",)
                shared.setdefault(key, []).append(j)
        for key, members in shared.items():
            f_table = np.zeros(self.n_max)
            for j in members:
                e = self.cls[j]
                prev = f_table[e["ns"] - 1]
                seen = prev != 0
                if np.any(np.abs(prev[seen] - e["ln_f"][seen]) > 1e-12):
                    raise FormulationError(f"straggler tables differ within {key}")
                f_table[e["ns"] - 1] = e["ln_f"]
            hier = key[0] == "k"
            consts = {j: self.cls[j]["ln_sync_base"] for j in members}
            top = max(consts.values()) + float(f_table.max())
            z_hi = max(z_hi, top)
            off = float(f_table.max()) - z_lo     # on any other class or fixed plan the row reads z >= (<= z_lo)
            cols = [self.col_z] + all_y + lam + list(self.u) + list(self.v) + (list(self.w) if hier else [])
            coefs = ([1.0] + [-consts.get(j, -off) for j in range(len(all_y))] + [off] * len(lam)
                     + list(-f_table) + list(self.ln_h) + (list(self.ln_r) if hier else []))
            m.add_row("sync-overlap", cols, coefs, lo=0.0)
        regional = {j: e["ln_reg"] for j, e in enumerate(self.cls) if e["streaming"] and e["mode"] == "hierarchical"}
        if regional:
            off = -z_lo
            cols = [self.col_z] + all_y + lam + list(self.v)
            coefs = [1.0] + [-regional.get(j, -off) for j in range(len(all_y))] + [off] * len(lam) + list(self.ln_h)
            m.add_row("sync-overlap", cols, coefs, lo=0.0)
        for j, e in enumerate(self.cls):
            if e["streaming"]:
                continue
            y = all_y[j]
            r_values = range(1, self.r_max + 1) if e["mode"] == "hierarchical" else [1]
            hs = np.arange(1, self.h_max + 1)
            for n in e["ns"]:
                for r in r_values:
                    t = throughput(self.s, self._plans(e["g"], e["k"], np.full(hs.size, n), hs, r))
                    table = np.log(t["outer_time_s"] / (hs * r))
                    act = [y, int(self.u[n - 1])] + ([int(self.w[r - 1])] if e["mode"] == "hierarchical" else [])
                    top = float(table.max())
                    z_hi = max(z_hi, top)
                    big = top - z_lo
                    # z - table.v - big * sum(act) >= -big * len(act)
                    m.add_row("sync-overlap", np.concatenate([[self.col_z], self.v, act]),
                              np.concatenate([[1.0], -table, -big * np.ones(len(act))]), lo=-big * len(act))
        self.z_lo, self.z_hi = z_lo, z_hi

    def efficiency(self):
        """omega <= ln(eta_H eta_R)(n, H sqrt R) for the chosen n and R, over every H:
        one row per (n, R), switched off by big-M when that n or R is not chosen.

        (A joint-choice formulation, p[n, H, R] >= 0 with the one-hots as its marginals,
        is exact too and has the tighter LP relaxation, but measured 2-30x slower with both
        backends on the instances of docs/mip.md; a fixed plan (n = 1) has omega = 0,
        which the bound omega <= 0 allows.)"""
        m = self.m
        n_lo = min((e["lo"] for e in self.cls), default=2)
        ns = np.arange(n_lo, self.n_max + 1)
        hs = np.arange(1, self.h_max + 1)
        rs = np.arange(1, self.r_max + 1)
        nn, rr, hh = np.meshgrid(ns, rs, hs, indexing="ij")
        table = self.omega_table(nn.ravel(), (hh * np.sqrt(rr)).ravel()).reshape(nn.shape)
        self.col_omega = m.add_col("omega", float(table.min()) if table.size else 0.0, 0.0)
        if table.size and table.max() > 1e-12:
            raise FormulationError("an efficiency above 1")
        for a, n in enumerate(ns):
            for b, r in enumerate(rs):
                row = table[a, b]
                big = -float(row.min())
                act = [int(self.u[n - 1])] + ([int(self.w[r - 1])] if self.r_max > 1 else [])
                # omega - row.v + big * sum(act) <= big * len(act)
                m.add_row("efficiency", np.concatenate([[self.col_omega], self.v, act]),
                          np.concatenate([[1.0], -row, big * np.ones(len(act))]), hi=big * len(act))

    def time_to_target(self):
        """L = sum_c kappa_c y_c + sum_f ln T_f lam_f - sum_i ln(i) u_i + z - omega.

        Exact without big-M: one class or fixed plan is chosen; a fixed plan has n = 1,
        z = 0 and omega = 0 (omega <= 0 always: no efficiency exceeds 1). A class or fixed
        plan that never reaches the target (infinite time) is excluded."""
        m = self.m
        self.col_L = m.add_col("L", -INF, INF)
        kappa = np.array([e["kappa"] for e in self.cls])
        fixed = self.fixed_log_time
        for cols, values in ((self.y, kappa), (self.lam, fixed)):
            for col in cols[~np.isfinite(values)]:
                m.add_row("time-to-target", [int(col)], [1.0], hi=0)
        cols = np.concatenate([[self.col_L], self.y, self.lam, self.u, [self.col_z, self.col_omega]])
        coefs = np.concatenate([[1.0], -np.nan_to_num(kappa, posinf=0.0), -np.nan_to_num(fixed, posinf=0.0),
                                self.ln_i, [-1.0, 1.0]])
        m.add_row("time-to-target", cols, coefs, lo=0.0, hi=0.0)

    def duration_limit(self):
        self.m.add_row("duration-limit", [self.col_L], [1.0], hi=math.log(self.s.window_s))

    def nodes_used(self):
        """nodes >= n * unit for the chosen class; nodes >= S for a chosen WAN pipeline."""
        m = self.m
        self.col_nodes = m.add_col("nodes", 1, self.space.max_nodes, integer=True)
        for j, e in enumerate(self.cls):
            big = e["unit"] * self.n_max
            m.add_row("nodes-used", np.concatenate([[self.col_nodes], self.u, [int(self.y[j])]]),
                      np.concatenate([[1.0], -e["unit"] * np.arange(1, self.n_max + 1), [-big]]), lo=-big)
        for j, (g, k) in enumerate(self.fixed_keys):
            nodes = int(self.groups[g].unit[k])
            m.add_row("nodes-used", [self.col_nodes, int(self.lam[j])], [1.0, -nodes], lo=0)
