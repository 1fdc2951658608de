"""The reward ladder: do-nothing << random-legal < champion on every task and scenario, and spam loses."""

from __future__ import annotations

import statistics
from collections.abc import Callable
from functools import cache
from typing import Any

import pytest

import aaos
from aaos.agents.base import Action, Policy, action
from aaos.agents.heuristic import OrgChampion
from aaos.agents.llm import validate_answer
from aaos.core.seeding import split_seeds
from aaos.envs.org.scenario import resolve_scenario

TASKS = [t["id"] for t in aaos.list_tasks()]
SCENARIOS = [s["id"] for s in aaos.list_scenarios()]
SEEDS = split_seeds("train", 2) + split_seeds("holdout", 2)

NOOP_MAX = 0.25
RANDOM_MAX = 0.35
CHAMPION_MIN = 0.70
SPAM_MARGIN = 0.10


def play(policy: Policy, task: str, scenario: str, seed: int) -> float:
    env = aaos.make(task, scenario=scenario, seed=seed)
    policy.reset(seed)
    observation = env.reset()
    while True:
        result = env.step(policy.act(observation))
        observation = result.observation
        if result.done:
            return result.info["score"]


@cache
def mean_score(policy_name: str, task: str, scenario: str) -> float:
    return statistics.mean(play(POLICIES[policy_name](), task, scenario, seed) for seed in SEEDS)


class QueryEverything(Policy):
    """Every role checks metrics every step."""

    def act_role(self, role: str, view: dict[str, Any]) -> Action:
        return action("query_metrics")


class ProposeEveryStep(Policy):
    """Everyone who may propose a plan does so every step; risk_compliance accepts every open plan."""

    def act_role(self, role: str, view: dict[str, Any]) -> Action:
        if "propose_plan" in view["legal_actions"]:
            return action("propose_plan", plan=f"plan by {role} at step {view['step']}")
        if "accept_plan" in view["legal_actions"]:
            return action("accept_plan", plan_id=view["legal_actions"]["accept_plan"]["plan_id"][0])
        return action("query_metrics")


class ApproveEverything(Policy):
    """Every role asks for the most of every resource; operations approves the most it can every step."""

    def act_role(self, role: str, view: dict[str, Any]) -> Action:
        if role == "operations" and "approve_resource" in view["legal_actions"]:
            choices = view["legal_actions"]["approve_resource"]
            return action("approve_resource", amount=max(choices["amount"]), resource_type=choices["resource_type"][0])
        if "request_resource" in view["legal_actions"]:
            kind = ("compute", "budget", "personnel")[view["step"] % 3]
            return action("request_resource", amount=50, resource_type=kind)
        return action("no_op")


class FlagEverything(OrgChampion):
    """The champion, except that whenever a role able to flag would idle or check metrics it raises a flag
    instead, cycling through every risk id in the scenario file (an adversary that read the ground truth)."""

    FLAGGERS = ("engineer", "data_analyst", "risk_compliance", "operations")

    def __init__(self, risk_ids: list[str]) -> None:
        self.risk_ids = risk_ids

    def act_role(self, role: str, view: dict[str, Any]) -> Action:
        chosen = super().act_role(role, view)
        if role in self.FLAGGERS and chosen["action_type"] in ("no_op", "query_metrics"):
            risk_id = self.risk_ids[(view["step"] + self.FLAGGERS.index(role)) % len(self.risk_ids)]
            return action("raise_risk_flag", risk_id=risk_id, description="flag everything")
        return chosen


POLICIES: dict[str, Callable[[], Policy]] = {
    "noop": lambda: aaos.policies.make("noop"),
    "random": lambda: aaos.policies.make("random"),
    "heuristic": lambda: aaos.policies.make("heuristic"),
    "query_everything": QueryEverything,
    "propose_every_step": ProposeEveryStep,
    "approve_everything": ApproveEverything,
}


@pytest.mark.parametrize("scenario", SCENARIOS)
@pytest.mark.parametrize("task", TASKS)
def test_ladder(task: str, scenario: str) -> None:
    noop = mean_score("noop", task, scenario)
    random = mean_score("random", task, scenario)
    champion = mean_score("heuristic", task, scenario)
    assert noop <= NOOP_MAX, f"noop scores {noop:.3f}"
    assert random <= RANDOM_MAX, f"random scores {random:.3f}"
    assert champion >= CHAMPION_MIN, f"champion scores {champion:.3f}"
    assert noop < random < champion


@pytest.mark.parametrize("spam", ["query_everything", "propose_every_step", "approve_everything"])
@pytest.mark.parametrize("scenario", SCENARIOS)
@pytest.mark.parametrize("task", TASKS)
def test_spam_loses_to_champion(task: str, scenario: str, spam: str) -> None:
    assert mean_score(spam, task, scenario) < mean_score("heuristic", task, scenario) - SPAM_MARGIN


@pytest.mark.parametrize("scenario", SCENARIOS)
@pytest.mark.parametrize("task", TASKS)
def test_flagging_everything_loses_to_champion(task: str, scenario: str) -> None:
    risk_ids = [r.id for r in resolve_scenario(scenario).risks]
    flagger = statistics.mean(play(FlagEverything(risk_ids), task, scenario, seed) for seed in SEEDS)
    assert flagger < mean_score("heuristic", task, scenario) - SPAM_MARGIN


def test_ladder_separates_seeds_not_just_means() -> None:
    """On every single seed of one scenario the champion beats random, which beats noop."""
    for seed in SEEDS:
        scores = [play(POLICIES[name](), "full_episode", "product_launch_failure", seed)
                  for name in ("noop", "random", "heuristic")]
        assert scores == sorted(scores) and len(set(scores)) == 3, scores


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_the_champion_acts_only_within_the_legal_payload_choices(scenario: str) -> None:
    """What an LLM agent may answer (and what SFT rows keep): every champion action is one of the role's legal
    actions with payload values among the offered choices."""
    env = aaos.make("full_episode", scenario=scenario, seed=SEEDS[0])
    champion = OrgChampion()
    observation = env.reset()
    while True:
        joint = champion.act(observation)
        for role, chosen in joint.items():
            validate_answer(env.spec, role, chosen, observation["agent_observations"][role]["legal_actions"])
        result = env.step(joint)
        observation = result.observation
        if result.done:
            return
