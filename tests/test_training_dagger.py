"""DAgger's rows: the champion's answer at every state the learner reached (no model needed: the learner here is a
baseline policy)."""

from __future__ import annotations

import json

import aaos
from aaos.core.trajectory import EpisodeMeta
from aaos.policies import baseline
from aaos.training.dagger import dagger_rows
from aaos.training.decisions import parse_answer
from aaos.training.episodes import play
from aaos.training.sft import sft_rows

META = EpisodeMeta("chief_of_staff", "steady_week", "product_launch", 3)


def _chats(rows: list[dict]) -> list[str]:
    return [json.dumps(row["messages"]) for row in rows]


def test_with_the_champion_as_learner_the_rows_are_the_sft_rows_of_its_own_episode() -> None:
    champion = aaos.policies.make("heuristic", seed=META.seed, env=META.env)
    episode = play(META, champion)
    expected = list(sft_rows([episode], "compact", min_score=0.0))
    rows = list(dagger_rows(META, baseline("heuristic"), "compact"))
    assert expected and _chats(rows) == _chats(expected)
    assert [row["step"] for row in rows] == [row["step"] for row in expected]


def test_the_random_learners_states_are_labelled_with_answers_the_agent_accepts() -> None:
    champion_chats = set(_chats(list(dagger_rows(META, baseline("heuristic"), "compact"))))
    rows = list(dagger_rows(META, baseline("random"), "compact"))
    off_path = [row for row in rows if json.dumps(row["messages"]) not in champion_chats]
    assert len(off_path) > len(rows) // 2  # the learner's own states, not the champion's
    spec = aaos.spec(META.env)
    env = aaos.make(META.task, scenario=META.scenario, seed=META.seed, env=META.env)
    observation = env.reset()
    first = rows[0]
    assert first["step"] == 0 and first["messages"][1]["content"].startswith("Seen:")
    assert set(parse_answer(spec, None, first["messages"][-1]["content"], observation, "compact")) == set(spec.roles)
    assert {row["scenario"] for row in rows} == {META.scenario} and all(row["role"] is None for row in rows)
