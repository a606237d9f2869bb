"""The robust mixed-integer model (docs/robust.md, "The robust MIP"): the nominal model's decisions,
one measure per scenario, and the robust statistic encoded exactly; and its outer-approximation loop.

Model. One Pyomo block per scenario s of the active set A, each the nominal model of that
scenario's tables (`planner.mip.tables.build_tables` under the scenario's Setting, on the scenario's
own `Grid`) built by `planner.mip.formulation.build` into the block: its rows bound the scenario's
measure m_s = L_s = ln T_s (min_time, min_cost) or Lc_s = ln C_s (max_compute) at the block's
decisions. The decisions are one plan: the rows `link` hold every block's class and fixed-plan
choices (y, lam), n, H, R and their bracket binaries equal to the first block's (the scenarios list
the same classes, put in one order by `in_order_of`, and their grids keep the same n, H, R brackets:
every grid is refined at the same plans). With k the statistic's rank (1: worst case) over |A| scenarios:

    time:     t >= L_s - M_s z_s,   sum_s z_s <= k - 1,   t <= ln W   (W the duration limit)
    compute:  t <= Lc_s + M_s z_s,  sum_s z_s <= k - 1

with z_s binary (no z for k = 1: t >= L_s for every s). Minimise t (min_time), the nodes of the first
block (min_cost, `formulation.nodes_used`), or -t (max_compute). At a plan, t is then at least the
k-th largest of the L_s (at most k - 1 of them may be switched off), i.e. the statistic of
`planner.robust.Statistic` in log space (ln is increasing: the k-th largest of ln T is ln of the k-th
largest of T; for max_compute, the k-th largest of 1/C is 1/the k-th smallest C).

Big-M (`time_range`, `compute_range`). The model is a relaxation: every plan of the space is
feasible with each L_s (Lc_s) at a value its block allows, L_s <= ln T_s (Lc_s >= ln C_s), the
nominal model's argument per block. The statistic rows must keep that point feasible with the z_s
of the k - 1 scenarios whose values are largest (time) set to 1: t is then the largest L_j of the
others, and row s needs M_s >= L_s - t. Both sides are bounded by the block's own finite numbers:
L_s is taken at its rows' largest right-hand side at that plan, kappa_c - ln n + z - omega <=
max_c kappa_c + z_max - OMEGA_FLOOR (ln n >= 0; omega >= OMEGA_FLOOR, its variable's floor; z at
the plan's own outer step per inner step, at most the sum of every part of the outer step at n_hi,
H = R = 1: each part never decreases with n nor increases with H or R, `tables.u_range`'s argument;
a fixed plan: its ln T_f, with z = zeta ~ 0), and any L_j >= min_c kappa_c - ln n_max + z_lo -
omega_max (every variable at its bound). So M_s = Lmax_s - min_j Lmin_j is valid. For compute,
Lc_s at its rows' least right-hand side is >= min_c compute_const_c + psi_min (psi >= its
variables' floors) or a fixed plan's ln C_f, and t <= Lc_j <= max_c compute_const_c + psi_max: M_s =
max_j Lcmax_j - Lcmin_s. A class or fixed plan whose measure is infinite in scenario s (it never
reaches the target there; `block.never`) is left out of the block's rows and forces z_s = 1 (y <= z_s;
y = 0 for k = 1): the plan's value there is the largest, so s is among the k - 1 switched off.

Loop (`outer_approximation`), as `planner.solvers.certified`'s: solve, re-score the plan the
backend chose under every scenario (`plan_keys`), refine every block's grid at it, until the bound
meets the best plan's robust value. Over an active subset A of the scenarios the model is a
relaxation of the one over all S (the k-th largest over a subset is at most the k-th largest over
all), so its bound and its infeasibility hold over S; a plan whose value over S exceeds its value
over A brings the scenario in which it is worst into A (scenario generation, as `planner.robust`).
The answer is then certified by the robust branch and bound (`planner.robust.optimise`). The presolve
(the classes dropped by their bounds, every micro-batch count a class) is `planner.mip.robust_presolve`'s.
"""

