"""The guarded advisor on the Chief of Staff Arena (issue 13, item 5): the champion acts first; advice replaces
its action only past the guardrails and by a score margin, and a final safety gate on the whole step vetoes a
joint action that raises a violation the champion's would not."""

from __future__ import annotations

from typing import Any

import pytest

import aaos
from aaos.agents import advisor as advisor_module
from aaos.agents.advisor import GuardedAdvisor, new_violations
from aaos.core.env import Environment, JointAction, Observation
from aaos.core.policy import Action, Policy, action
from aaos.envs.chief_of_staff.champion import CosChampion
from aaos.envs.chief_of_staff.oracle import CosOracle

ENV, ROLE = "chief_of_staff", "chief_of_staff"


class Scripted(Policy):
    """Suggests, in turn: a message with no news, a booking over a taken slot, and otherwise what the oracle
    (the ground truth) would do."""

    name = "scripted"

    def __init__(self) -> None:
        self.oracle = CosOracle()

    def bind(self, env: Environment) -> None:
        self.oracle.bind(env)

    def act_role(self, role: str, view: dict[str, Any]) -> Action:
        taken = [(row["day"], slot) for row in view["calendar"] for slot, cell in row["slots"].items()
                 if cell["booked"]]
        ready = [r for r in view["requests"] if r["status"] == "open" and not r["dependencies"]]
        if view["step"] % 3 == 0:
            return action("message", audience="all", tone="concise")
        if view["step"] % 3 == 1 and taken and ready:
            return action("schedule", request_id=ready[0]["id"], day=taken[0][0], slot=taken[0][1])
        return self.oracle.act_role(role, view)

    def act(self, observation: Observation) -> JointAction:
        self.oracle.act(observation)  # refreshes the oracle's ground truth for this step
        return super().act(observation)


def play(policy: Policy, task: str = "drifting_priorities", seed: int = 10_000) -> tuple[list[Action], Any]:
    env = aaos.make(task, scenario="series_b_startup", seed=seed, env=ENV)
    observation = env.reset()
    policy.bind(env)
    chosen, hard = [], 0
    while not env.done:
        joint = policy.act(observation)
        chosen.append(joint[ROLE])
        result = env.step(joint)
        hard += sum(e["severity"] in ("high", "critical") for e in result.info["oversight_events"])
        observation = result.observation
    return chosen, (env.score, hard)


def test_unsafe_advice_is_blocked_and_better_advice_taken_without_new_violations() -> None:
    guarded = GuardedAdvisor(Scripted())
    _, (score, hard) = play(guarded)
    _, (champion_score, champion_hard) = play(CosChampion())
    assert guarded.verdicts["blocked_no_news"] > 0 and guarded.verdicts["blocked_slot_not_free"] > 0
    assert guarded.verdicts["accepted"] > 0 and guarded.verdicts["not_better"] > 0
    assert hard <= champion_hard
    assert score != champion_score


def test_a_margin_nothing_can_clear_leaves_the_champion_in_charge() -> None:
    guarded = GuardedAdvisor(Scripted(), margin=1.0)
    actions, result = play(guarded)
    assert guarded.verdicts["accepted"] == 0
    assert (actions, result) == play(CosChampion())


def test_the_safety_gate_vetoes_a_step_that_raises_a_violation_the_champions_would_not(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # A guardrail that misses the double booking, and a lookahead that favours it: only the final gate is left.
    monkeypatch.setattr(advisor_module, "guardrail_breach", lambda *args: None)
    monkeypatch.setattr(advisor_module, "lookahead_score", lambda env, joint: 1.0)
    env = aaos.make("drifting_priorities", scenario="series_b_startup", seed=0, env=ENV)
    observation = env.reset()
    view = observation["agent_observations"][ROLE]
    ready = [r for r in view["requests"] if not r["dependencies"] and r["stakeholder"] != "family"
             and r["duration"] == 1]
    env.step({ROLE: action("schedule", request_id=ready[0]["id"], day=2, slot="midday")})
    observation = env.observation()

    class DoubleBooker(Policy):
        def act_role(self, role: str, view: dict[str, Any]) -> Action:
            return action("schedule", request_id=ready[1]["id"], day=2, slot="midday")

    guarded = GuardedAdvisor(DoubleBooker())
    guarded.bind(env)
    joint = guarded.act(observation)
    assert joint == CosChampion().act(observation)
    assert guarded.verdicts == {"accepted": 1, "vetoed_by_safety_gate": 1}
    chosen = advisor_module.lookahead(env, {ROLE: action("schedule", request_id=ready[1]["id"], day=2,
                                                         slot="midday")})
    assert new_violations(chosen, advisor_module.lookahead(env, joint)) == ["double_booking"]
