"""What every API surface (HTTP, WebSocket, MCP) puts on the wire beyond the simulation itself: lean
observations (only what the roles a client plays see, or none), the JSON encoding of answers, and error
messages that never echo long input.

A client that plays one role, or only needs rewards, asks for less: `roles` sends what those roles see (the
keys every observation has, with only their views: aaos.core.env.seen_by; the info's `action_results` only
theirs), `observe=False` sends no observation at all (`"observation": null`; reward, done and info still
come). The default is the full observation, as OpenEnv clients expect. `Lean.of` checks a request's choice
against the session's environment; `Lean.step` (a step's answer: only the asked-for views are built) and
`Lean.observation` (a reset's) apply it, the same way on every surface.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import orjson
from pydantic_core import to_jsonable_python

import aaos
from aaos.core.actions import at_most
from aaos.core.env import Environment, JointAction, Observation, StepResult, seen_by
from aaos.server.models import MAX_JSON_DEPTH, MAX_MESSAGES, MAX_SEED, InvalidParams


def dumps(data: Any) -> bytes:
    """JSON bytes of an answer, with orjson (about four times as fast as pydantic's encoder on an observation);
    anything that is not plain data (a pydantic model) is encoded as pydantic would. A dict key that is not a
    string (an environment's state may have some) is written as JSON writes it; allowing for them costs orjson
    ~60 % more on every answer, so only an answer that has one pays it. What orjson cannot write at all, an
    integer beyond 64 bits or a lone surrogate (a client's own input echoed back, such as a JSON-RPC id), the
    standard library writes (the surrogate as its \\u escape)."""
    try:
        return orjson.dumps(data, default=to_jsonable_python)
    except orjson.JSONEncodeError:
        pass
    try:
        return orjson.dumps(data, default=to_jsonable_python, option=orjson.OPT_NON_STR_KEYS)
    except orjson.JSONEncodeError as refused:
        try:
            return json.dumps(data, default=to_jsonable_python).encode()
        except ValueError:  # not JSON data at all (pydantic cannot encode it either): orjson's error says what
            raise refused from None


MAX_ECHO_CHARS = 200
"""An error message is cut to this many characters, so that an error about a huge input is never huge."""


def clip(text: str, limit: int = MAX_ECHO_CHARS) -> str:
    """`text` cut to `limit` characters, saying how much was left out."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text) - limit} more characters)"


def clipped(messages: Sequence[str]) -> list[str]:
    """At most MAX_MESSAGES messages, each clipped, then one saying how many more there are, if any."""
    return [clip(message) for message in at_most(messages, MAX_MESSAGES)]


def undecodable(cause: BaseException, what: str) -> str:
    """Why `what` (the request body, a message), UTF-8 and not malformed JSON, could not be decoded, from what
    json.loads raised."""
    if isinstance(cause, RecursionError):
        return f"{what} nests too deeply to decode: JSON objects and arrays may nest at most {MAX_JSON_DEPTH} levels"
    if isinstance(cause, ValueError) and "integer string conversion" in str(cause):
        return (f"{what} holds an integer of more than {sys.get_int_max_str_digits()} digits, too long to decode; no "
                f"field takes one (a seed is at most {MAX_SEED})")
    return f"{what} could not be decoded as JSON: {clip(str(cause))}"


@dataclass(frozen=True, slots=True)
class Lean:
    """Which part of the observation a client asked for. roles: the roles whose views to keep (None: every
    role); observe: False for no observation at all."""

    roles: tuple[str, ...] | None = None
    observe: bool = True

    @classmethod
    def of(cls, env: str, roles: Sequence[str] | None, observe: bool = True) -> Lean:
        """The choice, checked against environment `env`'s roles: InvalidParams naming the valid roles if
        `roles` names another (nothing has been changed yet when it raises)."""
        if roles is None:
            return cls(None, observe)
        valid = aaos.spec(env).roles
        unknown = [role for role in roles if role not in valid]
        if unknown:
            raise InvalidParams([f"roles: {clip(repr(role))} is not a role of {env!r}; the roles are "
                                 f"{', '.join(valid)}" for role in unknown])
        return cls(tuple(dict.fromkeys(roles)), observe)

    def observation(self, observation: Observation | None) -> Observation | None:
        """The observation as asked for: None when not observing, else what the chosen roles see."""
        if not self.observe or observation is None:
            return None
        if self.roles is None:
            return observation
        return seen_by(observation, self.roles)

    def step(self, env: Environment, joint_action: JointAction) -> StepResult:
        """Step `env` and observe as asked: no observation built when none is asked for, and only the chosen
        roles' views built when some are (Environment.observation_of); the info then tells only their action
        results."""
        result = env.step(joint_action, observe=self.observe and self.roles is None)
        if self.roles is not None:
            if self.observe:
                result.observation = env.observation_of(self.roles)
            results = result.info["action_results"]
            result.info = {**result.info, "action_results": {role: results[role] for role in self.roles}}
        return result


FULL = Lean()
"""What a request that asks for nothing less gets: the whole observation."""


def step_answer(result: StepResult) -> dict[str, Any]:
    """A step result (observed as asked: Lean.step) as the HTTP API and the MCP `joint_action` tool return it:
    observation, reward, done, info."""
    return {"observation": result.observation, "reward": result.reward, "done": result.done, "info": result.info}
