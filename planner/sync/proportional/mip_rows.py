"""The proportional and auto sync rules in the one model of a fleet of pools (`planner.mip.pools`;
the rule: `planner.sync.proportional.rule`, docs/fleet.md section 2; docs/mip.md "A fleet of pools"):
the rule's rows, beside the rule. Search layer (it builds on the class tables and rows of
`planner.mip`, which import it: `planner.mip.pools`, `planner.mip.pool_rows`).

Under the proportional rule a replica of pool p runs H_p = floor(H rho_p) inner steps per outer step,
rho_p = t_pace / t_p (the pacing pool, the slowest used, sets the outer step as under the straggler
rule), so a plan d on counts n_p (N = sum_p n_p, W = sum_p n_p H_p) takes

    T_prop(d) = T_straggler(d at H_max) N H / W

(tokens per outer step B W instead of B N H; quality at H_max = max_p H_p >= H). Where eta_H and
eta_R fall with H_eff (`planner.solvers.monotone`: alpha(P) >= 0 and its replica facts), the
straggler time at H_max is not shorter than at H, and W <= H S, S = sum_p n_p rho_p, so with
T_straggler = exp(kappa - ln n + z - omega) (`planner.mip.formulation`) and N = n (a plan of the
rule has replicas of one node: flat without ZeRO-3 or hierarchical; N = max(n, min_nodes, |U|) = n
there, as n >= min_nodes and n >= |U| by `pool-spread`):

    ln T_prop(d) >= kappa - ln S + z - omega.                                               (1)

The model keeps its class rows and replaces ln n by e (`ln_eff`), the log of the *effective replicas*:

    rule-replicas   e <= ln_n + ln S_max sum_{c eligible} y_c      (a plan the rule does not apply to)
                    e <= ln S0 + (S_P - S0) / S0 + M (1 - sum_{k of pace P} x_k)   per pace P, point S0
                    and per H bracket that is one value h, the same with S_P(h) (switched by bH too)
    rule-nodes      nodes <= n + N_max (1 - sum_{c eligible} y_c)  (the rule's plans use N = n nodes)
    rule-time       L >= kappa_c + ln T_f - e + z - omega (in place of `time-to-target`), and the
                    class cut L >= the class's box bound minus ln rho_max of its setting
    rule-window-tokens  max_compute: u <= u_const_c + e - z (in place of `window-tokens`)

with S_P = sum_p max(1, rho_p(P)) cnt_p (S_P(h): max(1, floor(h rho_p) / h), since W = sum_p n_p
floor(h rho_p) <= h S_P(h) at H = h), the pace P = (precision, slowest pool) of the chosen column
x (rho depends on the pattern only through them), and ln S <= its tangent at any S0 (ln is concave:
every tangent lies above it), so the model may set e = ln S of any plan: (1) is a lower bound. It is
also one on the straggler time of the same plan (S >= N >= n as every max(1, rho_p) >= 1), so under
`auto` (the better of the two rules per plan) the same rows bound both; the plans the rule does not
apply to (pipelines, ZeRO-3, expert parallelism across nodes) keep e <= ln n. Under `proportional`
those plans are not plans at all: their classes are left out of the tables (`rule_tables`).
max_compute: the tokens in the window are e^u with u = u_const + ln n - z under the straggler rule and
at most u_const + ln S - z under the rule (times W / (N H) <= S / N), and psi (the compute per token
and efficiency) is bounded at the lower ends of the H brackets, which H_max >= H only lowers: the
same rows with e bound C_local (any replica penalty) and C_quality from above. The u brackets reach
ln rho_max above the straggler's top (`extend_grid`); the straggler loop's u pins (Chinchilla C_local:
u >= the plan's own tokens) are not used, as a plan's tokens depend on its split.

What the bound leaves: the rounding floor(H rho_p) <= H rho_p where H is not yet one value of the
grid, and eta at H_max, so the loop closes its gap under the rule only where those do not matter;
its plans (re-scored under the rule with the model's counts and the fastest fill, `rule_candidates`)
are the incumbents of the exact decomposition, which certifies the answer (it solves the rule
exactly, `planner.sync.proportional.search`). Beyond `pool_parts.MAX_EXACT_POOLS` pools there is no
certification: the loop's bound is the proof where it meets the best plan, and the rule is refused
otherwise (`refuse_unproven`: exit 2, naming fleet.sync_rule), as it is where the facts above fail.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pyomo.environ as pyo

from planner.objectives import Objective
from planner.cost.score import time_to_target, window_compute
from planner.sync.proportional.rule import adjust_for, fastest_fill, inner_steps, step_ratios
from planner.fleet.replicas import fleet_cost_usd
from planner.mip.formulation import finite_terms
from planner.mip.table_bounds import class_bounds, least_nodes
from planner.mip.tables import Tables, u_range
from planner.solvers import UnsupportedBySolver

RULE_FAMILIES = ("rule-nodes", "rule-replicas", "rule-time", "rule-window-tokens")
MODES_OF_RULE = ("flat", "hierarchical")     # replicas of one node stepping on their own (`rule_problems`)


def refuse_unproven(instance, solver: str, most: int, count: int, reports) -> None:
    """InputError naming fleet.sync_rule: more pools than the decomposition takes (`most`) under the rule,
    and the loop's bound did not meet its best plan (`reports`: `certified.MipReport` per model size), so
    nothing proves an answer."""
    from planner.schema.errors import InputError, Problem
    gaps = ", ".join(f"{r.gap:.2%}" if r.gap is not None else r.status for r in reports)
    raise InputError([Problem("fleet.sync_rule", f"with {count} pools (more than the {most} the exact decomposition "
                                                 f"takes) the one-model path (--solver {solver}) answers the "
                                                 f"'{instance.fleet.sync_rule}' rule only when its own bound proves "
                                                 f"the optimum; here it did not (gap {gaps}): set 'straggler' or use "
                                                 f"at most {most} pools")])


def rule_space(space, rule: str):
    """The decision space of a setting's tables under `rule`: 'proportional' keeps the modes the rule
    applies to (flat, hierarchical) and no expert parallelism; None when no mode is left."""
    if rule != "proportional":
        return space
    modes = tuple(m for m in space.modes if m in MODES_OF_RULE)
    return dataclasses.replace(space, modes=modes, expert_parallel=("none",)) if modes else None


def _rows(t: Tables, group: int):
    return t.groups[group].rows


def eligible_class(t: Tables, e) -> bool:
    """Whether the rule applies to the plans of a class: flat or hierarchical, replicas of one node
    (no ZeRO-3 shards), no expert parallelism (`proportional.rule_problems`)."""
    return e.mode in MODES_OF_RULE and e.unit == 1 and _rows(t, e.group).expert_parallel == "none"


def eligible_fixed(t: Tables, f) -> bool:
    """Whether the rule applies to a fixed plan: one node alone (flat, no shards, no expert parallelism)."""
    rows = _rows(t, f.group)
    return rows.mode == "flat" and f.nodes == 1 and int(np.asarray(rows.zero_shards)[f.index]) == 1 and \
        rows.expert_parallel == "none"


def check_facts(t: Tables) -> None:
    """Refuse (exit 2) a setting where the bound (1) does not hold: eta_H or eta_R may rise with H_eff."""
    from planner.solvers import monotone
    mono = monotone.check(t.setting)
    if mono.unsupported or not mono.eta_h_falls:
        raise UnsupportedBySolver("fleet.sync_rule: the one-model path bounds the proportional rule by the straggler "
                                  "time at H (eta_H and eta_R must not rise with H_eff; these assumptions break that: "
                                  + "; ".join([p.message for p in mono.unsupported] or ["alpha(P) < 0"])
                                  + "); use --solver bnb")


def rho_max(pt, part) -> float:
    """max over the pools its patterns allow of max(1, t_pace / t_p): how much faster than the pace any
    replica of a plan of this setting can step."""
    ratios = [1.0]
    for k in part.keys:
        key = pt.keys[k]
        ratios += list(step_ratios(part.setting, pt.pools, key.allowed, key.precision).values())
    return max(ratios)


def rule_tables(t: Tables, objective: Objective, rule: str, rho: float) -> tuple[Tables, np.ndarray]:
    """A setting's tables under the rule, and min_cost's least nodes per class kept. 'proportional' keeps
    the classes and fixed plans the rule applies to. `class_lower` holds a bound valid under the rule
    (the global cut of `pools.pool_tables` drops the classes bounded above the best plan): min_time and
    min_cost, the straggler box bound on ln T minus ln rho for the rule's classes (T_prop >=
    T_straggler / rho_max, module docstring), min_cost dropping the classes no box of which can meet the
    duration limit even so, with the least nodes of the first box that can (`table_bounds.least_nodes`);
    max_compute, -(an upper bound on ln C): `rule_compute_bounds`. Fixed plans keep their own values
    (one node alone is one pool: the rule is the straggler rule there)."""
    check_facts(t)
    keep = np.array([rule != "proportional" or eligible_class(t, e) for e in t.sync], dtype=bool)
    fixed = [f for f in t.fixed if rule != "proportional" or eligible_fixed(t, f)]
    least = np.zeros(0)
    shift = np.array([math.log(rho) if eligible_class(t, e) else 0.0 for e in t.sync])
    if not t.sync:
        lower = None
    elif objective.maximise:
        lower = -rule_compute_bounds(t, shift)
        keep &= np.isfinite(lower)
    else:
        bound, boxes = class_bounds(t)
        bound = bound - shift[:, None]
        lower = bound.min(axis=1)
        keep &= np.isfinite(lower)
        if objective.by_cost:
            ln_w = math.log(t.setting.window_s)
            keep &= lower <= ln_w + 1e-12
            fixed = [f for f in fixed if f.log_time <= ln_w]
            least = least_nodes(t, bound, boxes)[keep]
    sync = [e for e, k in zip(t.sync, keep) if k]
    return Tables(t.setting, t.space, t.groups, sync, fixed, t.n_max, t.h_max, t.r_max,
                  lower[keep] if lower is not None else None, t.eta_h_falls), least


def rule_compute_bounds(t: Tables, shift: np.ndarray) -> np.ndarray:
    """max_compute: per class an upper bound on ln C of its plans under the rule, as `tables.compute_bounds`
    over the class's window tokens up to e^shift times the straggler's most (W / (N H) <= rho): psi at
    n_lo and H_eff = 1 over [u_min, u_max + shift] (`Tables.psi_box`: whatever the direction of psi in u)."""
    col = lambda name: np.array([getattr(e, name) for e in t.sync], dtype=float)
    u_min, u_max = u_range(t)
    with np.errstate(invalid="ignore"):
        out = col("compute_const") + t.psi_box(col("n_lo"), np.ones(len(t.sync)), u_min, u_max + shift)
    return np.where(np.isnan(out), -np.inf, out)


def rule_incumbent(pt, j: int, t: Tables, objective: Objective):
    """(value in model units, MixedPlan) of the best plan the straggler presolve finds in setting part j
    (`presolve.presolve`, `presolve_compute`, on the tables the rule keeps) scored as the rule allows it
    (`rule_candidates`: a real plan, so its value may cut), or None."""
    from planner.mip.pool_patterns import mixed_plan, price_scale
    from planner.mip.presolve import presolve, presolve_compute
    if not (t.sync or t.fixed) or not pt.parts[j].exact_range:
        return None
    _, plan, _, _ = presolve_compute(t) if objective.maximise else presolve(t, objective)
    if plan is None:
        return None
    found = mixed_plan(pt, j, t, plan)
    runs = rule_candidates(pt.pools, found.batch, found.counts, found.counts, found.setting, pt.rule, pt.budget_usd)
    options = [dataclasses.replace(found, counts=c, rule=r) for r, c in runs]
    scored = [(plan_value(objective, o, pt.pools, price_scale(pt.pools)), o) for o in options]
    return min(scored, key=lambda x: x[0], default=None)


def plan_value(objective: Objective, plan, pools, scale: float) -> float:
    """The model's measure of a MixedPlan under its rule: ln T (min_time), cost in model units (min_cost;
    inf past the duration limit), -ln C (max_compute)."""
    if plan.rule != "straggler":
        return rule_value(objective, plan.setting, plan.batch, plan.counts, pools, scale)
    from planner.solvers.certified import incumbent_value
    if not objective.by_cost:
        return incumbent_value(plan.setting, plan.batch, objective)
    t = float(time_to_target(plan.setting, plan.batch)["time_to_target_s"][0])
    return fleet_cost_usd(pools, plan.counts) / scale if t <= plan.setting.window_s else math.inf


# -- the rows ---------------------------------------------------------------------------------

@dataclasses.dataclass
class RuleRows:
    """The paces of the model's columns and the tangent points of ln S (refined at each plan)."""

    rule: str
    paces: dict = dataclasses.field(default_factory=dict)     # (precision, slowest) -> (groups, {pool: rho_p})
    s_max: float = 1.0
    points: set = dataclasses.field(default_factory=set)

    @classmethod
    def of(cls, pt, rule: str) -> "RuleRows":
        out = cls(rule)
        for g, group in enumerate(pt.groups):
            s = pt.parts[pt.group_part[g]].setting
            groups, ratios = out.paces.setdefault((group.precision, group.slowest), ([], {}))
            groups.append(g)
            for p, r in step_ratios(s, pt.pools, group.allowed, group.precision).items():
                ratios[p] = max(ratios.get(p, 0.0), r)
        out.s_max = max([sum(max(1.0, r) * pt.pools[p].count for p, r in ratios.items())
                         for _, ratios in out.paces.values()], default=1.0)
        top = max(1, int(math.ceil(out.s_max)))
        out.points = {float(2 ** i) for i in range(top.bit_length() + 1) if 2 ** i <= 2 * top}
        return out

    def effective(self, m) -> list[float]:
        """S_P at the model's point for the pace of the chosen column, and S_P(H) at its H."""
        h = int(round(pyo.value(m.H)))
        for (groups, ratios) in self.paces.values():
            if any((m.xv[g].value or 0) > 0.5 for g in groups):
                counts = {p: round(m.cntv[p].value or 0) for p in ratios}
                return [sum(w * counts[p] for p, w in weights.items()) for weights in (per_step(ratios),
                                                                                    per_step(ratios, h))]
        return []

    def refine(self, m) -> bool:
        """Tangents of ln S at the model's S and S(H); whether one is new."""
        new = {round(s, 9) for s in self.effective(m) if s > 0} - self.points
        self.points |= new
        return bool(new)


