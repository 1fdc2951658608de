"""What each role can see (partial observability), what it may do now, and the global observation.

Only known things are shown: a risk appears nowhere until it is detected, a task nowhere before it
arrives. Everything returned is plain JSON-serialisable data, built new for each observation (the six views of
one observation share the parts they all show, nothing is shared with the world or another observation).

For speed, what every view draws on is gathered once per observation (a Frame: each known task, risk, incident,
plan, event, anomaly and request with the roles that see it), and the payload choices that depend only on the
role are compiled once per role into a literal (aaos.core.fresh).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from aaos.core.actions import copy_record
from aaos.core.fresh import copier, picker
from aaos.envs.org import dynamics
from aaos.envs.org.spec import (
    AMOUNT_CHOICES,
    OVERSIGHT_LOG_ROLES,
    PLAN_TARGETS,
    RESOURCE_TYPES,
    RISK_BLIND,
    ROLES,
    SEES_ALL_REQUESTS,
    SEES_ALL_RISKS,
    SEES_ALL_WORK,
    SEVERITIES,
    VISIBLE_METRICS,
    VISIBLE_RESOURCES,
)
from aaos.envs.org.world import RiskState, WorkItem, World

RECENT = 8
"""How many recent entries of a log a view shows."""
DEGRADED_HEALTH = 0.85


def _task_view(item: WorkItem) -> dict[str, Any]:
    return {
        "id": item.id,
        "name": item.name,
        "status": item.status,
        "priority": item.priority,
        "required_role": item.required_role,
        "owner": item.owner,
        "deadline_step": item.deadline,
        "effort_remaining": round(remaining, 2) if (remaining := item.effort - item.progress) > 0.0 else 0.0,
        "blocked_on": item.unmet_needs() if item.status == "in_progress" and item.needs else {},
        "remediates": item.risk_id,
    }


@cache
def _task_seers(required_role: str, owner: str | None) -> frozenset[str]:
    """The roles that see a known task: those that see all work, its required role and its owner."""
    return frozenset((*SEES_ALL_WORK, required_role, *((owner,) if owner is not None else ())))


RISK_SIGHTED: frozenset[str] = frozenset(r for r in ROLES if r not in RISK_BLIND)
"""The roles that see a flagged or escalated risk (every role that sees the risk register)."""


def _risk_seers(risk: RiskState) -> frozenset[str]:
    """The roles that see a known, unmitigated risk: once flagged or escalated every role that sees risks, before
    that those that see all risks and those whose metrics show it."""
    if risk.flagged_step is not None or risk.escalated_step is not None:
        return RISK_SIGHTED
    return frozenset((*SEES_ALL_RISKS, *risk.definition.visible_to)) & RISK_SIGHTED


def _risk_view(risk: RiskState) -> dict[str, Any]:
    d = risk.definition
    return {"id": d.id, "name": d.name, "description": d.description, "severity": d.severity,
            "status": risk.status, "detected_step": risk.detected_step, "escalated": risk.escalated_step is not None}


Choices = dict[str, list[Any] | str]
TEXT = "text"
"""Marks a free-text payload field in legal_actions: any non-empty text up to 500 characters."""


_by_role: Callable[[], dict[str, list[Any]]] = copier({role: [] for role in ROLES})
"""A new dict of an empty list per role."""
_by_role_map: Callable[[], dict[str, dict[str, Any]]] = copier({role: {} for role in ROLES})
"""A new dict of an empty dict per role."""


def _completed_seen(world: World) -> dict[str, dict[str, float]]:
    """Per role, the completed tasks it sees (those that see all work, the required role, the owner): id -> quality,
    in the tasks' order."""
    completed: dict[str, dict[str, float]] = _by_role_map()
    for item in world.work:
        if item.status == "completed":
            for role in _task_seers(item.required_role, item.owner):
                completed[role][item.id] = item.quality
    return completed


