"""The `dtplan` command line: a thin click layer over the library, one module per command.

Exit codes: 0 success (a plan that meets every limit), 1 a plan or instance that
breaks a limit, 2 bad input (every problem listed, no traceback).
"""

from __future__ import annotations

import click

from planner.cli.compare import compare
from planner.cli.evaluate import evaluate, hardware, validate
from planner.cli.feasible import feasible
from planner.cli.solve import solve
from planner.cli.sweep import sweep
from planner.cli.thresholds import thresholds


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="dtplan")
def main() -> None:
    """dtplan: plan decentralized LLM training runs against an exact cost model."""


for command in (validate, evaluate, solve, feasible, compare, sweep, thresholds, hardware):
    main.add_command(command)
