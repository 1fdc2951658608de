"""The GRPO reward pays for looking, flagging and asking: measured over states of champion episodes.

For states drawn from the champion's episodes on every scenario of full_episode and crisis_management (train
seeds, a few states of each kind per episode), each case is one role's chance to do something useful:

    detect    a hidden risk is noticeable now and the role can notice it: query_metrics on the risk's metric
    flag      a risk is detected and not flagged: risk_compliance raises the flag
    request   a task the role owns is blocked on a resource it has not asked for: request_resource, the
              smallest legal amount that covers the gap (within the approval limit when one does)

Its effect is reward_fn's reward for that answer minus the reward for no_op by the same role, everything else
equal (the same snapshot; the champion acts for the other roles and then plays every role to the horizon).
The mean effect of each kind must be non-negative at DEFAULT_HORIZON. The same code measures the old
horizon-1 signal, which paid flagging less than doing nothing (the new remediation task counts against
business success before anyone can work on it) and paid requests nothing (a request is graded once answered).

    python tests/test_reward_signal.py 1 5 10 15 50      # the mean effects at several horizons
    python tests/test_reward_signal.py --agreement 1 5 10 15 20   # how often horizon k orders two answers
                                                                  # as the episode's end does
"""

from __future__ import annotations

import itertools
import json
import math
import random
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from statistics import fmean
from typing import Any

import pytest

import aaos
from aaos.core.env import Environment, JointAction, Observation
from aaos.core.policy import Action, action
from aaos.core.trajectory import EpisodeMeta, state_hash
from aaos.training import DEFAULT_HORIZON, INVALID_REWARD, Rollout, reward_fn
from aaos.training.snapshot import make_snapshot

TASKS = ("full_episode", "crisis_management")
SEEDS = tuple(range(6))
"""Train seeds."""
PER_EPISODE = 5
"""States of each kind drawn from one episode (at most)."""
KINDS = ("detect", "flag", "request")
MIN_CASES = 40
"""Fewer cases of a kind than this and the measurement says nothing: the test fails rather than pass vacuously."""
NO_OP = json.dumps(action("no_op"))


@dataclass(frozen=True, slots=True)
class Case:
    """One role's chance to detect, flag or request at one state of a champion episode."""

    kind: str
    task: str
    scenario: str
    seed: int
    step: int
    snapshot: str
    role: str
    action: Action

    def __str__(self) -> str:
        return f"{self.kind} {self.task}/{self.scenario} seed {self.seed} step {self.step}: {self.role} {self.action}"


def chances(env: Environment, observation: Observation, joint: JointAction) -> Iterator[tuple[str, str, Action]]:
    """(kind, role, action) for every detection, flag and needed request a role could make now, the champion's
    `joint` action playing the other roles (a role after another that finds the risk this step finds nothing)."""
    state = env.state()
    views = observation["agent_observations"]
    roles = list(aaos.spec("org").roles)  # the order in which the environment applies the roles' actions
    for risk in state["risks"]:
        d = risk["definition"]
        if risk["status"] == "hidden" and d["noticeable_from"] <= state["step"]:
            looking = [r for r in roles if r in d["visible_to"]
                       and joint.get(r) == action("query_metrics", metric=d["metric"])]
            for role in d["visible_to"]:
                if looking and roles.index(looking[0]) < roles.index(role):
                    continue
                if d["metric"] in views[role]["legal_actions"].get("query_metrics", {}).get("metric", []):
                    yield "detect", role, action("query_metrics", metric=d["metric"])
        if risk["status"] == "detected" and risk["flagged_step"] is None:
            legal = views["risk_compliance"]["legal_actions"].get("raise_risk_flag", {})
            if risk["id"] in legal.get("risk_id", []):
                yield "flag", "risk_compliance", action("raise_risk_flag", risk_id=risk["id"],
                                                        description=d["description"])
    pending = {(r["role"], r["resource_type"]) for r in state["requests"] if r["status"] == "pending"}
    limit = state["policy"]["max_resource_approval"]
    for task in state["work"]:
        role = task["owner"]
        if task["status"] != "in_progress" or role is None:
            continue
        legal = views[role]["legal_actions"].get("request_resource")
        for kind, needed in task["needs"].items():
            gap = needed - task["allocated"].get(kind, 0)
            if gap <= 0 or (role, kind) in pending or legal is None or kind not in legal["resource_type"]:
                continue
            covering = [a for a in legal["amount"] if a >= gap]
            within = [a for a in covering if a <= limit]
            if covering:
                yield "request", role, action("request_resource", resource_type=kind, amount=min(within or covering))


