"""The session store: one environment per session, capped in number overall and per client, expired when idle,
and evicted when idle under pressure.

The policy, in the order `open` applies it:

1. Sessions idle for longer than `ttl` are gone (expired).
2. A client (one network address) holding `max_per_client` sessions is refused (`ClientLimit`, HTTP 429)
   until it closes one or one of its own expires; it never pushes out another client's sessions.
3. When all `max_sessions` slots are taken, the session idle the longest is evicted if it has been idle for
   at least `evict_after` seconds; otherwise the request is refused (`AtCapacity`, HTTP 503).

Both refusals carry `retry_after`: the whole seconds until a slot would free up if nothing else changed (the
client's own longest-idle session expiring; any session becoming evictable). A session opened with `on_drop` is
told why when the store drops it itself (expired or evicted, not closed), so that whatever holds it (a WebSocket
connection) lets go of it too. Time comes from an injected
monotonic clock, so tests can advance it without sleeping. The store's map is guarded by one lock; each
session's environment (AAOSEnvironment) locks its own reset and step.
"""

from __future__ import annotations

import math
import os
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from aaos.server.environment import AAOSEnvironment

Clock = Callable[[], float]
Dropped = Callable[[str], None]
"""Told why ("expired after more than 600 s idle") when the store drops a session itself; called on whichever
thread touched the store, without its lock held."""
DEFAULT_MAX_SESSIONS = 256
DEFAULT_MAX_PER_CLIENT = 32
DEFAULT_TTL = 1800.0
DEFAULT_EVICT_AFTER = 300.0
UNKNOWN_CLIENT = "unknown"
"""The client address of a request whose peer address the server does not know (all such share one allowance)."""


@dataclass(frozen=True, slots=True)
class SessionConfig:
    """How many sessions, for how long.

    max_sessions: open sessions at once (HTTP sessions, WebSocket connections and MCP sessions each have a pool
        of this size).
    max_per_client: sessions one client address may hold in a pool.
    ttl: seconds a session may stay idle before it expires.
    evict_after: seconds of idleness after which a full pool gives the session to a newcomer (at or above the
        ttl: never, sessions expire first).
    hide_state: GET /state answers 403, so that an agent under benchmark cannot read the ground truth.
    evaluation: an evaluation server (aaos.server.evaluation): the state is hidden (hide_state is then always
        on) and a secret holdout salt, drawn as the app is built, re-draws every holdout variant its sessions play.
    """

    max_sessions: int = DEFAULT_MAX_SESSIONS
    ttl: float = DEFAULT_TTL
    max_per_client: int = DEFAULT_MAX_PER_CLIENT
    evict_after: float = DEFAULT_EVICT_AFTER
    hide_state: bool = False
    evaluation: bool = False

    def __post_init__(self) -> None:
        if self.evaluation:
            object.__setattr__(self, "hide_state", True)  # evaluation hides the ground truth, whatever else is asked
        if self.max_sessions < 1:
            raise ValueError(f"max_sessions must be at least 1, got {self.max_sessions}")
        if self.max_per_client < 1:
            raise ValueError(f"max_per_client must be at least 1, got {self.max_per_client}")
        if self.ttl <= 0:
            raise ValueError(f"the session ttl must be positive, got {self.ttl}")
        if self.evict_after < 0:
            raise ValueError(f"evict_after must not be negative, got {self.evict_after}")

    @classmethod
    def from_env(cls) -> SessionConfig:
        """From AAOS_MAX_SESSIONS, AAOS_MAX_SESSIONS_PER_CLIENT, AAOS_SESSION_TTL and AAOS_EVICT_AFTER (seconds),
        and AAOS_HIDE_STATE and AAOS_EVAL (1/true/yes/on or 0/false/no/off), each optional."""
        return cls(max_sessions=int(_env_number("AAOS_MAX_SESSIONS", int, DEFAULT_MAX_SESSIONS)),
                   ttl=_env_number("AAOS_SESSION_TTL", float, DEFAULT_TTL),
                   max_per_client=int(_env_number("AAOS_MAX_SESSIONS_PER_CLIENT", int, DEFAULT_MAX_PER_CLIENT)),
                   evict_after=_env_number("AAOS_EVICT_AFTER", float, DEFAULT_EVICT_AFTER),
                   hide_state=env_flag("AAOS_HIDE_STATE"), evaluation=env_flag("AAOS_EVAL"))


def _env_number(name: str, kind: type[int] | type[float], default: float) -> float:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        return kind(raw)
    except ValueError:
        raise ValueError(f"{name} must be a number ({kind.__name__}), got {raw!r}") from None


_TRUE, _FALSE = ("1", "true", "yes", "on"), ("", "0", "false", "no", "off")


def env_flag(name: str) -> bool:
    """Environment variable `name` as a flag (1/true/yes/on or 0/false/no/off; unset: off); ValueError otherwise."""
    raw = os.environ.get(name, "").strip().lower()
    if raw not in _TRUE + _FALSE:
        raise ValueError(f"{name} must be one of {', '.join(_TRUE + _FALSE[1:])}, got {raw!r}")
    return raw in _TRUE


class UnknownSession(LookupError):
    """No open session has this id (never opened, closed, expired or evicted)."""

    def __init__(self, session_id: str) -> None:
        super().__init__(f"unknown or expired session_id {session_id[:100]!r} (sessions live in this server's "
                         "memory: closed, expired, evicted and restarted-away sessions are gone); POST /reset to "
                         "open a new session")


class Refused(RuntimeError):
    """A session was not opened; `retry_after` is the whole seconds until one could be."""

    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = retry_after


