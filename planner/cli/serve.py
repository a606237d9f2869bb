"""`dtplan serve`: the interactive page (planner/web, docs/web.md) on a local web server."""

from __future__ import annotations

from pathlib import Path

import click


@click.command()
@click.option("--port", type=click.IntRange(0, 65535), default=8000, show_default=True,
              help="TCP port to listen on (0: any free port; the address is printed).")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on; 0.0.0.0 makes the page reachable from other machines.")
@click.option("--instances", "examples_dir", type=click.Path(path_type=Path, file_okay=False, exists=True),
              help="Folder of instance files the page offers as examples (default: the checkout's instances/).")
def serve(port: int, host: str, examples_dir: Path | None) -> None:
    """Start the interactive page: edit an instance, evaluate a plan, optimise, ask whether it is
    feasible, compare hardware and draw days against one input. Runs until Ctrl-C.

    Exit 0 when stopped, 2 when the address cannot be used (e.g. the port is taken).
    """
    from planner.cli.common import BadInput
    from planner.schema.errors import Problem
    from planner.web.app import serve as run
    try:
        run(host, port, examples_dir, announce=lambda line: click.echo(line, err=True))
    except OSError as err:       # the address is taken or not ours: bad input, not a traceback
        reason = err.strerror or str(err)
        raise BadInput(f"--port: cannot listen on {host}:{port}: {reason}", [Problem("--port", reason)]) from None
