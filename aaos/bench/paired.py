"""Paired comparisons of policies played on the same episodes: rank groups and a noise floor.

Every policy of a benchmark plays the same task x scenario x seed, so two policies are compared on their paired
score differences (one per episode), which removes the episode-to-episode variation both share. For every pair of
ranked policies: the mean paired difference, its seeded bootstrap 95 % CI and a two-sided sign-flip permutation
p-value (exact over all 2^n sign patterns up to n = 12 episodes, else SIGN_FLIPS - 1 seeded draws); the p-values
of a leaderboard group are Holm-corrected over its pairs. Policies that are not significantly different share a
rank (rank_groups says exactly how). Results that are not paired (a policy missing episodes another played: other
seeds, other scenarios, a failed episode) are refused with the episodes each policy lacks (UnpairedError).

The noise floor of a task is the smallest paired difference its N episodes detect with POWER at ALPHA (two-sided),
(z_{1-ALPHA/2} + z_{POWER}) * sd / sqrt(N), and the episodes needed to detect DETECTABLE; sd is the pooled SD of
the paired differences of every pair of ranked policies on the task (the root mean square of the pairs' sample
SDs: every pair has the same N, so it is their pooled variance), measured from the episodes themselves.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from itertools import combinations
from typing import Any

from aaos.bench.stats import VERSION_KEYS, bootstrap_ci, record_group, row_group
from aaos.core.seeding import rng

ALPHA = 0.05
"""Family-wise error rate of a group's pairwise tests (Holm), and the noise floor's two-sided alpha."""
POWER = 0.8
"""The noise floor's power: the smallest difference detected this often."""
DETECTABLE = 0.05
"""The difference whose episode count the noise floor reports."""
SIGN_FLIPS = 4096
"""Sign patterns a p-value is computed from: all 2^n of them when 2^n <= SIGN_FLIPS, else SIGN_FLIPS - 1 seeded
draws plus the observed one (the smallest p-value is then 1 / SIGN_FLIPS)."""
DEFAULT_EPISODES = 6
"""Seeds of each split per task and scenario that `aaos bench` and the Space play unless told otherwise, chosen from
the measured noise floor: the larger of (a) the fewest with which every task and split of the default environment
(org) detects a 0.05 paired difference between the champion and random legal actions at 80 % power, alpha 0.05, and
(b) MIN_EPISODES, so that a split of one scenario (inbox's train split) can show any difference at all. (a) from
perf/noise_floor.py (16 seeds a cell, public holdout, org v5): the SD of the champion - random differences and the
episodes 0.05 needs, train (4 scenarios) then holdout (6): org_simulation 0.072 -> 17, 0.054 -> 10;
crisis_management 0.062 -> 13, 0.081 -> 21; full_episode 0.056 -> 10, 0.084 -> 23: 5 seeds (20 and 30 episodes).
(b) is 6, which gives org 24 train and 36 holdout episodes a task. Elsewhere the leaderboard's noise floor says
when more are needed: chief_of_staff's train split (3 scenarios, SD up to 0.092) wants 9 seeds, inbox's (1 train and
2 holdout scenarios, SD up to 0.112) 40 and 20."""
MIN_EPISODES = next(n for n in range(1, 64) if 2 / 2 ** n < ALPHA)
"""The fewest paired episodes on which the sign-flip test can find any difference at ALPHA (6): its smallest p-value
is 2 / 2^n, all differences of one sign. With k policies a group's Holm correction asks more: 2 / 2^n below
ALPHA / (k (k - 1) / 2) for its clearest pair."""
_CHUNK = 8
"""Bits of a sign pattern summed by one table lookup."""
_TOLERANCE = 1e-9
"""Sums of scores that differ by less are equal (the same sum added in another order)."""

EpisodeKey = tuple[str, str, int, str | None]
"""(task, scenario, seed, holdout salt fingerprint): the episode a score is of, within one environment version and
split."""
Scores = Mapping[str, Mapping[EpisodeKey, float]]
"""Each policy's score on each episode it played."""


class UnpairedError(ValueError):
    """The policies were not played on the same episodes: no paired comparison is made."""


@dataclass(frozen=True, slots=True)
class PairedDifference:
    """`better` (the higher mean; ties by name) minus `worse` over their `episodes` shared episodes: the mean
    difference, its 95 % bootstrap CI, the sign-flip p-value and the Holm-adjusted p-value over the group's pairs."""

    better: str
    worse: str
    episodes: int
    mean_difference: float
    ci_low: float
    ci_high: float
    p_value: float
    p_holm: float

    @property
    def significant(self) -> bool:
        return self.p_holm < ALPHA


