"""pydantic's plugin loader without importing `importlib.metadata` when plugins are off.

pydantic (2.x, `pydantic/plugin/_schema_validator.py: create_schema_validator`) imports its
plugin loader (`pydantic.plugin._loader`) the first time a model is built, and that module
imports `importlib.metadata` at its top (`from importlib.metadata import entry_points`) whether
or not plugins are wanted: `importlib.metadata` brings `email`, `zipfile`, `csv` and more, about
15-25 ms of CPU per `dtplan` command on the project machine (docs/speed.md, "Start-up time"),
for an answer (`get_plugins()`) that is `()` as soon as PYDANTIC_DISABLE_PLUGINS says so.

`install()` adds an import finder that, when pydantic imports its loader, gives it a small
module whose names are this module's `get_plugins` and `__getattr__`, only while the environment
disables every plugin (the values pydantic's `get_plugins` reads as "all off": `__all__`, `1`,
`true`), which the command line sets unless the user set the variable (planner/cli/__init__.py).
Its `get_plugins()` answers `()` while that holds, as pydantic's own does; should the variable
change later in the process, it loads pydantic's real loader and hands every call and every
other name over to it, so the behaviour is pydantic's in every case. Nothing else of pydantic
is touched (a process that never imports pydantic, such as `dtplan --help`, never sees the
stand-in), and a process that has already loaded the real loader keeps it.

While installed, the same finder makes `secrets` load on first use (`importlib.util.LazyLoader` over the loader the
rest of `sys.meta_path` finds for it, whatever the plugin setting): `pydantic.types` imports it at its
top for one call, `secrets.compare_digest` in the `__eq__` of SecretStr and SecretBytes, which dtplan's
schema never compares, and the import brings `hmac`, `hashlib` with OpenSSL's library and `random`,
about 15 million instructions of `dtplan solve` (docs/speed.md, "Start-up time"). The module object is
in `sys.modules` at once; reading any of its attributes (or importing it again) runs it, as an eager
import would have, so only the moment it runs changes.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import os
import sys
from collections.abc import Iterable, Sequence
from types import ModuleType
from typing import Any

LOADER = "pydantic.plugin._loader"
VARIABLE = "PYDANTIC_DISABLE_PLUGINS"
ALL_OFF = ("__all__", "1", "true")   # pydantic/plugin/_loader.py: get_plugins, the values that disable every plugin
ON_FIRST_USE = ("secrets",)          # imported by pydantic.types, used only by SecretStr/SecretBytes' __eq__


def plugins_off() -> bool:
    """Whether the environment turns every pydantic plugin off (pydantic's own test)."""
    return os.environ.get(VARIABLE) in ALL_OFF


def real_loader() -> ModuleType:
    """pydantic's own plugin loader, loaded now in place of the stand-in (once)."""
    current = sys.modules.get(LOADER)
    if current is not None and not getattr(current, "DTPLAN_STAND_IN", False):
        return current
    parent_name, _, child = LOADER.rpartition(".")
    package = importlib.import_module(parent_name)
    spec = importlib.machinery.PathFinder.find_spec(LOADER, package.__path__)
    module = importlib.util.module_from_spec(spec)
    sys.modules[LOADER] = module
    spec.loader.exec_module(module)
    setattr(package, child, module)
    return module


def get_plugins() -> Iterable[Any]:
    """No plugins while the environment turns them all off; otherwise pydantic's answer."""
    if plugins_off():
        return ()
    return real_loader().get_plugins()


def loader_getattr(name: str) -> Any:
    """Any other name of the loader: pydantic's own (loaded on first use)."""
    if name.startswith("__"):
        raise AttributeError(name)
    return getattr(real_loader(), name)


class StandIn:
    """Finds `pydantic.plugin._loader` while every plugin is off, and makes the stand-in module
    (an import finder and loader by their protocol: importlib.abc would import importlib.resources)."""

    def find_spec(self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None):
        if fullname in ON_FIRST_USE:
            return lazy_spec(fullname, self)
        if fullname != LOADER or not plugins_off():
            return None
        return importlib.machinery.ModuleSpec(LOADER, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        module = ModuleType(LOADER, "dtplan's stand-in for pydantic's plugin loader (planner/cli/pydantic_plugins.py)")
        module.DTPLAN_STAND_IN = True
        module.get_plugins = get_plugins
        module.__getattr__ = loader_getattr
        return module

    def exec_module(self, module: ModuleType) -> None:
        """Nothing to run: `create_module` made it whole."""


def lazy_spec(name: str, finder: object) -> importlib.machinery.ModuleSpec | None:
    """The spec the finders after `finder` give for the top-level module `name`, its module run on first
    use (None: the import goes on as if this finder were not there)."""
    after = sys.meta_path[sys.meta_path.index(finder) + 1:] if finder in sys.meta_path else []
    for other in after:
        find = getattr(other, "find_spec", None)
        spec = find(name, None) if find is not None else None
        if spec is not None:
            if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                spec.loader = importlib.util.LazyLoader(spec.loader)
            return spec
    return None


def install() -> bool:
    """Stand in for pydantic's loader if every plugin is off and the real one is not loaded yet."""
    if not plugins_off() or LOADER in sys.modules or any(isinstance(f, StandIn) for f in sys.meta_path):
        return False
    sys.meta_path.insert(0, StandIn())
    return True
