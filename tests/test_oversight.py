"""Each oversight rule fires when it should and not otherwise, driven through real env steps."""

from __future__ import annotations

from typing import Any

import pytest
from helpers import act

import aaos
from aaos.core.reward import composite
from aaos.envs.org.oversight import AUDIT_DISCOUNT, IGNORED_RISK_STEPS, REPEAT_OFFENDER_AT, RISK_CHECK_WINDOW, RULES
from aaos.envs.org.spec import REWARD_WEIGHTS

SCENARIO = "product_launch_failure"
EVENT_KEYS = {"step", "role", "rule", "severity", "penalty"}


def rules(result: Any, role: str | None = None) -> list[str]:
    return [e["rule"] for e in result.info["oversight_events"] if role is None or e["role"] == role]


def noop_until(env: Any, step: int, clean: bool = True) -> None:
    """No-op every role until the world reaches `step`; with clean=True, no violation may happen meanwhile."""
    while env.state()["step"] < step:
        result = env.step({})
        assert not (clean and result.info["oversight_events"]), result.info["oversight_events"]


def env_with_pending_request(seed: int = 0) -> Any:
    """Step 2 of full_episode: the engineer owns task_backend (needs compute) and has a pending compute request;
    nobody has queried metrics yet and no violation has happened."""
    env = aaos.make("full_episode", scenario=SCENARIO, seed=seed)
    env.reset()
    r = env.step({"product_manager": act("delegate_task", task_id="task_backend", to="engineer")})
    assert r.info["action_results"]["product_manager"]["status"] == "applied"
    r = env.step({"engineer": act("request_resource", amount=20, resource_type="compute")})
    assert r.info["action_results"]["engineer"]["status"] == "applied"
    state = env.state()
    assert state["step"] == 2
    assert [q["status"] for q in state["requests"]] == ["pending"]
    assert state["last_query"] == {} and state["violations"] == []
    return env


def check_event_shape(event: dict[str, Any]) -> None:
    assert set(event) >= EVENT_KEYS
    rule = RULES[event["rule"]]
    assert event["severity"] == rule.severity
    assert event["penalty"] == rule.penalty
    assert event["role"] in aaos.spec().roles


# --- approve_without_risk_check ---------------------------------------------------------------------


def test_approve_without_a_risk_check_fires() -> None:
    env = env_with_pending_request()
    r = env.step({"operations": act("approve_resource", amount=20, resource_type="compute")})
    assert r.info["action_results"]["operations"]["status"] == "applied"
    events = r.info["oversight_events"]
    assert [e["rule"] for e in events] == ["approve_without_risk_check"]
    check_event_shape(events[0])
    assert events[0]["role"] == "operations"
    assert events[0]["step"] == 2
    assert events[0]["severity"] == "medium"
    assert r.info["reward_breakdown"]["penalty"] == pytest.approx(0.04)


@pytest.mark.parametrize("checker", ["risk_compliance", "operations"])
def test_approve_after_a_check_in_the_same_step_does_not_fire(checker: str) -> None:
    env = env_with_pending_request()
    if checker == "operations":  # the approver itself checked on the previous step
        env.step({"operations": act("query_metrics", metric="error_rate")})
        r = env.step({"operations": act("approve_resource", amount=20, resource_type="compute")})
    else:  # risk_compliance acts before operations within a step
        r = env.step({"risk_compliance": act("query_metrics", metric="error_rate"),
                      "operations": act("approve_resource", amount=20, resource_type="compute")})
    assert r.info["action_results"]["operations"]["status"] == "applied"
    assert "approve_without_risk_check" not in rules(r)


def test_risk_check_window_boundary() -> None:
    env = env_with_pending_request()
    env.step({"operations": act("query_metrics", metric="error_rate")})  # queried at step 2
    noop_until(env, 2 + RISK_CHECK_WINDOW)
    late = env.clone()
    r = env.step({"operations": act("approve_resource", amount=20, resource_type="compute")})
    assert "approve_without_risk_check" not in rules(r, "operations")  # exactly RISK_CHECK_WINDOW steps later
    late.step({})
    r = late.step({"operations": act("approve_resource", amount=20, resource_type="compute")})
    assert r.info["action_results"]["operations"]["status"] == "applied"
    assert "approve_without_risk_check" in rules(r, "operations")  # one step too late


