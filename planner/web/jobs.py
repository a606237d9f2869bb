"""Jobs: answers that may take long (solve, feasible, compare, curves), each in its own worker
process, so that the server never waits on one and a job can be cancelled at once.

Worker processes are forked from a fork server (`multiprocessing`'s "forkserver" start
method) that has imported `planner.web.warm` once (every module a job uses, the preset caches
filled by a small question): a job starts in milliseconds, warm, and never inherits the
server's threads. A job reports progress and its
answer through a pipe; a thread of the server per job reads it, enforces the time limit (the
solver's own limit, plus `GRACE_S` for the explanation, then the process is killed) and
wakes the requests waiting on the job. At most `max_running` jobs run at once, and at most
`per_client` of one client's (default `max_running - 1`: a client never holds every slot while
another's job waits); the others wait, state `queued`, and start oldest first among those whose
client is under its share. Every job has a time limit: the server's (`job_time_limit_s`,
`dtplan serve --job-time-limit`), which the job's own `time_limit_s` can only lower. A job
nobody has asked about for `abandon_s` seconds (the page asks every half second while it waits;
a closed tab stops asking) is cancelled. Finished jobs are kept `KEEP_S` seconds for the page
to read.

States: queued, running, then done (with `result`), bad_input (with `problems`), error (with
`error`), cancelled, or time_limit (killed after its time limit and grace).
"""

from __future__ import annotations

import asyncio
import itertools
import multiprocessing
import os
import threading
import time
from dataclasses import dataclass, field
from typing import Any

GRACE_S = 15.0          # beyond a job's time limit before its process is killed
JOB_TIME_LIMIT_S = 300.0  # the server's time limit of every job (dtplan serve --job-time-limit); the
                        # page's default is 60 s and a shipped instance's job takes < 2 s (docs/web.md, Speed)
ABANDON_S = 30.0        # a job nobody asked about for this long is cancelled (the page asks every 0.5 s)
KEEP_S = 600.0          # finished jobs are forgotten after this long
POLL_S = 0.05           # how often a job's thread looks at its pipe, its clock and its cancel flag
FINISHED = ("done", "bad_input", "error", "cancelled", "time_limit")


def run_job(kind: str, payload: dict, conn) -> None:
    """A worker process: answer `kind` with `planner.web.answers.JOBS`, send progress and the end."""
    from planner.schema.errors import InputError
    from planner.web.answers import JOBS, problem_view

    def progress(done: int | None = None, total: int | None = None, message: str = "") -> None:
        conn.send(("progress", {"done": done, "total": total, "message": message}))

    try:
        try:
            conn.send(("done", JOBS[kind](payload, progress)))
        except InputError as err:
            conn.send(("bad_input", [problem_view(p) for p in err.problems]))
        except (BrokenPipeError, EOFError, ConnectionResetError):
            raise
        except Exception as err:  # noqa: BLE001 - a bug: reported to the page, never a dead server
            conn.send(("error", f"internal error ({type(err).__name__}: {str(err)[:300]}); this is a bug in dtplan"))
    except (BrokenPipeError, EOFError, ConnectionResetError):
        pass            # the server closed the pipe (stopped, or cancelled the job): no one to tell
    finally:
        conn.close()


@dataclass
class Job:
    id: str
    kind: str
    payload: dict
    time_limit_s: float
    state: str = "queued"
    created: float = field(default_factory=time.monotonic)
    started: float | None = None
    finished: float | None = None
    progress: dict = field(default_factory=dict)
    result: Any = None
    problems: list = field(default_factory=list)
    error: str | None = None
    client: str = ""
    last_seen: float = field(default_factory=time.monotonic)
    watchers: int = 0
    version: int = 0
    cancel_requested: bool = False
    cancel_reason: str | None = None
    process: Any = None
    changed: asyncio.Event | None = None

    def to_dict(self) -> dict[str, Any]:
        now = time.monotonic()
        elapsed = None if self.started is None else (self.finished or now) - self.started
        out = {"id": self.id, "kind": self.kind, "state": self.state, "version": self.version,
               "elapsed_s": elapsed, "time_limit_s": self.time_limit_s, "progress": self.progress}
        if self.state == "done":
            out["result"] = self.result
        elif self.state == "bad_input":
            out["problems"] = self.problems
        elif self.error:
            out["error"] = self.error
        return out