@dataclass(slots=True)
class Frame:
    """What the roles' views draw on, gathered in one pass over the world per observation. Each per-role list is
    that role's own (handed out once, in one view)."""

    tasks: dict[str, list[dict[str, Any]]]
    """Per role: the views of the known, uncompleted tasks it sees."""
    completed: dict[str, dict[str, float]]
    """Per role: the completed tasks it sees, id -> the quality delivered (copies of World.completed_seen)."""
    risks: list[dict[str, Any]]
    """The views of the known, unmitigated risks."""
    role_risks: dict[str, list[dict[str, Any]]]
    """Per role: the views of the known, unmitigated risks it sees."""
    incidents: list[dict[str, Any]]
    """The open incidents' views."""
    resolvable: list[tuple[tuple[str, ...], str]]
    """Each open incident: its resolver roles and its id."""
    plans: list[dict[str, Any]]
    """The views of the recent plans still open."""
    decided_plans: dict[str, dict[str, str]]
    """The recent plans decided: id -> status and the role that decided it."""
    open_plans: list[tuple[str, str]]
    """Each open plan: its author and its id."""
    events: list[dict[str, Any]]
    waiting_events: list[str]
    """The fired events not yet responded to, by id."""
    pending_tasks: list[str]
    """The arrived tasks without an owner, by id."""
    unflagged_risks: list[str]
    """The detected risks not yet flagged, by id."""
    signals: list[tuple[str, dict[str, Any]]]
    """Each unreported anomaly: its metric and the signal shown to the roles that see the metric."""
    requests: dict[str, list[dict[str, Any]]]
    """Per role: the views of the pending resource requests it sees."""
    policy: dict[str, int]
    oversight_log: list[dict[str, Any]]

    @classmethod
    def of(cls, world: World) -> Frame:
        tasks = _by_role()
        pending_tasks = []
        for item in world.work:
            status = item.status
            if status == "upcoming" or status == "completed":
                continue
            if status == "pending":
                pending_tasks.append(item.id)
            view = _task_view(item)
            for role in _task_seers(item.required_role, item.owner):
                tasks[role].append(view)
        completed_seen = world.completed_seen
        if completed_seen is None:
            completed_seen = world.completed_seen = _completed_seen(world)
        risks = []
        role_risks = _by_role()
        unflagged_risks = []
        for risk in world.risks:
            status = risk.status
            if risk.known and status != "mitigated":
                if status == "detected" and risk.flagged_step is None:
                    unflagged_risks.append(risk.id)
                view = _risk_view(risk)
                risks.append(view)
                for role in _risk_seers(risk):
                    role_risks[role].append(view)
        incidents: list[dict[str, Any]] = []
        resolvable: list[tuple[tuple[str, ...], str]] = []
        for i in world.incidents:
            if i.open:
                d = i.definition
                incidents.append({"id": i.id, "title": d.title, "severity": d.severity, "opened_step": i.opened_step,
                                  "effort_remaining": i.remaining, "resolver_roles": list(d.resolver_roles)})
                resolvable.append((d.resolver_roles, i.id))
        requests = _by_role()
        for r in world.requests:
            if r.status == "pending":
                view = {"id": r.id, "role": r.role, "resource_type": r.resource_type, "amount": r.amount,
                        "step": r.step}
                for role in {r.role, *SEES_ALL_REQUESTS}:
                    requests[role].append(view)
        events = []
        waiting_events = []
        for event in world.events[:world.fired]:
            events.append(dynamics.public_event(world, event))
            if event.responded_step is None:
                waiting_events.append(event.definition.id)
        anomalies = world.anomalies
        recent_plans = world.plans[-RECENT:]
        return cls(
            tasks=tasks,
            completed={role: dict(seen) for role, seen in completed_seen.items()},
            risks=risks,
            role_risks=role_risks,
            incidents=incidents,
            resolvable=resolvable,
            plans=[{"id": p.id, "role": p.role, "plan": p.text, "status": p.status, "decided_by": None}
                   for p in recent_plans if p.status == "open"],
            decided_plans={p.id: {"status": p.status, "decided_by": p.decided_by}
                           for p in recent_plans if p.status != "open"},
            open_plans=[(p.role, p.id) for p in world.plans if p.status == "open"],
            events=events,
            waiting_events=waiting_events,
            pending_tasks=pending_tasks,
            unflagged_risks=unflagged_risks,
            signals=[(e.definition.metric, {"event_id": e.definition.id, "metric": e.definition.metric,
                                            "severity": e.definition.severity, "title": e.definition.title})
                     for e in world.events if anomalies.get(e.definition.id, "") is None] if anomalies else [],
            requests=requests,
            policy=dict(world.policy),
            oversight_log=[v.to_dict() for v in world.violations[-RECENT:]],
        )


