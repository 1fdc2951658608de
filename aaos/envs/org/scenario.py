"""Scenario files: their schema, loading with errors that name file and field, and seeded variants.

A scenario is a JSON file in `scenarios/org/` (or any path passed as the scenario). The schema below is
the documented format; docs/scenarios.md describes each field.
"""

from __future__ import annotations

import random
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from aaos.core.scenario_files import ScenarioShelf
from aaos.core.seeding import HOLDOUT_SEED_START, holdout_salt, rng
from aaos.core.spec import ScenarioInfo, Split
from aaos.envs.org.spec import (
    AMOUNT_CHOICES,
    METRIC_NAMES,
    RESOURCE_TYPES,
    VISIBLE_METRICS,
    WORKERS,
    MetricName,
    ResolverRole,
    ResourceType,
    Severity,
    WorkerRole,
)

EventKind = Literal["incident", "policy_change", "resource_shock", "anomaly"]
Id = Field(min_length=1, max_length=60, pattern=r"^[a-z][a-z0-9_]*$")
MIN_RISK_WINDOW = 3
"""Steps a risk stays catchable: escalates_at >= noticeable_from + MIN_RISK_WINDOW, in files and variants."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    def __deepcopy__(self, memo: dict[int, object] | None = None) -> _Model:
        return self  # frozen and never mutated: copies of a world share their scenario data


class Metrics(_Model):
    latency: float = Field(gt=0, description="Response time in ms.")
    error_rate: float = Field(ge=0, le=1)
    uptime: float = Field(ge=0, le=1)
    data_quality: float = Field(ge=0, le=1)


class Policy(_Model):
    max_resource_approval: int = Field(ge=1, description="Largest amount one approve_resource may grant.")


class TaskDef(_Model):
    id: str = Id
    name: str = Field(min_length=1, max_length=80)
    priority: Severity
    required_role: WorkerRole
    effort: int = Field(ge=1, le=20, description="Steps of work by the required role.")
    deadline: int = Field(ge=1, description="Step by which the task should be completed.")
    arrives: int = Field(default=0, ge=0, description="Step at which the task becomes known.")
    needs: dict[ResourceType, int] = Field(default_factory=dict, description="Resources the task needs to progress.")

    @model_validator(mode="after")
    def _feasible(self) -> TaskDef:
        if self.deadline < self.arrives + self.effort:
            raise ValueError("deadline must leave room for the effort after arrival (deadline >= arrives + effort)")
        return self


class IncidentDef(_Model):
    title: str = Field(min_length=1, max_length=120)
    severity: Severity
    impact: dict[MetricName, float] = Field(description="Added to the metrics while the incident is open.")
    resolver_roles: list[ResolverRole] = Field(min_length=1)
    effort: int = Field(ge=1, le=10, description="resolve_incident actions needed.")


class RemediationDef(_Model):
    name: str = Field(min_length=1, max_length=80)
    required_role: WorkerRole
    effort: int = Field(ge=1, le=20)
    needs: dict[ResourceType, int] = Field(default_factory=dict)


class RiskDef(_Model):
    id: str = Id
    name: str = Field(min_length=1, max_length=80)
    description: str = Field(min_length=1, max_length=300)
    severity: Severity
    metric: MetricName = Field(description="The metric it shows in: only a query_metrics of this metric detects it.")
    visible_to: list[WorkerRole] = Field(min_length=1, description="Roles whose query_metrics can detect it; each "
                                                                   "must see the risk's metric.")
    noticeable_from: int = Field(ge=0, description="First step at which it can be detected.")
    escalates_at: int = Field(ge=1, description="Step at which it becomes an incident unless mitigated.")
    remediation: RemediationDef
    incident: IncidentDef

    @model_validator(mode="after")
    def _timing(self) -> RiskDef:
        if self.escalates_at < self.noticeable_from + MIN_RISK_WINDOW:
            raise ValueError(f"escalates_at must be at least {MIN_RISK_WINDOW} steps after noticeable_from")
        blind = [role for role in self.visible_to if self.metric not in VISIBLE_METRICS[role]]
        if blind:
            raise ValueError(f"visible_to: {', '.join(blind)} cannot see the risk's metric {self.metric!r}")
        return self


class EventDef(_Model):
    id: str = Id
    step: int = Field(ge=0)
    kind: EventKind
    title: str = Field(min_length=1, max_length=120)
    severity: Severity
    respond_within: int = Field(ge=1, le=20, description="Steps the organisation has to respond.")
    incident: IncidentDef | None = None
    policy: Policy | None = None
    resource_deltas: dict[ResourceType, int] | None = None
    impact: dict[MetricName, float] | None = None
    metric: MetricName | None = None

    @model_validator(mode="after")
    def _kind_fields(self) -> EventDef:
        required = {"incident": "incident", "policy_change": "policy", "resource_shock": "resource_deltas",
                    "anomaly": "impact"}[self.kind]
        if getattr(self, required) is None:
            raise ValueError(f"an event of kind {self.kind!r} needs the field {required!r}")
        if self.kind == "anomaly" and (self.metric is None or self.metric not in (self.impact or {})):
            raise ValueError("an anomaly needs 'metric', one of the metrics in its 'impact'")
        if self.policy is not None and self.policy.max_resource_approval not in AMOUNT_CHOICES:
            raise ValueError(f"policy.max_resource_approval must be one of the amounts {list(AMOUNT_CHOICES)}, "
                             "so that update_policy can adopt it")
        return self


class Variation(_Model):
    deadline_jitter: int = Field(default=0, ge=0, le=10)
    amount_jitter: float = Field(default=0.0, ge=0, le=0.5)
    timing_jitter: int = Field(default=0, ge=0, le=5)


class Scenario(_Model):
    id: str = Id
    title: str = Field(min_length=1, max_length=120)
    description: str = Field(default="", max_length=1000)
    split: Split
    crisis_event: str = Field(description="Id of the event that is the scenario's crisis.")
    baseline_metrics: Metrics
    resources: dict[ResourceType, int]
    policy: Policy
    tasks: list[TaskDef] = Field(min_length=1)
    risks: list[RiskDef] = Field(default_factory=list)
    events: list[EventDef] = Field(min_length=1)
    variation: Variation = Field(default_factory=Variation)
    flags: dict[str, bool] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _references(self) -> Scenario:
        for kind, ids in (("task", [t.id for t in self.tasks]), ("risk", [r.id for r in self.risks]),
                          ("event", [e.id for e in self.events])):
            duplicates = sorted({i for i in ids if ids.count(i) > 1})
            if duplicates:
                raise ValueError(f"duplicate {kind} ids: {duplicates}")
        if self.crisis_event not in [e.id for e in self.events]:
            raise ValueError(f"crisis_event {self.crisis_event!r} is not the id of an event")
        incident_ids = [risk_incident_id(r.id) for r in self.risks] + [
            event_incident_id(e.id) for e in self.events if e.kind == "incident"]
        clashes = sorted({i for i in incident_ids if incident_ids.count(i) > 1})
        if clashes:
            raise ValueError(f"risks and incident events would open incidents with the same id {clashes}; "
                             "rename one (a risk risk_X and an event evt_X both open incident_X)")
        task_ids = [t.id for t in self.tasks] + [remediation_id(r.id) for r in self.risks]
        clashes = sorted({i for i in task_ids if task_ids.count(i) > 1})
        if clashes:
            raise ValueError(f"task ids clash with remediation task ids {clashes} (risk_X opens task_fix_X)")
        return self

    def info(self) -> ScenarioInfo:
        return ScenarioInfo(self.id, self.title, self.split, self.description)


def risk_incident_id(risk_id: str) -> str:
    """The id of the incident a risk opens when it escalates."""
    return "incident_" + risk_id.removeprefix("risk_")


def event_incident_id(event_id: str) -> str:
    """The id of the incident an incident event opens."""
    return "incident_" + event_id.removeprefix("evt_")


def remediation_id(risk_id: str) -> str:
    """The id of the task opened when a risk is flagged."""
    return "task_fix_" + risk_id.removeprefix("risk_")


SCENARIOS: ScenarioShelf[Scenario] = ScenarioShelf("org", Scenario)
load_scenario_file = SCENARIOS.load
resolve_scenario = SCENARIOS.resolve


def builtin_scenarios() -> dict[str, Scenario]:
    """The scenarios shipped in scenarios/org, by id: train ones first, then holdout, each by id."""
    return SCENARIOS.builtin


def _jitter_int(r: random.Random, value: int, spread: int, low: int) -> int:
    return max(low, value + r.randint(-spread, spread)) if spread else value


def _scale(r: random.Random, amount: int, spread: float) -> int:
    return max(1, round(amount * r.uniform(1 - spread, 1 + spread))) if spread else amount


HOLDOUT_EXTRA_RISK_CHANCE = 0.6
"""Chance that a holdout variant carries one more risk than its file (a copy of one, re-timed and re-aimed)."""
HOLDOUT_EXTRA_RISK_ID = "risk_recurrence"
HOLDOUT_EXTRA_RISK_NAME = "recurring_problem"
HOLDOUT_RISK_SPAN = (6, 42)
"""Steps between which a holdout variant's extra risk becomes noticeable."""
HOLDOUT_EVENT_SHIFT = 3
HOLDOUT_POOL_SPREAD = 0.3
HOLDOUT_DETECTORS = (1, 2)
"""How many roles can notice each risk of a holdout variant (drawn among the workers that see its metric)."""


