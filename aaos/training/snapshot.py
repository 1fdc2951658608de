"""Environment snapshots as plain JSON: restore an environment exactly, in any process.

The simulation is deterministic, so a snapshot is the episode's identity plus the joint actions taken so far;
restoring makes the environment, resets it and replays the actions. The snapshot carries the hash of the state
it stands for, and restoring checks it: a snapshot made by another version of the simulation fails loudly
instead of training on a different state.

Fields of a snapshot:

    env, task, scenario, seed   the episode (as in a trajectory record).
    env_version, reward_version the environment's versions it was made under: another version does not restore.
    actions                     the joint actions of the steps taken so far, in order (empty at the start).
    state_hash                  aaos.core.trajectory.state_hash of the environment's state after those actions.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import aaos
from aaos.core.env import Environment, JointAction
from aaos.core.trajectory import EpisodeMeta, state_hash, version_problem

Snapshot = dict[str, Any]


class SnapshotError(ValueError):
    """A snapshot that does not restore to the state it names."""


def make_snapshot(meta: EpisodeMeta, actions: Sequence[JointAction], hash_: str) -> Snapshot:
    """The snapshot of `meta`'s episode after `actions`, whose state hashes to `hash_`."""
    spec = aaos.spec(meta.env)
    return {"env": meta.env, "env_version": spec.version, "reward_version": spec.reward_version, "task": meta.task,
            "scenario": meta.scenario, "seed": meta.seed, "actions": list(actions), "state_hash": hash_}


def restore(snapshot: Mapping[str, Any] | str) -> Environment:
    """A fresh environment in exactly the snapshot's state (a snapshot may be given as its JSON text)."""
    data = json.loads(snapshot) if isinstance(snapshot, str) else snapshot
    if problem := version_problem(data, aaos.spec):
        raise SnapshotError(f"the snapshot of {data.get('task')}/{data.get('scenario')} seed {data.get('seed')} "
                            f"does not restore: {problem}")
    env = aaos.make(data["task"], scenario=data["scenario"], seed=data["seed"], env=data["env"])
    env.reset()
    for joint in data["actions"]:
        env.step(joint, observe=False)
    restored = state_hash(env.state())
    if restored != data["state_hash"]:
        raise SnapshotError(f"the snapshot of {data['task']}/{data['scenario']} seed {data['seed']} after "
                            f"{len(data['actions'])} steps restores to state {restored[:12]}, not "
                            f"{data['state_hash'][:12]}: was it made by another version of the simulation?")
    return env
