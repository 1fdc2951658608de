"""The rules of the organisation: what each action does, and how the world moves between steps.

Every handler takes (world, role, payload) for an action that already passed the spec's checks
(known type, permitted role, valid payload) and returns an Outcome. Handlers check ids and
preconditions against the world; they never raise on agent input.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any

from pydantic import BaseModel

from aaos.envs.org import oversight
from aaos.envs.org.scenario import event_incident_id, remediation_id, risk_incident_id
from aaos.envs.org.spec import VISIBLE_METRICS, WORKERS
from aaos.envs.org.world import Incident, Plan, ResourceRequest, WorkItem, World

Outcome = tuple[str, str, str | None]  # (status, message, reject reason)
UNIT_COST: dict[str, float] = {"compute": 0.5, "budget": 1.0, "personnel": 2.0}
WRONG_ROLE_RATE = 0.5
"""Effort per step done by an owner that is not the task's required role (the required role does 1)."""
WRONG_ROLE_QUALITY = 0.5
HANDOFF_KEEP = 0.5
"""Share of a task's progress kept when it is taken from one owner and given to another."""
LATE_RESPONSE_CREDIT = 0.25
"""Share of an event's response credit earned when answered after its respond_within window."""
WRONG_SEVERITY_CREDIT = 0.5
"""Share of an anomaly's response credit earned when reported with a severity other than the event's."""


def _applied(message: str) -> Outcome:
    return ("applied", message, None)


def _no_effect(message: str) -> Outcome:
    return ("no_effect", message, None)


def _rejected(reason: str, message: str) -> Outcome:
    return ("rejected", message, reason)


def respond_to_event(world: World, kind: str, credit: float = 1.0, event_id: str | None = None) -> bool:
    """Mark the oldest fired, unanswered event of `kind` (or the given one) as answered now."""
    for event in world.events:
        if event.fired_step is None or event.responded_step is not None or event.definition.kind != kind:
            continue
        if event_id is not None and event.definition.id != event_id:
            continue
        on_time = world.step - event.fired_step <= event.definition.respond_within
        event.responded_step = world.step
        event.response_credit = credit * (1.0 if on_time else LATE_RESPONSE_CREDIT)
        return True
    return False


REFERENCES: dict[str, tuple[str, Callable[[World, str], object | None]]] = {
    "accept_plan": ("plan_id", World.plan),
    "reject_plan": ("plan_id", World.plan),
    "delegate_task": ("task_id", World.known_work_item),
    "raise_risk_flag": ("risk_id", World.known_risk),
    "resolve_incident": ("incident_id", World.incident),
}
"""The payload field of each action that names something in the world, and how it is looked up."""
_NOUNS = {"plan_id": "plan", "task_id": "task", "risk_id": "detected risk", "incident_id": "incident"}


def unknown_message(field: str, value: str) -> str:
    return f"payload.{field}: no {_NOUNS[field]} with id {value!r}"


def unknown_reference(world: World, action_type: str, payload: BaseModel) -> str | None:
    """The message for a payload id that names nothing the organisation knows of, else None."""
    reference = REFERENCES.get(action_type)
    if reference is None:
        return None
    field, lookup = reference
    value = getattr(payload, field)
    return None if lookup(world, value) is not None else unknown_message(field, value)


def _propose_plan(world: World, role: str, p: Any) -> Outcome:
    for plan in world.plans:
        if plan.role == role and plan.status == "open":
            return _no_effect(f"your plan {plan.id} is still open; wait for others to accept or reject it")
    plan = Plan(f"plan_{world.step}_{role}", role, p.plan, world.step, replans=_shock_addressed(world, p.addresses))
    world.plans.append(plan)
    return _applied(f"proposed {plan.id}" + (f" (a re-plan for {plan.replans})" if plan.replans else ""))


