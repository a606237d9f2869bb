#!/usr/bin/env python3
"""Benchmark the solvers of `dtplan solve` against the exhaustive oracle.

Usage: scripts/bench_solve.py [--random 300] [--compare 300] [--small 30] [--large 5] [--huge 3] [--seed 0]
                              [--max-compute 40] [--exhaustive-max-plans 3e7] [--mip-time-limit 60]
                              [--mip highs] [--mip-random 300] [--mip-quality 100] [--mip-max-compute 40]
                              [--mip-huge 3] [--mip-compare 300] [--only-mip]

Suites (all seeded):
- main: the shipped instances and `--random` instances (hardware from the catalog, 1B-2T
  parameters incl. MoE, 1 to 10^4 nodes, WAN 10 Mb/s-10 Gb/s, RTT 5-340 ms, targets
  1e22-1e27 FLOP, 30-1000 days, every mode, min_time and min_cost), default search
  ranges (H <= 10^4, R <= 10^3). Solved with the default solver; the exhaustive oracle
  (every plan scored) also runs where the space has at most `--exhaustive-max-plans`.
- compare: `--compare` instances like the main suite's with <= 100 nodes, H <= 100, R <= 4 and
  k in {2, 4, 8, 16}: the default solver against the exhaustive oracle, plan for plan.
- large: `--large` instances with 1,000-3,000 nodes, H <= 100, R <= 4, k in {2, 4, 8}, so that the
  exhaustive oracle can finish: the default solver's speed-up over it at N >= 1000.
- huge: `--huge` instances with 10^5 nodes (default solver only).
- max_compute: the shipped instances and `--max-compute` random instances of the main suite's
  kind, solved for `max_compute` of C_local and of C_quality (each instance both ways;
  figures printed per target kind), against the exhaustive oracle where the space has at
  most `--exhaustive-max-plans`, and `--max-compute` narrowed ones (<= 100 nodes, H <= 100,
  R <= 4, M <= 16) always against it.
- small: `--small` instances with <= 32 nodes, H <= 100, R <= 4: every solver, the MIP
  backends included.
- mip: the MIP path (`--mip` backend, build, outer approximation and certification included)
  against the branch and bound on the shipped instances and `--mip-random` instances of the
  main suite (<= 10^4 nodes, default search ranges, every mode, min_time and min_cost: the
  questions it answers), the first `--mip-quality` of them also with a C_quality target, the
  first `--mip-max-compute` of them also as max_compute of C_quality, of C_local under the
  linear_v1 replica penalty and of C_local under the chinchilla one (the default), the
  exhaustive oracle too where the space has at most 10^6 plans, and on `--mip-huge` instances
  of 10^5 nodes (their own min_time / min_cost, and max_compute of each of the three kinds). Printed: median, p95, max, unanswered (no proven answer within
  `--mip-time-limit`), disagreements, the ratio to the branch and bound (median of
  per-instance ratios, and total time over total time), per target kind and together, with
  the load average. Then `--mip-compare` small instances (<= 32 nodes, H <= 60, R <= 4, k in
  {2, 4}; min_time or min_cost, C_local or C_quality, every mode; each also as max_compute of
  C_quality, of C_local under the linear_v1 penalty or of C_local under the chinchilla penalty,
  in turn): the MIP loop's own answer
  (before certification; max_compute: within its tolerance COMPUTE_LOG_TOL in ln C), the certified
  answer, bnb and the exhaustive oracle, plan for plan.
  Last line `mip_median_s=... mip_p95_s=... mip_unanswered=... mip_disagreements=...
  mip_ratio_to_bnb=... mip_huge_max_s=... mip_compared=... mip_compare_disagreements=...
  mip_max_compute_median_s=... mip_max_compute_compared=... mip_max_compute_compare_disagreements=...`.
  `--only-mip` runs this suite alone.

For each solver: median, p95 and max solve time, the instances where its optimum
differs from the exhaustive oracle's (value beyond 1e-9 relative, or another plan),
and its speed relative to the oracle. The last line is
`median_s=... p95_s=... mismatches=... speedup_vs_oracle=...` for the default solver:
median and p95 over the main suite, mismatches over every instance compared with the
oracle, speed-up (total oracle time / total solver time) over the large suite.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import zlib
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from planner.objectives import objective_named  # noqa: E402
from planner.schema.catalog import hardware_ids  # noqa: E402
from planner.schema.errors import InputError  # noqa: E402
from planner.evaluate import setting_from_instance  # noqa: E402
from planner.schema.instance import load_instance, parse_instance  # noqa: E402
from planner.solve import DEFAULT_SOLVER, SOLVERS, solve  # noqa: E402
from planner.solvers import UnsupportedBySolver  # noqa: E402
from planner.space import DecisionSpace  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


def random_instance(rng: np.random.Generator, i: int, nodes: tuple[float, float] = (0, 4),
                    search: dict | None = None) -> dict:
    params = float(10 ** rng.uniform(9, 12.3))
    model = {"params": params}
    if rng.random() < 0.15 and params > 5e10:
        model.update(active_params=params / float(rng.choice([4, 8, 16])), moe_layers=int(rng.choice([16, 32, 58])))
    up = float(10 ** rng.uniform(1, 4))
    inst = {
        "name": f"random {i}",
        "model": model,
        "training": {"target_flop": float(10 ** rng.uniform(22, 27))},
        "fleet": {"hardware": str(rng.choice(hardware_ids())), "nodes": int(np.round(10 ** rng.uniform(*nodes)))},
        "network": {"wan": {"up_mbps": up, "down_mbps": float(up * rng.choice([1, 2, 5])),
                            "rtt_ms": float(rng.uniform(5, 340))}},
        "limits": {"max_days": float(rng.choice([30, 180, 365, 548, 1000]))},
        "assumptions": {"straggler": str(rng.choice(["relay", "synchronous", "threshold"]))},
        "objective": str(rng.choice(["min_time", "min_cost"])),
    }
    if search:
        inst["search"] = search
    return inst


def suite(name: str, count: int, seed: int, nodes, search=None, shipped=False):
    if shipped:
        for path in sorted((REPO / "instances").glob("*.json")):
            if not (path.name == "index.json" or path.name.endswith((".plan.json", ".expected.json"))):
                yield path.stem, load_instance(path)
    rng = np.random.default_rng([seed, zlib.crc32(name.encode())])   # str hash() differs per process
    made = 0
    while made < count:
        try:
            inst = parse_instance(random_instance(rng, made, nodes, search))
        except InputError:
            continue
        made += 1
        yield f"{name}-{made}", inst


def space_size(inst) -> float:
    """Plans of the instance's space; inf for a fleet of pools (never scored plan by plan here)."""
    if inst.fleet.is_mixed:
        return float("inf")
    s = setting_from_instance(inst)
    return DecisionSpace.from_instance(inst, s).for_objective(s, objective_named(inst.objective)).size(s)