def is_holdout(scenario: Scenario, seed: int) -> bool:
    """A holdout-only scenario always draws holdout variants; a train scenario does for seeds >= 10000."""
    return scenario.split == "holdout" or seed >= HOLDOUT_SEED_START


def draw_variant(scenario: Scenario, seed: int) -> Scenario:
    """The seed's variant. Train: deadlines, amounts and timings jittered within the file's declared bounds.
    Holdout: another distribution (see _holdout_variant), drawn with the secret holdout salt."""
    if is_holdout(scenario, seed):
        return _holdout_variant(scenario, rng("holdout-variant", scenario.id, seed, holdout_salt()))
    v = scenario.variation
    r = rng("variant", scenario.id, seed)
    tasks = []
    for task in scenario.tasks:
        arrives = _jitter_int(r, task.arrives, v.timing_jitter, 0) if task.arrives else 0
        deadline = max(arrives + task.effort, _jitter_int(r, task.deadline, v.deadline_jitter, 1))
        needs = {k: _scale(r, n, v.amount_jitter) for k, n in task.needs.items()}
        tasks.append(task.model_copy(update={"arrives": arrives, "deadline": deadline, "needs": needs}))
    risks = []
    for risk in scenario.risks:
        noticeable = _jitter_int(r, risk.noticeable_from, v.timing_jitter, 0)
        escalates = noticeable + risk.escalates_at - risk.noticeable_from  # shifted, its window kept
        needs = {k: _scale(r, n, v.amount_jitter) for k, n in risk.remediation.needs.items()}
        remediation = risk.remediation.model_copy(update={"needs": needs})
        risks.append(risk.model_copy(update={"noticeable_from": noticeable, "escalates_at": escalates,
                                             "remediation": remediation}))
    events = [e.model_copy(update={"step": _jitter_int(r, e.step, v.timing_jitter, 1) if e.step else 0})
              for e in scenario.events]
    resources = {k: _scale(r, n, v.amount_jitter) for k, n in scenario.resources.items()}
    return scenario.model_copy(update={"tasks": tasks, "risks": risks, "events": events, "resources": resources})


