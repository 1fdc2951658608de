"""Scenario files: their schema, loading with errors that name file and field, and the seeded variants.

A scenario (scenarios/chief_of_staff/<id>.json) names the stakeholders (importance, starting trust, preferred
slot and tone: the briefing) and a pool of request templates. A task and a seed draw a concrete episode from
it: which requests arrive when, their deadlines, dependencies and contradictions, the family-vs-crisis clashes
and the hidden drifts. A holdout variant (seed >= 10000, or any seed of a holdout-only scenario) is drawn from
another distribution with the secret holdout salt.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict, Field, model_validator

from aaos.core.scenario_files import ScenarioShelf
from aaos.core.seeding import holdout_salt, rng, seed_split
from aaos.core.spec import ScenarioInfo, Split
from aaos.envs.chief_of_staff.spec import (
    EVENING,
    SLOTS_PER_DAY,
    STAKEHOLDERS,
    TONES,
    WORK_SLOTS,
    WORK_STAKEHOLDERS,
    CosTask,
    Criticality,
    Slot,
    Stakeholder,
    Tone,
)

Id = Field(min_length=1, max_length=60, pattern=r"^[a-z][a-z0-9_]*$")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class StakeholderDef(_Model):
    title: str = Field(min_length=1, max_length=80)
    importance: float = Field(gt=0, le=5, description="Hidden weight of their trust in the relationships grade.")
    trust: float = Field(ge=0.2, le=0.9, description="Starting trust (hidden; shown coarse).")
    slot: Slot = Field(description="The slot they prefer meetings in, as briefed (family: evening).")
    tone: Tone = Field(description="The tone they prefer updates in, as briefed.")


class TemplateDef(_Model):
    stakeholder: Stakeholder
    title: str = Field(min_length=1, max_length=100)
    criticality: Criticality
    duration: int = Field(ge=1, le=2, description="Slots the meeting takes (family events: 1).")


class Variation(_Model):
    importance_jitter: float = Field(default=0.3, ge=0, le=0.6, description="Relative jitter of importance.")
    trust_jitter: float = Field(default=0.05, ge=0, le=0.15)
    deadline_slack: int = Field(default=3, ge=1, le=5, description="Most days a request may wait for its deadline.")


class Scenario(_Model):
    id: str = Id
    title: str = Field(min_length=1, max_length=120)
    description: str = Field(default="", max_length=1000)
    split: Split
    stakeholders: dict[Stakeholder, StakeholderDef]
    requests: list[TemplateDef] = Field(min_length=4)
    crises: list[TemplateDef] = Field(min_length=1, description="Critical work that can land on a family evening.")
    variation: Variation = Field(default_factory=Variation)

    @model_validator(mode="after")
    def _complete(self) -> Scenario:
        missing = [s for s in STAKEHOLDERS if s not in self.stakeholders]
        if missing:
            raise ValueError(f"stakeholders: missing {missing}; every scenario has all of {list(STAKEHOLDERS)}")
        if self.stakeholders["family"].slot != EVENING:
            raise ValueError("stakeholders.family.slot must be 'evening' (family events are evening events)")
        work = [s for s in WORK_STAKEHOLDERS if self.stakeholders[s].slot == EVENING]
        if work:
            raise ValueError(f"stakeholders: {work} prefer the evening; work prefers one of {list(WORK_SLOTS)}")
        for where, pool in (("requests", self.requests), ("crises", self.crises)):
            for i, t in enumerate(pool):
                if t.stakeholder == "family" and t.duration != 1:
                    raise ValueError(f"{where}[{i}]: family events take one slot (duration 1)")
        if not any(t.stakeholder == "family" for t in self.requests):
            raise ValueError("requests: needs at least one family event (stakeholder 'family')")
        if any(t.stakeholder == "family" or t.criticality != "critical" for t in self.crises):
            raise ValueError("crises: each is critical work of a work stakeholder")
        return self

    def info(self) -> ScenarioInfo:
        return ScenarioInfo(self.id, self.title, self.split, self.description)


SCENARIOS: ScenarioShelf[Scenario] = ScenarioShelf("chief_of_staff", Scenario)
load_scenario_file = SCENARIOS.load
resolve_scenario = SCENARIOS.resolve


def builtin_scenarios() -> dict[str, Scenario]:
    """The scenarios shipped in scenarios/chief_of_staff, by id: train ones first, then holdout."""
    return SCENARIOS.builtin


# --- variants ----------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RequestPlan:
    id: str
    stakeholder: str
    title: str
    criticality: str
    duration: int
    arrives: int  # step at which it enters the queue
    deadline: int  # last day on which holding it counts as on time
    dependencies: tuple[str, ...]
    conflicts: tuple[str, ...]
    crisis: bool


@dataclass(frozen=True, slots=True)
class Drift:
    step: int  # the preference changes before the agent acts at this step
    stakeholder: str
    aspect: str  # "slot" or "tone"
    value: str


@dataclass(frozen=True, slots=True)
class Plan:
    """One episode drawn from a scenario: the stakeholders' hidden truths, the requests and the drifts."""

    importance: dict[str, float]
    trust: dict[str, float]
    slot: dict[str, str]
    tone: dict[str, str]
    requests: tuple[RequestPlan, ...]
    drifts: tuple[Drift, ...]
    holdout: bool


def is_holdout(scenario: Scenario, seed: int) -> bool:
    """A holdout-only scenario always draws holdout variants; a train scenario does for seeds >= 10000."""
    return scenario.split == "holdout" or seed_split(seed) == "holdout"


SLOT_DRIFT_SHARE = 0.85
"""Share of drifts that move a work stakeholder's slot (the rest move anyone's tone)."""
HOLDOUT_SLACK_CUT = 1
"""Holdout variants give each request one day less of slack (at least one) ..."""
HOLDOUT_EXTRA_DRIFT = 1
"""... and one drift more than the task's, earlier in the episode."""


