"""The grader: the seed's 30/30/30/10 split over every email that has arrived, each graded only once closed.

For the arrived emails E (an email still open scores 0 on every part) and the urgent ones U of the whole episode
(arrived or not: counting them as they arrive would tell the agent how many of a wave are urgent):
    classification  = |{e in E closed with category = true category}| / |E|
    priority        = |{e in E closed with priority = true priority}| / |E|
    resolution      = |{e in E closed with outcome = right outcome}| / |E|
    urgent_handling = |{e in U closed the right way, labelled high, at a step < max_steps / 2}| / |U|  (None if U empty)
Labels are read at the moment an email closes and never again, so no label can be probed through the score from
the agent's view (closing on a copy of the environment would: agents never get one); a Tally keeps the counts as
emails arrive and close, so a step costs the same however full the inbox is.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from aaos.envs.inbox.world import Email

Components = dict[str, float | None]


def handled_urgently(email: Email, max_steps: int) -> bool:
    return (email.closed and email.status == email.true_outcome and email.priority == "high"
            and email.closed_step is not None and email.closed_step < max_steps / 2)


@dataclass(slots=True)
class Tally:
    """The rubric's counts over the arrived emails: an email counts once when it arrives and once when it closes
    (its labels and outcome are final then: a closed email cannot be relabelled); `urgent` counts the whole
    episode's urgent emails from the start."""

    max_steps: int
    seen: int = 0
    closed: int = 0
    urgent: int = 0
    category: int = 0
    priority: int = 0
    outcome: int = 0
    handled: int = 0

    @classmethod
    def of(cls, emails: Sequence[Email], arrived: Sequence[Email], max_steps: int) -> Tally:
        """The counts over `arrived` of the episode's `emails`, from scratch."""
        tally = cls(max_steps, urgent=sum(email.urgent for email in emails))
        for email in arrived:
            tally.arrive(email)
            if email.closed:
                tally.close(email)
        return tally

    def arrive(self, email: Email) -> None:
        self.seen += 1

    def close(self, email: Email) -> None:
        self.closed += 1
        self.category += email.category == email.true_category
        self.priority += email.priority == email.true_priority
        self.outcome += email.status == email.true_outcome
        if email.urgent:
            self.handled += handled_urgently(email, self.max_steps)

    def components(self) -> Components:
        """The four components (None before any email has arrived; urgent_handling None without urgent ones)."""
        seen = self.seen
        if not seen:
            return {"classification": None, "priority": None, "resolution": None, "urgent_handling": None}
        return {
            "classification": self.category / seen,
            "priority": self.priority / seen,
            "resolution": self.outcome / seen,
            "urgent_handling": self.handled / self.urgent if self.urgent else None,
        }
