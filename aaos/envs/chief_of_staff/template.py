"""The template policy: a fixed script (book the oldest open request in the first free slot, else protect
tonight, else wait). A baseline between random and the champion; it knows nothing of preferences, conflicts or
trust."""

from __future__ import annotations

from typing import Any

from aaos.core.policy import Action, Policy, action
from aaos.envs.chief_of_staff.champion import bookable
from aaos.envs.chief_of_staff.spec import EVENING, WORK_SLOTS


class CosTemplate(Policy):
    name = "template"

    def act_role(self, role: str, view: dict[str, Any]) -> Action:
        today, last = view["now"]["day"], view["now"]["days"] - 1
        for request in (r for r in view["requests"] if r["status"] == "open"):
            slots = (EVENING,) if request["stakeholder"] == "family" else WORK_SLOTS
            for day in range(today, last + 1):
                for slot in slots:
                    if bookable(view, request, day, slot):
                        return action("schedule", request_id=request["id"], day=day, slot=slot)
        tonight = view["calendar"][0]["slots"][EVENING]
        if "protect" in view["legal_actions"] and tonight["protected"] is None and not tonight["booked"] \
                and view["now"]["slot"] is not None:
            return action("protect", block="family_evening", day=today)
        return action("no_op")
