"""The Play tab's action form and queue: the form for a role (its legal action types, one slot per payload field
filled from the current world, or raw JSON), queueing and clearing, and every role's card with its queued action.

Each handler takes the tab's Session and the event's inputs and returns its outputs by name (wiring.Outputs). A bad
payload or invalid JSON comes back as a readable message and changes nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gradio as gr

import aaos
from aaos.core.html import action_text, humanize
from aaos.ui import formatting, forms, prose
from aaos.ui.forms import Action
from aaos.ui.session import Session
from aaos.ui.wiring import Outputs, current, live

SLOTS = forms.slot_count([aaos.spec(env_id) for env_id in aaos.env_ids()])
"""Payload field slots in the action form: each slot has a dropdown (choices) and a textbox (free text)."""
CHOICE_SLOTS: tuple[str, ...] = tuple(f"choice_{i}" for i in range(SLOTS))
TEXT_SLOTS: tuple[str, ...] = tuple(f"text_{i}" for i in range(SLOTS))
COMPOSER: tuple[str, ...] = ("role", "action_type", "action_help", *CHOICE_SLOTS, *TEXT_SLOTS, "raw_json")
"""The action form."""
QUEUED: tuple[str, ...] = ("session", "queue", "cards", "message", "queue_note")
"""The outputs of queueing and clearing."""
FORM_CHANGED: tuple[str, ...] = ("session", *COMPOSER, "queue_note")
"""The outputs of choosing a role or an action: the form, and a Queue error gone (the user acted on it)."""
Form = tuple[str | None, str | None, bool]
"""The action form's role, action type and raw-JSON switch, which every full update re-renders."""


def role_cards(session: Session) -> str:
    """Every role's view as the environment kit draws it, side by side, each with its queued action."""
    card = aaos.kit_of(session.meta.env).rendering.role_card
    cards = "".join(card(role, view, session.queue.get(role))
                    for role, view in session.observation["agent_observations"].items())
    return f'<div class="aaos-cards" id="aaos-role-cards">{cards}</div>'


def _default_action(legal: Sequence[str]) -> str:
    """The action a fresh form shows: the first one that does something."""
    return next((name for name in legal if name != "no_op"), legal[0] if legal else "no_op")


def role_of(session: Session, role: str | None) -> str:
    """`role` if the episode's environment has it, else its first role (the environment changed)."""
    roles = session.env.spec.roles
    return role if role in roles else roles[0]


def form_fields(session: Session, role: str, action_type: str | None) -> tuple[str, list[forms.Field]]:
    """The action type the form shows (the requested one if it is legal now) and its fields."""
    legal = session.env.legal_actions(role)
    name = action_type if action_type in legal else _default_action(list(legal))
    return name, forms.action_fields(session.env.spec, legal, name)


def composer(session: Session, role: str | None, action_type: str | None, raw: bool) -> Outputs:
    """The action form for `role` (COMPOSER): the environment's roles, the legal action types, one slot per
    payload field (dropdown for choices, textbox for text) filled from the current world, and the raw-JSON
    editor. A choice starts on the first value that is not the acting role itself (delegating to oneself is no
    default)."""
    role = role_of(session, role)
    legal = list(session.env.legal_actions(role))
    name, fields = form_fields(session, role, action_type)
    spec = session.env.spec.action(name)
    defaults = forms.default_payload(fields, role)
    titles = forms.item_titles(session.observation["agent_observations"][role])
    session.form_shown = (role, name, raw)
    outputs: Outputs = {
        "role": gr.update(choices=[(humanize(r), r) for r in session.env.spec.roles], value=role),
        "action_type": gr.update(choices=[(a, a) for a in legal], value=name),
        "action_help": formatting.action_help(role, name, spec.description if spec else "", fields if raw else ()),
        "raw_json": gr.update(visible=raw, value=forms.to_json(name, defaults)),
    }
    for i in range(SLOTS):
        field = fields[i] if i < len(fields) else None
        is_choice = field is not None and field.choices is not None
        is_text = field is not None and field.choices is None
        outputs[CHOICE_SLOTS[i]] = gr.update(
            visible=is_choice and not raw,
            choices=[(forms.choice_text(c, titles), forms.choice_label(c)) for c in field.choices] if is_choice else [],
            value=forms.choice_label(defaults[field.name]) if is_choice and field.choices else None,
            label=field.label if is_choice else "", info=field.description if is_choice else None)
        outputs[TEXT_SLOTS[i]] = gr.update(visible=is_text and not raw, value=defaults[field.name] if is_text else "",
                                           label=field.label if is_text else "",
                                           info=field.description if is_text else None)
    return outputs


