"""The reward ladder of every environment and its headroom (issue 12, item 4; issue 35, item 6; issue 34, item 9;
issue 47, item 4): noop <= 0.25 < random <= 0.35 < champion, with 95 % confidence intervals apart, on every task x
scenario x split; on the hard task the oracle (the ground truth) beats the champion by at least 0.10, intervals apart,
on every (scenario, split) cell over HEADROOM_SEEDS paired seeds, a holdout cell both public and salted; an episode's
return is its final score, whatever the policy; the champion acts only within the legal choices (in every episode it
plays here). What each environment promises beyond that (its champion's floor, the seeds) is its Ladder below."""

from __future__ import annotations

import statistics
from contextlib import nullcontext
from dataclasses import dataclass
from functools import cache

import pytest
from exploits import play as play_org

import aaos
from aaos.agents.llm import validate_answer
from aaos.bench.stats import bootstrap_ci
from aaos.core.seeding import salted, split_seeds
from aaos.core.spec import Difficulty, Split

NOOP_MAX = 0.25
RANDOM_MAX = 0.35
ORACLE_HEADROOM = 0.10
HEADROOM_SEEDS = 16
"""Paired seeds a hard-task cell is compared on, oracle against champion (the audit's measure)."""
LADDER_SALT = "ladder-secret"
"""A holdout salt (any will do: the first one tried) under which the hard cells are compared too: an evaluation server
or the Space's benchmark draws its holdout with a secret salt, and information must be worth having whatever variants
a salt draws ("": the public holdout)."""
SPLITS: tuple[Split, ...] = ("train", "holdout")
ALL: tuple[Difficulty, ...] = ("easy", "medium", "hard")
CHAMPION = "heuristic"


@dataclass(frozen=True, slots=True)
class Ladder:
    """What an environment's ladder promises beyond the shared rungs.

    champion_min: the champion's mean on every cell of a task of these difficulties (champion_min_on).
    hard_task: where the oracle must show headroom; champion_max_on_hard: the champion's mean there at most (None:
        no cap).
    always_applied: the champion's every action is applied (never no_effect or rejected).
    """

    seeds_per_split: int
    champion_min: float
    champion_min_on: tuple[Difficulty, ...]
    hard_task: str
    champion_max_on_hard: float | None
    always_applied: bool = False


LADDERS: dict[str, Ladder] = {
    "org": Ladder(6, 0.60, ALL, "full_episode", 0.85),
    "inbox": Ladder(8, 0.70, ALL, "hard", 0.85, always_applied=True),
    "chief_of_staff": Ladder(6, 0.70, ("easy",), "crunch_month", None),
}
ENVS = [env_id for env_id in aaos.env_ids() if env_id in LADDERS]
Cell = tuple[str, Split]


def cells(env_id: str) -> list[Cell]:
    """Every (scenario, split) an environment's scenarios draw from (a holdout-only scenario has no train
    variants)."""
    return [(s.id, split) for s in aaos.spec(env_id).scenarios
            for split in (SPLITS if s.split == "train" else ("holdout",))]


def salts(split: Split) -> tuple[str, ...]:
    """The holdout salts a split's cell is compared under ("": public; train variants ignore the salt)."""
    return ("", LADDER_SALT) if split == "holdout" else ("",)


@cache
def scores(env_id: str, policy_name: str, task: str, scenario: str, split: Split, salt: str = "") -> tuple[float, ...]:
    """The policy's final scores on the split's first seeds (HEADROOM_SEEDS for the champion and the oracle on the
    hard task, the ladder's seeds_per_split otherwise: the ladder reads the first of them, the same seeds), each
    episode drawn under the holdout salt `salt` ("": the public holdout) and played as the runners play it; its
    return must be its score, and the champion's every action must be among its role's legal choices (applied, too,
    where the environment's ladder says so)."""
    found = []
    champion = policy_name == CHAMPION
    ladder = LADDERS[env_id]
    compared = task == ladder.hard_task and policy_name in (CHAMPION, "oracle")
    for seed in split_seeds(split, HEADROOM_SEEDS if compared else ladder.seeds_per_split):
        with salted(salt) if salt else nullcontext():  # the variant is drawn as the environment is built and reset
            env = aaos.make(task, scenario=scenario, seed=seed, env=env_id)
            observation, total = env.reset(), 0.0
        policy = aaos.policies.make(policy_name, seed=seed, env=env_id)
        policy.reset(seed)
        policy.bind(env)
        while True:
            joint = policy.act(observation)
            for role, chosen in joint.items() if champion else ():
                validate_answer(env.spec, role, chosen, observation["agent_observations"][role]["legal_actions"])
            result = env.step(joint)
            if champion and ladder.always_applied:
                assert all(r["status"] == "applied" for r in result.info["action_results"].values()), result.info
            total, observation = total + result.reward, result.observation
            if result.done:
                break
        assert total == pytest.approx(result.info["score"], abs=1e-9), (env_id, policy_name, task, scenario, seed, salt)
        found.append(float(result.info["score"]))
    return tuple(found)


