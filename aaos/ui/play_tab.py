"""The episode's page parts and their events: the sidebar (environment, task, scenario, seed, the agent run, model
settings, downloads), what shows above the tabs (the status bar, a model run's usage, the main message, Step and
what roles without a queued action do) and the Play tab (the action form, the queue, what needs attention, the
end-of-episode report and every role's card). The handlers live in episode.py (the episode controls and what every
change re-renders), composer.py (the form and the queue) and agent_run.py (Step, Run and Stop).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import gradio as gr

import aaos
from aaos.core.html import humanize
from aaos.core.trajectory import EpisodeMeta
from aaos.ui import agents, formatting, prose
from aaos.ui.agent_run import DEFAULT_AGENT, MODEL_SETTINGS, choose_agent, run_agent, step, stop_agent
from aaos.ui.composer import (
    CHOICE_SLOTS,
    FORM_CHANGED,
    QUEUED,
    SLOTS,
    TEXT_SLOTS,
    choose_action,
    clear_queue,
    form_fields,
    queue_action,
    toggle_raw,
)
from aaos.ui.dropdown import changing_dropdown
from aaos.ui.episode import (
    ENV_CHOICES,
    FULL,
    choose_env,
    choose_episode,
    choose_seed,
    episode_choices,
    export,
    redraw,
    reset,
)
from aaos.ui.wiring import SESSION_TTL_S, Outputs, Ui

OTHERS: tuple[tuple[str, str], ...] = (("Do nothing (no_op)", "no_op"), ("The agent under Agent run decides", "agent"))
"""What roles without a queued action do on Step (session.Others)."""
MIN_DELAY_S = 0.1
"""The fastest an agent run streams: quicker updates flood the browser, which then reacts late to Stop."""
__all__ = [
    "CHOICE_SLOTS",
    "FULL",
    "MODEL_SETTINGS",
    "SLOTS",
    "TEXT_SLOTS",
    "build_sidebar",
    "build_status",
    "build_tab",
    "choose_action",
    "choose_agent",
    "choose_env",
    "choose_seed",
    "clear_queue",
    "export",
    "form_fields",
    "queue_action",
    "redraw",
    "reset",
    "run_agent",
    "signalling",
    "step",
    "stop_agent",
    "toggle_raw",
    "wire",
]


# Layout ------------------------------------------------------------------------------------------------

def _title(text: str) -> None:
    gr.Markdown(f"### {text}", elem_classes=["aaos-panel-title"])


def build_sidebar(ui: Ui, meta: EpisodeMeta) -> None:
    """Episode controls, the agent run, the model settings and the downloads."""
    tasks, scenarios = episode_choices(meta.env)
    _title("Episode")
    ui["env"] = gr.Dropdown([(aaos.spec(e).title, e) for e in aaos.env_ids()], value=meta.env,
                            label="Environment", elem_id="aaos-env")
    ui["task"] = changing_dropdown(tasks, value=meta.task, label="Task", elem_id="aaos-task")
    ui["scenario"] = changing_dropdown(scenarios, value=meta.scenario, label="Scenario", elem_id="aaos-scenario")
    ui["scenario_help"] = gr.HTML(elem_id="aaos-scenario-help")
    # No minimum and no rounding here: the seed handlers refuse a bad seed with the Space's own message.
    ui["seed"] = gr.Number(meta.seed, label="Seed", info=prose.SEED_INFO, elem_id="aaos-seed")
    ui["reset"] = gr.Button("Reset", variant="primary", elem_id="aaos-reset")
    _title("Agent run")
    ui["policy"] = gr.Dropdown(agents.choices(), value=DEFAULT_AGENT, label="Agent", elem_id="aaos-policy")
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
    ui["delay"] = gr.Slider(MIN_DELAY_S, 1, value=0.3, step=0.05, label="Seconds between steps", elem_id="aaos-delay")
    _title("Downloads")
    ui["export"] = gr.Button("Export trajectory and action log", elem_id="aaos-export")
    ui["files"] = gr.File(label="Episode files", file_count="multiple", interactive=False, visible=False,
                          elem_id="aaos-files")


def build_status(ui: Ui, env_id: str | None = None) -> None:
    """Above the tabs, so that they show from any tab and on the first screen: the status bar, a model run's
    usage, the main message across the whole width, then Step with what roles without a queued action do, and
    Run and Stop (the agent and its settings are in the sidebar)."""
    ui["status"] = gr.HTML(elem_id="aaos-status-box")
    ui["model_usage"] = gr.HTML(visible=False, elem_id="aaos-usage-box")
    ui["message"] = gr.HTML(elem_id="aaos-message")
    ui["drawn"] = gr.State(None, time_to_live=SESSION_TTL_S)  # the signal to redraw the episode (`signalling`)
    with gr.Row(equal_height=False, elem_id="aaos-stepbar"):
        spec = aaos.spec(env_id or aaos.env_ids()[0])  # the environment the page opens on
        ui["others"] = gr.Radio(list(OTHERS), value=OTHERS[0][1], label=prose.others_label(spec),
                                elem_id="aaos-others", scale=3, min_width=220)
        ui["step"] = gr.Button("Step", variant="primary", elem_id="aaos-step", scale=0, min_width=96)
        ui["run"] = gr.Button("Run", variant="primary", elem_id="aaos-run", scale=0, min_width=80)
        ui["stop"] = gr.Button("Stop", variant="stop", elem_id="aaos-stop", scale=0, min_width=80)


def build_tab(ui: Ui, roles: Sequence[str]) -> None:
    """The Play tab: the action form, the queue, and every role's view as a card."""
    with gr.Tab("Play", id="play", elem_id="aaos-tab-play"):
        with gr.Row(equal_height=False):
            with gr.Column(scale=3, min_width=300, elem_id="aaos-composer"):
                with gr.Row():
                    ui["role"] = changing_dropdown([(humanize(r), r) for r in roles], value=roles[0], label="Role",
                                             elem_id="aaos-role")
                    ui["action_type"] = changing_dropdown(label="Action", elem_id="aaos-action")
                ui["action_help"] = gr.HTML(elem_id="aaos-action-help")
                with gr.Row():
                    for i, name in enumerate(CHOICE_SLOTS):
                        ui[name] = changing_dropdown(label="", visible=False, elem_id=f"aaos-choice-{i}")
                    for i, name in enumerate(TEXT_SLOTS):
                        ui[name] = gr.Textbox(label="", visible=False, max_length=500, elem_id=f"aaos-text-{i}")
                ui["raw_json"] = gr.Code(language="json", label="Action as raw JSON", lines=5, interactive=True,
                                         visible=False, elem_id="aaos-raw")
                with gr.Row():
                    ui["raw"] = gr.Checkbox(False, label="Edit as raw JSON", elem_id="aaos-raw-toggle")
                    ui["queue_action"] = gr.Button("Queue action", elem_id="aaos-queue-button")
                ui["queue_note"] = gr.HTML(elem_id="aaos-queue-note")
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
    signal = ("session", "drawn", "message")
    # Every event that changes the episode signals, and only the redraw draws it (see `signalling`). A control that
    # starts another episode ends a run on the server (Session.take_over), never through Gradio's `cancels`: a
    # cancelled Step's answer is dropped, and Gradio may call a cancelled generator again from its start.
    ui.event(ui["drawn"].change, redraw, ("session",), FULL, concurrency_limit=1)
    ui.event(blocks.load, signalling(reset), episode, signal)
    ui.event(ui["step"].click, signalling(step),
             ("session", "others", "role", "action_type", "raw", "policy", *model), signal)
    ui.event(ui["run"].click, signalling(run_agent), ("session", "policy", "delay", *model), signal)
    ui.event(ui["env"].input, signalling(choose_env), ("session", "env", "raw"), (*signal, *ENV_CHOICES))
    ui.event(ui["reset"].click, signalling(reset), episode, signal)
    # A new task, scenario or (entered) seed starts its episode at once: what the sidebar shows is what is played.
    ui.event(ui["task"].input, signalling(choose_episode), episode, signal)
    ui.event(ui["scenario"].input, signalling(choose_episode), episode, signal)
    ui.event(ui["seed"].submit, signalling(reset), episode, signal)
    ui.event(ui["seed"].input, choose_seed, ("session", "seed"), ("message",))
    ui.event(ui["role"].input, choose_action, form, FORM_CHANGED)
    ui.event(ui["action_type"].input, choose_action, form, FORM_CHANGED)
    ui.event(ui["raw"].input, toggle_raw, (*form, *slots), ("raw_json", "action_help", *slots))
    ui.event(ui["queue_action"].click, queue_action, (*form, "raw_json", *slots), QUEUED)
    ui.event(ui["clear"].click, clear_queue, ("session",), QUEUED)
    ui.event(ui["policy"].input, choose_agent, ("policy", "env"), ("agent_help", *MODEL_SETTINGS))
    ui.event(ui["env"].input, choose_agent, ("policy", "env"), ("agent_help", *MODEL_SETTINGS))
    ui.event(ui["stop"].click, stop_agent, ("session",), ("message",))
    ui.event(ui["export"].click, export, ("session",), ("session", "files", "message"), show_progress="full")


