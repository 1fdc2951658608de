"""The AAOS API app: OpenEnv's routes plus stateful HTTP sessions.

openenv-core's server (`HTTPEnvServer`) registers /health, /metadata, /schema, WS /ws (one environment
per connection) and /mcp (POST and WS). Its /ws and /mcp are replaced by ours, with the same protocols
(aaos.server.ws: answered from the event loop, lean answers, typed errors for malformed frames;
aaos.server.mcp_routes: JSON-RPC error codes, a session pool of its own). Its own /reset,
/step and /state are stateless (a fresh environment per request), so it is registered in its "production"
mode, which leaves them out, and this module adds the stateful ones: POST /reset opens (or resets) a
session, POST /step and GET /state take its `session_id`, POST /close ends it. This is the same composition
`openenv.core.env_server.create_app` performs (a FastAPI app + `HTTPEnvServer.register_routes`), with our
reset/step/state in place of its own.

A session runs any registered environment (reset with `env`). Our GET /schema replaces openenv's and takes
`?env=` (default: the default environment); GET /envs lists every environment with its spec and schemas.

    aaos serve --port 8000        # or the `server` console script, or: python -m aaos.server.app
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import gc
import logging
import time
from collections.abc import Container, Sequence
from typing import Annotated, Any

import uvicorn
from fastapi import FastAPI, Query, Request
from fastapi.exception_handlers import http_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from openenv.core.env_server.http_server import HTTPEnvServer
from openenv.core.env_server.types import SchemaResponse, ServerMode
from pydantic import BaseModel, Field, ValidationError
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.routing import BaseRoute
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from starlette.websockets import WebSocketDisconnect

import aaos
from aaos.server.address import DEFAULT_HOST, DEFAULT_PORT, add_server_arguments
from aaos.server.environment import AAOSEnvironment, InvalidAction
from aaos.server.evaluation import add_evaluation
from aaos.server.mcp_routes import MCP_REMEDY, McpRoutes, add_mcp_routes
from aaos.server.models import (
    AAOSObservation,
    AAOSState,
    CloseRequest,
    CloseResponse,
    EpisodeParams,
    Invalid,
    InvalidParams,
    Problem,
    ResetRequest,
    ResetResponse,
    StepRequest,
    StepResponse,
    WireAction,
    check_episode,
    env_schemas,
    error_messages,
)
from aaos.server.sessions import (
    ClientLimit,
    Clock,
    Refused,
    SessionConfig,
    SessionStore,
    StateHidden,
    UnknownSession,
    env_flag,
)
from aaos.server.wire import Lean, clip, clipped, dumps, step_answer, undecodable
from aaos.server.ws import WS_REMEDY, add_ws_route

MAX_BODY_BYTES = 64 * 1024

log = logging.getLogger("aaos.server")


def create_app(config: SessionConfig | None = None, clock: Clock = time.monotonic) -> FastAPI:
    """The API app. `config` defaults to AAOS_MAX_SESSIONS / AAOS_SESSION_TTL from the environment;
    `clock` is the monotonic clock the session store expires sessions by."""
    config = config or SessionConfig.from_env()
    app = FastAPI(
        title="AAOS API",
        version=aaos.__version__,
        description="The Autonomous AI Organization Simulator over HTTP, WebSocket and MCP. "
                    "POST /reset opens a session; POST /step and GET /state take its session_id.",
    )
    # openenv's session limits are left at their defaults: the routes that would use them (/ws, /mcp) are
    # replaced below by ours, whose pools follow `config`
    openenv_server = HTTPEnvServer(AAOSEnvironment, WireAction, AAOSObservation)
    openenv_server.register_routes(app, mode=ServerMode.PRODUCTION)
    app.router.routes[:] = [route for route in app.router.routes if not _is_schema_route(route)]
    _add_env_routes(app)
    app.state.sessions = SessionStore(config, clock)
    _add_session_routes(app, app.state.sessions)
    app.state.mcp_sessions = SessionStore(config, clock, MCP_REMEDY)
    add_mcp_routes(app, app.state.mcp_sessions)
    app.state.ws_sessions = SessionStore(config, clock, WS_REMEDY)
    add_ws_route(app, app.state.ws_sessions, McpRoutes(app.state.mcp_sessions))
    _add_error_handlers(app)
    add_evaluation(app, config)
    app.add_middleware(BodyLimit, paths=frozenset(route.path for route in app.routes), limit=MAX_BODY_BYTES)
    app.add_middleware(ContainErrors)
    return app


def _json(data: Any) -> Response:
    """Serialise straight to JSON bytes (the routes' response models document the shape)."""
    return Response(dumps(data), media_type="application/json")


_SESSION_ERRORS: dict[int | str, dict[str, Any]] = {
    404: {"model": Problem, "description": "Unknown or expired session_id."},
    422: {"model": Invalid, "description": "Malformed or unauthorised input; each message names the field."},
}
_BODY_ERRORS: dict[int | str, dict[str, Any]] = {
    **_SESSION_ERRORS,
    400: {"model": Problem, "description": "The body is not UTF-8 JSON, or is nested too deeply to decode."},
    413: {"model": Problem, "description": f"The body is larger than {MAX_BODY_BYTES} bytes."},
    415: {"model": Problem, "description": "The body is sent with a Content-Type other than application/json."},
}


def _is_schema_route(route: BaseRoute) -> bool:
    """openenv's GET /schema, which shows one fixed action type: ours takes ?env= instead."""
    return getattr(route, "path", None) == "/schema" and "GET" in (getattr(route, "methods", None) or ())


class EnvInfo(BaseModel):
    spec: dict[str, Any] = Field(description="The environment's spec: id, version, reward_version, defaults, roles, "
                                             "tasks, scenarios, actions (with payload schemas), reward components.")
    schemas: SchemaResponse = Field(description="As GET /schema?env=ID.")


EnvQuery = Annotated[str | None, Query(max_length=100, description=f"Environment id (default {aaos.DEFAULT_ENV!r}).",
                                       json_schema_extra={"enum": [*aaos.env_ids(), None]})]


def _add_env_routes(app: FastAPI) -> None:
    @app.get("/schema", response_model=SchemaResponse, summary="JSON schemas of an environment's types",
             tags=["Environment Info"], responses={422: {"model": Invalid, "description": "Unknown environment."}})
    async def schema(env: EnvQuery = None) -> Response:
        """The JSON schemas of the joint action /step and WebSocket `step` take, the observation and the
        state of environment `env` (default: the default environment), as OpenEnv's /schema gives them."""
        return _json(env_schemas(check_episode(EpisodeParams(env=env), aaos.DEFAULT_ENV)))

    @app.get("/envs", response_model=dict[str, EnvInfo], summary="Every registered environment",
             tags=["Environment Info"])
    async def envs() -> Response:
        """Every environment a session can run (POST /reset with `env`): its spec and its schemas."""
        return _json({env: {"spec": aaos.spec(env).to_dict(), "schemas": env_schemas(env)} for env in aaos.env_ids()})


def _add_session_routes(app: FastAPI, sessions: SessionStore) -> None:
    @app.post("/reset", response_model=ResetResponse, summary="Open a session, or reset one", tags=["Sessions"],
              responses={**_BODY_ERRORS,
                         429: {"model": Problem, "description": "This client holds as many sessions as one may "
                                                                "(Retry-After: seconds until its idlest expires)."},
                         503: {"model": Problem, "description": "Every session slot is taken (Retry-After: seconds "
                                                                "until one could be evicted)."}})
    async def reset(connection: Request, request: ResetRequest | None = None) -> Response:
        """Start an episode. Without `session_id` a new session is opened; with it, that session's
        episode starts over (fields left out keep their current values). `roles` and `observe` make the answer
        lean (what those roles see, or no observation)."""
        request = request or ResetRequest()
        if request.session_id is None:
            env = AAOSEnvironment()
            lean = Lean.of(check_episode(request, env.env_id), request.roles, request.observe)
            observation = env.start(request)
            session = sessions.open(env, connection.client.host if connection.client else None)
        else:
            session = sessions.get(request.session_id)
            lean = Lean.of(check_episode(request, session.env.env_id), request.roles, request.observe)
            observation = session.env.start(request)
        return _json({"session_id": session.id, "observation": lean.observation(observation), "reward": None,
                      "done": observation.get("done", False)})

    @app.post("/step", response_model=StepResponse, summary="Step a session with a joint action", tags=["Sessions"],
              responses={**_BODY_ERRORS, 409: {"model": Problem, "description": "The episode is over."}})
    async def step(request: StepRequest) -> Response:
        """Apply one action per role (roles left out do no_op) and advance one step. Strict: an action the
        environment would reject as input (unknown ids, wrong role, bad payload) is a 422 and changes nothing.
        `roles` and `observe` make the answer lean (what one role sees, or no observation)."""
        session = sessions.get(request.session_id)
        try:
            joint = session.env.typed(request.action.plain())
        except ValidationError as error:
            raise RequestValidationError([{**e, "loc": ("body", "action", *e["loc"])} for e in error.errors()]
                                         ) from None
        lean = Lean.of(session.env.env_id, request.roles, request.observe)
        return _json(step_answer(session.env.advance(joint, lean)))

    @app.get("/state", response_model=AAOSState, summary="The full ground-truth state of a session", tags=["Sessions"],
             responses={**_SESSION_ERRORS, 403: {"model": Problem, "description": "The server hides the ground "
                                                                                    "truth (--eval, --hide-state)."}})
    async def state(session_id: Annotated[str, Query(min_length=1, max_length=100, description="From POST /reset.")]
                    ) -> Response:
        return _json(sessions.ground_truth(session_id))

    @app.post("/close", response_model=CloseResponse, summary="End a session", tags=["Sessions"],
              responses=_BODY_ERRORS)
    async def close(request: CloseRequest) -> CloseResponse:
        sessions.close(request.session_id)
        return CloseResponse(session_id=request.session_id)


def _problem(status: int, detail: str | list[str], headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"detail": detail}, status_code=status, headers=headers)


