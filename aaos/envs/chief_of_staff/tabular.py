"""The Chief of Staff Arena for tabular learners (aaos.core.kit.EnvKit.tabular): a compact state of the chief of
staff's view and a handful of named moves built from its legal actions with the champion's own helpers.

State (one key, e.g. "o2|c3|s1|e1|u0|d1|m0|t1"): open requests (0, 1, 2, 3+), the top request's criticality
weight (0 when none), whether it can be booked by its deadline, whether an evening of today or tomorrow is
unprotected, whether updates are awaited, whether a drift happened since the stalest check-in, whether a
stakeholder said a meeting missed their wishes since they were last asked, and the time of day.

Moves: book (the champion's slot for the top request), book_any (its earliest free slot), decline (the top
request, with a true reason where one holds), protect (tonight or tomorrow's evening), update (the
stakeholder with most news, in their known tone), check_in (who a reaction or a drift points to), no_op.
"""

from __future__ import annotations

from typing import Any

from aaos.core.policy import Action, action
from aaos.envs.chief_of_staff.champion import CosChampion, bookable
from aaos.envs.chief_of_staff.spec import CRITICALITY_WEIGHT, EVENING, SLOTS, WORK_SLOTS

View = dict[str, Any]
_RULES = CosChampion()


def _first(chosen: Action | None, kind: str) -> Action | None:
    return chosen if chosen is not None and chosen["action_type"] == kind else None


def _earliest(view: View, request: dict[str, Any]) -> Action | None:
    slots = (EVENING,) if request["stakeholder"] == "family" else WORK_SLOTS
    for row in view["calendar"]:
        for slot in slots:
            if _RULES._fits(view, request, row["day"], slot):
                return action("schedule", request_id=request["id"], day=row["day"], slot=slot)
    return None


def _decline(view: View, request: dict[str, Any]) -> Action:
    booked = {r["id"] for r in view["requests"] if r["status"] == "scheduled"} | set(view["closed"]["held"])
    if any(p in booked for p in request["conflicts"]):
        reason = "conflict"
    elif request["criticality"] == "low":
        reason = "low_priority"
    else:
        reason = "capacity"
    return action("decline", request_id=request["id"], reason=reason)


def moves(view: View) -> dict[str, Action]:
    """The named moves available in `view` (each a legal action; no_op always)."""
    found: dict[str, Action] = {}
    legal = view["legal_actions"]
    queue = _RULES._open(view)
    if queue and "schedule" in legal:
        top = queue[0]
        handled = _RULES._handle(view, top)
        if handled is not None and handled["action_type"] == "schedule":
            found["book"] = handled
        earliest = _earliest(view, top)
        if earliest is not None and earliest != found.get("book"):
            found["book_any"] = earliest
        found["decline"] = _decline(view, top)
    if "protect" in legal and (protect := _first(_RULES._protect_evening(view), "protect")) is not None:
        found["protect"] = protect
    if (update := _RULES._update(view)) is not None:
        found["update"] = update
    check = _RULES._confirm_misalignment(view) or _RULES._catch_up(view)
    if check is not None:
        found["check_in"] = check
    found["no_op"] = action("no_op")
    return found


def state(view: View) -> str:
    queue = _RULES._open(view)
    top = queue[0] if queue else None
    spot = top is not None and any(bookable(view, top, day, slot) for day in range(view["now"]["day"],
                                   min(view["now"]["days"] - 1, top["deadline_day"]) + 1) for slot in SLOTS)
    features = {
        "o": min(len(queue), 3),
        "c": CRITICALITY_WEIGHT[top["criticality"]] if top else 0,
        "s": int(spot),
        "e": int(_first(_RULES._protect_evening(view), "protect") is not None),
        "u": int(any(s["awaiting_update"] for s in view["stakeholders"].values())),
        "d": int(_RULES._catch_up(view) is not None),
        "m": int(_RULES._confirm_misalignment(view) is not None),
        "t": SLOTS.index(view["now"]["slot"]) if view["now"]["slot"] else 0,
    }
    return "|".join(f"{k}{v}" for k, v in features.items())


def tabular(view: View) -> tuple[str, dict[str, Action]]:
    return state(view), moves(view)
