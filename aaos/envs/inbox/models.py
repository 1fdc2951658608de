"""The inbox's observation and state as typed wire models (aaos.core.kit.EnvKit.observation_model, state_model).
They extend the protocol's heads (aaos.core.info); every model forbids unknown keys: a field added to the
observation must be declared (and so documented) here."""

from __future__ import annotations

from typing import Literal

from aaos.core.info import ObservationHead, ViewHead, WireModel
from aaos.envs.inbox.spec import Category, Level, Sentiment, Severity

Status = Literal["open", "resolved", "escalated", "ignored"]


class EmailRow(WireModel):
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


class OpenedEmail(WireModel):
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


class Company(WireModel):
    name: str
    domain: str


class TriageView(ViewHead):
    role: Literal["triage_agent"]
    company: Company
    vip_accounts: list[str]
    escalations_left: int
    pending_count: int
    resolved_count: int
    elapsed_ratio: float
    inbox: list[EmailRow]  # the open emails
    closed_emails: dict[str, Literal["resolved", "escalated", "ignored"]]  # the closed ones: id -> how
    opened_email: OpenedEmail | None


class InboxObservation(ObservationHead):
    agent_observations: dict[Literal["triage_agent"], TriageView]
    pending_count: int
    resolved_count: int
    elapsed_ratio: float
    inbox: list[EmailRow]  # every arrived email


class EmailState(WireModel):
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


class ViolationState(WireModel):
    step: int
    role: Literal["triage_agent"]
    rule: str
    severity: Severity
    penalty: float
    detail: str


class InboxState(WireModel):
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
