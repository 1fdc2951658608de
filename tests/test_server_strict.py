"""The wire is strict (no coercion between JSON types), bodies must be UTF-8 JSON, and a server can hide the
ground truth (--hide-state / AAOS_HIDE_STATE): each against a real server on loopback."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from helpers import serving
from pydantic import ValidationError

from aaos.server.app import create_app
from aaos.server.background import BackgroundServer
from aaos.server.models import MAX_JSON_DEPTH, MAX_MESSAGES, WireAction, json_depth_exceeds, typed_joint_action
from aaos.server.sessions import SessionConfig
from aaos.server.wire import dumps


@pytest.fixture(scope="module")
def http() -> Iterator[httpx.Client]:
    with BackgroundServer(create_app(SessionConfig(max_sessions=64, max_per_client=64))) as server, \
            httpx.Client(base_url=server.url, timeout=30) as client:
        yield client


def open_session(http: httpx.Client, **params: Any) -> str:
    response = http.post("/reset", json=params)
    assert response.status_code == 200, response.text
    return response.json()["session_id"]


def approve(amount: Any) -> dict[str, Any]:
    payload = {"amount": amount, "resource_type": "compute"}
    return {"operations": {"action_type": "approve_resource", "payload": payload}}


@pytest.mark.parametrize("seed", [True, False, "5", 2.5, [3], {"n": 3}])
def test_reset_refuses_a_seed_of_the_wrong_json_type(http: httpx.Client, seed: Any) -> None:
    response = http.post("/reset", json={"seed": seed})
    assert response.status_code == 422
    assert response.json()["detail"][0].startswith("seed: Input should be a valid integer")


def test_a_number_without_a_fraction_is_an_integer_as_in_json_schema(http: httpx.Client) -> None:
    session_id = open_session(http, seed=7.0)
    assert http.get("/state", params={"session_id": session_id}).json()["seed"] == 7


@pytest.mark.parametrize(("body", "words"), [
    ({"task": 3}, "task: Input should be a valid string"),
    ({"episode_id": True}, "episode_id: Input should be a valid string"),
    ({"session_id": 12345}, "session_id: Input should be a valid string"),
])
def test_reset_refuses_numbers_and_booleans_for_strings(http: httpx.Client, body: dict[str, Any], words: str) -> None:
    response = http.post("/reset", json=body)
    assert response.status_code == 422 and response.json()["detail"] == [words]


@pytest.mark.parametrize("amount", [True, "5", 5.5, None])
def test_step_refuses_a_payload_integer_of_the_wrong_json_type_and_changes_nothing(http: httpx.Client,
                                                                                   amount: Any) -> None:
    session_id = open_session(http, seed=2)
    before = http.get("/state", params={"session_id": session_id}).json()
    response = http.post("/step", json={"session_id": session_id, "action": approve(amount)})
    assert response.status_code == 422
    assert response.json()["detail"][0].startswith("action.operations.approve_resource.payload.amount: Input "
                                                   "should be a valid integer")
    assert http.get("/state", params={"session_id": session_id}).json() == before


@pytest.mark.parametrize("amount", [5, 5.0])
def test_a_json_integer_and_a_string_literal_are_still_accepted(http: httpx.Client, amount: float) -> None:
    session_id = open_session(http, seed=2)
    response = http.post("/step", json={"session_id": session_id, "action": approve(amount)})
    assert response.status_code == 200
    assert response.json()["info"]["action_results"]["operations"]["action_type"] == "approve_resource"


# --- bodies that are not UTF-8 JSON ---------------------------------------------------------------------------

DOCUMENT = '{"episode_id": "caf\u00e9 \u00b1", "seed": 1}'


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-16-be", "utf-32", "latin-1", "cp1252"])
@pytest.mark.parametrize("path", ["/reset", "/step", "/close"])
def test_a_body_that_is_not_utf8_is_a_400(http: httpx.Client, encoding: str, path: str) -> None:
    response = http.post(path, content=DOCUMENT.encode(encoding), headers={"content-type": "application/json"})
    assert response.status_code == 400
    assert response.json() == {"detail": "the request body is not UTF-8: send JSON encoded as UTF-8"}


def test_the_same_document_in_utf8_opens_a_session(http: httpx.Client) -> None:
    response = http.post("/reset", content=DOCUMENT.encode(), headers={"content-type": "application/json"})
    assert response.status_code == 200
    state = http.get("/state", params={"session_id": response.json()["session_id"]}).json()
    assert (state["episode_id"], state["seed"]) == ("caf\u00e9 \u00b1", 1)


# --- hiding the ground truth -----------------------------------------------------------------------------------


def test_a_server_that_hides_the_state_refuses_get_state_but_plays_on() -> None:
    with BackgroundServer(create_app(SessionConfig(hide_state=True))) as server, \
            httpx.Client(base_url=server.url, timeout=30) as http:
        session_id = open_session(http, seed=4)
        assert http.post("/step", json={"session_id": session_id, "action": {}}).status_code == 200
        for asked in (session_id, "no-such-session"):
            response = http.get("/state", params={"session_id": asked})
            assert response.status_code == 403
            assert "hides the ground truth" in response.json()["detail"]
        assert http.post("/close", json={"session_id": session_id}).status_code == 200


@pytest.mark.parametrize(("variables", "options"), [({"AAOS_HIDE_STATE": "1"}, ()), ({}, ("--hide-state",))],
                         ids=["variable", "flag"])
def test_aaos_serve_hides_the_state_by_variable_or_flag(variables: dict[str, str], options: tuple[str, ...]) -> None:
    environment = {key: value for key, value in os.environ.items() if key != "AAOS_HIDE_STATE"}
    with serving({**environment, **variables}, *options) as url, httpx.Client(base_url=url, timeout=30) as http:
        session_id = open_session(http)
        response = http.get("/state", params={"session_id": session_id})
        assert response.status_code == 403 and "AAOS_HIDE_STATE=1" in response.json()["detail"]


def test_aaos_serve_shows_the_state_by_default() -> None:
    environment = {key: value for key, value in os.environ.items() if key != "AAOS_HIDE_STATE"}
    with serving(environment) as url, httpx.Client(base_url=url, timeout=30) as http:
        assert http.get("/state", params={"session_id": open_session(http)}).status_code == 200


# --- the accepted-action cache: a role's action validated once, never a different verdict --------------------


def whole_way(data: dict[str, Any]) -> dict[str, Any] | str:
    try:
        return WireAction.model_validate(data).typed("org").to_joint_action()
    except ValidationError as error:
        return str(error.errors()[0]["loc"]) + error.errors()[0]["msg"]


def remembered(data: dict[str, Any]) -> dict[str, Any] | str:
    try:
        return typed_joint_action("org", data)
    except ValidationError as error:
        return str(error.errors()[0]["loc"]) + error.errors()[0]["msg"]


@pytest.mark.parametrize("refused", [True, "5", 5.5, None, [5]])
def test_an_accepted_amount_does_not_let_a_value_of_another_json_type_through(refused: Any) -> None:
    for amount in (5, 5.0):
        assert remembered(approve(amount)) == remembered(approve(amount)) == whole_way(approve(amount))
    verdict = remembered(approve(refused))
    assert isinstance(verdict, str) and "amount" in verdict
    assert verdict == remembered(approve(refused)) == whole_way(approve(refused))


def test_a_remembered_role_action_beside_an_unknown_role_or_a_bad_one_is_still_refused() -> None:
    good = {**approve(5), "engineer": None}
    assert remembered(good) == whole_way(good) == {"operations": whole_way(approve(5))["operations"]}
    for bad in ({**good, "intern": None}, {**good, "engineer": {"action_type": "approve_resource"}},
                {**good, "metadata": None}):
        assert isinstance(remembered(bad), str)
        assert remembered(bad) == whole_way(bad)


def test_changing_a_returned_joint_action_changes_no_later_one() -> None:
    first = remembered(approve(7))
    assert isinstance(first, dict)
    first["operations"]["payload"]["amount"] = 999
    first["operations"]["action_type"] = "no_op"
    assert remembered(approve(7)) == whole_way(approve(7))


def test_answers_encode_non_string_keys_and_models_as_json_does() -> None:
    """An answer with a non-string key (a kit environment's state may have one) or a pydantic model in it is
    encoded, not refused: the key as JSON writes it, the model as pydantic dumps it; plain answers are unchanged."""
    action = WireAction.model_validate({"engineer": {"action_type": "no_op"}})
    assert json.loads(dumps({"state": {3: "three", "x": [1.5, None]}})) == {"state": {"3": "three", "x": [1.5, None]}}
    assert json.loads(dumps({"action": action})) == {"action": action.model_dump(mode="json")}
    assert dumps({"a": [1, "two", True]}) == b'{"a":[1,"two",true]}'
    with pytest.raises(TypeError):
        dumps({"thing": object()})


def nested_containers(depth: int, leaf: Any) -> Any:
    """`leaf` inside `depth` containers, objects and arrays in turn."""
    value = leaf
    for level in range(depth):
        value = [value] if level % 2 else {"k": value}
    return value


@pytest.mark.parametrize("depth", [1, 2, MAX_JSON_DEPTH - 1, MAX_JSON_DEPTH, MAX_JSON_DEPTH + 1, 40])
@pytest.mark.parametrize("leaf", ["text", [], {}])
def test_the_depth_limit_counts_every_container_from_the_top(depth: int, leaf: Any) -> None:
    levels = depth + (leaf in ([], {}))  # an empty container is a level too
    assert json_depth_exceeds(nested_containers(depth, leaf), MAX_JSON_DEPTH) is (levels > MAX_JSON_DEPTH)
    beside = {"session_id": "s", "action": {"engineer": {"action_type": "no_op"}},
              "x": [nested_containers(depth, leaf)]}
    assert json_depth_exceeds(beside, MAX_JSON_DEPTH) is (levels + 2 > MAX_JSON_DEPTH)
    assert json_depth_exceeds("text", 0) is False and json_depth_exceeds([], 0) is True


# --- text no UTF-8 can hold, numbers too long to decode, and long lists of problems ------------------------------

LONE_SURROGATES = ["\\ud800", "\\udfff", "x\\ud83d", "\\ude00y"]  # as escaped in JSON text; "\ud83d\ude00" is a pair


def body_with(text: str, session_id: str, where: str) -> bytes:
    """A /step body with `text` (JSON-escaped already) in a payload string, a metadata string or a role key."""
    plan = {"product_manager": {"action_type": "propose_plan", "payload": {"plan": "@", "addresses": "compute"}}}
    action = {"payload": plan, "metadata": {"metadata": {"note": "@"}, **plan}, "key": {"@": None}}[where]
    return json.dumps({"session_id": session_id, "action": action}).replace("@", text).encode()


@pytest.mark.parametrize("text", LONE_SURROGATES)
@pytest.mark.parametrize("where", ["payload", "metadata", "key"])
def test_a_lone_surrogate_anywhere_in_an_action_is_a_422_naming_the_field(http: httpx.Client, text: str,
                                                                          where: str) -> None:
    session_id = open_session(http, seed=3)
    before = http.get("/state", params={"session_id": session_id}).json()
    response = http.post("/step", content=body_with(text, session_id, where),
                         headers={"content-type": "application/json"})
    assert response.status_code == 422, response.text
    (message,) = response.json()["detail"]
    assert message.startswith("action") and "lone surrogate" in message, message
    assert http.get("/state", params={"session_id": session_id}).json() == before


def test_a_surrogate_pair_is_the_character_it_encodes(http: httpx.Client) -> None:
    session_id = open_session(http, seed=3)
    response = http.post("/step", content=body_with("\\ud83d\\ude00", session_id, "payload"),
                         headers={"content-type": "application/json"})
    assert response.status_code == 200, response.text
    assert response.json()["info"]["action_results"]["product_manager"]["payload"]["plan"] == "\U0001f600"


@pytest.mark.parametrize(("path", "body"), [("/reset", '{"episode_id": "\\ud800"}'),
                                            ("/reset", '{"roles": ["\\udc00"]}'),
                                            ("/close", '{"session_id": "a\\ud800"}')])
def test_a_lone_surrogate_in_a_request_field_says_so(http: httpx.Client, path: str, body: str) -> None:
    response = http.post(path, content=body.encode(), headers={"content-type": "application/json"})
    assert response.status_code == 422
    assert "lone surrogate" in response.json()["detail"][0]


@pytest.mark.parametrize("path", ["/reset", "/step", "/close"])
def test_an_integer_too_long_to_decode_is_a_400_that_says_so(http: httpx.Client, path: str) -> None:
    body = b'{"seed": ' + b"7" * 5000 + b"}"
    response = http.post(path, content=body, headers={"content-type": "application/json"})
    assert response.status_code == 400
    detail = response.json()["detail"]
    assert f"more than {sys.get_int_max_str_digits()} digits" in detail and "nest" not in detail, detail


def test_a_long_list_of_problems_says_how_many_more_there_are(http: httpx.Client) -> None:
    session_id = open_session(http)
    unknown_roles = {f"intern_{n}": {"action_type": "no_op"} for n in range(MAX_MESSAGES + 7)}
    response = http.post("/step", json={"session_id": session_id, "action": unknown_roles})
    assert response.status_code == 422
    detail = response.json()["detail"]
    assert len(detail) == MAX_MESSAGES + 1 and detail[:2] == ["action.intern_0: Extra inputs are not permitted",
                                                              "action.intern_1: Extra inputs are not permitted"]
    assert detail[-1] == "and 7 more"
    exactly = {f"intern_{n}": None for n in range(MAX_MESSAGES)}
    listed = http.post("/step", json={"session_id": session_id, "action": exactly}).json()["detail"]
    assert len(listed) == MAX_MESSAGES and "more" not in listed[-1]
