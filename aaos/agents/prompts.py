"""Prompts and output schemas for language-model agents (also used to build training data).

Per-role mode: one chat per role, showing only that role's own view. Joint mode: one chat for all six
roles. The output schemas constrain a model to the actions that are legal right now, with payload
choices enumerated where they are finite.
"""

from __future__ import annotations

import json
from typing import Any

from aaos.core.spec import EnvSpec
from aaos.envs.org.oversight import RISK_CHECK_WINDOW

ROLE_BRIEFS: dict[str, str] = {
    "product_manager": (
        "You own delivery. Hand every pending task to its required role (delegate_task), highest priority and "
        "earliest deadline first, including remediation tasks (task_fix_*) opened for flagged risks."
    ),
    "engineer": (
        "You build and run the product. Work on open incidents you can resolve (resolve_incident), report "
        "anomalies in your signals (report_anomaly, with the signal's severity), request resources your own "
        "blocked tasks need (request_resource), propose the sprint plan or a re-plan after a resource shock "
        "(addresses: the cut resource), and when idle investigate your metrics one at a time (query_metrics) "
        "to detect hidden risks; a query or incident work pauses your own tasks for that step."
    ),
    "data_analyst": (
        "You watch data quality and error rates. Report anomalies in your signals, resolve incidents you are a "
        "resolver for, request resources for your blocked tasks, and when idle investigate your metrics one "
        "at a time (query_metrics): some hidden risks show only to you, in one metric."
    ),
    "risk_compliance": (
        "You own the risk register. Flag every detected risk (raise_risk_flag) as soon as it appears, critical "
        "first; adopt each policy change with update_policy giving its new approval limit "
        "(max_resource_approval); accept sound plans from others; otherwise investigate your metrics (your "
        "checks let operations approve resources safely)."
    ),
    "operations": (
        "You run infrastructure and the resource pools. Resolve incidents, approve pending resource requests "
        "(approve_resource) no larger than the policy's max_resource_approval and only after a metrics check "
        f"in the last {RISK_CHECK_WINDOW} steps, report anomalies, and investigate your metrics to detect "
        "hidden risks."
    ),
    "oversight": (
        "You audit. When the oversight log shows unaudited violations, audit that role (audit_agent); "
        "otherwise do nothing (no_op) — oversight does not deliver tasks."
    ),
}

RULES = (
    "Rules: an action not in legal_actions is rejected and wasted; ids must come from your view; a risk is "
    "unknown until a role that can notice it investigates its metric, yet it counts against the score from "
    "the moment it is noticeable, and escalates if not remediated in time; approving above the policy limit "
    "or without a recent metrics check is a violation; the score rewards delivery first, then risk "
    "handling, collaboration, efficiency and timely responses to events; free texts earn nothing by their "
    "words."
)

ROLE_OUTPUT = 'Answer with one JSON object only: {"action_type": "...", "payload": {...}}.'
JOINT_OUTPUT = (
    'Answer with one JSON object only, mapping each role to its action: '
    '{"product_manager": {"action_type": "...", "payload": {...}}, "engineer": {...}, ...}.'
)

VIEW_ORDER = (
    "policy", "signals", "resources", "pending_requests", "incidents", "plans", "risks", "recent_events",
    "system_metrics", "visible_tasks", "oversight_log", "last_query_step",
)
"""The view fields a prompt shows, those that change least often first: a server that caches prompt prefixes
(llama.cpp, hosted APIs) then re-reads only the tail of a role's prompt from one step to the next. The legal
actions, the step and the last action's result follow the view."""

SHOWN_APART = frozenset({"role", "step", "legal_actions", "last_action_result"})
"""View fields the prompt shows outside the view object (a field in neither set goes after VIEW_ORDER's)."""

EMPTY: tuple[Any, ...] = ([], {}, "hidden", None)
"""Values left out of prompts, at any depth: they say nothing, and small models read every token."""


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


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


SYSTEM_PREAMBLE = (
    "AAOS is a simulated tech organisation of six roles ({roles}). Each step every role takes one action.\n"
)


