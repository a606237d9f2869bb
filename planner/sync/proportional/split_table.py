"""The splits of N nodes among the pools of U under the proportional rule, queried without listing
them (docs/fleet.md, section 4): the least W >= x, the most W <= x, the cheapest split of a given W,
the cheapest split reaching W >= x, for W = sum_p n_p H_p (`planner.sync.proportional.rule`), 1 <= n_p
<= count_p, sum_p n_p = N, and the fleet's cost sum_p n_p price_p within the budget. With `forced` (the
search over subsets of pools, `planner.solvers.proportional_subsets`) the least n_p is 1 on the forced
pools only and 0 on the others of U (least_p below, 1 everywhere without it); nothing else changes.

**Two free pools.** Fix the counts of every pool of U but two, a and b (a *prefix*: every vector of
those counts is listed, at most MAX_PREFIXES; the two free pools are the two of most nodes, so with
three pools the prefixes are the counts of the smallest pool). Then n_b = M - n_a, M = N minus the
prefix's nodes, and

    W = W_prefix + M H_b + n_a (H_a - H_b),   cost = cost_prefix + M p_b + n_a (p_a - p_b)

are both linear in n_a, which runs over an interval: max(least_a, M - count_b) <= n_a <= min(count_a,
M - least_b), cut by the budget to a sub-interval (cost is linear in n_a: the budget bounds n_a on one
side; the float bound is checked against the cost summed exactly as `replicas.fleet_cost_usd` does,
in pool order, and moved by one where rounding put it on the wrong side). With a the faster of the
two (H_a >= H_b for every H: H_p = floor(H rho_p) and rho_a >= rho_b), W is nondecreasing in n_a,
so per prefix:

- least W >= x: n_a = max(lo, ceil((x - base) / d)) (d = H_a - H_b > 0; d = 0: W = base if >= x);
- most W <= x: n_a = min(hi, floor((x - base) / d));
- cheapest split of W exactly: n_a = (W - base) / d when an integer in [lo, hi] (d = 0: the cheaper
  end of the interval);
- cheapest split of W >= x: cost is linear in n_a on n_a >= n_min, so the cheaper end (p_a < p_b:
  the top, which also has the most W; p_a > p_b: n_min; equal prices: the top, the most W);

and the answer is the best over the prefixes (least or most W; least cost, ties to most W). Every
split of N nodes is one prefix and one n_a, so each answer is exact (checked against every split
listed in tests/test_fleet_proportional_splits.py). With one pool in U there is no b: n_a = N.
"""

from __future__ import annotations

import math

import numpy as np

from planner.sync.proportional.rule import inner_steps
from planner.fleet.replicas import node_price_usd

MAX_PREFIXES = 200_000          # prefixes listed at most; beyond, `SplitTable.build` gives None
CELLS = 1 << 22                 # queries x prefixes computed at once
NONE = np.int64(-1)             # W where no split exists


