"""What the Chief of Staff Arena declares: its role, stakeholders, calendar, actions, tasks and reward weights.

The calendar has one slot per step: SLOTS_PER_DAY slots a day (morning, midday, afternoon, evening), so step t
is slot t % 4 of day t // 4. The chief of staff acts at step t, then slot t is lived: the meetings booked in it
are held.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

from aaos.core.spec import ActionSpec, RewardComponent, TaskSpec

ROLE = "chief_of_staff"
ROLES: tuple[str, ...] = (ROLE,)

Stakeholder = Literal["principal", "board", "direct_reports", "customers", "family"]
STAKEHOLDERS: tuple[str, ...] = get_args(Stakeholder)
WORK_STAKEHOLDERS: tuple[str, ...] = STAKEHOLDERS[:-1]
Audience = Literal["principal", "board", "direct_reports", "customers", "family", "all"]
Slot = Literal["morning", "midday", "afternoon", "evening"]
SLOTS: tuple[str, ...] = get_args(Slot)
SLOTS_PER_DAY = len(SLOTS)
WORK_SLOTS: tuple[str, ...] = SLOTS[:-1]
EVENING = "evening"
Tone = Literal["transparent", "reassuring", "concise"]
TONES: tuple[str, ...] = get_args(Tone)
Block = Literal["family_evening", "focus_morning"]
BLOCKS: dict[str, str] = {"family_evening": "evening", "focus_morning": "morning"}
"""Each protectable block and the slot it keeps free of work."""
Reason = Literal["conflict", "capacity", "low_priority"]
REASONS: tuple[str, ...] = get_args(Reason)
Criticality = Literal["low", "medium", "high", "critical"]
CRITICALITIES: tuple[str, ...] = get_args(Criticality)
CRITICALITY_WEIGHT: dict[str, int] = {"low": 1, "medium": 2, "high": 3, "critical": 5}
MAX_DAYS = 15
Day = Field(ge=0, lt=MAX_DAYS, description="Day of the episode, 0 = the first.")
RequestId = Field(min_length=1, max_length=40, pattern=r"^req_[a-z0-9_]+$")


class Empty(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ScheduleArgs(Empty):
    request_id: str = RequestId
    day: int = Day
    slot: Slot


class DeferArgs(Empty):
    request_id: str = RequestId
    to_day: int = Day


class DeclineArgs(Empty):
    request_id: str = RequestId
    reason: Reason


class ProtectArgs(Empty):
    block: Block
    day: int = Day


class MessageArgs(Empty):
    audience: Audience
    tone: Tone


class CheckInArgs(Empty):
    stakeholder: Stakeholder


ACTIONS: tuple[ActionSpec, ...] = (
    ActionSpec("schedule", ScheduleArgs, ROLES,
               "Book an open request into the calendar at day/slot (it occupies `duration` slots from there); "
               "its dependencies must be booked earlier."),
    ActionSpec("defer", DeferArgs, ROLES, "Put an open request aside until a later day (it reopens then)."),
    ActionSpec("decline", DeclineArgs, ROLES,
               "Turn a request down, giving the reason (a false reason costs more trust)."),
    ActionSpec("protect", ProtectArgs, ROLES, "Keep a block (family evening, focus morning) of a day free of work."),
    ActionSpec("message", MessageArgs, ROLES,
               "Update a stakeholder (or all) in a tone; repairs trust after bad news, annoys without any."),
    ActionSpec("check_in", CheckInArgs, ROLES,
               "Ask a stakeholder what they want now: reveals their current preferred slot and tone and the slot "
               "that is out for them (it costs the turn, and asking again soon after annoys them)."),
    ActionSpec("no_op", Empty, ROLES, "Do nothing this step."),
)

REWARD_WEIGHTS: dict[str, float] = {
    "outcomes": 0.35,
    "relationships": 0.25,
    "alignment": 0.20,
    "commitments": 0.10,
    "wellbeing": 0.10,
}
REWARD_COMPONENTS: tuple[RewardComponent, ...] = (
    RewardComponent("outcomes", REWARD_WEIGHTS["outcomes"],
                    "Criticality-weighted share of arrived requests met: 1 if held by its deadline, halved per day "
                    "late, 0 for a no-show (held in a slot its stakeholder drifted away from), 1 for declining the "
                    "loser of a contradictory pair whose partner is met, 0 otherwise."),
    RewardComponent("relationships", REWARD_WEIGHTS["relationships"],
                    "0.7 x importance-weighted mean trust + 0.3 x the lowest trust (no stakeholder may be "
                    "sacrificed); trust moves with a delay, and the final grade counts every pending change."),
    RewardComponent("alignment", REWARD_WEIGHTS["alignment"],
                    "Share of arrived requests booked in the slot their stakeholder prefers when the meeting is held "
                    "(the preference in force, after any drift)."),
    RewardComponent("commitments", REWARD_WEIGHTS["commitments"],
                    "Share of commitments (bookings and protections) kept (no double booking, no contradiction, "
                    "no protection breached) times the share of arrived requests booked; null before any is made."),
    RewardComponent("wellbeing", REWARD_WEIGHTS["wellbeing"],
                    "Mean over lived days of 0.7 x evening (1 protected or family, 0.5 free, 0 work) + 0.3 x "
                    "morning (1 protected focus, 0.5 free or booked, 0 breached)."),
)


@dataclass(frozen=True)
class CosTask:
    """A task and the load its variants draw: how many days, requests, drifts, contradictions, dependencies and
    family-vs-crisis clashes."""

    spec: TaskSpec
    days: int
    requests: int
    drifts: int
    conflicts: int
    dependencies: int
    crises: int


def _task(task_id: str, title: str, difficulty: Literal["easy", "medium", "hard"], days: int, description: str,
          **load: int) -> CosTask:
    spec = TaskSpec(task_id, title, difficulty, days * SLOTS_PER_DAY, description,
                    f"after {days * SLOTS_PER_DAY} steps ({days} days of {SLOTS_PER_DAY} slots)")
    return CosTask(spec, days, **load)


TASKS: tuple[CosTask, ...] = (
    _task("steady_week", "Steady week", "easy", 5,
          "One ordinary week: book the requests as they come, keep evenings for the family; nobody changes "
          "their mind.", requests=7, drifts=0, conflicts=0, dependencies=1, crises=0),
    _task("drifting_priorities", "Drifting priorities", "medium", 10,
          "Two weeks in which stakeholders quietly change what they want, and some requests contradict each "
          "other.", requests=16, drifts=4, conflicts=2, dependencies=2, crises=0),
    _task("crunch_month", "Crunch month", "hard", 15,
          "Three weeks of more requests than slots: deadline cascades, crises that land on family evenings, and "
          "many hidden drifts.", requests=44, drifts=28, conflicts=3, dependencies=4, crises=3),
)
TASKS_BY_ID: dict[str, CosTask] = {t.spec.id: t for t in TASKS}
