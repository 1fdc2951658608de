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


def handled_urgently(email: Email, max_steps: int) -> bool:
    return (email.closed and email.status == email.true_outcome and email.priority == "high"
            and email.closed_step is not None and email.closed_step < max_steps / 2)


def grade(arrived: Sequence[Email], max_steps: int) -> dict[str, float | None]:
    """The four components over the emails arrived so far (`arrived`), in one pass."""
    if not arrived:
        return {"classification": None, "priority": None, "resolution": None, "urgent_handling": None}
    category = priority = outcome = urgent = handled = 0
    for e in arrived:
        if e.status != "open":
            category += e.category == e.true_category
            priority += e.priority == e.true_priority
            outcome += e.status == e.true_outcome
        if e.true_priority == "high":
            urgent += 1
            handled += handled_urgently(e, max_steps)
    seen = len(arrived)
    return {
        "classification": category / seen,
        "priority": priority / seen,
        "resolution": outcome / seen,
        "urgent_handling": handled / urgent if urgent else None,
    }
