"""The `dtplan` command line: a thin click layer over the library, one module per command.

Exit codes (planner.cli.common): 0 success, 1 no plan meets every limit (or the plan given
breaks one), 2 bad input, 3 time limit reached before any plan was found, 4 internal error.

Start-up (docs/speed.md, "Start-up time"): a command imports only its own module
(`COMMANDS` maps each name to it; `dtplan --help` imports them all for their help), and the
process sets two variables for itself before numpy or pydantic load, unless the user set them:

- OPENBLAS_NUM_THREADS=1: numpy's OpenBLAS otherwise starts a worker thread per core at
  import (~50 ms of CPU per command on the benchmark machine); dtplan does no BLAS work
  (element-wise numpy only), and sweep worker processes inherit one thread each;
- PYDANTIC_DISABLE_PLUGINS=__all__: pydantic otherwise scans the entry points of every
  installed distribution for plugins when the schema is built (~11 ms); dtplan uses none.
  With every plugin off, `pydantic_plugins.install()` also spares the import of
  `importlib.metadata` that pydantic's plugin loader makes whatever the setting (~15-25 ms).

click and this package's modules are then imported within `compiled_dataclass_methods`
(planner/cli/dataclass_code.py): the regular expressions their imports compile (`platform`'s,
`gettext`'s, `json`'s) and the methods `@dataclass` writes come from the table kept between runs.

Layer: interfaces (docs/architecture.md): may import every layer below (schema, cost, setting,
evaluate, space, objectives, search, questions, present); no lower layer imports the command line.
"""

from __future__ import annotations

import os

STARTUP_ENVIRONMENT = {"OPENBLAS_NUM_THREADS": "1", "PYDANTIC_DISABLE_PLUGINS": "__all__"}
for _name, _value in STARTUP_ENVIRONMENT.items():
    os.environ.setdefault(_name, _value)

from planner.cli import pydantic_plugins  # noqa: E402
from planner.cli.dataclass_code import compiled_dataclass_methods  # noqa: E402

pydantic_plugins.install()

with compiled_dataclass_methods():       # click's and this package's imports: their patterns, dataclasses
    import click  # noqa: E402  (after the environment above)

    from planner.cli.common import EXIT_CODES_HELP, DtplanGroup  # noqa: E402

COMMANDS = {
    "validate": "planner.cli.evaluate:validate",
    "evaluate": "planner.cli.evaluate:evaluate",
    "solve": "planner.cli.solve:solve",
    "feasible": "planner.cli.feasible:feasible",
    "compare": "planner.cli.compare:compare",
    "sweep": "planner.cli.sweep:sweep",
    "thresholds": "planner.cli.thresholds:thresholds",
    "hardware": "planner.cli.evaluate:hardware",
    "presets": "planner.cli.info:presets",
    "schema": "planner.cli.info:schema",
    "sites": "planner.cli.sites:sites",
    "serve": "planner.cli.serve:serve",
}


@click.group(cls=DtplanGroup, lazy_commands=COMMANDS, context_settings={"help_option_names": ["-h", "--help"]},
             epilog=EXIT_CODES_HELP + " Under --json, standard output holds one JSON document: the result, "
                                      "or {\"error\": {...}} (docs/cli.md).")
@click.version_option(package_name="dtplan")
def main() -> None:
    """dtplan: plan decentralized LLM training runs against an exact cost model."""
