"""Golden trajectories: a digest of every observation, reward and info of the champion's and random's episodes on
every task x scenario x 3 seeds of each environment, so that a change meant to be invisible (a faster
observation, a leaner step) is proven invisible.

    python tests/golden.py [ENV ...]  # re-record those environments (default org) after a deliberate change
                                      # (and bump the environment's version or reward_version)

The file is keyed by environment and version: a digest recorded for another version is not compared.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import aaos

GOLDEN = Path(__file__).with_name("golden_trajectories.json")
SEEDS = (0, 1, 10_000)
POLICIES = ("heuristic", "random")


def version(env_id: str) -> str:
    spec = aaos.spec(env_id)
    return f"{spec.version}/{spec.reward_version}"


def digest(env_id: str, task: str, scenario: str, seed: int, policy_name: str) -> str:
    """sha256 of the episode: the first observation, then every step's observation, reward, done and info, as
    JSON in their own key order (the order is part of what a client receives)."""
    env = aaos.make(task, scenario=scenario, seed=seed, env=env_id)
    policy = aaos.policies.make(policy_name, seed=seed, env=env_id)
    policy.reset(seed)
    observation = env.reset()
    policy.bind(env)
    hashed = hashlib.sha256(json.dumps(observation).encode())
    while True:
        result = env.step(policy.act(observation))
        hashed.update(json.dumps(result.to_dict()).encode())
        observation = result.observation
        if result.done:
            return hashed.hexdigest()


def episodes(env_id: str) -> list[tuple[str, str, int, str]]:
    spec = aaos.spec(env_id)
    return [(t.id, s.id, seed, policy) for t in spec.tasks for s in spec.scenarios for seed in SEEDS
            for policy in POLICIES]


def key(task: str, scenario: str, seed: int, policy: str) -> str:
    return f"{task}|{scenario}|{seed}|{policy}"


def record(env_ids: list[str]) -> dict[str, dict[str, object]]:
    return {env_id: {"version": version(env_id),
                     "episodes": {key(*e): digest(env_id, *e) for e in episodes(env_id)}} for env_id in env_ids}


if __name__ == "__main__":
    recorded = json.loads(GOLDEN.read_text()) if GOLDEN.exists() else {}
    recorded.update(record(sys.argv[1:] or [aaos.DEFAULT_ENV]))
    GOLDEN.write_text(json.dumps(recorded, indent=1, sort_keys=True) + "\n")
    print(f"wrote {GOLDEN}")
