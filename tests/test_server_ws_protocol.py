"""Our WS /ws route (aaos.server.ws): openenv's protocol exactly (its GenericEnvClient and its observation
serialisation), malformed frames, hang-ups, the capacity frame, idle expiry, short error messages and the
one frame limit."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import socket
import sys
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from helpers import REPO_ROOT, serving
from openenv.core.env_server.serialization import serialize_observation
from openenv.core.generic_client import GenericEnvClient
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

import aaos
from aaos.server.app import MAX_BODY_BYTES, create_app
from aaos.server.background import BackgroundServer
from aaos.server.environment import observation_model
from aaos.server.models import AAOSObservation
from aaos.server.sessions import SessionConfig
from aaos.server.wire import MAX_ECHO_CHARS

MAX_WS = 3
TTL = 600.0
GOING_AWAY = 1001
QUERY = {"engineer": {"action_type": "query_metrics", "payload": {"metric": "latency"}}}
FORBIDDEN = {"oversight": {"action_type": "approve_resource", "payload": {"amount": 5, "resource_type": "compute"}}}


class FakeClock:
    """A monotonic clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class Records(logging.Handler):
    """Every record logged at WARNING or above while attached."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture(scope="module")
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture(scope="module")
def app(clock: FakeClock) -> FastAPI:
    return create_app(SessionConfig(max_sessions=MAX_WS, ttl=TTL, max_per_client=MAX_WS, evict_after=TTL), clock)


@pytest.fixture(scope="module")
def server(app: FastAPI) -> Iterator[BackgroundServer]:
    with BackgroundServer(app) as running:
        yield running


def wait_for_no_connections(app: FastAPI) -> None:
    """Until the server has let go of every WebSocket connection (a bounded wait, not a timing assertion)."""
    for _ in range(3000):
        if len(app.state.ws_sessions) == 0:
            return
        time.sleep(0.01)
    pytest.fail("the server never let go of its WebSocket connections")


def ws_url(server: BackgroundServer) -> str:
    return server.url.replace("http", "ws") + "/ws"


def ask(ws: ClientConnection, message: Any) -> dict[str, Any]:
    """Send one frame (a str or bytes as is, anything else as JSON) and read the answer."""
    ws.send(message if isinstance(message, str | bytes) else json.dumps(message))
    answer: dict[str, Any] = json.loads(ws.recv(timeout=60))
    return answer


def openenv_frame(observation: AAOSObservation) -> dict[str, Any]:
    """What openenv's own /ws route sends for an observation."""
    return json.loads(json.dumps({"type": "observation", "data": serialize_observation(observation)}))


def test_frames_are_exactly_what_openenv_serialises(server: BackgroundServer) -> None:
    env = aaos.make("crisis_management", scenario="silent_data_drift", seed=4)
    policy = aaos.policies.make("heuristic")
    observation = env.reset()
    with connect(ws_url(server)) as ws:
        first = ask(ws, {"type": "reset", "data": {"task": "crisis_management", "scenario": "silent_data_drift",
                                                   "seed": 4}})
        assert first == openenv_frame(AAOSObservation.model_validate({**observation, "reward": None}))
        for _ in range(6):
            joint = policy.act(observation)
            result = env.step(joint)
            observation = result.observation
            assert ask(ws, {"type": "step", "data": joint}) == openenv_frame(observation_model(result))
        state = ask(ws, {"type": "state"})
    assert state == {"type": "state", "data": json.loads(json.dumps({"episode_id": None, "step_count": 6,
                                                                     **env.state()}))}


def test_openenv_generic_client_plays_and_sees_field_errors(server: BackgroundServer) -> None:
    async def play() -> None:
        async with GenericEnvClient(base_url=server.url) as client:
            first = await client.reset(task="org_simulation", seed=1)
            assert first.observation["step_count"] == 0 and first.done is False and first.reward is None
            with pytest.raises(RuntimeError, match=r"oversight.*approve_resource.*VALIDATION_ERROR"):
                await client.step(FORBIDDEN)
            stepped = await client.step(QUERY)
            assert stepped.observation["step_count"] == 1  # the refused action changed nothing
            assert stepped.observation["info"]["action_results"]["engineer"]["status"] == "applied"
            assert (await client.state())["step"] == 1

    asyncio.run(play())


