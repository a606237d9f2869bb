"""The reference simulator's three searches, answered by dtplan's planner (issue 3).

The reference calculator (evasion_calculator.py) answers three questions by searching a
few fixed plans; dtplan answers the same question exactly over the same model sizes,
modes, precision, compression and links, letting its planner choose everything else
(H, R, group size k in 2..64, stages S >= S_min, micro-batches M in 1..64, activation
compression Ca in {1, 2, 4, 10}, streaming on or off). A case passes when dtplan's answer
is at least as good as the reference's and dtplan's plan, re-scored by the evaluator
(`planner.cost.score.score`), is feasible and meets the question's target.

- `find_nodes_for_target(cfg, target_flop)`: the reference runs flat DiLoCo of the
  largest model one node holds (P = V / beta) with its compression, H at the smallest
  compute-bound value, and bisects N in 1..100,000 for the fewest nodes whose C_local
  over the window (1.5 years, eta_R scored at the run's own tokens) reaches target_flop.
  dtplan: the fewest nodes (N <= 100,000) of a flat plan of that model whose C_local
  within the window reaches the target. With a replica penalty that does not depend on
  the tokens (profile v1_48xA100: the linear v1 penalty) this is exactly dtplan's
  `min_cost` objective with a C_local target (the time to target is within the window
  exactly when C_local over the window reaches the target). Under the Chinchilla penalty
  (profile current) dtplan's `min_cost` scores eta_R at the target point instead
  (docs/cost_model.md section 7), a different question; the reference's is answered by
  `planner.reference.fewest_nodes_chinchilla` where its proof applies (a search over intervals
  of N), else by `planner.solvers.objective_search.fewest_nodes_in_window` (the max_compute
  bound); both exact.
- `find_optimal_config_for_target(cfg, target_c_quality)`: the reference tries flat
  DiLoCo at P = f V / beta (f in 0.25, 0.5, 0.75, 1; a few H), hierarchical DiLoCo at the
  same sizes (k in 4, 8, 16; H and R compute-bound; regional link = the WAN link) and
  PP-group DiLoCo at P = x V / beta (x in 1.5, 2, 3, 4, 6, 8; M = 8, Ca 4 or 10; pipeline
  link = the WAN link), bisecting N <= 100,000 for C_quality over the window >= the
  target, and keeps the cheapest. dtplan: `min_cost` with a C_quality target over the
  same sizes (one Setting each; ties to the faster plan, then the smaller model) and
  modes (flat, hierarchical, pp_group). C_quality over a window grows with its length,
  so "reaches the target within the window" is "C_quality over the window >= target".
- `sweep_model_sizes(config_name, n_nodes)`: the reference scores flat DiLoCo at
  P = f V / beta (f as above, H compute-bound) and PP-group DiLoCo at P = x V / beta
  (x in 1.5, 2, 2.5, 3, 4, 5, 6, 8; M = 8, Ca = 4, pipeline link 1 Gb/s, 20 ms) on
  n_nodes nodes and ranks them by C_quality over the window. dtplan: `max_compute`
  (C_quality) with at most n_nodes nodes over the same sizes and modes (flat, pp_group).
"""

from __future__ import annotations

import functools
import math
import statistics
import time
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from planner.objectives import MAX_COMPUTE, MIN_COST, Objective
from planner.reference import conformance, fewest_nodes, fewest_nodes_chinchilla, size_bound, sweep_search
from planner.cost import chinchilla, envelope, modes, physics, quality, quality_fit, run
from planner.cost.straggler import eta_h_divisor
from planner.cost.score import score, violations
from planner.cost.setting import Setting
from planner.solvers import monotone
from planner.solvers.bnb import TIE_REL
from planner.solvers.objective_search import SizeRun, best_of_sizes, fewest_nodes_in_window, max_compute
from planner.solve import optimise, plan_from_batch
from planner.space import DecisionSpace

MAX_NODES = 100_000                       # the reference's bisection range
FLAT_FRACTIONS = (0.25, 0.5, 0.75, 1.0)   # of the largest model one node holds
OPTIMAL_CONFIG_MULTIPLES = (1.5, 2.0, 3.0, 4.0, 6.0, 8.0)
SWEEP_MULTIPLES = (1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0)
LIMITS = ("memory-cap", "node-limit", "structure", "budget-limit")


