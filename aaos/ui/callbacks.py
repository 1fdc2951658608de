"""The Space's event handlers. Each takes the tab's Session and an event's inputs and returns the values
of the event's outputs in the order named by DASHBOARD, COMPOSER and the handler's docstring; the layout
wires components to these names and nothing else.

User mistakes (a bad payload, invalid JSON, a seed out of range, stepping a finished episode) come back
as a readable message and change nothing; they never raise.
"""

from __future__ import annotations

import time
import weakref
from collections.abc import Iterator, Sequence
from typing import Any

import gradio as gr

import aaos
from aaos.core.trajectory import EpisodeMeta
from aaos.ui import charts, formatting, forms
from aaos.ui.session import Others, Session, default_meta

SLOTS = forms.slot_count([aaos.spec(env_id) for env_id in aaos.env_ids()])
"""Payload field slots in the action form: each slot has a dropdown (choices) and a textbox (free text)."""
DASHBOARD: tuple[str, ...] = ("status", "hints", "cards", "world", "timeline", "reward_plot", "delivery_plot",
                              "oversight", "actions", "queue", "message")
"""What every step re-renders, in output order."""
CHOICE_SLOTS: tuple[str, ...] = tuple(f"choice_{i}" for i in range(SLOTS))
TEXT_SLOTS: tuple[str, ...] = tuple(f"text_{i}" for i in range(SLOTS))
COMPOSER: tuple[str, ...] = ("action_type", "action_help", *CHOICE_SLOTS, *TEXT_SLOTS, "raw_json")
"""The action form, in output order."""
POLICIES: tuple[tuple[str, str], ...] = (("Champion (heuristic)", "heuristic"), ("Random legal actions", "random"))
"""Agents the Run button offers: (label, aaos.policies name)."""
SESSION_TTL_S = 2 * 3600
"""A tab's simulation is freed after this long without an event (and as soon as the tab closes)."""

_OPEN: weakref.WeakValueDictionary[str, Session] = weakref.WeakValueDictionary()
"""Open sessions by browser session hash, so that closing a tab frees its simulation at once."""

Outputs = tuple[Any, ...]


# Sessions ----------------------------------------------------------------------------------------------

def _open(meta: EpisodeMeta, request: gr.Request | None) -> Session:
    session = Session(meta)
    if request is not None and request.session_hash:
        _OPEN[request.session_hash] = session
    return session


def _live(session: Session | None) -> Session | None:
    return session if session is not None and not session.closed else None


def close_session(session: Session | None) -> None:
    """gr.State's delete_callback: the session expired or its tab is gone."""
    if session is not None:
        session.close()


def unload(request: gr.Request) -> None:
    """The tab closed: free its simulation now."""
    session = _OPEN.pop(request.session_hash, None) if request.session_hash else None
    close_session(session)


def _expired(request: gr.Request | None) -> Session:
    """A fresh default episode for a tab whose session expired (or never loaded)."""
    return _open(default_meta(aaos.env_ids()[0]), request)


# Rendering ---------------------------------------------------------------------------------------------

def dashboard(session: Session, note: str, kind: str = "info") -> Outputs:
    """Everything a step changes, in DASHBOARD order."""
    observation = session.observation
    records = session.records
    action_results = [r for record in records for r in record["action_results"].values()]
    horizon = [0, observation.get("max_steps", len(records))]  # charts span the whole episode
    return (
        formatting.status_bar(session.meta, observation, session.score, records[-1] if records else None),
        formatting.hints(observation),
        formatting.role_cards(observation, session.queue),
        formatting.world(observation),
        formatting.timeline(observation, records),
        gr.update(value=charts.component_frame(session.initial_scores, records), x_lim=horizon),
        gr.update(value=charts.delivery_frame(records), x_lim=horizon),
        formatting.oversight_frame(records),
        formatting.action_frame(action_results),
        formatting.queue_frame(session.queue),
        formatting.message(note, kind),
    )


def _default_action(legal: Sequence[str]) -> str:
    """The action a fresh form shows: the first one that does something."""
    return next((name for name in legal if name != "no_op"), legal[0] if legal else "no_op")


def form_fields(session: Session, role: str, action_type: str | None) -> tuple[str, list[forms.Field]]:
    """The action type the form shows (the requested one if it is legal now) and its fields."""
    legal = session.env.legal_actions(role)
    name = action_type if action_type in legal else _default_action(list(legal))
    return name, forms.action_fields(session.env.spec, legal, name)


