"""The decisions of one step exactly as the LLM agent (aaos.agents.llm) meets them, for training data.

Per-role mode: one decision per role, the chat built by `role_messages` from that role's view only, answered
with that role's action. Joint mode: one decision for the whole step, the chat built by `joint_messages`,
answered with every role's action; compact mode the same with `compact_messages`, each action written as a
call (`compact_call`). Answers are checked by the agent's own `decode`, `validate_answer` and
`joint_role_answer`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from aaos.agents.llm import MODES, Mode, answers_by_role, decodable_calls, decode, joint_role_answer, validate_answer
from aaos.agents.prompts import compact_call, compact_messages, joint_messages, role_messages
from aaos.core.actions import ParsedAction, parse_action
from aaos.core.env import JointAction, Observation
from aaos.core.policy import Action
from aaos.core.spec import EnvSpec


@dataclass(frozen=True, slots=True)
class Decision:
    """One chat the agent answers. role: the role it decides for, or None for a joint decision (every role)."""

    role: str | None
    messages: list[dict[str, str]]
    mode: Mode

    def roles(self, spec: EnvSpec) -> tuple[str, ...]:
        """The roles whose actions the answer holds."""
        return spec.roles if self.role is None else (self.role,)


def decisions(observation: Observation, spec: EnvSpec, mode: Mode) -> list[Decision]:
    """The chats of one step: one per role (per_role) or one for all roles (joint)."""
    if mode == "joint":
        return [Decision(None, joint_messages(observation, spec), mode)]
    if mode == "compact":
        return [Decision(None, compact_messages(observation, spec), mode)]
    if mode == "per_role":
        return [Decision(role, role_messages(role, view, spec), mode)
                for role, view in observation["agent_observations"].items()]
    raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")


def _action(joint_action: Mapping[str, Any], role: str, spec: EnvSpec) -> Action:
    sent = joint_action.get(role) or {"action_type": spec.noop_action}
    return {"action_type": sent["action_type"], "payload": dict(sent.get("payload") or {})}


def _call(action: Action, role: str, legal: Mapping[str, Any], spec: EnvSpec) -> str:
    """The action's compact call, with the payload as the environment reads it (defaults filled in)."""
    parsed = parse_action(spec, role, action)
    payload = parsed.payload.model_dump() if isinstance(parsed, ParsedAction) else action["payload"]
    return compact_call(action["action_type"], payload, legal.get(action["action_type"], {}))


def answer_text(decision: Decision, joint_action: JointAction, observation: Observation, spec: EnvSpec) -> str:
    """The assistant's answer for a decision: the role's action, or (joint) every role's action, as JSON; a
    compact answer is an array of every role's action in role order, each written as its call over the role's
    legal actions in the observation.

    A role left out of the joint action did the no-op, and its answer says so."""
    if decision.role is not None:
        return json.dumps(_action(joint_action, decision.role, spec))
    actions = {role: _action(joint_action, role, spec) for role in spec.roles}
    if decision.mode != "compact":
        return json.dumps(actions)
    views = observation["agent_observations"]
    return json.dumps([_call(action, role, views[role]["legal_actions"], spec) for role, action in actions.items()])


def parse_answer(spec: EnvSpec, role: str | None, text: str, observation: Observation,
                 mode: Mode = "per_role") -> dict[str, Action]:
    """The actions an answer gives (role -> action), checked as the LLM agent checks them: valid JSON, a known
    action the role may take now, payload choices from its legal actions (a compact answer: one of the role's
    legal calls). Raises InvalidAnswer."""
    data = decode(text)
    views = observation["agent_observations"]
    if role is not None:
        return {role: validate_answer(spec, role, data, views[role]["legal_actions"])}
    by_role = answers_by_role(data, spec.roles, mode)
    return {r: joint_role_answer(spec, r, by_role.get(r), views[r]["legal_actions"], mode) for r in spec.roles}


def completion_text(completion: str | list[dict[str, Any]]) -> str:
    """The assistant's text in a TRL completion: the text itself (standard format) or the content of the first
    assistant message (conversational format)."""
    if isinstance(completion, str):
        return completion
    return next((m.get("content") or "" for m in completion if m.get("role") == "assistant"), "")


def branch_chars(target: str, options: Iterable[str]) -> list[int]:
    """The offsets in `target` at which the options that agree with it so far still differ: where a decoder
    constrained to `options` has a real choice. Characters every remaining option shares (the rest of an action's
    name once it is told apart, the prefix every id has, a call's punctuation) are not among them."""
    remaining = [option for option in options if option != target and option]
    chars: list[int] = []
    for i, char in enumerate(target):
        if not remaining:
            break
        if any(len(option) <= i or option[i] != char for option in remaining):
            chars.append(i)
        remaining = [option for option in remaining if len(option) > i and option[i] == char]
    return chars


def decision_chars(decision: Decision, answer: str, observation: Observation, spec: EnvSpec) -> list[int]:
    """The offsets in a compact `answer` of the characters that decide it: for each role's call, those where the
    calls the LLM agent's decoding admits (safe decoding, as the local model decodes) branch (branch_chars).
    Training weights the tokens that hold them (aaos.training.weighted); an answer of another mode has none."""
    if decision.mode != "compact":
        return []
    calls = json.loads(answer)
    views = observation["agent_observations"]
    chars: list[int] = []
    at = 0
    for role, call in zip(spec.roles, calls, strict=True):
        start = answer.index(json.dumps(call), at) + 1  # after the call's opening quote
        admitted = decodable_calls(spec, role, views[role], "safe")
        chars.extend(start + i for i in branch_chars(call, admitted))
        at = start + len(call)
    return chars
