"""Trajectories that replay exactly: the record `aaos collect` writes, `aaos replay`, and divergence reports."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers import REPO_ROOT

import aaos
from aaos.cli import main as cli
from aaos.core.trajectory import TRAJECTORY_VERSION, EpisodeMeta
from aaos.training.episodes import TrajectoryError, play, read_jsonl, split_episodes
from aaos.training.replay import check, replay
from aaos.training.snapshot import SnapshotError, restore

FIELDS = ["version", "env", "env_version", "reward_version", "task", "scenario", "seed", "step", "joint_action",
          "action_results", "reward", "reward_breakdown", "score", "done", "scenario_events", "oversight_events",
          "state_hash", "observation"]


def episode(policy: str = "heuristic", task: str = "crisis_management", scenario: str = "silent_data_drift",
            seed: int = 3) -> list[dict[str, Any]]:
    return play(EpisodeMeta("org", task, scenario, seed), aaos.policies.make(policy, seed=seed))


@pytest.fixture(scope="module")
def champion() -> list[dict[str, Any]]:
    return episode()


def test_a_collected_record_carries_the_observation_the_joint_action_was_chosen_from(champion) -> None:
    assert all(list(record) == FIELDS for record in champion)
    assert champion[0]["version"] == TRAJECTORY_VERSION
    env = aaos.make("crisis_management", scenario="silent_data_drift", seed=3)
    observation = env.reset()
    for record in champion:
        assert record["observation"] == json.loads(json.dumps(observation))  # as it was before the step
        assert record["observation"]["step_count"] == record["step"] - 1
        observation = env.step(record["joint_action"]).observation
    assert champion[-1]["done"] and not any(r["done"] for r in champion[:-1])


@pytest.mark.parametrize("policy", ["heuristic", "random", "noop"])
@pytest.mark.parametrize(("task", "scenario", "seed"), [
    ("org_simulation", "product_launch_failure", 0),
    ("crisis_management", "resource_conflict", 10001),
    ("full_episode", "vendor_outage_cascade", 10002),
])
def test_replay_is_exact(policy: str, task: str, scenario: str, seed: int) -> None:
    records = episode(policy, task, scenario, seed)
    assert check(records) == ()
    steps = list(replay(records))
    assert [s.record for s in steps] == records
    assert all(s.observation == r["observation"] for s, r in zip(steps, records, strict=True))


def test_each_replayed_step_carries_the_snapshot_of_the_state_before_it(champion) -> None:
    steps = list(replay(champion))
    assert steps[0].snapshot["actions"] == []
    assert steps[7].snapshot["actions"] == [r["joint_action"] for r in champion[:7]]
    assert steps[7].snapshot["state_hash"] == champion[6]["state_hash"]
    assert {k: steps[7].snapshot[k] for k in ("env", "task", "scenario", "seed")} == {
        "env": "org", "task": "crisis_management", "scenario": "silent_data_drift", "seed": 3}


@pytest.mark.parametrize(("path", "change", "field"), [
    (("reward",), 0.5, "reward"),
    (("reward_breakdown", "components", "collaboration"), 0.123, "reward_breakdown.components.collaboration"),
    (("state_hash",), "0" * 64, "state_hash"),
    (("action_results", "engineer", "status"), "rejected", "action_results.engineer.status"),
    (("observation", "agent_observations", "engineer", "step"), 99, "observation.agent_observations.engineer.step"),
    (("done",), True, "done"),
])
def test_replay_names_the_first_diverging_step_and_field(champion, path: tuple[str, ...], change: Any,
                                                        field: str) -> None:
    tampered = copy.deepcopy(champion)
    target = tampered[4]
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = change
    divergences = check(tampered)
    assert [(d.step, d.field, d.recorded) for d in divergences] == [(5, field, change)]
    assert str(divergences[0]).startswith(f"step 5: {field}: recorded ")


def test_a_changed_action_diverges_where_its_effects_show_and_replay_stops_there(champion) -> None:
    tampered = copy.deepcopy(champion)
    tampered[2]["joint_action"]["engineer"] = {"action_type": "no_op", "payload": {}}
    divergences = check(tampered)
    assert {d.step for d in divergences} == {3}
    assert "state_hash" in {d.field for d in divergences}
    assert len(list(replay(tampered))) == 3


def test_episodes_split_on_step_one_and_broken_sequences_are_refused(champion) -> None:
    other = episode("random", "org_simulation", "product_launch_failure", 1)
    assert split_episodes(champion + other) == [champion, other]
    with pytest.raises(TrajectoryError, match="does not follow"):
        split_episodes(champion[:3] + champion[4:])
    with pytest.raises(TrajectoryError, match="does not follow"):
        split_episodes([*champion[:3], {**other[3], "step": 4}])
    with pytest.raises(TrajectoryError, match="episode starts at step 1"):
        split_episodes(champion[1:])
    with pytest.raises(TrajectoryError, match=rf"version {TRAJECTORY_VERSION + 1} is not one this reader knows"):
        split_episodes([{**champion[0], "version": TRAJECTORY_VERSION + 1}])
    with pytest.raises(TrajectoryError, match=r"version 1 is older .* lack env_version and reward_version"):
        split_episodes([{**champion[0], "version": 1}])
    with pytest.raises(TrajectoryError, match="a record lacks seed, joint_action"):
        split_episodes([{k: v for k, v in champion[0].items() if k not in ("seed", "joint_action")}])


@pytest.mark.parametrize("field", ["env_version", "reward_version"])
def test_replay_refuses_an_episode_of_another_environment_or_reward_version(champion, field: str) -> None:
    spec = aaos.spec("org")
    assert (champion[0]["env_version"], champion[0]["reward_version"]) == (spec.version, spec.reward_version)
    other = [{**record, field: "0-old"} for record in champion]
    with pytest.raises(TrajectoryError, match=r"recorded with 'org' version .*0-old.* this checkout has version"):
        check(other)
    with pytest.raises(SnapshotError, match=r"does not restore: the episode was recorded with 'org'"):
        restore({**next(replay(champion)).snapshot, field: "0-old"})


def test_read_jsonl_names_the_bad_line(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text('{"a": 1}\n\n[1, 2]\n', encoding="utf-8")
    with pytest.raises(TrajectoryError, match=r"t.jsonl:3: a record must be a JSON object"):
        read_jsonl(path)
    path.write_text('{"a": 1}\n{"a": \n', encoding="utf-8")
    with pytest.raises(TrajectoryError, match=r"t.jsonl:2: not JSON"):
        read_jsonl(path)


def test_collect_then_replay_on_the_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "episodes.jsonl"
    assert cli(["collect", "--policy", "random", "--task", "org_simulation", "--scenario", "resource_conflict",
                "--scenario", "policy_change_shock", "--episodes", "2", "--out", str(out)]) == 0
    episodes = split_episodes(read_jsonl(out))
    assert [(e[0]["scenario"], e[0]["seed"]) for e in episodes] == [
        ("resource_conflict", 0), ("resource_conflict", 1), ("policy_change_shock", 0), ("policy_change_shock", 1)]
    assert episodes[1] == episode("random", "org_simulation", "resource_conflict", 1)
    capsys.readouterr()
    assert cli(["replay", str(out)]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "4 of 4 episodes replay exactly"

    records = read_jsonl(out)
    records[len(episodes[0]) + 2]["reward"] = 1.0
    bad = tmp_path / "bad.jsonl"
    bad.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    assert cli(["replay", str(out), str(bad)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[-1] == "7 of 8 episodes replay exactly"
    assert any(line.startswith("DIVERGED") and "resource_conflict seed 1" in line for line in lines)
    assert "  step 3: reward: recorded 1.0, replayed " in "\n".join(lines)


def test_collect_defaults_to_train_scenarios_and_train_seeds(tmp_path: Path) -> None:
    out = tmp_path / "e.jsonl"
    assert cli(["collect", "--policy", "noop", "--task", "org_simulation", "--episodes", "1", "--out", str(out)]) == 0
    firsts = [e[0] for e in split_episodes(read_jsonl(out))]
    assert sorted(r["scenario"] for r in firsts) == sorted(s["id"] for s in aaos.list_scenarios("train"))
    assert {r["seed"] for r in firsts} == {0}


def test_a_model_policy_needs_a_model_and_an_unreadable_file_is_an_error(tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    assert cli(["collect", "--policy", "llm", "--out", str(tmp_path / "x.jsonl")]) == 2
    assert "--policy llm needs --model" in capsys.readouterr().err
    (tmp_path / "broken.jsonl").write_text("not json\n", encoding="utf-8")
    assert cli(["replay", str(tmp_path / "broken.jsonl")]) == 2
    assert "broken.jsonl:1: not JSON" in capsys.readouterr().err


def test_a_trajectory_replays_exactly_in_another_process(tmp_path: Path, champion) -> None:
    path = tmp_path / "champion.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in champion), encoding="utf-8")
    env = {**os.environ, "PYTHONHASHSEED": "12345", "PYTHONPATH": str(REPO_ROOT)}
    out = subprocess.run([sys.executable, "-m", "aaos.cli", "replay", str(path)], capture_output=True,
                         text=True, env=env, cwd=tmp_path, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.startswith("exact    ")


def test_the_training_package_needs_none_of_the_train_extra(tmp_path: Path) -> None:
    code = f"""
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("torch", "trl", "transformers", "datasets", "tokenizers"):
            raise ImportError("blocked: " + name)
sys.meta_path.insert(0, Block())
import aaos, aaos.training, aaos.cli
from aaos.cli import main
assert main(["collect", "--task", "org_simulation", "--scenario", "product_launch_failure", "--episodes", "1",
             "--out", {str(tmp_path / "e.jsonl")!r}]) == 0
assert main(["grpo-data", {str(tmp_path / "e.jsonl")!r}, "--out", {str(tmp_path / "g.jsonl")!r}]) == 0
print(aaos.training.DefaultEnvironment().reset is not None)
"""
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().endswith("True")