MALFORMED: list[tuple[str, Any, str]] = [
    ("array", "[1, 2, 3]", "VALIDATION_ERROR"),
    ("string", '"hello"', "VALIDATION_ERROR"),
    ("null", "null", "VALIDATION_ERROR"),
    ("binary", b'{"type": "state"}', "INVALID_JSON"),
    ("5000-deep array", "[" * 5000 + "]" * 5000, "INVALID_JSON"),
    ("5000-deep action", '{"type": "step", "data": {"engineer": ' + "[" * 5000 + "]" * 5000 + "}}",
     "INVALID_JSON"),
    ("invalid JSON", "{garbage", "INVALID_JSON"),
    ("unknown type", {"type": "teleport"}, "UNKNOWN_TYPE"),
    ("type not a string", {"type": ["step"]}, "UNKNOWN_TYPE"),
    ("step without data", {"type": "step"}, "VALIDATION_ERROR"),
    ("step data not an object", {"type": "step", "data": [1]}, "VALIDATION_ERROR"),
    ("unknown field", {"type": "state", "data": {}}, "VALIDATION_ERROR"),
    ("deep action", {"type": "step", "data": {"engineer": {"payload": json.loads("[" * 40 + "]" * 40)}}},
     "VALIDATION_ERROR"),
    ("forbidden action", {"type": "step", "data": FORBIDDEN}, "VALIDATION_ERROR"),
    ("bad reset", {"type": "reset", "data": {"task": "juggling"}}, "VALIDATION_ERROR"),
    ("bad lean", {"type": "step", "data": {}, "observe": "no"}, "VALIDATION_ERROR"),
]


@pytest.mark.parametrize(("name", "frame", "code"), MALFORMED, ids=[m[0] for m in MALFORMED])
def test_a_malformed_frame_gets_a_typed_error_and_the_connection_stays_usable(
        server: BackgroundServer, name: str, frame: Any, code: str) -> None:
    with connect(ws_url(server)) as ws:
        assert ask(ws, {"type": "reset", "data": {"seed": 2}})["type"] == "observation"
        error = ask(ws, frame)
        assert error["type"] == "error" and error["data"]["code"] == code, error
        assert error["data"]["message"]
        after = ask(ws, {"type": "step", "data": QUERY})
        assert after["type"] == "observation" and after["data"]["observation"]["step_count"] == 1


BEYOND_ORJSON = [("400-digit seed", '{"seed": ' + "9" * 400 + "}", "seed: Input should be less than or equal to"),
                 ("1e400 seed", '{"seed": 1e400}', "seed: Input should be a valid integer"),
                 ("lone surrogate in episode_id", '{"episode_id": "\\ud800"}',
                  "episode_id: a string holds a lone surrogate")]
"""Reset parameters that are JSON as HTTP's decoder (the standard library's) reads it, though orjson refuses them."""


def reset_text(data: str, *fields: str) -> str:
    """A reset message with `data` (JSON text) and further fields (JSON text, "key": value)."""
    return '{"type": "reset", "data": ' + ", ".join((data, *fields)) + "}"


@pytest.mark.parametrize(("data", "words"), [case[1:] for case in BEYOND_ORJSON],
                         ids=[case[0] for case in BEYOND_ORJSON])
