"""A learner's seat in an environment restored from a snapshot, scored a fixed number of steps later.

The learner acts for one role (or, joint, for every role); the heuristic champion acts for the others, and
plays every role once the learner stops, until `horizon` steps after the snapshot or the episode's end. The
reward is the graded composite (the environment's `score`, in [0, 1]) at that point, so every completion of
a GRPO group is scored at the same depth from the same state. The environment pays reward as increments of
the score (aaos.core.reward), so the score at the horizon is the score at the snapshot (the same for every
completion of a group) plus the return of the steps up to the horizon: ranking completions by it ranks them
by their return-to-go, with the champion playing on.

The horizon must be long enough for an action to show its worth: detecting a risk costs the role a step of
work before the flag and the fix pay, a flag opens a remediation task that counts against business success
until it is worked on, and a resource request is graded only once answered. DEFAULT_HORIZON is chosen by
measurement (docs/training.md, tests/test_reward_signal.py).

An environment whose actions show their worth only when something they touched closes, however far off (the
inbox grades a label when its email closes), says so in its kit (EnvKit.rollout_to_end): its rollouts play to
the episode's end, and the score there is discounted, each step's increment of it by END_DISCOUNT per step after
the snapshot, value = score_end - sum_k (1 - END_DISCOUNT ** (k - 1)) * d_k, so that the same play one step sooner
scores higher (undiscounted, a step wasted before the end would cost nothing) while a label's worth, an order of
magnitude larger, decides (tests/test_inbox_reward_signal.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import aaos
from aaos.core.env import Observation, StepResult
from aaos.core.policy import Action
from aaos.core.spec import EnvSpec
from aaos.training.snapshot import restore

DEFAULT_HORIZON = 15
"""Steps after the snapshot at which a completion is scored, chosen by measurement (docs/training.md). Over
states of champion episodes (full_episode and crisis_management, every scenario), the mean effect against
no_op at 15 steps is +0.011 for detecting a hidden risk, +0.008 for flagging a detected one and +0.014 for
requesting what a blocked task needs; at 1 step a flag loses and a detection or a request gains nothing
(tests/test_reward_signal.py pins the signs). And the order of two answers (the champion's and a random legal
one) at 15 steps is their order at the episode's end in 97.6 % of pairs (70.6 % at 1 step, 91.4 % at 5,
95.9 % at 10), at ~70 % of the cost of playing to the end."""
END_DISCOUNT = 0.999
"""Per-step discount of a rollout played to the episode's end (see the module docstring)."""
INVALID_REWARD = -1.0
"""The reward of a completion that gives no valid action: below every score a valid answer can reach."""


class RolloutOver(RuntimeError):
    """An action after the horizon or the episode's end."""


class Rollout:
    """One environment restored from a snapshot, with the learner in `role` (None: every role)."""

    def __init__(self, snapshot: Mapping[str, Any] | str, role: str | None, horizon: int | None = None) -> None:
        """`horizon`: score this many steps after the snapshot; None: the environment's default (DEFAULT_HORIZON,
        or the episode's end, discounted, where its kit says rollout_to_end)."""
        if horizon is not None and horizon < 1:
            raise ValueError(f"horizon must be at least 1 step, got {horizon}")
        self.env = restore(snapshot)
        self.spec: EnvSpec = self.env.spec
        to_end = horizon is None and aaos.kit_of(self.spec.id).rollout_to_end
        self.discount = END_DISCOUNT if to_end else 1.0
        self._discounted = 0.0
        """sum_k (1 - discount ** (k - 1)) * d_k over the steps taken (0 undiscounted)."""
        if role is not None and role not in self.spec.roles:
            raise ValueError(f"unknown role {role!r}; roles are: {', '.join(self.spec.roles)}")
        self.role = role
        self.horizon: int | None = None if to_end else horizon or DEFAULT_HORIZON
        """None: to the episode's end."""
        self.steps = 0
        self.result: StepResult | None = None
        self._champion = aaos.policies.make("heuristic", env=self.spec.id)

    @property
    def over(self) -> bool:
        """The horizon is reached or the episode has ended."""
        return (self.horizon is not None and self.steps >= self.horizon) or (
            self.result is not None and self.result.done)

    def observation(self) -> Observation:
        return self.env.observation()

    def act(self, actions: Mapping[str, Action]) -> StepResult:
        """One step: the given roles' actions, the champion's for every other role."""
        if self.over:
            raise RolloutOver(f"the rollout is over after {self.steps} step(s)")
        joint = {**self._champion.act(self.observation()), **actions}
        self.result = self.env.step(joint)
        if self.discount != 1.0:
            self._discounted += (1.0 - self.discount ** self.steps) * self.result.info["reward_breakdown"]["increment"]
        self.steps += 1
        return self.result

    def finish(self) -> float:
        """The champion plays every role up to the horizon (or the episode's end); the score then, discounted when
        the rollout plays to the end (the module docstring)."""
        while not self.over:
            self.act({})
        assert self.result is not None  # horizon >= 1, so at least one step was taken
        return self.result.info["score"] - self._discounted