def per_step(ratios: dict[int, float], h: int | None = None) -> dict[int, float]:
    """Per pool, the replica's inner steps per step of the pace, at least 1: max(1, rho_p), or at a given
    H, max(1, floor(H rho_p) / H) (<= max(1, rho_p): W <= H sum_p n_p of these)."""
    if h is None:
        return {p: max(1.0, r) for p, r in ratios.items()}
    return {p: max(1.0, float(v) / h) for p, v in inner_steps(ratios, h).items()}


def add_rule_rows(m, pt, objective: Objective, rows: RuleRows) -> None:
    """The rule's rows (module docstring) on the pools model `m` of `pt`."""
    t = pt.merged
    elig = sum(m.yv[i] for i, e in enumerate(t.sync) if eligible_class(t, e))
    ln_top = math.log(rows.s_max)
    m.ln_eff = pyo.Var(bounds=(None, ln_top))
    m.rule_nodes = pyo.ConstraintList()
    m.rule_replicas = pyo.ConstraintList()
    if not isinstance(elig, int):
        m.rule_nodes.add(m.nodes <= m.n + t.space.max_nodes * (1 - elig))
    m.rule_replicas.add(m.ln_eff <= m.ln_n + ln_top * elig)
    singles = [(j, lo) for j, (lo, hi) in enumerate(m.H_brackets) if lo == hi]
    for groups, ratios in rows.paces.values():
        chosen = sum(m.xv[g] for g in groups)
        for h, at in [(None, 0)] + [(lo, m.bH[j]) for j, lo in singles]:      # at a singleton H: its floor
            weights = per_step(ratios, h)
            if h is not None and weights == per_step(ratios):
                continue
            total = sum(w * m.cntv[p] for p, w in weights.items())
            off = (2 - chosen - at) if h is not None else (1 - chosen)
            for s0 in sorted(rows.points):
                big = ln_top - math.log(s0) + 1.0
                m.rule_replicas.add(m.ln_eff <= math.log(s0) + (total - s0) / s0 + big * off)
    if m.max_compute:
        m.window_tokens.deactivate()
        m.rule_window_tokens = pyo.ConstraintList()
        m.rule_window_tokens.add(m.u <= sum(e.u_const * m.yv[i] for i, e in enumerate(t.sync)) + m.ln_eff - m.z)
        return
    m.time_to_target.deactivate()
    m.rule_time = pyo.ConstraintList()
    kappa, fixed = finite_terms(m, t, m.rule_time, lambda e: e.kappa, lambda p: p.log_time)
    m.rule_time.add(m.L >= kappa + fixed - m.ln_eff + m.z - m.omega)
    if t.class_lower is not None:
        m.rule_time.add(m.L >= sum(float(lb) * m.yv[i] for i, lb in enumerate(t.class_lower) if math.isfinite(lb))
                        + fixed)


