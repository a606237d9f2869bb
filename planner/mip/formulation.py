"""The planning problem as a compact mixed-integer linear program in log space, written in Pyomo.

Every coefficient comes from `planner.mip.tables` (the evaluator's numbers); this module
only arranges them, one function per constraint family. Building never solves.

Decisions
    y[c]                1 if class c (a DiLoCo class: mode, precision, EP scope, S, k, M, Ca, Cr,
                        streaming) is chosen;  lam[f] 1 if fixed plan f (one node, or a pipeline
                        over the WAN) is chosen
    n, H, R             integers: replicas, inner steps, regional rounds
    bn[i], bh[j], br[r] 1 if n (H, R) lies in bracket i (j, r) of a grid `Grid` (1 per octave at
                        first, refined around each solution: `planner.solvers.certified`)
    ln_n, ln_H, ln_R    over-estimates of ln n, ln H, ln R: exact at the grid points
    z                   ln(outer step / (H R)); zeta its part above ln t_step without streaming
    q; a, b             ln of the sync part relative to t_step (flat / PP-group; hierarchical)
    omega               ln(eta_H eta_R)(n, H sqrt R), bounded above through the brackets
    L                   ln(time to target);  nodes  nodes used (min_cost)

ln T = kappa_c - ln n + z - omega (`planner.mip.tables`). Every row is a valid relaxation for
every plan of the space: ln is concave, so its chords extended are upper bounds at integers
(`logarithm`); eta_H, eta_R never increase with n or H_eff and f never decreases with the
parties, so their values at a bracket's lower end bound them (`efficiency`, `sync-overlap`);
ln(1 + e^q) and ln(1 + e^a + e^b) are convex, so their tangents bound them below
(`sync-overlap`). Hence the model's optimum is a lower bound on the true optimum, and it is
the true value wherever the chosen n, H, R are grid points and the tangents touch: the
outer-approximation loop refines the grid there until the two meet.

Size: classes + O(log n_max + log H_max + log R_max) binaries, and O(log n_max log R_max
log H_max) non-zeros in the efficiency rows, whatever n_max and H_max are.

One module of ~600 lines (issue 26: a module over ~500 lines says why): one Pyomo model, one
function per constraint family, each reading the variables the others declare; the families are
the model's rows and are checked together against the evaluator (tests/test_mip.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pyomo.environ as pyo
from pyomo.core.expr.numeric_expr import LinearExpression, MonomialTermExpression

from planner.objectives import MIN_TIME, Objective
from planner.mip.tables import OMEGA_FLOOR, Tables, column, compute_bounds, gain_buckets

GAIN_BUCKET_LOG = 0.1    # first gain buckets of the model: 10% in ln (C_quality; refined at each chosen class)

CUTOFF_LOG = 1e-9       # a plan must beat the incumbent by this much in ln T to be wanted
Q_FLOOR = -40.0          # ln of a sync share of 4e-18 of a step: the relative sync terms' lower bound
FAMILIES = ("choice", "bracket", "logarithm", "fixed-shape", "structure", "node-limit", "budget-limit",
            "memory-cap", "sync-overlap", "efficiency", "efficiency-switch", "time-to-target", "duration-limit",
            "nodes-used", "incumbent", "window-tokens", "compute-in-window", "tokens-at-plan")
LN_FLOP_CAP = 1000.0     # max_compute: switches a row off (ln of any compute, and of u, is far below it)
U_BRACKETS = 6           # max_compute: first brackets of u = ln(window tokens), below the top ...
U_OCTAVES_EACH = 4       # ... each four octaves of tokens wide (the loop halves them where it looks)
U_STEP = 1e-5            # max_compute: refined u brackets [u*, u* + U_STEP] (above the backends' 1e-6 tolerance)


def _octaves(top: int) -> list[int]:
    points = {1}
    p = 1
    while p <= top:
        points.add(p)
        p *= 2
    return sorted(x for x in points if x <= top)


@dataclass
class Grid:
    """Bracket starts of n, H, R and tangent points of the convex sync terms (refined lazily)."""

    n_top: int
    h_top: int
    r_top: int
    n_points: set = field(default_factory=set)
    h_points: set = field(default_factory=set)
    r_points: set = field(default_factory=set)
    q_points: set = field(default_factory=lambda: {-8.0, -4.0, -2.0, -1.0, 0.0, 1.0, 2.0, 4.0, 8.0})
    ab_points: set = field(default_factory=lambda: {(x, y) for x in (-6.0, -2.0, 0.0, 2.0, 6.0)
                                                      for y in (-6.0, -2.0, 0.0, 2.0, 6.0)})
    gain_points: set = field(default_factory=set)     # tops of the gain buckets (C_quality; module tables)
    u_points: set = field(default_factory=set)        # max_compute: tops of the brackets of u
    u_floor: float = 0.0                              # max_compute: lower end of the first u bracket
    u_two_sided: bool = False     # max_compute, psi not monotone in u (`Tables.tokens_scored_eta_r`): refined u
                                  # brackets on both sides of a plan's u, and that plan's u pinned (`tokens_at_plan`)
    u_pins: set = field(default_factory=set)          # (class label, n, H, R, u) of the plans refined so far

    @classmethod
    def initial(cls, t: Tables) -> "Grid":
        """One bracket per octave of n, H, R; gain buckets of GAIN_BUCKET_LOG in ln, each topped by
        the largest gain of a class in it (so that those classes are exact)."""
        gains = np.array([e.gain for e in t.sync])
        tops = set()
        if gains.size:
            _, which = gain_buckets(gains, GAIN_BUCKET_LOG)
            tops = {float(gains[which == a].max()) for a in np.unique(which)}
        return cls(t.n_max, t.h_max, t.r_max, set(_octaves(t.n_max)), set(_octaves(t.h_max)), set(_octaves(t.r_max)),
                   gain_points=tops)

    @classmethod
    def initial_compute(cls, t: Tables, cutoff: float | None = None) -> "Grid":
        """max_compute: the grid of `initial` (one gain bucket) and brackets of u = ln(window tokens):
        tops `U_OCTAVES_EACH` octaves apart below the largest u any plan can have, u_top = max_c u_const_c +
        ln n_hi - ln t_step (z >= ln t_step), `U_BRACKETS` of them, only down to the first top
        where no class can beat `cutoff` (-ln C) any more; the first bracket starts at u_floor,
        below the least u of any plan (n = 1 and the slowest outer step: every part at n_max)."""
        grid = cls(t.n_max, t.h_max, t.r_max, set(_octaves(t.n_max)), set(_octaves(t.h_max)), set(_octaves(t.r_max)))
        if not t.sync:
            return grid
        col = lambda name: column(t.sync, name)
        u_top = float(np.max(col("u_const") + np.log(col("n_hi")) - col("ln_step")))
        slowest = np.logaddexp(np.logaddexp(col("ln_step"), col("ln_regional")),
                               col("ln_sync_base") + t.ln_straggler(t.n_max))
        grid.u_floor = min(0.0, float(np.min(col("u_const") - slowest)) - 1.0)
        grid.u_two_sided = t.tokens_scored_eta_r
        tops = [u_top - k * U_OCTAVES_EACH * math.log(2.0) for k in range(U_BRACKETS)]
        tops = [u for u in tops if u > grid.u_floor]
        if cutoff is not None and math.isfinite(cutoff):
            useful = [u for u in tops if np.any(compute_bounds(t, u) >= -cutoff)]
            tops = tops[:len(useful) + 1]
        grid.u_points = set(tops)
        return grid

    def gain_brackets(self) -> list[tuple[float, float]]:
        """(previous top, top] intervals of the gains, one per point (the first from 0)."""
        tops = sorted(self.gain_points)
        return [(tops[i - 1] if i else 0.0, top) for i, top in enumerate(tops)]

    def refine(self, n: int, h: int, r: int, q: float | None, ab: tuple[float, float] | None,
               gain: float | None = None, u: float | None = None, label: str | None = None) -> bool:
        """Make n, H, R singletons of their brackets, halve (geometrically) what is left of the
        brackets they were in, add tangents at q and (a, b), make `gain` the top of a gain
        bucket and (max_compute) u the top of a u bracket, followed by [u, u + U_STEP], halving
        what is left of its bracket on both sides; with `u_two_sided`, [u - U_STEP, u] too, and
        the plan (class `label`, n, H, R) has its u pinned (`tokens_at_plan`);
        whether anything changed."""
        before = (len(self.n_points), len(self.h_points), len(self.r_points), len(self.q_points), len(self.ab_points),
                  len(self.gain_points), len(self.u_points), len(self.u_pins))
        if gain is not None:
            self.gain_points.add(float(gain))
        if u is not None and self.u_points and self.u_floor < u < max(self.u_points):
            lo, hi = next((a, b) for a, b in self.u_brackets() if a <= u <= b)
            self.u_points.update({float(u), float(u) + U_STEP})
            below = u - U_STEP if self.u_two_sided and u - U_STEP - lo > U_STEP else u
            if below < u:
                self.u_points.add(float(below))
            self.u_points.update(x for x in ((lo + below) / 2, (u + U_STEP + hi) / 2)       # halve what is left
                                 if min(abs(x - lo), abs(x - hi), abs(x - below), abs(x - u)) > U_STEP)
            if self.u_two_sided and label is not None:
                self.u_pins.add((label, int(n), int(h), int(r), float(u)))
        for points, x, top in ((self.n_points, n, self.n_top), (self.h_points, h, self.h_top),
                               (self.r_points, r, self.r_top)):
            lo, hi = next((a, b) for a, b in self.brackets(points, top) if a <= x <= b)
            new = {x, x + 1}
            if x - 1 > lo:
                new.add(int(round(math.sqrt(lo * (x - 1)))) + 1)
            if hi > x + 1:
                new.add(int(round(math.sqrt((x + 1) * hi))))
            points.update(v for v in new if 1 <= v <= top)
        if q is not None and q > Q_FLOOR + 1:
            self.q_points.add(round(q, 9))
        if ab is not None and max(ab) > Q_FLOOR + 1:
            self.ab_points.add((round(ab[0], 9), round(ab[1], 9)))
        after = (len(self.n_points), len(self.h_points), len(self.r_points), len(self.q_points), len(self.ab_points),
                 len(self.gain_points), len(self.u_points), len(self.u_pins))
        return after != before

    def u_brackets(self) -> list[tuple[float, float]]:
        """max_compute: [previous top, top] intervals of u, the first from u_floor."""
        tops = sorted(self.u_points)
        return [(tops[i - 1] if i else self.u_floor, top) for i, top in enumerate(tops)]

    @staticmethod
    def brackets(points: set, top: int) -> list[tuple[int, int]]:
        """[lo, hi] intervals covering 1..top, one starting at each point."""
        starts = sorted(points)
        return [(a, (starts[i + 1] - 1) if i + 1 < len(starts) else top) for i, a in enumerate(starts)]


@dataclass
class Formulation:
    """A built Pyomo model and what is needed to read a plan back from a solution."""

    model: pyo.ConcreteModel
    tables: Tables
    objective: Objective
    chosen: int | None = None         # position in tables.sync of the class of the last decoded plan
    point: tuple[int, int, int] = (1, 1, 1)   # (n, H, R) of the last decoded plan (replicas, not nodes)
    gain: float | None = None         # its class's gain (`SyncClass.gain`), None for a fixed plan

    def decode(self):
        """(plan batch of one row, the model's q and (a, b) values) at the model's current values;
        sets `chosen` and `point`. The plan uses N = max(n unit, min_nodes) nodes (`Classes.nodes`)."""
        m, t = self.model, self.tables
        chosen_y = [i for i, y in enumerate(m.yv) if (y.value or 0) > 0.5]
        self.chosen = chosen_y[0] if chosen_y else None
        if chosen_y:
            e = t.sync[chosen_y[0]]
            n, h, r = (int(round(pyo.value(v))) for v in (m.n, m.H, m.R))
            r = r if e.mode == "hierarchical" else 1
            self.point, self.gain = (n, h, r), e.gain
            plan = t.plan(e.group, e.index, n, h, r)
            if e.streaming:
                return plan, None, None
            if e.mode == "hierarchical":
                return plan, None, (m.a.value, m.b.value) if None not in (m.a.value, m.b.value) else None
            return plan, m.q.value, None
        f = t.fixed[[i for i, lam in enumerate(m.lamv) if (lam.value or 0) > 0.5][0]]
        self.point, self.gain = (1, 1, 1), None
        return t.plan(f.group, f.index, 1, 1, 1), None, None

    def families(self) -> dict[str, int]:
        """Rows per constraint family."""
        out = {}
        for c in self.model.component_objects(pyo.Constraint, active=True):
            out[c.local_name.replace("_", "-")] = len(c)
        return out

    def size(self) -> dict[str, int]:
        """Columns, rows and non-zeros: as the last backend read the model where it says (HiGHS,
        `matrix_size`), else counted from the Pyomo model (slow on large models: every row's
        expression is walked)."""
        m = self.model
        if getattr(m, "matrix_size", None):
            return dict(m.matrix_size)
        cols = sum(len(v) for v in m.component_objects(pyo.Var))
        rows = sum(len(c) for c in m.component_objects(pyo.Constraint, active=True))
        from pyomo.repn import generate_standard_repn
        nz = sum(len(generate_standard_repn(c.body).linear_vars)
                 for con in m.component_objects(pyo.Constraint, active=True) for c in con.values())
        return {"columns": cols, "rows": rows, "nonzeros": nz}


def build(t: Tables, grid: Grid, objective: Objective = MIN_TIME, cutoff: float | None = None,
          solved: frozenset = frozenset(), block=None) -> Formulation:
    """The model of the tables on the grid, for `objective` (min_time or min_cost).

    `cutoff` (ln T for min_time, nodes for min_cost): only plans strictly better are wanted
    (the `incumbent` family, one row): an infeasible model then proves the incumbent optimal.
    `solved`: positions in `t.sync` of classes whose best plan is known exactly (no better plan
    there than the incumbent): excluded, y = 0 (`incumbent` family too).

    `block` (a Pyomo Block; `planner.mip.robust`): one scenario's measure built into it, with no
    objective, no `duration-limit`, `nodes-used` or `incumbent` rows (the robust statistic's
    rows are the caller's), and each class or fixed plan that never reaches the target (or no
    compute) listed in `block.never` instead of held at 0 (`_finite_terms`)."""
    m = pyo.ConcreteModel(name="dtplan") if block is None else block
    m.max_compute = objective.maximise
    # C_local under linear_v1 / none: psi is linear in u, no brackets; under chinchilla eta_R depends on u
    m.u_axis = m.max_compute and (t.quality_target or t.tokens_scored_eta_r) and bool(t.sync)
    _columns(m, t, grid)
    last = (window_tokens, efficiency, compute_in_window, tokens_at_plan) if m.max_compute else \
        (efficiency, time_to_target) + ((duration_limit,) if block is None else ())
    if block is not None:
        m.never = []
    for family in (choice, bracket, logarithm, fixed_shape, structure, node_limit, budget_limit, memory_cap,
                   sync_overlap) + last:
        family(m, t, grid)
    if block is not None:
        return Formulation(m, t, objective)
    if objective.by_cost:
        nodes_used(m, t, grid)
        m.objective = pyo.Objective(expr=m.nodes, sense=pyo.minimize)
    elif m.max_compute:       # minimise -ln C, so that the loop and the backends read one sense
        m.objective = pyo.Objective(expr=-m.Lc, sense=pyo.minimize)
    else:
        m.objective = pyo.Objective(expr=m.L, sense=pyo.minimize)
    m.incumbent = pyo.ConstraintList()
    for i in sorted(solved):
        m.incumbent.add(m.yv[i] == 0)
    if cutoff is not None and math.isfinite(cutoff):
        m.incumbent.add((m.nodes <= cutoff - 1) if objective.by_cost else
                        (-m.Lc <= cutoff - CUTOFF_LOG) if m.max_compute else (m.L <= cutoff - CUTOFF_LOG))
    return Formulation(m, t, objective)


# -- columns ---------------------------------------------------------------------------------

def _columns(m, t: Tables, grid: Grid):
    m.C = pyo.Set(initialize=[e.label for e in t.sync], ordered=True)      # readable: the class's decisions
    m.F = pyo.Set(initialize=[p.label for p in t.fixed], ordered=True)
    m.y = pyo.Var(m.C, within=pyo.Binary)
    m.lam = pyo.Var(m.F, within=pyo.Binary)
    m.yv = [m.y[e.label] for e in t.sync]            # by position in t.sync / t.fixed
    m.lamv = [m.lam[p.label] for p in t.fixed]
    for name, points, top in (("n", grid.n_points, t.n_max), ("H", grid.h_points, t.h_max),
                              ("R", grid.r_points, t.r_max)):
        br = Grid.brackets(points, top)
        setattr(m, f"{name}_brackets", br)
        setattr(m, f"B{name}", pyo.Set(initialize=range(len(br))))
        setattr(m, f"b{name}", pyo.Var(getattr(m, f"B{name}"), within=pyo.Binary))
        setattr(m, name, pyo.Var(within=pyo.Integers, bounds=(1, top)))
        setattr(m, f"ln_{name}", pyo.Var(bounds=(0.0, math.log(top))))
    z_lo = min([0.0] + [e.ln_step for e in t.sync]) - 1.0
    m.z_lo = z_lo
    m.z = pyo.Var(bounds=(z_lo, None))
    m.zeta = pyo.Var(bounds=(0.0, None))
    m.q = pyo.Var(bounds=(Q_FLOOR, None))
    m.a = pyo.Var(bounds=(Q_FLOOR, None))
    m.b = pyo.Var(bounds=(Q_FLOOR, None))
    m.omega = pyo.Var(bounds=(OMEGA_FLOOR, 0.0))     # upper bound raised by `efficiency` if omega can exceed 0
    if m.max_compute:       # u = ln(window tokens); C_quality: its brackets, the third axis of `efficiency`
        m.U_brackets = grid.u_brackets()
        if m.u_axis:
            m.BU = pyo.Set(initialize=range(len(m.U_brackets)))
            m.bU = pyo.Var(m.BU, within=pyo.Binary)
        m.u = pyo.Var(bounds=(grid.u_floor, max((top for _, top in m.U_brackets), default=grid.u_floor)))
        m.Lc = pyo.Var()
    else:
        m.L = pyo.Var()


def linear_expression(coefs, variables, constant=0):
    """constant + sum_i coefs_i variables_i as one Pyomo LinearExpression, built at once (Pyomo's
    fast path: `sum` of ~10^4 terms re-wraps the expression at each `+`), term for term what the
    `sum` builds (a coefficient 1 is the variable itself, a zero one is kept, one term alone is that
    term, no term is the constant), so that the model is written exactly as before."""
    args = [v if c == 1 else MonomialTermExpression((c, v)) for c, v in zip(coefs, variables)]
    if not args:
        return constant
    if len(args) == 1 and constant == 0:
        return args[0]
    return LinearExpression(args + ([constant] if constant != 0 else []))


def _sum_y(m, t: Tables, select, coef=lambda e: 1):
    at = [i for i, e in enumerate(t.sync) if select(e)]
    return linear_expression([coef(t.sync[i]) for i in at], [m.yv[i] for i in at])


def _lam(m):
    return linear_expression([1] * len(m.lamv), m.lamv)


# -- families --------------------------------------------------------------------------------

def choice(m, t: Tables, grid: Grid):
    """One class or fixed plan; one bracket of n, of H and of R."""
    m.choice = pyo.ConstraintList()
    m.choice.add(linear_expression([1] * (len(m.yv) + len(m.lamv)), list(m.yv) + list(m.lamv)) == 1)
    for name in ("n", "H", "R") + (("U",) if getattr(m, "u_axis", False) else ()):
        b = getattr(m, f"b{name}")
        m.choice.add(sum(b[k] for k in b) == 1)


def bracket(m, t: Tables, grid: Grid):
    """n (H, R) lies in its chosen bracket: sum lo_i bn_i <= n <= sum hi_i bn_i; max_compute:
    u >= the lower end of its chosen bracket (u's upper ends are the efficiency rows' business)."""
    m.bracket = pyo.ConstraintList()
    for name in ("n", "H", "R"):
        b, br, x = getattr(m, f"b{name}"), getattr(m, f"{name}_brackets"), getattr(m, name)
        m.bracket.add(x >= sum(lo * b[k] for k, (lo, hi) in enumerate(br)))
        m.bracket.add(x <= sum(hi * b[k] for k, (lo, hi) in enumerate(br)))
    if getattr(m, "u_axis", False):
        m.bracket.add(m.u >= sum(lo * m.bU[k] for k, (lo, _) in enumerate(m.U_brackets)))
        if grid.u_two_sided:      # psi bounded from both ends of the bracket (`Tables.psi_box`)
            m.bracket.add(m.u <= sum(hi * m.bU[k] for k, (_, hi) in enumerate(m.U_brackets)))


def logarithm(m, t: Tables, grid: Grid):
    """ln_x <= ln hi of the chosen bracket, and ln_x <= the chords of ln through (i, i + 1) and
    (i - 1, i) at every grid point i (ln is concave: at every integer x its chords extended lie
    above it), so ln_x is exact at grid points and an over-estimate elsewhere."""
    m.logarithm = pyo.ConstraintList()
    for name in ("n", "H", "R"):
        b, br, x, ln_x = (getattr(m, f"b{name}"), getattr(m, f"{name}_brackets"), getattr(m, name),
                          getattr(m, f"ln_{name}"))
        m.logarithm.add(ln_x <= sum(math.log(hi) * b[k] for k, (lo, hi) in enumerate(br)))
        chords = {(p, p + 1) for p, _ in br} | {(p - 1, p) for p, _ in br if p > 1}
        for i, j in sorted(chords):
            slope = math.log(j) - math.log(i)
            m.logarithm.add(ln_x <= math.log(i) + slope * (x - i))


def fixed_shape(m, t: Tables, grid: Grid):
    """A fixed plan uses n = 1; classes other than hierarchical use R = 1."""
    m.fixed_shape = pyo.ConstraintList()
    hier = _sum_y(m, t, lambda e: e.mode == "hierarchical")
    if t.r_max > 1:
        m.fixed_shape.add(m.R <= 1 + (t.r_max - 1) * hier)


def _n_row(m, t: Tables, rows, bound, sense, default: int, fixed: int = 1):
    """n >= (or <=) default + sum_c (bound_c - default) y_c + (fixed - default) sum_f lam_f: the
    bound of the chosen class (a fixed plan has n = 1); only classes that differ from the
    default carry a coefficient, so that the row stays short."""
    at = [(i, bound(e) - default) for i, e in enumerate(t.sync) if bound(e) != default]
    rhs = linear_expression([c for _, c in at], [m.yv[i] for i, _ in at], default)
    if fixed != default:
        rhs = rhs + (fixed - default) * _lam(m)
    rows.add(m.n >= rhs if sense == ">=" else m.n <= rhs)


def structure(m, t: Tables, grid: Grid):
    """Two DiLoCo replicas at least (two groups of k nodes in hierarchical mode)."""
    m.structure = pyo.ConstraintList()
    _n_row(m, t, m.structure, lambda e: e.n_structure, ">=", 2)


def node_limit(m, t: Tables, grid: Grid):
    """search.min_nodes <= N <= min(fleet nodes, limits.max_nodes), N = max(n unit, min_nodes)
    (`Classes.nodes`: a pipeline whose n S falls short of min_nodes runs with idle nodes), i.e.
    floor(min_nodes / unit) <= n <= floor(node cap / unit)."""
    sp = t.space
    m.node_limit = pyo.ConstraintList()
    _n_row(m, t, m.node_limit, lambda e: sp.max_nodes // e.unit, "<=", sp.max_nodes)
    least = max(1, sp.min_nodes)
    if least > 1 or any(e.unit > 1 for e in t.sync):
        _n_row(m, t, m.node_limit, lambda e: max(1, sp.min_nodes // e.unit), ">=", least)


def budget_limit(m, t: Tables, grid: Grid):
    """n * unit * node price <= budget."""
    s = t.setting
    m.budget_limit = pyo.ConstraintList()
    if s.budget_usd is not None and s.node_price_usd > 0:
        cap = lambda e: min(math.floor(s.budget_usd / (e.unit * s.node_price_usd)), t.n_max)
        _n_row(m, t, m.budget_limit, cap, "<=", min(math.floor(s.budget_usd / s.node_price_usd), t.n_max))


def memory_cap(m, t: Tables, grid: Grid):
    """With global EP the state per node falls with n: n >= the least n that fits (found by the
    evaluator's memory figure in `DecisionSpace.classes`); other classes fit at every n."""
    m.memory_cap = pyo.ConstraintList()
    if any(e.n_memory > 1 for e in t.sync):
        _n_row(m, t, m.memory_cap, lambda e: e.n_memory, ">=", 1)


def _bracket_value(m, name: str, f) -> object:
    """sum_i f(lo_i) b_i: the value of a monotone f at the chosen bracket's lower end (f of an array of them)."""
    b, br = getattr(m, f"b{name}"), getattr(m, f"{name}_brackets")
    values = np.asarray(f(np.array([lo for lo, _ in br])), dtype=float).tolist()
    return sum(value * b[k] for k, value in enumerate(values))


def sync_overlap(m, t: Tables, grid: Grid):
    """z >= each part of the outer step per inner step of one replica (`planner.mip.tables`).

    All classes: z >= ln t_step_c + zeta, zeta >= 0. Streaming flat / PP-group:
    z >= ln t_base_c + ln f(n) - ln H. Streaming hierarchical (per group size k):
    z >= ln t_reg_c - ln H and z >= ln t_base_c + ln f(n // k) - ln H - ln R. Without streaming:
    zeta >= ln(1 + e^q) with q >= ln(t_base_c / t_step_c) + ln f(n) - ln H, or
    zeta >= ln(1 + e^a + e^b) with a >= ln(t_reg_c / t_step_c) - ln H and
    b >= ln(t_base_c / t_step_c) + ln f(n // k) - ln H - ln R, by tangent planes. ln f at the
    lower end of n's bracket (f never decreases). A row concerns only its classes: elsewhere
    its right-hand side falls below the variable's floor (big-M from the tables' ranges).
    """
    m.sync_overlap = pyo.ConstraintList()
    rows = m.sync_overlap
    lnf_max = float(t.ln_straggler(t.n_max))
    m.sync_overlap.add(m.z >= _sum_y(m, t, lambda e: True, lambda e: e.ln_step) + m.zeta)
    ks = sorted({e.k for e in t.sync if e.mode == "hierarchical"})
    lnf_n = _bracket_value(m, "n", t.ln_straggler)
    lnf_g = {k: _bracket_value(m, "n", lambda lo, k=k: t.ln_straggler(lo // k)) for k in ks}

    kinds = {}             # (hierarchical, streaming, k): positions of its classes in t.sync
    for i, e in enumerate(t.sync):
        kinds.setdefault((e.mode == "hierarchical", e.streaming, e.k), []).append(i)

    def switched(var, floor, members, const, rest):
        """var >= sum_{c in members} const_c y_c + rest, off (<= floor) when no member is chosen;
        members(hierarchical, streaming, k) picks the classes."""
        chosen = sorted(i for key, at in kinds.items() if members(*key) for i in at)
        if not chosen:
            return
        top = max(const(t.sync[i]) for i in chosen)
        big = max(top, 0.0) + lnf_max - floor + 1.0
        ys = [m.yv[i] for i in chosen]
        rows.add(var >= linear_expression([const(t.sync[i]) for i in chosen], ys) + rest - big * (1 - linear_expression([1] * len(ys), ys)))

    switched(m.z, m.z_lo, lambda hier, stream, k: not hier and stream, lambda e: e.ln_sync_base, lnf_n - m.ln_H)
    switched(m.z, m.z_lo, lambda hier, stream, k: hier and stream, lambda e: e.ln_regional, -m.ln_H)
    switched(m.q, Q_FLOOR, lambda hier, stream, k: not hier and not stream, lambda e: e.ln_sync_base - e.ln_step,
             lnf_n - m.ln_H)
    switched(m.a, Q_FLOOR, lambda hier, stream, k: hier and not stream, lambda e: e.ln_regional - e.ln_step, -m.ln_H)
    for k in ks:
        switched(m.z, m.z_lo, lambda hier, stream, size, k=k: hier and size == k and stream,
                 lambda e: e.ln_sync_base, lnf_g[k] - m.ln_H - m.ln_R)
        switched(m.b, Q_FLOOR, lambda hier, stream, size, k=k: hier and size == k and not stream,
                 lambda e: e.ln_sync_base - e.ln_step, lnf_g[k] - m.ln_H - m.ln_R)
    if any(not hier and not stream for hier, stream, _ in kinds):
        for q0 in sorted(grid.q_points):
            sp, slope = math.log1p(math.exp(q0)), 1.0 / (1.0 + math.exp(-q0))
            rows.add(m.zeta >= sp + slope * (m.q - q0))
    if any(hier and not stream for hier, stream, _ in kinds):
        for a0, b0 in sorted(grid.ab_points):
            total = 1.0 + math.exp(a0) + math.exp(b0)
            rows.add(m.zeta >= math.log(total) + math.exp(a0) / total * (m.a - a0) + math.exp(b0) / total * (m.b - b0))


def efficiency(m, t: Tables, grid: Grid):
    """omega <= omega(lo_n, lo_H sqrt(lo_R), gain top) for the chosen brackets of n, H and R and
    the chosen class's gain bucket: one row `efficiency[b, i, r]` per (gain bucket, n bracket,
    R bracket), over the H brackets (omega never increases with n or H_eff and never decreases
    with the gain: its value at the lower ends and the bucket's top bounds it on the whole box;
    where eta_H may rise with H_eff, eta_H is taken at the larger end of the box, `Tables.omega`).

    Lifted rather than switched by big-M: for every other n bracket k the row adds
    lift_n(k, i) bn[k], the most the table at k exceeds the table at i (over the other axes),
    likewise for R brackets and buckets; these are 0 for later n and R brackets and lower
    buckets, so a row holds as it is wherever the chosen brackets are at or beyond its own.
    A C_local target has one bucket (omega does not depend on the gain). R brackets above the
    first only for buckets with a hierarchical class (the others have R = 1). A fixed plan:
    under C_local, omega(1, 1) = 0 and omega <= 0 unless an efficiency can exceed 1, when
    `efficiency-switch` holds omega <= 0 for it; under C_quality its rows carry a lift on the
    fixed plans' lam (no bucket is chosen).

    max_compute: the same rows bound psi (`Tables.psi`, ln of the compute per unit of the class's
    eta_C eta_A) with the brackets of u = ln(window tokens) in place of the gain buckets: psi never
    decreases with u, so its value at a bracket's top bounds it on the bracket, lifted by the
    higher brackets' bU as by the higher buckets' w; omega then stands for psi."""
    m.efficiency_switch = pyo.ConstraintList()
    rows = {}
    if not t.sync:
        m.efficiency = pyo.Constraint(pyo.Any)
        return
    nb, hb, rb = m.n_brackets, m.H_brackets, m.R_brackets
    n_lo = np.array([lo for lo, _ in nb], dtype=float)
    h_lo, h_hi = (np.array([x[i] for x in hb], dtype=float) for i in (0, 1))
    r_lo, r_hi = (np.array([x[i] for x in rb], dtype=float) for i in (0, 1))
    compute = getattr(m, "u_axis", False)
    switch = t.quality_target and not compute
    buckets = m.U_brackets if compute else grid.gain_brackets() if switch else [(0.0, 1.0)]
    members = [[i for i, e in enumerate(t.sync) if lo < e.gain <= top] if switch else list(range(len(t.sync)))
               for lo, top in buckets]
    used = [b for b, chosen in enumerate(members) if chosen]
    tops = np.array([buckets[b][1] for b in used])
    nn, rr, hh, gg = np.meshgrid(n_lo, r_lo, h_lo, tops, indexing="ij")
    _, rr_hi, hh_hi, _ = np.meshgrid(n_lo, r_hi, h_hi, tops, indexing="ij")
    h_eff_hi = None if t.eta_h_falls else (hh_hi * np.sqrt(rr_hi)).ravel()
    if compute:                # max_compute: the third axis is u, not the gain; psi over the whole u bracket
        bottoms = np.array([buckets[b][0] for b in used])
        ul = np.meshgrid(n_lo, r_lo, h_lo, bottoms, indexing="ij")[3]
        table = t.psi_box(nn.ravel(), (hh * np.sqrt(rr)).ravel(), ul.ravel(), gg.ravel(), h_eff_hi).reshape(nn.shape)
    else:
        table = t.omega(nn.ravel(), (hh * np.sqrt(rr)).ravel(), gg.ravel(), h_eff_hi).reshape(nn.shape)
    top = max(0.0, float(table.max()))
    m.omega.setub(top)
    if top > 0 and t.fixed:            # efficiencies above 1 somewhere: a fixed plan's omega is still 0
        m.efficiency_switch.add(m.omega <= linear_expression([top] * len(m.yv), m.yv))
    if switch:
        m.w = pyo.Var(range(len(used)), bounds=(0.0, 1.0))     # 1 if the chosen class is in bucket b
    # lift[axis][x', x]: how much more omega may be at index x' than at x of that axis, the other
    # axes anywhere (>= 0): the coefficient of "the chosen index is x'" in the row of x
    lift = [np.maximum(0.0, _most_above(table, axis)) for axis in (0, 1, 3)]
    for a, b in enumerate(used):
        if switch:
            m.efficiency_switch.add(m.w[a] == linear_expression([1] * len(members[b]), [m.yv[i] for i in members[b]]))
        hier = any(t.sync[i].mode == "hierarchical" for i in members[b])
        for i in range(n_lo.size):
            for r in range(r_lo.size if hier else 1):
                row = table[i, r, :, a]
                if row.min() >= top:
                    continue           # no loss at any H: omega <= top already says it
                # sum_j row_j bH_j + the lifts of the other n, R brackets and buckets (or u brackets)
                terms = [(float(row[j]), m.bH[j]) for j in range(h_lo.size)]
                terms += [(float(lift[0][k, i]), m.bn[k]) for k in range(n_lo.size) if lift[0][k, i] > 0]
                terms += [(float(lift[1][k, r]), m.bR[k]) for k in range(r_lo.size) if lift[1][k, r] > 0]
                if switch:
                    terms += [(float(lift[2][k, a]), m.w[k]) for k in range(len(used)) if lift[2][k, a] > 0]
                    terms += [(top - float(row.min()), lam) for lam in m.lamv]
                if compute:
                    terms += [(float(lift[2][k, a]), m.bU[used[k]]) for k in range(len(used)) if lift[2][k, a] > 0]
                rows[a, i, r] = m.omega <= linear_expression([c for c, _ in terms], [v for _, v in terms])
    m.efficiency = pyo.Constraint(list(rows), rule=lambda m, a, i, r: rows[a, i, r])   # (bucket, n bracket, R bracket)


def _most_above(table: np.ndarray, axis: int) -> np.ndarray:
    """out[x', x] = max over the other axes of table[.., x', ..] - table[.., x, ..] along `axis`."""
    moved = np.moveaxis(table, axis, 0)
    flat = moved.reshape(moved.shape[0], -1)
    return (flat[:, None, :] - flat[None, :, :]).max(axis=2)


def _finite_terms(m, t: Tables, rows, of_class, of_fixed):
    """(sum_c v_c y_c, sum_f v_f lam_f) over the finite values; a class or fixed plan whose value is
    infinite (it never reaches the target, or no compute) is excluded by a row `y = 0` in `rows`
    (in a scenario's block, listed in `m.never`: `build`)."""
    never = getattr(m, "never", None)        # a scenario's block (`build`): the caller decides
    excluded = [m.yv[i] for i, e in enumerate(t.sync) if not math.isfinite(of_class(e))] + \
        [m.lamv[f] for f, p in enumerate(t.fixed) if not math.isfinite(of_fixed(p))]
    for var in excluded:
        if never is None:
            rows.add(var == 0)
        else:
            never.append(var)
    classes = [(of_class(e), m.yv[i]) for i, e in enumerate(t.sync) if math.isfinite(of_class(e))]
    fixed = [(of_fixed(p), m.lamv[f]) for f, p in enumerate(t.fixed) if math.isfinite(of_fixed(p))]
    return tuple(linear_expression([c for c, _ in terms], [v for _, v in terms]) for terms in (classes, fixed))

finite_terms = _finite_terms       # its public name: the sync rules' MIP rows (planner.sync.proportional.mip_rows) build on it

def time_to_target(m, t: Tables, grid: Grid):
    """L >= kappa_c - ln n + z - omega (the chosen class), or L >= ln T_f for a chosen fixed plan
    (it has n = 1, z >= 0, omega <= 0). A class or plan that never reaches the target is excluded."""
    m.time_to_target = pyo.ConstraintList()
    kappa, fixed = _finite_terms(m, t, m.time_to_target, lambda e: e.kappa, lambda p: p.log_time)
    m.time_to_target.add(m.L >= kappa + fixed - m.ln_n + m.z - m.omega)
    if t.class_lower is not None:     # a valid cut: ln T >= the class's box bound (`table_bounds.class_bounds`)
        at = [(float(lb), m.yv[i]) for i, lb in enumerate(t.class_lower) if math.isfinite(lb)]
        m.time_to_target.add(m.L >= linear_expression([c for c, _ in at], [y for _, y in at]) + fixed)


def window_tokens(m, t: Tables, grid: Grid):
    """max_compute: u <= ln(tokens trained in the window) = u_const_c + ln n - z for the chosen
    class (`planner.mip.tables`); ln_n over- and z under-estimates make it an over-estimate,
    exact where they are exact. A fixed plan leaves u free (its compute is one number)."""
    m.window_tokens = pyo.ConstraintList()
    m.window_tokens.add(m.u <= _sum_y(m, t, lambda e: True, lambda e: e.u_const) + m.ln_n - m.z)


def tokens_at_plan(m, t: Tables, grid: Grid):
    """max_compute where psi is not monotone in u (`Grid.u_two_sided`): at each plan refined so far
    (class c, n, H, R singleton brackets), u >= its own u*, switched off by big-M unless
    y_c = bn = bH (= bR, hierarchical) = 1. Valid: that plan's tokens are e^u*, and the model can
    set u = u* there (ln_n is exact and z may take its true value). With `window-tokens` (u <= u*
    there) it pins u, so that the model cannot credit the plan with psi at fewer tokens than it
    trains (under the Chinchilla penalty C_local can fall as the tokens grow)."""
    m.tokens_at_plan = pyo.ConstraintList()
    if not getattr(m, "u_axis", False) or not grid.u_pins:
        return
    where = {e.label: i for i, e in enumerate(t.sync)}
    singleton = {name: {lo: k for k, (lo, hi) in enumerate(getattr(m, f"{name}_brackets")) if lo == hi}
                 for name in ("n", "H", "R")}
    for label, n, h, r, u in sorted(grid.u_pins):
        i = where.get(label)
        hier = i is not None and t.sync[i].mode == "hierarchical"
        if i is None or n not in singleton["n"] or h not in singleton["H"] or (hier and r not in singleton["R"]):
            continue
        on = [m.yv[i], m.bn[singleton["n"][n]], m.bH[singleton["H"][h]]] + ([m.bR[singleton["R"][r]]] if hier else [])
        pin = u - 1e-9
        m.tokens_at_plan.add(m.u >= pin - (pin - grid.u_floor) * (len(on) - sum(on)))


def compute_in_window(m, t: Tables, grid: Grid):
    """max_compute: Lc <= compute_const_c + psi (omega, bounded by `efficiency`) for the chosen
    class, or ln C_f for a chosen fixed plan (omega <= 0 then, `efficiency-switch`). A class or
    plan that reaches no compute is excluded."""
    m.compute_in_window = pyo.ConstraintList()
    const, fixed = _finite_terms(m, t, m.compute_in_window, lambda e: e.compute_const, lambda p: p.log_compute)
    # C_local (linear v1 or no replica penalty): psi = ln(6 P_act) + u + omega(n, H_eff), omega = ln(eta_H eta_R)
    # of `Tables.omega` (eta_R does not depend on the tokens: exact, no brackets of u)
    psi = m.omega if m.u_axis else math.log(6.0 * t.setting.active_params) + m.u + m.omega
    if not t.fixed:
        m.compute_in_window.add(m.Lc <= const + psi)
        return
    # with fixed plans (only in a written model: the presolve keeps none), one row each, the other off
    m.compute_in_window.add(m.Lc <= const + psi + LN_FLOP_CAP * _lam(m))
    m.compute_in_window.add(m.Lc <= fixed + LN_FLOP_CAP * linear_expression([1] * len(m.yv), m.yv))


def duration_limit(m, t: Tables, grid: Grid):
    """L <= ln(run-duration limit)."""
    m.duration_limit = pyo.ConstraintList()
    m.duration_limit.add(m.L <= math.log(t.setting.window_s))


def nodes_used(m, t: Tables, grid: Grid):
    """nodes >= unit * n for the chosen class (per distinct unit, big-M), >= N_f for a fixed plan,
    and nodes >= search.min_nodes: N = max(n unit, min_nodes) (`Classes.nodes`). With the presolve's
    least nodes per class (`Tables.class_least_nodes`, a lower bound on the nodes of its plans within
    the duration limit) the fixed plans' row is nodes >= sum_c least_c y_c + sum_f N_f lam_f (one of
    them is chosen), a bound the LP relaxation sees before n is."""
    floor = max(1, t.space.min_nodes)
    m.nodes = pyo.Var(within=pyo.Integers, bounds=(floor, t.space.max_nodes))
    m.nodes_used = pyo.ConstraintList()
    for unit in sorted({e.unit for e in t.sync}):
        ys = [m.yv[i] for i, e in enumerate(t.sync) if e.unit == unit]
        chosen = linear_expression([1] * len(ys), ys)
        m.nodes_used.add(m.nodes >= unit * m.n - unit * t.n_max * (1 - chosen))
    least = [] if t.class_least_nodes is None else \
        [(i, int(x)) for i, x in enumerate(t.class_least_nodes) if math.isfinite(x) and x > floor]
    if t.fixed or least:
        m.nodes_used.add(m.nodes >= linear_expression([x for _, x in least] + [p.nodes for p in t.fixed],
                                            [m.yv[i] for i, _ in least] + list(m.lamv)))
