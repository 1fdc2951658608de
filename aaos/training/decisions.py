"""The decisions of one step exactly as the LLM agent (aaos.agents.llm) meets them, for training data.

Per-role mode: one decision per role, the chat built by `role_messages` from that role's view only, answered
with that role's action. Joint mode: one decision for the whole step, the chat built by `joint_messages`,
answered with every role's action; compact mode the same with `compact_messages`. Answers are checked by
the agent's own `decode` and `validate_answer`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from aaos.agents.base import Action
from aaos.agents.llm import MODES, InvalidAnswer, Mode, decode, validate_answer
from aaos.agents.prompts import compact_messages, joint_messages, role_messages
from aaos.core.env import JointAction, Observation
from aaos.core.spec import EnvSpec


@dataclass(frozen=True, slots=True)
class Decision:
    """One chat the agent answers. role: the role it decides for, or None for a joint decision (every role)."""

    role: str | None
    messages: list[dict[str, str]]

    def roles(self, spec: EnvSpec) -> tuple[str, ...]:
        """The roles whose actions the answer holds."""
        return spec.roles if self.role is None else (self.role,)


def decisions(observation: Observation, spec: EnvSpec, mode: Mode) -> list[Decision]:
    """The chats of one step: one per role (per_role) or one for all roles (joint)."""
    if mode == "joint":
        return [Decision(None, joint_messages(observation, spec))]
    if mode == "compact":
        return [Decision(None, compact_messages(observation, spec))]
    if mode == "per_role":
        return [Decision(role, role_messages(role, view, spec))
                for role, view in observation["agent_observations"].items()]
    raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")


def _action(joint_action: Mapping[str, Any], role: str, spec: EnvSpec) -> Action:
    sent = joint_action.get(role) or {"action_type": spec.noop_action}
    return {"action_type": sent["action_type"], "payload": dict(sent.get("payload") or {})}


def answer_text(role: str | None, joint_action: JointAction, spec: EnvSpec) -> str:
    """The assistant's answer for a decision: the role's action, or (joint) every role's action, as JSON.

    A role left out of the joint action did the no-op, and its answer says so."""
    if role is not None:
        return json.dumps(_action(joint_action, role, spec))
    return json.dumps({r: _action(joint_action, r, spec) for r in spec.roles})


def parse_answer(spec: EnvSpec, role: str | None, text: str, observation: Observation) -> dict[str, Action]:
    """The actions an answer gives (role -> action), checked as the LLM agent checks them: valid JSON, a known
    action the role may take now, payload choices from its legal actions. Raises InvalidAnswer."""
    data = decode(text)
    views = observation["agent_observations"]
    if role is not None:
        return {role: validate_answer(spec, role, data, views[role]["legal_actions"])}
    if not isinstance(data, dict):
        raise InvalidAnswer("the answer must be a JSON object mapping each role to its action")
    return {r: validate_answer(spec, r, data.get(r), views[r]["legal_actions"]) for r in spec.roles}


def completion_text(completion: str | list[dict[str, Any]]) -> str:
    """The assistant's text in a TRL completion: the text itself (standard format) or the content of the first
    assistant message (conversational format)."""
    if isinstance(completion, str):
        return completion
    return next((m.get("content") or "" for m in completion if m.get("role") == "assistant"), "")
