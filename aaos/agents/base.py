"""The Policy interface: an observation in, a joint action (role -> action) out."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from aaos.core.env import JointAction, Observation

Action = dict[str, Any]


def action(action_type: str, **payload: Any) -> Action:
    return {"action_type": action_type, "payload": payload}


class Policy(ABC):
    """Acts for every role from the observation; per-role policies see only that role's view."""

    name: str = "policy"

    def reset(self, seed: int | None = None) -> None:  # noqa: B027 - optional hook
        """Called at the start of an episode; stateless policies ignore it."""

    def act(self, observation: Observation) -> JointAction:
        return {role: self.act_role(role, view) for role, view in observation["agent_observations"].items()}

    @abstractmethod
    def act_role(self, role: str, view: dict[str, Any]) -> Action:
        """One role's action from that role's own view only."""
