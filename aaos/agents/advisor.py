"""The guarded advisor: the champion acts, and a model's suggestion replaces the champion's action for a
role only if it is legal, within the guardrails, and better by a one-step lookahead on a copy of the
environment."""

from __future__ import annotations

from collections import Counter
from typing import Any

from aaos.agents.base import Action, Policy
from aaos.agents.llm import InvalidAnswer, validate_answer
from aaos.core.env import Environment, JointAction, Observation
from aaos.core.spec import EnvSpec
from aaos.envs import kit_of


def guardrail_breach(role: str, action: Action, view: dict[str, Any], spec: EnvSpec) -> str | None:
    """Why a suggested action is unsafe to take, or None: "illegal" if it is not legal now, else the
    environment's own guardrail (aaos.core.kit.EnvKit.guardrail)."""
    try:
        validate_answer(spec, role, action, view["legal_actions"])
    except InvalidAnswer:
        return "illegal"
    return kit_of(spec.id).guardrail(role, action, view)


def lookahead_score(env: Environment, joint: JointAction) -> float:
    """The score one step ahead on a copy of the environment."""
    trial = env.clone()
    return trial.step(joint, observe=False).info["score"]


class GuardedAdvisor(Policy):
    """Champion-first policy that takes a model's advice only where it is safe and scores better."""

    name = "guarded"

    def __init__(self, advisor: Policy, margin: float = 0.0) -> None:
        self.advisor = advisor
        self.champion: Policy | None = None
        self.margin = margin
        self.env: Environment | None = None
        self.verdicts: Counter[str] = Counter()

    def bind(self, env: Environment) -> None:
        """Take the episode's environment (for lookahead) and its champion."""
        self.env = env
        self.champion = kit_of(env.spec.id).champion()

    def close(self) -> None:
        self.advisor.close()

    async def aclose(self) -> None:
        await self.advisor.aclose()

    def _champion(self) -> Policy:
        if self.champion is None:
            raise RuntimeError("GuardedAdvisor needs bind(env) before acting (runners call it after reset)")
        return self.champion

    def act_role(self, role: str, view: dict[str, Any]) -> Action:
        return self._champion().act_role(role, view)

    def act(self, observation: Observation) -> JointAction:
        return self._choose(observation, self.advisor.act(observation))

    async def act_async(self, observation: Observation) -> JointAction:
        return self._choose(observation, await self.advisor.act_async(observation))

    def _choose(self, observation: Observation, advice: JointAction) -> JointAction:
        champion = self._champion()
        assert self.env is not None  # bound with the champion
        views = observation["agent_observations"]
        joint = champion.act(observation)
        best = lookahead_score(self.env, joint)
        for role, view in views.items():
            suggestion = advice.get(role)
            if suggestion is None or suggestion == joint[role]:
                self.verdicts["same"] += 1
                continue
            breach = guardrail_breach(role, suggestion, view, self.env.spec)
            if breach is not None:
                self.verdicts[f"blocked_{breach}"] += 1
                continue
            candidate = {**joint, role: suggestion}
            score = lookahead_score(self.env, candidate)
            if score > best + self.margin:
                joint, best = candidate, score
                self.verdicts["accepted"] += 1
            else:
                self.verdicts["not_better"] += 1
        return joint
