"""dtplan: the exact planner for decentralized LLM training.

The Python API (`planner.api`, docs/api.md) is re-exported here lazily, so that
`import planner` stays cheap: `planner.solve(...)` imports the solver on first use.

Two API functions share their names with modules of this package (`planner.solve`,
`planner.evaluate`). Importing those modules binds them as attributes of the package, so
the package's class looks these two names up in the API first: `planner.solve` is always
the function. Import the modules by their full name (`from planner.solve import ...`,
`sys.modules["planner.solve"]`), never as `planner.solve.<name>` attribute chains.

Layer: interfaces, the top (docs/architecture.md): the package door re-exports `planner.api`, which
may import every layer below it; nothing in planner/ imports the package door.
"""

from __future__ import annotations

import sys
import types

_API = ("InputError", "Problem", "load_instance", "instance_from_dict", "solve", "evaluate", "feasible", "compare",
        "sweep", "feasible_monte_carlo", "ComparisonTable")
_SHADOWED = frozenset({"solve", "evaluate"})      # API functions named like modules of the package

__all__ = list(_API)


def __getattr__(name: str):
    if name in _API:
        from planner import api
        return getattr(api, name)
    raise AttributeError(f"module 'planner' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(list(globals()) + list(_API))


class _Package(types.ModuleType):
    """The package module: `solve` and `evaluate` are the API functions, not the modules."""

    def __getattribute__(self, name: str):
        if name in _SHADOWED:
            return getattr(sys.modules["planner.api"] if "planner.api" in sys.modules else _load_api(), name)
        return super().__getattribute__(name)


def _load_api():
    import importlib
    return importlib.import_module("planner.api")


sys.modules[__name__].__class__ = _Package
