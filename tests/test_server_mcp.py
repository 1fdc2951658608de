"""The /mcp routes against a real server on loopback: arguments a tool refuses are JSON-RPC -32602 (invalid
params) naming the argument for openenv's clients, a result with isError for a standard client, and change
nothing; MCP sessions have their own pool; the streamable HTTP lifecycle a standard MCP client goes through
(initialize, Mcp-Session-Id, notifications, ping, DELETE); openenv's MCP calls as WS /ws steps.
tests/test_server_mcp_clients.py plays whole episodes with the real clients."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from mcp.types import LATEST_PROTOCOL_VERSION
from websockets.sync.client import connect

from aaos.server.app import create_app
from aaos.server.background import BackgroundServer
from aaos.server.models import MAX_MESSAGES
from aaos.server.sessions import SessionConfig

INVALID_PARAMS = -32602


@pytest.fixture(scope="module")
def http(mcp_server: BackgroundServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=mcp_server.url, timeout=30) as client:
        yield client


def rpc(http: httpx.Client, method: str, params: dict[str, Any]) -> dict[str, Any]:
    response = http.post("/mcp", json={"jsonrpc": "2.0", "id": 7, "method": method, "params": params})
    assert response.status_code == 200
    return response.json()


CLIENT_INFO = {"capabilities": {}, "clientInfo": {"name": "test", "version": "0"}}


def initialize(http: httpx.Client, version: str = "2025-06-18") -> httpx.Response:
    return http.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                   "params": {"protocolVersion": version, **CLIENT_INFO}})


@pytest.fixture
def session(http: httpx.Client) -> Iterator[str]:
    session_id = rpc(http, "openenv/session/create", {})["result"]["session_id"]
    rpc(http, "tools/call", {"session_id": session_id, "name": "new_episode",
                             "arguments": {"task": "full_episode", "seed": 0}})
    yield session_id
    rpc(http, "openenv/session/close", {"session_id": session_id})


@pytest.mark.parametrize(("name", "arguments", "words"), [
    ("new_episode", {"seed": True}, "seed: Input should be a valid integer"),
    ("new_episode", {"seed": "5"}, "seed: Input should be a valid integer"),
    ("new_episode", {"task": "juggling"}, "task: Input should be"),
    ("approve_resource", {"role": "operations", "amount": True, "resource_type": "compute"},
     "amount: Input should be a valid integer"),
    ("approve_resource", {"role": "operations", "amount": 5.5, "resource_type": "compute"},
     "amount: Input should be a valid integer"),
    ("approve_resource", {"role": "oversight", "amount": 5, "resource_type": "compute"},
     "oversight may not use approve_resource"),
    ("query_metrics", {"role": "engineer", "metric": "mood"}, "payload.metric: Input should be"),
    ("query_metrics", {"metric": "latency"}, "missing a required argument: 'role'"),
    ("query_metrics", {"role": "engineer", "metric": "latency", "loud": 1}, "unexpected keyword argument 'loud'"),
    ("resolve_incident", {"role": "engineer", "incident_id": "inc_nope"}, "inc_nope"),
    ("joint_action", {"actions": {"engineer": {"action_type": "query_metrics", "payload": {"metric": 5}}}},
     "payload.metric"),
    ("joint_action", {"actions": [1]}, "a joint action must be an object"),
    ("fly", {}, "unknown tool 'fly'"),
    ("joint_action", {"actions": {}, "roles": ["janitor"]}, "'janitor' is not a role of 'org'"),
    ("new_episode", {"roles": ["janitor"]}, "'janitor' is not a role of 'org'"),
])
def test_arguments_a_tool_refuses_are_invalid_params_and_change_nothing(http: httpx.Client, session: str, name: str,
                                                                        arguments: dict[str, Any],
                                                                        words: str) -> None:
    answer = rpc(http, "tools/call", {"session_id": session, "name": name, "arguments": arguments})
    assert answer["id"] == 7 and answer["error"]["code"] == INVALID_PARAMS, answer
    assert words in answer["error"]["message"] and any(words in p for p in answer["error"]["data"]["problems"])
    stepped = rpc(http, "tools/call", {"session_id": session, "name": "query_metrics",
                                       "arguments": {"role": "engineer", "metric": "latency"}})
    assert stepped["result"]["view"]["step"] == 1  # the refused call took no step


def test_the_tools_answer_as_lean_as_asked(http: httpx.Client, session: str) -> None:
    def call(name: str, arguments: dict[str, Any]) -> Any:
        return rpc(http, "tools/call", {"session_id": session, "name": name, "arguments": arguments})["result"]

    engineer_only = call("new_episode", {"seed": 1, "roles": ["engineer"]})
    assert list(engineer_only["agent_observations"]) == ["engineer"] and engineer_only["step_count"] == 0
    action = {"engineer": {"action_type": "query_metrics", "payload": {"metric": "latency"}}}
    whole = call("joint_action", {"actions": action})
    assert len(whole["observation"]["agent_observations"]) == 6
    cut = call("joint_action", {"actions": action, "roles": ["engineer", "oversight"]})
    assert list(cut["observation"]["agent_observations"]) == ["engineer", "oversight"]
    assert "system_metrics" in whole["observation"] and "system_metrics" not in cut["observation"]
    assert list(cut["info"]["action_results"]) == ["engineer", "oversight"]
    blind = call("joint_action", {"actions": action, "observe": False})
    assert blind["observation"] is None and blind["info"]["step"] == 3 and isinstance(blind["reward"], float)


@pytest.mark.parametrize(("body", "code"), [
    (b"{nope", -32700),
    (b'{"jsonrpc": "1.0", "method": "tools/list"}', -32600),
    (b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": [1]}', -32600),
    (b'{"jsonrpc": "2.0", "id": 1, "method": "resources/subscribe"}', -32601),
    (b'{"jsonrpc": "2.0", "id": 1, "method": "initialize"}', INVALID_PARAMS),
    (b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"session_id": "gone"}}', INVALID_PARAMS),
    (b'{"jsonrpc": "2.0", "id": 1, "method": "openenv/session/close", "params": {}}', INVALID_PARAMS),
])
def test_malformed_json_rpc_gets_its_standard_error_code(http: httpx.Client, body: bytes, code: int) -> None:
    response = http.post("/mcp", content=body, headers={"content-type": "application/json"})
    assert response.status_code == 200 and response.json()["error"]["code"] == code, response.text


def test_mcp_sessions_have_a_pool_of_their_own() -> None:
    config = SessionConfig(max_sessions=2, max_per_client=2)
    with BackgroundServer(create_app(config)) as server, httpx.Client(base_url=server.url, timeout=30) as http:
        mcp = [rpc(http, "openenv/session/create", {})["result"]["session_id"] for _ in range(2)]
        full = rpc(http, "openenv/session/create", {})["error"]
        assert full["code"] == -32000 and "2 sessions" in full["message"] and full["data"]["retry_after"] >= 1
        assert "openenv/session/close" in full["message"] and "POST /close" not in full["message"]  # its own remedy
        refused = initialize(http)
        assert refused.json()["error"]["code"] == -32000 and "mcp-session-id" not in refused.headers
        assert http.post("/reset", json={}).status_code == 200  # HTTP sessions are not locked out
        ws_url = server.url.replace("http://", "ws://") + "/mcp"
        with connect(ws_url) as refused:  # nor is anything else: but the MCP pool is full
            assert json.loads(refused.recv(timeout=30))["error"]["code"] == -32000
        rpc(http, "openenv/session/close", {"session_id": mcp[0]})
        with connect(ws_url) as socket:
            socket.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                    "params": {"name": "new_episode", "arguments": {"seed": True}}}))
            assert json.loads(socket.recv(timeout=30))["error"]["code"] == INVALID_PARAMS
            socket.send(json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                                    "params": {"name": "query_metrics",
                                               "arguments": {"role": "engineer", "metric": "latency"}}}))
            assert json.loads(socket.recv(timeout=30))["result"]["view"]["step"] == 1


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_finished_episode_and_an_expired_websocket_session_say_so() -> None:
    clock = FakeClock()
    with BackgroundServer(create_app(SessionConfig(ttl=60), clock=clock)) as server, \
            httpx.Client(base_url=server.url, timeout=30) as http, \
            connect(server.url.replace("http://", "ws://") + "/mcp") as socket:
        session_id = rpc(http, "openenv/session/create", {})["result"]["session_id"]

        def call(name: str, **arguments: Any) -> dict[str, Any]:
            return rpc(http, "tools/call", {"session_id": session_id, "name": name, "arguments": arguments})

        call("new_episode", task="org_simulation", seed=0)
        while not call("joint_action", actions={})["result"]["done"]:
            pass
        over = call("joint_action", actions={})["error"]
        assert over["code"] == -32000 and "new_episode" in over["message"]
        assert call("new_episode")["result"]["step_count"] == 0
        clock.now += 61
        socket.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}))
        gone = json.loads(socket.recv(timeout=30))["error"]
        assert gone["code"] == -32000 and "expired or was evicted" in gone["message"]
        assert call("new_episode")["error"]["code"] == INVALID_PARAMS  # the HTTP MCP session expired too


def test_a_standard_client_s_session_lives_from_initialize_to_delete(mcp_app: FastAPI, http: httpx.Client) -> None:
    opened = initialize(http)
    result, session_id = opened.json()["result"], opened.headers["mcp-session-id"]
    assert result["protocolVersion"] == "2025-06-18" and result["capabilities"] == {"tools": {"listChanged": False}}
    assert result["serverInfo"]["name"] == "aaos" and "joint_action" in result["instructions"]
    assert mcp_app.state.mcp_sessions.get(session_id).id == session_id  # a session of the MCP pool
    headers = {"mcp-session-id": session_id, "mcp-protocol-version": "2025-06-18"}

    def post(message: dict[str, Any]) -> httpx.Response:
        return http.post("/mcp", json={"jsonrpc": "2.0", **message}, headers=headers)

    def call(name: str, **arguments: Any) -> dict[str, Any]:
        return post({"id": 9, "method": "tools/call", "params": {"name": name, "arguments": arguments}}).json()

    initialized = post({"method": "notifications/initialized"})
    assert initialized.status_code == 202 and initialized.content == b""
    assert post({"id": 2, "method": "ping"}).json() == {"jsonrpc": "2.0", "id": 2, "result": {}}
    assert post({"id": 3, "method": "resources/list"}).json()["result"] == {"resources": []}
    tools = post({"id": 4, "method": "tools/list"}).json()["result"]["tools"]
    assert {"name", "inputSchema", "outputSchema"} <= set(tools[0]) and tools[-1]["name"] == "new_episode"
    first = call("new_episode", task="org_simulation", seed=2)["result"]
    assert first["isError"] is False and json.loads(first["content"][0]["text"]) == first["structuredContent"]["result"]
    assert first["structuredContent"]["result"]["step_count"] == 0
    refused = call("query_metrics", role="engineer", metric="mood")["result"]
    assert refused["isError"] is True and "payload.metric" in refused["content"][0]["text"]
    assert call("fly")["error"]["code"] == INVALID_PARAMS
    stepped = call("query_metrics", role="engineer", metric="latency")["result"]["structuredContent"]
    assert stepped["view"]["step"] == 1  # the refused call took no step: the session's episode went on

    assert http.delete("/mcp", headers=headers).status_code == 204
    assert http.delete("/mcp", headers=headers).status_code == 404
    gone = post({"id": 5, "method": "ping"})
    assert gone.status_code == 404 and "initialize a new one" in gone.json()["error"]["message"]


@pytest.mark.parametrize(("asked", "answered"), [("2025-03-26", "2025-03-26"), ("1999-01-01", LATEST_PROTOCOL_VERSION)])
def test_initialize_answers_the_client_s_version_or_the_latest(http: httpx.Client, asked: str, answered: str) -> None:
    opened = initialize(http, asked)
    assert opened.json()["result"]["protocolVersion"] == answered
    http.delete("/mcp", headers={"mcp-session-id": opened.headers["mcp-session-id"]})


def test_a_bad_lifecycle_request_is_refused_and_opens_nothing(mcp_app: FastAPI, http: httpx.Client) -> None:
    before = len(mcp_app.state.mcp_sessions)
    bad = http.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": CLIENT_INFO})
    assert bad.json()["error"]["code"] == INVALID_PARAMS and "protocolVersion" in bad.json()["error"]["message"]
    assert "mcp-session-id" not in bad.headers and len(mcp_app.state.mcp_sessions) == before
    version = http.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                        headers={"mcp-protocol-version": "1999-01-01"})
    assert version.status_code == 400 and "2025-06-18" in version.json()["error"]["message"]
    assert http.delete("/mcp").status_code == 400
    assert http.get("/mcp").status_code == 405  # no server-to-client stream: a client reads each POST's answer


def test_a_websocket_answers_no_notification() -> None:
    with BackgroundServer(create_app()) as server, connect(server.url.replace("http://", "ws://") + "/mcp") as socket:
        socket.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        socket.send(json.dumps({"jsonrpc": "2.0", "id": 2, "method": "ping"}))
        assert json.loads(socket.recv(timeout=30)) == {"jsonrpc": "2.0", "id": 2, "result": {}}


def test_openenv_tool_calls_as_websocket_steps_say_what_is_wrong_and_change_nothing(
        mcp_server: BackgroundServer) -> None:
    with connect(mcp_server.url.replace("http://", "ws://") + "/ws") as socket:
        def send(message: dict[str, Any]) -> dict[str, Any]:
            socket.send(json.dumps(message))
            return json.loads(socket.recv(timeout=30))

        def tool(data: dict[str, Any]) -> dict[str, Any]:
            return send({"type": "step", "data": data})["data"]

        send({"type": "reset", "data": {"task": "org_simulation", "seed": 0}})
        listed = tool({"type": "list_tools"})["observation"]["tools"]
        assert {"name", "description", "input_schema"} == set(listed[0]) and listed[-1]["name"] == "new_episode"
        for data, kind, words in [
            ({"type": "call_tool", "tool_name": "query_metrics", "arguments": {"role": "engineer", "metric": "mood"}},
             "invalid_args", "payload.metric"),
            ({"type": "call_tool", "tool_name": "fly"}, "tool_not_found", "unknown tool 'fly'"),
            ({"type": "call_tool", "arguments": {}}, "invalid_args", "tool_name: Field required"),
        ]:
            refused = tool(data)
            assert refused["observation"]["error"]["error_type"] == kind and refused["reward"] is None
            assert words in refused["observation"]["error"]["message"]
        called = tool({"type": "call_tool", "tool_name": "query_metrics",
                       "arguments": {"role": "engineer", "metric": "latency"}})
        value = called["observation"]["result"]["data"]
        assert value["view"]["step"] == 1 and (called["reward"], called["done"]) == (value["reward"], value["done"])
        role_named_type = send({"type": "step", "data": {"type": {"action_type": "no_op", "payload": {}}}})
        assert role_named_type["type"] == "error" and "internal" not in role_named_type["data"]["message"]
        joint = send({"type": "step", "data": {"engineer": {"action_type": "no_op", "payload": {}}}})
        assert joint["data"]["observation"]["step_count"] == 2  # joint actions still step as before


def test_a_long_list_of_refusals_says_how_many_more_there_are(http: httpx.Client, session: str) -> None:
    actions = {f"janitor_{n}": {"action_type": "no_op"} for n in range(MAX_MESSAGES + 5)}
    refused = rpc(http, "tools/call", {"session_id": session, "name": "joint_action",
                                       "arguments": {"actions": actions}})
    problems = refused["error"]["data"]["problems"]
    assert len(problems) == MAX_MESSAGES + 1 and problems[-1] == "and 5 more", problems
    assert refused["error"]["message"].endswith("; and 5 more")


def test_a_method_mcp_does_not_answer_is_a_405_listing_the_methods_it_does(http: httpx.Client) -> None:
    for method in ("GET", "PUT", "PATCH", "OPTIONS"):
        answer = http.request(method, "/mcp")
        assert answer.status_code == 405 and answer.headers["allow"] == "DELETE, POST", (method, answer.headers)
    documented = http.get("/openapi.json").json()["paths"]["/mcp"]
    assert sorted(documented) == ["delete", "post"]
    [header] = documented["delete"]["parameters"]
    assert header["name"] == "Mcp-Session-Id" and header["required"] is True  # its absence is the documented 400
