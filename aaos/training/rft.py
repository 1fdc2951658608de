"""Rejection-sampling fine-tuning (expert iteration): the environment's reward picks the answers to train on.

The model plays an episode greedily, as it is evaluated. At every state it reaches, `samples` answers are drawn
from it at a temperature, and each distinct one, the model's greedy answer and the champion's are scored by the
rollout reward (aaos.training.rollout: the answer is applied, the champion plays on to the horizon, the score
there). The row's answer is the best of them, the kept one's on a tie (`keep`):

- "champion": where the environment says a sampled answer beats the teacher, the model learns its own better
  answer; elsewhere it learns the champion's, as in DAgger (aaos.training.dagger), so the stage never trains on an
  answer the reward ranks below the champion's.
- "learner": the model keeps its own greedy answer unless the champion's or a sample scores more. The champion
  makes up for a wasted step when it plays on, so its answer often only ties the model's; those ties teach the
  champion's habits (on chief_of_staff, a check-in after every misaligned booking) that a small model copies where
  they do not apply. Here only what the reward ranks higher is taught.

What a round trains on (the preset's rft_data): "mixed", its rows joined to the SFT and DAgger rows, of which
they are a small share; or "gains", only its rows at the states where the best answer out-scores the model's own
greedy one (`gaining_rows`): the states where the reward says the model's own answer loses, chosen by the reward
alone. Where the model already plays the best answer, a row teaches what it does anyway.

Each state is logged (`StateLog`): the mean reward of the samples, the champion's, the greedy answer's and the
best's, so a run shows whether the sampled reward rises round after round and how often the model's own answers
(sampled or greedy) beat the teacher.
"""

from __future__ import annotations

import copy
import itertools
import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import aaos
from aaos.agents.llm import Mode
from aaos.core.env import Environment, JointAction, Observation
from aaos.core.trajectory import EpisodeMeta, state_hash
from aaos.policies import PolicySpec, build_policy
from aaos.training.dagger import labelled_rows
from aaos.training.episodes import plain
from aaos.training.rollout import Rollout
from aaos.training.snapshot import make_snapshot


@dataclass(frozen=True)
class StateLog:
    """What the sampling found at one state."""

    scenario: str
    seed: int
    step: int
    sampled: float
    """The mean rollout reward of the sampled answers."""
    champion: float
    greedy: float
    best: float
    source: str
    """Whose answer the row holds: "champion", "learner" (its greedy answer) or "sample"."""

    @property
    def gains(self) -> bool:
        """The best answer out-scores the model's greedy one: the model's own answer loses here."""
        return self.best > self.greedy


@dataclass(frozen=True)
class ScoredState:
    """One state the greedy learner reached, with every answer considered there scored by the rollout reward."""

    env: Environment
    """The environment at the state (the learner's answer is applied after the consumer has read it)."""
    observation: Observation
    """A plain copy of the observation, which the step cannot change."""
    step: int
    champion: JointAction
    greedy: JointAction
    samples: list[JointAction]
    rewards: dict[str, float]
    """The rollout reward of each distinct answer, by its key (answer_key)."""

    def reward(self, joint: JointAction) -> float:
        return self.rewards[answer_key(joint)]

    def best(self, kept: JointAction) -> JointAction:
        """The best-rewarded of the champion's, the greedy and the sampled answers; `kept` on a tie."""
        best = max((self.champion, self.greedy, *self.samples), key=self.reward)
        return kept if self.reward(best) <= self.reward(kept) else best

    def log(self, meta: EpisodeMeta, best: JointAction) -> StateLog:
        sampled = sum(map(self.reward, self.samples)) / len(self.samples) if self.samples else 0.0
        source = "champion" if best is self.champion else "learner" if best is self.greedy else "sample"
        return StateLog(meta.scenario, meta.seed, self.step, sampled, self.reward(self.champion),
                        self.reward(self.greedy), self.reward(best), source)


def rollout_reward(snapshot: dict[str, Any], joint: JointAction) -> float:
    """The rollout reward of answering `joint` (every role's action) at the snapshot."""
    rollout = Rollout(snapshot, None)
    rollout.act(joint)
    return rollout.finish()


def answer_key(joint: JointAction) -> str:
    return json.dumps(joint, sort_keys=True)


def scored_states(meta: EpisodeMeta, learner: PolicySpec, samplers: Sequence[PolicySpec]) -> Iterator[ScoredState]:
    """Play one episode with the greedy `learner`, yielding each state it reaches with the champion's, the learner's
    and the samplers' answers there scored; the learner's answer is played once the consumer has read the state."""
    env = aaos.make(meta.task, scenario=meta.scenario, seed=meta.seed, env=meta.env)
    champion = aaos.policies.make("heuristic", seed=meta.seed, env=meta.env)
    model = build_policy(learner, meta.env, meta.seed)
    sampling = [build_policy(spec, meta.env, meta.seed) for spec in samplers]
    observation = env.reset()
    for policy in (champion, model, *sampling):
        policy.reset(meta.seed)
        policy.bind(env)
    taken: list[JointAction] = []
    try:
        for step in itertools.count():
            seen = plain(observation)
            snapshot = make_snapshot(meta, taken, state_hash(env.state()))
            label, greedy = champion.act(observation), model.act(observation)
            samples = [policy.act(observation) for policy in sampling]
            rewards: dict[str, float] = {}
            for joint in (label, greedy, *samples):
                if answer_key(joint) not in rewards:
                    rewards[answer_key(joint)] = rollout_reward(snapshot, joint)
            yield ScoredState(env, seen, step, label, greedy, samples, rewards)
            joint = copy.deepcopy(greedy)
            result = env.step(greedy)
            taken.append(joint)
            if result.done:
                return
            observation = result.observation
    finally:
        for policy in (model, *sampling):
            policy.close()


def rft_rows(meta: EpisodeMeta, learner: PolicySpec, samplers: Sequence[PolicySpec], mode: Mode,
             logs: list[StateLog], keep: str = "champion") -> Iterator[dict[str, Any]]:
    """Play one episode with the greedy `learner`; at each state yield the rows of the best-rewarded answer among
    the champion's, the learner's and the samplers', `keep`'s on a tie (module docstring), appending each state's
    StateLog to `logs`."""
    for state in scored_states(meta, learner, samplers):
        best = state.best(state.champion if keep == "champion" else state.greedy)
        logs.append(state.log(meta, best))
        yield from labelled_rows(state.env, state.observation, best, meta, state.step, mode)


def gaining_rows(rows: Iterable[dict[str, Any]], logs: Sequence[StateLog]) -> Iterator[dict[str, Any]]:
    """The rows (rft_rows) of the states whose log says the best answer out-scores the greedy one (StateLog.gains)."""
    gaining = {(log.scenario, log.seed, log.step) for log in logs if log.gains}
    return (row for row in rows if (row["scenario"], row["seed"], row["step"]) in gaining)


def log_row(round_: int, logs: Sequence[StateLog]) -> dict[str, Any]:
    """One episode's (or round's) line of rft_samples.csv: the means over its states."""
    n = len(logs)
    return {"round": round_, "states": n,
            **{name: round(sum(getattr(log, name) for log in logs) / n, 6) if n else None
               for name in ("sampled", "champion", "greedy", "best")},
            "sample_wins": sum(log.best > log.champion for log in logs)}


def state_rows(logs: Sequence[StateLog]) -> list[dict[str, Any]]:
    return [asdict(log) for log in logs]
