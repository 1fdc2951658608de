"""The Arena tab: two to four agents (noop, random, the champion, the oracle as a reference, the local model
untrained and fine-tuned, any OpenAI-compatible endpoint) play the same episode side by side in lock step — Step,
Run and Stop — with a score race chart and each lane's latest actions. Blind mode hides the names (and shuffles the
lanes) until the user records which agent played best; the tab's picks are listed and exported as CSV. On first
open: the untrained model, the fine-tuned model and the champion on a committed evaluation episode.

The round (aaos.ui.arena.Arena) lives in the tab's own gr.State; every event touching it holds its lock. The episode
is a committed evaluation episode (where the local model's committed results match it) or the Play tab's.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterator
from typing import Any

import gradio as gr
import pandas as pd

import aaos
from aaos.agents.llm import LLMConfig
from aaos.core.html import esc
from aaos.core.trajectory import EpisodeMeta
from aaos.ui import agents, charts, formatting, replays, watch_html
from aaos.ui import watch_prose as words
from aaos.ui.arena import (
    AGENTS,
    COLOURS,
    DEFAULT_LANES,
    LETTERS,
    LOCAL_AGENTS,
    MAX_LANES,
    MIN_LANES,
    PICK_COLUMNS,
    Arena,
    Lane,
    Round,
    lanes_of,
    make_lane,
    race,
)
from aaos.ui.dropdown import changing_dropdown
from aaos.ui.session import Session, default_meta
from aaos.ui.wiring import SESSION_TTL_S, Outputs, Ui, live
from aaos.ui.wiring import current as current_session

PLAY_EPISODE = "play"
"""The episode choice that takes the Play tab's episode (its task, scenario and seed)."""
LANES: tuple[str, ...] = tuple(f"arena_agent_{i}" for i in range(MAX_LANES))
RENDERED: tuple[str, ...] = ("arena", "arena_message", "arena_status", "arena_lanes", "arena_race",
                             "arena_pick_row", "arena_pick", "arena_picks")
"""What every arena event renders."""
SETTINGS: tuple[str, ...] = ("arena", "session", "env", "arena_episode", "arena_blind", *LANES, "mode",
                             "model_name", "base_url", "token")
"""What starting a round reads: the episode, blind mode, the lanes' agents and the sidebar's Model settings."""


def episode_choices(env_id: str) -> list[tuple[str, str]]:
    """The committed evaluation episodes the local model played (first), then the Play tab's episode."""
    models = {replays.committed_model(env_id, agent) for agent in LOCAL_AGENTS}
    metas = dict.fromkeys(e.meta for e in replays.committed(env_id) if e.policy in models)
    shown = [(f"{formatting.episode_name(m.env, m.task, m.scenario)} · seed {m.seed} (committed evaluation)",
              f"{m.env}|{m.task}|{m.scenario}|{m.seed}") for m in metas]
    return [*shown, ("The Play tab's episode (task, scenario and seed)", PLAY_EPISODE)]


