"""POST /mcp and WS /mcp: the MCP tools of aaos.server.mcp over JSON-RPC 2.0, in place of openenv's routes.

The methods and message shapes are openenv-core's (`tools/list`, `tools/call`, `openenv/session/create` and
`openenv/session/close`; `session_id` in the params picks a session over POST), so openenv's MCP clients work
unchanged. Two things differ, which is why these routes are ours:

- Error codes follow JSON-RPC: arguments a tool refuses (wrong JSON type, unknown or missing argument, a
  forbidden action, an unknown id, an unknown tool) are -32602 "invalid params", with the problems listed in
  `data.problems`; openenv answers every tool error with -32603 "internal error".
- MCP sessions have a pool of their own (SessionConfig's size, per-client share and idle expiry), so MCP
  clients cannot lock WebSocket or HTTP clients out, or the other way round. A WS /mcp connection holds one
  session while it is open; when it expires or is evicted the server says so and closes the connection.
"""

from __future__ import annotations

import contextlib
import inspect
import json
import logging
from typing import Any

from fastapi import FastAPI, Request, WebSocket
from fastapi.responses import JSONResponse
from openenv.core.env_server.mcp_types import JsonRpcErrorCode, JsonRpcRequest, JsonRpcResponse
from pydantic import ValidationError
from starlette.websockets import WebSocketDisconnect

import aaos
from aaos.server.environment import AAOSEnvironment
from aaos.server.models import MAX_MESSAGES, InvalidAction, InvalidParams, error_messages
from aaos.server.sessions import Refused, Session, SessionStore, UnknownSession

log = logging.getLogger("aaos.server")
MCP_REMEDY = ("close one (openenv/session/close, or a WS /mcp connection), reuse one (its session_id in the "
              "params)")
"""How a client frees or reuses a session of the MCP pool (what a refusal advises)."""


