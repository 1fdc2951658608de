"""The grader: the seed's 30/30/30/10 split over every email that has arrived, each graded only once closed.

For the arrived emails E, the closed ones C (an email still open scores 0 on every part) and the urgent ones U of
the whole episode (arrived or not: counting them as they arrive would tell the agent how many of a wave are urgent),
each label (category, priority, outcome) is graded by its agreement above chance over C, Cohen's kappa, times the
share of E closed:
    label grade     = max(0, kappa) * |C| / |E|
    kappa           = (p_o - p_e) / (1 - p_e)  over C: p_o the share closed with the true label, p_e = sum_k t_k * a_k
                      the agreement a labeller gets by chance (t_k the share of C whose true label is k, a_k the share
                      closed labelled k, an unlabelled email labelled "none"); 1 when p_e = 1 (every closed email has
                      one true label and was given it)
    classification, priority, resolution = the label grades of the category, the priority and the outcome
    urgent_handling = |{e in U closed the right way, labelled high, at a step < max_steps / 2}| / |U|  (None if U empty)
A labeller that gives every email one label agrees with the truth exactly as often as chance says (p_o = t_k =
p_e): kappa 0, whatever the label (reward version 2 graded plain agreement, and one fixed category, priority and
closing scored 0.39 on easy); a perfect labeller scores 1. Kappa is taken over the closed emails only, whose labels
are final, so the grade says nothing of an open email. Labels are read at the moment an email closes and never
again, so no label can be probed through the score from the agent's view (closing on a copy of the environment
would: agents never get one); a Tally keeps the counts as emails arrive and close, so a step costs the same however
full the inbox is.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from aaos.envs.inbox.world import Email

Components = dict[str, float | None]


def handled_urgently(email: Email, max_steps: int) -> bool:
    return (email.closed and email.status == email.true_outcome and email.priority == "high"
            and email.closed_step is not None and email.closed_step < max_steps / 2)


@dataclass(slots=True)
class Agreement:
    """One label's counts over the closed emails: how many agree with the truth, and each label's count among the
    true labels and among the labels given."""

    agree: int = 0
    true: Counter[str] = field(default_factory=Counter)
    given: Counter[str] = field(default_factory=Counter)

    def add(self, given: str | None, true: str) -> None:
        self.agree += given == true
        self.true[true] += 1
        self.given["none" if given is None else given] += 1

    def kappa(self, closed: int) -> float:
        """Cohen's kappa over `closed` emails, at least 0 (the module docstring); 0 when none is closed."""
        if not closed:
            return 0.0
        chance = sum(count * self.given[label] for label, count in self.true.items())  # p_e * closed ** 2
        if chance == closed * closed:
            return 1.0
        above = (closed * self.agree - chance) / (closed * closed - chance)
        return above if above > 0.0 else 0.0


@dataclass(slots=True)
class Tally:
    """The rubric's counts over the arrived emails: an email counts once when it arrives and once when it closes
    (its labels and outcome are final then: a closed email cannot be relabelled); `urgent` counts the whole
    episode's urgent emails from the start."""

    max_steps: int
    seen: int = 0
    closed: int = 0
    urgent: int = 0
    category: Agreement = field(default_factory=Agreement)
    priority: Agreement = field(default_factory=Agreement)
    outcome: Agreement = field(default_factory=Agreement)
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
        self.category.add(email.category, email.true_category)
        self.priority.add(email.priority, email.true_priority)
        self.outcome.add(email.status, email.true_outcome)
        if email.urgent:
            self.handled += handled_urgently(email, self.max_steps)

    def components(self) -> Components:
        """The four components (None before any email has arrived; urgent_handling None without urgent ones)."""
        seen, closed = self.seen, self.closed
        if not seen:
            return {"classification": None, "priority": None, "resolution": None, "urgent_handling": None}
        share = closed / seen
        return {
            "classification": self.category.kappa(closed) * share,
            "priority": self.priority.kappa(closed) * share,
            "resolution": self.outcome.kappa(closed) * share,
            "urgent_handling": self.handled / self.urgent if self.urgent else None,
        }