def build(ui: Ui, env_id: str) -> None:
    """The tab, inside the page's gr.Tabs."""
    episodes = episode_choices(env_id)
    with gr.Tab("Arena", id="arena", elem_id="aaos-tab-arena"):
        # inside the tab: a State among the gr.Tabs' children shifts Gradio's tab buttons by one
        ui["arena"] = gr.State(None, time_to_live=SESSION_TTL_S, delete_callback=close_arena)
        gr.Markdown(words.ARENA_INTRO, elem_classes=["aaos-help"])
        with gr.Row(equal_height=True, elem_id="aaos-arena-lane-agents"):
            choices = [*AGENTS, ("— none —", words.ARENA_NONE)]
            for i, name in enumerate(LANES):
                ui[name] = gr.Dropdown(choices, value=DEFAULT_LANES[i], label=f"Lane {i + 1}", min_width=150,
                                       elem_id=f"aaos-arena-agent-{i}")
        with gr.Row(equal_height=True):
            ui["arena_episode"] = changing_dropdown(episodes, value=episodes[0][1], label="Episode", scale=4,
                                              elem_id="aaos-arena-episode")
            ui["arena_blind"] = gr.Checkbox(False, label="Blind mode", scale=1, elem_id="aaos-arena-blind")
            ui["arena_start"] = gr.Button("Start", variant="primary", scale=0, min_width=90,
                                          elem_id="aaos-arena-start")
        with gr.Row(equal_height=False, elem_id="aaos-arena-controls"):
            ui["arena_message"] = gr.HTML(elem_id="aaos-arena-message", scale=5, min_width=280)
            ui["arena_step"] = gr.Button("Step", variant="primary", scale=0, min_width=80, elem_id="aaos-arena-step")
            ui["arena_run"] = gr.Button("Run", scale=0, min_width=80, elem_id="aaos-arena-run")
            ui["arena_stop"] = gr.Button("Stop", variant="stop", scale=0, min_width=80, elem_id="aaos-arena-stop")
        ui["arena_status"] = gr.HTML(elem_id="aaos-arena-status-box")
        ui["arena_lanes"] = gr.HTML(elem_id="aaos-arena-lanes-box")
        ui["arena_race"] = gr.Plot(show_label=False, elem_id="aaos-arena-race")
        with gr.Row(visible=False, equal_height=True, elem_id="aaos-arena-pick-row") as row:
            ui["arena_pick_row"] = row
            ui["arena_pick"] = gr.Radio([], label="Which agent played best?", scale=3, elem_id="aaos-arena-pick")
            ui["arena_record"] = gr.Button("Record pick", variant="primary", scale=0, min_width=120,
                                           elem_id="aaos-arena-record")
        ui["arena_picks"] = gr.Dataframe(headers=list(PICK_COLUMNS), interactive=False, wrap=True, max_height=200,
                                         label="Your picks in this tab", elem_id="aaos-arena-picks")
        with gr.Row():
            ui["arena_export"] = gr.Button("Export picks (CSV)", elem_id="aaos-arena-export")
            ui["arena_files"] = gr.File(label="Picks", interactive=False, visible=False, elem_id="aaos-arena-files")


def wire(blocks: gr.Blocks, ui: Ui) -> None:
    """Connect the tab's events (and the sidebar's environment choice) to their handlers."""
    ui.event(blocks.load, first_open, SETTINGS, RENDERED)  # see replay_tab.wire
    ui.event(ui["env"].input, choose_env, SETTINGS, (*RENDERED, "arena_episode"))
    ui.event(ui["arena_start"].click, start, SETTINGS, RENDERED)
    ui.event(ui["arena_step"].click, step, ("arena",), RENDERED)
    ui.event(ui["arena_run"].click, run, ("arena", "delay"), RENDERED)
    ui.event(ui["arena_stop"].click, stop, ("arena",), ("arena_message",))
    ui.event(ui["arena_record"].click, record_pick, ("arena", "arena_pick"), RENDERED)
    ui.event(ui["arena_export"].click, export_picks, ("arena", "session"), ("session", "arena_files",
                                                                            "arena_message"))


def close_arena(arena: Arena | None) -> None:
    """gr.State's delete_callback: the tab is gone or idle; its policies are closed."""
    if arena is not None:
        arena.close()


# Starting a round ------------------------------------------------------------------------------------------------

def _meta(episode: str | None, env_id: str, session: Session | None) -> EpisodeMeta:
    """The episode chosen: a committed one ("env|task|scenario|seed") or the Play tab's. A choice of another
    environment than the sidebar's (the page had not caught up with a new environment yet) takes the new
    environment's first choice."""
    parts = (episode or "").split("|")
    if len(parts) == 4 and parts[0] == env_id:
        return EpisodeMeta(env_id, parts[1], parts[2], int(parts[3]))
    first = episode_choices(env_id)[0][1]
    if len(parts) == 4 and first != PLAY_EPISODE:
        return _meta(first, env_id, session)
    shown = live(session)
    if shown is not None and shown.meta.env == env_id:
        return shown.meta
    return default_meta(env_id)


def _config(agent: str, env_id: str, mode: str, model: str | None, base_url: str | None,
            token: str | None) -> LLMConfig | Callable[[], LLMConfig] | str | None:
    """What a lane's agent needs: the endpoint's config, what starts the local model (on the lane's first step),
    a message saying why it cannot play, or None for a baseline."""
    if agent == "openai":
        return agents.endpoint(model, base_url, token, mode)
    if agent not in agents.LOCAL_AGENTS:
        return None
    problem = agents.local_problem()
    return problem if problem is not None else functools.partial(
        agents.start_local, agent, env_id, "joint" if mode == "joint" else "per_role")