def as_max_compute(inst, target_kind: str):
    """The instance asking for the most C_local or C_quality within its duration limit."""
    data = inst.model_dump(exclude_none=True)
    data["objective"] = "max_compute"
    data.setdefault("training", {})["target_kind"] = target_kind
    return parse_instance(data)


MAX_COMPUTE_KINDS = ("c_quality", "c_local_linear_v1", "c_local")   # c_local: the default (chinchilla) penalty


def as_mip_max_compute(inst, kind: str):
    """max_compute of C_quality ("c_quality"), of C_local under the instance's replica penalty
    ("c_local": chinchilla unless it sets one) or under the linear_v1 one ("c_local_linear_v1")."""
    data = as_max_compute(inst, "c_local" if kind.startswith("c_local") else kind).model_dump(exclude_none=True)
    if kind == "c_local_linear_v1":
        data.setdefault("assumptions", {}).setdefault("constants", {})["replica_penalty"] = "linear_v1"
    return parse_instance(data)


def max_compute_kind(inst) -> str:
    """'c_quality', or 'c_local <penalty>' of a max_compute instance."""
    s = setting_from_instance(inst)
    return s.target_kind if s.target_kind == "c_quality" else f"c_local {s.assumptions.replica_penalty}"


def with_target_kind(inst, target_kind: str):
    """The instance with its target read as C_local or C_quality compute."""
    data = inst.model_dump(exclude_none=True)
    data.setdefault("training", {})["target_kind"] = target_kind
    return parse_instance(data)


