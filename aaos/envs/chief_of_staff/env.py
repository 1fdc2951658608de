"""ChiefOfStaffEnv: the Chief of Staff Arena behind the environment protocol."""

from __future__ import annotations

from typing import Any

from aaos.core.actions import copy_record, parse_joint_action, problems, result_record
from aaos.core.env import Environment, Episode, JointAction, Observation, StepResult
from aaos.core.reward import RewardLedger, composite
from aaos.core.spec import EnvSpec, Identity, assemble_spec
from aaos.envs.chief_of_staff import observe
from aaos.envs.chief_of_staff import world as dynamics
from aaos.envs.chief_of_staff.graders import grade, public_grade
from aaos.envs.chief_of_staff.scenario import Scenario, builtin_scenarios, draw_plan, resolve_scenario
from aaos.envs.chief_of_staff.spec import ACTIONS, REWARD_COMPONENTS, REWARD_WEIGHTS, ROLE, ROLES, TASKS, TASKS_BY_ID
from aaos.envs.chief_of_staff.world import World, build_world

ENV_ID = "chief_of_staff"
DEFAULT_TASK = "steady_week"
VERSION = "3"
"""3: crunch_month draws 44 requests and 28 drifts (30 and 14 before), so that knowing the drifts is worth at least
0.10 on every scenario's cell, holdout ones included; the other tasks unchanged. 2: drift makes the left slot
unavailable (no-shows; check_in reveals it) (1: the first release)."""
REWARD_VERSION = "2"


IDENTITY = Identity(ENV_ID, "Chief of Staff Arena",
                    "A chief of staff runs a principal's calendar through contradictory requests, hidden preference "
                    "drift and stakeholder trust that moves with a delay.", VERSION, REWARD_VERSION, DEFAULT_TASK)


def cos_spec() -> EnvSpec:
    return assemble_spec(IDENTITY, ROLES, TASKS, builtin_scenarios().values(), ACTIONS, REWARD_COMPONENTS)


class ChiefOfStaffEnv(Environment):
    """Build it with aaos.make(task, scenario=..., seed=..., env="chief_of_staff")."""

    describe = staticmethod(cos_spec)

    _scenario = staticmethod(resolve_scenario)

    def _build(self, episode: Episode, definition: Scenario) -> None:
        cos_task = TASKS_BY_ID[episode.task]
        self._scenario_id, self._title = definition.id, definition.title
        self.world: World = build_world(draw_plan(definition, cos_task, episode.seed), cos_task)
        self._ledger = RewardLedger()
        self._last: dict[str, Any] | None = None
        self._components = grade(self.world)
        self._score = composite(self._components, REWARD_WEIGHTS, self.world.penalty)
        self._observation: Observation | None = None

    @property
    def done(self) -> bool:
        return self.world.done

    @property
    def score(self) -> float:
        return self._score

    def observation(self) -> Observation:
        if self._observation is None:
            last = copy_record(self._last) if self._last is not None else None
            self._observation = observe.observation(self.world, self._scenario_id, self._title, last,
                                                    self._components)
        return self._observation

    def legal_actions(self, role: str) -> dict[str, dict[str, Any]]:
        if role != ROLE:
            raise ValueError(f"unknown role {role!r}; roles are: {ROLE}")
        return observe.legal_actions(self.world)

    def _apply(self, kind: str, payload: dict[str, Any], events: list[dict[str, Any]]) -> dynamics.Outcome:
        world = self.world
        if kind == "schedule":
            return dynamics.schedule(world, payload["request_id"], payload["day"], payload["slot"], events)
        if kind == "defer":
            return dynamics.defer(world, payload["request_id"], payload["to_day"])
        if kind == "decline":
            return dynamics.decline(world, payload["request_id"], payload["reason"])
        if kind == "protect":
            return dynamics.protect(world, payload["block"], payload["day"])
        if kind == "message":
            return dynamics.message(world, payload["audience"], payload["tone"])
        if kind == "check_in":
            return dynamics.check_in(world, payload["stakeholder"])
        return "no_effect", "nothing changes", None

    def _step(self, joint_action: JointAction, observe: bool) -> StepResult:
        world = self.world
        parsed = parse_joint_action(self.spec, joint_action)
        events: list[dict[str, Any]] = []
        if ROLE in parsed.rejected:
            record = parsed.rejected[ROLE].to_dict(world.step)
        else:
            chosen = parsed.actions.get(ROLE)
            kind = chosen.action_type if chosen else "no_op"
            payload = dict(chosen.fields) if chosen else {}
            status, message, reason = self._apply(kind, payload, events)
            record = result_record(world.step, ROLE, kind, payload, status, message, reason)
        self._last = copy_record(record)  # the info's record is the caller's; views copy this one
        fired = dynamics.advance(world, events)
        self._components = grade(world)
        self._score = composite(self._components, REWARD_WEIGHTS, world.penalty)
        delivery = self._ledger.deliver(world.step, self._score, world.done)
        self._observation = None
        info = {
            "score": self._score,
            "step": world.step,
            "reward_breakdown": delivery.breakdown(self._components, public_grade(self._components), world.penalty,
                                                   world.done),
            "action_results": {ROLE: record},
            "oversight_events": [dict(e) for e in events],  # the world keeps these events: the info gets copies
            "scenario_events": [dict(e) for e in fired],
            "errors": parsed.errors,
        }
        return StepResult(self.observation() if observe else None, delivery.reward, world.done, info)

    def check(self, joint_action: JointAction) -> list[str]:
        parsed = parse_joint_action(self.spec, joint_action)
        found = problems(parsed)
        open_ids = {r.id for r in self.world.open()}
        for role, action in parsed.actions.items():
            request_id = getattr(action.payload, "request_id", None)
            if request_id is not None and request_id not in open_ids:
                found.append(f"{role}: no open request {request_id!r}; pick one from the queue")
        return found

    def state(self) -> dict[str, Any]:
        data = self.world.to_dict()
        data.update({"scenario": self._scenario_id, "seed": self.seed, "score": self._score,
                     "components": dict(self._components), "held_reward": self._ledger.held})
        return data
