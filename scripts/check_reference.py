#!/usr/bin/env python3
"""Evaluate every case of a reference-case file with dtplan's evaluator, and answer the
reference's search cases with dtplan's planner.

Usage: scripts/check_reference.py ../shared/conformance/reference_cases.json [--verbose] [--no-search]

Evaluation cases: one line per failing case (its id, function and what differs), then
`N passed, M failed` with the largest relative error over all compared values.
Search cases (find_nodes_for_target, find_optimal_config_for_target, sweep_model_sizes;
`planner.reference.search` states the mapping): one line per failing case (every case
with --verbose), then per search function how many passed and failed (dtplan at least as
good as the reference, its plan feasible when re-scored) and how often and by how much
dtplan is strictly better (fewer nodes, lower cost, more C_quality; median and max).
Exit status 0 when no case fails, 1 otherwise, 2 when the file cannot be read (missing,
a folder, not JSON, not a list of cases).
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from planner.reference.conformance import SEARCH_FUNCTIONS, check_case  # noqa: E402
from planner.reference.search import answer, describe, summarise  # noqa: E402


class BadCasesFile(Exception):
    """A reference-case file that cannot be read; the message says why."""


def read_cases(path: Path) -> list[dict]:
    """The cases of a reference-case file: a JSON list of objects with "function" (and "id")."""
    hint = ("the reference cases are not part of the repository: they live beside the clone, in "
            "../shared/conformance/reference_cases.json (or $DTPLAN_SHARED_DIR/conformance/)")
    if not path.exists():
        raise BadCasesFile(f"{path}: no such file; {hint}")
    if path.is_dir():
        raise BadCasesFile(f"{path} is a folder; give the JSON file, e.g. {path / 'reference_cases.json'}")
    try:
        cases = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as err:
        raise BadCasesFile(f"{path}: cannot read: {err}") from None
    except json.JSONDecodeError as err:
        raise BadCasesFile(f"{path}: not JSON: {err.msg} at line {err.lineno} column {err.colno}") from None
    if not isinstance(cases, list) or not all(isinstance(c, dict) and "function" in c for c in cases):
        raise BadCasesFile(f"{path}: expected a JSON list of cases, each an object with a \"function\" key")
    return cases


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cases", type=Path, help="a JSON file in the format of reference_cases.json")
    parser.add_argument("--verbose", action="store_true", help="also list passing cases")
    parser.add_argument("--no-search", action="store_true", help="skip the search cases (about 17 s)")
    args = parser.parse_args(argv)
    try:
        cases = read_cases(args.cases)
    except BadCasesFile as err:
        print(f"check_reference.py: {err}", file=sys.stderr)
        return 2
    results = [check_case(case) for case in cases if case["function"] not in SEARCH_FUNCTIONS]
    searches = [case for case in cases if case["function"] in SEARCH_FUNCTIONS]
    for r in results:
        if r.status == "failed":
            print(f"FAIL {r.case_id} [{r.function}]: " + "; ".join(r.mismatches))
        elif args.verbose and r.status == "passed":
            print(f"ok   {r.case_id} [{r.function}] {r.compared} values, max rel. error {r.max_rel_error:.1e}")
    passed = sum(r.status == "passed" for r in results)
    failed = sum(r.status == "failed" for r in results)
    compared = sum(r.compared for r in results)
    worst = max((r.max_rel_error for r in results), default=0.0)
    print(f"evaluation cases: {compared} values compared; largest relative error {worst:.2e}")
    print(f"evaluation cases: {passed} passed, {failed} failed")
    if args.no_search:
        skipped = collections.Counter(case["function"] for case in searches)
        for fn, count in sorted(skipped.items()):
            print(f"skipped {count} {fn} case(s) (--no-search)")
        return 0 if failed == 0 else 1
    outcomes = []
    for case in searches:
        outcome = answer(case)
        outcomes.append(outcome)
        if outcome.status == "failed" or args.verbose:
            print(describe(outcome), flush=True)
    for line in summarise(outcomes):
        print(line)
    failed += sum(o.status == "failed" for o in outcomes)
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
