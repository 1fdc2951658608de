"""Episodes to watch in the Replay and Arena tabs: where they come from (the Play tab's episode, a benchmark's
results, the committed training evaluation, an uploaded JSONL) and one episode replayed step by step, with the
first step where it departs from the champion. Plain Python; no gradio.

A trajectory (aaos.core.trajectory) holds every step's joint action: it is re-executed (aaos.training.replay), which
rebuilds each step's observation from the actions, so a file need not carry the views. A result record
(aaos.bench.runner: one per episode, no steps) of a baseline policy is played again by that policy (baselines are
deterministic given the seed) and is shown step by step only if it scores what was recorded; a model's result
record is replayed from the steps its source kept (the committed evaluation keeps the untrained and the shipped
model's), and without them shown as its recorded scores, saying why.

The champion departure: the champion plays the same seed alongside, reading the replayed observations in order;
the marker is the first step whose joint action differs from the champion's. Up to that step both episodes are the
same, so it is also the first state in which the champion would have acted otherwise.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import aaos
from aaos.bench.runner import current_versions, salt_mismatch
from aaos.core.actions import ParsedAction, parse_action
from aaos.core.env import Observation
from aaos.core.html import action_text
from aaos.core.seeding import salt_fingerprint
from aaos.core.spec import EnvSpec
from aaos.core.trajectory import EpisodeMeta, format_problem
from aaos.data import data_dir
from aaos.policies import BASELINES
from aaos.training.episodes import Record, TrajectoryError, meta_of, play, read_jsonl, split_episodes
from aaos.training.replay import replay
from aaos.ui import formatting, names
from aaos.ui import watch_prose as words

CHAMPION = "heuristic"
EVAL_ROOT = data_dir("results") / "training"
"""The committed runs of `aaos train`: <env id>/eval.jsonl holds their holdout evaluation's result records,
eval_steps.jsonl the steps of some models' episodes."""
SCORE_TOLERANCE = 1e-9
"""A re-played baseline episode must score what its record says, to this tolerance."""
STEP_FIELDS: tuple[str, ...] = ("version", "env", "env_version", "reward_version", "task", "scenario", "seed", "step",
                                "joint_action", "action_results", "reward", "reward_breakdown", "score", "done",
                                "scenario_events", "oversight_events", "state_hash")
"""The fields of a step record (aaos.core.trajectory) that re-executing the step rebuilds and checks; a writer's own
notes (the Play tab's decided_by) are shown but not checked, and stored observations are rebuilt."""
MAX_UPLOAD_RECORDS = 20_000
"""An upload with more lines than this is refused (a long inbox episode has 300 steps)."""


@dataclass(frozen=True)
class Entry:
    """An episode a source offers. records: its trajectory records (for a result record, the steps its source kept,
    if any); result: the result record (None for a trajectory); policy: who played it, where the source says."""

    meta: EpisodeMeta
    policy: str | None
    records: tuple[Record, ...] = ()
    result: Mapping[str, Any] | None = None

    @property
    def score(self) -> float | None:
        if self.records:
            return self.records[-1].get("score")
        return None if self.result is None else self.result.get("score")

    @property
    def who(self) -> str:
        """Who played it, as the Space names the policy (aaos.ui.names; a committed evaluation's stages by the
        committed run's shipped model)."""
        if self.policy is None:
            return "trajectory"
        return names.policy_name(self.policy, committed_model(self.meta.env, "local"))

    @property
    def label(self) -> str:
        """How the episode list names it: who, what, which seed, its score and how it can be watched."""
        who = self.who
        score = "no score" if self.score is None else f"score {self.score:.3f}"
        how = f"{len(self.records)} steps" if self.records else (
            "re-played" if replay_problem(self.result or {}) is None else "scores only")
        name = formatting.episode_name(self.meta.env, self.meta.task, self.meta.scenario)
        return f"{who} · {name} · seed {self.meta.seed} · {score} · {how}"


@dataclass(frozen=True)
class Departure:
    """The first step whose joint action differs from the champion's, with each differing role's two actions
    as text (played, champion's)."""

    step: int
    roles: tuple[tuple[str, str, str], ...]


