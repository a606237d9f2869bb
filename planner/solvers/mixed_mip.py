"""`--solver highs|scip` on a fleet of pools: the pools chosen inside one mixed-integer model
(`planner.mip.pools`), solved by outer approximation, then certified by the exact decomposition.

1. `pools.pool_tables`: the patterns of pools used, the tables of their distinct settings,
   presolved, merged; the model is `formulation.build` on the merged tables plus the pool families.
2. The loop (as `planner.solvers.certified.outer_approximation`): solve; read the plan the model
   chose and the nodes per pool; score its canonical plan (`pool_patterns.canonical`) in the setting of the
   pools it uses; if the model's value is below it, solve the chosen class and the next 7 of its
   setting exactly (min_time) and refine the grid at the plan; until the backend's bound meets the
   best plan (1e-9 in ln T; min_cost: 1e-9 of the cost) or `MAX_ROUNDS`.
3. Certification: the exact decomposition (`planner.solvers.decomposition.decompose` with the branch and
   bound) with the loop's value as its incumbent, when the fleet has at most `MAX_EXACT_POOLS` pools.
   Beyond, where the families of `planner.solvers.pool_families` give the exact optimum (`refusal` is
   None), the same decomposition (by families) certifies a loop that did not prove its plan: max_compute,
   whose relaxation rarely closes, then runs `CERTIFIED_COMPUTE_ROUNDS` rounds and is proven by the
   families instead of stopping at its time limit with the gap open. Elsewhere beyond, and wherever the
   loop proved its plan, the loop's own bound is the proof (status optimal only when it met the best
   plan), and time ties are not broken by cost as the decomposition breaks them.

Under fleet.sync_rule proportional or auto (`planner.sync.proportional.mip_rows`): the tables and the
incumbent are the rule's, the model has the rule's rows, a decoded plan is scored under the rule
(`rule_candidates`), no class is solved exactly in the loop (its exact optima are the straggler
rule's), the loop runs `RULE_ROUNDS` rounds before the certification, the part bounds are not passed to it,
and beyond `MAX_EXACT_POOLS` pools an unproven loop is certified by the rule's families
(`planner.solvers.proportional_families`) where they apply, else refused (exit 2, `refuse_unproven`).

With `network.regions = "chosen"` (`planner.mip.pool_regions`) the model is a relaxation scored on
every site its own region and without the placement rule; every plan the loop keeps is re-scored on
a real placement (`pool_regions.exact_plan`), no class counts as solved exactly, and the
decomposition (which solves chosen regions exactly) certifies; more than `MAX_EXACT_POOLS` pools is
refused.
"""

from __future__ import annotations

import math
import time

import numpy as np

from planner.objectives import MIN_TIME, Objective
from planner.fleet.replicas import fleet_cost_usd
from planner.sync.straggler.rule import mixed_setting
from planner.sync.proportional.mip_rows import RULE_FAMILIES, plan_value, refuse_unproven, rule_candidates
from planner.sync.rules import rule_of
from planner.mip.pool_regions import exact_plan, is_chosen, model_sites, refusals, relaxed_bounds
from planner.mip.pool_patterns import (COST_TOL, DeadlinePassed, MixedPlan, PoolTables, canonical, collector_paused,
                                       price_scale)
from planner.mip.pool_rows import FAMILIES, build_pools, initial_grid
from planner.mip.pools import pool_tables
from planner.mip.presolve import EXACT_CLASSES, most_promising, solve_classes
from planner.mip.tables import outer_per_step, sync_terms
from planner.solvers import backends
from planner.solvers.bnb import TIME, compute_measure
from planner.solvers.certified import (COMPUTE_LOG_TOL, LOG_TOL, MAX_ROUNDS, MipReport, backend_round,
                                      raised_bound)

