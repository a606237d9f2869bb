"""Run every sweep recipe of instances/sweeps/ and write its expected rows and its plot.

For each `<name>.toml` the sweep runs in this process (dtplan's optimal plan at every
point) and this script writes:

- `instances/sweeps/<name>.expected.csv`: one row per point, the columns of the sweep
  except the wall time (`time_s`); tests/test_sweep.py re-runs each recipe and compares
  (numbers to 1e-9 relative, everything else exactly). Only this script writes them.
- `docs/sweeps/<name>.png`: the recipe's plot (its `[plot]` table).

It prints one line per recipe with the points and the wall time.

    .venv/bin/python scripts/make_sweep_expected.py [--check]

`--check` writes nothing and exits 1 if a recipe's rows differ from the stored ones.
"""

from __future__ import annotations

import argparse
import csv
import io
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from planner.files import write_text  # noqa: E402
from planner.present.sweep_plots import plot_sweep  # noqa: E402
from planner.questions.sweep import TIME_COLUMN, _cell, _uncell, load_recipe, run_sweep  # noqa: E402

RECIPES = ROOT / "instances" / "sweeps"
PLOTS = ROOT / "docs" / "sweeps"
REL = 1e-9


def recipes() -> list[Path]:
    return sorted(RECIPES.glob("*.toml"))


def expected_path(recipe: Path) -> Path:
    return recipe.with_name(recipe.stem + ".expected.csv")


def answer(recipe: Path):
    """(columns without the wall time, rows, SweepResult) of one recipe, run in this process."""
    r = load_recipe(recipe)
    result = run_sweep(r.spec, workers=1)
    columns = [c for c in result.columns if c != TIME_COLUMN]
    return columns, [{c: row[c] for c in columns} for row in result.rows], result, r


def to_csv(columns: list[str], rows: list[dict]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(columns)
    for row in rows:
        w.writerow([_cell(row[c]) for c in columns])
    return buf.getvalue()


def read_expected(path: Path) -> tuple[list[str], list[dict]]:
    reader = csv.reader(io.StringIO(path.read_text(encoding="utf-8")))
    columns = next(reader)
    return columns, [dict(zip(columns, map(_uncell, row))) for row in reader]


def differences(actual, expected, where: str = "") -> list[str]:
    """Differences between two rows' values: numbers to REL relative, everything else exactly."""
    if isinstance(expected, bool) or isinstance(actual, bool) or not isinstance(expected, (int, float)) \
            or not isinstance(actual, (int, float)):
        return [] if actual == expected else [f"{where}: {actual!r} != {expected!r}"]
    if abs(actual - expected) <= REL * max(abs(expected), abs(actual)):
        return []
    return [f"{where}: {actual!r} != {expected!r}"]


def compare(recipe: Path, columns: list[str], rows: list[dict]) -> list[str]:
    exp_columns, exp_rows = read_expected(expected_path(recipe))
    if exp_columns != columns:
        return [f"columns {columns} != {exp_columns}"]
    if len(rows) != len(exp_rows):
        return [f"{len(rows)} rows != {len(exp_rows)}"]
    return [d for i, (a, e) in enumerate(zip(rows, exp_rows)) for c in columns
            for d in differences(a[c], e[c], f"row {i} {c}")]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="compare with the stored rows, write nothing")
    args = parser.parse_args()
    bad = 0
    PLOTS.mkdir(exist_ok=True)
    for recipe in recipes():
        start = time.perf_counter()
        columns, rows, result, r = answer(recipe)
        elapsed = time.perf_counter() - start
        if args.check:
            diffs = compare(recipe, columns, rows)
            bad += bool(diffs)
            print(f"{recipe.stem}: {len(rows)} points in {elapsed:.1f} s: " + ("differs: " + "; ".join(diffs[:5])
                                                                              if diffs else "same"))
            continue
        write_text(expected_path(recipe), to_csv(columns, rows))
        plot = plot_sweep(result, PLOTS / f"{recipe.stem}.png", kind=r.plot.get("kind"), x=r.plot.get("x"),
                          series=r.plot.get("series"), y=r.plot.get("y"), group=r.plot.get("group"),
                          title=r.plot.get("title", ""))
        print(f"{recipe.stem}: {len(rows)} points in {elapsed:.1f} s, {len(result.errors)} failed; "
              f"wrote {expected_path(recipe).relative_to(ROOT)}, {plot.relative_to(ROOT)}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
