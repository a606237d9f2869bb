#!/usr/bin/env python3
"""Evaluate every case of a reference-case file with dtplan's evaluator.

Usage: scripts/check_reference.py ../shared/conformance/reference_cases.json [--verbose]

Prints one line per failing case (its id, function and what differs), the skipped
search cases (answered by the planner, `dtplan solve`), and last
`N passed, M failed` with the largest relative error over all compared values.
Exit status 0 when no case fails, 1 otherwise.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from planner.conformance import check_case  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cases", type=Path, help="a JSON file in the format of reference_cases.json")
    parser.add_argument("--verbose", action="store_true", help="also list passing cases")
    args = parser.parse_args(argv)
    cases = json.loads(args.cases.read_text())
    results = [check_case(case) for case in cases]
    skipped = collections.Counter(r.function for r in results if r.status == "skipped")
    for r in results:
        if r.status == "failed":
            print(f"FAIL {r.case_id} [{r.function}]: " + "; ".join(r.mismatches))
        elif args.verbose and r.status == "passed":
            print(f"ok   {r.case_id} [{r.function}] {r.compared} values, max rel. error {r.max_rel_error:.1e}")
    for fn, count in sorted(skipped.items()):
        print(f"skipped {count} {fn} case(s): search functions are answered by the planner")
    passed = sum(r.status == "passed" for r in results)
    failed = sum(r.status == "failed" for r in results)
    compared = sum(r.compared for r in results)
    worst = max((r.max_rel_error for r in results), default=0.0)
    print(f"{compared} values compared; largest relative error {worst:.2e}")
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
