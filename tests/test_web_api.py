"""`dtplan serve`'s application without a browser (Starlette's TestClient): every input of the
schema has a control, answers equal the Python API's and the stored answers, bad input carries
the command line's messages, and jobs report progress, can be cancelled and are killed after
their time limit while the server keeps answering."""

import html
import json
import shlex
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

import planner
from planner.cli import main
from planner.cost.duration import SECONDS_PER_DAY
from planner.web.fields import INSTANCE_FIELDS, PLAN_FIELDS, page_fields, schema_fields

pytest.importorskip("httpx2", reason="starlette's TestClient needs httpx (pip install -e '.[test]')")
from starlette.testclient import TestClient  # noqa: E402

from planner.web.app import create_app  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
BASELINE = REPO / "instances" / "baseline-1e25.json"
BASELINE_PLAN = REPO / "instances" / "baseline-1e25.plan.json"
SHIPPED = REPO / "instances" / "solve-1e24-64xh100.json"


def _json(path: Path) -> dict:
    return json.loads(path.read_text())


TOKEN = "test-token"


def local_client(app) -> TestClient:
    """A client as the page is one: on the server's own address (the guard refuses any other Host),
    with the token (planner/web/guard.py)."""
    return TestClient(app, base_url="http://127.0.0.1:8000", headers={"X-Dtplan-Token": TOKEN})


@pytest.fixture(scope="module")
def client():
    with local_client(create_app(REPO / "instances", max_running=2, grace_s=0.3, token=TOKEN, port=8000)) as c:
        yield c


def _wait(client, job: dict, timeout_s: float = 60) -> dict:
    end = time.monotonic() + timeout_s
    while job["state"] in ("queued", "running") and time.monotonic() < end:
        job = client.get(f"/api/jobs/{job['id']}", params={"after": job["version"], "wait": 2}).json()
    return job


def test_every_schema_field_has_a_control():
    shown = {f["path"] for f in page_fields()}
    for path, _, free in schema_fields():
        children = [p for p in shown if p.startswith(path + ".")]
        assert path in shown or children, f"{path} has no control on the page"
    # the fields listed by hand cover today's schema: nothing falls back to a guessed control
    assert {f["path"] for f in page_fields()} == {f.path for f in INSTANCE_FIELDS}
    tables = {f["path"]: [c["name"] for c in f["columns"]] for f in page_fields() if f["kind"] == "table"}
    assert tables == {"fleet.pools": ["name", "hardware", "count", "price_usd_per_accelerator", "site"],
                      "network.sites": ["name", "city", "lat", "lon", "lan_mbps", "lan_rtt_ms"],
                      "network.links": ["a", "b", "up_mbps", "down_mbps", "rtt_ms"]}
    from planner.schema.plan import Plan
    assert {f.path for f, _ in PLAN_FIELDS} == set(Plan.model_fields)


def test_a_schema_field_the_page_does_not_list_gets_a_control_of_its_kind():
    from planner.web.fields import _guess
    assert _guess("fleet.pools", {"type": "array", "items": {"$ref": "#/$defs/Pool"}}).kind == "table"
    assert _guess("fleet.spare", {"anyOf": [{"type": "integer"}, {"type": "null"}]}).kind == "integer"
    assert _guess("limits.note", {"type": "string"}).section == "limits"


def test_meta_lists_presets_and_examples(client):
    meta = client.get("/api/meta").json()
    from planner.schema.catalog import hardware_ids, llm_ids
    assert [h["id"] for h in meta["presets"]["hardware"]] == hardware_ids()
    assert [m["id"] for m in meta["presets"]["models"]] == llm_ids()
    assert "baseline-1e25" in meta["examples"] and "miri/baseline-1e25" in meta["examples"]
    assert not any(name.endswith((".expected", ".plan")) for name in meta["examples"])
    profiles = meta["network_profiles"]["profiles"]
    # the deployment profiles are the ones the MIRI scenarios use (instances/miri/profile-*.json)
    for path in sorted(p for p in (REPO / "instances" / "miri").glob("profile-*.json") if ".expected" not in p.name):
        wan = _json(path)["network"]["wan"]
        assert any((p["up_mbps"], p["down_mbps"], p["rtt_ms"]) == (wan["up_mbps"], wan["down_mbps"], wan["rtt_ms"])
                   for p in profiles), path.name
    example = client.get("/api/examples/baseline-1e25").json()
    assert example["instance"] == _json(BASELINE) and example["plan"] == _json(BASELINE_PLAN)
    assert client.get("/api/examples/../pyproject").status_code == 404


