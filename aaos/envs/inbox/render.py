"""How the Space shows the inbox (aaos.core.kit.Rendering): the inbox list with states and labels, the opened
email in full, what needs attention, and the Grade Report (components, confusion matrix, missed urgent emails,
violations)."""

from __future__ import annotations

import html
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from aaos.core.html import card as _card
from aaos.core.html import chips, esc, items, pill, section
from aaos.envs.inbox.spec import CATEGORIES


def labelled_unread(email: Mapping[str, Any]) -> bool:
    """The email got a label without being opened: the inbox accepts it (a label may be a guess from the preview,
    graded when the email closes), and the Space says so beside the label."""
    return email.get("opened") is False and bool(email.get("category") or email.get("priority"))


def _labels(email: Mapping[str, Any]) -> str:
    category = pill(email["category"], "label") if email.get("category") else pill("no category", "pending")
    priority = pill(email["priority"], email["priority"]) if email.get("priority") else pill("no priority",
                                                                                             "pending")
    unread = f" {pill('labelled unread', 'no_effect')}" if labelled_unread(email) else ""
    return f"{category} {priority}{unread}"


def email_row(email: Mapping[str, Any]) -> str:
    status = email["status"]
    return (f'<div class="aaos-email aaos-email-{html.escape(status)}" data-email="{html.escape(email["id"])}">'
            f"<code>{esc(email['id'])}</code> {pill(status, status)} {_labels(email)}"
            f"<br><b>{esc(email['subject'])}</b> <small>from {esc(email['sender'])} · {esc(email['sentiment'])} · "
            f"received step {esc(email['received_step'])}{' · read' if email.get('opened') else ''}</small>"
            f"<br><small>{esc(email['preview'])}</small></div>")


def opened_html(email: Mapping[str, Any] | None) -> str:
    if email is None:
        return '<p class="aaos-empty">No email opened yet.</p>'
    thread = [f"<small>earlier message {i + 1}:</small> {esc(text)}" for i, text in enumerate(email["thread"])]
    body = esc(email["body"]).replace("\n", "<br>")
    return (f'<div class="aaos-opened" data-email="{html.escape(email["id"])}">'
            f"<p><code>{esc(email['id'])}</code> {pill(email['status'], email['status'])} {_labels(email)}"
            f"<br><b>{esc(email['subject'])}</b><br><small>from {esc(email['sender'])}</small></p>"
            f"<p>{body}</p>" + (section("Thread", items(thread, ""), len(thread)) if thread else "") + "</div>")


def role_card(role: str, view: Mapping[str, Any], queued: Mapping[str, Any] | None) -> str:
    """The triage agent's view: the counts, the opened email, then the open emails."""
    counts = {"pending": view["pending_count"], "closed": view["resolved_count"],
              "escalations_left": view["escalations_left"], "elapsed": f"{view['elapsed_ratio']:.0%}"}
    closed = Counter(view["closed_emails"].values())
    inbox = view["inbox"]
    body = (section("Inbox", chips(counts)) + section("Opened email", opened_html(view["opened_email"]))
            + section("Open emails", items([email_row(e) for e in inbox], "No open email."), len(inbox))
            + (section("Closed", chips(closed)) if closed else ""))
    return _card(role, view, queued, body)


def world(observation: Mapping[str, Any]) -> str:
    """The inbox as a whole: counts, the company's key accounts and every arrived email."""
    view = next(iter(observation["agent_observations"].values()), {})
    counts = {"pending": observation["pending_count"], "closed": observation["resolved_count"],
              "elapsed": f"{observation['elapsed_ratio']:.0%}"}
    inbox = observation["inbox"]
    return ('<div class="aaos-world" id="aaos-world">'
            + section("Inbox", chips(counts))
            + section("Key accounts", f"<p>{esc(view.get('vip_accounts', []))}</p>")
            + section("Opened email", opened_html(view.get("opened_email")))
            + section("Emails", items([email_row(e) for e in inbox], "No email yet."), len(inbox))
            + "</div>")


