"""What a language model is told about the inbox: the world, the triage rules, the agent's brief."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aaos.core.kit import Prompting, beside
from aaos.envs.inbox.champion import sender_domain
from aaos.envs.inbox.spec import (
    CATEGORIES,
    CHASED_AFTER,
    ESCALATION_SHARE,
    LARGE_DEAL_SEATS,
    LARGE_REFUND,
    REFUND_APPROVAL,
)

RULES = (
    f"Rules: categories are {', '.join(CATEGORIES)}. Priority: spam and phishing are low; outages are high; "
    "otherwise a refund request, failed payment, bug report, lockout, data-deletion request or complaint "
    "is medium and the rest low, "
    f"one level higher (at most high) for a sender from vip_accounts, for a sender who has chased {CHASED_AFTER} "
    f"times or more (earlier messages in the thread), for a refund of ${LARGE_REFUND:,} or more and for an "
    f"upgrade of {LARGE_DEAL_SEATS} seats or more. Closing: ignore spam and phishing (never resolve phishing); "
    f"escalate outages, data-deletion requests, refunds of ${REFUND_APPROVAL:,} or more, upgrades of "
    f"{LARGE_DEAL_SEATS} seats or more and complaints from vip_accounts; resolve the rest. Judge by what the "
    "sender actually asks, not by the subject's words. Labels may change while an email is open; closing "
    "(mark_resolved, escalate_email, ignore_email) is final and is the only moment the email is graded. The "
    "score: 30 % category, 30 % priority, 30 % right closing, each graded above chance (one label for every "
    "email earns nothing), 10 % urgent (high) emails labelled high and closed right before half of max_steps, "
    f"over every email that has arrived (an open email scores 0). Escalations "
    f"beyond the budget ({ESCALATION_SHARE:.0%} of the task's emails, see escalations_left), resolving phishing, "
    "ignoring an urgent customer and touching a closed email are violations that shrink the score."
)

BRIEF = (
    "You triage the support inbox. Open an email (open_email) to read its whole body and thread, then label its "
    "category (classify_email) and priority (set_priority), then close it the right way. Handle the most "
    "pressing emails first; new emails arrive in waves."
)

VIEW_ORDER: tuple[str, ...] = ("company", "vip_accounts", "escalations_left", "inbox", "closed_emails",
                               "pending_count", "resolved_count", "elapsed_ratio", "opened_email")
"""Fields that change least often first (cached prompt prefixes); the opened email, which changes most, last."""


def focus(view: Mapping[str, Any]) -> frozenset[str]:
    """While the opened email is open, its labels and its closing are the decision: the compact prompt leaves out
    the list of the other emails (more than half its tokens), which only the choice of the next email to open
    needs."""
    opened = view.get("opened_email")
    return frozenset({"inbox"}) if isinstance(opened, Mapping) and opened.get("status") == "open" else frozenset()


def with_sender_facts(view: Mapping[str, Any]) -> dict[str, Any]:
    """The view with the opened email carrying, after its sender, the two facts about the sender that its priority
    hangs on: whether the sender's domain is one of vip_accounts (key_account) and how many earlier messages the
    sender has written (earlier_messages, the thread's length). A small model reads them from the email's own row
    far more easily than it matches a domain against a list or counts a thread; what the email asks, and any amount
    or seat count, it still reads from the text."""
    opened = view.get("opened_email")
    if not isinstance(opened, Mapping) or "sender" not in opened:
        return dict(view)
    facts = {"key_account": sender_domain(opened["sender"]) in view.get("vip_accounts", []),
             "earlier_messages": len(opened.get("thread", []))}
    return {**view, "opened_email": beside(opened, "sender", facts)}


PROMPTING = Prompting(
    world="The Support Inbox: one {roles} works a company's support inbox, one action a step.",
    rules=RULES,
    briefs={"triage_agent": BRIEF},
    view_order=VIEW_ORDER,
    compact_omit=frozenset({"closed_emails", "preview"}),
    compact_last=True,
    compact_focus=focus,
    compact_joined=with_sender_facts,
)
