"""What the triage agent sees: the open emails as previews, the closed ones by how they were closed, the one it
opened last in full, and the counts.

Never shown: an email before it arrives, any email's facts or true labels, the right outcome. The view's inbox
lists each open email with its sender, subject, sentiment, a preview of the body and the agent's own labels so
far; `closed_emails` maps each closed one to its outcome (a closed email is final: nothing is left to decide
about it); `opened_email` is the email last opened with open_email (whole body and earlier thread messages).
The observation's own `inbox` lists every arrived email as a row, closed ones included.
"""

from __future__ import annotations

from typing import Any

from aaos.envs.inbox.spec import CATEGORIES, LEVELS
from aaos.envs.inbox.world import Email


def email_row(email: Email) -> dict[str, Any]:
    return {"id": email.id, "sender": email.sender, "subject": email.subject, "sentiment": email.sentiment,
            "preview": email.preview, "received_step": email.arrives, "status": email.status,
            "category": email.category, "priority": email.priority, "opened": email.opened}


def opened_view(email: Email) -> dict[str, Any]:
    return {"id": email.id, "sender": email.sender, "subject": email.subject, "sentiment": email.sentiment,
            "received_step": email.arrives, "status": email.status, "category": email.category,
            "priority": email.priority, "body": email.body, "thread": list(email.thread)}


def legal_actions(pending: list[str]) -> dict[str, dict[str, Any]]:
    """Every action on an open (arrived, not closed) email, with its choices; no_op always."""
    legal: dict[str, dict[str, Any]] = {}
    if pending:
        legal["open_email"] = {"email_id": pending}
        legal["classify_email"] = {"email_id": pending, "category": list(CATEGORIES)}
        legal["set_priority"] = {"email_id": pending, "level": list(LEVELS)}
        for name in ("mark_resolved", "escalate_email", "ignore_email"):
            legal[name] = {"email_id": pending}
    legal["no_op"] = {}
    return legal