from __future__ import annotations

import math
import time

import numpy as np
import pyomo.environ as pyo

from planner.cost.score import time_to_target, window_compute
from planner.cost.setting import Setting
from planner.mip.formulation import CUTOFF_LOG, Formulation, Grid, build, nodes_used
from planner.mip.robust_presolve import EveryMember, Pruning
from planner.mip.presolve import presolve, presolve_compute
from planner.mip.tables import OMEGA_FLOOR, Tables, column, outer_per_step, sync_terms
from planner.objectives import Objective
from planner.solvers import UnsupportedBySolver, backends
from planner.solvers.certified import (COMPUTE_GOING_ON_S, COMPUTE_LOG_TOL, COMPUTE_ROUNDS, LOG_TOL, MAX_ROUNDS,
                                       MipReport, backend_round, check_supported, close_report, round_ends_loop,
                                       settle_round,
                                       tables_or_refuse)
from planner.space import DecisionSpace

ROBUST_ROUNDS = 2 * MAX_ROUNDS      # rounds of the loop: the nominal loop's, twice (scenarios join on the way)
ROBUST_COMPUTE_ROUNDS = 2 * COMPUTE_ROUNDS     # max_compute, likewise (work, not seconds: `certified.COMPUTE_ROUNDS`)


class RobustModel:
    """The built model, its scenario blocks (one `Formulation` each, in the order of `scenarios`)."""

    def __init__(self, model, blocks: list[Formulation], scenarios: list[int]):
        self.model, self.blocks, self.scenarios = model, blocks, scenarios

    def decode(self):
        """The plan of the first block (every block holds the same plan: `link`)."""
        return self.blocks[0].decode()

    def families(self) -> dict[str, int]:
        out = {}
        for c in self.model.component_objects(pyo.Constraint, active=True):
            key = c.local_name.replace("_", "-")
            out[key] = out.get(key, 0) + len(c)
        return out


def in_order_of(t: Tables, like: Tables) -> Tables | None:
    """A scenario's tables `t` with its classes and fixed plans in the order of `like`'s (a class is its
    label: its decisions), or None when the two do not list the same ones on the same n, H, R ranges
    (then one plan would not be one choice in both)."""
    sync, fixed = {e.label: e for e in t.sync}, {p.label: p for p in t.fixed}
    if set(sync) != {e.label for e in like.sync} or set(fixed) != {p.label for p in like.fixed} or \
            len(sync) != len(t.sync) or len(fixed) != len(t.fixed) or \
            (t.n_max, t.h_max, t.r_max) != (like.n_max, like.h_max, like.r_max):
        return None
    t.sync, t.fixed = [sync[e.label] for e in like.sync], [fixed[p.label] for p in like.fixed]
    return t


def time_range(f: Formulation) -> tuple[float, float]:
    """(least, largest) value of the block's L at a plan (module docstring, "Big-M")."""
    t, m = f.tables, f.model
    kappa = [e.kappa for e in t.sync if math.isfinite(e.kappa)] + \
        [p.log_time for p in t.fixed if math.isfinite(p.log_time)] + [0.0]     # 0: a class left out (`never`)
    z_max = 0.0
    if t.sync:
        k = column(t.sync, "k")
        slowest = np.logaddexp(np.logaddexp(column(t.sync, "ln_step"), column(t.sync, "ln_regional")),
                               column(t.sync, "ln_sync_base") + t.ln_straggler(np.floor(column(t.sync, "n_hi") / k)))
        z_max = max(0.0, float(np.max(slowest)))
    least = min(kappa) - math.log(t.n_max) + m.z_lo - float(m.omega.ub)
    return least, max(kappa) + z_max - OMEGA_FLOOR + 1.0


