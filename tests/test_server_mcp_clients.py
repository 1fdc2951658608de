"""Off-the-shelf MCP clients against a real server on loopback: the official MCP Python SDK (`ClientSession` over
`streamable_http_client`), fastmcp's `Client` and openenv's `MCPToolClient` in its default mode (tool calls as
WS /ws steps) each play a short episode of every environment through the MCP tools, and every reward, the views
and the final score are the in-process episode's."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest
from fastapi import FastAPI
from fastmcp import Client
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import McpError
from mcp.types import LATEST_PROTOCOL_VERSION
from openenv.core.env_server.mcp_types import CallToolAction, CallToolObservation
from openenv.core.mcp_client import MCPToolClient

import aaos
from aaos.server.background import BackgroundServer

SEED = 3
Call = Callable[[str, dict[str, Any]], Awaitable[Any]]
"""Calls one MCP tool with its arguments and returns the tool's value."""


def frozen(value: Any) -> Any:
    return json.loads(json.dumps(value))


def shortest_task(env: str) -> str:
    return min(aaos.spec(env).tasks, key=lambda task: task.max_steps).id


async def play(call: Call, list_names: Callable[[], Awaitable[list[str]]], env: str) -> int:
    """Play one episode of `env` through the tools, the heuristic champion choosing from the observations the
    tools return, and check each answer against the same episode in process; returns the steps taken. The first
    step is one role's action through its own action tool, the others go through joint_action."""
    task = shortest_task(env)
    local = aaos.make(task, env=env, seed=SEED)
    policy = aaos.policies.make("heuristic", seed=0, env=env)
    policy.reset(0)
    policy.bind(local)
    observation = await call("new_episode", {"env": env, "task": task, "seed": SEED})
    assert observation == frozen(local.reset())
    assert set(await list_names()) == {a.name for a in aaos.spec(env).actions} | {"joint_action", "new_episode"}

    joint = policy.act(observation)
    role, action = next((r, a) for r, a in joint.items() if a["action_type"] != "no_op")
    answer = await call(action["action_type"], {"role": role, **action["payload"]})
    result = local.step({role: action})
    assert (answer["reward"], answer["done"], answer["score"]) == (result.reward, result.done, result.info["score"])
    assert answer["view"] == frozen(result.observation["agent_observations"][role])
    observation, steps = frozen(result.observation), 1
    while not result.done:
        joint = policy.act(observation)
        answer = await call("joint_action", {"actions": joint})
        result = local.step(joint)
        steps += 1
        assert (answer["reward"], answer["done"]) == (result.reward, result.done)
        observation = answer["observation"]
        assert observation == frozen(result.observation)
    assert answer["info"]["score"] == result.info["score"]
    return steps


@asynccontextmanager
async def sdk_session(url: str) -> AsyncIterator[ClientSession]:
    async with streamable_http_client(f"{url}/mcp") as (read, write, _), ClientSession(read, write) as session:
        await session.initialize()
        yield session


async def play_with_the_mcp_sdk(url: str) -> list[int]:
    async with sdk_session(url) as session:
        await session.send_ping()

        async def call(name: str, arguments: dict[str, Any]) -> Any:
            result = await session.call_tool(name, arguments)
            assert not result.isError and result.structuredContent is not None
            text = result.content[0].text if result.content else "null"  # type: ignore[union-attr]
            value = result.structuredContent.get("result") if name == "new_episode" else result.structuredContent
            assert json.loads(text) == value  # the text content is the same value, for clients that read text
            return value

        async def names() -> list[str]:
            return [tool.name for tool in (await session.list_tools()).tools]

        return [await play(call, names, env) for env in aaos.env_ids()]


async def play_with_fastmcp(url: str) -> list[int]:
    async with Client(f"{url}/mcp") as client:
        assert await client.ping()

        async def call(name: str, arguments: dict[str, Any]) -> Any:
            return (await client.call_tool(name, arguments)).data

        async def names() -> list[str]:
            return [tool.name for tool in await client.list_tools()]

        return [await play(call, names, env) for env in aaos.env_ids()]


async def play_with_openenv(url: str) -> list[int]:
    async with MCPToolClient(base_url=url) as client:
        async def call(name: str, arguments: dict[str, Any]) -> Any:
            if name == "new_episode":  # the client's own convenience call, once an episode
                return await client.call_tool(name, **arguments)
            stepped = await client.step(CallToolAction(tool_name=name, arguments=arguments))
            observation = stepped.observation
            assert isinstance(observation, CallToolObservation) and observation.error is None
            value = observation.result["data"]
            assert (stepped.reward, stepped.done) == (value["reward"], value["done"])  # the step's, beside the value
            return value

        async def names() -> list[str]:
            return [tool.name for tool in await client.list_tools(use_cache=False)]

        return [await play(call, names, env) for env in aaos.env_ids()]


@pytest.mark.parametrize("player", [play_with_the_mcp_sdk, play_with_fastmcp, play_with_openenv])
def test_a_standard_client_plays_every_environment_as_in_process(
        mcp_app: FastAPI, mcp_server: BackgroundServer, player: Callable[[str], Awaitable[list[int]]]) -> None:
    steps = asyncio.run(player(mcp_server.url))
    assert len(steps) == len(aaos.env_ids()) and min(steps) >= 2  # every environment, each episode to its end
    assert len(mcp_app.state.mcp_sessions) == 0  # a standard client ends its session when it closes (DELETE /mcp)


async def refusals_to_the_mcp_sdk(url: str) -> dict[str, Any]:
    """What the official SDK's client gets for a tool input the environment refuses, for an unknown tool and for a
    step after the episode ended, with what it negotiated."""
    async with streamable_http_client(f"{url}/mcp") as (read, write, _), ClientSession(read, write) as session:
        version = (await session.initialize()).protocolVersion
        await session.call_tool("new_episode", {"env": "org", "task": shortest_task("org"), "seed": SEED})
        invalid = await session.call_tool("query_metrics", {"role": "engineer", "metric": "nope"})
        valid = await session.call_tool("query_metrics", {"role": "engineer", "metric": "latency"})
        with pytest.raises(McpError) as unknown:
            await session.call_tool("fly", {})
        while not (await session.call_tool("joint_action", {"actions": {}})).structuredContent["done"]:  # type: ignore[index]
            pass
        over = await session.call_tool("joint_action", {"actions": {}})
        return {"version": version, "invalid": invalid, "valid": valid, "unknown": unknown.value.error, "over": over}


def test_a_refused_tool_call_is_a_result_the_model_reads_and_an_unknown_tool_an_error(
        mcp_server: BackgroundServer) -> None:
    answers = asyncio.run(refusals_to_the_mcp_sdk(mcp_server.url))
    assert answers["version"] == LATEST_PROTOCOL_VERSION == "2025-11-25"
    invalid, over = answers["invalid"], answers["over"]
    assert invalid.isError and invalid.structuredContent is None
    assert "payload.metric: Input should be 'latency'" in invalid.content[0].text
    assert answers["valid"].structuredContent["view"]["step"] == 1  # the refused call took no step
    assert over.isError and "call new_episode to start another" in over.content[0].text
    assert answers["unknown"].code == -32602 and "unknown tool 'fly'" in answers["unknown"].message