def _pressing(email: Mapping[str, Any]) -> str:
    if labelled_unread(email):
        return "(labelled without being opened: open it to check the label)"
    return "(labelled high, still open)" if email["priority"] == "high" else "(not read yet)"


def attention(observation: Mapping[str, Any]) -> str:
    """Open emails that look pressing (labelled high by the agent, or not yet read, labelled or not)."""
    pending = [e for e in observation["inbox"] if e["status"] == "open"]
    rows = [f"<code>{esc(e['id'])}</code> {esc(e['subject'])} {_pressing(e)}"
            for e in pending if e["priority"] == "high" or not e["opened"]]
    return f'<div class="aaos-hints"><b>What needs attention</b>{items(rows[:8], "Nothing pressing.")}</div>'


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>" for row in rows)
    return f'<table class="aaos-confusion"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def confusion(emails: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, int]]:
    """true category -> label the agent closed it with ("open" for emails never closed, "none" unlabelled)."""
    columns = [*CATEGORIES, "none", "open"]
    matrix = {c: dict.fromkeys(columns, 0) for c in CATEGORIES}
    for email in emails:
        given = "open" if email["status"] == "open" else email["category"] or "none"
        matrix[email["true_category"]][given] += 1
    return matrix


def report(state: Mapping[str, Any]) -> str:
    """The Grade Report's body (the page shows the score and how it adds up above it): the outcome counts, the
    confusion matrix of categories, the urgent emails missed and the violations with their penalties."""
    emails = [e for e in state["emails"] if e["arrives"] <= state["step"]]
    matrix = confusion(emails)
    columns = [*CATEGORIES, "none", "open"]
    rows = [[f"<b>{esc(true)}</b>", *(str(matrix[true][c]) if true != c else f"<b>{matrix[true][c]}</b>"
                                       for c in columns)] for true in CATEGORIES]
    missed = [f"<code>{esc(e['id'])}</code> {esc(e['subject'])} <small>({esc(missed_because(e, state['max_steps']))})"
              "</small>" for e in emails if e["urgent"] and not handled_urgently_state(e, state["max_steps"])]
    violations = [f"{pill(v['severity'], v['severity'])} step {esc(v['step'])} {esc(v['rule'])}: {esc(v['detail'])} "
                  f"<small>penalty {esc(v['penalty'])}</small>"
                  for v in state["violations"]]
    outcome = {
        "Emails": str(len(emails)),
        "Closed": str(sum(e["status"] != "open" for e in emails)),
        "Closed right": str(sum(e["status"] == e["true_outcome"] for e in emails)),
        "Escalation budget used": f"{state['escalations']} of {state['escalation_budget']}",
        "Penalty": f"{state['penalty']:.4f}",
    }
    return ('<div class="aaos-world" id="aaos-report">'
            + section("Outcome", chips(outcome))
            + section("Categories (rows: true, columns: closed with)", _table(["true \\ given", *columns], rows),
                      wide=True)
            + section("Missed urgent emails", items(missed, "No urgent email missed."), len(missed))
            + section("Violations", items(violations, "No violations."), len(violations))
            + "</div>")


def missed_because(email: Mapping[str, Any], max_steps: int) -> str:
    """Why an urgent email was not handled in time (handled_urgently_state): each of its outcome, its priority and
    when it closed that fell short."""
    reasons = []
    if email["status"] == "open":
        reasons.append(f"still open, should be {email['true_outcome']}")
    elif email["status"] != email["true_outcome"]:
        reasons.append(f"{email['status']}, should be {email['true_outcome']}")
    if email["priority"] != "high":
        reasons.append(f"priority {email['priority'] or 'not set'}, should be high")
    if email["closed_step"] is not None and email["closed_step"] >= max_steps / 2:
        reasons.append(f"closed at step {email['closed_step']}: urgent emails must close before step {max_steps / 2:g}")
    return "; ".join(reasons)


def handled_urgently_state(email: Mapping[str, Any], max_steps: int) -> bool:
    """graders.handled_urgently over an email as state() writes it."""
    return (email["status"] == email["true_outcome"] and email["priority"] == "high"
            and email["closed_step"] is not None and email["closed_step"] < max_steps / 2)