@dataclass
class Replay:
    """An episode loaded for watching. records: the steps that replay exactly (without stored observations);
    views[t - 1]: the observation step t's joint action was chosen from, as the replay rebuilt it; initial_scores:
    the reward components after reset; departure: where it first departs from the champion (None: never, or no
    steps); note: what the user should know (why there are no steps, why it stops early, how it was re-played)."""

    entry: Entry
    records: list[Record]
    views: list[Observation]
    initial_scores: dict[str, float | None]
    departure: Departure | None
    note: str

    @property
    def steps(self) -> int:
        return len(self.records)


def replay_problem(result: Mapping[str, Any]) -> str | None:
    """Why a result record's episode cannot be played again here, or None: its policy is a baseline, it did not
    fail, and it was played under this checkout's environment versions and holdout salt."""
    policy = result.get("policy")
    if policy not in BASELINES:
        return words.MODEL_NOT_REPLAYED.format(policy=policy)
    if result.get("error"):
        return words.FAILED_EPISODE.format(error=result["error"])
    if (versions := versions_problem(result)) is not None:
        return versions
    if salt_mismatch(dict(result), salt_fingerprint()):
        return words.OTHER_SALT
    return None


def versions_problem(result: Mapping[str, Any]) -> str | None:
    """Why a result record's scores are not comparable with episodes played here (other environment or reward
    versions), or None."""
    if current_versions(dict(result)):
        return None
    spec = aaos.spec(result["env"]) if result.get("env") in aaos.env_ids() else None
    return words.OTHER_VERSIONS.format(
        env=result.get("env"), version=result.get("env_version"), reward=result.get("reward_version"),
        current=spec.version if spec else "?", current_reward=spec.reward_version if spec else "?")


def entries(records: Sequence[Record]) -> list[Entry]:
    """The episodes of a file's records: trajectory records (each has a joint_action) grouped into episodes, or
    result records (each has a policy and a score), one episode each. TrajectoryError saying what is wrong
    otherwise."""
    if not records:
        raise TrajectoryError(words.EMPTY_FILE)
    if all("joint_action" in r for r in records):
        return [Entry(meta_of(e[0]), None, tuple(_without_views(e))) for e in split_episodes(records)]
    if all("policy" in r and "seed" in r for r in records):
        found = []
        for number, record in enumerate(records, start=1):
            if record.get("env") not in aaos.env_ids():
                raise TrajectoryError(f"result {number}: {words.UNKNOWN_ENV.format(env=record.get('env'))}")
            found.append(Entry(meta_of(record), str(record["policy"]), result=record))
        return found
    raise TrajectoryError(words.NOT_EPISODES)


def _without_views(episode: Sequence[Record]) -> list[Record]:
    """The records without their stored observations: the replay rebuilds those."""
    return [{k: v for k, v in record.items() if k != "observation"} for record in episode]


def read_upload(path: str | Path) -> list[Entry]:
    """The episodes of an uploaded JSONL file; TrajectoryError naming the problem."""
    records = read_jsonl(path)
    if len(records) > MAX_UPLOAD_RECORDS:
        raise TrajectoryError(words.TOO_LONG.format(count=len(records), limit=MAX_UPLOAD_RECORDS))
    return entries(records)


def committed(env_id: str, root: Path = EVAL_ROOT) -> list[Entry]:
    """The committed training evaluation's episodes of an environment (none without a committed run); a model's
    episode with its steps where the run kept them (eval_steps.jsonl: the untrained model's, each training stage's
    and the final one's decoding every legal call)."""
    path, steps_path = root / env_id / "eval.jsonl", root / env_id / "eval_steps.jsonl"
    if not path.is_file():
        return []
    steps = {(episode[0]["policy"], meta_of(episode[0])): tuple(episode)
             for episode in split_episodes(read_jsonl(steps_path) if steps_path.is_file() else [])}
    return [replace(entry, records=steps.get((entry.policy, entry.meta), ())) for entry in entries(read_jsonl(path))]


def committed_model(env_id: str, agent: str, root: Path = EVAL_ROOT) -> str | None:
    """The name the committed evaluation gives a local agent's model: "untrained" for local-untrained, the run's
    shipped model (its summary's "final") for local; None for another agent or without a committed run."""
    if agent == "local-untrained":
        return "untrained"
    path = root / env_id / "summary.json"
    if agent != "local" or not path.is_file():
        return None
    final = json.loads(path.read_text(encoding="utf-8")).get("final")
    return final if isinstance(final, str) else None


