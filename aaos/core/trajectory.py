"""The per-step trajectory record: one JSON object per step, written as JSONL.

Written by the Space's downloads, `aaos collect` and `aaos bench --trajectories`; read by `aaos replay` and the
training datasets (aaos.training). The record is versioned: a reader checks `version` against TRAJECTORY_VERSION
before relying on the fields (`format_problem`), and an episode replays only under the environment version and
reward version it was recorded with (`version_problem`).

Fields of a record (every value is plain JSON):

    version           TRAJECTORY_VERSION of the writer (2; version 1 records lack env_version and reward_version).
    env               environment id (a registered one: aaos.env_ids()).
    env_version       the environment's spec version when the step was played.
    reward_version    the environment's reward (grader) version when the step was played.
    task              task id.
    scenario          scenario id (or the path of a scenario file).
    seed              the episode's seed (seeds >= 10000 draw holdout variants).
    step              the step number once this step was applied: 1 for the first step of an episode.
    joint_action      what was sent: role -> {"action_type", "payload"}; roles left out did the no-op.
    action_results    role -> what became of its action (status applied / no_effect / rejected, reason, message).
    reward            the reward delivered this step (immediate share of the score's increment plus any released
                      held share; negative when the score fell).
    reward_breakdown  components (name -> value in [0, 1], or null while nothing is graded), penalty, increment,
                      immediate, delayed, released.
    score             the graded composite after this step (the episode score on the last step).
    done              whether the episode ended with this step.
    scenario_events   events that fired during this step.
    oversight_events  oversight violations recorded during this step (step, role, rule, severity, penalty, ...).
    state_hash        sha256 (hex) of json.dumps(env.state(), sort_keys=True) after the step: replaying the
                      same episode must reproduce every hash.
    observation       (optional, present when the writer passed it) the observation the joint action was chosen
                      from, i.e. before the step: every role's view in agent_observations (with its legal_actions
                      and last_action_result) plus the shared fields. Training data builds the agents' prompts from
                      it; replay checks it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from aaos.core.env import StepResult
from aaos.core.spec import EnvSpec

TRAJECTORY_VERSION = 2


@dataclass(frozen=True, slots=True)
class EpisodeMeta:
    """What identifies an episode: environment, task, scenario and seed."""

    env: str
    task: str
    scenario: str
    seed: int


def state_hash(state: Mapping[str, Any]) -> str:
    """sha256 (hex) of the state as canonical JSON (sorted keys)."""
    return hashlib.sha256(json.dumps(state, sort_keys=True).encode()).hexdigest()


def _plain(value: Any) -> Any:
    """`value` as plain JSON data (pydantic models are dumped); a copy, so later changes do not leak in."""
    def default(item: Any) -> Any:
        if isinstance(item, BaseModel):
            return item.model_dump()
        raise TypeError(f"{type(item).__name__} is not JSON-serialisable")

    return json.loads(json.dumps(value, default=default))


def step_record(spec: EnvSpec, meta: EpisodeMeta, step: int, joint_action: Mapping[str, Any], result: StepResult,
                state: Mapping[str, Any], observation: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The record of one step of an episode of the environment `spec` describes: `joint_action` is what was
    sent, `result` what step() returned and `state` the environment's state() right after it (only its hash is
    kept). `observation`, when given, is the observation the joint action was chosen from; it is kept as the
    optional `observation` field."""
    if spec.id != meta.env:
        raise ValueError(f"the episode is of environment {meta.env!r} but the spec given is {spec.id!r}'s")
    info = result.info
    record = {
        "version": TRAJECTORY_VERSION,
        "env": meta.env,
        "env_version": spec.version,
        "reward_version": spec.reward_version,
        "task": meta.task,
        "scenario": meta.scenario,
        "seed": meta.seed,
        "step": step,
        "joint_action": _plain(joint_action),
        "action_results": _plain(info.get("action_results", {})),
        "reward": result.reward,
        "reward_breakdown": _plain(info.get("reward_breakdown", {})),
        "score": info.get("score"),
        "done": result.done,
        "scenario_events": _plain(info.get("scenario_events", [])),
        "oversight_events": _plain(info.get("oversight_events", [])),
        "state_hash": state_hash(state),
    }
    if observation is not None:
        record["observation"] = _plain(observation)
    return record


def format_problem(record: Mapping[str, Any]) -> str | None:
    """Why a record cannot be read by this version of the code (an older or unknown format), or None."""
    version = record.get("version")
    if version == TRAJECTORY_VERSION:
        return None
    if isinstance(version, int) and not isinstance(version, bool) and 0 < version < TRAJECTORY_VERSION:
        return (f"trajectory version {version} is older than this reader's {TRAJECTORY_VERSION}: its records lack "
                "env_version and reward_version, so nothing says which grader scored them; collect the episodes "
                "again (aaos collect, or aaos bench --trajectories)")
    return (f"trajectory version {version!r} is not one this reader knows (it reads version {TRAJECTORY_VERSION}); "
            "was it written by a newer aaos?")


def version_problem(record: Mapping[str, Any], spec_of: Callable[[str], EnvSpec]) -> str | None:
    """Why a record's episode cannot be replayed here: its environment is unknown to `spec_of` (the registry's
    aaos.spec: env id -> spec, ValueError for an unknown one), or it was played under another environment version
    or reward version than that spec's; None when it can be."""
    env = record.get("env")
    if not isinstance(env, str):
        return f"the record names no environment (env is {env!r})"
    try:
        current = spec_of(env)
    except ValueError as error:
        return str(error)
    recorded = (record.get("env_version"), record.get("reward_version"))
    if recorded == (current.version, current.reward_version):
        return None
    return (f"the episode was recorded with {env!r} version {recorded[0]!r}, reward version {recorded[1]!r}; this "
            f"checkout has version {current.version!r}, reward version {current.reward_version!r}: its steps "
            "would not replay (or score) the same, so it is refused; collect it again with this version")


def write_jsonl(records: Iterable[Mapping[str, Any]], path: str | Path) -> Path:
    """Write one record per line (UTF-8); creates the parent directory. Returns the path."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    with target.open("w", encoding="utf-8") as out:
        for record in records:
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
    return target
