"""The WebSocket API through the typed OpenEnv client, raw WebSocket error handling, and the MCP tools."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

import aaos
from aaos.server.app import create_app
from aaos.server.background import BackgroundServer
from aaos.server.client import AAOSEnv
from aaos.server.models import AAOSAction
from aaos.server.sessions import SessionConfig

MAX_WS = 4
QUERY = {"engineer": {"action_type": "query_metrics", "payload": {"metric": "latency"}}}


@pytest.fixture(scope="module")
def server() -> Iterator[BackgroundServer]:
    with BackgroundServer(create_app(SessionConfig(max_sessions=MAX_WS, ttl=600))) as running:
        yield running


def canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def reference(task: str, scenario: str, seed: int) -> list[str]:
    """The champion's episode in process, one canonical (observation, reward, done, info) per step."""
    env = aaos.make(task, scenario=scenario, seed=seed)
    policy = aaos.policies.make("heuristic")
    observation = env.reset()
    steps = [canonical({"observation": observation, "reward": None, "done": False, "info": {}})]
    while True:
        result = env.step(policy.act(observation))
        observation = result.observation
        steps.append(canonical(result.to_dict()))
        if result.done:
            return steps


def as_step(result: Any) -> str:
    observation = result.observation
    return canonical({"observation": observation.env_observation(), "reward": result.reward, "done": result.done,
                      "info": observation.info})


def test_sync_client_episode_is_exactly_the_in_process_episode(server: BackgroundServer) -> None:
    expected = reference("crisis_management", "silent_data_drift", 2)
    policy = aaos.policies.make("heuristic")
    with AAOSEnv(base_url=server.url).sync() as env:
        result = env.reset(task="crisis_management", scenario="silent_data_drift", seed=2, episode_id="ws-1")
        seen = [as_step(result)]
        while not result.done:
            result = env.step(policy.act(result.observation.env_observation()))
            seen.append(as_step(result))
        state = env.state()
    assert seen == expected
    assert state.episode_id == "ws-1" and state.step_count == len(expected) - 1
    assert state.model_dump()["task"] == "crisis_management"


def test_async_clients_run_side_by_side_without_cross_talk(server: BackgroundServer) -> None:
    plans = [("full_episode", "product_launch_failure", 0), ("org_simulation", "resource_conflict", 10_000),
             ("crisis_management", "policy_change_shock", 5)]

    async def episode(task: str, scenario: str, seed: int) -> list[str]:
        policy = aaos.policies.make("heuristic")
        async with AAOSEnv(base_url=server.url) as env:
            result = await env.reset(task=task, scenario=scenario, seed=seed)
            seen = [as_step(result)]
            while not result.done:
                result = await env.step(AAOSAction.model_validate(policy.act(result.observation.env_observation())))
                seen.append(as_step(result))
            return seen

    async def run() -> list[list[str]]:
        return await asyncio.gather(*(episode(*plan) for plan in plans))

    for plan, seen in zip(plans, asyncio.run(run()), strict=True):
        assert seen == reference(*plan)


def test_client_errors_say_what_to_fix_and_keep_the_session(server: BackgroundServer) -> None:
    with AAOSEnv(base_url=server.url).sync() as env:
        env.reset(task="org_simulation", seed=1)
        with pytest.raises(RuntimeError, match="incident_id: no incident with id 'incident_nope'"):
            env.step({"engineer": {"action_type": "resolve_incident", "payload": {"incident_id": "incident_nope"}}})
        with pytest.raises(RuntimeError, match="task: Input should be"):
            env.reset(task="juggling")
        with pytest.raises(RuntimeError, match="colour: Extra inputs"):
            env.reset(colour="blue")
        assert env.state().step_count == 0
        assert env.step(QUERY).observation.step_count == 1


