"""The numbers the mixed-integer model is made of, all computed by the evaluator (`planner.cost`).

No formula of the cost model is written here: every constant is read off
`planner.cost.modes.throughput`, `planner.cost.score.time_to_target` or the efficiency
functions of `planner.cost.run` / `planner.cost.quality` at real plans, one vectorised call
per class group. The model (`planner.mip.formulation`) only arranges them.

Per class c with a DiLoCo sync (mode, precision, EP scope, S, k, M, Ca, Cr, streaming) the time
to target at n replicas, H inner steps and R regional rounds factors as (COST_MODEL.md section 7)

    ln T = kappa_c - ln n + z - omega(n, H sqrt R),      z = ln(outer step / (H R)),

with kappa_c = ln(C_target / (6 P_act B tf eta_C eta_A gamma)) read off the evaluator at one
plan, and the outer step per inner step of one replica

    flat, PP-group        streaming: max(t_step, t_sync(n) / H);   else t_step + t_sync(n) / H
    hierarchical          streaming: max(t_step, t_reg / H, t_glob(G) / (H R));  else the sum

with t_sync(n) = t_base f(parties), f the straggler factor (parties n for flat and PP-group,
G = floor(n / k) for hierarchical). `Tables.check` verifies this factorisation at two plans
of every class (`FormulationError` if it ever fails: a bug, not an input error).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from planner.cost import quality
from planner.cost.modes import throughput
from planner.cost.run import replica_efficiency
from planner.cost.score import time_to_target
from planner.cost.setting import PlanBatch, Setting
from planner.cost.straggler import eta_h_divisor, straggler_factor
from planner.solvers import bnb
from planner.space import Classes, DecisionSpace

CHECK_REL = 1e-9
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


@dataclass
class FixedPlan:
    """A plan with no DiLoCo sync (one node alone, or a pipeline over the WAN): one number."""

    group: int
    index: int
    label: str
    nodes: int
    log_time: float               # inf: never reaches the target


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

    def omega(self, n, h_eff) -> np.ndarray:
        """ln(eta_H(H_eff) eta_R(n, H_eff)) at the target point (COST_MODEL.md sections 5, 7), floored.
        Non-increasing in n and in H_eff (`planner.solvers.bnb`'s docstring gives why)."""
        s = self.setting
        a = s.assumptions
        eta_h = quality.eta_sync_interval(h_eff, s.params, a, eta_h_divisor(a))
        eta_r = replica_efficiency(s, n, h_eff, s.target_tokens, s.target)
        with np.errstate(divide="ignore"):
            return np.maximum(np.log(eta_h * eta_r), OMEGA_FLOOR)

    def ln_straggler(self, parties) -> np.ndarray:
        """ln f(parties), the WAN straggler factor (non-decreasing in the parties)."""
        return np.log(straggler_factor(np.maximum(np.asarray(parties), 1), self.setting.assumptions))

    def plan(self, group: int, index: int, n: int, h: int = 1, r: int = 1) -> PlanBatch:
        return self.groups[group].plans(np.array([index]), n, h, r)

    def log_time(self, plans: PlanBatch) -> np.ndarray:
        t = time_to_target(self.setting, plans)["time_to_target_s"]
        with np.errstate(divide="ignore"):
            return np.where(np.isfinite(t) & (t > 0), np.log(t), np.inf)


def label(c: Classes, k: int) -> str:
    """A readable name of class k: its decisions, for the written model."""
    r = c.rows
    parts = [r.mode, r.precision]
    if r.expert_parallel != "none":
        parts.append(f"ep_{r.expert_parallel}")
    if r.mode == "hierarchical":
        parts.append(f"k{int(r.group_size[k])}")
    if r.mode in ("pp_group", "pipeline_wan"):
        parts += [f"S{int(r.stages[k])}", f"M{int(r.micro_batches[k])}", f"Ca{float(r.activation_compression[k]):g}"]
    if r.mode != "pipeline_wan":
        parts += [f"Cr{float(r.compression[k]):g}", "stream" if r.streaming[k] else "nostream"]
    return "_".join(parts).replace(".", "p")


def build_tables(setting: Setting, space: DecisionSpace) -> Tables:
    """The tables of every class of the space (with its exact reductions)."""
    groups = list(bnb.batches(setting, space))
    t = Tables(setting, space, groups)
    for g, c in enumerate(groups):
        if c.rows.mode == "pipeline_wan":
            for k in range(c.size):
                t.fixed.append(FixedPlan(g, k, label(c, k), int(c.unit[k]), float(t.log_time(t.plan(g, k, 1))[0])))
            continue
        ks = np.arange(c.size)
        if c.rows.mode == "flat":
            for k in ks[c.n_lo == 1]:
                t.fixed.append(FixedPlan(g, int(k), label(c, int(k)) + "_single", 1,
                                         float(t.log_time(t.plan(g, int(k), 1))[0])))
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
    kappa = t.log_time(c.plans(ks, lo, 1, 1)) + np.log(lo) - z1 + t.omega(lo, np.ones(lo.shape))
    structure = 2 * k_size if hierarchical else np.full(ks.size, 2)
    memory = c.n_lo[ks] if c.rows.expert_parallel == "global" and mode in ("flat", "hierarchical") else np.ones(ks.size)
    out = [SyncClass(g, int(k), label(c, int(k)), mode, bool(c.rows.streaming[k]), int(c.unit[k]), int(k_size[a]),
                     int(lo[a]), int(hi[a]), int(structure[a]), int(memory[a]), float(kappa[a]),
                     float(np.log(at_lo["t_step_s"][a])), float(np.log(at_lo["t_sync_base_s"][a])), float(ln_reg[a]))
           for a, k in enumerate(ks)]
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


def _check(t: Tables, c: Classes, ks: np.ndarray, classes: list[SyncClass]) -> None:
    """ln T = kappa - ln n + z - omega at two more plans of every class (n_hi, H_max, R_max;
    n_lo, H_max // 2 + 1, R = 1), z from the constants above: the factorisation the model uses."""
    hier = classes[0].mode == "hierarchical"
    for pick_n, h, r in ((lambda e: e.n_hi, t.space.max_inner_steps, t.space.max_regional_rounds if hier else 1),
                         (lambda e: e.n_lo, t.space.max_inner_steps // 2 + 1, 1)):
        n = np.array([pick_n(e) for e in classes])
        want = t.log_time(c.plans(ks, n, h, r))
        omega = t.omega(n, np.full(n.shape, h * math.sqrt(r)))
        kappa = np.array([e.kappa for e in classes])
        z = np.array([float(outer_per_step(e, t, n[a], h, r)) for a, e in enumerate(classes)])
        with np.errstate(invalid="ignore"):
            got = kappa - np.log(n) + z - omega
            bad = np.isfinite(want) & np.isfinite(kappa) & (omega > OMEGA_FLOOR) \
                & ~(np.abs(got - want) <= CHECK_REL * np.maximum(1.0, np.abs(want)))
        if bad.any():           # (a floored omega only makes the model optimistic there: a relaxation)
            a = int(np.argmax(bad))
            raise FormulationError(f"ln T does not factor for {classes[a].label} at n={n[a]}, H={h}, R={r}: "
                                   f"{got[a]} != {want[a]}")
