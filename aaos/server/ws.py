"""WS /ws: one environment per connection, speaking openenv-core's WebSocket message protocol.

It replaces openenv-core's own /ws route (which validates every observation into a pydantic model and back,
and runs each call on a thread of its own) and speaks the same protocol, so openenv's `GenericEnvClient` and
our `AAOSEnv` work unchanged:

    client                                               server
    {"type": "reset", "data": {env, task, scenario,      {"type": "observation", "data": {"observation": {...,
                               seed, episode_id}}          "info": {...}}, "reward": ..., "done": ...}}
    {"type": "step", "data": joint action}               the same
    {"type": "step", "data": {"type": "call_tool",       the same, as openenv serialises a CallToolObservation
              "tool_name", "arguments"}} (or list_tools)   (or ListToolsObservation): aaos.server.mcp_routes
    {"type": "state"}                                    {"type": "state", "data": the full state}
    {"type": "mcp", "data": JSON-RPC request}            {"type": "mcp", "data": JSON-RPC response}
    {"type": "close"}                                    the server closes the connection
    anything wrong                                       {"type": "error", "data": {"message", "code", ...}}

The observation carries the step's `info` and leaves out `done`, which comes beside it, as openenv
serialises an observation. `mcp` messages are answered by aaos.server.mcp_routes, on the connection's own
environment. AAOS adds lean answers: `reset` and `step` messages may carry `"roles"` and
`"observe"` beside `"data"` (aaos.server.wire.Lean; with `observe: false` the data is `{"observation": null,
"reward", "done", "info"}`).

Each message is answered from the event loop, without a thread hop: a reset or a step takes about a tenth
of a millisecond and never waits on anything. Answers are encoded with orjson straight from the plain data
the environment returns. A bad message (not JSON, not an object, a binary frame, an unknown type, an action
the environment would reject) gets an error frame, changes nothing and leaves the connection usable; its
message quotes at most a short prefix of the input. A client that hangs up, even mid-answer, is not an
error and logs nothing.

Connections draw from a session pool of their own (the same policy and size as the HTTP sessions'): a
connection refused for want of a slot gets a CAPACITY_REACHED error frame first, then is closed with code
1013 (try again later). A connection is its session: when the pool drops it (idle past the ttl, or evicted for a
newcomer) it gets a SESSION_ERROR frame saying why and is closed with code 1001 (going away), at once if it is
waiting for a message, so that the pool's cap bounds the live connections. The pool drops an idle session when
a newcomer asks it for a slot, or at the connection's next message.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from typing import Any

import orjson
from fastapi import FastAPI
from openenv.core.env_server.types import WSErrorCode
from pydantic import ValidationError
from starlette.types import Message
from starlette.websockets import WebSocket, WebSocketDisconnect, WebSocketDisconnected
from uvicorn.protocols.utils import ClientDisconnected

import aaos
from aaos.core.env import Observation
from aaos.core.spec import EnvSpec
from aaos.server.environment import AAOSEnvironment
from aaos.server.mcp_routes import McpRoutes, is_tool_step
from aaos.server.models import (
    MAX_JSON_DEPTH,
    InvalidAction,
    InvalidParams,
    ViewChoice,
    check_episode,
    episode_params,
    error_messages,
)
from aaos.server.sessions import Refused, Session, SessionStore, StateHidden, UnknownSession
from aaos.server.wire import FULL, Lean, clip, clipped, dumps, undecodable

log = logging.getLogger("aaos.server")
WS_REMEDY = "close one of your WebSocket connections (each holds one session)"
"""How a client frees a slot of the WebSocket pool (what a CAPACITY_REACHED frame advises)."""

TRY_AGAIN_LATER = 1013
"""The WebSocket close code of a connection refused for want of a session slot."""
GOING_AWAY = 1001
"""The WebSocket close code of a connection whose session the pool dropped (expired or evicted)."""
MAX_CLOSE_REASON = 123
"""The most bytes a close frame's reason may hold (RFC 6455); ours are ASCII."""
REFUSED_GRACE_S = 10.0
"""How long a refused connection stays open for the client's first message, so that a client which sends
before it reads (as openenv's clients do) still reads the CAPACITY_REACHED frame instead of a closed socket."""

Frame = dict[str, Any]

_MESSAGE_FIELDS = {"reset": {"type", "data", "roles", "observe"}, "step": {"type", "data", "roles", "observe"},
                   "state": {"type"}, "close": {"type"}, "mcp": {"type", "data"}}
