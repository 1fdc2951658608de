"""The protocol's data contracts: what every `step` puts in `StepResult.info`, and the head of every observation
and view (pydantic bases that each environment's wire models extend).

The benchmark runner, the promotion gate, the trajectory writer and the Space read these keys and nothing
else, so an environment that honours them works on every surface. `Environment.step` checks the shape of
every info it returns (`shape_problems`, cheap); `aaos.check_env` checks the values too (`info_problems`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Literal, TypedDict, get_args

from pydantic import BaseModel, ConfigDict

from aaos.core.spec import EnvSpec

Severity = Literal["low", "medium", "high", "critical"]
SEVERITIES: tuple[str, ...] = get_args(Severity)
HARD_SEVERITIES: tuple[str, ...] = ("high", "critical")
"""Violations of these severities are the hard violations the promotion gate watches."""
Status = Literal["applied", "no_effect", "rejected"]
STATUSES: tuple[str, ...] = get_args(Status)


class WireModel(BaseModel):
    """A typed wire model (an environment's observation and state models build on it). It forbids unknown keys:
    a field added to an observation or a state fails the conformance checker until its model declares (and so
    documents) it."""

    model_config = ConfigDict(extra="forbid")


class ResultRecord(WireModel):
    """An action result as data (aaos.core.actions.result_record): a view's last_action_result, the info's
    action_results, the action log."""

    step: int | None
    role: str
    action_type: str
    payload: dict[str, Any]
    status: Status
    valid: bool
    reason: str | None
    message: str


RESULT_KEYS = frozenset(ResultRecord.model_fields)


class RewardBreakdown(TypedDict):
    """How the step's reward was made (aaos.core.reward)."""

    components: dict[str, float | None]  # every reward component of the spec: a grade in [0, 1], None if ungraded
    # (or hidden): the public grade (the observation's partial_scores) until the episode ends, the true grade on its
    # last step (aaos.core.reward, "What a step's info shows")
    penalty: float  # the oversight penalty P >= 0 (the composite is base / (1 + P))
    increment: float  # the score's change this step
    immediate: float  # the share of the increment paid at once
    delayed: float  # held reward paid out this step (0 unless released); reward = immediate + delayed
    released: bool  # held reward was paid out this step


class Violation(TypedDict):
    """An oversight violation recorded this step."""

    step: int
    role: str
    rule: str
    severity: Severity
    penalty: float
    detail: str


class StepInfo(TypedDict):
    """`StepResult.info`."""

    score: float  # the graded composite in [0, 1] after this step; the episode score once done
    step: int  # steps taken in the episode, this one included
    reward_breakdown: RewardBreakdown
    action_results: dict[str, dict[str, Any]]  # every role -> its action result (aaos.core.actions.result_record)
    oversight_events: list[Violation]  # violations recorded this step
    scenario_events: list[dict[str, Any]]  # scenario events that fired this step (each with "step" and "title")
    errors: list[str]  # joint-action problems not tied to a role (unknown role names, a non-object action)


INFO_KEYS = frozenset(StepInfo.__annotations__)
BREAKDOWN_KEYS = frozenset(RewardBreakdown.__annotations__)
VIOLATION_KEYS = frozenset(Violation.__annotations__)


def shape_problems(info: Mapping[str, Any]) -> list[str]:
    """What is missing from an info or extra in it (the check `Environment.step` makes on every step)."""
    found = []
    if info.keys() != INFO_KEYS:
        found.append(_keys("info", info, INFO_KEYS))
    breakdown = info.get("reward_breakdown")
    if (type(breakdown) is not dict and not isinstance(breakdown, Mapping)) or breakdown.keys() != BREAKDOWN_KEYS:
        found.append(_keys("info.reward_breakdown", breakdown, BREAKDOWN_KEYS))
    return found


def _keys(where: str, value: Any, expected: frozenset[str]) -> str:
    if not isinstance(value, Mapping):
        return f"{where} must be an object with keys {sorted(expected)}"
    missing, extra = sorted(expected - value.keys()), sorted(value.keys() - expected)
    return f"{where}: missing keys {missing}, unexpected keys {extra}"


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def info_problems(info: Mapping[str, Any], spec: EnvSpec) -> list[str]:
    """Everything wrong with a step's info against the contract and the spec; empty when it honours both."""
    found = shape_problems(info)
    if found:
        return found
    if not _number(info["score"]) or not 0.0 <= info["score"] <= 1.0:
        found.append(f"info.score must be a number in [0, 1], got {info['score']!r}")
    if not isinstance(info["step"], int) or info["step"] < 1:
        found.append(f"info.step must be a positive integer, got {info['step']!r}")
    breakdown = info["reward_breakdown"]
    names = {c.name for c in spec.reward_components}
    components = breakdown["components"]
    if not isinstance(components, Mapping) or set(components) != names:
        found.append(f"info.reward_breakdown.components must have exactly the spec's components {sorted(names)}")
    else:
        found += [f"info.reward_breakdown.components.{k} must be in [0, 1] or null, got {v!r}"
                  for k, v in components.items() if v is not None and (not _number(v) or not 0.0 <= v <= 1.0)]
    found += [f"info.reward_breakdown.{k} must be a finite number, got {breakdown[k]!r}"
              for k in sorted(BREAKDOWN_KEYS - {"components", "released"}) if not _number(breakdown[k])]
    if not isinstance(breakdown["released"], bool):
        found.append(f"info.reward_breakdown.released must be true or false, got {breakdown['released']!r}")
    if _number(breakdown["penalty"]) and breakdown["penalty"] < 0:
        found.append("info.reward_breakdown.penalty must not be negative")
    results = info["action_results"]
    if not isinstance(results, Mapping) or set(results) != set(spec.roles):
        found.append(f"info.action_results must have one result per role {list(spec.roles)}")
    else:
        for role, result in results.items():
            if not isinstance(result, Mapping) or result.keys() != RESULT_KEYS:
                found.append(f"info.action_results.{role} must be an action result with keys {sorted(RESULT_KEYS)}")
            elif result["status"] not in STATUSES or result["role"] != role:
                found.append(f"info.action_results.{role}: status must be one of {STATUSES} and role {role!r}")
    events = info["oversight_events"]
    if not isinstance(events, list):
        found.append("info.oversight_events must be a list")
    else:
        for event in events:
            if not isinstance(event, Mapping) or not event.keys() >= VIOLATION_KEYS:
                found.append(f"info.oversight_events: each violation needs keys {sorted(VIOLATION_KEYS)}")
            elif event["severity"] not in SEVERITIES or event["role"] not in spec.roles:
                found.append(f"info.oversight_events: severity must be one of {SEVERITIES} and role one of the "
                             f"spec's, got {event['severity']!r} for {event['role']!r}")
    if not isinstance(info["scenario_events"], list):
        found.append("info.scenario_events must be a list")
    if not isinstance(info["errors"], list) or not all(isinstance(e, str) for e in info["errors"]):
        found.append("info.errors must be a list of strings")
    return found


class ViewHead(WireModel):
    """The fields every role's view has; an environment's view model extends it with its own."""

    role: str
    step: int
    legal_actions: dict[str, dict[str, list[Any] | Literal["text"]]]  # action type -> payload field -> choices
    last_action_result: ResultRecord | None  # the role's last action result, None before its first


class ObservationHead(WireModel):
    """The fields every observation has; an environment's observation model extends it with its own shared fields
    and narrows agent_observations to its roles and view model."""

    task: str
    scenario_id: str
    scenario_title: str
    step_count: int  # steps taken so far
    max_steps: int
    done: bool
    agent_observations: dict[str, dict[str, Any]]  # every role -> its own view (a ViewHead and more)
    scenario_events: list[dict[str, Any]]  # events the whole organisation has seen (each with "step" and "title")
    partial_scores: dict[str, float | None]  # the grade over what the agents know (components of the spec)


OBSERVATION_KEYS = frozenset(ObservationHead.model_fields)
VIEW_KEYS = frozenset(ViewHead.model_fields)


def observation_problems(observation: Mapping[str, Any], spec: EnvSpec) -> list[str]:
    """What an observation lacks of the contract: its head keys, one view per role, each view's head keys."""
    missing = sorted(OBSERVATION_KEYS - observation.keys())
    if missing:
        return [f"observation: missing keys {missing}"]
    views = observation["agent_observations"]
    if not isinstance(views, Mapping) or set(views) != set(spec.roles):
        return [f"observation.agent_observations must hold one view per role {list(spec.roles)}"]
    found = [f"observation.agent_observations.{role}: missing keys {sorted(VIEW_KEYS - view.keys())}"
             for role, view in views.items() if not view.keys() >= VIEW_KEYS]
    found += [f"observation.agent_observations.{role}.role must be {role!r}" for role, view in views.items()
              if view.get("role") != role]
    return found
