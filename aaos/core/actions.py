"""Parsing a joint action against a spec, and the record of what became of each role's action.

Parsing never raises: anything that is not a usable action becomes a rejected ActionResult
that says what to fix, and the role does the spec's no-op instead.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, TypeAdapter, ValidationError

from aaos.core.spec import ActionSpec, EnvSpec

Status = Literal["applied", "no_effect", "rejected"]
RejectReason = Literal["malformed", "forbidden", "unknown_id", "precondition", "done"]


@dataclass(frozen=True, slots=True)
class ParsedAction:
    """An action that passed the spec's checks: a known type, permitted for the role, a valid payload.
    Immutable, so that identical actions can share one (parse_action's cache)."""

    role: str
    action_type: str
    payload: BaseModel
    fields: dict[str, Any] = field(init=False, repr=False, compare=False)
    """The payload's fields as plain data (payload models are flat), as results and logs show them. Shared with
    every use of this parse: copy it (`dict(parsed.fields)`), never hand it out."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "fields", dict(self.payload.__dict__))


@dataclass(slots=True)
class ActionResult:
    """What became of one role's action in one step.

    status: "applied" (changed the world), "no_effect" (valid but changed nothing, counted as a
    wasted action) or "rejected" (not carried out; `reason` says which check failed and `message`
    says what to fix).
    """

    role: str
    action_type: str
    payload: dict[str, Any]
    status: Status
    message: str
    reason: RejectReason | None = None

    @property
    def valid(self) -> bool:
        return self.status != "rejected"

    def to_dict(self, step: int | None = None) -> dict[str, Any]:
        """As data; `step` is the step the action was taken at."""
        return result_record(step, self.role, self.action_type, self.payload, self.status, self.message, self.reason)


def result_record(step: int | None, role: str, action_type: str, payload: dict[str, Any], status: str, message: str,
                  reason: str | None = None) -> dict[str, Any]:
    """An action result as data: what observations (last_action_result), step info and the action log show."""
    return {
        "step": step,
        "role": role,
        "action_type": action_type,
        "payload": payload,
        "status": status,
        "valid": status != "rejected",
        "reason": reason,
        "message": message,
    }


def copy_record(record: dict[str, Any]) -> dict[str, Any]:
    """An independent copy of an action result (its payload holds only plain values), so that the world's log,
    the step info and the views never share one a consumer could change."""
    return {**record, "payload": dict(record["payload"])}


@dataclass(slots=True)
class ParsedJointAction:
    """The result of parsing a joint action: the usable actions, the rejections, and top-level errors."""

    actions: dict[str, ParsedAction] = field(default_factory=dict)
    rejected: dict[str, ActionResult] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)


def _describe(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def at_most(items: Sequence[str], limit: int) -> list[str]:
    """The first `limit` items, then (when there are more) one saying how many were left out: "and 7 more"."""
    shown = list(items[:limit])
    if len(items) > limit:
        shown.append(f"and {len(items) - limit} more")
    return shown


MAX_PAYLOAD_PROBLEMS = 3
"""At most this many problems of one payload are named in a rejected action's message."""


def validation_message(error: ValidationError) -> str:
    """One readable line per problem, naming the payload field: 'payload.task_id: Field required'."""
    parts = []
    for problem in error.errors():
        where = ".".join(str(p) for p in problem["loc"]) or "payload"
        parts.append(f"payload.{where}: {problem['msg']}" if where != "payload" else problem["msg"])
    return "; ".join(at_most(parts, MAX_PAYLOAD_PROBLEMS))


def integral(value: Any) -> Any:
    """Decoded JSON with every number that has no fractional part as an int (2.0 -> 2): JSON has one number
    type, and JSON Schema's "integer" is any number without a fraction. Strict validation then still refuses
    2.5, true and "5" for an integer: the wire's rule for integers (the server's, and `whole_number`'s). Call it
    on data no deeper than the server's MAX_JSON_DEPTH."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {key: integral(item) for key, item in value.items()}
    if isinstance(value, list):
        return [integral(item) for item in value]
    return value


_STRICT_INT: TypeAdapter[int] = TypeAdapter(int)


def whole_number(value: Any, what: str) -> int:
    """`value` as an int by the wire's rule for integers (`integral`, then strict validation: 2 and 2.0 are 2;
    2.5, true, "2" and null are refused); ValueError naming `what` and the value otherwise."""
    try:
        return _STRICT_INT.validate_python(integral(value), strict=True)
    except ValidationError as error:
        raise ValueError(f"{what}: {error.errors()[0]['msg']} (a number without a fractional part), not "
                         f"{_describe(value)}") from None


def _json_safe(payload: dict[Any, Any]) -> dict[str, Any]:
    """The payload as shown back in results and logs: plain values kept, anything else described."""
    plain = (str, int, bool, type(None))
    return {
        str(k): v if isinstance(v, plain) or (isinstance(v, float) and math.isfinite(v)) else _describe(v)
        for k, v in list(payload.items())[:20]
    }


def _as_mapping(value: Any) -> dict[str, Any] | None:
    """A dict view of a mapping or pydantic model; None for anything else."""
    if isinstance(value, BaseModel):
        return value.model_dump()
    if isinstance(value, Mapping):
        return dict(value)
    return None


_VALIDATED: dict[tuple[Any, ...], BaseModel] = {}
VALIDATED_CACHE_SIZE = 4096


def _payload_key(payload: dict[str, Any]) -> tuple[Any, ...]:
    """A payload's items and their types, as a cache key: True == 1 == 1.0 in a plain key, and only 1 (or 1.0) is
    an integer by the wire's rule."""
    return (*payload.items(), *map(type, payload.values()))


