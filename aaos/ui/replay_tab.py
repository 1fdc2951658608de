"""The Replay tab: load an episode (the Play tab's, this tab's latest benchmark's, the committed training
evaluation's or an uploaded JSONL), scrub its timeline (a slider and ◀ ▶) and see step t as it was played: every
role's view as its agent saw it with the action it chose, the step's actions and results, the reward components and
the oversight log so far, and where the episode first departs from the champion on the same seed.

What is loaded (aaos.ui.replays.Watch) lives in the tab's own gr.State; handlers never change it in place, they
return a new one. A file that cannot be replayed gets a message and changes nothing.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import gradio as gr

import aaos
from aaos.bench.runner import read_records
from aaos.core.trajectory import EpisodeMeta
from aaos.training.episodes import TrajectoryError
from aaos.ui import charts, formatting, replays, watch_html
from aaos.ui import watch_prose as words
from aaos.ui.dropdown import changing_dropdown
from aaos.ui.replays import Entry, Replay
from aaos.ui.session import Session
from aaos.ui.wiring import SESSION_TTL_S, Outputs, Ui, live

DEFAULT_SOURCE = "committed"
VIEW: tuple[str, ...] = ("replay", "replay_step", "replay_status", "replay_departure", "replay_cards",
                         "replay_actions", "replay_plot", "replay_oversight")
"""What showing step t renders (and the step shown, in the tab's state)."""
LOADED: tuple[str, ...] = ("replay_episode", "replay_upload", "replay_note", "replay_result", *VIEW)
"""What loading an episode renders."""


@dataclass(frozen=True)
class Watch:
    """The tab's state: the source's episodes, the one loaded and the step shown (0: none)."""

    entries: tuple[Entry, ...] = ()
    loaded: Replay | None = field(default=None)
    step: int = 0


def build(ui: Ui) -> None:
    """The tab, inside the page's gr.Tabs."""
    with gr.Tab("Replay", id="replay", elem_id="aaos-tab-replay"):
        # inside the tab: a State among the gr.Tabs' children shifts Gradio's tab buttons by one
        ui["replay"] = gr.State(None, time_to_live=SESSION_TTL_S)
        gr.Markdown(words.REPLAY_INTRO, elem_classes=["aaos-help"])
        with gr.Row(equal_height=False):
            ui["replay_source"] = gr.Radio([(label, key) for key, label in words.SOURCES.items()],
                                           value=DEFAULT_SOURCE, label="Source", scale=3,
                                           elem_id="aaos-replay-source")
            ui["replay_upload"] = gr.File(label="JSONL file", file_types=[".jsonl"], type="filepath", visible=False,
                                          scale=2, elem_id="aaos-replay-upload")
        with gr.Row(equal_height=True):
            ui["replay_episode"] = changing_dropdown([], label="Episode", scale=5, elem_id="aaos-replay-episode")
            ui["replay_load"] = gr.Button("Load", variant="primary", scale=0, min_width=90,
                                          elem_id="aaos-replay-load")
        ui["replay_note"] = gr.HTML(elem_id="aaos-replay-note")
        ui["replay_result"] = gr.HTML(visible=False, elem_id="aaos-replay-result-box")
        with gr.Row(equal_height=True, elem_id="aaos-replay-timeline"):
            ui["replay_prev"] = gr.Button("◀", scale=0, min_width=48, elem_id="aaos-replay-prev")
            ui["replay_step"] = gr.Slider(0, 1, value=0, step=1, label="Step", scale=8, elem_id="aaos-replay-step")
            ui["replay_next"] = gr.Button("▶", scale=0, min_width=48, elem_id="aaos-replay-next")
            ui["replay_jump"] = gr.Button("Go to the departure", scale=0, min_width=160,
                                          elem_id="aaos-replay-jump")
        ui["replay_status"] = gr.HTML(elem_id="aaos-replay-status-box")
        ui["replay_departure"] = gr.HTML(elem_id="aaos-replay-departure-box")
        ui["replay_cards"] = gr.HTML(elem_id="aaos-replay-cards-box")
        ui["replay_actions"] = gr.Dataframe(headers=list(formatting.ACTION_COLUMNS), interactive=False, wrap=True,
                                            label="This step's actions and results (no-ops left out)",
                                            max_height=260, column_widths=list(formatting.ACTION_WIDTHS),
                                            elem_id="aaos-replay-actions")
        # one under the other, each across the tab: side by side, the chart's legend and the log's headers were cut
        ui["replay_plot"] = gr.LinePlot(x="step", y="value", color="series", y_lim=[0, 1], height=280,
                                        title="Reward components and composite score so far", x_title="Step",
                                        y_title="Value", color_title="Component", elem_id="aaos-replay-plot")
        ui["replay_oversight"] = gr.Dataframe(headers=list(formatting.OVERSIGHT_COLUMNS), interactive=False,
                                              wrap=True, label="Oversight log so far", max_height=280,
                                              column_widths=list(formatting.OVERSIGHT_WIDTHS),
                                              elem_id="aaos-replay-oversight")


def wire(blocks: gr.Blocks, ui: Ui) -> None:
    """Connect the tab's events (and the sidebar's environment, for the committed episodes) to their handlers."""
    listing = ("replay", "session", "env", "replay_source", "replay_upload")

    def lists(listener: Callable[..., Any], handler: Callable[..., Outputs], inputs: tuple[str, ...] = listing) -> None:
        # one listing at a time, in the order asked: the page load's, still queued when the environment is changed,
        # would otherwise list the environment it was asked for over the one chosen after it
        ui.event(listener, handler, inputs, LOADED, concurrency_id="replay-listing", concurrency_limit=1)

    # on page load, not on the tab's select: a Tab's select listener makes Gradio 6.31 draw the chosen tab's name
    # over the last tab's button
    lists(blocks.load, first_open)
    lists(ui["replay_source"].input, choose_source)
    lists(ui["replay_upload"].upload, choose_source)
    lists(ui["env"].input, choose_env)
    lists(ui["replay_episode"].input, load, (*listing, "replay_episode"))
    lists(ui["replay_load"].click, load, (*listing, "replay_episode"))
    # `change`, not `release`: a step typed in the slider's box (or set with the arrow keys) shows at once, not on
    # blur; a step the tab set itself is the one shown, and changes nothing
    ui.event(ui["replay_step"].change, show_step, ("replay", "replay_step"), VIEW, trigger_mode="always_last")
    ui.event(ui["replay_prev"].click, back, ("replay", "replay_step"), VIEW)
    ui.event(ui["replay_next"].click, forward, ("replay", "replay_step"), VIEW)
    ui.event(ui["replay_jump"].click, jump, ("replay",), VIEW)


# Sources -------------------------------------------------------------------------------------------------------

def episodes_of(session: Session | None, env_id: str, source: str, upload: str | None) -> list[Entry]:
    """The source's episodes; TrajectoryError for an upload that cannot be read."""
    session = live(session)
    if source == "play":
        return replays.from_play(session.meta, session.records) if session is not None else []
    if source == "benchmark":
        run = session.benchmark if session is not None else None
        return replays.entries(read_records(run.results)) if run is not None and run.results.exists() else []
    if source == "upload":
        return replays.read_upload(upload) if upload else []
    return replays.committed(env_id)


def drawn_as(session: Session | None, source: str) -> contextlib.AbstractContextManager[None]:
    """Within, holdout variants are drawn as the source's episodes were: a benchmark of this tab's under its own
    secret salt (Replay may play again what this tab just ran; the salt is never shown), the rest under this
    server's."""
    session = live(session)
    run = session.benchmark if session is not None and source == "benchmark" else None
    return run.holdout() if run is not None else contextlib.nullcontext()


def _nothing(source: str, env_id: str, note: str) -> Outputs:
    return {"replay_episode": gr.update(choices=[], value=None),
            "replay_upload": gr.update(visible=source == "upload"),
            "replay_note": formatting.message(note, "info"), "replay_result": gr.update(visible=False),
            **_view(Watch(), 1)}


def load(watch: Watch | None, session: Session | None, env_id: str, source: str, upload: str | None,
         index: int | None) -> Outputs:
    """List the source's episodes (again: the Play tab's and a benchmark's grow) and load the chosen one.
    Outputs: LOADED."""
    with drawn_as(session, source):
        try:
            found = episodes_of(session, env_id, source, upload)
            chosen = index if isinstance(index, int) and 0 <= index < len(found) else 0
            loaded = replays.load(found[chosen]) if found else None
            labels = [(e.label, i) for i, e in enumerate(found)]
        except TrajectoryError as error:
            return {"replay_note": formatting.message(words.BAD_FILE.format(problem=str(error).rstrip(".")),
                                                      "error")}
    if loaded is None:
        return _nothing(source, env_id, words.NO_EPISODES[source].format(env=env_id))
    entry = loaded.entry
    note = " ".join(part for part in (words.LOADED.format(label=entry.label), loaded.note) if part)
    kind = "info" if loaded.steps else "warn"
    result = entry.result is not None and not loaded.steps
    return {            "replay_episode": gr.update(choices=labels, value=chosen),
            "replay_upload": gr.update(visible=source == "upload"),
            "replay_note": formatting.message(note, kind),
            "replay_result": gr.update(value=watch_html.recorded_result(entry.result, entry.who) if result else "",
                                       visible=result),
            **_view(Watch(tuple(found), loaded), 1)}


def choose_source(watch: Watch | None, session: Session | None, env_id: str, source: str,
                  upload: str | None) -> Outputs:
    """A source was picked (or a file uploaded): its episodes, the first one loaded. Outputs: LOADED."""
    return load(watch, session, env_id, source, upload, 0)


def first_open(watch: Watch | None, session: Session | None, env_id: str, source: str,
               upload: str | None) -> Outputs:
    """The page loaded: the source's first episode is loaded (nothing again for a tab that has one).
    Outputs: LOADED."""
    return load(watch, session, env_id, source, upload, 0) if watch is None else {}


def choose_env(watch: Watch | None, session: Session | None, env_id: str, source: str,
               upload: str | None) -> Outputs:
    """The sidebar's environment changed: the committed episodes shown follow it (once the tab has been opened;
    nothing again for the environment already listed: a late page load may have listed it, and the step the user
    went to stays). Outputs: LOADED."""
    if watch is None or source != "committed" or (watch.entries and watch.entries[0].meta.env == env_id):
        return {}
    return load(watch, session, env_id, source, upload, 0)


# Showing step t --------------------------------------------------------------------------------------------------

def _clamp(loaded: Replay | None, step: float | None) -> int:
    last = loaded.steps if loaded is not None else 0
    return min(max(1, int(step or 1)), max(last, 1))


def show_step(watch: Watch | None, step: float | None) -> Outputs:
    """Step `step` of the loaded episode, unless it is the one shown. Outputs: VIEW."""
    watch = watch or Watch()
    shown = _clamp(watch.loaded, step)
    return {} if shown == watch.step else _view(watch, shown)


def back(watch: Watch | None, step: float | None) -> Outputs:
    """One step back (◀). Outputs: VIEW."""
    return show_step(watch, (step or 1) - 1)


def forward(watch: Watch | None, step: float | None) -> Outputs:
    """One step forward (▶). Outputs: VIEW."""
    return show_step(watch, (step or 1) + 1)


def jump(watch: Watch | None) -> Outputs:
    """The first step that departs from the champion (the last step if it never does). Outputs: VIEW."""
    loaded = watch.loaded if watch is not None else None
    if watch is None or loaded is None:
        return {}
    return show_step(watch, loaded.departure.step if loaded.departure else loaded.steps)


def _status(loaded: Replay, step: int) -> str:
    record = loaded.records[step - 1]
    meta: EpisodeMeta = loaded.entry.meta
    breakdown = record["reward_breakdown"]
    if loaded.departure is None:
        champion = watch_html.stat("Champion", "same", words.NEVER_DEPARTS, "aaos-replay-champion")
    else:
        here = loaded.departure.step == step
        champion = watch_html.stat("Champion", f"departs at step {loaded.departure.step}",
                                   "this step" if here else words.DEPARTS.format(step=loaded.departure.step),
                                   "aaos-replay-champion")
    return watch_html.stats([
        watch_html.stat("Episode", formatting.episode_name(meta.env, meta.task, meta.scenario),
                        f"{meta.env} · seed {meta.seed} · {loaded.entry.who}"),
        watch_html.stat("Step", f"{step} / {loaded.steps}", "done" if record["done"] else "", "aaos-replay-at"),
        watch_html.stat("Score", formatting.score_text(record["score"]), "after this step", "aaos-replay-score"),
        watch_html.stat("Reward", f"{record['reward']:.3f}",
                        f"{breakdown['immediate']:.3f} now + {breakdown['delayed']:.3f} released"),
        champion,
    ], "aaos-replay-status")


def _cards(loaded: Replay, step: int) -> str:
    """Every role's view before step `step` as its agent saw it, with the action it chose there."""
    card = aaos.kit_of(loaded.entry.meta.env).rendering.role_card
    joint = loaded.records[step - 1]["joint_action"]
    views = loaded.views[step - 1]["agent_observations"]
    return ('<div class="aaos-cards" id="aaos-replay-cards">'
            + "".join(card(role, view, joint.get(role)) for role, view in views.items()) + "</div>")


def _view(watch: Watch, step: int) -> Outputs:
    """Step `step` of the episode loaded (VIEW); an empty view for nothing loaded or an episode without steps."""
    loaded = watch.loaded
    if loaded is None or not loaded.steps:
        return {"replay": replace(watch, step=0),
                "replay_step": gr.update(minimum=0, maximum=1, value=0, interactive=False),
                "replay_status": "", "replay_departure": "", "replay_cards": "",
                "replay_actions": formatting.action_frame([]), "replay_plot": charts.component_frame({}, []),
                "replay_oversight": formatting.oversight_frame([])}
    so_far = loaded.records[:step]
    here = loaded.departure is not None and loaded.departure.step == step
    return {
        "replay": replace(watch, step=step),
        # a slider's minimum must stay below its maximum: a one-step episode's runs from 0 (shown as step 1)
        "replay_step": gr.update(minimum=1 if loaded.steps > 1 else 0, maximum=loaded.steps, value=step,
                                 interactive=loaded.steps > 1),
        "replay_status": _status(loaded, step),
        "replay_departure": watch_html.departure(step, loaded.departure.roles) if here and loaded.departure else "",
        "replay_cards": _cards(loaded, step),
        "replay_actions": formatting.action_frame(so_far[-1:]),
        "replay_plot": gr.update(value=charts.component_frame(loaded.initial_scores, so_far),
                                 x_lim=[0, loaded.steps]),
        "replay_oversight": formatting.oversight_frame(so_far),
    }
