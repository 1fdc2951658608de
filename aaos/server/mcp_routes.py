"""POST /mcp, DELETE /mcp and WS /mcp: the MCP tools of aaos.server.mcp over JSON-RPC 2.0, in place of openenv's
routes, for two kinds of client:

- Standard MCP clients (the `mcp` SDK's `ClientSession` over `streamable_http_client`, fastmcp's `Client`) speak
  MCP's streamable HTTP transport: `initialize` (answered with an `Mcp-Session-Id` header: a session of the MCP
  pool), `notifications/initialized` (202, no body), then `ping`, `tools/list` and `tools/call` with that header,
  each answered with one JSON response; `tools/call` answers MCP's CallToolResult (content, structuredContent,
  isError), converted by fastmcp as its own server would. A call the tool refuses (arguments it cannot take, an
  action the environment forbids, a step after the episode ended) is a result too, with `isError: true` and the
  problems as its text, which the model reads and corrects (as MCP 2025-11-25 has tool input errors answered);
  only an unknown tool is a JSON-RPC error (-32602). DELETE ends the session; an unknown or expired session
  is a 404 (the client initializes again). There is no server-to-client stream (GET is a 405): these tools never
  notify, so a client lists the tools again after `new_episode` switches the environment.
- openenv's clients speak openenv-core's methods and message shapes (`tools/list`, `tools/call` answering the
  tool's return value itself, `openenv/session/create` and `openenv/session/close`; `session_id` in the params
  picks a session over POST), unchanged. openenv's `MCPToolClient` in its default mode sends its tool calls over
  WS /ws as `step` messages (`{"type": "call_tool", ...}`), which aaos.server.ws hands to `McpRoutes.tool_step`.

Two things differ from openenv's own routes, which is why these routes are ours:

- Error codes follow JSON-RPC: for openenv's clients, arguments a tool refuses (wrong JSON type, unknown or missing
  argument, a forbidden action, an unknown id, an unknown tool) are -32602 "invalid params", with the problems
  listed in `data.problems`, and a step after the episode ended is -32000; openenv answers every tool error with
  -32603 "internal error".
- MCP sessions have a pool of their own (SessionConfig's size, per-client share and idle expiry), so MCP
  clients cannot lock WebSocket or HTTP clients out, or the other way round. A WS /mcp connection holds one
  session while it is open; when it expires or is evicted the server says so and closes the connection.

The dispatch is ours rather than an SDK server's because each session has its own environment's tools (which
change with `new_episode`), drawn from that pool, and both kinds of client share it; the messages are validated
and built with the `mcp` SDK's types, and tool values are converted to MCP results by fastmcp's own conversion.
"""

from __future__ import annotations

import contextlib
import inspect
import json
import logging
from typing import Any

from fastapi import FastAPI, Request, Response, WebSocket
from fastapi.responses import JSONResponse
from mcp.shared.version import SUPPORTED_PROTOCOL_VERSIONS
from mcp.types import (
    LATEST_PROTOCOL_VERSION,
    CallToolResult,
    Implementation,
    InitializeRequestParams,
    InitializeResult,
    ServerCapabilities,
    TextContent,
    ToolsCapability,
)
from openenv.core.env_server.mcp_types import (
    CallToolAction,
    CallToolObservation,
    JsonRpcErrorCode,
    JsonRpcRequest,
    JsonRpcResponse,
    ListToolsAction,
    ListToolsObservation,
    Tool,
    ToolError,
    ToolErrorType,
)
from openenv.core.env_server.serialization import serialize_observation
from pydantic import ValidationError
from starlette.websockets import WebSocketDisconnect

import aaos
from aaos.server.environment import AAOSEnvironment
from aaos.server.models import InvalidAction, InvalidParams, error_messages
from aaos.server.sessions import Refused, Session, SessionStore, UnknownSession
from aaos.server.wire import clipped

log = logging.getLogger("aaos.server")
MCP_REMEDY = ("close one (DELETE /mcp with its Mcp-Session-Id, openenv/session/close, or a WS /mcp connection), "
              "reuse one (its Mcp-Session-Id header, or its session_id in the params)")
