"""Baselines: do nothing, and uniformly random legal actions."""

from __future__ import annotations

from typing import Any

from aaos.core.policy import Action, Policy, action
from aaos.core.seeding import rng


class NoopPolicy(Policy):
    """Every role does no_op every step."""

    name = "noop"

    def act_role(self, role: str, view: dict[str, Any]) -> Action:
        return action("no_op")


class RandomPolicy(Policy):
    """Each role picks a legal action type uniformly, then each payload choice uniformly (seeded)."""

    name = "random"

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed
        self._rng = rng("policy", self.name, seed)

    def reset(self, seed: int | None = None) -> None:
        if seed is not None:
            self.seed = seed
        self._rng = rng("policy", self.name, self.seed)

    def act_role(self, role: str, view: dict[str, Any]) -> Action:
        legal: dict[str, dict[str, Any]] = view["legal_actions"]
        if not legal:
            return action("no_op")
        name = self._rng.choice(list(legal))
        payload = {
            field: self._rng.choice(options) if isinstance(options, list) else f"{name} by {role}"
            for field, options in legal[name].items()
        }
        return {"action_type": name, "payload": payload}