def test_json_orjson_refuses_is_validated_and_names_the_field_as_http_does(server: BackgroundServer, data: str,
                                                                         words: str) -> None:
    with connect(ws_url(server)) as ws, httpx.Client(base_url=server.url, timeout=60) as http:
        error = ask(ws, reset_text(data))
        assert error["data"]["code"] == "VALIDATION_ERROR" and words in error["data"]["errors"][0], error
        over_http = http.post("/reset", content=data, headers={"Content-Type": "application/json"})
        assert over_http.status_code == 422 and over_http.json()["detail"] == error["data"]["errors"]
        assert ask(ws, {"type": "step", "data": QUERY})["data"]["observation"]["step_count"] == 1  # still usable


def test_what_orjson_cannot_write_back_is_answered_not_an_internal_error(server: BackgroundServer) -> None:
    huge = "9" * 400
    with connect(ws_url(server)) as ws:
        pong = ask(ws, '{"type": "mcp", "data": {"jsonrpc": "2.0", "method": "ping", "id": ' + huge + "}}")
        assert pong["data"] == {"jsonrpc": "2.0", "id": int(huge), "result": {}}
        lean = ask(ws, reset_text("{}", '"roles": ["\\ud800"]'))
        assert lean["data"]["code"] == "VALIDATION_ERROR" and lean["data"]["errors"][0].startswith("roles.0: a string")
        digits = sys.get_int_max_str_digits()
        too_long = ask(ws, reset_text('{"seed": ' + "9" * (digits + 1) + "}"))
        assert too_long["data"]["code"] == "INVALID_JSON"
        assert f"holds an integer of more than {digits} digits" in too_long["data"]["message"]


def test_json_nested_too_deep_is_refused_with_the_limit_to_stay_under(server: BackgroundServer) -> None:
    with connect(ws_url(server)) as ws:
        error = ask(ws, "[" * 5000 + "]" * 5000)
        assert error["data"]["code"] == "INVALID_JSON"
        assert "at most 16 levels deep" in error["data"]["message"]
        nested = ask(ws, {"type": "step", "data": {"engineer": {"action_type": "propose_plan", "payload": {
            "plan": json.loads("[" * 30 + "]" * 30)}}}})
        message = nested["data"]["message"]
        assert nested["data"]["code"] == "VALIDATION_ERROR" and "nested deeper than 16 levels" in message
        assert "body" not in message  # a WebSocket message has no body


def test_error_messages_quote_only_a_short_prefix_of_the_input(server: BackgroundServer) -> None:
    huge = "x" * (MAX_BODY_BYTES - 1000)
    with connect(ws_url(server)) as ws:
        for frame in ({"type": huge}, {"type": "step", "data": {"engineer": {"action_type": huge}}},
                      {"type": "reset", "data": {huge: 1}}, {"type": "step", "data": {}, "roles": [huge[:90]]}):
            answer = ask(ws, frame)
            assert answer["type"] == "error" and len(json.dumps(answer)) < 4 * MAX_ECHO_CHARS + 1000, answer
    with httpx.Client(base_url=server.url, timeout=60) as http:
        session = http.post("/reset", json={}).json()["session_id"]
        refused = http.post("/step", json={"session_id": session, "action": {"engineer": {"action_type": huge}}})
    assert refused.status_code == 422 and len(refused.content) < 4 * MAX_ECHO_CHARS + 1000
    assert "more characters" in refused.text


def test_a_hang_up_mid_stream_logs_no_error(app: FastAPI, server: BackgroundServer) -> None:
    records = Records()
    loggers = [logging.getLogger(name) for name in ("", "uvicorn", "uvicorn.error", "aaos")]
    for logger in loggers:
        logger.addHandler(records)
    try:
        for _ in range(3):
            with connect(ws_url(server)) as ws:
                ask(ws, {"type": "reset", "data": {}})
                for _ in range(40):  # answers the server is still writing when the socket goes
                    ws.send(json.dumps({"type": "step", "data": QUERY}))
                ws.socket.shutdown(socket.SHUT_RDWR)
        wait_for_no_connections(app)
        with connect(ws_url(server)) as ws:  # the server carried on
            assert ask(ws, {"type": "state"})["type"] == "state"
    finally:
        for logger in loggers:
            logger.removeHandler(records)
    # the test's own client, whose socket is shut down under it, may log its reader's EOF: only the server counts
    server_records = [r for r in records.records if not r.name.startswith("websockets.client")]
    assert [record.getMessage() for record in server_records] == []


