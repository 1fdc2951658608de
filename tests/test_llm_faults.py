"""LLM agents against the FAULT-INJECTING FAKE endpoint: every failure mode ends in a finished episode,
with every fallback counted, and the token goes nowhere but the Authorization header."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from fake_openai import Script, free_port, serve

import aaos
from aaos.agents.advisor import GuardedAdvisor, guardrail_breach
from aaos.agents.llm import LLMConfig, LLMPolicy, decodable_calls
from aaos.bench.report import gate, write_reports
from aaos.bench.runner import plan_jobs, run
from aaos.bench.stats import summarise
from aaos.core.policy import Action, Policy, action
from aaos.policies import PolicySpec, baseline

TOKEN = "hf_" + "q7Zt" * 8  # looks like a real token; must never be written anywhere


REASONS = {"timeout": "APITimeoutError", "server_error": "InternalServerError", "not_json": "not valid JSON",
           "wrong_schema": "InvalidAnswer", "empty": "InvalidAnswer"}
"""What CallStats.last_error names for each fault."""


def config(url: str, **overrides: Any) -> LLMConfig:
    return LLMConfig(**{"model": "fake", "base_url": url, "api_key": TOKEN, "timeout_s": 10.0, "max_retries": 1,
                        "backoff_s": 0.01, **overrides})


def play(policy: Policy, task: str = "org_simulation", seed: int = 0) -> tuple[list[dict[str, Any]], float]:
    env = aaos.make(task, scenario="product_launch_failure", seed=seed)
    observation = env.reset()
    policy.bind(env)
    results = []
    try:
        while True:
            result = env.step(policy.act(observation))
            observation = result.observation
            results.extend(result.info["action_results"].values())
            if result.done:
                return results, result.info["score"]
    finally:
        policy.close()


@pytest.mark.parametrize("mode", ["timeout", "server_error", "not_json", "wrong_schema", "empty"])
@pytest.mark.parametrize("agent_mode", ["per_role", "joint"])
def test_every_failure_falls_back_to_the_champion(mode: str, agent_mode: str) -> None:
    script = Script(modes=[mode])
    with serve(script) as url:
        timeout = 0.1 if mode == "timeout" else 10.0  # generous elsewhere: a loaded machine must not time out
        policy = LLMPolicy(aaos.spec("org"), config(url, mode=agent_mode, timeout_s=timeout, max_retries=0))
        results, score = play(policy)
    stats = policy.stats.to_dict()
    steps = len(results) // 6
    assert all(r["status"] != "rejected" for r in results)
    assert stats["decisions"] == {"primary": 0, "secondary": 0, "champion": 6 * steps}
    assert stats["fallback_rate"] == 1.0
    assert score >= 0.7  # the champion carried the episode
    assert stats["last_error"].startswith("fake: ") and REASONS[mode] in stats["last_error"], stats["last_error"]
    assert TOKEN not in stats["last_error"]
    if mode in ("timeout", "server_error"):
        assert stats["failed_calls"] >= steps
    else:
        assert stats["repairs"] >= steps  # invalid answers got their repair turn before falling back


@pytest.mark.parametrize("agent_mode", ["per_role", "compact"])
def test_with_the_noop_fallback_a_failed_role_does_nothing_and_is_still_counted(agent_mode: str) -> None:
    """What aaos train's evaluation uses, so that a model's score is its own: no champion to carry it."""
    with serve(Script(modes=["not_json"])) as url:
        policy = LLMPolicy(aaos.spec("org"), config(url, mode=agent_mode, max_retries=0, fallback="noop"))
        results, score = play(policy)
    stats = policy.stats.to_dict()
    assert {r["action_type"] for r in results} == {"no_op"}
    assert stats["decisions"] == {"primary": 0, "secondary": 0, "champion": len(results)}
    assert stats["fallback_rate"] == 1.0
    assert score == play(aaos.policies.make("noop"))[1]


def test_rate_limits_are_retried_with_backoff() -> None:
    script = Script(modes=["rate_limit", "rate_limit", "ok"])
    with serve(script) as url:
        policy = LLMPolicy(aaos.spec("org"), config(url, max_retries=2))
        env = aaos.make("org_simulation", seed=0)
        result = env.step(policy.act(env.reset()))
        policy.close()
    stats = policy.stats.to_dict()
    assert stats["http_retries"] == 2
    assert stats["decisions"]["primary"] == 6
    assert all(r["status"] == "applied" for r in result.info["action_results"].values())


def test_a_repaired_answer_counts_as_the_model_s() -> None:
    script = Script(modes=["not_json", "ok"])
    with serve(script) as url:
        policy = LLMPolicy(aaos.spec("org"), config(url, mode="joint"))
        env = aaos.make("org_simulation", seed=0)
        env.step(policy.act(env.reset()))
        policy.close()
    assert policy.stats.repairs == 1
    assert policy.stats.decisions == {"primary": 6, "secondary": 0, "champion": 0}
    assert policy.stats.last_error is None
    assert "That answer was invalid" in script.requests[1]["messages"][-1]["content"]


def test_secondary_model_catches_what_the_primary_drops() -> None:
    with serve(Script(modes=["server_error"])) as bad, serve(Script(modes=["ok"])) as good:
        policy = LLMPolicy(aaos.spec("org"), config(bad, max_retries=0), config(good))
        env = aaos.make("org_simulation", seed=0)
        env.step(policy.act(env.reset()))
        policy.close()
    assert policy.stats.decisions == {"primary": 0, "secondary": 6, "champion": 0}


def test_requests_carry_the_schema_of_the_legal_actions() -> None:
    script = Script(modes=["ok"])
    with serve(script) as url:
        policy = LLMPolicy(aaos.spec("org"), config(url, response_format="json_object"))
        env = aaos.make("org_simulation", seed=0)
        observation = env.reset()
        policy.act(observation)
        policy.close()
    by_role = {}
    for request in script.requests:
        assert request["response_format"]["type"] == "json_object"
        options = request["response_format"]["schema"]["anyOf"]
        role = request["messages"][1]["content"].split("Your view as ")[1].split(":")[0]
        by_role[role] = {o["properties"]["action_type"]["const"] for o in options}
    assert by_role == {role: set(view["legal_actions"]) for role, view in observation["agent_observations"].items()}


def test_a_token_the_endpoint_echoes_is_masked_in_the_last_error() -> None:
    with serve(Script(modes=["echo_token"])) as url:
        policy = LLMPolicy(aaos.spec("org"), config(url, max_retries=0))
        env = aaos.make("org_simulation", seed=0)
        env.step(policy.act(env.reset()))
        policy.close()
    stats = policy.stats.to_dict()
    assert stats["last_error_type"] == "AuthenticationError"
    assert "invalid credentials: Bearer ***" in stats["last_error"] and TOKEN not in stats["last_error"]


def test_token_is_never_logged_or_written(tmp_path: Path, caplog: pytest.LogCaptureFixture,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    caplog.set_level(logging.DEBUG)
    script = Script(modes=["ok", "not_json", "ok"])
    with serve(script) as url:
        spec = PolicySpec("llm:fake", "llm", config(url))
        records = run(plan_jobs(["llm:fake"], ["org_simulation"], ["product_launch_failure"], 1, ("train",)),
                      {"llm:fake": spec}, tmp_path / "results.jsonl", concurrency=2)
        write_reports(summarise(records), tmp_path, records)
        (tmp_path / "policies.json").write_text(json.dumps([spec.describe()]))
    assert all(h["authorization"] == f"Bearer {TOKEN}" for h in script.headers)  # it was used...
    written = "".join(p.read_text() for p in tmp_path.iterdir())
    captured = capsys.readouterr()
    for place in (written, captured.out, captured.err, caplog.text, repr(spec), repr(spec.model),
                  repr(LLMPolicy(aaos.spec("org"), spec.model))):
        assert TOKEN not in place  # ...and written nowhere
    assert records[0]["llm"]["calls"] > 0


def test_a_dead_model_s_benchmark_rows_are_unranked_and_never_promoted(tmp_path: Path) -> None:
    dead = config(f"http://127.0.0.1:{free_port()}/v1", max_retries=0)  # a closed port: every call fails
    specs = {"heuristic": baseline("heuristic"), "llm:dead": PolicySpec("llm:dead", "llm", dead),
             "guarded:dead": PolicySpec("guarded:dead", "guarded", dead)}
    jobs = plan_jobs(list(specs), ["org_simulation"], ["product_launch_failure"], 1, ("holdout",))
    records = {r["policy"]: r for r in run(jobs, specs, tmp_path / "results.jsonl", concurrency=3)}
    for name in ("llm:dead", "guarded:dead"):
        assert records[name]["error"] is None
        assert records[name]["score"] == records["heuristic"]["score"]  # the champion played every action
        assert records[name]["llm"]["decisions"] == {"primary": 0, "secondary": 0, "champion": 120}
    rows = summarise(records.values())
    unranked = {r["policy"]: r["unranked"] for r in rows}
    assert unranked["heuristic"] is None
    for name in ("llm:dead", "guarded:dead"):
        assert unranked[name] == ("120 of 120 actions (100 %) were decided by fallbacks, not the model "
                                  "(the limit is 50 %)")
        verdict = gate(rows, name)  # level with the champion: the unranked row is the only reason not to promote
        assert verdict.verdict == "NO_PROMOTE" and verdict.reasons == [f"{name} is unranked: {unranked[name]}"]
    ranked = json.loads(write_reports(rows, tmp_path, records.values())["json"].read_text())
    assert [(r["policy"], r["unranked"] is None) for r in ranked] == [
        ("heuristic", True), ("guarded:dead", False), ("llm:dead", False)]


class Suggest(Policy):
    """An advisor that always suggests one fixed action for one role, and nothing for the others."""

    def __init__(self, role: str, suggestion: Action) -> None:
        self.role, self.suggestion = role, suggestion

    def act(self, observation: dict[str, Any]) -> dict[str, Action]:
        return {self.role: self.suggestion}

    def act_role(self, role: str, view: dict[str, Any]) -> Action:
        return self.suggestion


def test_guardrails_block_unsafe_advice() -> None:
    env = aaos.make("full_episode", scenario="resource_conflict", seed=0)
    observation = env.reset()
    view = dict(observation["agent_observations"]["operations"])
    view.update(step=5, last_query_step=None, policy={"max_resource_approval": 20},
                legal_actions={"approve_resource": {"resource_type": ["compute"], "amount": [5, 10, 25]},
                               "report_anomaly": {"description": "text", "severity": ["high"]}, "no_op": {}})
    approve = action("approve_resource", amount=25, resource_type="compute")
    assert guardrail_breach("operations", approve, view, env.spec) == "above_policy_limit"
    small = action("approve_resource", amount=10, resource_type="compute")
    assert guardrail_breach("operations", small, view, env.spec) == "no_risk_check"
    assert guardrail_breach("operations", small, {**view, "last_query_step": 4}, env.spec) is None
    assert guardrail_breach("operations", action("delegate_task", task_id="x", to="engineer"), view,
                            env.spec) == "illegal"
    report = action("report_anomaly", description="nothing", severity="high")
    assert guardrail_breach("operations", report, {**view, "signals": []}, env.spec) == "no_signal"


def test_the_org_guardrail_refuses_delegations_that_change_nothing_or_go_to_the_wrong_role() -> None:
    env = aaos.make("org_simulation", seed=3, env="org")
    observation = env.reset()
    view = observation["agent_observations"]["product_manager"]
    task = view["visible_tasks"][0]
    right = action("delegate_task", task_id=task["id"], to=task["required_role"])
    wrong = next(role for role in env.spec.roles if role != task["required_role"])
    assert guardrail_breach("product_manager", right, view, env.spec) is None
    assert guardrail_breach("product_manager", action("delegate_task", task_id=task["id"], to=wrong), view,
                            env.spec) == "wrong_role"
    owned = {**view, "visible_tasks": [{**task, "owner": task["required_role"], "status": "in_progress"}]}
    assert guardrail_breach("product_manager", right, owned, env.spec) == "already_owned"
    # safe decoding leaves the model only the right delegation of each task
    safe = decodable_calls(env.spec, "product_manager", view, "safe")
    delegations = {(a["payload"]["task_id"], a["payload"]["to"]) for a in safe.values()
                   if a["action_type"] == "delegate_task"}
    assert delegations == {(t["id"], t["required_role"]) for t in view["visible_tasks"] if t["owner"] is None}


@pytest.mark.parametrize("env_name", aaos.env_ids())
def test_the_champion_never_breaches_its_guardrail(env_name: str) -> None:
    """A guardrail refuses what is unwise: the champion, which safe decoding learns from, never does it."""
    tasks = [str(t["id"]) for t in aaos.list_tasks(env=env_name)]
    scenarios = [s["id"] for s in aaos.list_scenarios(env=env_name)][:2]
    for task in tasks:
        for scenario in scenarios:
            env = aaos.make(task, scenario=scenario, seed=1, env=env_name)
            observation, done = env.reset(), False
            champion = aaos.policies.make("heuristic", seed=1, env=env_name)
            champion.bind(env)
            while not done:
                joint = champion.act(observation)
                for role, chosen in joint.items():
                    assert guardrail_breach(role, chosen, observation["agent_observations"][role], env.spec) is None
                result = env.step(joint)
                observation, done = result.observation, result.done


def test_guarded_advisor_takes_only_advice_that_scores_better() -> None:
    # Advice that wastes the product manager's turn (no_op instead of delegating) never beats the champion.
    lazy, _ = play(GuardedAdvisor(Suggest("product_manager", action("no_op"))), task="full_episode")
    champion, champion_score = play(aaos.policies.make("heuristic"), task="full_episode")
    assert lazy == champion
    # Advice to check metrics earlier than the champion would is accepted when the lookahead favours it.
    advisor = GuardedAdvisor(Suggest("data_analyst", action("query_metrics", metric="error_rate")))
    _, score = play(advisor, task="full_episode")
    assert advisor.verdicts["accepted"] + advisor.verdicts["not_better"] + advisor.verdicts["same"] > 0
    assert advisor.verdicts["blocked_illegal"] == 0  # an aimed query at one of its own metrics is legal advice
    assert score >= champion_score - 0.05