@dataclass
class SearchOutcome:
    """dtplan's answer to one reference search case, compared with the reference's."""

    case_id: str
    function: str
    status: str                      # passed | failed
    quantity: str                    # nodes | cost_usd | c_quality
    reference: float | None          # None: the reference found no configuration
    dtplan: float | None             # None: dtplan proved none exists
    improvement: float = 0.0         # relative: fewer nodes / dollars, or more compute, than the reference
    params: float | None = None      # model size of dtplan's plan
    plan: dict[str, Any] | None = None
    seconds: float = 0.0
    problems: list[str] = field(default_factory=list)

    @property
    def strictly_better(self) -> bool:
        if self.dtplan is None:
            return False
        return self.reference is None or self.improvement > 1e-12


def answer(case: dict) -> SearchOutcome:
    """Answer one search case of reference_cases.json with dtplan and compare."""
    start = time.perf_counter()
    handler = {"find_nodes_for_target": _find_nodes, "find_optimal_config_for_target": _optimal_config,
               "sweep_model_sizes": _sweep}[case["function"]]
    outcome = handler(case)
    outcome.seconds = time.perf_counter() - start
    return outcome


# -- building blocks -----------------------------------------------------------------------

def _bytes(case: dict) -> float:
    return case["resolved_inputs"].get("bytes_per_param", 16)


def _largest_on_one_node_b(case: dict) -> float:
    """The reference's max_single_b = V_GB / beta, in billions."""
    return case["resolved_inputs"]["node"]["vram_gb"] / _bytes(case)


def _space(precision: str, modes: tuple[str, ...], max_nodes: int, compression: float) -> DecisionSpace:
    return DecisionSpace(
        modes=modes, precisions=(precision,), min_nodes=1, max_nodes=max_nodes, max_stages=64,
        group_sizes=tuple(range(2, 65)), max_inner_steps=10_000, max_regional_rounds=1000,
        compression=(float(compression),), max_micro_batches=64, activation_compression=(1.0, 2.0, 4.0, 10.0),
        streaming=(True,), expert_parallel=None, streaming_off_allowed=True)


def _setting(case: dict, params: float, links_are_wan: bool = False, **target) -> tuple[Setting, str]:
    ri = case["resolved_inputs"]
    wan = conformance._wan(ri)
    links = {}
    if links_are_wan:      # find_optimal_config_for_target: "all connections use the same bandwidth"
        links = {"regional_bps": wan["wan_up_bps"], "regional_rtt_s": wan["wan_rtt_s"],
                 "pipeline_bps": wan["wan_up_bps"], "pipeline_rtt_s": wan["wan_rtt_s"]}
    # no answer reads the node's H100 equivalents (only the compute cases' outputs do): NaN, not worked out
    setting, precision = conformance._setting(case, params, h100_equivalents=math.nan, **wan, **links)
    return setting.replace(**target), precision


def _rescore(setting: Setting, batch, kind: str | None, target: float | None) -> tuple[dict, list[str]]:
    """The evaluator's figures for dtplan's plan and what it breaks (limits; the target in the window),
    from the whole `score`: the tests' oracle for `_check` and `_limits`, which the answers use."""
    out = {k: np.asarray(v).ravel()[0] for k, v in score(setting, batch).items()}
    problems = [name for name in LIMITS if out[f"violates:{name}"]]
    if kind is not None and target is not None and not out[kind] >= target:
        problems.append(f"{kind} within the window {out[kind]:.6e} < target {target:.6e}")
    return out, problems