def test_a_check_by_an_unrelated_role_does_not_count() -> None:
    env = env_with_pending_request()
    r = env.step({"engineer": act("query_metrics", metric="error_rate"),
                  "data_analyst": act("query_metrics", metric="error_rate"),
                  "operations": act("approve_resource", amount=20, resource_type="compute")})
    assert "approve_without_risk_check" in rules(r, "operations")


# --- policy_violation -------------------------------------------------------------------------------


def test_approve_above_the_policy_limit_fires() -> None:
    env = env_with_pending_request()
    limit = env.state()["policy"]["max_resource_approval"]
    assert env.state()["resources"]["compute"] > limit
    r = env.step({"risk_compliance": act("query_metrics", metric="error_rate"),
                  "operations": act("approve_resource", amount=limit + 5, resource_type="compute")})
    assert r.info["action_results"]["operations"]["status"] == "applied"
    events = r.info["oversight_events"]
    assert [e["rule"] for e in events] == ["policy_violation"]
    check_event_shape(events[0])
    assert (events[0]["role"], events[0]["step"], events[0]["severity"]) == ("operations", 2, "high")


def test_approve_at_the_policy_limit_does_not_fire() -> None:
    env = env_with_pending_request()
    limit = env.state()["policy"]["max_resource_approval"]
    r = env.step({"risk_compliance": act("query_metrics", metric="error_rate"),
                  "operations": act("approve_resource", amount=limit, resource_type="compute")})
    assert r.info["action_results"]["operations"]["status"] == "applied"
    assert r.info["oversight_events"] == []
    assert r.info["reward_breakdown"]["penalty"] == 0.0


def test_policy_limit_follows_a_policy_change_event() -> None:
    """After evt_launch_gate fires, the new (lower) limit is the one enforced."""
    env = env_with_pending_request()
    state = env.state()
    gate = next(e for e in state["events"] if e["id"] == "evt_launch_gate")
    new_limit = gate["definition"]["policy"]["max_resource_approval"]
    noop_until(env, gate["definition"]["step"], clean=False)
    assert env.state()["policy"]["max_resource_approval"] == new_limit
    r = env.step({"risk_compliance": act("query_metrics", metric="error_rate"),
                  "operations": act("approve_resource", amount=new_limit + 5, resource_type="compute")})
    assert "policy_violation" in rules(r, "operations")


# --- critical_risk_ignored --------------------------------------------------------------------------


def detected_critical_risk() -> tuple[Any, str, int]:
    """An env where the engineer has just detected the critical risk_scaling (at step s); returns (env, id, s)."""
    env = aaos.make("full_episode", scenario=SCENARIO, seed=0)
    env.reset()
    risk = next(r for r in env.state()["risks"] if r["id"] == "risk_scaling")
    assert risk["definition"]["severity"] == "critical"
    s = risk["definition"]["noticeable_from"]
    noop_until(env, s)
    r = env.step({"engineer": act("query_metrics", metric="latency")})
    assert "risk_scaling" in r.info["action_results"]["engineer"]["message"]
    risk = next(r for r in env.state()["risks"] if r["id"] == "risk_scaling")
    assert (risk["status"], risk["detected_step"]) == ("detected", s)
    assert risk["definition"]["escalates_at"] > s + IGNORED_RISK_STEPS + 1
    return env, "risk_scaling", s


def test_critical_risk_ignored_fires_once_charged_to_risk_compliance() -> None:
    env, _, s = detected_critical_risk()
    fired = []
    for _ in range(20):
        r = env.step({})
        fired += [e for e in r.info["oversight_events"] if e["rule"] == "critical_risk_ignored"]
        if r.info["step"] < s + IGNORED_RISK_STEPS:
            assert not fired
    assert len(fired) == 1
    event = fired[0]
    check_event_shape(event)
    assert (event["role"], event["step"], event["severity"]) == ("risk_compliance", s + IGNORED_RISK_STEPS, "high")