@dataclass(frozen=True, slots=True)
class NoiseFloor:
    """A task's noise floor: with `episodes` paired episodes and the pooled SD `sd` of the paired differences,
    differences below `detectable` are noise (missed more than 1 - POWER of the time; None: with fewer than
    MIN_EPISODES, every difference is); `episodes_needed` detect DETECTABLE (MIN_EPISODES at least)."""

    task: str
    episodes: int
    sd: float
    detectable: float | None
    episodes_needed: int

    def sentence(self) -> str:
        """e.g. "with 40 episodes, differences below 0.040 are noise; 0.05 needs 26 episodes"."""
        needs = f"{DETECTABLE:.2f} needs {plural(self.episodes_needed, 'episode')}"
        if self.detectable is None:
            return (f"with {plural(self.episodes, 'episode')}, every difference is noise (a paired test needs "
                    f"{MIN_EPISODES} or more); {needs}")
        return f"with {plural(self.episodes, 'episode')}, differences below {self.detectable:.3f} are noise; {needs}"


@dataclass(frozen=True, slots=True)
class Standing:
    """One group's paired result: each policy's `ranks`, the `comparisons` of every pair over the `episodes` all
    played and each task's `noise_floors`; or, when the scores are not paired, `refused` (why) and nothing else."""

    ranks: Mapping[str, int]
    comparisons: tuple[PairedDifference, ...] = ()
    noise_floors: tuple[NoiseFloor, ...] = ()
    refused: str | None = None
    episodes: int = 0

    def too_few(self) -> str | None:
        """Why no two of the policies can be told apart, when the episodes are too few for any Holm-corrected
        sign-flip test to reject (the smallest p-value, 2 / 2^n, times the pairs is ALPHA or more); else None."""
        pairs = len(self.comparisons)
        if not pairs or 2 / 2 ** self.episodes * pairs < ALPHA:
            return None
        needed = next(n for n in range(self.episodes, 64) if 2 / 2 ** n * pairs < ALPHA)
        return (f"{plural(self.episodes, 'paired episode')} cannot tell {len(self.ranks)} policies apart "
                f"({plural(pairs, 'pair')}, Holm-corrected: it takes {needed} or more), so they share a rank")


def plural(count: int, noun: str) -> str:
    """"1 episode", "2 episodes"."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def sign_flip_p(differences: Sequence[float]) -> float:
    """Two-sided p-value of a zero mean paired difference: the share of sign patterns whose flipped sum is at least
    as far from zero as the observed one (exact for up to 12 differences, else seeded draws; deterministic)."""
    n = len(differences)
    total = sum(differences)
    observed = abs(total) - _TOLERANCE
    if observed <= 0:
        return 1.0
    tables = [_subset_sums(differences[start:start + _CHUNK]) for start in range(0, n, _CHUNK)]

    def extreme(mask: int) -> bool:
        flipped = sum(table[(mask >> (_CHUNK * i)) & 0xFF] for i, table in enumerate(tables))
        return abs(total - 2 * flipped) >= observed

    if 2 ** n <= SIGN_FLIPS:
        return sum(extreme(mask) for mask in range(2 ** n)) / 2 ** n
    draw = rng("sign-flip", n)
    return (1 + sum(extreme(draw.getrandbits(n)) for _ in range(SIGN_FLIPS - 1))) / SIGN_FLIPS


def _subset_sums(values: Sequence[float]) -> list[float]:
    """The sum of every subset of `values` (at most _CHUNK of them), indexed by its bit mask."""
    sums = [0.0]
    for value in values:
        sums += [s + value for s in sums]
    return sums


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm-adjusted p-values, in the order given: the i-th smallest of m is multiplied by m - i + 1 (i from 1),
    kept at least the one before it and at most 1."""
    order = sorted(range(len(p_values)), key=lambda i: p_values[i])
    adjusted = [1.0] * len(p_values)
    running = 0.0
    for position, index in enumerate(order):
        running = max(running, min(1.0, (len(p_values) - position) * p_values[index]))
        adjusted[index] = running
    return adjusted


