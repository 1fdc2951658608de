"""The reward ladder and its headroom: noop < random < champion < oracle, with 95 % confidence intervals apart,
on every task x scenario and split; and an episode's return is its final score, whatever the policy."""

from __future__ import annotations

import statistics
from functools import cache

import pytest
from exploits import play, play_checked

import aaos
from aaos.bench.stats import bootstrap_ci
from aaos.core.seeding import split_seeds
from aaos.core.spec import Split

TASKS = [t["id"] for t in aaos.list_tasks()]
SEEDS_PER_SPLIT = 6
NOOP_MAX = 0.25
RANDOM_MAX = 0.35
CHAMPION_MIN = 0.60
HARD_TASK = "full_episode"
CHAMPION_MAX_ON_HARD = 0.85
ORACLE_HEADROOM = 0.10


def cells() -> list[tuple[str, str, Split]]:
    """Every task x scenario x split a scenario draws from (a holdout-only scenario has no train variants)."""
    found = []
    for task in TASKS:
        for scenario in aaos.list_scenarios():
            for split in ("train", "holdout") if scenario["split"] == "train" else ("holdout",):
                found.append((task, scenario["id"], split))
    return found


@cache
def scores(policy_name: str, task: str, scenario: str, split: Split) -> tuple[float, ...]:
    episodes = [play(policy_name, task, scenario, seed) for seed in split_seeds(split, SEEDS_PER_SPLIT)]
    for seed, episode in zip(split_seeds(split, SEEDS_PER_SPLIT), episodes, strict=True):
        assert episode.reward_sum == pytest.approx(episode.score, abs=1e-9), f"{policy_name} {task} {scenario} {seed}"
    return tuple(episode.score for episode in episodes)


def interval(values: tuple[float, ...]) -> tuple[float, float]:
    return bootstrap_ci(list(values))


@pytest.mark.parametrize(("task", "scenario", "split"), cells())
def test_ladder(task: str, scenario: str, split: Split) -> None:
    noop, random, champion = (scores(name, task, scenario, split) for name in ("noop", "random", "heuristic"))
    means = [statistics.mean(values) for values in (noop, random, champion)]
    assert means[0] <= NOOP_MAX, f"noop scores {means[0]:.3f}"
    assert means[1] <= RANDOM_MAX, f"random scores {means[1]:.3f}"
    assert means[2] >= CHAMPION_MIN, f"champion scores {means[2]:.3f}"
    (_, noop_high), (random_low, random_high), (champion_low, _) = map(interval, (noop, random, champion))
    assert noop_high < random_low, f"noop and random intervals overlap: {interval(noop)} vs {interval(random)}"
    assert random_high < champion_low, f"random and champion overlap: {interval(random)} vs {interval(champion)}"


@pytest.mark.parametrize("scenario", [s["id"] for s in aaos.list_scenarios()])
def test_information_is_worth_having_on_the_hard_task(scenario: str) -> None:
    """On full_episode the champion (own views only) leaves room, and the oracle (the same rules fed the ground
    truth) shows it: at least ORACLE_HEADROOM better, intervals apart, over train and holdout seeds together."""
    splits: tuple[Split, ...] = ("train", "holdout")
    champion = sum((scores("heuristic", HARD_TASK, scenario, split) for split in splits), ())
    oracle = sum((scores("oracle", HARD_TASK, scenario, split) for split in splits), ())
    champion_mean, oracle_mean = statistics.mean(champion), statistics.mean(oracle)
    assert champion_mean <= CHAMPION_MAX_ON_HARD, f"champion scores {champion_mean:.3f} on the hard task"
    assert oracle_mean >= champion_mean + ORACLE_HEADROOM, f"oracle {oracle_mean:.3f} vs champion {champion_mean:.3f}"
    assert interval(champion)[1] < interval(oracle)[0], f"{interval(champion)} vs {interval(oracle)}"


def test_the_oracle_refuses_to_act_unbound() -> None:
    """The oracle reads the ground truth; without an environment to read it must not guess."""
    env = aaos.make(HARD_TASK, scenario="product_launch_failure", seed=0)
    with pytest.raises(RuntimeError, match="bind"):
        aaos.policies.make("oracle").act(env.reset())


@pytest.mark.parametrize("scenario", [s["id"] for s in aaos.list_scenarios()])
def test_the_champion_acts_only_within_the_legal_payload_choices(scenario: str) -> None:
    play_checked("heuristic", HARD_TASK, scenario, 0)


@pytest.mark.parametrize("scenario", [s["id"] for s in aaos.list_scenarios()])
def test_the_champion_files_no_duplicate_or_false_report(scenario: str) -> None:
    for task in TASKS:
        for seed in (0, 1, 10_000):
            episode = play("heuristic", task, scenario, seed)
            assert (episode.false_reports, episode.false_flags) == (0, 0), (task, seed)
