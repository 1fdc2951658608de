"""The ground truth of an episode and how it moves: bookings, the living of each slot, drifts, arrivals, expiry
and trust that lands TRUST_DELAY steps after what caused it.

An offered action whose combination of choices cannot be carried out (a past slot, a meeting that does not fit,
a dependency not booked before it) is valid but wasted: status no_effect, the message says why.

A slot drift moves a work stakeholder's preferred slot and makes the slot they left unavailable to them: a
meeting held there is a no-show (no outcome credit, a broken commitment). Only check_in reveals what moved.

Trust changes (all land TRUST_DELAY steps later; w = criticality weight / 5):
    held on time +0.02 + 0.04 w, held late -0.03 per day late, in the slot preferred when it is held +0.02 else -0.08,
    double booked -0.06, contradicted -0.05, no-show -0.10 - 0.10 w, missed -0.05 - 0.10 w, declined
    -0.02 - 0.04 w (false reason: -0.05 - 0.08 w), deferred -0.01 - 0.02 w, protection breached (family) -0.15,
    message to someone with bad news pending +0.03 per item (at most 3) in their tone, +0.01 in another;
    to someone without -0.02; check_in after they drifted +0.02, within CHECK_IN_NAG steps of the last -0.02.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from itertools import islice, pairwise
from typing import Any

from aaos.envs.chief_of_staff.scenario import Plan, RequestPlan
from aaos.envs.chief_of_staff.spec import (
    BLOCKS,
    CRITICALITY_WEIGHT,
    SLOTS,
    SLOTS_PER_DAY,
    STAKEHOLDERS,
    CosTask,
)

TRUST_DELAY = 4
"""Steps between an action (or a meeting) and the change of trust it causes."""
GRACE_DAYS = 2
"""Days after its deadline a request may still be booked (late); after them it is missed."""
IGNORE_WINDOW = 4
"""Steps a critical request may stay open untouched before it counts as ignored."""
CHECK_IN_NAG = 8
MISALIGNED_COST = 0.08
"""Trust lost when a meeting is held outside its stakeholder's preferred slot (in force when booked)."""
NO_SHOW_NOTE = "could not make that time any more"
REACTIONS_SHOWN = 8
DRIFT_TITLE = "Someone's priorities shifted"
"""The scenario event of a drift: it says when, never who or what."""

PENALTIES: dict[str, tuple[str, float]] = {
    "double_booking": ("high", 0.06),
    "protection_breach": ("medium", 0.04),
    "contradictory_commitment": ("high", 0.06),
    "critical_request_ignored": ("critical", 0.08),
}
"""Violation rule -> (severity, penalty added to P; the composite is base / (1 + P))."""

BOOKED = ("scheduled", "held")
BLOCKS_AT: dict[int, tuple[str, ...]] = {
    slot: tuple(block for block, kept in BLOCKS.items() if SLOTS.index(kept) == slot) for slot in range(SLOTS_PER_DAY)
}
"""Slot index -> the blocks that keep that slot, in BLOCKS order."""


@dataclass(slots=True)
class Request:
    plan: RequestPlan
    status: str = "upcoming"  # upcoming, open, deferred, scheduled, held, declined, missed
    day: int | None = None
    slot: int | None = None
    reopens: int | None = None
    aligned: bool | None = None
    double_booked: bool = False
    contradicted: bool = False
    reason: str | None = None
    reason_true: bool | None = None
    touched: bool = False
    flagged: bool = False
    no_show: bool = False

    @property
    def id(self) -> str:
        return self.plan.id

    @property
    def weight(self) -> int:
        return CRITICALITY_WEIGHT[self.plan.criticality]

    @property
    def start(self) -> int:
        assert self.day is not None and self.slot is not None
        return self.day * SLOTS_PER_DAY + self.slot

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self.plan)
        data.update({k: v for k, v in asdict(self).items() if k != "plan"})
        return data


