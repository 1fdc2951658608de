"""Parsing a joint action against a spec, and the record of what became of each role's action.

Parsing never raises: anything that is not a usable action becomes a rejected ActionResult
that says what to fix, and the role does the spec's no-op instead.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from aaos.core.spec import EnvSpec

Status = Literal["applied", "no_effect", "rejected"]
RejectReason = Literal["malformed", "forbidden", "unknown_id", "precondition", "done"]


@dataclass(slots=True)
class ParsedAction:
    """An action that passed the spec's checks: a known type, permitted for the role, a valid payload."""

    role: str
    action_type: str
    payload: BaseModel


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

    def to_dict(self) -> dict[str, Any]:
        return {
            "role": self.role,
            "action_type": self.action_type,
            "payload": self.payload,
            "status": self.status,
            "valid": self.valid,
            "reason": self.reason,
            "message": self.message,
        }


@dataclass(slots=True)
class ParsedJointAction:
    """The result of parsing a joint action: the usable actions, the rejections, and top-level errors."""

    actions: dict[str, ParsedAction] = field(default_factory=dict)
    rejected: dict[str, ActionResult] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)


def _describe(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def validation_message(error: ValidationError) -> str:
    """One readable line per problem, naming the payload field: 'payload.task_id: Field required'."""
    parts = []
    for problem in error.errors()[:3]:
        where = ".".join(str(p) for p in problem["loc"]) or "payload"
        parts.append(f"payload.{where}: {problem['msg']}" if where != "payload" else problem["msg"])
    return "; ".join(parts)


def parse_action(spec: EnvSpec, role: str, raw: Any) -> ParsedAction | ActionResult:
    """Check one role's action against the spec: shape, action type, permission, payload."""
    if isinstance(raw, BaseModel):
        raw = raw.model_dump()
    if not isinstance(raw, Mapping):
        return ActionResult(role, "", {}, "rejected",
                            f"an action must be an object like {{\"action_type\": ..., \"payload\": {{...}}}}, "
                            f"got {_describe(raw)}", "malformed")
    action_type = raw.get("action_type")
    payload = raw.get("payload", {})
    if payload is None:
        payload = {}
    shown_payload = dict(payload) if isinstance(payload, Mapping) else {"_raw": _describe(payload)}
    extra = sorted(str(k) for k in raw if k not in ("action_type", "payload"))
    if not isinstance(action_type, str):
        return ActionResult(role, "", shown_payload, "rejected",
                            f"action_type must be a string naming one of: {', '.join(a.name for a in spec.actions)}",
                            "malformed")
    action_spec = spec.action(action_type)
    if action_spec is None:
        return ActionResult(role, action_type, shown_payload, "rejected",
                            f"unknown action_type {_describe(action_type)}; choose one of: "
                            f"{', '.join(a.name for a in spec.actions)}", "malformed")
    if extra:
        return ActionResult(role, action_type, shown_payload, "rejected",
                            f"unexpected keys {extra}; an action has only 'action_type' and 'payload'", "malformed")
    if role not in action_spec.roles:
        return ActionResult(role, action_type, shown_payload, "rejected",
                            f"{role} may not use {action_type}; allowed roles: {', '.join(action_spec.roles)}",
                            "forbidden")
    if not isinstance(payload, Mapping):
        return ActionResult(role, action_type, shown_payload, "rejected",
                            f"payload must be an object, got {_describe(payload)}", "malformed")
    try:
        model = action_spec.payload.model_validate(payload)
    except ValidationError as error:
        return ActionResult(role, action_type, shown_payload, "rejected", validation_message(error), "malformed")
    return ParsedAction(role, action_type, model)


def parse_joint_action(spec: EnvSpec, joint_action: Any) -> ParsedJointAction:
    """Parse role -> action. Roles left out do the no-op; unknown role names are reported, not raised."""
    parsed = ParsedJointAction()
    if joint_action is None:
        return parsed
    if isinstance(joint_action, BaseModel):
        joint_action = joint_action.model_dump()
    if not isinstance(joint_action, Mapping):
        parsed.errors.append(
            f"a joint action must be an object mapping role to action, got {_describe(joint_action)}"
        )
        return parsed
    for role, raw in joint_action.items():
        if role not in spec.roles:
            parsed.errors.append(f"unknown role {_describe(role)}; roles are: {', '.join(spec.roles)}")
            continue
        result = parse_action(spec, role, raw)
        if isinstance(result, ParsedAction):
            parsed.actions[role] = result
        else:
            parsed.rejected[role] = result
    return parsed