def _validate(model: type[BaseModel], payload: dict[str, Any]) -> BaseModel:
    """The payload validated by the wire's rule for every surface (what the server and the PettingZoo wrapper
    apply): a number without a fractional part is an integer (`integral`), then strict validation, so "5", true
    and 2.5 are not integers, nor 5 a string."""
    return model.model_validate(integral(payload), strict=True)


def validate_payload(model: type[BaseModel], payload: dict[str, Any]) -> BaseModel:
    """Validate a payload (`_validate`); payload models are frozen, so identical payloads share one validated
    instance."""
    try:
        key = (model, *_payload_key(payload))
        hit = _VALIDATED.get(key)
    except TypeError:  # an unhashable value: validate without the cache
        return _validate(model, payload)
    if hit is None:
        hit = _validate(model, payload)
        if len(_VALIDATED) >= VALIDATED_CACHE_SIZE:
            _VALIDATED.clear()
        _VALIDATED[key] = hit
    return hit


def _cache_key(role: str, raw: Any) -> tuple[Any, ...] | None:
    """The key of a plain action {"action_type": str, "payload": {...}} in the spec's parsed_cache, or None for
    any other shape (parsed the long way). Every check parse_action makes depends only on the role, the action
    type and the payload's items and their types, which the key holds."""
    if type(raw) is not dict or type(action_type := raw.get("action_type")) is not str:
        return None
    size = len(raw)
    if size == 2:
        payload = raw.get("payload")
        return (role, action_type, *_payload_key(payload)) if type(payload) is dict else None
    return (role, action_type) if size == 1 else None


def parse_action(spec: EnvSpec, role: str, raw: Any) -> ParsedAction | ActionResult:
    """Check one role's action against the spec: shape, action type, permission, payload. An accepted plain
    action is remembered by the spec, so that an agent repeating it costs one lookup."""
    key = _cache_key(role, raw)
    if key is None:
        return _parse_action(spec, role, raw)
    cache = spec.parsed_cache
    try:
        hit = cache.get(key)
    except TypeError:  # an unhashable payload value
        return _parse_action(spec, role, raw)
    if hit is None:
        hit = _parse_action(spec, role, raw)
        if isinstance(hit, ActionResult):
            return hit  # rejections are not cached: their messages describe the raw input
        if len(cache) >= VALIDATED_CACHE_SIZE:
            cache.clear()
        cache[key] = hit
    return hit


def _parse_action(spec: EnvSpec, role: str, raw: Any) -> ParsedAction | ActionResult:
    if type(raw) is not dict:
        raw = _as_mapping(raw)
        if raw is None:
            return ActionResult(role, "", {}, "rejected",
                                'an action must be an object like {"action_type": ..., "payload": {...}}',
                                "malformed")
    action_type = raw.get("action_type")
    payload = raw.get("payload")
    if payload is None:
        payload = {}
    elif type(payload) is not dict:
        payload = _as_mapping(payload) or payload
    action_spec = spec.action(action_type) if isinstance(action_type, str) else None
    problem = _problem(spec, role, raw, action_type, action_spec, payload)
    if problem is None and action_spec is not None:
        try:
            return ParsedAction(role, action_type, validate_payload(action_spec.payload, payload))
        except ValidationError as error:
            problem = ("malformed", validation_message(error))
    assert problem is not None
    shown = _json_safe(payload) if isinstance(payload, dict) else {"_raw": _describe(payload)}
    name = action_type if isinstance(action_type, str) else ""
    return ActionResult(role, name, shown, "rejected", problem[1], problem[0])  # type: ignore[arg-type]


