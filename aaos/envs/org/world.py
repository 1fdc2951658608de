"""The organisation's ground-truth state as plain data, and how it is built from a scenario variant.

Nothing here decides anything: the rules live in dynamics.py and oversight.py, the scores in graders.py.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from aaos.core.actions import copy_record
from aaos.envs.org.scenario import EventDef, IncidentDef, RiskDef, Scenario


@dataclass(slots=True)
class WorkItem:
    """A task: from the scenario, or opened to remediate a flagged risk (then `risk_id` names the risk).

    status: "upcoming" (not yet arrived, known to nobody), "pending", "in_progress" or "completed".
    progress: units of effort done; while no resource need is unmet the owner adds 1 per step if it is the
    required role, 0.5 if it is another worker, nothing if it is oversight. quality is set at completion
    (1.0 by the required role, else 0.5).
    """

    id: str
    name: str
    priority: str
    required_role: str
    effort: int
    deadline: int
    arrives: int
    needs: dict[str, int]
    risk_id: str | None = None
    status: str = "upcoming"
    owner: str | None = None
    progress: float = 0.0
    allocated: dict[str, int] = field(default_factory=dict)
    assigned_step: int | None = None
    assigned_right: bool = False
    completed_step: int | None = None
    quality: float = 0.0

    def unmet_needs(self) -> dict[str, int]:
        return {k: n - self.allocated.get(k, 0) for k, n in self.needs.items() if self.allocated.get(k, 0) < n}


@dataclass(slots=True)
class RiskState:
    """A risk: hidden until a role in `visible_to` queries metrics at or after noticeable_from.

    status: "hidden" -> "detected" -> "flagged" -> "mitigated"; "escalated" when escalates_at passes
    before mitigation (an incident opens; remediation still mitigates it afterwards).
    """

    definition: RiskDef
    status: str = "hidden"
    detected_step: int | None = None
    detected_by: str | None = None
    flagged_step: int | None = None
    mitigated_step: int | None = None
    escalated_step: int | None = None
    ignored_reported: bool = False

    @property
    def id(self) -> str:
        return self.definition.id

    @property
    def known(self) -> bool:
        """Known to the organisation: detected, or escalated into the open."""
        return self.status != "hidden"


@dataclass(slots=True)
class Incident:
    """An open or resolved incident; its impact is added to the metrics while it is open."""

    id: str
    definition: IncidentDef
    opened_step: int
    source: str
    remaining: int
    resolved_step: int | None = None

    @property
    def open(self) -> bool:
        return self.resolved_step is None


@dataclass(slots=True)
class ResourceRequest:
    """A request_resource for a blocked task of the requester, pending until operations approves it."""

    id: str
    role: str
    resource_type: str
    amount: int
    step: int
    status: str = "pending"
    granted: int = 0
    answered_step: int | None = None


@dataclass(slots=True)
class Plan:
    """A proposed plan; accepted once another role accepts it, rejected once another role rejects it first.

    replans: the resource-shock event the plan answers (it names the shocked resource), if any;
    the event counts as answered when the plan is accepted.
    """

    id: str
    role: str
    text: str
    step: int
    replans: str | None = None
    status: str = "open"
    decided_by: str | None = None


@dataclass(slots=True)
class EventState:
    """A scheduled event; fired_step is set when it happens, responded_step when the organisation answers it."""

    definition: EventDef
    fired_step: int | None = None
    responded_step: int | None = None
    response_credit: float = 0.0
    incident_id: str | None = None


@dataclass(slots=True)
class Violation:
    """One oversight event: a rule broken by a role at a step, and the penalty it carries."""

    step: int
    role: str
    rule: str
    severity: str
    penalty: float
    detail: str
    audited: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"step": self.step, "role": self.role, "rule": self.rule, "severity": self.severity,
                "penalty": self.penalty, "detail": self.detail, "audited": self.audited}


@dataclass(slots=True)
class Counters:
    """Running tallies the graders read."""

    actions: int = 0
    wasted: int = 0
    false_flags: int = 0
    false_reports: int = 0
    delegations: int = 0
    right_delegations: int = 0
    granted_total: int = 0
    granted_used: int = 0
    policy_breaches: int = 0


@dataclass(slots=True)
class World:
    """The full state of one episode."""

    scenario: Scenario
    task: str
    seed: int
    max_steps: int
    step: int
    metrics: dict[str, float]
    cost: float
    resources: dict[str, int]
    policy: dict[str, int]
    policy_notes: list[str]
    work: list[WorkItem]
    risks: list[RiskState]
    incidents: list[Incident]
    requests: list[ResourceRequest]
    plans: list[Plan]
    events: list[EventState]
    anomalies: dict[str, str | None]  # anomaly event id -> role that reported it (None: unreported)
    violations: list[Violation]
    log: list[dict[str, Any]]
    flags: dict[str, bool]
    last_query: dict[str, int]
    detectable: dict[tuple[str, str], list[RiskState]]
    """(role, metric) -> the risks a query of that metric by that role can detect, in the risks' order (an index of
    the scenario's visible_to and metric, so that a query looks at no other risk)."""
    upcoming: list[WorkItem]
    """The scenario's tasks not arrived yet, the next to arrive last (the dynamics look at no other)."""
    unescalated: list[tuple[int, RiskState]]
    """(escalates_at, risk) for each risk whose escalates_at has not come yet, the next to come last (ties in the
    risks' order)."""
    critical: list[RiskState]
    """The risks of critical severity, in the risks' order (oversight charges one left unflagged too long)."""
    fired: int
    """How many events have fired: `events` is sorted by step, so the fired ones are its first `fired`."""
    counters: Counters = field(default_factory=Counters)
    done: bool = False
    metrics_stale: bool = True
    """Set by the dynamics when something the metrics derive from changes (dynamics.compute_metrics)."""
    health: float = 1.0
    """The service health of the metrics (dynamics.health), refreshed with them."""
    penalty: float = 0
    """The oversight penalty of the violations (oversight.total_penalty, the integer 0 while there is none),
    refreshed when one is recorded or audited."""
    completed_seen: dict[str, dict[str, float]] | None = None
    """Per role, the completed tasks it sees (id -> quality, in the tasks' order), as the views show them: built by
    observe when needed and dropped (None) by the dynamics when another task completes."""
    settled_work: dict[str, tuple[float, float, float]] = field(default_factory=dict)
    """Per completed task, by id: its priority weight and its weighted business and delivered credit (graders.work),
    kept once graded: a completed task no longer changes."""

    def known_work_item(self, item_id: str) -> WorkItem | None:
        """A task that has arrived (an upcoming one is unknown to everyone)."""
        for item in self.work:
            if item.id == item_id:
                return item if item.status != "upcoming" else None
        return None

    def risk(self, risk_id: str) -> RiskState | None:
        for risk in self.risks:
            if risk.id == risk_id:
                return risk
        return None

    def known_risk(self, risk_id: str) -> RiskState | None:
        """A risk the organisation knows of (detected or escalated); a hidden one is unknown."""
        risk = self.risk(risk_id)
        return risk if risk is not None and risk.known else None

    def plan(self, plan_id: str) -> Plan | None:
        for plan in self.plans:
            if plan.id == plan_id:
                return plan
        return None

    def incident(self, incident_id: str) -> Incident | None:
        for incident in self.incidents:
            if incident.id == incident_id:
                return incident
        return None

    def to_dict(self) -> dict[str, Any]:
        """The whole state as JSON-serialisable data (ground truth; never shown to agents)."""
        data = {
            "scenario": self.scenario.model_dump(mode="json"),
            "task": self.task,
            "seed": self.seed,
            "max_steps": self.max_steps,
            "step": self.step,
            "done": self.done,
            "metrics": dict(self.metrics),
            "cost": self.cost,
            "resources": dict(self.resources),
            "policy": dict(self.policy),
            "policy_notes": list(self.policy_notes),
            "work": [asdict(w) for w in self.work],
            "risks": [_risk_dict(r) for r in self.risks],
            "incidents": [_incident_dict(i) for i in self.incidents],
            "requests": [asdict(r) for r in self.requests],
            "plans": [asdict(p) for p in self.plans],
            "events": [_event_dict(e) for e in self.events],
            "anomalies": dict(self.anomalies),
            "violations": [v.to_dict() for v in self.violations],
            "log": [copy_record(r) for r in self.log],  # the env's last results share these records
            "flags": dict(self.flags),
            "last_query": dict(self.last_query),
            "counters": asdict(self.counters),
        }
        return data


