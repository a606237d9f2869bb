"""min_cost under the proportional rule by the branch and bound's boxes (docs/fleet.md, section 4):
the cheapest split and plan of a part that reach the target within the duration limit (and the
budget), then the fastest, without scoring every plan or listing every split.

**A plan and its cheapest split.** For a plan d (its U, N, H, R and every other decision) the time
to target is proportional to 1 / W (`planner.sync.proportional.search`): with T_0 its time at
W_0 = N H (scored under the rule's H_eff at H_max), d meets the limit T_lim on a split of W iff
W >= W_need(d) = W_0 T_0 / T_lim. The cheapest split of N nodes with W >= W_need within the budget
(ties to the most W: the least time) is a query of the split table
(`split_table.SplitTable.cheapest_reaching`), exact, with no split listed.

**Bound on a box** of plans [n1, n2] x [H1, H2] x [R1, R2] of one class (`planner.solvers.bnb`):
- time: every plan of the box takes at least L_box / rho_sup(N(n1)) under the rule, L_box the
  straggler bound of the box (`bnb.time_box`; `boxes` for why it holds under the
  rule); a box above T_lim holds no plan that meets the limit;
- cost: every split of N nodes costs at least the cheapest fill of N nodes (one node of each pool
  of U, then the cheapest pools first: an exchange argument), which never falls as N grows, so a box
  costs at least the cheapest fill of N(n1) nodes (`cost_floor`; deflated by 1e-12 for the float
  sums). Boxes above the best cost found (tie tolerance kept) are dropped, and their n2 is cut to the
  largest n whose fill is not above it (`bnb.branch_and_bound`'s n_cap);
- at the best cost (a tie) a box is dropped too when its time bound exceeds the best plan's time.
Every plan the search reaches (corners, down to single plans) is solved exactly on its cheapest
split, so every plan not reached lies in a dropped box, none of whose plans on any split is cheaper
(or as cheap and faster): the answer is the part's exact optimum.
"""

from __future__ import annotations

import math
import time

import numpy as np

from planner.sync.proportional.rule import adjust_for
from planner.sync.proportional.measure import measure
from planner.fleet.replicas import node_price_usd
from planner.objectives import MIN_TIME
from planner.solvers.objective_search import tie_less
from planner.solvers import bnb
from planner.solvers.bnb import TIE_REL


def cost_floor(pools, used, max_nodes: int) -> np.ndarray:
    """Per N = 0..max_nodes: the cost of the cheapest fill of N nodes of U (module docstring) times
    1 - 1e-12, inf where no split of N nodes exists."""
    price = {i: node_price_usd(pools[i]) for i in used}
    order = sorted(used, key=lambda i: (price[i], i))
    extra = np.concatenate([np.full(pools[i].count - 1, price[i]) for i in order] + [[]])
    floor = np.full(max_nodes + 1, math.inf)
    base = len(used)
    top = min(max_nodes, base + extra.size)
    if top >= base:
        floor[base:top + 1] = sum(price.values()) + np.concatenate([[0.0], np.cumsum(extra)])[:top - base + 1]
    return floor * (1.0 - 1e-12)


