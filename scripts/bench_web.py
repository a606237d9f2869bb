"""Server-side timings of `dtplan serve` (issue 16: evaluate under 100 ms, a solve of a shipped
instance under 1 s).

Starts the real server (`python -m planner.cli serve --port 0`, uvicorn, jobs in forked workers)
and, for every shipped instance (instances/*.json and instances/miri/*.json), times

- evaluate: `POST /api/evaluate` of the instance's plan (its .plan.json, else the page's default
  plan on the whole fleet), as the page sends it on every edit: the round trip over HTTP on this
  machine, and the answer alone in this process (`planner.web.answers.evaluate_answer`);
- solve: `POST /api/jobs` {kind: solve} then `GET /api/jobs/ID?wait=` until done, as the page's
  Optimise button does: the round trip (job start in a worker, solve, views, JSON), and the
  solver's own time (`solve_time_s`).

Prints one row per instance, then the median, p95 and worst of each column, with the load
average before and after (the machine is shared: figures move with the load).

    python scripts/bench_web.py [--repeat 20] [--instances DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from planner.web.answers import evaluate_answer  # noqa: E402
from planner.web.app import examples_in, spawn_server  # noqa: E402


TOKEN: dict[str, str] = {}      # the header X-Dtplan-Token with the started server's token


def post(url: str, body: dict) -> dict:
    request = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json", **TOKEN})
    with urllib.request.urlopen(request, timeout=300) as response:
        return json.loads(response.read())


def get(url: str) -> dict:
    with urllib.request.urlopen(urllib.request.Request(url, headers=TOKEN), timeout=300) as response:
        return json.loads(response.read())


def start_server() -> tuple[subprocess.Popen, str]:
    """`dtplan serve --port 0` in a new process, once it answers (its token in `TOKEN` and `proc.token`)."""
    proc, url = spawn_server(cwd=REPO)
    TOKEN["X-Dtplan-Token"] = proc.token
    for _ in range(100):             # the fork server warms up in the background
        try:
            get(url + "api/health")
            break
        except OSError:
            time.sleep(0.1)
    return proc, url


def plan_for(path: Path, instance: dict) -> dict | None:
    """The instance's plan file, else None: the page's starting plan, chosen by the server
    (planner.web.fields.baseline_plan: every node of every pool for a fleet of pools)."""
    plan_path = path.with_name(path.name[:-len(".json")] + ".plan.json")
    if plan_path.exists():
        return json.loads(plan_path.read_text())
    return None


def time_evaluate(url: str, instance: dict, plan: dict, repeat: int) -> tuple[float, float]:
    """(median HTTP round trip, median in-process answer) in seconds."""
    http, local = [], []
    for _ in range(repeat):
        t = time.perf_counter()
        answer = post(url + "api/evaluate", {"instance": instance, "plan": plan})
        http.append(time.perf_counter() - t)
        t = time.perf_counter()
        evaluate_answer(instance, plan)
        local.append(time.perf_counter() - t)
    if answer["instance_problems"] or answer["plan_problems"]:
        raise SystemExit(f"bad input in a shipped instance: {answer}")
    return statistics.median(http), statistics.median(local)


def time_solve(url: str, instance: dict) -> tuple[float, float, str]:
    """(round trip of the solve job, the solver's own seconds, status)."""
    t = time.perf_counter()
    job = post(url + "api/jobs", {"kind": "solve", "instance": instance})
    while job["state"] in ("queued", "running"):
        job = get(url + f"api/jobs/{job['id']}?after={job['version']}&wait=10")
    elapsed = time.perf_counter() - t
    if job["state"] != "done":
        raise SystemExit(f"solve job ended {job['state']}: {job}")
    return elapsed, job["result"]["solve_time_s"], job["result"]["status"]


def summary(name: str, values: list[float], target: float) -> str:
    values = sorted(values)
    p95 = values[min(len(values) - 1, int(round(0.95 * (len(values) - 1))))]
    over = sum(v > target for v in values)
    return (f"{name:<32} median {1e3 * statistics.median(values):8.1f} ms   p95 {1e3 * p95:8.1f} ms   "
            f"worst {1e3 * values[-1]:8.1f} ms   over {1e3 * target:,.0f} ms: {over} of {len(values)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20, help="evaluations per instance (median taken)")
    parser.add_argument("--instances", type=Path, default=REPO / "instances", help="folder of instances")
    args = parser.parse_args()
    load_before = os.getloadavg()
    proc, url = start_server()
    rows = []
    try:
        get(url + "api/meta")
        for name, path in examples_in(args.instances).items():
            instance = json.loads(path.read_text())
            eval_http, eval_local = time_evaluate(url, instance, plan_for(path, instance), args.repeat)
            solve_http, solve_own, status = time_solve(url, instance)
            rows.append((name, eval_http, eval_local, solve_http, solve_own, status))
            print(f"{name:<40} evaluate {1e3 * eval_http:7.1f} ms (answer {1e3 * eval_local:6.1f} ms)   "
                  f"solve {1e3 * solve_http:7.1f} ms (solver {1e3 * solve_own:7.1f} ms, {status})", flush=True)
    finally:
        proc.terminate()
        proc.wait(20)
    load_after = os.getloadavg()
    print()
    print(summary("evaluate, HTTP round trip", [r[1] for r in rows], 0.100))
    print(summary("evaluate, answer in process", [r[2] for r in rows], 0.100))
    print(summary("solve job, HTTP round trip", [r[3] for r in rows], 1.0))
    print(summary("solve, solver alone", [r[4] for r in rows], 1.0))
    print(f"{len(rows)} shipped instances, {args.repeat} evaluations each; {os.cpu_count()} cores; load average "
          f"before {load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f}, "
          f"after {load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f}")


if __name__ == "__main__":
    main()
