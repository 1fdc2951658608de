"""Each task's length, and every action's observable effect or clear rejection."""

from __future__ import annotations

import re
from typing import Any

import pytest
from helpers import MAX_STEPS, TASKS, act, play, scenario_ids

import aaos
from aaos.envs.org.dynamics import WRONG_ROLE_QUALITY

# --- episode length -------------------------------------------------------------------------------------


@pytest.mark.parametrize("task", TASKS)
@pytest.mark.parametrize("scenario", ["product_launch_failure", "resource_conflict"])
def test_noop_runs_exactly_to_max_steps(task: str, scenario: str) -> None:
    episode = play(task, scenario, 0, "noop")
    assert episode.steps == MAX_STEPS[task]
    assert episode.dones == [False] * (MAX_STEPS[task] - 1) + [True]
    assert episode.final_state["step"] == MAX_STEPS[task] and episode.final_state["done"] is True


@pytest.mark.parametrize("task", TASKS)
def test_max_steps_match_the_task_list(task: str) -> None:
    listed = {t["id"]: t["max_steps"] for t in aaos.list_tasks()}
    assert listed[task] == MAX_STEPS[task]
    assert aaos.make(task).state()["max_steps"] == MAX_STEPS[task]


@pytest.mark.parametrize("task", TASKS)
@pytest.mark.parametrize("scenario", scenario_ids())
def test_every_task_runs_exactly_max_steps_even_for_the_champion(task: str, scenario: str) -> None:
    """An episode's length is never the agents' to choose: finishing the work early does not end it, and
    keeping something open does not keep it alive."""
    episode = play(task, scenario, 1, "heuristic")
    assert episode.steps == MAX_STEPS[task]
    assert not any(episode.dones[:-1]) and episode.dones[-1]
    assert all(w["status"] in ("in_progress", "completed") for w in episode.final_state["work"]
               if w["status"] != "upcoming" and w["arrives"] < MAX_STEPS[task] - 1), "the champion delegates all"


def test_step_after_done_raises_and_reset_recovers() -> None:
    env = aaos.make("org_simulation", scenario="product_launch_failure", seed=0)
    env.reset()
    for _ in range(MAX_STEPS["org_simulation"]):
        result = env.step({})
    assert result.done
    with pytest.raises(aaos.EpisodeDone):
        env.step({})
    with pytest.raises(aaos.EpisodeDone):
        env.step({"engineer": act("query_metrics", metric="error_rate")})
    assert env.state()["step"] == MAX_STEPS["org_simulation"]  # the refused step changed nothing
    obs = env.reset()
    assert obs["step_count"] == 0 and not obs["done"]
    assert env.step({}).info["step"] == 1


# --- the 13 actions ---------------------------------------------------------------------------------


def outcome(result: Any, role: str) -> tuple[str, str | None, str]:
    r = result.info["action_results"][role]
    return r["status"], r["reason"], r["message"]


def view(result: Any, role: str) -> dict[str, Any]:
    return result.observation["agent_observations"][role]


def test_all_thirteen_actions_are_declared() -> None:
    names = [a["name"] for a in aaos.spec().to_dict()["actions"]]
    assert sorted(names) == sorted([
        "propose_plan", "accept_plan", "reject_plan", "delegate_task", "request_resource", "approve_resource",
        "query_metrics", "raise_risk_flag", "report_anomaly", "resolve_incident", "audit_agent", "update_policy",
        "no_op",
    ])


