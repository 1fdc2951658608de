"""The episode: the sidebar (environment, task, scenario, seed, the agent run, model settings, downloads), what
shows above the tabs (the status bar, a model run's usage, the main message and Step), and the Play tab (the action
form, the queue, what needs attention, every role's card and the end-of-episode report), with their events and
handlers. A new task or scenario, or an entered seed, starts its episode at once.

Each handler takes the tab's Session and the event's inputs and returns its outputs by name (wiring.Outputs).
User mistakes (a bad payload, invalid JSON, a seed out of range, stepping a finished episode, incomplete model
settings) come back as a readable message and change nothing; they never raise.

A model's API token arrives as an input of the events that use it (Run here, Run benchmark in benchmark_tab) and
lives only in the LLMConfig of that tab's run; no handler returns, logs or writes it.
"""

from __future__ import annotations

import functools
import math
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, wait
from typing import Any, TypeVar

import gradio as gr

import aaos
from aaos.agents.llm import LLMConfig
from aaos.core.html import action_text, humanize
from aaos.core.policy import Policy
from aaos.core.trajectory import EpisodeMeta
from aaos.ui import agents, dashboard, formatting, forms, prose
from aaos.ui.session import Others, Session, champion_score, default_meta
from aaos.ui.wiring import Outputs, Ui, current, live, open_session

SLOTS = forms.slot_count([aaos.spec(env_id) for env_id in aaos.env_ids()])
"""Payload field slots in the action form: each slot has a dropdown (choices) and a textbox (free text)."""
CHOICE_SLOTS: tuple[str, ...] = tuple(f"choice_{i}" for i in range(SLOTS))
TEXT_SLOTS: tuple[str, ...] = tuple(f"text_{i}" for i in range(SLOTS))
EPISODE: tuple[str, ...] = ("status", "scenario_help", "model_usage", "attention", "cards", "report", "queue",
                            "message", *dashboard.OUTPUTS)
"""What every step re-renders."""
COMPOSER: tuple[str, ...] = ("role", "action_type", "action_help", *CHOICE_SLOTS, *TEXT_SLOTS, "raw_json")
"""The action form."""
FULL: tuple[str, ...] = ("session", *EPISODE, *COMPOSER)
"""The outputs of reset, step and a run."""
QUEUED: tuple[str, ...] = ("session", "queue", "cards", "message")
"""The outputs of queueing and clearing."""
OTHERS: tuple[tuple[str, str], ...] = (("Do nothing (no_op)", "no_op"), ("Follow the champion", "champion"))
MIN_DELAY_S = 0.1
"""The fastest an agent run streams: quicker updates flood the browser, which then reacts late to Stop."""
DEFAULT_AGENT = agents.AGENTS[0][1]
POLL_S = 0.2
"""How often a run waiting on a model (or on the local model's start) looks for Stop, a Reset and the time."""
WAIT_NOTE_S = 1.0
"""A wait longer than this shows a note saying what the run waits for, updated every second."""


# Layout ------------------------------------------------------------------------------------------------

def _title(text: str) -> None:
    gr.Markdown(f"### {text}", elem_classes=["aaos-panel-title"])


