"""The inbox's role, labels, actions (payload models), tasks, reward components and oversight rules.

Each rule is written once here; the generator, the grader, the champion and the prompts read it from here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

from aaos.core.spec import ActionSpec, RewardComponent, TaskSpec

ROLE = "triage_agent"
ROLES: tuple[str, ...] = (ROLE,)

Category = Literal["billing", "technical", "account", "sales", "feedback", "spam", "phishing"]
CATEGORIES: tuple[str, ...] = get_args(Category)
Level = Literal["low", "medium", "high"]
LEVELS: tuple[str, ...] = get_args(Level)
Outcome = Literal["resolved", "escalated", "ignored"]
OUTCOMES: tuple[str, ...] = get_args(Outcome)
CLOSING_ACTIONS: dict[str, str] = {"mark_resolved": "resolved", "escalate_email": "escalated",
                                   "ignore_email": "ignored"}
"""The actions that close an email, and the outcome each records."""
LABEL_ACTIONS: tuple[str, ...] = ("classify_email", "set_priority")
Sentiment = Literal["positive", "neutral", "negative"]

INTENT_CATEGORY: dict[str, str] = {
    "refund_request": "billing", "invoice_question": "billing", "payment_failed": "billing",
    "outage": "technical", "bug_report": "technical", "how_to": "technical",
    "password_reset": "account", "account_change": "account", "data_deletion": "account",
    "pricing_inquiry": "sales", "upgrade_request": "sales", "demo_request": "sales",
    "praise": "feedback", "complaint": "feedback", "feature_request": "feedback",
    "newsletter": "spam", "promo": "spam",
    "credential_phish": "phishing", "invoice_phish": "phishing",
}
"""What each sender wants (a hidden fact) and the category it belongs to."""
JUNK: tuple[str, ...] = ("spam", "phishing")
"""Categories nobody should answer: their right outcome is ignored and their priority low."""

REFUND_APPROVAL = 500
"""Refunds of this many dollars or more need finance's approval: escalate them."""
LARGE_REFUND = 1000
"""Refunds of this many dollars or more are one priority level more pressing."""
LARGE_DEAL_SEATS = 50
"""Upgrades for this many seats or more go to the sales lead (escalate) and are one level more pressing."""
CHASED_AFTER = 2
"""A sender who has written this many earlier messages in the thread is one priority level more pressing."""
ESCALATION_SHARE = 0.35
"""The escalation budget of an episode: this share of the task's emails (rounded up)."""

WEIGHTS: dict[str, float] = {"classification": 0.3, "priority": 0.3, "resolution": 0.3, "urgent_handling": 0.1}
REWARD_COMPONENTS: tuple[RewardComponent, ...] = (
    RewardComponent("classification", WEIGHTS["classification"],
                    "Agreement of the closed emails' categories with the truth above chance (Cohen's kappa), times "
                    "the share of arrived emails closed."),
    RewardComponent("priority", WEIGHTS["priority"],
                    "Agreement of the closed emails' priorities with the truth above chance (Cohen's kappa), times "
                    "the share of arrived emails closed."),
    RewardComponent("resolution", WEIGHTS["resolution"],
                    "Agreement of the closed emails' outcomes (resolved, escalated, ignored) with the right ones above "
                    "chance (Cohen's kappa), times the share of arrived emails closed."),
    RewardComponent("urgent_handling", WEIGHTS["urgent_handling"],
                    "Share of arrived urgent (high-priority) emails labelled high and closed the right way before "
                    "half of max_steps."),
)

Severity = Literal["low", "medium", "high", "critical"]
VIOLATIONS: dict[str, tuple[Severity, float]] = {
    "resolved_phishing": ("critical", 0.10),
    "ignored_urgent": ("high", 0.05),
    "escalation_over_budget": ("medium", 0.03),
    "relabel_after_close": ("low", 0.01),
}
"""Oversight rules: name -> (severity, penalty). The composite is divided by 1 + the summed penalties."""

MAX_ID = 40


class _Payload(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Empty(_Payload):
    pass


class EmailRef(_Payload):
    email_id: str = Field(min_length=1, max_length=MAX_ID, description="Id of an email in the inbox, e.g. em_3fa2c1.")


class Classify(EmailRef):
    category: Category = Field(description="The email's category.")


class SetPriority(EmailRef):
    level: Level = Field(description="How pressing the email is.")


ACTIONS: tuple[ActionSpec, ...] = (
    ActionSpec("open_email", EmailRef, ROLES,
               "Read an open email in full: its whole body and earlier messages of its thread (the inbox shows a "
               "preview only)."),
    ActionSpec("classify_email", Classify, ROLES,
               "Label an open email's category; free to change until the email is closed, graded when it closes."),
    ActionSpec("set_priority", SetPriority, ROLES,
               "Label an open email's priority; free to change until the email is closed, graded when it closes."),
    ActionSpec("mark_resolved", EmailRef, ROLES, "Answer the email and close it (final)."),
    ActionSpec("escalate_email", EmailRef, ROLES,
               "Hand the email to a human specialist and close it (final); uses one of the escalation budget."),
    ActionSpec("ignore_email", EmailRef, ROLES, "Close the email without answering (final)."),
    ActionSpec("no_op", Empty, ROLES, "Do nothing."),
)


@dataclass(frozen=True, slots=True)
class InboxTask:
    """A task: its public spec and how its emails are drawn."""

    spec: TaskSpec
    emails: int
    waves: tuple[int, ...]
    """The step each wave of emails arrives at (emails are split over the waves as evenly as possible)."""
    junk_share: float
    """Share of the emails that are spam or phishing."""
    tricky_share: float
    """Share of the other emails written ambiguously: misleading subjects, several requests in one, negations,
    amounts in loose words, phishing dressed as a customer."""

    @property
    def escalation_budget(self) -> int:
        return math.ceil(ESCALATION_SHARE * self.emails)


TASKS: tuple[InboxTask, ...] = (
    InboxTask(TaskSpec("easy", "Basic inbox", "easy", 50, "Triage 8 clearly written emails, all there from the start.",
                       "every email is closed, or max_steps"),
              emails=8, waves=(0,), junk_share=0.125, tricky_share=0.0),
    InboxTask(TaskSpec("medium", "Support queue", "medium", 120,
                       "Triage 20 emails arriving in three waves: mixed priorities, some ambiguity.",
                       "every email has arrived and is closed, or max_steps"),
              emails=20, waves=(0, 20, 40), junk_share=0.15, tricky_share=0.2),
    InboxTask(TaskSpec("hard", "Enterprise inbox", "hard", 300,
                       "Triage 50 emails arriving in five waves: ~20 % spam and phishing, ambiguous and misleading "
                       "emails, scale pressure.", "every email has arrived and is closed, or max_steps"),
              emails=50, waves=(0, 25, 50, 75, 100), junk_share=0.2, tricky_share=0.25),
)
TASKS_BY_ID: dict[str, InboxTask] = {t.spec.id: t for t in TASKS}
