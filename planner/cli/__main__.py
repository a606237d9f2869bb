"""`python -m planner.cli ...`: the same as the `dtplan` command."""

from planner.cli import main

main(prog_name="dtplan")