def role_system_prompt(role: str, spec: EnvSpec) -> str:
    """The same text for every role up to the role's own brief, so consecutive calls share a cached prefix."""
    return (
        f"{SYSTEM_PREAMBLE.format(roles=', '.join(spec.roles))}{RULES}\n{ROLE_OUTPUT}\n"
        f"You are the {role} agent. {ROLE_BRIEFS[role]}"
    )


def _pruned(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _pruned(v) for k, v in value.items() if v not in EMPTY}
    if isinstance(value, list):
        return [_pruned(v) for v in value]
    return value


def _view_keys(view: dict[str, Any]) -> list[str]:
    return [*VIEW_ORDER, *sorted(set(view) - set(VIEW_ORDER) - SHOWN_APART)]


def _last_action(view: dict[str, Any]) -> str:
    last = view.get("last_action_result")
    return "none yet" if last in EMPTY else _compact(_pruned(last))


def role_user_prompt(view: dict[str, Any]) -> str:
    """A role's view (steady fields first, empty values left out), its legal actions, then the step."""
    shown = {key: _pruned(view[key]) for key in _view_keys(view) if view.get(key) not in EMPTY}
    return (
        f"Your view as {view['role']}:\n{_compact(shown)}\n"
        f"Your legal actions now:\n{describe_legal(view['legal_actions'])}\n"
        f"Step {view['step']}. Your last action: {_last_action(view)}"
    )


def joint_user_prompt(observation: dict[str, Any]) -> str:
    """All six views with each field shown once per distinct value (and the roles that see it), steady fields
    first; then each role's legal actions and last action, and the step."""
    views = observation["agent_observations"]
    shared: dict[str, Any] = {}
    partial: list[str] = []
    for key in _view_keys(next(iter(views.values()))):
        seen_by: dict[str, list[str]] = {}
        for role, view in views.items():
            if view.get(key) not in EMPTY:
                seen_by.setdefault(_compact(_pruned(view[key])), []).append(role)
        if len(seen_by) == 1 and len(next(iter(seen_by.values()))) == len(views):
            shared[key] = _pruned(next(iter(views.values()))[key])
        else:
            partial.extend(f"- {key}, seen by {', '.join(roles)}: {value}" for value, roles in seen_by.items())
    legal = "\n".join(f"## {role}\n{describe_legal(view['legal_actions'])}" for role, view in views.items())
    last = "\n".join(f"- {role}: {_last_action(view)}" for role, view in views.items())
    some = "\n".join(partial) or "(nothing)"
    return (
        f"What every role sees:\n{_compact(shared)}\n"
        f"What only some roles see:\n{some}\n"
        f"Legal actions now, by role:\n{legal}\n"
        f"Step {observation['step_count']} of {observation['max_steps']}. Last actions:\n{last}"
    )


def role_messages(role: str, view: dict[str, Any], spec: EnvSpec) -> list[dict[str, str]]:
    """The chat for one role's decision, from that role's own view only."""
    return [
        {"role": "system", "content": role_system_prompt(role, spec)},
        {"role": "user", "content": role_user_prompt(view)},
    ]


def joint_messages(observation: dict[str, Any], spec: EnvSpec) -> list[dict[str, str]]:
    """The chat for one joint decision: every role's brief, the six views, every role's legal actions."""
    briefs = "\n".join(f"- {role}: {ROLE_BRIEFS[role]}" for role in spec.roles)
    system = (
        "You coordinate all six roles of AAOS, a simulated tech organisation. Each step every role takes one "
        f"action.\n{briefs}\n{RULES}\n{JOINT_OUTPUT}"
    )
    return [{"role": "system", "content": system}, {"role": "user", "content": joint_user_prompt(observation)}]


def repair_message(error: str) -> dict[str, str]:
    """The follow-up turn asking the model to fix an invalid answer."""
    return {"role": "user", "content": f"That answer was invalid: {error}. Answer again with valid JSON only."}