def _check(setting: Setting, batch, kind: str, target: float) -> list[str]:
    """`_rescore`'s problems (the limits of LIMITS the plan breaks; its `kind` within the window below
    the target) without the figures `score` adds that neither reads: the limits from the evaluator's
    throughput (`_limits`), and the compute within the window as `run.window_view` works it out (which
    `score` calls with the same throughput and efficiencies, and whose `kind` nothing in `score`
    overwrites): the same tokens, then `run.local_compute` (C_local) or `run.quality_terms` and
    `run.quality_compute` (C_quality), the same calls on the same arguments, so the same double.
    Left out: the other kind, chi, the time to target (eta_R at the target, its Chinchilla solves),
    the bottleneck and the other figures (1.2-1.8 ms of a find_nodes_for_target answer's 5-8 ms).
    tests/test_reference_search_fast.py checks the same problems as `_rescore` on random plans of
    both questions with targets at and around their values."""
    with np.errstate(divide="ignore", invalid="ignore"):
        t = modes.throughput(setting, batch)
        problems = _limits(setting, batch, t)
        eff = run.efficiency_without_replicas(setting, batch, t)
        tokens = run.window_tokens(setting, t, setting.window_s)
        if kind == "c_local":
            value = run.local_compute(setting, t, eff, tokens)[0][0]
        else:
            value = run.quality_compute(setting, tokens, *run.quality_terms(setting, batch, t, eff))[0]
    if not value >= target:
        problems.append(f"{kind} within the window {value:.6e} < target {target:.6e}")
    return problems


def _limits(setting: Setting, batch, throughput=None) -> list[str]:
    """The limits of LIMITS dtplan's plan breaks, as `_rescore` finds them without a target, from the
    evaluator's throughput alone: `score.violations` reads of its figures only the plan's groups and
    state per node (`modes.throughput`), its nodes and its cost (nodes x node price), and the time
    to target, which only the duration limit reads (not among LIMITS; given as 0 here). The window
    view, time to target, bottleneck and the other figures `score` adds are not computed (a
    sweep's answer: 0.24 ms of `score`'s 1.4 ms; tests/test_reference_sweep_search.py checks the
    same problems as `_rescore` on every mode's plans). `throughput`: the plan's `modes.throughput`
    where the caller has it (`sweep_search.SweepRun`), else it is worked here."""
    if throughput is None:
        with np.errstate(divide="ignore", invalid="ignore"):
            throughput = modes.throughput(setting, batch)
    t = throughput
    nodes = np.asarray(batch.nodes, dtype=float)
    figures = dict(t, cost_usd=nodes * setting.node_price_usd, time_to_target_s=np.zeros(nodes.shape))
    out = violations(setting, batch, figures, None)
    return [name for name in LIMITS if np.asarray(out[f"violates:{name}"]).ravel()[0]]


def _plan_dict(batch, setting: Setting) -> dict[str, Any]:
    return plan_from_batch(batch, 0, setting.is_moe).model_dump(exclude_unset=True)


# -- the three searches -------------------------------------------------------------------------

def _find_nodes(case: dict) -> SearchOutcome:
    ri = case["resolved_inputs"]
    target = float(ri["target_flop"])
    setting, precision = _setting(case, _largest_on_one_node_b(case) * 1e9, target_flop=target, target_kind="c_local")
    space = _space(precision, ("flat",), MAX_NODES, ri["compression"])
    if fewest_nodes.applies(setting, space):
        found, _ = fewest_nodes.fewest_nodes(setting, space)
    elif (by_intervals := fewest_nodes_chinchilla.answer(setting, space)) is not None:
        found, _ = by_intervals
    elif setting.assumptions.replica_penalty == "chinchilla":
        found, _, _ = fewest_nodes_in_window(setting, space)
    else:
        found, _, _ = optimise(setting, space, MIN_COST)
    reference = float(case["outputs"]["n_nodes"])
    outcome = SearchOutcome(case["id"], case["function"], "passed", "nodes", reference, None)
    if found is None:
        outcome.status, outcome.problems = "failed", ["dtplan found no plan reaching the target"]
        return outcome
    batch = found[0]
    problems = _check(setting, batch, "c_local", target)
    outcome.dtplan = float(batch.nodes[0])
    outcome.improvement = (reference - outcome.dtplan) / reference
    outcome.params, outcome.plan, outcome.problems = setting.params, _plan_dict(batch, setting), problems
    if problems or outcome.dtplan > reference:
        outcome.status = "failed"
    return outcome


