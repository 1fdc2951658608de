"""The keyword champion: reads only its own view (the inbox previews, the opened email, the key accounts).

Per email: open it, read the whole text, guess the sender's intent from the first keyword group that matches
(KEYWORDS, most dangerous first), read the facts the rules need (key-account sender, dollar amount, seat count,
how often the sender has chased), apply the public rules (aaos.envs.inbox.world.truth) to those guesses, then
classify, set the priority and close (keeping a label someone set before it). Urgent-looking emails are opened
first. It keeps no memory between steps.
Its weakness is the keyword match itself: negations, misleading subjects, paraphrases and amounts in loose words
fool it, which is the reading comprehension the hard task leaves to better agents.
"""

from __future__ import annotations

import re
from typing import Any

from aaos.core.policy import Action, Policy, action
from aaos.envs.inbox.spec import LEVELS
from aaos.envs.inbox.world import truth

KEYWORDS: tuple[tuple[str, str], ...] = (
    ("credential_phish", r"verify your|suspended|suspension|confirm your password|login details|click here"),
    ("newsletter", r"unsubscribe|newsletter|webinar|limited offer|exclusive deal|\d+% off"),
    ("outage", r"\bdown\b|outage|\b503\b|unavailable"),
    ("data_deletion", r"gdpr|\berase\b|delete my|delete all"),
    ("password_reset", r"password|locked out|\breset\b"),
    ("payment_failed", r"declined|payment failed"),
    ("refund_request", r"refund|money back|charged twice"),
    ("invoice_question", r"invoice|receipt"),
    ("bug_report", r"\bbug\b|\berrors?\b|crash|broken"),
    ("complaint", r"disappointed|unacceptable|frustrated|complain"),
    ("upgrade_request", r"upgrade|\bseats\b|add users"),
    ("demo_request", r"\bdemo\b|walkthrough|\btrial\b"),
    ("pricing_inquiry", r"pricing|\bprice\b|\bquote\b|\bcost"),
    ("how_to", r"how do i|how can i|is there a way"),
    ("account_change", r"change my|change the email|transfer ownership|update my|rename"),
    ("feature_request", r"feature|would be great if|suggest|\bwish"),
    ("praise", r"thank|\blove\b|great job|amazing"),
)
"""Intent -> the words that suggest it, in the order they are tried (the first match wins)."""
FALLBACK_INTENT = "how_to"
PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = tuple((i, re.compile(p)) for i, p in KEYWORDS)
AMOUNT = re.compile(r"\$([\d,]+)")
SEATS = re.compile(r"(\d+) seats")
CLOSE_ACTION: dict[str, str] = {"resolved": "mark_resolved", "escalated": "escalate_email", "ignored": "ignore_email"}


def guess_intent(text: str) -> str:
    lowered = text.lower()
    return next((intent for intent, pattern in PATTERNS if pattern.search(lowered)), FALLBACK_INTENT)


def sender_domain(sender: str) -> str:
    return sender.rsplit("@", 1)[-1].rstrip(">").strip().lower()


def read(email: dict[str, Any], vip_accounts: list[str]) -> tuple[str, str, str]:
    """(category, priority, outcome) the champion believes from an email's visible text."""
    text = " ".join([email["subject"], email.get("body", email.get("preview", "")), *email.get("thread", [])])
    amount = AMOUNT.search(text)
    seats = SEATS.search(text)
    chased = len(email["thread"]) if "thread" in email else int(email["subject"].startswith("Re:"))
    return truth(guess_intent(text), sender_domain(email["sender"]) in vip_accounts,
                 int(amount.group(1).replace(",", "")) if amount else None,
                 int(seats.group(1)) if seats else None, chased)


def next_to_open(view: dict[str, Any]) -> str:
    """The open email that looks most pressing from its preview (earliest received first among equals)."""
    pending = view["inbox"]
    urgency = {e["id"]: LEVELS.index(read(e, view["vip_accounts"])[1]) for e in pending}
    return min(pending, key=lambda e: (-urgency[e["id"]], e["received_step"]))["id"]


class InboxChampion(Policy):
    """Open the most pressing-looking email, then classify, prioritise and close it by the keyword reading."""

    name = "heuristic"

    def act_role(self, role: str, view: dict[str, Any]) -> Action:
        email = view["opened_email"]
        if email is not None and email["status"] == "open":
            return self.handle(email, view)
        if "open_email" not in view["legal_actions"]:
            return action("no_op")
        return action("open_email", email_id=next_to_open(view))

    def handle(self, email: dict[str, Any], view: dict[str, Any]) -> Action:
        """Label what is unlabelled, then close. A label already set is kept, whoever set it (a user in a mixed team,
        a learner whose GRPO rollout the champion plays on): what they decided is what gets graded."""
        category, priority, outcome = self.judge(email, view)
        if email["category"] is None:
            return action("classify_email", email_id=email["id"], category=category)
        if email["priority"] is None:
            return action("set_priority", email_id=email["id"], level=priority)
        return action(CLOSE_ACTION[outcome], email_id=email["id"])

    def judge(self, email: dict[str, Any], view: dict[str, Any]) -> tuple[str, str, str]:
        return read(email, view["vip_accounts"])
