"""Rejection-sampling fine-tuning's rows and the decision characters the weighted loss leans on (no model needed:
learners and samplers here are baseline policies)."""

from __future__ import annotations

import json

import pytest

import aaos
from aaos.core.trajectory import EpisodeMeta
from aaos.policies import baseline
from aaos.training.dagger import dagger_rows
from aaos.training.decisions import branch_chars, parse_answer
from aaos.training.episodes import play
from aaos.training.rft import StateLog, gaining_rows, log_row, rft_rows
from aaos.training.sft import sft_rows

META = EpisodeMeta("chief_of_staff", "steady_week", "product_launch", 3)


def _answers(rows: list[dict]) -> list[str]:
    return [row["messages"][-1]["content"] for row in rows]


def test_with_the_champion_as_learner_and_sampler_every_row_is_the_champions_as_in_dagger() -> None:
    logs: list[StateLog] = []
    rows = list(rft_rows(META, baseline("heuristic"), [baseline("heuristic")], "compact", logs))
    expected = list(dagger_rows(META, baseline("heuristic"), "compact"))
    assert rows and _answers(rows) == _answers(expected)
    assert [row["decision_chars"] for row in rows] == [row["decision_chars"] for row in expected]
    assert [log.step for log in logs] == list(range(len(logs))) and len(logs) >= len(rows)  # every state logged
    assert {log.source for log in logs} == {"champion"}
    assert all(log.sampled == log.champion == log.greedy == log.best for log in logs)


def test_the_row_holds_the_best_rewarded_answer_and_never_one_the_reward_ranks_below_the_champions() -> None:
    logs: list[StateLog] = []
    rows = list(rft_rows(META, baseline("random"), [baseline("random")], "compact", logs))
    spec = aaos.spec(META.env)
    assert rows and [log.step for log in logs] == list(range(len(logs)))
    assert all(log.best >= log.champion and log.best >= log.greedy for log in logs)
    assert all((log.source != "champion") == (log.best > log.champion) for log in logs)
    assert any(log.greedy < log.champion for log in logs)  # random is worse than the champion somewhere
    env = aaos.make(META.task, scenario=META.scenario, seed=META.seed, env=META.env)
    observation = env.reset()
    chosen = "random" if logs[0].source != "champion" else "heuristic"  # the sampler is the learner's twin here
    policy = aaos.policies.make(chosen, seed=META.seed, env=META.env)
    policy.reset(META.seed)
    policy.bind(env)
    first = parse_answer(spec, None, rows[0]["messages"][-1]["content"], observation, "compact")
    assert rows[0]["step"] == 0 and first == policy.act(observation)
    line = log_row(0, logs)
    assert line["states"] == len(logs) and line["best"] >= line["champion"]
    assert line["sample_wins"] == sum(log.source != "champion" for log in logs)


def test_kept_by_the_learner_a_row_holds_the_champions_answer_only_where_it_scores_more() -> None:
    logs: list[StateLog] = []
    rows = list(rft_rows(META, baseline("random"), [baseline("random")], "compact", logs, keep="learner"))
    assert rows and all(log.best == max(log.greedy, log.champion, log.best) for log in logs)
    assert all((log.source == "learner") == (log.best == log.greedy) for log in logs)
    assert all((log.source == "champion") == (log.champion > log.greedy) for log in logs)
    assert {"learner", "champion"} <= {log.source for log in logs}  # random ties the champion, and loses
    champion_kept: list[StateLog] = []
    list(rft_rows(META, baseline("random"), [baseline("random")], "compact", champion_kept))
    assert [log.source for log in champion_kept] != [log.source for log in logs]


def test_trained_on_gains_a_round_keeps_the_rows_of_the_states_where_the_models_own_answer_loses() -> None:
    logs: list[StateLog] = []
    rows = list(rft_rows(META, baseline("random"), [baseline("random")], "compact", logs))
    kept = list(gaining_rows(rows, logs))
    losing = {log.step for log in logs if log.best > log.greedy}
    assert 0 < len(kept) < len(rows)  # random loses at some states and plays the best answer at others
    assert {row["step"] for row in kept} == losing & {row["step"] for row in rows}
    assert [row for row in rows if row["step"] in losing] == kept  # every row of a losing state, in order
    twin: list[StateLog] = []
    champion_rows = list(rft_rows(META, baseline("heuristic"), [baseline("heuristic")], "compact", twin))
    assert champion_rows and not list(gaining_rows(champion_rows, twin))  # the champion loses nowhere to itself


@pytest.mark.parametrize(("target", "options", "expected"), [
    ("a(1,x)", ["a(1,x)", "a(1,y)", "b()"], [0, 4]),
    ("a(1,x)", ["a(1,x)"], []),  # no other option: nothing to decide
    ("a(2,x)", ["a(1,x)", "a(2,x)", "a(2,y)"], [2, 4]),
    ("no_op()", ["no_op()", "no"], [2]),  # an option that ends is a branch too
])
def test_branch_chars_are_where_the_remaining_options_part(target: str, options: list[str],
                                                           expected: list[int]) -> None:
    assert branch_chars(target, options) == expected


def test_an_inbox_label_decides_on_its_category_not_on_the_characters_every_option_shares() -> None:
    meta = EpisodeMeta("inbox", "easy", aaos.spec("inbox").scenarios[0].id, 0)
    episode = play(meta, aaos.policies.make("heuristic", seed=0, env="inbox"))
    rows = list(sft_rows([episode], "compact", min_score=0.0))
    labels = [row for row in rows if "classify_email(" in row["messages"][-1]["content"]]
    assert labels
    for row in labels:
        answer = row["messages"][-1]["content"]
        call = json.loads(answer)[0]
        email, category = call.removeprefix("classify_email(").removesuffix(")").split(",")
        start = answer.index(call)
        category_at = start + call.index("," + category) + 1
        assert category_at in row["decision_chars"], (answer, row["decision_chars"])
        id_at = start + call.index(email)  # "em_": every email id's prefix, and the call's own name
        assert not set(range(id_at, id_at + 3)) & set(row["decision_chars"]), answer
        assert not set(range(start + 1, start + len("classify_email("))) & set(row["decision_chars"]), answer