# The loop's caps are rounds, not seconds (its report does not depend on the machine's load; docs/mip.md,
# "What is deterministic"); the backend's time per round stays a wall cap (`certified.COMPUTE_ROUND_S`).
CERTIFIED_COMPUTE_ROUNDS = 1     # max_compute with a certification to follow: its first round only (was 0 s after
                                 # the tables). Its relaxation rarely closes (as for one pool), its later rounds grow
                                 # the model (20-site bench: 429 -> 2,277 rows, 0.47 -> 1.9 s), and the decomposition
                                 # proves the optimum from the first round's plan as quickly
RULE_ROUNDS = 4                  # under the proportional or auto rule, certified: the loop's rounds (was 0.5 s after the
                                 # tables; the shipped A100 + H100 fleet's loop closes in 3). Its bound closes only where
                                 # the rounding of H_p and eta at H_max do not matter (`planner.sync.proportional.mip_rows`),
                                 # and the decomposition, which solves the rule exactly, certifies from its best plan
UNCERTIFIED_ROUNDS = 6           # max_compute, or under the rule, beyond `MAX_EXACT_POOLS` pools, where the loop's bound
                                 # is the proof (was 4 s after the tables: 14 pools under the proportional rule close in
                                 # 3 rounds of about 0.12 s of CPU each, and missed the 4 s at load 12, docs/mip.md)


def model_value(objective: Objective, setting, plan: MixedPlan, pools) -> float:
    """The model's measure of a plan on pools: ln T (min_time), cost in the model's units (min_cost),
    -ln C (max_compute); inf past the duration limit (min_time, min_cost) or without compute; under
    its own sync rule (`mip_rows.plan_value`)."""
    return plan_value(objective, plan, pools, price_scale(pools))


def to_units(objective: Objective, value: float, pools) -> float:
    """A model value in the objective's units: s, USD, FLOP."""
    if objective.maximise:
        return math.exp(-value)
    return math.exp(value) if objective.by_time else value * price_scale(pools)


def decode(f, pt: PoolTables, instance, params) -> MixedPlan:
    """The canonical plan of the model's point, scored in the setting of the pools it uses."""
    from planner.evaluate import with_params
    from planner.solvers.pool_parts import unit_price
    batch, q, ab = f.decode()
    m = f.model
    counts = [int(round(v.value or 0)) for v in m.cntv]
    if f.chosen is not None:
        e = pt.merged.sync[f.chosen]
        unit, single, j = e.unit, False, pt.part_of_class(f.chosen)[0]
        batch = batch.take(slice(0, 1))
        batch.nodes = batch.nodes * 0 + f.point[0] * unit
    else:
        fixed = [i for i, lam in enumerate(m.lamv) if (lam.value or 0) > 0.5][0]
        j = pt.part_of_fixed(fixed)[0]
        single = pt.merged.fixed[fixed].label.endswith("_single")
        unit = int(batch.stages[0]) if batch.mode == "pipeline_wan" else 1
    plan, counts = canonical(pt.pools, batch, counts, unit, pt.min_nodes, single)
    used = tuple(p for p, c in enumerate(counts) if c > 0)
    s = mixed_setting(pt.pools, used, batch.precision, model_sites(instance))
    s = unit_price(s if params is None else with_params(s, params))
    if repr(s) != repr(pt.parts[j].setting):
        raise AssertionError(f"the pattern rows chose setting {j} for pools {used}, whose setting differs")
    if pt.rule == "straggler":
        return MixedPlan(plan, counts, s, j), q, ab
    model_counts = [int(round(v.value or 0)) for v in m.cntv]
    options = [MixedPlan(plan, c, s, j, r) for r, c in rule_candidates(pt.pools, plan, counts, model_counts, s,
                                                                       pt.rule, pt.budget_usd)]
    if not options:
        raise AssertionError(f"the model chose a plan the '{pt.rule}' rule does not apply to ({plan.mode})")
    values = [model_value(f.objective, None, o, pt.pools) for o in options]
    return options[int(np.argmin(values))], q, ab


