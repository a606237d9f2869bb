"""The `--robust` answers of `dtplan feasible` (planner.questions.robust; docs/robust.md), printed
and exited here so that the command's own module gains two lines."""

from __future__ import annotations

import sys

from planner.cli.common import EXIT_INFEASIBLE, EXIT_OK, BadInput, echo_json
from planner.schema.errors import InputError


def feasible_robust(instance, raw: dict, source: str, as_json: bool, deadline: float | None) -> None:
    """`dtplan feasible --robust`: reachable under every scenario, some or none (naming them), and
    whether one plan reaches the target under all of them; exit 0 when one does, else 1."""
    from planner.present.robust import reach_lines
    from planner.questions.robust import robust_reach
    try:
        r = robust_reach(instance, raw, deadline=deadline)
    except InputError as err:
        raise BadInput.from_error(err, source) from None
    if as_json:
        echo_json(r.to_dict())
    else:
        from planner.present.render import make_console
        console = make_console()
        for line in reach_lines(r):
            console.print(line)
    sys.exit(EXIT_OK if r.one_plan.plan is not None else EXIT_INFEASIBLE)
