"""The five reward components, each in [0, 1], computed from the state alone.

A component (or part of one) with nothing to grade yet returns None and is left out of the
weighted mean. The score grades the whole world, known to the agents or not: a risk that has become
noticeable counts from then on, found or not (an undetected one as unmitigated). The observation's
partial_scores are graded with public=True: over what the organisation knows, so they reveal nothing hidden.
business_success and risk_management are the outcomes; collaboration, efficiency and adaptability are
process scores and count only in proportion to the work delivered (see grade). Formulas: docs/org.md ("Reward").
"""

from __future__ import annotations

from aaos.envs.org.dynamics import WRONG_ROLE_QUALITY
from aaos.envs.org.spec import PRIORITY_WEIGHT
from aaos.envs.org.world import WorkItem, World

LATE_DECAY = 0.1
"""Credit lost per step of lateness, down to LATE_FLOOR."""
LATE_FLOOR = 0.3
WRONG_OWNER_CREDIT = 0.2
"""Assignment credit for a task held by a role other than its required role."""
PROMPT_ANSWER_STEPS = 2
"""A resource request approved within this many steps counts as answered promptly; one still pending is graded
(as unanswered) only once it is older than this."""
INCIDENT_GRACE = 2
RISK_STAGE_CREDIT: dict[str, float] = {"flagged": 0.6, "detected": 0.3}
"""Credit of a risk not yet mitigated and not escalated, by how far the organisation has got with it."""


def late_credit(step: int, deadline: int) -> float:
    """The share of credit kept by work done at `step`, past its deadline (on time keeps it all)."""
    late = 1.0 - LATE_DECAY * (step - deadline)
    return late if late > LATE_FLOOR else LATE_FLOOR


def _assigned(item: WorkItem) -> float:
    """A task's assignment credit: 1 for its required role by the deadline, 0.5 later, WRONG_OWNER_CREDIT otherwise."""
    assigned_step = item.assigned_step
    if item.assigned_right and assigned_step is not None:
        return 1.0 if assigned_step <= item.deadline else 0.5
    return WRONG_OWNER_CREDIT


def _settled(item: WorkItem, assignment_weight: float) -> tuple[float, float, float]:
    """A completed task's priority weight, business credit and delivered credit, each credit times the weight."""
    weight = PRIORITY_WEIGHT[item.priority]
    done = item.quality
    completed_step = item.completed_step
    if completed_step is not None and completed_step > item.deadline:
        done *= late_credit(completed_step, item.deadline)
    return weight, weight * (assignment_weight * _assigned(item) + (1.0 - assignment_weight) * done), weight * done


def work(world: World, assignment_weight: float) -> tuple[float, float, float]:
    """One pass over the arrived tasks: (business_success, delivered, hand-offs).

    A task's business credit is a * assigned + (1 - a) * done, a the task's assignment weight: assigned for its
    assignment to the right role (on time), done for its completion, quality and deadline; its delivered credit
    is done alone. business_success: the priority-weighted mean business credit of the arrived tasks
    (remediation is graded as risk management; a task without an owner earns nothing). delivered: the same mean
    of completion credit, the share of the arrived work actually delivered. hand-offs: the share of the arrived
    tasks (remediation included) held by their required role. A completed task's credits are computed once
    (world.settled_work; `assignment_weight` is the world's task's throughout an episode)."""
    total = credit = done_credit = 0.0
    known = right = 0
    step = world.step
    rest = 1.0 - assignment_weight
    settled = world.settled_work
    for item in world.work:
        status = item.status
        if status == "upcoming":
            continue
        known += 1
        if item.assigned_right:
            right += 1
        if item.risk_id is not None:
            continue
        if status == "completed":
            terms = settled.get(item.id)
            if terms is None:
                terms = settled[item.id] = _settled(item, assignment_weight)
            weight, item_credit, item_done = terms
            total += weight
            credit += item_credit
            done_credit += item_done
            continue
        weight = PRIORITY_WEIGHT[item.priority]
        total += weight
        owner = item.owner
        if owner is None:
            continue
        progress = item.progress / item.effort
        done = 0.5 * (progress if progress < 1.0 else 1.0) * (
            1.0 if owner == item.required_role else WRONG_ROLE_QUALITY)
        if step > item.deadline:
            done *= late_credit(step, item.deadline)
        credit += weight * (assignment_weight * _assigned(item) + rest * done)
        done_credit += weight * done
    if not total:
        return 0.0, 0.0, right / known if known else 0.0
    return credit / total, done_credit / total, right / known