def _add_error_handlers(app: FastAPI) -> None:
    async def invalid_request(_: Request, error: Exception) -> JSONResponse:
        assert isinstance(error, RequestValidationError)
        return _problem(422, clipped(error_messages(error.errors())))

    async def invalid_action(_: Request, error: Exception) -> JSONResponse:
        assert isinstance(error, InvalidAction | InvalidParams)
        return _problem(422, clipped(error.problems))

    async def unknown_session(_: Request, error: Exception) -> JSONResponse:
        return _problem(404, str(error))

    async def episode_done(_: Request, error: Exception) -> JSONResponse:
        return _problem(409, "the episode is over; POST /reset with this session_id to start a new one")

    async def refused(_: Request, error: Exception) -> JSONResponse:
        assert isinstance(error, Refused)
        return _problem(429 if isinstance(error, ClientLimit) else 503, str(error),
                        headers={"Retry-After": str(error.retry_after)})

    async def state_hidden(_: Request, error: Exception) -> JSONResponse:
        return _problem(403, str(error))

    async def http_error(request: Request, error: Exception) -> Response:
        assert isinstance(error, HTTPException)
        if error.status_code == 400 and error.__cause__ is not None:  # FastAPI could not decode a UTF-8 JSON body
            return _problem(400, undecodable(error.__cause__, "the request body"))
        return await http_exception_handler(request, error)

    app.add_exception_handler(RequestValidationError, invalid_request)
    app.add_exception_handler(InvalidAction, invalid_action)
    app.add_exception_handler(InvalidParams, invalid_action)
    app.add_exception_handler(UnknownSession, unknown_session)
    app.add_exception_handler(aaos.EpisodeDone, episode_done)
    app.add_exception_handler(Refused, refused)
    app.add_exception_handler(StateHidden, state_hidden)
    app.add_exception_handler(HTTPException, http_error)


