"""The GRPO reward on the Support Inbox tells a good action from a bad one (issue 34, item 10).

For states drawn from the champion's episodes (every task, train seeds), each case is the email the champion has
open and is about to handle, and one kind of decision about it:

    classify   set its category: good = the true category, bad = a wrong one (a seeded draw)
    priority   set its priority: good = the true level, bad = a wrong one
    close      close it once labelled: good = the right outcome, bad = a wrong one
    premature  close it the right way before it is labelled: bad (its labels are lost for good)

Its effect is reward_fn's reward for the answer minus the reward for no_op, everything else equal (the same
snapshot, the champion playing on with the environment's default horizon: to the episode's end, discounted). In at
least MIN_SHARE of the cases of each kind a good answer scores above no_op, and a bad one below no_op wherever
no_op's continuation gets it right (the champion would answer right itself: for premature, both labels). Where the
champion would answer wrong too, waiting for its wrong answer is no better than giving one now, and the signal
rightly cannot tell them apart (the script prints those cases too). At a 15-step horizon, with a champion that
relabelled what it disagreed with, a wrong priority scored the same as no_op in 62 of 63 cases.

    python tests/test_inbox_reward_signal.py          # the shares and mean effects, per kind
"""

from __future__ import annotations

import json
import random
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from statistics import fmean
from typing import Any

import pytest

import aaos
from aaos.core.env import Environment
from aaos.core.policy import Action, action
from aaos.core.trajectory import EpisodeMeta, state_hash
from aaos.envs.inbox.champion import CLOSE_ACTION, InboxChampion
from aaos.envs.inbox.spec import CATEGORIES, LEVELS, ROLE
from aaos.training import INVALID_REWARD, reward_fn
from aaos.training.snapshot import make_snapshot

ENV = "inbox"
SEEDS = (0, 1, 2)
PER_EPISODE = 4
"""States of each kind drawn from one episode (at most)."""
KINDS = ("classify", "priority", "close", "premature")
BAD_ONLY = ("premature",)
MIN_SHARE = 0.95
MIN_CASES = 20
NO_OP = json.dumps(action("no_op"))


@dataclass(frozen=True, slots=True)
class Case:
    kind: str
    where: str
    snapshot: str
    good: Action | None
    bad: Action
    champion_right: bool
    """The champion, left to decide (no_op's continuation), would answer right."""


def decisions(env: Environment, view: dict[str, Any],
              draw: random.Random) -> Iterator[tuple[str, Action | None, Action, bool]]:
    """(kind, good, bad, champion right) for the email the champion has open now, as far as it is labelled."""
    state = env.state()
    email = next((e for e in state["emails"] if e["id"] == state["opened_id"] and e["status"] == "open"), None)
    if email is None:
        return
    email_id = email["id"]
    category, level, outcome = InboxChampion().judge(view["opened_email"], view)
    right = (category == email["true_category"], level == email["true_priority"], outcome == email["true_outcome"])
    right_close = CLOSE_ACTION[email["true_outcome"]]
    if email["category"] is None:
        wrong = draw.choice([c for c in CATEGORIES if c != email["true_category"]])
        yield ("classify", action("classify_email", email_id=email_id, category=email["true_category"]),
               action("classify_email", email_id=email_id, category=wrong), right[0])
        yield "premature", None, action(right_close, email_id=email_id), right[0] and right[1]
    elif email["priority"] is None:
        wrong = draw.choice([level for level in LEVELS if level != email["true_priority"]])
        yield ("priority", action("set_priority", email_id=email_id, level=email["true_priority"]),
               action("set_priority", email_id=email_id, level=wrong), right[1])
    else:
        wrong = draw.choice([kind for kind in CLOSE_ACTION.values() if kind != right_close])
        yield "close", action(right_close, email_id=email_id), action(wrong, email_id=email_id), right[2]


def episode_cases(task: str, seed: int) -> list[Case]:
    env = aaos.make(task, seed=seed, env=ENV)
    observation = env.reset()
    champion = aaos.policies.make("heuristic", env=ENV)
    draw = random.Random(f"{task}/{seed}")
    actions: list[dict[str, Action]] = []
    found: dict[str, list[Case]] = {kind: [] for kind in KINDS}
    while not env.done:
        seen = list(decisions(env, observation["agent_observations"][ROLE], draw))
        if seen:
            snapshot = json.dumps(make_snapshot(EpisodeMeta(ENV, task, env.scenario, seed), actions,
                                                state_hash(env.state())), separators=(",", ":"))
            for kind, good, bad, right in seen:
                found[kind].append(Case(kind, f"{task} seed {seed} step {len(actions)}", snapshot, good, bad, right))
        joint = champion.act(observation)
        actions.append(joint)
        observation = env.step(joint).observation
    return [case for kind in KINDS for case in draw.sample(found[kind], min(PER_EPISODE, len(found[kind])))]


Effects = dict[str, list[tuple[float | None, float, bool]]]


def effects(cases: list[Case]) -> Effects:
    """Per kind, (good - no_op, bad - no_op, champion right) of each case (None where the kind has no good
    answer)."""
    found: Effects = {kind: [] for kind in KINDS}
    for case in cases:
        answers = [NO_OP, json.dumps(case.bad)] + ([json.dumps(case.good)] if case.good else [])
        rewards = reward_fn(answers, snapshot=[case.snapshot] * len(answers), role=[ROLE] * len(answers))
        assert INVALID_REWARD not in rewards, case
        idle, bad, *good = rewards
        found[case.kind].append((good[0] - idle if good else None, bad - idle, case.champion_right))
    return found


def all_cases() -> list[Case]:
    return [case for task in ("easy", "medium", "hard") for seed in SEEDS for case in episode_cases(task, seed)]


@pytest.fixture(scope="module")
def measured() -> Effects:
    return effects(all_cases())


@pytest.mark.parametrize("kind", KINDS)
def test_good_answers_beat_no_op_and_bad_ones_lose_to_it(kind: str, measured: Effects) -> None:
    cases = measured[kind]
    judged = [bad for _, bad, right in cases if right]
    assert len(judged) >= MIN_CASES, f"only {len(judged)} {kind} cases: the measurement says nothing"
    below = sum(bad < 0 for bad in judged) / len(judged)
    assert below >= MIN_SHARE, f"a bad {kind} scores below no_op in only {below:.0%} of {len(judged)} cases"
    if kind not in BAD_ONLY:
        above = sum(good is not None and good > 0 for good, _, _ in cases) / len(cases)
        assert above >= MIN_SHARE, f"a good {kind} scores above no_op in only {above:.0%} of {len(cases)} cases"


if __name__ == "__main__":
    table = effects(all_cases())
    for kind, rows in table.items():
        goods = [g for g, _, _ in rows if g is not None]
        judged = [b for _, b, right in rows if right]
        others = [b for _, b, right in rows if not right]
        good_text = (f"good > no_op {sum(g > 0 for g in goods)}/{len(goods)} (mean {fmean(goods):+.4f})"
                     if goods else "")
        other_text = f"{sum(b < 0 for b in others)}/{len(others)}" if others else "-"
        print(f"{kind:10s} bad < no_op {sum(b < 0 for b in judged)}/{len(judged)} (mean {fmean(judged):+.4f}) "
              f"where the champion is right, {other_text} where it is wrong too;  {good_text}")
    sys.exit(0)
