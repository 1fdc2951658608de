"""Optional dependencies by install extra: `import aaos` and aaos.make(...).reset()/step() need only the core
install (pydantic, orjson, pyyaml); model clients, the server, the Space and training are extras
(pyproject.toml's [project.optional-dependencies]). Code that needs one imports it through `require`, so a
missing extra is an error that names it, as Gymnasium's DependencyNotInstalled does."""

from __future__ import annotations

import importlib
from types import ModuleType


class DependencyNotInstalled(ImportError):
    """An optional dependency is missing; the message names the extra that installs it."""


def require(module: str, extra: str) -> ModuleType:
    """Import `module`, which the `extra` install extra provides; DependencyNotInstalled naming the extra if it is
    not installed (a module the package itself fails to import still raises its own error)."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as error:
        if error.name is None or module.split(".")[0] != error.name.split(".")[0]:
            raise
        raise DependencyNotInstalled(f"{module} is not installed; it comes with the {extra!r} extra: "
                                     f"pip install 'aaos[{extra}]'") from error