def build_sidebar(ui: Ui, meta: EpisodeMeta) -> None:
    """Episode controls, the agent run, the model settings and the downloads."""
    tasks, scenarios = episode_choices(meta.env)
    _title("Episode")
    ui["env"] = gr.Dropdown([(aaos.spec(e).title, e) for e in aaos.env_ids()], value=meta.env,
                            label="Environment", elem_id="aaos-env")
    ui["task"] = gr.Dropdown(tasks, value=meta.task, label="Task", elem_id="aaos-task")
    ui["scenario"] = gr.Dropdown(scenarios, value=meta.scenario, label="Scenario", elem_id="aaos-scenario")
    ui["scenario_help"] = gr.HTML(elem_id="aaos-scenario-help")
    # No minimum and no rounding here: the seed handlers refuse a bad seed with the Space's own message.
    ui["seed"] = gr.Number(meta.seed, label="Seed", info=prose.SEED_INFO, elem_id="aaos-seed")
    ui["reset"] = gr.Button("Reset", variant="primary", elem_id="aaos-reset")
    _title("Agent run")
    ui["policy"] = gr.Dropdown(list(agents.AGENTS), value=DEFAULT_AGENT, label="Agent", elem_id="aaos-policy")
    ui["agent_help"] = gr.HTML(formatting.note(*agents.describe(DEFAULT_AGENT)), elem_id="aaos-agent-help")
    with gr.Accordion("Model settings", open=False, elem_id="aaos-model-settings") as box:
        ui["model_box"] = box
        ui["mode"] = gr.Radio(list(agents.MODES), value=agents.MODES[0][1], label="Mode", info=prose.MODE_INFO,
                              elem_id="aaos-mode")
        ui["model_name"] = gr.Textbox(label="Model name", placeholder=agents.MODEL_EXAMPLE, max_length=200,
                                      elem_id="aaos-model-name")
        ui["base_url"] = gr.Textbox(agents.DEFAULT_BASE_URL, label="Base URL", max_length=500, elem_id="aaos-base-url")
        ui["token"] = gr.Textbox(type="password", label="API token", placeholder=prose.TOKEN_PLACEHOLDER,
                                 max_length=500, elem_id="aaos-token")
    with gr.Row():
        ui["run"] = gr.Button("Run", variant="primary", elem_id="aaos-run", min_width=80)
        ui["stop"] = gr.Button("Stop", variant="stop", elem_id="aaos-stop", min_width=80)
    ui["delay"] = gr.Slider(MIN_DELAY_S, 1, value=0.3, step=0.05, label="Seconds between steps", elem_id="aaos-delay")
    _title("Downloads")
    ui["export"] = gr.Button("Export trajectory and action log", elem_id="aaos-export")
    ui["files"] = gr.File(label="Episode files", file_count="multiple", interactive=False, visible=False,
                          elem_id="aaos-files")


def build_status(ui: Ui) -> None:
    """Above the tabs, so that they show from any tab: the status bar, a model run's usage, the main message and
    Step with what roles without a queued action do."""
    ui["status"] = gr.HTML(elem_id="aaos-status-box")
    ui["model_usage"] = gr.HTML(visible=False, elem_id="aaos-usage-box")
    with gr.Row(equal_height=False, elem_id="aaos-stepbar"):
        ui["message"] = gr.HTML(elem_id="aaos-message", scale=5, min_width=280)
        ui["others"] = gr.Radio(list(OTHERS), value=OTHERS[0][1], label=prose.OTHERS_LABEL, elem_id="aaos-others",
                                scale=2, min_width=220)
        ui["step"] = gr.Button("Step", variant="primary", elem_id="aaos-step", scale=0, min_width=96)


def build_tab(ui: Ui, roles: Sequence[str]) -> None:
    """The Play tab: the action form, the queue, and every role's view as a card."""
    with gr.Tab("Play", id="play", elem_id="aaos-tab-play"):
        with gr.Row(equal_height=False):
            with gr.Column(scale=3, min_width=300, elem_id="aaos-composer"):
                with gr.Row():
                    ui["role"] = gr.Dropdown([(humanize(r), r) for r in roles], value=roles[0], label="Role",
                                             elem_id="aaos-role")
                    ui["action_type"] = gr.Dropdown(label="Action", elem_id="aaos-action")
                ui["action_help"] = gr.HTML(elem_id="aaos-action-help")
                with gr.Row():
                    for i, name in enumerate(CHOICE_SLOTS):
                        ui[name] = gr.Dropdown(label="", visible=False, elem_id=f"aaos-choice-{i}")
                    for i, name in enumerate(TEXT_SLOTS):
                        ui[name] = gr.Textbox(label="", visible=False, max_length=500, elem_id=f"aaos-text-{i}")
                ui["raw_json"] = gr.Code(language="json", label="Action as raw JSON", lines=5, interactive=True,
                                         visible=False, elem_id="aaos-raw")
                with gr.Row():
                    ui["raw"] = gr.Checkbox(False, label="Edit as raw JSON", elem_id="aaos-raw-toggle")
                    ui["queue_action"] = gr.Button("Queue action", elem_id="aaos-queue-button")
            with gr.Column(scale=2, min_width=260, elem_id="aaos-queue-panel"):
                ui["queue"] = gr.Dataframe(headers=list(formatting.QUEUE_COLUMNS), label="Queued actions",
                                           interactive=False, wrap=True, max_height=170, elem_id="aaos-queue")
                ui["clear"] = gr.Button("Clear queue", elem_id="aaos-clear")
        ui["report"] = gr.HTML(visible=False, elem_id="aaos-report-box")
        ui["attention"] = gr.HTML(elem_id="aaos-hints")
        ui["cards"] = gr.HTML(elem_id="aaos-cards")


