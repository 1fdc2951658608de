"""The Space's event handlers. Each takes the tab's Session and an event's inputs and returns the values
of the event's outputs in the order named by DASHBOARD, COMPOSER and the handler's docstring; the layout
wires components to these names and nothing else.

User mistakes (a bad payload, invalid JSON, a seed out of range, stepping a finished episode, an incomplete
model or benchmark setting) come back as a readable message and change nothing; they never raise.

A model's API token arrives as an input of the two events that use it (Run, Run benchmark) and lives only in the
LLMConfig of that tab's run or benchmark; no handler returns, logs or writes it.
"""

from __future__ import annotations

import functools
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, wait
from typing import Any, TypeVar

import gradio as gr

import aaos
from aaos.agents.base import Policy
from aaos.agents.llm import LLMConfig
from aaos.core.trajectory import EpisodeMeta
from aaos.ui import agents, benchmark, charts, formatting, forms
from aaos.ui.benchmark import BenchmarkRun
from aaos.ui.session import Others, Session, default_meta

SLOTS = forms.slot_count([aaos.spec(env_id) for env_id in aaos.env_ids()])
"""Payload field slots in the action form: each slot has a dropdown (choices) and a textbox (free text)."""
DASHBOARD: tuple[str, ...] = ("status", "model_usage", "hints", "cards", "world", "timeline", "reward_plot",
                              "delivery_plot", "oversight", "actions", "queue", "message")
"""What every step re-renders, in output order."""
CHOICE_SLOTS: tuple[str, ...] = tuple(f"choice_{i}" for i in range(SLOTS))
TEXT_SLOTS: tuple[str, ...] = tuple(f"text_{i}" for i in range(SLOTS))
COMPOSER: tuple[str, ...] = ("action_type", "action_help", *CHOICE_SLOTS, *TEXT_SLOTS, "raw_json")
"""The action form, in output order."""
BENCHMARK: tuple[str, ...] = ("bench_status", "leaderboard", "bench_chart", "gate", "bench_files")
"""What a benchmark run renders, in output order."""
POLL_S = 0.2
"""How often a run waiting on a model (or on the local model's start) looks for Stop, a Reset and the time."""
WAIT_NOTE_S = 1.0
"""A wait longer than this shows a note saying what the run waits for, updated every second."""
BENCH_POLL_S = 0.5
"""How often a running benchmark's progress is shown."""
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
        gr.update(value=formatting.model_usage(session.model_usage), visible=session.model_usage is not None),
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


def bench_choices(env_id: str) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """The benchmark's (label, id) choices of an environment's tasks and scenarios."""
    return episode_choices(env_id)[0], benchmark.scenario_choices(env_id)


def choose_env(env_id: str) -> Outputs:
    """An environment was picked: its tasks and scenarios, defaults selected, for the episode and the benchmark
    (the first task, every scenario). Outputs: task, scenario, bench_tasks, bench_scenarios."""
    tasks, scenarios = episode_choices(env_id)
    bench_tasks, bench_scenarios = bench_choices(env_id)
    meta = default_meta(env_id)
    return (gr.update(choices=tasks, value=meta.task), gr.update(choices=scenarios, value=meta.scenario),
            gr.update(choices=bench_tasks, value=[bench_tasks[0][1]]),
            gr.update(choices=bench_scenarios, value=[value for _, value in bench_scenarios]))


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


def choose_agent(name: str) -> Outputs:
    """An agent was picked: what it is (or why it cannot run here); Model settings open for a model.
    Outputs: agent_help, model_box."""
    body, kind = agents.describe(name)
    return formatting.note(body, kind), gr.update(open=True) if name in agents.MODEL_AGENTS else gr.update()


def _note_only(session: Session, note: str, kind: str) -> Outputs:
    """Outputs of a run (session, DASHBOARD, COMPOSER) that change the message only."""
    updates: list[Any] = [gr.update()] * (len(DASHBOARD) + len(COMPOSER))
    updates[DASHBOARD.index("message")] = formatting.message(note, kind)
    return (session, *updates)


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
            yield _note_only(session, f"{what}… {seen[0]} s. {then}", "info")


