"""Whose address a client is: the address it connects from, unless the operator names a proxy to trust
(--forwarded-allow-ips / AAOS_FORWARDED_ALLOW_IPS), on HTTP, WebSocket and MCP alike; against real servers on
loopback (in process, `aaos serve` and the Space's configuration)."""

from __future__ import annotations

import json
import os
from contextlib import ExitStack
from typing import Any

import httpx
import pytest
from helpers import REPO_ROOT, serving
from websockets.sync.client import connect

from aaos.server.address import FORWARDED_ALLOW_IPS, trusted_proxies
from aaos.server.app import create_app
from aaos.server.background import BackgroundServer
from aaos.server.sessions import SessionConfig

SHARE = 4
CAPS = SessionConfig(max_sessions=2 * SHARE, max_per_client=SHARE)
CAP_VARIABLES = {"AAOS_MAX_SESSIONS": str(2 * SHARE), "AAOS_MAX_SESSIONS_PER_CLIENT": str(SHARE)}
MCP_INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                       "clientInfo": {"name": "test", "version": "0"}}}


def claiming(host: int) -> dict[str, str]:
    """Headers that claim the request comes, through a proxy, from 10.0.0.`host`."""
    return {"X-Forwarded-For": f"10.0.0.{host}"}


def resets(http: httpx.Client, count: int, headers: dict[str, str] | None = None) -> list[int]:
    return [http.post("/reset", json={}, headers=headers).status_code for _ in range(count)]


def ws_reset(open_until: ExitStack, url: str, headers: dict[str, str] | None = None) -> dict[str, Any]:
    """A WS /ws connection's answer to a reset (an observation, or the CAPACITY_REACHED frame); the connection
    stays open until `open_until` closes."""
    ws = open_until.enter_context(connect(url.replace("http://", "ws://") + "/ws", additional_headers=headers))
    ws.send(json.dumps({"type": "reset", "data": {}}))
    answer: dict[str, Any] = json.loads(ws.recv(timeout=60))
    return answer


@pytest.mark.parametrize("trusted", [None, "127.0.0.1"], ids=["default", "loopback trusted"])
def test_a_client_claims_another_address_only_through_a_trusted_proxy(trusted: str | None) -> None:
    """The issue's reproduction: a client holding its share claims other addresses with X-Forwarded-For, on each
    surface; only a server told to trust the proxy (here: loopback) counts the claimed address."""
    with BackgroundServer(create_app(CAPS), forwarded_allow_ips=trusted) as server, \
            httpx.Client(base_url=server.url, timeout=60) as http:
        assert resets(http, SHARE) == [200] * SHARE
        assert [resets(http, 1, claiming(host))[0] for host in range(SHARE)] == [200 if trusted else 429] * SHARE

        with ExitStack() as connections:
            assert [ws_reset(connections, server.url)["type"] for _ in range(SHARE)] == ["observation"] * SHARE
            claimed = ws_reset(connections, server.url, claiming(1))
            refused = None if claimed["type"] == "observation" else claimed["data"]["code"]
            assert refused == (None if trusted else "CAPACITY_REACHED")

        opened = [http.post("/mcp", json=MCP_INIT) for _ in range(SHARE)]
        assert all("mcp-session-id" in answer.headers for answer in opened)
        claimed_mcp = http.post("/mcp", json=MCP_INIT, headers=claiming(1))
        assert ("mcp-session-id" in claimed_mcp.headers) is bool(trusted)
        if not trusted:
            refusal = claimed_mcp.json()["error"]
            assert refusal["code"] == -32000 and f"already holds {SHARE} sessions" in refusal["message"]


@pytest.mark.parametrize(("variables", "options"), [({}, ()), ({FORWARDED_ALLOW_IPS: "127.0.0.1"}, ()),
                                                    ({}, ("--forwarded-allow-ips", "127.0.0.1"))],
                         ids=["default", "variable", "flag"])
def test_aaos_serve_trusts_a_proxy_only_when_told_to(variables: dict[str, str], options: tuple[str, ...]) -> None:
    environment = {key: value for key, value in os.environ.items() if key != FORWARDED_ALLOW_IPS}
    trusted = bool(variables or options)
    with serving({**environment, **CAP_VARIABLES, **variables}, *options) as url, \
            httpx.Client(base_url=url, timeout=60) as http:
        assert resets(http, SHARE) == [200] * SHARE
        assert resets(http, 1, claiming(1)) == [200 if trusted else 429]


def test_the_space_trusts_a_proxy_only_when_told_to(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GRADIO_ANALYTICS_ENABLED", "False")
    monkeypatch.syspath_prepend(str(REPO_ROOT))
    monkeypatch.delenv(FORWARDED_ALLOW_IPS, raising=False)
    from app import space_server

    assert space_server("127.0.0.1", 0).config.proxy_headers is False
    monkeypatch.setenv(FORWARDED_ALLOW_IPS, "10.1.0.0/16")
    config = space_server("127.0.0.1", 0).config
    assert config.proxy_headers is True and config.forwarded_allow_ips == "10.1.0.0/16"


@pytest.mark.parametrize(("value", "trusted"), [(None, None), ("", None), ("  ", None), ("*", "*"),
                                                (" 10.0.0.1, 10.0.0.2 ", "10.0.0.1, 10.0.0.2")])
def test_the_trusted_proxies_come_from_the_variable_and_blank_is_none(value: str | None, trusted: str | None) -> None:
    assert trusted_proxies({} if value is None else {FORWARDED_ALLOW_IPS: value}) == trusted
