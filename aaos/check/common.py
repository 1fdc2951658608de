"""What every check shares: the environment under check (`Subject`), reproducible episodes, and the helpers that
describe values in messages."""

from __future__ import annotations

import hashlib
import json
import math
import traceback
from dataclasses import dataclass, field
from typing import Any

from aaos import policies
from aaos.core.env import Environment, Observation
from aaos.core.kit import EnvKit
from aaos.core.policy import Policy
from aaos.core.spec import EnvSpec
from aaos.envs import make

FILLER_TEXT = "written by aaos check"
RETURN_TOLERANCE = 1e-9
_SHORT = 160


def short(value: Any, limit: int = _SHORT) -> str:
    try:
        text = repr(value)
    except Exception as error:  # a value whose repr raises is itself part of what is being fuzzed
        text = f"<{type(value).__name__}: repr raised {type(error).__name__}>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _opaque(value: Any) -> str:
    # a type name, never a repr: reprs may carry memory addresses, which differ between runs
    return f"<{type(value).__name__}>"


def digest(value: Any) -> str:
    """sha256 of the value as canonical JSON (anything that is not JSON counts only by its type)."""
    try:
        text = json.dumps(value, sort_keys=True, default=_opaque)
    except (TypeError, ValueError, RecursionError):
        text = short(value, 10_000)
    return hashlib.sha256(text.encode()).hexdigest()


def as_text(value: Any) -> str:
    """The value as JSON text, as a client would receive it (its repr where it is not JSON at all)."""
    try:
        return json.dumps(value, default=_opaque)
    except (TypeError, ValueError, RecursionError):
        return short(value, 1_000_000)


def raised(error: BaseException) -> str:
    frames = traceback.extract_tb(error.__traceback__)
    where = f" at {frames[-1].filename}:{frames[-1].lineno}" if frames else ""
    return f"{type(error).__name__}: {short(str(error), 300)}{where}"


def number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


@dataclass(frozen=True, slots=True)
class Episode:
    """Where an episode comes from, as a line that reproduces it."""

    env_id: str
    task: str
    scenario: str
    seed: int
    policy: str

    def at(self, step: int) -> str:
        then = f"then repeat obs = env.step(policy.act(obs)).observation {step} time(s)" if step else "then look at obs"
        return (f"reproduce: env = aaos.make({self.task!r}, scenario={self.scenario!r}, seed={self.seed}, "
                f"env={self.env_id!r}); obs = env.reset(); policy = aaos.policies.make({self.policy!r}, "
                f"seed={self.seed}, env={self.env_id!r}); policy.reset({self.seed}); policy.bind(env); {then}")

    def start(self) -> tuple[Environment, Policy, Observation]:
        env = make(self.task, scenario=self.scenario, seed=self.seed, env=self.env_id)
        policy = policies.make(self.policy, seed=self.seed, env=self.env_id)
        observation = env.reset()
        policy.reset(self.seed)
        policy.bind(env)
        return env, policy, observation


@dataclass(slots=True)
class Findings:
    """The first problem each per-step check found while the shared episodes were played."""

    problems: dict[str, str] = field(default_factory=dict)
    steps: int = 0
    episodes: int = 0
    scores: dict[str, list[float]] = field(default_factory=dict)

    def add(self, check: str, message: str) -> None:
        self.problems.setdefault(check, message)


@dataclass(slots=True)
class Subject:
    """The environment under check, the checker's settings, and what one check leaves for a later one."""

    env_id: str
    kit: EnvKit
    spec: EnvSpec
    episodes: int
    seed: int
    fuzz: int
    in_process: list[dict[str, str]] | None = None
    """The determinism episode's fingerprints, once the in-process determinism check passed."""
    skip_reason: str = ""
    played: Findings | BaseException | None = None
    """The shared episodes' findings (or what raised while playing them), once played."""

    @property
    def task(self) -> str:
        return self.spec.default_task

    @property
    def scenario(self) -> str:
        return self.spec.default_scenario

    @property
    def train(self) -> list[str]:
        return [s.id for s in self.spec.scenarios if s.split == "train"] or [self.scenario]

    @property
    def driver(self) -> Episode:
        """The seeded random-policy episode that the determinism, malformed-input, clone and legal-actions checks
        play."""
        return Episode(self.env_id, self.task, self.scenario, self.seed, "random")
