"""The inbox's ground truth: emails drawn from a scenario and a template bank, and the rules that decide each
email's category, priority and right outcome from its facts (never from its words).

Facts of an email: the sender's intent, whether the sender is a key account (VIP), the dollar amount or seat
count it concerns, and how many earlier messages the sender has written in the thread. The rules:
- category: the intent's category (aaos.envs.inbox.spec.INTENT_CATEGORY);
- priority: spam and phishing are low; an outage is high; otherwise the intent's base level, one level up for a
  VIP sender, for a sender who has chased CHASED_AFTER times or more, for a refund of LARGE_REFUND dollars or more
  and for an upgrade of LARGE_DEAL_SEATS seats or more (capped at high);
- outcome: spam and phishing are ignored; outages, data-deletion requests, refunds of REFUND_APPROVAL dollars or
  more, upgrades of LARGE_DEAL_SEATS seats or more and complaints from VIPs are escalated; the rest resolved.
An email is urgent when its priority is high.
"""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import Any

from aaos.envs.inbox.scenario import Bank, Scenario, Template
from aaos.envs.inbox.spec import (
    CHASED_AFTER,
    INTENT_CATEGORY,
    JUNK,
    LARGE_DEAL_SEATS,
    LARGE_REFUND,
    LEVELS,
    REFUND_APPROVAL,
    InboxTask,
)

BASE_LEVEL: dict[str, str] = {
    "refund_request": "medium", "invoice_question": "low", "payment_failed": "medium",
    "outage": "high", "bug_report": "medium", "how_to": "low",
    "password_reset": "medium", "account_change": "low", "data_deletion": "medium",
    "pricing_inquiry": "low", "upgrade_request": "low", "demo_request": "low",
    "praise": "low", "complaint": "medium", "feature_request": "low",
}
"""Each customer intent's priority before the facts raise it."""
MONEY_INTENTS: tuple[str, ...] = ("refund_request", "invoice_question", "payment_failed")
SPAM_INTENTS: tuple[str, ...] = tuple(i for i, c in INTENT_CATEGORY.items() if c == "spam")
PHISH_INTENTS: tuple[str, ...] = tuple(i for i, c in INTENT_CATEGORY.items() if c == "phishing")
CUSTOMER_INTENTS: tuple[str, ...] = tuple(i for i, c in INTENT_CATEGORY.items() if c not in JUNK)
FOLLOWUP_WEIGHTS: tuple[float, ...] = (0.6, 0.2, 0.2)
"""Chance that a sender has written 0, 1 or 2 earlier messages in the thread."""
FREE_MAIL_SHARE = 0.15
"""Share of customer emails sent from a free-mail address (never a key account)."""
PREVIEW_CHARS = 80
ATTEMPTS = 200


@dataclass(slots=True)
class Email:
    """One email: what the agent can read, the hidden facts and truth, and the agent's labels and outcome."""

    id: str
    arrives: int
    sender: str
    subject: str
    body: str
    thread: list[str]
    sentiment: str
    intent: str
    vip: bool
    amount: int | None
    seats: int | None
    followups: int
    tricky: bool
    true_category: str
    true_priority: str
    true_outcome: str
    status: str = "open"
    category: str | None = None
    priority: str | None = None
    opened: bool = False
    closed_step: int | None = None

    @property
    def urgent(self) -> bool:
        return self.true_priority == "high"

    @property
    def closed(self) -> bool:
        return self.status != "open"

    @property
    def preview(self) -> str:
        return preview_of(self.body)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "urgent": self.urgent}


@lru_cache(maxsize=4096)
def preview_of(body: str) -> str:
    """The start of a body on one line, at most PREVIEW_CHARS characters (remembered: every observation shows the
    preview of every arrived email)."""
    flat = " ".join(body.split())
    return flat if len(flat) <= PREVIEW_CHARS else flat[: PREVIEW_CHARS - 1].rstrip() + "…"


def truth(intent: str, vip: bool, amount: int | None, seats: int | None, followups: int) -> tuple[str, str, str]:
    """(category, priority, outcome) from an email's facts: the rules of the module docstring."""
    category = INTENT_CATEGORY[intent]
    if category in JUNK:
        return category, "low", "ignored"
    raised = (vip + (followups >= CHASED_AFTER) + (intent == "refund_request" and (amount or 0) >= LARGE_REFUND)
              + (intent == "upgrade_request" and (seats or 0) >= LARGE_DEAL_SEATS))
    level = "high" if intent == "outage" else LEVELS[min(len(LEVELS) - 1, LEVELS.index(BASE_LEVEL[intent]) + raised)]
    escalate = (intent in ("outage", "data_deletion")
                or (intent == "refund_request" and (amount or 0) >= REFUND_APPROVAL)
                or (intent == "upgrade_request" and (seats or 0) >= LARGE_DEAL_SEATS)
                or (intent == "complaint" and vip))
    return category, level, "escalated" if escalate else "resolved"


