"""Sweep worker processes end with their parent (issue 23 item 6: after `kill -9` of a running
`sweep --workers 2` both workers ran on under PID 1 for good) and on SIGTERM. Real processes, polled
with a bound (no fixed sleep decides the outcome)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

psutil = pytest.importorskip("psutil")

ROOT = Path(__file__).resolve().parents[1]
BASE_PATH = ROOT / "instances" / "miri" / "baseline-1e25.json"
DTPLAN = [sys.executable, "-c", "from planner.cli import main; main()"]
BOUND_S = 20                      # generous under load; the watcher polls every 0.5 s, the kernel signals at once


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def _wait(condition, bound_s: float = BOUND_S) -> bool:
    end = time.monotonic() + bound_s
    while time.monotonic() < end:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


def _long_sweep(tmp_path: Path, preexec=None) -> tuple[subprocess.Popen, list[int]]:
    """A sweep of 8,000 points on 2 workers (minutes: it outlasts every bound below), once both workers are up and answering."""
    out = tmp_path / "rows.jsonl"
    args = ["sweep", str(BASE_PATH), "--grid", "network.wan.up_mbps=" + ",".join(str(10 + i) for i in range(400)),
            "--grid", "fleet.nodes=" + ",".join(str(36 * k) for k in range(1, 21)), "--workers", "2", "-o", str(out)]
    proc = subprocess.Popen(DTPLAN + args, env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, preexec_fn=preexec)
    parent = psutil.Process(proc.pid)
    assert _wait(lambda: len(parent.children()) == 2 and out.exists() and out.stat().st_size > 0, 120), \
        "the sweep did not start its two workers"
    return proc, [c.pid for c in parent.children()]


def _cleanup(proc, workers):
    for pid in [proc.pid] + workers:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    proc.wait()


def test_workers_end_when_the_parent_is_killed(tmp_path):
    proc, workers = _long_sweep(tmp_path)
    try:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        assert _wait(lambda: all(_gone(w) for w in workers)), \
            f"workers still running {BOUND_S} s after their parent was killed: {[w for w in workers if not _gone(w)]}"
    finally:
        _cleanup(proc, workers)


def _ignore_sigterm():
    signal.signal(signal.SIGTERM, signal.SIG_IGN)


def test_sigterm_ends_a_worker(tmp_path):
    """Even when dtplan was started with SIGTERM ignored (inherited by forked workers, as in the
    issue's report)."""
    proc, workers = _long_sweep(tmp_path, preexec=_ignore_sigterm)
    try:
        os.kill(workers[0], signal.SIGTERM)
        assert _wait(lambda: _gone(workers[0])), "a worker outlived SIGTERM"
    finally:
        _cleanup(proc, workers)


def test_the_portable_watcher_ends_an_orphan_without_prctl():
    """Without the Linux signal (no os.sched_getaffinity: the portable path), the watcher thread alone
    ends a worker whose parent has exited."""
    script = (
        "import os, time\n"
        "from planner.questions.sweep import run\n"
        "parent = os.getpid()\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    del os.sched_getaffinity\n"
        "    run._follow_parent(parent)\n"
        "    print('armed', os.getpid(), flush=True)\n"
        "    time.sleep(120)\n"
        "    os._exit(0)\n"
        "time.sleep(1)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    line = proc.stdout.readline().split()
    proc.wait()
    assert line[:1] == ["armed"], "the child did not arm its watcher"
    orphan = int(line[1])
    try:
        assert _wait(lambda: _gone(orphan)), "the orphan kept running"
    finally:
        if not _gone(orphan):
            os.kill(orphan, signal.SIGKILL)