STATIC_CHOICES: dict[str, Callable[[str], dict[str, tuple[Any, ...] | str]]] = {
    "propose_plan": lambda role: {"plan": TEXT, "addresses": PLAN_TARGETS},
    "update_policy": lambda role: {"max_resource_approval": AMOUNT_CHOICES, "note": TEXT},
    "query_metrics": lambda role: {"metric": VISIBLE_METRICS[role]},
    "request_resource": lambda role: {"resource_type": RESOURCE_TYPES, "amount": AMOUNT_CHOICES},
    "report_anomaly": lambda role: {"description": TEXT, "severity": SEVERITIES},
    "audit_agent": lambda role: {"target_agent": tuple(r for r in ROLES if r != role)},
    "no_op": lambda role: {},
}
"""Action types whose payload choices depend only on the role (always possible)."""


def _plan_ids(world: World, frame: Frame, role: str) -> Choices | None:
    if not frame.open_plans:
        return None
    ids = [plan_id for author, plan_id in frame.open_plans if author != role]
    return {"plan_id": ids} if ids else None


def _delegate(world: World, frame: Frame, role: str) -> Choices | None:
    ids = [task["id"] for task in frame.tasks[role]]
    return {"task_id": ids, "to": list(ROLES)} if ids else None


def _approve(world: World, frame: Frame, role: str) -> Choices | None:
    kinds = sorted({r.resource_type for r in world.requests if r.status == "pending"})
    kinds = [k for k in kinds if world.resources.get(k, 0) >= AMOUNT_CHOICES[0]]
    if not kinds:
        return None
    smallest = min(world.resources[k] for k in kinds)
    return {"resource_type": kinds, "amount": [a for a in AMOUNT_CHOICES if a <= smallest]}


def _flag(world: World, frame: Frame, role: str) -> Choices | None:
    views = frame.role_risks[role]
    if not views:
        return None
    return {"risk_id": [view["id"] for view in views], "description": TEXT}


def _resolve(world: World, frame: Frame, role: str) -> Choices | None:
    if not frame.resolvable:
        return None
    ids = [incident_id for resolvers, incident_id in frame.resolvable if role in resolvers]
    return {"incident_id": ids} if ids else None


DYNAMIC_CHOICES: dict[str, Callable[[World, Frame, str], Choices | None]] = {
    "accept_plan": _plan_ids,
    "reject_plan": _plan_ids,
    "delegate_task": _delegate,
    "approve_resource": _approve,
    "raise_risk_flag": _flag,
    "resolve_incident": _resolve,
}
"""Action types whose payload choices depend on the world (None: not possible now)."""


@cache
def _legal_template(role: str, allowed: tuple[str, ...]) -> tuple[Callable[[], dict[str, Any]], tuple[str, ...]]:
    """A role's legal actions with every static action's choices filled in and a placeholder for each dynamic
    one (so that the order stays that of `allowed`), compiled to build a fresh copy per call; and the dynamic
    action types."""
    template = {name: None if name in DYNAMIC_CHOICES else STATIC_CHOICES[name](role) for name in allowed}
    return copier(template), tuple(name for name in allowed if name in DYNAMIC_CHOICES)


def legal_actions(world: World, role: str, allowed: tuple[str, ...], frame: Frame | None = None) -> dict[str, Choices]:
    """Action types `role` may take now without being rejected, each with its payload fields:
    a list of the valid choices, or "text" for a free-text field.
    """
    build, dynamic = _legal_template(role, allowed)
    legal = build()
    if dynamic:
        frame = frame or Frame.of(world)
        for name in dynamic:
            choices = DYNAMIC_CHOICES[name](world, frame, role)
            if choices is None:
                del legal[name]
            else:
                legal[name] = choices
    return legal