@dataclass(slots=True)
class World:
    task: CosTask
    plan: Plan
    requests: dict[str, Request]
    """In arrival order (draw_plan sorts the plans by arrival step)."""
    trust: dict[str, float]
    slot_pref: dict[str, str]
    tone_pref: dict[str, str]
    known_slot: dict[str, str]
    known_tone: dict[str, str]
    barred: dict[str, str | None] = field(default_factory=lambda: dict.fromkeys(STAKEHOLDERS))
    known_barred: dict[str, str | None] = field(default_factory=lambda: dict.fromkeys(STAKEHOLDERS))
    step: int = 0
    drift_count: int = 0
    protections: set[tuple[str, int]] = field(default_factory=set)
    breached: set[tuple[str, int]] = field(default_factory=set)
    bookings: dict[int, list[str]] = field(default_factory=dict)  # absolute slot index -> request ids
    pending: list[tuple[int, str, float, str]] = field(default_factory=list)  # land step, who, delta, why
    news: dict[str, int] = field(default_factory=lambda: dict.fromkeys(STAKEHOLDERS, 0))
    drifted: dict[str, bool] = field(default_factory=lambda: dict.fromkeys(STAKEHOLDERS, False))
    last_check: dict[str, int | None] = field(default_factory=lambda: dict.fromkeys(STAKEHOLDERS))
    reactions: list[dict[str, Any]] = field(default_factory=list)
    heard: list[tuple[int, dict[str, Any]]] = field(default_factory=list)  # reactions not seen yet: step seen, what
    violations: list[dict[str, Any]] = field(default_factory=list)
    fired: list[dict[str, Any]] = field(default_factory=list)
    penalty: float = 0.0
    lived_wellbeing: list[float] = field(default_factory=list)  # graders.wellbeing's kept figure of each lived day
    arrived: list[Request] = field(default_factory=list)
    """The requests arrived so far: a prefix of `requests` (the rest are upcoming)."""

    @property
    def max_steps(self) -> int:
        return self.task.spec.max_steps

    @property
    def days(self) -> int:
        return self.task.days

    @property
    def day(self) -> int:
        return min(self.step, self.max_steps - 1) // SLOTS_PER_DAY

    @property
    def done(self) -> bool:
        return self.step >= self.max_steps

    def open(self) -> list[Request]:
        return [r for r in self.arrived if r.status == "open"]

    def protected(self, day: int, slot: int) -> str | None:
        """The block protecting (day, slot), if any."""
        for block in BLOCKS_AT.get(slot, ()):
            if (block, day) in self.protections:
                return block
        return None

    def free(self, start: int, duration: int) -> bool:
        """Nothing booked in the `duration` slots from absolute index `start`."""
        return all(not self.bookings.get(start + i) for i in range(duration))

    def fits(self, slot: int, duration: int) -> bool:
        return slot + duration <= SLOTS_PER_DAY

    def can_book(self, request: Request, day: int, slot: int) -> bool:
        """Free, unprotected (a family event may go into a protected family evening), within the day, in the future
        and after the request's dependencies."""
        start = day * SLOTS_PER_DAY + slot
        duration = request.plan.duration
        family = request.plan.stakeholder == "family"
        return (start >= self.step and day < self.days and self.fits(slot, duration) and self.free(start, duration)
                and all(self.protected(day, slot + i) in (None, "family_evening" if family else None)
                        for i in range(duration))
                and self.dependencies_before(request, start) is None)

    def dependencies_before(self, request: Request, start: int) -> str | None:
        """The first dependency not booked to end by `start`, or None."""
        for dep in request.plan.dependencies:
            other = self.requests[dep]
            if other.status not in BOOKED or other.start + other.plan.duration > start:
                return dep
        return None

    # --- trust, reactions, violations ---------------------------------------------------------------------------

    def shift(self, who: str, delta: float, why: str) -> None:
        self.pending.append((self.step + TRUST_DELAY, who, delta, why))

    def react(self, who: str, mood: str, note: str, about: str | None = None, delay: int = 0) -> None:
        """A reaction the chief of staff sees `delay` steps from now (stamped with the step it is seen)."""
        self.heard.append((self.step + delay, {"stakeholder": who, "mood": mood, "note": note, "about": about}))

    def violate(self, rule: str, detail: str) -> dict[str, Any]:
        severity, penalty = PENALTIES[rule]
        event = {"step": self.step, "role": "chief_of_staff", "rule": rule, "severity": severity,
                 "penalty": penalty, "detail": detail}
        self.violations.append(event)
        self.penalty += penalty
        return event

    def trust_with_pending(self) -> dict[str, float]:
        """Trust once every pending change has landed (what the final grade counts)."""
        trust = dict(self.trust)
        for _, who, delta, _ in self.pending:
            trust[who] = min(1.0, max(0.0, trust[who] + delta))
        return trust

    def to_dict(self) -> dict[str, Any]:
        return {
            "task": self.task.spec.id,
            "step": self.step,
            "max_steps": self.max_steps,
            "days": self.days,
            "done": self.done,
            "importance": dict(self.plan.importance),
            "trust": dict(self.trust),
            "preferences": {s: {"slot": self.slot_pref[s], "tone": self.tone_pref[s]} for s in STAKEHOLDERS},
            "briefed_preferences": {s: {"slot": self.plan.slot[s], "tone": self.plan.tone[s]} for s in STAKEHOLDERS},
            "known_preferences": {s: {"slot": self.known_slot[s], "tone": self.known_tone[s]} for s in STAKEHOLDERS},
            "barred": dict(self.barred),
            "drifts": [asdict(d) for d in self.plan.drifts],
            "drift_count": self.drift_count,
            "holdout": self.plan.holdout,
            "requests": [r.to_dict() for r in self.requests.values()],
            "protections": sorted([block, day] for block, day in self.protections),
            "breached": sorted([block, day] for block, day in self.breached),
            "pending_trust": [{"lands": s, "stakeholder": w, "delta": d, "why": y} for s, w, d, y in self.pending],
            "news": dict(self.news),
            "reactions": [dict(r) for r in self.reactions],
            "reactions_pending": [{"seen_at": at, **seen} for at, seen in self.heard],
            "violations": [dict(v) for v in self.violations],
            "penalty": self.penalty,
        }