def composer(session: Session, role: str, action_type: str | None, raw: bool) -> Outputs:
    """The action form for `role` in COMPOSER order: the legal action types, one slot per payload field
    (dropdown for choices, textbox for text) filled from the current world, and the raw-JSON editor."""
    legal = list(session.env.legal_actions(role))
    name, fields = form_fields(session, role, action_type)
    spec = session.env.spec.action(name)
    action_update = gr.update(choices=[(a, a) for a in legal], value=name)
    help_html = formatting.action_help(name, spec.description if spec else "")
    choice_updates, text_updates = [], []
    for i in range(SLOTS):
        field = fields[i] if i < len(fields) else None
        is_choice = field is not None and field.choices is not None
        is_text = field is not None and field.choices is None
        choice_updates.append(gr.update(
            visible=is_choice and not raw,
            choices=[(forms.choice_label(c), forms.choice_label(c)) for c in field.choices] if is_choice else [],
            value=forms.choice_label(field.choices[0]) if is_choice and field.choices else None,
            label=field.label if is_choice else "", info=field.description if is_choice else None))
        text_updates.append(gr.update(visible=is_text and not raw, value="", label=field.label if is_text else "",
                                      info=field.description if is_text else None))
    raw_update = gr.update(visible=raw, value=forms.to_json(name, forms.default_payload(fields)))
    return (action_update, help_html, *choice_updates, *text_updates, raw_update)


# Events ------------------------------------------------------------------------------------------------

def _seed_problem(seed: float | None) -> str | None:
    if seed is None or seed != int(seed) or seed < 0:
        return "The seed must be a whole number, 0 or more."
    return None


def reset(request: gr.Request, session: Session | None, env_id: str, task: str, scenario: str,
          seed: float | None, role: str, raw: bool) -> Outputs:
    """Start a new episode (also the page load); a bad choice keeps the current episode.
    Outputs: session, DASHBOARD, COMPOSER."""
    session = _live(session)
    note, kind = _seed_problem(seed) or "", "error"
    if not note:
        meta = EpisodeMeta(env_id, task, scenario, int(seed or 0))
        try:
            if session is None:
                session = _open(meta, request)
            else:
                with session.lock:
                    session.reset(meta)
            note, kind = (f"New episode: {formatting.humanize(task)} on {scenario}, seed {meta.seed}. "
                          "Queue actions for any roles and press Step, or press Run to watch an agent."), "ok"
        except ValueError as error:
            note = f"Could not start that episode: {error}"
    session = session or _expired(request)
    with session.lock:
        return session, *dashboard(session, note, kind), *composer(session, role, None, raw)


def episode_choices(env_id: str) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """The (label, id) choices of an environment's tasks and scenarios (train and holdout)."""
    spec = aaos.spec(env_id)
    tasks = [(f"{t.title} ({t.difficulty}, {t.max_steps} steps)", t.id) for t in spec.tasks]
    scenarios = [(f"{s.title} ({s.split})", s.id) for s in spec.scenarios]
    return tasks, scenarios


def choose_env(env_id: str) -> Outputs:
    """An environment was picked: its tasks and scenarios, defaults selected. Outputs: task, scenario."""
    tasks, scenarios = episode_choices(env_id)
    meta = default_meta(env_id)
    return gr.update(choices=tasks, value=meta.task), gr.update(choices=scenarios, value=meta.scenario)


def choose_action(request: gr.Request, session: Session | None, role: str, action_type: str | None,
                  raw: bool) -> Outputs:
    """A role or action type was picked. Outputs: session, COMPOSER."""
    session = _live(session) or _expired(request)
    with session.lock:
        return session, *composer(session, role, action_type, raw)


def toggle_raw(session: Session | None, role: str, action_type: str | None, raw: bool, *slots: Any) -> Outputs:
    """Switch between the form and the raw-JSON editor, carrying the form's values into the JSON.
    Outputs: raw_json, then the CHOICE_SLOTS and TEXT_SLOTS visibility."""
    session = _live(session)
    if session is None:
        return (gr.update(visible=raw), *(gr.update() for _ in range(2 * SLOTS)))
    with session.lock:
        name, fields = form_fields(session, role, action_type)
    payload = forms.read_form(fields, _slot_values(fields, slots))
    updates = [gr.update(visible=not raw and i < len(fields) and fields[i].choices is not None) for i in range(SLOTS)]
    updates += [gr.update(visible=not raw and i < len(fields) and fields[i].choices is None) for i in range(SLOTS)]
    return (gr.update(visible=raw, value=forms.to_json(name, payload)), *updates)


def _slot_values(fields: Sequence[forms.Field], slots: Sequence[Any]) -> list[Any]:
    """Each field's value: from its slot's dropdown if it has choices, else from its textbox."""
    choices, texts = slots[:SLOTS], slots[SLOTS:]
    return [choices[i] if f.choices is not None else texts[i] for i, f in enumerate(fields)]


