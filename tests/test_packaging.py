"""A wheel (`pip install .`) holds every module and preset, and works outside the checkout.

The slow test builds a wheel, installs it into a fresh virtual environment in a
temporary folder and runs `dtplan` from there. To stay well under a minute it
installs the wheel with `--no-deps` and lends the new environment the test
environment's third-party packages through a `.pth` line (a .pth line adds a
folder to sys.path but does not run that folder's own .pth files, so the
editable install of the checkout is not visible). .ci/run does the same with a
full dependency install.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from planner.cli import main
from planner.schema.catalog import hardware_ids

REPO = Path(__file__).resolve().parents[1]
INSTANCE = REPO / "instances" / "solve-1e24-64xh100.json"


def test_hardware_without_presets_is_an_error(tmp_path, monkeypatch):
    monkeypatch.setenv("DTPLAN_MODELS_DIR", str(tmp_path))
    result = CliRunner().invoke(main, ["hardware"])
    assert result.exit_code == 2
    assert "no hardware presets found" in result.output and str(tmp_path / "hardware") in result.output


def _clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DTPLAN_", "PYTHON"))}
    return env


@pytest.fixture(scope="module")
def installed_wheel(tmp_path_factory) -> tuple[Path, Path]:
    """(wheel file, python of a fresh venv with that wheel installed)."""
    root = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps",
                    "-w", str(root / "dist"), str(REPO)], check=True, cwd=root, env=_clean_env())
    wheel = next((root / "dist").glob("dtplan-*.whl"))
    env_dir = root / "venv"
    venv.create(env_dir, with_pip=False)
    python = env_dir / "bin" / "python"
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps",
                    str(wheel)], check=True, cwd=root, env=_clean_env())
    purelib = Path(subprocess.check_output([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                                           text=True).strip())
    (purelib / "zz_test_deps.pth").write_text(sysconfig.get_path("purelib") + "\n")
    return wheel, python


@pytest.mark.slow
def test_wheel_holds_every_module_and_preset(installed_wheel):
    wheel, _ = installed_wheel
    names = set(zipfile.ZipFile(wheel).namelist())
    modules = {p.relative_to(REPO).as_posix() for p in (REPO / "planner").rglob("*.py")}
    presets = {"planner/" + p.relative_to(REPO).as_posix() for p in (REPO / "models").rglob("*.json")}
    assert modules and presets
    assert modules - names == set()
    assert presets - names == set()


@pytest.mark.slow
def test_installed_wheel_solves_outside_the_checkout(installed_wheel, tmp_path):
    _, python = installed_wheel
    dtplan = python.parent / "dtplan"
    where = subprocess.check_output([str(python), "-c", "import planner; print(planner.__file__)"],
                                    cwd=tmp_path, env=_clean_env(), text=True).strip()
    assert Path(where).is_relative_to(python.parents[1]), where  # the wheel, not the checkout

    solved = subprocess.run([str(dtplan), "solve", str(INSTANCE)], cwd=tmp_path, env=_clean_env(),
                            capture_output=True, text=True)
    assert solved.returncode == 0, solved.stderr
    assert "Traceback" not in solved.stderr and "optimal" in solved.stdout.lower()

    listed = subprocess.run([str(dtplan), "hardware"], cwd=tmp_path, env={**_clean_env(), "COLUMNS": "200"},
                            capture_output=True, text=True)
    assert listed.returncode == 0, listed.stderr
    assert all(hid in listed.stdout for hid in hardware_ids())


_OFFERED = r"""
import json
from starlette.testclient import TestClient
from planner.web.app import create_app, default_examples_dir
with TestClient(create_app(token="t"), base_url="http://127.0.0.1", headers={"X-Dtplan-Token": "t"}) as c:
    meta = c.get("/api/meta").json()
    example = c.get("/api/examples/baseline-1e25").json()