def test_critical_risk_flagged_in_time_does_not_fire() -> None:
    env, risk_id, s = detected_critical_risk()
    noop_until(env, s + IGNORED_RISK_STEPS - 1)  # the last step on which flagging is still in time
    r = env.step({"risk_compliance": act("raise_risk_flag", risk_id=risk_id, description="saturates at launch")})
    assert r.info["action_results"]["risk_compliance"]["status"] == "applied"
    for _ in range(20):
        assert "critical_risk_ignored" not in rules(r)
        r = env.step({})
    assert all(v["rule"] != "critical_risk_ignored" for v in env.state()["violations"])


def test_flagging_one_step_too_late_is_already_charged() -> None:
    env, risk_id, s = detected_critical_risk()
    noop_until(env, s + IGNORED_RISK_STEPS, clean=False)
    assert [v["rule"] for v in env.state()["violations"]] == ["critical_risk_ignored"]
    r = env.step({"risk_compliance": act("raise_risk_flag", risk_id=risk_id, description="late")})
    assert r.info["action_results"]["risk_compliance"]["status"] == "applied"
    assert [v["rule"] for v in env.state()["violations"]] == ["critical_risk_ignored"]  # not undone, not repeated


def test_ignored_medium_risk_does_not_fire() -> None:
    env = aaos.make("full_episode", scenario=SCENARIO, seed=0)
    env.reset()
    cache = next(r for r in env.state()["risks"] if r["id"] == "risk_cache")
    assert cache["definition"]["severity"] != "critical"
    noop_until(env, cache["definition"]["noticeable_from"])
    r = env.step({"operations": act("query_metrics", metric="error_rate")})
    assert "risk_cache" in r.info["action_results"]["operations"]["message"]
    assert next(r for r in env.state()["risks"] if r["id"] == "risk_cache")["status"] == "detected"
    for _ in range(10):
        r = env.step({})
        assert "critical_risk_ignored" not in rules(r)


# --- unauthorized_action ----------------------------------------------------------------------------

FORBIDDEN = [
    ("engineer", act("approve_resource", amount=5, resource_type="compute")),
    ("product_manager", act("raise_risk_flag", risk_id="risk_scaling", description="")),
    ("oversight", act("delegate_task", task_id="task_frontend", to="engineer")),
    ("data_analyst", act("update_policy", policy="limit 10")),
    ("engineer", act("audit_agent", target_agent="operations")),
    ("risk_compliance", act("propose_plan", plan="a plan")),
    ("oversight", act("accept_plan", plan_id="plan_0_engineer")),
]


@pytest.mark.parametrize(("role", "action"), FORBIDDEN)
def test_unauthorized_action_fires(role: str, action: dict[str, Any], launch_env: Any) -> None:
    r = launch_env.step({role: action})
    record = r.info["action_results"][role]
    assert (record["status"], record["reason"]) == ("rejected", "forbidden")
    assert role in record["message"] and action["action_type"] in record["message"]
    events = r.info["oversight_events"]
    assert [(e["rule"], e["role"], e["step"]) for e in events] == [("unauthorized_action", role, 0)]
    check_event_shape(events[0])


PERMITTED = [
    ("operations", act("approve_resource", amount=5, resource_type="compute")),  # rejected: nothing pending
    ("risk_compliance", act("raise_risk_flag", risk_id="risk_scaling", description="")),  # rejected: hidden
    ("product_manager", act("delegate_task", task_id="task_frontend", to="engineer")),
    ("oversight", act("update_policy", policy="limit 10")),
    ("oversight", act("audit_agent", target_agent="operations")),
    ("engineer", act("propose_plan", plan="a plan")),
]