def load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def timed(inst, solver, **kw):
    start = time.perf_counter()
    r = solve(inst, solver=solver, **kw)
    return r, time.perf_counter() - start


def same(a, b) -> bool:
    if a.status != b.status or (a.plan is None) != (b.plan is None):
        return False
    return a.plan is None or (abs(a.objective_value - b.objective_value) <= 1e-9 * abs(b.objective_value)
                              and a.plan == b.plan)


def versus_exhaustive(name: str, inst, solver: str) -> tuple[float, float, bool]:
    """(solver time, exhaustive time, same optimum and plan), printing any mismatch."""
    r, t = timed(inst, solver)
    ref, t_ref = timed(inst, "exhaustive")
    agree = same(r, ref)
    if not agree:
        print(f"mismatch {name} [{solver}]: {r.objective_value} vs exhaustive {ref.objective_value}")
    return t, t_ref, agree


def stats(times: list[float]) -> str:
    if not times:
        return "no instance"
    return (f"median {np.median(times):.3f} s  p95 {np.percentile(times, 95):.3f} s  max {max(times):.3f} s  "
            f"({len(times)} instances)")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--random", type=int, default=300)
    p.add_argument("--compare", type=int, default=300)
    p.add_argument("--small", type=int, default=30)
    p.add_argument("--large", type=int, default=5)
    p.add_argument("--huge", type=int, default=3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--max-compute", type=int, default=40)
    p.add_argument("--exhaustive-max-plans", type=float, default=3e7)
    p.add_argument("--mip-time-limit", type=float, default=60.0)
    p.add_argument("--mip", default="highs", help="MIP backend of the mip suite")
    p.add_argument("--mip-random", type=int, default=300)
    p.add_argument("--mip-quality", type=int, default=100)
    p.add_argument("--mip-max-compute", type=int, default=40)
    p.add_argument("--mip-huge", type=int, default=3)
    p.add_argument("--mip-compare", type=int, default=300)
    p.add_argument("--only-mip", action="store_true")
    args = p.parse_args(argv)
    if args.only_mip:
        return mip_suite(args)
    default = DEFAULT_SOLVER
    mismatches = 0
    compared = 0

    # main suite: default solver, exhaustive where affordable
    main_times, vs = [], []
    for name, inst in suite("main", args.random, args.seed, (0, 4), shipped=True):
        if space_size(inst) <= args.exhaustive_max_plans:
            t, t_ref, agree = versus_exhaustive(name, inst, default)
            compared, mismatches = compared + 1, mismatches + (not agree)
            vs.append((t, t_ref))
        else:
            t = timed(inst, default)[1]
        main_times.append(t)
    print(f"main suite, {default}: {stats(main_times)}")
    if vs:
        t, t_ref = np.array(vs).T
        print(f"  vs exhaustive on the {len(vs)} with at most {args.exhaustive_max_plans:.0e} plans: "
              f"speed-up {t_ref.sum() / t.sum():.1f}x")

    # compare: the default solver against the exhaustive oracle on small spaces
    narrow = {"max_inner_steps": 100, "max_regional_rounds": 4, "group_sizes": [2, 4, 8, 16]}
    pairs = []
    for name, inst in suite("compare", args.compare, args.seed, (0, 2), narrow):
        t, t_ref, agree = versus_exhaustive(name, inst, default)
        compared, mismatches = compared + 1, mismatches + (not agree)
        pairs.append((t, t_ref))
    if pairs:
        t, t_ref = np.array(pairs).T
        print(f"compare suite (<= 100 nodes, H <= 100, R <= 4): {default} {stats(list(t))}; "
              f"exhaustive {stats(list(t_ref))}; speed-up {t_ref.sum() / t.sum():.1f}x")

    # large: N >= 1000, narrowed so that the exhaustive oracle finishes
    narrow = {"max_inner_steps": 100, "max_regional_rounds": 4, "group_sizes": [2, 4, 8]}
    large = []
    for name, inst in suite("large", args.large, args.seed, (3, 3.48), narrow):
        t, t_ref, agree = versus_exhaustive(name, inst, default)
        compared, mismatches = compared + 1, mismatches + (not agree)
        large.append((t, t_ref))
        print(f"  {name}: {inst.fleet.nodes} nodes, {space_size(inst):.2e} plans: {default} {t:.3f} s, "
              f"exhaustive {t_ref:.1f} s", flush=True)
    speedup = float("nan")
    if large:
        t, t_ref = np.array(large).T
        speedup = float(t_ref.sum() / t.sum())
        print(f"large suite (N >= 1000): {default} {stats(list(t))}; exhaustive {stats(list(t_ref))}; "
              f"speed-up {speedup:.0f}x")

    # huge: 10^5 nodes, default solver only
    huge = []
    for name, inst in suite("huge", args.huge, args.seed, (5, 5)):
        r, t = timed(inst, default)
        huge.append(t)
        print(f"  {name}: {inst.fleet.nodes} nodes, {inst.objective}, {r.status}: {t:.2f} s", flush=True)
    print(f"huge suite (10^5 nodes), {default}: {stats(huge)}")

    # max_compute: both target kinds, figures apart (C_local under the Chinchilla penalty is the hard one)
    kinds = {"c_local": [], "c_quality": []}
    narrow_mc = {"max_inner_steps": 100, "max_regional_rounds": 4, "group_sizes": [2, 4, 8, 16], "max_micro_batches": 16}
    runs = list(suite("max_compute", args.max_compute, args.seed, (0, 4), shipped=True))
    runs += [(name, inst, True) for name, inst in suite("max_compute_narrow", args.max_compute, args.seed, (0, 2),
                                                        narrow_mc)]
    for entry in runs:
        name, base = entry[0], entry[1]
        always = len(entry) == 3
        for kind in kinds:
            try:
                inst = as_max_compute(base, kind)
            except InputError:
                continue
            if always or space_size(inst) <= args.exhaustive_max_plans:
                t, t_ref, agree = versus_exhaustive(f"{name} ({kind})", inst, default)
                compared, mismatches = compared + 1, mismatches + (not agree)
            else:
                t = timed(inst, default)[1]
            kinds[kind].append(t)
    for kind, times_ in kinds.items():
        print(f"max_compute suite, {kind}, {default}: {stats(times_)}")

    # small: every solver, MIP backends included
    small_search = {"max_inner_steps": 100, "max_regional_rounds": 4, "group_sizes": [2, 4]}
    times = {s: [] for s in SOLVERS}
    wrong = {s: 0 for s in SOLVERS}
    skipped = {s: 0 for s in SOLVERS}
    for name, inst in suite("small", args.small, args.seed, (0, 1.5), small_search):
        ref, t_ref = timed(inst, "exhaustive")
        times["exhaustive"].append(t_ref)
        for s in SOLVERS:
            if s == "exhaustive":
                continue
            try:
                r, t = timed(inst, s, time_limit_s=args.mip_time_limit if s != default else None)
            except UnsupportedBySolver:
                skipped[s] += 1
                continue
            times[s].append(t)
            if not same(r, ref):
                wrong[s] += 1
                print(f"mismatch {name} [{s}]: {r.status} {r.objective_value} vs exhaustive {ref.objective_value}")
        compared += 1
    mismatches += wrong[default]
    print("small suite (<= 32 nodes, H <= 100, R <= 4), every solver:")
    for s in SOLVERS:
        ratio = (np.sum(times["exhaustive"]) / np.sum(times[s])) if times[s] else float("nan")
        print(f"  {s:10s} {stats(times[s])}  mismatches {wrong[s]}  skipped {skipped[s]}  "
              f"speed-up vs exhaustive {ratio:.2f}x")

    print(f"{compared} instances compared with the exhaustive oracle")
    if args.mip_random or args.mip_huge:
        mip_suite(args)
    print(f"median_s={np.median(main_times):.3f} p95_s={np.percentile(main_times, 95):.3f} "
          f"mismatches={mismatches} speedup_vs_oracle={speedup:.1f}")
    if kinds["c_local"]:
        print(f"max_compute_c_local_median_s={np.median(kinds['c_local']):.3f} "
              f"max_compute_c_local_max_s={max(kinds['c_local']):.3f}")
    return 0


def mip_runs(args):
    """(name, instance) of the mip suite: shipped and random instances as given, then the first
    `--mip-quality` random ones with a C_quality target, then the first `--mip-max-compute` as
    max_compute of each of `MAX_COMPUTE_KINDS`."""
    quality, most = [], []
    for name, inst in suite("main", args.mip_random, args.seed, (0, 4), shipped=True):
        yield name, inst
        if name.startswith("main-") and len(quality) < args.mip_quality \
                and inst.training.target_kind == "c_local":
            quality.append((f"{name}-quality", with_target_kind(inst, "c_quality")))
        if name.startswith("main-") and len(most) < len(MAX_COMPUTE_KINDS) * args.mip_max_compute:
            most += [(f"{name}-max-{kind}", as_mip_max_compute(inst, kind)) for kind in MAX_COMPUTE_KINDS]
    yield from quality
    yield from most


def mip_suite(args) -> int:
    """The MIP path against the branch and bound (and the oracle on small spaces); module docstring."""
    mip, skipped, unanswered, disagreements, oracle_checked = args.mip, 0, [], 0, 0
    rows = {"c_local": [], "c_quality": [], "max_compute c_quality": [], "max_compute c_local linear_v1": [],
            "max_compute c_local chinchilla": [], "max_compute c_local none": [], "mixed fleet": []}
    print(f"mip suite starts, {load()}", flush=True)
    for name, inst in mip_runs(args):
        kind = inst.training.target_kind
        if inst.objective == "max_compute":
            kind = f"max_compute {max_compute_kind(inst)}"
        if inst.fleet.is_mixed:     # pools: solved by planner.solvers.mixed, not by the formulation; shown apart
            kind = "mixed fleet"
        ref, t_ref = timed(inst, "bnb")
        try:
            r, t = timed(inst, mip, time_limit_s=args.mip_time_limit)
        except (UnsupportedBySolver, InputError) as err:    # e.g. chosen regions: refused with exit 2
            print(f"  {name}: {mip} refused: {err}")
            skipped += 1
            continue
        report = r.mip[0] if r.mip else {}
        if r.status not in ("optimal", "infeasible"):
            unanswered.append(name)
        agree = same(r, ref) or r.status not in ("optimal", "infeasible")    # unanswered: counted above
        if agree and r.status in ("optimal", "infeasible") and space_size(inst) <= 1e6:
            agree = same(r, timed(inst, "exhaustive")[0])
            oracle_checked += 1
        if not agree:
            disagreements += 1
            print(f"disagreement {name}: {mip} {r.status} {r.objective_value} vs bnb {ref.objective_value}")
        rows[kind].append((t, t_ref))
        if t > 5.0 or report.get("status") not in ("optimal", "infeasible"):
            print(f"  {name}: {inst.fleet.nodes} nodes, {inst.objective}, {kind}: {mip} {t:.2f} s (loop "
                  f"{report.get('status')}, {report.get('rounds')} rounds, {report.get('classes_kept')} of "
                  f"{report.get('classes')} classes kept; build {report.get('build_s', 0):.2f} s, backend "
                  f"{report.get('time_s', 0):.2f} s, certify {report.get('certify_s', 0):.2f} s), bnb {t_ref:.2f} s",
                  flush=True)
    both = rows["c_local"] + rows["c_quality"]
    most = [x for k, v in rows.items() if k.startswith("max_compute") for x in v]
    print(f"mip suite (N <= 10^4, default ranges; {skipped} not run), {load()}:")
    for label, part in (("c_local", rows["c_local"]), ("c_quality", rows["c_quality"]), ("min_*", both)) \
            + tuple((k, v) for k, v in rows.items() if k.startswith("max_compute")) \
            + (("max_compute", most), ("all", both + most), ("mixed fleet", rows["mixed fleet"])):
        if not part:
            continue
        t, t_ref = np.array(part).T
        print(f"  {label:30s} {mip:6s} {stats(list(t))}")
        print(f"  {label:30s} bnb    {stats(list(t_ref))}")
        print(f"  {label:30s} ratio {mip}/bnb: median {float(np.median(t / np.maximum(t_ref, 1e-9))):.1f}x, "
              f"total {float(t.sum() / max(t_ref.sum(), 1e-9)):.1f}x")
    print(f"  unanswered {len(unanswered)}  disagreements {disagreements} (all vs bnb, {oracle_checked} vs the "
          f"exhaustive oracle too)")
    t, t_ref = (np.array(both).T if both else (np.zeros(0), np.zeros(0)))
    ratio_median = float(np.median(t / np.maximum(t_ref, 1e-9))) if both else float("nan")
    huge, huge_most = [], []
    for name, base in suite("huge", args.mip_huge, args.seed, (5, 5)):
        asked = [(base.objective, base)] if base.objective in ("min_time", "min_cost") else []
        for kind, inst in asked + [(f"max_compute {k}", as_mip_max_compute(base, k)) for k in MAX_COMPUTE_KINDS]:
            ref, t_ref_h = timed(inst, "bnb")
            r, t_m = timed(inst, mip, time_limit_s=args.mip_time_limit)
            (huge_most if inst.objective == "max_compute" else huge).append(t_m)
            if not same(r, ref):
                disagreements += 1
                print(f"disagreement {name} ({kind}): {mip} {r.objective_value} vs bnb {ref.objective_value}")
            report = r.mip[0] if r.mip else {}
            print(f"  {name}: {inst.fleet.nodes} nodes, {kind}, {r.status}: {mip} {t_m:.2f} s (loop "
                  f"{report.get('status')}, {report.get('classes_kept')} classes kept, certify "
                  f"{report.get('certify_s', 0):.2f} s), bnb {t_ref_h:.2f} s, {load()}", flush=True)
    print(f"huge suite (10^5 nodes), {mip}: min_*: {stats(huge)}; max_compute: {stats(huge_most)}")
    compared, compare_wrong, most_compared, most_wrong = mip_compare(args)
    if both:
        print(f"mip_median_s={np.median(t):.3f} mip_p95_s={np.percentile(t, 95):.3f} "
              f"mip_unanswered={len(unanswered)} mip_disagreements={disagreements} "
              f"mip_ratio_to_bnb={ratio_median:.1f} mip_huge_max_s={max(huge) if huge else float('nan'):.2f} "
              f"mip_compared={compared} mip_compare_disagreements={compare_wrong}")
    most_median = float(np.median(np.array(most)[:, 0])) if most else float("nan")
    print(f"mip_max_compute_median_s={most_median:.3f} mip_max_compute_compared={most_compared} "
          f"mip_max_compute_compare_disagreements={most_wrong}")
    return 0


def mip_compare(args) -> tuple[int, int, int, int]:
    """MIP (the loop alone, and certified), bnb and the exhaustive oracle on `--mip-compare` small
    instances, every objective the MIP answers and both target kinds: (compared, disagreements)
    for min_time / min_cost, then for max_compute."""
    from planner.solvers.certified import COMPUTE_LOG_TOL, outer_approximation
    narrow = {"max_inner_steps": 60, "max_regional_rounds": 4, "group_sizes": [2, 4], "max_stages": 8,
              "max_micro_batches": 8}
    compared = wrong = loop_wrong = 0
    most = {"compared": 0, "wrong": 0, "loop_wrong": 0}
    start = time.perf_counter()
    for name, inst in suite("mip_compare", args.mip_compare, args.seed, (0, 1.5), narrow):
        kind = "c_quality" if compared % 2 else "c_local"
        try:
            inst = with_target_kind(inst, kind)
        except InputError:
            continue
        most_kind = MAX_COMPUTE_KINDS[most["compared"] % len(MAX_COMPUTE_KINDS)]
        ok, loop_ok = compare_one(name, as_mip_max_compute(inst, most_kind), args, COMPUTE_LOG_TOL)
        most["compared"] += 1
        most[most_kind] = most.get(most_kind, 0) + 1
        most["wrong"] += not ok
        most["loop_wrong"] += not loop_ok
        ref = solve(inst, solver="exhaustive")
        exact = solve(inst, solver="bnb")
        try:
            r = solve(inst, solver=args.mip)
        except UnsupportedBySolver as err:
            print(f"  {name}: {args.mip} refused: {err}")
            continue
        compared += 1
        # the loop alone, before certification: its value must be the optimum
        s = setting_from_instance(inst)
        space = DecisionSpace.from_instance(inst, s).for_objective(s, objective_named(inst.objective))
        _, _, loop = outer_approximation(s, space, objective_named(inst.objective), args.mip)
        loop_ok = (ref.plan is None and loop.objective is None) or (
            ref.plan is not None and loop.objective is not None and loop.status == "optimal"
            and abs(loop.objective - ref.objective_value) <= 1e-9 * abs(ref.objective_value))
        if not (same(r, ref) and same(exact, ref) and loop_ok):
            wrong += 1
            loop_wrong += not loop_ok
            print(f"disagreement {name} ({inst.objective}, {kind}): {args.mip} {r.objective_value} (loop "
                  f"{loop.status} {loop.objective}), bnb {exact.objective_value}, exhaustive {ref.objective_value}")
    print(f"mip compare suite (<= 32 nodes, H <= 60, R <= 4): {compared} instances, MIP (loop alone and "
          f"certified) vs bnb vs exhaustive: {wrong} disagreements ({loop_wrong} of the loop alone); "
          f"max_compute: {most['compared']} instances ("
          f"{', '.join(f'{most.get(k, 0)} {k}' for k in MAX_COMPUTE_KINDS)}), {most['wrong']} disagreements ({most['loop_wrong']} of the "
          f"loop alone); {time.perf_counter() - start:.0f} s, {load()}")
    return compared, wrong, most["compared"], most["wrong"]


def compare_one(name: str, inst, args, log_tol: float) -> tuple[bool, bool]:
    """One max_compute instance: (certified MIP, bnb and oracle agree, the loop alone's value is within
    `log_tol` in ln C of the optimum with status optimal)."""
    from planner.solvers.certified import outer_approximation
    ref = solve(inst, solver="exhaustive")
    exact = solve(inst, solver="bnb")
    r = solve(inst, solver=args.mip)
    s = setting_from_instance(inst)
    space = DecisionSpace.from_instance(inst, s).for_objective(s, objective_named(inst.objective))
    _, _, loop = outer_approximation(s, space, objective_named(inst.objective), args.mip)
    loop_ok = (ref.plan is None and loop.objective is None) or (
        ref.plan is not None and loop.objective is not None and loop.status == "optimal"
        and abs(np.log(loop.objective) - np.log(ref.objective_value)) <= log_tol
        and loop.bound >= ref.objective_value * (1 - 1e-12))
    ok = same(r, ref) and same(exact, ref)
    if not (ok and loop_ok):
        print(f"disagreement {name} (max_compute, {inst.training.target_kind}): {args.mip} {r.objective_value} "
              f"(loop {loop.status} {loop.objective}, bound {loop.bound}), bnb {exact.objective_value}, "
              f"exhaustive {ref.objective_value}")
    return ok, loop_ok


if __name__ == "__main__":
    sys.exit(main())
