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