def compute_range(f: Formulation) -> tuple[float, float]:
    """(least, largest) value of the block's Lc at a plan (module docstring, "Big-M")."""
    t, m = f.tables, f.model
    if m.u_axis:
        psi_lo, psi_hi = OMEGA_FLOOR, float(m.omega.ub)
    else:
        ln_6p = math.log(6.0 * t.setting.active_params)
        psi_lo, psi_hi = ln_6p + float(m.u.lb) + OMEGA_FLOOR, ln_6p + float(m.u.ub) + float(m.omega.ub)
    const = [e.compute_const for e in t.sync if math.isfinite(e.compute_const)] + [0.0]
    fixed = [p.log_compute for p in t.fixed if math.isfinite(p.log_compute)]
    least = min([min(const) + psi_lo] + fixed)
    return least - 1.0, max([max(const) + psi_hi] + fixed) + 1.0


def build_robust(tables: list[Tables], grids: list[Grid], objective: Objective, k: int, scenarios: list[int],
                 cutoff: float | None = None) -> RobustModel:
    """The robust model (module docstring) of the scenarios' `tables` on their `grids`, the k-th largest
    measure over them; `cutoff` (model units: ln T, nodes, -ln C): only plans strictly better."""
    m = pyo.ConcreteModel(name="dtplan_robust")
    blocks = []
    for a, (t, g) in enumerate(zip(tables, grids)):
        setattr(m, f"s{a}", pyo.Block())
        blocks.append(build(t, g, objective, block=getattr(m, f"s{a}")))
    first = blocks[0].model
    m.link = pyo.ConstraintList()
    for f in blocks[1:]:
        b = f.model
        for name in ("n", "H", "R"):
            if getattr(b, f"{name}_brackets") != getattr(first, f"{name}_brackets"):
                raise AssertionError(f"scenario blocks with other {name} brackets")
            m.link.add(getattr(b, name) == getattr(first, name))
            for j in getattr(b, f"B{name}"):
                m.link.add(getattr(b, f"b{name}")[j] == getattr(first, f"b{name}")[j])
        for mine, theirs in zip(list(b.yv) + list(b.lamv), list(first.yv) + list(first.lamv)):
            m.link.add(mine == theirs)
    count = len(blocks)
    m.statistic = pyo.ConstraintList()
    switched = k > 1
    if switched:
        m.zs = pyo.Var(range(count), within=pyo.Binary)
        m.statistic.add(sum(m.zs[a] for a in range(count)) <= k - 1)
    for a, f in enumerate(blocks):
        for var in f.model.never:
            m.statistic.add(var <= m.zs[a] if switched else var == 0)
    if objective.maximise:
        ranges = [compute_range(f) for f in blocks]
        top = max(hi for _, hi in ranges)
        m.t = pyo.Var(bounds=(None, top))
        for a, f in enumerate(blocks):
            m.statistic.add(m.t <= f.model.Lc + ((top - ranges[a][0]) * m.zs[a] if switched else 0.0))
        m.objective = pyo.Objective(expr=-m.t, sense=pyo.minimize)
    else:
        ranges = [time_range(f) for f in blocks]
        floor = min(lo for lo, _ in ranges)
        m.t = pyo.Var(bounds=(floor, None))
        for a, f in enumerate(blocks):
            m.statistic.add(m.t >= f.model.L - ((ranges[a][1] - floor) * m.zs[a] if switched else 0.0))
        m.statistic.add(m.t <= math.log(tables[0].setting.window_s))
        if objective.by_cost:
            nodes_used(first, tables[0], grids[0])
            m.objective = pyo.Objective(expr=first.nodes, sense=pyo.minimize)
        else:
            m.objective = pyo.Objective(expr=m.t, sense=pyo.minimize)
    m.incumbent = pyo.ConstraintList()
    if cutoff is not None and math.isfinite(cutoff):
        m.incumbent.add((first.nodes <= cutoff - 1) if objective.by_cost else
                        (-m.t <= cutoff - CUTOFF_LOG) if objective.maximise else (m.t <= cutoff - CUTOFF_LOG))
    return RobustModel(m, blocks, scenarios)


