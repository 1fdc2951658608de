"""The composite score and the delayed delivery of reward, shared by every environment.

Composite: the weighted mean of the components that apply so far, scaled by the oversight penalty,
    composite = (sum_i w_i * c_i / sum_i w_i) * max(0, 1 - penalty)
Delivery: on a release step (every RELEASE_EVERY steps, and the last step) the agent receives
    IMMEDIATE_SHARE * r_t + DELAYED_SHARE * mean(r since the previous release)
and otherwise IMMEDIATE_SHARE * r_t.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

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
    return clamp01(base * max(0.0, 1.0 - penalty))


@dataclass(slots=True)
class Delivery:
    """How one step's raw reward was paid out."""

    raw: float
    immediate: float
    delayed: float
    released: bool

    @property
    def reward(self) -> float:
        return self.immediate + self.delayed


@dataclass(slots=True)
class RewardLedger:
    """Holds back DELAYED_SHARE of each raw reward and releases it on schedule."""

    held: list[float] = field(default_factory=list)

    def deliver(self, step: int, raw: float, done: bool) -> Delivery:
        """`step` is the 1-based number of the step just taken."""
        self.held.append(raw)
        immediate = IMMEDIATE_SHARE * raw
        if step % RELEASE_EVERY == 0 or done:
            delayed = DELAYED_SHARE * sum(self.held) / len(self.held)
            self.held.clear()
            return Delivery(raw, immediate, delayed, True)
        return Delivery(raw, immediate, 0.0, False)
