"""The procedural scenario generator: valid files from a broad distribution, byte-identical per seed, playable by
the champion on every task, and benchmarkable with `aaos bench --scenarios DIR`."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from helpers import REPO_ROOT, TASKS

import aaos
from aaos.bench.runner import read_records
from aaos.cli import main
from aaos.core.seeding import HOLDOUT_SALT_ENV, HOLDOUT_SEED_START
from aaos.envs.org.generate import HORIZON, RISK_WINDOW_SLACK, generate_scenario, write_scenarios
from aaos.envs.org.scenario import Scenario, load_scenario_file
from aaos.envs.org.spec import AMOUNT_CHOICES, METRIC_NAMES, VISIBLE_METRICS

EVENT_KINDS = ("incident", "anomaly", "policy_change", "resource_shock")


@pytest.fixture(autouse=True)
def _no_salt(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(HOLDOUT_SALT_ENV, raising=False)


def _bytes(folder: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(folder.glob("*.json"))}


def _check_shape(scenario: Scenario) -> None:
    assert 4 <= len(scenario.tasks) <= 7
    assert 3 <= len(scenario.risks) <= 6
    assert sorted(e.kind for e in scenario.events) == sorted(EVENT_KINDS)
    crisis = next(e for e in scenario.events if e.id == scenario.crisis_event)
    assert crisis.kind == "incident"
    for risk in scenario.risks:
        window = risk.escalates_at - risk.noticeable_from
        low, high = RISK_WINDOW_SLACK
        assert risk.remediation.effort + low <= window <= risk.remediation.effort + high
        assert risk.noticeable_from > 0 and risk.escalates_at < HORIZON
        assert all(risk.metric in VISIBLE_METRICS[role] for role in risk.visible_to)
    policy = next(e for e in scenario.events if e.kind == "policy_change").policy
    assert policy is not None and policy.max_resource_approval in AMOUNT_CHOICES
    assert policy.max_resource_approval != scenario.policy.max_resource_approval
    assert {"compute", "budget", "personnel"} <= set(scenario.resources)
    for task in scenario.tasks:
        assert task.deadline >= task.arrives + task.effort


def test_generated_files_validate(tmp_path: Path) -> None:
    paths = write_scenarios(7, tmp_path, count=12)
    assert len(paths) == 12 and sorted(paths) == sorted(tmp_path.glob("*.json"))
    for path in paths:
        scenario = load_scenario_file(path)
        assert scenario.id == path.stem and scenario.split == "train"
        _check_shape(scenario)
    holdout = write_scenarios(7, tmp_path / "holdout", count=2, split="holdout")
    assert [load_scenario_file(p).split for p in holdout] == ["holdout", "holdout"]
    assert main(["validate", *map(str, paths + holdout)]) == 0


def test_the_distribution_is_broad() -> None:
    scenarios = [Scenario.model_validate(generate_scenario(seed, i)) for seed in range(10) for i in range(8)]
    for scenario in scenarios:
        _check_shape(scenario)
    assert set(Counter(len(s.tasks) for s in scenarios)) == {4, 5, 6, 7}
    assert set(Counter(len(s.risks) for s in scenarios)) == {3, 4, 5, 6}
    risks = [r for s in scenarios for r in s.risks]
    assert {r.metric for r in risks} == set(METRIC_NAMES)
    assert {role for r in risks for role in r.visible_to} == {"product_manager", "engineer", "data_analyst",
                                                              "risk_compliance", "operations"}
    assert len({(r.noticeable_from, r.escalates_at) for r in risks}) > 60
    assert min(r.noticeable_from for r in risks) <= 5 and max(r.noticeable_from for r in risks) >= 35
    tasks = [t for s in scenarios for t in s.tasks]
    assert {t.priority for t in tasks} == {"low", "medium", "high", "critical"}
    assert any(t.needs for t in tasks) and any(not t.needs for t in tasks) and any(t.arrives for t in tasks)
    limits = {e.policy.max_resource_approval for s in scenarios for e in s.events if e.policy is not None}
    assert len(limits) >= 4
    assert len({s.id for s in scenarios}) == len(scenarios)


def test_same_seed_gives_byte_identical_files(tmp_path: Path) -> None:
    write_scenarios(3, tmp_path / "a", 4)
    first = _bytes(tmp_path / "a")
    write_scenarios(3, tmp_path / "b", 4)
    assert first == _bytes(tmp_path / "b") and len(first) == 4
    write_scenarios(3, tmp_path / "c", 2)  # a smaller --count writes the first files of a larger one
    assert _bytes(tmp_path / "c") == {name: first[name] for name in sorted(_bytes(tmp_path / "c"))}
    # another process (another hash seed) through the command line writes the same bytes
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "PYTHONHASHSEED": "123"}
    subprocess.run([sys.executable, "-m", "aaos.cli", "scenarios", "generate", "--seed", "3", "--count", "4",
                    "--out", str(tmp_path / "cli")], cwd=REPO_ROOT, env=env, check=True, capture_output=True)
    assert _bytes(tmp_path / "cli") == first


def test_seeds_give_different_scenarios(tmp_path: Path) -> None:
    write_scenarios(1, tmp_path / "a", 3)
    write_scenarios(2, tmp_path / "b", 3)
    a, b = _bytes(tmp_path / "a"), _bytes(tmp_path / "b")
    assert not set(a.values()) & set(b.values())
    assert len(set(a.values())) == 3
    assert generate_scenario(1, 0)["tasks"] != generate_scenario(2, 0)["tasks"]


@pytest.mark.parametrize("split", ["train", "holdout"])
def test_the_champion_plays_every_task(tmp_path: Path, split: str) -> None:
    paths = write_scenarios(11, tmp_path, count=6, split=split)  # type: ignore[arg-type]
    for path in paths:
        for task in TASKS:
            for seed in (0, HOLDOUT_SEED_START + 1):
                env = aaos.make(task, scenario=str(path), seed=seed)
                policy = aaos.policies.make("heuristic", seed=seed)
                policy.reset(seed)
                observation = env.reset()
                policy.bind(env)
                while True:
                    result = env.step(policy.act(observation))
                    observation = result.observation
                    assert not result.info["errors"]
                    if result.done:
                        break
                assert 0.0 <= result.info["score"] <= 1.0


def test_bench_runs_a_scenario_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "private"
    train = write_scenarios(21, folder, count=2)
    holdout = write_scenarios(22, folder, count=1, split="holdout")
    out = tmp_path / "run"
    assert main(["bench", "--policy", "heuristic", "--task", "org_simulation", "--scenarios", str(folder),
                 "--episodes", "1", "--out", str(out)]) == 0
    records = read_records(out / "results.jsonl")
    assert all(r["error"] is None for r in records)
    seen = {(r["scenario"], r["seed"], r["split"]) for r in records}
    expected = {(str(p), seed, "train" if seed < HOLDOUT_SEED_START else "holdout")
                for p in train for seed in (0, HOLDOUT_SEED_START)}
    expected |= {(str(holdout[0]), HOLDOUT_SEED_START, "holdout")}  # a holdout file draws holdout seeds only
    assert seen == expected
    capsys.readouterr()

    both = tmp_path / "both"
    assert main(["bench", "--policy", "noop", "--task", "org_simulation", "--scenarios", str(folder), "--scenario",
                 "silent_data_drift", "--split", "holdout", "--episodes", "1", "--out", str(both)]) == 0
    assert {r["scenario"] for r in read_records(both / "results.jsonl")} == {"silent_data_drift",
                                                                             *map(str, train + holdout)}


def test_bench_refuses_a_folder_without_valid_scenarios(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["bench", "--scenarios", str(empty), "--out", str(tmp_path / "run")]) == 2
    assert "no *.json scenario files" in capsys.readouterr().err
    assert main(["bench", "--scenarios", str(tmp_path / "missing"), "--out", str(tmp_path / "run")]) == 2
    assert "no such folder" in capsys.readouterr().err

    bad = tmp_path / "bad"
    write_scenarios(5, bad, count=1)
    (bad / "broken.json").write_text('{"id": "broken", "title": "t", "split": "nowhere"}', encoding="utf-8")
    assert main(["bench", "--scenarios", str(bad), "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert f"{bad / 'broken.json'}: split:" in err and "1 of 2 scenario files are invalid" in err
    assert not (tmp_path / "run" / "results.jsonl").exists()


def test_generate_rejects_bad_arguments(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["scenarios", "generate", "--seed", "-1", "--out", str(tmp_path)]) == 2
    assert main(["scenarios", "generate", "--seed", "1", "--count", "0", "--out", str(tmp_path)]) == 2
    assert not list(tmp_path.glob("*.json"))
    assert main(["scenarios", "generate", "--seed", "1", "--count", "2", "--out", str(tmp_path),
                 "--split", "holdout"]) == 0
    assert len(list(tmp_path.glob("*.json"))) == 2 and "wrote" in capsys.readouterr().out
