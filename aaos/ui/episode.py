"""The episode: what every event that changes it re-renders (the status bar, the cards, what needs attention, the
end-of-episode report, the World, Reward and Logs tabs, the form) and the episode controls (environment, task,
scenario, seed, Reset, Export). A new task or scenario, or an entered seed, starts its episode at once; choosing
the environment, task or scenario being played changes nothing.

Every control that starts an episode first ends a running agent and waits for its run to end (Session.take_over),
so that the page never shows the old episode after the new one. A bad seed or episode comes back as a readable
message and changes nothing.
"""

from __future__ import annotations

import math

import gradio as gr

import aaos
from aaos.core.trajectory import EpisodeMeta
from aaos.ui import composer, dashboard_tab, formatting, prose
from aaos.ui.session import Session, champion_score, default_meta
from aaos.ui.wiring import Outputs, current, live, open_session

EPISODE: tuple[str, ...] = ("status", "scenario_help", "model_usage", "attention", "cards", "report", "queue",
                            "message", "queue_note", *dashboard_tab.OUTPUTS)
"""What every step re-renders."""
FULL: tuple[str, ...] = ("session", *EPISODE, *composer.COMPOSER)
"""The outputs of reset, step and a run."""
ENV_CHOICES: tuple[str, ...] = ("task", "scenario", "seed", "others")
"""What else an environment change re-draws: its tasks and scenarios, the seed, and how Step's choice is worded."""


def render(session: Session, note: str, kind: str = "info") -> Outputs:
    """Everything a step changes (EPISODE); the cards, what needs attention and the report's body are the
    environment kit's. Once the episode is over the report shows (how the score adds up, the kit's report, the
    verdict against the champion) in place of what needs attention."""
    observation = session.observation
    rendering = aaos.kit_of(session.meta.env).rendering
    records = session.records
    spec = session.env.spec
    report, attention = "", rendering.attention(observation)
    if session.done and session.score is not None:
        report = formatting.episode_report(spec, records[-1], rendering.report(session.env.state()),
                                           champion_score(session.meta))
        attention = ""
    return {
        "status": formatting.status_bar(spec, session.meta, observation, session.score,
                                        records[-1] if records else None),
        "scenario_help": formatting.scenario_help(spec, session.meta.scenario),
        "model_usage": gr.update(value=formatting.model_usage(session.model_usage),
                                 visible=session.model_usage is not None),
        "attention": attention,
        "cards": composer.role_cards(session),
        "report": gr.update(value=report, visible=bool(report)),
        "queue": formatting.queue_frame(session.queue),
        "message": formatting.message(note, kind),
        "queue_note": session.queue_note,
        **dashboard_tab.render(session),
    }


def full(session: Session, note: str, kind: str, form: composer.Form | None) -> Outputs:
    """FULL: the episode, and the form unless `form` is None (a run's steps leave it as the user has it); with the
    session's lock held, it becomes the session's latest drawing."""
    if form is not None:  # the user acted: a Queue error is answered
        session.queue_note = ""
    session.drawn = {"session": session, **render(session, note, kind)}
    if form is not None:
        session.form_drawn = composer.composer(session, *form)
    session.draws += 1
    return {**session.drawn, **session.form_drawn}


def redraw(session: Session | None) -> Outputs:
    """The session's latest drawing, with the form's if no redraw has sent it yet (the only event that draws the
    episode; see play_tab.signalling) and the Queue error as it is now (a Queue answered after the drawing).
    A drawing is sent once: signals queue up and the first redraw sends the latest drawing, so the later ones would
    only send it again, over what the page showed since (a typed seed's message). Outputs: FULL."""
    if session is None:
        return {}
    with session.lock:
        if session.draws_sent == session.draws:
            return {}
        session.draws_sent = session.draws
        form, session.form_drawn = session.form_drawn, {}
        return {**session.drawn, **form, "queue_note": session.queue_note}