def test_evaluate_matches_the_api_and_the_terminal(client):
    answer = client.post("/api/evaluate", json={"instance": _json(BASELINE), "plan": _json(BASELINE_PLAN)}).json()
    assert answer["instance_problems"] == [] and answer["plan_problems"] == []
    e = planner.evaluate(BASELINE, BASELINE_PLAN)
    view = answer["evaluation"]
    assert view["headline"]["days"] == pytest.approx(e.values["time_to_target_s"] / SECONDS_PER_DAY, rel=1e-12)
    assert round(view["headline"]["days"], 1) == 2013.8           # the README's figure for this plan
    assert view["violations"] == e.violations and view["warnings"] == e.warnings
    assert view["bottleneck"] == "wan-sync"
    # the tables are the terminal's (dtplan evaluate), cell for cell
    r = CliRunner().invoke(main, ["evaluate", str(BASELINE), str(BASELINE_PLAN)])
    for table in view["tables"]:
        assert table["title"] in r.output
        for row in table["rows"]:
            assert row[1] in r.output, (table["title"], row)
    # timeline: streaming flat, compute H t_step, the WAN sync alongside, the step = max of the two
    lanes = {lane["name"]: lane for lane in view["timeline"]["lanes"]}
    assert lanes["compute"]["segments"] == [[0.0, pytest.approx(128 * e.values["t_step_s"], rel=1e-12)]]
    assert lanes["WAN sync"]["segments"] == [[0.0, pytest.approx(e.values["t_sync_s"], rel=1e-12)]]
    assert view["timeline"]["outer_s"] == pytest.approx(max(128 * e.values["t_step_s"], e.values["t_sync_s"]))
    assert [b["value"] for b in view["efficiency"]][-1] == pytest.approx(e.values["eta_target"])
    resolved = answer["resolved"]
    assert resolved["model.params"] == 144e9 and resolved["assumptions.mfu"] == 0.4   # preset and profile


def _cli_lines(*sets: str) -> list[str]:
    """'path: message' per problem, as `dtplan validate --set ...` reports them."""
    args = ["validate", str(BASELINE), "--json"] + [a for s in sets for a in ("--set", s)]
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 2
    return [f"{p['path']}: {p['message']}" for p in json.loads(r.stdout)["error"]["problems"]]


def test_bad_input_carries_the_cli_message(client):
    raw = _json(BASELINE)
    raw["fleet"]["nodes"] = -8
    raw["network"]["wan"]["up_mbps"] = "abc"
    answer = client.post("/api/evaluate", json={"instance": raw, "plan": _json(BASELINE_PLAN)}).json()
    assert answer["evaluation"] is None
    texts = {p["field"]: p["text"] for p in answer["instance_problems"]}
    assert sorted(texts.values()) == sorted(_cli_lines("fleet.nodes=-8", 'network.wan.up_mbps="abc"'))
    assert texts["fleet.nodes"] == "fleet.nodes: must be an integer >= 1, got -8"


def test_plan_problems_name_the_plan_field(client):
    plan = {"mode": "hierarchical", "nodes": 72}
    answer = client.post("/api/evaluate", json={"instance": _json(BASELINE), "plan": plan}).json()
    assert [p["field"] for p in answer["plan_problems"]] == ["plan.group_size"]
    assert answer["plan_problems"][0]["text"] == "group_size: required for mode 'hierarchical'"
    answer = client.post("/api/evaluate", json={"instance": _json(BASELINE), "plan": {"mode": "flat", "nodes": 99}}).json()
    assert answer["plan_problems"][0]["field"] == "plan.nodes"
    assert "must be <= fleet.nodes (72), got 99" in answer["plan_problems"][0]["text"]


def test_request_that_is_not_json(client):
    r = client.post("/api/evaluate", content=b"{nope", headers={"Content-Type": "application/json"})
    assert r.status_code == 400 and r.json()["problems"][0]["path"] == "<request>"


def test_solve_job_gives_the_stored_answer(client):
    expected = _json(REPO / "instances" / "solve-1e24-64xh100.expected.json")
    job = client.post("/api/jobs", json={"kind": "solve", "instance": _json(SHIPPED)})
    assert job.status_code == 202
    job = _wait(client, job.json())
    assert job["state"] == "done", job
    r = job["result"]
    assert r["status"] == "optimal" and r["objective_value"] == pytest.approx(expected["objective_value"], rel=1e-9)
    assert {k: v for k, v in r["plan"].items() if k != "description"} == \
           {k: v for k, v in expected["plan"].items() if v is not None and k != "description"}
    assert r["evaluation"]["headline"]["days"] == pytest.approx(expected["time_to_target_days"], rel=1e-9)


