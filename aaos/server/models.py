"""Wire types of the AAOS server: the OpenEnv Action/Observation/State types and the HTTP request and
response models. Simulation logic lives in `aaos.envs`; everything here is derived from an environment's
spec, so a permission or a payload rule is still written once.

The joint action is strict on the wire: each role's field accepts only the action types that role may
use, each with its payload model, so `/schema` and `/openapi.json` show exactly what is valid.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal, Union

from openenv.core.env_server.types import Action, Observation, State
from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model, model_validator
from pydantic_core import PydanticCustomError

import aaos
from aaos.core.env import JointAction
from aaos.core.spec import EnvSpec

MAX_JSON_DEPTH = 16
"""Deepest nesting of objects and arrays accepted in a request (a valid one needs 5)."""
MAX_MESSAGES = 20
"""At most this many problems are listed in one error response."""
MAX_SEED = 2**53 - 1
"""Largest seed: every JSON client (JavaScript included) represents it exactly."""
DEFAULT_ENV = "org"


def json_depth_exceeds(value: Any, limit: int) -> bool:
    """Whether decoded JSON nests objects/arrays more than `limit` levels deep (iterative, stops early)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is None:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


class BoundedDepth(BaseModel):
    """Rejects input nested deeper than MAX_JSON_DEPTH before any field is validated."""

    @model_validator(mode="before")
    @classmethod
    def _bounded_depth(cls, data: Any) -> Any:
        if json_depth_exceeds(data, MAX_JSON_DEPTH):
            raise PydanticCustomError("json_too_deep", "JSON nested deeper than {limit} levels",
                                      {"limit": MAX_JSON_DEPTH})
        return data


def error_messages(errors: Sequence[Mapping[str, Any]]) -> list[str]:
    """Validation errors as 'field.path: message' lines (the leading "body" of a request left out)."""
    messages = []
    for error in errors[:MAX_MESSAGES]:
        loc = [str(part) for part in error.get("loc", ())]
        if error.get("type") == "json_invalid":
            reason = (error.get("ctx") or {}).get("error", "")
            messages.append(f"the body is not valid JSON: {reason} (at character {loc[-1] if len(loc) > 1 else 0})")
            continue
        where = ".".join(loc[1:] if loc[:1] == ["body"] and len(loc) > 1 else loc) or "body"
        messages.append(f"{where}: {error.get('msg', 'invalid')}")
    return messages


# --- OpenEnv types ---------------------------------------------------------------------------------------


class JointActionBase(Action, BoundedDepth):
    """One action per role; a role left out (or null) does no_op."""

    def to_joint_action(self) -> JointAction:
        """The plain joint action the in-process environment takes: role -> {action_type, payload}."""
        return {name: getattr(self, name).model_dump() for name in type(self).model_fields
                if name != "metadata" and getattr(self, name) is not None}