def note(text: str, kind: str) -> Outputs:
    """An update that changes the message only."""
    return {"message": formatting.message(text, kind)}


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
        return note(problem, "error")
    if session is None:
        return {}
    if session.meta.seed == int(seed or 0):
        return note(prose.SEED_SHOWN.format(seed=session.meta.seed), "info")
    return note(prose.SEED_PENDING.format(seed=int(seed or 0), shown=session.meta.seed), "warn")


def reset(request: gr.Request, session: Session | None, env_id: str, task: str, scenario: str,
          seed: float | None, role: str, raw: bool, keep: tuple[str, ...] = ()) -> Outputs:
    """Start a new episode (also the page load), after ending any running agent; a bad choice keeps the current
    episode. With `keep` (names of EpisodeMeta fields), an episode that already has these values is kept and
    nothing changes. Outputs: FULL."""
    session = live(session)
    problem = _seed_problem(seed)
    text, kind = problem or "", "error"
    if problem is None:
        meta = EpisodeMeta(env_id, task, scenario, int(seed or 0))
        try:
            if session is None:
                session = open_session(meta, request)
            else:
                with session.lock:
                    if _playing(session, meta, keep):
                        return {}
                    session.take_over()
                    if not _playing(session, meta, keep):  # the same choice, sent twice, may have started it
                        session.reset(meta)
            text, kind = prose.new_episode(aaos.spec(env_id), formatting.episode_name(env_id, task, scenario),
                                           meta.seed), "ok"
        except ValueError as error:
            text = f"Could not start that episode: {error}"
    session = current(session, request)
    with session.lock:
        session.take_over()  # a run that a refused choice left going ends too: every control change ends it
        return full(session, text, kind, (role, None, raw))


def _playing(session: Session, meta: EpisodeMeta, keep: tuple[str, ...]) -> bool:
    """Whether the session's episode has `meta`'s values of the fields `keep` names (none: never). Gradio's dropdown
    also fires `input` when its list closes or it loses focus without a new choice: no reason for a new episode."""
    return bool(keep) and all(getattr(session.meta, field) == getattr(meta, field) for field in keep)


def choose_episode(request: gr.Request, session: Session | None, env_id: str, task: str, scenario: str,
                   seed: float | None, role: str, raw: bool) -> Outputs:
    """A task or scenario was picked: its episode starts (see `reset`), unless it is the one being played.
    Outputs: FULL."""
    return reset(request, session, env_id, task, scenario, seed, role, raw, keep=("env", "task", "scenario"))


def choose_env(request: gr.Request, session: Session | None, env_id: str, raw: bool) -> Outputs:
    """An environment was picked: unless it is the one being played, a new episode of it with its default task
    and scenario, seed 0, its first role in the form, its tasks and scenarios to choose from, and Step's choice
    worded for its roles. Outputs: FULL, ENV_CHOICES. (The role is no input: the browser may still hold the
    previous environment's, which Gradio would refuse.)"""
    tasks, scenarios = episode_choices(env_id)
    meta = default_meta(env_id)
    spec = aaos.spec(env_id)
    outputs = reset(request, session, env_id, meta.task, meta.scenario, meta.seed, spec.roles[0], raw, keep=("env",))
    if not outputs:
        return {}
    return {**outputs, "task": gr.update(choices=tasks, value=meta.task),
            "scenario": gr.update(choices=scenarios, value=meta.scenario), "seed": meta.seed,
            "others": gr.update(label=prose.others_label(spec))}


def export(request: gr.Request, session: Session | None) -> Outputs:
    """Write the episode's trajectory (JSONL) and action log (CSV). Outputs: session, files, message."""
    session = current(session, request)
    with session.lock:
        if not session.records:
            return {"session": session, "files": None, "message": formatting.message(prose.NOTHING_TO_EXPORT, "error")}
        trajectory, actions = session.export()
        text = f"Exported {session.step_count} steps: the trajectory (JSONL) and the action log (CSV)."
        return {"session": session, "files": gr.update(value=[str(trajectory), str(actions)], visible=True),
                "message": formatting.message(text, "ok")}