print(json.dumps({"folder": str(default_examples_dir()), "examples": meta["examples"], "example": example}))
"""


@pytest.mark.slow
def test_installed_wheel_serves_the_shipped_examples(installed_wheel, tmp_path):
    """`dtplan serve` from the wheel offers the instances a checkout offers (before: none, as
    instances/ was not in the wheel), read from the wheel's planner/instances."""
    from planner.web.app import examples_in
    wheel, python = installed_wheel
    names = set(zipfile.ZipFile(wheel).namelist())
    shipped = {"planner/" + p.relative_to(REPO).as_posix() for p in examples_in(REPO / "instances").values()}
    plans = {"planner/" + p.relative_to(REPO).as_posix() for p in (REPO / "instances").rglob("*.plan.json")}
    assert shipped and plans and (shipped | plans) - names == set()
    assert not [n for n in names if n.endswith(".expected.json")]          # stored answers stay in the repository
    done = subprocess.run([str(python), "-c", _OFFERED], cwd=tmp_path, env=_clean_env(), capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    offered = json.loads(done.stdout)
    assert Path(offered["folder"]).is_relative_to(python.parents[1]), offered["folder"]    # the wheel's copy
    assert offered["examples"] == sorted(examples_in(REPO / "instances"))
    assert offered["example"]["instance"] == json.loads((REPO / "instances" / "baseline-1e25.json").read_text())
    assert offered["example"]["plan"] == json.loads((REPO / "instances" / "baseline-1e25.plan.json").read_text())


# -- start-up: what a command imports (issue 10 item 10) ----------------------------------------

_LOADED = r"""
import json, sys
from planner.cli import main
try:
    main(sys.argv[1:], prog_name="dtplan")
except SystemExit:
    pass
sys.stderr.write("@@loaded " + json.dumps(sorted({m.split(".")[0] for m in sys.modules})) + "\n")
"""
OPTIONAL_HEAVY = {"matplotlib", "scipy", "highspy", "ortools", "pandas", "pyarrow", "dask", "distributed",
                  "networkx", "pyomo", "hypothesis"}


def _loaded(*args: str) -> set[str]:
    """Top-level packages imported by one `dtplan ARGS` in a fresh interpreter (stdout a pipe)."""
    done = subprocess.run([sys.executable, "-c", _LOADED, *args], cwd=REPO, capture_output=True, text=True)
    line = next(l for l in done.stderr.splitlines() if l.startswith("@@loaded "))
    return set(json.loads(line.split(" ", 1)[1]))


@pytest.mark.parametrize("args, not_loaded", [
    (["solve", str(INSTANCE)], OPTIONAL_HEAVY | {"rich"}),      # piped: plain text without rich
    (["solve", str(INSTANCE), "--json"], OPTIONAL_HEAVY | {"rich"}),
    (["compare", str(REPO / "instances" / "compare-1e27.json"), "--hardware", "16xH100-SXM,7xB200"],
     OPTIONAL_HEAVY),
    (["--help"], OPTIONAL_HEAVY | {"numpy", "pydantic", "rich"}),
])
def test_commands_do_not_import_what_they_do_not_use(args, not_loaded):
    assert _loaded(*args) & not_loaded == set()


# -- a plain clone, without ../shared (issue 10 item 11) -----------------------------------------


@pytest.mark.parametrize("make", ["missing", "folder", "not-json"])
def test_check_reference_says_what_is_wrong_with_the_file(tmp_path, make):
    path = tmp_path / "cases.json"
    if make == "folder":
        path.mkdir()
    elif make == "not-json":
        path.write_text("[{,}]")
    done = subprocess.run([sys.executable, str(REPO / "scripts" / "check_reference.py"), str(path), "--no-search"],
                          capture_output=True, text=True, env=_clean_env())
    assert done.returncode == 2
    assert "Traceback" not in done.stderr and str(path) in done.stderr
    assert {"missing": "no such file", "folder": "is a folder", "not-json": "not JSON"}[make] in done.stderr


def test_conformance_tests_say_loudly_that_they_skip(tmp_path):
    missing = tmp_path / "no-shared"
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_reference_cases.py"],
                          cwd=REPO, capture_output=True, text=True, env={**_clean_env(), "DTPLAN_SHARED_DIR": str(missing)})
    assert done.returncode == 0, done.stdout + done.stderr
    where = str(missing / "conformance" / "reference_cases.json")
    loud = [line for line in done.stdout.splitlines() if line.startswith("! WARNING")]
    assert loud and where in loud[0] and "DTPLAN_SHARED_DIR" in loud[0] and "SKIPPED" in loud[0]
    assert "PytestWarning" in done.stdout
