"""`dtplan serve` is safe from other web sites (issue 23 item 7, planner/web/guard.py): a request
with a foreign Host (DNS rebinding), a cross-site or non-JSON write (CSRF), a request without the
token, a body over the cap, a job past the server's time limit, a client holding every slot and a
job nobody asks about are each refused or stopped; with the right address, origin and token the
page and its API answer."""

import asyncio
import json
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from planner.cli import main

pytest.importorskip("httpx2", reason="starlette's TestClient needs httpx (pip install -e '.[test]')")
from starlette.testclient import TestClient  # noqa: E402

from planner.web.app import MAX_BODY_BYTES, create_app, spawn_server  # noqa: E402
from planner.web.guard import Guard  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
BASELINE = REPO / "instances" / "baseline-1e25.json"
BASELINE_PLAN = REPO / "instances" / "baseline-1e25.plan.json"
TOKEN = "s3cret-Token_0123456789"
HERE = "http://127.0.0.1:8000"


def _json(path: Path) -> dict:
    return json.loads(path.read_text())


def _evaluate_body() -> dict:
    return {"instance": _json(BASELINE), "plan": _json(BASELINE_PLAN)}


@pytest.fixture(scope="module")
def app():
    return create_app(REPO / "instances", max_running=2, grace_s=0.3, token=TOKEN, port=8000)


@pytest.fixture(scope="module")
def client(app):
    with TestClient(app, base_url=HERE, headers={"X-Dtplan-Token": TOKEN}) as c:
        yield c


# -- Host: DNS rebinding ---------------------------------------------------------------------------

@pytest.mark.parametrize("host", ["evil.example", "evil.example:8000", "127.0.0.1.evil.example:8000",
                                  "127.0.0.1:9999", "localhost:80", "[::2]:8000", "", "a b"])
def test_a_foreign_host_is_refused(client, host):
    for method, path in (("GET", "/api/meta"), ("GET", "/"), ("POST", "/api/jobs")):
        r = client.request(method, path, headers={"Host": host, "Content-Type": "application/json"}, content=b"{}")
        assert r.status_code == 403, (host, path)
        assert r.json()["error"].startswith("Host:")


@pytest.mark.parametrize("host", ["127.0.0.1:8000", "localhost:8000", "LOCALHOST:8000", "[::1]:8000"])
def test_the_local_addresses_are_served(client, host):
    assert client.get("/api/health", headers={"Host": host}).json() == {"ok": True}


def test_a_server_on_every_interface_accepts_ip_addresses_and_named_hosts_only():
    guard = Guard(None, TOKEN, 8000, bound="0.0.0.0", allowed_hosts=("box.lan",))
    scope = {"method": "GET", "path": "/api/health", "query_string": b"", "scheme": "http"}
    ok = {"x-dtplan-token": TOKEN}
    assert guard.refusal(scope, {**ok, "host": "192.168.1.20:8000"}) is None
    assert guard.refusal(scope, {**ok, "host": "[fe80::1]:8000"}) is None
    assert guard.refusal(scope, {**ok, "host": "box.lan:8000"}) is None
    assert guard.refusal(scope, {**ok, "host": "evil.example:8000"})[0] == 403
    bound = Guard(None, TOKEN, 8000, bound="127.0.0.1")          # bound to loopback: no other address
    assert bound.refusal(scope, {**ok, "host": "192.168.1.20:8000"})[0] == 403


# -- cross-site writes: Origin and content type ----------------------------------------------------

def test_a_cross_site_text_plain_post_is_refused(client):
    """What a form or `fetch(..., {mode: "no-cors"})` of another site sends: before the guard, 202
    and a job started."""
    body = json.dumps({"kind": "solve", "instance": _json(BASELINE)})
    started = len(client.app.state.jobs.jobs)
    r = client.post("/api/jobs", content=body, headers={"Content-Type": "text/plain", "Origin": "http://evil.example"})
    assert r.status_code == 403 and "Origin" in r.json()["error"]
    r = client.post("/api/jobs", content=body, headers={"Content-Type": "text/plain"})
    assert r.status_code == 415 and "Content-Type: must be application/json" in r.json()["error"]
    for media in ("application/x-www-form-urlencoded", "multipart/form-data; boundary=x", ""):
        r = client.post("/api/evaluate", content=b"{}", headers={"Content-Type": media})
        assert r.status_code == 415, media
    assert len(client.app.state.jobs.jobs) == started


def test_a_foreign_origin_is_refused_and_the_own_origin_served(client):
    r = client.post("/api/evaluate", json=_evaluate_body(), headers={"Origin": "http://evil.example"})
    assert r.status_code == 403
    r = client.post("/api/evaluate", json=_evaluate_body(), headers={"Origin": "null"})
    assert r.status_code == 403
    r = client.post("/api/evaluate", json=_evaluate_body(), headers={"Sec-Fetch-Site": "cross-site"})
    assert r.status_code == 403
    r = client.delete("/api/jobs/1-deadbeef", headers={"Origin": "http://localhost:8000"})   # another origin
    assert r.status_code == 403
    r = client.post("/api/evaluate", json=_evaluate_body(), headers={"Origin": HERE, "Sec-Fetch-Site": "same-origin"})
    assert r.status_code == 200 and r.json()["evaluation"] is not None
    r = client.post("/api/evaluate", json=_evaluate_body(), headers={"Content-Type": "application/json; charset=utf-8"})
    assert r.status_code == 200