def start(arena: Arena | None, session: Session | None, env_id: str, episode: str | None, blind: bool,
          *settings: Any) -> Outputs:
    """A new round with the lanes' agents on the chosen episode. settings: the lanes' agents, then the Model
    settings (mode, model name, base URL, token). Outputs: RENDERED."""
    arena = arena or Arena()
    chosen = lanes_of(settings[:MAX_LANES])
    mode, model, base_url, token = settings[MAX_LANES:]
    if len(chosen) < MIN_LANES:
        return {"arena": arena, "arena_message": formatting.message(words.ARENA_NEEDS_TWO, "error")}
    meta = _meta(episode, env_id, session)
    lanes = [make_lane(agent, meta, _config(agent, env_id, mode, model, base_url, token)) for agent in chosen]
    with arena.lock:
        current = arena.start(meta, lanes, bool(blind))
        names = ", ".join(name for name, _ in current.shown())
        note = words.ARENA_STARTED.format(names=names, episode=formatting.episode_name(*_parts(meta)),
                                          seed=meta.seed)
        return render(arena, note, "info")


def _parts(meta: EpisodeMeta) -> tuple[str, str, str]:
    return meta.env, meta.task, meta.scenario


def first_open(arena: Arena | None, session: Session | None, env_id: str, episode: str | None, blind: bool,
               *settings: Any) -> Outputs:
    """The page loaded: a round of the lanes shown (untrained vs fine-tuned vs champion by default) starts, unless
    the tab has one. Outputs: RENDERED."""
    if arena is not None and arena.round is not None:
        return {}
    return start(arena, session, env_id, episode, blind, *settings)


def choose_env(arena: Arena | None, session: Session | None, env_id: str, episode: str | None, blind: bool,
               *settings: Any) -> Outputs:
    """The sidebar's environment changed: its episodes are offered, and an opened arena starts a round on the
    first. Outputs: RENDERED and arena_episode."""
    episodes = episode_choices(env_id)
    chosen = {"arena_episode": gr.update(choices=episodes, value=episodes[0][1])}
    if arena is None or arena.round is None:
        return chosen
    return {**start(arena, session, env_id, episodes[0][1], blind, *settings), **chosen}


# Playing ---------------------------------------------------------------------------------------------------------

def _scores(current: Round) -> str:
    return " · ".join(f"{name} {formatting.score_text(lane.score)}" for name, lane in current.shown() if lane.live)


def _after_step(current: Round) -> tuple[str, str]:
    if not current.done:
        return words.ARENA_STEPPED.format(step=current.step_count, scores=_scores(current)), "ok"
    then = words.ARENA_PICK_NOW if current.blind and current.picked is None else words.ARENA_START_AGAIN
    return words.ARENA_OVER.format(then=then), "ok"


def step(arena: Arena | None) -> Outputs:
    """Every lane takes one step. Outputs: RENDERED."""
    if arena is None or arena.round is None:
        return {"arena_message": formatting.message(words.ARENA_NOT_STARTED, "error")}
    with arena.lock:
        current = arena.round
        if current.done:
            return render(arena, *_after_step(current))
        arena.step()
        return render(arena, *_after_step(current))


def run(arena: Arena | None, delay: float | None) -> Iterator[Outputs]:
    """Step every lane until the round ends, yielding after each step; Stop ends it between steps and a new round
    (Start) or another Run supersedes it silently. Outputs: RENDERED."""
    if arena is None or arena.round is None:
        yield {"arena_message": formatting.message(words.ARENA_NOT_STARTED, "error")}
        return
    with arena.lock:
        arena.stop_requested = False
        arena.generation += 1
        mine = arena.generation
    while True:
        with arena.lock:
            current = arena.round
            if arena.generation != mine or current is None:
                return
            if arena.stop_requested:
                yield render(arena, words.ARENA_STOPPED.format(step=current.step_count), "info")
                return
            if not current.done:
                arena.step()
            outputs = render(arena, *_after_step(current))
        yield outputs
        if current.done:
            return
        time.sleep(max(0.0, float(delay or 0)))


def stop(arena: Arena | None) -> Outputs:
    """Ask a running arena to stop; its last update says where. Outputs: arena_message (only if none runs)."""
    if arena is None or arena.round is None:
        return {"arena_message": formatting.message(words.ARENA_NOT_STARTED, "info")}
    arena.stop_requested = True  # read by the run between steps; no lock, so Stop answers while a step runs
    return {}


