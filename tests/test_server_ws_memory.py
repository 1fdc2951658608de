"""Closed and expired sessions give their environments back: nothing in the server (session pools, openenv's
maps, MCP servers, caches) keeps them alive once they are gone (weak references die after a collection)."""

from __future__ import annotations

import gc
import json
import time
import weakref
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from websockets.sync.client import ClientConnection, connect

from aaos.server.app import create_app
from aaos.server.background import BackgroundServer
from aaos.server.sessions import SessionConfig

TTL = 600.0
QUERY = {"engineer": {"action_type": "query_metrics", "payload": {"metric": "latency"}}}


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture()
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture()
def app(clock: FakeClock) -> FastAPI:
    return create_app(SessionConfig(max_sessions=8, ttl=TTL, max_per_client=8, evict_after=TTL), clock)


@pytest.fixture()
def server(app: FastAPI) -> Iterator[BackgroundServer]:
    with BackgroundServer(app) as running:
        yield running


def ask(ws: ClientConnection, message: dict[str, Any]) -> dict[str, Any]:
    ws.send(json.dumps(message))
    answer: dict[str, Any] = json.loads(ws.recv(timeout=60))
    return answer


def alive(refs: list[weakref.ref[Any]]) -> int:
    gc.collect()
    return sum(ref() is not None for ref in refs)


def test_closed_and_expired_http_sessions_are_collected(app: FastAPI, server: BackgroundServer,
                                                        clock: FakeClock) -> None:
    with httpx.Client(base_url=server.url, timeout=60) as http:
        ids = [http.post("/reset", json={"seed": seed}).json()["session_id"] for seed in range(3)]
        for session in ids:
            assert http.post("/step", json={"session_id": session, "action": QUERY}).status_code == 200
        closed, expired, kept = ([weakref.ref(app.state.sessions.get(s).env)] for s in ids)
        assert http.post("/close", json={"session_id": ids[0]}).status_code == 200
        assert alive(closed) == 0
        clock.now += TTL / 2
        assert http.post("/step", json={"session_id": ids[2], "action": QUERY}).status_code == 200
        clock.now += TTL / 2 + 1  # the second session has been idle past the ttl; the third has not
        assert len(app.state.sessions) == 1
        assert alive(expired) == 0 and alive(kept) == 1


def websocket_environments(app: FastAPI, server: BackgroundServer, use_mcp_tools: bool) -> list[weakref.ref[Any]]:
    """Open three WebSocket connections one after the other, play a step in each (with an MCP tool call too if
    asked), close them, and wait until the server has let them go; weak references to their environments."""
    url = server.url.replace("http", "ws") + "/ws"
    refs = []
    for _ in range(3):
        with connect(url) as ws:
            ask(ws, {"type": "reset", "data": {"seed": 1}})
            ask(ws, {"type": "step", "data": QUERY})
            created = ask(ws, {"type": "mcp", "data": {"jsonrpc": "2.0", "id": 1, "method": "openenv/session/create",
                                                       "params": {}}})
            refs.append(weakref.ref(app.state.ws_sessions.get(created["data"]["result"]["session_id"]).env))
            if use_mcp_tools:
                called = ask(ws, {"type": "mcp", "data": {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                                                          "params": {"name": "query_metrics", "arguments": {
                                                              "role": "engineer", "metric": "latency"}}}})
                assert called["data"]["result"]["view"]["step"] == 2
    for _ in range(3000):  # the server lets go of a connection once it has seen it close (bounded wait)
        if len(app.state.ws_sessions) == 0:
            return refs
        time.sleep(0.01)
    pytest.fail("the server never let go of its WebSocket connections")


def test_closed_websocket_connections_are_collected(app: FastAPI, server: BackgroundServer) -> None:
    assert alive(websocket_environments(app, server, use_mcp_tools=False)) == 0


def test_sessions_that_used_mcp_tools_are_collected(app: FastAPI, server: BackgroundServer) -> None:
    assert alive(websocket_environments(app, server, use_mcp_tools=True)) == 0
