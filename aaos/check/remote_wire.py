"""How `aaos check --url` talks to a server: OpenEnv's HTTP routes (httpx) and its WebSocket message protocol
(websockets), with every answer, a refusal, a hang-up or silence included, turned into a value a check can judge
(nothing here raises for what a server does).

    client                                   server (openenv-core's HTTPEnvServer, and AAOS's)
    {"type": "reset", "data": {seed, ...}}   {"type": "observation", "data": {"observation", "reward", "done"}}
    {"type": "step", "data": action}         the same
    {"type": "state"}                        {"type": "state", "data": {...}}
    anything wrong                           {"type": "error", "data": {"message", "code"}}
"""

from __future__ import annotations

import contextlib
import json
import time
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Literal

import httpx
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidURI
from websockets.sync.client import ClientConnection, connect

Kind = Literal["observation", "state", "error", "closed", "timeout", "garbled"]
LOST: frozenset[str] = frozenset({"closed", "timeout", "garbled"})
"""Answers after which the connection is gone (a late answer would be taken for the next message's)."""
CAPACITY = "CAPACITY_REACHED"
OPEN_TRIES = 20
"""How often opening a session is tried while the server says every slot is taken (the previous check's
connection may still be closing there)."""
MAX_FRAME = 2**24


@dataclass(frozen=True, slots=True)
class Answer:
    """What a WebSocket message got back: an observation, a state, an error frame, or the connection closed
    (`detail`: the close code and reason), no answer in time, or a frame that is not an OpenEnv message."""

    kind: Kind
    data: Any = None
    detail: str = ""

    @property
    def lost(self) -> bool:
        return self.kind in LOST

    @property
    def code(self) -> str:
        """An error frame's code ("" for anything else)."""
        return str(self.data.get("code", "")) if self.kind == "error" and isinstance(self.data, dict) else ""

    def comparable(self) -> Any:
        """What two runs that should agree must agree on: an observation's data, a state, an error's code (its
        message may quote anything)."""
        return self.code if self.kind == "error" else self.data if self.kind in ("observation", "state") else None

    def describe(self, limit: int = 240) -> str:
        text = self.detail if self.lost else json.dumps(self.data, default=str)
        text = text if len(text) <= limit else text[: limit - 3] + "..."
        return f"{self.kind}: {text}"


class Session:
    """One WebSocket connection to /ws: one environment session."""

    def __init__(self, url: str, timeout: float) -> None:
        self._opened = connect(url, open_timeout=timeout, close_timeout=timeout, max_size=MAX_FRAME,
                               compression=None)
        self._connection: ClientConnection = self._opened.__enter__()
        self._timeout = timeout
        self.gone: Answer | None = None
        """How the connection ended, once it has."""

    def send(self, frame: str | bytes) -> Answer:
        """Send one frame (text, or bytes as a binary frame) and read the answer."""
        if self.gone is not None:
            return self.gone
        try:
            self._connection.send(frame)
        except ConnectionClosed as closed:
            # the server may have said why before it closed (openenv sends CAPACITY_REACHED, then closes)
            said = self._said_before_closing()
            self._lose(Answer("closed", detail=_closed(closed)))
            return said or self.gone
        try:
            text = self._connection.recv(timeout=self._timeout)
        except ConnectionClosed as closed:
            return self._lose(Answer("closed", detail=_closed(closed)))
        except TimeoutError:
            return self._lose(Answer("timeout", detail=f"no answer within {self._timeout:g} s"))
        except OSError as error:
            return self._lose(Answer("closed", detail=f"the connection failed: {type(error).__name__}: {error}"))
        return self._read(text)

    def message(self, kind: str, data: Any = None) -> Answer:
        return self.send(json.dumps({"type": kind} if data is None else {"type": kind, "data": data}))

    def reset(self, params: dict[str, Any]) -> Answer:
        return self.message("reset", params)

    def step(self, action: Any) -> Answer:
        return self.message("step", action)

    def state(self) -> Answer:
        return self.message("state")

    def close(self) -> None:
        """Say `close`, as OpenEnv's clients do, and let the server close the connection first (closing it here
        while the server is closing it too makes openenv-core log an error)."""
        if self.gone is None:
            with contextlib.suppress(ConnectionClosed, OSError):
                self._connection.send(json.dumps({"type": "close"}))
                self._connection.recv(timeout=self._timeout)
        self._opened.__exit__(None, None, None)

    def __enter__(self) -> Session:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.close()

    def _read(self, text: str | bytes) -> Answer:
        try:
            frame = json.loads(text)
        except (ValueError, RecursionError):
            return self._lose(Answer("garbled", detail=f"an answer that is not JSON: {str(text)[:200]!r}"))
        kind = frame.get("type") if isinstance(frame, dict) else None
        if kind not in ("observation", "state", "error"):
            return self._lose(Answer("garbled", detail=f"an answer that is no OpenEnv frame: {str(text)[:200]!r}"))
        return Answer(kind, frame.get("data"))

    def _said_before_closing(self) -> Answer | None:
        try:
            return self._read(self._connection.recv(timeout=0))
        except (ConnectionClosed, TimeoutError):
            return None

    def _lose(self, answer: Answer) -> Answer:
        self.gone = answer
        self._connection.close()
        return answer