def wire(blocks: gr.Blocks, ui: Ui) -> None:
    """Connect the episode's events to their handlers."""
    form = ("session", "role", "action_type", "raw")
    episode = ("session", "env", "task", "scenario", "seed", "role", "raw")
    model = ("mode", "model_name", "base_url", "token")
    slots = (*CHOICE_SLOTS, *TEXT_SLOTS)
    ui.event(blocks.load, reset, episode, FULL)
    ui.event(ui["env"].input, choose_env, ("session", "env", "raw"), (*FULL, "task", "scenario", "seed"))
    ui.event(ui["reset"].click, reset, episode, FULL)
    # A new task, scenario or (entered) seed starts its episode at once: what the sidebar shows is what is played.
    ui.event(ui["task"].input, reset, episode, FULL)
    ui.event(ui["scenario"].input, reset, episode, FULL)
    ui.event(ui["seed"].submit, reset, episode, FULL)
    ui.event(ui["seed"].input, choose_seed, ("session", "seed"), ("message",))
    ui.event(ui["role"].input, choose_action, form, ("session", *COMPOSER))
    ui.event(ui["action_type"].input, choose_action, form, ("session", *COMPOSER))
    ui.event(ui["raw"].input, toggle_raw, (*form, *slots), ("raw_json", "action_help", *slots))
    ui.event(ui["queue_action"].click, queue_action, (*form, "raw_json", *slots), QUEUED)
    ui.event(ui["clear"].click, clear_queue, ("session",), QUEUED)
    ui.event(ui["step"].click, step, ("session", "others", "role", "action_type", "raw"), FULL)
    ui.event(ui["policy"].input, choose_agent, ("policy",), ("agent_help", "model_box"))
    ui.event(ui["run"].click, run_agent, ("session", "policy", "delay", "role", "action_type", "raw", *model), FULL)
    ui.event(ui["stop"].click, stop_agent, ("session",), ("message",))
    ui.event(ui["export"].click, export, ("session",), ("session", "files", "message"), show_progress="full")


# Rendering ---------------------------------------------------------------------------------------------

def render(session: Session, note: str, kind: str = "info") -> Outputs:
    """Everything a step changes (EPISODE); the cards, what needs attention and the end-of-episode report are the
    environment kit's. Once the episode is over the report shows, with the verdict against the champion and what
    was left needing attention."""
    observation = session.observation
    rendering = aaos.kit_of(session.meta.env).rendering
    records = session.records
    report, attention = "", rendering.attention(observation)
    if session.done and session.score is not None:  # what still needed attention goes into the report
        report = (rendering.report(session.env.state())
                  + formatting.verdict(session.score, champion_score(session.meta), records, attention))
        attention = ""
    spec = session.env.spec
    return {
        "status": formatting.status_bar(spec, session.meta, observation, session.score,
                                        records[-1] if records else None),
        "scenario_help": formatting.scenario_help(spec, session.meta.scenario),
        "model_usage": gr.update(value=formatting.model_usage(session.model_usage),
                                 visible=session.model_usage is not None),
        "attention": attention,
        "cards": role_cards(session),
        "report": gr.update(value=report, visible=bool(report)),
        "queue": formatting.queue_frame(session.queue),
        "message": formatting.message(note, kind),
        **dashboard.render(session),
    }


def role_cards(session: Session) -> str:
    """Every role's view as the environment kit draws it, side by side."""
    card = aaos.kit_of(session.meta.env).rendering.role_card
    cards = "".join(card(role, view, session.queue.get(role))
                    for role, view in session.observation["agent_observations"].items())
    return f'<div class="aaos-cards" id="aaos-role-cards">{cards}</div>'


