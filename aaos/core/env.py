"""The environment protocol every AAOS environment implements, and the result of a step."""

from __future__ import annotations

import copy
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from aaos.core.actions import parse_joint_action, problems
from aaos.core.info import OBSERVATION_KEYS, shape_problems
from aaos.core.spec import EnvSpec

Observation = dict[str, Any]
JointAction = dict[str, Any]


@dataclass(slots=True)
class StepResult:
    """What `step` returns.

    observation: the next observation (None when the step was taken with observe=False).
    reward: the reward delivered this step: the immediate share of the score's increment plus any released
        delayed share (aaos.core.reward); it may be negative, and the episode's rewards sum to its final score.
    done: the episode has ended; step() after this raises EpisodeDone.
    info: the step-info contract (aaos.core.info.StepInfo): "score" (the graded composite so far; final once
        done), "step", "reward_breakdown" (components, penalty, increment, immediate, delayed, released),
        "action_results" (per role), "oversight_events" (violations with severity), "scenario_events" (fired
        this step), "errors" (joint-action problems not tied to a role).
    """

    observation: Observation | None
    reward: float
    done: bool
    info: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"observation": self.observation, "reward": self.reward, "done": self.done, "info": self.info}


def seen_by(observation: Observation, roles: Sequence[str]) -> Observation:
    """What a client that plays `roles` is shown of `observation`: the keys every observation has
    (aaos.core.info.ObservationHead) with only those roles' views, in that order. An environment's own
    organisation-wide fields (metrics, the whole inbox, ...) are left out: no single role sees them whole, and a
    role's agent must see the world only through its view."""
    views = observation["agent_observations"]
    seen = {key: value for key, value in observation.items() if key in OBSERVATION_KEYS}
    seen["agent_observations"] = {role: views[role] for role in roles}
    return seen


class EpisodeDone(RuntimeError):
    """step() was called on an episode that has already ended; call reset() first."""


class ContractError(RuntimeError):
    """An environment returned a step info that breaks the contract of aaos.core.info (a bug in the environment)."""


@dataclass(frozen=True, slots=True)
class Episode:
    """The episode an environment plays (or builds at its next reset): its task, scenario and seed, each checked."""

    task: str
    scenario: str
    seed: int


class Environment(ABC):
    """reset / step / state / legal_actions over a spec. Subclasses hold their world as plain data and
    implement `_scenario`, `_build` and `_step`; `step` refuses a finished episode and checks the shape of every info
    returned.

    Constructing one chooses its first episode (task, scenario and seed, checked: a bad one is refused at once) and
    builds nothing; reset() builds the world, so aaos.make(...) followed by reset() builds it once. The seed enters
    through the constructor (aaos.make) or reset(seed=...), nowhere else. An environment read before its first
    reset builds the chosen episode then (see __getattr__)."""

    describe: ClassVar[Callable[[], EnvSpec]]
    """Builds the environment's spec (a staticmethod of the subclass)."""
    spec: EnvSpec
    episode: Episode

    def __init__(self, task: str | None = None, scenario: str | None = None, seed: int = 0) -> None:
        self.spec = self.describe()
        self._pending: tuple[Episode, Any] | None = self._choose(task or self.spec.default_task,
                                                                 scenario or self.spec.default_scenario, seed)
        self.episode = self._pending[0]

    @property
    def task(self) -> str:
        return self.episode.task

    @property
    def scenario(self) -> str:
        return self.episode.scenario

    @property
    def seed(self) -> int:
        return self.episode.seed

    def _choose(self, task: str, scenario: str, seed: int) -> tuple[Episode, Any]:
        """The episode, checked, and its scenario's definition; a ValueError saying what to fix changes nothing."""
        self.spec.task(task)  # raises a clear error for an unknown task
        if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
            raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
        return Episode(task, scenario, seed), self._scenario(scenario)

    @abstractmethod
    def _scenario(self, scenario: str) -> Any:
        """The scenario's definition, what _build reads (a ValueError naming the choices for an unknown one)."""

    @abstractmethod
    def _build(self, episode: Episode, definition: Any) -> None:
        """Build the world of an episode whose choices are checked (reset's work)."""

    def reset(self, task: str | None = None, scenario: str | None = None, seed: int | None = None) -> Observation:
        """Start a new episode (optionally with another task, scenario or seed); return the first observation. What
        is left out stays as the last episode (or the constructor) chose it."""
        if self._pending is not None and task is None and scenario is None and seed is None:
            episode, definition = self._pending  # the constructor's choice, checked already
        else:
            episode, definition = self._choose(task or self.episode.task, scenario or self.episode.scenario,
                                               self.episode.seed if seed is None else seed)
        self._pending = None
        self.episode = episode
        self._build(episode, definition)
        return self.observation()

    def __getattr__(self, name: str) -> Any:
        """Python asks this only for an attribute that is not set. Before the first reset those are the world's: the
        episode the constructor chose is built then, once, so an environment read before it is reset (its state,
        its legal actions) answers as if reset. Any other missing attribute is an AttributeError."""
        if name.startswith("__") or self.__dict__.get("_pending") is None:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        self.reset()
        return getattr(self, name)

    @property
    @abstractmethod
    def done(self) -> bool:
        """The episode has ended."""

    def step(self, joint_action: JointAction, observe: bool = True) -> StepResult:
        """Apply one action per role (roles left out do the no-op) and advance one step; with observe=False the
        result carries no observation (cheaper, for lookahead). Raises EpisodeDone once the episode has ended."""
        if self.done:
            raise EpisodeDone("the episode is over; call reset() to start a new one")
        result = self._step(joint_action, observe)
        broken = shape_problems(result.info)
        if broken:
            raise ContractError(f"{type(self).__name__}.step: " + "; ".join(broken))
        return result

    @abstractmethod
    def _step(self, joint_action: JointAction, observe: bool) -> StepResult:
        """One step of an episode that has not ended; the info must follow aaos.core.info.StepInfo."""

    @abstractmethod
    def state(self) -> dict[str, Any]:
        """The full ground-truth state as JSON-serialisable data."""

    @abstractmethod
    def observation(self) -> Observation:
        """The current observation (what reset/step returned last)."""

    def observation_of(self, roles: Sequence[str]) -> Observation:
        """The current observation as a client that plays `roles` (roles of the spec) sees it: seen_by. An
        environment whose views cost something to build overrides it to build only those."""
        return seen_by(self.observation(), roles)

    @abstractmethod
    def legal_actions(self, role: str) -> dict[str, dict[str, Any]]:
        """Action types `role` may take now without rejection; each payload field maps to its list of
        valid choices, or to "text" for free text."""

    def check(self, joint_action: JointAction) -> list[str]:
        """What makes a joint action invalid as input (shape, action type, permission, payload), one message
        per problem naming the role and field; empty if step() would accept every action's form. Changes
        nothing. Environments extend it with checks of the ids a payload refers to."""
        return problems(parse_joint_action(self.spec, joint_action))

    def clone(self) -> Environment:
        """An independent copy in the same state (for lookahead and reward functions)."""
        return copy.deepcopy(self)
