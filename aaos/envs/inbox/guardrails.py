"""The guarded advisor's guardrails for the inbox: legal actions that are still unwise."""

from __future__ import annotations

from aaos.core.kit import View
from aaos.core.policy import Action
from aaos.envs.inbox.spec import CLOSING_ACTIONS


def guardrail(role: str, action: Action, view: View) -> str | None:
    """Why a legal action is unsafe, or None: closing an email not yet labelled (it would be graded unlabelled)
    or never read in full, or escalating with no escalation left in the budget."""
    kind, payload = action["action_type"], action["payload"]
    if kind not in CLOSING_ACTIONS:
        return None
    email = next((e for e in view["inbox"] if e["id"] == payload.get("email_id")), None)
    if email is None:
        return None
    if email["category"] is None or email["priority"] is None:
        return "unlabelled_close"
    if not email["opened"]:
        return "unread_close"
    if kind == "escalate_email" and view["escalations_left"] <= 0:
        return "over_escalation_budget"
    return None
