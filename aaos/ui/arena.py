"""The Arena's rounds: two to four agents play one episode (environment, task, scenario, seed), each with its own
environment, in lock step; blind mode's letters and shuffled lanes; the picks a tab records. Plain Python; no gradio.

A local model agent whose runtime is not installed cannot play: its lane replays that model's committed evaluation
episode of the same episode instead, step by step from the steps the run kept
(results/training/<env>/eval_steps.jsonl), or shows its recorded scores where there are no steps, and says so.
Blind mode's shuffle is drawn from the episode and the tab's round number (no global random).
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import aaos
from aaos.agents.llm import LLMConfig
from aaos.core.env import Environment, JointAction, Observation
from aaos.core.policy import Action, Policy
from aaos.core.trajectory import EpisodeMeta, step_record
from aaos.policies import BASELINES, display_name
from aaos.ui import agents, formatting, replays
from aaos.ui import watch_prose as words

Record = dict[str, Any]
AGENTS: tuple[tuple[str, str], ...] = (*agents.AGENTS, (display_name("noop"), "noop"),
                                       (display_name("oracle"), "oracle"))
"""What a lane can play: the Run button's agents, plus the no-op and the oracle as references."""
MIN_LANES, MAX_LANES = 2, 4
DEFAULT_LANES: tuple[str, ...] = ("local-untrained", "local", "heuristic", words.ARENA_NONE)
"""The first round: the untrained model, the fine-tuned model and the champion."""
LOCAL_AGENTS: tuple[str, ...] = ("local-untrained", "local")
"""The agents a committed evaluation (aaos train) played: the untrained and the fine-tuned local model."""
LETTERS = "ABCD"
COLOURS: tuple[str, ...] = ("#6366f1", "#f59e0b", "#10b981", "#ef4444")
"""The race chart's colour of each shown lane, by position (set with every update: the chart keeps the colour
domain it was first drawn with otherwise, and would leave a new round's other agents out)."""
PICK_COLUMNS: tuple[str, ...] = ("Round", "Environment", "Task", "Scenario", "Seed", "Picked", "Picked agent",
                                 "Lanes")
"""A recorded pick, as the tab's table and its CSV download show it."""


def label(agent: str) -> str:
    return dict((name, lbl) for lbl, name in AGENTS).get(agent, agent)


@dataclass
class Lane:
    """One agent in a round. A lane plays live (env and policy, or env and `start`, which gives the local model's
    config on the lane's first step: starting its server is slow, so neither the page nor Start waits for it), or
    shows a committed result (committed), or neither (problem says why). failed: the error that stopped a live
    lane."""

    agent: str
    env: Environment | None = None
    policy: Policy | None = None
    start: Callable[[], LLMConfig] | None = None
    records: list[Record] = field(default_factory=list)
    committed: Mapping[str, Any] | None = None
    problem: str = ""
    failed: str = ""

    @property
    def name(self) -> str:
        return label(self.agent)

    @property
    def live(self) -> bool:
        return self.env is not None and (self.policy is not None or self.start is not None)

    @property
    def done(self) -> bool:
        return not self.live or bool(self.failed) or (bool(self.records) and self.records[-1]["done"])

    @property
    def score(self) -> float | None:
        if self.records:
            return float(self.records[-1]["score"])
        return float(self.committed["score"]) if self.committed is not None else None

    def step(self, meta: EpisodeMeta) -> None:
        """One step with the agent's own joint action; an agent that raises stops its lane, never the round."""
        if self.done or self.env is None:
            return
        try:
            if self.policy is None and self.start is not None:
                self.policy = _policy(self.agent, meta, self.env, self.start())
            assert self.policy is not None  # a live lane has one, or `start` to make it
            joint = self.policy.act(self.env.observation())
        except Exception as error:  # a broken endpoint ends this lane with its message
            self.failed = f"{type(error).__name__}: {error}"
            return
        result = self.env.step(joint)
        self.records.append(step_record(self.env.spec, meta, len(self.records) + 1, joint, result, self.env.state()))

    def close(self) -> None:
        if self.policy is not None:
            self.policy.close()
        self.env = self.policy = self.start = None


class Replayed(Policy):
    """Plays a recorded episode's joint actions again, one a step (a committed evaluation episode of a model whose
    runtime is not installed: the environment is deterministic, so the lane reaches the recorded score)."""

    name = "replayed"

    def __init__(self, records: Sequence[Record]) -> None:
        self.actions = [record["joint_action"] for record in records]
        self.taken = 0

    def act(self, observation: Observation) -> JointAction:
        joint = self.actions[self.taken]
        self.taken += 1
        return joint

    def act_role(self, role: str, view: dict[str, Any]) -> Action:
        raise TypeError("a recorded episode is replayed a whole joint action at a time")


def _policy(agent: str, meta: EpisodeMeta, env: Environment, config: LLMConfig | None) -> Policy:
    policy = agents.build(agent, meta.seed, meta.env, config)
    policy.reset(meta.seed)
    policy.bind(env)
    return policy


def _committed_episodes(env_id: str) -> str:
    models = {replays.committed_model(env_id, agent) for agent in LOCAL_AGENTS}
    shown = sorted({f"{e.meta.task} / {e.meta.scenario} / seed {e.meta.seed}" for e in replays.committed(env_id)
                    if e.policy in models})
    return "; ".join(shown) or "none"