def collaboration(world: World, handoffs: float) -> float:
    """Right-role hand-offs (times delegation precision), plans accepted by others, requests answered promptly,
    weighted 0.5, 0.25 and 0.25; with no request to grade yet, the first two alone by their weights."""
    c = world.counters
    precision = c.right_delegations / c.delegations if c.delegations else 0.0
    plans = world.plans
    accepted = 0
    for plan in plans:
        if plan.status == "accepted":
            accepted += 1
    plan_score = accepted / len(plans) if plans else 0.0
    answered_credit = 0.0
    graded = 0
    step = world.step
    for r in world.requests:
        if r.answered_step is not None:
            answered_credit += 1.0 if r.answered_step - r.step <= PROMPT_ANSWER_STEPS else 0.5
        elif step - r.step <= PROMPT_ANSWER_STEPS:
            continue  # pending, not yet overdue: not graded
        graded += 1
    value = 0.5 * (handoffs * precision) + 0.25 * plan_score
    if graded:
        return value + 0.25 * (answered_credit / graded)  # the weights sum to 1
    return value / (0.5 + 0.25)


def _mean(total: float, count: int) -> float | None:
    return total / count if count else None


def risk_credits(world: World) -> tuple[float | None, float | None]:
    """Mean credit over the risks that exist, graded (all, public): public counts only the known ones (what the
    organisation can grade itself); all counts them too, and from the first step every hidden one that becomes
    noticeable within the episode (by max_steps, where every episode ends), which earns nothing until found.
    Counting a hidden risk only from the step it becomes noticeable would make the reward fall at that step and
    tell the agent that a risk is there to be found; the final grade is the same either way."""
    total = public_total = 0.0
    count = public_count = 0
    horizon = world.max_steps
    for risk in world.risks:
        status = risk.status
        if status == "hidden":  # not known
            if risk.definition.noticeable_from <= horizon:
                count += 1
            continue
        count += 1
        public_count += 1
        escalated = risk.escalated_step is not None
        if status == "mitigated":
            credit = 0.4 if escalated else 1.0
        elif not escalated:
            credit = RISK_STAGE_CREDIT.get(status, 0.0)
        else:
            continue
        total += credit
        public_total += credit
    return _mean(total, count), _mean(public_total, public_count)


def _incident_credit(world: World) -> float | None:
    """Graded once resolved, or once open longer than its effort plus INCIDENT_GRACE steps."""
    total = 0.0
    graded = 0
    step = world.step
    for incident in world.incidents:
        resolved = incident.resolved_step
        if resolved is not None:
            extra = resolved - incident.opened_step - incident.definition.effort
            credit = 1.0 - 0.1 * extra if extra > 0 else 1.0
            total += credit if credit > 0.4 else 0.4
            graded += 1
        elif step - incident.opened_step > incident.definition.effort + INCIDENT_GRACE:
            graded += 1
    return total / graded if graded else None


def risk_management(risk_credit: float | None, incident_credit: float | None) -> float:
    """Risks and incidents weighted 0.55 and 0.45; either alone when the other has nothing to grade yet."""
    if risk_credit is None:
        return 0.45 * incident_credit / 0.45 if incident_credit is not None else 0.0
    if incident_credit is None:
        return 0.55 * risk_credit / 0.55
    return (0.55 * risk_credit + 0.45 * incident_credit) / (0.55 + 0.45)


def efficiency(world: World) -> float:
    """Actions not wasted, granted resources used, service health, weighted 0.4, 0.3 and 0.3; before any grant,
    the first and the last by their weights."""
    c = world.counters
    actions = 1.0 - c.wasted / c.actions if c.actions else 1.0
    if c.granted_total:
        resources = c.granted_used / c.granted_total
        return (0.4 * actions + 0.3 * resources + 0.3 * world.health) / (0.4 + 0.3 + 0.3)
    return (0.4 * actions + 0.3 * world.health) / (0.4 + 0.3)


def adaptability(world: World) -> float | None:
    """Mean response credit of the events that are due: answered, or past their response window."""
    total = 0.0
    due = 0
    step = world.step
    for e in world.events[:world.fired]:  # an event not fired yet is neither answered nor due
        if e.responded_step is not None or step - e.fired_step > e.definition.respond_within:
            total += e.response_credit
            due += 1
    return total / due if due else None


def grade(world: World, assignment_weight: float) -> tuple[dict[str, float | None], dict[str, float | None]]:
    """All five components by name, in REWARD_COMPONENTS' order (None: nothing to grade yet), graded (all,
    public): public grades only what the organisation knows (the observation's partial_scores); the two differ
    only in risk_management. Each process component (collaboration, efficiency, adaptability) is its raw value
    times the delivered share, so that smooth process with nothing delivered earns nothing."""
    business, share, handoffs = work(world, assignment_weight)
    risks, public_risks = risk_credits(world)
    incidents = _incident_credit(world)
    collaborated = collaboration(world, handoffs) * share
    efficient = efficiency(world) * share
    adapted = adaptability(world)
    if adapted is not None:
        adapted *= share
    managed = risk_management(risks, incidents)
    public_managed = managed if public_risks == risks else risk_management(public_risks, incidents)
    return ({"business_success": business, "collaboration": collaborated, "risk_management": managed,
             "efficiency": efficient, "adaptability": adapted},
            {"business_success": business, "collaboration": collaborated, "risk_management": public_managed,
             "efficiency": efficient, "adaptability": adapted})
