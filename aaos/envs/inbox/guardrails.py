"""The guarded advisor's guardrails for the inbox: legal actions that are still unwise."""

from __future__ import annotations

from aaos.core.kit import View
from aaos.core.policy import Action
from aaos.envs.inbox.spec import CLOSING_ACTIONS

LABEL_FIELDS: dict[str, str] = {"classify_email": "category", "set_priority": "priority"}
"""The email field each labelling action sets."""


def guardrail(role: str, action: Action, view: View) -> str | None:
    """Why a legal action is unsafe, or None: closing an email not yet labelled (it would be graded unlabelled)
    or never read in full, escalating with no escalation left in the budget, or a step that changes nothing
    the agent has not already done: labelling an email a second time, opening the email that is open."""
    kind, payload = action["action_type"], action["payload"]
    email = next((e for e in view["inbox"] if e["id"] == payload.get("email_id")), None)
    if email is None:
        return None
    if kind in LABEL_FIELDS and email[LABEL_FIELDS[kind]] is not None:
        return "already_labelled"
    if kind == "open_email" and (view.get("opened_email") or {}).get("id") == email["id"]:
        return "already_open"
    if kind not in CLOSING_ACTIONS:
        return None
    if email["category"] is None or email["priority"] is None:
        return "unlabelled_close"
    if not email["opened"]:
        return "unread_close"
    if kind == "escalate_email" and view["escalations_left"] <= 0:
        return "over_escalation_budget"
    return None