def test_propose_accept_and_reject_plans(launch_env: Any) -> None:
    r = launch_env.step({"engineer": act("propose_plan", plan="ship backend first"),
                         "operations": act("propose_plan", plan="freeze deploys")})
    assert outcome(r, "engineer")[0] == "applied"
    plans = {p["id"]: p for p in view(r, "product_manager")["plans"]}
    assert plans["plan_0_engineer"] == {"id": "plan_0_engineer", "role": "engineer", "plan": "ship backend first",
                                        "status": "open", "decided_by": None}
    assert "plan_0_engineer" in launch_env.legal_actions("product_manager")["accept_plan"]["plan_id"]
    assert "plan_0_engineer" not in launch_env.legal_actions("engineer")["accept_plan"]["plan_id"]

    r = launch_env.step({"engineer": act("propose_plan", plan="another plan")})
    status, _, message = outcome(r, "engineer")
    assert status == "no_effect" and "plan_0_engineer" in message

    r = launch_env.step({"engineer": act("accept_plan", plan_id="plan_0_engineer"),
                         "data_analyst": act("accept_plan", plan_id="plan_0_operations"),
                         "product_manager": act("reject_plan", plan_id="plan_9_nobody")})
    assert outcome(r, "engineer")[:2] == ("rejected", "precondition")
    assert "own plan" in outcome(r, "engineer")[2]
    assert outcome(r, "data_analyst")[0] == "applied"
    assert outcome(r, "product_manager")[:2] == ("rejected", "unknown_id")
    assert "plan_9_nobody" in outcome(r, "product_manager")[2]

    r = launch_env.step({"product_manager": act("reject_plan", plan_id="plan_0_engineer"),
                         "risk_compliance": act("reject_plan", plan_id="plan_0_operations")})
    assert outcome(r, "product_manager")[0] == "applied"
    assert outcome(r, "risk_compliance")[0] == "no_effect"  # already accepted by the data analyst
    # a decided plan leaves the open list for the decided one, with its verdict and who gave it
    assert view(r, "oversight")["plans"] == []
    assert view(r, "oversight")["decided_plans"] == {
        "plan_0_engineer": {"status": "rejected", "decided_by": "product_manager"},
        "plan_0_operations": {"status": "accepted", "decided_by": "data_analyst"}}


def test_delegate_task(launch_env: Any) -> None:
    r = launch_env.step({"product_manager": act("delegate_task", task_id="task_frontend", to="engineer"),
                         "operations": act("delegate_task", task_id="task_launch_plan", to="engineer"),
                         "engineer": act("delegate_task", task_id="task_does_not_exist", to="engineer")})
    assert outcome(r, "product_manager") == ("applied", None, "delegated task_frontend to engineer")
    assert outcome(r, "operations")[0] == "applied"
    assert "required role is product_manager" in outcome(r, "operations")[2]
    assert outcome(r, "engineer")[:2] == ("rejected", "unknown_id")
    tasks = {t["id"]: t for t in view(r, "engineer")["visible_tasks"]}
    assert (tasks["task_frontend"]["status"], tasks["task_frontend"]["owner"]) == ("in_progress", "engineer")
    assert tasks["task_launch_plan"]["owner"] == "engineer"  # engineers see tasks they own

    # a task that has not arrived yet is indistinguishable from one that does not exist
    upcoming = next(w for w in launch_env.state()["work"] if w["status"] == "upcoming")
    r = launch_env.step({"product_manager": act("delegate_task", task_id=upcoming["id"], to="engineer"),
                         "engineer": act("delegate_task", task_id="task_frontend", to="engineer")})
    status, reason, message = outcome(r, "product_manager")
    assert (status, reason) == ("rejected", "unknown_id")
    assert outcome(r, "engineer")[0] == "no_effect"  # already owned by the engineer
    r = launch_env.step({"product_manager": act("delegate_task", task_id="task_zzz", to="engineer")})
    assert outcome(r, "product_manager")[:2] == ("rejected", "unknown_id")
    assert message.replace(upcoming["id"], "ID") == outcome(r, "product_manager")[2].replace("task_zzz", "ID")

    while next(w for w in launch_env.state()["work"] if w["id"] == "task_frontend")["status"] != "completed":
        launch_env.step({})
    r = launch_env.step({"product_manager": act("delegate_task", task_id="task_frontend", to="operations")})
    assert outcome(r, "product_manager")[:2] == ("rejected", "precondition")
    assert "completed" in outcome(r, "product_manager")[2]

    while next(w for w in launch_env.state()["work"] if w["id"] == "task_launch_plan")["status"] != "completed":
        r = launch_env.step({})
    # a completed task leaves the open list for the completed one, with the quality delivered, seen by the same
    # roles: its owner and those that see all work (the launch plan was delivered by an engineer, not its
    # required product manager: half quality)
    for role in ("product_manager", "engineer", "operations", "oversight"):
        seen = view(r, role)
        assert seen["completed_tasks"] == {"task_frontend": 1.0, "task_launch_plan": WRONG_ROLE_QUALITY}, role
        assert not {"task_frontend", "task_launch_plan"} & {t["id"] for t in seen["visible_tasks"]}, role
        assert all(t["status"] != "completed" for t in seen["visible_tasks"]), role
    assert view(r, "data_analyst")["completed_tasks"] == {}


