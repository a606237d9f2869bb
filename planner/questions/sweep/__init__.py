"""Sweeps: one instance answered at many points of its input space (`dtplan sweep`).

A sweep varies instance fields named by dotted JSON paths (`network.wan.up_mbps`,
`fleet.nodes`, `assumptions.constants.mfu`, `assumptions.scenario`, ...):

- a grid: every combination of the listed values (`--grid FIELD=v1,v2,...`, the first
  field varying slowest);
- Monte Carlo: `samples` draws from distributions (`--vary FIELD=DIST(...)`, see
  `Distribution`); point i's draws come from `numpy.random.default_rng([seed, i])`, so
  they depend only on the seed and the point's index (a resumed or parallel sweep draws
  the same values);
- both: every grid point repeated `samples` times with fresh draws.

Each point is the base instance's raw JSON with the fields set, validated again by
`parse_instance` (never `model_copy`, which skips validation), then answered by a full
solve (`command="solve"`), the feasibility verdict and smallest fixes
(`"feasible"`), a fixed plan's evaluation (`"evaluate"`), or the reachability question
of `dtplan feasible --monte-carlo` (`"reach"`: the fastest plan with the duration limit
lifted, its days, and whether they fit the limit). A point whose instance is invalid or
whose answer raises is a row with status `error` and the message: never lost.

Points run in a pool of processes that stays up for the whole sweep (chunks of points
per task), in this process (`workers=1`), or on a Dask distributed cluster
(`scheduler=ADDRESS`). Rows are written to the output as they arrive (JSON Lines, CSV;
Parquet through a JSON Lines journal beside it), so a killed sweep resumes from its
output: finished points (same index and same key, a hash of the point's inputs and of
the question) are skipped, and none is computed twice.

Modules: `fields` (dotted paths), `distributions` (Monte Carlo draws), `spec` (the question and
its points), `answer` (one point), `sink` (output files, DataFrames), `run` (pools, Dask),
`recipe` (TOML recipes, plots), `shared` (the points of a solve sweep that share their search,
answered by one branch and bound). Everything public is importable from this package.

Layer: questions (docs/architecture.md): may import the layers up to search; the plots of a sweep
are `planner.present.sweep_plots`.
"""

from planner.questions.sweep.answer import UNLIMITED_DAYS, run_point
from planner.questions.sweep.distributions import DISTRIBUTION_HELP, DISTRIBUTIONS, Distribution, parse_vary
from planner.questions.sweep.fields import (check_field, is_integer_field, parse_grid, parse_value, set_field,
                                            value_problems, with_fields)
from planner.questions.sweep.recipe import PLOT_KINDS, RECIPE_KEYS, Recipe, load_recipe
from planner.questions.sweep.run import (CHUNKS_PER_WORKER, CONNECT_TIMEOUT_S, MAX_CHUNK, SweepResult,
                                         check_scheduler, default_workers, run_sweep)
from planner.questions.sweep.shared import NODE_FIELDS, node_groups, run_chunk, solve_chunk
from planner.questions.sweep.sink import OUTPUT_SUFFIXES, RowSink, _cell, _uncell, frame_of, output_format
from planner.questions.sweep.spec import COMMANDS, RESULT_COLUMNS, TIME_COLUMN, Point, SweepSpec

__all__ = ["CHUNKS_PER_WORKER", "COMMANDS", "CONNECT_TIMEOUT_S", "DISTRIBUTIONS", "DISTRIBUTION_HELP", "MAX_CHUNK",
           "OUTPUT_SUFFIXES", "PLOT_KINDS", "RECIPE_KEYS", "RESULT_COLUMNS", "TIME_COLUMN", "UNLIMITED_DAYS",
           "Distribution", "Point", "Recipe", "RowSink", "SweepResult", "SweepSpec", "check_field",
           "check_scheduler", "default_workers", "frame_of", "is_integer_field", "load_recipe", "output_format",
           "parse_grid", "parse_value", "parse_vary", "NODE_FIELDS", "node_groups", "run_chunk", "run_point", "run_sweep", "solve_chunk",
           "set_field", "value_problems", "with_fields", "_cell", "_uncell"]