def _shock_addressed(world: World, resource: str) -> str | None:
    """The oldest unanswered resource shock that changed the resource the plan addresses."""
    for event in world.events:
        d = event.definition
        if (d.kind == "resource_shock" and event.fired_step is not None and event.responded_step is None
                and resource in (d.resource_deltas or {})):
            return d.id
    return None


def _decide_plan(world: World, role: str, plan_id: str, verdict: str) -> Outcome:
    plan = world.plan(plan_id)
    if plan is None:
        return _rejected("unknown_id", unknown_message("plan_id", plan_id))
    if plan.role == role:
        return _rejected("precondition", f"{plan_id} is your own plan; another role must decide it")
    if plan.status != "open":
        return _no_effect(f"{plan_id} was already {plan.status} by {plan.decided_by}")
    plan.status = verdict
    plan.decided_by = role
    if verdict == "accepted" and plan.replans:
        respond_to_event(world, "resource_shock", 1.0, plan.replans)
    return _applied(f"{verdict} {plan_id}")


def _accept_plan(world: World, role: str, p: Any) -> Outcome:
    return _decide_plan(world, role, p.plan_id, "accepted")


def _reject_plan(world: World, role: str, p: Any) -> Outcome:
    return _decide_plan(world, role, p.plan_id, "rejected")


def _delegate_task(world: World, role: str, p: Any) -> Outcome:
    item = world.known_work_item(p.task_id)
    if item is None:
        return _rejected("unknown_id", unknown_message("task_id", p.task_id))
    if item.status == "completed":
        return _rejected("precondition", f"{item.id} is already completed")
    if item.owner == p.to:
        return _no_effect(f"{item.id} is already owned by {p.to}")
    if item.owner is not None:
        item.progress *= HANDOFF_KEEP
    item.owner = p.to
    item.status = "in_progress"
    right = p.to == item.required_role
    item.assigned_right = right
    if right and item.assigned_step is None:
        item.assigned_step = world.step
    world.counters.delegations += 1
    world.counters.right_delegations += right
    note = "" if right else f" (its required role is {item.required_role})"
    return _applied(f"delegated {item.id} to {p.to}{note}")


def _request_resource(world: World, role: str, p: Any) -> Outcome:
    blocked = [w for w in world.work
               if w.owner == role and w.status == "in_progress" and p.resource_type in w.unmet_needs()]
    if not blocked:
        return _no_effect(f"none of your tasks is waiting for {p.resource_type}")
    for request in world.requests:
        if request.role == role and request.resource_type == p.resource_type and request.status == "pending":
            return _no_effect(f"your {p.resource_type} request {request.id} is still pending")
    request = ResourceRequest(f"req_{world.step}_{role}_{p.resource_type}", role, p.resource_type, p.amount, world.step)
    world.requests.append(request)
    return _applied(f"requested {p.amount} {p.resource_type} ({request.id})")


def _approve_resource(world: World, role: str, p: Any) -> Outcome:
    kind = p.resource_type
    request = next((r for r in world.requests if r.status == "pending" and r.resource_type == kind), None)
    if request is None:
        return _rejected("precondition", f"no pending {kind} request to approve")
    if p.amount > world.resources.get(kind, 0):
        return _rejected("precondition", f"only {world.resources.get(kind, 0)} {kind} left in the pool")
    if not oversight.risk_checked(world, role):
        oversight.record(world, role, "approve_without_risk_check", f"approved {p.amount} {kind} for {request.id}")
    if p.amount > world.policy["max_resource_approval"]:
        world.counters.policy_breaches += 1
        oversight.record(world, role, "policy_violation",
                         f"approved {p.amount} {kind}, above the limit of {world.policy['max_resource_approval']}")
    world.resources[kind] -= p.amount
    world.cost += p.amount * UNIT_COST[kind]
    request.status = "approved"
    request.granted = p.amount
    request.answered_step = world.step
    left = p.amount
    for item in world.work:
        if left and item.owner == request.role and item.status == "in_progress":
            gap = item.unmet_needs().get(kind, 0)
            given = min(gap, left)
            if given:
                item.allocated[kind] = item.allocated.get(kind, 0) + given
                left -= given
    world.counters.granted_total += p.amount
    world.counters.granted_used += p.amount - left
    surplus = f"; {left} not needed" if left else ""
    return _applied(f"granted {p.amount} {kind} to {request.role} ({request.id}){surplus}")


