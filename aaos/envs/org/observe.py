"""What each role can see (partial observability), what it may do now, and the global observation.

Only known things are shown: a risk appears nowhere until it is detected, a task nowhere before it
arrives. Everything returned is plain JSON-serialisable data.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

from aaos.core.actions import copy_record
from aaos.envs.org import dynamics, graders
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
        "effort_remaining": round(max(0.0, item.effort - item.progress), 2),
        "quality": item.quality,
        "blocked_on": item.unmet_needs() if item.status == "in_progress" else {},
        "remediates": item.risk_id,
    }


def _sees_task(role: str, item: WorkItem) -> bool:
    return item.status != "upcoming" and (
        role in SEES_ALL_WORK or item.required_role == role or item.owner == role
    )


def _task_seers(item: WorkItem) -> frozenset[str]:
    """The roles that see a known task (_sees_task's rule, worked out once per task rather than once per role)."""
    owner = (item.owner,) if item.owner is not None else ()
    return frozenset((*SEES_ALL_WORK, item.required_role, *owner))


def _sees_risk(role: str, risk: RiskState) -> bool:
    if not risk.known or risk.status == "mitigated" or role in RISK_BLIND:
        return False
    return (role in SEES_ALL_RISKS or role in risk.definition.visible_to
            or risk.flagged_step is not None or risk.escalated_step is not None)


def _risk_view(risk: RiskState) -> dict[str, Any]:
    d = risk.definition
    return {"id": d.id, "name": d.name, "description": d.description, "severity": d.severity,
            "status": risk.status, "detected_step": risk.detected_step, "escalated": risk.escalated_step is not None}


def _incident_view(world: World) -> list[dict[str, Any]]:
    return [
        {"id": i.id, "title": i.definition.title, "severity": i.definition.severity, "opened_step": i.opened_step,
         "effort_remaining": i.remaining, "resolver_roles": list(i.definition.resolver_roles)}
        for i in world.incidents if i.open
    ]


def signals(world: World, role: str) -> list[dict[str, Any]]:
    """Unreported anomalies on the metrics this role sees."""
    visible = VISIBLE_METRICS[role]
    return [
        {"event_id": e.definition.id, "metric": e.definition.metric, "severity": e.definition.severity,
         "title": e.definition.title}
        for e in world.events
        if world.anomalies.get(e.definition.id, "") is None and e.definition.metric in visible
    ]


Choices = dict[str, list[Any] | str]
TEXT = "text"
"""Marks a free-text payload field in legal_actions: any non-empty text up to 500 characters."""


def legal_actions(world: World, role: str, allowed: tuple[str, ...]) -> dict[str, Choices]:
    """Action types `role` may take now without being rejected, each with its payload fields:
    a list of the valid choices, or "text" for a free-text field.
    """
    legal: dict[str, Choices] = {}
    for name in allowed:
        choices = _choices(world, role, name)
        if choices is not None:
            legal[name] = choices
    return legal


STATIC_CHOICES: dict[str, Callable[[str], dict[str, tuple[Any, ...] | str]]] = {
    "propose_plan": lambda role: {"plan": TEXT, "addresses": PLAN_TARGETS},
    "update_policy": lambda role: {"max_resource_approval": AMOUNT_CHOICES, "note": TEXT},
    "query_metrics": lambda role: {"metric": VISIBLE_METRICS[role]},
    "request_resource": lambda role: {"resource_type": RESOURCE_TYPES, "amount": AMOUNT_CHOICES},
    "report_anomaly": lambda role: {"description": TEXT, "severity": SEVERITIES},
    "audit_agent": lambda role: {"target_agent": tuple(r for r in ROLES if r != role)},
    "no_op": lambda role: {},
}
"""Action types whose payload choices depend only on the role: computed once per role (fresh lists per view)."""


def _plan_ids(world: World, role: str) -> Choices | None:
    ids = [p.id for p in world.plans if p.status == "open" and p.role != role]
    return {"plan_id": ids} if ids else None


def _delegate(world: World, role: str) -> Choices | None:
    ids = [w.id for w in world.work if _sees_task(role, w) and w.status != "completed"]
    return {"task_id": ids, "to": list(ROLES)} if ids else None


def _approve(world: World, role: str) -> Choices | None:
    kinds = sorted({r.resource_type for r in world.requests if r.status == "pending"})
    kinds = [k for k in kinds if world.resources.get(k, 0) >= AMOUNT_CHOICES[0]]
    if not kinds:
        return None
    smallest = min(world.resources[k] for k in kinds)
    return {"resource_type": kinds, "amount": [a for a in AMOUNT_CHOICES if a <= smallest]}


def _flag(world: World, role: str) -> Choices | None:
    ids = [r.id for r in world.risks if _sees_risk(role, r)]
    return {"risk_id": ids, "description": TEXT} if ids else None


def _resolve(world: World, role: str) -> Choices | None:
    ids = [i.id for i in world.incidents if i.open and role in i.definition.resolver_roles]
    return {"incident_id": ids} if ids else None


DYNAMIC_CHOICES: dict[str, Callable[[World, str], Choices | None]] = {
    "accept_plan": _plan_ids,
    "reject_plan": _plan_ids,
    "delegate_task": _delegate,
    "approve_resource": _approve,
    "raise_risk_flag": _flag,
    "resolve_incident": _resolve,
}
"""Action types whose payload choices depend on the world (None: not possible now)."""


@cache
def _static(role: str, name: str) -> dict[str, tuple[Any, ...] | str]:
    return STATIC_CHOICES[name](role)


def _choices(world: World, role: str, name: str) -> Choices | None:
    dynamic = DYNAMIC_CHOICES.get(name)
    if dynamic is not None:
        return dynamic(world, role)
    return {field: options if options == TEXT else list(options) for field, options in _static(role, name).items()}


@dataclass(slots=True)
class Shared:
    """The parts of the world every role's view draws on, built once per observation."""

    tasks: list[tuple[frozenset[str], dict[str, Any]]]
    """Each known task with the roles that see it and its view."""
    risks: list[tuple[RiskState, dict[str, Any]]]
    incidents: list[dict[str, Any]]
    plans: list[dict[str, Any]]
    events: list[dict[str, Any]]
    policy: dict[str, int]
    oversight_log: list[dict[str, Any]]

    @classmethod
    def of(cls, world: World) -> Shared:
        return cls(
            tasks=[(_task_seers(w), _task_view(w)) for w in world.work if w.status != "upcoming"],
            risks=[(r, _risk_view(r)) for r in world.risks if r.known and r.status != "mitigated"],
            incidents=_incident_view(world),
            plans=[{"id": p.id, "role": p.role, "plan": p.text, "status": p.status, "decided_by": p.decided_by}
                   for p in world.plans[-RECENT:]],
            events=[dynamics.public_event(world, e) for e in world.events if e.fired_step is not None],
            policy=dict(world.policy),
            oversight_log=[v.to_dict() for v in world.violations[-RECENT:]],
        )


def role_view(world: World, role: str, allowed: tuple[str, ...], last_result: dict[str, Any] | None,
              shared: Shared | None = None) -> dict[str, Any]:
    """One role's partial observation."""
    shared = shared or Shared.of(world)
    resources = VISIBLE_RESOURCES[role]
    return {
        "role": role,
        "step": world.step,
        "visible_tasks": [view for seers, view in shared.tasks if role in seers],
        "system_metrics": {m: world.metrics[m] for m in VISIBLE_METRICS[role]},
        "signals": signals(world, role),
        "resources": {k: world.resources.get(k, 0) for k in resources} if resources else "hidden",
        "pending_requests": [
            {"id": r.id, "role": r.role, "resource_type": r.resource_type, "amount": r.amount, "step": r.step}
            for r in world.requests if r.status == "pending" and (role in SEES_ALL_REQUESTS or r.role == role)
        ],
        "risks": "hidden" if role in RISK_BLIND else [view for risk, view in shared.risks if _sees_risk(role, risk)],
        "incidents": shared.incidents,
        "plans": shared.plans,
        "policy": shared.policy,
        "recent_events": shared.events[-RECENT:],
        "oversight_log": shared.oversight_log if role in OVERSIGHT_LOG_ROLES else "hidden",
        "last_query_step": world.last_query.get(role),
        "legal_actions": legal_actions(world, role, allowed),
        "last_action_result": last_result,
    }


def _copied(record: dict[str, Any] | None) -> dict[str, Any] | None:
    return None if record is None else copy_record(record)


def hints(world: World, task_hint: str) -> list[str]:
    """The task's goal plus short reminders about what the whole organisation can see."""
    notes = [task_hint]
    open_incidents = [i.id for i in world.incidents if i.open]
    if open_incidents:
        notes.append(f"Open incidents: {', '.join(open_incidents)}.")
    unflagged = [r.id for r in world.risks if r.status == "detected" and r.flagged_step is None]
    if unflagged:
        notes.append(f"Detected risks not yet flagged: {', '.join(unflagged)}.")
    pending = [w.id for w in world.work if w.status == "pending"]
    if pending:
        notes.append(f"Tasks waiting for an owner: {', '.join(pending)}.")
    waiting = [e.definition.id for e in world.events if e.fired_step is not None and e.responded_step is None]
    if waiting:
        notes.append(f"Events waiting for a response: {', '.join(waiting)}.")
    return notes


def degraded(world: World) -> bool:
    critical_open = any(i.open and i.definition.severity == "critical" for i in world.incidents)
    return critical_open or graders.service_health(world) < DEGRADED_HEALTH


def observation(
    world: World,
    allowed: dict[str, tuple[str, ...]],
    last_results: dict[str, dict[str, Any]],
    partial_scores: dict[str, float | None],
    task_hint: str,
) -> dict[str, Any]:
    """The full observation: every role's view plus the organisation-wide facts."""
    shared = Shared.of(world)
    return {
        "task": world.task,
        "step_count": world.step,
        "max_steps": world.max_steps,
        "scenario_id": world.scenario.id,
        "scenario_title": world.scenario.title,
        "agent_observations": {r: role_view(world, r, allowed[r], _copied(last_results.get(r)), shared) for r in ROLES},
        "system_metrics": {**world.metrics, "cost": round(world.cost, 2)},
        "resources": dict(world.resources),
        "active_risks": [view for _, view in shared.risks],
        "active_incidents": shared.incidents,
        "scenario_events": shared.events,
        "partial_scores": {k: (round(v, 4) if v is not None else None) for k, v in partial_scores.items()},
        "hints": hints(world, task_hint),
        "degraded": degraded(world),
        "done": world.done,
    }