def signalling(handler: Callable[..., Any]) -> Callable[..., Any]:
    """`handler` (a function or a generator) with its drawings (FULL) replaced by a signal: the count of the
    session's drawings, whose change starts the redraw of the session's latest one; its other outputs, and a
    message alone, go as they are.

    Gradio applies each event's updates in the page in that event's own loop, and keeps what they set (a
    dropdown's choices) per browser session in the order the server finishes them, so two events drawing the same
    components race: a run's update sent just before a new episode's could land after it. The redraw is the only
    event that draws, one at a time, and each draws what the session shows when it runs."""
    def signal(outputs: Outputs) -> Outputs:
        session = outputs.get("session")
        if session is None:
            return outputs
        return {**{k: v for k, v in outputs.items() if k not in FULL}, "session": session, "drawn": session.draws}

    if inspect.isgeneratorfunction(handler):
        @functools.wraps(handler)
        def signals(*args: Any, **kwargs: Any) -> Iterator[Outputs]:
            updates = handler(*args, **kwargs)
            try:
                for outputs in updates:
                    yield signal(outputs)
            finally:
                updates.close()

        return signals

    @functools.wraps(handler)
    def signals_once(*args: Any, **kwargs: Any) -> Outputs:
        return signal(handler(*args, **kwargs))

    return signals_once
