"""The champion router: rules over the chief of staff's own view only (no hidden state).

Each step it takes the first of:
1. a critical request (a crisis) that can be booked or must be declined, handled at once;
2. a check-in with a stakeholder who said a meeting was not at their preferred time, or could not make it, since
   the last check-in;
3. the most critical open request (earliest deadline first): declined if a contradicting request is booked,
   else booked in the stakeholder's known preferred slot on the earliest day by its deadline, else any free
   work slot by then, else late (medium and above) or declined for capacity; never in a slot the stakeholder
   said is out for them;
4. an update to the stakeholder with most bad news waiting, in their known tone;
5. a check-in with a stakeholder not heard since the last drift marker;
6. the family evening of today or tomorrow protected while free of work (in a turn nothing else needs: placed
   second, it took the first turn of each day, and the champion without it scored more on every task);
7. no_op.
"""

from __future__ import annotations

from typing import Any

from aaos.core.policy import Action, Policy, action
from aaos.envs.chief_of_staff.spec import (
    CRITICALITY_WEIGHT,
    EVENING,
    SLOTS,
    SLOTS_PER_DAY,
    WORK_SLOTS,
    WORK_STAKEHOLDERS,
)
from aaos.envs.chief_of_staff.world import GRACE_DAYS, NO_SHOW_NOTE

View = dict[str, Any]
MISALIGNED_NOTE = "not their preferred time"


def _cell(view: View, day: int, slot: str) -> dict[str, Any] | None:
    rows = view["calendar"]
    index = day - view["now"]["day"]
    return rows[index]["slots"][slot] if 0 <= index < len(rows) else None


def bookable(view: View, request: dict[str, Any], day: int, slot: str) -> bool:
    """Free and unprotected for the request's duration (a family event may go into a protected family evening), in
    the future, within the day, after its dependencies."""
    start = day * SLOTS_PER_DAY + SLOTS.index(slot)
    if start < view["step"] or SLOTS.index(slot) + request["duration"] > SLOTS_PER_DAY:
        return False
    for i in range(request["duration"]):
        cell = _cell(view, day, SLOTS[SLOTS.index(slot) + i])
        if cell is None or cell["booked"] or (cell["protected"] and not (
                cell["protected"] == "family_evening" and request["stakeholder"] == "family")):
            return False
    booked = {r["id"]: r["booked"] for r in view["requests"] if r["booked"]}
    for dep in request["dependencies"]:
        if dep in view["closed"]["held"]:
            continue
        at = booked.get(dep)
        if at is None:
            return False
        length = next(r["duration"] for r in view["requests"] if r["id"] == dep)
        if at["day"] * SLOTS_PER_DAY + SLOTS.index(at["slot"]) + length > start:
            return False
    return True


