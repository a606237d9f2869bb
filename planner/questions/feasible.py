"""Can the target be reached within the limits, and if not, what single change would do it?

`feasible(raw)` answers for an instance given as its raw JSON dict (so that variants are
built by editing the dict and validating it again, never by skipping validation):

- the verdict: the fastest plan (`min_time`) and whether it meets every limit;
- when it does not: the limits that cannot be met together (`planner.solve.explain_infeasible`)
  and, for each of four limits, the smallest change of that limit alone that makes the
  instance feasible, each found by re-solving and each checked twice: the instance with
  the fix is feasible, and with the next smaller step it is not.

| fix | field(s) changed | how it is found | next smaller step |
|---|---|---|---|
| nodes | `fleet.nodes` (and `limits.max_nodes`) | `min_cost` with the node cap raised: the fewest nodes reaching the target in time | one node fewer |
| pool nodes (fleet of pools) | `fleet.pools[i].count`, or a new pool `fleet.pools[n]` of each preset | planner.questions.pool_fixes (exact: one `min_cost` solve with prices that count only that pool, or bisection under a budget) | one node fewer |
| WAN bandwidth | `network.wan.up_mbps`, `down_mbps` (scaled together, 3 significant digits) | bisection on the scale | at most 1% less |
| duration | `limits.max_days` | `min_time` without the duration limit, rounded up to 0.1 day | 0.1 day less |
| budget | `limits.budget_usd` (only when set) | `min_cost` without the budget: nodes x node price | $1 less |
| goodput | `fleet.goodput` (only when below 1) | `min_time` at goodput 1 gives the training time T; the goodput needed is T / limit, rounded up to 0.001 | 0.001 less |

Every search stays within the schema's magnitude bounds (planner.schema.limits: at most
10^7 nodes, 10^12 Mbit/s, 10^6 days, $10^15). With a `deadline` (time.perf_counter()), every
solve stops at it: a verdict not reached in time leaves `Feasibility.timed_out` set, and
fixes not searched in time are listed in `no_fix` as such (never guessed).
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field
from typing import Any, Callable

from planner.objectives import MIN_COST
from planner.cost.duration import SECONDS_PER_DAY
from planner.schema.errors import InputError
from planner.schema.instance import parse_instance
from planner.schema.limits import MAX_BUDGET_USD, MAX_DAYS, MAX_MBPS, MAX_NODES
from planner.questions.variants import Fix, TimeUp, VariantSolver, verified
from planner.solve import SolveResult, with_beyond_evidence

NODE_CAP_FACTOR = 1000          # search up to this many times the fleet (at least NODE_CAP_MIN nodes)
NODE_CAP_MIN = 100_000
BANDWIDTH_MAX_FACTOR = 1e5      # up to 10^5 times the instance's WAN bandwidth
BANDWIDTH_STEP = 1.01
UNLIMITED_DAYS = MAX_DAYS
DAY_STEP = 0.1
GOODPUT_STEP = 0.001


@dataclass
class Feasibility:
    feasible: bool
    result: SolveResult                          # min_time on the instance as given
    fixes: list[Fix] = field(default_factory=list)
    no_fix: list[str] = field(default_factory=list)   # limits no change of which alone suffices, and why
    solves: int = 1
    timed_out: bool = False                      # the time limit came before the verdict (no plan, no proof)

    def to_dict(self) -> dict[str, Any]:
        return {"feasible": self.feasible, "timed_out": self.timed_out, "result": self.result.to_dict(),
                "binding": self.result.infeasibility if not self.feasible else self.result.binding,
                "fixes": [f.to_dict() for f in self.fixes], "no_fix": self.no_fix, "solves": self.solves}

    def to_frame(self):
        """The instance as given, then one row per fix (pandas DataFrame)."""
        from planner.frames import feasibility_frame
        return feasibility_frame(self)


def _set(path: str, value) -> Callable[[dict], None]:
    keys = path.split(".")

    def edit(data: dict) -> None:
        node = data
        for k in keys[:-1]:
            node = node.setdefault(k, {})
        node[keys[-1]] = value
    return edit


def _chain(*edits) -> Callable[[dict], None]:
    def edit(data: dict) -> None:
        for e in edits:
            e(data)
    return edit


def feasible(raw: dict, source: str = "<instance>", progress: Callable[[str], None] | None = None,
             deadline: float | None = None, site: str | None = None,
             presets: list[str] | None = None) -> Feasibility:
    """The verdict for `raw` (an instance's JSON dict) and, when infeasible, the smallest single fixes.

    A plan found before `deadline` proves feasibility even if not proven fastest; with no plan
    and no proof by then, `timed_out` is set and no fix is searched. For a fleet of pools the
    nodes fixes are one per pool and one per hardware preset added as a new pool (`presets`,
    default every preset), at `site` when given (planner.questions.pool_fixes)."""
    s = VariantSolver(raw, source, progress, deadline)
    s.progress("solving the instance")
    base = s.solve(copy.deepcopy(raw), exact=False)
    if base.plan is None and base.status == "time_limit":
        return Feasibility(False, base, timed_out=True)
    instance = parse_instance(copy.deepcopy(raw), source)
    if base.plan is None:        # dtplan: which evidence-envelope bounds stop it (docs/quality.md, section 6)
        s.progress("solving beyond the evidence envelope")
        explained = with_beyond_evidence(instance, base, deadline=deadline)
        s.count += explained is not base
        base = explained
    out = Feasibility(base.plan is not None, base)
    if out.feasible:
        return out
    if instance.fleet.is_mixed:
        from planner.questions.pool_fixes import pool_fixes
        for fix, reason in pool_fixes(s, instance, site, presets):
            if fix is not None:
                out.fixes.append(fix)
            elif reason:
                out.no_fix.append(reason)
    for name, finder in (("nodes", _fix_nodes), ("WAN bandwidth", _fix_bandwidth), ("duration", _fix_duration),
                         ("budget", _fix_budget), ("goodput", _fix_goodput)):
        try:
            fix, reason = finder(s, instance)
        except TimeUp:
            fix, reason = None, f"{name}: not searched: the time limit was reached"
        except InputError as err:    # e.g. constants with no exact search bound, on a space too large to score
            fix, reason = None, f"{name}: not searched: " + "; ".join(map(str, err.problems))
        if fix is not None:
            out.fixes.append(fix)
        elif reason:
            out.no_fix.append(reason)
    out.solves = s.count
    return out


def _fix_nodes(s: VariantSolver, instance) -> tuple[Fix | None, str | None]:
    if instance.fleet.is_mixed:          # one fix per pool and per preset instead (pool_fixes above)
        return None, None
    s.progress("fewest nodes")
    now = instance.limits.max_nodes or instance.fleet.nodes
    cap = min(max(NODE_CAP_FACTOR * instance.fleet.nodes, NODE_CAP_MIN), MAX_NODES)
    edit_cap = _chain(_set("fleet.nodes", cap), lambda d: d.get("limits", {}).pop("max_nodes", None))
    r = s.solve(s.variant(edit_cap), objective=MIN_COST)
    if r.status != "optimal":
        why = "no node count up to {:,} reaches the target within the limits".format(cap)
        if instance.limits.budget_usd is not None:
            why += f" (the budget of ${instance.limits.budget_usd:,.0f} also caps the fleet)"
        return None, f"nodes: {why}"
    n = int(r.plan.nodes)

    def at(nodes: int) -> dict:
        edits = [_set("fleet.nodes", nodes)]
        if instance.limits.max_nodes is not None:
            edits.append(_set("limits.max_nodes", nodes))
        return s.variant(_chain(*edits))

    return verified(s, "nodes", at(n), at(n - 1) if n > 1 else None,
                     {"fleet.nodes": n} | ({"limits.max_nodes": n} if instance.limits.max_nodes else {}),
                     {"fleet.nodes": instance.fleet.nodes} | ({"limits.max_nodes": instance.limits.max_nodes}
                                                              if instance.limits.max_nodes else {}),
                     f"{n:,} nodes instead of {now:,}")


def _fix_bandwidth(s: VariantSolver, instance) -> tuple[Fix | None, str | None]:
    s.progress("lowest WAN bandwidth")
    up, down = instance.network.wan.up_mbps, instance.network.wan.down_mbps

    def at(factor: float) -> dict:
        return s.variant(_chain(_set("network.wan.up_mbps", min(_round_up(up * factor), MAX_MBPS)),
                                _set("network.wan.down_mbps", min(_round_up(down * factor), MAX_MBPS))))

    most = min(BANDWIDTH_MAX_FACTOR, MAX_MBPS / max(up, down))     # within the schema's bound
    if most <= 1 or not s.feasible(at(most)):
        return None, (f"WAN bandwidth: not even {most:g} times the bandwidth "
                      f"({_round_up(up * most):,g} Mb/s up) is enough")
    lo, hi = 1.0, most                           # infeasible at lo, feasible at hi
    while hi / lo > BANDWIDTH_STEP:
        mid = math.sqrt(lo * hi)
        if s.feasible(at(mid)):
            hi = mid
        else:
            lo = mid
    new_up, new_down = _round_up(up * hi), _round_up(down * hi)
    return verified(s, "wan-bandwidth", at(hi), at(lo),
                     {"network.wan.up_mbps": new_up, "network.wan.down_mbps": new_down},
                     {"network.wan.up_mbps": up, "network.wan.down_mbps": down},
                     f"WAN {new_up:,g} Mb/s up / {new_down:,g} Mb/s down instead of {up:,g} / {down:,g}")


def _fix_duration(s: VariantSolver, instance) -> tuple[Fix | None, str | None]:
    s.progress("shortest duration")
    r = s.solve(s.variant(_set("limits.max_days", UNLIMITED_DAYS)))
    if r.status != "optimal":
        return None, "duration: no plan reaches the target however long the run (another limit binds)"
    days = math.ceil(r.objective_value / SECONDS_PER_DAY / DAY_STEP) * DAY_STEP
    days = min(round(days, 6), MAX_DAYS)
    current = instance.limits.max_days
    now = f"{current:,g}" if isinstance(current, (int, float)) else f"'{current}' ({instance_window_days(instance):,.1f})"
    return verified(s, "duration", s.variant(_set("limits.max_days", days)),
                     s.variant(_set("limits.max_days", round(days - DAY_STEP, 6))) if days > DAY_STEP else None,
                     {"limits.max_days": days}, {"limits.max_days": current},
                     f"a run of {days:,.1f} days instead of {now}")


def _fix_budget(s: VariantSolver, instance) -> tuple[Fix | None, str | None]:
    budget = instance.limits.budget_usd
    if budget is None:
        return None, None
    s.progress("lowest budget")
    r = s.solve(s.variant(lambda d: d["limits"].pop("budget_usd")), objective=MIN_COST)
    if r.status != "optimal":
        return None, "budget: no budget suffices (another limit binds)"
    cost = float(r.objective_value)
    if cost > MAX_BUDGET_USD:
        return None, f"budget: the budget needed, ${cost:,.0f}, exceeds dtplan's bound of ${MAX_BUDGET_USD:,.0f}"
    return verified(s, "budget", s.variant(_set("limits.budget_usd", cost)),
                     s.variant(_set("limits.budget_usd", cost - 1.0)) if cost > 1 else None,
                     {"limits.budget_usd": cost}, {"limits.budget_usd": budget},
                     f"a budget of ${cost:,.0f} instead of ${budget:,.0f}")


def _fix_goodput(s: VariantSolver, instance) -> tuple[Fix | None, str | None]:
    """Wall-clock is training time / goodput for every plan alike, so the fastest plan does not
    depend on the goodput, and the goodput needed is its training time over the duration limit."""
    goodput = instance.fleet.goodput
    if goodput >= 1:
        return None, None
    s.progress("goodput needed")
    r = s.solve(s.variant(_set("fleet.goodput", 1.0)))
    if r.status != "optimal":
        return None, "goodput: not even without downtime (goodput 1) is the target reached in time"
    needed = math.ceil(r.objective_value / (instance_window_days(instance) * SECONDS_PER_DAY) / GOODPUT_STEP
                       - 1e-9) * GOODPUT_STEP
    needed = round(min(needed, 1.0), 6)
    return verified(s, "goodput", s.variant(_set("fleet.goodput", needed)),
                     s.variant(_set("fleet.goodput", round(needed - GOODPUT_STEP, 6))) if needed > GOODPUT_STEP else None,
                     {"fleet.goodput": needed}, {"fleet.goodput": goodput},
                     f"a goodput of {needed:g} instead of {goodput:g} (training {needed:.1%} of the wall-clock)")


def _round_up(x: float, digits: int = 3) -> float:
    """x rounded up to `digits` significant digits (a bandwidth a person would quote)."""
    if x <= 0:
        return x
    scale = 10 ** (math.floor(math.log10(x)) - digits + 1)
    return math.ceil(x / scale - 1e-9) * scale


def instance_window_days(instance) -> float:
    from planner.setting import setting_from_instance
    return setting_from_instance(instance).window_s / SECONDS_PER_DAY