def episode_cases(task: str, scenario: str, seed: int, per_episode: int = PER_EPISODE) -> list[Case]:
    """Play the champion's episode; keep up to `per_episode` cases of each kind, drawn with a fixed seed."""
    meta = EpisodeMeta("org", task, scenario, seed)
    env = aaos.make(task, scenario=scenario, seed=seed)
    observation = env.reset()
    champion = aaos.policies.make("heuristic", env="org")
    champion.reset(seed)
    champion.bind(env)
    actions: list[Any] = []
    found: dict[str, list[Case]] = {kind: [] for kind in KINDS}
    while True:
        joint = champion.act(observation)
        seen = list(chances(env, observation, joint))
        if seen:
            snapshot = json.dumps(make_snapshot(meta, actions, state_hash(env.state())), separators=(",", ":"))
            for kind, role, chosen in seen:
                found[kind].append(Case(kind, task, scenario, seed, len(actions), snapshot, role, chosen))
        actions.append(joint)
        result = env.step(joint)
        if result.done:
            break
        observation = result.observation
    draw = random.Random(f"{task}/{scenario}/{seed}")
    return [case for kind in KINDS for case in draw.sample(found[kind], min(per_episode, len(found[kind])))]


def all_cases(seeds: Sequence[int] = SEEDS, per_episode: int = PER_EPISODE) -> list[Case]:
    return [case for task in TASKS for scenario in aaos.list_scenarios() for seed in seeds
            for case in episode_cases(task, scenario["id"], seed, per_episode)]


def effects(cases: Sequence[Case], horizon: int) -> dict[str, list[float]]:
    """Per kind, reward_fn(the case's action) - reward_fn(no_op by the same role), both scored at `horizon`:
    one GRPO group of two completions per case."""
    found: dict[str, list[float]] = {kind: [] for kind in KINDS}
    for case in cases:
        acted, idle = reward_fn([json.dumps(case.action), NO_OP], snapshot=[case.snapshot] * 2,
                                role=[case.role] * 2, horizon=[horizon] * 2)
        assert INVALID_REWARD not in (acted, idle), f"not a valid answer: {case}"
        found[case.kind].append(acted - idle)
    return found


def mean_effects(cases: Sequence[Case], horizon: int) -> dict[str, float]:
    return {kind: fmean(values) for kind, values in effects(cases, horizon).items() if values}


def report(means: dict[int, dict[str, float]], counts: dict[str, int]) -> str:
    lines = ["mean effect vs no_op  " + "  ".join(f"{kind} (n={counts[kind]})" for kind in KINDS)]
    for horizon, by_kind in means.items():
        lines.append(f"horizon {horizon:>2}            " + "  ".join(f"{by_kind[kind]:+.4f}" for kind in KINDS))
    return "\n".join(lines)


@pytest.fixture(scope="module")
def cases() -> list[Case]:
    return all_cases()


def test_every_case_is_a_real_chance(cases: list[Case]) -> None:
    """Each case's action is applied and does what its kind says, from the case's state."""
    counts = {kind: sum(c.kind == kind for c in cases) for kind in KINDS}
    assert min(counts.values()) >= MIN_CASES, counts
    assert {c.scenario for c in cases} == {s["id"] for s in aaos.list_scenarios()}
    assert {c.task for c in cases} == set(TASKS)
    for case in cases:
        rollout = Rollout(case.snapshot, case.role, horizon=1)
        result = rollout.act({case.role: case.action})
        assert result.info["action_results"][case.role]["status"] == "applied", str(case)
        state = rollout.env.state()
        if case.kind == "request":
            assert any(r["step"] == case.step and r["role"] == case.role for r in state["requests"]), str(case)
            continue
        risk_id = case.action["payload"].get("risk_id")
        risks = [r for r in state["risks"] if r["id"] == risk_id or (
            r["detected_step"] == case.step and r["detected_by"] == case.role)]
        assert risks and all(r["status"] in ("detected", "flagged") for r in risks), str(case)


