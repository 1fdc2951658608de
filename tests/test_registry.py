"""The environment registry: register() validates, unknown ids list the known ones, AAOS_ENVS reaches subprocesses
and a bad AAOS_ENVS says how to write it."""

from __future__ import annotations

import dataclasses
import os
import re
import subprocess
import sys
from typing import Any

import pytest
from helpers import REPO_ROOT, TESTS_DIR, registered
from toy_env import KIT, ToyEnv

import aaos
from aaos import envs


@pytest.mark.parametrize("env_id", ["", "my-env", "two words", "1st", 3, None])
def test_an_id_must_be_an_identifier(env_id: Any) -> None:
    before = aaos.env_ids()
    with pytest.raises(ValueError, match="Python identifier"):
        aaos.register(env_id, "toy_env:KIT")
    assert aaos.env_ids() == before


@pytest.mark.parametrize("kit", ["toy_env.KIT", "", 42, ToyEnv, None])
def test_a_kit_must_be_an_env_kit_or_a_module_attribute_string(kit: Any) -> None:
    before = aaos.env_ids()
    with pytest.raises(TypeError, match="EnvKit or a 'module:attribute' string"):
        aaos.register("toy", kit)
    assert aaos.env_ids() == before


@pytest.mark.parametrize("use", [aaos.kit_of, aaos.spec, lambda env: aaos.make(env=env)])
def test_an_unknown_environment_lists_the_known_ones(use: Any) -> None:
    with registered(toy=KIT):
        known = ", ".join(aaos.env_ids())
        assert known.endswith("toy")
        with pytest.raises(ValueError, match=re.escape(f"unknown environment 'nope'; choose one of: {known}")):
            use("nope")


def test_a_string_is_imported_on_first_use_and_must_name_a_kit() -> None:
    with registered(ghost="no_such_module_anywhere:KIT", toy="toy_env:ToyEnv"):
        assert "ghost" in aaos.env_ids()  # registering imported nothing
        with pytest.raises(ModuleNotFoundError):
            aaos.kit_of("ghost")
        with pytest.raises(TypeError, match="toy_env:ToyEnv is not an EnvKit"):
            aaos.kit_of("toy")


def test_the_spec_must_declare_the_registered_id() -> None:
    with registered(parcels=KIT), pytest.raises(ValueError, match="registered as 'parcels' declares the id 'toy'"):
        aaos.spec("parcels")


def test_registering_again_replaces_the_kit() -> None:
    class Other(ToyEnv):
        pass

    before = aaos.env_ids()
    with registered(toy=KIT):
        assert type(aaos.make(env="toy")) is ToyEnv
        aaos.register("toy", dataclasses.replace(KIT, environment=Other))
        assert type(aaos.make(env="toy")) is Other
    assert aaos.env_ids() == before


def test_registration_is_what_another_process_needs() -> None:
    with registered(toy="toy_env:KIT", toy_object=KIT):
        assert envs.registration("toy") == "toy_env:KIT"
        assert envs.registration("toy_object") is None
        assert envs.registration("org") == "aaos.envs.org.kit:KIT"
        with pytest.raises(ValueError, match="unknown environment 'nope'"):
            envs.registration("nope")


def _python(code: str, variable: str) -> subprocess.CompletedProcess[str]:
    environ = dict(os.environ, PYTHONPATH=os.pathsep.join((str(REPO_ROOT), str(TESTS_DIR))), AAOS_ENVS=variable)
    return subprocess.run([sys.executable, "-c", code], env=environ, cwd=str(REPO_ROOT), capture_output=True,
                          text=True, timeout=120)


def test_aaos_envs_is_read_by_a_subprocess() -> None:
    done = _python("import aaos; print(aaos.env_ids()); print(aaos.make(env='toy_leaky').reset()['task'])",
                   " toy = toy_env:KIT , toy_leaky=broken_envs:LEAKY,")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [str(list(dict.fromkeys([*aaos.env_ids(), "toy", "toy_leaky"]))), "ship_all"]


@pytest.mark.parametrize(("variable", "complaint"), [
    ("toy", "register 'toy' with an EnvKit"),
    ("toy=toy_env.KIT", "register 'toy' with an EnvKit"),
    ("my-toy=toy_env:KIT", "must be a Python identifier"),
])
def test_a_bad_aaos_envs_says_how_to_write_it(variable: str, complaint: str) -> None:
    done = _python("import aaos", variable)
    assert done.returncode != 0
    assert "AAOS_ENVS: " in done.stderr and complaint in done.stderr, done.stderr
    assert "(write id=module:attribute, comma-separated)" in done.stderr