def test_solve_job_with_the_mip_backend_agrees(client):
    pytest.importorskip("highspy")
    expected = _json(REPO / "instances" / "solve-1e24-64xh100.expected.json")
    job = client.post("/api/jobs", json={"kind": "solve", "instance": _json(SHIPPED), "solver": "highs"})
    job = _wait(client, job.json(), 120)
    assert job["state"] == "done", job
    assert job["result"]["solver"] == "highs"
    assert job["result"]["objective_value"] == pytest.approx(expected["objective_value"], rel=1e-9)


def test_job_with_bad_input_is_refused_before_it_starts(client):
    raw = _json(SHIPPED)
    raw["fleet"]["nodes"] = 0
    r = client.post("/api/jobs", json={"kind": "solve", "instance": raw, "objective": "fastest", "time_limit_s": -1,
                                       "solver": "gurobi"})
    assert r.status_code == 400
    paths = sorted(p["path"] for p in r.json()["problems"])
    assert paths == ["fleet.nodes", "objective", "solver", "time_limit_s"]
    r = client.post("/api/jobs", json={"kind": "curve", "instance": _json(SHIPPED),
                                       "curve": {"input": "latency", "low": 5, "high": 1, "points": 500}})
    assert sorted(p["path"] for p in r.json()["problems"]) == ["curve.high", "curve.input", "curve.points"]


def test_feasible_job_gives_the_stored_answer(client):
    name = REPO / "instances" / "miri" / "1e27-flat-a100"
    expected = _json(name.with_suffix(".expected.json"))
    job = _wait(client, client.post("/api/jobs", json={"kind": "feasible", "instance": _json(name.with_suffix(".json"))}).json())
    assert job["state"] == "done", job
    f = job["result"]
    assert f["feasible"] is False and f["binding"] == expected["binding"]
    assert [(x["limit"], x["fields"]) for x in f["fixes"]] == [(x["limit"], x["fields"]) for x in expected["fixes"]]
    for got, want in zip(f["fixes"], expected["fixes"]):
        assert got["days"] == pytest.approx(want["time_to_target_days"], rel=1e-9)


def test_compare_job_equals_the_api(client):
    path = REPO / "instances" / "compare-1e27.json"
    job = _wait(client, client.post("/api/jobs", json={"kind": "compare", "instance": _json(path)}).json())
    assert job["state"] == "done", job
    table = planner.compare(path)
    assert [(r["hardware"], r["rank"], r["status"]) for r in job["result"]["rows"]] == \
           [(r.hardware, r.rank, r.result.status) for r in table]
    assert [r["days"] for r in job["result"]["rows"]] == [pytest.approx(r.days, rel=1e-12) if r.days else None
                                                           for r in table]
    assert job["progress"]["done"] == job["progress"]["total"] == len(table)


def test_curve_points_equal_independent_solves(client):
    raw, plan = _json(SHIPPED), {"mode": "flat", "nodes": 64, "inner_steps": 100, "compression": 16}
    job = client.post("/api/jobs", json={"kind": "curve", "instance": raw, "plan": plan,
                                         "curve": {"input": "bandwidth", "low": 10, "high": 1000, "points": 3}})
    job = _wait(client, job.json())
    assert job["state"] == "done", job
    c = job["result"]
    assert c["xs"] == [10.0, 100.0, 1000.0]
    for x, fastest, mine in zip(c["xs"], c["fastest"], c["yours"]):
        link = {"network.wan.up_mbps": x, "network.wan.down_mbps": x}
        lifted = planner.solve(raw, objective="min_time", overrides={**link, "limits.max_days": 1e6})
        assert fastest["days"] == pytest.approx(lifted.objective_value / SECONDS_PER_DAY, rel=1e-9)
        e = planner.evaluate(raw, plan, overrides=link)
        assert mine["days"] == pytest.approx(e.values["time_to_target_s"] / SECONDS_PER_DAY, rel=1e-12)
    assert c["fastest"][0]["days"] > c["fastest"][2]["days"]       # more bandwidth, sooner


def _long_curve(client, **extra) -> dict:
    """A job of many solves (the nodes curve, 60 points), seconds long."""
    body = {"kind": "curve", "instance": _json(BASELINE), "plan": _json(BASELINE_PLAN),
            "curve": {"input": "nodes", "low": 8, "high": 4000, "points": 60}, **extra}
    r = client.post("/api/jobs", json=body)
    assert r.status_code == 202, r.text
    return r.json()


