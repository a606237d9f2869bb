"""Where the presets (hardware, LLM and assumption-profile JSON) are found.

The presets live in the repository's top-level `models/` folder. A wheel installs
that folder as package data at `planner/models/` (pyproject.toml maps the package
`planner.models` to `models/`), while a checkout or an editable install reads it
in place, beside the `planner/` folder. `$DTPLAN_MODELS_DIR`, when set, wins.
This module imports nothing from the rest of `planner`, so that both the schema
(catalog.py) and the cost model (assumptions.py) can use it without a cycle.
"""

from __future__ import annotations

import os
from pathlib import Path

MODELS_DIR_ENV = "DTPLAN_MODELS_DIR"
_PACKAGE_DIR = Path(__file__).resolve().parent


def bundled_models_dir() -> Path:
    """The presets shipped with this copy of dtplan, ignoring `$DTPLAN_MODELS_DIR`.

    `planner/models` in an installed wheel, else `<checkout>/models`. If neither
    exists, the checkout path is returned (callers report it as missing).
    """
    installed = _PACKAGE_DIR / "models"
    if installed.is_dir():
        return installed
    return _PACKAGE_DIR.parent / "models"


def models_dir() -> Path:
    """`$DTPLAN_MODELS_DIR` if set (and non-empty), else `bundled_models_dir()`."""
    env = os.environ.get(MODELS_DIR_ENV)
    return Path(env) if env else bundled_models_dir()
