"""The Support Inbox's reward ladder (issue 12, item 4): noop <= 0.25 < random <= 0.35 < champion (>= 0.70), with 95 %
confidence intervals apart, on every task x (scenario, split); the champion leaves room on the hard task (<= 0.85)
and the oracle shows it; an episode's return is its final score, whatever the policy."""

from __future__ import annotations

import statistics

import pytest
from inbox_exploits import CELLS, ENV, play, seeds

import aaos
from aaos.agents.llm import validate_answer
from aaos.bench.stats import bootstrap_ci
from aaos.core.spec import Split

TASKS = [t["id"] for t in aaos.list_tasks(env=ENV)]
SEEDS_PER_SPLIT = 8
NOOP_MAX = 0.25
RANDOM_MAX = 0.35
CHAMPION_MIN = 0.70
HARD_TASK = "hard"
CHAMPION_MAX_ON_HARD = 0.85
ORACLE_HEADROOM = 0.10


def scores(policy: str, task: str, scenario: str, split: Split) -> list[float]:
    found = []
    for seed in seeds(split, SEEDS_PER_SPLIT):
        episode = play(policy, task, scenario, seed)
        assert episode.reward_sum == pytest.approx(episode.score, abs=1e-9), (policy, task, scenario, seed)
        found.append(episode.score)
    return found


@pytest.mark.parametrize("task", TASKS)
@pytest.mark.parametrize(("scenario", "split"), CELLS)
def test_ladder(task: str, scenario: str, split: Split) -> None:
    noop, random, champion = (scores(name, task, scenario, split) for name in ("noop", "random", "heuristic"))
    means = [statistics.mean(values) for values in (noop, random, champion)]
    assert means[0] <= NOOP_MAX, f"noop scores {means[0]:.3f}"
    assert means[1] <= RANDOM_MAX, f"random scores {means[1]:.3f}"
    assert means[2] >= CHAMPION_MIN, f"champion scores {means[2]:.3f}"
    (_, noop_high), (random_low, random_high), (champion_low, _) = map(bootstrap_ci, (noop, random, champion))
    assert noop_high < random_low, f"noop and random overlap: {bootstrap_ci(noop)} vs {bootstrap_ci(random)}"
    assert random_high < champion_low, (f"random and champion overlap: {bootstrap_ci(random)} vs "
                                        f"{bootstrap_ci(champion)}")


@pytest.mark.parametrize(("scenario", "split"), CELLS)
def test_the_hard_inbox_leaves_room_for_reading(scenario: str, split: Split) -> None:
    """The keyword champion stays at or below 0.85 on hard; the oracle (the ground truth) is at least
    ORACLE_HEADROOM above it, intervals apart: what better reading could still gain."""
    champion, oracle = scores("heuristic", HARD_TASK, scenario, split), scores("oracle", HARD_TASK, scenario, split)
    assert statistics.mean(champion) <= CHAMPION_MAX_ON_HARD, f"champion scores {statistics.mean(champion):.3f}"
    assert statistics.mean(oracle) >= statistics.mean(champion) + ORACLE_HEADROOM
    assert bootstrap_ci(champion)[1] < bootstrap_ci(oracle)[0]


def test_the_oracle_refuses_to_act_unbound() -> None:
    env = aaos.make(HARD_TASK, env=ENV)
    with pytest.raises(RuntimeError, match="bind"):
        aaos.policies.make("oracle", env=ENV).act(env.reset())


@pytest.mark.parametrize(("scenario", "split"), CELLS)
def test_the_champion_acts_only_within_the_legal_choices(scenario: str, split: Split) -> None:
    env = aaos.make(HARD_TASK, scenario=scenario, seed=seeds(split, 1)[0], env=ENV)
    policy = aaos.policies.make("heuristic", env=ENV)
    observation = env.reset()
    while True:
        joint = policy.act(observation)
        for role, chosen in joint.items():
            validate_answer(env.spec, role, chosen, observation["agent_observations"][role]["legal_actions"])
        result = env.step(joint)
        assert all(r["status"] == "applied" for r in result.info["action_results"].values()), result.info
        observation = result.observation
        if result.done:
            break