def extend_grid(grid, pt) -> None:
    """max_compute: a u bracket up to ln rho_max above the straggler's top (the rule's plans train up to
    rho_max times the tokens)."""
    if grid.u_points:
        top = max(rho_max(pt, part) for part in pt.parts)
        if top > 1.0:
            grid.u_points.add(max(grid.u_points) + math.log(top) + 1e-6)


# -- re-scoring -----------------------------------------------------------------------------

def eligible_batch(batch) -> bool:
    return batch.mode in MODES_OF_RULE and int(batch.zero_shards[0]) == 1 and batch.expert_parallel == "none"


def rule_candidates(pools, batch, counts: list[int], model_counts: list[int], setting, rule: str,
                    budget_usd: float | None) -> list[tuple[str, list[int]]]:
    """The (rule, counts) a decoded plan may run: the straggler rule on its cheapest counts (not under
    'proportional'), and the rule on the model's own counts and on the fastest fill of the same pools
    (within the budget), where the rule applies."""
    out = [] if rule == "proportional" and eligible_batch(batch) else [("straggler", counts)]
    if not eligible_batch(batch):
        return out if rule != "proportional" else []
    nodes = int(batch.nodes[0])
    steps = _inner_steps_of(setting, pools, batch, counts)
    options = [counts, fastest_fill(pools, steps, nodes)]
    if sum(model_counts) == nodes and [p for p, c in enumerate(model_counts) if c] == sorted(steps):
        options.append(model_counts)
    for option in options:
        if option is not None and (budget_usd is None or fleet_cost_usd(pools, option) <= budget_usd) and \
                ("proportional", option) not in out:
            out.append(("proportional", list(option)))
    return out


