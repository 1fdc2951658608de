"""The Space's event handlers, called as the layout calls them (no browser, no server)."""

from __future__ import annotations

import csv
import gc
import json
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import gradio as gr
import pytest
from helpers import registered
from ui_fixtures import ROOT, assert_no_reprs, fingerprint, html_table, queue_form, queue_raw, reset, step

import aaos
from aaos.core import html
from aaos.core.trajectory import TRAJECTORY_VERSION
from aaos.envs.org.render import metric_text
from aaos.ui import benchmark_tab, charts, composer, formatting, forms, layout, play_tab, wiring
from aaos.ui.layout import build_blocks
from aaos.ui.session import Session, SessionClosed, champion_score, default_meta

QUERY = '{"action_type": "query_metrics", "payload": {"metric": "latency"}}'


def message_of(outputs: dict[str, Any]) -> str:
    return outputs["message"]


def test_reset_starts_an_episode_with_six_cards_and_the_role_form() -> None:
    out = reset(role="engineer")
    session = out["session"]
    assert session.step_count == 0 and not session.done
    assert "0 / 50" in out["status"] and "Aggressive deadline" in out["status"]
    assert out["cards"].count('class="aaos-card"') == len(aaos.spec("org").roles)
    assert out["action_type"]["choices"] == [(a, a) for a in session.env.legal_actions("engineer")]
    assert out["action_type"]["value"] != "no_op"
    assert "aaos-message-ok" in message_of(out)
    assert_no_reprs(out)


def test_reset_switches_task_scenario_and_holdout_seed() -> None:
    session = reset()["session"]
    out = reset(session, task="org_simulation", scenario="vendor_outage_cascade", seed=10001)
    assert out["session"] is session
    assert session.meta.task == "org_simulation" and session.meta.seed == 10001
    assert "0 / 20" in out["status"] and "holdout variant" in out["status"]


@pytest.mark.parametrize("seed", [-1, 1.5, None])
def test_a_bad_seed_is_refused_and_keeps_the_episode(seed: float | None) -> None:
    session = reset()["session"]
    step(session)
    before = fingerprint(session)
    out = reset(session, task="org_simulation", seed=seed)
    assert "aaos-message-error" in message_of(out) and "seed" in message_of(out)
    assert fingerprint(session) == before and session.meta.task == "full_episode"


def test_queue_from_the_form_then_step() -> None:
    session = reset()["session"]
    queued = queue_form(session, "product_manager", "delegate_task", task_id="task_frontend", to="engineer")
    assert "Queued for Product manager" in queued["message"]
    assert session.queue["product_manager"] == {"action_type": "delegate_task",
                                                "payload": {"task_id": "task_frontend", "to": "engineer"}}
    assert "Queued:" in queued["cards"]
    assert list(queued["queue"].iloc[0]) == ["Product manager", "delegate_task",
                                             "task_id: task_frontend · to: engineer"]

    out = step(session)
    result = session.records[-1]["action_results"]["product_manager"]
    assert result["status"] == "applied" and result["payload"]["task_id"] == "task_frontend"
    assert session.step_count == 1 and session.queue == {}
    assert "1 / 50" in out["status"] and out["queue"].empty
    assert set(out["reward_plot"]["value"]["series"]) >= {"Business success", charts.SCORE_SERIES}
    assert set(out["delivery_plot"]["value"]["step"]) == {1} and out["delivery_plot"]["x_lim"] == [0, 50]
    assert "delegate_task" in set(out["actions"]["Action"])
    assert_no_reprs(out)


def test_the_reward_delivered_chart_fits_its_values() -> None:
    """Each step's reward is a small share of the score: its chart's axis fits the values, not 0 to 1."""
    session = reset()["session"]
    for _ in range(3):
        out = step(session, "agent")
    values = out["delivery_plot"]["value"]["value"]
    low, high = out["delivery_plot"]["y_lim"]
    assert 0 < values.max() <= high < 0.5 and low == min(0.0, low) <= values.min()


def test_the_world_shows_the_final_grade_once_the_episode_is_over() -> None:
    """Chief of Staff hides two components from its agent while it plays: once over, the World shows what the report
    grades, not "—"; the end's message is no warning for a no-op that did nothing."""
    meta = default_meta("chief_of_staff")
    session = play_tab.reset(None, None, "chief_of_staff", meta.task, meta.scenario, 0, "chief_of_staff",
                             False)["session"]
    hidden = [name for name, value in session.observation["partial_scores"].items() if value is None]
    *_, last = play_tab.run_agent(None, session, "heuristic", 0)
    assert session.done and hidden
    noop = session.records[-1]["action_results"]["chief_of_staff"]
    assert (noop["action_type"], noop["status"]) == ("no_op", "no_effect")  # the champion's last step does nothing
    assert "aaos-message-ok" in last["message"]  # a normal end, not a warning
    world = play_tab.redraw(session)["world"]
    graded = session.records[-1]["reward_breakdown"]["components"]
    for name in hidden:
        assert f"<b>{html.esc(html.humanize(name))}</b> {html.text(graded[name])}</span>" in world, name