class BodyLimit:
    """Answers 413 to a request body over `limit` bytes on the API's own paths before any route reads it
    (the UI mounted beside the API is not limited), 415 to one sent as another media type than JSON and 400 to
    one that cannot be UTF-8 JSON. The body is read here and handed on unchanged; one sent without a
    Content-Type is handed on as JSON."""

    def __init__(self, app: ASGIApp, paths: Container[str], limit: int) -> None:
        self.app = app
        self.paths = paths
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] not in self.paths:
            await self.app(scope, receive, send)
            return
        declared = Headers(scope=scope).get("content-length", "")
        if declared.isdigit() and int(declared) > self.limit:
            await self._too_large(scope, receive, send)
            return
        chunks: list[bytes] = []
        size, more = 0, True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            if size > self.limit:
                await self._too_large(scope, receive, send)
                return
            more = message.get("more_body", False)
        content = b"".join(chunks)
        media_type = Headers(scope=scope).get("content-type")
        if content and media_type and not _json_media_type(media_type):
            await _problem(415, f"the request body must be JSON: send it with the header Content-Type: "
                                f"application/json (not {clip(media_type, 100)})")(scope, receive, send)
            return
        if content and not media_type:  # read as JSON, whatever FastAPI's version does with no Content-Type
            headers = [(name, value) for name, value in scope["headers"] if name.lower() != b"content-type"]
            scope = {**scope, "headers": [*headers, (b"content-type", b"application/json")]}
        if not _utf8_json(content):
            await _problem(400, "the request body is not UTF-8: send JSON encoded as UTF-8")(scope, receive, send)
            return
        body: Message | None = {"type": "http.request", "body": content, "more_body": False}

        async def replay() -> Message:
            nonlocal body
            if body is None:
                return await receive()
            message, body = body, None
            return message

        await self.app(scope, replay, send)

    async def _too_large(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = _problem(413, f"the request body is larger than {self.limit} bytes")
        await response(scope, receive, send)


def _json_media_type(content_type: str) -> bool:
    """Whether a Content-Type is JSON's: application/json or application/*+json, parameters such as charset
    aside."""
    kind = content_type.split(";", 1)[0].strip().lower()
    return kind == "application/json" or (kind.startswith("application/") and kind.endswith("+json"))


def _utf8_json(content: bytes) -> bool:
    """Whether a body can be UTF-8 JSON: it decodes as UTF-8 and has no NUL byte (JSON escapes every control
    character, so a NUL means UTF-16 or UTF-32, which json.loads would otherwise detect and accept)."""
    try:
        content.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return b"\0" not in content


class ContainErrors:
    """Keeps an unexpected error to the request that raised it: an HTTP request gets a 500 (logged without
    its body, which may hold secrets) on a connection that stays usable; a WebSocket client that hangs up
    while openenv is still closing the socket is not an error at all."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":
            with contextlib.suppress(WebSocketDisconnect):
                await self.app(scope, receive, send)
            return
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracking_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, tracking_send)
        except Exception as error:
            log.error("unexpected %s on %s %s", type(error).__name__, scope["method"], scope["path"], exc_info=error)
            if started:
                raise
            response = _problem(500, "internal error; this request was not completed and no other session "
                                     "was affected")
            await response(scope, receive, send)


def uvicorn_config(app: ASGIApp, host: str, port: int, log_level: str = "warning",
                   forwarded_allow_ips: str | None = None, **settings: Any) -> uvicorn.Config:
    """How an AAOS server runs under uvicorn (`aaos serve`, the Space and BackgroundServer alike; `settings` are
    further uvicorn.Config settings): a WebSocket frame is capped at MAX_BODY_BYTES, as an HTTP body is (a larger
    one closes the connection with 1009); WebSocket answers are not compressed unless AAOS_WS_DEFLATE is on
    (compressing a full observation costs more server CPU than the step: a client short of bandwidth asks for lean
    answers, or a server for a slow link turns it on). X-Forwarded-For and X-Forwarded-Proto are read only from
    the proxies `forwarded_allow_ips` names (uvicorn's syntax; aaos.server.address.trusted_proxies): by default
    (None or blank) none, where uvicorn would trust 127.0.0.1's, so that no client (a local process included) can
    claim another address and with it another client's share of the session pools."""
    trusted = (forwarded_allow_ips or "").strip() or None
    return uvicorn.Config(app, host=host, port=port, log_level=log_level, ws_max_size=MAX_BODY_BYTES,
                          ws_per_message_deflate=env_flag("AAOS_WS_DEFLATE"), proxy_headers=trusted is not None,
                          forwarded_allow_ips=trusted, **settings)


def run_server(server: uvicorn.Server) -> None:
    """Serve until interrupted, with everything built so far (modules, the app, its schemas: ~300,000 objects
    for `aaos serve`, more with the UI) frozen out of the garbage collector's reach. A full collection walks
    every tracked object: ~200 ms on the development VM, a stall every client waited out, several times a
    minute under load. What is created later (sessions, observations) is collected as before."""
    gc.collect()
    gc.freeze()
    server.run()


def serve(host: str = DEFAULT_HOST, port: int = DEFAULT_PORT, log_level: str = "warning",
          hide_state: bool = False, evaluation: bool = False, forwarded_allow_ips: str | None = None) -> None:
    """Run the API alone (no UI) with uvicorn until interrupted; hide_state as AAOS_HIDE_STATE=1, evaluation as
    AAOS_EVAL=1 (aaos.server.evaluation); proxy headers trusted only from `forwarded_allow_ips` (uvicorn_config)."""
    config = SessionConfig.from_env()
    config = dataclasses.replace(config, hide_state=hide_state or config.hide_state,
                                 evaluation=evaluation or config.evaluation)
    run_server(uvicorn.Server(uvicorn_config(create_app(config), host, port, log_level, forwarded_allow_ips)))


def serve_arguments(args: argparse.Namespace) -> None:
    """Run the API alone as add_server_arguments' options say (`aaos serve` and the `server` script)."""
    serve(args.host, args.port, hide_state=args.hide_state, evaluation=args.eval,
          forwarded_allow_ips=args.forwarded_allow_ips)


def main(argv: Sequence[str] | None = None) -> None:
    """The `server` entry point."""
    parser = argparse.ArgumentParser(prog="server", description="Run the AAOS API server (OpenEnv-compatible).")
    add_server_arguments(parser)
    serve_arguments(parser.parse_args(argv))


if __name__ == "__main__":
    main()