def _solve_sizes(case: dict, sizes_b, objective: Objective, modes, max_nodes: int, links_are_wan: bool, **target):
    """Solve every model size; the best run (`planner.solvers.objective_search.best_of_sizes`: ties to the smaller model).

    The sizes share what the ones solved before them proved (`_solve_below`): a size that can
    neither beat nor tie the best plan so far cannot be the answer, so its search stops there.
    They are solved most promising first (`_promising_first`), so that the bound the others
    share is strong from the start; the runs are then put back in size order for
    `best_of_sizes`. The order changes what is searched, never the answer: a size is cut only
    where it can neither beat nor tie a plan that exists, whichever size that plan is of.
    min_cost where the box bound applies to every size: the sizes in order of their proven lower
    bounds on the nodes instead (`_fewest_first`); max_compute of C_quality at most N_max nodes
    (sweep_model_sizes): first `sweep_search.best_size`, a search built for that question, which
    gives the same run where its conditions hold (else the loop below). The settings of the sizes differ in P alone
    (one setting built, its P replaced)."""
    base, precision = _setting(case, sizes_b[0] * 1e9, links_are_wan, **target)   # sizes differ in P alone
    space = _space(precision, modes, max_nodes, case["resolved_inputs"]["compression"])
    if objective is MAX_COMPUTE and size_bound.applies(base, space, _reach_bounds(base, space)):
        # the same run, by a search built for this question (its conditions on the other sizes checked there)
        found = sweep_search.best_size(base, space, [params_b * 1e9 for params_b in sizes_b])
        if found is not None:
            return found
    settings = [(base.replace(params=params_b * 1e9, active_params=params_b * 1e9), space) for params_b in sizes_b]
    if objective is MIN_COST and all(size_bound.applies(s, space, _reach_bounds(s, space)) for s, space in settings):
        return best_of_sizes(objective, sorted(_fewest_first(settings), key=lambda r: r.params))
    runs = []
    for setting, space in _promising_first(settings, objective, max_nodes):
        found, evaluations, bound = _solve_below(setting, space, objective, [r.found for r in runs if r.found])
        runs.append(SizeRun(setting.params, setting, space, found, evaluations, bound))
    return best_of_sizes(objective, sorted(runs, key=lambda r: r.params))


TRIAL_CAPS = (1.05, 1.15, 1.4)   # the first size searched: N capped at these multiples of its refined bound in
                                 # turn, then uncapped (`_fewest_first`); a heuristic (any cap is exact): the bound
                                 # is within 1% of the fewest nodes of the flat and pp_group winners of the shipped
                                 # cases (tests/test_reference_size_bound.py), looser for hierarchical ones (206
                                 # against 273 nodes), where a capped search of the narrowed space costs a fifth
                                 # of an uncapped one