# -- the token -------------------------------------------------------------------------------------

def test_every_api_route_and_the_page_need_the_token(app):
    with TestClient(app, base_url=HERE) as bare:
        for method, path in (("GET", "/"), ("GET", "/api/meta"), ("GET", "/api/health"), ("GET", "/api/examples/x"),
                             ("POST", "/api/evaluate"), ("POST", "/api/report"), ("POST", "/api/jobs"),
                             ("GET", "/api/jobs/1"), ("DELETE", "/api/jobs/1"), ("GET", "/api/nowhere")):
            r = bare.request(method, path, json={})
            assert r.status_code == 403 and "token" in r.json()["error"], (method, path)
        wrong = bare.get("/api/meta", headers={"X-Dtplan-Token": TOKEN + "x"})
        assert wrong.status_code == 403
        assert bare.get("/static/app.js").status_code == 200          # the same for everyone


def test_the_token_in_the_address_is_kept_in_a_strict_cookie(app):
    with TestClient(app, base_url=HERE) as browser:
        page = browser.get(f"/?token={TOKEN}")
        assert page.status_code == 200 and "<html" in page.text
        cookies = page.headers.get_list("set-cookie")
        token_cookie = next(c for c in cookies if c.startswith("dtplan-token-"))
        assert f"={TOKEN};" in token_cookie and "HttpOnly" in token_cookie and "SameSite=Strict" in token_cookie
        assert any(c.startswith("dtplan-client-") and "HttpOnly" in c for c in cookies)
        # from now on the cookie alone opens the API, as the page's own requests carry it
        assert browser.get("/api/health").json() == {"ok": True}
        assert browser.post("/api/evaluate", json=_evaluate_body()).status_code == 200
    # another server's token has another cookie name (cookies are per host, not per port)
    assert Guard(None, "other", 8001).token_cookie != Guard(None, TOKEN, 8000).token_cookie


def test_without_a_token_the_api_is_open():
    with TestClient(create_app(REPO / "instances", token=None, port=8000), base_url=HERE) as c:
        assert c.get("/api/health").json() == {"ok": True}
        assert c.get("/api/meta", headers={"Host": "evil.example:8000"}).status_code == 403   # the Host check stays


def test_serve_prints_the_address_with_its_token_and_warns_without_one():
    import urllib.error
    import urllib.request
    for args, tokened in (((), True), (("--no-token",), False)):
        proc, url = spawn_server(*args, cwd=REPO)
        try:
            line = next(x for x in proc.log if "serving on" in x)
            if tokened:
                assert proc.token and len(proc.token) >= 40 and f"{url}?token={proc.token}" in line
                with pytest.raises(urllib.error.HTTPError) as refused:
                    urllib.request.urlopen(url + "api/health", timeout=30)
                assert refused.value.code == 403
                with urllib.request.urlopen(url + f"?token={proc.token}", timeout=30) as page:
                    assert "HttpOnly" in page.headers["Set-Cookie"]
            else:
                assert proc.token is None and "?token" not in line
                assert any("WARNING: --no-token" in x for x in proc.log)
                with urllib.request.urlopen(url + "api/health", timeout=30) as r:
                    assert json.loads(r.read()) == {"ok": True}
        finally:
            proc.terminate()
            proc.wait(20)
    tokens = set()
    for _ in range(2):      # a new token for every start
        proc, _url = spawn_server(cwd=REPO)
        tokens.add(proc.token)
        proc.terminate()
        proc.wait(20)
    assert len(tokens) == 2


# -- the body's size -------------------------------------------------------------------------------

def test_a_declared_body_over_the_cap_is_refused_unread(client):
    r = client.post("/api/evaluate", content=b"{}", headers={"Content-Type": "application/json",
                                                             "Content-Length": str(MAX_BODY_BYTES + 1)})
    assert r.status_code == 413


def test_a_streamed_body_is_refused_at_the_cap_not_read_whole(app):
    """A body without Content-Length (chunked), 64 KB at a time: refused once the cap is passed,
    the rest never asked for (before: a 100 MB body was read whole before the 400)."""
    chunk, chunks = b" " * 65536, 1600            # 100 MiB offered
    asked = 0

    async def receive():
        nonlocal asked
        asked += 1
        return {"type": "http.request", "body": chunk, "more_body": asked < chunks}

    sent = []

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST", "scheme": "http",
             "path": "/api/evaluate", "raw_path": b"/api/evaluate", "query_string": b"", "root_path": "",
             "client": ("127.0.0.1", 5000), "server": ("127.0.0.1", 8000),
             "headers": [(b"host", b"127.0.0.1:8000"), (b"content-type", b"application/json"),
                         (b"x-dtplan-token", TOKEN.encode()), (b"transfer-encoding", b"chunked")]}
    asyncio.run(app(scope, receive, send))
    start = next(m for m in sent if m["type"] == "http.response.start")
    assert start["status"] == 413
    assert asked == MAX_BODY_BYTES // len(chunk) + 1          # read up to the cap, then refused
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    assert f"{MAX_BODY_BYTES:,} bytes" in json.loads(body)["error"]


