"""The /mcp routes against a real server on loopback: arguments a tool refuses are JSON-RPC -32602 (invalid
params) naming the argument and change nothing; MCP sessions have their own pool."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from websockets.sync.client import connect

from aaos.server.app import create_app
from aaos.server.background import BackgroundServer
from aaos.server.sessions import SessionConfig

INVALID_PARAMS = -32602


@pytest.fixture(scope="module")
def http() -> Iterator[httpx.Client]:
    with BackgroundServer(create_app(SessionConfig(max_sessions=16, max_per_client=16))) as server, \
            httpx.Client(base_url=server.url, timeout=30) as client:
        yield client


def rpc(http: httpx.Client, method: str, params: dict[str, Any]) -> dict[str, Any]:
    response = http.post("/mcp", json={"jsonrpc": "2.0", "id": 7, "method": method, "params": params})
    assert response.status_code == 200
    return response.json()


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
    (b'{"jsonrpc": "2.0", "id": 1, "method": "initialize"}', -32601),
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