def test_detecting_flagging_and_requesting_never_lose_reward_against_no_op(cases: list[Case]) -> None:
    counts = {kind: sum(c.kind == kind for c in cases) for kind in KINDS}
    means = {horizon: mean_effects(cases, horizon) for horizon in sorted({1, DEFAULT_HORIZON})}
    table = report(means, counts)
    print(table)
    # the same measurement gives numbers at horizon 1, the old default: the test measures what it claims to
    assert set(means[1]) == set(KINDS) and all(math.isfinite(v) for v in means[1].values()), table
    losing = [kind for kind in KINDS if means[DEFAULT_HORIZON][kind] < 0.0]
    assert not losing, f"{', '.join(losing)} lose reward against no_op at the default horizon\n{table}"


def order(snapshot: str, role: str, answers: Sequence[str], horizon: int) -> int:
    """+1 if reward_fn scores the first answer higher at `horizon`, -1 if lower, 0 if the same."""
    first, second = reward_fn(list(answers), snapshot=[snapshot] * 2, role=[role] * 2, horizon=[horizon] * 2)
    return (first - second > 1e-12) - (first - second < -1e-12)


def agreement(horizons: Sequence[int], end: int = 50, every: int = 4) -> tuple[dict[int, float], int]:
    """How often horizon k ranks the champion's answer and a random legal answer (RandomPolicy's) as the end of
    the episode does, over pairs the end tells apart: states every `every` steps of champion and random
    episodes, every task and scenario, seeds 0 and 1. Returns the share per horizon and the number of pairs."""
    random_answers = aaos.policies.make("random", env="org")
    champion = aaos.policies.make("heuristic", env="org")
    same = dict.fromkeys(horizons, 0)
    pairs = 0
    for task in aaos.spec("org").tasks:
        for scenario in aaos.list_scenarios():
            for seed, source in itertools.product((0, 1), ("heuristic", "random")):
                meta = EpisodeMeta("org", task.id, scenario["id"], seed)
                env = aaos.make(task.id, scenario=scenario["id"], seed=seed)
                observation = env.reset()
                policy = aaos.policies.make(source, env="org")
                policy.reset(seed)
                actions: list[Any] = []
                while True:
                    if len(actions) % every == 0:
                        snapshot = json.dumps(make_snapshot(meta, actions, state_hash(env.state())))
                        for role, view in observation["agent_observations"].items():
                            answers = [json.dumps(champion.act_role(role, view)),
                                       json.dumps(random_answers.act_role(role, view))]
                            final = order(snapshot, role, answers, end)
                            if final:
                                pairs += 1
                                for h in horizons:
                                    same[h] += order(snapshot, role, answers, h) == final
                    joint = policy.act(observation)
                    actions.append(joint)
                    result = env.step(joint)
                    if result.done:
                        break
                    observation = result.observation
    return {h: same[h] / pairs for h in horizons}, pairs


if __name__ == "__main__":
    args = sys.argv[1:]
    if args and args[0] == "--agreement":
        shares, pairs = agreement([int(a) for a in args[1:]] or [1, 5, 10, 15, 20])
        for h, share in shares.items():
            print(f"horizon {h:>2}: the sign of the difference agrees with the episode's end on {share:.1%} of "
                  f"{pairs} pairs")
    else:
        start = time.perf_counter()
        drawn = all_cases()
        counts = {kind: sum(c.kind == kind for c in drawn) for kind in KINDS}
        print(report({int(a): mean_effects(drawn, int(a)) for a in args or ["1", str(DEFAULT_HORIZON)]}, counts))
        print(f"{time.perf_counter() - start:.1f} s")
