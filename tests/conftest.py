"""Shared test fixtures: where the reference cases live."""

import json
import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("DTPLAN_SHARED_DIR", REPO.parent / "shared"))
REFERENCE_CASES = SHARED / "conformance" / "reference_cases.json"


def load_reference_cases() -> list[dict]:
    """The reference simulator's cases (never copied into the repo); [] when absent."""
    if not REFERENCE_CASES.exists():
        return []
    return json.loads(REFERENCE_CASES.read_text())


@pytest.fixture(scope="session")
def reference_cases() -> list[dict]:
    cases = load_reference_cases()
    if not cases:
        pytest.skip(f"reference cases not found at {REFERENCE_CASES} (set DTPLAN_SHARED_DIR)")
    return cases