def queue_action(request: gr.Request, session: Session | None, role: str, action_type: str | None, raw: bool,
                 raw_text: str, *slots: Any) -> Outputs:
    """Queue the form's (or the raw JSON's) action for `role`. Outputs: session, queue, cards, message."""
    session = _live(session) or _expired(request)
    with session.lock:
        if raw:
            action = forms.parse_raw(raw_text)
        elif not action_type:
            action = "Choose an action type first."
        else:
            _, fields = form_fields(session, role, action_type)
            action = {"action_type": action_type, "payload": forms.read_form(fields, _slot_values(fields, slots))}
        problem = action if isinstance(action, str) else session.queue_action(role, action)
        if problem is None:
            queued = session.queue[role]
            note, kind = (f"Queued for {formatting.humanize(role)}: {formatting.action_text(queued)}. "
                          "Queue more roles or press Step."), "ok"
        else:
            note, kind = f"Not queued: {problem}", "error"
        return (session, formatting.queue_frame(session.queue),
                formatting.role_cards(session.observation, session.queue), formatting.message(note, kind))


def clear_queue(request: gr.Request, session: Session | None) -> Outputs:
    """Empty the queue. Outputs: session, queue, cards, message."""
    session = _live(session) or _expired(request)
    with session.lock:
        session.queue.clear()
        return (session, formatting.queue_frame(session.queue),
                formatting.role_cards(session.observation, session.queue),
                formatting.message("Queue cleared.", "info"))


def _step_note(session: Session, prefix: str) -> tuple[str, str]:
    last = session.records[-1]
    rejected = [f"{formatting.humanize(r['role'])}: {r['message']}"
                for r in last["action_results"].values() if r["status"] == "rejected"]
    note = f"{prefix}Step {last['step']}: reward {last['reward']:.3f}, score {last['score']:.3f}."
    if rejected:
        note += " Rejected: " + "; ".join(rejected) + "."
    if last["done"]:
        note += (f" Episode over, final score {last['score']:.3f}. Export it under Downloads, or press Reset "
                 "to play again.")
    return note, "error" if rejected else "ok"


def step(request: gr.Request, session: Session | None, others: Others, role: str, action_type: str | None,
         raw: bool) -> Outputs:
    """Step with the queued actions; other roles do no_op or follow the champion.
    Outputs: session, DASHBOARD, COMPOSER."""
    session = _live(session) or _expired(request)
    with session.lock:
        if session.done:
            note, kind = "The episode is over: press Reset to start a new one.", "error"
        else:
            session.step(session.joint_action(others))
            note, kind = _step_note(session, "")
        return session, *dashboard(session, note, kind), *composer(session, role, action_type, raw)


def run_agent(request: gr.Request, session: Session | None, policy_name: str, delay: float, role: str,
              action_type: str | None, raw: bool) -> Iterator[Outputs]:
    """Let an agent play the rest of the episode (a new one if it is over), yielding after every step.
    Ends with the episode or on Stop (with a last update saying so); gives way silently to a Reset or another
    Run, and ends when the tab closes. Outputs: session, DASHBOARD, COMPOSER."""
    session = _live(session) or _expired(request)
    label = {name: label for label, name in POLICIES}.get(policy_name, policy_name)
    with session.lock:
        if session.done:
            session.reset(session.meta)
        policy = aaos.policies.make(policy_name, seed=session.meta.seed, env=session.meta.env)
        policy.reset(session.meta.seed)
        run = session.start_agent()
        session.queue.clear()
    try:
        while True:
            with session.lock:
                if session.closed or session.generation != run:
                    return
                stopping = session.stop_requested
                if stopping:
                    note = f"Agent stopped at step {session.step_count}. Step manually, Run again or Reset."
                    kind = "info"
                else:
                    session.step(policy.act(session.observation))
                    note, kind = _step_note(session, f"{label} playing. ")
                outputs = (session, *dashboard(session, note, kind), *composer(session, role, action_type, raw))
                finished = stopping or session.done
            yield outputs
            if finished:
                return
            time.sleep(max(0.0, float(delay or 0)))
    finally:
        with session.lock:
            if session.agent == run:
                session.agent = None


def stop_agent(session: Session | None) -> Outputs:
    """Ask the running agent to stop; it shows where it stopped in its last update (so that no update of
    the run can land after this one). Outputs: message (unchanged unless no agent is running)."""
    session = _live(session)
    if session is None or session.agent is None:
        return (formatting.message("No agent is running: press Run to start one.", "info"),)
    with session.lock:
        session.stop_requested = True
    return (gr.update(),)


def export(request: gr.Request, session: Session | None) -> Outputs:
    """Write the episode's trajectory (JSONL) and action log (CSV). Outputs: session, downloads, message."""
    session = _live(session) or _expired(request)
    with session.lock:
        if not session.records:
            return (session, None,
                    formatting.message("Nothing to export yet: take at least one step first.", "error"))
        trajectory, actions = session.export()
        note = f"Exported {session.step_count} steps: the trajectory (JSONL) and the action log (CSV)."
        return session, gr.update(value=[str(trajectory), str(actions)], visible=True), formatting.message(note, "ok")
