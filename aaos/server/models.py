"""Wire types of the AAOS server: the OpenEnv Action/Observation/State types and the HTTP request and
response models. Simulation logic lives in `aaos.envs`; everything here is derived from an environment's
spec, so a permission or a payload rule is still written once.

A session runs any registered environment, chosen at reset, so the wire types are generic and each request
is checked against the session's environment: reset parameters against the registry and that environment's
spec (`check_episode`), a joint action against the environment's typed joint action (`action_model`): each
role's field accepts only the action types that role may use, each with its payload model. `/schema?env=`
and `GET /envs` show each environment's types; `/openapi.json` documents the default environment's.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Union

import orjson
from openenv.core.env_server.types import Action, Observation, State
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    GetJsonSchemaHandler,
    ValidationError,
    create_model,
    model_validator,
)
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import PydanticCustomError, PydanticSerializationError, core_schema, to_json

import aaos
from aaos.core.actions import integral
from aaos.core.env import JointAction
from aaos.core.spec import EnvSpec

MAX_JSON_DEPTH = 16
"""Deepest nesting of objects and arrays accepted in a request (a valid one needs 5)."""
MAX_MESSAGES = 20
"""At most this many problems are listed in one error response (then one line saying how many more there are:
aaos.server.wire.clipped)."""
MAX_SEED = 2**53 - 1
"""Largest seed: every JSON client (JavaScript included) represents it exactly."""


def json_depth_exceeds(value: Any, limit: int) -> bool:
    """Whether decoded JSON nests objects/arrays more than `limit` levels deep. It stops at the first container
    past the limit, so it recurses at most limit + 1 levels, and visits only containers (a request body is
    mostly strings and numbers): twice as fast as walking every value, and every HTTP request is checked."""
    if isinstance(value, dict):
        children: Iterable[Any] = value.values()
    elif isinstance(value, list):
        children = value
    else:
        return False
    if limit < 1:
        return True
    for child in children:  # noqa: SIM110 - a loop, not any(): a generator per container costs 50 % more here
        if isinstance(child, dict | list) and json_depth_exceeds(child, limit - 1):
            return True
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


LONE_SURROGATE = ("a string holds a lone surrogate, which is not Unicode text: an escape from \\ud800 to \\udfff "
                  "must be half of a pair (a high one, \\ud800-\\udbff, then a low one, \\udc00-\\udfff)")
"""What is wrong with text that UTF-8 cannot encode (JSON's \\u escapes allow a half surrogate pair; I-JSON, and
this server, do not)."""


def error_messages(errors: Sequence[Mapping[str, Any]]) -> list[str]:
    """Validation errors as 'field.path: message' lines, one per error (the leading "body" of a request left out;
    an error about the whole input is its message alone). Input is quoted as Python escapes it, so that every
    message is text (a lone surrogate is written \\ud800)."""
    messages = []
    for error in errors:
        loc = [_text(str(part)) for part in error.get("loc", ())]
        if error.get("type") == "json_invalid":
            reason = (error.get("ctx") or {}).get("error", "")
            messages.append(f"the body is not valid JSON: {reason} (at character {loc[-1] if len(loc) > 1 else 0})")
            continue
        message = LONE_SURROGATE if error.get("type") == "string_unicode" else error.get("msg", "invalid")
        where = ".".join(loc[1:] if loc[:1] == ["body"] else loc)
        messages.append(f"{where}: {message}" if where else message)
    return messages


def _text(quoted: str) -> str:
    """`quoted` with any lone surrogate written as its escape (\\ud800), so that UTF-8 can encode it."""
    return quoted.encode("utf-8", "backslashreplace").decode("utf-8")


def lone_surrogate_at(value: Any, path: tuple[str | int, ...] = ()) -> tuple[str | int, ...] | None:
    """Where in decoded JSON the first string holding a lone surrogate is (the path to it; for a key, the path to
    its object), or None if there is none."""
    if isinstance(value, str):
        return None if _encodable(value) else path
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(key, str) and not _encodable(key):
                return path
            found = lone_surrogate_at(item, (*path, key))
            if found is not None:
                return found
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found = lone_surrogate_at(item, (*path, index))
            if found is not None:
                return found
    return None


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


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


@dataclass(frozen=True, slots=True)
class _Typed:
    """What the wire keeps per environment spec: its typed joint action, and the role actions it accepted
    (typed_joint_action's cache, keyed by the role and the action's exact JSON)."""

    spec: EnvSpec
    model: type[JointActionBase]
    accepted: dict[tuple[str, bytes], dict[str, Any]]


_TYPED: dict[str, _Typed] = {}


def _typed(env: str) -> _Typed:
    """Environment `env`'s wire types, built once per spec (a re-registered id gets new ones; specs are
    compared by identity, since hashing one walks all of it)."""
    spec = aaos.spec(env)
    typed = _TYPED.get(env)
    if typed is None or typed.spec is not spec:
        typed = _TYPED[env] = _Typed(spec, joint_action_model(spec), {})
    return typed


def action_model(env: str) -> type[JointActionBase]:
    """The typed joint action of a registered environment."""
    return _typed(env).model


AAOSAction = action_model(aaos.DEFAULT_ENV)
"""The default environment's joint action, e.g. {"engineer": {"action_type": "no_op"}}."""