"""How a client frees or reuses a session of the MCP pool (what a refusal advises)."""
SESSION_HEADER = "mcp-session-id"
"""The streamable HTTP header naming a standard client's MCP session (the pool's session id)."""
VERSION_HEADER = "mcp-protocol-version"
"""The streamable HTTP header a standard client sends with the protocol version it negotiated."""
EMPTY_LISTS = {"resources/list": {"resources": []}, "resources/templates/list": {"resourceTemplates": []},
               "prompts/list": {"prompts": []}}
"""What a generic MCP client may ask for beyond tools: there are none (the capabilities do not offer them)."""
TOOL_STEP_TYPES = {"list_tools": ListToolsAction, "call_tool": CallToolAction}
"""The `type` of a WS /ws `step` message's data that is an MCP call (openenv's MCPToolClient in its default mode)."""
_TOOL_ERROR_TYPES = {JsonRpcErrorCode.INVALID_PARAMS: ToolErrorType.INVALID_ARGS}
METHODS = ("DELETE", "POST")
"""The HTTP methods of /mcp (what a 405's Allow header lists); WS /mcp is a route of its own."""


def _header(name: str, required: bool, description: str, schema: dict[str, Any]) -> dict[str, Any]:
    """An OpenAPI header parameter (the routes read their headers themselves, to answer as MCP says)."""
    return {"name": name, "in": "header", "required": required, "description": description, "schema": schema}


SESSION_PARAMETER = {"type": "string", "minLength": 1}