def _default_action(legal: Sequence[str]) -> str:
    """The action a fresh form shows: the first one that does something."""
    return next((name for name in legal if name != "no_op"), legal[0] if legal else "no_op")


def _role(session: Session, role: str | None) -> str:
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
    editor."""
    role = _role(session, role)
    legal = list(session.env.legal_actions(role))
    name, fields = form_fields(session, role, action_type)
    spec = session.env.spec.action(name)
    outputs: Outputs = {
        "role": gr.update(choices=[(humanize(r), r) for r in session.env.spec.roles], value=role),
        "action_type": gr.update(choices=[(a, a) for a in legal], value=name),
        "action_help": formatting.action_help(role, name, spec.description if spec else "", fields if raw else ()),
        "raw_json": gr.update(visible=raw, value=forms.to_json(name, forms.default_payload(fields))),
    }
    for i in range(SLOTS):
        field = fields[i] if i < len(fields) else None
        is_choice = field is not None and field.choices is not None
        is_text = field is not None and field.choices is None
        outputs[CHOICE_SLOTS[i]] = gr.update(
            visible=is_choice and not raw,
            choices=[(forms.choice_label(c), forms.choice_label(c)) for c in field.choices] if is_choice else [],
            value=forms.choice_label(field.choices[0]) if is_choice and field.choices else None,
            label=field.label if is_choice else "", info=field.description if is_choice else None)
        outputs[TEXT_SLOTS[i]] = gr.update(visible=is_text and not raw, value="", label=field.label if is_text else "",
                                           info=field.description if is_text else None)
    return outputs


Form = tuple[str | None, str | None, bool]
"""The action form's role, action type and raw-JSON switch, which every full update re-renders."""


def _full(session: Session, note: str, kind: str, form: Form) -> Outputs:
    return {"session": session, **render(session, note, kind), **composer(session, *form)}


# Episode events ----------------------------------------------------------------------------------------

def episode_choices(env_id: str) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """The (label, id) choices of an environment's tasks and scenarios (train and holdout)."""
    spec = aaos.spec(env_id)
    tasks = [(f"{t.title} ({t.difficulty}, {t.max_steps} steps)", t.id) for t in spec.tasks]
    scenarios = [(f"{s.title} ({s.split})", s.id) for s in spec.scenarios]
    return tasks, scenarios


def _seed_problem(seed: float | None) -> str | None:
    if seed is None or not math.isfinite(seed) or seed != int(seed) or seed < 0:
        return prose.BAD_SEED.format(seed="nothing" if seed is None else f"{seed:g}")
    return None


def choose_seed(session: Session | None, seed: float | None) -> Outputs:
    """A seed is being typed: say whether it is valid, and that Enter (or Reset) starts its episode; the episode
    shown does not change until then. Outputs: message."""
    session = live(session)
    problem = _seed_problem(seed)
    if problem is not None:
        return _note(problem, "error")
    if session is None:
        return {}
    if session.meta.seed == int(seed or 0):
        return _note(prose.SEED_SHOWN.format(seed=session.meta.seed), "info")
    return _note(prose.SEED_PENDING.format(seed=int(seed or 0), shown=session.meta.seed), "warn")


def reset(request: gr.Request, session: Session | None, env_id: str, task: str, scenario: str,
          seed: float | None, role: str, raw: bool) -> Outputs:
    """Start a new episode (also the page load); a bad choice keeps the current episode. Outputs: FULL."""
    session = live(session)
    note, kind = _seed_problem(seed) or "", "error"
    if not note:
        meta = EpisodeMeta(env_id, task, scenario, int(seed or 0))
        try:
            if session is None:
                session = open_session(meta, request)
            else:
                with session.lock:
                    session.reset(meta)
            note = prose.NEW_EPISODE.format(env=aaos.spec(env_id).title, episode=formatting.episode_name(
                env_id, task, scenario), seed=meta.seed)
            kind = "ok"
        except ValueError as error:
            note = f"Could not start that episode: {error}"
    session = current(session, request)
    with session.lock:
        return _full(session, note, kind, (role, None, raw))