class WireAction(Action, BoundedDepth):
    """A joint action as it arrives, before the session's environment is known: role -> action (or null).
    The session checks it against its environment's typed joint action (`action_model`); the schema shown
    is the default environment's."""

    model_config = ConfigDict(extra="allow")
    __pydantic_extra__: dict[str, dict[str, Any] | None]

    @classmethod
    def __get_pydantic_json_schema__(cls, schema: core_schema.CoreSchema,
                                     handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        return handler(AAOSAction.__pydantic_core_schema__)

    def plain(self) -> dict[str, Any]:
        """The joint action as decoded JSON: role -> action (or null), and `metadata` if it was given."""
        return {**({"metadata": self.metadata} if self.metadata else {}), **(self.__pydantic_extra__ or {})}

    def typed(self, env: str) -> JointActionBase:
        """This action validated as `env`'s typed joint action (ValidationError saying what is wrong), strictly
        as JSON: no coercion between JSON types (`true`, `"5"` or `2.5` is not an integer; a number without a
        fraction, 2 or 2.0, is). Strings still become the enum members they name."""
        data = integral(self.model_dump())
        try:
            text = to_json(data)
        except PydanticSerializationError:  # a string (in a field typed Any) that no JSON text can hold
            where = lone_surrogate_at(data)
            if where is None:
                raise
            raise ValidationError.from_exception_data(type(self).__name__, [
                {"type": "string_unicode", "loc": where, "input": None}]) from None
        return action_model(env).model_validate_json(text, strict=True)


ACCEPTED_CACHE_SIZE = 4096
"""Role actions remembered per environment spec by `typed_joint_action` (the cache starts over when full)."""


def typed_joint_action(env: str, data: Mapping[str, Any]) -> JointAction:
    """A decoded joint action (role -> action or null) validated as `env`'s typed joint action (WireAction.typed:
    ValidationError naming each field otherwise), as the plain joint action the environment takes.

    A role's action accepted before is looked up instead of validated again, keyed by the role and its exact
    JSON (so 2, 2.0 and true are three keys): the typed joint action validates each role's field on its own,
    so whether a role's action passes, and what it becomes, depends on nothing else. Any other key (an
    unknown role, OpenEnv's `metadata`) or an unseen action goes the whole way."""
    accepted = _typed(env).accepted
    joint: JointAction = {}
    for role, raw in data.items():
        try:
            hit = accepted.get((role, orjson.dumps(raw)))
        except TypeError:  # not plain JSON data (orjson's encode error is a TypeError): validated the whole way
            hit = None
        if hit is None:
            return _validated(env, data, accepted)
        if hit:
            joint[role] = _own(hit)
    return joint


def _own(action: dict[str, Any]) -> dict[str, Any]:
    """A copy of a plain role action that shares nothing a caller could change with the cache."""
    return {"action_type": action["action_type"], "payload": dict(action["payload"])}


def _validated(env: str, data: Mapping[str, Any], accepted: dict[tuple[str, bytes], dict[str, Any]]) -> JointAction:
    """`data` validated the whole way; each role's accepted action remembered (an empty dict for a null one)."""
    joint = WireAction.model_validate(data).typed(env).to_joint_action()
    if len(accepted) >= ACCEPTED_CACHE_SIZE:
        accepted.clear()
    for role, raw in data.items():
        if role in joint or raw is None:
            with contextlib.suppress(TypeError):
                accepted[(role, orjson.dumps(raw))] = _own(joint[role]) if role in joint else {}
    return joint


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

SessionId = Annotated[str, Field(min_length=1, max_length=100, description="From POST /reset.")]


class Request(BoundedDepth):
    """A request body: unknown fields are refused, and so is any value of the wrong JSON type (strict mode:
    `true`, `"5"` or `2.5` for an integer field is a 422 naming the field, never coerced; 2.0 is the integer 2,
    as in JSON Schema)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    @model_validator(mode="before")
    @classmethod
    def _integral_numbers(cls, data: Any) -> Any:
        return data if json_depth_exceeds(data, MAX_JSON_DEPTH) else integral(data)


def _episode_choices(schema: dict[str, Any]) -> None:
    """Add the valid env/task/scenario (and, where the schema has it, `roles`) combinations to a JSON schema,
    for clients and fuzzers: without `env`, the default environment's (or, resetting a session, its
    environment's: checked then); with it, that environment's. Computed when the schema is asked for, so it
    lists every environment registered by then."""

    def choice(env: str | None) -> dict[str, Any]:
        spec = aaos.spec(env or aaos.DEFAULT_ENV)
        properties: dict[str, Any] = {"env": {"const": env} if env else {"type": "null"},
                                      "task": {"enum": [None, *(t.id for t in spec.tasks)]},
                                      "scenario": {"enum": [None, *(s.id for s in spec.scenarios)]}}
        if "roles" in schema.get("properties", {}):
            properties["roles"] = {"anyOf": [{"type": "null"}, {"type": "array", "items": {"enum": list(spec.roles)}}]}
        return {"properties": properties, "required": ["env"] if env else []}

    schema["anyOf"] = [choice(None), *(choice(env) for env in aaos.env_ids())]


class EpisodeParams(Request):
    """Which episode to start; env, task, scenario or seed left out keeps the session's current value (new
    sessions: the default environment with its default task and scenario, seed 0). Choosing another environment
    starts from its defaults. episode_id labels only the episode this starts."""

    model_config = ConfigDict(json_schema_extra=_episode_choices)

    env: str | None = Field(default=None, max_length=100, description=(
        f"Environment id (GET /envs lists them; default {aaos.DEFAULT_ENV!r})."))
    task: str | None = Field(default=None, max_length=100, description="Task id of the environment.")
    scenario: str | None = Field(default=None, max_length=100, description="Built-in scenario id of the environment.")
    seed: int | None = Field(default=None, ge=0, le=MAX_SEED,
                             description="Variant seed: 0-9999 train variants, 10000 and up holdout variants.")
    episode_id: str | None = Field(default=None, max_length=255, description=(
        "Your label for the episode this starts (GET /state shows it; a later reset does not keep it)."))


class ViewChoice(Request):
    """Lean answers: which part of the observation to send back (aaos.server.wire.Lean applies it)."""

    roles: list[Annotated[str, Field(max_length=100)]] | None = Field(default=None, max_length=64, description=(
        "Send what these roles see: the keys every observation has with only their views, and only their "
        "action_results in the info (the environment's world-wide fields are left out); null: the whole "
        "observation. A name that is not a role of the session's environment is a 422."))
    observe: bool = Field(default=True, description=(
        "false: send no observation (\"observation\": null); reward, done and info still come."))


class ResetRequest(EpisodeParams, ViewChoice):
    session_id: SessionId | None = Field(default=None, description=(
        "Reset this existing session instead of opening a new one."))


class StepRequest(ViewChoice):
    session_id: SessionId
    action: WireAction = Field(default_factory=WireAction, description=(
        "The joint action of the session's environment: role -> {action_type, payload}; roles left out do "
        "no_op. Shown for the default environment; GET /schema?env=ID shows another's."))


class CloseRequest(Request):
    session_id: SessionId


class ResetResponse(BaseModel):
    session_id: str = Field(description="Pass it to /step, /state and /close.")
    observation: dict[str, Any] | None = Field(description="The first observation (as `roles`/`observe` asked).")
    reward: None = Field(default=None, description="Always null after a reset.")
    done: bool = False


class StepResponse(BaseModel):
    observation: dict[str, Any] | None = Field(description=(
        "The next observation: every role's view, or as `roles`/`observe` asked."))
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


class InvalidAction(ValueError):
    """A joint action the environment would reject as input; nothing was changed."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("invalid joint action: " + "; ".join(problems))


