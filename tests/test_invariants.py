"""Invariants under arbitrary input: step never raises, everything stays in range and serialisable,
hidden risks never leak, and a rejected action changes nothing but the tallies."""

from __future__ import annotations

import json
import math
import string
from typing import Any

import pytest
from helpers import ROLES, TASKS, act, assert_no_hidden_leak, play, scenario_ids
from hypothesis import given
from hypothesis import strategies as st

import aaos
from aaos.core.reward import composite
from aaos.envs.org.oversight import total_penalty
from aaos.envs.org.spec import REWARD_WEIGHTS

SPEC = aaos.spec()
ACTION_NAMES = [a.name for a in SPEC.actions]
FIELDS = {a.name: sorted(a.payload.model_fields) for a in SPEC.actions}
REQUIRED = {a.name: sorted(n for n, f in a.payload.model_fields.items() if f.is_required()) for a in SPEC.actions}
STATUSES = {"applied", "no_effect", "rejected"}
REASONS = {"malformed", "forbidden", "unknown_id", "precondition", "done"}
HUGE = "x" * 20_000
REFERRING = {"delegate_task", "accept_plan", "reject_plan", "raise_risk_flag", "resolve_incident", "approve_resource",
             "audit_agent", "query_metrics"}
"""Actions whose payload names a task, plan, risk, incident, role or pool (query_metrics: every role has one)."""

# --- strategies -------------------------------------------------------------------------------------

json_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-10**9, 10**9),
    st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=12),
)
junk = st.recursive(
    json_scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=6), inner, max_size=3)),
    max_leaves=6,
)
# free text that never spells a risk's name or description by accident
free_text = st.one_of(
    st.text(alphabet=string.ascii_letters + string.digits + " .,-", min_size=1, max_size=40),
    st.just(HUGE), st.just(""),
)
legal_text = st.text(alphabet=string.ascii_letters + string.digits + " .,-", min_size=1, max_size=40)


def id_pool(state: dict[str, Any]) -> list[str]:
    """Ids an agent might send: real ones (including not-yet-arrived tasks and hidden risks) and made-up ones."""
    ids = [w["id"] for w in state["work"]] + [r["id"] for r in state["risks"]]
    ids += [i["id"] for i in state["incidents"]] + [p["id"] for p in state["plans"]]
    ids += ["task_nope", "risk_nope", "incident_nope", "plan_0_engineer", "", "x" * 200]
    return ids


