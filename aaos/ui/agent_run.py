"""Steps and agent runs: Step (the queued actions, the other roles doing nothing or decided by the chosen agent — a
mixed team), Run (the agent plays the rest of the episode, streaming step by step, any queued actions still going
with the next step) and Stop.

A step with an agent is a run of one step. A run's policy decides in a thread, outside the session's lock, while
the run says what it waits for; the step is then taken under the lock, each role's action recorded with who
decided it (you, the agent, or nobody). Every event that steps or starts a run first ends a running agent
(Session.take_over), and a run gives way silently to it.

A model's API token arrives as an input of the events that use it and lives only in the LLMConfig of that tab's
run; no handler returns, logs or writes it.
"""

from __future__ import annotations

import dataclasses
import functools
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, wait
from typing import Any, TypeVar

import gradio as gr

from aaos.agents.llm import LLMConfig
from aaos.core.html import humanize
from aaos.core.policy import Policy
from aaos.ui import agents, composer, formatting, prose
from aaos.ui.episode import full, note
from aaos.ui.session import Others, Session
from aaos.ui.wiring import Outputs, current, live

DEFAULT_AGENT = agents.AGENTS[0][1]
ENDPOINT_SETTINGS: tuple[str, ...] = ("model_name", "base_url", "token")
"""The Model settings of an OpenAI-compatible model's endpoint."""
MODEL_SETTINGS: tuple[str, ...] = ("model_box", "mode", *ENDPOINT_SETTINGS)
"""The Model settings box and its fields."""
POLL_S = 0.2
"""How often a run waiting on a model (or on the local model's start) looks for Stop, a Reset and the time."""
WAIT_NOTE_S = 1.0
"""A wait longer than this shows a note saying what the run waits for, updated every second."""
T = TypeVar("T")


def choose_agent(name: str, env: str) -> Outputs:
    """An agent (or the environment, whose local model may be fine-tuned) was picked: what the agent is, or why it
    cannot run here, and the Model settings it reads. An OpenAI-compatible model opens them all; a local model
    shows the Mode alone where it reads it, and hides the box where it reads none; a baseline leaves them as they
    are, for the Benchmark's OpenAI-compatible model. Outputs: agent_help, MODEL_SETTINGS."""
    body, kind = agents.describe(name)
    local = name in agents.LOCAL_AGENTS
    mode = agents.reads_mode(name, env) or name not in agents.MODEL_AGENTS
    opened = {"open": True} if name in agents.MODEL_AGENTS else {}
    return {"agent_help": formatting.note(body, kind),
            "model_box": gr.update(visible=mode or not local, **opened), "mode": gr.update(visible=mode),
            **{field: gr.update(visible=not local) for field in ENDPOINT_SETTINGS}}


def step_note(session: Session, prefix: str) -> tuple[str, str]:
    """The message after a step: its number (the status bar's, the logs' and the timeline's), reward and score,
    the actions that were rejected or applied without effect (a no-op that did nothing is not one), and the end of
    the episode. Its kind is "error" if an action was rejected, "warn" if one did nothing, else "ok"."""
    last = session.records[-1]
    results = last["action_results"].values()
    text = f"{prefix}Step {last['step']}: reward {last['reward']:.3f}, score {last['score']:.3f}."
    kind = "ok"
    noop = session.env.spec.noop_action
    for status, title, flagged in (("no_effect", "Did nothing", "warn"), ("rejected", "Rejected", "error")):
        found = [f"{humanize(r['role'])}: {r['message']}" for r in results if r["status"] == status
                 and not (status == "no_effect" and r["action_type"] == noop)]  # doing nothing is a no-op's job
        if found:
            text += f" {title}: " + "; ".join(found) + "."
            kind = flagged
    if last["done"]:
        text += prose.EPISODE_DONE.format(score=last["score"])
    return text, kind


def step(request: gr.Request, session: Session | None, others: Others, role: str, action_type: str | None,
         raw: bool, name: str = DEFAULT_AGENT, mode: str = "per_role", model: str | None = None,
         base_url: str | None = None, token: str | None = None) -> Iterator[Outputs]:
    """Step with the queued actions; the other roles do no_op, or (others == "agent") what the agent chosen
    under Agent run decides, with its Model settings. A running agent ends first. Outputs: FULL."""
    session = current(session, request)
    form = (role, action_type, raw)
    if others == "agent":
        yield from play(session, name, 0.0, form, mode, model, base_url, token, steps=1)
        return
    with session.lock:
        session.take_over()
        if session.done:
            outputs = full(session, prose.EPISODE_OVER, "error", form)
        else:
            session.step()
            outputs = full(session, *step_note(session, ""), form)
    yield outputs


def run_agent(request: gr.Request, session: Session | None, name: str, delay: float, mode: str = "per_role",
              model: str | None = None, base_url: str | None = None, token: str | None = None) -> Iterator[Outputs]:
    """Let an agent play the rest of the episode (a new one if it is over), yielding after every step; actions
    queued meanwhile go with its next step (a mixed team, live: its steps leave the form as the user has it).
    mode, model, base_url and token are the Model settings (mode serves the local model too). Outputs: FULL but
    the form."""
    session = current(session, request)
    yield from play(session, name, max(0.0, float(delay or 0)), None, mode, model, base_url, token, steps=None)


