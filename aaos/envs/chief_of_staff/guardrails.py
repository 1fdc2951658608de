"""The guarded advisor's guardrails for the Chief of Staff Arena: legal actions that are still unsafe."""

from __future__ import annotations

from aaos.core.kit import View
from aaos.core.policy import Action
from aaos.envs.chief_of_staff.champion import bookable


def guardrail(role: str, action: Action, view: View) -> str | None:
    """Why a legal action is unsafe, or None: a booking into a taken or protected slot (or before its
    dependencies), a booking that contradicts a booked request, declining a critical request that contradicts
    nothing booked, or a message to
    someone with no news."""
    kind, payload = action["action_type"], action["payload"]
    requests = {r["id"]: r for r in view["requests"]}
    booked = {r["id"] for r in view["requests"] if r["status"] == "scheduled"} | set(view["closed"]["held"])
    if kind == "schedule":
        request = requests[payload["request_id"]]
        if not bookable(dict(view), request, payload["day"], payload["slot"]):
            return "slot_not_free"
        if any(p in booked for p in request["conflicts"]):
            return "contradictory_commitment"
    if kind == "decline":
        request = requests[payload["request_id"]]
        if request["criticality"] == "critical" and not any(p in booked for p in request["conflicts"]):
            return "declines_critical"
    if kind == "message":
        audience = payload["audience"]
        waiting = [s for s, v in view["stakeholders"].items() if v["awaiting_update"]]
        if (audience == "all" and not waiting) or (audience != "all" and audience not in waiting):
            return "no_news"
    return None