def build_world(plan: Plan, task: CosTask) -> World:
    if any(a.arrives > b.arrives for a, b in pairwise(plan.requests)):
        raise ValueError("the plan's requests must be in arrival order")
    requests = {p.id: Request(p) for p in plan.requests}
    world = World(task, plan, requests, dict(plan.trust), dict(plan.slot), dict(plan.tone), dict(plan.slot),
                  dict(plan.tone))
    arrive(world)
    return world


def arrive(world: World) -> list[dict[str, Any]]:
    """Deferred requests reopening today and requests arriving now enter the queue."""
    day = world.day
    for request in world.arrived:
        if request.status == "deferred" and request.reopens is not None and request.reopens <= day:
            request.status, request.reopens = "open", None
    events = []
    step = world.step
    for request in islice(world.requests.values(), len(world.arrived), None):
        if request.plan.arrives > step:
            break  # and so do all after it
        request.status = "open"
        world.arrived.append(request)
        if request.plan.crisis:
            events.append({"step": step, "title": f"Crisis: {request.plan.title}", "request": request.id})
    return events


def _w(request: Request) -> float:
    return request.weight / CRITICALITY_WEIGHT["critical"]


# --- the agent's actions -----------------------------------------------------------------------------------------

Outcome = tuple[str, str, str | None]  # status, message, reject reason
Events = list[dict[str, Any]]


def schedule(world: World, request_id: str, day: int, slot_name: str, events: Events) -> Outcome:
    request = world.requests.get(request_id)
    if request is None or request.status != "open":
        return "rejected", f"no open request {request_id!r}; pick one from the queue", "unknown_id"
    slot = SLOTS.index(slot_name)
    start, duration = day * SLOTS_PER_DAY + slot, request.plan.duration
    if start < world.step or day >= world.days:
        return "no_effect", f"day {day} {slot_name} has passed or is beyond the episode; book from now on", None
    if not world.fits(slot, duration):
        return "no_effect", f"a {duration}-slot meeting does not fit in the day from {slot_name}", None
    missing = world.dependencies_before(request, start)
    if missing is not None:
        return "no_effect", f"{request_id} depends on {missing}, which must be booked to end before it", None
    who = request.plan.stakeholder
    request.status, request.day, request.slot, request.touched = "scheduled", day, slot, True
    request.aligned = slot_name == world.slot_pref[who]
    notes = []
    for i in range(duration):
        clash = world.bookings.setdefault(start + i, [])
        if clash and not request.double_booked:
            request.double_booked = True
            for other_id in clash:
                world.requests[other_id].double_booked = True
            events.append(world.violate("double_booking", f"{request_id} booked over {', '.join(clash)}"))
            notes.append("double booked")
        clash.append(request_id)
        block = world.protected(day, slot + i)
        if block is not None and who != "family" and (block, day) not in world.breached:
            world.breached.add((block, day))
            events.append(world.violate("protection_breach", f"{request_id} booked into {block} of day {day}"))
            if block == "family_evening":
                world.shift("family", -0.15, "protection_breach")
                world.news["family"] += 1
            notes.append(f"breaches {block}")
    partners = [p for p in request.plan.conflicts if world.requests[p].status in BOOKED]
    if partners:
        request.contradicted = True
        for p in partners:
            world.requests[p].contradicted = True
            world.shift(world.requests[p].plan.stakeholder, -0.05, "contradictory_commitment")
        world.shift(who, -0.05, "contradictory_commitment")
        events.append(world.violate("contradictory_commitment", f"{request_id} contradicts {', '.join(partners)}"))
        notes.append("contradicts a commitment")
    return "applied", f"booked {request_id} on day {day} {slot_name}" + (f" ({'; '.join(notes)})" if notes else ""), \
        None


