"""Wall and CPU time of a 1,000-point sweep of a shipped instance: local process pool, optionally a Dask
LocalCluster, with the machine's load.

Two grids (`--grid`):
- `bandwidth-nodes` (default, issue 27): WAN bandwidth (up = down, 50 values log-spaced 10-1000 Mb/s) x
  fleet.nodes (20 values, 8, 16, ..., 160) of instances/solve-1e24-64xh100.json;
- `bandwidth-rtt` (issue 13): WAN bandwidth x round-trip time (5-340 ms) of
  instances/miri/baseline-1e25.json.
`--points` scales the grid (the second field keeps 20 values). Each point is a `dtplan solve`.
The sweep runs on the local pool (`--workers` processes, default every core); wall time, CPU time
(this process and its reaped worker processes, `resource.getrusage`) and the load average before
and after are printed. `--compare-single N` also solves N points (spread over the grid) one by one
with `planner.solve.solve`, prints their CPU time per point and checks that the sweep's rows for
them are the same; `--dask` also runs a `distributed.LocalCluster` of the same number of
single-threaded worker processes and checks its rows are identical. Target (issue 27): a
1,000-point bandwidth x nodes sweep in under 60 s wall on 2 cores (stretch 15 s).

    .venv/bin/python scripts/bench_sweep.py [--grid bandwidth-nodes] [--points 1000] [--workers N]
                                            [--compare-single 20] [--dask] [--instance FILE]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from planner.questions.sweep import TIME_COLUMN, SweepSpec, default_workers, run_sweep  # noqa: E402

INSTANCES = {"bandwidth-nodes": ROOT / "instances" / "solve-1e24-64xh100.json",
             "bandwidth-rtt": ROOT / "instances" / "miri" / "baseline-1e25.json"}
BANDWIDTH = "network.wan.up_mbps+network.wan.down_mbps"


def grid(kind: str, points: int) -> dict[str, list]:
    """A grid of about `points` points: 50 bandwidths x 20 values of the second field for 1,000."""
    n_second = max(1, min(20, points // 50 or 1))
    n_bw = max(1, math.ceil(points / n_second))
    bw = [float(f"{10 * 100 ** (i / max(1, n_bw - 1)):.4g}") for i in range(n_bw)]
    if kind == "bandwidth-nodes":
        return {BANDWIDTH: bw, "fleet.nodes": [8 * (i + 1) for i in range(n_second)]}
    rtt = [float(f"{5 + (340 - 5) * i / max(1, n_second - 1):.4g}") for i in range(n_second)]
    return {BANDWIDTH: bw, "network.wan.rtt_ms": rtt}


def strip(rows):
    return [{k: v for k, v in r.items() if k != TIME_COLUMN} for r in rows]


def cpu_s() -> float:
    """CPU seconds (user + system) of this process and of its children that have ended."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def load_text() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} cores"


def compare_single(base: dict, spec: SweepSpec, rows: list[dict], count: int) -> bool:
    """Solve `count` points spread over the grid one by one (planner.solve.solve on the instance with the
    point's values set, as `dtplan solve` does) and check the sweep's rows for them (every column
    but time_s); prints the CPU time per point."""
    from planner.questions.sweep import run_point
    points = spec.points()
    step = max(1, len(points) // max(1, count))
    chosen = points[::step][:count]
    payload = spec.payload()
    start = time.process_time()
    alone = [run_point(payload, p) for p in chosen]
    per_point = (time.process_time() - start) / max(1, len(chosen))
    same = strip(alone) == strip([rows[p.index] for p in chosen])
    print(f"one by one:        {len(chosen)} points, {per_point * 1e3:.1f} ms CPU per point; "
          f"sweep rows equal the single solves: {'yes' if same else 'NO'}")
    return same


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--grid", choices=sorted(INSTANCES), default="bandwidth-nodes")
    parser.add_argument("--points", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=None, help="default: every core this process may use")
    parser.add_argument("--instance", type=Path, default=None, help="default: the grid's instance")
    parser.add_argument("--compare-single", type=int, default=0, metavar="N",
                        help="also solve N points one by one and compare")
    parser.add_argument("--dask", action="store_true", help="also run a Dask LocalCluster and compare its rows")
    args = parser.parse_args()
    workers = args.workers or default_workers()
    instance = args.instance or INSTANCES[args.grid]
    base = json.loads(instance.read_text())
    g = grid(args.grid, args.points)
    n = math.prod(len(v) for v in g.values())
    shown = instance.relative_to(ROOT) if instance.is_relative_to(ROOT) else instance
    print(f"instance {shown}; grid {' x '.join(f'{k} ({len(v)})' for k, v in g.items())} = {n} points; "
          f"{workers} workers; before: {load_text()}")
    spec = SweepSpec(base, grid=g)
    cpu0, start = cpu_s(), time.perf_counter()
    local = run_sweep(spec, workers=workers)
    t_local, cpu_local = time.perf_counter() - start, cpu_s() - cpu0
    print(f"local pool:        {n} points in {t_local:6.1f} s wall = {n / t_local:7.1f} points/s; "
          f"{cpu_local:6.1f} s CPU = {cpu_local / n * 1e3:.1f} ms per point; {len(local.errors)} failed; "
          f"after: {load_text()}")
    ok = True
    if args.compare_single:
        ok &= compare_single(base, spec, local.rows, args.compare_single)
    if args.dask:
        from distributed import LocalCluster
        start = time.perf_counter()
        with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None,
                          silence_logs=40) as cluster:
            up = time.perf_counter() - start
            start = time.perf_counter()
            dask = run_sweep(spec, scheduler=cluster.scheduler_address)
            t_dask = time.perf_counter() - start
        print(f"Dask LocalCluster: {n} points in {t_dask:6.1f} s = {n / t_dask:7.1f} points/s "
              f"(cluster start {up:.1f} s not counted; {len(dask.errors)} failed)")
        same = strip(local.rows) == strip(dask.rows)
        print("rows identical (every column but time_s):", "yes" if same else "NO")
        ok &= same
    scale = n / 1000
    print(f"target < {60 * scale:.0f} s wall for {n} points: {'met' if t_local < 60 * scale else 'NOT met'} "
          f"(stretch < {15 * scale:.0f} s: {'met' if t_local < 15 * scale else 'not met'})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