def test_amounts_come_back_as_numbers_from_the_dropdown() -> None:
    session = reset(scenario="resource_conflict")["session"]
    out = queue_form(session, "engineer", "request_resource", resource_type="compute", amount="15")
    assert "Queued" in out["message"], out["message"]
    assert session.queue["engineer"]["payload"] == {"amount": 15, "resource_type": "compute"}


INVALID = [
    ("not json", "Raw JSON is not valid JSON"),
    ("[1, 2]", "Raw JSON must be an object"),
    ("", "Raw JSON is empty"),
    ('{"action_type": "fly_to_the_moon", "payload": {}}', "unknown action_type"),
    ('{"action_type": "approve_resource", "payload": {"amount": 5, "resource_type": "compute"}}',
     "engineer may not use approve_resource"),
    ('{"action_type": "propose_plan", "payload": {"plan": ""}}', "payload.plan"),
    ('{"action_type": "propose_plan", "payload": {}}', "payload.plan: Field required"),
    ('{"action_type": "delegate_task", "payload": {"task_id": "task_nope", "to": "engineer"}}',
     "payload.task_id must be one of the current choices"),
    ('{"action_type": "delegate_task", "payload": {"task_id": "task_frontend", "to": "ceo"}}', "payload.to"),
    ('{"action_type": "resolve_incident", "payload": {"incident_id": "incident_x"}}', "not possible for engineer"),
    ('{"action_type": "query_metrics", "payload": {"metric": "latency"}, "extra": 1}', "unexpected keys"),
    ('{"action_type": "query_metrics", "payload": {}}', "payload.metric: Field required"),
    ('{"action_type": "query_metrics", "payload": {"metric": "data_quality"}}',
     "payload.metric must be one of the current choices"),
]


@pytest.mark.parametrize(("text", "expected"), INVALID)
def test_invalid_raw_json_shows_a_readable_message_and_changes_nothing(text: str, expected: str) -> None:
    session = reset()["session"]
    queue_form(session, "product_manager", "delegate_task", task_id="task_backend", to="engineer")
    before = fingerprint(session)
    out = queue_raw(session, "engineer", text)
    assert "aaos-message-error" in out["message"] and expected in out["message"], out["message"]
    assert fingerprint(session) == before
    assert "Traceback" not in out["message"]


@pytest.mark.parametrize("text", ["", "[1, 2]"])
def test_the_example_an_error_suggests_is_an_action_every_role_can_queue(text: str) -> None:
    message = forms.parse_raw(text)
    assert isinstance(message, str)
    example = message[message.index("{"):message.rindex("}") + 1]
    session = reset()["session"]
    for role in aaos.spec("org").roles:
        out = queue_raw(session, role, example)
        assert "aaos-message-ok" in out["message"], (role, out["message"])
        assert session.queue[role] == json.loads(example)


def test_invalid_form_values_are_refused() -> None:
    session = reset()["session"]
    before = fingerprint(session)
    out = queue_form(session, "engineer", "propose_plan", plan="")
    assert "Not queued" in out["message"] and "payload.plan" in out["message"]
    out = queue_form(session, "product_manager", "delegate_task", task_id="task_gone", to="engineer")
    assert "must be one of the current choices" in out["message"]
    assert fingerprint(session) == before


def test_raw_json_is_queued_like_the_form() -> None:
    session = reset()["session"]
    out = queue_raw(session, "engineer", QUERY)
    assert "Queued for Engineer: query_metrics" in out["message"]
    assert session.queue == {"engineer": {"action_type": "query_metrics", "payload": {"metric": "latency"}}}


def test_clear_queue() -> None:
    session = reset()["session"]
    queue_raw(session, "engineer", QUERY)
    out = play_tab.clear_queue(None, session)
    assert session.queue == {} and out["queue"].empty and "Queued:" not in out["cards"]


def test_roles_without_an_action_follow_the_champion_when_asked() -> None:
    session = reset()["session"]
    queue_raw(session, "engineer", QUERY)
    champion = aaos.policies.make("heuristic").act(session.observation)
    step(session, others="agent")
    sent = session.records[-1]["joint_action"]
    assert sent["engineer"] == {"action_type": "query_metrics", "payload": {"metric": "latency"}}
    assert {role: action for role, action in sent.items() if role != "engineer"} == {
        role: action for role, action in champion.items() if role != "engineer"}


def test_roles_without_an_action_do_nothing_by_default() -> None:
    session = reset()["session"]
    step(session)
    assert session.records[-1]["joint_action"] == {}
    assert {r["action_type"] for r in session.records[-1]["action_results"].values()} == {"no_op"}


def test_stepping_a_finished_episode_is_refused() -> None:
    session = reset(task="org_simulation")["session"]
    for _ in play_tab.run_agent(None, session, "heuristic", 0):
        pass
    assert session.done
    before = fingerprint(session)
    out = step(session)
    assert "The episode is over" in out["message"] and fingerprint(session) == before
    out = queue_raw(session, "engineer", QUERY)
    assert "The episode is over" in out["message"] and session.queue == {}