def test_request_and_approve_resource(launch_env: Any) -> None:
    r = launch_env.step({"engineer": act("request_resource", amount=20, resource_type="compute"),
                         "operations": act("approve_resource", amount=10, resource_type="compute")})
    assert outcome(r, "engineer")[0] == "no_effect"  # no task of the engineer waits for compute
    assert outcome(r, "operations")[:2] == ("rejected", "precondition")
    assert "no pending compute request" in outcome(r, "operations")[2]

    launch_env.step({"product_manager": act("delegate_task", task_id="task_backend", to="engineer")})
    need = next(w for w in launch_env.state()["work"] if w["id"] == "task_backend")["needs"]["compute"]
    r = launch_env.step({"engineer": act("request_resource", amount=need, resource_type="compute")})
    assert outcome(r, "engineer")[0] == "applied"
    pending = view(r, "operations")["pending_requests"]
    assert [(p["role"], p["resource_type"], p["amount"]) for p in pending] == [("engineer", "compute", need)]
    assert view(r, "product_manager")["pending_requests"] == []
    r = launch_env.step({"engineer": act("request_resource", amount=need, resource_type="compute")})
    assert outcome(r, "engineer")[0] == "no_effect" and "still pending" in outcome(r, "engineer")[2]

    pool = launch_env.state()["resources"]["compute"]
    r = launch_env.step({"risk_compliance": act("query_metrics", metric="error_rate"),
                         "operations": act("approve_resource", amount=pool + 1, resource_type="compute")})
    assert outcome(r, "operations")[:2] == ("rejected", "precondition")
    assert f"only {pool} compute" in outcome(r, "operations")[2]
    r = launch_env.step({"risk_compliance": act("query_metrics", metric="error_rate"),
                         "operations": act("approve_resource", amount=need, resource_type="compute")})
    assert outcome(r, "operations")[0] == "applied"
    assert r.observation["resources"]["compute"] == pool - need
    assert view(r, "operations")["pending_requests"] == []
    backend = next(t for t in view(r, "engineer")["visible_tasks"] if t["id"] == "task_backend")
    assert backend["blocked_on"] == {}


def test_query_metrics_and_raise_risk_flag(launch_env: Any) -> None:
    state = launch_env.state()
    scaling = next(r for r in state["risks"] if r["id"] == "risk_scaling")["definition"]

    # flagging a hidden risk: rejected, counted as a false flag, and no hint that it exists
    r = launch_env.step({"risk_compliance": act("raise_risk_flag", risk_id="risk_scaling", description=""),
                         "operations": act("raise_risk_flag", risk_id="risk_unicorn", description="")})
    hidden_msg, unknown_msg = outcome(r, "risk_compliance")[2], outcome(r, "operations")[2]
    assert outcome(r, "risk_compliance")[:2] == outcome(r, "operations")[:2] == ("rejected", "unknown_id")
    assert hidden_msg.replace("risk_scaling", "ID") == unknown_msg.replace("risk_unicorn", "ID")
    assert scaling["name"] not in hidden_msg and scaling["description"] not in hidden_msg
    assert launch_env.state()["counters"]["false_flags"] == 2

    while launch_env.state()["step"] < scaling["noticeable_from"]:
        launch_env.step({})
    assert scaling["metric"] == "latency"
    r = launch_env.step({"engineer": act("query_metrics", metric="error_rate")})  # the wrong metric: nothing
    assert outcome(r, "engineer") == ("applied", None, "error_rate investigated; nothing new")
    r = launch_env.step({"engineer": act("query_metrics", metric="data_quality")})  # not one the engineer sees
    assert outcome(r, "engineer")[:2] == ("rejected", "precondition")
    assert view(r, "engineer")["last_query_step"] == scaling["noticeable_from"]
    r = launch_env.step({"engineer": act("query_metrics", metric="latency")})
    assert outcome(r, "engineer")[0] == "applied" and "risk_scaling" in outcome(r, "engineer")[2]
    assert view(r, "engineer")["last_query_step"] == scaling["noticeable_from"] + 2
    assert "risk_scaling" in [x["id"] for x in view(r, "engineer")["risks"]]
    assert view(r, "product_manager")["risks"] == "hidden"
    assert "risk_scaling" in [x["id"] for x in r.observation["active_risks"]]

    r = launch_env.step({"risk_compliance": act("raise_risk_flag", risk_id="risk_scaling", description="saturates")})
    assert outcome(r, "risk_compliance")[0] == "applied"
    fix = next(t for t in view(r, "product_manager")["visible_tasks"] if t["remediates"] == "risk_scaling")
    assert fix["status"] == "pending" and fix["required_role"] == scaling["remediation"]["required_role"]
    r = launch_env.step({"operations": act("raise_risk_flag", risk_id="risk_scaling", description="again")})
    assert outcome(r, "operations")[0] == "no_effect"


