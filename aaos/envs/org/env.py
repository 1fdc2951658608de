"""OrgEnv: the AAOS organisation simulation behind the environment protocol."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aaos.core.actions import copy_record, parse_joint_action, problems, result_record
from aaos.core.env import Environment, Episode, JointAction, Observation, StepResult, seen_by
from aaos.core.reward import RewardLedger, composite
from aaos.core.spec import EnvSpec, Identity, assemble_spec
from aaos.envs.org import dynamics, observe, oversight
from aaos.envs.org.graders import grade
from aaos.envs.org.scenario import Scenario, builtin_scenarios, draw_variant, resolve_scenario
from aaos.envs.org.spec import (
    ACTIONS,
    INTERRUPTS_WORK,
    REWARD_COMPONENTS,
    REWARD_WEIGHTS,
    ROLES,
    TASKS,
    TASKS_BY_ID,
)
from aaos.envs.org.world import World, build_world

DEFAULT_TASK = "full_episode"
DEFAULT_SCENARIO = "product_launch_failure"
VERSION = "5"
"""5: vendor_outage_cascade's cascade goes on after the outage: two more hidden risks (a webhook backlog from step 20,
a ledger drift from step 32) and the retry storm noticeable from step 16, not 5 (inside the outage's firefight, where
knowing of it early was worth nothing): the oracle leads the champion by +0.19 over holdout salts, not +0.12; the
other scenarios' episodes unchanged.
4: settled business is listed by its outcome: a role's view holds its completed tasks apart (completed_tasks:
id -> quality delivered; visible_tasks only open ones, without the quality an open task does not have yet) and
the recent plans decided (decided_plans: id -> status and decider; plans only open ones); play and the compact
prompt unchanged.
3: a holdout variant's extra risk no longer opens a remediation task named after the risk it copies (which
spelled that risk while still hidden); 2: fixed horizons, aimed metric queries that take a role's turn, late
risks (1: the first release)."""
REWARD_VERSION = "3"
"""3: every risk noticeable within the episode counted from the first step, so that the reward does not fall when
a hidden one becomes noticeable (final scores unchanged); 2: potential-based reward (return = score), risks
counted from noticeable_from, penalty as 1/(1+P)."""


IDENTITY = Identity("org", "AAOS organisation",
                    "Six roles run a tech organisation through a scenario: plan, delegate, manage risk, respond to "
                    "incidents and injected events.", VERSION, REWARD_VERSION, DEFAULT_TASK, DEFAULT_SCENARIO)


def org_spec() -> EnvSpec:
    return assemble_spec(IDENTITY, ROLES, TASKS, builtin_scenarios().values(), ACTIONS, REWARD_COMPONENTS)


def is_done(world: World) -> bool:
    """Every task runs to its max_steps: an episode's length is never the agents' to choose, so that keeping
    one alive (or ending it early) can neither buy nor dodge anything."""
    return world.step >= world.max_steps


class OrgEnv(Environment):
    """The organisation environment. Build it with aaos.make(task, scenario=..., seed=...)."""

    describe = staticmethod(org_spec)

    def __init__(self, task: str | None = None, scenario: str | None = None, seed: int = 0) -> None:
        super().__init__(task, scenario, seed)
        self._allowed = {role: self.spec.allowed_actions(role) for role in ROLES}

    _scenario = staticmethod(resolve_scenario)

    def _build(self, episode: Episode, definition: Scenario) -> None:
        org_task = TASKS_BY_ID[episode.task]
        variant = draw_variant(definition, episode.seed)
        self._assignment_weight = org_task.assignment_weight
        self._hint = org_task.hint
        self.world: World = build_world(variant, episode.task, episode.seed, org_task.spec.max_steps)
        self._ledger = RewardLedger()
        self._last_results: dict[str, dict[str, Any]] = {}
        dynamics.start(self.world)
        self._components, self._public = grade(self.world, self._assignment_weight)
        self._score = composite(self._components, REWARD_WEIGHTS, self.world.penalty)
        self._observation: Observation | None = None

    def observation(self) -> Observation:
        if self._observation is None:
            self._observation = observe.observation(self.world, self._allowed, self._last_results, self._public,
                                                    self._hint)
        return self._observation

    def observation_of(self, roles: Sequence[str]) -> Observation:
        if self._observation is not None:
            return super().observation_of(roles)
        return seen_by(observe.observation(self.world, self._allowed, self._last_results, self._public, self._hint,
                                           roles), roles)

    def legal_actions(self, role: str) -> dict[str, dict[str, Any]]:
        if role not in self._allowed:
            raise ValueError(f"unknown role {role!r}; roles are: {', '.join(ROLES)}")
        return observe.legal_actions(self.world, role, self._allowed[role])

    @property
    def score(self) -> float:
        """The graded composite so far (the episode score once done)."""
        return self._score

    @property
    def done(self) -> bool:
        return self.world.done

    def _act(self, joint_action: JointAction) -> tuple[dict[str, dict[str, Any]], list[str], list[str]]:
        """Apply each role's action in role order; returns the per-role result records (the step info's, which
        the world's log and the next views copy), joint-level errors, and the roles whose action (one of
        INTERRUPTS_WORK) took the step from their tasks."""
        world = self.world
        step = world.step
        counters = world.counters
        parsed = parse_joint_action(self.spec, joint_action)
        actions, rejections = parsed.actions, parsed.rejected
        records: dict[str, dict[str, Any]] = {}
        last: dict[str, dict[str, Any]] = {}
        interrupted = []
        for role in ROLES:
            action = actions.get(role)
            if action is not None:
                action_type, payload = action.action_type, action.payload
                status, message, reason = dynamics.HANDLERS[action_type](world, role, payload)
                record = result_record(step, role, action_type, dict(action.fields), status, message, reason)
                if action_type != "no_op":
                    counters.actions += 1
                    counters.wasted += status != "applied"
                    if action_type in INTERRUPTS_WORK and status != "rejected":
                        interrupted.append(role)
            elif rejections and role in rejections:
                rejected = rejections[role]
                if rejected.reason == "forbidden":
                    oversight.record(world, role, "unauthorized_action", rejected.message)
                record = rejected.to_dict(step)
                counters.actions += 1
                counters.wasted += 1
            else:  # left out or an explicit no-op: no_op, which changes nothing
                status, message, reason = dynamics.NO_OP
                record = result_record(step, role, "no_op", {}, status, message, reason)
            records[role] = record
            last[role] = copy_record(record)
        self._last_results = last
        world.log.extend(last.values())
        return records, parsed.errors, interrupted

    def _step(self, joint_action: JointAction, observe: bool) -> StepResult:
        world = self.world
        violations_before = len(world.violations)
        records, errors, interrupted = self._act(joint_action)
        fired = dynamics.advance(world, interrupted)
        oversight.ignored_critical_risks(world)
        world.done = is_done(world)
        self._components, self._public = grade(world, self._assignment_weight)
        penalty = world.penalty
        self._score = composite(self._components, REWARD_WEIGHTS, penalty)
        delivery = self._ledger.deliver(world.step, self._score, world.done)
        self._observation = None
        info = {
            "score": self._score,
            "step": world.step,
            "reward_breakdown": delivery.breakdown(self._components, self._public, penalty, world.done),
            "action_results": records,
            "oversight_events": [v.to_dict() for v in world.violations[violations_before:]]
            if len(world.violations) > violations_before else [],
            "scenario_events": fired,
            "errors": errors,
        }
        return StepResult(self.observation() if observe else None, delivery.reward, world.done, info)

    def check(self, joint_action: JointAction) -> list[str]:
        parsed = parse_joint_action(self.spec, joint_action)
        found = problems(parsed)
        for role, action in parsed.actions.items():
            message = dynamics.unknown_reference(self.world, action.action_type, action.payload)
            if message is not None:
                found.append(f"{role}: {message}")
        return found

    def state(self) -> dict[str, Any]:
        data = self.world.to_dict()
        data["score"] = self._score
        data["components"] = dict(self._components)
        data["penalty"] = self.world.penalty
        data["held_reward"] = self._ledger.held
        data["scenario_name"] = self.scenario
        return data