def test_at_capacity_the_client_reads_why_before_the_socket_closes(app: FastAPI, server: BackgroundServer) -> None:
    wait_for_no_connections(app)  # every slot free, whatever ran before
    with connect(ws_url(server)) as a, connect(ws_url(server)) as b, connect(ws_url(server)) as c:
        for ws in (a, b, c):  # each answers, so its slot is taken before the next connects
            assert ask(ws, {"type": "state"})["type"] == "state"

        async def refused_client() -> None:
            async with GenericEnvClient(base_url=server.url) as client:
                with pytest.raises(RuntimeError, match="CAPACITY_REACHED"):
                    await client.reset()

        asyncio.run(refused_client())
        with connect(ws_url(server)) as extra:
            refusal = json.loads(extra.recv(timeout=60))
            assert refusal["data"]["code"] == "CAPACITY_REACHED" and refusal["data"]["max_sessions"] == MAX_WS
            assert "close one of your WebSocket connections" in refusal["data"]["message"]
            assert "POST" not in refusal["data"]["message"]  # HTTP's remedies free no WebSocket slot
            extra.send(json.dumps({"type": "state"}))
            with pytest.raises(ConnectionClosed) as closed:
                extra.recv(timeout=60)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1013


def told_and_closed(ws: ClientConnection, words: str) -> None:
    """The connection reads a SESSION_ERROR frame saying `words`, then the server's close (1001, going away)."""
    goodbye = json.loads(ws.recv(timeout=60))
    assert goodbye["type"] == "error" and goodbye["data"]["code"] == "SESSION_ERROR", goodbye
    assert words in goodbye["data"]["message"] and "open a new connection" in goodbye["data"]["message"]
    with pytest.raises(ConnectionClosed) as closed:
        ws.recv(timeout=60)
    assert closed.value.rcvd is not None and closed.value.rcvd.code == GOING_AWAY
    assert words in closed.value.rcvd.reason


def test_a_connection_whose_session_expires_is_closed_so_the_cap_holds(app: FastAPI, server: BackgroundServer,
                                                                       clock: FakeClock) -> None:
    """A client that idles its connections past the ttl cannot open more than the cap: the old ones are told
    and closed as the new ones take their slots (they used to stay usable, slot-less: 16 live with a cap of 4)."""
    wait_for_no_connections(app)
    with connect(ws_url(server)) as a, connect(ws_url(server)) as b, connect(ws_url(server)) as c:
        for ws in (a, b, c):
            assert ask(ws, {"type": "reset", "data": {"seed": 1}})["type"] == "observation"
        clock.now += TTL + 1  # all three are now idle past the ttl
        with connect(ws_url(server)) as d, connect(ws_url(server)) as e, connect(ws_url(server)) as f:
            for ws in (d, e, f):
                assert ask(ws, {"type": "state"})["type"] == "state"
            for ws in (a, b, c):
                told_and_closed(ws, "expired")
            assert len(app.state.ws_sessions) == MAX_WS


def test_a_connection_idle_past_the_ttl_is_closed_at_its_next_message(app: FastAPI, server: BackgroundServer,
                                                                      clock: FakeClock) -> None:
    wait_for_no_connections(app)
    with connect(ws_url(server)) as ws:
        assert ask(ws, {"type": "reset", "data": {"seed": 1}})["type"] == "observation"
        clock.now += TTL + 1
        ws.send(json.dumps({"type": "step", "data": QUERY}))  # not taken: the session is gone
        told_and_closed(ws, "expired")


