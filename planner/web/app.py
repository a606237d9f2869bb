"""The web application of `dtplan serve` (Starlette, served by uvicorn).

Routes:

    GET    /                    the page (static/index.html; its script and style under /static)
    GET    /api/meta            the fields, presets, network profiles, curves, example instances and
                                the instance the page opens on (`dtplan serve INSTANCE [PLAN]`)
    GET    /api/examples/NAME   an example instance (and its plan, when it has one)
    POST   /api/evaluate        {instance, plan} -> problems, resolved values, the plan's evaluation
    POST   /api/report          {instance, plan} -> the evaluation as `dtplan evaluate --report` (HTML)
    POST   /api/jobs            {kind, instance, plan?, objective?, solver?, time_limit_s?, curve?} -> the job
    GET    /api/jobs/ID?after=V&wait=S   the job once its version passes V (or after S seconds)
    DELETE /api/jobs/ID         cancel the job
    GET    /api/health          {"ok": true}

Bad input answers 400 with {"problems": [{field, path, message, text}]}: the schema's problems,
`text` being the line the command line prints for it. Evaluation runs in a thread of the server
(milliseconds); everything else runs as a job (planner/web/jobs.py).

Every request first passes `planner.web.guard.Guard` (Host, body size, Origin and content type,
token; docs/web.md "Protections"); a refusal is {"error": ...} with 403, 413 or 415.
"""

from __future__ import annotations

import json
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import FileResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from planner.cli.common import json_default
from planner.schema.errors import InputError, Problem
from planner.web import answers
from planner.web.guard import Guard, host_name, new_token
from planner.web.jobs import ABANDON_S, GRACE_S, JOB_TIME_LIMIT_S, JobManager

STATIC_DIR = Path(__file__).parent / "static"
# A request body's cap. The schema's largest site graph (MAX_SITE_LINKS = 10^5 links, among 450
# sites, planner/schema/limits.py), every field given, is 8.8 MB of compact JSON (14.2 MB indented;
# measured, docs/web.md "Limits"): it fits; anything over the cap is refused (413) unread.
MAX_BODY_BYTES = 16 * 2**20
MAX_WAIT_S = 25.0


def json_response(data: Any, status: int = 200) -> Response:
    """JSON that strict parsers accept: non-finite numbers as null, numpy values as Python's."""
    body = json.dumps(json_default(data), allow_nan=False, separators=(",", ":"))
    return Response(body, status_code=status, media_type="application/json")


def bad_input(problems: list[Problem]) -> Response:
    return json_response({"problems": [answers.problem_view(p) for p in problems]}, 400)


async def _body(request: Request) -> dict:
    """The request's JSON object; InputError naming `<request>` when it is not one. (A body over
    MAX_BODY_BYTES never gets here: the guard and Starlette's `max_body_size` refuse it, 413.)"""
    raw = await request.body()
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError) as err:
        raise InputError([Problem("<request>", f"not valid JSON: {err}")]) from None
    if not isinstance(data, dict):
        raise InputError([Problem("<request>", "must be a JSON object")])
    return data


def examples_in(folder: Path | None) -> dict[str, Path]:
    """Example instances: every instance file of `folder` and its subfolders one level down,
    by name (relative path without .json); stored answers, plans and indexes left out."""
    if folder is None or not folder.is_dir():
        return {}
    found = {}
    for path in sorted(list(folder.glob("*.json")) + list(folder.glob("*/*.json"))):
        if path.name.endswith((".expected.json", ".plan.json")) or path.name == "index.json":
            continue
        found[path.relative_to(folder).with_suffix("").as_posix()] = path
    return found


def default_examples_dir() -> Path | None:
    """The shipped instances: `planner/instances` in an installed wheel (pyproject.toml maps the
    package `planner.instances` to the top-level instances/ folder), else the checkout's instances/."""
    package = Path(__file__).resolve().parents[1]
    for folder in (package / "instances", package.parent / "instances"):
        if folder.is_dir():
            return folder
    return None


