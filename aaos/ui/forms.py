"""The manual-play action form: payload fields from a role's legal actions, reading them back, and raw JSON.
Plain Python; no gradio. (Whether an action may be queued is aaos.core.actions.legal_problem's call.)

A form has a fixed number of field slots (the most payload fields any action of any environment has);
each field is either a choice among the current world's values (task ids, roles, risk ids, ...) or
free text, exactly as `legal_actions(role)` describes it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aaos.core.html import humanize
from aaos.core.spec import EnvSpec

Action = dict[str, Any]
PREFILL = "{field} of the {role}, written in the Play tab"
"""The text a required free-text field starts with (every such field takes any text of a few words)."""
TITLE_KEYS: tuple[str, ...] = ("subject", "title", "name")
"""The keys of an item's title in a view, by preference."""
LegalActions = dict[str, dict[str, Any]]


@dataclass(frozen=True, slots=True)
class Field:
    """One payload field: `choices` lists the valid values now, or is None for free text."""

    name: str
    choices: tuple[Any, ...] | None
    description: str
    required: bool = False

    @property
    def label(self) -> str:
        return self.name.replace("_", " ").capitalize()


def slot_count(specs: Sequence[EnvSpec]) -> int:
    """How many field slots a form needs: the most payload fields of any action of these environments."""
    return max(len(action.payload.model_fields) for spec in specs for action in spec.actions)


def action_fields(spec: EnvSpec, legal: LegalActions, action_type: str) -> list[Field]:
    """The payload fields of a legal action type, with their current choices and descriptions."""
    action_spec = spec.action(action_type)
    model_fields = action_spec.payload.model_fields if action_spec else {}
    fields = []
    for name, choices in legal.get(action_type, {}).items():
        info = model_fields.get(name)
        description = (info.description if info and info.description else "") or ""
        fields.append(Field(name, tuple(choices) if isinstance(choices, list) else None, description,
                            info is not None and info.is_required()))
    return fields


def choice_label(value: Any) -> str:
    """How a choice is shown (and sent back) in a dropdown."""
    return str(value)


def item_titles(view: Any) -> dict[str, str]:
    """What a role's view calls each item it lists with an id (an email's subject, a task's title), by id; a choice
    among ids shows it beside the id."""
    titles: dict[str, str] = {}
    if isinstance(view, dict):
        title = next((view[key] for key in TITLE_KEYS if isinstance(view.get(key), str)), None)
        if isinstance(view.get("id"), str) and title:
            titles[view["id"]] = title
        items: Any = view.values()
    else:
        items = view if isinstance(view, list) else ()
    for item in items:
        if isinstance(item, dict | list):
            titles.update(item_titles(item))
    return titles


def choice_text(value: Any, titles: Mapping[str, str]) -> str:
    """How a choice is listed: its label (choice_label), and the title of the item it names, if any."""
    label = choice_label(value)
    return f"{label} · {titles[label]}" if label in titles else label


def read_form(fields: Sequence[Field], values: Sequence[Any]) -> Action:
    """The payload from the slot values (one per field, in order); dropdown labels map back to typed
    choices, anything else is passed on as given so that validation can name the problem."""
    payload: dict[str, Any] = {}
    for field, value in zip(fields, values, strict=False):
        if field.choices is None:
            payload[field.name] = "" if value is None else str(value)
        else:
            by_label = {choice_label(c): c for c in field.choices}
            payload[field.name] = by_label.get(choice_label(value), value) if value is not None else None
    return payload


def _default(field: Field, role: str) -> Any:
    if field.choices:
        return next((c for c in field.choices if c != role), field.choices[0])
    if field.choices is None and field.required:
        return PREFILL.format(field=field.label, role=humanize(role).lower())
    return ""


def default_payload(fields: Sequence[Field], role: str = "") -> Action:
    """The payload a fresh form of `role` starts with: the first choice of each choice field that is not the role
    itself (unless it is the only one); a required text a valid one (PREFILL), so that the form as it opens can be
    queued; other text empty."""
    return {f.name: _default(f, role) for f in fields}


def to_json(action_type: str, payload: Action) -> str:
    """An action as the raw-JSON editor shows it."""
    return json.dumps({"action_type": action_type, "payload": payload}, indent=2)


def parse_raw(text: str | None) -> Action | str:
    """The action in the raw-JSON editor, or a message saying what is wrong with the text."""
    if not text or not text.strip():
        return 'Raw JSON is empty: write an action like {"action_type": "no_op", "payload": {}}.'
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        return f"Raw JSON is not valid JSON: {error.msg} (line {error.lineno}, column {error.colno})."
    if not isinstance(value, dict):
        return 'Raw JSON must be an object like {"action_type": "no_op", "payload": {}}.'
    return value