@pytest.mark.parametrize(("role", "action"), PERMITTED)
def test_permitted_action_does_not_fire(role: str, action: dict[str, Any], launch_env: Any) -> None:
    r = launch_env.step({role: action})
    assert r.info["action_results"][role]["reason"] != "forbidden"
    assert r.info["oversight_events"] == []


@pytest.mark.parametrize("action", [
    act("launch_rockets"),
    {"action_type": "approve_resource"},  # permitted for operations, but the payload is missing
    "approve everything",
    {"action_type": "query_metrics", "payload": {}, "extra": 1},
])
def test_malformed_actions_are_not_unauthorized(action: Any, launch_env: Any) -> None:
    r = launch_env.step({"operations": action})
    assert r.info["action_results"]["operations"]["reason"] == "malformed"
    assert r.info["oversight_events"] == []


def test_forbidden_action_with_a_bad_payload_is_still_unauthorized(launch_env: Any) -> None:
    r = launch_env.step({"engineer": {"action_type": "approve_resource", "payload": {"amount": "lots"}}})
    assert r.info["action_results"]["engineer"]["reason"] == "forbidden"
    assert rules(r) == ["unauthorized_action"]


# --- repeat_offender --------------------------------------------------------------------------------


def test_third_violation_of_a_role_is_a_repeat_offence(launch_env: Any) -> None:
    forbidden = {"engineer": act("approve_resource", amount=5, resource_type="compute")}
    per_step = [rules(launch_env.step(forbidden), "engineer") for _ in range(REPEAT_OFFENDER_AT + 1)]
    assert per_step == [
        ["unauthorized_action"],
        ["unauthorized_action"],
        ["unauthorized_action", "repeat_offender"],
        ["unauthorized_action", "repeat_offender"],
    ]
    repeat = [v for v in launch_env.state()["violations"] if v["rule"] == "repeat_offender"]
    assert [(v["role"], v["step"], v["severity"], v["penalty"]) for v in repeat] == [
        ("engineer", 2, "critical", RULES["repeat_offender"].penalty),
        ("engineer", 3, "critical", RULES["repeat_offender"].penalty),
    ]


def test_repeat_offence_counts_violations_per_role(launch_env: Any) -> None:
    for role in ("engineer", "product_manager", "oversight", "data_analyst"):
        forbidden = "approve_resource" if role != "oversight" else "propose_plan"
        r = launch_env.step({role: act(forbidden)})
        assert rules(r) == ["unauthorized_action"]
    assert all(v["rule"] != "repeat_offender" for v in launch_env.state()["violations"])


def test_repeat_offence_counts_different_rules_together() -> None:
    env = env_with_pending_request()
    r = env.step({"operations": act("approve_resource", amount=30, resource_type="compute")})
    assert rules(r) == ["approve_without_risk_check", "policy_violation"]
    r = env.step({"operations": act("delegate_task", task_id="task_nope", to="engineer")})  # rejected, not a violation
    assert rules(r) == []
    r = env.step({"operations": act("audit_agent", target_agent="engineer")})  # forbidden for operations
    assert rules(r) == ["unauthorized_action", "repeat_offender"]
    assert {e["role"] for e in r.info["oversight_events"]} == {"operations"}


# --- penalties and audits ---------------------------------------------------------------------------


def test_a_violation_lowers_the_score_by_its_penalty() -> None:
    env = env_with_pending_request()
    clean = env.clone()
    dirty = env.step({"operations": act("approve_resource", amount=20, resource_type="compute")})
    ok = clean.step({"risk_compliance": act("query_metrics", metric="error_rate"),
                     "operations": act("approve_resource", amount=20, resource_type="compute")})
    assert rules(dirty) == ["approve_without_risk_check"] and rules(ok) == []
    assert dirty.info["reward_breakdown"]["components"] == ok.info["reward_breakdown"]["components"]
    penalty = RULES["approve_without_risk_check"].penalty
    assert dirty.info["reward_breakdown"]["penalty"] == pytest.approx(penalty)
    assert ok.info["reward_breakdown"]["penalty"] == 0.0
    assert ok.info["score"] > 0
    assert dirty.info["score"] == pytest.approx(ok.info["score"] / (1 + penalty))
    assert dirty.reward < ok.reward
    assert env.state()["score"] == dirty.info["score"]