def create_app(examples_dir: Path | None = None, max_running: int | None = None,
               grace_s: float = GRACE_S, start: dict | None = None, *, token: str | None = None,
               port: int | None = None, bound: str = "127.0.0.1", allowed_hosts: tuple[str, ...] = (),
               job_time_limit_s: float = JOB_TIME_LIMIT_S, abandon_s: float = ABANDON_S,
               per_client: int | None = None) -> Starlette:
    """The application; `examples_dir`: instances offered on the page (default: the shipped ones);
    `max_running` jobs at once (default: one per core, two at least), `per_client` of one client
    (default: one fewer); `grace_s` after a job's time limit; `job_time_limit_s`: every job's
    limit; `abandon_s`: a job nobody asks about for this long is cancelled; `start`: {name,
    instance, plan} the page opens on (raw JSON data, checked by the caller). The guard
    (planner/web/guard.py): `token` (None: none needed), the server's `port` (None: any) and
    `bound` address, and more `allowed_hosts` for the Host header."""
    from planner.web.meta import meta
    examples = examples_in(examples_dir if examples_dir is not None else default_examples_dir())
    manager = JobManager(max_running, grace_s, job_time_limit_s, abandon_s, per_client)
    page_meta: dict[str, Any] = {}

    @asynccontextmanager
    async def lifespan(app):
        import asyncio
        manager.start(asyncio.get_running_loop())
        yield
        manager.shutdown()

    async def index(request: Request) -> Response:
        return FileResponse(STATIC_DIR / "index.html", headers={"Cache-Control": "no-cache"})

    async def get_meta(request: Request) -> Response:
        if not page_meta:
            page_meta.update(await run_in_threadpool(meta, sorted(examples)), start=start)
        return json_response(page_meta)

    async def get_example(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in examples:
            return json_response({"problems": [{"field": "example", "path": "example", "text":
                                                f"example: unknown example {name!r}",
                                                "message": f"unknown example {name!r}"}]}, 404)
        path = examples[name]
        plan_path = path.with_name(path.name[:-len(".json")] + ".plan.json")
        return json_response({"name": name, "instance": json.loads(path.read_text()),
                              "plan": json.loads(plan_path.read_text()) if plan_path.exists() else None})

    async def evaluate(request: Request) -> Response:
        try:
            data = await _body(request)
        except InputError as err:
            return bad_input(err.problems)
        return json_response(await run_in_threadpool(answers.evaluate_answer, data.get("instance"), data.get("plan")))

    async def report(request: Request) -> Response:
        try:
            data = await _body(request)
            page = await run_in_threadpool(answers.evaluation_report, data.get("instance"), data.get("plan"))
        except InputError as err:
            return bad_input(err.problems)
        return Response(page, media_type="text/html; charset=utf-8",
                        headers={"Content-Disposition": 'attachment; filename="dtplan-report.html"'})

    async def submit(request: Request) -> Response:
        try:
            data = await _body(request)
            kind = data.get("kind")
            await run_in_threadpool(answers.check_job, kind, data)
        except InputError as err:
            return bad_input(err.problems)
        payload = {k: data.get(k) for k in ("instance", "plan", "objective", "solver", "curve")}
        payload["time_limit_s"] = manager.time_limit(answers.time_limit(data))    # the solver's limit too
        job = manager.submit(kind, payload, payload["time_limit_s"], request.state.client_key)
        return json_response(job.to_dict(), 202)

    def _job(request: Request):
        return manager.get(request.path_params["job_id"])

    async def get_job(request: Request) -> Response:
        job = _job(request)
        if job is None:
            return json_response({"error": "no such job (finished jobs are kept ten minutes)"}, 404)
        try:
            after = int(request.query_params.get("after", -1))
            wait_s = min(MAX_WAIT_S, max(0.0, float(request.query_params.get("wait", 0))))
        except ValueError:
            return bad_input([Problem("<request>", "after and wait must be numbers")])
        if wait_s:
            await manager.wait(job, after, wait_s)
        return json_response(job.to_dict())

    async def cancel_job(request: Request) -> Response:
        job = _job(request)
        if job is None:
            return json_response({"error": "no such job"}, 404)
        manager.cancel(job)
        return json_response(job.to_dict())

    async def health(request: Request) -> Response:
        return json_response({"ok": True})

    routes = [
        Route("/", index),
        Route("/api/meta", get_meta),
        Route("/api/examples/{name:path}", get_example),
        Route("/api/evaluate", evaluate, methods=["POST"]),
        Route("/api/report", report, methods=["POST"]),
        Route("/api/jobs", submit, methods=["POST"]),
        Route("/api/jobs/{job_id}", get_job, methods=["GET"]),
        Route("/api/jobs/{job_id}", cancel_job, methods=["DELETE"]),
        Route("/api/health", health),
        Mount("/static", StaticFiles(directory=STATIC_DIR), name="static"),
    ]
    async def internal_error(request: Request, exc: Exception) -> Response:
        return json_response({"error": f"internal error ({type(exc).__name__}: {str(exc)[:300]}); this is a bug "
                                       f"in dtplan: please report it with the instance"}, 500)

    async def too_large(request: Request, exc: Exception) -> Response:     # a body over the cap, met while read
        return json_response({"error": f"<request>: body larger than the cap of {MAX_BODY_BYTES:,} bytes"}, 413)

    async def http_error(request: Request, exc: Exception) -> Response:    # 404, 405: JSON like every answer
        status = getattr(exc, "status_code", 400)
        return json_response({"error": f"{request.method} {request.url.path}: {getattr(exc, 'detail', '')}"}, status)

    app = Starlette(routes=routes, lifespan=lifespan, max_body_size=MAX_BODY_BYTES,
                    exception_handlers={Exception: internal_error, 413: too_large, 404: http_error, 405: http_error},
                    middleware=[Middleware(Guard, token=token, port=port, bound=bound, allowed_hosts=allowed_hosts)])
    app.state.jobs = manager
    return app


def serve(host: str = "127.0.0.1", port: int = 8000, examples_dir: Path | None = None,
          start: dict | None = None, announce=print, token: bool = True, allowed_hosts: tuple[str, ...] = (),
          job_time_limit_s: float = JOB_TIME_LIMIT_S) -> None:
    """Run the app with uvicorn until interrupted; `port` 0 picks a free port. The address (with
    a new random token unless `token` is False) is announced (one line) once uvicorn has started:
    its Ctrl-C handler is in place by then (a Ctrl-C right after an earlier announcement landed in
    uvicorn's own start-up imports and printed a traceback), and a client may connect."""
    import socket

    import uvicorn
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(2048)                # connections made as soon as the address is announced wait for uvicorn
    bound = sock.getsockname()[1]
    secret = new_token() if token else None
    app = create_app(examples_dir, start=start, token=secret, port=bound, bound=host, allowed_hosts=allowed_hosts,
                     job_time_limit_s=job_time_limit_s)
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    query = f"?token={secret}" if secret else ""
    line = f"dtplan: serving on http://{host_name(host)}:{bound}/{query} (Ctrl-C to stop)"

    class AnnouncingServer(uvicorn.Server):
        async def startup(self, sockets=None):
            await super().startup(sockets=sockets)
            if self.started:
                announce(line)

    AnnouncingServer(config).run(sockets=[sock])


def spawn_server(*args: str, cwd: str | Path | None = None):
    """`dtplan serve --port 0 ARGS` in a new process (this Python): (the process, its address).

    For scripts and tests (benchmarks, screenshots, the browser test). The address is the
    server's root (`http://127.0.0.1:PORT/`); the token it printed is `process.token` (None with
    `--no-token`): open `address + "?token=" + token` in a browser, or send the header
    `X-Dtplan-Token`. The server's standard error is read on a thread into `process.log` (a list
    of lines), so that it never blocks; the caller ends the process (`terminate()`)."""
    import re
    import subprocess
    import sys
    import threading
    proc = subprocess.Popen([sys.executable, "-m", "planner.cli", "serve", "--port", "0", *args], cwd=cwd,
                            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    proc.log = [proc.stderr.readline()]        # warnings, if any, come before the address
    while not re.search(r"serving on http://", proc.log[-1]) and proc.log[-1] and len(proc.log) < 100:
        proc.log.append(proc.stderr.readline())
    match = re.search(r"(http://[\w.\[\]:]+/)(?:\?token=([\w-]+))?", proc.log[-1])
    if not match:
        proc.kill()
        raise RuntimeError(f"dtplan serve did not start (exit {proc.wait()}): {''.join(proc.log)}")
    proc.token = match.group(2)
    threading.Thread(target=lambda: proc.log.extend(proc.stderr), daemon=True).start()
    return proc, match.group(1)
