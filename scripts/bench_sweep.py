"""Points per second of a sweep of a shipped instance: local process pool, then a Dask LocalCluster.

The sweep varies the WAN bandwidth (up = down, log-spaced 10-1000 Mb/s) and the
round-trip time (5-340 ms) of instances/miri/baseline-1e25.json: a grid of --points
points (default 1,000), each a full solve. It runs once on the local pool (--workers
processes, default every core) and once on a `distributed.LocalCluster` of the same
number of single-threaded worker processes, prints points per second for each and checks
that both give identical rows (every column but the wall time). Target (issue 13): a
1,000-point sweep in under 60 s on 2 cores.

    .venv/bin/python scripts/bench_sweep.py [--points 1000] [--workers N] [--instance FILE] [--no-dask]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from planner.questions.sweep import TIME_COLUMN, SweepSpec, default_workers, run_sweep  # noqa: E402

DEFAULT_INSTANCE = ROOT / "instances" / "miri" / "baseline-1e25.json"


def grid(points: int) -> dict[str, list]:
    """A grid of about `points` points: bandwidth x latency, 50 x 20 for 1,000."""
    n_rtt = max(1, min(20, points // 50 or 1))
    n_bw = max(1, math.ceil(points / n_rtt))
    bw = [float(f"{10 * 100 ** (i / max(1, n_bw - 1)):.4g}") for i in range(n_bw)]
    rtt = [float(f"{5 + (340 - 5) * i / max(1, n_rtt - 1):.4g}") for i in range(n_rtt)]
    return {"network.wan.up_mbps+network.wan.down_mbps": bw, "network.wan.rtt_ms": rtt}


def strip(rows):
    return [{k: v for k, v in r.items() if k != TIME_COLUMN} for r in rows]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--points", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=None, help="default: every core this process may use")
    parser.add_argument("--instance", type=Path, default=DEFAULT_INSTANCE)
    parser.add_argument("--no-dask", action="store_true", help="only the local pool")
    args = parser.parse_args()
    workers = args.workers or default_workers()
    base = json.loads(args.instance.read_text())
    g = grid(args.points)
    n = math.prod(len(v) for v in g.values())
    load = os.getloadavg()
    print(f"instance {args.instance.relative_to(ROOT) if args.instance.is_relative_to(ROOT) else args.instance}; "
          f"{n} points; {workers} workers; load average before {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} "
          f"on {os.cpu_count()} cores")
    start = time.perf_counter()
    local = run_sweep(SweepSpec(base, grid=g), workers=workers)
    t_local = time.perf_counter() - start
    solve_s = sum(r[TIME_COLUMN] for r in local.rows)
    print(f"local pool:        {n} points in {t_local:6.1f} s = {n / t_local:7.1f} points/s "
          f"(mean solve {solve_s / n * 1e3:.1f} ms; {len(local.errors)} failed)")
    ok = True
    if not args.no_dask:
        from distributed import LocalCluster
        start = time.perf_counter()
        with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None,
                          silence_logs=40) as cluster:
            up = time.perf_counter() - start
            start = time.perf_counter()
            dask = run_sweep(SweepSpec(base, grid=g), scheduler=cluster.scheduler_address)
            t_dask = time.perf_counter() - start
        print(f"Dask LocalCluster: {n} points in {t_dask:6.1f} s = {n / t_dask:7.1f} points/s "
              f"(cluster start {up:.1f} s not counted; {len(dask.errors)} failed)")
        ok = strip(local.rows) == strip(dask.rows)
        print("rows identical (every column but time_s):", "yes" if ok else "NO")
    print(f"target < 60 s for 1,000 points: local {'met' if t_local < 60 * n / 1000 else 'NOT met'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