def check_paired(scores: Scores) -> list[EpisodeKey]:
    """The episodes every policy played, sorted; UnpairedError naming, per policy, the episodes it lacks that
    another played (a few of them, and how many)."""
    episodes = {key for played in scores.values() for key in played}
    lacking = {policy: sorted(episodes - set(played), key=_order) for policy, played in scores.items()}
    lacking = {policy: missing for policy, missing in lacking.items() if missing}
    if lacking:
        said = "; ".join(f"{policy} lacks {len(missing)} of the {len(episodes)} episodes ("
                         + ", ".join(map(_episode, missing[:3])) + (", …" if len(missing) > 3 else "") + ")"
                         for policy, missing in sorted(lacking.items()))
        raise UnpairedError("not paired, so not compared: the policies were not played on the same episodes "
                            f"(task, scenario, seed and holdout salt): {said}. Play every policy on the same tasks, "
                            "scenarios and seeds (a failed episode counts as missing: run again to retry it)")
    return sorted(episodes, key=_order)


def _order(key: EpisodeKey) -> tuple[str, str, int, str]:
    task, scenario, seed, salt = key
    return task, scenario, seed, salt or ""


def _episode(key: EpisodeKey) -> str:
    task, scenario, seed, salt = key
    return f"{task}/{scenario}/seed {seed}" + (f"/salt {salt}" if salt else "")


def rank_groups(order: Sequence[str], comparisons: Iterable[PairedDifference]) -> dict[str, int]:
    """Ranks from the policies in `order` (best mean first) and their Holm-adjusted comparisons: walk the policies
    in order; the first leads group 1 with rank 1; each next policy joins the current group (and shares its
    leader's rank) if its Holm-adjusted p-value against the leader is at least ALPHA, else it leads a new group
    whose rank is its position in `order` (1-based): e.g. 1, 1, 3. A policy is grouped only with a leader it is not
    significantly different from; two members of a group may differ from each other."""
    adjusted = {frozenset((c.better, c.worse)): c.p_holm for c in comparisons}
    ranks: dict[str, int] = {}
    leader = None
    for position, policy in enumerate(order, 1):
        if leader is None or adjusted[frozenset((leader, policy))] < ALPHA:
            leader = policy
            ranks[policy] = position
        else:
            ranks[policy] = ranks[leader]
    return ranks


def _z(probability: float) -> float:
    return statistics.NormalDist().inv_cdf(probability)


def noise_floor(task: str, differences: Sequence[Sequence[float]]) -> NoiseFloor | None:
    """The task's noise floor from the paired differences of each pair of policies on it (each pair over the same
    N episodes); None with fewer than 2 episodes or no pair."""
    if not differences or len(differences[0]) < 2:
        return None
    episodes = len(differences[0])
    sd = math.sqrt(statistics.mean(statistics.variance(pair) for pair in differences))
    z = _z(1 - ALPHA / 2) + _z(POWER)
    needed = max(MIN_EPISODES, math.ceil((z * sd / DETECTABLE) ** 2))
    return NoiseFloor(task, episodes, sd, z * sd / math.sqrt(episodes) if episodes >= MIN_EPISODES else None, needed)


def standing(scores: Scores) -> Standing:
    """Rank groups, pairwise comparisons and per-task noise floors of these policies' paired scores; refused
    (Standing.refused says why, no ranks) when they are not paired. standing_of reads them from episode records."""
    try:
        episodes = check_paired(scores)
    except UnpairedError as error:
        return Standing({}, refused=str(error))
    if not episodes:
        return Standing({}, refused="not compared: no episode was recorded")
    vectors = {policy: [played[key] for key in episodes] for policy, played in scores.items()}
    order = sorted(vectors, key=lambda policy: (-statistics.mean(vectors[policy]), policy))
    pairs = list(combinations(order, 2))
    differences = [[b - w for b, w in zip(vectors[better], vectors[worse], strict=True)] for better, worse in pairs]
    p_values = [sign_flip_p(d) for d in differences]
    comparisons = tuple(
        PairedDifference(better, worse, len(d), statistics.mean(d), *bootstrap_ci(d), p, adjusted)
        for (better, worse), d, p, adjusted in zip(pairs, differences, p_values, holm(p_values), strict=True))
    by_task: dict[str, list[int]] = defaultdict(list)
    for index, (task, *_) in enumerate(episodes):
        by_task[task].append(index)
    floors = (noise_floor(task, [[d[i] for i in indices] for d in differences]) for task, indices in by_task.items())
    return Standing(rank_groups(order, comparisons), comparisons, tuple(f for f in floors if f is not None),
                    episodes=len(episodes))