def _fewest_first(settings: list[tuple[Setting, DecisionSpace]]) -> list[SizeRun]:
    """min_cost over the sizes, each size searched only while it may hold the fewest nodes: the
    size of least proven lower bound on its nodes (`size_bound.FewestNodes`, refined lazily: only
    the size that is least so far) is searched first, and once a plan of F nodes is found a size
    whose bound exceeds F is skipped (cost is nodes x node price, the same for every size: it can
    neither beat nor tie F). The sizes searched are cut by the ones before (`_solve_below`). A
    best-first search over sizes: the order changes what is searched, never the answer.

    Each size starts from the reach's bound (`_fewest_by_reach`, one vectorised evaluation); the
    size least so far gets its box bound (`size_bound.FewestNodes`), then one refinement round at
    a time, until it is done and searched, or another size is least. The first size searched is
    searched with N capped at TRIAL_CAPS x its bound L in turn: a plan found under a cap has the
    fewest nodes of the size (every plan of fewer nodes is under the cap, and every plan of as
    many, so the fastest of them is the same); none found, no plan of at most the cap nodes
    reaches the target (the capped search is exact), so the next search starts at the cap plus
    one (`min_nodes`, as L below); past the last cap the size is searched whole. Each search is
    over the rows that have a box of at most its cap's least nodes (`FewestNodes.narrowed`).

    The size's bound L (at most its fewest nodes F_size reaching the target, or it has none) is
    given to the search as the space's `min_nodes`: N >= floor(L). Proof that the answer is
    unchanged: a plan of the space with floor(L) as its floor uses N = max(n unit, floor(L))
    nodes and computes as its n unit busy nodes do (the others idle); n unit < L means it does
    not reach the target (L bounds the busy nodes x1 unit of every plan that does), so the
    plans reaching it are those of the unfloored space with N >= L, all of them; the fewest
    nodes and the fastest plan of that many are the same. Measured on the 14 shipped cases:
    0.54 -> 0.46 s (the hierarchical winner of 273 nodes no longer searched from N = 2)."""
    cut = settings[0][0].target / (1 + REACH_MARGIN)
    pending = [[_fewest_by_reach(s, space), None, s, space] for s, space in settings]
    runs, fewest = [], math.inf
    while pending:
        j = min(range(len(pending)), key=lambda k: (pending[k][0], pending[k][2].params))
        least, bound, setting, space = pending[j]
        if least > fewest or not math.isfinite(least):
            break                     # every size left needs more nodes than found (or has no plan)
        if bound is None or not bound.done:
            if bound is None:
                bound = pending[j][1] = size_bound.FewestNodes(setting, space, cut)
            else:
                bound.refine()
            pending[j][0] = max(least, bound.least)
            continue
        pending.pop(j)
        found_before = [r.found for r in runs if r.found]
        floor = max(space.min_nodes, min(space.max_nodes, math.floor(least)))
        found, evaluations = None, 0
        for trial in ([] if found_before else [math.ceil(least * f) for f in TRIAL_CAPS]):   # first size: capped
            if found is not None or trial >= space.max_nodes:
                break
            if trial >= floor:
                capped = replace(bound.narrowed(trial), min_nodes=floor, max_nodes=trial)
                found, tried, proven = _solve_below(setting, capped, MIN_COST, [])
                evaluations, floor = evaluations + tried, trial + 1
        if found is None:
            cap = min((int(b.nodes[0]) for b, _ in found_before), default=space.max_nodes)
            floored = replace(bound.narrowed(cap), min_nodes=min(floor, space.max_nodes))
            found, tried, proven = _solve_below(setting, floored, MIN_COST, found_before)
            evaluations += tried
        runs.append(SizeRun(setting.params, setting, space, found, evaluations, proven))
        if found is not None:
            fewest = min(fewest, int(found[0].nodes[0]))
    runs.extend(SizeRun(s.params, s, space, None, 0, least * s.node_price_usd) for least, _, s, space in pending)
    return runs


def _fewest_by_reach(s: Setting, space: DecisionSpace) -> float:
    """A proven lower bound on the nodes of any plan reaching the target (inf: none does), from the
    reach (`_reach_bounds`, which the caller checked): one node when W F u reaches it, else the
    reach does not fall in N >= 2, so below the least node count of a geometric grid whose reach
    reaches the target no plan does."""
    if _most_within(s, space, 1) >= s.target:
        return 1.0
    nodes = _node_grid(2, space.max_nodes)
    nodes = nodes[nodes <= space.max_nodes]
    if nodes.size == 0:
        return math.inf
    reach = _reach(s, space.precisions[0], nodes) * (1 + REACH_MARGIN)
    enough = np.flatnonzero(reach >= s.target)
    if enough.size == 0:
        return math.inf
    return 2.0 if enough[0] == 0 else float(nodes[enough[0] - 1] + 1)


ORDER_NODE_GRID = 400      # node counts (geometric, 1..N_max) at which `_promising_first` looks for min_cost


@functools.lru_cache(maxsize=64)
def _node_grid(first: int, max_nodes: int) -> np.ndarray:
    """The distinct rounded node counts of ORDER_NODE_GRID geometric points from `first` to
    max(first, max_nodes) (`_fewest_by_reach`, `_promising_first`), worked out once per process and
    range (read-only): np.geomspace and the rounding take 0.14 ms, and a pass of the 14
    optimal-configuration cases asked for the same grid 140 times."""
    nodes = fewest_nodes.distinct(np.geomspace(first, max(first, max_nodes), ORDER_NODE_GRID).round())
    nodes.flags.writeable = False
    return nodes