class RpcError(Exception):
    """A JSON-RPC error answer."""

    def __init__(self, code: JsonRpcErrorCode, message: str, data: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code, self.message, self.data = code, message, data


def _invalid(problems: list[str]) -> RpcError:
    return RpcError(JsonRpcErrorCode.INVALID_PARAMS, "; ".join(problems[:MAX_MESSAGES]),
                    {"problems": problems[:MAX_MESSAGES]})


async def _tools(env: AAOSEnvironment) -> dict[str, Any]:
    return {tool.name: tool for tool in await env.mcp_server.list_tools()}


async def _list_tools(env: AAOSEnvironment) -> dict[str, Any]:
    return {"tools": [{"name": tool.name, "description": tool.description or "", "inputSchema": tool.parameters or {}}
                      for tool in (await _tools(env)).values()]}


async def _call_tool(env: AAOSEnvironment, params: dict[str, Any]) -> Any:
    name, arguments = params.get("name"), params.get("arguments", {})
    tools = await _tools(env)
    if not isinstance(name, str) or name not in tools:
        raise _invalid([f"name: unknown tool {str(name)[:100]!r}; tools/list lists them"])
    if not isinstance(arguments, dict):
        raise _invalid(["arguments: Input should be an object"])
    function = tools[name].fn
    try:
        inspect.signature(function).bind(**arguments)
    except TypeError as error:
        raise _invalid([f"arguments: {error}"]) from None
    try:
        return function(**arguments)
    except (InvalidAction, InvalidParams) as error:
        raise _invalid(error.problems) from None
    except ValidationError as error:
        raise _invalid(error_messages(error.errors())) from None
    except aaos.EpisodeDone:
        raise RpcError(JsonRpcErrorCode.SERVER_ERROR, "the episode is over; call new_episode to start another"
                       ) from None


class McpRoutes:
    """The JSON-RPC dispatch of one app's /mcp routes over its MCP session pool."""

    def __init__(self, sessions: SessionStore) -> None:
        self.sessions = sessions

    def open(self, client: str | None) -> Session:
        try:
            return self.sessions.open(AAOSEnvironment(), client)
        except Refused as error:
            raise RpcError(JsonRpcErrorCode.SERVER_ERROR, str(error), {"retry_after": error.retry_after}) from None

    def session(self, session_id: Any) -> Session:
        if not isinstance(session_id, str):
            raise _invalid(["session_id: Input should be a valid string"])
        try:
            return self.sessions.get(session_id)
        except UnknownSession as error:
            raise _invalid([f"session_id: {error}".replace("POST /reset", "openenv/session/create")]) from None

    async def answer(self, message: Any, client: str | None, own: Session | None = None) -> dict[str, Any]:
        """The JSON-RPC response to one decoded message; `own` is a WS connection's session."""
        try:
            request = JsonRpcRequest.model_validate(message)
        except ValidationError as error:
            problems = error_messages(error.errors())
            return JsonRpcResponse.error_response(JsonRpcErrorCode.INVALID_REQUEST, "; ".join(problems),
                                                  data={"problems": problems}).model_dump()
        try:
            result = await self._dispatch(request, client, own)
        except RpcError as error:
            return JsonRpcResponse.error_response(error.code, error.message, data=error.data,
                                                  request_id=request.id).model_dump()
        except Exception as error:  # a bug: this call fails, the session and the server carry on
            log.error("unexpected %s in MCP %s", type(error).__name__, request.method[:100], exc_info=error)
            return JsonRpcResponse.error_response(JsonRpcErrorCode.INTERNAL_ERROR, "internal error; this call was "
                                                  "not completed", request_id=request.id).model_dump()
        return JsonRpcResponse.success(result, request_id=request.id).model_dump()

    async def _dispatch(self, request: JsonRpcRequest, client: str | None, own: Session | None) -> Any:
        params = request.params
        if request.method == "openenv/session/create":
            return {"session_id": (own or self.open(client)).id}
        if request.method == "openenv/session/close":
            target = self.session(params.get("session_id"))
            if own is not None and target.id == own.id:
                raise RpcError(JsonRpcErrorCode.INVALID_REQUEST, "this WebSocket's own session closes with it")
            self.sessions.close(target.id)
            return {"session_id": target.id, "closed": True}
        if request.method not in ("tools/list", "tools/call"):
            raise RpcError(JsonRpcErrorCode.METHOD_NOT_FOUND, f"unknown method {request.method[:100]!r}; this "
                           "server answers tools/list, tools/call, openenv/session/create and openenv/session/close")
        if own is not None:
            env = own.env
        elif "session_id" in params:
            env = self.session(params["session_id"]).env
        else:
            env = AAOSEnvironment()  # no session: a fresh environment for this call alone
        if request.method == "tools/list":
            return await _list_tools(env)
        return await _call_tool(env, params)


def add_mcp_routes(app: FastAPI, sessions: SessionStore) -> None:
    """Register POST /mcp and WS /mcp, in place of any /mcp routes the app has (openenv's), with `sessions`
    as the MCP session pool."""
    app.router.routes[:] = [route for route in app.router.routes if getattr(route, "path", None) != "/mcp"]
    routes = McpRoutes(sessions)

    @app.post("/mcp", tags=["MCP"], summary="MCP over JSON-RPC 2.0",
              responses={200: {"description": "A JSON-RPC 2.0 response: `result`, or `error` {code, message, data}."}})
    async def mcp(http: Request) -> JSONResponse:
        """tools/list, tools/call (`name`, `arguments`), openenv/session/create and openenv/session/close;
        `session_id` in the params acts on that MCP session, else on a fresh environment."""
        try:
            message = json.loads(await http.body())
        except (json.JSONDecodeError, RecursionError) as error:
            return JSONResponse(JsonRpcResponse.error_response(JsonRpcErrorCode.PARSE_ERROR,
                                                               f"the body is not JSON: {error}"[:200]).model_dump())
        return JSONResponse(await routes.answer(message, http.client.host if http.client else None))

    @app.websocket("/mcp")
    async def mcp_socket(socket: WebSocket) -> None:
        await socket.accept()
        client = socket.client.host if socket.client else None
        try:
            own = routes.open(client)
        except RpcError as error:
            refusal = JsonRpcResponse.error_response(error.code, error.message, data=error.data)
            await socket.send_text(refusal.model_dump_json())
            await socket.close(code=1013)  # try again later
            return
        try:
            await _serve(socket, routes, own, client)
        except WebSocketDisconnect:
            pass
        finally:
            with contextlib.suppress(UnknownSession):
                sessions.close(own.id)


async def _serve(socket: WebSocket, routes: McpRoutes, own: Session, client: str | None) -> None:
    while True:
        frame = await socket.receive()
        if frame["type"] == "websocket.disconnect":
            return
        try:
            routes.sessions.get(own.id)  # marks it used; gone if it expired or was evicted
        except UnknownSession:
            gone = JsonRpcResponse.error_response(JsonRpcErrorCode.SERVER_ERROR, "this MCP session expired or was "
                                                  "evicted while idle; reconnect to start a new one")
            await socket.send_text(gone.model_dump_json())
            await socket.close(code=1000)
            return
        try:
            message = json.loads(frame.get("text") or frame.get("bytes") or b"")
        except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as error:
            answer = JsonRpcResponse.error_response(JsonRpcErrorCode.PARSE_ERROR, f"not JSON: {error}"[:200])
            await socket.send_text(answer.model_dump_json())
            continue
        await socket.send_text(json.dumps(await routes.answer(message, client, own)))