def test_a_running_job_can_be_cancelled_and_the_server_keeps_answering(client):
    job = _long_curve(client)
    while job["state"] != "running" or not (job["progress"] or {}).get("done"):
        job = client.get(f"/api/jobs/{job['id']}", params={"after": job["version"], "wait": 5}).json()
        assert job["state"] in ("queued", "running"), job
    start = time.perf_counter()
    assert client.get("/api/health").json() == {"ok": True}
    answer = client.post("/api/evaluate", json={"instance": _json(BASELINE), "plan": _json(BASELINE_PLAN)})
    assert answer.status_code == 200 and time.perf_counter() - start < 5
    client.delete(f"/api/jobs/{job['id']}")
    job = _wait(client, job, 10)
    assert job["state"] == "cancelled"
    process = client.app.state.jobs.get(job["id"]).process
    process.join(5)
    assert not process.is_alive()


def test_a_job_past_its_time_limit_is_stopped(client):
    job = _wait(client, _long_curve(client, time_limit_s=0.2), 30)
    assert job["state"] == "time_limit" and "time limit of 0.2 s" in job["error"]


def test_without_examples_the_page_starts_from_a_valid_instance(tmp_path):
    with local_client(create_app(tmp_path)) as c:
        meta = c.get("/api/meta").json()
        assert meta["examples"] == []
        start = {"instance": meta["default_instance"], "plan": {**meta["default_plan"], "nodes": 72}}
        answer = c.post("/api/evaluate", json=start).json()
    assert answer["instance_problems"] == [] and answer["plan_problems"] == []
    e = planner.evaluate(BASELINE, {**meta["default_plan"], "nodes": 72})     # the same question as the file
    assert answer["evaluation"]["headline"]["days"] == pytest.approx(e.values["time_to_target_s"] / SECONDS_PER_DAY)


def test_serve_on_a_port_in_use_is_bad_input():
    import socket
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        r = CliRunner().invoke(main, ["serve", "--port", str(port)])
    assert r.exit_code == 2 and f"--port: cannot listen on 127.0.0.1:{port}" in r.output


def test_the_page_can_open_on_an_instance_and_plan_given_to_serve(tmp_path):
    start = {"name": BASELINE.name, "instance": _json(BASELINE), "plan": _json(BASELINE_PLAN)}
    with local_client(create_app(tmp_path, start=start)) as c:
        assert c.get("/api/meta").json()["start"] == start
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({**_json(BASELINE), "fleet": {"hardware": "16xGH200", "nodes": -8}}))
    r = CliRunner().invoke(main, ["serve", str(bad), "--port", "0"])     # refused before serving
    assert r.exit_code == 2 and "fleet.nodes: must be an integer >= 1, got -8" in r.output
    r = CliRunner().invoke(main, ["serve", str(BASELINE), str(BASELINE_PLAN), "--set", "fleet.nodes=10", "--port", "0"])
    assert r.exit_code == 2 and "plan.nodes: must be <= fleet.nodes (10), got 72" in r.output


def test_report_is_the_cli_report(client, tmp_path):
    r = client.post("/api/report", json={"instance": _json(BASELINE), "plan": _json(BASELINE_PLAN)})
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    page = r.text
    cli = tmp_path / "cli.html"
    args = ["evaluate", str(BASELINE), str(BASELINE_PLAN), "--report", str(cli)]
    CliRunner().invoke(main, args)
    # the same page but for the provenance's command line
    cli_page = cli.read_text().replace(html.escape(shlex.join(["dtplan", *args])), "COMMAND")
    assert page.replace(html.escape("dtplan serve (the page's instance and plan)"), "COMMAND") == cli_page
    assert "BREAKS A LIMIT" in page
    bad = client.post("/api/report", json={"instance": _json(BASELINE), "plan": {"mode": "flat", "nodes": 99}})
    assert bad.status_code == 400 and bad.json()["problems"][0]["path"] == "plan.nodes"


def test_the_page_is_package_data():
    """pyproject.toml ships planner/web as "static/*" and "*.json": every file the page needs is
    matched (none in a subfolder), so that an installed wheel serves the same page."""
    import tomllib
    web = REPO / "planner" / "web"
    patterns = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["planner.web"]
    files = [p.relative_to(web) for p in web.rglob("*") if p.is_file() and p.suffix not in (".py", ".pyc")]
    assert {"static/index.html", "static/app.js", "static/util.js", "static/forms.js", "static/results.js",
            "static/svg.js", "static/style.css", "network_profiles.json"} <= \
           {f.as_posix() for f in files}
    for f in files:
        assert any(f.match(pattern) for pattern in patterns), f"planner/web/{f} is not in the wheel"