def standing_of(records: Iterable[Mapping[str, Any]], policies: Iterable[str] = ()) -> Standing:
    """The standing of the policies of these episode records (of one environment version and split; records of
    failed episodes left out), and of `policies` too (one without a record lacks every episode); refused when an
    episode is recorded twice or the policies were not played on the same episodes."""
    scores: dict[str, dict[EpisodeKey, float]] = {policy: {} for policy in policies}
    repeated = []
    for record in records:
        if record.get("error") is None:
            played = scores.setdefault(record["policy"], {})
            if (key := episode_key(record)) in played:
                repeated.append(f"{record['policy']} {_episode(key)}")
            played[key] = record["score"]
    if repeated:
        return Standing({}, refused=f"not paired, so not compared: an episode was recorded twice "
                                    f"({', '.join(repeated[:3])})")
    return standing(scores)


GroupKey = tuple[Any, ...]
"""A leaderboard group: (*VERSION_KEYS, split, split_label) (aaos.bench.stats.row_group)."""


def episode_key(record: Mapping[str, Any]) -> EpisodeKey:
    return (record["task"], record["scenario"], record["seed"], record.get("holdout_salt"))


def standings(rows: Iterable[Mapping[str, Any]], records: Iterable[Mapping[str, Any]]) -> dict[GroupKey, Standing]:
    """The standing of every leaderboard group of the summary `rows`, from the episode `records` they summarise:
    its ranked rows' policies (rows with `unranked` set are never compared) paired on their records' scores."""
    ranked: dict[GroupKey, set[str]] = defaultdict(set)
    for row in rows:
        if not row.get("unranked"):
            ranked[row_group(row)].add(row["policy"])
    grouped: dict[GroupKey, list[Mapping[str, Any]]] = defaultdict(list)
    for record in records:
        if record.get("error") is None and record["policy"] in ranked.get(group := record_group(record), ()):
            grouped[group].append(record)
    return {group: standing_of(grouped[group], sorted(policies)) for group, policies in ranked.items()}


RANKS_METHOD = ("Rank groups: every pair of ranked policies is compared on the episodes both played (paired): the "
                "mean difference, better minus worse, with its 95 % bootstrap CI and a sign-flip permutation p-value, "
                "Holm-corrected over the pairs of the environment version and split; a policy whose Holm p-value "
                f"against its group's best is at least {ALPHA} shares that rank (e.g. 1, 1, 3).")
NOISE_METHOD = (f"Noise floor: the smallest paired difference a task's episodes detect ({100 * POWER:.0f} % power, "
                f"alpha {ALPHA}, two-sided), from the pooled SD of the paired differences, and the episodes "
                f"{DETECTABLE} needs.")


def ordered(found: Mapping[GroupKey, Standing]) -> list[tuple[GroupKey, Standing]]:
    """The standings by group, in the leaderboard's order."""
    return sorted(found.items(), key=lambda item: tuple(map(str, item[0])))


def notes(found: Mapping[GroupKey, Standing]) -> list[str]:
    """What to read under a leaderboard, a line each: a group's refusal, or each task's noise floor."""
    return [line for group, result in ordered(found) for line in (
        [f"{group_label(group)}: {result.refused}"] if result.refused else
        [f"{group_label(group)}: {why}" for why in (result.too_few(),) if why] +
        [f"{group_label(group)}, {floor.task}: {floor.sentence()}" for floor in result.noise_floors])]


def group_label(group: GroupKey) -> str:
    """"org v4 (reward v3), salted holdout"."""
    env, env_version, reward_version, split, label = group
    return f"{env} v{env_version} (reward v{reward_version}), {label or split}"


PAIRWISE_COLUMNS = (*VERSION_KEYS, "split", "split_label", "better", "worse", "episodes", "mean_difference",
                    "ci_low", "ci_high", "p_value", "p_holm", "significant")
NOISE_COLUMNS = (*VERSION_KEYS, "split", "split_label", "task", "episodes", "sd", "detectable", "episodes_needed")


def group_fields(group: GroupKey) -> dict[str, Any]:
    return dict(zip((*VERSION_KEYS, "split", "split_label"), group, strict=True))


def pairwise_rows(found: Mapping[GroupKey, Standing]) -> list[dict[str, Any]]:
    """Every comparison of every group as a flat row (PAIRWISE_COLUMNS)."""
    return [{**group_fields(group), **asdict(c), "significant": c.significant}
            for group, result in ordered(found) for c in result.comparisons]


def noise_rows(found: Mapping[GroupKey, Standing]) -> list[dict[str, Any]]:
    """Every noise floor of every group as a flat row (NOISE_COLUMNS)."""
    return [{**group_fields(group), **asdict(floor)}
            for group, result in ordered(found) for floor in result.noise_floors]