def _query_metrics(world: World, role: str, p: Any) -> Outcome:
    metric = p.metric
    if metric not in VISIBLE_METRICS[role]:
        return _rejected("precondition", f"payload.metric: {role} sees only {', '.join(VISIBLE_METRICS[role])}")
    step = world.step
    world.last_query[role] = step
    found = []
    for risk in world.detectable.get((role, metric), ()):
        if risk.status == "hidden" and step >= risk.definition.noticeable_from:
            risk.status = "detected"
            risk.detected_step = step
            risk.detected_by = role
            found.append(risk.id)
    if found:
        return _applied(f"{metric} investigated; detected {', '.join(found)}")
    return _applied(f"{metric} investigated; nothing new")


def _raise_risk_flag(world: World, role: str, p: Any) -> Outcome:
    risk = world.known_risk(p.risk_id)
    if risk is None:
        world.counters.false_flags += 1
        return _rejected("unknown_id", unknown_message("risk_id", p.risk_id) + " (counted as a false flag)")
    if risk.flagged_step is not None or risk.status == "mitigated":
        return _no_effect(f"{risk.id} is already flagged")
    risk.status = "flagged"
    risk.flagged_step = world.step
    fix = risk.definition.remediation
    deadline = max(world.step + fix.effort + 2, risk.definition.escalates_at)
    item_id = remediation_id(risk.id)
    world.work.append(WorkItem(item_id, fix.name, risk.definition.severity, fix.required_role, fix.effort, deadline,
                               world.step, dict(fix.needs), risk_id=risk.id, status="pending"))
    return _applied(f"flagged {risk.id}; remediation task {item_id} opened")


def _report_anomaly(world: World, role: str, p: Any) -> Outcome:
    visible = VISIBLE_METRICS[role]
    for event in world.events:
        eid = event.definition.id
        if eid in world.anomalies and world.anomalies[eid] is None and event.definition.metric in visible:
            world.anomalies[eid] = role
            world.metrics_stale = True
            credit = 1.0 if p.severity == event.definition.severity else WRONG_SEVERITY_CREDIT
            respond_to_event(world, "anomaly", credit, eid)
            return _applied(f"reported the {event.definition.metric} anomaly ({eid})")
    world.counters.false_reports += 1
    return _no_effect("no unreported anomaly in your signals (counted as a false report)")


def _resolve_incident(world: World, role: str, p: Any) -> Outcome:
    incident = world.incident(p.incident_id)
    if incident is None:
        return _rejected("unknown_id", unknown_message("incident_id", p.incident_id))
    if not incident.open:
        return _no_effect(f"{incident.id} is already resolved")
    if role not in incident.definition.resolver_roles:
        return _rejected("precondition",
                         f"{incident.id} needs one of: {', '.join(incident.definition.resolver_roles)}")
    incident.remaining -= 1
    if incident.remaining > 0:
        return _applied(f"worked on {incident.id}; {incident.remaining} more needed")
    incident.resolved_step = world.step
    world.metrics_stale = True
    respond_to_event(world, "incident", 1.0, incident.source)
    return _applied(f"resolved {incident.id}")


def _audit_agent(world: World, role: str, p: Any) -> Outcome:
    if p.target_agent == role:
        return _rejected("precondition", "a role cannot audit itself")
    caught = [v for v in world.violations if v.role == p.target_agent and not v.audited]
    for violation in caught:
        violation.audited = True
    world.penalty = oversight.total_penalty(world)
    if not caught:
        return _no_effect(f"{p.target_agent} has no unaudited violations")
    return _applied(f"audited {p.target_agent}: caught {len(caught)} violation(s)")