def _risk_dict(risk: RiskState) -> dict[str, Any]:
    data = {k: getattr(risk, k) for k in RiskState.__slots__ if k != "definition"}
    return {"id": risk.id, **data, "definition": risk.definition.model_dump(mode="json")}


def _incident_dict(incident: Incident) -> dict[str, Any]:
    data = {k: getattr(incident, k) for k in Incident.__slots__ if k != "definition"}
    return {**data, "definition": incident.definition.model_dump(mode="json")}


def _event_dict(event: EventState) -> dict[str, Any]:
    data = {k: getattr(event, k) for k in EventState.__slots__ if k != "definition"}
    return {"id": event.definition.id, **data, "definition": event.definition.model_dump(mode="json")}


def build_world(variant: Scenario, task: str, seed: int, max_steps: int) -> World:
    """A fresh world at step 0 for a drawn scenario variant."""
    work = [
        WorkItem(t.id, t.name, t.priority, t.required_role, t.effort, t.deadline, t.arrives, dict(t.needs))
        for t in variant.tasks
    ]
    risks = [RiskState(r) for r in variant.risks]
    detectable: dict[tuple[str, str], list[RiskState]] = {}
    for risk in risks:
        for role in risk.definition.visible_to:
            detectable.setdefault((role, risk.definition.metric), []).append(risk)
    return World(
        scenario=variant,
        task=task,
        seed=seed,
        max_steps=max_steps,
        step=0,
        metrics=variant.baseline_metrics.model_dump(),
        cost=0.0,
        resources=dict(variant.resources),
        policy=variant.policy.model_dump(),
        policy_notes=[],
        work=work,
        risks=risks,
        incidents=[],
        requests=[],
        plans=[],
        events=sorted((EventState(e) for e in variant.events), key=lambda e: (e.definition.step, e.definition.id)),
        anomalies={},
        violations=[],
        log=[],
        flags=dict(variant.flags),
        last_query={},
        detectable=detectable,
        upcoming=sorted(work, key=lambda item: item.arrives, reverse=True),
        unescalated=[(at, risk) for at, _, risk in sorted(((r.definition.escalates_at, i, r)
                                                           for i, r in enumerate(risks)),
                                                          key=lambda entry: entry[:2], reverse=True)],
        critical=[risk for risk in risks if risk.definition.severity == "critical"],
        fired=0,
    )
