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
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from operator import attrgetter

import numpy as np

from planner.objectives import Objective
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
    at_lo = throughput(s, c.plans(ks, lo, 1, 1))
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
        eff = run.efficiency_without_replicas(s, c.plans(ks, lo, 1, 1), at_lo)
        gain = eff["eta_c"] * eff["eta_a"]
    else:
        gain = np.ones(ks.size)
    kappa = t.log_time(c.plans(ks, lo, 1, 1)) + np.log(lo) - z1 + t.omega(lo, np.ones(lo.shape), gain)
    # max_compute: u = ln(window tokens) = u_const + ln n - z, ln C = compute_const + psi(u, n, H_eff)
    at_plans = c.plans(ks, lo, 1, 1)
    u1 = np.log(s.training_window_s * at_lo["tokens_per_outer"] / at_lo["outer_time_s"])
    u_const = u1 - np.log(lo) + z1
    with np.errstate(invalid="ignore"):
        compute_const = t.log_compute(at_plans) - t.psi(lo, np.ones(lo.shape), u1)
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
        want = t.log_time(c.plans(ks, n, h, r))
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
        plans = c.plans(ks, n, h, r)
        want_c = t.log_compute(plans)
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


def _octave_boxes(top: int, per_octave: int = 2) -> np.ndarray:
    """[lo, hi] rows covering 1..top, `per_octave` per octave (two: 1, 2, 3, 4, 6, 8, 12, ...)."""
    if per_octave == 2:
        lo = [1, 2, 3]
        while lo[-1] * 4 // 3 <= top:
            lo.append(lo[-1] * 4 // 3 if len(lo) % 2 == 0 else lo[-1] * 3 // 2)
    else:
        steps = int(per_octave * math.log2(max(top, 1))) + 1
        lo = sorted({1, 2, 3} | {int(round(2 ** (i / per_octave))) for i in range(steps + 1)})
    lo = [x for x in lo if x <= top]
    hi = [x - 1 for x in lo[1:]] + [top]
    return np.array([lo, hi]).T


def _in_boxes(t: Tables, nb: np.ndarray):
    """Per mode kind (flat-like, then hierarchical): (hierarchical, positions in t.sync, a column
    getter (classes x 1), n boxes clipped to each class's range lo and hi (classes x boxes), empty
    boxes (lo, hi set to n_lo there))."""
    hier_all = np.array([e.mode == "hierarchical" for e in t.sync])
    for hier in (False, True):
        at = np.flatnonzero(hier_all == hier)
        if not at.size:
            continue
        cache: dict[str, np.ndarray] = {}
        members = [t.sync[a] for a in at.tolist()]

        def col(name, members=members, cache=cache):
            if name not in cache:
                cache[name] = column(members, name)[:, None]
            return cache[name]
        n_lo, n_hi = col("n_lo"), col("n_hi")
        lo, hi = np.maximum(nb[None, :, 0], n_lo), np.minimum(nb[None, :, 1], n_hi)
        empty = lo > hi
        yield hier, at, col, np.where(empty, n_lo, lo), np.where(empty, n_lo, hi), empty


def class_bounds(t: Tables, per_octave: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """Per class and box of n (`per_octave` per octave, as the boxes of H and R): a lower bound
    on ln T over the box (min over the H and R boxes), shape (classes, n boxes), and the boxes'
    [lo, hi] of n clipped to each class's range, shape (classes, n boxes, 2); an empty box has
    bound inf.

    On a box [n1, n2] x [H1, H2] x [R1, R2] every plan has (module docstring)
        ln T >= kappa - ln n2 + z(n1, H2, R2) - omega(n1, H1 sqrt R1),
    since z never decreases with n nor increases with H or R, and omega never increases with n
    or H_eff: the bound of the branch and bound (`planner.solvers.bnb`) and of the model's
    relaxation at the grid, computed from the tables in closed form for all classes at once.
    omega is taken at the top of the class's gain bucket (`gain_buckets`; it never decreases with
    the gain), and with eta_H at the larger end of [H1 sqrt R1, H2 sqrt R2] where eta_H may rise.
    """
    nb, hb, rb = (_octave_boxes(x, per_octave) for x in (t.n_max, t.h_max, t.r_max))
    tops, which = gain_buckets(np.array([e.gain for e in t.sync]), GAIN_BUCKET_LOG)
    nn, hh, rr, gg = np.meshgrid(nb[:, 0], hb[:, 0], rb[:, 0], tops, indexing="ij")
    hi = None if t.eta_h_falls else np.meshgrid(nb[:, 0], hb[:, 1], rb[:, 1], tops, indexing="ij")
    omega_all = t.omega(nn.ravel(), (hh * np.sqrt(rr)).ravel(), gg.ravel(),
                        None if hi is None else (hi[1] * np.sqrt(hi[2])).ravel()).reshape(nn.shape)
    omega_all = np.moveaxis(omega_all, 3, 0)                     # [gain bucket, n box, H box, R box]
    bound = np.full((len(t.sync), nb.shape[0]), np.inf)
    boxes = np.zeros((len(t.sync), nb.shape[0], 2))
    for hier, at, col, lo, hi, empty in _in_boxes(t, nb):
        f = np.exp(t.ln_straggler(np.floor(lo / col("k")) if hier else lo))
        step, sync_base, reg = np.exp(col("ln_step")), np.exp(col("ln_sync_base")) * f, np.exp(col("ln_regional"))
        streaming = (col("streaming") > 0)[:, 0]
        fixed_part = col("kappa") - np.log(hi)
        best = np.full(lo.shape, np.inf)
        for rows, streams in ((np.flatnonzero(streaming), True), (np.flatnonzero(~streaming), False)):
            if not rows.size:        # streaming classes and the others apart: each computes its own outer step only
                continue
            own_step, own_base, own_reg, own_best = step[rows], sync_base[rows], reg[rows], best[rows]
            bucket = which[at][rows]
            buckets = np.unique(bucket)      # one (C_local): its row of omega broadcast, not gathered per class
            for ri, (r1, r2) in enumerate(rb if hier else rb[:1]):
                r_hi = r2 if hier else 1
                for hj, (h1, h2) in enumerate(hb):
                    sync, regional = own_base / (h2 * r_hi), own_reg / h2
                    outer = np.maximum(np.maximum(own_step, regional), sync) if streams else own_step + regional + sync
                    omega = omega_all[buckets[0], :, hj, ri][None, :] if buckets.size == 1 else \
                        omega_all[bucket, :, hj, ri]
                    own_best = np.minimum(own_best, np.log(outer) - omega)
            best[rows] = own_best
        bound[at] = np.where(empty, np.inf, fixed_part + best)
        boxes[at] = np.stack([lo, hi], axis=2)
    return bound, boxes


GAIN_BUCKET_LOG = 0.05     # class_bounds: gains rounded up to a grid of 5% in ln (a looser, still valid bound)


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


FINE_CLASSES = 500      # presolve: when at most this many classes (and more than EXACT_CLASSES) are kept,
                        # their bounds are recomputed
FINE_PER_OCTAVE = 4     # ... with this many boxes per octave of n, H and R
EXACT_CLASSES = 8       # classes solved exactly by the presolve, and by each round of the loop


NODES = "nodes"         # measure of `solve_classes` for min_cost: the fewest nodes within the duration limit


def solve_classes(t: Tables, positions, best: float = math.inf, deadline: float = math.inf, measure: str = bnb.TIME):
    """The best plan of the classes at `positions` (in `t.sync`) over all their n, H, R, found
    exactly by the branch and bound (`bnb.minimise_time`, public; one vectorised call per class
    group): (plan, ln T), or (None, inf) if none beats `best` (ln T). With the max_compute
    `measure` (`bnb.compute_measure`, 1/C): (plan, -ln C), no duration limit. With `NODES` (min_cost):
    (plan, its nodes) of a plan of the fewest nodes within the duration limit, fewer than `best`
    (`bnb.fewest_nodes_within`). Past `deadline` the answer is the best plan found so far
    (`solve_classes_within` says whether the search finished)."""
    plan, value, _ = solve_classes_within(t, positions, best, deadline, measure)
    return plan, value


def solve_classes_within(t: Tables, positions, best: float = math.inf, deadline: float = math.inf,
                         measure: str = bnb.TIME):
    """`solve_classes`, and whether the search finished before `deadline` (else no class of
    `positions` may be counted as solved)."""
    s = t.setting
    cap = s.window_s if measure == bnb.TIME else math.inf
    found_plan, found, complete = None, math.inf, True
    by_group: dict[int, list[int]] = {}
    for a in positions:
        by_group.setdefault(t.sync[a].group, []).append(t.sync[a].index)
    for g, index in sorted(by_group.items()):
        c = t.groups[g].take(np.array(sorted(index)))
        limit = min(best, found)
        if measure == NODES:
            plan, value, done = _fewest_nodes(t, c, limit, deadline)
            complete &= done
            if value < found:
                found_plan, found = plan, value
            continue
        bound = math.exp(limit) * (1 + bnb.TIE_REL) if math.isfinite(limit) else cap
        result = bnb.minimise_time(s, c, t.space.max_inner_steps, t.space.max_regional_rounds,
                                   min(bound, cap), deadline, measure)
        complete &= result.open_bound == math.inf
        if result.time_s.size:
            a = int(np.argmin(result.time_s))
            value = math.log(float(result.time_s[a]))
            if value < found:
                found_plan, found = result.batch.take(slice(a, a + 1)), value
    return (found_plan, found, complete) if found < best else (None, math.inf, complete)


def _fewest_nodes(t: Tables, c: Classes, at_most: float, deadline: float):
    """(plan, nodes, complete): a plan of the fewest nodes of the classes `c` within the duration limit,
    fewer than `at_most` (else (None, inf)), by `bnb.fewest_nodes_within`; complete unless the
    `deadline` left open a box that could hold fewer nodes than the answer."""
    s = t.setting
    witness: list = []
    fewest, _, open_nodes = bnb.fewest_nodes_within(s, c, t.space.max_inner_steps, t.space.max_regional_rounds,
                                                    s.window_s, at_most, deadline, witness=witness)
    complete = open_nodes >= fewest
    if not witness:
        return None, math.inf, complete
    return witness[0], fewest, complete


def solve_promising(t: Tables, first: int | None, solved, best: float, deadline: float, measure: str,
                    budget_s: float, lower: np.ndarray | None = None):
    """Classes solved exactly, most promising first: class `first` (the loop's: the model's choice; or
    None) and the most promising unsolved ones up to `EXACT_CLASSES` (`solve_classes`), then batches of
    the next most promising, each twice as large as the one before, as long as they finish within
    `budget_s` from the start (the presolves pass 0: `EXACT_CLASSES`). The loop
    (`planner.solvers.certified`) passes the time its last model round took, so that the exact search
    takes about as long as the model at most; it costs about a hundredth of a model round per class
    on 10^5-node instances (docs/mip.md). Promise: the least lower bound (`lower`, by default `t.class_lower`); classes whose
    bound is not below `best` are left out (they cannot beat it). Exact like `solve_classes`: (plan,
    value) of the best plan beating `best`, or (None, inf), and the positions solved (none of them
    holds a plan better than the value returned, or than `best`: those solved exactly, and those whose
    bound is not below it; a batch the `deadline` stopped is not among them)."""
    start = time.perf_counter()
    lower = t.class_lower if lower is None else lower
    head = [] if first is None else [first]
    batch = head + most_promising(t, set(solved) | set(head), EXACT_CLASSES - len(head), lower, best)
    found_plan, found, done = None, math.inf, []
    while batch:
        stop = deadline if not done else min(deadline, start + budget_s)      # the first batch in any case
        plan, value, complete = solve_classes_within(t, batch, min(best, found), stop, measure)
        if value < found:      # a plan of the classes, exact or not: a valid incumbent
            found_plan, found = plan, value
        if not complete:       # stopped at the deadline: these classes are not solved
            break
        done += batch
        if time.perf_counter() - start >= budget_s or time.perf_counter() >= deadline:
            break
        batch = most_promising(t, set(solved) | set(done), 2 * len(batch), lower, min(best, found))
    if lower is not None:      # bounded at or above the best plan known: nothing better there either
        taken = np.zeros(len(t.sync), dtype=bool)
        taken[[*done, *solved]] = True
        done += np.flatnonzero((np.asarray(lower) >= min(best, found)) & ~taken).tolist()
    return found_plan, found, done


def most_promising(t: Tables, solved, count: int, lower: np.ndarray | None = None, below: float = math.inf) -> list[int]:
    """Up to `count` positions in `t.sync` not in `solved`, least lower bound (`lower`, by default
    `class_lower`) first; with `below`, only those whose bound is below it."""
    lower = t.class_lower if lower is None else lower
    if lower is None:
        return [a for a in range(len(t.sync)) if a not in solved][:count]
    order = np.argsort(lower, kind="stable")
    return [int(a) for a in order if int(a) not in solved and lower[a] < below][:count]


def presolve(t: Tables, objective: Objective):
    """Drop the classes and fixed plans that cannot hold an optimum; return a first incumbent.

    Exact, like a MIP presolve with an objective cutoff, by the box bounds of `class_bounds`:
    - min_time: a few plans per class are scored by the evaluator (n at the upper end of its
      most promising box and at n_hi; H = 1, H_max, the balance point t_sync / t_step and its
      neighbour; R = 1 and R_max), and the `EXACT_CLASSES` classes of least bound are solved
      exactly (`solve_promising`); the best is the incumbent, and the classes whose every box
      is bounded above its time are dropped, and fixed plans slower than it;
    - min_cost: boxes bounded above the duration limit cannot hold a feasible plan; a class's
      least nodes is unit x the lower end of its first box that can (`least_nodes`); plans at the
      upper end of that box are scored, the `EXACT_CLASSES` classes of fewest least nodes are
      solved exactly (`solve_promising` with `NODES`: their fewest nodes within the limit), the
      fewest nodes among those within the limit is the incumbent, and classes (and fixed plans)
      needing more nodes, or missing the limit, are dropped; the pruned tables keep each class's
      least nodes (`Tables.class_least_nodes`).
    Returns (pruned tables, incumbent plan or None, its value: ln T or nodes; inf if none, the
    positions in the pruned tables' `sync` of the classes solved exactly: none better than it).
    """
    if not t.sync:
        return t, None, math.inf, set()
    ln_w = math.log(t.setting.window_s)
    bound, boxes = class_bounds(t)
    lower = bound.min(axis=1)
    first_box = np.argmin(bound, axis=1) if objective.by_time else np.argmax(bound <= ln_w, axis=1)
    pick_n = boxes[np.arange(len(t.sync)), first_box, 1].astype(np.int64)
    best_plan, best = None, math.inf
    for g in sorted({e.group for e in t.sync}):
        at = np.array([a for a, e in enumerate(t.sync) if e.group == g])
        members = [t.sync[a] for a in at]
        idx = np.array([e.index for e in members])
        hier = members[0].mode == "hierarchical"
        for n in (pick_n[at], np.array([e.n_hi for e in members])):
            balance = np.exp(np.array([e.ln_sync_base - e.ln_step for e in members]) + t.ln_straggler(n))
            for r in ((1, t.r_max) if hier else (1,)):
                for h in (np.ones(n.size), np.full(n.size, t.h_max), np.floor(balance / r), np.floor(balance / r) + 1):
                    plans = t.groups[g].plans(idx, n, np.clip(h, 1, t.h_max).astype(np.int64), r)
                    log_t = t.log_time(plans)
                    value = log_t if objective.by_time else np.where(log_t <= ln_w, plans.nodes, np.inf)
                    a = int(np.argmin(value))
                    if value[a] < best:
                        best, best_plan = float(value[a]), plans.take(slice(a, a + 1))
    if objective.by_time:
        for p in t.fixed:
            if p.log_time < best:
                best, best_plan = p.log_time, t.plan(p.group, p.index, 1)
        # the most promising classes, solved exactly
        plan, value, exact = solve_promising(t, None, (), best, math.inf, bnb.TIME, 0.0, lower)
        if value < best:
            best, best_plan = value, plan
        cut = best + 1e-9 * max(1.0, abs(best))
        keep = (lower <= cut) & np.isfinite(lower)         # inf: never reaches the target
        fixed = [p for p in t.fixed if p.log_time <= cut and math.isfinite(p.log_time)]
    else:
        for p in t.fixed:
            if p.log_time <= ln_w and p.nodes < best:
                best, best_plan = float(p.nodes), t.plan(p.group, p.index, 1)
        least = least_nodes(t, bound, boxes)
        # the classes of fewest least nodes, solved exactly (their fewest nodes within the limit, with a plan)
        plan, value, exact = solve_promising(t, None, (), best, math.inf, NODES, 0.0, node_promise(least, lower))
        if value < best:
            best, best_plan = value, plan
        keep = (lower <= ln_w + 1e-12) & (least <= best)
        fixed = [p for p in t.fixed if p.log_time <= ln_w and p.nodes <= best]
    if FINE_CLASSES >= keep.sum() > EXACT_CLASSES:    # the few kept: finer boxes, a tighter bound, maybe dropped
        kept = np.flatnonzero(keep)
        fine = Tables(t.setting, t.space, t.groups, [t.sync[a] for a in kept], [], t.n_max, t.h_max, t.r_max,
                      eta_h_falls=t.eta_h_falls)
        fine_bound, fine_boxes = class_bounds(fine, FINE_PER_OCTAVE)
        lower[kept] = np.maximum(lower[kept], fine_bound.min(axis=1))
        keep &= lower <= (cut if objective.by_time else ln_w + 1e-12)
        if objective.by_cost:
            least[kept] = np.maximum(least[kept], least_nodes(fine, fine_bound, fine_boxes))
            keep &= least <= best
    pruned = Tables(t.setting, t.space, t.groups, [e for e, k in zip(t.sync, keep) if k], fixed,
                    t.n_max, t.h_max, t.r_max, lower[keep], t.eta_h_falls,
                    least[keep] if objective.by_cost else None)
    at = np.cumsum(keep) - 1                               # old position -> new position
    solved = {int(at[a]) for a in exact if keep[a]}
    if pruned.sync:
        pruned.n_max = max(e.n_hi for e in pruned.sync)
    if not any(e.mode == "hierarchical" for e in pruned.sync):
        pruned.r_max = 1
    return pruned, best_plan, best, solved


def least_nodes(t: Tables, bound: np.ndarray, boxes: np.ndarray) -> np.ndarray:
    """min_cost: per class, a lower bound on the nodes of its plans within the duration limit W, from
    `class_bounds` (`bound`, `boxes`): every plan of a box of n whose bound exceeds ln W misses the limit,
    so such a plan has n at least the lower end n1 of the first box whose bound does not, and
    N = max(n unit, search.min_nodes) >= max(n1 unit, min_nodes) nodes (`Classes.nodes`); inf if no box
    meets the limit."""
    ok = bound <= math.log(t.setting.window_s) + 1e-12
    first = np.argmax(ok, axis=1)
    unit = np.array([e.unit for e in t.sync], dtype=float)
    least = np.maximum(boxes[np.arange(len(t.sync)), first, 0] * unit, max(1, t.space.min_nodes))
    return np.where(ok.any(axis=1), least, np.inf)


def node_promise(least: np.ndarray, lower: np.ndarray | None) -> np.ndarray:
    """min_cost's order of promise for `solve_promising`: fewest least nodes (integers, `least_nodes`) first,
    ties by the ln T bound `lower` (more room under the duration limit). The key least + rank / count lies in
    [least, least + 1): against a node count (an integer) it compares exactly as `least` does, so it
    also serves as the bound of the classes that cannot use fewer nodes than the incumbent."""
    if lower is None or not len(least):
        return np.asarray(least, dtype=float)
    rank = np.empty(len(least))
    rank[np.argsort(np.nan_to_num(lower, nan=np.inf), kind="stable")] = np.arange(len(least))
    return least + rank / len(least)


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


def compute_box_bounds(t: Tables) -> np.ndarray:
    """max_compute: per class an upper bound on ln C, the largest over boxes [n1, n2] x [H1, H2] of n
    and H (two per octave) of compute_const + psi(u_const + ln n2 - z(n1, H2, R_max), n1, H1): z never
    decreases with n nor increases with H or R (`class_bounds`), psi never decreases with u nor
    increases with n or H_eff (eta_H at the largest H_eff of the box where it may rise).
    Where psi is not monotone in u (`Tables.tokens_scored_eta_r`), psi_box over the box's u range
    [u_const + ln n1 - z(n2, H1, 1), the above] (`Tables.psi_box_rounded`, computed only where its
    first term B0 exceeds the class's bound so far)."""
    nb, hb = _octave_boxes(t.n_max), _octave_boxes(t.h_max)
    out = np.full(len(t.sync), -np.inf)
    ln_6p = math.log(6.0 * t.setting.active_params)
    for hier, at, col, lo, hi, empty in _in_boxes(t, nb):
        r_max = t.r_max if hier else 1
        sync_base = np.exp(col("ln_sync_base") + t.ln_straggler(np.floor(lo / col("k")) if hier else lo))
        step, streaming = np.exp(col("ln_step")), col("streaming") > 0
        best = np.full(lo.shape, -np.inf)
        slow_base = np.exp(col("ln_sync_base") + t.ln_straggler(np.floor(hi / col("k")) if hier else hi))
        for h1, h2 in hb:
            sync, reg = sync_base / (h2 * r_max), np.exp(col("ln_regional")) / h2
            outer = np.where(streaming, np.maximum(np.maximum(step, reg), sync), step + reg + sync)
            u = col("u_const") + np.log(hi) - np.log(outer)
            # the least u of the box: n1 replicas at the slowest outer step (n2, H1, R = 1), as a sum
            slow = step + np.exp(col("ln_regional")) / h1 + slow_base / h1
            u_lo = np.minimum(col("u_const") + np.log(lo) - np.log(slow), u)
            with np.errstate(invalid="ignore"):
                if t.tokens_scored_eta_r:
                    # psi_box <= B0 = ln(6 P_act g) + u: only entries where B0 beats the class's best so far
                    # need the Chinchilla terms; n at the box's unclipped lower end (m no larger: valid)
                    top = None if t.eta_h_falls else h2 * math.sqrt(r_max)
                    b0 = col("compute_const") + ln_6p + float(np.log(t.eta_h(float(h1), top))) + u
                    psi = np.where(empty, -np.inf, b0 - col("compute_const"))
                    rows, cols = np.nonzero((b0 > best) & ~empty)
                    psi[rows, cols] = t.psi_box_rounded(nb[:, 0], float(h1), u_lo[rows, cols], u[rows, cols], cols,
                                                        top)
                else:
                    top = None if t.eta_h_falls else np.full(lo.shape, h2 * math.sqrt(r_max))
                    psi = t.psi(lo, np.full(lo.shape, float(h1)), u, top)
                bound = col("compute_const") + psi
            best = np.maximum(best, np.where(np.isnan(bound), -np.inf, bound))
        out[at] = np.where(empty, -np.inf, best).max(axis=1)
    return out


def presolve_compute(t: Tables):
    """max_compute: a first incumbent and the classes that may beat it (exact, like `presolve`).

    The incumbent is the best of the fixed plans (their compute is one number each) and of a few
    plans per class (n at n_lo and n_hi; H = 1, H_max, the balance point t_sync / t_step and its
    neighbour; R = 1 and R_max), scored by the evaluator, and of the `EXACT_CLASSES` classes of
    largest bound (`compute_bounds`, `compute_box_bounds`) solved exactly (`solve_promising`).
    Classes whose bound is below it are dropped; the fixed plans leave the model (none beats the
    incumbent). Values are -ln C (the loop minimises); `class_lower` holds -(the bound).
    Returns (pruned tables, incumbent plan or None, its value, the positions in the pruned
    tables of the classes solved exactly).

    C_local (linear v1 or no replica penalty: eta_R does not depend on the tokens) has a tighter
    bound: C = 6 P_act (W gamma tokens/s) eta and T = C_target / (6 P_act eta tokens/s gamma), so
    C T = C_target W for every plan, and ln C <= ln(C_target W) - the box bound on ln T of
    `class_bounds`."""
    best_plan, best = None, math.inf
    for p in t.fixed:
        if -p.log_compute < best:
            best, best_plan = -p.log_compute, t.plan(p.group, p.index, 1)
    for g in sorted({e.group for e in t.sync}):
        members = [e for e in t.sync if e.group == g]
        idx = np.array([e.index for e in members])
        hier = members[0].mode == "hierarchical"
        for n in (np.array([e.n_lo for e in members]), np.array([e.n_hi for e in members])):
            balance = np.exp(np.array([e.ln_sync_base - e.ln_step for e in members]) + t.ln_straggler(n))
            for r in ((1, t.r_max) if hier else (1,)):
                for h in (np.ones(n.size), np.full(n.size, t.h_max), np.floor(balance / r), np.floor(balance / r) + 1):
                    plans = t.groups[g].plans(idx, n, np.clip(h, 1, t.h_max).astype(np.int64), r)
                    value = -t.log_compute(plans)
                    a = int(np.argmin(value))
                    if value[a] < best:
                        best, best_plan = float(value[a]), plans.take(slice(a, a + 1))
    keep, lower, exact = np.zeros(0, dtype=bool), None, []
    if t.sync:
        upper = compute_bounds(t)
        # the finer bounds only for classes whose coarse one can still beat the incumbent (the rest are dropped)
        live = np.flatnonzero(upper >= -best - 1e-9 * max(1.0, abs(best)))
        sub = Tables(t.setting, t.space, t.groups, [t.sync[a] for a in live], [], t.n_max, t.h_max, t.r_max,
                     eta_h_falls=t.eta_h_falls)
        if live.size:
            upper[live] = np.minimum(upper[live], compute_box_bounds(sub))
        if live.size and not t.quality_target and not t.tokens_scored_eta_r:     # eta_R the same at target and window
            upper[live] = np.minimum(upper[live], math.log(t.setting.target * t.setting.window_s)
                                     - class_bounds(sub)[0].min(axis=1))
        lower = np.where(np.isfinite(upper), -upper, np.inf)     # a lower bound on -ln C per class
        plan, value, exact = solve_promising(t, None, (), best, math.inf, bnb.compute_measure(t.setting.target_kind),
                                             0.0, lower)
        if value < best:
            best, best_plan = value, plan
        keep = np.isfinite(lower) & (lower <= best + 1e-9 * max(1.0, abs(best)))
    pruned = Tables(t.setting, t.space, t.groups, [e for e, k in zip(t.sync, keep) if k], [],
                    t.n_max, t.h_max, t.r_max, None if lower is None else lower[keep], t.eta_h_falls)
    if pruned.sync:
        pruned.n_max = max(e.n_hi for e in pruned.sync)
    if not any(e.mode == "hierarchical" for e in pruned.sync):
        pruned.r_max = 1
    at = np.cumsum(keep) - 1                               # old position -> new position
    return pruned, best_plan, best, {int(at[a]) for a in exact if keep[a]}
