"""The rubric: five components in [0, 1] from the ground truth (aaos.envs.chief_of_staff.spec.REWARD_COMPONENTS).

    outcomes      = sum_r c_r * credit_r / sum_r c_r over arrived requests r, c_r the criticality weight
                    (1, 2, 3, 5); credit: a no-show -> 0, booked -> 0.5 ** days late (halved again if double
                    booked), declined while a contradicting partner is booked -> 1, otherwise 0
    relationships = 0.7 * sum_s i_s * t_s / sum_s i_s + 0.3 * min_s t_s  (i: hidden importance, t: trust;
                    pending trust changes count once the episode is done)
    alignment     = (requests booked in the slot their stakeholder prefers when the meeting is held; for one not
                    held yet, the slot preferred when it was booked: a drift moves no grade before the meeting,
                    so the reward does not reveal it)
                    / (arrived requests - those declined for a true conflict)
    commitments   = kept / made over bookings and protections, times booked / arrived requests (so that promising
                    little is not keeping promises; None before any is made): a booking is broken by a double
                    booking, a contradiction or a no-show, a protection by a breach
    wellbeing     = mean over lived days of 0.7 * evening + 0.3 * morning; evening: 0 with work booked, 1 when
                    protected or a family event, else 0.5; morning: 0 when a protected focus morning was breached,
                    1 when protected, else 0.5 (None before the first day is lived)
    score         = (sum_k w_k * component_k / sum_k w_k over the components not None) / (1 + P), P the sum of
                    violation penalties (aaos.core.reward.composite)
"""

from __future__ import annotations

from dataclasses import dataclass

from aaos.envs.chief_of_staff.spec import CRITICALITY_WEIGHT, EVENING, SLOTS, SLOTS_PER_DAY, STAKEHOLDERS
from aaos.envs.chief_of_staff.world import BOOKED, Request, World

Components = dict[str, float | None]
FLOOR_SHARE = 0.3


def credit(world: World, request: Request) -> float:
    if request.no_show:
        return 0.0
    if request.status in BOOKED:
        late = request.day - request.plan.deadline  # type: ignore[operator]  # a booked request has its day
        on_time = 0.5 ** late if late > 0 else 1.0
        return on_time * 0.5 if request.double_booked else on_time
    if request.status == "declined" and any(world.requests[p].status in BOOKED for p in request.plan.conflicts):
        return 1.0
    return 0.0


EARNING = frozenset({*BOOKED, "declined"})
"""The statuses whose credit may be above 0 (any other earns nothing)."""


@dataclass(slots=True)
class Tally:
    """What outcomes, alignment and commitments count, gathered in one pass over the arrived requests (in
    arrival order, so that `earned` is summed as it always was)."""

    arrived: int
    weight: int
    """The arrived requests' criticality weights, summed."""
    earned: float
    """Their weighted credit."""
    judged: int
    """The arrived requests not declined for a true conflict."""
    aligned: int
    """The booked requests in the slot their stakeholder prefers."""
    booked: int
    broken: int
    """The booked requests double booked, contradicted or not attended."""

    @classmethod
    def of(cls, world: World) -> Tally:
        weight_total = judged = aligned = booked = broken = 0
        earned = 0.0
        for r in world.arrived:
            status = r.status
            weight = CRITICALITY_WEIGHT[r.plan.criticality]
            weight_total += weight
            if status in EARNING:
                earned += weight * credit(world, r)
            if status in BOOKED:
                booked += 1
                judged += 1
                if r.aligned:
                    aligned += 1
                if r.double_booked or r.contradicted or r.no_show:
                    broken += 1
            elif not (status == "declined" and r.reason == "conflict" and r.reason_true):
                judged += 1
        return cls(len(world.arrived), weight_total, earned, judged, aligned, booked, broken)


def outcomes(tally: Tally) -> float | None:
    return tally.earned / tally.weight if tally.weight else None


def relationships(world: World) -> float:
    trust = world.trust_with_pending() if world.done else world.trust
    importance = world.plan.importance
    weighted = sum(importance[s] * trust[s] for s in STAKEHOLDERS) / sum(importance.values())
    return (1 - FLOOR_SHARE) * weighted + FLOOR_SHARE * min(trust.values())


def alignment(tally: Tally) -> float | None:
    return tally.aligned / tally.judged if tally.judged else None


def commitments(world: World, tally: Tally) -> float | None:
    made = tally.booked + len(world.protections)
    broken = tally.broken + len(world.breached)
    return (made - broken) / made * tally.booked / tally.arrived if made and tally.arrived else None


EVENING_SLOT = SLOTS.index(EVENING)


def day_wellbeing(world: World, day: int) -> float:
    booked = [world.requests[i].plan.stakeholder for i in world.bookings.get(day * SLOTS_PER_DAY + EVENING_SLOT, ())]
    family = "family" in booked
    if any(who != "family" for who in booked):  # work booked into the evening
        evening = 0.0
    elif ("family_evening", day) in world.protections or family:
        evening = 1.0
    else:
        evening = 0.5
    if ("focus_morning", day) in world.breached:
        morning = 0.0
    elif ("focus_morning", day) in world.protections:
        morning = 1.0
    else:
        morning = 0.5
    return 0.7 * evening + 0.3 * morning


def wellbeing(world: World) -> float | None:
    lived = world.step // SLOTS_PER_DAY
    if not lived:
        return None
    # a lived day's figure is kept: nothing books, protects or breaches a slot that has passed (each checks
    # start >= world.step), so it could not change
    days = world.lived_wellbeing
    while len(days) < lived:
        days.append(day_wellbeing(world, len(days)))
    total = 0.0
    for value in days:  # in day order, as the figure has always been summed: the same float
        total += value
    return total / lived


def grade(world: World) -> Components:
    tally = Tally.of(world)
    return {"outcomes": outcomes(tally), "relationships": relationships(world), "alignment": alignment(tally),
            "commitments": commitments(world, tally), "wellbeing": wellbeing(world)}


HIDDEN = ("relationships", "alignment")
"""The components the chief of staff cannot grade from its own view: trust and preferences are hidden."""


def public_grade(components: Components) -> Components:
    """What the chief of staff can grade from its own view: the world's grade with the HIDDEN components None."""
    return {name: None if name in HIDDEN else value for name, value in components.items()}
