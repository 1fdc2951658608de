"""Toy environments each broken in one way, for proving that `aaos.check_env` catches that way (and only that),
and `registered`, which registers environments for one test.

Each is the toy (tests/toy_env.py) with one method overridden, registered under its own id with the toy's kit.
Subprocesses find them as "broken_envs:<NAME>" with tests/ on PYTHONPATH.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Sequence
from typing import Any

from toy_env import KIT, ToyEnv, toy_spec

from aaos.core.env import Episode, JointAction, Observation, StepResult
from aaos.core.kit import EnvKit
from aaos.core.spec import EnvSpec


class GlobalRandomToy(ToyEnv):
    """Parcel ids drawn from the global random module: two runs in one process differ."""

    def _build(self, episode: Episode, parcels: int) -> None:
        super()._build(episode, parcels)
        for parcel in self.parcels:
            parcel["id"] = f"parcel_{random.randrange(16**6):06x}"


class StringHashToy(ToyEnv):
    """Parcel ids from hash() of strings: stable within a process, different under another PYTHONHASHSEED."""

    def _build(self, episode: Episode, parcels: int) -> None:
        super()._build(episode, parcels)
        for index, parcel in enumerate(self.parcels):
            parcel["id"] = f"parcel_{hash((episode.scenario, str(episode.seed), str(index))) % 16**6:06x}"


class RaisingToy(ToyEnv):
    """step() raises on a joint action that is not an object instead of reporting it."""

    def _step(self, joint_action: JointAction, observe: bool) -> StepResult:
        if not isinstance(joint_action, dict):
            raise TypeError(f"a joint action must be a dict, got {type(joint_action).__name__}")
        return super()._step(joint_action, observe)


class LeakyToy(ToyEnv):
    """Every view names the next parcel to arrive, before it has arrived."""

    def observation(self) -> Observation:
        observation = super().observation()
        upcoming = [p["id"] for p in self.parcels if p["arrives"] > self.step_count]
        for view in observation["agent_observations"].values():
            view["expected_next"] = upcoming[:1]
        return observation


class HalfRewardToy(ToyEnv):
    """Pays half of every reward: the rewards no longer sum to the score."""

    def _step(self, joint_action: JointAction, observe: bool) -> StepResult:
        result = super()._step(joint_action, observe)
        return dataclasses.replace(result, reward=result.reward / 2)


class NoReasonToy(ToyEnv):
    """The step info's action results lack the "reason" key (the observation's copies keep it)."""

    def _step(self, joint_action: JointAction, observe: bool) -> StepResult:
        result = super()._step(joint_action, observe)
        info: dict[str, Any] = dict(result.info)
        info["action_results"] = {role: {k: v for k, v in record.items() if k != "reason"}
                                  for role, record in info["action_results"].items()}
        return dataclasses.replace(result, info=info)


class WideRoleViewToy(ToyEnv):
    """observation_of(roles) keeps the world-wide `dock` beside those roles' views: a client that plays one role
    would be sent what no role sees."""

    def observation_of(self, roles: Sequence[str]) -> Observation:
        observation = self.observation()
        views = observation["agent_observations"]
        return {**observation, "agent_observations": {role: views[role] for role in roles}}


def _kit(env_id: str, environment: type[ToyEnv]) -> EnvKit:
    def declared() -> EnvSpec:
        return dataclasses.replace(toy_spec(), id=env_id)

    return dataclasses.replace(KIT, environment=environment, spec=declared)


GLOBAL_RANDOM = _kit("toy_global_random", GlobalRandomToy)
STRING_HASH = _kit("toy_string_hash", StringHashToy)
RAISING = _kit("toy_raising", RaisingToy)
LEAKY = _kit("toy_leaky", LeakyToy)
HALF_REWARD = _kit("toy_half_reward", HalfRewardToy)
NO_REASON = _kit("toy_no_reason", NoReasonToy)
WIDE_ROLE_VIEW = _kit("toy_wide_role_view", WideRoleViewToy)

BROKEN: dict[str, tuple[str, set[str]]] = {
    "toy_global_random": ("GLOBAL_RANDOM", {"determinism"}),
    "toy_string_hash": ("STRING_HASH", {"cross_process_determinism"}),
    "toy_raising": ("RAISING", {"malformed_input"}),
    "toy_leaky": ("LEAKY", {"hidden_ids"}),
    "toy_half_reward": ("HALF_REWARD", {"return_is_score"}),
    "toy_no_reason": ("NO_REASON", {"contracts"}),
    "toy_wide_role_view": ("WIDE_ROLE_VIEW", {"contracts"}),
}
"""env id -> (the kit's name in this module, the checks it must fail and no others)."""