def test_penalties_accumulate_but_the_score_never_goes_below_zero(launch_env: Any) -> None:
    """Each violation shrinks the score by a share (score = base / (1 + P)): never below zero, and falling scores
    are paid as negative rewards."""
    launch_env.step({"product_manager": act("delegate_task", task_id="task_frontend", to="engineer")})
    forbidden = {role: act("approve_resource", amount=5, resource_type="compute")
                 for role in ("product_manager", "data_analyst", "risk_compliance")}
    scores = []
    for _ in range(8):
        r = launch_env.step(forbidden)
        scores.append(r.info["score"])
        assert r.info["score"] >= 0.0
        penalty = r.info["reward_breakdown"]["penalty"]
        assert r.info["score"] == pytest.approx(composite(r.info["reward_breakdown"]["components"], REWARD_WEIGHTS,
                                                          0.0) / (1 + penalty))
    assert penalty > 1.0
    assert 0.0 < scores[-1] < scores[0]
    assert r.info["reward_breakdown"]["increment"] < 0


@pytest.mark.parametrize("auditor", ["oversight", "risk_compliance"])
def test_audit_halves_the_penalty_of_the_audited_role(auditor: str) -> None:
    env = env_with_pending_request()
    env.step({"operations": act("approve_resource", amount=20, resource_type="compute"),
              "engineer": act("approve_resource", amount=5, resource_type="compute")})  # forbidden: engineer
    penalty_ops = RULES["approve_without_risk_check"].penalty
    penalty_eng = RULES["unauthorized_action"].penalty
    assert env.state()["penalty"] == pytest.approx(penalty_ops + penalty_eng)

    unaudited = env.clone()
    audited = env.step({auditor: act("audit_agent", target_agent="operations")})
    plain = unaudited.step({})
    assert audited.info["action_results"][auditor]["status"] == "applied"
    assert audited.info["reward_breakdown"]["penalty"] == pytest.approx(penalty_ops * AUDIT_DISCOUNT + penalty_eng)
    assert plain.info["reward_breakdown"]["penalty"] == pytest.approx(penalty_ops + penalty_eng)
    assert audited.info["score"] > plain.info["score"]
    for result in (audited, plain):
        bd = result.info["reward_breakdown"]
        assert result.info["score"] == pytest.approx(composite(bd["components"], REWARD_WEIGHTS, bd["penalty"]))
    flags = {(v["role"], v["rule"]): v["audited"] for v in env.state()["violations"]}
    assert flags == {("operations", "approve_without_risk_check"): True, ("engineer", "unauthorized_action"): False}

    again = env.step({auditor: act("audit_agent", target_agent="operations")})
    assert again.info["action_results"][auditor]["status"] == "no_effect"
    assert again.info["reward_breakdown"]["penalty"] == pytest.approx(penalty_ops * AUDIT_DISCOUNT + penalty_eng)


def test_audit_of_a_clean_role_changes_nothing(launch_env: Any) -> None:
    r = launch_env.step({"oversight": act("audit_agent", target_agent="engineer")})
    assert r.info["action_results"]["oversight"]["status"] == "no_effect"
    assert r.info["reward_breakdown"]["penalty"] == 0.0


def test_oversight_log_is_visible_only_to_oversight_roles(launch_env: Any) -> None:
    r = launch_env.step({"engineer": act("approve_resource", amount=5, resource_type="compute")})
    for role, view in r.observation["agent_observations"].items():
        if role in ("oversight", "risk_compliance"):
            assert [v["rule"] for v in view["oversight_log"]] == ["unauthorized_action"]
            assert set(view["oversight_log"][0]) >= EVENT_KEYS
        else:
            assert view["oversight_log"] == "hidden"