def defer(world: World, request_id: str, to_day: int) -> Outcome:
    request = world.requests.get(request_id)
    if request is None or request.status != "open":
        return "rejected", f"no open request {request_id!r}; pick one from the queue", "unknown_id"
    if to_day <= world.day or to_day >= world.days:
        return "no_effect", f"defer to a later day of the episode than today ({world.day})", None
    request.status, request.reopens, request.touched = "deferred", to_day, True
    who = request.plan.stakeholder
    world.shift(who, -0.01 - 0.02 * _w(request), "deferred")
    world.news[who] += 1
    world.react(who, "lukewarm", "put off", request_id)
    return "applied", f"{request_id} reopens on day {to_day}", None


def reason_holds(world: World, request: Request, reason: str) -> bool:
    if reason == "conflict":
        return any(world.requests[p].status in BOOKED for p in request.plan.conflicts)
    if reason == "low_priority":
        return request.plan.criticality == "low"
    last = min(world.days - 1, request.plan.deadline)
    return not any(world.can_book(request, day, slot) for day in range(world.day, last + 1)
                   for slot in range(SLOTS_PER_DAY))


def decline(world: World, request_id: str, reason: str) -> Outcome:
    request = world.requests.get(request_id)
    if request is None or request.status != "open":
        return "rejected", f"no open request {request_id!r}; pick one from the queue", "unknown_id"
    who = request.plan.stakeholder
    honest = reason_holds(world, request, reason)
    request.status, request.reason, request.reason_true, request.touched = "declined", reason, honest, True
    w = _w(request)
    world.shift(who, -0.02 - 0.04 * w if honest else -0.05 - 0.08 * w, "declined")
    world.news[who] += 1
    world.react(who, "lukewarm" if honest else "annoyed", "declined" if honest else "declined, unconvinced",
                request_id)
    return "applied", f"declined {request_id} ({reason})", None


def protect(world: World, block: str, day: int) -> Outcome:
    slot = SLOTS.index(BLOCKS[block])
    if day >= world.days or day * SLOTS_PER_DAY + slot < world.step:
        return "no_effect", f"{block} of day {day} has passed or is beyond the episode", None
    if (block, day) in world.protections:
        return "no_effect", f"{block} of day {day} is already protected", None
    work = [i for i in world.bookings.get(day * SLOTS_PER_DAY + slot, [])
            if world.requests[i].plan.stakeholder != "family"]
    if work:
        return "no_effect", f"{', '.join(work)} is already booked in {block} of day {day}", None
    world.protections.add((block, day))
    return "applied", f"protected {block} of day {day}", None


def message(world: World, audience: str, tone: str) -> Outcome:
    targets = STAKEHOLDERS if audience == "all" else (audience,)
    for who in targets:
        if world.news[who]:
            matched = tone == world.tone_pref[who]
            world.shift(who, 0.03 * min(3, world.news[who]) if matched else 0.01, "update")
            world.react(who, "appreciative" if matched else "neutral", "update received")
            world.news[who] = 0
        else:
            world.shift(who, -0.02, "needless_message")
            world.react(who, "irritated", "message with nothing new")
    return "applied", f"messaged {audience} ({tone})", None


