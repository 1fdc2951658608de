"""The `aaos` command through its real entry point (`python -m aaos.cli`, as the console script runs main()):
list, validate, scenarios generate and run for org and the toy, with the environment chosen by --env."""

from __future__ import annotations

import ast
import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import REPO_ROOT, SCENARIO_DIR, TESTS_DIR, registered
from toy_env import KIT, toy_spec

import aaos
from aaos.cli import main
from aaos.core.spec import ScenarioInfo

CLI = REPO_ROOT / "aaos" / "cli.py"
ENVS = list(dict.fromkeys([*aaos.env_ids(), "toy"]))
"""The environments the CLI subprocesses know: this process's, and the toy (from AAOS_ENVS)."""


def aaos_cli(*args: str | Path) -> subprocess.CompletedProcess[str]:
    environ = dict(os.environ, PYTHONPATH=os.pathsep.join((str(REPO_ROOT), str(TESTS_DIR))),
                   AAOS_ENVS="toy=toy_env:KIT")
    return subprocess.run([sys.executable, "-m", "aaos.cli", *map(str, args)], env=environ, cwd=str(REPO_ROOT),
                          capture_output=True, text=True, timeout=300)


def test_the_cli_names_no_environment() -> None:
    imported = [node.module or "" for node in ast.walk(ast.parse(CLI.read_text())) if isinstance(node, ast.ImportFrom)]
    imported += [alias.name for node in ast.walk(ast.parse(CLI.read_text())) if isinstance(node, ast.Import)
                 for alias in node.names]
    assert not [name for name in imported if name.startswith("aaos.envs")], imported


@pytest.mark.parametrize(("env_id", "task", "scenario"), [("org", "full_episode", "silent_data_drift"),
                                                          ("toy", "ship_all", "rush")])
def test_list_shows_the_environments_and_one_environments_tasks_and_scenarios(env_id: str, task: str,
                                                                              scenario: str) -> None:
    done = aaos_cli("list", "--env", env_id)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == f"environments: {', '.join(ENVS)}"
    assert f"tasks of {env_id}:" in lines and f"scenarios of {env_id}:" in lines
    assert any(line.split()[:1] == [task] for line in lines)
    assert any(line.split()[:1] == [scenario] for line in lines)
    other = "ship_all" if env_id == "org" else "full_episode"
    assert not any(line.split()[:1] == [other] for line in lines)


def test_an_unknown_env_is_refused_with_the_choices() -> None:
    done = aaos_cli("list", "--env", "nope")
    assert done.returncode == 2
    assert "invalid choice: 'nope'" in done.stderr
    assert f"(choose from {', '.join(map(repr, ENVS))})" in done.stderr


def test_validate_reads_the_built_in_files_of_every_env() -> None:
    done = aaos_cli("validate")
    assert done.returncode == 0, done.stdout + done.stderr
    files = [(path, env) for env in ("org", "inbox", "chief_of_staff")
             for path in sorted((SCENARIO_DIR.parent / env).glob("*.json"))]
    assert len(files) > 10
    assert [line.split()[:4] for line in done.stdout.splitlines()] == [["ok", str(path), "(env", f"{env}:"]
                                                                       for path, env in files]