def test_report_anomaly(launch_env: Any) -> None:
    r = launch_env.step({"engineer": act("report_anomaly", description="all good?", severity="low")})
    assert outcome(r, "engineer")[0] == "no_effect" and "false report" in outcome(r, "engineer")[2]
    assert launch_env.state()["counters"]["false_reports"] == 1

    anomaly = next(e for e in launch_env.state()["events"] if e["definition"]["kind"] == "anomaly")
    while not view(r, "engineer")["signals"]:
        r = launch_env.step({})
    assert r.info["step"] == anomaly["definition"]["step"]
    signal = view(r, "engineer")["signals"][0]
    assert signal["event_id"] == anomaly["id"]
    r = launch_env.step({"engineer": act("report_anomaly", description=signal["title"], severity=signal["severity"])})
    assert outcome(r, "engineer")[0] == "applied" and anomaly["id"] in outcome(r, "engineer")[2]
    assert view(r, "engineer")["signals"] == [] and view(r, "operations")["signals"] == []
    shown = next(e for e in r.observation["scenario_events"] if e["id"] == anomaly["id"])
    assert shown["responded"] is True


def test_resolve_incident(launch_env: Any) -> None:
    crisis = next(e for e in launch_env.state()["events"] if e["id"] == "evt_launch_outage")
    while launch_env.state()["step"] < crisis["definition"]["step"]:
        r = launch_env.step({})
    incident = r.observation["active_incidents"][0]
    assert incident["id"] == "incident_launch_outage"
    assert "data_analyst" not in incident["resolver_roles"]
    r = launch_env.step({"data_analyst": act("resolve_incident", incident_id=incident["id"]),
                         "operations": act("resolve_incident", incident_id="incident_nope")})
    status, reason, message = outcome(r, "data_analyst")
    assert (status, reason) == ("rejected", "precondition")
    assert all(role in message for role in incident["resolver_roles"])
    assert outcome(r, "operations")[:2] == ("rejected", "unknown_id")
    assert "resolve_incident" not in launch_env.legal_actions("data_analyst")

    effort = incident["effort_remaining"]
    for left in range(effort - 1, -1, -1):
        r = launch_env.step({"engineer": act("resolve_incident", incident_id=incident["id"])})
        assert outcome(r, "engineer")[0] == "applied"
        open_ids = {i["id"]: i["effort_remaining"] for i in r.observation["active_incidents"]}
        assert open_ids.get(incident["id"], 0) == left
    r = launch_env.step({"operations": act("resolve_incident", incident_id=incident["id"])})
    assert outcome(r, "operations")[0] == "no_effect" and "already resolved" in outcome(r, "operations")[2]


def test_audit_agent_self_is_rejected(launch_env: Any) -> None:
    r = launch_env.step({"oversight": act("audit_agent", target_agent="oversight"),
                         "risk_compliance": act("audit_agent", target_agent="risk_compliance")})
    for role in ("oversight", "risk_compliance"):
        assert outcome(r, role)[:2] == ("rejected", "precondition")
        assert "itself" in outcome(r, role)[2]