def _problem(spec: EnvSpec, role: str, raw: dict[str, Any], action_type: Any, action_spec: ActionSpec | None,
             payload: Any) -> tuple[str, str] | None:
    """Why an action fails the spec's checks (reason, message), or None if it passes them."""
    if action_spec is None:
        names = ", ".join(a.name for a in spec.actions)
        if not isinstance(action_type, str):
            return "malformed", f"action_type must be a string naming one of: {names}"
        return "malformed", f"unknown action_type {_describe(action_type)}; choose one of: {names}"
    if len(raw) > 2 or (len(raw) == 2 and "payload" not in raw):
        extra = sorted(str(k) for k in raw if k != "action_type" and k != "payload")
        return "malformed", f"unexpected keys {extra}; an action has only 'action_type' and 'payload'"
    if role not in action_spec.roles:
        return "forbidden", f"{role} may not use {action_type}; allowed roles: {', '.join(action_spec.roles)}"
    if not isinstance(payload, dict):
        return "malformed", f"payload must be an object, got {_describe(payload)}"
    return None


def _listing(values: list[Any], limit: int = 12) -> str:
    """Choices inline: "a, b, c and 9 more"."""
    shown = at_most([str(v) for v in values], limit)
    return ", ".join(shown[:limit]) + "".join(f" {more}" for more in shown[limit:])


def legal_problem(spec: EnvSpec, role: str, raw: Any, legal: Mapping[str, Mapping[str, Any]]) -> ParsedAction | str:
    """The action parsed, if `role` can take it now; otherwise a readable message saying why not.

    The spec judges the shape, the permission and the payload; `legal` (the role's legal actions now) judges
    whether the action type is possible now and whether each id is one of the current choices.
    """
    parsed = parse_action(spec, role, raw)
    if not isinstance(parsed, ParsedAction):
        return parsed.message
    name = parsed.action_type
    if name not in legal:
        return (f"{name} is not possible for {role} right now (nothing to act on); "
                f"possible now: {_listing(list(legal))}.")
    payload = parsed.payload.model_dump()
    for key, choices in legal[name].items():
        if isinstance(choices, list) and payload.get(key) not in choices:
            return f"payload.{key} must be one of the current choices ({_listing(choices)}), not '{payload.get(key)}'."
    return parsed


def problems(parsed: ParsedJointAction) -> list[str]:
    """A parse's problems as messages naming the role: joint-level errors, then rejected actions."""
    return [*parsed.errors, *(f"{role}: {r.message}" for role, r in parsed.rejected.items())]


def _is_plain_noop(raw: Any, noop: str) -> bool:
    return (type(raw) is dict and raw.get("action_type") == noop and not raw.get("payload")
            and len(raw) == 1 + ("payload" in raw))


def parse_joint_action(spec: EnvSpec, joint_action: Any) -> ParsedJointAction:
    """Parse role -> action. Roles left out do the no-op; unknown role names are reported, not raised."""
    parsed = ParsedJointAction({}, {}, [])
    if joint_action is None:
        return parsed
    if type(joint_action) is not dict:
        joint_action = _as_mapping(joint_action) or joint_action
    if not isinstance(joint_action, dict):
        parsed.errors.append(
            f"a joint action must be an object mapping role to action, got {_describe(joint_action)}"
        )
        return parsed
    roles = spec.roles
    noop = spec.noop_action
    cache = spec.parsed_cache
    for role, raw in joint_action.items():
        key = _cache_key(role, raw)
        if key is not None and role in roles:
            if len(key) == 2 and key[1] == noop:
                continue  # an explicit no-op is the same as leaving the role out
            try:
                hit = cache.get(key)
            except TypeError:  # an unhashable payload value
                hit = None
            if hit is not None:
                parsed.actions[role] = hit
                continue
        if role not in roles:
            parsed.errors.append(f"unknown role {_describe(role)}; roles are: {', '.join(roles)}")
            continue
        if _is_plain_noop(raw, noop):
            continue
        result = parse_action(spec, role, raw)
        if isinstance(result, ParsedAction):
            parsed.actions[role] = result
        else:
            parsed.rejected[role] = result
    return parsed