def plan_keys(settings: list[Setting], objective: Objective, batch) -> np.ndarray:
    """A one-plan batch's measure under each scenario in model units: ln T (min_time, min_cost) or
    -ln C (max_compute); inf where it never reaches the target (or no compute)."""
    if objective.maximise:
        kind = settings[0].target_kind
        c = np.array([float(window_compute(s, batch, kind)[kind][0]) for s in settings])
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(np.isfinite(c) & (c > 0), -np.log(np.where(c > 0, c, 1.0)), np.inf)
    t = np.array([float(time_to_target(s, batch)["time_to_target_s"][0]) for s in settings])
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(np.isfinite(t) & (t > 0), np.log(np.where(t > 0, t, 1.0)), np.inf)


def kth_largest(values: np.ndarray, k: int) -> float:
    """The k-th largest entry (NaN as inf)."""
    v = np.sort(np.nan_to_num(np.asarray(values, dtype=float), nan=np.inf))
    return float(v[v.size - k])


def robust_value(settings: list[Setting], objective: Objective, k: int, batch) -> tuple[float, np.ndarray]:
    """(the plan's robust value in model units, inf if it misses the duration limit under the
    statistic; its per-scenario keys)."""
    keys = plan_keys(settings, objective, batch)
    key = kth_largest(keys, k)
    if objective.maximise:
        return key, keys
    if not key <= math.log(settings[0].window_s):
        return math.inf, keys
    return (float(batch.nodes[0]) if objective.by_cost else key), keys


def _grid(t: Tables, objective: Objective, like: Grid | None = None) -> Grid:
    """A scenario's first grid; with `like`, its n, H and R points (so that the blocks' brackets agree)."""
    g = Grid.initial_compute(t) if objective.maximise else Grid.initial(t)
    if like is not None:
        g.n_points, g.h_points, g.r_points = set(like.n_points), set(like.h_points), set(like.r_points)
    return g


def _refine(grid: Grid, t: Tables, chosen: int | None, point: tuple[int, int, int], objective: Objective) -> bool:
    """Refine a scenario's grid at the plan (its own sync terms, gain and u under the scenario)."""
    n, h, r = point
    if chosen is None:
        return grid.refine(n, h, r, None, None)
    e = t.sync[chosen]
    q, ab = sync_terms(e, t, n, h, r)
    u = e.u_const + math.log(n) - float(outer_per_step(e, t, n, h, r)) if objective.maximise else None
    gain = e.gain if t.quality_target and not objective.maximise else None
    return grid.refine(n, h, r, q, ab, gain, u, e.label if objective.maximise else None)