def search(pools, used, s, space, classes, table, h_max_of, rho_sup: np.ndarray, incumbent: float,
           deadline: float):
    """(best, evaluations, complete): best = (batch, counts, key (cost, time), cost) of the part's
    cheapest proportional plan within the tie tolerance of `incumbent` (USD, a plan of another
    part) or cheaper, or None. `table`: the part's `SplitTable` within the budget; `rho_sup`:
    `boxes.fill_speed_bound`."""
    limit_s = s.window_s
    floor = cost_floor(pools, used, int(space.max_nodes))
    state = {"cost": incumbent, "time": math.inf, "found": None}
    evaluations, complete = 0, True

    def nodes_floor(nodes):
        return floor[np.clip(nodes, 0, floor.size - 1)]

    for c, r_max in classes:
        h_top, r_top = bnb.h_r_max(c, space.max_inner_steps, r_max)

        def visit(idx, n, h, r, _straggler_value, c=c):
            idx, n, h, r = (np.asarray(x, dtype=np.int64) for x in np.broadcast_arrays(idx, n, h, r))
            nodes = c.nodes(idx, n)
            keep = np.flatnonzero(nodes_floor(nodes) <= state["cost"] * (1.0 + TIE_REL))
            if not keep.size:
                return
            idx, n, h, r, nodes = idx[keep], n[keep], h[keep], r[keep], nodes[keep]
            batch = c.plans(idx, n, h, r)
            reference = (nodes * h).astype(float)                       # W_0 = N H
            t0 = measure(s, batch, adjust_for(reference, h_max_of(h), h), MIN_TIME)
            with np.errstate(invalid="ignore"):
                need = np.where(np.isfinite(t0), reference * t0 / limit_s, np.inf)
            ok = np.isfinite(need)
            ok[ok] = table.fastest(h[ok], nodes[ok]) >= need[ok]        # the most W of N nodes reaches W_need
            if not ok.any():
                return
            cost, weighted, prefix, n_a = (np.full(idx.size, math.inf), np.zeros(idx.size, np.int64),
                                           np.zeros(idx.size, np.int64), np.zeros(idx.size, np.int64))
            at = np.flatnonzero(ok)
            cost[at], weighted[at], prefix[at], n_a[at] = table.cheapest_reaching(h[at], nodes[at], need[at])
            ok = np.isfinite(cost) & (cost <= state["cost"] * (1.0 + TIE_REL))
            if not ok.any():
                return
            at = np.flatnonzero(ok)
            time_s = measure(s, batch.take(at), adjust_for(weighted[at].astype(float), h_max_of(h[at]), h[at]),
                             MIN_TIME)
            good = np.isfinite(time_s) & (time_s <= limit_s)
            if not good.any():
                return
            at, time_s = at[good], time_s[good]
            top = float(cost[at].min())
            tied = np.flatnonzero(cost[at] <= top + TIE_REL * abs(top))
            k = int(tied[np.argmin(time_s[tied])])
            i = int(at[k])
            key = (float(cost[i]), float(time_s[k]))
            found = state["found"]
            if found is None or tie_less(key, found[2]):
                counts = table.counts(int(prefix[i]), int(nodes[i]), int(n_a[i]))
                state["found"] = (batch.take(slice(i, i + 1)), counts, key, key[0])
                if key[0] <= state["cost"] * (1.0 + TIE_REL):
                    state["cost"], state["time"] = min(state["cost"], key[0]), key[1]

        def box_bound(s, c, box, measure_name, mono, cut):
            lower_s, corners = bnb.time_box(s, c, box, mono)
            nodes = c.nodes(box["i"], box["n1"])
            rho = rho_sup[np.minimum(nodes, rho_sup.size - 1)]
            with np.errstate(divide="ignore", invalid="ignore"):
                time_floor = np.where(rho > 0, lower_s / rho, np.inf)
            lower = nodes_floor(nodes)
            best = state["cost"]
            slower = (lower >= best / (1.0 + TIE_REL)) & (time_floor > state["time"] * (1.0 + TIE_REL))
            lower = np.where((time_floor > limit_s * (1.0 + TIE_REL)) | slower, np.inf, lower)
            return lower, corners

        def n_cap(box, c=c):
            """The largest n of each box whose cheapest fill is not above the best cost (ties kept):
            N = max(n unit, min_nodes) <= N_most."""
            within = np.flatnonzero(floor <= state["cost"] * (1.0 + TIE_REL))
            most = int(within.max()) if within.size else -1
            i = box["i"]
            return np.minimum(box["n2"], np.where(c.min_nodes[i] <= most, most // c.unit[i], 0))

        def cutoff(box):
            """The best cost (ties kept); finite, so that a box of no plan within the limit (bound inf) is
            dropped before any plan is found."""
            return min(state["cost"] * (1.0 + TIE_REL), np.finfo(float).max)

        idx, n, h, r = bnb.seeds(s, c, h_top, r_top)
        visit(idx, n, h, r, None)
        count, left = bnb.branch_and_bound(s, c, h_top, r_top, visit, cutoff,
                                            deadline=deadline, n_cap=n_cap, box_bound=box_bound)
        evaluations += idx.size + count
        if left is not None or time.perf_counter() > deadline:
            complete = False
            break
    found = state["found"]
    if found is not None and math.isfinite(incumbent) and found[3] > incumbent * (1.0 + TIE_REL):
        found = None
    return found, evaluations, complete
