"""Paired comparisons, rank groups and noise floors (issue 47 §1): the sign-flip test, Holm's correction and the rank
walk on data of known differences, their false positive rate over null draws, the refusal of unpaired results, the
reports that carry them, and the real ladder (noop, random, champion and oracle played on the same episodes)."""

from __future__ import annotations

import json
import math
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

import aaos
from aaos.bench import paired
from aaos.bench.paired import PairedDifference, UnpairedError
from aaos.bench.report import write_reports
from aaos.bench.runner import Job, plan_jobs, run
from aaos.bench.stats import summarise
from aaos.core.seeding import rng
from aaos.policies import baseline

Z = statistics.NormalDist().inv_cdf(1 - paired.ALPHA / 2) + statistics.NormalDist().inv_cdf(paired.POWER)


def episodes(count: int, task: str = "t", scenario: str = "s") -> list[paired.EpisodeKey]:
    return [(task, scenario, seed, None) for seed in range(count)]


def scores_of(values: list[float], task: str = "t") -> dict[paired.EpisodeKey, float]:
    return dict(zip(episodes(len(values), task), values, strict=True))


def binomial_upper(draws: int, rate: float, risk: float = 1e-3) -> int:
    """The least k with P(X > k) <= risk for X ~ Binomial(draws, rate): more false positives than k at the nominal
    rate would happen less than once in 1 / risk runs of the test."""
    tail = 1.0
    for k in range(draws + 1):
        tail -= math.comb(draws, k) * rate ** k * (1 - rate) ** (draws - k)
        if tail <= risk:
            return k
    return draws


def test_the_sign_flip_p_value_is_exact_for_few_episodes_and_seeded_for_many() -> None:
    assert paired.sign_flip_p([0.2] * 4) == 2 / 16  # all + and all - are as extreme, of 2^4 patterns
    assert paired.sign_flip_p([0.2, 0.2, 0.2, -0.1]) == 4 / 16  # |0.5|: ++++, ---- and the two that flip 0.1 only
    assert paired.sign_flip_p([0.0] * 6) == 1.0 and paired.sign_flip_p([0.3, -0.3]) == 1.0
    assert paired.sign_flip_p([0.1] * 20) == 1 / paired.SIGN_FLIPS  # drawn: the observed pattern counts once
    noisy = [(-1) ** i * 0.05 * i for i in range(30)]
    assert paired.sign_flip_p(noisy) == paired.sign_flip_p(list(noisy))  # seeded: the same data, the same p
    assert 0.2 < paired.sign_flip_p(noisy) <= 1.0


def test_holm_multiplies_the_ith_smallest_p_by_m_minus_i_plus_one_and_keeps_them_monotone() -> None:
    assert paired.holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert paired.holm([0.2, 0.001, 0.6]) == pytest.approx([0.4, 0.003, 0.6])
    assert paired.holm([0.5, 0.9]) == pytest.approx([1.0, 1.0])


def difference(better: str, worse: str, p_holm: float) -> PairedDifference:
    return PairedDifference(better, worse, 10, 0.1, 0.0, 0.2, p_holm, p_holm)


def test_rank_groups_follow_the_leader_of_each_group() -> None:
    comparisons = [difference("a", "b", 0.30), difference("a", "c", 0.01), difference("b", "c", 0.20),
                   difference("a", "d", 0.001), difference("b", "d", 0.001), difference("c", "d", 0.04)]
    assert paired.rank_groups("abcd", comparisons) == {"a": 1, "b": 1, "c": 3, "d": 4}  # c vs a, not vs b; d vs c
    chained = [difference("a", "b", 0.30), difference("a", "c", 0.30), difference("b", "c", 0.01)]
    assert paired.rank_groups("abc", chained) == {"a": 1, "b": 1, "c": 1}  # members may differ from each other
    assert paired.rank_groups(["solo"], []) == {"solo": 1}


def test_a_true_difference_is_found_and_a_tie_is_not_invented() -> None:
    draw = rng("test", "known difference")
    base = [draw.uniform(0.3, 0.9) for _ in range(30)]
    found = paired.standing({
        "best": scores_of(base),
        "level": scores_of([b + draw.gauss(0, 0.02) for b in base]),
        "worse": scores_of([b - 0.1 + draw.gauss(0, 0.05) for b in base]),
    })
    assert found.refused is None
    by_pair = {(c.better, c.worse): c for c in found.comparisons}
    assert set(found.ranks.values()) == {1, 3} and found.ranks["worse"] == 3
    assert found.ranks["best"] == found.ranks["level"] == 1
    worse = next(c for pair, c in by_pair.items() if "worse" in pair and "level" not in pair)
    assert worse.significant and worse.ci_low < 0.1 < worse.ci_high and worse.mean_difference == pytest.approx(
        0.1, abs=0.03)
    level = next(c for pair, c in by_pair.items() if set(pair) == {"best", "level"})
    assert not level.significant and level.ci_low < 0 < level.ci_high
    assert all(c.p_holm >= c.p_value for c in found.comparisons)


