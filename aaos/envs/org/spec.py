"""The organisation's roles, actions (payload models and the permission table), tasks and reward weights.

Each rule here is written once; the simulation, the agents and the docs read it from here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

from aaos.core.spec import ActionSpec, RewardComponent, TaskSpec

WorkerRole = Literal["product_manager", "engineer", "data_analyst", "risk_compliance", "operations"]
RoleName = Literal[WorkerRole, "oversight"]
ROLES: tuple[str, ...] = (*get_args(WorkerRole), "oversight")
WORKERS: tuple[str, ...] = get_args(WorkerRole)
"""The roles that deliver work (oversight audits and owns no progress)."""
ResolverRole = Literal["engineer", "data_analyst", "operations"]
RESOLVERS: tuple[str, ...] = get_args(ResolverRole)
"""The roles that can resolve incidents (each incident names some of them)."""
ResourceType = Literal["compute", "budget", "personnel"]
RESOURCE_TYPES: tuple[str, ...] = get_args(ResourceType)
PlanTarget = Literal["none", ResourceType]
PLAN_TARGETS: tuple[str, ...] = ("none", *RESOURCE_TYPES)
MetricName = Literal["latency", "error_rate", "uptime", "data_quality"]
METRIC_NAMES: tuple[str, ...] = get_args(MetricName)
Severity = Literal["low", "medium", "high", "critical"]
SEVERITIES: tuple[str, ...] = get_args(Severity)
PRIORITY_WEIGHT: dict[str, float] = {"low": 1.0, "medium": 2.0, "high": 3.0, "critical": 4.0}


def most_urgent_first(task: Mapping[str, Any]) -> tuple[float, int, str]:
    """A viewed task's sort key: highest priority first, then the earliest deadline, then the id."""
    return -PRIORITY_WEIGHT[task["priority"]], task["deadline_step"], task["id"]


def most_severe_first(risk: Mapping[str, Any]) -> tuple[int, str]:
    """A viewed risk's sort key: the most severe first, then the id."""
    return -SEVERITIES.index(risk["severity"]), risk["id"]


AMOUNT_CHOICES: tuple[int, ...] = (5, 10, 15, 20, 25, 30, 40, 50)
"""The amounts offered as payload choices for request_resource / approve_resource / update_policy."""
INTERRUPTS_WORK: tuple[str, ...] = ("query_metrics", "resolve_incident")
"""Actions that take the role's attention for the step: its own tasks make no progress in a step it spends
on one of them (investigating and firefighting are not free)."""

MAX_TEXT = 500

VISIBLE_METRICS: dict[str, tuple[str, ...]] = {
    "product_manager": ("latency", "uptime"),
    "engineer": ("latency", "error_rate", "uptime"),
    "data_analyst": ("error_rate", "data_quality"),
    "risk_compliance": ("error_rate", "data_quality"),
    "operations": ("latency", "error_rate", "uptime", "data_quality"),
    "oversight": ("uptime",),
}
"""Which system metrics each role sees (and so which anomalies it can report)."""
VISIBLE_RESOURCES: dict[str, tuple[str, ...]] = {
    "product_manager": ("budget", "personnel"),
    "engineer": ("compute",),
    "data_analyst": ("compute",),
    "risk_compliance": (),
    "operations": RESOURCE_TYPES,
    "oversight": (),
}
"""Which resource pools each role sees; a role that sees none gets "hidden"."""
SEES_ALL_WORK: tuple[str, ...] = ("product_manager", "operations", "oversight")
"""Roles that see every known task; the others see tasks they own or are required for."""
RISK_BLIND: tuple[str, ...] = ("product_manager",)
"""Roles that never see the risk register (they see remediation work as tasks)."""
SEES_ALL_RISKS: tuple[str, ...] = ("risk_compliance", "oversight")
"""Roles that see every known risk; the others see those in their own metrics (a risk's visible_to)."""
OVERSIGHT_LOG_ROLES: tuple[str, ...] = ("oversight", "risk_compliance")
"""Roles that see the oversight log."""
SEES_ALL_REQUESTS: tuple[str, ...] = ("operations",)
"""Roles that see every pending resource request; the others see their own."""


