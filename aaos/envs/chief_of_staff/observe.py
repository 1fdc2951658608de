"""What the chief of staff sees: the queue, the calendar, coarse trust, reactions and the drift count (never what
drifted, true preferences, importance or exact trust), and its legal actions."""

from __future__ import annotations

from typing import Any

from aaos.core.fresh import copier
from aaos.envs.chief_of_staff.graders import Components, public_grade
from aaos.envs.chief_of_staff.spec import BLOCKS, REASONS, ROLE, SLOTS, SLOTS_PER_DAY, STAKEHOLDERS, TONES
from aaos.envs.chief_of_staff.world import BLOCKS_AT, DRIFT_TITLE, REACTIONS_SHOWN, Request, World

AUDIENCES: list[str] = [*STAKEHOLDERS, "all"]
TRUST_LEVELS = ((0.4, "low"), (0.7, "medium"))
QUEUED = frozenset(("open", "deferred", "scheduled"))
"""The statuses of the requests in the queue; the closed ones are listed by id under CLOSED."""
CLOSED = ("held", "declined", "missed")


def coarse(trust: float) -> str:
    for bound, label in TRUST_LEVELS:
        if trust < bound:
            return label
    return "high"


def request_view(world: World, request: Request) -> dict[str, Any]:
    """A request as the chief of staff sees it: links to requests not arrived yet are not shown until they do."""
    p = request.plan
    if p.dependencies or p.conflicts:
        requests = world.requests
        dependencies = [r for r in p.dependencies if requests[r].status != "upcoming"]
        conflicts = [r for r in p.conflicts if requests[r].status != "upcoming"]
    else:
        dependencies, conflicts = [], []
    booked = {"day": request.day, "slot": SLOTS[request.slot]} if request.slot is not None else None
    return {"id": p.id, "stakeholder": p.stakeholder, "title": p.title, "criticality": p.criticality,
            "duration": p.duration, "deadline_day": p.deadline, "dependencies": dependencies,
            "conflicts": conflicts, "crisis": p.crisis, "status": request.status, "booked": booked,
            "reopens_day": request.reopens}


_free_day = copier({name: {"booked": [], "protected": None} for name in SLOTS})
"""A new day of the calendar with nothing booked or protected."""
KEPT_SLOTS: tuple[int, ...] = tuple(slot for slot in range(SLOTS_PER_DAY) if BLOCKS_AT[slot])
"""The slots some block keeps (the only ones that can be protected)."""


def calendar(world: World) -> list[dict[str, Any]]:
    """Every day x slot from today: what is booked there and which block protects it."""
    first = world.day
    days = [{"day": day, "slots": _free_day()} for day in range(first, world.days)]
    for start, booked in world.bookings.items():
        day, slot = divmod(start, SLOTS_PER_DAY)
        if first <= day < first + len(days):
            days[day - first]["slots"][SLOTS[slot]]["booked"] = list(booked)
    protected = world.protected
    for slot in KEPT_SLOTS:
        name = SLOTS[slot]
        for entry in days:
            entry["slots"][name]["protected"] = protected(entry["day"], slot)
    return days


def legal_actions(world: World) -> dict[str, dict[str, Any]]:
    if world.done:
        return {"no_op": {}}
    open_ids = [r.id for r in world.open()]
    days = list(range(world.day, world.days))
    legal: dict[str, dict[str, Any]] = {}
    if open_ids:
        legal["schedule"] = {"request_id": open_ids, "day": days, "slot": list(SLOTS)}
        if len(days) > 1:
            legal["defer"] = {"request_id": open_ids, "to_day": days[1:]}
        legal["decline"] = {"request_id": open_ids, "reason": list(REASONS)}
    legal["protect"] = {"block": list(BLOCKS), "day": list(days)}
    legal["message"] = {"audience": list(AUDIENCES), "tone": list(TONES)}
    legal["check_in"] = {"stakeholder": list(STAKEHOLDERS)}
    legal["no_op"] = {}
    return legal


def view(world: World, last_result: dict[str, Any] | None) -> dict[str, Any]:
    queue = []
    closed: dict[str, list[str]] = {status: [] for status in CLOSED}
    for request in world.arrived:
        status = request.status
        if status in QUEUED:
            queue.append(request_view(world, request))
        elif status in closed:
            closed[status].append(request.id)
    return {
        "role": ROLE,
        "step": world.step,
        "now": {"day": world.day, "slot": SLOTS[world.step % SLOTS_PER_DAY] if not world.done else None,
                "days": world.days},
        "stakeholders": {s: {"trust": coarse(world.trust[s]), "known_slot": world.known_slot[s],
                             "known_tone": world.known_tone[s], "known_unavailable": world.known_barred[s],
                             "last_check_in": world.last_check[s],
                             "awaiting_update": world.news[s]} for s in STAKEHOLDERS},
        "drift_count": world.drift_count,
        "drift_steps": [e["step"] for e in world.fired if e["title"] == DRIFT_TITLE],
        "requests": queue,
        "closed": closed,
        "calendar": calendar(world),
        "reactions": [dict(r) for r in world.reactions[-REACTIONS_SHOWN:]],
        "legal_actions": legal_actions(world),
        "last_action_result": last_result,
    }


def observation(world: World, scenario_id: str, title: str, last_result: dict[str, Any] | None,
                components: Components) -> dict[str, Any]:
    """The observation; `components`: the world's grade now (its public part becomes partial_scores)."""
    return {
        "task": world.task.spec.id,
        "scenario_id": scenario_id,
        "scenario_title": title,
        "step_count": world.step,
        "max_steps": world.max_steps,
        "done": world.done,
        "agent_observations": {ROLE: view(world, last_result)},
        "scenario_events": [dict(e) for e in world.fired],
        "partial_scores": public_grade(components),
        "drift_count": world.drift_count,
    }
