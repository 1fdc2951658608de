"""The session store on its own: capacity, idle expiry by an injected clock, ids, configuration."""

from __future__ import annotations

import pytest

from aaos.server.environment import AAOSEnvironment
from aaos.server.sessions import AtCapacity, SessionConfig, SessionStore, UnknownSession


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def test_sessions_get_distinct_unguessable_ids(clock: FakeClock) -> None:
    store = SessionStore(SessionConfig(max_sessions=50, ttl=10), clock)
    ids = {store.open(AAOSEnvironment()).id for _ in range(50)}
    assert len(ids) == 50
    assert all(len(i) >= 24 and i.replace("-", "").replace("_", "").isalnum() for i in ids)


def test_the_cap_refuses_a_session_until_one_closes_or_expires(clock: FakeClock) -> None:
    store = SessionStore(SessionConfig(max_sessions=2, ttl=10), clock)
    first = store.open(AAOSEnvironment())
    clock.now = 5
    second = store.open(AAOSEnvironment())
    with pytest.raises(AtCapacity, match="all 2 sessions are in use"):
        store.open(AAOSEnvironment())
    store.close(second.id)
    third = store.open(AAOSEnvironment())
    clock.now = 10.5  # first idle 10.5 s > ttl; third only 5.5 s
    assert len(store) == 1
    store.open(AAOSEnvironment())
    with pytest.raises(UnknownSession):
        store.get(first.id)
    assert store.get(third.id) is third


def test_use_keeps_a_session_alive(clock: FakeClock) -> None:
    store = SessionStore(SessionConfig(max_sessions=4, ttl=10), clock)
    session = store.open(AAOSEnvironment())
    for now in (9, 18, 27):
        clock.now = now
        assert store.get(session.id) is session
    clock.now = 37.5
    with pytest.raises(UnknownSession, match="POST /reset"):
        store.get(session.id)
    with pytest.raises(UnknownSession):
        store.close(session.id)


def test_configuration_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AAOS_MAX_SESSIONS", raising=False)
    monkeypatch.delenv("AAOS_SESSION_TTL", raising=False)
    assert SessionConfig.from_env() == SessionConfig(max_sessions=256, ttl=1800)
    monkeypatch.setenv("AAOS_MAX_SESSIONS", "12")
    monkeypatch.setenv("AAOS_SESSION_TTL", "2.5")
    assert SessionConfig.from_env() == SessionConfig(max_sessions=12, ttl=2.5)
    monkeypatch.setenv("AAOS_MAX_SESSIONS", "lots")
    with pytest.raises(ValueError, match="AAOS_MAX_SESSIONS must be a number"):
        SessionConfig.from_env()
    monkeypatch.setenv("AAOS_MAX_SESSIONS", "0")
    with pytest.raises(ValueError, match="max_sessions must be at least 1"):
        SessionConfig.from_env()
