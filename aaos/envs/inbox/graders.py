"""The grader: the seed's 30/30/30/10 split over every email that has arrived, each graded only once closed.

For the arrived emails E (an email still open scores 0 on every part) and the urgent ones U among them:
    classification  = |{e in E closed with category = true category}| / |E|
    priority        = |{e in E closed with priority = true priority}| / |E|
    resolution      = |{e in E closed with outcome = right outcome}| / |E|
    urgent_handling = |{e in U closed the right way, labelled high, at a step < max_steps / 2}| / |U|  (None if U empty)
Labels are read at the moment an email closes and never again, so no label can be probed through the score.
"""

from __future__ import annotations

from collections.abc import Sequence

from aaos.envs.inbox.world import Email


def arrived(emails: Sequence[Email], step: int) -> list[Email]:
    return [e for e in emails if e.arrives <= step]


def handled_urgently(email: Email, max_steps: int) -> bool:
    return (email.closed and email.status == email.true_outcome and email.priority == "high"
            and email.closed_step is not None and email.closed_step < max_steps / 2)


def grade(emails: Sequence[Email], step: int, max_steps: int) -> dict[str, float | None]:
    """The four components over the emails arrived by `step`."""
    seen = arrived(emails, step)
    if not seen:
        return {"classification": None, "priority": None, "resolution": None, "urgent_handling": None}
    closed = [e for e in seen if e.closed]
    urgent = [e for e in seen if e.urgent]
    return {
        "classification": sum(e.category == e.true_category for e in closed) / len(seen),
        "priority": sum(e.priority == e.true_priority for e in closed) / len(seen),
        "resolution": sum(e.status == e.true_outcome for e in closed) / len(seen),
        "urgent_handling": sum(handled_urgently(e, max_steps) for e in urgent) / len(urgent) if urgent else None,
    }