def test_validate_fails_on_a_bad_file_and_says_why(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    good = SCENARIO_DIR / "product_launch_failure.json"
    done = aaos_cli("validate", "--env", "org", good, bad)
    assert done.returncode == 1
    first, second, *why = done.stdout.splitlines()
    assert first.startswith(f"ok   {good} (env org: product_launch_failure, train: ")
    assert second == f"FAIL {bad}"
    assert why and all(line.startswith("     ") for line in why)
    assert any("id: Field required" in line for line in why), why


def test_validate_says_when_an_env_has_no_scenario_files() -> None:
    done = aaos_cli("validate", "--env", "toy")
    assert done.returncode == 2
    assert done.stderr.strip() == "aaos: environment 'toy' has no scenario files (its kit reads none)"


def test_scenarios_generate_writes_valid_reproducible_files(tmp_path: Path) -> None:
    first = aaos_cli("scenarios", "generate", "--env", "org", "--seed", "7", "--count", "2", "--out", tmp_path / "a")
    again = aaos_cli("scenarios", "generate", "--seed", "7", "--count", "2", "--out", tmp_path / "b")
    assert first.returncode == again.returncode == 0, first.stderr + again.stderr
    written = sorted((tmp_path / "a").glob("*.json"))
    assert len(written) == 2
    assert [p.read_bytes() for p in written] == [p.read_bytes() for p in sorted((tmp_path / "b").glob("*.json"))]
    assert first.stdout.splitlines() == [f"wrote {p}" for p in written]
    checked = aaos_cli("validate", *written)
    assert checked.returncode == 0, checked.stdout
    assert all(line.startswith("ok   ") for line in checked.stdout.splitlines())


def test_scenarios_generate_says_when_an_env_has_no_generator(tmp_path: Path) -> None:
    done = aaos_cli("scenarios", "generate", "--env", "toy", "--seed", "1", "--out", tmp_path)
    assert done.returncode == 2
    assert done.stderr.strip() == "aaos: environment 'toy' has no scenario generator"
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize(("env_id", "task", "scenario", "roles", "steps"),
                         [("org", "full_episode", "product_launch_failure", 6, 50), ("toy", "ship_all", "standard", 2,
                                                                                     12)])
def test_run_plays_the_envs_default_task_and_scenario(env_id: str, task: str, scenario: str, roles: int,
                                                      steps: int) -> None:
    done = aaos_cli("run", "--env", env_id, "--policy", "random", "--seed", "3")
    assert done.returncode == 0, done.stderr
    step_lines = [line for line in done.stdout.splitlines() if line.startswith("step ")]
    assert len(step_lines) == steps
    assert all(f"/{roles}  oversight" in line for line in step_lines), step_lines[:3]
    summary = json.loads(done.stdout[done.stdout.index("{"):])
    assert (summary["env"], summary["task"], summary["scenario"], summary["seed"]) == (env_id, task, scenario, 3)
    assert summary["steps"] == steps
    assert summary["return"] == pytest.approx(summary["score"], abs=1e-3)


def test_run_quiet_prints_one_summary_line_and_binds_the_oracle() -> None:
    done = aaos_cli("run", "--task", "crisis_management", "--scenario", "resource_conflict", "--policy", "oracle",
                    "--quiet")
    assert done.returncode == 0, done.stderr
    (line,) = done.stdout.splitlines()
    summary = json.loads(line)
    assert (summary["task"], summary["scenario"], summary["policy"], summary["steps"]) == (
        "crisis_management", "resource_conflict", "oracle", 30)


def test_run_refuses_a_policy_the_env_lacks() -> None:
    done = aaos_cli("run", "--env", "toy", "--policy", "oracle")
    assert done.returncode == 2
    assert done.stderr.strip() == "aaos: environment 'toy' has no oracle"


def _read_toy_scenario(path: str) -> ScenarioInfo:
    data = json.loads(Path(path).read_text())
    if data.get("split") not in ("train", "holdout"):
        raise ValueError(f"{path}: split must be 'train' or 'holdout'")
    return ScenarioInfo(data["id"], data["title"], data["split"])


def test_validate_uses_the_kits_reader_and_says_when_there_are_no_built_in_files(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    kit = dataclasses.replace(KIT, spec=lambda: dataclasses.replace(toy_spec(), id="toy_files"),
                              scenario_file=_read_toy_scenario)
    good, bad = tmp_path / "good.json", tmp_path / "bad.json"
    good.write_text(json.dumps({"id": "calm", "title": "A calm day", "split": "train"}))
    bad.write_text(json.dumps({"id": "odd", "title": "Odd", "split": "test"}))
    with registered(toy_files=kit):
        assert main(["validate", "--env", "toy_files"]) == 2
        assert "environment 'toy_files' has no built-in scenario files" in capsys.readouterr().err
        assert main(["validate", "--env", "toy_files", str(good), str(bad)]) == 1
    assert capsys.readouterr().out.splitlines() == [
        f"ok   {good} (env toy_files: calm, train: A calm day)", f"FAIL {bad}",
        f"     {bad}: split must be 'train' or 'holdout'"]