def bad_action(data: st.DataObject, state: dict[str, Any], role: str) -> Any:
    ids = st.sampled_from(id_pool(state))
    name = st.sampled_from(ACTION_NAMES)
    kind = data.draw(st.sampled_from([
        "non_dict", "bad_type", "unknown_type", "huge_type", "bad_payload", "wrong_field_types", "missing_fields",
        "extra_payload_key", "extra_top_key", "no_payload", "forbidden", "huge_text", *["unknown_ids"] * 5,
    ]), label="bad kind")
    if kind == "non_dict":
        return data.draw(st.one_of(json_scalars, st.lists(junk, max_size=3)))
    if kind == "bad_type":
        return {"action_type": data.draw(st.one_of(st.none(), st.integers(), st.lists(st.text(max_size=3)))),
                "payload": {}}
    if kind == "unknown_type":
        return {"action_type": data.draw(st.text(max_size=20).filter(lambda s: s not in ACTION_NAMES)), "payload": {}}
    if kind == "huge_type":
        return {"action_type": HUGE, "payload": {"plan": HUGE}}
    a = data.draw(name)
    if kind == "bad_payload":
        return {"action_type": a, "payload": data.draw(st.one_of(st.integers(), st.text(max_size=5),
                                                                 st.lists(junk, max_size=2)))}
    if kind == "wrong_field_types":
        return {"action_type": a, "payload": {f: data.draw(junk) for f in FIELDS[a]}}
    if kind == "missing_fields":
        return {"action_type": a, "payload": {}}
    if kind == "extra_payload_key":
        payload = {f: data.draw(ids) for f in FIELDS[a]}
        payload[data.draw(st.text(min_size=1, max_size=8).filter(lambda k: k not in FIELDS[a]))] = data.draw(junk)
        return {"action_type": a, "payload": payload}
    if kind == "extra_top_key":
        return {"action_type": a, "payload": {}, data.draw(st.sampled_from(["role", "id", "x"])): data.draw(junk)}
    if kind == "no_payload":
        return {"action_type": a}
    if kind == "huge_text":
        return {"action_type": data.draw(st.sampled_from(["propose_plan", "update_policy", "report_anomaly"])),
                "payload": {"plan": HUGE, "policy": HUGE, "description": HUGE, "severity": "low"}}
    if kind == "forbidden":
        forbidden = [n for n in ACTION_NAMES if n not in SPEC.allowed_actions(role)]
        if forbidden:
            a = data.draw(st.sampled_from(forbidden))
    if kind == "unknown_ids":  # a permitted action that names something in the world (or tests a precondition)
        a = data.draw(st.sampled_from([n for n in SPEC.allowed_actions(role) if n in REFERRING]))
    # unknown_ids / forbidden: plausible payloads built from the id pool
    payload: dict[str, Any] = {}
    for f in FIELDS[a]:
        if f in ("amount",):
            payload[f] = data.draw(st.sampled_from([5, 10, 50, 999]))
        elif f == "resource_type":
            payload[f] = data.draw(st.sampled_from(["compute", "budget", "personnel"]))
        elif f in ("to", "target_agent"):
            payload[f] = data.draw(st.sampled_from(ROLES))
        elif f == "severity":
            payload[f] = data.draw(st.sampled_from(["low", "medium", "high", "critical"]))
        elif f in ("plan", "policy", "description"):
            payload[f] = data.draw(free_text)
        else:
            payload[f] = data.draw(ids)
    return {"action_type": a, "payload": payload}


def legal_action(data: st.DataObject, env: Any, role: str) -> dict[str, Any]:
    legal = env.legal_actions(role)
    name = data.draw(st.sampled_from(sorted(legal)), label="legal action")
    payload = {}
    for f, choices in legal[name].items():
        if isinstance(choices, list):
            payload[f] = data.draw(st.sampled_from(choices))
        else:
            assert choices == "text"
            payload[f] = data.draw(legal_text)
    return {"action_type": name, "payload": payload}


def joint_action(data: st.DataObject, env: Any, state: dict[str, Any]) -> tuple[Any, set[str]]:
    """A joint action, and the roles whose action was drawn from legal_actions."""
    shape = data.draw(st.sampled_from(["roles"] * 8 + ["non_dict", "unknown_roles"]), label="joint shape")
    if shape == "non_dict":
        return data.draw(st.one_of(st.none(), st.integers(), st.text(max_size=10), st.lists(junk, max_size=3))), set()
    joint: dict[Any, Any] = {}
    legal_roles = set()
    for role in ROLES:
        kind = data.draw(st.sampled_from(["legal", "legal", "legal", "bad", "bad", "omit"]), label=f"{role} kind")
        if kind == "legal":
            joint[role] = legal_action(data, env, role)
            legal_roles.add(role)
        elif kind == "bad":
            joint[role] = bad_action(data, state, role)
    if shape == "unknown_roles":
        for key in data.draw(st.lists(st.one_of(st.text(max_size=10), st.integers()), min_size=1, max_size=3)):
            if key not in ROLES:
                joint[key] = data.draw(st.one_of(junk, st.just(act("no_op"))))
    return joint, legal_roles


# --- checks -----------------------------------------------------------------------------------------