class CosChampion(Policy):
    """The production policy of the Chief of Staff Arena (see the module docstring for its rules)."""

    name = "heuristic"

    def act_role(self, role: str, view: View) -> Action:
        for rule in (self._crisis, self._confirm_misalignment, self._triage, self._update, self._catch_up,
                     self._protect_evening):
            chosen = rule(view)
            if chosen is not None:
                return chosen
        return action("no_op")

    def preferred_slot(self, view: View, stakeholder: str, day: int) -> str:
        return str(view["stakeholders"][stakeholder]["known_slot"])

    def unavailable(self, view: View, stakeholder: str, day: int, slot: str) -> bool:
        """Whether the stakeholder said `slot` is out for them (check_in tells)."""
        return bool(view["stakeholders"][stakeholder]["known_unavailable"] == slot)

    def preferred_tone(self, view: View, stakeholder: str) -> str:
        return str(view["stakeholders"][stakeholder]["known_tone"])

    def checks_in(self) -> bool:
        return True

    # --- rules --------------------------------------------------------------------------------------------------

    def _open(self, view: View) -> list[dict[str, Any]]:
        found = [r for r in view["requests"] if r["status"] == "open"]
        return sorted(found, key=lambda r: (-self.priority(view, r), r["deadline_day"], r["id"]))

    def priority(self, view: View, request: dict[str, Any]) -> float:
        return CRITICALITY_WEIGHT[request["criticality"]]

    def _crisis(self, view: View) -> Action | None:
        critical = [r for r in self._open(view) if r["criticality"] == "critical"]
        return self._handle(view, critical[0]) if critical else None

    def _protect_evening(self, view: View) -> Action | None:
        if "protect" not in view["legal_actions"]:
            return None
        today = view["now"]["day"]
        for day in (today, today + 1):
            cell = _cell(view, day, EVENING)
            if cell is not None and cell["protected"] is None and not self._work_booked(view, cell) \
                    and day * SLOTS_PER_DAY + SLOTS.index(EVENING) >= view["step"]:
                return action("protect", block="family_evening", day=day)
        return None

    def _work_booked(self, view: View, cell: dict[str, Any]) -> bool:
        owners = {r["id"]: r["stakeholder"] for r in view["requests"]}
        return any(owners.get(i, "work") != "family" for i in cell["booked"])

    def _confirm_misalignment(self, view: View) -> Action | None:
        if not self.checks_in():
            return None
        for reaction in reversed(view["reactions"]):
            who = reaction["stakeholder"]
            last = view["stakeholders"][who]["last_check_in"]
            if reaction["note"] in (MISALIGNED_NOTE, NO_SHOW_NOTE) and (last is None or reaction["step"] > last):
                return action("check_in", stakeholder=who)
        return None

    def _triage(self, view: View) -> Action | None:
        for request in self._open(view):
            chosen = self._handle(view, request)
            if chosen is not None:
                return chosen
        return None

    def _handle(self, view: View, request: dict[str, Any]) -> Action | None:
        booked = {r["id"] for r in view["requests"] if r["status"] == "scheduled"} | set(view["closed"]["held"])
        if any(p in booked for p in request["conflicts"]):
            return action("decline", request_id=request["id"], reason="conflict")
        dropped = set(view["closed"]["declined"]) | set(view["closed"]["missed"])
        if any(d in dropped for d in request["dependencies"]):
            return action("decline", request_id=request["id"], reason="capacity")
        if not all(d in booked for d in request["dependencies"]):
            return None  # its dependencies are not booked yet
        spot = self._spot(view, request)
        if spot is not None:
            return action("schedule", request_id=request["id"], day=spot[0], slot=spot[1])
        if request["criticality"] == "low":
            return action("decline", request_id=request["id"], reason="low_priority")
        return action("decline", request_id=request["id"], reason="capacity")

    def _spot(self, view: View, request: dict[str, Any]) -> tuple[int, str] | None:
        today, last = view["now"]["day"], view["now"]["days"] - 1
        family = request["stakeholder"] == "family"
        slots = (EVENING,) if family else WORK_SLOTS
        deadline = min(last, request["deadline_day"])
        for day in range(today, deadline + 1):
            slot = EVENING if family else self.preferred_slot(view, request["stakeholder"], day)
            if self._fits(view, request, day, slot):
                return day, slot
        for day in range(today, deadline + 1):
            for slot in slots:
                if self._fits(view, request, day, slot):
                    return day, slot
        if request["criticality"] != "low":
            for day in range(deadline + 1, min(last, request["deadline_day"] + GRACE_DAYS) + 1):
                for slot in slots:
                    if self._fits(view, request, day, slot):
                        return day, slot
        return None

    def _fits(self, view: View, request: dict[str, Any], day: int, slot: str) -> bool:
        return not self.unavailable(view, request["stakeholder"], day, slot) and bookable(view, request, day, slot)

    def _update(self, view: View) -> Action | None:
        waiting = {s: v["awaiting_update"] for s, v in view["stakeholders"].items() if v["awaiting_update"]}
        if not waiting:
            return None
        who = max(waiting, key=lambda s: (waiting[s], s))
        return action("message", audience=who, tone=self.preferred_tone(view, who))

    def _catch_up(self, view: View) -> Action | None:
        if not self.checks_in():
            return None
        drifts = view["drift_steps"]
        if not drifts:
            return None
        stale = [s for s in WORK_STAKEHOLDERS
                 if view["stakeholders"][s]["last_check_in"] is None
                 or view["stakeholders"][s]["last_check_in"] < max(drifts)]
        return action("check_in", stakeholder=stale[0]) if stale else None