@pytest.mark.parametrize(("env_id", "task", "scenario", "split"),
                         [(env_id, t.id, *cell) for env_id in ENVS for t in aaos.spec(env_id).tasks
                          for cell in cells(env_id)])
def test_ladder(env_id: str, task: str, scenario: str, split: Split) -> None:
    ladder = LADDERS[env_id]
    noop, random, champion = (scores(env_id, name, task, scenario, split)[:ladder.seeds_per_split]
                              for name in ("noop", "random", CHAMPION))
    means = [statistics.mean(values) for values in (noop, random, champion)]
    assert means[0] <= NOOP_MAX, f"noop scores {means[0]:.3f}"
    assert means[1] <= RANDOM_MAX, f"random scores {means[1]:.3f}"
    if aaos.spec(env_id).task(task).difficulty in ladder.champion_min_on:
        assert means[2] >= ladder.champion_min, f"champion scores {means[2]:.3f}"
    (_, noop_high), (random_low, random_high), (champion_low, _) = map(bootstrap_ci, (noop, random, champion))
    assert noop_high < random_low, f"noop and random overlap: {bootstrap_ci(noop)} vs {bootstrap_ci(random)}"
    assert random_high < champion_low, (f"random and champion overlap: {bootstrap_ci(random)} vs "
                                        f"{bootstrap_ci(champion)}")


@pytest.mark.parametrize(("env_id", "scenario", "split", "salt"),
                         [pytest.param(env_id, *cell, salt, id=f"{env_id}-{'-'.join(cell)}-{salt or 'public'}")
                          for env_id in ENVS for cell in cells(env_id) for salt in salts(cell[1])])
def test_information_is_worth_having_on_every_hard_cell(env_id: str, scenario: str, split: Split, salt: str) -> None:
    """The champion (own views only) leaves room on the hard task, and the oracle (the same rules, or better ones,
    fed the ground truth) shows it on every cell, its holdout public and salted: at least ORACLE_HEADROOM better,
    intervals apart."""
    ladder = LADDERS[env_id]
    champion, oracle = (scores(env_id, name, ladder.hard_task, scenario, split, salt) for name in (CHAMPION, "oracle"))
    champion_mean, oracle_mean = statistics.mean(champion), statistics.mean(oracle)
    if ladder.champion_max_on_hard is not None:
        assert champion_mean <= ladder.champion_max_on_hard, f"champion scores {champion_mean:.3f} on the hard task"
    assert oracle_mean >= champion_mean + ORACLE_HEADROOM, f"oracle {oracle_mean:.3f} vs champion {champion_mean:.3f}"
    assert bootstrap_ci(champion)[1] < bootstrap_ci(oracle)[0], f"{bootstrap_ci(champion)} vs {bootstrap_ci(oracle)}"


@pytest.mark.parametrize("env_id", ENVS)
def test_the_oracle_refuses_to_act_unbound(env_id: str) -> None:
    """The oracle reads the ground truth; without an environment to read it must not guess."""
    env = aaos.make(LADDERS[env_id].hard_task, seed=0, env=env_id)
    with pytest.raises(RuntimeError, match="bind"):
        aaos.policies.make("oracle", env=env_id).act(env.reset())


@pytest.mark.parametrize("scenario", [s.id for s in aaos.spec("org").scenarios])
def test_the_org_champion_files_no_duplicate_or_false_report(scenario: str) -> None:
    for task in aaos.spec("org").tasks:
        for seed in (0, 1, 10_000):
            episode = play_org(CHAMPION, task.id, scenario, seed)
            assert (episode.false_reports, episode.false_flags) == (0, 0), (task.id, seed)
