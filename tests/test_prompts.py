"""The prompts' layout: the same system text for every role up to its brief, views without empty values in
the steady-first order, and a joint prompt that shows each view field once yet loses nothing of any view."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from typing import Any

import pytest

import aaos
from aaos.agents.llm import InvalidAnswer, decodable_calls, joint_role_answer, validate_answer
from aaos.agents.prompts import (
    EMPTY,
    FILLED_TEXT,
    SHOWN_APART,
    compact_call,
    compact_calls,
    compact_messages,
    compact_schema,
    joint_messages,
    role_messages,
    seen_text,
)
from aaos.envs import kit_of
from aaos.envs.org.prompting import VIEW_ORDER

SPEC = aaos.spec("org")


def observations(task: str = "full_episode", scenario: str = "product_launch_failure",
                 policy: str = "random") -> list[dict[str, Any]]:
    """Every observation of a random episode: views that fill up with plans, events, risks and incidents."""
    env = aaos.make(task, scenario=scenario, seed=3)
    player = aaos.policies.make(policy, seed=3)
    observation = env.reset()
    seen = [observation]
    while True:
        result = env.step(player.act(observation))
        observation = result.observation
        if result.done:
            return seen
        seen.append(observation)


def pruned(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: pruned(v) for k, v in value.items() if v not in EMPTY}
    if isinstance(value, list):
        return [pruned(v) for v in value]
    return value


def shown_view(view: dict[str, Any]) -> dict[str, Any]:
    """What of a view a prompt must carry in its view part."""
    return {k: pruned(v) for k, v in view.items() if k not in SHOWN_APART and v not in EMPTY}


def test_system_prompts_share_everything_up_to_the_role() -> None:
    systems = [
        role_messages(role, view, SPEC)[0]["content"]
        for role, view in observations()[0]["agent_observations"].items()]
    heads = {system.split("You are the ")[0] for system in systems}
    tails = {system.split("You are the ")[1] for system in systems}
    assert len(heads) == 1 and len(tails) == len(systems)  # one shared text, then each role's own


def test_a_role_prompt_carries_its_whole_view_steady_fields_first_and_the_step_last() -> None:
    for observation in observations():
        for role, view in observation["agent_observations"].items():
            user = role_messages(role, view, SPEC)[1]["content"]
            header, body, legal_and_step = user.split("\n", 2)
            assert header == f"Your view as {role}:"
            carried = json.loads(body)
            assert carried == shown_view(view)
            order = [k for k in VIEW_ORDER if k in carried]
            assert list(carried)[:len(order)] == order
            assert legal_and_step.startswith("Your legal actions now:\n")
            assert legal_and_step.splitlines()[-1].startswith(f"Step {view['step']}. Your last action: ")
            for empty in ("null", "[]", "{}", '"hidden"'):
                assert empty not in body


def read_joint(user: str, roles: list[str]) -> dict[str, dict[str, Any]]:
    """The six views as the joint prompt tells them: the shared object plus each 'seen by' line."""
    lines = user.split("\n")
    assert lines[0] == "What every role sees:" and lines[2] == "What only some roles see:"
    views = {role: dict(json.loads(lines[1])) for role in roles}
    for line in lines[3:lines.index("Legal actions now, by role:")]:
        if line == "(nothing)":
            continue
        head, value = line.removeprefix("- ").split(": ", 1)
        key, seen_by = head.split(", seen by ")
        for role in seen_by.split(", "):
            assert key not in views[role], f"{key} told twice for {role}"
            views[role][key] = json.loads(value)
    return views


@pytest.mark.parametrize("scenario", ["product_launch_failure", "vendor_outage_cascade"])
def test_the_joint_prompt_tells_each_field_once_and_loses_nothing(scenario: str) -> None:
    for observation in observations(scenario=scenario):
        views = observation["agent_observations"]
        user = joint_messages(observation, SPEC)[1]["content"]
        told = read_joint(user, list(views))
        assert told == {role: shown_view(view) for role, view in views.items()}
        six_views = sum(len(json.dumps(shown_view(v), separators=(",", ":"))) for v in views.values())
        assert len(user.split("Legal actions now")[0]) < six_views
        assert user.rstrip().split("\n")[-7] == (
            f"Step {observation['step_count']} of {observation['max_steps']}. Last actions:")


def test_seen_text_writes_fields_as_lines_and_records_as_tables_with_their_columns_declared_once() -> None:
    view = {"policy": {"max": 10, "limits": {"a": 1}}, "ids": ["x", "y"], "note": "two\n lines",
            "tasks": [{"id": "t1", "status": "open"}, {"id": "t2", "owner": "eng", "blocked_on": {"budget": 5}}],
            "people": {"ann": {"trust": "high"}, "bob": {"trust": "low", "slot": "am"}}, "done": True}
    assert seen_text(view).split("\n") == [
        "policy: max=10 limits=(a=1)", "ids: x,y", "note: two lines",
        "tasks (id|status|owner|blocked_on):", "t1|open||", "t2||eng|budget=5",
        "people (id|trust|slot):", "ann|high|", "bob|low|am", "done: true"]


def _settled(item: Any, settled: frozenset[tuple[str, object]]) -> bool:
    return isinstance(item, dict) and any(item.get(field) == value for field, value in settled)


@pytest.mark.parametrize("scenario", ["product_launch_failure", "vendor_outage_cascade"])
def test_the_compact_prompt_keeps_every_open_item_once_in_a_fraction_of_the_joint_prompt(scenario: str) -> None:
    told = aaos.kit_of("org").prompting
    assert told.compact_omit and "id" not in told.compact_omit and told.compact_settled
    for observation in observations(scenario=scenario):
        views = observation["agent_observations"]
        system, user = (m["content"] for m in compact_messages(observation, SPEC))
        assert "Rules:" not in system and ", ".join(SPEC.roles) in system and "JSON array" in system
        lines = user.removeprefix("Seen:\n").split("\n")
        assert lines[-1] == f"Step {observation['step_count']} of {observation['max_steps']}."
        assert "Legal actions" not in user  # the output schema enumerates them
        for key in {k for view in views.values() for k, v in shown_view(view).items()}:
            items = [item for view in views.values() if isinstance(view.get(key), list) for item in view[key]]
            if not items or not all(isinstance(item, dict) and "id" in item for item in items):
                continue
            open_ids = list(dict.fromkeys(item["id"] for item in items if not _settled(item, told.compact_settled)))
            header = next((i for i, line in enumerate(lines) if line.startswith(f"{key} (")), None)
            if not open_ids:  # nothing left to decide about: the field is left out
                assert header is None and not any(line.startswith(f"{key}:") for line in lines), key
                continue
            assert header is not None, key
            columns = lines[header].removeprefix(f"{key} (").removesuffix("):").split("|")
            assert columns[0] == "id" and not set(columns) & told.compact_omit, key
            rows = lines[header + 1: header + 1 + len(open_ids)]
            assert [row.split("|")[0] for row in rows] == open_ids, key
        assert not any(f" {key}=" in user or f"|{key}|" in user for key in told.compact_omit)
        assert not any(line.startswith((f"{key}:", f"{key} (")) for key in told.compact_omit for line in lines)
        assert len(user) < 0.3 * len(joint_messages(observation, SPEC)[1]["content"])


@pytest.mark.parametrize("env_id", aaos.env_ids())
def test_a_compact_answer_offers_each_legal_action_once_as_a_call_the_agent_reads_back(env_id: str) -> None:
    spec = aaos.spec(env_id)
    env = aaos.make(seed=5, env=env_id)
    player = aaos.policies.make("random", seed=5, env=env_id)
    observation, done, checked = env.reset(), False, 0
    while not done and checked < 8:
        legal_by_role = {role: view["legal_actions"] for role, view in observation["agent_observations"].items()}
        schema = compact_schema({role: compact_calls(legal) for role, legal in legal_by_role.items()})
        assert schema["type"] == "array" and schema["minItems"] == schema["maxItems"] == len(legal_by_role)
        for role, legal in legal_by_role.items():
            calls = compact_calls(legal)
            assert schema["prefixItems"][list(legal_by_role).index(role)]["enum"] == list(calls)
            assert len(calls) == sum(math.prod(len(o) for o in fields.values() if isinstance(o, list))
                                     for fields in legal.values())
            for call, action in calls.items():
                assert compact_call(action["action_type"], action["payload"], legal[action["action_type"]]) == call
                assert joint_role_answer(spec, role, f" {call} ", legal, "compact") == validate_answer(
                    spec, role, action, legal)
                assert all(action["payload"][field] == FILLED_TEXT
                           for field, options in legal[action["action_type"]].items() if not isinstance(options, list))
        checked += 1
        result = env.step(player.act(observation))
        observation, done = result.observation, result.done


def test_a_compact_answer_that_is_no_legal_call_says_how_to_write_one() -> None:
    legal = aaos.make("org_simulation", seed=1).reset()["agent_observations"]["engineer"]["legal_actions"]
    with pytest.raises(InvalidAnswer, match=r'e\.g\. "no_op\(\)"'):
        joint_role_answer(SPEC, "engineer", {"action_type": "no_op"}, legal, "compact")
    with pytest.raises(InvalidAnswer, match="not one of its legal actions now"):
        joint_role_answer(SPEC, "engineer", "query_metrics(metric=budget)", legal, "compact")
    assert joint_role_answer(SPEC, "engineer", {"action_type": "no_op"}, legal, "joint")["action_type"] == "no_op"


def test_safe_decoding_leaves_out_what_the_guardrail_refuses_and_keeps_every_other_legal_call() -> None:
    """chief_of_staff: once the champion has booked a meeting, a booking into that slot is a legal call the model
    could write under "legal" decoding, but not under "safe" decoding; no_op always stays."""
    env = aaos.make("steady_week", seed=3, env="chief_of_staff")
    champion = aaos.policies.make("heuristic", env="chief_of_staff")
    guardrail = kit_of("chief_of_staff").guardrail
    observation, into_taken_seen = env.reset(), 0
    while not env.done:
        view = observation["agent_observations"]["chief_of_staff"]
        legal_calls = decodable_calls(env.spec, "chief_of_staff", view, "legal")
        safe_calls = decodable_calls(env.spec, "chief_of_staff", view, "safe")
        assert "no_op()" in safe_calls
        assert {call for call in legal_calls if call not in safe_calls} == {
            call for call, action in legal_calls.items() if guardrail("chief_of_staff", action, view) is not None}
        taken = {(day["day"], slot) for day in view["calendar"] for slot, cell in day["slots"].items()
                 if cell["booked"]}
        into_taken = {call for call, action in legal_calls.items() if action["action_type"] == "schedule"
                      and (action["payload"]["day"], action["payload"]["slot"]) in taken}
        into_taken_seen += len(into_taken)
        assert not into_taken & set(safe_calls)
        observation = env.step(champion.act(observation)).observation
    assert into_taken_seen, "the episode never offered a booking into a taken slot"


def _last_line(observation: dict[str, Any], spec: Any) -> str | None:
    lines = compact_messages(observation, spec)[1]["content"].split("\n")
    return next((line for line in lines if line.startswith("Last: ")), None)


def test_the_inbox_compact_prompt_ends_with_the_last_action_as_the_call_a_model_would_answer() -> None:
    spec = aaos.spec("inbox")
    env = aaos.make("easy", seed=4, env="inbox")
    champion = aaos.policies.make("heuristic", env="inbox")
    observation = env.reset()
    assert _last_line(observation, spec) == "Last: triage_agent none"
    for _ in range(6):
        action = champion.act(observation)["triage_agent"]
        legal = observation["agent_observations"]["triage_agent"]["legal_actions"][action["action_type"]]
        observation = env.step({"triage_agent": action}).observation
        call = compact_call(action["action_type"], action["payload"], legal)
        assert _last_line(observation, spec) == f"Last: triage_agent {call} applied"
    refused = {"action_type": "set_priority", "payload": {"email_id": "em_nope", "level": "high"}}
    observation = env.step({"triage_agent": refused}).observation
    assert _last_line(observation, spec).endswith(" rejected")


def test_a_compact_prompt_shows_the_last_action_only_where_the_kit_asks_for_it() -> None:
    for env_id in aaos.env_ids():
        env = aaos.make(seed=2, env=env_id)
        observation = env.step(aaos.policies.make("random", seed=2, env=env_id).act(env.reset())).observation
        shown = _last_line(observation, aaos.spec(env_id)) is not None
        assert shown == aaos.kit_of(env_id).prompting.compact_last, env_id


def _champion_observations(env_id: str, task: str, seed: int) -> Iterator[dict[str, Any]]:
    """Each observation of one champion episode, in turn."""
    env = aaos.make(task, seed=seed, env=env_id)
    champion = aaos.policies.make("heuristic", env=env_id)
    observation = env.reset()
    while True:
        yield observation
        result = env.step(champion.act(observation))
        if result.done:
            return
        observation = result.observation


def test_the_inbox_compact_prompt_lists_the_other_emails_only_when_the_next_one_is_to_be_chosen() -> None:
    spec = aaos.spec("inbox")
    working, choosing = 0, 0
    for observation in _champion_observations("inbox", "easy", 4):
        view = observation["agent_observations"]["triage_agent"]
        prompt = compact_messages(observation, spec)[1]["content"]
        opened = view["opened_email"]
        if opened is not None and opened["status"] == "open":
            working += 1
            assert "inbox (" not in prompt and f"opened_email: id={opened['id']} " in prompt
        else:
            choosing += 1
            assert all(f"\n{email['id']}|" in prompt for email in view["inbox"]), prompt
    assert working == 24 and choosing == 8


def test_the_inbox_compact_prompt_puts_the_senders_priority_facts_beside_the_sender() -> None:
    spec = aaos.spec("inbox")
    env = aaos.make("easy", seed=4, env="inbox")
    champion = aaos.policies.make("heuristic", env="inbox")
    observation, seen = env.reset(), {"key_account": set(), "earlier_messages": set()}
    while True:
        opened = observation["agent_observations"]["triage_agent"]["opened_email"]
        if opened is not None:
            line = next(line for line in compact_messages(observation, spec)[1]["content"].splitlines()
                        if line.startswith("opened_email:"))
            truth = next(email for email in env.state()["emails"] if email["id"] == opened["id"])
            key_account, earlier = str(truth["vip"]).lower(), truth["followups"]
            assert f"<{opened['sender'].split('<')[1]} key_account={key_account} earlier_messages={earlier} " in line
            seen["key_account"].add(key_account)
            seen["earlier_messages"].add(earlier)
        result = env.step(champion.act(observation))
        if result.done:
            break
        observation = result.observation
    assert seen == {"key_account": {"true", "false"}, "earlier_messages": {0, 1, 2}}


def test_a_chief_of_staff_request_carries_what_is_known_of_its_stakeholders_slots() -> None:
    spec = aaos.spec("chief_of_staff")
    rows, unavailable = 0, 0
    for observation in _champion_observations("chief_of_staff", "drifting_priorities", 10000):
        view = observation["agent_observations"]["chief_of_staff"]
        lines = compact_messages(observation, spec)[1]["content"].splitlines()
        header = next((line for line in lines if line.startswith("requests (")), None)
        open_requests = [r for r in view["requests"] if r["status"] == "open"]
        if header is not None:
            columns = header[len("requests ("):-2].split("|")
            assert columns[:3] == ["id", "stakeholder", "known_slot"], header
            for request in view["requests"]:
                row = next(line for line in lines if line.startswith(f"{request['id']}|")).split("|")
                known = view["stakeholders"][request["stakeholder"]]
                assert row[2] == known["known_slot"]
                if known["known_unavailable"] is not None:
                    assert row[columns.index("known_unavailable")] == known["known_unavailable"]
                    unavailable += 1
                rows += 1
        else:
            assert not open_requests
    assert rows > 20 and unavailable > 0  # drifting stakeholders say which slot is out for them


@pytest.mark.parametrize("scenario", [s["id"] for s in aaos.list_scenarios(env="org")])
def test_the_org_compact_prompt_lists_the_work_awaiting_a_decision_most_urgent_first(scenario: str) -> None:
    env = aaos.make("org_simulation", scenario=scenario, seed=3)
    champion = aaos.policies.make("heuristic")
    observation, listed = env.reset(), {"awaiting_owner": 0, "unflagged_risks": 0}
    while True:
        lines = compact_messages(observation, SPEC)[1]["content"].splitlines()
        chosen = champion.act(observation)
        tasks = observation["agent_observations"]["product_manager"]["visible_tasks"]
        pending = {f"{t['id']}|{t['required_role']}" for t in tasks if t["status"] == "pending"}
        if "awaiting_owner (id|required_role):" in lines:
            start = lines.index("awaiting_owner (id|required_role):") + 1
            rows = lines[start:start + len(pending)]
            assert set(rows) == pending  # every pending task, and only those
            delegated = chosen["product_manager"]["payload"]
            assert rows[0] == f"{delegated['task_id']}|{delegated['to']}"  # the champion delegates the first
            listed["awaiting_owner"] += 1
        else:
            assert not pending
        risks = observation["agent_observations"]["risk_compliance"]["risks"]
        detected = {r["id"] for r in risks if r["status"] == "detected"}
        shown = next((line for line in lines if line.startswith("unflagged_risks: ")), None)
        if shown is not None:
            ids = shown.removeprefix("unflagged_risks: ").split(",")
            assert set(ids) == detected and chosen["risk_compliance"]["payload"]["risk_id"] == ids[0]
            listed["unflagged_risks"] += 1
        else:
            assert not detected
        result = env.step(chosen)
        if result.done:
            break
        observation = result.observation
    assert all(listed.values())  # both lists appear in every scenario
