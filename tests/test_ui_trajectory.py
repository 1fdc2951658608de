"""The versioned per-step trajectory record (aaos.core.trajectory) that the Space downloads."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import aaos
from aaos.core.trajectory import TRAJECTORY_VERSION, EpisodeMeta, state_hash, step_record, write_jsonl

FIELDS = ["version", "env", "env_version", "reward_version", "task", "scenario", "seed", "step", "joint_action",
          "action_results", "reward", "reward_breakdown", "score", "done", "scenario_events", "oversight_events",
          "state_hash"]


def champion_records(task: str = "crisis_management", scenario: str = "product_launch_failure",
                     seed: int = 1) -> list[dict[str, Any]]:
    meta = EpisodeMeta("org", task, scenario, seed)
    env = aaos.make(task, scenario=scenario, seed=seed)
    policy = aaos.policies.make("heuristic")
    observation = env.reset()
    records = []
    while True:
        joint = policy.act(observation)
        result = env.step(joint)
        records.append(step_record(env.spec, meta, len(records) + 1, joint, result, env.state()))
        observation = result.observation
        if result.done:
            return records


def test_a_record_has_exactly_the_documented_fields_as_plain_json() -> None:
    records = champion_records()
    assert all(list(record) == FIELDS for record in records)
    first, last = records[0], records[-1]
    assert first["version"] == TRAJECTORY_VERSION
    spec = aaos.spec("org")
    assert (first["env"], first["env_version"], first["reward_version"]) == ("org", spec.version, spec.reward_version)
    assert (first["task"], first["scenario"], first["seed"]) == ("crisis_management", "product_launch_failure", 1)
    assert [r["step"] for r in records] == list(range(1, len(records) + 1))
    assert last["done"] and not any(r["done"] for r in records[:-1])
    assert set(first["reward_breakdown"]) == {"components", "penalty", "increment", "immediate", "delayed", "released"}
    assert set(first["action_results"]) == set(aaos.spec("org").roles)
    assert json.loads(json.dumps(records)) == records
    assert any(r["scenario_events"] for r in records)


def test_the_state_hash_is_the_sha256_of_the_sorted_state() -> None:
    env = aaos.make("full_episode", seed=0)
    env.reset()
    result = env.step({})
    record = step_record(env.spec, EpisodeMeta("org", "full_episode", "product_launch_failure", 0), 1, {}, result,
                         env.state())
    expected = hashlib.sha256(json.dumps(env.state(), sort_keys=True).encode()).hexdigest()
    assert record["state_hash"] == expected == state_hash(env.state())


def test_replaying_an_episode_reproduces_every_record() -> None:
    assert champion_records(seed=10002) == champion_records(seed=10002)
    assert champion_records(seed=1)[-1]["state_hash"] != champion_records(seed=2)[-1]["state_hash"]


def test_the_record_copies_the_joint_action_and_dumps_pydantic_payloads() -> None:
    env = aaos.make("full_episode", seed=0)
    env.reset()
    payload = aaos.spec("org").action("delegate_task").payload(task_id="task_frontend", to="engineer")
    joint = {"product_manager": {"action_type": "delegate_task", "payload": payload}}
    result = env.step(joint)
    record = step_record(env.spec, EpisodeMeta("org", "full_episode", "product_launch_failure", 0), 1, joint, result,
                         env.state())
    assert record["joint_action"]["product_manager"]["payload"] == {"task_id": "task_frontend", "to": "engineer"}
    joint["product_manager"]["action_type"] = "no_op"
    assert record["joint_action"]["product_manager"]["action_type"] == "delegate_task"


def test_write_jsonl_writes_one_record_per_line(tmp_path: Path) -> None:
    records = champion_records(task="org_simulation")
    path = write_jsonl(records, tmp_path / "runs" / "episode.jsonl")
    lines = path.read_text(encoding="utf-8").splitlines()
    assert len(lines) == len(records) and [json.loads(line) for line in lines] == records


def test_the_module_does_not_import_gradio() -> None:
    code = "import sys, aaos.core.trajectory; print('gradio' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_the_space_s_trajectory_records_observations_and_replays_exactly() -> None:
    from aaos.core.trajectory import EpisodeMeta
    from aaos.training.replay import check
    from aaos.ui.session import Session

    session = Session(EpisodeMeta("org", "crisis_management", "policy_change_shock", 10_001))
    champion = aaos.policies.make("heuristic")
    for _ in range(6):
        session.step(champion.act(session.env.observation()))
    assert [r["step"] for r in session.records] == [1, 2, 3, 4, 5, 6]
    assert session.records[0]["observation"]["step_count"] == 0
    assert check(session.records) == ()
