"""What a language model is told about the Chief of Staff Arena."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aaos.core.kit import Prompting, beside

KNOWN = ("known_slot", "known_unavailable")
"""What the chief knows of a stakeholder's slots, which a booking of their request hangs on."""


def with_known_slots(view: Mapping[str, Any]) -> dict[str, Any]:
    """The view with each request carrying, after its stakeholder, what is known of that stakeholder's slots: the
    champion books the known preferred slot, never the one said to be out, and a small model reads that from the
    request's own row far more easily than it joins the requests to the stakeholders."""
    stakeholders = view.get("stakeholders", {})
    requests = []
    for request in view.get("requests", []):
        known = stakeholders.get(request.get("stakeholder"), {})
        requests.append(beside(request, "stakeholder", {field: known[field] for field in KNOWN if field in known}))
    return {**view, "requests": requests} if "requests" in view else dict(view)


PROMPTING = Prompting(
    world="You are the {roles} of a busy principal. Each step is one calendar slot (morning, midday, afternoon, "
          "evening; four a day) and you take one action.",
    rules=("Book each open request (schedule) in a free, unprotected slot by its deadline, after its dependencies; "
           "a double booking, booking work into a protected block, or booking both of two contradicting requests "
           "is a violation, and so is leaving a critical request undecided. Decline honestly (a false reason costs "
           "more trust). Stakeholders' preferred slot and tone drift without notice: the drift count rises, the slot "
           "someone drifted away from is out for them (a meeting there is a no-show), and check_in tells you what "
           "someone wants now (asking again soon after annoys them). Trust moves days after what caused it. "
           "Messages repair trust only when there is bad news to explain. The score weighs outcomes, relationships "
           "(no stakeholder may be sacrificed), alignment with current preferences, kept commitments and the "
           "principal's wellbeing."),
    briefs={"chief_of_staff": "Triage the request queue, guard family evenings, keep every stakeholder's trust and "
                              "notice when what they want has changed."},
    view_order=("now", "stakeholders", "drift_count", "drift_steps", "calendar", "requests", "closed", "reactions"),
    compact_omit=frozenset({"title"}),
    compact_joined=with_known_slots,
)
