"""Running a sweep: the points not yet in the output, in a local process pool, in this process, or
on a Dask distributed cluster; rows collected as they finish."""

from __future__ import annotations

import math
import os
import time
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from planner.questions.sweep.shared import node_groups, run_chunk
from planner.questions.sweep.sink import RowSink, frame_of
from planner.questions.sweep.spec import Point, SweepSpec
from planner.schema.errors import InputError, Problem

MAX_CHUNK = 50                     # points per task at most (progress and load balance)
CHUNKS_PER_WORKER = 4
CONNECT_TIMEOUT_S = 20            # --scheduler: seconds to reach the Dask scheduler


@dataclass
class SweepResult:
    """The rows of a sweep (one per point, by index) and how they were obtained."""

    spec: SweepSpec
    rows: list[dict[str, Any]]
    computed: int                 # points answered by this run
    resumed: int                  # points found finished in the output and skipped
    elapsed_s: float
    workers: int
    where: str                    # "local" | "in-process" | the Dask scheduler's address

    @property
    def columns(self) -> list[str]:
        return self.spec.columns()

    def to_frame(self):
        """A pandas DataFrame: one row per point, the columns of `SweepSpec.columns`."""
        return frame_of(self.rows, self.columns)

    def to_dict(self) -> dict[str, Any]:
        return {"command": self.spec.command, "grid": self.spec.grid,
                "vary": {k: str(v) for k, v in self.spec.vary.items()}, "samples": self.spec.samples,
                "seed": self.spec.seed, "points": len(self.rows), "computed": self.computed,
                "resumed": self.resumed, "elapsed_s": self.elapsed_s, "workers": self.workers,
                "where": self.where, "rows": self.rows}

    @property
    def errors(self) -> list[dict[str, Any]]:
        return [r for r in self.rows if r["status"] == "error"]


def _chunks(points: list[Point], workers: int) -> list[list[Point]]:
    """Tasks of at most MAX_CHUNK points, about CHUNKS_PER_WORKER per worker; the points that differ
    only in the node limit (`node_groups`, which may share a search) kept in one task where they fit,
    whatever the order of the grid's fields (rows are put back in point order as they arrive)."""
    groups = node_groups(points)
    size = max(1, min(MAX_CHUNK, max(math.ceil(len(points) / max(1, workers * CHUNKS_PER_WORKER)),
                                     max(map(len, groups), default=1))))
    chunks: list[list[Point]] = []
    current: list[Point] = []
    for group in groups:
        for i in range(0, len(group), size):
            part = group[i:i + size]
            if current and len(current) + len(part) > size:
                chunks.append(current)
                current = []
            current += part
    return chunks + ([current] if current else [])


PARENT_POLL_S = 0.5               # how often a worker's watcher checks that its parent is alive
PR_SET_PDEATHSIG = 1              # prctl(2) option number (linux/prctl.h)


def _warm(parent_pid: int | None = None) -> None:
    """Worker start: end with the parent (`_follow_parent`), then import what answering a point
    needs, once."""
    if parent_pid is not None:
        _follow_parent(parent_pid)
    import planner.questions.feasible  # noqa: F401
    import planner.solve  # noqa: F401


def _follow_parent(parent_pid: int) -> None:
    """A worker ends on SIGTERM (the default action, whatever the parent had set) and when its parent
    dies, even by SIGKILL (issue 23: workers were left running under PID 1 for good): on Linux the
    kernel sends it SIGTERM at the parent's death (prctl PR_SET_PDEATHSIG); everywhere a daemon thread
    checks every PARENT_POLL_S that the parent is still its parent (an orphan is re-parented) and
    ends the process when it is not. A parent that died before the signal was armed is caught by the
    same check, done once right away."""
    import signal
    import threading
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if hasattr(os, "sched_getaffinity"):        # Linux
        try:
            import ctypes
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
        except (OSError, AttributeError):       # no prctl in this libc: the watcher below suffices
            pass
    if os.getppid() != parent_pid:
        os._exit(1)

    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(PARENT_POLL_S)
        os._exit(1)

    threading.Thread(target=watch, name="dtplan-parent-watch", daemon=True).start()


