"""Prompts and output schemas for language-model agents (also used to build training data).

Per-role mode: one chat per role, showing only that role's own view. Joint mode: one chat for all six
roles. The output schemas constrain a model to the actions that are legal right now, with payload
choices enumerated where they are finite.
"""

from __future__ import annotations

import json
from typing import Any

from aaos.core.spec import EnvSpec

ROLE_BRIEFS: dict[str, str] = {
    "product_manager": (
        "You own delivery. Hand every pending task to its required role (delegate_task), highest priority and "
        "earliest deadline first, including remediation tasks (task_fix_*) opened for flagged risks."
    ),
    "engineer": (
        "You build and run the product. Work on open incidents you can resolve (resolve_incident), report "
        "anomalies in your signals (report_anomaly, with the signal's severity), request resources your own "
        "blocked tasks need (request_resource), propose the sprint plan or a re-plan after a resource shock "
        "that names the cut resource, and check metrics regularly (query_metrics) to detect hidden risks."
    ),
    "data_analyst": (
        "You watch data quality and error rates. Report anomalies in your signals, resolve incidents you are a "
        "resolver for, request resources for your blocked tasks, and query metrics regularly: some hidden "
        "risks are visible only to you."
    ),
    "risk_compliance": (
        "You own the risk register. Flag every detected risk (raise_risk_flag) as soon as it appears, critical "
        "first; adopt each policy change with update_policy stating its new approval limit; accept sound plans "
        "from others; otherwise query metrics (your checks let operations approve resources safely)."
    ),
    "operations": (
        "You run infrastructure and the resource pools. Resolve incidents, approve pending resource requests "
        "(approve_resource) no larger than the policy's max_resource_approval and only after a metrics check "
        "in the last 3 steps, report anomalies, and query metrics to detect hidden risks."
    ),
    "oversight": (
        "You audit. When the oversight log shows unaudited violations, audit that role (audit_agent); "
        "otherwise do nothing (no_op) — oversight does not deliver tasks."
    ),
}

RULES = (
    "Rules: an action not in legal_actions is rejected and wasted; ids must come from your view; a risk is "
    "unknown until detected; approving above the policy limit or without a recent metrics check is a "
    "violation; the score rewards delivery, collaboration, risk handling, efficiency and timely responses "
    "to events."
)

ROLE_OUTPUT = 'Answer with one JSON object only: {"action_type": "...", "payload": {...}}.'
JOINT_OUTPUT = (
    'Answer with one JSON object only, mapping each role to its action: '
    '{"product_manager": {"action_type": "...", "payload": {...}}, "engineer": {...}, ...}.'
)

VIEW_FIELDS_HIDDEN_FROM_PROMPT = ("legal_actions", "role", "step")
"""View fields the prompt shows separately (legal actions) or in its header (role, step)."""


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


def _payload_schema(fields: dict[str, Any]) -> dict[str, Any]:
    properties = {
        name: {"enum": options} if isinstance(options, list) else {"type": "string", "minLength": 1, "maxLength": 500}
        for name, options in fields.items()
    }
    return {"type": "object", "properties": properties, "required": list(fields), "additionalProperties": False}


def action_schema(legal: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """A JSON schema that admits exactly the role's legal actions with valid payload choices."""
    return {
        "anyOf": [
            {
                "type": "object",
                "properties": {"action_type": {"const": name}, "payload": _payload_schema(fields)},
                "required": ["action_type", "payload"],
                "additionalProperties": False,
            }
            for name, fields in legal.items()
        ]
    }


def joint_schema(legal_by_role: dict[str, dict[str, dict[str, Any]]]) -> dict[str, Any]:
    """A JSON schema for a whole joint action: every role, each with one of its legal actions."""
    return {
        "type": "object",
        "properties": {role: action_schema(legal) for role, legal in legal_by_role.items()},
        "required": list(legal_by_role),
        "additionalProperties": False,
    }


def describe_legal(legal: dict[str, dict[str, Any]]) -> str:
    """One line per legal action: its payload fields and their choices."""
    lines = []
    for name, fields in legal.items():
        parts = [f"{field}: one of {_compact(options)}" if isinstance(options, list) else f"{field}: free text"
                 for field, options in fields.items()]
        lines.append(f"- {name}" + (f" ({'; '.join(parts)})" if parts else " (empty payload)"))
    return "\n".join(lines)


def role_system_prompt(role: str, spec: EnvSpec) -> str:
    return (
        f"You are the {role} agent in AAOS, a simulated tech organisation of six roles "
        f"({', '.join(spec.roles)}). Each step every role takes one action.\n"
        f"{ROLE_BRIEFS[role]}\n{RULES}\n{ROLE_OUTPUT}"
    )


EMPTY: tuple[Any, ...] = ([], {}, "hidden", None)
"""View values left out of prompts: they say nothing, and small models read every token."""


def role_user_prompt(view: dict[str, Any]) -> str:
    shown = {k: v for k, v in view.items() if k not in VIEW_FIELDS_HIDDEN_FROM_PROMPT and v not in EMPTY}
    return (
        f"Step {view['step']}. Your view as {view['role']}:\n{_compact(shown)}\n"
        f"Your legal actions now:\n{describe_legal(view['legal_actions'])}"
    )


def role_messages(role: str, view: dict[str, Any], spec: EnvSpec) -> list[dict[str, str]]:
    """The chat for one role's decision, from that role's own view only."""
    return [
        {"role": "system", "content": role_system_prompt(role, spec)},
        {"role": "user", "content": role_user_prompt(view)},
    ]


def joint_messages(observation: dict[str, Any], spec: EnvSpec) -> list[dict[str, str]]:
    """The chat for one joint decision: every role's brief, view and legal actions."""
    briefs = "\n".join(f"- {role}: {ROLE_BRIEFS[role]}" for role in spec.roles)
    views = "\n\n".join(
        f"## {role}\n{role_user_prompt(view)}" for role, view in observation["agent_observations"].items()
    )
    system = (
        "You coordinate all six roles of AAOS, a simulated tech organisation. Each step every role takes one "
        f"action.\n{briefs}\n{RULES}\n{JOINT_OUTPUT}"
    )
    return [
        {"role": "system", "content": system},
        {"role": "user", "content": f"Step {observation['step_count']} of {observation['max_steps']}.\n\n{views}"},
    ]


def repair_message(error: str) -> dict[str, str]:
    """The follow-up turn asking the model to fix an invalid answer."""
    return {"role": "user", "content": f"That answer was invalid: {error}. Answer again with valid JSON only."}