def _promising_first(settings: list[tuple[Setting, DecisionSpace]], objective: Objective, max_nodes: int):
    """The (setting, space) pairs of the sizes, the one most likely best first (a heuristic: the
    order only changes how early the shared bound is strong, `_solve_sizes`).

    The measure is the compute a size could reach if its nodes computed at the MFU u all
    window long with no loss but the Chinchilla law's (docs/cost_model.md sections 5-7):
    T = W gamma N F u / (6 P_act) tokens, C = min(6 P_act T, max(C'(L(P_act, T)), 1e10)), C'
    the compute whose compute-optimal model reaches the loss L. A larger model needs more
    tokens before its loss pays; a smaller one runs into its own loss floor. max_compute: the
    most C at N_max first; min_cost: the fewest nodes N (of a geometric grid) with C >= the
    target first, ties to the smaller model. Each is one vectorised evaluation per size."""
    nodes = _node_grid(1, max_nodes)
    if objective.maximise:
        nodes = nodes[-1:]

    def key(pair):
        s, space = pair
        reach = _reach(s, space.precisions[0], nodes)
        if objective.maximise:
            return (-float(reach[-1]), s.params)
        enough = np.flatnonzero(reach >= s.target)
        return (float(nodes[enough[0]]) if enough.size else math.inf, s.params)

    return sorted(settings, key=key)


def _reach(s: Setting, precision: str, nodes) -> np.ndarray:
    """min(6 P_act T, max(C'(L(P_act, T)), 1e10)) at T = W gamma N F u / (6 P_act) (`_promising_first`)."""
    a = s.assumptions
    tokens = s.training_window_s * np.asarray(nodes, dtype=float) * s.peak_flops[precision] * a.mfu_for(precision) \
        / (6.0 * s.active_params)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        c_eq = chinchilla.equivalent_optimal_compute(chinchilla.chinchilla_loss(s.active_params, tokens, a), a)
    return np.minimum(6.0 * s.active_params * tokens, np.maximum(c_eq, a.chi_search_low_flop))


REACH_MARGIN = 1e-9     # relative: the reach and the cost model round differently (`_cannot_reach`)


def _reach_bounds(s: Setting, space: DecisionSpace) -> bool:
    """Whether the reach is an upper bound on every plan's C_quality within the window (`_cannot_reach`).

    Proof, for a plan of N nodes of the space (docs/cost_model.md sections 4-7, planner/cost/modes.py):
    1. Tokens. Every node computes for at least t_comp = 6 P_act B / (F u) per B tokens of its
       replica's step: flat, tokens per outer step B G H tf with G <= N, outer >= H t_step >=
       H t_comp; hierarchical, B N H R tf per cycle >= R H t_step; pp_group, B floor(N / S) H tf
       per outer step >= H t_pp, and GPipe's t_pp = (M + S - 1)(c + ...) >= M c = t_comp' / S with
       t_comp' >= t_comp (recomputation only adds). The straggler's tf = 1 / 1.1 (backup) or 1,
       the outer step is max(block, sync) or their sum (no overlap or fragment terms), and an
       expert all-to-all or ZeRO-3 only lengthens a step. So T = W gamma tokens per outer step /
       outer <= W gamma N B / t_comp = W gamma N F u / (6 P_act) = T_max(N).
    2. Quality. C_quality = g min(C_thr, max(C'_mu(T), 1e10)) for N >= 2 and g C_thr for one node
       (`planner.cost.run.quality_compute`), g = eta_H eta_C eta_A (times the linear v1 factor):
       eta_H = max(floor, (1 - alpha log10 H_eff) / s) <= 1 with floor <= 1, alpha >= 0, s >= 1,
       H_eff >= 1; eta_C and eta_A = qa^(2 (S - 1)) are interpolations of tables whose values are
       <= 1; the linear v1 factor is <= 1. mu = K^beta >= 1 (beta0 >= 0), and C'_mu(T) <= C'_1(T)
       (C' falls as the loss it must reach rises). C_thr = 6 P_act T and C'_1(T) rise with T
       (the loss falls with T). So C_quality <= reach(T_max(N)) for N >= 2 and <= 6 P_act
       T_max(1) for one node, and reach(T_max(N)) does not fall as N grows.
    The conditions are checked here; anything else (another quality model, dtplan's MFU tables or
    overlap terms, another pipeline schedule, MoE, a C_local target) answers False.
    tests/test_reference_search_fast.py checks the bound on random plans of every mode."""
    a = s.assumptions
    tables = (a.compression_quality_ef, a.compression_quality_no_ef, a.activation_quality)
    return (s.target_kind == "c_quality" and not s.is_moe and set(space.modes) <= {"flat", "hierarchical", "pp_group"}
            and a.replica_penalty in ("chinchilla", "linear_v1", "none") and not quality_fit.fitted(a)
            and not envelope.on(a) and not a.dp_overlap and not physics.fragments_on(a)
            and a.pipeline_schedule == "gpipe" and not a.search_pipeline_schedules and a.inner_optimizer == "reference"
            and not a.mfu_from_table and not a.mfu_from_compute_model and a.tensor_parallel <= 1
            and a.backup_spare_factor >= 1 and a.eta_h_floor <= 1 and eta_h_divisor(a) >= 1
            and float(quality.alpha(s.params, a)) >= 0 and a.replica_beta_coefficient >= 0
            and a.linear_v1_coefficient >= 0 and all(max(row) <= 1 for t in tables for row in t.values()))