def _ceil_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return -((-a) // b)


class SplitTable:
    """The prefixes of U's splits and the two free pools (module docstring). Queries take arrays of
    H and N (and x) of one length and give per query the W (int64, NONE where no split qualifies),
    and where asked the cost and the split (prefix index, n_a)."""

    def __init__(self, pools, used, ratios: dict[int, float], budget_usd: float | None = None, forced=None):
        self.pools, self.used, self.ratios, self.budget_usd = pools, tuple(used), ratios, budget_usd
        self.least = {i: 1 if forced is None or i in forced else 0 for i in self.used}    # n_p >= least_p
        free = sorted(self.used, key=lambda i: (-pools[i].count, i))[:2]
        self.a = max(free, key=lambda i: (ratios[i], -i))               # the faster free pool
        self.b = next((i for i in free if i != self.a), None)
        self.rest = [i for i in self.used if i not in free]
        grids = np.meshgrid(*[np.arange(self.least[i], pools[i].count + 1) for i in self.rest], indexing="ij")
        self.prefix = np.stack([g.ravel() for g in grids], axis=1).astype(np.int64) if self.rest \
            else np.zeros((1, 0), np.int64)
        self.prefix_nodes = self.prefix.sum(axis=1)
        self.price = [node_price_usd(p) for p in pools]
        self.total = sum(pools[i].count for i in self.used)
        self._fills: dict[bool, np.ndarray] = {}

    @classmethod
    def build(cls, pools, used, ratios, budget_usd=None, forced=None) -> "SplitTable | None":
        """The table, or None when the prefixes would be more than MAX_PREFIXES. `forced` (a subset of
        `used`): only those pools must hold a node, the others 0 or more (the search over subsets of
        pools beyond 12 pools, `planner.solvers.proportional_subsets`); None: every pool of `used`."""
        free = sorted(used, key=lambda i: -pools[i].count)[:2]
        if math.prod(pools[i].count + (forced is not None and i not in forced) for i in used if i not in free) \
                > MAX_PREFIXES:
            return None
        return cls(pools, used, ratios, budget_usd, forced)

    # -- the cost, exactly as replicas.fleet_cost_usd sums it ---------------------------------------
    def cost(self, k: np.ndarray, nodes: np.ndarray, n_a: np.ndarray) -> np.ndarray:
        """sum_p n_p price_p in pool order for prefix k, n_a nodes of a and the rest of `nodes` on b."""
        n_b = nodes - self.prefix_nodes[k] - n_a
        total = np.zeros(np.broadcast(k, nodes, n_a).shape)
        for p, price in enumerate(self.price):
            if p == self.a:
                count = n_a
            elif p == self.b:
                count = n_b
            elif p in self.rest:
                count = self.prefix[k, self.rest.index(p)]
            else:
                continue
            total = total + count * price
        return total

    def counts(self, k: int, nodes: int, n_a: int) -> list[int]:
        out = [0] * len(self.pools)
        for j, p in enumerate(self.rest):
            out[p] = int(self.prefix[k, j])
        out[self.a] = int(n_a)
        if self.b is not None:
            out[self.b] = int(nodes - self.prefix_nodes[k] - n_a)
        return out

    # -- the interval of n_a per (query, prefix) ------------------------------------------------------
    def _frame(self, h: np.ndarray, nodes: np.ndarray):
        """Per query x prefix: (k, M, base W, d, lo, hi) with n_a in [lo, hi] (empty: lo > hi)."""
        steps = {p: v.astype(np.int64) for p, v in inner_steps(self.ratios, h).items()}
        k = np.arange(self.prefix.shape[0])[None, :]
        m = nodes[:, None] - self.prefix_nodes[None, :]
        pre_w = np.zeros((h.size, k.shape[1]), np.int64)
        for j, p in enumerate(self.rest):
            pre_w = pre_w + self.prefix[None, :, j] * steps[p][:, None]
        h_a = steps[self.a][:, None]
        h_b = steps[self.b][:, None] if self.b is not None else np.zeros_like(h_a)
        base = pre_w + m * h_b
        d = h_a - h_b
        count_b, least_b = (self.pools[self.b].count, self.least[self.b]) if self.b is not None else (0, 0)
        lo = np.maximum(self.least[self.a], m - count_b)
        hi = np.minimum(self.pools[self.a].count, m - least_b)
        if self.budget_usd is not None:
            lo, hi = self._within_budget(np.broadcast_to(k, m.shape), nodes[:, None] + 0 * m, lo, hi)
        return k, m, base, d, lo, hi

    def _within_budget(self, k, nodes, lo, hi):
        """[lo, hi] cut to the n_a whose split costs at most the budget (module docstring)."""
        budget = self.budget_usd
        slope = self.price[self.a] - (self.price[self.b] if self.b is not None else 0.0)
        lo, hi = lo.copy(), hi.copy()
        safe_lo = np.where(lo <= hi, lo, 1)
        at_lo = self.cost(k, nodes, safe_lo)
        if slope == 0:
            bad = (at_lo > budget) | (self.cost(k, nodes, np.where(lo <= hi, hi, 1)) > budget)
            hi = np.where(bad, lo - 1, hi)
            return lo, hi
        with np.errstate(invalid="ignore", over="ignore"):
            edge = safe_lo + (budget - at_lo) / slope
        edge = np.nan_to_num(edge, nan=0.0, posinf=2.0 ** 60, neginf=-2.0 ** 60)
        edge = np.clip(np.floor(edge) if slope > 0 else np.ceil(edge), -(2 ** 60), 2 ** 60).astype(np.int64)
        for _ in range(2):                       # rounding: put the edge on the right side
            if slope > 0:                        # n_a <= edge
                edge = np.where(self.cost(k, nodes, edge) > budget, edge - 1, edge)
                edge = np.where(self.cost(k, nodes, edge + 1) <= budget, edge + 1, edge)
            else:                                # n_a >= edge
                edge = np.where(self.cost(k, nodes, edge) > budget, edge + 1, edge)
                edge = np.where(self.cost(k, nodes, edge - 1) <= budget, edge - 1, edge)
        if slope > 0:
            hi = np.minimum(hi, edge)
        else:
            lo = np.maximum(lo, edge)
        return lo, hi

    def _chunks(self, size: int):
        step = max(1, CELLS // max(1, self.prefix.shape[0]))
        for start in range(0, size, step):
            yield slice(start, min(size, start + step))

    # -- queries ----------------------------------------------------------------------------------------
    def _fill(self, up: bool) -> np.ndarray:
        """Without a budget: per N = 0..total, the counts per pool of U (columns in `used` order) of the
        split of N nodes of most W (`up` False: least W) for every H: one node of each pool (of each
        forced pool), then the pools of largest (smallest) rho_p first. H_p = floor(H rho_p) keeps the order of the rho_p, and a
        node moved to a pool of more steps raises W (an exchange argument), so the fill is the same for
        every H. Rows out of range are -1."""
        if up not in self._fills:
            order = sorted(range(len(self.used)), key=lambda j: self.ratios[self.used[j]], reverse=up)
            fill = np.full((self.total + 1, len(self.used)), -1, np.int64)
            extra = np.arange(self.total + 1) - sum(self.least.values())    # nodes beyond the least of each pool
            before = 0
            for j in order:
                least = self.least[self.used[j]]
                room = self.pools[self.used[j]].count - least
                fill[:, j] = least + np.clip(extra - before, 0, room)
                before += room
            fill[extra < 0] = -1
            self._fills[up] = fill
        return self._fills[up]

    def extreme(self, h, nodes, x, up: bool) -> np.ndarray:
        """Per query: the least achievable W >= x (`up`) or the most W <= x, NONE where there is none.
        x may be +-inf (then the most / least W of all)."""
        h, nodes = np.asarray(h, np.int64).ravel(), np.asarray(nodes, np.int64).ravel()
        x = np.broadcast_to(np.asarray(x, float), h.shape)
        out = np.full(h.size, NONE)
        if np.all(np.isinf(x) & ((x < 0) == up)):      # the least / most W of all: the fill, if within the budget
            out = self._filled(h, nodes, not up)
            if self.budget_usd is None:
                return out
            inside = (nodes >= 0) & (nodes <= self.total)
            fill = self._fill(not up)[np.where(inside, nodes, 0)]
            cost = np.zeros(h.size)
            for j, p in sorted(enumerate(self.used), key=lambda jp: jp[1]):       # pool order, as fleet_cost_usd
                cost = cost + fill[:, j] * self.price[p]
            over = np.flatnonzero((out != NONE) & (cost > self.budget_usd))
            if over.size:
                out[over] = self._extreme(h[over], nodes[over], x[over], up)
            return out
        return self._extreme(h, nodes, x, up)

    def _extreme(self, h, nodes, x, up: bool) -> np.ndarray:
        """`extreme` by the prefixes."""
        out = np.full(h.size, NONE)
        for part in self._chunks(h.size):
            k, m, base, d, lo, hi = self._frame(h[part], nodes[part])
            xi = np.clip(np.ceil(x[part]) if up else np.floor(x[part]), -(2 ** 61), 2 ** 61).astype(np.int64)[:, None]
            pos = d > 0
            dd = np.where(pos, d, 1)
            if up:
                n = np.where(pos, np.maximum(lo, _ceil_div(xi - base, dd)), lo)
                ok = (lo <= hi) & (n <= hi) & (pos | (base >= xi))
            else:
                n = np.where(pos, np.minimum(hi, (xi - base) // dd), lo)
                ok = (lo <= hi) & (n >= lo) & (pos | (base <= xi))
            w = base + np.where(ok, n, 0) * d
            if up:
                best = np.where(ok, w, np.iinfo(np.int64).max).min(axis=1)
                out[part] = np.where(best == np.iinfo(np.int64).max, NONE, best)
            else:
                out[part] = np.where(ok, w, NONE).max(axis=1)
        return out

    def fastest(self, h, nodes) -> np.ndarray:
        """Per query: the most W of any split of N nodes, ignoring the budget (an upper bound on
        `extreme(h, nodes, inf, False)`, NONE where no split exists): the fastest fill."""
        return self._filled(np.asarray(h, np.int64).ravel(), np.asarray(nodes, np.int64).ravel(), True)

    def filled(self, h, nodes, up: bool) -> np.ndarray:
        """Per query: W of the fill of most (`up`) or least W of N nodes, ignoring the budget (NONE out
        of range): bounds on every split's W, within the budget or not."""
        return self._filled(np.asarray(h, np.int64).ravel(), np.asarray(nodes, np.int64).ravel(), up)

    def _filled(self, h: np.ndarray, nodes: np.ndarray, up: bool) -> np.ndarray:
        """W of the fill of most (`up`) or least W (`_fill`) per query, NONE out of range."""
        inside = (nodes >= 0) & (nodes <= self.total)
        fill = self._fill(up)[np.where(inside, nodes, 0)]
        steps = inner_steps(self.ratios, h)
        w = sum(fill[:, j] * steps[p].astype(np.int64) for j, p in enumerate(self.used))
        return np.where(inside & (fill[:, 0] >= 0), w, NONE)

    def cheapest_exact(self, h, nodes, w):
        """Per query: (cost, prefix, n_a) of the cheapest split of exactly W = w (cost inf: none)."""
        h, nodes = np.asarray(h, np.int64).ravel(), np.asarray(nodes, np.int64).ravel()
        w = np.broadcast_to(np.asarray(w, np.int64), h.shape)
        cost, prefix, n_a = np.full(h.size, math.inf), np.zeros(h.size, np.int64), np.zeros(h.size, np.int64)
        for part in self._chunks(h.size):
            k, m, base, d, lo, hi = self._frame(h[part], nodes[part])
            target = w[part][:, None]
            pos = d > 0
            dd = np.where(pos, d, 1)
            cheap_end = lo if self._slope() >= 0 else hi
            n = np.where(pos, (target - base) // dd, cheap_end)
            ok = (lo <= hi) & (n >= lo) & (n <= hi) & np.where(pos, (target - base) % dd == 0, base == target)
            self._keep_cheapest(part, k, nodes[part][:, None], np.where(ok, n, 1), ok, cost, prefix, n_a)
        return cost, prefix, n_a

    def cheapest_reaching(self, h, nodes, x):
        """Per query: (cost, W, prefix, n_a) of the cheapest split with W >= x, ties (equal cost) to the
        most W; cost inf where none."""
        h, nodes = np.asarray(h, np.int64).ravel(), np.asarray(nodes, np.int64).ravel()
        x = np.broadcast_to(np.asarray(x, float), h.shape)
        cost, weighted = np.full(h.size, math.inf), np.full(h.size, NONE)
        prefix, n_a = np.zeros(h.size, np.int64), np.zeros(h.size, np.int64)
        slope = self._slope()
        for part in self._chunks(h.size):
            k, m, base, d, lo, hi = self._frame(h[part], nodes[part])
            xi = np.clip(np.ceil(x[part]), -(2 ** 61), 2 ** 61).astype(np.int64)[:, None]
            pos = d > 0
            dd = np.where(pos, d, 1)
            least = np.where(pos, np.maximum(lo, _ceil_div(xi - base, dd)), lo)
            n = hi if slope <= 0 else least
            ok = (lo <= hi) & (least <= hi) & (pos | (base >= xi))
            n = np.where(ok, n, 1)
            c = np.where(ok, self.cost(k, nodes[part][:, None], n), math.inf)
            wv = np.where(ok, base + n * d, NONE)
            top = c.min(axis=1, keepdims=True)
            tied = ok & (c <= top)
            j = np.argmax(np.where(tied, wv, NONE - 1), axis=1)
            rows = np.arange(j.size)
            cost[part], weighted[part] = c[rows, j], np.where(np.isfinite(c[rows, j]), wv[rows, j], NONE)
            prefix[part], n_a[part] = j, n[rows, j]
        return cost, weighted, prefix, n_a

    def _slope(self) -> float:
        return self.price[self.a] - (self.price[self.b] if self.b is not None else 0.0)

    def _keep_cheapest(self, part, k, nodes, n, ok, cost, prefix, n_a):
        c = np.where(ok, self.cost(k, nodes, n), math.inf)
        j = np.argmin(c, axis=1)
        rows = np.arange(j.size)
        cost[part], prefix[part], n_a[part] = c[rows, j], j, n[rows, j]