@pytest.mark.parametrize("policy", ["heuristic", "random"])
def test_agent_run_streams_every_step_to_the_final_score(policy: str) -> None:
    session = reset(task="crisis_management", scenario="silent_data_drift", seed=3)["session"]
    outputs = list(play_tab.run_agent(None, session, policy, 0))
    assert [int(o["status"].split('id="aaos-stat-step">')[1].split(" /")[0]) for o in outputs] == list(
        range(1, len(outputs) + 1))
    assert session.done and "final" in outputs[-1]["status"] and "Episode over, final score" in outputs[-1]["message"]
    env = aaos.make("crisis_management", scenario="silent_data_drift", seed=3)
    agent = aaos.policies.make(policy, seed=3)
    observation = env.reset()
    while True:
        result = env.step(agent.act(observation))
        observation = result.observation
        if result.done:
            break
    assert session.score == pytest.approx(result.info["score"])
    assert_no_reprs(outputs[-1])


def test_agent_run_continues_a_manual_episode_and_restarts_a_finished_one() -> None:
    session = reset(task="org_simulation")["session"]
    step(session)
    runs = play_tab.run_agent(None, session, "heuristic", 0)
    first = next(runs)
    assert first["session"].step_count == 2
    for _ in runs:
        pass
    first = next(play_tab.run_agent(None, session, "heuristic", 0))
    assert first["session"].step_count == 1 and not session.done


@pytest.mark.usefixtures("held_runs")
def test_agent_run_stops_on_stop_and_gives_way_to_reset_and_to_another_run() -> None:
    session = reset()["session"]
    idle = play_tab.stop_agent(session)
    assert "No agent is running" in idle["message"]

    runs = play_tab.run_agent(None, session, "heuristic", 0)
    next(runs)
    next(runs)
    assert play_tab.stop_agent(session) == {}
    last = list(runs)
    assert len(last) == 1 and "Agent stopped at step 2" in last[0]["message"] and "2 / 50" in last[0]["status"]
    assert session.step_count == 2 and session.agent is None

    runs = play_tab.run_agent(None, session, "heuristic", 0)
    next(runs)
    reset(session)
    assert list(runs) == [] and session.step_count == 0

    first = play_tab.run_agent(None, session, "heuristic", 0)
    next(first)
    second = play_tab.run_agent(None, session, "random", 0)
    next(second)
    assert list(first) == [] and session.step_count == 2 and session.agent is not None
    second.close()
    assert session.agent is None


@pytest.mark.usefixtures("held_runs")
def test_a_runs_signal_that_lands_after_a_reset_redraws_the_new_episode() -> None:
    """Run draws through a signal and the redraw of the session's latest drawing: a signal the page applies after a
    reset (its run's updates lag behind) draws the fresh episode, never the run's step."""
    session = reset()["session"]
    runs = play_tab.signalling(play_tab.run_agent)(None, session, "heuristic", 0, "engineer", None, False)
    signals = [next(runs), next(runs)]
    assert all(set(s) == {"session", "drawn"} for s in signals) and signals[0]["drawn"] < signals[1]["drawn"]
    assert "2 / 50" in play_tab.redraw(session)["status"]
    fresh = reset(session)
    late = play_tab.redraw(session)
    assert late == fresh and "0 / 50" in late["status"] and "playing" not in late["message"]
    assert list(runs) == [] and play_tab.redraw(None) == {}


def test_a_drawing_is_sent_once_so_a_message_set_after_it_stays() -> None:
    """Two signals queue up (a task then a scenario picked); the first redraw sends the latest drawing, and the
    second sends nothing, so the message a seed typed since then set stays on the page."""
    session = reset()["session"]
    signalling = play_tab.signalling(play_tab.choose_episode)
    signalling(None, session, "org", "crisis_management", "product_launch_failure", 0, "engineer", False)
    signalling(None, session, "org", "crisis_management", "vendor_outage_cascade", 0, "engineer", False)
    assert "vendor_outage_cascade" in play_tab.redraw(session)["status"]
    assert "Seed 10003 is selected" in play_tab.choose_seed(session, 10003)["message"]
    assert play_tab.redraw(session) == {}
    play_tab.reset(None, session, "org", "crisis_management", "vendor_outage_cascade", 10003, "engineer", False)
    assert "seed 10003" in play_tab.redraw(session)["status"]


def test_only_the_redraw_draws_the_episode_one_at_a_time() -> None:
    """Two events drawing the same components race in the page and in what Gradio keeps per browser session (a
    dropdown's choices): every event that changes the episode signals, and the redraw alone draws it."""
    blocks = build_blocks()
    status = next(b for b in blocks.blocks.values() if getattr(b, "elem_id", None) == "aaos-status-box")
    drawing = [fn for fn in blocks.fns.values() if any(block is status for block in fn.outputs)]
    assert [fn.name for fn in drawing] == ["redraw"] and drawing[0].concurrency_limit == 1
    session = reset()["session"]
    signal = play_tab.signalling(play_tab.reset)(None, session, "inbox", "easy", "saas_helpdesk", 0, "triage_agent",
                                                    False)
    assert set(signal) == {"session", "drawn"} and signal["drawn"] == session.draws
    assert "0 / " in play_tab.redraw(session)["status"] and session.meta.env == "inbox"