class RpcError(Exception):
    """A JSON-RPC error answer."""

    def __init__(self, code: JsonRpcErrorCode, message: str, data: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code, self.message, self.data = code, message, data


def _invalid(problems: list[str]) -> RpcError:
    shown = clipped(problems)
    return RpcError(JsonRpcErrorCode.INVALID_PARAMS, "; ".join(shown), {"problems": shown})


def _error(code: JsonRpcErrorCode, message: str, data: dict[str, Any] | None = None, request_id: Any = None
           ) -> dict[str, Any]:
    """A JSON-RPC error response."""
    return JsonRpcResponse.error_response(code, message, data=data, request_id=request_id).model_dump()


def is_notification(message: Any) -> bool:
    """Whether a decoded message is a JSON-RPC notification (`notifications/...`, no id): it gets no answer."""
    return (isinstance(message, dict) and "id" not in message and isinstance(message.get("method"), str)
            and message["method"].startswith("notifications/"))


def is_tool_step(data: dict[str, Any]) -> bool:
    """Whether a WS /ws `step` message's data is an MCP call rather than a joint action (whose values are objects,
    never the string `type` names here)."""
    kind = data.get("type")
    return isinstance(kind, str) and kind in TOOL_STEP_TYPES


async def _tools(env: AAOSEnvironment) -> dict[str, Any]:
    return {tool.name: tool for tool in await env.mcp_server.list_tools()}


async def _list_tools(env: AAOSEnvironment) -> dict[str, Any]:
    """MCP's ListToolsResult, as fastmcp's server lists the tools (with their input and output schemas)."""
    return {"tools": [tool.to_mcp_tool().model_dump(by_alias=True, mode="json", exclude_none=True)
                      for tool in (await _tools(env)).values()]}


async def _call_tool(env: AAOSEnvironment, params: dict[str, Any], standard: bool = False) -> Any:
    """The tool's return value (openenv's answer), or with `standard` MCP's CallToolResult made from it by fastmcp
    (text content and structured content, as fastmcp's own server answers), or for a call the tool refuses, one
    with `isError` and the refusal as its text. An unknown tool is an RpcError either way."""
    name, arguments = params.get("name"), params.get("arguments", {})
    tools = await _tools(env)
    if not isinstance(name, str) or name not in tools:
        raise _invalid([f"name: unknown tool {str(name)[:100]!r}; tools/list lists them"])
    if not standard:
        return _run(tools[name].fn, arguments)
    try:
        value = _run(tools[name].fn, arguments)
    except RpcError as refused:
        return CallToolResult(content=[TextContent(type="text", text=refused.message)], isError=True
                              ).model_dump(by_alias=True, mode="json", exclude_none=True)
    result = tools[name].convert_result(value)
    return CallToolResult.model_validate({"content": result.content, "structuredContent": result.structured_content,
                                          "isError": False, "_meta": result.meta}
                                         ).model_dump(by_alias=True, mode="json", exclude_none=True)


def _run(function: Any, arguments: Any) -> Any:
    """Call a tool function with its arguments, its refusals as JSON-RPC errors."""
    if not isinstance(arguments, dict):
        raise _invalid(["arguments: Input should be an object"])
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

    async def answer(self, message: Any, client: str | None, own: Session | None = None, standard: bool = False
                     ) -> dict[str, Any]:
        """The JSON-RPC response to one decoded message; `own` is the session of the connection (WS /mcp, WS /ws)
        or of the Mcp-Session-Id header; `standard`: answer tools/call as MCP does (CallToolResult), not as openenv
        does (the tool's value)."""
        try:
            request = JsonRpcRequest.model_validate(message)
        except ValidationError as error:
            problems = error_messages(error.errors())
            return _error(JsonRpcErrorCode.INVALID_REQUEST, "; ".join(problems), {"problems": problems})
        try:
            result = await self._dispatch(request, client, own, standard)
        except RpcError as error:
            return _error(error.code, error.message, error.data, request.id)
        except Exception as error:  # a bug: this call fails, the session and the server carry on
            log.error("unexpected %s in MCP %s", type(error).__name__, request.method[:100], exc_info=error)
            return _error(JsonRpcErrorCode.INTERNAL_ERROR, "internal error; this call was not completed",
                          request_id=request.id)
        return JsonRpcResponse.success(result, request_id=request.id).model_dump()

    async def _dispatch(self, request: JsonRpcRequest, client: str | None, own: Session | None, standard: bool
                        ) -> Any:
        params, method = request.params, request.method
        if method == "ping" or method.startswith("notifications/"):
            return {}  # a notification is acknowledged only where the transport answers every message (WS)
        if method in EMPTY_LISTS:
            return EMPTY_LISTS[method]
        if method == "openenv/session/create":
            return {"session_id": (own or self.open(client)).id}
        if method == "openenv/session/close":
            target = self.session(params.get("session_id"))
            if own is not None and target.id == own.id:
                raise RpcError(JsonRpcErrorCode.INVALID_REQUEST, "a session does not close itself this way: close "
                               "its WebSocket, or DELETE /mcp with its Mcp-Session-Id")
            self.sessions.close(target.id)
            return {"session_id": target.id, "closed": True}
        if method not in ("initialize", "tools/list", "tools/call"):
            raise RpcError(JsonRpcErrorCode.METHOD_NOT_FOUND, f"unknown method {method[:100]!r}; this server answers "
                           "initialize, ping, tools/list, tools/call, openenv/session/create and "
                           "openenv/session/close")
        if own is not None:
            env = own.env
        elif "session_id" in params:
            env = self.session(params["session_id"]).env
        else:
            env = AAOSEnvironment()  # no session: a fresh environment for this call alone
        if method == "initialize":
            return _initialize(env, params)
        if method == "tools/list":
            return await _list_tools(env)
        return await _call_tool(env, params, standard)

    async def tool_step(self, data: dict[str, Any], client: str | None, own: Session) -> dict[str, Any]:
        """The data of the observation frame answering a WS /ws `step` whose data is openenv's ListToolsAction or
        CallToolAction (what MCPToolClient sends in its default mode), on the connection's session, as openenv
        serialises a ListToolsObservation or CallToolObservation. A call that steps the episode carries its
        reward and done; a refused call carries a ToolError (which the client raises) and changes nothing."""
        try:
            action = TOOL_STEP_TYPES[data["type"]].model_validate(data)
        except ValidationError as error:
            problems = error_messages(error.errors())
            return _tool_error(str(data.get("tool_name", ""))[:100], ToolErrorType.INVALID_ARGS, "; ".join(problems))
        if isinstance(action, ListToolsAction):
            listed = (await _list_tools(own.env))["tools"]
            tools = [Tool(name=t["name"], description=t.get("description", ""), input_schema=t["inputSchema"])
                     for t in listed]
            return serialize_observation(ListToolsObservation(tools=tools))
        assert isinstance(action, CallToolAction)
        tools = await _tools(own.env)
        if action.tool_name not in tools:
            return _tool_error(action.tool_name[:100], ToolErrorType.TOOL_NOT_FOUND,
                               f"unknown tool {action.tool_name[:100]!r}; list_tools lists them")
        try:
            value = _run(tools[action.tool_name].fn, action.arguments)
        except RpcError as error:
            return _tool_error(action.tool_name, _TOOL_ERROR_TYPES.get(error.code, ToolErrorType.EXECUTION_ERROR),
                               error.message)
        stepped = isinstance(value, dict) and "reward" in value  # an action tool or joint_action
        done = bool(value.get("done", False)) if isinstance(value, dict) else False
        observation = CallToolObservation(tool_name=action.tool_name, result={"data": value},
                                          reward=value["reward"] if stepped else None, done=done)
        return serialize_observation(observation)


def _tool_error(tool_name: str, kind: ToolErrorType, message: str) -> dict[str, Any]:
    return serialize_observation(CallToolObservation(tool_name=tool_name, error=ToolError(error_type=kind,
                                                                                          message=message)))


def _initialize(env: AAOSEnvironment, params: dict[str, Any]) -> dict[str, Any]:
    """MCP's InitializeResult: the client's protocol version when this server speaks it, else the latest; the tools
    capability; the environment's instructions."""
    try:
        asked = InitializeRequestParams.model_validate(params).protocolVersion
    except ValidationError as error:
        raise _invalid(error_messages(error.errors())) from None
    version = asked if asked in SUPPORTED_PROTOCOL_VERSIONS else LATEST_PROTOCOL_VERSION
    result = InitializeResult(protocolVersion=version, capabilities=ServerCapabilities(tools=ToolsCapability(
        listChanged=False)), serverInfo=Implementation(name="aaos", version=aaos.__version__),
        instructions=env.mcp_server.instructions)
    return result.model_dump(by_alias=True, mode="json", exclude_none=True)


def add_mcp_routes(app: FastAPI, sessions: SessionStore) -> None:
    """Register POST /mcp, DELETE /mcp and WS /mcp, in place of any /mcp routes the app has (openenv's), with
    `sessions` as the MCP session pool."""
    app.router.routes[:] = [route for route in app.router.routes if getattr(route, "path", None) != "/mcp"]
    routes = McpRoutes(sessions)

    session_header = _header("Mcp-Session-Id", False, "The MCP session an `initialize` answer named (standard "
                             "clients); without it, openenv's methods.", SESSION_PARAMETER)
    version_header = _header("MCP-Protocol-Version", False, "The protocol version the client negotiated.",
                             {"type": "string", "enum": list(SUPPORTED_PROTOCOL_VERSIONS)})

    @app.post("/mcp", tags=["MCP"], summary="MCP over JSON-RPC 2.0 (streamable HTTP, and openenv's methods)",
              openapi_extra={"parameters": [session_header, version_header]},
              responses={200: {"description": "A JSON-RPC 2.0 response: `result`, or `error` {code, message, data}; "
                                              "an `initialize` answer carries the Mcp-Session-Id header."},
                         202: {"description": "A notification was accepted (no body)."},
                         400: {"description": "An MCP-Protocol-Version header this server does not speak."},
                         404: {"description": "An unknown or expired Mcp-Session-Id: initialize again."}})
    async def mcp(http: Request) -> Response:
        """Standard MCP clients: `initialize`, then `notifications/initialized`, `ping`, `tools/list` and
        `tools/call` with the Mcp-Session-Id header the initialize answer gave. openenv's clients: tools/list,
        tools/call (`name`, `arguments`), openenv/session/create and openenv/session/close; `session_id` in the
        params acts on that MCP session, else on a fresh environment."""
        version = http.headers.get(VERSION_HEADER)
        if version is not None and version not in SUPPORTED_PROTOCOL_VERSIONS:
            spoken = ", ".join(SUPPORTED_PROTOCOL_VERSIONS)
            return JSONResponse(_error(JsonRpcErrorCode.INVALID_REQUEST, f"unsupported MCP-Protocol-Version "
                                       f"{version[:40]!r}; this server speaks {spoken}"), status_code=400)
        session_id = http.headers.get(SESSION_HEADER)
        own = None
        if session_id is not None:  # the headers are answered before the body is read
            try:
                own = sessions.get(session_id)
            except UnknownSession:
                return _session_gone(session_id)
        try:
            message = json.loads(await http.body())
        except (json.JSONDecodeError, RecursionError) as error:
            return JSONResponse(_error(JsonRpcErrorCode.PARSE_ERROR, f"the body is not JSON: {error}"[:200]))
        client = http.client.host if http.client else None
        if own is not None:
            if is_notification(message):
                return Response(status_code=202)
            return JSONResponse(await routes.answer(message, client, own, standard=True))
        if is_notification(message):
            return Response(status_code=202)
        if isinstance(message, dict) and message.get("method") == "initialize":
            return await _initialize_session(routes, message, client)
        return JSONResponse(await routes.answer(message, client))

    @app.delete("/mcp", tags=["MCP"], summary="End a streamable HTTP MCP session", status_code=204,
                openapi_extra={"parameters": [{**session_header, "required": True,
                                               "description": "The MCP session to end."}]},
                responses={400: {"description": "No Mcp-Session-Id header."},
                           404: {"description": "An unknown or expired Mcp-Session-Id."}})
    async def end_mcp_session(http: Request) -> Response:
        """End the MCP session the Mcp-Session-Id header names (standard MCP clients do so when they close)."""
        session_id = http.headers.get(SESSION_HEADER)
        if session_id is None:
            return JSONResponse(_error(JsonRpcErrorCode.INVALID_REQUEST, "send the Mcp-Session-Id header of the "
                                       "session to end"), status_code=400)
        try:
            sessions.close(session_id)
        except UnknownSession:
            return _session_gone(session_id)
        return Response(status_code=204)

    @app.api_route("/mcp", methods=["GET", "HEAD", "OPTIONS", "PATCH", "PUT", "TRACE"], include_in_schema=False)
    async def other_method(http: Request) -> Response:
        """A 405 listing every method /mcp answers (Starlette's own names only the first route's); GET included:
        there is no server-to-client stream."""
        return JSONResponse({"detail": f"{http.method[:20]} /mcp is not allowed; use {' or '.join(METHODS)}"},
                            status_code=405, headers={"Allow": ", ".join(METHODS)})

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


async def _initialize_session(routes: McpRoutes, message: dict[str, Any], client: str | None) -> Response:
    """The answer to a standard client's `initialize`: a new session of the MCP pool, named by the Mcp-Session-Id
    header; a refusal (no slot free, bad params) opens none."""
    try:
        own = routes.open(client)
    except RpcError as error:
        request_id = message.get("id")
        return JSONResponse(_error(error.code, error.message, error.data,
                                   request_id if isinstance(request_id, str | int) else None))
    answer = await routes.answer(message, client, own, standard=True)
    if "error" in answer:
        routes.sessions.close(own.id)
        return JSONResponse(answer)
    return JSONResponse(answer, headers={SESSION_HEADER: own.id})


def _session_gone(session_id: str) -> JSONResponse:
    """The 404 that tells a standard client its session is gone (it initializes a new one)."""
    return JSONResponse(_error(JsonRpcErrorCode.INVALID_REQUEST, f"unknown or expired MCP session {session_id[:100]!r}"
                               " (closed, expired, evicted or restarted away); initialize a new one"),
                        status_code=404)


async def _serve(socket: WebSocket, routes: McpRoutes, own: Session, client: str | None) -> None:
    standard = False  # answers tools/call as MCP does once the client has initialized
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
        standard = standard or (isinstance(message, dict) and message.get("method") == "initialize")
        if not is_notification(message):
            await socket.send_text(json.dumps(await routes.answer(message, client, own, standard)))