def test_false_positives_stay_at_the_nominal_rate_over_null_draws() -> None:
    """Equal policies: the per-pair test rejects at most ALPHA of the time, and the whole procedure (three
    policies, Holm over their three pairs) splits them into two ranks at most ALPHA of the time; a draw count that
    exceeds the binomial bound at the nominal rate would happen less than once in a thousand runs."""
    draws = 400
    pair_rejections = sum(paired.sign_flip_p([rng("null pair", i, j).gauss(0, 0.1) for j in range(10)])
                          < paired.ALPHA for i in range(draws))
    assert pair_rejections <= binomial_upper(draws, paired.ALPHA), pair_rejections
    family_draws = 60
    split = 0
    for i in range(family_draws):
        draw = rng("null family", i)
        base = [draw.uniform(0.2, 0.8) for _ in range(12)]
        found = paired.standing({name: scores_of([b + draw.gauss(0, 0.1) for b in base]) for name in "abc"})
        split += set(found.ranks.values()) != {1}
    assert split <= binomial_upper(family_draws, paired.ALPHA), split


def test_the_noise_floor_is_the_detectable_difference_from_the_pooled_sd() -> None:
    first = [0.1, -0.1] * 10  # SD 0.1026 (n - 1)
    second = [0.3, -0.3] * 10
    floor = paired.noise_floor("t", [first, second])
    assert floor is not None
    sd = math.sqrt((statistics.variance(first) + statistics.variance(second)) / 2)
    assert floor.sd == pytest.approx(sd) and floor.episodes == 20
    assert floor.detectable == pytest.approx(Z * sd / math.sqrt(20))
    assert floor.episodes_needed == math.ceil((Z * sd / paired.DETECTABLE) ** 2) > paired.MIN_EPISODES
    assert floor.sentence() == (f"with 20 episodes, differences below {floor.detectable:.3f} are noise; 0.05 needs "
                                f"{floor.episodes_needed} episodes")
    assert paired.noise_floor("t", [[0.2]]) is None and paired.noise_floor("t", []) is None


def test_below_the_fewest_episodes_a_sign_flip_test_can_reject_on_every_difference_is_noise() -> None:
    assert paired.MIN_EPISODES == 6  # 2 / 2^6 < 0.05 <= 2 / 2^5
    assert paired.sign_flip_p([0.5] * 5) >= paired.ALPHA > paired.sign_flip_p([0.5] * 6)
    few = paired.noise_floor("t", [[0.01, 0.02, 0.01, 0.03, 0.02]])
    assert few is not None and few.detectable is None and few.episodes_needed == paired.MIN_EPISODES
    assert few.sentence() == ("with 5 episodes, every difference is noise (a paired test needs 6 or more); 0.05 "
                              "needs 6 episodes")


def test_unpaired_results_are_refused_with_the_episodes_each_policy_lacks() -> None:
    with pytest.raises(UnpairedError, match=r"b lacks 2 of the 5 episodes \(t/s/seed 3, t/s/seed 4\)"):
        paired.check_paired({"a": scores_of([0.5] * 5), "b": scores_of([0.4] * 3)})
    other_seeds = {(task, scenario, seed + 100, salt): 0.4 for task, scenario, seed, salt in episodes(2)}
    found = paired.standing({"a": scores_of([0.5, 0.6]), "b": other_seeds})
    assert found.ranks == {} and found.comparisons == () and found.refused is not None
    assert "a lacks 2 of the 4 episodes (t/s/seed 100, t/s/seed 101)" in found.refused
    assert "b lacks 2 of the 4 episodes (t/s/seed 0, t/s/seed 1)" in found.refused


def record(policy: str, seed: int, score: float, scenario: str = "s", split: str = "train") -> dict[str, Any]:
    return {"policy": policy, "split": split, "env": "org", "env_version": "4", "reward_version": "3",
            "task": "org_simulation", "scenario": scenario, "seed": seed, "score": score,
            "components": {"efficiency": score}, "actions": 10, "invalid_actions": 0, "hard_violations": 0,
            "llm": None, "wall_s": 0.1, "error": None}


