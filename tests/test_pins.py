"""One source for versions: pyproject.toml declares what each install needs (ranges), the requirements files pin
exactly those packages (requirements.txt the Space: aaos's dependencies with its [space] extra, the local model
included; requirements-train.txt [train]; requirements-docs.txt [docs]; requirements-dev.txt [dev] on top of
requirements.txt and requirements-docs.txt), every pin satisfies its range, and aaos.core.extras names each
extra's packages as pyproject declares them."""

from __future__ import annotations

import importlib.metadata
import re
import tomllib
from collections import defaultdict

import pytest
from helpers import REPO_ROOT
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from aaos.core.extras import EXTRA_INCLUDES, EXTRA_MODULES

PROJECT = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
EXTRAS: dict[str, list[str]] = PROJECT["optional-dependencies"]
FILES = {"requirements.txt": ("space",), "requirements-train.txt": ("train",),
         "requirements-docs.txt": ("docs",), "requirements-inspect.txt": ("inspect",), "requirements-dev.txt": ("dev",)}
"""Each requirements file and the extras whose own packages it pins (requirements.txt: with aaos's own)."""
DEV_READS = ("-r requirements.txt", "-r requirements-docs.txt", "-r requirements-inspect.txt")
"""The files requirements-dev.txt reads first: the extras [dev] includes that have requirements files."""
TOOLING = {"all", "dev", "docs"}
"""Extras that no code of aaos imports (aaos.core.extras lists only those that code requires)."""


def _own(extra: str) -> list[Requirement]:
    """The packages an extra declares itself (not those of the extras it includes)."""
    return [r for r in map(Requirement, EXTRAS[extra]) if canonicalize_name(r.name) != "aaos"]


def _included(extra: str) -> list[str]:
    return [e for r in map(Requirement, EXTRAS[extra]) if canonicalize_name(r.name) == "aaos" for e in sorted(r.extras)]


def _closure(extra: str) -> list[Requirement]:
    return [*_own(extra), *(r for included in _included(extra) for r in _closure(included))]


def _declared(name: str) -> list[Requirement]:
    """What pyproject says of a requirements file: its packages, each with the range pyproject gives it."""
    if name == "requirements.txt":
        return [*map(Requirement, PROJECT["dependencies"]), *_closure("space")]
    return [r for extra in FILES[name] for r in _own(extra)]


def _pins(name: str) -> dict[str, tuple[str, frozenset[str]]]:
    """package -> (pinned version, extras asked for) of a requirements file; every line is an exact pin."""
    pins = {}
    for line in (REPO_ROOT / name).read_text(encoding="utf-8").splitlines():
        line = line.split("#")[0].strip()
        if not line or line in DEV_READS:
            continue
        requirement = Requirement(line)
        assert re.fullmatch(r"==[^,*]+", str(requirement.specifier)), f"{name}: {line!r} is not an exact pin"
        pins[canonicalize_name(requirement.name)] = (str(requirement.specifier)[2:], frozenset(requirement.extras))
    return pins


@pytest.mark.parametrize("name", list(FILES))
def test_each_requirements_file_pins_exactly_what_pyproject_declares(name: str) -> None:
    declared = {canonicalize_name(r.name): r for r in _declared(name)}
    pins = _pins(name)
    assert sorted(pins) == sorted(declared), f"{name} and pyproject.toml name different packages"
    for package, (version, extras) in pins.items():
        assert declared[package].specifier.contains(version, prereleases=True), (
            f"{name} pins {package}=={version}, outside pyproject's {declared[package]}")
        assert extras == frozenset(declared[package].extras), f"{name}: {package}'s extras differ from pyproject's"
    if name == "requirements-dev.txt":
        assert set(DEV_READS) <= set((REPO_ROOT / name).read_text(encoding="utf-8").splitlines())


def test_the_extras_table_matches_pyproject() -> None:
    assert set(EXTRA_MODULES) == set(EXTRAS) - TOOLING
    assert ({extra: set(_included(extra)) for extra in EXTRA_MODULES if _included(extra)} ==
            {extra: set(included) for extra, included in EXTRA_INCLUDES.items()})
    assert set(_included("all")) == set(EXTRA_MODULES) - {"llm", "bench", "server", "local"}  # with space
    provides: dict[str, set[str]] = defaultdict(set)
    for module, distributions in importlib.metadata.packages_distributions().items():
        for distribution in distributions:
            provides[canonicalize_name(distribution)].add(module)
    installed = 0
    for extra, modules in EXTRA_MODULES.items():
        for requirement in _own(extra):
            found = provides.get(canonicalize_name(requirement.name))
            if found is not None:  # a package not installed here (the local model's) cannot be looked into
                installed += 1
                assert found & set(modules), f"aaos.core.extras lists none of {requirement.name}'s modules for {extra}"
    assert installed >= len(EXTRA_MODULES)


def test_the_openenv_package_s_lock_agrees_with_the_pins() -> None:
    """deploy/openenv/uv.lock (which `openenv validate` requires) locks every package requirements.txt pins at
    that pin: the requirements files stay the one source of versions."""
    lock = tomllib.loads((REPO_ROOT / "deploy" / "openenv" / "uv.lock").read_text(encoding="utf-8"))
    locked = {canonicalize_name(package["name"]): package.get("version") for package in lock["package"]}
    pins = _pins("requirements.txt")
    differ = {name: (version, locked[name]) for name, (version, _) in pins.items()
              if name in locked and locked[name] != version}
    assert not differ, f"uv.lock differs from requirements.txt (pin, locked): {differ}; run uv lock there"
    assert {"aaos", "openenv-core", "pydantic", "fastmcp", "uvicorn"} <= set(locked)