@collector_paused()
def outer_approximation(instance, pools, objective: Objective, backend: str, params, deadline: float = math.inf,
                        loop_rounds: int = UNCERTIFIED_ROUNDS):
    """(best MixedPlan or None, its model value, MipReport) of the loop alone (module docstring);
    `loop_rounds`: max_compute or under a rule other than straggler, the loop's rounds. Python's cyclic
    collector is paused throughout (`pool_patterns.collector_paused`: as for the tables, now also over the
    rounds' models, their arrays and HiGHS, which allocate while the tables' ~10^6 objects live on; about
    0.25 s of collections on 16 pools in 16 cities, min_time). Values unchanged."""
    solver = backends()[backend]
    start = time.perf_counter()
    pt = pool_tables(instance, pools, objective, params, deadline)
    chosen = is_chosen(instance)      # the model a relaxation, its plans re-scored on real regions (pool_regions)

    def exact(plan):
        if plan is None or not chosen:
            return plan
        return exact_plan(instance, pools, plan, params, lambda p: model_value(objective, None, p, pools))

    best_plan, best = exact(pt.incumbent[1]) if pt.incumbent else None, math.inf
    if best_plan is not None:
        best = model_value(objective, None, best_plan, pools)
        if not math.isfinite(best):     # past the duration limit, or no compute, on the whole fleet: not a plan
            best_plan = None
    t = pt.merged
    report = MipReport(backend, "error", None, None, None, 0.0, 0, time.perf_counter() - start, 0, 0, 0, 0,
                       classes=pt.classes_total, classes_kept=len(t.sync) + len(t.fixed))
    if not t.sync and not t.fixed:
        report.status = report.backend_status = "optimal" if best_plan is not None else "infeasible"
        if best_plan is not None:
            report.objective = report.bound = to_units(objective, best, pools)
            report.gap = 0.0
        return best_plan, best, report, pt
    compute = objective.maximise
    capped = compute or pt.rule != "straggler"       # the loop's rounds are `loop_rounds`, each backend round capped
    grid = initial_grid(pt, objective, best)
    solved = set() if chosen else set(pt.solved)      # solved on the singleton regions: not exact when chosen
    tol = LOG_TOL if objective.by_time else COMPUTE_LOG_TOL if objective.maximise else \
        COST_TOL * max(1.0, abs(best) if math.isfinite(best) else 1.0)
    bound, f = -math.inf, None
    for rounds in range(1, (min(loop_rounds, MAX_ROUNDS) if capped else MAX_ROUNDS) + 1):
        t0 = time.perf_counter()
        f = build_pools(pt, grid, objective, best, solved)
        report.build_s += time.perf_counter() - t0
        r = backend_round(solver, f.model, deadline, capped, report, rounds)
        if r.status == "infeasible":
            report.status = "infeasible" if best_plan is None else "optimal"
            bound = math.inf if best_plan is None else best
            break
        bound = raised_bound(bound, r)
        if not r.has_solution:
            report.status = r.status
            break
        plan, q, ab = decode(f, pt, instance, params)
        plan = exact(plan)
        value = model_value(objective, None, plan, pools) if plan is not None else math.inf
        if value < best:
            best_plan, best = plan, value
        if r.status == "optimal" and bound >= best - tol:
            report.status = "optimal"
            break
        if r.status != "optimal":
            report.status = r.status
            break
        newly = not objective.by_cost and not chosen and f.chosen is not None and f.chosen not in solved and \
            pt.rule == "straggler"
        if newly:
            j, local = pt.part_of_class(f.chosen)
            part = pt.parts[j]
            if part.exact_range:
                mine = {a - part.sync_offset for a in solved if 0 <= a - part.sync_offset < len(part.tables.sync)}
                batch = [local] + most_promising(part.tables, mine | {local}, EXACT_CLASSES - 1)
                plan_c, _ = solve_classes(part.tables, batch, best, deadline,
                                          compute_measure(t.setting.target_kind) if compute else TIME)
                solved.update(part.sync_offset + a for a in batch)
                if plan_c is not None:
                    from planner.mip.pool_patterns import mixed_plan
                    found = mixed_plan(pt, j, part.tables, plan_c)
                    value_c = model_value(objective, None, found, pools)
                    if value_c < best:
                        best_plan, best = found, value_c
                if bound >= best - tol:
                    report.status = "optimal"
                    break
            else:
                newly = False
        n, h, rr = f.point
        u = None
        if compute and f.chosen is not None:      # the plan's own u = ln(window tokens): a top of a u bracket
            e = t.sync[f.chosen]
            u = e.u_const + math.log(n) - float(outer_per_step(e, t, n, h, rr))
            q, ab = sync_terms(e, t, n, h, rr)
        pin = compute and f.chosen is not None and pt.rule == "straggler"     # the rule's tokens depend on the split
        refined = grid.refine(n, h, rr, q, ab, f.gain if t.quality_target and not compute else None, u,
                              t.sync[f.chosen].label if pin else None)
        if pt.rule_rows is not None:
            refined = pt.rule_rows.refine(f.model) or refined
        if time.perf_counter() >= deadline:
            report.status = "time_limit"
            break
        if not (refined or newly):
            report.status = "gap"
            break
    else:
        report.status = "gap"
    size = f.size()
    report.columns, report.rows, report.nonzeros = size["columns"], size["rows"], size["nonzeros"]
    report.families = f.families()
    if math.isfinite(best):
        report.objective = to_units(objective, best, pools)
    if math.isfinite(bound):
        report.bound = to_units(objective, min(bound, best) if math.isfinite(best) else bound, pools)
    elif compute and bound == math.inf:      # proven: no plan reaches any compute
        report.bound = 0.0
    if report.objective is not None and report.bound is not None and report.objective > 0:
        report.gap = max(0.0, abs(report.objective - report.bound) / report.objective)
    return best_plan, best, report, pt


