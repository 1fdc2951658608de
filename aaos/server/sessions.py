"""The HTTP session store: one environment per session, capped in number and expired when idle.

Time comes from an injected monotonic clock, so tests can advance it without sleeping. The store's map
is guarded by one lock; each session's environment (AAOSEnvironment) locks its own reset and step.
"""

from __future__ import annotations

import os
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from aaos.server.environment import AAOSEnvironment

Clock = Callable[[], float]
DEFAULT_MAX_SESSIONS = 256
DEFAULT_TTL = 1800.0


@dataclass(frozen=True, slots=True)
class SessionConfig:
    """max_sessions: open HTTP sessions at once (WebSocket and MCP sessions have the same cap of their own);
    ttl: seconds a session may stay idle before it expires."""

    max_sessions: int = DEFAULT_MAX_SESSIONS
    ttl: float = DEFAULT_TTL

    def __post_init__(self) -> None:
        if self.max_sessions < 1:
            raise ValueError(f"max_sessions must be at least 1, got {self.max_sessions}")
        if self.ttl <= 0:
            raise ValueError(f"the session ttl must be positive, got {self.ttl}")

    @classmethod
    def from_env(cls) -> SessionConfig:
        """From AAOS_MAX_SESSIONS and AAOS_SESSION_TTL (seconds), each optional."""
        return cls(max_sessions=_env_number("AAOS_MAX_SESSIONS", int, DEFAULT_MAX_SESSIONS),
                   ttl=_env_number("AAOS_SESSION_TTL", float, DEFAULT_TTL))


def _env_number(name: str, kind: type[int] | type[float], default: float) -> float:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        return kind(raw)
    except ValueError:
        raise ValueError(f"{name} must be a number ({kind.__name__}), got {raw!r}") from None


class UnknownSession(LookupError):
    """No open session has this id (never opened, closed, or expired)."""

    def __init__(self, session_id: str) -> None:
        super().__init__(f"unknown or expired session_id {session_id[:100]!r}; POST /reset to open a new session")


class AtCapacity(RuntimeError):
    """Every session slot is taken."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"all {limit} sessions are in use; close one (POST /close), reuse one "
                         f"(POST /reset with its session_id) or retry after idle sessions expire")


@dataclass(slots=True)
class Session:
    """One client's environment (which serialises its own reset and step)."""

    id: str
    env: AAOSEnvironment
    last_used: float


class SessionStore:
    """Open, look up, close and expire sessions."""

    def __init__(self, config: SessionConfig, clock: Clock = time.monotonic) -> None:
        self.config = config
        self._clock = clock
        self._sessions: dict[str, Session] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        with self._lock:
            self._expire(self._clock())
            return len(self._sessions)

    def open(self, env: AAOSEnvironment) -> Session:
        """Store an environment under a new session id; AtCapacity if every slot is taken."""
        with self._lock:
            now = self._clock()
            self._expire(now)
            if len(self._sessions) >= self.config.max_sessions:
                raise AtCapacity(self.config.max_sessions)
            session = Session(secrets.token_urlsafe(18), env, now)
            self._sessions[session.id] = session
            return session

    def get(self, session_id: str) -> Session:
        """The open session with this id, marked as used now; UnknownSession if there is none."""
        with self._lock:
            now = self._clock()
            session = self._sessions.get(session_id)
            if session is None or now - session.last_used > self.config.ttl:
                self._sessions.pop(session_id, None)
                raise UnknownSession(session_id)
            session.last_used = now
            return session

    def close(self, session_id: str) -> None:
        """Forget a session; UnknownSession if there is none."""
        with self._lock:
            session = self._sessions.pop(session_id, None)
            if session is None or self._clock() - session.last_used > self.config.ttl:
                raise UnknownSession(session_id)

    def _expire(self, now: float) -> None:
        """Drop every session idle for longer than the ttl (call with the lock held)."""
        ttl = self.config.ttl
        for stale in [s.id for s in self._sessions.values() if now - s.last_used > ttl]:
            del self._sessions[stale]
