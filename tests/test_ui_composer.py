"""The Play tab's action form as a judge finds it: Gradio's own processing of a role switched a moment before the
action (no error popup), composer errors that stay until the user acts, a form that can be queued as it opens, and
choices that name what they pick."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from gradio.blocks import BlockFunction, Blocks
from gradio.state_holder import SessionState
from ui_fixtures import fingerprint, queue_form, reset

import aaos
from aaos.ui import composer, forms, play_tab
from aaos.ui.layout import build_blocks
from aaos.ui.session import Session, default_meta


@pytest.fixture(scope="module")
def blocks() -> Blocks:
    return build_blocks()


def gradio_event(blocks: Blocks, elem_id: str, trigger: str) -> BlockFunction:
    """The event the page fires when `trigger` happens on the component `elem_id`."""
    block = next(b for b in blocks.blocks.values() if getattr(b, "elem_id", None) == elem_id)
    return next(fn for fn in blocks.fns.values() if (block._id, trigger) in {tuple(t) for t in fn.targets})


def fire(blocks: Blocks, event: BlockFunction, state: SessionState, *values: Any) -> dict[Any, Any]:
    """Run `event` as Gradio's server does for a page (preprocessing included) in the browser session `state`;
    `values` are what the page sends, the tab's session State first (Gradio takes it from `state`)."""
    answer = asyncio.run(blocks.process_api(event, list(values), state=state))
    return dict(zip(event.outputs, answer["data"], strict=True))


def by_id(outputs: dict[Any, Any], elem_id: str) -> Any:
    return next(value for block, value in outputs.items() if getattr(block, "elem_id", None) == elem_id)


def test_an_action_chosen_from_the_list_of_the_role_before_gets_the_spaces_answer_not_gradios_error(
        blocks: Blocks) -> None:
    """Switch the role to Oversight, then (before the page drew its actions) choose or queue propose_plan from the
    product manager's list: Gradio already holds Oversight's actions for this browser session. The form answers
    with Oversight's own actions and Queue says why nothing was queued; Gradio raises nothing."""
    state = SessionState(blocks)
    slots = [None] * play_tab.SLOTS + [""] * play_tab.SLOTS
    switched = fire(blocks, gradio_event(blocks, "aaos-role", "input"), state, None, "oversight", "propose_plan", False)
    assert "propose_plan" not in str(by_id(switched, "aaos-action"))
    session = next(value for value in state.state_data.values() if isinstance(value, Session))
    before = fingerprint(session)

    chosen = fire(blocks, gradio_event(blocks, "aaos-action", "input"), state, None, "oversight", "propose_plan", False)
    shown = by_id(chosen, "aaos-action")
    assert shown["value"] in session.env.legal_actions("oversight") and shown["value"] != "propose_plan"

    queued = fire(blocks, gradio_event(blocks, "aaos-queue-button", "click"), state, None, "oversight",
                  "propose_plan", False, "", *slots)
    note = by_id(queued, "aaos-queue-note")
    assert "Not queued: propose_plan is not one of the Oversight's actions now" in note and "query_metrics" in note
    assert fingerprint(session) == before

    stepped = fire(blocks, gradio_event(blocks, "aaos-step", "click"), state, None, "no_op", "oversight",
                   "propose_plan", False, "heuristic", "per_role", "", "", "")
    assert session.step_count == 1 and by_id(stepped, "aaos-message") is not None


def test_every_form_queues_as_it_opens() -> None:
    """Each role's form, for every action it can take, starts on values that queue: a required text (a plan, an
    anomaly's description) is prefilled with a valid one."""
    for env_id in aaos.env_ids():
        session = play_tab.reset(None, None, env_id, *_default_episode(env_id), 0, aaos.spec(env_id).roles[0],
                                 False)["session"]
        for role in session.env.spec.roles:
            for action in session.env.legal_actions(role):
                form = composer.composer(session, role, action, False)
                slots = [form[name]["value"] for name in (*play_tab.CHOICE_SLOTS, *play_tab.TEXT_SLOTS)]
                out = play_tab.queue_action(None, session, role, action, False, "", *slots)
                assert "aaos-message-ok" in out["message"], (env_id, role, action, out["message"])
                session.queue.clear()


def _default_episode(env_id: str) -> tuple[str, str]:
    meta = default_meta(env_id)
    return meta.task, meta.scenario


def test_a_composer_error_stays_through_a_runs_steps_until_the_user_acts() -> None:
    session = reset()["session"]
    run = play_tab.run_agent(None, session, "heuristic", 0)
    next(run)
    refused = queue_form(session, "product_manager", "propose_plan", plan="")
    assert "Not queued: payload.plan" in refused["queue_note"]
    next(run)
    next(run)
    assert "Not queued: payload.plan" in play_tab.redraw(session)["queue_note"]
    acted = play_tab.choose_action(None, session, "engineer", "query_metrics", False)
    next(run)
    assert acted["queue_note"] == "" and play_tab.redraw(session)["queue_note"] == ""
    run.close()


def test_id_choices_name_the_item_they_pick() -> None:
    """An email picker lists each email's subject beside its id (the id is what is sent); a task picker its title."""
    out = play_tab.reset(None, None, "inbox", *_default_episode("inbox"), 0, "triage_agent", False)
    session = out["session"]
    inbox = {e["id"]: e["subject"] for e in session.observation["agent_observations"]["triage_agent"]["inbox"]}
    form = play_tab.redraw(session)
    choices = dict((value, label) for label, value in form["choice_0"]["choices"])
    assert set(choices) == set(inbox) and all(label == f"{i} · {inbox[i]}" for i, label in choices.items())
    assert forms.choice_text("em_x", {}) == "em_x"