def choose_env(request: gr.Request, session: Session | None, env_id: str, raw: bool) -> Outputs:
    """An environment was picked: a new episode of it with its default task and scenario, seed 0, its first role
    in the form, and its tasks and scenarios to choose from. Outputs: FULL, task, scenario, seed. (The role is no
    input: the browser may still hold the previous environment's, which Gradio would refuse.)"""
    tasks, scenarios = episode_choices(env_id)
    meta = default_meta(env_id)
    outputs = reset(request, session, env_id, meta.task, meta.scenario, meta.seed, aaos.spec(env_id).roles[0], raw)
    return {**outputs, "task": gr.update(choices=tasks, value=meta.task),
            "scenario": gr.update(choices=scenarios, value=meta.scenario), "seed": meta.seed}


def choose_action(request: gr.Request, session: Session | None, role: str, action_type: str | None,
                  raw: bool) -> Outputs:
    """A role or action type was picked. Outputs: session, COMPOSER."""
    session = current(session, request)
    with session.lock:
        return {"session": session, **composer(session, role, action_type, raw)}


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
        role = _role(session, role)
        name, fields = form_fields(session, role, action_type)
        spec = session.env.spec.action(name)
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
    return {"session": session, "queue": formatting.queue_frame(session.queue), "cards": role_cards(session),
            "message": formatting.message(note, kind)}


def queue_action(request: gr.Request, session: Session | None, role: str, action_type: str | None, raw: bool,
                 raw_text: str, *slots: Any) -> Outputs:
    """Queue the form's (or the raw JSON's) action for `role`. Outputs: QUEUED."""
    session = current(session, request)
    with session.lock:
        if raw:
            action = forms.parse_raw(raw_text)
        elif not action_type:
            action = "Choose an action type first."
        else:
            _, fields = form_fields(session, _role(session, role), action_type)
            action = {"action_type": action_type, "payload": forms.read_form(fields, _slot_values(fields, slots))}
        problem = action if isinstance(action, str) else session.queue_action(role, action)
        if problem is None:
            note = f"Queued for {humanize(role)}: {action_text(session.queue[role])}. Queue more roles or press Step."
            return _queued(session, note, "ok")
        return _queued(session, f"Not queued: {problem}", "error")


def clear_queue(request: gr.Request, session: Session | None) -> Outputs:
    """Empty the queue. Outputs: QUEUED."""
    session = current(session, request)
    with session.lock:
        session.queue.clear()
        return _queued(session, prose.QUEUE_CLEARED, "info")


def _step_note(session: Session, prefix: str) -> tuple[str, str]:
    """The message after a step: its number (the status bar's, the logs' and the timeline's), reward and score,
    the actions that were rejected or applied without effect, and the end of the episode. Its kind is "error"
    if an action was rejected, "warn" if one did nothing, else "ok"."""
    last = session.records[-1]
    results = last["action_results"].values()
    note = f"{prefix}Step {last['step']}: reward {last['reward']:.3f}, score {last['score']:.3f}."
    kind = "ok"
    for status, title, flagged in (("no_effect", "Did nothing", "warn"), ("rejected", "Rejected", "error")):
        found = [f"{humanize(r['role'])}: {r['message']}" for r in results if r["status"] == status]
        if found:
            note += f" {title}: " + "; ".join(found) + "."
            kind = flagged
    if last["done"]:
        note += prose.EPISODE_DONE.format(score=last["score"])
    return note, kind


def step(request: gr.Request, session: Session | None, others: Others, role: str, action_type: str | None,
         raw: bool) -> Outputs:
    """Step with the queued actions; other roles do no_op or follow the champion. Outputs: FULL."""
    session = current(session, request)
    with session.lock:
        if session.done:
            note, kind = prose.EPISODE_OVER, "error"
        else:
            session.step(session.joint_action(others))
            note, kind = _step_note(session, "")
        return _full(session, note, kind, (role, action_type, raw))