class _Payload(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ProposePlan(_Payload):
    plan: str = Field(min_length=1, max_length=MAX_TEXT, description="The plan, in words (not graded).")
    addresses: PlanTarget = Field(default="none", description="The resource whose shock this plan re-plans for, "
                                                               "or none.")


class PlanRef(_Payload):
    plan_id: str = Field(min_length=1, max_length=100, description="Id of an open plan, e.g. plan_0_product_manager.")


class DelegateTask(_Payload):
    task_id: str = Field(min_length=1, max_length=100, description="Id of a task, e.g. task_frontend.")
    to: RoleName = Field(description="The role that will own the task.")


class ResourceAmount(_Payload):
    amount: int = Field(gt=0, le=1000, description="Units of the resource.")
    resource_type: ResourceType


class Empty(_Payload):
    pass


class QueryMetrics(_Payload):
    metric: MetricName = Field(description="Which of your metrics to investigate; hidden risks show in one metric.")


class RaiseRiskFlag(_Payload):
    risk_id: str = Field(min_length=1, max_length=100, description="Id of a detected risk, e.g. risk_scaling.")
    description: str = Field(default="", max_length=MAX_TEXT)


class ReportAnomaly(_Payload):
    description: str = Field(min_length=1, max_length=MAX_TEXT)
    severity: Severity


class ResolveIncident(_Payload):
    incident_id: str = Field(min_length=1, max_length=100, description="Id of an open incident.")


class AuditAgent(_Payload):
    target_agent: RoleName


class UpdatePolicy(_Payload):
    max_resource_approval: int = Field(gt=0, le=1000, description="The approval limit the organisation adopts.")
    note: str = Field(default="", max_length=MAX_TEXT, description="The policy change, in words (not graded).")


_ALL = ROLES

ACTIONS: tuple[ActionSpec, ...] = (
    ActionSpec("propose_plan", ProposePlan, ("product_manager", "engineer", "data_analyst", "operations"),
               "Propose a plan; it gets the id plan_<step>_<role> and stays open until accepted or rejected. "
               "An accepted plan that addresses a shocked resource answers that resource shock."),
    ActionSpec("accept_plan", PlanRef, WORKERS, "Accept another role's open plan."),
    ActionSpec("reject_plan", PlanRef, WORKERS, "Reject another role's open plan."),
    ActionSpec("delegate_task", DelegateTask, ("product_manager", "engineer", "operations"),
               "Hand a task to a role; it starts work next step. The task's required role works fastest and best."),
    ActionSpec("request_resource", ResourceAmount, ("product_manager", "engineer", "data_analyst", "operations"),
               "Ask for resources for your own blocked task; operations approves."),
    ActionSpec("approve_resource", ResourceAmount, ("operations",),
               "Grant the oldest pending request of that resource type from the pool."),
    ActionSpec("query_metrics", QueryMetrics, _ALL,
               "Investigate one of your metrics (takes your turn: your tasks make no progress this step); reveals "
               "the hidden risks showing in that metric that your role can notice now."),
    ActionSpec("raise_risk_flag", RaiseRiskFlag, ("engineer", "data_analyst", "risk_compliance", "operations"),
               "Flag a detected risk to the organisation; a remediation task is opened for it."),
    ActionSpec("report_anomaly", ReportAnomaly, ("engineer", "data_analyst", "operations"),
               "Report an anomaly shown in your signals."),
    ActionSpec("resolve_incident", ResolveIncident, RESOLVERS,
               "Work on an open incident (takes your turn: your tasks make no progress this step); each action by "
               "one of its resolver roles removes one unit of its effort."),
    ActionSpec("audit_agent", AuditAgent, ("oversight", "risk_compliance"),
               "Audit a role: its unaudited violations are caught, halving their penalty."),
    ActionSpec("update_policy", UpdatePolicy, ("risk_compliance", "oversight"),
               "Adopt a policy change: the answer to a policy_change event is its new approval limit."),
    ActionSpec("no_op", Empty, _ALL, "Do nothing."),
)


@dataclass(frozen=True, slots=True)
class OrgTask:
    """A task of the org environment: the public spec plus how its business score weighs assignment."""

    spec: TaskSpec
    assignment_weight: float
    """Share of a work item's business credit earned by handing it to the right role; the rest is completion."""
    hint: str


TASKS: tuple[OrgTask, ...] = (
    OrgTask(
        TaskSpec("org_simulation", "Organisation simulation", "easy", 20,
                 "Plan, delegate every work item to the right role as it arrives and coordinate across roles.",
                 "always runs to max_steps"),
        assignment_weight=0.7,
        hint="Propose a plan, get it accepted, and delegate every task to its required role as it arrives.",
    ),
    OrgTask(
        TaskSpec("crisis_management", "Crisis management", "medium", 30,
                 "Find the hidden risks, resolve incidents and coordinate the response to the scenario's crisis.",
                 "always runs to max_steps"),
        assignment_weight=0.4,
        hint="Query metrics to find hidden risks, flag and remediate them, and resolve every incident fast.",
    ),
    OrgTask(
        TaskSpec("full_episode", "Full episode", "hard", 50,
                 "Deliver the work, manage risks, resolve incidents and adapt to every injected event.",
                 "always runs to max_steps"),
        assignment_weight=0.2,
        hint="Complete all objectives: collaborate, manage risks, resolve incidents, and adapt to events.",
    ),
)
TASKS_BY_ID: dict[str, OrgTask] = {t.spec.id: t for t in TASKS}

REWARD_COMPONENTS: tuple[RewardComponent, ...] = (
    RewardComponent("business_success", 0.25,
                    "Priority-weighted tasks: assigned to the required role, completed, quality, deadlines."),
    RewardComponent("collaboration", 0.20,
                    "Right-role hand-offs, plans accepted by others, resource requests answered promptly."),
    RewardComponent("risk_management", 0.20,
                    "Risks caught before escalation, incidents resolved fast, compliance, no false flags or reports."),
    RewardComponent("efficiency", 0.15,
                    "No wasted or invalid actions, resources granted where needed, healthy service metrics."),
    RewardComponent("adaptability", 0.20, "Timely, fitting responses to the scenario's injected events."),
)
REWARD_WEIGHTS: dict[str, float] = {c.name: c.weight for c in REWARD_COMPONENTS}