def _most_within(s: Setting, space: DecisionSpace, nodes: int) -> float:
    """The most C_quality any plan of at most `nodes` nodes could reach (`_reach_bounds`): the larger
    of one node's 6 P_act T_max(1) and the reach at `nodes` (the reach does not fall in N >= 2)."""
    precision = space.precisions[0]
    one = s.training_window_s * s.peak_flops[precision] * s.assumptions.mfu_for(precision)
    return max(one, float(_reach(s, precision, [max(1, nodes)])[0])) * (1 + REACH_MARGIN)


def _cannot_reach(s: Setting, space: DecisionSpace, objective: Objective, found_before: list) -> float | None:
    """A bound on this size's optimum that shows it can neither beat nor tie the best plan found
    before (then `_solve_below` skips its search), else None.

    max_compute: the most compute any plan could reach (`_most_within` at N_max), else the box
    bound with the pipeline physics (`size_bound.skip_bound`), below the best found over
    (1 + TIE_REL). min_cost: no plan of at most the fewest nodes found reaches the target (the
    reach, else the box bound with N capped there); the bound returned is then the cost of one
    node more. Only where `_reach_bounds` (and the box bound where `size_bound.applies`)."""
    if not found_before or len(space.precisions) != 1 or not _reach_bounds(s, space):
        return None
    if objective.maximise:
        cut = max(value for _, value in found_before) / (1 + TIE_REL)
        most = _most_within(s, space, space.max_nodes)
        if most < cut:
            return most
        if not size_bound.applies(s, space, True):
            return None
        bound = size_bound.skip_bound(s, space, cut / (1 + REACH_MARGIN))
        return None if bound is None else bound * (1 + REACH_MARGIN)
    if objective is MIN_COST:
        fewest = min(int(batch.nodes[0]) for batch, _ in found_before)
        if _most_within(s, space, min(fewest, space.max_nodes)) < s.target:
            return (fewest + 1) * s.node_price_usd
        capped = replace(space, max_nodes=min(fewest, space.max_nodes))
        if size_bound.applies(s, capped, True) and \
                size_bound.skip_bound(s, capped, s.target / (1 + REACH_MARGIN)) is not None:
            return (fewest + 1) * s.node_price_usd
    return None


def _solve_below(setting: Setting, space: DecisionSpace, objective: Objective, found_before: list):
    """`optimise` of one size, searching only plans that could beat or tie the best found before.

    max_compute: the most compute found before is an incumbent (`objective_search.max_compute`
    keeps plans within `bnb.TIE_REL` of it). min_cost: the fewest nodes found before caps N
    (cost is nodes x node price, the same price for every size; the plan of fewest nodes of this
    size, and the fastest among them, is the same under the cap when it has no more nodes).
    A size with no plan that good returns None, which `best_of_sizes` would not have chosen; where
    its reach shows that before any search (`_cannot_reach`), it returns None at once.
    Without the monotonicity the bounds need (`planner.solvers.monotone`), the plain `optimise`.
    """
    bound = _cannot_reach(setting, space, objective, found_before)
    if bound is not None:
        return None, 0, bound
    if not found_before or monotone.check(setting).unsupported:
        return optimise(setting, space, objective)
    if objective.maximise:
        best = max(value for _, value in found_before)
        return max_compute(setting, space.for_objective(setting, objective), incumbent_compute=best)
    if objective is MIN_COST:
        fewest = min(int(batch.nodes[0]) for batch, _ in found_before)
        return optimise(setting, replace(space, max_nodes=min(space.max_nodes, fewest)), objective)
    return optimise(setting, space, objective)