def _closed(closed: ConnectionClosed) -> str:
    frame = closed.rcvd
    if frame is None:
        return "the server dropped the connection without a close frame"
    return f"the server closed the connection (code {frame.code}{', ' + frame.reason if frame.reason else ''})"


@dataclass(frozen=True, slots=True)
class Reply:
    """What an HTTP request got back: a status and the body (decoded JSON, else its text), or, with status 0,
    no answer at all (`body` says why)."""

    status: int
    body: Any

    @property
    def server_error(self) -> bool:
        return self.status >= 500 or self.status == 0

    def describe(self, limit: int = 240) -> str:
        text = self.body if isinstance(self.body, str) else json.dumps(self.body, default=str)
        text = text if len(text) <= limit else text[: limit - 3] + "..."
        return f"HTTP {self.status or 'no answer'}: {text}"


class Remote:
    """A server under check, by its base URL: HTTP requests, and WebSocket sessions on /ws."""

    def __init__(self, url: str, timeout: float) -> None:
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"the URL must start with http:// or https://, got {url!r}")
        self.url = url.rstrip("/")
        self.ws_url = "ws" + self.url[len("http"):] + "/ws"
        self.timeout = timeout
        self._http = httpx.Client(base_url=self.url, timeout=timeout)

    def get(self, path: str, params: dict[str, Any] | None = None) -> Reply:
        return self._request("GET", path, params=params)

    def post(self, path: str, body: Any = None, *, content: bytes | None = None,
             headers: dict[str, str] | None = None) -> Reply:
        if content is None:
            content = json.dumps(body).encode()
            headers = {"content-type": "application/json", **(headers or {})}
        return self._request("POST", path, content=content, headers=headers)

    def _request(self, method: str, path: str, **options: Any) -> Reply:
        try:
            response = self._http.request(method, path, **options)
        except httpx.HTTPError as error:
            return Reply(0, f"{type(error).__name__}: {error}")
        try:
            return Reply(response.status_code, response.json())
        except ValueError:
            return Reply(response.status_code, response.text[:2_000])

    def connect(self) -> Session:
        """A new WebSocket session; ConnectionError if /ws does not accept one."""
        try:
            return Session(self.ws_url, self.timeout)
        except (OSError, InvalidHandshake, InvalidURI, TimeoutError) as error:
            raise ConnectionError(f"WS {self.ws_url} refused a connection: {type(error).__name__}: {error}"
                                  ) from error

    def open(self, params: dict[str, Any], tries: int = OPEN_TRIES) -> tuple[Session, Answer]:
        """A new session, reset with `params`: the session and the reset's answer. While the server answers
        that every session slot is taken (the previous connection may still be closing there), tries again, up
        to `tries` times in all."""
        for attempt in range(1, tries + 1):
            session = self.connect()
            answer = session.reset(params)
            if answer.code != CAPACITY or attempt == tries:
                break
            session.close()
            time.sleep(0.05 * attempt)
        return session, answer

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Remote:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.close()
