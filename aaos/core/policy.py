"""The Policy interface: an observation in, a joint action (role -> action) out; and the Oracle base, a reference
policy that reads the ground truth.

It lives in the core so that an environment's champion and oracle subclass it without importing the agents
(aaos.agents re-exports it beside the generic policies).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any

from aaos.core.env import Environment, JointAction, Observation

Action = dict[str, Any]


def action(action_type: str, **payload: Any) -> Action:
    return {"action_type": action_type, "payload": payload}


class Policy(ABC):
    """Acts for every role from the observation; per-role policies see only that role's view."""

    name: str = "policy"
    reads_hidden_state: bool = False
    """True for a reference that reads the ground truth (an Oracle): the benchmark plays it but never ranks it."""

    def reset(self, seed: int | None = None) -> None:  # noqa: B027 - optional hook
        """Called at the start of an episode; stateless policies ignore it."""

    def bind(self, env: Environment) -> None:  # noqa: B027 - optional hook
        """Called by runners with the episode's environment; only policies that look ahead use it."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release connections or threads (sync callers); policies without any ignore it."""

    async def aclose(self) -> None:  # noqa: B027 - optional hook
        """Release connections opened by act_async, from inside the event loop that used them."""

    def act(self, observation: Observation) -> JointAction:
        return {role: self.act_role(role, view) for role, view in observation["agent_observations"].items()}

    async def act_async(self, observation: Observation) -> JointAction:
        """The async form of act; model-backed policies override it to overlap their calls."""
        return self.act(observation)

    @abstractmethod
    def act_role(self, role: str, view: dict[str, Any]) -> Action:
        """One role's action from that role's own view only."""


class Oracle(Policy):
    """A reference policy fed the ground truth: bind(env) it to the episode's environment, then each act reads
    env.state() (through `read_truth`) before acting. For calibration only (the headroom information is worth),
    never an agent: `reads_hidden_state` is set, so the benchmark leaves its rows unranked. An environment's oracle
    puts this class first among its bases (class MyOracle(Oracle, MyChampion)) to reuse its champion's rules."""

    name = "oracle"
    reads_hidden_state = True
    _env: Environment | None = None

    def bind(self, env: Environment) -> None:
        self._env = env

    def act(self, observation: Observation) -> JointAction:
        if self._env is None:
            raise RuntimeError(f"the {self.name} reads the ground truth: bind(env) it to the episode's environment "
                               "first")
        self.read_truth(self._env.state(), observation)
        return super().act(observation)

    @abstractmethod
    def read_truth(self, state: Mapping[str, Any], observation: Observation) -> None:
        """Take from the ground truth (env.state() now) what this step's decisions need."""