HTTP_REMEDY = "close one (POST /close), reuse one (POST /reset with its session_id)"
"""How a client frees or reuses a session of the HTTP pool (each pool's store says how for its own)."""


class AtCapacity(Refused):
    """Every session slot is taken and no session has been idle long enough to be evicted."""

    def __init__(self, limit: int, retry_after: int, remedy: str) -> None:
        super().__init__(f"all {limit} sessions are in use; {remedy} or retry in {retry_after} s", retry_after)


class ClientLimit(Refused):
    """This client already holds as many sessions as one client may."""

    def __init__(self, limit: int, retry_after: int, remedy: str) -> None:
        super().__init__(f"this client already holds {limit} sessions, the most one client may; {remedy} or retry "
                         f"in {retry_after} s when your longest-idle one expires", retry_after)


class StateHidden(PermissionError):
    """The server hides the ground truth from its clients."""

    def __init__(self) -> None:
        super().__init__("this server hides the ground truth (started with --eval or --hide-state, or AAOS_EVAL=1 or "
                         "AAOS_HIDE_STATE=1, as for a benchmark): the state is refused; an agent gets the "
                         "observations only")


@dataclass(slots=True)
class Session:
    """One client's environment (which serialises its own reset and step)."""

    id: str
    env: AAOSEnvironment
    last_used: float
    client: str = UNKNOWN_CLIENT
    on_drop: Dropped | None = None


def _whole_seconds(seconds: float) -> int:
    """A Retry-After value: whole seconds, at least 1."""
    return max(1, math.ceil(seconds))


class SessionStore:
    """Open, look up, close, expire and evict sessions (the module docstring gives the policy)."""

    def __init__(self, config: SessionConfig, clock: Clock = time.monotonic, remedy: str = HTTP_REMEDY) -> None:
        """remedy: how a client of this pool frees or reuses a session (what a refusal advises)."""
        self.config = config
        self.remedy = remedy
        self._clock = clock
        self._sessions: dict[str, Session] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        dropped: list[tuple[Session, str]] = []
        try:
            with self._lock:
                self._expire(self._clock(), dropped)
                return len(self._sessions)
        finally:
            _tell(dropped)

    def open(self, env: AAOSEnvironment, client: str | None = None, on_drop: Dropped | None = None) -> Session:
        """Store an environment under a new session id for `client` (its network address; None: unknown),
        evicting the longest-idle session if the store is full and it has been idle `evict_after` seconds.
        ClientLimit or AtCapacity, with the seconds to wait, if it cannot. `on_drop` is told why if the store
        later drops the session itself (expired or evicted)."""
        client = client or UNKNOWN_CLIENT
        dropped: list[tuple[Session, str]] = []
        try:
            with self._lock:
                now = self._clock()
                self._expire(now, dropped)
                config = self.config
                own = [s.last_used for s in self._sessions.values() if s.client == client]
                if len(own) >= config.max_per_client:
                    raise ClientLimit(config.max_per_client, _whole_seconds(min(own) + config.ttl - now), self.remedy)
                if len(self._sessions) >= config.max_sessions:
                    idlest = min(self._sessions.values(), key=lambda s: s.last_used)
                    if now - idlest.last_used < config.evict_after:
                        frees_at = idlest.last_used + min(config.evict_after, config.ttl)
                        raise AtCapacity(config.max_sessions, _whole_seconds(frees_at - now), self.remedy)
                    del self._sessions[idlest.id]
                    dropped.append((idlest, f"was evicted after {now - idlest.last_used:.0f} s idle to make room "
                                            f"(all {config.max_sessions} sessions were in use)"))
                session = Session(secrets.token_urlsafe(18), env, now, client, on_drop)
                self._sessions[session.id] = session
                return session
        finally:
            _tell(dropped)

    def get(self, session_id: str) -> Session:
        """The open session with this id, marked as used now; UnknownSession if there is none."""
        dropped: list[tuple[Session, str]] = []
        try:
            with self._lock:
                now = self._clock()
                session = self._sessions.get(session_id)
                if session is None or now - session.last_used > self.config.ttl:
                    if session is not None:
                        del self._sessions[session_id]
                        dropped.append((session, self._expired))
                    raise UnknownSession(session_id)
                session.last_used = now
                return session
        finally:
            _tell(dropped)

    def ground_truth(self, session_id: str) -> dict[str, Any]:
        """The session's full state (AAOSEnvironment.snapshot); StateHidden when the configuration hides it,
        whether or not the session exists."""
        if self.config.hide_state:
            raise StateHidden
        return self.get(session_id).env.snapshot()

    def close(self, session_id: str) -> None:
        """Forget a session; UnknownSession if there is none."""
        with self._lock:
            session = self._sessions.pop(session_id, None)
            if session is None or self._clock() - session.last_used > self.config.ttl:
                raise UnknownSession(session_id)

    @property
    def _expired(self) -> str:
        return f"expired after more than {self.config.ttl:g} s idle"

    def _expire(self, now: float, dropped: list[tuple[Session, str]]) -> None:
        """Drop every session idle for longer than the ttl, adding each to `dropped` (call with the lock held)."""
        ttl = self.config.ttl
        for stale in [s for s in self._sessions.values() if now - s.last_used > ttl]:
            del self._sessions[stale.id]
            dropped.append((stale, self._expired))


def _tell(dropped: list[tuple[Session, str]]) -> None:
    """Tell each dropped session's holder why (call without the store's lock)."""
    for session, why in dropped:
        if session.on_drop is not None:
            session.on_drop(why)