def record_pick(arena: Arena | None, letter: str | None) -> Outputs:
    """Record which lane the user thinks played best and reveal the names. Outputs: RENDERED."""
    if arena is None or arena.round is None:
        return {"arena_message": formatting.message(words.ARENA_NOT_STARTED, "error")}
    with arena.lock:
        problem = arena.pick(letter)
        if problem is not None:
            return {"arena_message": formatting.message(problem, "error")}
        return render(arena, words.ARENA_PICKED.format(letter=letter, agent=arena.picks[-1]["Picked agent"]), "ok")


def export_picks(request: gr.Request, arena: Arena | None, session: Session | None) -> Outputs:
    """Write the tab's picks as CSV into the tab's download folder. Outputs: session, arena_files, arena_message."""
    if arena is None or not arena.picks:
        return {"arena_files": None, "arena_message": formatting.message(words.ARENA_NO_PICKS, "error")}
    session = current_session(session, request)
    with arena.lock:
        path = session.workdir() / f"aaos_arena_picks_{len(arena.picks)}.csv"
        picks_frame(arena).to_csv(path, index=False)
        note = words.ARENA_PICKS_EXPORTED.format(count=len(arena.picks))
    return {"session": session, "arena_files": gr.update(value=str(path), visible=True),
            "arena_message": formatting.message(note, "ok")}


# Rendering -------------------------------------------------------------------------------------------------------

def picks_frame(arena: Arena) -> pd.DataFrame:
    return pd.DataFrame(arena.picks, columns=list(PICK_COLUMNS))


def _max_steps(meta: EpisodeMeta) -> int:
    return next(t.max_steps for t in aaos.spec(meta.env).tasks if t.id == meta.task)


def _lane_body(current: Round, lane: Lane) -> str:
    """A lane's score and latest actions; a committed lane's recorded score; why a lane cannot play."""
    revealed = current.revealed
    if lane.live:
        last = lane.records[-1] if lane.records else None
        body = watch_html.score_note(lane.score, f"step {len(lane.records)} / {_max_steps(current.meta)}")
        waiting = words.ARENA_STARTS_ON_STEP if lane.policy is None and revealed else "No step yet."
        body += (watch_html.last_actions(last["action_results"]) if last is not None
                 else f'<p class="aaos-empty">{esc(waiting)}</p>')
        if lane.problem and revealed:  # a replayed committed episode says so
            body += formatting.note(lane.problem, "info")
        return body + (formatting.note(lane.failed, "error") if lane.failed else "")
    if lane.committed is not None:
        score = lane.committed["score"] if current.done or not current.blind else None
        detail = words.ARENA_COMMITTED_LANE if score is not None else words.ARENA_FINAL_HIDDEN
        shown = lane.problem if revealed else words.ARENA_COMMITTED_LANE
        return watch_html.score_note(score, detail) + formatting.note(shown, "info")
    return formatting.note(lane.problem if revealed else words.ARENA_CANNOT_PLAY, "error")


def _status(current: Round) -> str:
    meta = current.meta
    mode = ("blind: names hidden" if not current.revealed else "blind: revealed") if current.blind else "open"
    return watch_html.stats([
        watch_html.stat("Episode", formatting.episode_name(*_parts(meta)), f"{meta.env} · seed {meta.seed}"),
        watch_html.stat("Step", f"{current.step_count} / {_max_steps(meta)}", "over" if current.done else "",
                        "aaos-arena-at"),
        watch_html.stat("Round", str(current.number), mode, "aaos-arena-round"),
    ], "aaos-arena-status")


def render(arena: Arena, note: str, kind: str) -> Outputs:
    """The round as it stands (RENDERED)."""
    current = arena.round
    assert current is not None
    lanes = "".join(watch_html.lane(name, _lane_body(current, lane), f"aaos-arena-lane-{i}")
                    for i, (name, lane) in enumerate(current.shown()))
    picking = current.blind and current.done and current.picked is None
    letters = [f"Agent {LETTERS[i]}" for i in range(len(current.lanes))]
    return {
        "arena": arena,
        "arena_message": formatting.message(note, kind),
        "arena_status": _status(current),
        "arena_lanes": f'<div class="aaos-cards" id="aaos-arena-lanes">{lanes}</div>',
        "arena_race": charts.race_figure(race(current), {name: COLOURS[i] for i, (name, _) in
                                                         enumerate(current.shown())}, _max_steps(current.meta)),
        "arena_pick_row": gr.update(visible=picking),
        "arena_pick": gr.update(choices=[(text, text[-1]) for text in letters], value=None),
        "arena_picks": picks_frame(arena),
    }