def export(request: gr.Request, session: Session | None) -> Outputs:
    """Write the episode's trajectory (JSONL) and action log (CSV). Outputs: session, files, message."""
    session = current(session, request)
    with session.lock:
        if not session.records:
            return {"session": session, "files": None, "message": formatting.message(prose.NOTHING_TO_EXPORT, "error")}
        trajectory, actions = session.export()
        note = f"Exported {session.step_count} steps: the trajectory (JSONL) and the action log (CSV)."
        return {"session": session, "files": gr.update(value=[str(trajectory), str(actions)], visible=True),
                "message": formatting.message(note, "ok")}


# Agent runs --------------------------------------------------------------------------------------------

def choose_agent(name: str) -> Outputs:
    """An agent was picked: what it is (or why it cannot run here); Model settings open for a model.
    Outputs: agent_help, model_box."""
    body, kind = agents.describe(name)
    opened = {"model_box": gr.update(open=True)} if name in agents.MODEL_AGENTS else {}
    return {"agent_help": formatting.note(body, kind), **opened}


def _note(note: str, kind: str) -> Outputs:
    """A run's update that changes the message only."""
    return {"message": formatting.message(note, kind)}


def _superseded(session: Session, run: int) -> bool:
    """The run must give way: its tab closed, or a Reset or another Run came."""
    return session.closed or session.generation != run


T = TypeVar("T")


def _in_thread(work: Callable[[], T]) -> Future[T]:
    """Run slow work (a model's step, starting the local model) in a daemon thread, so that the run can show
    progress and notice Stop while it waits, and a stuck endpoint never holds up the server's exit."""
    future: Future[T] = Future()

    def target() -> None:
        future.set_running_or_notify_cancel()
        try:
            future.set_result(work())
        except BaseException as error:  # handed to the run through the future
            future.set_exception(error)

    threading.Thread(target=target, name="aaos-agent", daemon=True).start()
    return future


def _wait(session: Session, run: int, future: Future[Any], what: str) -> Iterator[Outputs]:
    """Wait for `future`; once it takes a while, say every second what the run waits for and whether Stop is
    pending. Returns early if the run is superseded."""
    started, shown = time.monotonic(), None
    while not wait((future,), timeout=POLL_S).done:
        if _superseded(session, run):
            return
        elapsed = time.monotonic() - started
        seen = (int(elapsed), session.stop_requested)
        if elapsed >= WAIT_NOTE_S and seen != shown:
            shown = seen
            then = "Stopping once it is done." if seen[1] else "Press Stop to end the run after it."
            yield _note(f"{what}… {seen[0]} s. {then}", "info")


def _model_config(name: str, mode: str, model: str | None, base_url: str | None,
                  token: str | None) -> LLMConfig | str | None:
    """The model an agent needs: the endpoint's config, None for a baseline (and for the local model, whose
    server gives it once started), or a message saying what is missing."""
    if name == "openai":
        return agents.endpoint(model, base_url, token, mode)
    return agents.local_problem() if name in agents.LOCAL_AGENTS else None


def run_agent(request: gr.Request, session: Session | None, name: str, delay: float, role: str,
              action_type: str | None, raw: bool, mode: str = "per_role", model: str | None = None,
              base_url: str | None = None, token: str | None = None) -> Iterator[Outputs]:
    """Let an agent play the rest of the episode (a new one if it is over), yielding after every step; a model
    step runs in a thread while the run shows how long it has been waiting. Ends with the episode or on Stop
    (checked between steps: a step in flight finishes), with a last update saying so; gives way silently to a
    Reset or another Run, and ends when the tab closes. The policy is closed when the run ends. mode, model,
    base_url and token are the Model settings (mode serves the local model too). Outputs: FULL."""
    session = current(session, request)
    config = _model_config(name, mode, model, base_url, token)
    if isinstance(config, str):
        yield _note(config, "error")
        return
    label = config.model if config is not None else agents.label(name)
    with session.lock:
        if session.done:
            session.reset(session.meta)
        run = session.start_agent()
        session.queue.clear()
        session.model_usage = None
        seed, env = session.meta.seed, session.meta.env
    try:
        if name in agents.LOCAL_AGENTS:
            chosen = "joint" if mode == "joint" else "per_role"
            starting = _in_thread(lambda: agents.start_local(name, env, chosen))
            yield from _wait(session, run, starting, f"Starting the {agents.LOCAL_LABEL} server (first use only)")
            if _superseded(session, run):
                return
            try:
                config = starting.result()
            except RuntimeError as error:
                yield _note(f"The local model could not start: {error}", "error")
                return
        policy = agents.build(name, seed, env, config)
        policy.reset(seed)
        yield from _play(session, run, policy, config, label, max(0.0, float(delay or 0)), (role, action_type, raw))
    finally:
        with session.lock:
            if session.agent == run:
                session.agent = None