def test_a_runs_steps_leave_the_form_to_the_user_and_a_new_form_is_drawn_once() -> None:
    """A person composing an action during a run (a mixed team, live) keeps the form: a run's drawings leave it
    out, and the form a new episode draws is sent by one redraw, not again with every step after it."""
    session = reset()["session"]
    composed = set(composer.COMPOSER)
    assert composed <= set(play_tab.redraw(session)) and not composed & set(play_tab.redraw(session))
    updates = list(play_tab.run_agent(None, session, "heuristic", 0))
    assert session.done and all(not composed & set(update) for update in updates)
    assert "50 / 50" in play_tab.redraw(session)["status"]
    reset(session, task="org_simulation")
    assert composed <= set(play_tab.redraw(session))


def test_choosing_the_role_and_action_shown_keeps_the_form_as_typed() -> None:
    """The role and action dropdowns fire `input` when their list closes without a new choice: the form shown
    stays (its typed payload too); a new choice, or the raw-JSON switch, composes it."""
    session = reset()["session"]
    assert set(play_tab.choose_action(None, session, "product_manager", "delegate_task", False)) > {"role"}
    assert play_tab.choose_action(None, session, "product_manager", "delegate_task", False) == {}
    assert play_tab.choose_action(None, session, "product_manager", None, False) != {}  # the default action
    assert "action_type" in play_tab.choose_action(None, session, "engineer", "report_anomaly", False)
    play_tab.toggle_raw(session, "engineer", "report_anomaly", True, *[None] * (2 * play_tab.SLOTS))
    assert play_tab.choose_action(None, session, "engineer", "report_anomaly", True) == {}


@pytest.mark.usefixtures("held_runs")
def test_choosing_what_is_already_played_starts_no_episode_and_leaves_a_run_going() -> None:
    """Gradio's dropdown fires `input` whenever its list closes or it loses focus, also without a new choice: the
    environment, task or scenario being played is no new episode, and a run goes on."""
    session = reset()["session"]
    runs = play_tab.run_agent(None, session, "heuristic", 0)
    next(runs)
    assert play_tab.choose_env(None, session, "org", False) == {}
    same = ("org", "full_episode", "product_launch_failure", 0, "engineer", False)
    assert play_tab.choose_episode(None, session, *same) == {}
    next(runs)
    assert session.step_count == 2 and session.agent is not None
    other = play_tab.choose_episode(None, session, "org", "org_simulation", "product_launch_failure", 0, "engineer",
                                    False)
    assert list(runs) == [] and session.agent is None and session.meta.task == "org_simulation"
    assert "0 / " in other["status"] and "New episode" in message_of(other)