class SettingBounds:
    """`part_bound` of the decomposition (`planner.solvers.decomposition.decompose`) from the model's tables: for a
    part (pools U, precision) whose setting is one of the patterns' settings, the least bound of that
    setting's pieces (`pools.node_bounds`: boxes of n and fixed plans) that can have at most the part's
    nodes, in the objective's units: a lower bound on the time to target (s, min_time), an upper bound
    on the compute (FLOP, max_compute), the latter also <= C_target W / `straggler.search.compute_bound_s` at the
    part's nodes where that bound holds. Valid for every plan of the part: its setting's tables cover
    the part's space (the same reductions, node range within the setting's), and a plan of at most N
    nodes lies in a box whose least nodes is <= N. Nothing known (0 s, inf FLOP) for a setting whose
    tables were not built."""

    def __init__(self, objective: Objective):
        self.objective = objective
        self.settings: dict[str, object] = {}

    def add(self, pt: PoolTables) -> None:
        for part in pt.parts:
            if part.node_bounds is not None:
                self.settings[repr(part.setting)] = part.node_bounds + (part.dropped,)
            elif part.fixed or math.isfinite(part.dropped):       # built, every class dropped by the presolves
                self.settings[repr(part.setting)] = (np.array([f.nodes for f in part.fixed], dtype=float), np.array(
                    [f.log_time if self.objective.by_time else -f.log_compute for f in part.fixed],
                    dtype=float), part.dropped)

    def __call__(self, part) -> float:
        from planner.sync.straggler.search import compute_bound_s
        top = part.space.max_nodes
        value = -math.inf
        if (known := self.settings.get(repr(part.setting))) is not None:
            least, bound, dropped = known
            value = min(float(bound[least <= top].min(initial=math.inf)), dropped)
        if self.objective.by_time:
            return math.exp(value) if value > -math.inf else 0.0
        floor_s = compute_bound_s(part.setting, int(top))
        ceiling = part.setting.target * part.setting.window_s / floor_s if floor_s > 0 else math.inf
        return min(math.exp(-value) if value < math.inf else 0.0, ceiling)