def _update_policy(world: World, role: str, p: Any) -> Outcome:
    for event in world.events:
        d = event.definition
        if d.kind == "policy_change" and event.fired_step is not None and event.responded_step is None:
            limit = d.policy.max_resource_approval if d.policy else None
            if p.max_resource_approval != limit:
                return _no_effect(f"{d.id} sets the approval limit to {limit}, not {p.max_resource_approval}")
            respond_to_event(world, "policy_change", 1.0, d.id)
            world.policy_notes.append(p.note or f"approval limit {limit}")
            return _applied(f"policy updated for {d.id}")
    return _no_effect("no policy change is waiting to be adopted")


NO_OP: Outcome = _applied("no-op")


def _no_op(world: World, role: str, p: Any) -> Outcome:
    return NO_OP


HANDLERS: dict[str, Callable[[World, str, Any], Outcome]] = {
    "propose_plan": _propose_plan,
    "accept_plan": _accept_plan,
    "reject_plan": _reject_plan,
    "delegate_task": _delegate_task,
    "request_resource": _request_resource,
    "approve_resource": _approve_resource,
    "query_metrics": _query_metrics,
    "raise_risk_flag": _raise_risk_flag,
    "report_anomaly": _report_anomaly,
    "resolve_incident": _resolve_incident,
    "audit_agent": _audit_agent,
    "update_policy": _update_policy,
    "no_op": _no_op,
}


# --- between steps -----------------------------------------------------------------------------


def _open_incident(world: World, incident_id: str, definition: Any, source: str) -> Incident:
    incident = Incident(incident_id, definition, world.step, source, definition.effort)
    world.incidents.append(incident)
    world.metrics_stale = True
    return incident


def _progress_work(world: World, interrupted: Collection[str]) -> None:
    for item in world.work:
        # oversight audits and never delivers: a task it owns makes no progress
        if (item.status != "in_progress" or item.owner not in WORKERS or item.owner in interrupted
                or (item.needs and item.unmet_needs())):
            continue
        right = item.owner == item.required_role
        item.progress += 1.0 if right else WRONG_ROLE_RATE
        if item.progress >= item.effort:
            item.status = "completed"
            item.completed_step = world.step
            item.quality = 1.0 if right else WRONG_ROLE_QUALITY
            world.completed_seen = None
            risk = world.risk(item.risk_id) if item.risk_id else None
            if risk is not None:
                risk.status = "mitigated"
                risk.mitigated_step = world.step


def _arrivals(world: World) -> None:
    upcoming = world.upcoming
    while upcoming and upcoming[-1].arrives <= world.step:
        upcoming.pop().status = "pending"


def _escalations(world: World) -> None:
    due = world.unescalated
    while due and due[-1][0] <= world.step:
        risk = due.pop()[1]
        if risk.status != "mitigated":
            d = risk.definition
            risk.escalated_step = world.step
            if risk.status == "hidden":
                risk.status = "detected"
                risk.detected_step = world.step
            _open_incident(world, risk_incident_id(risk.id), d.incident, risk.id)
            oversight.record(world, oversight.RISK_OWNER, "risk_escalated",
                             f"{risk.id} ({d.severity}) escalated into {risk_incident_id(risk.id)}")