def default_workers() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def run_sweep(spec: SweepSpec, workers: int | None = None, scheduler: str | None = None,
              output: str | Path | None = None,
              progress: Callable[[int, int], None] | None = None) -> SweepResult:
    """Answer every point of `spec` (checked first: InputError naming the field on bad input).

    `workers`: processes of the local pool (default: every core this process may use; 1 runs
    in this process). `scheduler`: the address of a Dask distributed scheduler (or a
    `distributed.Client`), used instead of the local pool. `output`: a .parquet, .csv or
    .jsonl file written as rows arrive; the points it already holds are not recomputed.
    `progress(done, total)` is called as points finish.
    """
    start = time.perf_counter()
    spec.check()
    if isinstance(scheduler, str):
        check_scheduler(scheduler)
    points = spec.points()
    columns = spec.columns()
    sink = RowSink(output, columns) if output is not None else None
    done: dict[int, dict[str, Any]] = {}
    if sink is not None:
        by_index = {p.index: p for p in points}
        for row in sink.existing():
            i = row.get("index")
            p = by_index.get(i)
            if p is None or row.get("key") != p.key:
                sink.close()
                raise InputError([Problem("-o", f"{sink.path} holds results of another sweep (point {i}: "
                                                "other inputs or another question); choose another output "
                                                "or remove it")])
            done.setdefault(i, {c: row.get(c) for c in columns})
    resumed = len(done)
    todo = [p for p in points if p.index not in done]
    payload = spec.payload()
    total = len(points)
    workers = workers or default_workers()
    where = "in-process" if scheduler is None and workers == 1 else "local"

    def collect(rows: list[dict[str, Any]]) -> None:
        for r in rows:
            done[r["index"]] = r
        if sink is not None:
            sink.append(rows)
        if progress is not None:
            progress(len(done), total)

    if progress is not None:
        progress(len(done), total)
    try:
        if not todo:
            pass
        elif scheduler is not None:
            where = _run_dask(scheduler, payload, todo, collect)
        elif workers == 1:
            for chunk in _chunks(todo, 1):
                collect(run_chunk(payload, chunk))
        else:
            _run_pool(workers, payload, todo, collect)
    finally:
        if sink is not None:
            sink.close()
    rows = [done[p.index] for p in points]
    if sink is not None:
        sink.finish(rows)
    return SweepResult(spec, rows, len(todo), resumed, time.perf_counter() - start, workers, where)


def _failed_rows(payload: dict, chunk: Sequence[Point], err: BaseException) -> list[dict[str, Any]]:
    rows = []
    for p in chunk:
        row = {c: None for c in payload["columns"]}
        row.update(index=p.index, key=p.key, **p.inputs, status="error",
                   error=f"worker failed: {type(err).__name__}: {err}".replace("\n", " | "))
        rows.append(row)
    return rows


def _run_pool(workers: int, payload: dict, todo: list[Point], collect) -> None:
    import multiprocessing
    chunks = _chunks(todo, workers)
    ctx = multiprocessing.get_context("fork" if hasattr(os, "fork") else "spawn")
    pool = ProcessPoolExecutor(max_workers=min(workers, len(chunks)), mp_context=ctx, initializer=_warm,
                               initargs=(os.getpid(),))
    try:
        pending = {pool.submit(run_chunk, payload, c): c for c in chunks}
        while pending:
            finished, _ = wait(pending, return_when=FIRST_COMPLETED)
            for fut in finished:
                chunk = pending.pop(fut)
                try:
                    rows = fut.result()
                except Exception as err:  # noqa: BLE001 - a crashed worker: its points are error rows
                    rows = _failed_rows(payload, chunk, err)
                collect(rows)
    except BaseException:            # Ctrl-C: stop at once; the rows written so far stay for a resume
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown(wait=True)


def check_scheduler(address: str) -> None:
    """InputError naming --scheduler if `address` is not a Dask address (tcp://host:port, ...)."""
    from distributed.comm.addressing import parse_address, parse_host_port
    try:
        scheme, location = parse_address(address, strict=False)
        if scheme in ("tcp", "tls"):
            parse_host_port(location)
    except (ValueError, TypeError) as err:
        raise InputError([Problem("--scheduler", f"not a Dask scheduler address (e.g. tcp://10.0.0.5:8786): "
                                                 f"{err}")]) from None


def _run_dask(scheduler, payload: dict, todo: list[Point], collect) -> str:
    from distributed import Client, as_completed
    own = not isinstance(scheduler, Client)
    client = Client(scheduler, set_as_default=False, timeout=CONNECT_TIMEOUT_S) if own else scheduler
    try:
        workers = max(1, sum(w.get("nthreads", 1) for w in client.scheduler_info()["workers"].values()))
        chunks = _chunks(todo, workers)
        remote = client.scatter(payload, broadcast=True)
        futures = client.map(run_chunk, [remote] * len(chunks), chunks, pure=False)
        index = {f.key: c for f, c in zip(futures, chunks)}
        for fut in as_completed(futures, loop=client.loop):
            try:
                rows = fut.result()
            except Exception as err:  # noqa: BLE001
                rows = _failed_rows(payload, index[fut.key], err)
            collect(rows)
        return str(client.scheduler.address)
    finally:
        if own:
            client.close()