def _model_config(name: str, mode: str, model: str | None, base_url: str | None,
                  token: str | None) -> LLMConfig | str | None:
    """The model an agent needs: the endpoint's config, None for a baseline (and for the local model, whose
    server gives it once started), or a message saying what is missing."""
    if name == "openai":
        return agents.endpoint(model, base_url, token, mode)
    return agents.local_problem() if name in agents.LOCAL_AGENTS else None


def play(session: Session, name: str, delay: float, form: composer.Form | None, mode: str, model: str | None,
         base_url: str | None, token: str | None, steps: int | None) -> Iterator[Outputs]:
    """The agent `name` plays `steps` steps (None: to the end of the episode, restarting a finished one), the
    queued actions going with each step. Ends with the episode, after `steps`, on Stop (checked between steps: a
    step in flight finishes) with a last update saying so, or silently when another event takes over or the tab
    closes. The policy is closed when the run ends."""
    config = _model_config(name, mode, model, base_url, token)
    if isinstance(config, str):
        yield note(config, "error")
        return
    label = config.model if config is not None else agents.label(name)
    with session.lock:
        over = session.done and steps is not None
        if session.done and steps is None:
            session.reset(session.meta)
        run = session.start_agent()
        session.model_usage = None
        seed, env = session.meta.seed, session.meta.env
        if over:
            session.end_agent(run)
            outputs = full(session, prose.EPISODE_OVER, "error", form)
    if over:
        yield outputs
        return
    try:
        if name in agents.LOCAL_AGENTS:
            chosen = "joint" if mode == "joint" else "per_role"
            starting = _in_thread(lambda: agents.start_local(name, env, chosen))
            yield from _wait(session, run, starting, prose.LOCAL_STARTING.format(label=agents.label(name)))
            if _superseded(session, run):
                return
            try:
                config = starting.result()
            except RuntimeError as error:
                yield note(f"The local model could not start: {error}", "error")
                return
        try:
            policy = agents.build(name, seed, env, config)
        except ValueError as error:  # a policy the environment does not offer (the champion of one without)
            yield note(str(error), "error")
            return
        policy.reset(seed)
        yield from _steps(session, run, policy, config, label, delay, form, steps)
    finally:
        with session.lock:
            session.end_agent(run)


def _superseded(session: Session, run: int) -> bool:
    """The run must give way: its tab closed, or another event took over."""
    return session.closed or session.generation != run


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
            yield note(f"{what}… {seen[0]} s. {then}", "info")


def _steps(session: Session, run: int, policy: Policy, config: LLMConfig | None, label: str, delay: float,
           form: composer.Form | None, steps: int | None) -> Iterator[Outputs]:
    """The steps of `play`; the policy is closed when this ends, once any step in flight is done."""
    pending: Future[Any] | None = None
    prefix = f"{label} playing. " if steps is None else f"{label} decided the roles without a queued action. "
    taken = 0
    try:
        while steps is None or taken < steps:
            with session.lock:
                if _superseded(session, run) or session.done:  # superseded, or the episode ended
                    return
                stopping = session.stop_requested
                observation, asked = session.observation, session.step_count
                if stopping:
                    outputs = full(session, f"Agent stopped at step {asked}. Step manually, Run again or Reset.",
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
                after = agents.call_stats(policy)
                if config is not None and before is not None and after is not None:
                    session.model_usage = agents.usage(config, before, after, time.monotonic() - started)
                text, kind, going = _agent_step(session, pending, label, prefix, config.api_key if config else "")
                outputs = full(session, text, kind, form)
            yield outputs
            taken += 1
            if not going:
                return
            if steps is None or taken < steps:
                with session.lock:
                    session.pause(run, delay)
    finally:
        _close_after(policy, pending)


def _agent_step(session: Session, decision: Future[Any], label: str, prefix: str,
                token: str) -> tuple[str, str, bool]:
    """Take the step the policy decided (queued actions replacing its choice for their roles), unless its model
    decided none of it; the message, its kind and whether the run goes on. A model failure is said in the message
    (warning style) with its error and a fix; a step whose every action fell back is not taken and stops the run
    (so that the champion's play never passes for the model's), as do a policy that raised and a rejected
    action."""
    try:
        joint = decision.result()
    except Exception as error:  # a broken endpoint or answer ends the run with a message, never a traceback
        return (f"{label} failed while choosing step {session.step_count + 1}: {str(error) or type(error).__name__}. "
                "Step manually, Run again or Reset."), "error", False
    usage = session.model_usage
    failure = agents.step_failure(usage, token) if usage is not None else None
    if usage is not None and failure is not None and failure.total:
        session.model_usage = dataclasses.replace(usage, taken=False)
        return prose.MODEL_FAILED.format(label=label, step=session.step_count + 1, actions=failure.actions,
                                         error=failure.error, hint=failure.hint), "warn", False
    session.step(joint, label)
    text, kind = step_note(session, prefix)
    if failure is not None:
        text += prose.MODEL_FELL_BACK.format(count=failure.fell_back, actions=failure.actions, error=failure.error,
                                             hint=failure.hint)
        kind = "error" if kind == "error" else "warn"
    return text, kind, not session.done and kind != "error"


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
        return note(prose.NO_AGENT, "info")
    with session.lock:
        session.stop_requested = True
        session.changed.notify_all()
    return {}
