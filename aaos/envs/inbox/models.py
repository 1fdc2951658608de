"""The inbox's observation and state as typed wire models (aaos.core.kit.EnvKit.observation_model, state_model).
Every model forbids unknown keys: a field added to the observation must be declared (and so documented) here."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from aaos.envs.inbox.spec import Category, Level, Sentiment, Severity

Status = Literal["open", "resolved", "escalated", "ignored"]


class _Wire(BaseModel):
    model_config = ConfigDict(extra="forbid")


class EmailRow(_Wire):
    id: str
    sender: str
    subject: str
    sentiment: Sentiment
    preview: str
    received_step: int
    status: Status
    category: Category | None
    priority: Level | None
    opened: bool


class OpenedEmail(_Wire):
    id: str
    sender: str
    subject: str
    sentiment: Sentiment
    received_step: int
    status: Status
    category: Category | None
    priority: Level | None
    body: str
    thread: list[str]


class Company(_Wire):
    name: str
    domain: str


class TriageView(_Wire):
    role: Literal["triage_agent"]
    step: int
    company: Company
    vip_accounts: list[str]
    escalations_left: int
    pending_count: int
    resolved_count: int
    elapsed_ratio: float
    inbox: list[EmailRow]  # the open emails
    closed_emails: dict[str, Literal["resolved", "escalated", "ignored"]]  # the closed ones: id -> how
    opened_email: OpenedEmail | None
    legal_actions: dict[str, dict[str, Any]]
    last_action_result: dict[str, Any] | None


class InboxObservation(_Wire):
    task: str
    scenario_id: str
    scenario_title: str
    step_count: int
    max_steps: int
    done: bool
    agent_observations: dict[Literal["triage_agent"], TriageView]
    scenario_events: list[dict[str, Any]]
    partial_scores: dict[str, float | None]
    pending_count: int
    resolved_count: int
    elapsed_ratio: float
    inbox: list[EmailRow]  # every arrived email


class EmailState(_Wire):
    id: str
    arrives: int
    sender: str
    subject: str
    body: str
    thread: list[str]
    sentiment: Sentiment
    intent: str
    vip: bool
    amount: int | None
    seats: int | None
    followups: int
    tricky: bool
    true_category: Category
    true_priority: Level
    true_outcome: Literal["resolved", "escalated", "ignored"]
    status: Status
    category: Category | None
    priority: Level | None
    opened: bool
    closed_step: int | None
    urgent: bool


class ViolationState(_Wire):
    step: int
    role: Literal["triage_agent"]
    rule: str
    severity: Severity
    penalty: float
    detail: str


class InboxState(_Wire):
    task: str
    scenario: str
    seed: int
    split: Literal["train", "holdout"]
    step: int
    max_steps: int
    done: bool
    escalations: int
    escalation_budget: int
    opened_id: str | None
    emails: list[EmailState]
    violations: list[ViolationState]
    penalty: float
    components: dict[str, float | None]
    score: float
    held_reward: float