def test_export_writes_the_trajectory_and_the_action_log() -> None:
    session = reset(task="org_simulation")["session"]
    out = play_tab.export(None, session)
    assert out["files"] is None and "Nothing to export yet" in out["message"]
    queue_raw(session, "engineer", QUERY)
    step(session)
    step(session, others="agent")
    out = play_tab.export(None, session)
    trajectory, actions = out["files"]["value"]
    assert out["files"]["visible"] and trajectory.endswith(".jsonl") and actions.endswith(".csv")
    records = [json.loads(line) for line in Path(trajectory).read_text(encoding="utf-8").splitlines()]
    assert [r["step"] for r in records] == [1, 2]
    assert all(r["version"] == TRAJECTORY_VERSION and r["task"] == "org_simulation" for r in records)
    assert records[0]["joint_action"] == {"engineer": json.loads(QUERY)}
    with open(actions, newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == len(session.env.state()["log"]) == 2 * len(aaos.spec("org").roles)
    assert rows[1]["role"] == "engineer" and rows[1]["action_type"] == "query_metrics" and rows[1]["step"] == "1"
    assert rows[-1]["step"] == "2"  # numbered as the trajectory and the status bar, from 1
    assert json.loads(rows[1]["payload"]) == {"metric": "latency"}


@pytest.mark.parametrize("env_id", ["inbox", "chief_of_staff"])
def test_every_environment_exports_an_action_log_numbered_as_its_trajectory(env_id: str) -> None:
    meta = default_meta(env_id)
    session = play_tab.reset(None, None, env_id, meta.task, meta.scenario, 0, aaos.spec(env_id).roles[0],
                         False)["session"]
    for _ in range(3):
        step(session, others="agent")
    trajectory, actions = play_tab.export(None, session)["files"]["value"]
    records = [json.loads(line) for line in Path(trajectory).read_text(encoding="utf-8").splitlines()]
    with open(actions, newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    expected = [(str(r["step"]), result["role"], result["action_type"], result["status"])
                for r in records for result in r["action_results"].values()]
    assert [(row["step"], row["role"], row["action_type"], row["status"]) for row in rows] == expected
    assert {row["step"] for row in rows} == {"1", "2", "3"} and len(rows) >= 3 * len(aaos.spec(env_id).roles)


def test_an_inbox_label_set_without_opening_the_email_is_pointed_out() -> None:
    """The inbox accepts labelling an email nobody opened (a guess from its preview, graded when it closes): the
    card marks the label as set unread and what needs attention says to open it, until it is opened."""
    meta = default_meta("inbox")
    session = play_tab.reset(None, None, "inbox", meta.task, meta.scenario, 0, "triage_agent", False)["session"]
    email = session.observation["agent_observations"]["triage_agent"]["inbox"][0]["id"]
    row = re.compile(rf'data-email="{email}">.*?</div>', re.S)
    assert "labelled unread" not in row.search(session_cards(session))[0]
    queue_raw(session, "triage_agent", json.dumps({"action_type": "classify_email",
                                                   "payload": {"email_id": email, "category": "billing"}}))
    out = step(session, role="triage_agent")
    assert "category set to billing" in out["cards"]  # the last action, accepted
    assert "labelled unread" in row.search(out["cards"])[0]
    assert re.search(rf"{email}</code>[^<]*labelled without being opened", out["attention"])
    queue_raw(session, "triage_agent", json.dumps({"action_type": "open_email", "payload": {"email_id": email}}))
    out = step(session, role="triage_agent")
    assert "labelled unread" not in row.search(out["cards"])[0] and "labelled without" not in out["attention"]


def session_cards(session: Session) -> str:
    return aaos.kit_of("inbox").rendering.role_card(
        "triage_agent", session.observation["agent_observations"]["triage_agent"], None)


def test_two_sessions_keep_separate_simulations() -> None:
    first, second = reset()["session"], reset()["session"]
    queue_raw(first, "engineer", QUERY)
    step(first)
    step(first)
    assert first.step_count == 2 and second.step_count == 0 and second.queue == {}
    assert first.env is not second.env


def test_closing_the_tab_frees_the_simulation() -> None:
    request = SimpleNamespace(session_hash="tab-1")
    session = play_tab.reset(request, None, "org", "full_episode", "product_launch_failure", 0, "engineer",
                         False)["session"]
    wiring.unload(request)
    assert session.closed and "tab-1" not in wiring._OPEN
    with pytest.raises(SessionClosed):
        _ = session.env
    out = step(session)
    assert out["session"] is not session and out["session"].step_count == 1


def test_expiry_callback_frees_the_simulation() -> None:
    session = reset()["session"]
    step(session)
    trajectory, _ = session.export()
    wiring.close_session(session)
    assert session.closed and not trajectory.exists()
    wiring.close_session(None)


def test_a_session_dropped_without_closing_leaves_no_files_behind() -> None:
    session = reset()["session"]
    step(session)
    trajectory, actions = session.export()
    del session
    gc.collect()
    assert not trajectory.exists() and not actions.exists() and not trajectory.parent.exists()
    code = ("from aaos.ui.session import Session, default_meta; s = Session(default_meta('org')); "
            "print(s.workdir())")  # the process ends with the session still open
    folder = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                            cwd=ROOT).stdout.strip()
    assert folder and not Path(folder).exists()


def test_events_of_one_session_never_interleave() -> None:
    session = reset()["session"]
    threads = [threading.Thread(target=step, args=(session,)) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [r["step"] for r in session.records] == list(range(1, 9))
    assert session.observation["step_count"] == 8


def test_role_and_action_choices_follow_the_world() -> None:
    session = reset()["session"]
    out = play_tab.choose_action(None, session, "operations", "approve_resource", False)
    legal = session.env.legal_actions("operations")
    assert "approve_resource" not in legal  # nothing is pending yet
    assert out["action_type"]["value"] == next(a for a in legal if a != "no_op")
    out = play_tab.choose_action(None, session, "product_manager", "delegate_task", False)
    assert out["action_type"]["value"] == "delegate_task"
    assert out["choice_0"]["visible"] and out["choice_0"]["label"] == "Task id"
    assert [value for _, value in out["choice_0"]["choices"]] == legal_ids(session, "product_manager")
    assert out["choice_1"]["choices"] == [(r, r) for r in aaos.spec("org").roles]
    assert not out["text_0"]["visible"] and not out["raw_json"]["visible"]
    out = play_tab.choose_action(None, session, "engineer", "report_anomaly", False)
    shown = {name: out[name]["label"] for name in (*play_tab.CHOICE_SLOTS, *play_tab.TEXT_SLOTS)
             if out[name]["visible"]}
    assert shown == {"text_0": "Description", "choice_1": "Severity"}


def legal_ids(session: Any, role: str) -> list[str]:
    return session.env.legal_actions(role)["delegate_task"]["task_id"]


def test_raw_toggle_carries_the_form_values_into_the_json() -> None:
    session = reset()["session"]
    slots = ["task_launch_plan", "product_manager", "", ""]
    out = play_tab.toggle_raw(session, "product_manager", "delegate_task", True, *slots)
    assert out["raw_json"]["visible"] and json.loads(out["raw_json"]["value"]) == {
        "action_type": "delegate_task", "payload": {"task_id": "task_launch_plan", "to": "product_manager"}}
    assert not any(update["visible"] for name, update in out.items() if name not in ("raw_json", "action_help"))
    out = play_tab.toggle_raw(session, "product_manager", "delegate_task", False, *slots)
    assert not out["raw_json"]["visible"] and out["choice_0"]["visible"] and out["choice_1"]["visible"]


def test_nothing_renders_as_a_python_repr_over_a_random_episode() -> None:
    session = reset(scenario="policy_change_shock", seed=7)["session"]
    for outputs in play_tab.run_agent(None, session, "random", 0):
        assert_no_reprs(outputs)
    assert session.done


def test_the_environment_choice_lists_tasks_and_scenarios_of_both_splits() -> None:
    out = play_tab.choose_env(None, None, "org", False)
    tasks, scenarios = out["task"], out["scenario"]
    bench = benchmark_tab.choose_env("org")
    bench_tasks, bench_scenarios = bench["bench_tasks"], bench["bench_scenarios"]
    assert [value for _, value in tasks["choices"]] == [t["id"] for t in aaos.list_tasks()]
    for choices in (scenarios, bench_scenarios):
        labels = dict((value, label) for label, value in choices["choices"])
        assert labels["vendor_outage_cascade"].endswith("(holdout)")
        assert labels["product_launch_failure"].endswith("(train)")
    assert bench_tasks["choices"] == tasks["choices"] and bench_tasks["value"] == ["org_simulation"]
    assert bench_scenarios["value"] == [s["id"] for s in aaos.list_scenarios()]


def test_text_formatting_never_shows_python_values() -> None:
    assert html.text(None) == "—"
    assert html.text(True) == "yes"
    assert html.text({"compute": 20, "budget": 5}) == "compute 20, budget 5"
    assert html.text([1, "a"]) == "1, a"
    assert html.text(0.125) == "0.125"
    assert metric_text("latency", 212.0) == "212 ms"
    assert metric_text("error_rate", 0.021) == "2.1 %"
    assert html.payload_text({"task_id": "t", "to": "engineer"}) == "task_id: t · to: engineer"
    assert "&lt;script&gt;" in formatting.message("<script>")


def test_the_timeline_shows_the_scenarios_events_and_violations_newest_first_not_the_actions() -> None:
    """The World tab's timeline is what happened to the organisation (the scenario's events and the oversight
    violations); the actions are the Logs tab's, not repeated there."""
    session = reset()["session"]
    for _ in play_tab.run_agent(None, session, "random", 0):
        pass
    timeline = formatting.timeline(session.observation, session.records)
    steps = [int(s) for s in re.findall(r'class="aaos-tl-step">step (\d+)<', timeline)]
    events = session.observation["scenario_events"]
    violations = [v for record in session.records for v in record["oversight_events"]]
    assert events and violations and len(steps) == min(len(events) + len(violations), formatting.TIMELINE_LIMIT)
    assert steps == sorted(steps, reverse=True) and all(html.esc(e["title"]) in timeline for e in events)
    assert "aaos-tl-applied" not in timeline and "aaos-tl-rejected" not in timeline
    assert not any(f"<code>{a.name}" in timeline for a in session.env.spec.actions)
    assert "No scenario event" in formatting.timeline({}, [])


def test_the_layout_keeps_every_tab_state_per_browser_tab_expiring_and_no_public_api() -> None:
    """Whatever tabs keep per-session state (the episode, a replay, an arena round), each keeps it in a gr.State
    that starts empty (a handler builds it for its browser tab, so no two tabs share an object) and expires; the
    episode's simulation is closed when its state goes. No other component holds a simulation."""
    blocks = build_blocks()
    states = [b for b in blocks.blocks.values() if isinstance(b, gr.State)]
    assert states and all(s.value is None and s.time_to_live == wiring.SESSION_TTL_S for s in states)
    assert sum(s.delete_callback is wiring.close_session for s in states) == 1
    assert not any(isinstance(getattr(b, "value", None), Session) for b in blocks.blocks.values())
    fns = list(blocks.fns.values())
    assert any(fn.fn is wiring.unload for fn in fns)
    assert all(fn.api_visibility == "private" for fn in fns if fn.fn is not wiring.unload)
    ids = {b.elem_id for b in blocks.blocks.values() if getattr(b, "elem_id", None)}
    assert {"aaos-step", "aaos-run", "aaos-stop", "aaos-reset", "aaos-queue-button", "aaos-reward-plot"} <= ids


@pytest.fixture
def toy() -> Iterator[str]:
    """The toy environment registered for one test (the registry is left as it was)."""
    with registered(toy="toy_env:KIT"):
        yield "toy"


def test_choosing_another_environment_starts_its_episode_drawn_by_its_kit(toy: str) -> None:
    session = reset()["session"]
    out = play_tab.choose_env(None, session, toy, False)
    assert out["session"] is session and session.meta.env == toy and session.step_count == 0
    assert out["cards"].count('class="aaos-card"') == 2 and "Dock" in out["cards"]
    assert 'data-role="inspector"' in out["cards"] and "Inspector" in out["cards"]
    assert out["role"]["choices"] == [("Inspector", "inspector"), ("Packer", "packer")]
    assert out["role"]["value"] == "inspector" and out["action_type"]["value"] == "inspect"
    assert (out["task"]["value"], out["scenario"]["value"], out["seed"]) == ("ship_all", "standard", 0)
    assert "Scores" in out["world"] and out["attention"] == "" and not out["report"]["visible"]
    assert "Parcels (toy)" in layout.header(toy) and "0 / 12" in out["status"]
    assert_no_reprs(out)

    parcel = session.env.legal_actions("inspector")["inspect"]["parcel_id"][0]
    queued = play_tab.queue_action(None, session, "inspector", "inspect", False, "", parcel, None, "", "")
    assert "Queued for Inspector: inspect" in queued["message"] and "Queued:" in queued["cards"]
    out = list(play_tab.step(None, session, "agent", "inspector", None, False))[-1]
    assert "1 / 12" in out["status"] and parcel in out["cards"]
    for out in play_tab.run_agent(None, session, "heuristic", 0):
        assert_no_reprs(out)
    report = out["report"]["value"]  # the toy's kit has no report: only the verdict
    assert session.done and 'id="aaos-verdict"' in report and 'id="aaos-report"' not in report
    assert "Level with the champion" in report  # the champion played it


def test_the_end_of_episode_report_shows_once_the_episode_is_over() -> None:
    session = reset(task="org_simulation")["session"]
    assert not step(session)["report"]["visible"]
    outputs = list(play_tab.run_agent(None, session, "heuristic", 0))
    assert not outputs[-2]["report"]["visible"]
    report = outputs[-1]["report"]
    assert report["visible"] and "Episode report: score" in report["value"] and "Tasks delivered" in report["value"]
    assert not reset(session)["report"]["visible"]


def test_a_holdout_only_scenario_is_labelled_a_holdout_variant_whatever_the_seed() -> None:
    out = reset(task="org_simulation", scenario="vendor_outage_cascade", seed=0)
    assert "seed 0 (holdout variant)" in out["status"]
    assert "seed 3 (train variant)" in reset(out["session"], task="org_simulation", seed=3)["status"]


def test_the_sidebar_describes_the_scenario_and_the_status_bar_names_it_whole() -> None:
    out = reset(scenario="silent_data_drift")
    info = next(s for s in aaos.spec("org").scenarios if s.id == "silent_data_drift")
    assert info.description and formatting.esc(info.description) in out["scenario_help"]
    assert formatting.esc(info.title) in out["status"]
    assert info.title in message_of(out) and "Full episode on" in message_of(out)  # names as the sidebar does


def test_the_reward_tab_explains_every_component_from_the_spec() -> None:
    out = reset()
    table = html_table(out["reward_help"])
    spec = aaos.spec("org")
    assert [row["Component"] for row in table] == [html.humanize(c.name) for c in spec.reward_components]
    assert [row["What it measures"] for row in table] == [c.description for c in spec.reward_components]
    assert [row["Weight"] for row in table] == [f"{100 * c.weight:.0f} %" for c in spec.reward_components]


@pytest.mark.parametrize(("policy", "verdict"), [("heuristic", "Level with the champion"),
                                                 ("random", "more. To watch how it plays this episode, press Run "
                                                             "with Champion (heuristic) as the agent.")])
def test_the_report_judges_the_score_against_the_champion_on_the_same_seed(policy: str, verdict: str) -> None:
    session = reset(task="org_simulation", seed=4)["session"]
    outputs = list(play_tab.run_agent(None, session, policy, 0))
    report = outputs[-1]["report"]["value"]
    assert verdict in report and f"scores {champion_score(session.meta):.3f}" in report
    violations = [v["rule"] for record in session.records for v in record["oversight_events"]]
    for rule in set(violations):
        assert f"<code>{rule}</code>" in report
    assert ("No oversight violations" in report) == (not violations)
    # the penalties listed add up to the penalty the score is divided by (audited ones count half)
    listed = sum(map(float, re.findall(r"= <b>([\d.]+)</b></li>", report)))
    applied = session.env.state()["penalty"]
    assert listed == pytest.approx(applied, abs=1e-3)
    assert (f"Penalty: the sum, <b>{applied:.4f}</b>" in report) == bool(violations)
    assert f"penalty = <b>{applied:.4f}</b>" in report
    assert "Left needing attention" not in report and outputs[-1]["attention"] == ""  # the report says what was missed


def chip(report: str, name: str) -> str:
    found = re.search(rf'<span class="aaos-chip"><b>{name}</b> ([^<]*)</span>', report)
    assert found, f"no {name!r} chip in the report"
    return found.group(1)


@pytest.mark.parametrize(("policy", "task", "scenario", "seed"), [
    ("noop", "full_episode", "product_launch_failure", 0), ("heuristic", "full_episode", "product_launch_failure", 0),
    ("heuristic", "crisis_management", "policy_change_shock", 12_345),  # risks escalate, then are mitigated
])
def test_the_org_report_names_what_the_organisation_missed_and_counts_agree(policy: str, task: str, scenario: str,
                                                                             seed: int) -> None:
    session = reset(task=task, scenario=scenario, seed=seed)["session"]
    report = list(play_tab.run_agent(None, session, policy, 0))[-1]["report"]["value"]
    state = session.env.state()
    arrived = [w for w in state["work"] if w["risk_id"] is None and w["arrives"] <= state["step"]]
    undelivered = [w["id"] for w in arrived if w["status"] != "completed"]
    late = [w["id"] for w in arrived if w["status"] == "completed" and w["completed_step"] > w["deadline"]]
    open_incidents = [i["id"] for i in state["incidents"] if i["resolved_step"] is None]
    noticeable = [r for r in state["risks"] if r["definition"]["noticeable_from"] <= state["step"]]
    unmitigated = [r["id"] for r in noticeable if r["status"] != "mitigated"]
    escalated = [r["id"] for r in state["risks"] if r["escalated_step"] is not None]
    missed = undelivered + late + open_incidents + unmitigated + escalated
    assert "What the organisation missed" in report
    for item in missed:
        assert f"<code>{item}</code>" in report
    assert ("Nothing: every task that arrived delivered on time" in report) == (not missed)
    assert chip(report, "Tasks delivered") == f"{len(arrived) - len(undelivered)} of {len(arrived)}"
    assert chip(report, "Risks mitigated") == f"{len(noticeable) - len(unmitigated)} of {len(noticeable)}"
    escalations = sum(v["rule"] == "risk_escalated" for v in state["violations"])
    assert chip(report, "Risks escalated") == str(escalations)
    if policy == "noop":
        assert undelivered and open_incidents and unmitigated  # doing nothing misses something of every kind
    if scenario == "policy_change_shock":
        assert escalations and not unmitigated  # every escalated risk was mitigated in the end


def test_step_numbers_agree_between_status_message_logs_and_timeline() -> None:
    session = reset()["session"]
    step(session, "agent")
    out = step(session, "agent")
    assert "2 / 50" in out["status"] and "Step 2:" in message_of(out)
    assert set(out["actions"]["Step"]) == {1, 2} and out["actions"]["Step"].iloc[0] == 2  # newest first
    steps = {int(s) for s in re.findall(r'class="aaos-tl-step">step (\d+)<', out["timeline"])}
    assert steps <= {0, 1, 2}  # 0: scenario events known at the start


def test_a_step_reports_actions_that_applied_but_did_nothing() -> None:
    session = reset()["session"]
    plan = {"addresses": "none", "plan": "ship the backend first"}
    queue_form(session, "product_manager", "propose_plan", **plan)
    assert "aaos-message-ok" in message_of(step(session))
    queue_form(session, "product_manager", "propose_plan", **plan)
    out = step(session)
    assert session.records[-1]["action_results"]["product_manager"]["status"] == "no_effect"
    assert "aaos-message-warn" in message_of(out)
    assert "Did nothing: Product manager: your plan plan_" in message_of(out) and "is still open" in message_of(out)


@pytest.mark.parametrize(("seed", "expected"), [(-3, "(got -3)"), (2.5, "(got 2.5)"), (None, "(got nothing)")])
def test_a_seed_being_typed_is_checked_with_the_spaces_message(seed: float | None, expected: str) -> None:
    session = reset()["session"]
    before = fingerprint(session)
    out = play_tab.choose_seed(session, seed)
    assert "aaos-message-error" in message_of(out) and expected in message_of(out)
    assert fingerprint(session) == before and session.meta.seed == 0


def test_a_new_seed_says_it_is_not_the_episode_shown_until_it_starts() -> None:
    session = reset()["session"]
    out = play_tab.choose_seed(session, 7)
    assert "aaos-message-warn" in message_of(out)
    assert "Seed 7 is selected but the episode shown has seed 0" in message_of(out)
    assert "Seed 0 is the episode shown" in message_of(play_tab.choose_seed(session, 0))
    assert session.meta.seed == 0


def test_raw_json_lists_each_fields_valid_values_in_the_help() -> None:
    session = reset()["session"]
    form = play_tab.choose_action(None, session, "product_manager", "delegate_task", True)
    help_html = form["action_help"]
    tasks = session.env.legal_actions("product_manager")["delegate_task"]["task_id"]
    assert "<code>task_id</code>: one of " + ", ".join(tasks[:formatting.CHOICES_SHOWN]) in help_html
    assert "<code>to</code>: one of " in help_html
    plain = play_tab.choose_action(None, session, "product_manager", "delegate_task", False)["action_help"]
    assert "<code>" not in plain
    slots = [None] * play_tab.SLOTS + [""] * play_tab.SLOTS
    toggled = play_tab.toggle_raw(session, "product_manager", "delegate_task", True, *slots)
    assert toggled["action_help"] == help_html
