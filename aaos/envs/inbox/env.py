"""InboxEnv: the Support Inbox behind the environment protocol.

One role, triage_agent, one action a step. Emails arrive in waves; labels (category, priority) may change freely
while an email is open; closing it (resolve, escalate or ignore) is final and is the only moment it is graded.
The episode ends when every email has arrived and is closed, or at max_steps.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from pydantic import BaseModel

from aaos.core.actions import copy_record, parse_joint_action, problems, result_record
from aaos.core.env import Environment, Episode, JointAction, Observation, StepResult
from aaos.core.reward import RewardLedger, composite
from aaos.core.seeding import holdout_salt, rng, seed_split
from aaos.core.spec import EnvSpec, Identity, Split, assemble_spec
from aaos.envs.inbox import observe
from aaos.envs.inbox.graders import Tally
from aaos.envs.inbox.scenario import Scenario, bank, builtin_scenarios, resolve_scenario
from aaos.envs.inbox.spec import (
    ACTIONS,
    CLOSING_ACTIONS,
    LABEL_ACTIONS,
    REWARD_COMPONENTS,
    ROLE,
    ROLES,
    TASKS,
    TASKS_BY_ID,
    VIOLATIONS,
    WEIGHTS,
)
from aaos.envs.inbox.world import Email, generate

DEFAULT_TASK = "medium"
DEFAULT_SCENARIO = "saas_helpdesk"
VERSION = "4"
"""4: eight plain wordings of every intent in the train bank (was three), so that a trained model meets an intent in
many words rather than learning three by heart (holdout episodes unchanged); 3: a third plain wording of every intent
in the train bank, so train episodes differ from version 2's (holdout ones do not); 2: the view lists the open emails
as rows and the closed ones by id -> how each was closed (closed_emails); the observation's inbox still holds every
arrived email; play and the compact prompt unchanged (1: the first release)."""
REWARD_VERSION = "3"
"""3: classification, priority and resolution grade agreement above chance (Cohen's kappa over the closed emails,
times the share closed), so that one label for every email scores 0 (it scored 0.39 on easy); 2: urgent_handling
counts every urgent email of the episode from the start, so that it does not move when a wave brings urgent emails
(final scores unchanged); 1: the first release."""


IDENTITY = Identity("inbox", "Support Inbox",
                    "A triage agent works a support inbox: classify each email, set its priority and close it the "
                    "right way (resolve, escalate or ignore), urgent ones first; spam and phishing mixed in.",
                    VERSION, REWARD_VERSION, DEFAULT_TASK, DEFAULT_SCENARIO)


def inbox_spec() -> EnvSpec:
    return assemble_spec(IDENTITY, ROLES, TASKS, builtin_scenarios().values(), ACTIONS, REWARD_COMPONENTS)


class InboxEnv(Environment):
    """The Support Inbox. Build it with aaos.make(task, scenario=..., seed=..., env="inbox")."""

    describe = staticmethod(inbox_spec)

    _scenario = staticmethod(resolve_scenario)

    def _build(self, episode: Episode, world: Scenario) -> None:
        task, seed = episode.task, episode.seed
        inbox_task = TASKS_BY_ID[task]
        split: Split = "holdout" if world.split == "holdout" or seed_split(seed) == "holdout" else "train"
        salt = holdout_salt() if split == "holdout" else ""
        self.split = split
        self.company, self.domain, self.vip_accounts = world.company, world.domain, list(world.vip_accounts)
        self.title, self.scenario_id = world.title, world.id  # a file's own id, never its path
        self.max_steps = inbox_task.spec.max_steps
        self.escalation_budget = inbox_task.escalation_budget
        self.last_wave = inbox_task.waves[-1]
        self.emails: list[Email] = generate(world, world.templates or bank(split), inbox_task,
                                            rng("inbox", world.id, task, seed, split, salt))
        self.by_id = {e.id: e for e in self.emails}
        self._arriving = Counter(e.arrives for e in self.emails)  # step -> how many emails arrive then
        self._rows: dict[str, dict[str, Any]] = {}
        self.step_count = 0
        self.escalations = 0
        self.opened_id: str | None = None
        self.violations: list[dict[str, Any]] = []
        self.events: list[dict[str, Any]] = []
        self.penalty = 0.0
        self.last_result: dict[str, Any] | None = None
        self.ledger = RewardLedger()
        self._visible = self._arrived()
        self._tally = Tally.of(self.emails, self._visible, self.max_steps)
        self._done = self._finished()
        self.components = self._tally.components()
        self.score = composite(self.components, WEIGHTS, self.penalty)

    @property
    def done(self) -> bool:
        return self._done

    def _finished(self) -> bool:
        return self.step_count >= self.max_steps or (
            self.step_count >= self.last_wave and self._tally.closed == len(self.emails))

    def _arrived(self) -> list[Email]:
        return [e for e in self.emails if e.arrives <= self.step_count]

    def visible(self) -> list[Email]:
        """The emails that have arrived, in arrival order."""
        return list(self._visible)

    def pending(self) -> list[str]:
        return [e.id for e in self._visible if e.status == "open"]

    def legal_actions(self, role: str) -> dict[str, dict[str, Any]]:
        if role != ROLE:
            raise ValueError(f"unknown role {role!r}; roles are: {ROLE}")
        return observe.legal_actions(self.pending())

    def _violate(self, rule: str, detail: str) -> None:
        severity, penalty = VIOLATIONS[rule]
        self.penalty += penalty
        self.violations.append({"step": self.step_count, "role": ROLE, "rule": rule, "severity": severity,
                                "penalty": penalty, "detail": detail})

    def _find(self, email_id: str) -> Email | None:
        email = self.by_id.get(email_id)
        return email if email is not None and email.arrives <= self.step_count else None

    def _apply(self, kind: str, payload: BaseModel | None) -> tuple[str, str, str | None]:
        """(status, message, reject reason) of one action; changes the inbox."""
        if payload is None or kind == "no_op":
            return "no_effect", "nothing changes", None
        email_id: str = payload.email_id  # type: ignore[attr-defined]
        email = self._find(email_id)
        if email is None:  # the same answer for an id that never existed and one not yet arrived
            return "rejected", f"no email {email_id!r} in the inbox; use an id from the inbox", "unknown_id"
        self._rows.pop(email.id, None)  # whatever this does to the email, its inbox row is built anew
        if email.closed:
            self._violate("relabel_after_close", f"{kind} on {email.id}, {email.status} at step {email.closed_step}")
            return "rejected", f"{email.id} is closed ({email.status}); a closed email is final", "precondition"
        if kind == "open_email":
            if self.opened_id == email.id:
                return "no_effect", f"{email.id} is already open", None
            self.opened_id, email.opened = email.id, True
            return "applied", f"opened {email.id}: see opened_email", None
        if kind in LABEL_ACTIONS:
            field, value = ("category", payload.category) if kind == "classify_email" else (  # type: ignore[attr-defined]
                "priority", payload.level)  # type: ignore[attr-defined]
            if getattr(email, field) == value:
                return "no_effect", f"{email.id} is already labelled {value}", None
            setattr(email, field, value)
            return "applied", f"{email.id}: {field} set to {value} (graded when the email is closed)", None
        outcome = CLOSING_ACTIONS[kind]
        if outcome == "resolved" and email.true_category == "phishing":
            self._violate("resolved_phishing", f"answered {email.id}, a phishing email")
        if outcome == "ignored" and email.urgent:
            self._violate("ignored_urgent", f"ignored {email.id}, an urgent customer email")
        if outcome == "escalated":
            self.escalations += 1
            if self.escalations > self.escalation_budget:
                self._violate("escalation_over_budget",
                              f"escalation {self.escalations} of a budget of {self.escalation_budget}")
        email.status, email.closed_step = outcome, self.step_count
        self._tally.close(email)
        return "applied", f"{email.id} {outcome}", None

    def _step(self, joint_action: JointAction, observe: bool) -> StepResult:
        parsed = parse_joint_action(self.spec, joint_action)
        violations_before = len(self.violations)
        rejected = parsed.rejected.get(ROLE)
        if rejected is not None:
            record = rejected.to_dict(self.step_count)
        else:
            chosen = parsed.actions.get(ROLE)
            kind = chosen.action_type if chosen else "no_op"
            status, message, reason = self._apply(kind, chosen.payload if chosen else None)
            shown = dict(chosen.fields) if chosen else {}
            record = result_record(self.step_count, ROLE, kind, shown, status, message, reason)
        self.last_result = copy_record(record)  # the info's record is the caller's; views copy this one
        self.step_count += 1
        fired = self._arrivals()
        self._done = self._finished()
        self.components = self._tally.components()
        self.score = composite(self.components, WEIGHTS, self.penalty)
        delivery = self.ledger.deliver(self.step_count, self.score, self._done)
        info = {
            "score": self.score,
            "step": self.step_count,
            # the grade reads only closed emails, whose labels are final: all of it is public (partial_scores)
            "reward_breakdown": delivery.breakdown(self.components, self.components, self.penalty, self._done),
            "action_results": {ROLE: record},
            "oversight_events": [dict(v) for v in self.violations[violations_before:]],
            "scenario_events": [dict(e) for e in fired],
            "errors": parsed.errors,
        }
        return StepResult(self.observation() if observe else None, delivery.reward, self._done, info)

    def _arrivals(self) -> list[dict[str, Any]]:
        count = self._arriving[self.step_count]
        if not count:
            return []
        self._visible = self._arrived()
        for email in self._visible:
            if email.arrives == self.step_count:
                self._tally.arrive(email)
        event = {"step": self.step_count, "title": f"{count} new emails arrived"}
        self.events.append(event)
        return [event]

    def check(self, joint_action: JointAction) -> list[str]:
        parsed = parse_joint_action(self.spec, joint_action)
        found = problems(parsed)
        for role, chosen in parsed.actions.items():
            email_id = getattr(chosen.payload, "email_id", None)
            if email_id is None:
                continue
            email = self._find(email_id)
            if email is None:
                found.append(f"{role}: no email {email_id!r} in the inbox")
            elif email.closed:
                found.append(f"{role}: {email_id} is closed ({email.status}); a closed email is final")
        return found

    def _row(self, email: Email) -> dict[str, Any]:
        """An email's inbox row, new each time: built once, kept until an action touches the email (only `_apply`
        changes an email), then copied (a row holds only strings, numbers and booleans)."""
        row = self._rows.get(email.id)
        if row is None:
            row = self._rows[email.id] = observe.email_row(email)
        return dict(row)

    def observation(self) -> Observation:
        rows: list[dict[str, Any]] = []  # every arrived email, for the observation's inbox
        open_rows: list[dict[str, Any]] = []
        closed: dict[str, str] = {}
        for email in self._visible:
            row = self._row(email)
            rows.append(row)
            if email.status == "open":
                open_rows.append(row)
            else:
                closed[email.id] = email.status
        opened = self.by_id.get(self.opened_id) if self.opened_id else None
        elapsed = round(self.step_count / self.max_steps, 4)
        view = {
            "role": ROLE, "step": self.step_count,
            "company": {"name": self.company, "domain": self.domain},
            "vip_accounts": list(self.vip_accounts),
            "escalations_left": max(0, self.escalation_budget - self.escalations),
            "pending_count": len(open_rows), "resolved_count": len(closed), "elapsed_ratio": elapsed,
            "inbox": open_rows, "closed_emails": closed,
            "opened_email": observe.opened_view(opened) if opened is not None else None,
            "legal_actions": self.legal_actions(ROLE),
            "last_action_result": copy_record(self.last_result) if self.last_result is not None else None,
        }
        return {
            "task": self.task, "scenario_id": self.scenario_id, "scenario_title": self.title,
            "step_count": self.step_count, "max_steps": self.max_steps, "done": self._done,
            "agent_observations": {ROLE: view}, "scenario_events": [dict(e) for e in self.events],
            "partial_scores": dict(self.components), "pending_count": len(open_rows),
            "resolved_count": len(closed), "elapsed_ratio": elapsed, "inbox": rows,
        }

    def state(self) -> dict[str, Any]:
        return {
            "task": self.task, "scenario": self.scenario, "seed": self.seed, "split": self.split,
            "step": self.step_count, "max_steps": self.max_steps, "done": self._done,
            "escalations": self.escalations, "escalation_budget": self.escalation_budget,
            "opened_id": self.opened_id, "emails": [e.to_dict() for e in self.emails],
            "violations": [dict(v) for v in self.violations], "penalty": self.penalty,
            "components": dict(self.components), "score": self.score, "held_reward": self.ledger.held,
        }