def solve_mixed_mip(instance, objective: Objective, solver: str, deadline: float, start: float):
    """`planner.solve.solve` of a fleet of pools with a MIP backend (module docstring)."""
    from planner.fleet.pools import pool_settings
    from planner.solvers.decomposition import answer, decompose
    from planner.solvers.pool_families import refusal
    from planner.solvers.pool_parts import MAX_EXACT_POOLS, Part, PartResult
    refusals(instance, solver, len(instance.fleet.pools), MAX_EXACT_POOLS)       # chosen regions (pool_regions)
    pools = pool_settings(instance)
    ruled = rule_of(instance) != "straggler"
    maximise = objective.maximise
    reports, shapes, incumbents, found, bound = [], [], {}, [], (0.0 if maximise else math.inf)
    bounds = SettingBounds(objective)
    certify = len(pools) <= MAX_EXACT_POOLS
    # beyond it, where the families of `planner.solvers.pool_families` give the exact optimum, they certify a loop
    # that did not prove its plan (the loop's rounds then as for a certified loop)
    by_families = not certify and refusal(instance, pools) is None
    added = list(FAMILIES) + (list(RULE_FAMILIES) if ruled else [])
    for params in instance.search.params or [None]:
        loop_rounds = UNCERTIFIED_ROUNDS if not (certify or by_families) else \
            RULE_ROUNDS if ruled else CERTIFIED_COMPUTE_ROUNDS
        try:
            plan, value, report, pt = outer_approximation(instance, pools, objective, solver, params, deadline,
                                                          loop_rounds)
        except DeadlinePassed:            # the tables were not built in time: no plan, no bound (exit 3)
            return answer(instance, pools, objective, solver, found, objective.unknown_bound, 0, start, deadline,
                          dict(space_size=None, candidates=[]), explain=False)
        reports.append(report)
        if not ruled:       # its bounds are the straggler rule's (the decomposition prunes its parts with them)
            bounds.add(pt)
        shapes.append({"patterns": len(pt.groups), "site_sets": len(pt.keys), "settings": len(pt.parts),
                       "settings_built": sum(p.tables is not None for p in pt.parts)})
        if plan is not None:
            units = to_units(objective, value, pools)
            incumbents[params] = units
            part = pt.parts[plan.part]
            used = tuple(p for p, c in enumerate(plan.counts) if c > 0)
            cost = fleet_cost_usd(pools, plan.counts)
            key = (units, math.exp(model_value(MIN_TIME, None, plan, pools))) if objective.by_cost else \
                (-units if objective.maximise else units, cost)
            space = part.tables.space if part.tables is not None else pt.merged.space
            found.append(PartResult(Part(params, used, plan.batch.precision, plan.setting, space), plan.batch,
                                    plan.counts, key + (0,), units, plan.rule))
        if maximise:
            bound = max(bound, report.bound if report.bound is not None else math.inf)
        else:
            bound = min(bound, report.bound if report.bound is not None else (math.inf if report.status == "infeasible"
                                                                              else 0.0))
    proven = all(r.status in ("optimal", "infeasible") for r in reports)
    if certify or (by_families and not proven):       # certification: the exact decomposition from the loop's plans
        t0 = time.perf_counter()
        part_bound = None if objective.by_cost or ruled else \
            relaxed_bounds(instance, pools, bounds) if is_chosen(instance) else bounds
        result = decompose(instance, objective, "bnb", deadline, start, incumbents=incumbents, part_bound=part_bound)
        if by_families and not ruled and result.status != "optimal":
            # the families stopped at the deadline: the loop's plan and bound (its own proof beyond 12 pools) hold
            result = with_loop(result, answer(instance, pools, objective, solver, found, bound, 0, start, deadline,
                                              dict(space_size=None, candidates=[]), explain=False), maximise)
        certify_s = time.perf_counter() - t0
        mine = {tuple(sorted((pools[p].label, c) for p, c in enumerate(r.counts) if c)): r for r in found}
        for report in reports:
            report.certify_s = certify_s / len(reports)
        if result.plan is not None:
            chosen = tuple(sorted(result.plan.pool_nodes.items()))
            ours = mine.get(chosen)
            changed = ours is None or _plan_fields(ours.batch) != _plan_fields_of(result.plan)
            for report in reports:
                report.certified_changed_plan = changed
                report.certified_improved = bool(found) and (
                    result.objective_value > max(r.value for r in found) * (1 + 1e-9) if maximise
                    else result.objective_value < min(r.value for r in found) * (1 - 1e-9))
        result.solver = solver
        result.mip = [dict(r.to_dict(), **shape, families_added=added, certified_by="decomposition")
                      for r, shape in zip(reports, shapes)]
        result.solve_time_s = time.perf_counter() - start
        return result
    # more pools than the decomposition takes: the loop's own bound is the proof (its gap <= LOG_TOL / COST_TOL)
    if ruled and not proven:
        refuse_unproven(instance, solver, MAX_EXACT_POOLS, len(pools), reports)
    if proven:
        bound = (max if maximise else min)([r.value for r in found], default=0.0 if maximise else math.inf)
    result = answer(instance, pools, objective, solver, found, bound, 0, start, deadline,
                    dict(space_size=None, candidates=[]), explain=False)
    result.mip = [dict(r.to_dict(), **shape, families_added=added, certified_by="the loop's bound")
                  for r, shape in zip(reports, shapes)]
    return result