def draw_plan(scenario: Scenario, task: CosTask, seed: int) -> Plan:
    """The seed's episode of `scenario` under `task` (train and holdout variants differ in distribution)."""
    holdout = is_holdout(scenario, seed)
    r = (rng("cos-holdout", scenario.id, task.spec.id, seed, holdout_salt()) if holdout
         else rng("cos-variant", scenario.id, task.spec.id, seed))
    v = scenario.variation
    people = scenario.stakeholders
    importance = {s: round(people[s].importance * r.uniform(1 - v.importance_jitter, 1 + v.importance_jitter), 3)
                  for s in STAKEHOLDERS}
    trust = {s: round(min(0.9, max(0.2, people[s].trust + r.uniform(-v.trust_jitter, v.trust_jitter))), 3)
             for s in STAKEHOLDERS}
    slack = max(1, v.deadline_slack - HOLDOUT_SLACK_CUT) if holdout else v.deadline_slack
    requests = _requests(r, scenario, task, slack)
    drifts = _drifts(r, task, {s: people[s].slot for s in STAKEHOLDERS}, {s: people[s].tone for s in STAKEHOLDERS},
                     task.drifts + (HOLDOUT_EXTRA_DRIFT if holdout and task.drifts else 0), holdout)
    return Plan(importance, trust, {s: people[s].slot for s in STAKEHOLDERS},
                {s: people[s].tone for s in STAKEHOLDERS}, requests, drifts, holdout)


def _new_id(r: random.Random, taken: set[str]) -> str:
    while True:
        found = f"req_{r.randrange(16 ** 6):06x}"
        if found not in taken:
            taken.add(found)
            return found


@dataclass
class _Draft:
    id: str
    template: TemplateDef
    arrives: int
    deadline: int
    dependencies: list[str] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)
    crisis: bool = False


def _requests(r: random.Random, scenario: Scenario, task: CosTask, slack: int) -> tuple[RequestPlan, ...]:
    """Arrivals spread over the days (a third on day 0), deadlines within `slack` days, then dependencies,
    contradictions and family-vs-crisis clashes laid over them."""
    last_day = task.days - 1
    taken: set[str] = set()
    drafts: list[_Draft] = []
    for i in range(task.requests):
        template = r.choice(scenario.requests)
        arrives = 0 if i < task.requests // 3 else r.randrange(0, (task.days - 1) * SLOTS_PER_DAY)
        drafts.append(_Draft(_new_id(r, taken), template, arrives,
                             min(last_day, arrives // SLOTS_PER_DAY + r.randint(1, slack))))
    family = [t for t in scenario.requests if t.stakeholder == "family"]
    for _ in range(task.crises):
        day = r.randint(1, last_day)
        event = _Draft(_new_id(r, taken), r.choice(family), max(0, (day - 2) * SLOTS_PER_DAY), day)
        crisis = _Draft(_new_id(r, taken), r.choice(scenario.crises), day * SLOTS_PER_DAY, day,
                        conflicts=[event.id], crisis=True)
        event.conflicts = [crisis.id]
        drafts += [event, crisis]
    drafts.sort(key=lambda d: (d.arrives, d.id))
    work = [d for d in drafts if d.template.stakeholder != "family" and not d.crisis]
    for _ in range(task.dependencies):
        pairs = [(a, b) for i, a in enumerate(work) for b in work[i + 1:]
                 if a.deadline < b.deadline and not b.dependencies and not a.conflicts]
        if pairs:
            first, then = r.choice(pairs)
            then.dependencies = [first.id]
    for _ in range(task.conflicts):
        bound = {dep for d in drafts for dep in d.dependencies} | {d.id for d in drafts if d.dependencies}
        pairs = [(a, b) for i, a in enumerate(work) for b in work[i + 1:]
                 if a.template.stakeholder != b.template.stakeholder and not a.conflicts and not b.conflicts
                 and a.id not in bound and b.id not in bound and abs(a.arrives - b.arrives) <= 2 * SLOTS_PER_DAY]
        if pairs:
            a, b = r.choice(pairs)
            a.conflicts, b.conflicts = [b.id], [a.id]
    return tuple(RequestPlan(d.id, d.template.stakeholder, d.template.title, d.template.criticality,
                             d.template.duration, d.arrives, d.deadline, tuple(d.dependencies), tuple(d.conflicts),
                             d.crisis) for d in drafts)


def _drifts(r: random.Random, task: CosTask, slot: dict[str, str], tone: dict[str, str], count: int,
            holdout: bool) -> tuple[Drift, ...]:
    """`count` drifts at distinct steps in the middle of the episode (earlier on holdout), each moving one
    stakeholder's slot (work stakeholders, SLOT_DRIFT_SHARE) or tone to another value than the one in force."""
    horizon = task.days * SLOTS_PER_DAY
    start, end = (SLOTS_PER_DAY, horizon // 2) if holdout else (2 * SLOTS_PER_DAY, horizon - 3 * SLOTS_PER_DAY)
    steps = sorted(r.sample(range(start, max(start + count, end)), count)) if count else []
    now = {"slot": dict(slot), "tone": dict(tone)}
    found = []
    for step in steps:
        if r.random() < SLOT_DRIFT_SHARE:
            who, aspect, options = r.choice(WORK_STAKEHOLDERS), "slot", WORK_SLOTS
        else:
            who, aspect, options = r.choice(STAKEHOLDERS), "tone", TONES
        value = r.choice([o for o in options if o != now[aspect][who]])
        now[aspect][who] = value
        found.append(Drift(step, who, aspect, value))
    return tuple(found)
