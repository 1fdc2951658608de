"""Re-execute a recorded episode and compare every step with its record.

Replay makes the environment from the episode's env, task, scenario and seed, sends each recorded joint
action and rebuilds the record of the step. A record that differs in any field (the reward, its breakdown,
the action results, the events, the state hash, the observation when it was recorded) is a divergence.
Replay stops at the first diverging step: every later step would differ too. An episode recorded under
another environment version or reward version than the registered environment's is refused outright
(TrajectoryError): its steps are not expected to replay.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import aaos
from aaos.core.env import Observation
from aaos.core.trajectory import state_hash, step_record, version_problem
from aaos.training.episodes import Record, TrajectoryError, meta_of, plain
from aaos.training.snapshot import Snapshot, make_snapshot

SHOWN_CHARS = 80


@dataclass(frozen=True, slots=True)
class Divergence:
    """One field of one step whose replay differs from the record.

    field: the path of the first differing value, e.g. "reward_breakdown.components.collaboration".
    """

    step: int
    field: str
    recorded: Any
    replayed: Any

    def __str__(self) -> str:
        return f"step {self.step}: {self.field}: recorded {_short(self.recorded)}, replayed {_short(self.replayed)}"


@dataclass(frozen=True, slots=True)
class ReplayedStep:
    """One step re-executed from its record.

    record: the step as recorded. observation: the observation the joint action was chosen from, as the
    replaying environment built it (plain JSON). snapshot: the environment before the step
    (aaos.training.snapshot). divergences: where the replay differs from the record; empty when exact.
    """

    record: Record
    observation: Observation
    snapshot: Snapshot
    divergences: tuple[Divergence, ...]


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 3] + "..."


def first_difference(recorded: Any, replayed: Any, path: str) -> tuple[str, Any, Any] | None:
    """The path and values of the first place two JSON values differ, or None if they are equal."""
    if recorded == replayed:
        return None
    if isinstance(recorded, dict) and isinstance(replayed, dict):
        for key in [*recorded, *(k for k in replayed if k not in recorded)]:
            found = first_difference(recorded.get(key), replayed.get(key), f"{path}.{key}")
            if found is not None:
                return found
    if isinstance(recorded, list) and isinstance(replayed, list) and len(recorded) == len(replayed):
        for index, (a, b) in enumerate(zip(recorded, replayed, strict=True)):
            found = first_difference(a, b, f"{path}[{index}]")
            if found is not None:
                return found
    return path, recorded, replayed


def _divergences(record: Record, replayed: Record) -> tuple[Divergence, ...]:
    """Where the record differs from the replay in a field the replay rebuilds (aaos.core.trajectory.step_record's;
    the observation only where the record keeps one); a writer's own notes, such as the Space's decided_by, are not
    the environment's to rebuild."""
    fields = [name for name in replayed if name != "observation" or name in record]
    found = []
    for name in fields:
        difference = first_difference(record.get(name), replayed.get(name), name)
        if difference is not None:
            found.append(Divergence(record["step"], *difference))
    return tuple(found)


def replay(episode: Sequence[Record]) -> Iterator[ReplayedStep]:
    """Re-execute one episode's records step by step (see the module docstring)."""
    meta = meta_of(episode[0])
    if problem := version_problem(episode[0], aaos.spec):
        raise TrajectoryError(f"{meta.env} {meta.task}/{meta.scenario} seed {meta.seed}: {problem}")
    env = aaos.make(meta.task, scenario=meta.scenario, seed=meta.seed, env=meta.env)
    observation = env.reset()
    actions: list[Any] = []
    before = state_hash(env.state())
    for record in episode:
        joint = record["joint_action"]
        seen = plain(observation)  # copied before the step, so the step cannot change what is compared
        result = env.step(joint)
        replayed = step_record(env.spec, meta, record["step"], joint, result, env.state(), seen)
        step = ReplayedStep(record, seen, make_snapshot(meta, actions, before), _divergences(record, replayed))
        yield step
        if step.divergences:
            return
        actions.append(joint)
        before = replayed["state_hash"]
        observation = result.observation


class ReplayDivergence(ValueError):
    """An episode that does not replay exactly; the message names it and the first diverging step."""


def exact_steps(episode: Sequence[Record]) -> Iterator[ReplayedStep]:
    """The replayed steps of an episode that must replay exactly; raises ReplayDivergence at the first that does not."""
    for step in replay(episode):
        if step.divergences:
            meta = meta_of(episode[0])
            raise ReplayDivergence(f"{meta.task}/{meta.scenario} seed {meta.seed} does not replay exactly: "
                                   + "; ".join(str(d) for d in step.divergences))
        yield step


def check(episode: Sequence[Record]) -> tuple[Divergence, ...]:
    """The divergences of the first step that replays differently; empty when the whole episode is exact."""
    for step in replay(episode):
        if step.divergences:
            return step.divergences
    return ()
