"""Shared test fixtures: where the reference cases live.

The reference cases are not in the repository (../shared/conformance, or
$DTPLAN_SHARED_DIR/conformance). Without them the conformance tests skip, and the run
says so loudly: a line in the header and in the final summary, and a pytest warning.
"""

import json
import os
from pathlib import Path

import pytest
from hypothesis import settings

# Property-based tests draw new examples on every local run (to find new failures); under CI
# (CI=true) they are derandomized, so that a landing does not depend on the luck of the draw
# and any failure there reproduces exactly. Failures found locally are kept in .hypothesis/.
settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")

# No progress lines on standard error (planner/cli/progress.py): a command slowed past 2 s by a loaded
# machine would otherwise add one to the output tests read (CliRunner's output mixes in stderr).
# tests/test_progress.py unsets it.
os.environ.setdefault("DTPLAN_QUIET", "1")

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("DTPLAN_SHARED_DIR", REPO.parent / "shared"))
REFERENCE_CASES = SHARED / "conformance" / "reference_cases.json"


MISSING_REFERENCE = (f"reference cases not found at {REFERENCE_CASES}: the conformance tests are SKIPPED; "
                     f"set DTPLAN_SHARED_DIR to the folder that holds conformance/reference_cases.json")


def pytest_configure(config) -> None:
    if not REFERENCE_CASES.exists():
        config.issue_config_time_warning(pytest.PytestWarning(MISSING_REFERENCE), stacklevel=2)


def pytest_report_header(config) -> str | None:
    return None if REFERENCE_CASES.exists() else "WARNING: " + MISSING_REFERENCE


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    if not REFERENCE_CASES.exists():
        terminalreporter.write_sep("!", "WARNING: " + MISSING_REFERENCE, yellow=True, bold=True)


def load_reference_cases() -> list[dict]:
    """The reference simulator's cases (never copied into the repo); [] when absent."""
    if not REFERENCE_CASES.exists():
        return []
    return json.loads(REFERENCE_CASES.read_text())


@pytest.fixture(scope="session")
def reference_cases() -> list[dict]:
    cases = load_reference_cases()
    if not cases:
        pytest.skip(MISSING_REFERENCE)
    return cases
