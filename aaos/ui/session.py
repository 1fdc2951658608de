"""One browser session's simulation: its environment, queued actions and trajectory. Plain Python; no gradio.

Each browser tab owns one Session (kept in a gr.State). Every callback that touches it holds
`session.lock`, so two events of one tab never interleave on its simulation. An event that starts another episode,
steps by hand or starts a run first ends a running agent and waits for its run to end (`take_over`): Gradio sends a
run's updates in order and resumes it only after sending the last one, so once the run has ended nothing of it can
reach the page after the event's own answer.
"""

from __future__ import annotations

import csv
import functools
import json
import shutil
import tempfile
import threading
import weakref
from pathlib import Path
from typing import Any, Literal

import aaos
from aaos.core.actions import legal_problem
from aaos.core.env import Environment, JointAction, Observation, StepResult
from aaos.core.trajectory import EpisodeMeta, step_record, write_jsonl
from aaos.ui.agents import ModelUsage
from aaos.ui.benchmark import BenchmarkRun, Plan
from aaos.ui.forms import Action

Others = Literal["no_op", "agent"]
"""What roles without a queued action do on Step: nothing, or what the agent chosen for runs decides (a mixed
team: the user plays the queued roles, the agent the rest)."""
CHAMPION = "heuristic"
TAKE_OVER_S = 5.0
"""How long an event that ends a running agent waits for its run to end (a run whose page is gone is never
resumed by Gradio, so it never ends by itself)."""
NOBODY = "nobody (no_op)"
"""Who decided the action of a role that nobody acted for."""
YOU = "you"
"""Who decided a queued action."""
BENCHMARK_STOP_S = 10.0
"""How long closing a session waits for its benchmark to stop (episodes in flight finish, model calls are cancelled)."""
ACTION_LOG_COLUMNS: tuple[str, ...] = ("step", "role", "decided_by", "action_type", "payload", "status", "reason",
                                       "message")


@functools.cache
def default_meta(env_id: str) -> EpisodeMeta:
    """The environment's own default task and scenario, seed 0."""
    observation = aaos.make(env=env_id).reset()
    return EpisodeMeta(env_id, observation["task"], observation["scenario_id"], 0)


@functools.lru_cache(maxsize=256)
def champion_score(meta: EpisodeMeta) -> float | None:
    """The champion's final score on the episode of `meta` (same environment, task, scenario and seed): what the
    end-of-episode report judges a score against; None for an environment without a champion. The champion is
    deterministic, so one run per episode is cached."""
    if not aaos.envs.has_champion(meta.env):
        return None
    env = aaos.make(meta.task, scenario=meta.scenario, seed=meta.seed, env=meta.env)
    champion = aaos.policies.make(CHAMPION, env=meta.env)
    observation = env.reset()
    while True:
        result = env.step(champion.act(observation))
        if result.done:
            return float(result.info["score"])
        observation = result.observation


class SessionClosed(RuntimeError):
    """The session's simulation was freed (its tab closed or it expired)."""


