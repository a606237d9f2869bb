#!/usr/bin/env python3
"""Where the MIP path's time goes: tables, model build, handing the model to the backend, the
backend's solve and the certification, on the instances of `scripts/bench_solve.py --only-mip`.

    nice python scripts/bench_mip_build.py [--mip highs] [--random 300] [--quality 100] [--max-compute 40]
                                           [--seed 0] [--time-limit 60] [--only NAME,NAME] [--slowest 12]
                                           [--reports PATH]

The instances are bench_solve's mip suite (`mip_runs`: the shipped instances, `--random` random ones
with N <= 10^4 and the default search ranges, the first `--quality` of them with a C_quality target,
the first `--max-compute` as max_compute of C_quality, of C_local under linear_v1 and under the
chinchilla penalty), solved by `dtplan solve --solver MIP` only (no branch and bound beside it:
bench_solve compares the answers). Fleets of pools are left out (planner.solvers.mixed_mip, timed by
scripts/bench_mixed.py). Per instance the wall time of `planner.solve.solve` and the split of the
MIP report (`planner.solvers.certified.MipReport`):

    tables    build_tables and the presolve (`tables_s`)
    model     the formulation's build, all rounds (`build_s - tables_s`)
    transfer  the model handed to the backend, all rounds (`transfer_s`: MPS written and read, or arrays)
    solve     the backend's own solve (`time_s - transfer_s`)
    certify   the exact search's certification (`certify_s`)

and its CPU time (`time.process_time`: the figure to compare on a loaded machine, where the wall
time of a process depends on what else runs).

Printed: median, p95 and max of the wall time per kind (min_time/min_cost of C_local and of C_quality
together as `min_*`, as bench_solve's last line, and max_compute apart), the sums of each part, the
slowest instances with their split, the CPU time of the whole run and the machine's load average
before and after (the figures depend on it). Last line: `mip_median_s=... mip_p95_s=... mip_max_s=...
all_p95_s=... all_max_s=... model_share=... all_cpu_median_s=... all_cpu_p95_s=... all_cpu_max_s=... cpu_total_s=...`
(model_share: (model + transfer) / wall, all instances).

`--reports PATH` writes one JSON line per instance: its name, the answer (status, objective value) and
what the MIP report says apart from times (`REPORTED`: rounds, status, nodes, classes solved, gap, ...).
Two runs' files compare line by line (`cmp`): the report does not depend on the machine's load when they
are equal at different loads (docs/mip.md, "What is deterministic").
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from bench_solve import load, max_compute_kind, mip_runs, stats  # noqa: E402
from planner.schema.errors import InputError  # noqa: E402
from planner.solve import solve  # noqa: E402
from planner.solvers import UnsupportedBySolver  # noqa: E402

PARTS = ("tables", "model", "transfer", "solve", "certify")
REPORTED = ("status", "backend_status", "objective", "bound", "gap", "nodes", "rounds", "columns", "rows", "nonzeros",
            "classes", "classes_kept", "classes_solved", "certified_changed_plan", "certified_improved")


def split(report: dict) -> dict:
    """The MIP report's time in the parts of the module docstring."""
    tables = report.get("tables_s", 0.0)
    transfer = report.get("transfer_s", 0.0)
    return {"tables": tables, "model": report.get("build_s", 0.0) - tables, "transfer": transfer,
            "solve": report.get("time_s", 0.0) - transfer, "certify": report.get("certify_s", 0.0)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mip", default="highs")
    p.add_argument("--random", type=int, default=300)
    p.add_argument("--quality", type=int, default=100)
    p.add_argument("--max-compute", type=int, default=40)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--time-limit", type=float, default=60.0)
    p.add_argument("--only", default="", help="comma-separated instance names (e.g. main-17,main-3-quality)")
    p.add_argument("--slowest", type=int, default=12)
    p.add_argument("--reports", default="", help="write each instance's answer and MIP report (no times) as JSON lines")
    args = p.parse_args(argv)
    only = {x for x in args.only.split(",") if x}
    suite = argparse.Namespace(mip_random=args.random, mip_quality=args.quality, mip_max_compute=args.max_compute,
                               seed=args.seed)
    print(f"bench_mip_build starts, {args.mip}, {load()}", flush=True)
    cpu0 = time.process_time()
    rows = []         # (name, kind, wall, split)
    reports = open(args.reports, "w") if args.reports else None
    for name, inst in mip_runs(suite):
        if (only and name not in only) or inst.fleet.is_mixed:
            continue
        kind = f"max_compute {max_compute_kind(inst)}" if inst.objective == "max_compute" else "min_*"
        start, cpu_start = time.perf_counter(), time.process_time()
        try:
            r = solve(inst, solver=args.mip, time_limit_s=args.time_limit)
        except (UnsupportedBySolver, InputError) as err:
            print(f"  {name}: refused: {err}")
            continue
        wall = time.perf_counter() - start
        parts = split(r.mip[0] if r.mip else {})
        rows.append((name, kind, wall, parts, r.status, time.process_time() - cpu_start))
        if reports is not None:
            mip = r.mip[0] if r.mip else {}
            reports.write(json.dumps({"name": name, "answer": [r.status, r.objective_value],
                                      **{k: mip.get(k) for k in REPORTED}}) + "\n")
        if only:
            print(f"  {name}: {wall:.3f} s " + " ".join(f"{k} {v:.3f}" for k, v in parts.items()), flush=True)
    cpu = time.process_time() - cpu0
    if reports is not None:
        reports.close()
    print(f"bench_mip_build ({args.mip}; {len(rows)} instances, CPU {cpu:.1f} s), {load()}:")
    kinds = sorted({r[1] for r in rows})
    for kind in kinds + ["all"]:
        part = [r for r in rows if kind in ("all", r[1])]
        sums = {k: sum(r[3][k] for r in part) for k in PARTS}
        wall = sum(r[2] for r in part)
        print(f"  {kind:34s} {stats([r[2] for r in part])}")
        print(f"  {'':34s} CPU: {stats([r[5] for r in part])}")
        print(f"  {'':34s} sums: wall {wall:.1f} s = " + ", ".join(f"{k} {v:.1f}" for k, v in sums.items())
              + f", other {wall - sum(sums.values()):.1f}")
    print(f"  slowest {args.slowest}:")
    for name, kind, wall, parts, status, _ in sorted(rows, key=lambda r: -r[2])[:args.slowest]:
        print(f"    {name:34s} {kind:34s} {status:10s} {wall:6.2f} s: " + ", ".join(f"{k} {v:.2f}"
                                                                               for k, v in parts.items()))
    walls = [r[2] for r in rows]
    mins = [r[2] for r in rows if r[1] == "min_*"]
    cpus = [r[5] for r in rows]
    share = sum(r[3]["model"] + r[3]["transfer"] for r in rows) / max(sum(walls), 1e-9)
    if rows:
        print(f"mip_median_s={np.median(mins) if mins else float('nan'):.3f} "
              f"mip_p95_s={np.percentile(mins, 95) if mins else float('nan'):.3f} "
              f"mip_max_s={max(mins) if mins else float('nan'):.3f} all_p95_s={np.percentile(walls, 95):.3f} "
              f"all_max_s={max(walls):.3f} model_share={share:.3f} all_cpu_median_s={np.median(cpus):.3f} "
              f"all_cpu_p95_s={np.percentile(cpus, 95):.3f} all_cpu_max_s={max(cpus):.3f} cpu_total_s={sum(cpus):.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