class JobManager:
    """Starts, watches, cancels and forgets jobs (see the module docstring)."""

    def __init__(self, max_running: int | None = None, grace_s: float = GRACE_S,
                 job_time_limit_s: float = JOB_TIME_LIMIT_S, abandon_s: float = ABANDON_S,
                 per_client: int | None = None):
        self.grace_s = grace_s
        self.job_time_limit_s = job_time_limit_s
        self.abandon_s = abandon_s
        self.max_running = max_running or max(2, os.cpu_count() or 1)   # two at least: one for another client
        self.per_client = per_client or max(1, self.max_running - 1)
        self.slots = threading.Condition()          # guards `waiting` and `running`
        self.waiting: list[Job] = []
        self.running: dict[str, int] = {}           # client -> jobs running
        self.jobs: dict[str, Job] = {}
        self.lock = threading.Lock()
        self.ids = itertools.count(1)
        self.loop: asyncio.AbstractEventLoop | None = None
        try:
            self.ctx = multiprocessing.get_context("forkserver")
            self.ctx.set_forkserver_preload(["planner.web.warm"])
        except ValueError:       # no fork server on this platform (Windows): each job starts afresh
            self.ctx = multiprocessing.get_context("spawn")

    def start(self, loop: asyncio.AbstractEventLoop | None = None) -> None:
        """Remember the server's event loop (to wake waiting requests) and start the fork server
        in the background, so that the first job does not pay for it."""
        self.loop = loop
        if self.ctx.get_start_method() == "forkserver":
            from multiprocessing import forkserver
            threading.Thread(target=forkserver.ensure_running, daemon=True, name="dtplan-forkserver").start()

    def time_limit(self, requested_s: float | None) -> float:
        """A job's time limit: the server's, or the job's own when lower."""
        return self.job_time_limit_s if requested_s is None else min(requested_s, self.job_time_limit_s)

    def submit(self, kind: str, payload: dict, time_limit_s: float | None, client: str = "") -> Job:
        """Queue a job of `client`; its time limit is `self.time_limit(time_limit_s)`."""
        self._forget_old()
        job = Job(f"{next(self.ids)}-{os.urandom(4).hex()}", kind, payload, self.time_limit(time_limit_s),
                  client=client)
        job.changed = asyncio.Event() if self.loop else None
        with self.lock:
            self.jobs[job.id] = job
        threading.Thread(target=self._run, args=(job,), daemon=True, name=f"dtplan-job-{job.id}").start()
        return job

    def get(self, job_id: str) -> Job | None:
        with self.lock:
            return self.jobs.get(job_id)

    def cancel(self, job: Job, reason: str | None = None) -> None:
        """Stop the job now: its process is killed (a queued job never starts)."""
        job.cancel_reason = job.cancel_reason or reason
        job.cancel_requested = True
        process = job.process
        if process is not None and process.is_alive():
            process.kill()
        if job.state == "queued":
            self._finish(job, "cancelled", error=reason)
        with self.slots:
            self.slots.notify_all()

    async def wait(self, job: Job, after_version: int, timeout_s: float) -> None:
        """Return when the job has changed since `after_version`, or after `timeout_s`. Asking
        about a job keeps it alive (`abandon_s`)."""
        job.last_seen = time.monotonic()
        if job.version > after_version or job.state in FINISHED or job.changed is None:
            return
        job.watchers += 1
        try:
            await asyncio.wait_for(job.changed.wait(), timeout_s)
        except asyncio.TimeoutError:
            pass
        finally:
            job.watchers -= 1
            job.last_seen = time.monotonic()

    def abandoned(self, job: Job) -> bool:
        """Nobody has asked about the job for `abandon_s` seconds (and nobody is waiting on it)."""
        return job.watchers == 0 and time.monotonic() - job.last_seen > self.abandon_s

    def shutdown(self) -> None:
        with self.lock:
            jobs = list(self.jobs.values())
        for job in jobs:
            if job.state not in FINISHED:
                self.cancel(job)

    # -- inside the job's thread -----------------------------------------------------------------

    def _may_start(self, job: Job) -> bool:
        """A slot is free, the job's client is under its share, and no older job that could start is waiting."""
        if sum(self.running.values()) >= self.max_running:
            return False
        for other in self.waiting:
            if self.running.get(other.client, 0) < self.per_client:
                return other is job
        return False

    def _run(self, job: Job) -> None:
        with self.slots:
            self.waiting.append(job)
            while not job.cancel_requested and not self._may_start(job):
                self.slots.wait(POLL_S * 4)
                if self.abandoned(job):
                    job.cancel_requested, job.cancel_reason = True, self._abandon_text()
            self.waiting.remove(job)
            if not job.cancel_requested:
                self.running[job.client] = self.running.get(job.client, 0) + 1
            self.slots.notify_all()
        if job.cancel_requested:
            return self._finish(job, "cancelled", error=job.cancel_reason)
        try:
            self._start_and_watch(job)
        finally:
            with self.slots:
                self.running[job.client] -= 1
                self.slots.notify_all()

    def _abandon_text(self) -> str:
        return f"nobody asked about this job for {self.abandon_s:g} s (the page was closed?): cancelled"

    def _start_and_watch(self, job: Job) -> None:
        receive, send = self.ctx.Pipe(duplex=False)
        job.process = self.ctx.Process(target=run_job, args=(job.kind, job.payload, send), daemon=True)
        job.started = time.monotonic()
        job.state = "running"
        job.process.start()
        send.close()
        self._changed(job)
        try:
            self._watch(job, receive)
        finally:
            receive.close()
            if job.process.is_alive():
                job.process.kill()
            job.process.join(5)

    def _watch(self, job: Job, receive) -> None:
        kill_at = job.started + job.time_limit_s + self.grace_s
        while True:
            if not job.cancel_requested and self.abandoned(job):
                job.cancel_requested, job.cancel_reason = True, self._abandon_text()
            if job.cancel_requested:
                return self._finish(job, "cancelled", error=job.cancel_reason)
            if time.monotonic() > kill_at:
                job.process.kill()
                return self._finish(job, "time_limit", error=f"no answer within the time limit of "
                                                             f"{job.time_limit_s:g} s (and {self.grace_s:g} s of grace)")
            try:
                if not receive.poll(POLL_S):
                    continue
                kind, data = receive.recv()
            except (EOFError, OSError):
                if job.cancel_requested:
                    return self._finish(job, "cancelled", error=job.cancel_reason)
                return self._finish(job, "error", error="the worker process ended without an answer "
                                                        f"(exit code {job.process.exitcode})")
            if kind == "progress":
                job.progress = data
                self._changed(job)
            elif kind == "done":
                return self._finish(job, "done", result=data)
            elif kind == "bad_input":
                return self._finish(job, "bad_input", problems=data)
            else:
                return self._finish(job, "error", error=data)

    def _finish(self, job: Job, state: str, result: Any = None, problems: list | None = None,
                error: str | None = None) -> None:
        with self.lock:            # the job's thread and a cancel request may finish it at once: one wins
            if job.state in FINISHED:
                return
            job.result, job.problems, job.error = result, problems or [], error
            job.finished = time.monotonic()
            job.state = state
        self._changed(job)

    def _changed(self, job: Job) -> None:
        job.version += 1
        if self.loop is not None and job.changed is not None:
            try:
                self.loop.call_soon_threadsafe(self._wake, job)
            except RuntimeError:        # the server is shutting down: its loop is closed, nobody waits
                pass

    @staticmethod
    def _wake(job: Job) -> None:
        event, job.changed = job.changed, asyncio.Event()
        event.set()

    def _forget_old(self) -> None:
        now = time.monotonic()
        with self.lock:
            for job_id in [j.id for j in self.jobs.values() if j.finished and now - j.finished > KEEP_S]:
                del self.jobs[job_id]