def test_ctrl_c_stops_the_server_and_its_jobs_cleanly():
    import signal
    import urllib.request

    from planner.web.app import spawn_server
    proc, url = spawn_server(cwd=REPO)
    try:
        body = {"kind": "curve", "instance": _json(BASELINE), "curve": {"input": "nodes", "low": 8, "high": 4000,
                                                                         "points": 60}}
        token = {"X-Dtplan-Token": proc.token}
        request = urllib.request.Request(url + "api/jobs", json.dumps(body).encode(),
                                         {"Content-Type": "application/json", **token})
        job = json.loads(urllib.request.urlopen(request, timeout=60).read())
        while job["state"] == "queued":
            poll = urllib.request.Request(f"{url}api/jobs/{job['id']}?after={job['version']}&wait=5", headers=token)
            job = json.loads(urllib.request.urlopen(poll, timeout=60).read())
        assert job["state"] == "running"
        proc.send_signal(signal.SIGINT)
        assert proc.wait(30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    time.sleep(0.2)
    log = "".join(proc.log)
    assert "Traceback" not in log and "dtplan: stopped" in log


def test_a_job_whose_server_closed_the_pipe_ends_quietly(monkeypatch):
    """The server stopped (Ctrl-C) or dropped the job while it ran: the worker's next progress
    report meets a closed pipe and the worker ends without a traceback (before: BrokenPipeError
    raised again from its error report, printed on the server's terminal)."""
    import multiprocessing

    from planner.web import answers
    from planner.web.jobs import run_job

    def reporting(payload, progress):
        progress(1, 2, "half way")
        return {"never": "sent"}

    monkeypatch.setitem(answers.JOBS, "reporting", reporting)
    server_end, worker_end = multiprocessing.Pipe()
    server_end.close()
    run_job("reporting", {}, worker_end)      # returns; raises nothing


def test_a_fleet_of_pools_starts_on_the_baseline_on_every_pool(client):
    """Evaluate without a plan (the page's start): the baseline plan on every node of every pool,
    evaluated (before: the page's plan had no pool_nodes, "no evaluation")."""
    path = REPO / "instances" / "mixed-a100-h100.json"
    answer = client.post("/api/evaluate", json={"instance": _json(path), "plan": None}).json()
    expected = {"mode": "flat", "nodes": 20, "precision": "fp16", "inner_steps": 128, "compression": 16,
                "streaming": True, "pool_nodes": {"a100": 12, "h100": 8}}    # the file's pools: 12 and 8 nodes
    assert answer["plan"] == expected and answer["plan_problems"] == []
    days = planner.evaluate(path, expected).values["time_to_target_s"] / SECONDS_PER_DAY
    assert answer["evaluation"]["headline"]["days"] == pytest.approx(days, rel=1e-12)
    # unnamed pools are named as plans name them: by hardware id, '#i' when two share one
    raw = _json(path)
    raw["fleet"]["pools"] = [{"hardware": "48xA100-80GB", "count": 12}, {"hardware": "16xH100-SXM", "count": 8},
                             {"hardware": "16xH100-SXM", "count": 3}]
    answer = client.post("/api/evaluate", json={"instance": raw}).json()
    assert answer["plan"]["pool_nodes"] == {"48xA100-80GB": 12, "16xH100-SXM#1": 8, "16xH100-SXM#2": 3}
    assert answer["plan"]["nodes"] == 23 and answer["evaluation"] is not None
    # every shipped fleet of pools starts evaluated, every node of every pool used
    for path in sorted((REPO / "instances").glob("mixed-*.json")):
        if path.name.endswith(".expected.json"):
            continue
        answer = client.post("/api/evaluate", json={"instance": _json(path)}).json()
        counts = [p["count"] for p in _json(path)["fleet"]["pools"]]
        assert list(answer["plan"]["pool_nodes"].values()) == counts, path.name
        assert answer["plan_problems"] == [] and answer["evaluation"] is not None, path.name
    # a uniform fleet: the baseline on the whole fleet, as before
    answer = client.post("/api/evaluate", json={"instance": _json(BASELINE)}).json()
    assert answer["plan"] == {"mode": "flat", "nodes": 72, "precision": "fp16", "inner_steps": 128, "compression": 16,
                              "streaming": True}