def rule_adjust(setting, pools, batch, counts):
    """`adjust_for` of a plan run under the rule on `counts`."""
    steps = _inner_steps_of(setting, pools, batch, counts)
    return adjust_for(sum(counts[p] * h_p for p, h_p in steps.items()), max(steps.values()),
                      int(batch.inner_steps[0]))


def _inner_steps_of(setting, pools, batch, counts) -> dict[int, int]:
    """H_p of every pool a plan uses (`counts` > 0) at the plan's H and precision (`proportional.inner_steps`)."""
    used = [p for p, c in enumerate(counts) if c]
    ratios = step_ratios(setting, pools, used, batch.precision)
    return {p: int(v) for p, v in inner_steps(ratios, int(batch.inner_steps[0])).items()}


def rule_value(objective: Objective, setting, batch, counts, pools, scale: float) -> float:
    """The model's measure of a plan run under the rule on `counts` (as `mixed_mip.model_value`): ln T,
    cost in model units (inf past the duration limit), -ln C."""
    adjust = rule_adjust(setting, pools, batch, counts)
    if objective.maximise:
        c = float(window_compute(setting, batch, setting.target_kind, adjust)[setting.target_kind][0])
        return -math.log(c) if c > 0 and math.isfinite(c) else math.inf
    t = float(time_to_target(setting, batch, adjust)["time_to_target_s"][0])
    if not t <= setting.window_s:
        return math.inf
    return math.log(t) if objective.by_time else fleet_cost_usd(pools, counts) / scale