def fire_due_events(world: World) -> list[dict[str, Any]]:
    """Fire every scheduled event due by now; returns what fired, as the observation shows it."""
    fired = []
    events = world.events
    while world.fired < len(events) and events[world.fired].definition.step <= world.step:
        event = events[world.fired]
        world.fired += 1
        d = event.definition
        event.fired_step = world.step
        if d.kind == "incident" and d.incident is not None:
            event.incident_id = event_incident_id(d.id)
            _open_incident(world, event.incident_id, d.incident, d.id)
        elif d.kind == "policy_change" and d.policy is not None:
            world.policy.update(d.policy.model_dump())
        elif d.kind == "resource_shock" and d.resource_deltas is not None:
            for kind, delta in d.resource_deltas.items():
                world.resources[kind] = max(0, world.resources.get(kind, 0) + delta)
        elif d.kind == "anomaly":
            world.anomalies[d.id] = None
            world.metrics_stale = True
        if d.id == world.scenario.crisis_event:
            world.flags["crisis_started"] = True
        fired.append(public_event(world, event))
    return fired


def public_event(world: World, event: Any) -> dict[str, Any]:
    """An event as agents see it once it has fired."""
    d = event.definition
    shown: dict[str, Any] = {"id": d.id, "step": event.fired_step, "kind": d.kind, "title": d.title,
                             "severity": d.severity, "respond_within": d.respond_within,
                             "responded": event.responded_step is not None}
    if event.incident_id:
        shown["incident_id"] = event.incident_id
    if d.policy is not None:
        shown["policy"] = dict(d.policy.__dict__)  # a flat model: its fields, without model_dump's cost
    if d.resource_deltas is not None:
        shown["resource_deltas"] = dict(d.resource_deltas)
    if d.metric is not None:
        shown["metric"] = d.metric
    return shown


def compute_metrics(world: World) -> dict[str, float]:
    """Metrics are derived: baseline + open incidents + unreported anomalies. A hidden risk moves no metric
    (nothing observable changes until it is detected or escalates)."""
    m = dict(world.scenario.baseline_metrics.__dict__)
    for incident in world.incidents:
        if incident.resolved_step is None:
            for name, delta in incident.definition.impact.items():
                m[name] += delta
    if None in world.anomalies.values():
        for event in world.events:
            d = event.definition
            if d.impact and world.anomalies.get(d.id, "") is None:
                for name, delta in d.impact.items():
                    m[name] += delta
    return {
        "latency": round(max(1.0, m["latency"]), 3),
        "error_rate": round(min(1.0, max(0.0, m["error_rate"])), 4),
        "uptime": round(min(1.0, max(0.0, m["uptime"])), 4),
        "data_quality": round(min(1.0, max(0.0, m["data_quality"])), 4),
    }


def advance(world: World, interrupted: Collection[str] = ()) -> list[dict[str, Any]]:
    """Move the world to the next step; returns the events that fired. `interrupted`: the roles that spent the
    step on an action in INTERRUPTS_WORK (their tasks make no progress)."""
    world.step += 1
    _progress_work(world, interrupted)
    _arrivals(world)
    _escalations(world)
    fired = fire_due_events(world)
    _refresh_metrics(world)
    return fired


def _refresh_metrics(world: World) -> None:
    """Recompute the metrics if an incident opened or was resolved or an anomaly fired or was reported since
    (the only things they depend on)."""
    if world.metrics_stale:
        world.metrics = compute_metrics(world)
        world.health = health(world.scenario.baseline_metrics, world.metrics)
        world.metrics_stale = False


def health(base: Any, m: dict[str, float]) -> float:
    """Service health: the mean of each metric's ratio to its baseline (worse than baseline < 1, capped at 1)."""
    ratios = (
        min(1.0, base.latency / m["latency"]),
        min(1.0, (base.error_rate + 0.01) / (m["error_rate"] + 0.01)),
        min(1.0, m["uptime"] / base.uptime) if base.uptime else 1.0,
        min(1.0, m["data_quality"] / base.data_quality) if base.data_quality else 1.0,
    )
    return sum(ratios) / len(ratios)


def start(world: World) -> list[dict[str, Any]]:
    """Bring a fresh world to its step-0 condition."""
    _arrivals(world)
    fired = fire_due_events(world)
    _refresh_metrics(world)
    return fired