def make_lane(agent: str, meta: EpisodeMeta, config: LLMConfig | Callable[[], LLMConfig] | str | None) -> Lane:
    """A lane for `agent` on `meta`'s episode. `config`: the model's (an OpenAI-compatible endpoint), what starts
    the local model and gives its config (called on the lane's first step), a message saying why the model cannot
    play, or None for a baseline."""
    if isinstance(config, str):
        if agent in LOCAL_AGENTS:
            model = replays.committed_model(meta.env, agent)
            entry = replays.committed_episode(meta, model) if model is not None else None
            if entry is not None and entry.result is not None:
                why = replays.versions_problem(entry.result)
                if entry.records and why is None:
                    env = aaos.make(meta.task, scenario=meta.scenario, seed=meta.seed, env=meta.env)
                    env.reset()
                    return Lane(agent, env, Replayed(entry.records), committed=entry.result,
                                problem=words.ARENA_LOCAL_REPLAYED.format(problem=config))
                other = words.ARENA_OTHER_VERSIONS.format(why=why) if why else ""
                return Lane(agent, committed=entry.result,
                            problem=words.ARENA_LOCAL_COMMITTED.format(problem=config) + other)
            return Lane(agent, problem=words.ARENA_LOCAL_MISSING.format(problem=config,
                                                                       episodes=_committed_episodes(meta.env)))
        return Lane(agent, problem=config)
    if config is None and agent not in BASELINES:
        raise ValueError(f"unknown arena agent {agent!r}")
    env = aaos.make(meta.task, scenario=meta.scenario, seed=meta.seed, env=meta.env)
    env.reset()
    if callable(config):
        return Lane(agent, env, start=config)
    return Lane(agent, env, _policy(agent, meta, env, config))


@dataclass
class Round:
    """One arena episode: its lanes in the order chosen, the order they are shown in (shuffled in blind mode),
    and, in blind mode, the letter the user picked (the names show once there is one)."""

    number: int
    meta: EpisodeMeta
    lanes: list[Lane]
    blind: bool
    order: tuple[int, ...]
    picked: str | None = None

    @property
    def done(self) -> bool:
        return all(lane.done for lane in self.lanes)

    @property
    def step_count(self) -> int:
        return max((len(lane.records) for lane in self.lanes), default=0)

    @property
    def revealed(self) -> bool:
        return not self.blind or self.picked is not None

    def shown(self) -> list[tuple[str, Lane]]:
        """The lanes as shown: (name or letter, lane), in display order."""
        return [(lane.name if self.revealed else f"Agent {LETTERS[position]}", lane)
                for position, lane in enumerate(self.lanes[i] for i in self.order)]

    def letter_of(self, letter: str) -> Lane | None:
        index = LETTERS.find(letter) if len(letter) == 1 else -1
        return self.lanes[self.order[index]] if 0 <= index < len(self.order) else None

    def close(self) -> None:
        for lane in self.lanes:
            lane.close()


def shuffled(meta: EpisodeMeta, number: int, lanes: int) -> tuple[int, ...]:
    """Blind mode's display order, drawn from the episode and the round number."""
    order = list(range(lanes))
    random.Random(f"aaos-arena|{meta.env}|{meta.task}|{meta.scenario}|{meta.seed}|{number}").shuffle(order)
    return tuple(order)


class Arena:
    """A tab's arena: the current round, its run control (generation, stop_requested) and the picks recorded in
    this tab. Events touching it hold `lock`."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.round: Round | None = None
        self.rounds = 0
        self.generation = 0
        self.stop_requested = False
        self.picks: list[dict[str, Any]] = []

    def start(self, meta: EpisodeMeta, lanes: list[Lane], blind: bool) -> Round:
        """A new round replaces the current one (whose policies are closed; a run of it gives way)."""
        if self.round is not None:
            self.round.close()
        self.rounds += 1
        self.generation += 1
        order = shuffled(meta, self.rounds, len(lanes)) if blind else tuple(range(len(lanes)))
        self.round = Round(self.rounds, meta, lanes, blind, order)
        return self.round

    def step(self) -> None:
        """Every lane that still plays takes one step."""
        if self.round is not None:
            for lane in self.round.lanes:
                lane.step(self.round.meta)

    def pick(self, letter: str | None) -> str | None:
        """Record the user's pick of the blind round's best lane and reveal the names; why not, or None."""
        current = self.round
        if current is None or not current.done:
            return words.ARENA_PICK_FIRST
        if current.picked is not None:
            return words.ARENA_PICKED_ALREADY
        chosen = current.letter_of(letter or "")
        if chosen is None:
            return words.ARENA_PICK_NONE
        current.picked = letter
        meta = current.meta
        lanes = " · ".join(f"{LETTERS[i]}: {lane.name} {formatting.score_text(lane.score)}"
                           for i, (_, lane) in enumerate(current.shown()))
        self.picks.append(dict(zip(PICK_COLUMNS, (current.number, meta.env, meta.task, meta.scenario, meta.seed,
                                                  letter, chosen.name, lanes), strict=True)))
        return None

    def close(self) -> None:
        with self.lock:
            self.generation += 1
            if self.round is not None:
                self.round.close()


def race(current: Round) -> dict[str, list[tuple[int, float]]]:
    """The score race: each shown lane's score after every step (0 before the first: S_0 = 0); a committed
    lane's final score at its last step, once the round is over in blind mode (before that it would give the lane
    away)."""
    points: dict[str, list[tuple[int, float]]] = {}
    for name, lane in current.shown():
        if lane.live:
            points[name] = [(0, 0.0), *((r["step"], float(r["score"])) for r in lane.records)]
        elif lane.committed is not None and (current.done or not current.blind):
            points[name] = [(int(lane.committed.get("steps") or 0), float(lane.committed["score"]))]
    return points


def lanes_of(choices: Sequence[str | None]) -> list[str]:
    """The agents of the lanes set (those set to none are left out)."""
    return [c for c in choices if c and c != words.ARENA_NONE]