def test_the_reports_carry_ranks_comparisons_noise_floors_and_refusals(tmp_path: Path) -> None:
    noise = [0.01, -0.012, 0.004, -0.006, 0.015, -0.01, 0.003, 0.0]  # close: level with the champion, or nearly
    train = [record(name, seed, score + 0.01 * (seed % 3) + (noise[seed] if name == "close" else 0.0))
             for seed in range(8) for name, score in (("heuristic", 0.9), ("close", 0.9), ("random", 0.2))]
    holdout = [record("heuristic", 10_000 + seed, 0.8, split="holdout") for seed in range(3)]
    holdout += [record("random", 10_001 + seed, 0.3, split="holdout") for seed in range(3)]  # other seeds
    records = train + holdout
    paths = write_reports(summarise(records), tmp_path, records)
    board = json.loads(paths["json"].read_text())
    assert [(r["split"], r["policy"], r["rank"]) for r in board] == [
        ("holdout", "heuristic", None), ("holdout", "random", None),
        ("train", "close", 1), ("train", "heuristic", 1), ("train", "random", 3)]
    assert paths["csv"].read_text().splitlines()[1].startswith(",org,4,3,heuristic,holdout")  # no rank: refused
    pairs = json.loads(paths["pairwise_json"].read_text())
    assert [(c["better"], c["worse"], c["significant"]) for c in pairs["comparisons"]] == [
        ("close", "heuristic", False), ("close", "random", True), ("heuristic", "random", True)]
    assert [r["split"] for r in pairs["refused"]] == ["holdout"]
    assert "random lacks 1 of the 4 episodes (org_simulation/s/seed 10000)" in pairs["refused"][0]["refused"]
    [floor] = pairs["noise_floors"]
    assert (floor["task"], floor["episodes"], floor["split"]) == ("org_simulation", 8, "train")
    markdown = paths["md"].read_text()
    assert markdown.startswith("| rank | env |") and "## Paired comparisons" in markdown
    assert f"org v4 (reward v3), public holdout: {pairs['refused'][0]['refused']}" in markdown
    assert (f"- org v4 (reward v3), train, org_simulation: with 8 episodes, differences below "
            f"{floor['detectable']:.3f} are noise; 0.05 needs") in markdown
    assert paths["pairwise_csv"].read_text().splitlines()[0].split(",") == list(paired.PAIRWISE_COLUMNS)
    assert paths["noise_floor_csv"].read_text().splitlines()[0].split(",") == list(paired.NOISE_COLUMNS)


def test_an_episode_recorded_twice_is_refused_not_counted_twice() -> None:
    records = [record("heuristic", 0, 0.9), record("heuristic", 0, 0.8), record("random", 0, 0.2)]
    [found] = paired.standings(summarise(records), records).values()
    assert found.ranks == {} and "recorded twice (heuristic org_simulation/s/seed 0)" in str(found.refused)


def test_every_step_of_every_episode_is_reported_as_it_is_played(tmp_path: Path) -> None:
    steps: dict[Job, list[int]] = defaultdict(list)
    jobs = plan_jobs(["heuristic", "noop"], ["org_simulation"], ["product_launch_failure"], 1, ("train",))
    records = run(jobs, {name: baseline(name) for name in ("heuristic", "noop")}, tmp_path / "results.jsonl",
                  on_step=lambda job, step: steps[job].append(step))
    assert set(steps) == set(jobs)
    for job, played in zip(jobs, records, strict=True):
        assert steps[job] == list(range(1, played["steps"] + 1))


LADDER = ("noop", "random", "heuristic", "oracle")
LADDER_EPISODES = 12
"""Paired episodes of each task at least (seeds per cell: this over the task's cells, rounded up): with four
policies (six pairs, Holm) and every difference of one sign, 12 give an exact p-value of 2 / 4096, ample."""


def ladder_cases() -> list[tuple[str, str]]:
    return [(env, task.id) for env in aaos.env_ids() for task in aaos.spec(env).tasks]


@pytest.mark.parametrize(("env", "task"), ladder_cases())
def test_the_ladder_lands_in_distinct_rank_groups_on_every_task(tmp_path: Path, env: str, task: str) -> None:
    """noop < random < champion < oracle, each in its own rank group, on every task of every environment (every
    scenario and split pooled, as aaos bench pools a split's tasks and scenarios); on an easy task the oracle may
    share the champion's group (its information is worth nothing there: chief_of_staff's champion and oracle play
    steady_week alike, inbox's champion scores 1.0 on easy), never below it."""
    scenarios = [s.id for s in aaos.spec(env).scenarios]
    cells = len(plan_jobs(["noop"], [task], scenarios, 1, ("train", "holdout"), env))
    jobs = plan_jobs(LADDER, [task], scenarios, math.ceil(LADDER_EPISODES / cells), ("train", "holdout"), env)
    records = run(jobs, {name: baseline(name) for name in LADDER}, tmp_path / "results.jsonl")
    scores: dict[str, dict[paired.EpisodeKey, float]] = defaultdict(dict)
    for played in records:
        scores[played["policy"]][paired.episode_key(played)] = played["score"]
    found = paired.standing(scores)
    assert found.refused is None
    ranks = found.ranks
    assert ranks["noop"] == 4 and ranks["random"] == 3, found
    if aaos.spec(env).task(task).difficulty == "easy" and ranks["heuristic"] == 1:
        assert ranks["oracle"] == 1, found
    else:
        assert (ranks["oracle"], ranks["heuristic"]) == (1, 2), found
