"""Trajectory files as episodes: play one episode into records, read JSONL back, split it into episodes.

A trajectory file holds the records of one or more episodes one after another (aaos.core.trajectory); an
episode's records have steps 1, 2, ... n and the same env, task, scenario and seed.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import aaos
from aaos.core.policy import Policy
from aaos.core.trajectory import EpisodeMeta, format_problem, step_record

Record = dict[str, Any]
REPLAYED_FIELDS = ("env", "env_version", "reward_version", "task", "scenario", "seed", "step", "joint_action", "done")
"""The fields replay needs; it compares every other field the record has."""


class TrajectoryError(ValueError):
    """A trajectory file that cannot be read as episodes; the message names the file, line or step."""


def play(meta: EpisodeMeta, policy: Policy) -> list[Record]:
    """Play one episode with `policy`; one record per step, each with the observation it acted on."""
    env = aaos.make(meta.task, scenario=meta.scenario, seed=meta.seed, env=meta.env)
    policy.reset(meta.seed)
    observation = env.reset()
    policy.bind(env)
    records: list[Record] = []
    while True:
        joint = policy.act(observation)
        seen = plain(observation)  # copied before the step, so the step cannot change what is recorded
        result = env.step(joint)
        records.append(step_record(env.spec, meta, len(records) + 1, joint, result, env.state(), seen))
        if result.done:
            return records
        observation = result.observation


def plain(value: Any) -> Any:
    """A deep copy of JSON data."""
    return json.loads(json.dumps(value))


def meta_of(record: Mapping[str, Any]) -> EpisodeMeta:
    """The episode a record belongs to."""
    return EpisodeMeta(record["env"], record["task"], record["scenario"], record["seed"])


def provenance(record: Mapping[str, Any]) -> dict[str, Any]:
    """Where a training row comes from: env, task, scenario, seed, and step (the steps taken before the decision)."""
    return {"env": record["env"], "task": record["task"], "scenario": record["scenario"], "seed": record["seed"],
            "step": record["step"] - 1}


def read_jsonl(path: str | Path) -> list[Record]:
    """Every record of a JSONL file; a line that is not a JSON object raises TrajectoryError naming it."""
    records = []
    with Path(path).open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as error:
                raise TrajectoryError(f"{path}:{number}: not JSON ({error.msg})") from error
            if not isinstance(record, dict):
                raise TrajectoryError(f"{path}:{number}: a record must be a JSON object")
            records.append(record)
    return records


def split_episodes(records: Iterable[Record]) -> list[list[Record]]:
    """Group consecutive records into episodes: step 1 starts one, each next record is the next step of it."""
    episodes: list[list[Record]] = []
    for record in records:
        if problem := format_problem(record):
            raise TrajectoryError(problem)
        missing = [name for name in REPLAYED_FIELDS if name not in record]
        if missing:
            raise TrajectoryError(f"a record lacks {', '.join(missing)}")
        if record["step"] == 1:
            episodes.append([record])
            continue
        if not episodes:
            raise TrajectoryError(f"the first record is step {record['step']}; an episode starts at step 1")
        last = episodes[-1][-1]
        if record["step"] != last["step"] + 1 or meta_of(record) != meta_of(last) or last["done"]:
            raise TrajectoryError(f"step {record['step']} of {meta_of(record)} does not follow step {last['step']} "
                                  f"of {meta_of(last)}")
        episodes[-1].append(record)
    return episodes


def read_episodes(paths: Iterable[str | Path], env: str | None = None) -> list[list[Record]]:
    """The episodes of one or more trajectory files, in order. With `env`, every episode must be of that
    environment (TrajectoryError naming the file and the environments found otherwise)."""
    episodes = []
    for path in paths:
        found = split_episodes(read_jsonl(path))
        others = sorted({episode[0]["env"] for episode in found} - {env}) if env is not None else []
        if others:
            raise TrajectoryError(f"{path}: holds episodes of {', '.join(map(repr, others))}, not only of {env!r}")
        episodes += found
    return episodes