_JSON_KINDS = {list: "an array", str: "a string", int: "a number", float: "a number", bool: "a boolean",
               type(None): "null"}
_HANG_UPS = (WebSocketDisconnect, WebSocketDisconnected, ClientDisconnected)


class BadMessage(ValueError):
    """A message this route cannot act on; `code` is its OpenEnv error code."""

    def __init__(self, code: WSErrorCode, message: str, errors: list[str] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.errors = errors


def add_ws_route(app: FastAPI, sessions: SessionStore, mcp: McpRoutes) -> None:
    """Register our WS /ws in place of openenv's (registered by HTTPEnvServer.register_routes); its
    connections draw from `sessions`, and `mcp` answers their `mcp` messages on their own session."""
    app.router.routes[:] = [route for route in app.router.routes if getattr(route, "path", None) != "/ws"]

    async def ws(websocket: WebSocket) -> None:
        await serve_connection(websocket, sessions, mcp)

    app.add_api_websocket_route("/ws", ws, name="ws")


def encode(kind: str, data: Any) -> str:
    """One OpenEnv frame as JSON text."""
    return dumps({"type": kind, "data": data}).decode()


def error_frame(code: WSErrorCode, message: str, **extra: Any) -> str:
    """An OpenEnv error frame; the message says what is wrong and what to do (whatever it quotes of the input
    clipped by its maker)."""
    return encode("error", {"message": message, "code": code.value, **extra})


def observation_data(observation: Observation | None, reward: float | None, done: bool,
                     info: dict[str, Any]) -> Frame:
    """The data of an observation frame as openenv serialises an observation: the observation's keys and
    the step info, without `done`, which comes beside them with the reward. With no observation (observe
    false) the info comes beside them too."""
    if observation is None:
        return {"observation": None, "reward": reward, "done": done, "info": info}
    shown = {"info": info, **observation}
    shown.pop("done", None)
    return {"observation": shown, "reward": reward, "done": done}


async def serve_connection(websocket: WebSocket, sessions: SessionStore, mcp: McpRoutes) -> None:
    """Accept a client, give it an environment and a slot in `sessions`, and answer its messages until it
    closes or hangs up (which is not an error and logs nothing)."""
    with contextlib.suppress(*_HANG_UPS):
        await websocket.accept()
        try:
            env = AAOSEnvironment()
        except Exception as error:  # a bug in the default environment: say so, log it, and close
            log.error("could not create an environment for a WebSocket connection", exc_info=error)
            await websocket.send_text(error_frame(WSErrorCode.FACTORY_ERROR, "could not create the environment "
                                                  f"({type(error).__name__}); this is a server bug"))
            await websocket.close()
            return
        client = websocket.client.host if websocket.client else None
        slot = Slot()
        try:
            session = sessions.open(env, client, on_drop=slot.drop)
        except Refused as refused:
            await _refuse(websocket, sessions, refused)
            return
        connection = Connection(session, sessions, mcp, client)
        try:
            while slot.lost is None:
                message = await slot.receive(websocket)
                if message is None:
                    break
                if message["type"] == "websocket.disconnect":
                    return
                if not connection.touch(slot):
                    break
                answer = await connection.answer(message)
                if answer is None:
                    await websocket.close()
                    return
                await websocket.send_text(answer)
            await _goodbye(websocket, slot.lost or "is gone")
        finally:
            with contextlib.suppress(UnknownSession):
                sessions.close(session.id)


class Slot:
    """Whether a connection still holds its session slot: the pool tells `drop` (from any thread) when it drops
    the session, and a connection waiting in `receive` stops waiting."""

    def __init__(self) -> None:
        self.loop = asyncio.get_running_loop()
        self.task = asyncio.current_task()
        self.receiving = False
        self.lost: str | None = None
        """Why the pool dropped the session ("expired after ..."); None while it holds it."""

    def drop(self, why: str) -> None:
        """The pool dropped the session (SessionStore's on_drop)."""
        try:
            here = asyncio.get_running_loop() is self.loop
        except RuntimeError:  # a thread without an event loop (one that asked the pool its size)
            here = False
        if here:
            self._lose(why)
        else:
            self.loop.call_soon_threadsafe(self._lose, why)

    def _lose(self, why: str) -> None:
        self.lost = self.lost or why
        if self.receiving and self.task is not None:
            self.task.cancel()  # a receive is safe to cancel: no message is lost that would have been answered

    async def receive(self, websocket: WebSocket) -> Message | None:
        """The client's next message; None if the session is dropped meanwhile."""
        self.receiving = True
        try:
            return await websocket.receive()
        except asyncio.CancelledError:
            if self.lost is None or self.task is None or self.task.uncancel() > 0:
                raise  # cancelled for another reason too (the server shutting down)
            return None
        finally:
            self.receiving = False


async def _goodbye(websocket: WebSocket, why: str) -> None:
    """Tell a client its session was dropped, and close the connection with 1001 (going away)."""
    await websocket.send_text(error_frame(WSErrorCode.SESSION_ERROR, f"this connection's session {why}; open a "
                                                                     "new connection to play on"))
    await websocket.close(GOING_AWAY, f"session {why}"[:MAX_CLOSE_REASON])


async def _refuse(websocket: WebSocket, sessions: SessionStore, refused: Refused) -> None:
    """Tell a client refused a slot why, wait briefly for its first message (so that a client which sends
    before it reads still reads this, not a closed socket), then close with 1013."""
    await websocket.send_text(error_frame(
        WSErrorCode.CAPACITY_REACHED, f"{refused} (WebSocket connections have a pool of their own)",
        active_sessions=len(sessions), max_sessions=sessions.config.max_sessions, retry_after=refused.retry_after))
    with contextlib.suppress(asyncio.TimeoutError):
        await asyncio.wait_for(websocket.receive(), REFUSED_GRACE_S)
    await websocket.close(TRY_AGAIN_LATER, "no session slot free; retry later")


class Connection:
    """The answers to one WebSocket client's messages, on its own environment."""

    def __init__(self, session: Session, sessions: SessionStore, mcp: McpRoutes, client: str | None) -> None:
        self.session = session
        self.env = session.env
        self.sessions = sessions
        self.mcp = mcp
        self.client = client

    def touch(self, slot: Slot) -> bool:
        """Mark the session used now (any message counts); False if the pool has dropped it (`slot` says why)."""
        try:
            self.sessions.get(self.session.id)
        except UnknownSession:
            return False
        return slot.lost is None

    async def answer(self, message: dict[str, Any]) -> str | None:
        """The frame answering one received message; None for `close`."""
        try:
            request = decode(message)
            kind = request["type"]
            if kind == "close":
                return None
            if kind == "state":
                if self.sessions.config.hide_state:
                    raise StateHidden
                return encode("state", self.env.snapshot())
            if kind == "mcp":
                return encode("mcp", await self.mcp.answer(request.get("data"), self.client, self.session))
            data = _object_data(request, required=kind == "step")
            if kind == "step" and is_tool_step(data):  # openenv's MCPToolClient, default mode
                return encode("observation", await self.mcp.tool_step(data, self.client, self.session))
            lean_fields = {key: request[key] for key in ("roles", "observe") if key in request}
            return encode("observation", self.reset(data, lean_fields) if kind == "reset"
                          else self.step(data, lean_fields))
        except BadMessage as bad:
            extra = {} if bad.errors is None else {"errors": bad.errors}
            return error_frame(bad.code, str(bad), **extra)
        except ValidationError as invalid:
            return _invalid("invalid joint action", error_messages(invalid.errors()))
        except (InvalidParams, InvalidAction) as invalid:
            prefix = "invalid reset parameters" if isinstance(invalid, InvalidParams) else "invalid joint action"
            return _invalid(prefix, invalid.problems)
        except aaos.EpisodeDone as done:
            return error_frame(WSErrorCode.EXECUTION_ERROR, str(done))
        except StateHidden as hidden:
            return error_frame(WSErrorCode.EXECUTION_ERROR, str(hidden))
        except Exception as error:  # a bug: this message fails, the connection and every other session carry on
            log.error("unexpected %s answering a WebSocket message", type(error).__name__, exc_info=error)
            return error_frame(WSErrorCode.EXECUTION_ERROR, f"internal error ({type(error).__name__}); this message "
                                                            "was not completed")

    def reset(self, data: dict[str, Any], lean_fields: dict[str, Any]) -> Frame:
        params = episode_params(**data)
        lean = _lean(check_episode(params, self.env.env_id), lean_fields)
        observation = self.env.start(params)
        return observation_data(lean.observation(observation), None, observation.get("done", False), {})

    def step(self, data: dict[str, Any], lean_fields: dict[str, Any]) -> Frame:
        joint = self.env.typed(data)
        lean = _lean(self.env.env_id, lean_fields)
        result = self.env.advance(joint, lean)
        return observation_data(result.observation, result.reward, result.done, result.info)


def decode(message: dict[str, Any]) -> dict[str, Any]:
    """A received WebSocket message as a request object with a known type and only the fields it takes;
    BadMessage otherwise."""
    text = message.get("text")
    if text is None:
        raise BadMessage(WSErrorCode.INVALID_JSON, "binary frames are not accepted: send each message as a text "
                                                   "frame holding a JSON object")
    request = _loads(text)
    if not isinstance(request, dict):
        raise BadMessage(WSErrorCode.VALIDATION_ERROR, 'a message must be a JSON object such as {"type": "step", '
                                                       f'"data": {{...}}}}, not {_JSON_KINDS[type(request)]}')
    kind = request.get("type")
    if not isinstance(kind, str) or kind not in _MESSAGE_FIELDS:
        raise BadMessage(WSErrorCode.UNKNOWN_TYPE, f"Unknown message type: {clip(repr(kind), 100)}; the types "
                                                   f"are {', '.join(_MESSAGE_FIELDS)}")
    unknown = sorted(set(request) - _MESSAGE_FIELDS[kind])
    if unknown:
        problems = [f"{clip(field, 100)}: Extra inputs are not permitted in a {kind!r} message" for field in unknown]
        raise BadMessage(WSErrorCode.VALIDATION_ERROR, "Invalid message: " + "; ".join(clipped(problems)),
                         clipped(problems))
    return request


def _loads(text: str) -> Any:
    """A message's JSON, read by orjson (fast) or, where orjson refuses what HTTP's decoder (the standard library's)
    reads, as HTTP reads it: a number beyond a double (an integer of 400 digits, 1e400), a lone surrogate, NaN. The
    message is then validated as HTTP validates a body, and an error names the field. BadMessage (INVALID_JSON) for
    what neither reads."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError as error:
        refused = error
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as error:
        if isinstance(error, ValueError) and not isinstance(error, json.JSONDecodeError):  # an integer too long
            raise BadMessage(WSErrorCode.INVALID_JSON, f"Invalid JSON: {undecodable(error, 'the message')}") from None
    too_deep = "depth limit" in str(refused)
    hint = f" (arrays and objects may nest at most {MAX_JSON_DEPTH} levels deep)" if too_deep else ""
    raise BadMessage(WSErrorCode.INVALID_JSON, f"Invalid JSON: {clip(str(refused))}{hint}")


def _object_data(request: dict[str, Any], required: bool) -> dict[str, Any]:
    """The message's `data` object ({} when it may be left out and is); BadMessage otherwise."""
    if "data" not in request and not required:
        return {}
    data = request.get("data")
    if not isinstance(data, dict):
        what = "the joint action, role -> action" if request["type"] == "step" else "the reset parameters"
        found = _JSON_KINDS[type(data)] if "data" in request else "missing"
        raise BadMessage(WSErrorCode.VALIDATION_ERROR, f"Invalid message: data must be a JSON object ({what}), not "
                                                       f"{found}")
    return data


_LEANS: dict[tuple[str, bytes], tuple[EnvSpec, Lean]] = {}
"""Lean choices accepted before, by environment and exact JSON, with the spec they were checked against (a
client sends the same choice with every message)."""
LEANS_CACHE_SIZE = 256


def _lean(env: str, fields: dict[str, Any]) -> Lean:
    """The lean choice (`roles`, `observe`) of a message, checked against environment `env`."""
    if not fields:
        return FULL
    try:
        key: tuple[str, bytes] | None = (env, orjson.dumps(fields))
    except TypeError:  # a value orjson cannot write (orjson's encode error is a TypeError): validated, not cached
        key = None
    spec = aaos.spec(env)
    known = _LEANS.get(key) if key is not None else None
    if known is not None and known[0] is spec:
        return known[1]
    try:
        choice = ViewChoice.model_validate(fields)
        lean = Lean.of(env, choice.roles, choice.observe)
    except ValidationError as error:
        problems = clipped(error_messages(error.errors()))
    except InvalidParams as error:
        problems = clipped(error.problems)
    else:
        if key is not None:
            if len(_LEANS) >= LEANS_CACHE_SIZE:
                _LEANS.clear()
            _LEANS[key] = (spec, lean)
        return lean
    raise BadMessage(WSErrorCode.VALIDATION_ERROR, "Invalid message: " + "; ".join(problems), problems)


def _invalid(prefix: str, problems: list[str]) -> str:
    """A VALIDATION_ERROR frame whose message lists the field errors (which openenv's clients show)."""
    shown = clipped(problems)
    return error_frame(WSErrorCode.VALIDATION_ERROR, f"{prefix}: " + "; ".join(shown), errors=shown)
