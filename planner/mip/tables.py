"""The numbers the mixed-integer model is made of, all computed by the evaluator (`planner.cost`).

No formula of the cost model is written here: every constant is read off
`planner.cost.modes.throughput`, `planner.cost.score.time_to_target` or the efficiency
functions of `planner.cost.run` / `planner.cost.quality` at real plans, one vectorised call
per class group. The model (`planner.mip.formulation`) only arranges them.

Per class c with a DiLoCo sync (mode, precision, EP scope, S, k, M, Ca, Cr, streaming) the time
to target at n replicas, H inner steps and R regional rounds factors as (docs/cost_model.md section 7)

    ln T = kappa_c - ln n + z - omega(n, H sqrt R),      z = ln(outer step / (H R)),

with kappa_c = ln(C_target / (6 P_act B tf eta_C eta_A gamma)) read off the evaluator at one
plan, omega = ln(eta_H eta_R) at the target point (C_local target; `Tables.omega`), and the
outer step per inner step of one replica

    flat, PP-group        streaming: max(t_step, t_sync(n) / H);   else t_step + t_sync(n) / H
    hierarchical          streaming: max(t_step, t_reg / H, t_glob(G) / (H R));  else the sum

with t_sync(n) = t_base f(parties), f the straggler factor (parties n for flat and PP-group,
G = floor(n / k) for hierarchical). `Tables.check` verifies this factorisation at two plans
of every class (`FormulationError` if it ever fails: a bug, not an input error).

A C_quality target needs the tokens D(g, mu) at which the window view's C_quality reaches
the target (`planner.cost.run.time_to_target`), with g = eta_C eta_A eta_H (times the linear
v1 replica factor) and mu the replica loss multiplier; T = D / tokens per second / gamma. The
same factorisation holds with

    omega = ln(D_ref / D(gain_c eta_H(H_eff), mu(n, H_eff))),   D_ref = C_target / (6 P_act),

which depends on the class only through its gain_c = eta_C eta_A (`SyncClass.gain`): D never
increases with g and never decreases with mu (docs/planner.md, the branch and bound's bound),
so omega never decreases with the gain and, as for C_local, never increases with n or H_eff.
Under a C_local target omega does not depend on the gain (it sits in kappa_c) and every
class has gain 1.

This module builds the tables (`build_tables`) and holds what the model reads of them per class
(`outer_per_step`, `sync_terms`, `compute_bounds`, `gain_buckets`); the bounds over boxes of n, H
and R are `planner.mip.table_bounds`, the presolves and the exact search of classes
`planner.mip.presolve`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from operator import attrgetter

import numpy as np

from planner.cost import chinchilla, quality, run
from planner.cost.modes import throughput
from planner.cost.run import replica_efficiency
from planner.cost.score import time_to_target, window_compute
from planner.cost.setting import PlanBatch, Setting
from planner.cost.straggler import eta_h_divisor, straggler_factor
from planner.solvers import bnb, monotone
from planner.space import Classes, DecisionSpace

CHECK_REL = 1e-9
PSI_FLOOR = 0.0          # ln of one FLOP: max_compute's psi below it is raised to it (an over-estimate)
OMEGA_FLOOR = -50.0      # ln of an efficiency of ~2e-22: such a plan never reaches its target in any limit


class FormulationError(AssertionError):
    """The cost model did not factor as the formulation assumes (a bug, never an input error)."""


@dataclass
class SyncClass:
    """One class with a DiLoCo sync: its constants (natural logs of seconds) and its n range."""

    group: int
    index: int                    # row in its Classes group
    label: str
    mode: str
    streaming: bool
    unit: int                     # nodes per replica (S for PP-group, else 1)
    k: int                        # group size (hierarchical; parties of the WAN sync = n // k), else 1
    n_lo: int
    n_hi: int
    n_structure: int              # least n the mode's shape allows
    n_memory: int                 # least n whose state fits per node (global EP), else 1
    kappa: float                  # inf: never reaches the target
    ln_step: float
    ln_sync_base: float
    ln_regional: float            # hierarchical: ln t_reg, else -inf
    gain: float = 1.0             # C_quality: eta_C eta_A, on which omega depends; C_local: 1
    u_const: float = 0.0          # max_compute: u = ln(tokens in the window) = u_const + ln n - z
    compute_const: float = 0.0    # max_compute: ln C = compute_const + psi(u, n, H_eff) (`Tables.psi`)


@dataclass
class FixedPlan:
    """A plan with no DiLoCo sync (one node alone, or a pipeline over the WAN): one number."""

    group: int
    index: int
    label: str
    nodes: int
    log_time: float               # inf: never reaches the target
    log_compute: float = -math.inf  # max_compute: ln of the compute it reaches in the window


@dataclass
class Tables:
    """Everything the model needs, by class."""

    setting: Setting
    space: DecisionSpace
    groups: list[Classes]
    sync: list[SyncClass] = field(default_factory=list)
    fixed: list[FixedPlan] = field(default_factory=list)
    n_max: int = 1
    h_max: int = 1
    r_max: int = 1
    class_lower: np.ndarray | None = None   # per class, a lower bound on ln T (`class_bounds`), after presolve
    eta_h_falls: bool = True      # eta_H non-increasing in H_eff (`planner.solvers.monotone`, alpha(P) >= 0)
    class_least_nodes: np.ndarray | None = None   # min_cost: per class, a lower bound on the nodes of its plans
                                                  # within the duration limit (`presolve`)

    @property
    def quality_target(self) -> bool:
        return self.setting.target_kind == "c_quality"

    def omega(self, n, h_eff, gain=1.0, h_eff_hi=None) -> np.ndarray:
        """omega(n, H_eff) of the module docstring, floored at OMEGA_FLOOR: ln(eta_H eta_R) at the
        target point (C_local), ln(D_ref / D) (C_quality, at the class's `gain`).

        Non-increasing in n and in H_eff (`planner.solvers.bnb`'s docstring gives why) when eta_H
        falls with H_eff. `h_eff_hi` given: an upper bound over [h_eff, h_eff_hi] that needs no
        direction of eta_H (it is monotone in H_eff either way, `planner.solvers.monotone`): eta_H
        at the larger of its ends, everything else at h_eff."""
        s = self.setting
        n, h_eff = np.asarray(n, dtype=float), np.asarray(h_eff, dtype=float)
        eta_h = self.eta_h(h_eff, h_eff_hi)
        if not self.quality_target:
            eta_r = replica_efficiency(s, n, h_eff, s.target_tokens, s.target)
            with np.errstate(divide="ignore"):
                return np.maximum(np.log(eta_h * eta_r), OMEGA_FLOOR)
        # the evaluator's own C_quality inversion at one token per second (tokens needed D, in
        # wall-clock at goodput gamma), with g and mu from its inputs: no formula written twice
        shape = np.broadcast(n, h_eff, np.asarray(gain)).shape
        ones = np.ones(shape)
        t = {"tokens_per_outer": ones, "outer_time_s": ones, "synchronised": ones,
             "replicas": n * ones, "h_eff": h_eff * ones}
        eff = {"eta_h": eta_h * ones, "eta_c": np.asarray(gain, dtype=float) * ones, "eta_a": ones}
        plans = _Nodes(n * ones)
        needed = run.time_to_target(s, plans, t, eff, details=False)["time_to_target_s"] * s.goodput
        with np.errstate(divide="ignore", invalid="ignore"):
            out = np.log(s.target / (6.0 * s.active_params)) - np.log(needed)
        return np.maximum(np.where(np.isnan(out), -np.inf, out), OMEGA_FLOOR)

    def psi(self, n, h_eff, u, h_eff_hi=None) -> np.ndarray:
        """max_compute: ln of the compute reached in the window with tokens e^u, per unit of the
        class's eta_C eta_A (the class enters only through `SyncClass.compute_const`), floored
        at PSI_FLOOR:
            C_quality: ln(eta_H * Q(e^u, mu(n, H_eff))) [times the linear v1 factor] (`run.quality_compute`),
            C_local:   ln(6 P_act e^u eta_H eta_R(n, H_eff))           (`run.local_compute`).
        Read off the evaluator's own functions (a plan with eta_C = eta_A = 1), never rewritten.
        Non-decreasing in u (C_quality grows with the tokens; C_local is proportional to them)
        except where the Chinchilla replica penalty scores eta_R at the tokens (`tokens_scored_eta_r`:
        the model then bounds psi over a u bracket by `psi_box`), non-increasing in n and H_eff when
        eta_H falls with H_eff; `h_eff_hi`: eta_H at the larger end, as in `omega`."""
        s = self.setting
        n, h_eff, u = (np.asarray(x, dtype=float) for x in (n, h_eff, u))
        eta_h = self.eta_h(h_eff, h_eff_hi)
        ones = np.ones(np.broadcast(n, h_eff, u).shape)
        t = {"synchronised": ones, "replicas": n * ones, "h_eff": h_eff * ones}
        eff = {"eta_h": eta_h * ones, "eta_c": ones, "eta_a": ones}
        tokens = np.exp(u) * ones
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            if self.quality_target:
                g, mu, with_chi = run.quality_terms(s, _Nodes(n * ones), t, eff)
                c = run.quality_compute(s, tokens, g, mu, with_chi)
            else:
                c = run.local_compute(s, t, eff, tokens)[0]
            out = np.log(c)
        return np.maximum(np.where(np.isnan(out), -np.inf, out), PSI_FLOOR)

    def eta_h(self, h_eff, h_eff_hi=None) -> np.ndarray:
        """eta_H(H_eff) (`planner.cost.quality.eta_sync_interval`); with `h_eff_hi`, its largest value
        over [h_eff, h_eff_hi] (monotone either way: the larger of its ends)."""
        s = self.setting
        a = s.assumptions
        eta_h = quality.eta_sync_interval(h_eff, s.params, a, eta_h_divisor(a))
        if h_eff_hi is not None:
            eta_h = np.maximum(eta_h, quality.eta_sync_interval(h_eff_hi, s.params, a, eta_h_divisor(a)))
        return eta_h

    @property
    def tokens_scored_eta_r(self) -> bool:
        """max_compute of C_local under the Chinchilla replica penalty: eta_R is scored at the run's
        own tokens, and psi is not monotone in u (an overtrained run can lose C_local by running
        longer), so a u bracket is bounded from both of its ends (`psi_box`)."""
        return not self.quality_target and self.setting.assumptions.replica_penalty == "chinchilla"

    def psi_box(self, n, h_eff, u_lo, u_hi, h_eff_hi=None) -> np.ndarray:
        """An upper bound on psi(n', H', u) over u in [u_lo, u_hi], n' >= n, H' >= h_eff (eta_H at
        the larger end `h_eff_hi` where it may rise), equal to psi where u_lo = u_hi.

        Where psi never decreases with u (C_quality; C_local under the linear_v1 or no penalty) this
        is psi at u_hi. C_local under the Chinchilla penalty (`tokens_scored_eta_r`) is
        g 6 P_act T eta_R(T, m) with g = eta_H, m the replica loss multiplier (>= its value at
        (n, h_eff)), and eta_R = chi(m; T) / chi(1; T); with T_lo = e^u_lo, T_up = e^u_hi,
        C_up = 6 P_act T_up, Q = `run.quality_compute`, C'_x(T) the compute whose compute-optimal
        model reaches loss x L(P_act, T) (grows with T) and F the lower clamp of chi, three bounds hold
        (the branch and bound's box bounds on C_local, `planner.solvers.bnb._compute_box`):
            B0 = g C_up                                          (eta_R <= 1),
            B1 = Q(T_up, g, m) / min(1, max(C'_1(T_lo), F) / C_up)   (C_local = Q / chi(1; T)),
            B2 = max(Q(T_up, g, m), g C_up min(1, rho(m, T_lo)))  (Chinchilla E >= 0 only),
        rho(m, T) = max(C'_m(T), F) / max(C'_1(T), F), non-increasing in T for E >= 0; psi <= ln min.
        At u_lo = u_hi, B1 is C_local itself. Floored at PSI_FLOOR, as `psi`."""
        if not self.tokens_scored_eta_r:
            return self.psi(n, h_eff, u_hi, h_eff_hi)
        g, mu = self._gain_and_multiplier(n, h_eff, h_eff_hi)
        u_lo, u_hi = np.asarray(u_lo, dtype=float), np.asarray(u_hi, dtype=float)
        return self._local_box(g, u_hi, self._q(u_hi, g, mu), self._c_eq(u_lo, 1.0), self._c_eq(u_lo, mu))

    def psi_box_rounded(self, n_col, h_eff, u_lo, u_hi, cols, h_eff_hi=None, step: float = 0.01) -> np.ndarray:
        """`psi_box` of entries (u_lo, u_hi) whose n is n_col[cols] (h_eff, h_eff_hi scalars), with
        u_lo rounded down and u_hi up to multiples of `step`: a valid, slightly looser bound
        (psi_box never decreases as its bracket widens), whose costly Chinchilla terms are computed
        once per column and grid point of u rather than per entry (the presolve's box bounds of
        ~10^4 classes x boxes). Chinchilla-scored C_local only (`tokens_scored_eta_r`)."""
        n_col = np.asarray(n_col, dtype=float)
        g, mu = self._gain_and_multiplier(n_col, h_eff, h_eff_hi)            # per column
        ok = np.isfinite(u_lo) & np.isfinite(u_hi)
        k_lo = np.floor(np.where(ok, u_lo, 0.0) / step).astype(np.int64)
        k_hi = np.ceil(np.where(ok, u_hi, 0.0) / step).astype(np.int64)
        if not k_lo.size:
            return np.zeros(0)
        first = int(min(k_lo.min(), k_hi.min()))
        grid = (first + np.arange(int(max(k_lo.max(), k_hi.max())) - first + 1)) * step
        # the terms at the (grid point, column) pairs the entries use, each once (about a tenth of grid x columns)
        at_hi, hi_of = _pairs(k_hi - first, cols, (grid.size, n_col.size))
        at_lo, lo_of = _pairs(k_lo - first, cols, (grid.size, n_col.size))
        q = self._q(grid[at_hi[0]], g[at_hi[1]], mu[at_hi[1]])[hi_of]
        c1 = self._c_eq(grid, 1.0)[k_lo - first]
        cm = self._c_eq(grid[at_lo[0]], mu[at_lo[1]])[lo_of]
        return np.where(ok, self._local_box(g[cols], grid[k_hi - first], q, c1, cm), np.inf)

    def _gain_and_multiplier(self, n, h_eff, h_eff_hi=None):
        """(g, m): eta_H (at the larger end where it may rise) and the replica loss multiplier at (n, h_eff)."""
        n, h_eff = np.asarray(n, dtype=float), np.asarray(h_eff, dtype=float)
        ones = np.ones(np.broadcast(n, h_eff).shape)
        t = {"synchronised": ones, "replicas": n * ones, "h_eff": h_eff * ones}
        eff = {"eta_h": self.eta_h(h_eff, h_eff_hi) * ones, "eta_c": ones, "eta_a": ones}
        g, mu, _ = run.quality_terms(self.setting, _Nodes(n * ones), t, eff)
        return g, mu

    def _q(self, u, g, mu):
        """Q(e^u, g, m) = `run.quality_compute` (with chi)."""
        with np.errstate(over="ignore"):
            return run.quality_compute(self.setting, np.exp(u) * np.ones(np.broadcast(u, g, mu).shape), g, mu, True)

    def _c_eq(self, u, mu):
        """max(C'_m(e^u), F): the compute whose compute-optimal model reaches m L(P_act, e^u), clamped as chi."""
        a = self.setting.assumptions
        with np.errstate(over="ignore", invalid="ignore"):
            loss = chinchilla.chinchilla_loss(self.setting.active_params, np.exp(u), a) * np.asarray(mu, dtype=float)
            return np.maximum(chinchilla.equivalent_optimal_compute(loss, a), a.chi_search_low_flop)

    def _local_box(self, g, u_hi, q_up, c1_lo, cm_lo):
        """ln min(B0, B1, B2) of `psi_box` from its parts, floored at PSI_FLOOR."""
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            c_up = 6.0 * self.setting.active_params * np.exp(u_hi)
            bound = np.minimum(g * c_up, q_up / np.minimum(1.0, c1_lo / c_up))
            if self.setting.assumptions.chinchilla_e >= 0:
                bound = np.minimum(bound, np.maximum(q_up, g * c_up * np.minimum(cm_lo / c1_lo, 1.0)))
            out = np.log(bound)
        return np.maximum(np.where(np.isnan(out), np.inf, out), PSI_FLOOR)

    def log_compute(self, plans: PlanBatch) -> np.ndarray:
        """ln of the compute each plan reaches within the duration limit (window view; -inf if none)."""
        c = window_compute(self.setting, plans, self.setting.target_kind)[self.setting.target_kind]
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(np.isfinite(c) & (c > 0), np.log(c), -np.inf)

    def ln_straggler(self, parties) -> np.ndarray:
        """ln f(parties), the WAN straggler factor (non-decreasing in the parties)."""
        return np.log(straggler_factor(np.maximum(np.asarray(parties), 1), self.setting.assumptions))

    def plan(self, group: int, index: int, n: int, h: int = 1, r: int = 1) -> PlanBatch:
        return self.groups[group].plans(np.array([index]), n, h, r)

    def log_time(self, plans: PlanBatch) -> np.ndarray:
        t = time_to_target(self.setting, plans)["time_to_target_s"]
        with np.errstate(divide="ignore"):
            return np.where(np.isfinite(t) & (t > 0), np.log(t), np.inf)

    def log_time_and_compute(self, plans: PlanBatch, at: dict | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(`log_time(plans)`, `log_compute(plans)`) from ONE `modes.throughput` and ONE
        `run.efficiency_without_replicas` of the plans (`at`: their throughput when the caller has it).

        Exact: `score.time_to_target` is `run.time_to_target(s, b, throughput(s, b), efficiency(s, b, ...))`
        and `score.window_compute` takes the throughput and efficiency as arguments (`t`, `eff`); each
        of the two methods scores them afresh, the same pure functions on the same operands (neither
        result dict is written to by its readers), so the same doubles, once instead of twice.
        `build_tables` reads both at three batches of plans per class group (tests/test_tables_shared.py
        compares them with the two methods bit for bit)."""
        s = self.setting
        with np.errstate(divide="ignore", invalid="ignore"):
            at = throughput(s, plans) if at is None else at
            eff = run.efficiency_without_replicas(s, plans, at)
            t = run.time_to_target(s, plans, at, eff, details=False)["time_to_target_s"]
            c = window_compute(s, plans, s.target_kind, t=at, eff=eff)[s.target_kind]
            return np.where(np.isfinite(t) & (t > 0), np.log(t), np.inf), \
                np.where(np.isfinite(c) & (c > 0), np.log(c), -np.inf)


@dataclass
class _Nodes:
    """What `planner.cost.run.time_to_target` reads of a plan batch for a C_quality target: N."""

    nodes: np.ndarray


def column(classes, name: str, dtype=float) -> np.ndarray:
    """The field `name` of each class (SyncClass or FixedPlan) as an array (read by a C-level attrgetter)."""
    return np.fromiter(map(attrgetter(name), classes), dtype=dtype, count=len(classes))


def _pairs(rows: np.ndarray, cols: np.ndarray, shape: tuple[int, int]) -> tuple[tuple[np.ndarray, np.ndarray], np.ndarray]:
    """The distinct (row, col) pairs of entries of a table of `shape`, as (rows, cols) arrays, and each
    entry's position among them (marked in a dense table: no sort of the entries)."""
    flat = rows.astype(np.int64) * shape[1] + cols
    used = np.zeros(shape[0] * shape[1], dtype=bool)
    used[flat] = True
    distinct = np.flatnonzero(used)
    position = np.zeros(used.size, dtype=np.int64)
    position[distinct] = np.arange(distinct.size)
    return (distinct // shape[1], distinct % shape[1]), position[flat]


def label(c: Classes, k: int) -> str:
    """A readable name of class k: its decisions, for the written model."""
    return labels(c, [k])[0]


def labels(c: Classes, ks) -> list[str]:
    """`label` of each class of `ks`, the per-class columns read once as Python lists (~10^4 classes)."""
    r = c.rows
    ks = np.asarray(ks, dtype=np.int64)
    head = [{"flat": "flat", "hierarchical": "hier", "pp_group": "ppg", "pipeline_wan": "pwan"}[r.mode], r.precision]
    if r.expert_parallel != "none":
        head.append(f"ep{r.expert_parallel[0]}")
    columns = []
    if r.mode == "hierarchical":
        columns.append([f"k{int(x)}" for x in r.group_size[ks].tolist()])
    if r.mode in ("pp_group", "pipeline_wan"):
        columns += [[f"S{int(x)}" for x in r.stages[ks].tolist()], [f"M{int(x)}" for x in r.micro_batches[ks].tolist()],
                    [f"Ca{float(x):g}" for x in r.activation_compression[ks].tolist()]]
    if r.mode != "pipeline_wan":
        columns.append([f"Cr{float(x):g}" + ("" if on else "_nostream")
                        for x, on in zip(r.compression[ks].tolist(), r.streaming[ks].tolist())])
    return ["_".join(head + list(parts)).replace(".", "p") for parts in zip(*columns)] if columns else \
        ["_".join(head).replace(".", "p")] * ks.size


def build_tables(setting: Setting, space: DecisionSpace) -> Tables:
    """The tables of every class of the space (with its exact reductions)."""
    groups = list(bnb.batches(setting, space))
    t = Tables(setting, space, groups, eta_h_falls=monotone.check(setting).eta_h_falls)
    for g, c in enumerate(groups):
        ks = np.arange(c.size)
        single = ks if c.rows.mode == "pipeline_wan" else (ks[c.n_lo == 1] if c.rows.mode == "flat" else ks[:0])
        if single.size:                     # one node alone, or a pipeline over the WAN: one number each
            log_t = t.log_time(c.plans(single, 1, 1, 1))
            nodes = c.nodes(single, 1)     # N = max(S, min_nodes) for a pipeline over the WAN
            log_c = t.log_compute(c.plans(single, 1, 1, 1))
            names = labels(c, single)
            t.fixed += [FixedPlan(g, int(k), names[a] + ("_single" if c.rows.mode == "flat" else ""),
                                  int(nodes[a]), float(log_t[a]), float(log_c[a])) for a, k in enumerate(single)]
        if c.rows.mode == "pipeline_wan":
            continue
        if c.rows.mode == "flat":
            ks = ks[c.n_hi >= 2]
        if ks.size:
            t.sync += _sync_classes(t, g, c, ks)
    t.n_max = max([e.n_hi for e in t.sync], default=1)
    t.h_max = space.max_inner_steps if t.sync else 1
    t.r_max = space.max_regional_rounds if any(e.mode == "hierarchical" for e in t.sync) else 1
    return t


def _sync_classes(t: Tables, g: int, c: Classes, ks: np.ndarray) -> list[SyncClass]:
    s, mode = t.setting, c.rows.mode
    lo = np.maximum(c.n_lo[ks], 2) if mode == "flat" else c.n_lo[ks]
    hi = c.n_hi[ks]
    at_plans = c.plans(ks, lo, 1, 1)
    at_lo = throughput(s, at_plans)
    at_hi = throughput(s, c.plans(ks, hi, 1, 1))
    if np.any(np.abs(at_lo["t_step_s"] - at_hi["t_step_s"]) > 1e-12 * at_lo["t_step_s"]):
        raise FormulationError(f"t_step varies with n in a {mode} class")
    hierarchical = mode == "hierarchical"
    k_size = c.rows.group_size[ks].astype(int) if hierarchical else np.ones(ks.size, int)
    with np.errstate(divide="ignore"):
        ln_reg = np.log(at_lo["t_regional_s"]) if hierarchical else np.full(ks.size, -np.inf)
    # kappa = ln T + ln n - z + omega at (n_lo, H = 1, R = 1)
    z1 = np.log(at_lo["outer_time_s"])
    if t.quality_target:
        eff = run.efficiency_without_replicas(s, at_plans, at_lo)
        gain = eff["eta_c"] * eff["eta_a"]
    else:
        gain = np.ones(ks.size)
    log_t, log_c = t.log_time_and_compute(at_plans, at_lo)
    kappa = log_t + np.log(lo) - z1 + t.omega(lo, np.ones(lo.shape), gain)
    # max_compute: u = ln(window tokens) = u_const + ln n - z, ln C = compute_const + psi(u, n, H_eff)
    u1 = np.log(s.training_window_s * at_lo["tokens_per_outer"] / at_lo["outer_time_s"])
    u_const = u1 - np.log(lo) + z1
    with np.errstate(invalid="ignore"):
        compute_const = log_c - t.psi(lo, np.ones(lo.shape), u1)
    structure = 2 * k_size if hierarchical else np.full(ks.size, 2)
    memory = c.n_lo[ks] if c.rows.expert_parallel == "global" and mode in ("flat", "hierarchical") else np.ones(ks.size)
    # the columns as Python lists (int and float), zipped into one SyncClass per class
    ints = lambda x: np.asarray(x).astype(np.int64).tolist()
    floats = lambda x: np.asarray(x, dtype=float).tolist()
    with np.errstate(divide="ignore"):
        ln_step, ln_base = floats(np.log(at_lo["t_step_s"])), floats(np.log(at_lo["t_sync_base_s"]))
    out = [SyncClass(g, *row) for row in zip(
        ints(ks), labels(c, ks), [mode] * ks.size, np.asarray(c.rows.streaming[ks], dtype=bool).tolist(), ints(c.unit[ks]),
        ints(k_size), ints(lo), ints(hi), ints(structure), ints(memory), floats(kappa), ln_step, ln_base,
        floats(ln_reg), floats(gain), floats(u_const), floats(compute_const))]
    _check(t, c, ks, out)
    return out


def outer_per_step(e: SyncClass, t: Tables, n, h, r) -> np.ndarray:
    """z = ln(outer step / (H R)) from the class's constants (the formula of the module docstring)."""
    n, h, r = (np.asarray(x, dtype=float) for x in (n, h, r))
    parties = np.floor(n / e.k) if e.mode == "hierarchical" else n
    sync = math.exp(e.ln_sync_base) * np.exp(t.ln_straggler(parties)) / (h * r)
    reg = math.exp(e.ln_regional) / h if e.mode == "hierarchical" else 0.0 * h
    step = math.exp(e.ln_step) * np.ones_like(h)
    return np.log(np.maximum(np.maximum(step, reg), sync) if e.streaming else step + reg + sync)


def sync_terms(e: SyncClass, t: Tables, n: int, h: int, r: int):
    """(q, (a, b)) of a plan without streaming: the arguments of ln(1 + e^q) (flat, PP-group) or
    ln(1 + e^a + e^b) (hierarchical) in z = ln t_step + that (module docstring); None where unused."""
    if e.streaming:
        return None, None
    if e.mode == "hierarchical":
        a = e.ln_regional - e.ln_step - math.log(h)
        b = e.ln_sync_base + float(t.ln_straggler(n // e.k)) - e.ln_step - math.log(h) - math.log(r)
        return None, (a, b)
    return e.ln_sync_base + float(t.ln_straggler(n)) - e.ln_step - math.log(h), None


def _outer_per_step_all(classes: list[SyncClass], t: Tables, n, h, r) -> np.ndarray:
    """`outer_per_step` of each class at its own n (same H, R), vectorised."""
    col = lambda name: column(classes, name, bool if name == "streaming" else int if name == "k" else float)
    k = col("k")
    parties = np.floor(n / k) if classes[0].mode == "hierarchical" else n
    sync = np.exp(col("ln_sync_base") + t.ln_straggler(parties)) / (h * r)
    reg = np.exp(col("ln_regional")) / h
    step = np.exp(col("ln_step"))
    return np.log(np.where(col("streaming"), np.maximum(np.maximum(step, reg), sync), step + reg + sync))


def _check(t: Tables, c: Classes, ks: np.ndarray, classes: list[SyncClass]) -> None:
    """ln T = kappa - ln n + z - omega at two more plans of every class (n_hi, H_max, R_max;
    n_lo, H_max // 2 + 1, R = 1), z from the constants above: the factorisation the model uses."""
    hier = classes[0].mode == "hierarchical"
    for pick_n, h, r in ((lambda e: e.n_hi, t.space.max_inner_steps, t.space.max_regional_rounds if hier else 1),
                         (lambda e: e.n_lo, t.space.max_inner_steps // 2 + 1, 1)):
        n = np.array([pick_n(e) for e in classes])
        plans = c.plans(ks, n, h, r)
        want, want_c = t.log_time_and_compute(plans)
        omega = t.omega(n, np.full(n.shape, h * math.sqrt(r)), np.array([e.gain for e in classes]))
        kappa = np.array([e.kappa for e in classes])
        z = _outer_per_step_all(classes, t, n, h, r)
        with np.errstate(invalid="ignore"):
            got = kappa - np.log(n) + z - omega
            bad = np.isfinite(want) & np.isfinite(kappa) & (omega > OMEGA_FLOOR) \
                & ~(np.abs(got - want) <= CHECK_REL * np.maximum(1.0, np.abs(want)))
        if bad.any():           # (a floored omega only makes the model optimistic there: a relaxation)
            a = int(np.argmax(bad))
            raise FormulationError(f"ln T does not factor for {classes[a].label} at n={n[a]}, H={h}, R={r}: "
                                   f"{got[a]} != {want[a]}")
        # max_compute: ln C = compute_const + psi(u_const + ln n - z, n, H_eff)
        u = np.array([e.u_const for e in classes]) + np.log(n) - z
        psi = t.psi(n, np.full(n.shape, h * math.sqrt(r)), u)
        with np.errstate(invalid="ignore"):
            got_c = np.array([e.compute_const for e in classes]) + psi
            bad = np.isfinite(want_c) & (psi > PSI_FLOOR) \
                & ~(np.abs(got_c - want_c) <= CHECK_REL * np.maximum(1.0, np.abs(want_c)))
        if bad.any():
            a = int(np.argmax(bad))
            raise FormulationError(f"ln C does not factor for {classes[a].label} at n={n[a]}, H={h}, R={r}: "
                                   f"{got_c[a]} != {want_c[a]}")


def gain_buckets(gains: np.ndarray, step_log: float) -> tuple[np.ndarray, np.ndarray]:
    """(tops, which): the gains rounded up to exp(step_log k) (all of them when step_log is 0:
    the distinct gains), and each gain's position in tops; tops[which] >= gains."""
    if step_log <= 0 or gains.size == 0:
        tops, which = np.unique(gains, return_inverse=True)
        return tops, which.reshape(gains.shape)
    k = np.ceil(np.log(np.maximum(gains, 1e-300)) / step_log - 1e-12)
    keys, which = np.unique(k, return_inverse=True)
    return np.maximum(np.exp(keys * step_log), [gains[which == a].max() for a in range(keys.size)]), \
        which.reshape(gains.shape)


def compute_bounds(t: Tables, u: float | None = None) -> np.ndarray:
    """max_compute: per class an upper bound on ln C over all its n, H, R: compute_const +
    psi(u_max, n_lo, 1) with u_max = u_const + ln n_hi - ln t_step (z >= ln t_step; psi never
    decreases with u nor increases with n or H_eff; eta_H at the largest H_eff where it may rise);
    with `u`, over its plans whose window tokens are at most e^u (u_max capped at u)."""
    col = lambda name: column(t.sync, name)
    u_min, u_max = u_range(t)
    if u is not None:
        u_max = np.minimum(u_max, u)
    hi = None if t.eta_h_falls else np.full(len(t.sync), t.h_max * math.sqrt(t.r_max))
    with np.errstate(invalid="ignore"):
        out = col("compute_const") + t.psi_box(col("n_lo"), np.ones(len(t.sync)), np.minimum(u_min, u_max), u_max, hi)
    return np.where(np.isnan(out), -np.inf, out)


def u_range(t: Tables) -> tuple[np.ndarray, np.ndarray]:
    """max_compute: per class, (least, largest) u = ln(window tokens) = u_const + ln n - z of its
    plans: z >= ln t_step, and z <= ln of the sum of every part of the outer step at n_max, H = R = 1
    (each part never decreases with n nor increases with H or R)."""
    col = lambda name: column(t.sync, name)
    slowest = np.logaddexp(np.logaddexp(col("ln_step"), col("ln_regional")),
                           col("ln_sync_base") + t.ln_straggler(np.floor(col("n_hi") / col("k"))))
    return col("u_const") + np.log(col("n_lo")) - slowest, col("u_const") + np.log(col("n_hi")) - col("ln_step")