def test_a_connection_evicted_for_a_newcomer_is_closed() -> None:
    clock = FakeClock()
    evict_after = TTL / 4
    app = create_app(SessionConfig(max_sessions=2, ttl=TTL, max_per_client=3, evict_after=evict_after), clock)
    with BackgroundServer(app) as running, connect(ws_url(running)) as old, connect(ws_url(running)) as kept:
        assert ask(old, {"type": "state"})["type"] == "state"
        clock.now += evict_after + 1
        assert ask(kept, {"type": "state"})["type"] == "state"
        with connect(ws_url(running)) as newcomer:
            assert ask(newcomer, {"type": "state"})["type"] == "state"
            told_and_closed(old, "evicted")
            assert ask(kept, {"type": "step", "data": QUERY})["data"]["observation"]["step_count"] == 1


def test_close_message_closes_normally(server: BackgroundServer) -> None:
    with connect(ws_url(server)) as ws:
        ws.send(json.dumps({"type": "close"}))
        with pytest.raises(ConnectionClosed) as closed:
            ws.recv(timeout=60)
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 1000


def test_mcp_messages_over_ws_reach_the_connection_environment(server: BackgroundServer) -> None:
    with connect(ws_url(server)) as ws:
        ask(ws, {"type": "reset", "data": {"task": "org_simulation", "seed": 0}})
        call = {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                "params": {"name": "query_metrics", "arguments": {"role": "engineer", "metric": "latency"}}}
        answer = ask(ws, {"type": "mcp", "data": call})
        assert answer["type"] == "mcp" and answer["data"]["id"] == 7
        assert answer["data"]["result"]["view"]["step"] == 1
        assert ask(ws, {"type": "state"})["data"]["step"] == 1
        assert ask(ws, {"type": "mcp", "data": {"nope": 1}})["data"]["error"]["code"] == -32600


def test_aaos_serve_and_the_space_refuse_frames_over_the_body_limit() -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))}
    with serving(env) as url, connect(url.replace("http", "ws") + "/ws", max_size=None) as ws:
        assert ask(ws, {"type": "step", "data": {"metadata": {"x": "y" * (MAX_BODY_BYTES - 100)}}})["type"]
        ws.send(json.dumps({"type": "step", "data": {"metadata": {"x": "y" * MAX_BODY_BYTES}}}))
        with pytest.raises(ConnectionClosed) as closed:
            ws.recv(timeout=60)
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009  # message too big
    sys.path.insert(0, str(REPO_ROOT))
    try:
        from app import space_server
    finally:
        sys.path.remove(str(REPO_ROOT))
    assert space_server("127.0.0.1", 0).config.ws_max_size == MAX_BODY_BYTES


def test_a_server_that_hides_the_ground_truth_hides_it_over_websocket_too() -> None:
    with BackgroundServer(create_app(SessionConfig(hide_state=True))) as hidden, connect(ws_url(hidden)) as ws:
        assert ask(ws, {"type": "reset", "data": {"seed": 0}})["type"] == "observation"
        refused = ask(ws, {"type": "state"})
        assert refused["type"] == "error" and "hides the ground truth" in refused["data"]["message"]
        assert ask(ws, {"type": "step", "data": QUERY})["data"]["observation"]["step_count"] == 1


@pytest.mark.parametrize(("deflate", "negotiated"), [(None, False), ("1", True)], ids=["default", "AAOS_WS_DEFLATE=1"])
def test_answers_are_compressed_only_when_the_server_is_told_to(deflate: str | None, negotiated: bool) -> None:
    env = {key: value for key, value in os.environ.items() if key != "AAOS_WS_DEFLATE"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))
    if deflate is not None:
        env["AAOS_WS_DEFLATE"] = deflate
    with serving(env) as url, connect(url.replace("http", "ws") + "/ws", max_size=None) as ws:  # offers deflate
        assert ("permessage-deflate" in ws.response.headers.get("Sec-WebSocket-Extensions", "")) is negotiated
        assert ask(ws, {"type": "reset", "data": {"seed": 0}})["data"]["observation"]["step_count"] == 0
