"""The shipped instances: every one validates, and every entry of an instance library's index
answers as its stored expected result says.

The expected results (`<name>.expected.json`) are written only by scripts/make_expected.py;
this test recomputes each answer with the same function and compares: numbers to 1e-9
relative, plans exactly, everything else exactly.
"""

import importlib.util
import json
import math
from pathlib import Path

import pytest

from planner.schema.instance import load_instance
from planner.evaluate import check_plan_against
from planner.schema.plan import load_plan

ROOT = Path(__file__).resolve().parents[1]
INSTANCES = ROOT / "instances"
LIBRARIES = sorted(p.parent for p in INSTANCES.rglob("index.json"))
REL = 1e-9


def _make_expected():
    spec = importlib.util.spec_from_file_location("make_expected", ROOT / "scripts" / "make_expected.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


make_expected = _make_expected()


def _is_instance(path: Path) -> bool:
    return not (path.name == "index.json" or path.name.endswith((".plan.json", ".expected.json")))


INSTANCE_FILES = sorted(p for p in INSTANCES.rglob("*.json") if _is_instance(p))
PLAN_FILES = sorted(INSTANCES.rglob("*.plan.json"))
ENTRIES = [(lib, e) for lib in LIBRARIES for e in make_expected.load_index(lib)]


def _id(path: Path) -> str:
    return str(path.relative_to(INSTANCES))


@pytest.mark.parametrize("path", INSTANCE_FILES, ids=_id)
def test_every_shipped_instance_validates(path):
    instance = load_instance(path)
    if path.parent != INSTANCES:            # the libraries' instances say what they ask
        assert instance.name and instance.description, f"{path}: give a name and a description"


@pytest.mark.parametrize("path", PLAN_FILES, ids=_id)
def test_every_shipped_plan_validates_against_its_instance(path):
    instance_path = path.with_name(path.name.replace(".plan.json", ".json"))
    assert check_plan_against(load_instance(instance_path), load_plan(path)) == []


def test_the_miri_library_is_indexed():
    library = INSTANCES / "miri"
    assert library in LIBRARIES
    indexed = {e["name"] for e in make_expected.load_index(library)}
    shipped = {p.stem for p in library.glob("*.json") if _is_instance(p)}
    assert indexed == shipped, "every instance of instances/miri/ is in its index.json, and only those"
    for name in indexed:
        assert (library / f"{name}.expected.json").exists(), f"run scripts/make_expected.py for {name}"
        assert json.loads((library / f"{name}.json").read_text())["name"] == name


def _match(actual, expected, where: str = "", in_plan: bool = False) -> list[str]:
    """Differences between two JSON values: numbers to REL relative (exact inside a plan)."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        if set(actual) != set(expected):
            return [f"{where}: keys {sorted(actual)} != {sorted(expected)}"]
        return [d for k in expected for d in _match(actual[k], expected[k], f"{where}.{k}", in_plan or k == "plan")]
    if isinstance(expected, list) and isinstance(actual, list):
        if len(actual) != len(expected):
            return [f"{where}: {len(actual)} items != {len(expected)}"]
        return [d for i, (a, e) in enumerate(zip(actual, expected)) for d in _match(a, e, f"{where}[{i}]", in_plan)]
    numbers = all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in (actual, expected))
    if numbers and not in_plan:
        ok = math.isclose(actual, expected, rel_tol=REL, abs_tol=0.0) or actual == expected
    else:
        ok = actual == expected
    return [] if ok else [f"{where}: {actual!r} != {expected!r}"]


def test_match_compares_numbers_relatively_and_plans_exactly():
    assert _match({"v": 1.0 + 1e-12}, {"v": 1.0}) == []
    assert _match({"v": 1.0 + 1e-6}, {"v": 1.0}) != []
    assert _match({"plan": {"compression": 16.0 + 1e-12}}, {"plan": {"compression": 16.0}}) != []
    assert _match({"a": "x"}, {"a": "y"}) != [] and _match({"a": 1}, {"a": 1, "b": 2}) != []


@pytest.mark.parametrize("library, entry", ENTRIES, ids=[f"{lib.name}/{e['name']}" for lib, e in ENTRIES])
def test_every_indexed_instance_answers_as_stored(library, entry):
    stored = json.loads(make_expected.expected_path(library, entry["name"]).read_text())
    # Round-trip through JSON so tuples, ints and floats compare as they were stored.
    actual = json.loads(json.dumps(make_expected.expected_result(library, entry)))
    differences = _match(actual, stored)
    assert not differences, (f"{entry['name']} no longer answers as stored (if the change is intended, "
                             "re-run scripts/make_expected.py):\n" + "\n".join(differences))