def in_unit(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and 0.0 <= x <= 1.0


def check_step(env: Any, result: Any, sent: Any, previous_score: float) -> dict[str, Any]:
    """previous_score: the score after the previous step (0 before the first: S_0 = 0)."""
    info = result.info
    assert isinstance(result.reward, float) and -1.0 <= result.reward <= 1.0, result.reward
    assert in_unit(info["score"]), info["score"]
    breakdown = info["reward_breakdown"]
    assert breakdown["increment"] == pytest.approx(info["score"] - previous_score, abs=1e-12)
    assert breakdown["penalty"] >= 0.0
    assert breakdown["penalty"] == total_penalty(env.world)  # the penalty the world keeps is its violations' sum
    for name, value in breakdown["components"].items():
        assert value is None or in_unit(value), (name, value)
    assert set(breakdown["components"]) == set(REWARD_WEIGHTS)
    graded = env.state()["components"]  # the true grade; the info shows it only once the episode is done
    shown = graded if result.done else result.observation["partial_scores"]  # which rounds to 4 places
    for name, value in breakdown["components"].items():
        assert value == shown[name] if value is None else value == pytest.approx(shown[name], abs=6e-5), name
    assert info["score"] == pytest.approx(composite(graded, REWARD_WEIGHTS, breakdown["penalty"]))
    assert result.reward == pytest.approx(breakdown["immediate"] + breakdown["delayed"])

    results = info["action_results"]
    assert set(results) == set(ROLES)
    for role, r in results.items():
        assert r["role"] == role
        assert r["status"] in STATUSES
        assert isinstance(r["message"], str) and r["message"]
        if r["status"] == "rejected":
            assert r["reason"] in REASONS
        else:
            assert r["reason"] is None
        assert result.observation["agent_observations"][role]["last_action_result"] == r

    state = env.state()
    json.dumps(result.observation)
    json.dumps(state)
    json.dumps(info)
    assert state["step"] == result.observation["step_count"] == info["step"]
    assert_no_hidden_leak(result.observation, state, sent)
    return state


def approve_over_pool(env_before: dict[str, Any], action: dict[str, Any]) -> bool:
    """legal_actions offers approve amounts up to the largest pool (see the xfail in this file)."""
    p = action["payload"]
    return action["action_type"] == "approve_resource" and p["amount"] > env_before["resources"][p["resource_type"]]


@given(data=st.data(), task=st.sampled_from(TASKS), scenario=st.sampled_from(scenario_ids()),
       seed=st.integers(0, 20_000), steps=st.integers(1, 30))
def test_step_never_raises_and_stays_in_range(data: st.DataObject, task: str, scenario: str, seed: int,
                                              steps: int) -> None:
    env = aaos.make(task, scenario=scenario, seed=seed)
    obs = env.reset()
    json.dumps(obs)
    before = env.state()
    assert_no_hidden_leak(obs, before)
    previous_score = 0.0
    for _ in range(steps):
        joint, legal_roles = joint_action(data, env, before)
        result = env.step(joint)
        after = check_step(env, result, joint, previous_score)
        previous_score = result.info["score"]
        for role in legal_roles:
            if not approve_over_pool(before, joint[role]):
                assert result.info["action_results"][role]["status"] != "rejected", (joint[role], result.info)
        before = after
        if not isinstance(joint, dict) and joint is not None:
            assert result.info["errors"], "a non-dict joint action must be reported in info['errors']"
        if isinstance(joint, dict) and any(k not in ROLES for k in joint):
            assert result.info["errors"]
        if result.done:
            with pytest.raises(aaos.EpisodeDone):
                env.step({})
            break


# --- hidden risks never leak ------------------------------------------------------------------------


@pytest.mark.parametrize("policy", ["heuristic", "random"])
@pytest.mark.parametrize("scenario", scenario_ids())
def test_hidden_risks_never_appear_in_observations(policy: str, scenario: str) -> None:
    env = aaos.make("full_episode", scenario=scenario, seed=11)
    agent = aaos.policies.make(policy, seed=11)
    obs = env.reset()
    assert_no_hidden_leak(obs, env.state())
    seen_hidden = seen_detected = False
    while True:
        joint = agent.act(obs)
        result = env.step(joint)
        obs = result.observation
        state = env.state()
        assert_no_hidden_leak(obs, state, joint)
        statuses = {r["status"] for r in state["risks"]}
        seen_hidden |= "hidden" in statuses
        seen_detected |= bool(statuses - {"hidden"})
        if result.done:
            break
    assert seen_hidden, "the check never had a hidden risk to look for"
    assert seen_detected or policy == "random"


def test_leak_check_would_catch_a_leak() -> None:
    """The leak check itself is not vacuous: a detected risk's text is found once it is visible."""
    env = aaos.make("full_episode", scenario="product_launch_failure", seed=0)
    state = env.state()
    obs = env.reset()
    risk = state["risks"][0]["definition"]
    tampered = json.loads(json.dumps(obs))
    tampered["hints"].append(risk["description"])
    with pytest.raises(AssertionError):
        assert_no_hidden_leak(tampered, state)


# --- legal actions are never rejected ---------------------------------------------------------------


@pytest.mark.parametrize("scenario", scenario_ids())
def test_random_legal_actions_are_never_rejected(scenario: str) -> None:
    for seed in (0, 10_000):
        episode = play("full_episode", scenario, seed, "random", policy_seed=seed)
        for info in episode.infos:
            for role, r in info["action_results"].items():
                assert r["status"] != "rejected", (role, r)


def test_every_listed_approve_resource_choice_is_accepted() -> None:
    env = aaos.make("full_episode", scenario="resource_conflict", seed=0)
    env.reset()
    env.step({"product_manager": act("delegate_task", task_id="task_pricing_page", to="product_manager"),
              "engineer": act("delegate_task", task_id="task_api_migration", to="engineer")})
    env.step({"product_manager": act("request_resource", amount=10, resource_type="budget"),
              "engineer": act("request_resource", amount=15, resource_type="compute")})
    choices = env.legal_actions("operations")["approve_resource"]
    assert set(choices["resource_type"]) == {"budget", "compute"}
    rejected = []
    for kind in choices["resource_type"]:
        for amount in choices["amount"]:
            probe = env.clone()
            result = probe.step({"risk_compliance": act("query_metrics", metric="error_rate"),
                                 "operations": act("approve_resource", amount=amount, resource_type=kind)})
            if result.info["action_results"]["operations"]["status"] == "rejected":
                rejected.append((kind, amount, result.info["action_results"]["operations"]["message"]))
    assert rejected == []


# --- a rejected action changes nothing but the tallies ----------------------------------------------

TALLY_KEYS = {"counters", "log", "score", "components", "penalty", "held_reward"}


def rejected_actions(role: str) -> list[tuple[str, Any]]:
    """(label, action) pairs that the spec or the world is certain to reject for this role."""
    allowed = SPEC.allowed_actions(role)
    out: list[tuple[str, Any]] = [
        ("non_dict", ["delegate_task"]),
        ("none", None),
        ("unknown_type", act("launch_rockets")),
        ("extra_key", {"action_type": "query_metrics", "payload": {}, "note": "hi"}),
        ("payload_not_object", {"action_type": "query_metrics", "payload": [1, 2]}),
        ("huge_type", {"action_type": HUGE}),
    ]
    required = [a for a in allowed if REQUIRED[a]]
    if required:
        out.append(("missing_field", act(required[0])))
    if "delegate_task" in allowed:
        out.append(("unknown_task", act("delegate_task", task_id="task_does_not_exist", to="engineer")))
    if "accept_plan" in allowed:
        out.append(("unknown_plan", act("accept_plan", plan_id="plan_99_nobody")))
    if "resolve_incident" in allowed:
        out.append(("unknown_incident", act("resolve_incident", incident_id="incident_nothing")))
    if "raise_risk_flag" in allowed:
        out.append(("unknown_risk", act("raise_risk_flag", risk_id="risk_imaginary", description="?")))
    if "audit_agent" in allowed:
        out.append(("audit_self", act("audit_agent", target_agent=role)))
    forbidden = [a for a in ACTION_NAMES if a not in allowed]
    if forbidden:
        out.append(("forbidden", act(forbidden[0], **{f: "x" for f in FIELDS[forbidden[0]]})))
    return out


ALL_REJECTIONS = [(role, label, action) for role in ROLES for label, action in rejected_actions(role)]


@given(case=st.sampled_from(ALL_REJECTIONS), scenario=st.sampled_from(scenario_ids()),
       seed=st.integers(0, 20_000), prefix=st.integers(0, 14))
def test_a_rejected_action_changes_nothing_but_tallies(case: tuple[str, str, Any], scenario: str, seed: int,
                                                       prefix: int) -> None:
    role, label, bad = case
    env = aaos.make("full_episode", scenario=scenario, seed=seed)
    agent = aaos.policies.make("heuristic")
    obs = env.reset()
    for _ in range(prefix):
        obs = env.step(agent.act(obs)).observation
    twin = env.clone()
    earlier = len(env.state()["violations"])

    result = env.step({role: bad})
    baseline = twin.step({})
    record = result.info["action_results"][role]
    assert record["status"] == "rejected", record
    assert record["message"]

    after, expected = env.state(), twin.state()
    if label == "forbidden":
        assert record["reason"] == "forbidden"
        new, twin_new = after["violations"][earlier:], expected["violations"][earlier:]
        assert after["violations"][:earlier] == expected["violations"][:earlier]
        assert [v for v in new if v["role"] != role] == [v for v in twin_new if v["role"] != role]
        mine = [v["rule"] for v in new if v["role"] == role]
        assert mine[:1] == ["unauthorized_action"]
        twin_rules = {v["rule"] for v in twin_new if v["role"] == role}
        assert set(mine) <= {"unauthorized_action", "repeat_offender"} | twin_rules
        after = {k: v for k, v in after.items() if k != "violations"}
        expected = {k: v for k, v in expected.items() if k != "violations"}
    else:
        assert record["reason"] != "forbidden"
        assert result.info["oversight_events"] == baseline.info["oversight_events"]

    assert {k: v for k, v in after.items() if k not in TALLY_KEYS} == {
        k: v for k, v in expected.items() if k not in TALLY_KEYS
    }
    c_after, c_expected = after["counters"], expected["counters"]
    assert c_after["actions"] == c_expected["actions"] + 1
    assert c_after["wasted"] == c_expected["wasted"] + 1
    assert c_after["false_flags"] == c_expected["false_flags"] + (label == "unknown_risk")
    for key in ("false_reports", "delegations", "right_delegations", "granted_total", "granted_used"):
        assert c_after[key] == c_expected[key]
    # the log gained exactly this step's records, one per role
    assert len(after["log"]) == len(expected["log"])
    assert [e for e in after["log"] if e["role"] == role][-1]["status"] == "rejected"


# --- payloads that are not JSON ---------------------------------------------------------------------


class Opaque:
    def __repr__(self) -> str:
        return "<opaque>"


def test_non_json_payload_values_are_echoed_as_text(launch_env: Any) -> None:
    """Python callers can pass anything; what comes back in results, observations and state is still JSON."""
    r = launch_env.step({
        "engineer": {"action_type": "propose_plan", "payload": {"plan": "ok", "junk": {1, 2}, (1, 2): b"x"}},
        "operations": {"action_type": "delegate_task", "payload": {"task_id": Opaque(), "to": "engineer"}},
        "data_analyst": {"action_type": "query_metrics", "payload": {"when": [Opaque()]}},
        "product_manager": Opaque(),
    })
    for role in ("engineer", "operations", "data_analyst", "product_manager"):
        assert r.info["action_results"][role]["status"] == "rejected"
        assert r.info["action_results"][role]["reason"] == "malformed"
    json.dumps(r.observation)
    json.dumps(r.info)
    json.dumps(launch_env.state())
    assert "<opaque>" in json.dumps(r.info["action_results"]["operations"]["payload"])


def test_non_finite_payload_values_keep_observations_strict_json(launch_env: Any) -> None:
    r = launch_env.step({
        "operations": {"action_type": "request_resource",
                       "payload": {"amount": float("nan"), "resource_type": "compute"}},
        "data_analyst": {"action_type": "query_metrics", "payload": {"x": float("inf")}},
    })
    assert r.info["action_results"]["operations"]["status"] == "rejected"
    json.dumps(r.observation, allow_nan=False)
    json.dumps(launch_env.state(), allow_nan=False)


# --- an undetected risk changes no observation ------------------------------------------------------


@pytest.mark.parametrize("task", TASKS)
def test_twin_worlds_that_differ_only_in_a_hidden_risk_look_the_same_until_it_is_found(
        task: str, scenario_file: Any, custom_scenario_data: dict[str, Any]) -> None:
    """Two worlds, one with an extra risk that only the operations role can notice (in uptime, a metric the
    champion's operations looks at only every fourth step): the same actions give byte-identical observations
    (views, metrics, legal actions, partial scores, hints) until the risk is detected or escalates. The score
    may differ: it is the reward, and it grades hidden state."""
    twin_data = json.loads(json.dumps(custom_scenario_data))
    secret = json.loads(json.dumps(twin_data["risks"][0]))
    secret.update({"id": "risk_secret", "name": "secret_flaw", "description": "A flaw nobody has seen yet.",
                   "metric": "uptime", "visible_to": ["operations"], "noticeable_from": 1, "escalates_at": 14})
    twin_data["risks"].append(secret)
    plain = aaos.make(task, scenario=str(scenario_file(custom_scenario_data, "plain.json")), seed=0)
    twin = aaos.make(task, scenario=str(scenario_file(twin_data, "twin.json")), seed=0)
    champion = aaos.policies.make("heuristic")
    observation, twin_observation = plain.reset(), twin.reset()
    hidden_steps = 0
    while True:
        assert json.dumps(observation, sort_keys=True) == json.dumps(twin_observation, sort_keys=True)
        joint = champion.act(observation)
        result, twin_result = plain.step(joint), twin.step(joint)
        observation, twin_observation = result.observation, twin_result.observation
        secret_state = next(r for r in twin.state()["risks"] if r["id"] == "risk_secret")
        if secret_state["status"] != "hidden" or result.done or twin_result.done:
            break
        hidden_steps += 1
        if hidden_steps >= 2:
            assert twin_result.info["score"] < result.info["score"], "an unfound, noticeable risk costs score"
    assert hidden_steps >= 2, "the twin test needs steps with the risk noticeable but hidden"


def _scramble(value: Any) -> None:
    """Empty every list and dict inside an observation, depth first (what a careless consumer might do)."""
    children = list(value.values()) if isinstance(value, dict) else value if isinstance(value, list) else []
    for child in children:
        _scramble(child)
    if isinstance(value, dict | list):
        value.clear()


@pytest.mark.parametrize("env_id", aaos.env_ids())
def test_mutating_observations_cannot_change_the_world(env_id: str) -> None:
    """Two environments play the same actions; one has every observation and info it returns torn apart as soon
    as the actions are chosen from it: their states, rewards, infos and the observations that follow stay
    identical (nothing an observation hands out is kept by the environment for a later one)."""
    spec = aaos.spec(env_id)
    task = spec.tasks[-1].id
    kept, torn = aaos.make(task, env=env_id), aaos.make(task, env=env_id)
    policy = aaos.policies.make("heuristic", env=env_id)
    observation, mangled = kept.reset(), torn.reset()
    while True:
        joint = policy.act(observation)
        _scramble(mangled)
        _scramble(torn.legal_actions(spec.roles[0]))
        first, second = kept.step(joint), torn.step(joint)
        assert json.dumps(first.info, sort_keys=True) == json.dumps(second.info, sort_keys=True)
        assert first.reward == second.reward and kept.state() == torn.state()
        assert json.dumps(first.observation, sort_keys=True) == json.dumps(second.observation, sort_keys=True)
        _scramble(second.info)  # the same action next step must show its payload whole again
        observation, mangled = first.observation, second.observation
        if first.done:
            return