class InvalidParams(ValueError):
    """Reset parameters that name no registered environment, or a task or scenario it does not have."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("invalid reset parameters: " + "; ".join(problems))


def episode_params(**fields: Any) -> EpisodeParams:
    """Reset parameters from keyword arguments; InvalidParams naming each malformed or unknown one."""
    try:
        return EpisodeParams.model_validate(fields)
    except ValidationError as error:
        raise InvalidParams(error_messages(error.errors())) from None


def one_of(choices: Sequence[str]) -> str:
    quoted = [repr(choice) for choice in choices]
    return quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} or {quoted[-1]}"


def check_episode(params: EpisodeParams, current_env: str) -> str:
    """The environment the parameters choose (their env, else `current_env`), once its task and scenario
    are checked against its spec; InvalidParams naming the valid choices otherwise."""
    env = current_env if params.env is None else params.env
    if env not in aaos.env_ids():
        raise InvalidParams([f"env: Input should be {one_of(aaos.env_ids())}"])
    spec = aaos.spec(env)
    problems = []
    tasks = [t.id for t in spec.tasks]
    if params.task is not None and params.task not in tasks:
        problems.append(f"task: Input should be {one_of(tasks)} (the tasks of {env!r})")
    scenarios = [s.id for s in spec.scenarios]
    if params.scenario is not None and params.scenario not in scenarios:
        problems.append(f"scenario: Input should be {one_of(scenarios)} (the scenarios of {env!r})")
    if problems:
        raise InvalidParams(problems)
    return env


def env_schemas(env: str) -> dict[str, Any]:
    """JSON schemas of an environment's action, observation and state (OpenEnv's /schema shape): its typed
    joint action, and its kit's observation and state models where it has them."""
    kit = aaos.kit_of(env)
    return {"action": action_model(env).model_json_schema(),
            "observation": (kit.observation_model or AAOSObservation).model_json_schema(),
            "state": (kit.state_model or AAOSState).model_json_schema()}