def _model_config(name: str, mode: str, model: str | None, base_url: str | None,
                  token: str | None) -> LLMConfig | str | None:
    """The model an agent needs: the endpoint's config, None for a baseline (and for the local model, whose
    server gives it once started), or a message saying what is missing."""
    if name == "openai":
        return agents.endpoint(model, base_url, token, mode)
    return agents.local_problem() if name == "local" else None


def run_agent(request: gr.Request, session: Session | None, name: str, delay: float, role: str,
              action_type: str | None, raw: bool, mode: str = "per_role", model: str | None = None,
              base_url: str | None = None, token: str | None = None) -> Iterator[Outputs]:
    """Let an agent play the rest of the episode (a new one if it is over), yielding after every step; a model
    step runs in a thread while the run shows how long it has been waiting. Ends with the episode or on Stop
    (checked between steps: a step in flight finishes), with a last update saying so; gives way silently to a
    Reset or another Run, and ends when the tab closes. The policy is closed when the run ends. mode, model,
    base_url and token are the Model settings (mode serves the local model too). Outputs: session, DASHBOARD,
    COMPOSER."""
    session = _live(session) or _expired(request)
    config = _model_config(name, mode, model, base_url, token)
    if isinstance(config, str):
        yield _note_only(session, config, "error")
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
        if name == "local":
            starting = _in_thread(lambda: agents.start_local("joint" if mode == "joint" else "per_role"))
            yield from _wait(session, run, starting, f"Starting the {agents.LOCAL_LABEL} server (first use only)")
            if _superseded(session, run):
                return
            try:
                config = starting.result()
            except RuntimeError as error:
                yield _note_only(session, f"The local model could not start: {error}", "error")
                return
        policy = agents.build(name, seed, env, config)
        policy.reset(seed)
        yield from _play(session, run, policy, config, label, max(0.0, float(delay or 0)),
                          (role, action_type, raw))
    finally:
        with session.lock:
            if session.agent == run:
                session.agent = None


Form = tuple[str, str | None, bool]
"""The action form's role, action type and raw-JSON switch, which every run update re-renders."""


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
                    note = f"Agent stopped at step {asked}. Step manually, Run again or Reset."
                    outputs = (session, *dashboard(session, note, "info"), *composer(session, *form))
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
                note, kind = _agent_step(session, pending, label)
                after = agents.call_stats(policy)
                if config is not None and before is not None and after is not None:
                    session.model_usage = agents.usage(config, before, after, time.monotonic() - started)
                outputs = (session, *dashboard(session, note, kind), *composer(session, *form))
                finished = session.done or kind == "error"
            yield outputs
            if finished:
                return
            time.sleep(delay)
    finally:
        _close_after(policy, pending)


def _agent_step(session: Session, decision: Future[Any], label: str) -> tuple[str, str]:
    """Take the step the policy decided; the message and its kind ("error" ends the run)."""
    try:
        joint = decision.result()
    except Exception as error:  # a broken endpoint or answer ends the run with a message, never a traceback
        return (f"{label} failed while choosing step {session.step_count + 1}: {str(error) or type(error).__name__}. "
                "Step manually, Run again or Reset."), "error"
    session.step(joint)
    return _step_note(session, f"{label} playing. ")


def _close_after(policy: Policy, pending: Future[Any] | None) -> None:
    """Close the policy once the step in flight (if any) is done, without waiting for it here."""
    if pending is None:
        policy.close()
    else:
        pending.add_done_callback(lambda _: policy.close())


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


# Benchmark ---------------------------------------------------------------------------------------------

def _bench_progress(run: BenchmarkRun) -> str:
    elapsed = f"{time.monotonic() - run.started:.0f} s"
    if run.stopping:
        body = f"Stopping after the episodes in flight… {elapsed}"
    elif run.state != "running":
        body = f"Starting the {agents.LOCAL_LABEL} server (first use only)… {elapsed}"
    elif run.last is None:
        body = f"Running… {elapsed}"
    else:
        last = run.last
        score = f"score {last['score']:.3f}" if last.get("error") is None else "failed"
        body = (f"Running… {elapsed}. Latest: {benchmark.display_name(last['policy'])} on "
                f"{formatting.humanize(last['task'])}, {last['scenario']}, seed {last['seed']}: {score}.")
    return formatting.bench_status(run.finished, run.total, body)


