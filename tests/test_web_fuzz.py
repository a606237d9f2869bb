"""Fuzz of `dtplan serve`'s endpoints (hypothesis, issue 23): random methods, paths, headers and
bodies (JSON and not, broken JSON, huge declared lengths, valid instances with one field made
wrong, jobs of every kind with random fields) sent through Starlette's TestClient. Never a 500,
never a traceback in an answer; a refusal is a 4xx that says what is wrong, and bad input is a
400 whose problems each name their field (the schema's path, or `<request>` for the body as a
whole). Modest cost: a few hundred requests, under a minute."""

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("httpx2", reason="starlette's TestClient needs httpx (pip install -e '.[test]')")
from starlette.testclient import TestClient  # noqa: E402

from planner.web.app import MAX_BODY_BYTES, create_app  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
BASELINE = json.loads((REPO / "instances" / "baseline-1e25.json").read_text())
PLAN = json.loads((REPO / "instances" / "baseline-1e25.plan.json").read_text())
POOLS = json.loads((REPO / "instances" / "mixed-six-sites.json").read_text())
TOKEN = "fuzz-token"
HERE = "http://127.0.0.1:8000"
FUZZ = settings(max_examples=120, deadline=5000, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


@pytest.fixture(scope="module")
def client():
    # jobs the fuzz starts are short-lived: a 2 s limit, and cancelled once nobody asks for 2 s
    app = create_app(REPO / "instances", max_running=2, grace_s=0.2, token=TOKEN, port=8000,
                     job_time_limit_s=2.0, abandon_s=2.0)
    with TestClient(app, base_url=HERE, raise_server_exceptions=False) as c:
        yield c
        for job in list(c.app.state.jobs.jobs.values()):
            c.app.state.jobs.cancel(job)


def _paths(data, prefix=""):
    """Every dotted path of a JSON object, leaves and inner nodes."""
    out = [prefix[:-1]] if prefix else []
    if isinstance(data, dict):
        for key, value in data.items():
            out += _paths(value, f"{prefix}{key}.")
    return out


def _set(data, path: str, value):
    data = json.loads(json.dumps(data))
    node = data
    keys = path.split(".")
    for key in keys[:-1]:
        node = node[key]
    node[keys[-1]] = value
    return data


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-10**20, 10**20) | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4),
    max_leaves=12)


@st.composite
def wrong_instances(draw):
    """A shipped instance (uniform, or pools on sites) with one field given a random JSON value."""
    base = draw(st.sampled_from([BASELINE, POOLS]))
    path = draw(st.sampled_from(_paths(base)))
    return _set(base, path, draw(json_values))


bodies = st.one_of(
    json_values.map(lambda v: json.dumps(v).encode()),
    st.binary(max_size=200),
    st.just(b'{"instance": {"name": '),                                             # broken JSON
    st.just(b"[" * 100_000),                                                        # nested too deeply
    st.builds(lambda inst, plan: json.dumps({"instance": inst, "plan": plan}).encode(),
              wrong_instances(), st.one_of(st.none(), st.just(PLAN), json_values)),
    st.builds(lambda kind, inst, extra: json.dumps({"kind": kind, "instance": inst, **extra}).encode(),
              st.sampled_from(["solve", "feasible", "compare", "curve", "nope", None]), wrong_instances(),
              st.dictionaries(st.sampled_from(["objective", "solver", "time_limit_s", "curve", "plan"]), json_values,
                              max_size=3)),
)

paths = st.one_of(
    st.sampled_from(["/", "/api/meta", "/api/evaluate", "/api/report", "/api/jobs", "/api/health", "/api",
                     "/api/examples/baseline-1e25", "/static/app.js"]),
    st.builds(lambda head, tail: head + tail,
              st.sampled_from(["/api/jobs/", "/api/examples/", "/static/", "/", "/api/"]),
              st.text(st.characters(min_codepoint=33, max_codepoint=126, exclude_characters="#?"), max_size=20)),
)

headers = st.fixed_dictionaries({}, optional={
    "Content-Type": st.sampled_from(["application/json", "application/json; charset=utf-8", "text/plain",
                                     "application/x-www-form-urlencoded", "multipart/form-data", "", "\x7f"]),
    "Origin": st.sampled_from([HERE, "http://evil.example", "null", "http://127.0.0.1:8001"]),
    "Host": st.sampled_from(["127.0.0.1:8000", "localhost:8000", "evil.example", "127.0.0.1:1", "[::1]:8000"]),
    "X-Dtplan-Token": st.sampled_from([TOKEN, TOKEN, "wrong", ""]),
    "Content-Length": st.sampled_from([str(MAX_BODY_BYTES + 1), "99999999999999999999", "-5", "abc"]),
})


def _check(r) -> None:
    text = r.text
    assert r.status_code < 500, (r.status_code, text[:500])
    assert "Traceback" not in text and 'File "' not in text, text[:500]
    if r.status_code >= 400 and r.request.method != "HEAD" and text.startswith("{"):
        data = r.json()
        if "problems" in data:
            assert r.status_code in (400, 404) and data["problems"], data
            for p in data["problems"]:
                assert p["path"] and p["text"].startswith(p["path"]), p
        else:
            assert data.get("error"), data


@FUZZ
@given(method=st.sampled_from(["GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "HEAD"]), path=paths,
       head=headers, body=bodies)
def test_any_request_is_answered_without_a_500(client, method, path, head, body):
    head = {"X-Dtplan-Token": TOKEN, **head}
    if "Content-Length" in head:          # a declared length the body does not have: as a client may lie
        body = body[:64]
    try:
        r = client.request(method, path, content=body if method not in ("GET", "HEAD") else None, headers=head)
    except Exception as err:  # noqa: BLE001 - the transport refusing what a client may send is not the server's fault
        if "Content-Length" in head or "\x7f" in str(head):
            return
        raise AssertionError(f"request failed: {err!r}") from err
    _check(r)


@FUZZ
@given(instance=wrong_instances(), plan=st.one_of(st.none(), st.just(PLAN), json_values))
def test_a_wrong_instance_is_named_field_by_field(client, instance, plan):
    """The page's own request with a wrong field: 200 with the problems naming their fields, or
    an evaluation when the value happens to be acceptable."""
    head = {"X-Dtplan-Token": TOKEN, "Content-Type": "application/json"}
    # json.dumps writes inf and nan as Infinity and NaN, which Python's parser (the server's) reads back
    r = client.post("/api/evaluate", content=json.dumps({"instance": instance, "plan": plan}), headers=head)
    _check(r)
    if r.status_code == 200:
        answer = r.json()
        problems = answer["instance_problems"] + answer["plan_problems"]
        assert problems or answer["evaluation"] is not None, answer
        for p in problems:
            assert p["field"] and p["text"].startswith(p["path"]), p
    r = client.post("/api/jobs", content=json.dumps({"kind": "solve", "instance": instance, "time_limit_s": 1}),
                    headers=head)
    _check(r)
    assert r.status_code in (202, 400), r.text[:300]
    if r.status_code == 202:
        client.delete(f"/api/jobs/{r.json()['id']}", headers=head)