def _camel(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_"))


def _all_optional(model: type[BaseModel]) -> bool:
    return not any(field.is_required() for field in model.model_fields.values())


def joint_action_model(spec: EnvSpec) -> type[JointActionBase]:
    """The joint-action type of an environment: one optional field per role, each a union (tagged by
    `action_type`) of the actions that role may use, each with the action's payload model."""
    typed = {
        a.name: create_model(
            f"{_camel(a.name)}Action",
            __config__=ConfigDict(extra="forbid"),
            __doc__=a.description,
            action_type=(Literal[a.name], ...),  # type: ignore[valid-type]
            payload=(a.payload, Field(default_factory=a.payload) if _all_optional(a.payload) else ...),
        )
        for a in spec.actions
    }
    fields: dict[str, Any] = {}
    for role in spec.roles:
        allowed = tuple(typed[name] for name in spec.allowed_actions(role))
        choice = Annotated[Union[allowed], Field(discriminator="action_type")]  # type: ignore[valid-type]  # noqa: UP007
        fields[role] = (choice | None, Field(default=None, description=f"What {role} does this step (default no_op)."))
    return create_model(f"{_camel(spec.id)}JointAction", __base__=JointActionBase, **fields)


AAOSAction = joint_action_model(aaos.spec(DEFAULT_ENV))
"""The org environment's joint action, e.g. {"engineer": {"action_type": "no_op"}}."""


class AAOSObservation(Observation):
    """An observation over OpenEnv: the environment's observation keys (task, step_count,
    agent_observations, ...) as fields, plus the step's `info`."""

    model_config = ConfigDict(extra="allow")

    info: dict[str, Any] = Field(default_factory=dict, description=(
        "Step info: score, step, reward_breakdown, action_results, oversight_events, scenario_events, errors; "
        "empty after a reset."))

    def env_observation(self) -> dict[str, Any]:
        """The observation as the in-process environment returns it (what policies take)."""
        return {**(self.__pydantic_extra__ or {}), "done": self.done}


class AAOSState(State):
    """The full ground-truth state (the environment's state() keys as fields), the OpenEnv episode id and
    the step count."""


# --- HTTP requests and responses --------------------------------------------------------------------------

_ORG = aaos.spec(DEFAULT_ENV)
EnvId = Literal[tuple(aaos.env_ids())]  # type: ignore[valid-type]
TaskId = Literal[tuple(t.id for t in _ORG.tasks)]  # type: ignore[valid-type]
ScenarioId = Literal[tuple(s.id for s in _ORG.scenarios)]  # type: ignore[valid-type]
SessionId = Annotated[str, Field(min_length=1, max_length=100, description="From POST /reset.")]


class Request(BoundedDepth):
    model_config = ConfigDict(extra="forbid")


class EpisodeParams(Request):
    """Which episode to start; a field left out keeps the session's current value (new sessions: the
    environment's defaults, seed 0)."""

    env: EnvId = Field(default=DEFAULT_ENV, description="Environment id.")
    task: TaskId | None = Field(default=None, description="Task id (difficulty ladder).")
    scenario: ScenarioId | None = Field(default=None, description="Built-in scenario id.")
    seed: int | None = Field(default=None, ge=0, le=MAX_SEED,
                             description="Variant seed: 0-9999 train variants, 10000 and up holdout variants.")
    episode_id: str | None = Field(default=None, max_length=255, description="Your label for the episode.")


class ResetRequest(EpisodeParams):
    session_id: SessionId | None = Field(default=None, description=(
        "Reset this existing session instead of opening a new one."))


class StepRequest(Request):
    session_id: SessionId
    action: AAOSAction = Field(default_factory=AAOSAction, description=(  # type: ignore[valid-type]
        "The joint action: role -> {action_type, payload}; roles left out do no_op."))


class CloseRequest(Request):
    session_id: SessionId


class ResetResponse(BaseModel):
    session_id: str = Field(description="Pass it to /step, /state and /close.")
    observation: dict[str, Any] = Field(description="The first observation.")
    reward: None = Field(default=None, description="Always null after a reset.")
    done: bool = False


class StepResponse(BaseModel):
    observation: dict[str, Any] = Field(description="The next observation, for every role.")
    reward: float = Field(description="Reward delivered this step: 0.6 of the score's increment plus any released "
                                      "held share; negative when the score fell. An episode's rewards sum to its "
                                      "final score.")
    done: bool = Field(description="The episode has ended; POST /reset before stepping again.")
    info: dict[str, Any] = Field(description="score, reward_breakdown, action_results, oversight_events, ...")


class CloseResponse(BaseModel):
    session_id: str
    closed: bool = True


class Problem(BaseModel):
    detail: str = Field(description="What went wrong and what to do.")


class Invalid(BaseModel):
    detail: list[str] = Field(description="One message per problem, naming the field.")


def episode_params(**fields: Any) -> EpisodeParams:
    """Reset parameters from keyword arguments; ValueError naming each invalid or unknown one."""
    try:
        return EpisodeParams.model_validate(fields)
    except ValidationError as error:
        raise ValueError("invalid reset parameters: " + "; ".join(error_messages(error.errors()))) from None