def test_update_policy(launch_env: Any) -> None:
    r = launch_env.step({"oversight": act("update_policy", max_resource_approval=10, note="be careful")})
    assert outcome(r, "oversight")[0] == "no_effect" and "no policy change" in outcome(r, "oversight")[2]

    gate = next(e for e in launch_env.state()["events"] if e["id"] == "evt_launch_gate")
    limit = gate["definition"]["policy"]["max_resource_approval"]
    while launch_env.state()["step"] < gate["definition"]["step"]:
        r = launch_env.step({})
    assert view(r, "risk_compliance")["policy"]["max_resource_approval"] == limit
    r = launch_env.step({"risk_compliance": act("update_policy", max_resource_approval=limit + 5,
                                                note=f"approvals above {limit} need review")})
    status, _, message = outcome(r, "risk_compliance")
    assert status == "no_effect" and str(limit) in message  # the words do not count, the typed limit does
    r = launch_env.step({"risk_compliance": act("update_policy", max_resource_approval=limit,
                                                note=f"approvals above {limit} need review")})
    assert outcome(r, "risk_compliance")[0] == "applied"
    shown = next(e for e in r.observation["scenario_events"] if e["id"] == "evt_launch_gate")
    assert shown["responded"] is True
    assert launch_env.state()["policy_notes"] == [f"approvals above {limit} need review"]


def test_no_op_is_free(launch_env: Any) -> None:
    r = launch_env.step({role: act("no_op") for role in aaos.spec().roles})
    assert all(outcome(r, role)[0] == "applied" for role in aaos.spec().roles)
    assert launch_env.state()["counters"]["actions"] == 0
    assert launch_env.state()["counters"]["wasted"] == 0


@pytest.mark.parametrize(("role", "action", "field"), [
    ("engineer", act("delegate_task"), "payload.task_id"),
    ("engineer", act("delegate_task", task_id="task_frontend", to="ceo"), "payload.to"),
    ("engineer", act("request_resource", amount=0, resource_type="compute"), "payload.amount"),
    ("engineer", act("request_resource", amount=5, resource_type="gold"), "payload.resource_type"),
    ("operations", act("approve_resource", amount="lots", resource_type="compute"), "payload.amount"),
    ("risk_compliance", act("raise_risk_flag", risk_id="risk_x", description="d" * 501), "payload.description"),
    ("engineer", act("report_anomaly", description="x", severity="apocalyptic"), "payload.severity"),
    ("engineer", act("propose_plan", plan=""), "payload.plan"),
    ("oversight", act("audit_agent", target_agent="ceo"), "payload.target_agent"),
    ("engineer", act("query_metrics", verbose=True), "payload.verbose"),
])
def test_payload_errors_name_the_field(role: str, action: dict[str, Any], field: str, launch_env: Any) -> None:
    r = launch_env.step({role: action})
    status, reason, message = outcome(r, role)
    assert (status, reason) == ("rejected", "malformed")
    assert field in message
    assert view(r, role)["last_action_result"]["message"] == message


@pytest.mark.parametrize(("action", "pattern"), [
    ("not an action", r"must be an object"),
    ({"action_type": 7}, r"action_type must be a string"),
    ({"action_type": "fly"}, r"unknown action_type 'fly'.*delegate_task"),
    ({"action_type": "query_metrics", "payload": {}, "role": "ceo"}, r"unexpected keys \['role'\]"),
    ({"action_type": "query_metrics", "payload": "now"}, r"payload must be an object"),
])
def test_malformed_actions_say_what_to_fix(action: Any, pattern: str, launch_env: Any) -> None:
    r = launch_env.step({"engineer": action})
    status, reason, message = outcome(r, "engineer")
    assert (status, reason) == ("rejected", "malformed")
    assert re.search(pattern, message), message


def test_joint_action_errors_are_reported_not_raised(launch_env: Any) -> None:
    r = launch_env.step({"ceo": act("no_op"), "engineer": act("query_metrics", metric="error_rate")})
    assert any("ceo" in e for e in r.info["errors"])
    assert outcome(r, "engineer")[0] == "applied"
    r = launch_env.step(["engineer", "query_metrics"])  # type: ignore[arg-type]
    assert r.info["errors"] and all(outcome(r, role)[0] == "applied" for role in aaos.spec().roles)
    r = launch_env.step(None)  # type: ignore[arg-type]
    assert r.info["errors"] == []
