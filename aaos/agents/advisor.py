"""The guarded advisor: the champion acts, and a model's suggestion replaces the champion's action for a
role only if it is legal, within the environment's guardrails, and better by a score margin on a one-step
lookahead on a copy of the environment. A final safety gate then plays the whole chosen joint action on a
copy: if it raises a violation the champion's own joint action would not, the champion's is taken instead.

    champion acts -> for each role: advice legal? -> guardrail passes? -> lookahead beats the best by margin?
                  -> joint action so far; finally: no violation the champion's step would not raise? -> act
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from aaos.agents.llm import CallStats, InvalidAnswer, validate_answer
from aaos.core.env import Environment, JointAction, Observation
from aaos.core.policy import Action, Policy
from aaos.core.spec import EnvSpec
from aaos.envs import champion_of, kit_of

DEFAULT_MARGIN = 0.005
"""How much better (in score, one step ahead) advice must be than the action it replaces."""


def guardrail_breach(role: str, action: Action, view: dict[str, Any], spec: EnvSpec) -> str | None:
    """Why a suggested action is unsafe to take, or None: "illegal" if it is not legal now, else the
    environment's own guardrail (aaos.core.kit.EnvKit.guardrail)."""
    try:
        validate_answer(spec, role, action, view["legal_actions"])
    except InvalidAnswer:
        return "illegal"
    return kit_of(spec.id).guardrail(role, action, view)


def lookahead(env: Environment, joint: JointAction) -> dict[str, Any]:
    """The step's info one step ahead on a copy of the environment."""
    return env.clone().step(joint, observe=False).info


def lookahead_score(env: Environment, joint: JointAction) -> float:
    """The score one step ahead on a copy of the environment."""
    return float(lookahead(env, joint)["score"])


def new_violations(chosen: dict[str, Any], champion: dict[str, Any]) -> list[str]:
    """The violation rules the chosen step raises beyond those the champion's step raises (step infos)."""
    extra = Counter(e["rule"] for e in chosen["oversight_events"]) - Counter(
        e["rule"] for e in champion["oversight_events"])
    return sorted(extra.elements())


class GuardedAdvisor(Policy):
    """Champion-first policy that takes a model's advice only where it is safe and scores better."""

    name = "guarded"

    def __init__(self, advisor: Policy, margin: float = DEFAULT_MARGIN) -> None:
        self.advisor = advisor
        self.champion: Policy | None = None
        self.margin = margin
        self.env: Environment | None = None
        self.verdicts: Counter[str] = Counter()

    def bind(self, env: Environment) -> None:
        """Take the episode's environment (for lookahead) and its champion, and bind the advisor to it."""
        self.env = env
        self.champion = champion_of(env.spec.id)
        self.advisor.bind(env)

    @property
    def stats(self) -> CallStats | None:
        """The advising model's call accounting (None for an advisor without a model): the benchmark records it,
        so that advice the model failed to give counts as fallbacks and a row advised by a dead model is not
        ranked as the model's."""
        return getattr(self.advisor, "stats", None)

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
        fallback = champion.act(observation)
        baseline = lookahead(self.env, fallback)
        joint, best = fallback, float(baseline["score"])
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
        if joint is not fallback and new_violations(lookahead(self.env, joint), baseline):
            self.verdicts["vetoed_by_safety_gate"] += 1
            return fallback
        return joint
