"""One rule for integers on every surface (issue 34, item 11): in process, as on the server and in the PettingZoo
wrapper, a payload's integer field takes a number without a fractional part (5 or 5.0) and refuses "5", true and
5.5 with the server's message, as a malformed action that changes nothing else."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fastapi.testclient import TestClient

import aaos
from aaos.server.app import create_app

NOT_AN_INTEGER = "Input should be a valid integer"
CASES = [  # env, task, role, action type, a valid payload (its integer field first), that field
    ("org", "full_episode", "operations", "approve_resource", {"amount": 5, "resource_type": "compute"}, "amount"),
    ("chief_of_staff", None, "chief_of_staff", "protect", {"day": 1, "block": "family_evening"}, "day"),
]


def _stepped(env: str, task: str | None, role: str, action: dict[str, Any]) -> tuple[aaos.StepResult, str]:
    """The step's result and the state after it as JSON text, with the refused field's value (which the action
    log shows back) blanked."""
    made = aaos.make(task, env=env, seed=3) if task else aaos.make(env=env, seed=3)
    made.reset()
    result = made.step({role: action})
    field, value = next(iter(action["payload"].items())) if action["payload"] else ("", None)
    state = json.dumps(made.state(), sort_keys=True, default=str)
    return result, state.replace(f'"{field}": {json.dumps(value)}', f'"{field}": "?"')


@pytest.mark.parametrize(("env", "task", "role", "action_type", "payload", "field"), CASES)
@pytest.mark.parametrize("wrong", ["5", True, 5.5])
def test_an_integer_field_refuses_what_the_wire_refuses_and_changes_nothing_else(
        env: str, task: str | None, role: str, action_type: str, payload: dict[str, Any], field: str,
        wrong: Any) -> None:
    result, state = _stepped(env, task, role, {"action_type": action_type, "payload": {**payload, field: wrong}})
    refused = result.info["action_results"][role]
    assert refused["status"] == "rejected" and refused["reason"] == "malformed", refused
    assert refused["message"] == f"payload.{field}: {NOT_AN_INTEGER}"
    # exactly what any malformed action does (a string the field never took, before the rule either)
    other, other_state = _stepped(env, task, role, {"action_type": action_type,
                                                    "payload": {**payload, field: "many"}})
    assert (result.reward, state) == (other.reward, other_state)


@pytest.mark.parametrize(("env", "task", "role", "action_type", "payload", "field"), CASES)
def test_a_whole_float_is_an_integer_and_a_cached_1_does_not_admit_true(
        env: str, task: str | None, role: str, action_type: str, payload: dict[str, Any], field: str) -> None:
    whole, _ = _stepped(env, task, role, {"action_type": action_type, "payload": {**payload, field: 1.0}})
    assert whole.info["action_results"][role]["reason"] != "malformed"
    made = aaos.make(task, env=env, seed=3) if task else aaos.make(env=env, seed=3)
    made.reset()
    made.step({role: {"action_type": action_type, "payload": {**payload, field: 1}}})  # True == 1 == 1.0
    again = made.step({role: {"action_type": action_type, "payload": {**payload, field: True}}})
    assert again.info["action_results"][role]["reason"] == "malformed"


def test_the_server_refuses_it_with_the_same_words() -> None:
    env, task, role, action_type, payload, field = CASES[0]
    local, _ = _stepped(env, task, role, {"action_type": action_type, "payload": {**payload, field: "5"}})
    with TestClient(create_app()) as client:
        session = client.post("/reset", json={"task": task, "seed": 3}).json()["session_id"]
        answer = client.post("/step", json={"session_id": session, "action": {role: {
            "action_type": action_type, "payload": {**payload, field: "5"}}}})
    assert answer.status_code == 422
    [detail] = answer.json()["detail"]
    assert detail.endswith(local.info["action_results"][role]["message"]), detail
