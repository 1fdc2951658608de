"""The Policy interface: an observation in, a joint action (role -> action) out."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from aaos.core.env import Environment, JointAction, Observation

Action = dict[str, Any]


def action(action_type: str, **payload: Any) -> Action:
    return {"action_type": action_type, "payload": payload}


class Policy(ABC):
    """Acts for every role from the observation; per-role policies see only that role's view."""

    name: str = "policy"

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
