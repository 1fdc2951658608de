"""Prompts and output schemas for language-model agents (also used to build training data).

Per-role mode: one chat per role, showing only that role's own view. Joint mode: one chat for all roles.
Compact mode: one chat for all roles in as few tokens as the decision needs (what the roles see merged into one
view written as lines and tables, less the kit's omitted prose and settled items; no rules, briefs or list of
legal actions), answered in as few: an array of each role's action as a call, `name(choice,...)`, one of the
role's legal calls now (`compact_calls`), which the output schema enumerates, so a server that constrains
output to it (llama.cpp) admits nothing else; free text, which the worlds only record, is left to the agent
(FILLED_TEXT). For small models that learn the rest from training data (aaos train) and for CPUs that read and
write every token.
What the model is told about the world, its rules and each role comes from the environment's kit
(aaos.core.kit.Prompting). The output schemas constrain a model to the actions that are legal right now,
with payload choices enumerated where they are finite.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Mapping
from typing import Any

from aaos.core.kit import Prompting
from aaos.core.spec import EnvSpec
from aaos.envs import kit_of

ROLE_OUTPUT = 'Answer with one JSON object only: {"action_type": "...", "payload": {...}}.'
JOINT_OUTPUT = (
    'Answer with one JSON object only, mapping each role to its action: '
    '{"%s": {"action_type": "...", "payload": {...}}, ...}.'
)
COMPACT_OUTPUT = (
    "Answer with one JSON array only: one action per role, in the order {roles}, each one of the role's legal "
    'actions now written as name(choice,...): ["{noop}()", ...].'
)
FILLED_TEXT = "(compact answer: no text)"
"""The text of every free-text field of a compact answer (the worlds record such text but never grade it)."""

SHOWN_APART = frozenset({"role", "step", "legal_actions", "last_action_result"})
"""View fields the prompt shows outside the view object (the others follow the kit's view_order)."""

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


def prompting(spec: EnvSpec) -> Prompting:
    """The kit's prompting, or what the spec alone says where the kit gives none."""
    return kit_of(spec.id).prompting or Prompting.from_spec(spec)


def brief(spec: EnvSpec, role: str) -> str:
    """The role's brief from the kit (a role without one is told to act on its view)."""
    return prompting(spec).briefs.get(role, "Act on your own view to raise the score.")


def role_system_prompt(role: str, spec: EnvSpec) -> str:
    """The same text for every role up to the role's own brief, so consecutive calls share a cached prefix."""
    told = prompting(spec)
    return (
        f"{told.world.format(roles=', '.join(spec.roles))}\n{told.rules}\n{ROLE_OUTPUT}\n"
        f"You are the {role} agent. {brief(spec, role)}"
    )


def _pruned(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _pruned(v) for k, v in value.items() if v not in EMPTY}
    if isinstance(value, list):
        return [_pruned(v) for v in value]
    return value


def _view_keys(view: dict[str, Any], order: tuple[str, ...]) -> list[str]:
    return [*order, *sorted(set(view) - set(order) - SHOWN_APART)]


def _last_action(view: dict[str, Any]) -> str:
    last = view.get("last_action_result")
    return "none yet" if last in EMPTY else _compact(_pruned(last))


def role_user_prompt(view: dict[str, Any], spec: EnvSpec) -> str:
    """A role's view (steady fields first, empty values left out), its legal actions, then the step."""
    order = prompting(spec).view_order
    shown = {key: _pruned(view[key]) for key in _view_keys(view, order) if view.get(key) not in EMPTY}
    return (
        f"Your view as {view['role']}:\n{_compact(shown)}\n"
        f"Your legal actions now:\n{describe_legal(view['legal_actions'])}\n"
        f"Step {view['step']}. Your last action: {_last_action(view)}"
    )


def joint_user_prompt(observation: dict[str, Any], spec: EnvSpec) -> str:
    """All views with each field shown once per distinct value (and the roles that see it), steady fields
    first; then each role's legal actions and last action, and the step."""
    views = observation["agent_observations"]
    shared: dict[str, Any] = {}
    partial: list[str] = []
    for key in _view_keys(next(iter(views.values())), prompting(spec).view_order):
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
        {"role": "user", "content": role_user_prompt(view, spec)},
    ]


def joint_messages(observation: dict[str, Any], spec: EnvSpec) -> list[dict[str, str]]:
    """The chat for one joint decision: every role's brief, every view, every role's legal actions."""
    told = prompting(spec)
    briefs = "\n".join(f"- {role}: {brief(spec, role)}" for role in spec.roles)
    system = (
        f"You coordinate every role. {told.world.format(roles=', '.join(spec.roles))}\n{briefs}\n{told.rules}\n"
        + JOINT_OUTPUT % spec.roles[0]
    )
    return [{"role": "system", "content": system},
            {"role": "user", "content": joint_user_prompt(observation, spec)}]


def _merged(values: list[Any]) -> Any:
    """One value for what several roles see of one field: dicts merged key by key, lists joined without
    repeats (in the order the roles see them), otherwise the first role's value (in org only a role's own
    last_query_step differs, which the environment checks for it anyway)."""
    if all(isinstance(v, dict) for v in values):
        keys = list(dict.fromkeys(k for v in values for k in v))
        return {k: _merged([v[k] for v in values if k in v]) for k in keys}
    if all(isinstance(v, list) for v in values):
        seen: dict[str, Any] = {}
        for item in (item for v in values for item in v):
            seen.setdefault(_compact(item), item)
        return list(seen.values())
    return values[0]