_metrics_seen: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    role: picker(VISIBLE_METRICS[role]) for role in ROLES}
"""Per role: a new dict of the metrics it sees, from the world's."""
_resources_seen: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    role: picker(VISIBLE_RESOURCES[role], 0) for role in ROLES if VISIBLE_RESOURCES[role]}
"""Per role that sees resources: a new dict of their amounts (0 when none is left), from the world's."""


def role_view(world: World, role: str, allowed: tuple[str, ...], last_result: dict[str, Any] | None,
              frame: Frame | None = None) -> dict[str, Any]:
    """One role's partial observation."""
    frame = frame or Frame.of(world)
    resources = _resources_seen.get(role)
    visible = VISIBLE_METRICS[role]
    return {
        "role": role,
        "step": world.step,
        "visible_tasks": frame.tasks[role],
        "completed_tasks": frame.completed[role],
        "system_metrics": _metrics_seen[role](world.metrics),
        "signals": [signal for metric, signal in frame.signals if metric in visible] if frame.signals else [],
        "resources": resources(world.resources) if resources is not None else "hidden",
        "pending_requests": frame.requests[role],
        "risks": "hidden" if role in RISK_BLIND else frame.role_risks[role],
        "incidents": frame.incidents,
        "plans": frame.plans,
        "decided_plans": frame.decided_plans,
        "policy": frame.policy,
        "recent_events": frame.events[-RECENT:],
        "oversight_log": frame.oversight_log if role in OVERSIGHT_LOG_ROLES else "hidden",
        "last_query_step": world.last_query.get(role),
        "legal_actions": legal_actions(world, role, allowed, frame),
        "last_action_result": last_result,
    }


def hints(task_hint: str, frame: Frame) -> list[str]:
    """The task's goal plus short reminders about what the whole organisation can see."""
    notes = [task_hint]
    if frame.resolvable:
        notes.append(f"Open incidents: {', '.join(incident_id for _, incident_id in frame.resolvable)}.")
    if frame.unflagged_risks:
        notes.append(f"Detected risks not yet flagged: {', '.join(frame.unflagged_risks)}.")
    if frame.pending_tasks:
        notes.append(f"Tasks waiting for an owner: {', '.join(frame.pending_tasks)}.")
    if frame.waiting_events:
        notes.append(f"Events waiting for a response: {', '.join(frame.waiting_events)}.")
    return notes


def degraded(world: World) -> bool:
    critical_open = any(i.open and i.definition.severity == "critical" for i in world.incidents)
    return critical_open or world.health < DEGRADED_HEALTH


def observation(
    world: World,
    allowed: dict[str, tuple[str, ...]],
    last_results: dict[str, dict[str, Any]],
    partial_scores: dict[str, float | None],
    task_hint: str,
    roles: Sequence[str] = ROLES,
) -> dict[str, Any]:
    """The observation: the views of `roles` (default: every role's) plus the organisation-wide facts."""
    frame = Frame.of(world)
    views = {}
    for role in roles:
        last = last_results.get(role)
        views[role] = role_view(world, role, allowed[role], None if last is None else copy_record(last), frame)
    return {
        "task": world.task,
        "step_count": world.step,
        "max_steps": world.max_steps,
        "scenario_id": world.scenario.id,
        "scenario_title": world.scenario.title,
        "agent_observations": views,
        "system_metrics": {**world.metrics, "cost": round(world.cost, 2)},
        "resources": dict(world.resources),
        "active_risks": frame.risks,
        "active_incidents": frame.incidents,
        "scenario_events": frame.events,
        "partial_scores": {k: (round(v, 4) if v is not None else None) for k, v in partial_scores.items()},
        "hints": hints(task_hint, frame),
        "degraded": degraded(world),
        "done": world.done,
    }