class Session:
    """An episode played in one browser tab.

    meta: the episode's environment, task, scenario and seed. queue: role -> action for the next Step.
    records: one trajectory record per step taken. initial_scores: the reward components right after reset
    (step 0 of the charts). generation: changes when a running agent must give way silently (a reset or
    another run); agent: the generation of the running agent, if any; stop_requested: Stop was pressed; changed:
    notified (with the lock) when a run must give way or has ended.
    model_usage: the model's accounting in the current episode's run. benchmark: this tab's running or latest
    benchmark (its plan holds the OpenAI-compatible model's config, token included, if it used one).
    drawn: the episode's latest drawing (episode.full's outputs but the form), which the redraw sends; form_drawn:
    the form's latest drawing until a redraw sends it (a run's steps leave the form to the user); draws: how many
    drawings there have been (the signal to redraw); draws_sent: the drawing the redraw last sent; form_shown: the
    role, action and raw-JSON switch the form was last composed for; queue_note: why the last Queue failed (HTML, ""
    for none), shown under the Queue button until the user acts again (a run's steps keep it).
    """

    def __init__(self, meta: EpisodeMeta) -> None:
        self.lock = threading.Lock()
        self.changed = threading.Condition(self.lock)
        self.meta = meta
        self.generation = 0
        self.agent: int | None = None
        self.stop_requested = False
        self.closed = False
        self.queue: dict[str, Action] = {}
        self.records: list[dict[str, Any]] = []
        self.initial_scores: dict[str, float | None] = {}
        self.model_usage: ModelUsage | None = None
        self.drawn: dict[str, Any] = {}
        self.form_drawn: dict[str, Any] = {}
        self.form_shown: tuple[str, str, bool] | None = None
        self.queue_note = ""
        self.draws = 0
        self.draws_sent = 0
        self.benchmark: BenchmarkRun | None = None
        self._workdir: Path | None = None
        self._remove_workdir: weakref.finalize | None = None
        self._env: Environment | None = None
        self.reset(meta)

    @property
    def env(self) -> Environment:
        if self._env is None:
            raise SessionClosed("this session was closed; reload the page for a new one")
        return self._env

    @property
    def observation(self) -> Observation:
        return self.env.observation()

    @property
    def step_count(self) -> int:
        return len(self.records)

    @property
    def done(self) -> bool:
        return bool(self.records) and self.records[-1]["done"]

    @property
    def score(self) -> float | None:
        """The graded composite after the last step (the episode score once done); None before any step."""
        return self.records[-1]["score"] if self.records else None

    def reset(self, meta: EpisodeMeta) -> None:
        """Start a new episode; raises ValueError (and keeps the current episode) if `meta` is not playable."""
        env = aaos.make(meta.task, scenario=meta.scenario, seed=meta.seed, env=meta.env)
        observation = env.reset()
        self._env = env
        self.meta = meta
        self.interrupt()
        self.queue.clear()
        self.queue_note = ""
        self.records.clear()
        self.model_usage = None
        self.initial_scores = dict(observation.get("partial_scores", {}))

    def interrupt(self) -> int:
        """Make any running agent give way; returns the new generation."""
        self.generation += 1
        return self.generation

    def take_over(self) -> None:
        """With the lock held: make a running agent give way and wait until its run has ended (the lock is released
        while waiting), so that its last update reaches the page before the caller's; TAKE_OVER_S at most."""
        if self.agent is None:
            return
        self.interrupt()
        self.changed.notify_all()
        self.changed.wait_for(lambda: self.agent is None, TAKE_OVER_S)

    def start_agent(self) -> int:
        """With the lock held: a new agent run takes over (a running one gives way first); returns its
        generation."""
        self.take_over()
        self.stop_requested = False
        self.agent = self.interrupt()
        return self.agent

    def end_agent(self, run: int) -> None:
        """With the lock held: the run of generation `run` has ended."""
        if self.agent == run:
            self.agent = None
            self.changed.notify_all()

    def pause(self, run: int, seconds: float) -> None:
        """With the lock held: wait `seconds` between a run's steps, or less if the run must give way."""
        self.changed.wait_for(lambda: self.closed or self.generation != run or self.stop_requested, seconds)

    def queue_action(self, role: str, action: Action) -> str | None:
        """Queue `action` for `role` (replacing any queued one); returns why not, or None once queued."""
        if self.done:
            return "The episode is over: press Reset to start a new one."
        if role not in self.env.spec.roles:
            return f"Unknown role '{role}'; roles are: {', '.join(self.env.spec.roles)}."
        parsed = legal_problem(self.env.spec, role, action, self.env.legal_actions(role))
        if isinstance(parsed, str):
            return parsed
        self.queue[role] = {"action_type": parsed.action_type, "payload": parsed.payload.model_dump()}
        return None

    def step(self, decided: JointAction | None = None, by: str = NOBODY) -> StepResult:
        """Take one step with the queued actions (decided by the user) and, for the other roles, `decided`'s (by
        `by`; roles in neither do no_op) and record it with who decided each role's action (`decided_by`); the
        queue is emptied. Raises aaos.EpisodeDone once done."""
        env = self.env
        joint = {**(decided or {}), **self.queue}
        decided_by = {role: YOU if role in self.queue else by if role in (decided or {}) else NOBODY
                      for role in env.spec.roles}
        seen = env.observation()  # what the joint action was chosen from (step() builds a new one)
        result = env.step(joint)
        record = step_record(env.spec, self.meta, self.step_count + 1, joint, result, env.state(), seen)
        record["decided_by"] = decided_by
        self.records.append(record)
        self.queue.clear()
        return result

    def workdir(self) -> Path:
        """This session's own folder for downloads: removed when the session closes, or else when it is garbage
        collected or the process exits (a session dropped without close() leaves nothing in the temp folder)."""
        if self._workdir is None:
            self._workdir = Path(tempfile.mkdtemp(prefix="aaos-ui-"))
            self._remove_workdir = weakref.finalize(self, shutil.rmtree, self._workdir, ignore_errors=True)
        return self._workdir

    def export(self) -> tuple[Path, Path]:
        """Write the trajectory (JSONL) and the action log (CSV: every role's action result at every step,
        no-ops included, oldest first, numbered as the trajectory's steps) to this session's folder."""
        m = self.meta
        stem = f"aaos_{m.env}_{m.task}_{Path(m.scenario).stem}_seed{m.seed}_step{self.step_count}"
        trajectory = write_jsonl(self.records, self.workdir() / f"{stem}_trajectory.jsonl")
        actions = self.workdir() / f"{stem}_actions.csv"
        with actions.open("w", newline="", encoding="utf-8") as out:
            writer = csv.DictWriter(out, fieldnames=ACTION_LOG_COLUMNS, extrasaction="ignore")
            writer.writeheader()
            for record in self.records:
                for result in record["action_results"].values():
                    writer.writerow({**result, "step": record["step"],
                                     "decided_by": record["decided_by"].get(result["role"], NOBODY),
                                     "payload": json.dumps(result.get("payload", {}), sort_keys=True)})
        return trajectory, actions

    @property
    def benchmarking(self) -> bool:
        return self.benchmark is not None and not self.benchmark.done.is_set()

    def start_benchmark(self, plan: Plan) -> BenchmarkRun:
        """Start a benchmark writing into a new folder of this session's; it runs in its own thread."""
        runs = sum(1 for _ in self.workdir().glob("benchmark-*"))
        self.benchmark = BenchmarkRun(plan, self.workdir() / f"benchmark-{runs + 1}").start()
        return self.benchmark

    def close(self) -> None:
        """Free the simulation, stop any benchmark and remove the session's files (the tab closed or the session
        expired)."""
        with self.lock:
            self.closed = True
            self.changed.notify_all()
            self._env = None
            if self.benchmark is not None:
                self.benchmark.stop()
                self.benchmark.done.wait(BENCHMARK_STOP_S)  # before its folder goes
                self.benchmark = None  # nor does its plan (and any model token) outlive the tab
            self.queue.clear()
            self.records.clear()
            if self._remove_workdir is not None:
                self._remove_workdir()
                self._workdir = self._remove_workdir = None