def _reaimed(r: random.Random, risk: RiskDef, noticeable: int) -> RiskDef:
    """The risk showing in a freshly drawn metric, noticed by freshly drawn roles, on a window just long enough
    to remediate it (plus 0-2 steps) from `noticeable`."""
    metric = r.choice(METRIC_NAMES)
    seers = [role for role in WORKERS if metric in VISIBLE_METRICS[role]]
    visible_to = sorted(r.sample(seers, min(len(seers), r.randint(*HOLDOUT_DETECTORS))), key=WORKERS.index)
    window = max(MIN_RISK_WINDOW, risk.remediation.effort + 2 + r.randint(0, 2))
    return risk.model_copy(update={"metric": metric, "visible_to": visible_to, "noticeable_from": noticeable,
                                   "escalates_at": noticeable + window})


def _holdout_variant(scenario: Scenario, r: random.Random) -> Scenario:
    """Structurally different from train variants: every risk shows in a re-drawn metric to re-drawn roles on a
    tight, re-drawn window; often one risk more; events re-timed by up to HOLDOUT_EVENT_SHIFT steps; pools
    scaled by up to HOLDOUT_POOL_SPREAD; deadlines and needs jittered twice as widely as the file declares."""
    v = scenario.variation
    tasks = []
    for task in scenario.tasks:
        arrives = _jitter_int(r, task.arrives, 2 * v.timing_jitter, 0) if task.arrives else 0
        deadline = max(arrives + task.effort, _jitter_int(r, task.deadline, 2 * v.deadline_jitter, 1))
        needs = {k: _scale(r, n, min(0.5, 2 * v.amount_jitter)) for k, n in task.needs.items()}
        tasks.append(task.model_copy(update={"arrives": arrives, "deadline": deadline, "needs": needs}))
    risks = [_reaimed(r, risk, _jitter_int(r, risk.noticeable_from, 2 + v.timing_jitter, 0))
             for risk in scenario.risks]
    if scenario.risks and r.random() < HOLDOUT_EXTRA_RISK_CHANCE:
        model = r.choice(scenario.risks)
        extra = _reaimed(r, model, r.randint(*HOLDOUT_RISK_SPAN))
        risks.append(extra.model_copy(update={  # named apart from the original, so that neither gives the other away
            "id": HOLDOUT_EXTRA_RISK_ID, "name": HOLDOUT_EXTRA_RISK_NAME,  # its remediation task included
            "description": "A problem seen before comes back, in another system.",
            "remediation": extra.remediation.model_copy(update={"name": f"fix_{HOLDOUT_EXTRA_RISK_NAME}"})}))
    events = [e.model_copy(update={"step": _jitter_int(r, e.step, HOLDOUT_EVENT_SHIFT, 1) if e.step else 0})
              for e in scenario.events]
    resources = {k: _scale(r, scenario.resources[k], HOLDOUT_POOL_SPREAD) for k in RESOURCE_TYPES
                 if k in scenario.resources}
    return scenario.model_copy(update={"tasks": tasks, "risks": risks, "events": events, "resources": resources})
