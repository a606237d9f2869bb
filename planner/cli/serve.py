"""`dtplan serve`: the interactive page (planner/web, docs/web.md) on a local web server."""

from __future__ import annotations

import json
from pathlib import Path

import click

from planner.cli.common import BadInput, check_plan, load_instance_or_exit, load_or_exit, set_option

JOB_TIME_LIMIT_S = 300.0     # planner.web.jobs.JOB_TIME_LIMIT_S (not imported: `dtplan --help` stays light)


@click.command()
@click.argument("instance_path", metavar="[INSTANCE]", required=False, type=click.Path(path_type=Path))
@click.argument("plan_path", metavar="[PLAN]", required=False, type=click.Path(path_type=Path))
@click.option("--port", type=click.IntRange(0, 65535), default=8000, show_default=True,
              help="TCP port to listen on (0: any free port; the address is printed).")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on; 0.0.0.0 makes the page reachable from other machines.")
@click.option("--instances", "examples_dir", type=click.Path(path_type=Path, file_okay=False, exists=True),
              help="Folder of instance files the page offers as examples (default: the shipped instances).")
@click.option("--no-token", is_flag=True,
              help="Serve without a token: anyone who can reach the port can run jobs. Only on a machine "
                   "or network where every user is trusted.")
@click.option("--allow-host", "allowed_hosts", multiple=True, metavar="NAME",
              help="One more name accepted in the Host header (besides localhost, 127.0.0.1, [::1] and --host), "
                   "e.g. this machine's name on the network. Repeatable.")
@click.option("--job-time-limit", "job_time_limit_s", type=click.FloatRange(0, 10**6, min_open=True),
              default=JOB_TIME_LIMIT_S, show_default=True,
              help="Seconds a job (optimise, feasible, compare, curve) may run; a job's own time limit can only lower it.")
@set_option
def serve(instance_path: Path | None, plan_path: Path | None, port: int, host: str, examples_dir: Path | None,
          no_token: bool, allowed_hosts: tuple[str, ...], job_time_limit_s: float, overrides: tuple[str, ...]) -> None:
    """Start the interactive page: edit an instance, evaluate a plan, optimise, ask whether it is
    feasible, compare hardware and draw days against one input. Runs until Ctrl-C.

    With INSTANCE (and PLAN), the page opens on them (checked first, --set applied).
    The address printed holds a random token (?token=...) that every request needs; requests
    from other web sites are refused (docs/web.md, Protections).
    Exit 0 when stopped, 2 on bad input or when the address cannot be used (e.g. the port is taken).
    """
    from planner.schema.errors import Problem
    from planner.web.app import serve as run
    start = None
    if instance_path is not None:
        instance, raw = load_instance_or_exit(instance_path, overrides)
        plan = None
        if plan_path is not None:
            from planner.schema.plan import load_plan
            check_plan(instance, load_or_exit(load_plan, plan_path), plan_path)
            plan = json.loads(plan_path.read_text())
        start = {"name": instance_path.name, "instance": raw, "plan": plan}
    elif overrides:
        raise BadInput("--set: needs an INSTANCE to apply to", [Problem("--set", "needs an INSTANCE")])
    if no_token:
        click.echo("dtplan: WARNING: --no-token: anyone who can reach this port can run jobs on this machine; "
                   "use it only where every user of the machine and network is trusted", err=True)
    try:
        run(host, port, examples_dir, start=start, announce=lambda line: click.echo(line, err=True),
            token=not no_token, allowed_hosts=allowed_hosts, job_time_limit_s=job_time_limit_s)
    except KeyboardInterrupt:    # uvicorn shuts down on Ctrl-C, then raises it again: a normal stop
        click.echo("dtplan: stopped", err=True)
    except OSError as err:       # the address is taken or not ours: bad input, not a traceback
        reason = err.strerror or str(err)
        raise BadInput(f"--port: cannot listen on {host}:{port}: {reason}", [Problem("--port", reason)]) from None