def outer_approximation(settings: list[Setting], space: DecisionSpace, objective: Objective, k: int, backend: str,
                        first: list[int], deadline: float = math.inf, seed_space: DecisionSpace | None = None):
    """(best plan or None, its robust value in model units, MipReport) from the loop alone (module
    docstring), starting with the scenarios `first` active. The value is over every scenario.
    `seed_space` (default `space`): the space whose nominal presolve under the first scenario gives the
    first incumbent (any plan of the space will do: the reduced space's are, and its tables are smaller)."""
    check_supported(settings[0], objective)
    solver = backends()[backend]
    begun = time.perf_counter()
    compute = objective.maximise
    full: dict[int, Tables] = {}
    tables: dict[int, Tables] = {}
    grids: dict[int, Grid] = {}
    pruning = Pruning(objective, k)

    def listed(j: int) -> Tables:
        t = tables_or_refuse(settings[j], space)
        t = in_order_of(t, full[min(full)]) if full else t
        if t is None:
            raise UnsupportedBySolver(f"--robust: scenario {j} lists other classes than the instance as given; "
                                      f"the robust mixed-integer model needs the same plans in every scenario; "
                                      f"use --solver bnb")
        full[j] = t
        return t

    def join(j: int) -> None:
        tables[j] = pruning.apply(full[j] if j in full else listed(j), first=not tables)
        grids[j] = _grid(tables[j], objective, grids[min(grids)] if grids else None)

    # the first incumbent: the nominal presolve's plan of the first scenario, scored under every scenario
    seeds = [tables_or_refuse(settings[j], seed_space if seed_space is not None else space) for j in first]
    nominal = presolve_compute(seeds[0]) if compute else presolve(seeds[0], objective)
    best_plan, best = None, math.inf
    if nominal[1] is not None:
        value, _ = robust_value(settings, objective, k, nominal[1])
        if math.isfinite(value):
            best_plan, best = nominal[1], value
    if isinstance(space, EveryMember) and seed_space is not None:     # whole groups of members dropped first
        space = EveryMember.of(space, pruning.groups(seeds, best))
    for j in first:
        listed(j)
    pruning.prune({j: full[j] for j in first}, best)
    for j in first:
        join(j)
    active = sorted(first)
    report = MipReport(backend, "error", None, None, None, 0.0, 0, time.perf_counter() - begun, 0, 0, 0, 0,
                       classes=len(full[active[0]].sync) + len(full[active[0]].fixed),
                       classes_kept=len(tables[active[0]].sync) + len(tables[active[0]].fixed))
    report.tables_s = report.build_s
    bound = -math.inf
    if not tables[active[0]].sync and not tables[active[0]].fixed:     # nothing can beat the incumbent (if any)
        report.status = report.backend_status = "optimal" if best_plan is not None else "infeasible"
        bound = best if best_plan is not None else math.inf
        report.families = {}
        close_report(report, {"columns": 0, "rows": 0, "nonzeros": 0}, {}, settings[0], objective, best, bound)
        return best_plan, best, report
    tol = LOG_TOL if objective.by_time else COMPUTE_LOG_TOL if compute else 1e-6
    f = None
    for rounds in range(1, (ROBUST_COMPUTE_ROUNDS if compute else ROBUST_ROUNDS) + 1):
        start = time.perf_counter()
        f = build_robust([tables[j] for j in active], [grids[j] for j in active], objective,
                         min(k, len(active)), active, cutoff=best)
        report.build_s += time.perf_counter() - start
        r = backend_round(solver, f.model, deadline, compute, report, rounds, COMPUTE_GOING_ON_S)
        # infeasible: no plan better than the incumbent over A, hence over S
        stop, bound = settle_round(r, report, best_plan is not None, best, bound)
        if stop:
            break
        plan, _, _ = f.decode()
        value, keys = robust_value(settings, objective, k, plan)
        if value < best:
            best_plan, best = plan, value
        if round_ends_loop(r, report, bound, best - tol, compute):
            break
        grew = False
        if len(active) < len(settings) and kth_largest(keys, k) > kth_largest(keys[active], min(k, len(active))):
            worst = max((j for j in range(len(settings)) if j not in active), key=lambda j: (keys[j], -j))
            join(worst)
            active, grew = sorted(set(active) | {worst}), True
        block0 = f.blocks[0]
        refined = [_refine(grids[j], tables[j], block0.chosen, block0.point, objective) for j in active]
        if time.perf_counter() >= deadline:
            report.status = "time_limit"
            break
        if not (any(refined) or grew):
            report.status = "gap"
            break
    else:
        report.status = "gap"
    close_report(report, _size(f), f.families(), settings[0], objective, best, bound)
    return best_plan, best, report


def _size(f: RobustModel) -> dict[str, int]:
    """Columns, rows and non-zeros as the last backend read the model (HiGHS), else columns and rows
    counted from the Pyomo model (non-zeros 0: not counted)."""
    m = f.model
    if getattr(m, "matrix_size", None):
        return dict(m.matrix_size)
    cols = sum(len(v) for v in m.component_objects(pyo.Var))
    rows = sum(len(c) for c in m.component_objects(pyo.Constraint, active=True))
    return {"columns": cols, "rows": rows, "nonzeros": 0}