def test_raw_websocket_bad_messages_get_errors_and_the_connection_survives(server: BackgroundServer) -> None:
    with connect(server.url.replace("http", "ws") + "/ws") as ws:
        def send(message: Any) -> dict[str, Any]:
            ws.send(message if isinstance(message, str) else json.dumps(message))
            return json.loads(ws.recv(timeout=30))

        assert send({"type": "reset", "data": {"task": "org_simulation", "seed": 0}})["type"] == "observation"
        approve = {"action_type": "approve_resource", "payload": {"amount": 5, "resource_type": "compute"}}
        forbidden = send({"type": "step", "data": {"oversight": approve}})
        assert forbidden["type"] == "error" and forbidden["data"]["code"] == "VALIDATION_ERROR"
        assert "approve_resource" in json.dumps(forbidden["data"]["errors"])
        assert send("{garbage")["data"]["code"] == "INVALID_JSON"
        assert send({"type": "teleport"})["data"]["code"] == "UNKNOWN_TYPE"
        deep: Any = []
        for _ in range(40):
            deep = [deep]
        assert send({"type": "step", "data": {"metadata": {"x": deep}}})["type"] == "error"
        result = send({"type": "step", "data": QUERY})
        assert result["type"] == "observation" and result["data"]["observation"]["step_count"] == 1
        state = send({"type": "state"})
        assert state["type"] == "state" and state["data"]["step"] == 1


def test_step_after_done_over_websocket_says_to_reset(server: BackgroundServer) -> None:
    with AAOSEnv(base_url=server.url).sync() as env:
        result = env.reset(task="org_simulation", scenario="product_launch_failure", seed=0)
        policy = aaos.policies.make("heuristic")
        while not result.done:
            result = env.step(policy.act(result.observation.env_observation()))
        with pytest.raises(RuntimeError, match="call reset"):
            env.step({})
        assert not env.reset(seed=1).done


def test_websocket_sessions_are_capped(server: BackgroundServer) -> None:
    uri = server.url.replace("http", "ws") + "/ws"
    with contextlib.ExitStack() as stack:
        for _ in range(MAX_WS):  # each answers a message, so its session exists before the next connects
            ws = stack.enter_context(connect(uri))
            ws.send(json.dumps({"type": "state"}))
            assert json.loads(ws.recv(timeout=30))["type"] == "state"
        with connect(uri) as extra:
            refused = json.loads(extra.recv(timeout=30))
        assert refused["data"]["code"] == "CAPACITY_REACHED"
    for _ in range(100):  # slots free up once the server has seen the connections close
        with connect(uri) as again, contextlib.suppress(ConnectionClosed):
            again.send(json.dumps({"type": "state"}))
            if json.loads(again.recv(timeout=30))["type"] == "state":
                break
        time.sleep(0.05)
    else:
        pytest.fail("closed WebSocket sessions never freed their slots")


# --- MCP ---------------------------------------------------------------------------------------------------


def rpc(http: httpx.Client, method: str, params: dict[str, Any]) -> dict[str, Any]:
    response = http.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
    assert response.status_code == 200
    return response.json()


def test_mcp_lists_every_action_as_a_tool_with_its_roles(server: BackgroundServer) -> None:
    with httpx.Client(base_url=server.url, timeout=60) as http:
        tools = {t["name"]: t for t in rpc(http, "tools/list", {})["result"]["tools"]}
    spec = aaos.spec()
    assert set(tools) == {a.name for a in spec.actions} | {"joint_action", "new_episode"}
    for action in spec.actions:
        schema = tools[action.name]["inputSchema"]
        role = schema["properties"]["role"]
        assert role.get("enum", [role.get("const")]) == list(action.roles)
        assert set(schema["properties"]) == {"role", *action.payload.model_fields}


def test_mcp_tools_drive_an_episode_in_a_session(server: BackgroundServer) -> None:
    with httpx.Client(base_url=server.url, timeout=60) as http:
        session_id = rpc(http, "openenv/session/create", {})["result"]["session_id"]
        try:
            def call(name: str, **arguments: Any) -> dict[str, Any]:
                return rpc(http, "tools/call", {"session_id": session_id, "name": name, "arguments": arguments})

            first = call("new_episode", task="full_episode", scenario="product_launch_failure", seed=0)["result"]
            assert first == aaos.make("full_episode", scenario="product_launch_failure", seed=0).reset()
            task_id = first["agent_observations"]["product_manager"]["visible_tasks"][0]["id"]
            delegated = call("delegate_task", role="product_manager", task_id=task_id, to="engineer")["result"]
            assert delegated["action_result"]["status"] == "applied" and delegated["view"]["step"] == 1
            refused = call("delegate_task", role="oversight", task_id=task_id, to="engineer")
            assert "oversight may not use delegate_task" in refused["error"]["message"]
            joint = call("joint_action", actions=QUERY)["result"]
            assert joint["observation"]["step_count"] == 2  # the refused call changed nothing
            assert "task: Input should be" in call("new_episode", task="juggling")["error"]["message"]
        finally:
            rpc(http, "openenv/session/close", {"session_id": session_id})