def with_loop(certified, loop, maximise: bool):
    """An interrupted certification (`certified`, the families stopped by the deadline) and the loop's own answer
    (`loop`, its plans and its bound, valid beyond `MAX_EXACT_POOLS` pools under the straggler rule): the better
    plan (the certification's on a tie: it breaks time ties by cost) with the tighter of the two proven bounds
    (max_compute: the smaller upper bound; else the larger lower bound), status and gap by
    `decomposition.status_and_gap`."""
    from planner.solvers.decomposition import status_and_gap
    def better(a, b):
        return a > b if maximise else a < b
    pick = certified if certified.objective_value is not None and (
        loop.objective_value is None or not better(loop.objective_value, certified.objective_value)) else loop
    bounds = [b for b in (certified.best_bound, loop.best_bound) if b is not None]
    if bounds:
        pick.best_bound = min(bounds) if maximise else max(bounds)
    if pick.objective_value is not None and pick.best_bound is not None:
        pick.status, pick.gap = status_and_gap(pick.objective_value, pick.best_bound, maximise)
    return pick


def _plan_fields(batch) -> tuple:
    return (batch.mode, batch.precision, int(batch.nodes[0]), int(batch.inner_steps[0]),
            int(batch.regional_rounds[0]) if batch.mode == "hierarchical" else 1)


def _plan_fields_of(plan) -> tuple:
    return (plan.mode, plan.precision, int(plan.nodes), int(plan.inner_steps or 1),
            int(plan.regional_rounds or 1) if plan.mode == "hierarchical" else 1)


def write_pools_model(instance, objective: Objective, path) -> list:
    """`dtplan solve --write-model` of a fleet of pools: the first round's model (after the presolves,
    with the best plan they found as cutoff), one file per model size as `planner.mip.export`."""
    from planner.fleet.pools import pool_settings
    from planner.mip.export import model_paths
    from planner.files import atomic_path
    from planner.solvers import UnsupportedBySolver
    pools = pool_settings(instance)
    written = []
    for params, target in zip(instance.search.params or [None], model_paths(instance, path)):
        pt = pool_tables(instance, pools, objective, params)
        if not (pt.merged.sync or pt.merged.fixed):
            raise UnsupportedBySolver("the presolve leaves no class of any pattern of pools (no plan can beat its "
                                      "incumbent, or none meets the limits): no model to write")
        cutoff = model_value(objective, None, pt.incumbent[1], pools) if pt.incumbent else None
        grid = initial_grid(pt, objective, cutoff)
        f = build_pools(pt, grid, objective, cutoff, pt.solved)
        with atomic_path(target) as tmp:
            f.model.write(str(tmp), io_options={"symbolic_solver_labels": True})
        written.append(target)
    return written
