"""The organisation's observation and state as typed wire models (aaos.core.kit.EnvKit.observation_model and
state_model), extending the protocol's heads (aaos.core.info): what /schema documents and what the conformance
checker validates every observation against.

Every model forbids unknown keys (aaos.core.info.WireModel), so an observation that grows a field the models do not
declare fails the checker until the models (and so the docs) say what it is.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from aaos.core.info import ObservationHead, ResultRecord, ViewHead, WireModel
from aaos.envs.org.spec import MetricName, ResourceType, RoleName, Severity

Hidden = Literal["hidden"]
"""What a view shows in place of a field its role may not see."""


class TaskView(WireModel):
    id: str
    name: str
    priority: Severity
    status: Literal["pending", "in_progress"]
    required_role: RoleName
    owner: RoleName | None
    deadline_step: int
    effort_remaining: float
    blocked_on: dict[ResourceType, int]
    remediates: str | None


class RiskView(WireModel):
    id: str
    name: str
    description: str
    severity: Severity
    status: Literal["detected", "flagged", "escalated"]
    detected_step: int | None
    escalated: bool


class IncidentView(WireModel):
    id: str
    title: str
    severity: Severity
    opened_step: int
    effort_remaining: int
    resolver_roles: list[RoleName]


class Signal(WireModel):
    event_id: str
    metric: MetricName
    severity: Severity
    title: str


class ResourceRequestView(WireModel):
    id: str
    role: RoleName
    resource_type: ResourceType
    amount: int
    step: int


class PlanView(WireModel):
    id: str
    role: RoleName
    plan: str
    status: Literal["open"]
    decided_by: None


class DecidedPlanView(WireModel):
    status: Literal["accepted", "rejected"]
    decided_by: RoleName


class EventView(BaseModel):
    """A fired scenario event; its kind adds one field (metric, incident_id, resource_deltas or policy)."""

    model_config = ConfigDict(extra="allow")

    id: str
    step: int
    kind: Literal["incident", "policy_change", "resource_shock", "anomaly"]
    title: str
    severity: Severity
    respond_within: int
    responded: bool


class ViolationView(WireModel):
    step: int
    role: RoleName
    rule: str
    severity: Severity
    penalty: float
    detail: str
    audited: bool


class RoleView(ViewHead):
    """One role's partial view."""

    role: RoleName
    visible_tasks: list[TaskView]
    completed_tasks: dict[str, float]  # completed task id -> quality delivered (1.0; less by another role)
    system_metrics: dict[MetricName, float]
    signals: list[Signal]
    resources: dict[ResourceType, int] | Hidden
    pending_requests: list[ResourceRequestView]
    risks: list[RiskView] | Hidden
    incidents: list[IncidentView]
    plans: list[PlanView]  # the recent plans still open
    decided_plans: dict[str, DecidedPlanView]  # the recent plans decided, by id
    policy: dict[str, int]
    recent_events: list[EventView]
    oversight_log: list[ViolationView] | Hidden
    last_query_step: int | None


class OrgObservation(ObservationHead):
    """Every role's view plus the organisation-wide facts."""

    agent_observations: dict[RoleName, RoleView]
    system_metrics: dict[str, float]
    resources: dict[ResourceType, int]
    active_risks: list[RiskView]
    active_incidents: list[IncidentView]
    scenario_events: list[EventView]
    hints: list[str]
    degraded: bool


class OrgState(WireModel):
    """The ground truth (never shown to agents): the world, the grade so far and the held reward."""

    scenario: dict[str, Any]
    scenario_name: str
    task: str
    seed: int
    max_steps: int
    step: int
    done: bool
    metrics: dict[MetricName, float]
    cost: float
    resources: dict[ResourceType, int]
    policy: dict[str, int]
    policy_notes: list[str]
    work: list[dict[str, Any]]
    risks: list[dict[str, Any]]
    incidents: list[dict[str, Any]]
    requests: list[dict[str, Any]]
    plans: list[dict[str, Any]]
    events: list[dict[str, Any]]
    anomalies: dict[str, Any]
    violations: list[ViolationView]
    log: list[ResultRecord]
    flags: dict[str, Any]
    last_query: dict[str, int]
    counters: dict[str, float]
    score: float
    components: dict[str, float | None]
    penalty: float
    held_reward: float