def committed_episode(meta: EpisodeMeta, policy: str, root: Path = EVAL_ROOT) -> Entry | None:
    """The committed evaluation's episode of `policy` on exactly `meta`'s episode (with its steps where the run
    kept them), if there is one."""
    return next((e for e in committed(meta.env, root) if e.meta == meta and e.policy == policy), None)


def from_play(meta: EpisodeMeta, records: Sequence[Record]) -> list[Entry]:
    """The Play tab's episode so far (nothing before its first step)."""
    return [Entry(meta, "Play tab", tuple(_without_views(records)))] if records else []


def _canonical(spec: EnvSpec, joint: Mapping[str, Any]) -> dict[str, str]:
    """Every role's action as comparable text: parsed (defaults filled in), the no-op for a role left out, the raw
    JSON for an action the environment would reject."""
    shown = {}
    for role in spec.roles:
        raw = joint.get(role) if isinstance(joint, Mapping) else None
        parsed = parse_action(spec, role, raw) if raw is not None else None
        if parsed is None:
            shown[role] = spec.noop_action
        elif isinstance(parsed, ParsedAction):
            shown[role] = action_text({"action_type": parsed.action_type, "payload": dict(parsed.fields)})
        else:
            shown[role] = f"invalid {json.dumps(raw, sort_keys=True, default=str)}"
    return shown


def departure(meta: EpisodeMeta, views: Sequence[Observation], records: Sequence[Record]) -> Departure | None:
    """The first step whose joint action differs from the champion's on the same seed (module docstring)."""
    spec = aaos.spec(meta.env)
    champion = aaos.policies.make(CHAMPION, seed=meta.seed, env=meta.env)
    champion.reset(meta.seed)
    for view, record in zip(views, records, strict=True):
        played, best = _canonical(spec, record["joint_action"]), _canonical(spec, champion.act(view))
        if played != best:
            return Departure(record["step"], tuple((r, played[r], best[r]) for r in spec.roles if played[r] != best[r]))
    return None


def _steps_of(entry: Entry) -> tuple[list[Record], str]:
    """The trajectory records to replay and a note: the entry's own, or its baseline re-played (empty, with why
    not, when it cannot be)."""
    if entry.records or entry.result is None:
        return list(entry.records), ""
    problem = replay_problem(entry.result)
    if problem is not None:
        return [], words.SCORES_ONLY.format(why=problem)
    policy = aaos.policies.make(str(entry.policy), seed=entry.meta.seed, env=entry.meta.env)
    records = _without_views(play(entry.meta, policy))
    recorded, now = float(entry.result["score"]), float(records[-1]["score"])
    if abs(recorded - now) > SCORE_TOLERANCE:
        return [], words.SCORES_ONLY.format(why=words.REPLAY_SCORE_DIFFERS.format(now=now, recorded=recorded))
    return records, words.REPLAYED.format(policy=entry.policy, score=now)


def load(entry: Entry) -> Replay:
    """Replay an entry: every step that re-executes exactly, its views and its departure from the champion.
    TrajectoryError for a trajectory this reader cannot take (an older format, another environment version)."""
    if entry.records and (problem := format_problem(entry.records[0])):
        raise TrajectoryError(problem)
    records, note = _steps_of(entry)
    initial = aaos.make(entry.meta.task, scenario=entry.meta.scenario, seed=entry.meta.seed,
                        env=entry.meta.env).reset()
    scores = dict(initial.get("partial_scores", {}))
    if not records:
        return Replay(entry, [], [], scores, None, note)
    exact: list[Record] = []
    views: list[Observation] = []
    checked = [{k: v for k, v in record.items() if k in STEP_FIELDS} for record in records]
    for record, step in zip(records, replay(checked), strict=False):
        if step.divergences:
            note = (note + " " if note else "") + words.DIVERGED.format(
                step=step.record["step"], first=step.divergences[0], exact=len(exact))
            break
        exact.append(record)
        views.append(step.observation)
    return Replay(entry, exact, views, scores, departure(entry.meta, views, exact), note)