def _optimal_config(case: dict) -> SearchOutcome:
    ri = case["resolved_inputs"]
    target = float(ri["target_c_quality"])
    largest = _largest_on_one_node_b(case)
    sizes = [f * largest for f in FLAT_FRACTIONS] + [x * largest for x in OPTIMAL_CONFIG_MULTIPLES]
    best = _solve_sizes(case, [p for p in sizes if p >= 1], MIN_COST, ("flat", "hierarchical", "pp_group"),
                        MAX_NODES, True, target_flop=target, target_kind="c_quality")
    ref = case["outputs"].get("cost_usd") if "return" not in case["outputs"] else None
    outcome = SearchOutcome(case["id"], case["function"], "passed", "cost_usd",
                            None if ref is None else float(ref), None)
    if best is None:
        if ref is not None:
            outcome.status, outcome.problems = "failed", ["dtplan found no plan reaching the target"]
        return outcome
    params, setting, _, (batch, cost), *_ = best
    problems = _check(setting, batch, "c_quality", target)
    outcome.dtplan, outcome.params, outcome.plan, outcome.problems = cost, params, _plan_dict(batch, setting), problems
    if ref is not None:
        outcome.improvement = (ref - cost) / ref
    if problems or (ref is not None and cost > ref * (1 + 1e-12)):
        outcome.status = "failed"
    return outcome


def _sweep(case: dict) -> SearchOutcome:
    ri = case["resolved_inputs"]
    largest = _largest_on_one_node_b(case)
    sizes = [f * largest for f in FLAT_FRACTIONS] + [x * largest for x in SWEEP_MULTIPLES]
    best = _solve_sizes(case, sizes, MAX_COMPUTE, ("flat", "pp_group"), int(ri["n_nodes"]), False,
                        target_kind="c_quality")
    reference = float(case["outputs"]["best"]["c_quality"])
    outcome = SearchOutcome(case["id"], case["function"], "passed", "c_quality", reference, None)
    if best is None:
        outcome.status, outcome.problems = "failed", ["dtplan found no plan"]
        return outcome
    params, setting, _, (batch, value), *_ = best
    problems = _limits(setting, batch, getattr(best, "throughput", None))
    outcome.dtplan, outcome.params, outcome.plan, outcome.problems = value, params, _plan_dict(batch, setting), problems
    outcome.improvement = (value - reference) / reference
    if problems or value < reference * (1 - 1e-12):
        outcome.status = "failed"
    return outcome


# -- summary -------------------------------------------------------------------------------------

def summarise(outcomes: list[SearchOutcome]) -> list[str]:
    """Per search function: passed / failed, how often dtplan is strictly better and by how much."""
    lines = []
    for fn in conformance.SEARCH_FUNCTIONS:
        mine = [o for o in outcomes if o.function == fn]
        if not mine:
            continue
        passed = sum(o.status == "passed" for o in mine)
        better = [o for o in mine if o.strictly_better]
        gains = [o.improvement for o in better if o.reference is not None]
        what = {"nodes": "fewer nodes", "cost_usd": "lower cost", "c_quality": "more C_quality"}[mine[0].quantity]
        line = (f"{fn}: {passed} passed, {len(mine) - passed} failed; dtplan strictly better in {len(better)} "
                f"of {len(mine)}")
        if gains:
            line += f" ({what}: median {statistics.median(gains):.1%}, max {max(gains):.1%})"
        found_where_none = sum(o.reference is None and o.dtplan is not None for o in mine)
        if found_where_none:
            line += f"; {found_where_none} where the reference found no configuration"
        line += f"; {sum(o.seconds for o in mine):.1f} s"
        lines.append(line)
    return lines


def describe(o: SearchOutcome) -> str:
    ref = "none" if o.reference is None else f"{o.reference:,.6g}"
    got = "none" if o.dtplan is None else f"{o.dtplan:,.6g}"
    size = f", {o.params / 1e9:,.4g}B" if o.params else ""
    extra = ("; " + "; ".join(o.problems)) if o.problems else ""
    return (f"{o.status:6} {o.case_id} [{o.function}] {o.quantity}: reference {ref}, dtplan {got} "
            f"({o.improvement:+.1%}{size}) {o.seconds:.2f} s {o.plan or ''}{extra}")
