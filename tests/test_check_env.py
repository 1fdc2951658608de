"""aaos.check_env: every registered environment and the toy pass it, each broken toy fails exactly the check made
for its defect, and `aaos check` reports the same from the command line."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
from broken_envs import BROKEN
from helpers import REPO_ROOT, TESTS_DIR, registered
from toy_env import KIT

import aaos
from aaos.check import CHECKS
from aaos.check.episodes import leaks


@pytest.mark.parametrize("env_id", aaos.env_ids())
def test_every_registered_environment_passes(env_id: str) -> None:
    report = aaos.check_env(env_id)
    assert report.passed, str(report)
    assert [r.name for r in report.results] == list(CHECKS)


def test_the_toy_passes_every_check() -> None:
    with registered(toy="toy_env:KIT"):
        report = aaos.check_env("toy")
    assert {r.status for r in report.results} == {"passed"}, str(report)
    assert "2000 malformed joint actions" in report.result("malformed_input").message


@pytest.mark.parametrize("env_id", sorted(BROKEN))
def test_a_broken_toy_fails_exactly_its_check(env_id: str) -> None:
    name, expected = BROKEN[env_id]
    with registered(**{env_id: f"broken_envs:{name}"}):
        report = aaos.check_env(env_id)
    assert set(report.failed) == expected, str(report)
    assert not report.passed
    for check in expected:
        message = report.result(check).message
        assert f"env={env_id!r}" in message, message  # says how to reproduce it


def test_an_env_registered_as_an_object_skips_only_the_cross_process_check() -> None:
    with registered(toy=KIT):
        report = aaos.check_env("toy", episodes=2, fuzz=50)
    skipped = [r for r in report.results if r.status == "skipped"]
    assert [r.name for r in skipped] == ["cross_process_determinism"]
    assert "module:attribute" in skipped[0].message
    assert report.passed


def test_a_global_random_env_is_not_blamed_twice() -> None:
    """Not deterministic within a process: the cross-process check says so instead of failing too."""
    with registered(toy_global_random="broken_envs:GLOBAL_RANDOM"):
        report = aaos.check_env("toy_global_random", episodes=2, fuzz=50)
    assert report.result("cross_process_determinism").status == "skipped"
    assert "determinism" in report.result("cross_process_determinism").message


def test_check_env_refuses_bad_arguments() -> None:
    known = ", ".join(aaos.env_ids())
    with pytest.raises(ValueError, match=re.escape(f"unknown environment 'nope'; choose one of: {known}")):
        aaos.check_env("nope")
    with pytest.raises(ValueError, match="episodes"):
        aaos.check_env("org", episodes=1)
    with pytest.raises(ValueError, match="seed"):
        aaos.check_env("org", seed=-1)


def test_a_role_may_see_its_own_guess_of_a_hidden_id_but_nothing_else_may() -> None:
    hidden = {"parcel_secret"}
    echo = {"role": "packer", "payload": {"parcel_id": "parcel_secret"}}
    observation = {"agent_observations": {"packer": {"role": "packer", "last_action_result": echo},
                                          "inspector": {"role": "inspector", "last_action_result": None}}}
    sent = {"packer": {"action_type": "ship", "payload": {"parcel_id": "parcel_secret"}}}
    assert leaks(observation, json.dumps(observation), hidden, sent) == set()
    assert leaks(observation, json.dumps(observation), hidden, {}) == {"parcel_secret"}
    observation["agent_observations"]["inspector"]["note"] = "parcel_secret arrives next"
    assert leaks(observation, json.dumps(observation), hidden, sent) == {"parcel_secret"}
    # an id is matched whole: a visible id that merely starts like a hidden one is no leak
    assert leaks({"dock": ["parcel_secret_2"]}, json.dumps({"dock": ["parcel_secret_2"]}), hidden, None) == set()


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    environ = dict(os.environ, PYTHONPATH=os.pathsep.join((str(REPO_ROOT), str(TESTS_DIR))),
                   AAOS_ENVS="toy=toy_env:KIT,toy_leaky=broken_envs:LEAKY")
    return subprocess.run([sys.executable, "-m", "aaos.cli", *args], env=environ, cwd=str(REPO_ROOT),
                          capture_output=True, text=True, timeout=600)


@pytest.mark.parametrize("env_id", ["org", "toy"])
def test_aaos_check_prints_every_check_and_exits_zero_when_all_pass(env_id: str) -> None:
    done = _cli("check", env_id)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    for name in CHECKS:
        assert any(line.startswith(f"PASS {name}: ") for line in lines), done.stdout


def test_aaos_check_exits_non_zero_and_names_the_failed_check() -> None:
    done = _cli("check", "toy_leaky", "--episodes", "2", "--fuzz", "50")
    assert done.returncode == 1, done.stdout + done.stderr
    assert any(line.startswith("FAIL hidden_ids: ") for line in done.stdout.splitlines()), done.stdout
    assert "failed: hidden_ids" in done.stdout