# -- jobs: the server's time limit, slots per client, abandoned jobs -------------------------------

def _long_curve(extra: dict | None = None) -> dict:
    """A job of many solves (the nodes curve, 60 points): seconds long."""
    return {"kind": "curve", "instance": _json(BASELINE), "plan": _json(BASELINE_PLAN),
            "curve": {"input": "nodes", "low": 8, "high": 4000, "points": 60}, **(extra or {})}


def _poll(c, job: dict, until, timeout_s: float = 60, **headers) -> dict:
    end = time.monotonic() + timeout_s
    while not until(job) and time.monotonic() < end:
        job = c.get(f"/api/jobs/{job['id']}", params={"after": job["version"], "wait": 0.3}, headers=headers).json()
    return job


def test_every_job_has_the_servers_time_limit_and_may_only_lower_it():
    app = create_app(REPO / "instances", max_running=2, grace_s=0.3, token=TOKEN, port=8000, job_time_limit_s=0.5)
    with TestClient(app, base_url=HERE, headers={"X-Dtplan-Token": TOKEN}) as c:
        unlimited = c.post("/api/jobs", json=_long_curve()).json()       # no time_limit_s: before, never stopped
        higher = c.post("/api/jobs", json=_long_curve({"time_limit_s": 1000})).json()
        lower = c.post("/api/jobs", json=_long_curve({"time_limit_s": 0.2})).json()
        assert (unlimited["time_limit_s"], higher["time_limit_s"], lower["time_limit_s"]) == (0.5, 0.5, 0.2)
        for job in (unlimited, higher, lower):
            job = _poll(c, job, lambda j: j["state"] not in ("queued", "running"))
            assert job["state"] == "time_limit", job
            assert f"time limit of {job['time_limit_s']:g} s" in job["error"]
    r = CliRunner().invoke(main, ["serve", "--job-time-limit", "0", "--port", "0"])
    assert r.exit_code == 2 and "--job-time-limit" in r.output


def test_one_client_cannot_hold_every_slot():
    """Two slots: client A's two long jobs take one slot, its second waits; client B's job starts
    in the other slot at once and ends while A's second still waits (before: A held both)."""
    app = create_app(REPO / "instances", max_running=2, grace_s=0.3, token=TOKEN, port=8000)
    a = {"Cookie": f"{Guard(None, TOKEN, 8000).client_cookie}=client-a"}
    with TestClient(app, base_url=HERE, headers={"X-Dtplan-Token": TOKEN}) as c:
        first = c.post("/api/jobs", json=_long_curve(), headers=a).json()
        second = c.post("/api/jobs", json=_long_curve(), headers=a).json()
        first = _poll(c, first, lambda j: j["state"] == "running", **a)
        other = c.post("/api/jobs", json={"kind": "solve", "instance": _json(BASELINE)}).json()   # B: its address
        other = _poll(c, other, lambda j: j["state"] not in ("queued", "running"))
        assert other["state"] == "done"
        second = c.get(f"/api/jobs/{second['id']}", headers=a).json()
        assert second["state"] == "queued"
        manager = c.app.state.jobs
        assert (manager.max_running, manager.per_client) == (2, 1)
        for job in (first, second):
            c.delete(f"/api/jobs/{job['id']}", headers=a)
        assert _poll(c, second, lambda j: j["state"] == "cancelled", 10, **a)["state"] == "cancelled"


def test_a_job_nobody_asks_about_is_cancelled_and_one_that_is_asked_about_runs_on():
    app = create_app(REPO / "instances", max_running=2, grace_s=0.3, token=TOKEN, port=8000, abandon_s=1.0)
    with TestClient(app, base_url=HERE, headers={"X-Dtplan-Token": TOKEN}) as c:
        left = c.post("/api/jobs", json=_long_curve()).json()
        watched = c.post("/api/jobs", json=_long_curve()).json()
        end = time.monotonic() + 3.0
        while time.monotonic() < end:                    # the page asks every half second
            watched = c.get(f"/api/jobs/{watched['id']}", params={"after": watched["version"], "wait": 0.5}).json()
        assert watched["state"] in ("queued", "running"), watched
        left = c.get(f"/api/jobs/{left['id']}").json()
        assert left["state"] == "cancelled" and "nobody asked about this job for 1 s" in left["error"]
        process = c.app.state.jobs.get(left["id"]).process
        if process is not None:
            process.join(5)
            assert not process.is_alive()
        c.delete(f"/api/jobs/{watched['id']}")


def test_the_cli_default_time_limit_is_the_servers():
    from planner.cli.serve import JOB_TIME_LIMIT_S
    from planner.web.jobs import JOB_TIME_LIMIT_S as SERVER
    assert JOB_TIME_LIMIT_S == SERVER == 300.0
