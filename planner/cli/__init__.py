"""The `dtplan` command line: a thin click layer over the library, one module per command.

Exit codes (planner.cli.common): 0 success, 1 no plan meets every limit (or the plan given
breaks one), 2 bad input, 3 time limit reached before any plan was found, 4 internal error.
"""

from __future__ import annotations

import click

from planner.cli.common import EXIT_CODES_HELP, DtplanGroup
from planner.cli.compare import compare
from planner.cli.evaluate import evaluate, hardware, validate
from planner.cli.feasible import feasible
from planner.cli.info import presets, schema
from planner.cli.solve import solve
from planner.cli.sweep import sweep
from planner.cli.thresholds import thresholds


@click.group(cls=DtplanGroup, context_settings={"help_option_names": ["-h", "--help"]},
             epilog=EXIT_CODES_HELP + " Under --json, standard output holds one JSON document: the result, "
                                      "or {\"error\": {...}} (docs/cli.md).")
@click.version_option(package_name="dtplan")
def main() -> None:
    """dtplan: plan decentralized LLM training runs against an exact cost model."""


for command in (validate, evaluate, solve, feasible, compare, sweep, thresholds, hardware, presets, schema):
    main.add_command(command)

from planner.cli.sites import sites  # noqa: E402 (appended: one line per command added since)
main.add_command(sites)
