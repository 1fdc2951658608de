"""What an environment declares about itself: roles, tasks, scenarios, actions and reward components.

A spec is plain, immutable data. Agents, the benchmark, the server and the UI read it to know what
an environment offers without touching its internals.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from pydantic import BaseModel

Split = Literal["train", "holdout"]
Difficulty = Literal["easy", "medium", "hard"]


@dataclass(frozen=True, slots=True)
class TaskSpec:
    """One task of an environment: what the episode asks for and when it ends."""

    id: str
    title: str
    difficulty: Difficulty
    max_steps: int
    description: str
    done_when: str  # the done rule in words (the rule itself lives in the environment)


@dataclass(frozen=True, slots=True)
class ScenarioInfo:
    """A scenario as listed to users: its id, title and which split it belongs to."""

    id: str
    title: str
    split: Split
    description: str = ""


@dataclass(frozen=True, slots=True)
class ActionSpec:
    """One action type: its payload model and the roles allowed to use it."""

    name: str
    payload: type[BaseModel]
    roles: tuple[str, ...]
    description: str

    def payload_schema(self) -> dict[str, Any]:
        return self.payload.model_json_schema()


@dataclass(frozen=True, slots=True)
class RewardComponent:
    """One graded component of the reward, in [0, 1], and its weight in the composite."""

    name: str
    weight: float
    description: str


@dataclass(frozen=True, slots=True)
class EnvSpec:
    """Everything an environment declares about itself."""

    id: str
    title: str
    description: str
    roles: tuple[str, ...]
    tasks: tuple[TaskSpec, ...]
    scenarios: tuple[ScenarioInfo, ...]
    actions: tuple[ActionSpec, ...]
    reward_components: tuple[RewardComponent, ...]
    version: str
    """The environment's version: bump it when its dynamics, observations or scenarios change."""
    reward_version: str
    """The grader's version: bump it when the same play would score differently. Results of different
    versions are never compared."""
    default_task: str = ""
    """The task make() builds when none is named (the first task if left empty)."""
    default_scenario: str = ""
    """The scenario make() builds when none is named (the first scenario if left empty)."""
    noop_action: str = "no_op"
    _actions_by_name: dict[str, ActionSpec] = field(init=False, repr=False, compare=False)
    parsed_cache: dict[tuple[Any, ...], Any] = field(init=False, repr=False, compare=False)
    """Actions already parsed against this spec (aaos.core.actions.parse_action's cache; a spec never changes,
    so a parse never goes stale)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "_actions_by_name", {a.name: a for a in self.actions})
        object.__setattr__(self, "parsed_cache", {})
        if not self.default_task:
            object.__setattr__(self, "default_task", self.tasks[0].id)
        if not self.default_scenario and self.scenarios:
            object.__setattr__(self, "default_scenario", self.scenarios[0].id)

    def __deepcopy__(self, memo: dict[int, Any]) -> EnvSpec:
        """A spec is immutable: a deep copy of an environment (Environment.clone) shares it."""
        return self

    def action(self, name: str) -> ActionSpec | None:
        return self._actions_by_name.get(name)

    def task(self, task_id: str) -> TaskSpec:
        for task in self.tasks:
            if task.id == task_id:
                return task
        known = ", ".join(t.id for t in self.tasks)
        raise ValueError(f"unknown task {task_id!r}; choose one of: {known}")

    def allowed_actions(self, role: str) -> tuple[str, ...]:
        return tuple(a.name for a in self.actions if role in a.roles)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable description (for /metadata, /schema and the docs)."""
        return {
            "id": self.id,
            "title": self.title,
            "description": self.description,
            "version": self.version,
            "reward_version": self.reward_version,
            "default_task": self.default_task,
            "default_scenario": self.default_scenario,
            "roles": list(self.roles),
            "tasks": [
                {
                    "id": t.id,
                    "title": t.title,
                    "difficulty": t.difficulty,
                    "max_steps": t.max_steps,
                    "description": t.description,
                    "done_when": t.done_when,
                }
                for t in self.tasks
            ],
            "scenarios": [
                {"id": s.id, "title": s.title, "split": s.split, "description": s.description}
                for s in self.scenarios
            ],
            "actions": [
                {
                    "name": a.name,
                    "roles": list(a.roles),
                    "description": a.description,
                    "payload_schema": a.payload_schema(),
                }
                for a in self.actions
            ],
            "reward_components": [
                {"name": c.name, "weight": c.weight, "description": c.description}
                for c in self.reward_components
            ],
        }


class HasTaskSpec(Protocol):
    """An environment's own task record, which carries the task's public spec."""

    @property
    def spec(self) -> TaskSpec: ...


class Listed(Protocol):
    """An environment's own scenario record, which lists itself as a ScenarioInfo."""

    def info(self) -> ScenarioInfo: ...


@dataclass(frozen=True, slots=True)
class Identity:
    """What an environment says of itself beside its parts (see EnvSpec for each field)."""

    id: str
    title: str
    description: str
    version: str
    reward_version: str
    default_task: str = ""
    default_scenario: str = ""


def assemble_spec(identity: Identity, roles: tuple[str, ...], tasks: Iterable[HasTaskSpec],
                  scenarios: Iterable[Listed], actions: tuple[ActionSpec, ...],
                  reward_components: tuple[RewardComponent, ...]) -> EnvSpec:
    """An environment's spec from its identity and its parts: its task records (each holding a TaskSpec) and its
    scenario records (each listing itself), in their order."""
    return EnvSpec(id=identity.id, title=identity.title, description=identity.description, roles=roles,
                   tasks=tuple(t.spec for t in tasks), scenarios=tuple(s.info() for s in scenarios), actions=actions,
                   reward_components=reward_components, version=identity.version,
                   reward_version=identity.reward_version, default_task=identity.default_task,
                   default_scenario=identity.default_scenario)