def check_in(world: World, who: str) -> Outcome:
    last = world.last_check[who]
    if world.drifted[who]:
        world.shift(who, 0.02, "check_in")
    elif last is not None and world.step - last < CHECK_IN_NAG:
        world.shift(who, -0.02, "nagging_check_in")
    world.drifted[who] = False
    world.last_check[who] = world.step
    world.known_slot[who], world.known_tone[who] = world.slot_pref[who], world.tone_pref[who]
    world.known_barred[who] = world.barred[who]
    barred = f"; the {world.barred[who]} is out for them" if world.barred[who] else ""
    return "applied", f"{who} prefers the {world.slot_pref[who]} and a {world.tone_pref[who]} tone{barred}", None


# --- the world's turn --------------------------------------------------------------------------------------------


def live_slot(world: World) -> None:
    """Hold the meetings starting in the slot being lived (index world.step)."""
    for request_id in world.bookings.get(world.step, []):
        request = world.requests[request_id]
        if request.status != "scheduled" or request.start != world.step:
            continue
        request.status = "held"
        who, w = request.plan.stakeholder, _w(request)
        slot = SLOTS[request.start % SLOTS_PER_DAY]
        request.aligned = slot == world.slot_pref[who]
        if slot == world.barred[who]:
            request.no_show = True
            world.shift(who, -0.10 - 0.10 * w, "no_show")
            world.news[who] += 1
            world.react(who, "annoyed", NO_SHOW_NOTE, request_id)
            continue
        late = max(0, world.day - request.plan.deadline)
        delta = 0.02 + 0.04 * w if not late else -0.03 * late
        delta += 0.02 if request.aligned else -MISALIGNED_COST
        delta -= 0.06 * request.double_booked + 0.05 * request.contradicted
        world.shift(who, delta, "held")
        if late or request.double_booked:
            world.react(who, "annoyed", "late" if late else "double booked", request_id, TRUST_DELAY)
        elif not request.aligned:
            world.react(who, "lukewarm", "not their preferred time", request_id, TRUST_DELAY)
        else:
            world.react(who, "pleased", "on time", request_id, TRUST_DELAY)


def advance(world: World, events: Events) -> list[dict[str, Any]]:
    """After the agent's action: live the slot, move the clock, then drifts, arrivals, expiry, ignored critical
    requests and the trust that lands now. Returns the scenario events that fired."""
    live_slot(world)
    world.step += 1
    done, step = world.done, world.step
    fired: list[dict[str, Any]] = []
    for drift in world.plan.drifts:
        if drift.step == step:
            prefs = world.slot_pref if drift.aspect == "slot" else world.tone_pref
            if drift.aspect == "slot":
                world.barred[drift.stakeholder] = prefs[drift.stakeholder]
            prefs[drift.stakeholder] = drift.value
            world.drifted[drift.stakeholder] = True
            world.drift_count += 1
            fired.append({"step": step, "title": DRIFT_TITLE})
    if not done:
        fired += arrive(world)
    for request in world.arrived:
        if request.status in ("open", "deferred") and (done or step >= SLOTS_PER_DAY * (
                request.plan.deadline + GRACE_DAYS + 1)):
            request.status = "missed"
            who = request.plan.stakeholder
            world.shift(who, -0.05 - 0.10 * _w(request), "missed")
            world.news[who] += 1
            world.react(who, "annoyed", "request dropped", request.id)
            if request.plan.criticality == "critical" and not request.flagged:
                request.flagged = True
                events.append(world.violate("critical_request_ignored", f"{request.id} was never booked"))
        elif (request.status == "open" and request.plan.criticality == "critical" and not request.touched
              and not request.flagged and step - request.plan.arrives >= IGNORE_WINDOW):
            request.flagged = True
            events.append(world.violate("critical_request_ignored",
                                        f"{request.id} open {IGNORE_WINDOW} steps without a decision"))
    landing = [p for p in world.pending if p[0] <= step]
    world.pending = [p for p in world.pending if p[0] > step]
    for _, who, delta, _ in landing:
        world.trust[who] = min(1.0, max(0.0, world.trust[who] + delta))
    world.reactions += [{"step": step, **seen} for at, seen in world.heard if at <= step]
    world.heard = [(at, seen) for at, seen in world.heard if at > step]
    world.fired += fired
    return fired