def _bench_summary(run: BenchmarkRun) -> str:
    episodes = sum(row["episodes"] for row in run.rows)
    if run.state == "failed":
        body, kind = f"The benchmark failed: {run.error}", "error"
    elif run.state == "stopped":
        kept = f"the results cover the {episodes} finished episodes" if episodes else "no episode had finished"
        body, kind = f"Stopped after {run.elapsed_s:.1f} s: {kept}.", "info"
    else:
        body, kind = f"Done: {episodes} episodes in {run.elapsed_s:.1f} s. Download the results on the right.", "ok"
    if run.failures:
        first = run.failures[0]
        body += (f" {len(run.failures)} episode(s) failed, the first ({benchmark.display_name(first['policy'])} on "
                 f"{first['task']}, {first['scenario']}) with: {first['error']}")
        kind = "error"
    return formatting.bench_status(run.finished, run.total, body, kind)


def _gate(run: BenchmarkRun, candidate: str) -> str:
    return formatting.gate_verdict(*benchmark.gate_for(run, candidate)) if run.rows else ""


def _bench_results(run: BenchmarkRun, candidate: str) -> Outputs:
    """A finished benchmark in BENCHMARK order."""
    ranked = benchmark.ranked(run.rows)
    files = [str(path) for path in run.files()]
    return (_bench_summary(run), formatting.leaderboard(ranked),
            charts.leaderboard_figure(ranked) if ranked else None, _gate(run, candidate),
            gr.update(value=files or None, visible=bool(files)))


def run_benchmark(request: gr.Request, session: Session | None, env_id: str, policies: list[str] | None,
                  tasks: list[str] | None, scenarios: list[str] | None, splits: list[str] | None,
                  episodes: float | None, concurrency: float | None, candidate: str, mode: str,
                  model: str | None, base_url: str | None, token: str | None) -> Iterator[Outputs]:
    """Benchmark the ticked policies on the ticked tasks, scenarios and seed splits in a worker thread, into a new
    folder of the tab's; stream its progress, then show the leaderboard, the chart, the gate verdict for
    `candidate` and the downloads. Bad settings (or a benchmark already running in this tab) give a message and
    change nothing. Outputs: session, BENCHMARK."""
    session = _live(session) or _expired(request)
    policies = policies or []
    endpoint = agents.endpoint(model, base_url, token, mode) if "openai" in policies else None
    plan = benchmark.make_plan(env_id, policies, tasks or [], scenarios or [], splits or [], episodes, concurrency,
                               mode, endpoint)
    unchanged = tuple(gr.update() for _ in BENCHMARK[1:])
    with session.lock:
        if session.benchmarking:
            plan = "A benchmark is already running in this tab: wait for it, or press Stop."
        elif isinstance(plan, benchmark.Plan):
            run = session.start_benchmark(plan)
    if isinstance(plan, str):
        yield session, formatting.bench_status(0, 0, plan, "error"), *unchanged
        return
    yield session, _bench_progress(run), formatting.leaderboard([]), None, "", gr.update(value=None, visible=False)
    while not run.done.wait(BENCH_POLL_S):
        yield session, _bench_progress(run), *unchanged
    yield session, *_bench_results(run, candidate)


def stop_benchmark(session: Session | None) -> Outputs:
    """Stop this tab's benchmark after the episodes in flight; the run shows what it kept in its last update.
    Outputs: bench_status (unchanged unless no benchmark is running)."""
    session = _live(session)
    run = session.benchmark if session is not None else None
    if run is None or run.done.is_set():
        return (formatting.bench_status(0, 0, "No benchmark is running: press Run benchmark to start one."),)
    run.stop()
    return (gr.update(),)


def choose_candidate(session: Session | None, candidate: str) -> Outputs:
    """The gate candidate changed: the verdict from the latest benchmark, if it has finished. Outputs: gate."""
    session = _live(session)
    run = session.benchmark if session is not None else None
    if run is None or not run.done.is_set():
        return (gr.update(),)
    return (_gate(run, candidate),)