def _play(session: Session, run: int, policy: Policy, config: LLMConfig | None, label: str, delay: float,
          form: Form) -> Iterator[Outputs]:
    """The steps of run_agent. The policy decides in a thread, outside the session's lock (so Stop and the other
    events answer at once), then the step is taken under the lock; the policy is closed when this ends, once
    any step in flight is done."""
    pending: Future[Any] | None = None
    try:
        while True:
            with session.lock:
                if _superseded(session, run) or session.done:  # superseded, or a manual step ended the episode
                    return
                stopping = session.stop_requested
                observation, asked = session.observation, session.step_count
                if stopping:
                    outputs = _full(session, f"Agent stopped at step {asked}. Step manually, Run again or Reset.",
                                    "info", form)
            if stopping:
                yield outputs
                return
            before, started = agents.call_stats(policy), time.monotonic()
            pending = _in_thread(functools.partial(policy.act, observation))
            yield from _wait(session, run, pending, f"{label} is choosing the actions of step {asked + 1}")
            with session.lock:
                if _superseded(session, run):
                    return
                if session.step_count != asked:
                    continue  # a manual step came first: decide again from the new observation
                after = agents.call_stats(policy)
                if config is not None and before is not None and after is not None:
                    session.model_usage = agents.usage(config, before, after, time.monotonic() - started)
                note, kind, going = _agent_step(session, pending, label, config.api_key if config else "")
                outputs = _full(session, note, kind, form)
            yield outputs
            if not going:
                return
            time.sleep(delay)
    finally:
        _close_after(policy, pending)


def _agent_step(session: Session, decision: Future[Any], label: str, token: str) -> tuple[str, str, bool]:
    """Take the step the policy decided, unless its model decided none of it; the message, its kind and whether
    the run goes on. A model failure is said in the message (warning style) with its error and a fix; a step whose
    every action fell back is not taken and stops the run (so that the champion's play never passes for the
    model's), as do a policy that raised and a rejected action."""
    try:
        joint = decision.result()
    except Exception as error:  # a broken endpoint or answer ends the run with a message, never a traceback
        return (f"{label} failed while choosing step {session.step_count + 1}: {str(error) or type(error).__name__}. "
                "Step manually, Run again or Reset."), "error", False
    usage = session.model_usage
    failure = agents.step_failure(usage, token) if usage is not None else None
    if failure is not None and failure.total:
        return prose.MODEL_FAILED.format(label=label, step=session.step_count + 1, actions=failure.actions,
                                         error=failure.error, hint=failure.hint), "warn", False
    session.step(joint)
    note, kind = _step_note(session, f"{label} playing. ")
    if failure is not None:
        note += prose.MODEL_FELL_BACK.format(count=failure.fell_back, actions=failure.actions, error=failure.error,
                                             hint=failure.hint)
        kind = "error" if kind == "error" else "warn"
    return note, kind, not session.done and kind != "error"


def _close_after(policy: Policy, pending: Future[Any] | None) -> None:
    """Close the policy once the step in flight (if any) is done, without waiting for it here."""
    if pending is None:
        policy.close()
    else:
        pending.add_done_callback(lambda _: policy.close())


def stop_agent(session: Session | None) -> Outputs:
    """Ask the running agent to stop; it shows where it stopped in its last update (so that no update of
    the run can land after this one). Outputs: message (unchanged unless no agent is running)."""
    session = live(session)
    if session is None or session.agent is None:
        return _note(prose.NO_AGENT, "info")
    with session.lock:
        session.stop_requested = True
    return {}
