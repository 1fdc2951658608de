"""SFT and GRPO datasets: prompts identical to the LLM agent's, filters, snapshots, and reward_fn by hand."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fake_openai import Script, first_instance, serve

import aaos
from aaos.agents.llm import InvalidAnswer, LLMConfig, LLMPolicy
from aaos.agents.prompts import role_messages
from aaos.cli import main as cli
from aaos.core.actions import ParsedAction, parse_action
from aaos.core.trajectory import EpisodeMeta, state_hash
from aaos.envs.org.champion import OrgChampion
from aaos.training import DEFAULT_HORIZON, INVALID_REWARD, SnapshotError, grpo_rows, restore, reward_fn, sft_rows
from aaos.training.decisions import Decision, answer_text, parse_answer
from aaos.training.episodes import play
from aaos.training.grpo import Groups, informative
from aaos.training.replay import check

SPEC = aaos.spec("org")


def dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def llm_episode(mode: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """An org_simulation episode of the LLM agent against the fake endpoint, and the requests it sent."""
    script = Script(modes=["ok"])
    with serve(script) as url:
        policy = LLMPolicy(SPEC, LLMConfig(model="fake", base_url=url, mode=mode))  # type: ignore[arg-type]
        try:
            records = play(EpisodeMeta("org", "org_simulation", "resource_conflict", 2), policy)
        finally:
            policy.close()
    assert policy.stats.decisions["primary"] == len(records) * len(SPEC.roles)  # the model decided everything
    return records, script.requests


@pytest.fixture(scope="module", params=["per_role", "joint", "compact"])
def llm(request: pytest.FixtureRequest) -> tuple[str, list[dict[str, Any]], list[dict[str, Any]]]:
    return request.param, *llm_episode(request.param)


@pytest.fixture(scope="module")
def champion() -> list[dict[str, Any]]:
    return play(EpisodeMeta("org", "crisis_management", "product_launch_failure", 4), aaos.policies.make("heuristic"))


def fake_reply(request: dict[str, Any]) -> str:
    """What the fake endpoint answered to a request."""
    return json.dumps(first_instance(request["response_format"]["json_schema"]["schema"]))


def test_replay_is_exact_for_llm_agent_trajectories(llm) -> None:
    _, records, _ = llm
    assert len(records) > 1
    assert check(records) == ()


def test_sft_rows_are_exactly_the_llm_agents_exchanges(llm) -> None:
    mode, records, requests = llm
    replies = {dumps(r["messages"]): fake_reply(r) for r in requests}
    rows = list(sft_rows([records], mode, min_score=0.0))  # type: ignore[arg-type]
    assert rows
    for row in rows:
        prompt, answer = row["messages"][:-1], row["messages"][-1]
        assert dumps(prompt) in replies, "an SFT prompt differs from every prompt the LLM agent sent"
        assert answer == {"role": "assistant", "content": replies[dumps(prompt)]}
        assert (row["role"] is None) == (mode != "per_role")
        assert mode != "per_role" or f"You are the {row['role']} agent." in prompt[0]["content"]


def test_grpo_prompts_are_exactly_the_prompts_the_llm_agent_sent(llm) -> None:
    mode, records, requests = llm
    rows = list(grpo_rows([records], mode))  # type: ignore[arg-type]
    assert sorted(dumps(r["prompt"]) for r in rows) == sorted(dumps(r["messages"]) for r in requests)


class WastefulChampion(OrgChampion):
    """The champion, but oversight audits the engineer (who has nothing to audit) instead of every other no-op:
    legal actions that change nothing, which no SFT row may teach."""

    def act_role(self, role: str, view: dict[str, Any]) -> dict[str, Any]:
        chosen = super().act_role(role, view)
        if role == "oversight" and chosen["action_type"] == "no_op" and view["step"] % 2:
            return {"action_type": "audit_agent", "payload": {"target_agent": "engineer"}}
        return chosen


def test_sft_keeps_finished_episodes_above_the_score_and_only_applied_actions() -> None:
    meta = EpisodeMeta("org", "crisis_management", "product_launch_failure", 4)
    weak = play(meta, aaos.policies.make("noop"))
    good = play(meta, WastefulChampion())
    assert weak[-1]["score"] < 0.7 <= good[-1]["score"]
    rows = list(sft_rows([weak, good[:-1], good]))
    assert rows and all(row["score"] == good[-1]["score"] and row["seed"] == 4 for row in rows)
    applied = [(r["step"] - 1, role) for r in good for role, result in r["action_results"].items()
               if result["status"] == "applied"]
    assert len(applied) < len(good) * len(SPEC.roles)  # some actions were wasted
    assert [(row["step"], row["role"]) for row in rows] == applied  # the champion keeps to the legal choices
    assert list(sft_rows([good], min_score=good[-1]["score"] + 1e-9)) == []


def test_sft_leaves_out_applied_actions_the_llm_agent_may_not_give() -> None:
    """An action the env applied but whose payload is not among the offered choices (22 units where the
    choices are 5, 10, ..., 50) is no answer the LLM agent could give: no SFT row teaches it."""

    class OffGridChampion(OrgChampion):
        def act_role(self, role: str, view: dict[str, Any]) -> dict[str, Any]:
            chosen = super().act_role(role, view)
            if chosen["action_type"] == "request_resource":
                return {**chosen, "payload": {**chosen["payload"], "amount": 22}}
            return chosen

    episode = play(EpisodeMeta("org", "crisis_management", "product_launch_failure", 4), OffGridChampion())
    applied = [(r["step"] - 1, role, result["action_type"]) for r in episode
               for role, result in r["action_results"].items() if result["status"] == "applied"]
    kept = [(row["step"], row["role"]) for row in sft_rows([episode])]
    assert any(kind == "request_resource" for *_, kind in applied)
    assert kept == [(step, role) for step, role, kind in applied if kind != "request_resource"]
    for step, role, kind in applied:
        if kind == "request_resource":
            with pytest.raises(InvalidAnswer):
                observation = episode[step]["observation"]
                parse_answer(SPEC, role, answer_text(Decision(role, [], "per_role"), episode[step]["joint_action"],
                                                     observation, SPEC), observation)


def test_an_sft_answer_is_the_recorded_action_and_passes_the_agents_validation(champion) -> None:
    for row in sft_rows([champion]):
        record = champion[row["step"]]
        actions = parse_answer(SPEC, row["role"], row["messages"][-1]["content"], record["observation"])
        sent = record["joint_action"][row["role"]]
        parsed = parse_action(SPEC, row["role"], sent)  # the payload as the env read it, defaults filled in
        assert isinstance(parsed, ParsedAction)
        assert actions == {row["role"]: {"action_type": sent["action_type"], "payload": dict(parsed.payload.__dict__)}}


def test_a_joint_answer_names_every_role_and_a_left_out_role_did_the_no_op() -> None:
    observation = aaos.make("org_simulation", seed=1).reset()
    joint_action = {"engineer": {"action_type": "query_metrics", "payload": {"metric": "uptime"}}}
    answer = json.loads(answer_text(Decision(None, [], "joint"), joint_action, observation, SPEC))
    assert list(answer) == list(SPEC.roles)
    assert answer["engineer"] == {"action_type": "query_metrics", "payload": {"metric": "uptime"}}
    assert answer["oversight"] == {"action_type": "no_op", "payload": {}}
    compact = json.loads(answer_text(Decision(None, [], "compact"), joint_action, observation, SPEC))
    assert compact == ["query_metrics(uptime)" if role == "engineer" else "no_op()" for role in SPEC.roles]
    assert parse_answer(SPEC, None, json.dumps(compact), observation, "compact")["engineer"] == joint_action["engineer"]
    with pytest.raises(InvalidAnswer, match="JSON array of 6 actions, one per role in the order product_manager"):
        parse_answer(SPEC, None, json.dumps(compact[:5]), observation, "compact")


def test_grpo_rows_cover_every_decision_and_their_snapshot_restores_the_prompted_state(champion) -> None:
    rows = list(grpo_rows([champion], horizon=2))
    assert len(rows) == len(champion) * len(SPEC.roles)
    for row in rows[::17]:
        env = restore(row["snapshot"])
        view = env.observation()["agent_observations"][row["role"]]
        assert row["prompt"] == role_messages(row["role"], view, SPEC)
        assert row["horizon"] == 2 and row["step"] == view["step"]
    joint = list(grpo_rows([champion], "joint"))
    assert len(joint) == len(champion) and all(r["role"] is None for r in joint)
    with pytest.raises(ValueError, match="horizon"):
        next(grpo_rows([champion], horizon=0))


def test_a_snapshot_restores_the_exact_state_and_a_wrong_one_is_refused(champion) -> None:
    snapshot = json.loads(list(grpo_rows([champion]))[6 * 6]["snapshot"])
    assert snapshot["state_hash"] == champion[5]["state_hash"] and len(snapshot["actions"]) == 6
    env = restore(snapshot)
    assert state_hash(env.state()) == champion[5]["state_hash"]
    result = env.step(champion[6]["joint_action"])
    assert result.reward == champion[6]["reward"] and state_hash(env.state()) == champion[6]["state_hash"]
    with pytest.raises(SnapshotError, match="another version of the simulation"):
        restore({**snapshot, "actions": snapshot["actions"][:-1]})


def by_hand(snapshot: dict[str, Any], role: str | None, action: Any, horizon: int) -> float:
    """Step the environment by hand: the recorded actions, then the answer (the champion for the other roles),
    then the champion for every role up to the horizon; the score then."""
    env = aaos.make(snapshot["task"], scenario=snapshot["scenario"], seed=snapshot["seed"])
    env.reset()
    for joint in snapshot["actions"]:
        env.step(joint)
    champion = OrgChampion()
    answer = {role: action} if role is not None else action
    result = env.step({**champion.act(env.observation()), **answer})
    for _ in range(horizon - 1):
        if result.done:
            break
        result = env.step(champion.act(result.observation))
    return result.info["score"]


def rows_at(episode: list[dict[str, Any]], step: int, horizon: int) -> Iterator[dict[str, Any]]:
    return (r for r in grpo_rows([episode], horizon=horizon) if r["step"] == step)


@pytest.mark.parametrize("horizon", [1, 4, DEFAULT_HORIZON])
def test_reward_fn_equals_stepping_by_hand(champion, horizon: int) -> None:
    for row in rows_at(champion, 3, horizon):
        snapshot = json.loads(row["snapshot"])
        legal = restore(snapshot).observation()["agent_observations"][row["role"]]["legal_actions"]
        answers = [{"action_type": name, "payload": {k: v[-1] for k, v in fields.items() if isinstance(v, list)}
                    | {k: "free text" for k, v in fields.items() if not isinstance(v, list)}}
                   for name, fields in legal.items()]
        completions = [json.dumps(a) for a in answers]
        n = len(completions)
        rewards = reward_fn(completions, snapshot=[row["snapshot"]] * n, role=[row["role"]] * n,
                            horizon=[horizon] * n, prompts=[row["prompt"]] * n)
        assert rewards == [by_hand(snapshot, row["role"], a, horizon) for a in answers]
        assert all(0.0 <= r <= 1.0 for r in rewards)


def test_reward_fn_separates_actions_and_reads_conversational_completions(champion) -> None:
    row = next(r for r in rows_at(champion, 0, 1) if r["role"] == "product_manager")
    delegate = {"action_type": "delegate_task", "payload": {"task_id": "task_frontend", "to": "engineer"}}
    noop = {"action_type": "no_op", "payload": {}}
    as_messages = [[{"role": "assistant", "content": json.dumps(a)}] for a in (delegate, noop)]
    rewards = reward_fn(as_messages, snapshot=[row["snapshot"]] * 2, role=[row["role"]] * 2, horizon=[1, 1])
    assert rewards[0] > rewards[1]
    assert rewards == reward_fn([json.dumps(delegate), "```json\n" + json.dumps(noop) + "\n```"],
                                snapshot=[row["snapshot"]] * 2, role=[row["role"]] * 2, horizon=[1, 1])


@pytest.mark.parametrize("completion", [
    "",
    "I would delegate the frontend task.",
    '{"action_type": "approve_resource", "payload": {"amount": 5, "resource_type": "compute"}}',  # not legal for pm
    '{"action_type": "delegate_task", "payload": {"task_id": "task_nope", "to": "engineer"}}',  # not a choice
    '{"action_type": "delegate_task", "payload": {"task_id": "task_frontend"}}',
    '{"action_type": "no_op", "payload": {}, "extra": 1}',
    '["no_op"]',
])
def test_reward_fn_gives_invalid_answers_the_invalid_reward(champion, completion: str) -> None:
    row = next(r for r in rows_at(champion, 0, 1) if r["role"] == "product_manager")
    assert reward_fn([completion], snapshot=[row["snapshot"]], role=[row["role"]], horizon=[1]) == [INVALID_REWARD]


def test_reward_fn_needs_the_snapshot_and_role_columns_and_defaults_the_horizon(champion) -> None:
    row = next(grpo_rows([champion], horizon=1))
    answer = json.dumps({"action_type": "query_metrics", "payload": {}})
    with pytest.raises(ValueError, match="aaos grpo-data"):
        reward_fn([answer], snapshot=[row["snapshot"]])
    assert reward_fn([answer], snapshot=[row["snapshot"]], role=[row["role"]]) == reward_fn(
        [answer], snapshot=[row["snapshot"]], role=[row["role"]], horizon=[DEFAULT_HORIZON])


def test_reward_fn_scores_a_joint_answer_for_every_role(champion) -> None:
    row = next(grpo_rows([champion], "joint"))
    snapshot = json.loads(row["snapshot"])
    joint = OrgChampion().act(restore(snapshot).observation())
    reward = reward_fn([json.dumps(joint)], snapshot=[row["snapshot"]], role=[None], horizon=[1])
    assert reward == [by_hand(snapshot, None, joint, 1)]
    partial = {role: action for role, action in joint.items() if role != "oversight"}
    assert reward_fn([json.dumps(partial)], snapshot=[row["snapshot"]], role=[None], horizon=[1]) == [INVALID_REWARD]


def test_reward_fn_scores_a_compact_answer_by_its_calls_and_refuses_json_actions_in_compact_mode(champion) -> None:
    row = next(r for r in grpo_rows([champion], "compact") if r["step"] == 6)
    assert row["mode"] == "compact" and row["role"] is None
    snapshot = json.loads(row["snapshot"])
    observation = restore(snapshot).observation()
    joint = OrgChampion().act(observation)
    answer = answer_text(Decision(None, row["prompt"], "compact"), joint, observation, SPEC)
    played = parse_answer(SPEC, None, answer, observation, "compact")
    columns = {"snapshot": [row["snapshot"]] * 2, "role": [None] * 2, "mode": ["compact"] * 2, "horizon": [1] * 2}
    assert reward_fn([answer, json.dumps(joint)], **columns) == [by_hand(snapshot, None, played, 1), INVALID_REWARD]


def test_dataset_files_load_with_datasets_in_the_formats_trl_reads(tmp_path: Path, champion) -> None:
    datasets = pytest.importorskip("datasets", reason="datasets is in the optional [train] extra")
    episodes = tmp_path / "episodes.jsonl"
    episodes.write_text("".join(json.dumps(r) + "\n" for r in champion), encoding="utf-8")
    assert cli(["sft", str(episodes), "--out", str(tmp_path / "sft.jsonl")]) == 0
    assert cli(["grpo-data", str(episodes), "--out", str(tmp_path / "grpo.jsonl"), "--horizon", "3"]) == 0
    assert not list(tmp_path.glob("*.partial"))

    sft = datasets.load_dataset("json", data_files=str(tmp_path / "sft.jsonl"), split="train")
    assert sft.column_names == ["messages", "decision_chars", "role", "env", "task", "scenario", "seed", "step",
                                "score"]
    assert sft.to_list() == list(sft_rows([champion]))
    assert [m["role"] for m in sft[0]["messages"]] == ["system", "user", "assistant"]

    grpo = datasets.load_dataset("json", data_files=str(tmp_path / "grpo.jsonl"), split="train")
    assert grpo.column_names == ["prompt", "snapshot", "role", "mode", "horizon", "env", "task", "scenario", "seed",
                                 "step"]
    assert grpo.features["snapshot"].dtype == "string"
    assert grpo.to_list() == list(grpo_rows([champion], horizon=3))
    row = grpo[40]
    assert reward_fn(["{}"], **{k: [v] for k, v in row.items() if k != "prompt"}) == [INVALID_REWARD]

    trl_data = pytest.importorskip("trl.data_utils", reason="trl is in the optional [train] extra")
    assert trl_data.is_conversational(sft[0]) and trl_data.is_conversational({"prompt": row["prompt"]})


def test_the_group_filter_keeps_the_prompts_whose_completions_score_differently() -> None:
    """GRPO learns nothing from a group that all scores the same: the filter keeps a prompt whose sampled group holds
    the champion's answer and a wrong one, drops one whose group is all the wrong answer, stops at `wanted` and
    samples no more than `tries`."""
    episode = play(EpisodeMeta("inbox", "easy", "saas_helpdesk", 3), aaos.policies.make("heuristic", env="inbox"))
    champion_answer = {dumps(row["messages"][:-1]): row["messages"][-1]["content"]
                       for row in sft_rows([episode], "compact")}
    labelling = [row for row in grpo_rows([episode], "compact")
                 if champion_answer[dumps(row["prompt"])].startswith('["classify_email(')][:4]
    mixed, flat = labelling[:2], labelling[2:]

    def sample(prompt: list[dict[str, str]]) -> list[str]:
        right = champion_answer[dumps(prompt)]
        category = right.split(",")[1].split(")")[0]
        wrong = right.replace(category, "phishing" if category != "phishing" else "billing")
        return [right, wrong] if any(prompt == row["prompt"] for row in mixed) else [wrong, wrong]

    assert informative(flat + mixed, sample, wanted=5, tries=10) == Groups([2, 3], 4)
    assert informative(mixed + flat, sample, wanted=1, tries=10) == Groups([0], 1)
    assert informative(flat + mixed, sample, wanted=5, tries=2) == Groups([], 2)