def _compacted(value: Any, told: Prompting) -> Any:
    """The value less the kit's omitted keys and settled list items, at any depth."""
    if isinstance(value, dict):
        return {k: _compacted(v, told) for k, v in value.items() if k not in told.compact_omit}
    if isinstance(value, list):
        return [_compacted(v, told) for v in value if not _settled(v, told)]
    return value


def _settled(item: Any, told: Prompting) -> bool:
    return isinstance(item, dict) and any(item.get(field) == value for field, value in told.compact_settled)


def _cell(value: Any) -> str:
    """A value as one line: text as it is (whitespace collapsed), a dict as key=value pairs (a nested one in
    parentheses), a list comma-separated, anything else as JSON."""
    if isinstance(value, str):
        return " ".join(value.split())
    if isinstance(value, dict):
        return " ".join(f"{k}=({_cell(v)})" if isinstance(v, dict) else f"{k}={_cell(v)}" for k, v in value.items())
    if isinstance(value, list):
        return ",".join(_cell(v) for v in value)
    return _compact(value)


def _rows(key: str, items: list[dict[str, Any]]) -> list[str]:
    """A list of records as a table: its columns declared once, then one |-separated row per record."""
    columns = list(dict.fromkeys(column for item in items for column in item))
    return [f"{key} ({'|'.join(columns)}):",
            *("|".join(_cell(item[c]) if c in item else "" for c in columns) for item in items)]


def seen_text(view: dict[str, Any]) -> str:
    """What the roles see in as few tokens as it takes: a line per field, a list of records (or records by
    name) as a table."""
    lines: list[str] = []
    for key, value in view.items():
        if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            lines += _rows(key, value)
        elif isinstance(value, dict) and value and all(isinstance(v, dict) for v in value.values()):
            lines += _rows(key, [{"id": name, **record} for name, record in value.items()])
        else:
            lines.append(f"{key}: {_cell(value)}")
    return "\n".join(lines)


def _finite(fields: Mapping[str, Any]) -> dict[str, list[Any]]:
    return {name: options for name, options in fields.items() if isinstance(options, list)}


def compact_call(name: str, payload: Mapping[str, Any], fields: Mapping[str, Any]) -> str:
    """An action as a compact answer writes it: name(choice,...), one choice per field with choices, in the
    order of the legal action's fields."""
    return f"{name}({','.join(str(payload.get(field, '')) for field in _finite(fields))})"


def compact_calls(legal: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Every action a role may take now, as its compact call -> the action (free text as FILLED_TEXT)."""
    calls: dict[str, dict[str, Any]] = {}
    for name, fields in legal.items():
        finite = _finite(fields)
        text = {field: FILLED_TEXT for field in fields if field not in finite}
        for choice in itertools.product(*finite.values()):
            payload = dict(zip(finite, choice, strict=True)) | text
            calls[compact_call(name, payload, fields)] = {"action_type": name, "payload": payload}
    return calls


def compact_schema(calls_by_role: Mapping[str, Iterable[str]]) -> dict[str, Any]:
    """A JSON schema for a whole compact answer: an array with one of each role's calls (its legal calls, or
    those of them the agent's decoding admits), in role order."""
    return {
        "type": "array",
        "prefixItems": [{"enum": list(calls)} for calls in calls_by_role.values()],
        "items": False,
        "minItems": len(calls_by_role),
        "maxItems": len(calls_by_role),
    }


def compact_messages(observation: dict[str, Any], spec: EnvSpec) -> list[dict[str, str]]:
    """The chat for one joint decision in compact form (see the module docstring)."""
    views = observation["agent_observations"]
    told = prompting(spec)
    merged = {key: _pruned(_merged([view[key] for view in views.values() if view.get(key) not in EMPTY]))
              for key in _view_keys(next(iter(views.values())), told.view_order)
              if any(view.get(key) not in EMPTY for view in views.values())}
    if told.compact_focus is not None:
        left_out = told.compact_focus(merged)
        merged = {key: value for key, value in merged.items() if key not in left_out}
    if told.compact_joined is not None:
        merged = told.compact_joined(merged)
    system = (f"{told.world.format(roles=', '.join(spec.roles))}\n"
              + COMPACT_OUTPUT.format(roles=", ".join(spec.roles), noop=spec.noop_action))
    user = (f"Seen:\n{seen_text(_pruned(_compacted(merged, told)))}\n"
            + (f"Last: {'; '.join(_last_call(role, view) for role, view in views.items())}\n"
               if told.compact_last else "")
            + f"Step {observation['step_count']} of {observation['max_steps']}.")
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def _last_call(role: str, view: Mapping[str, Any]) -> str:
    """A role's last action as a compact call with its status ("role none" before its first): what a small model
    needs to tell where it is in a sequence of actions (open, label, close). A field the action no longer offers
    choices for, or free text, is left blank, so the line reads the same whoever (model, champion, person) acted."""
    last = view.get("last_action_result")
    if last in EMPTY:
        return f"{role} none"
    fields = view.get("legal_actions", {}).get(last["action_type"], {})
    return f"{role} {compact_call(last['action_type'], last['payload'], fields)} {last['status']}"


def repair_message(error: str) -> dict[str, str]:
    """The follow-up turn asking the model to fix an invalid answer."""
    return {"role": "user", "content": f"That answer was invalid: {error}. Answer again with valid JSON only."}