def choose_action(request: gr.Request, session: Session | None, role: str, action_type: str | None,
                  raw: bool) -> Outputs:
    """A role or action type was picked: the form for it, unless it is the one shown (Gradio's dropdown also fires
    `input` when its list closes without a new choice, and what was typed stays). Outputs: FORM_CHANGED."""
    session = current(session, request)
    with session.lock:
        if session.form_shown == (role, action_type, raw):  # neither a role nor an action of another list
            return {}
        session.queue_note = ""
        return {"session": session, **composer(session, role, action_type, raw), "queue_note": ""}


def _slot_values(fields: Sequence[forms.Field], slots: Sequence[Any]) -> list[Any]:
    """Each field's value: from its slot's dropdown if it has choices, else from its textbox."""
    choices, texts = slots[:SLOTS], slots[SLOTS:]
    return [choices[i] if f.choices is not None else texts[i] for i, f in enumerate(fields)]


def toggle_raw(session: Session | None, role: str, action_type: str | None, raw: bool, *slots: Any) -> Outputs:
    """Switch between the form and the raw-JSON editor, carrying the form's values into the JSON; in raw JSON the
    action's help lists each field's valid values (the form's boxes that showed them are hidden).
    Outputs: raw_json, action_help and the slots' visibility."""
    session = live(session)
    if session is None:
        return {"raw_json": gr.update(visible=raw)}
    with session.lock:
        role = role_of(session, role)
        name, fields = form_fields(session, role, action_type)
        spec = session.env.spec.action(name)
        session.form_shown = (role, name, raw)
    payload = forms.read_form(fields, _slot_values(fields, slots))
    outputs: Outputs = {"raw_json": gr.update(visible=raw, value=forms.to_json(name, payload)),
                        "action_help": formatting.action_help(role, name, spec.description if spec else "",
                                                              fields if raw else ())}
    for i in range(SLOTS):
        field = fields[i] if i < len(fields) else None
        outputs[CHOICE_SLOTS[i]] = gr.update(visible=not raw and field is not None and field.choices is not None)
        outputs[TEXT_SLOTS[i]] = gr.update(visible=not raw and field is not None and field.choices is None)
    return outputs


def _queued(session: Session, note: str, kind: str) -> Outputs:
    """QUEUED; an error shows under the Queue button too, where the user is (the main message may be scrolled
    away, under a tall raw-JSON editor, or replaced by a run's next step), until the user acts again."""
    session.queue_note = formatting.message(note, kind) if kind == "error" else ""
    return {"session": session, "queue": formatting.queue_frame(session.queue), "cards": role_cards(session),
            "message": formatting.message(note, kind), "queue_note": session.queue_note}


def _form_action(session: Session, role: str, action_type: str | None, slots: Sequence[Any]) -> Action | str:
    """The form's action for `role`, or why there is none: no action chosen, or one the role cannot take now (chosen
    from the list of another role, or of a moment ago). A role the environment lacks is Session.queue_action's
    to name."""
    if not action_type:
        return "Choose an action type first."
    if role not in session.env.spec.roles:
        return {"action_type": action_type, "payload": {}}
    legal = session.env.legal_actions(role)
    if action_type not in legal:
        return prose.NOT_AN_ACTION_NOW.format(action=action_type, role=humanize(role), actions=", ".join(legal))
    _, fields = form_fields(session, role, action_type)
    return {"action_type": action_type, "payload": forms.read_form(fields, _slot_values(fields, slots))}


def queue_action(request: gr.Request, session: Session | None, role: str, action_type: str | None, raw: bool,
                 raw_text: str, *slots: Any) -> Outputs:
    """Queue the form's (or the raw JSON's) action for `role`. Outputs: QUEUED."""
    session = current(session, request)
    with session.lock:
        action = forms.parse_raw(raw_text) if raw else _form_action(session, role, action_type, slots)
        problem = action if isinstance(action, str) else session.queue_action(role, action)
        if problem is None:
            more = "Queue more roles or press Step." if len(session.env.spec.roles) > 1 else "Press Step."
            return _queued(session, f"Queued for {humanize(role)}: {action_text(session.queue[role])}. {more}", "ok")
        return _queued(session, f"Not queued: {problem}", "error")


def clear_queue(request: gr.Request, session: Session | None) -> Outputs:
    """Empty the queue. Outputs: QUEUED."""
    session = current(session, request)
    with session.lock:
        session.queue.clear()
        return _queued(session, prose.QUEUE_CLEARED, "info")