def _sentiment(intent: str, draw: random.Random) -> str:
    """The tone shown in the inbox: it follows the sender's mood, not the email's priority."""
    if intent == "praise":
        weights = (0.8, 0.2, 0.0)
    elif intent == "complaint":
        weights = (0.0, 0.2, 0.8)
    elif INTENT_CATEGORY[intent] in JUNK:
        weights = (0.5, 0.5, 0.0)
    else:
        weights = (0.2, 0.45, 0.35)
    return draw.choices(("positive", "neutral", "negative"), weights)[0]


def _loose(amount: int) -> str:
    return f"about {amount / 1000:.1f}k dollars" if amount >= 1000 else f"roughly {round(amount, -1)} bucks"


def _fill(text: str, values: dict[str, str]) -> str:
    for key, value in values.items():
        text = text.replace("{" + key + "}", value)
    return text


def _draw_email(scenario: Scenario, bank: Bank, intent: str, tricky_share: float, arrives: int,
                draw: random.Random, taken: set[str]) -> Email:
    email_id = f"em_{draw.randrange(16 ** 6):06x}"
    while email_id in taken:
        email_id = f"em_{draw.randrange(16 ** 6):06x}"
    taken.add(email_id)
    first, last = draw.choice(bank.first_names), draw.choice(bank.last_names)
    category = INTENT_CATEGORY[intent]
    vip = False
    if category == "phishing":
        domain = scenario.slug + draw.choice(bank.phish_suffixes)
        sender = f"{scenario.company} <no-reply@{domain}>"
    elif category == "spam":
        domain = draw.choice(bank.junk_domains)
        sender = f"{domain.split('.')[0].replace('-', ' ').title()} <news@{domain}>"
    else:
        domain = (draw.choice(scenario.free_mail_domains) if draw.random() < FREE_MAIL_SHARE
                  else draw.choice(scenario.customer_domains))
        vip = domain in scenario.vip_accounts
        sender = f"{first} {last} <{first.lower()}.{last.lower()}@{domain}>"
    amount = draw.randint(3, 250) * 10 if intent in MONEY_INTENTS else None
    seats = draw.randint(1, 20) * 5 if intent == "upgrade_request" else None
    followups = 0 if category in JUNK else draw.choices(range(len(FOLLOWUP_WEIGHTS)), FOLLOWUP_WEIGHTS)[0]
    templates = bank.intents[intent]
    tricky = bool(templates.tricky) and draw.random() < tricky_share
    template: Template = draw.choice(templates.tricky if tricky else templates.plain)
    values = {
        "first": first, "company": scenario.company, "product": draw.choice(scenario.products),
        "amount": f"${amount:,}" if amount is not None else "", "amount_loose": _loose(amount) if amount else "",
        "order": f"#{draw.randint(10000, 99999)}", "seats": str(seats or ""),
        "link": f"https://{domain}/{draw.choice(('login', 'pay', 'secure', 'account'))}/{draw.randrange(16 ** 4):04x}",
    }
    request = _fill(template.body, values)
    chasers = draw.sample(bank.followups, followups)
    thread = [request, *chasers[:-1]] if followups else []
    body = f"{chasers[-1]}\n\n{request}" if followups else request
    subject = ("Re: " if followups else "") + _fill(template.subject, values)
    true_category, true_priority, true_outcome = truth(intent, vip, amount, seats, followups)
    return Email(id=email_id, arrives=arrives, sender=sender, subject=subject, body=body, thread=thread,
                 sentiment=_sentiment(intent, draw), intent=intent, vip=vip, amount=amount, seats=seats,
                 followups=followups, tricky=tricky, true_category=true_category, true_priority=true_priority,
                 true_outcome=true_outcome)


def _intents(task: InboxTask, draw: random.Random) -> list[str]:
    junk = round(task.junk_share * task.emails)
    phishing = junk // 2
    chosen = ([draw.choice(PHISH_INTENTS) for _ in range(phishing)]
              + [draw.choice(SPAM_INTENTS) for _ in range(junk - phishing)]
              + [draw.choice(CUSTOMER_INTENTS) for _ in range(task.emails - junk)])
    draw.shuffle(chosen)
    return chosen


def _arrivals(task: InboxTask) -> list[int]:
    """The arrival step of each email, in order: the emails split over the waves as evenly as possible."""
    size, extra = divmod(task.emails, len(task.waves))
    return [step for w, step in enumerate(task.waves) for _ in range(size + (w < extra))]


def generate(scenario: Scenario, bank: Bank, task: InboxTask, draw: random.Random) -> list[Email]:
    """An episode's emails, in arrival order. Redrawn (from the same generator) until the episode is fair: at
    least one urgent email arrives with the first wave and the escalation budget covers every email whose right
    outcome is escalation."""
    for _ in range(ATTEMPTS):
        taken: set[str] = set()
        emails = [_draw_email(scenario, bank, intent, task.tricky_share, arrives, draw, taken)
                  for intent, arrives in zip(_intents(task, draw), _arrivals(task), strict=True)]
        first_wave_urgent = any(e.urgent for e in emails if e.arrives == task.waves[0])
        escalations = sum(e.true_outcome == "escalated" for e in emails)
        if first_wave_urgent and escalations <= task.escalation_budget:
            return emails
    raise RuntimeError(f"no fair draw of {task.spec.id} in {ATTEMPTS} attempts")  # pragma: no cover
