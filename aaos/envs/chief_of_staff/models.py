"""Typed wire models of the observation and of state() (validated by the conformance checker), extending the
protocol's heads (aaos.core.info)."""

from __future__ import annotations

from typing import Any, Literal

from aaos.core.info import ObservationHead, ViewHead, WireModel


class CosView(ViewHead):
    role: Literal["chief_of_staff"]
    now: dict[str, Any]
    stakeholders: dict[str, dict[str, Any]]
    drift_count: int
    drift_steps: list[int]
    requests: list[dict[str, Any]]
    closed: dict[str, list[str]]
    calendar: list[dict[str, Any]]
    reactions: list[dict[str, Any]]


class CosObservation(ObservationHead):
    agent_observations: dict[Literal["chief_of_staff"], CosView]
    drift_count: int


class CosState(WireModel):
    task: str
    step: int
    max_steps: int
    days: int
    done: bool
    importance: dict[str, float]
    trust: dict[str, float]
    preferences: dict[str, dict[str, str]]
    briefed_preferences: dict[str, dict[str, str]]
    known_preferences: dict[str, dict[str, str]]
    barred: dict[str, str | None]
    drifts: list[dict[str, Any]]
    drift_count: int
    holdout: bool
    requests: list[dict[str, Any]]
    protections: list[list[Any]]
    breached: list[list[Any]]
    pending_trust: list[dict[str, Any]]
    news: dict[str, int]
    reactions: list[dict[str, Any]]
    reactions_pending: list[dict[str, Any]]
    violations: list[dict[str, Any]]
    penalty: float
    scenario: str
    seed: int
    score: float
    components: dict[str, float | None]
    held_reward: float
