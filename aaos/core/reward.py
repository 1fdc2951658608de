"""The composite score and the delivery of reward as increments of it, shared by every environment.

Composite: the weighted mean of the components that apply so far, scaled by the oversight penalty,
    composite = (sum_i w_i * c_i / sum_i w_i) / (1 + penalty)
(each violation shrinks the score by a share, however many came before: never below 0, never saturating)
Delivery (potential-based): with S_t the score after step t and S_0 = 0, the step's increment is
d_t = S_t - S_{t-1}. The agent receives IMMEDIATE_SHARE * d_t at once; DELAYED_SHARE * d_t is held and
the held increments are paid out, summed, every RELEASE_EVERY steps and on the last step. So the
undiscounted return of any episode equals its final score, whatever its length; a single reward may be
negative (the score fell), the score never is.

What a step's info shows of the grade (one rule for every environment, `Delivery.breakdown`): until the episode
ends, the components in info.reward_breakdown are the public grade, the one the observation's partial_scores show
(what the agents could grade from what they have seen); on the last step they are the true grade. The reward and
info.score follow the true composite throughout (the reward may depend on hidden state: it is the reward), and
each can be computed from the other and the public formula above, so neither says more than the reward does; the
components never say more than the observation.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

IMMEDIATE_SHARE = 0.6
DELAYED_SHARE = 0.4
RELEASE_EVERY = 5


def clamp01(value: float) -> float:
    return 0.0 if value < 0.0 else 1.0 if value > 1.0 else value


def composite(components: Mapping[str, float | None], weights: Mapping[str, float], penalty: float) -> float:
    """Weighted mean of the components that apply (None = nothing to grade yet), scaled by the penalty."""
    total = 0.0
    weight_sum = 0.0
    for name, weight in weights.items():
        value = components.get(name)
        if value is not None:
            total += weight * value
            weight_sum += weight
    base = total / weight_sum if weight_sum else 0.0
    return clamp01(base / (1.0 + penalty) if penalty > 0.0 else base)


@dataclass(slots=True)
class Delivery:
    """How one step's increment of the score was paid out."""

    increment: float
    immediate: float
    delayed: float
    released: bool

    @property
    def reward(self) -> float:
        return self.immediate + self.delayed

    def breakdown(self, graded: Mapping[str, float | None], public: Mapping[str, float | None], penalty: float,
                  done: bool) -> dict[str, Any]:
        """The step info's reward_breakdown (aaos.core.info.RewardBreakdown) for this delivery: `graded` the true
        components, `public` the grade the observation shows (partial_scores); the components shown are `public`
        until the episode is `done`, then `graded` (the module docstring)."""
        return {"components": dict(graded if done else public), "penalty": penalty, "increment": self.increment,
                "immediate": self.immediate, "delayed": self.delayed, "released": self.released}


@dataclass(slots=True)
class RewardLedger:
    """Turns the score after each step into rewards: increments, DELAYED_SHARE of each held until a release."""

    previous: float = 0.0
    held: float = 0.0

    def deliver(self, step: int, score: float, done: bool) -> Delivery:
        """`step` is the 1-based number of the step just taken, `score` the composite after it."""
        increment = score - self.previous
        self.previous = score
        self.held += DELAYED_SHARE * increment
        immediate = IMMEDIATE_SHARE * increment
        if step % RELEASE_EVERY == 0 or done:
            delayed, self.held = self.held, 0.0
            return Delivery(increment, immediate, delayed, True)
        return Delivery(increment, immediate, 0.0, False)
