"""The session store on its own: capacity overall and per client, eviction, Retry-After, idle expiry by an injected
clock, ids, hiding the state, configuration."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from aaos.server.environment import AAOSEnvironment
from aaos.server.sessions import (
    AtCapacity,
    ClientLimit,
    SessionConfig,
    SessionStore,
    StateHidden,
    UnknownSession,
)


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def test_sessions_get_distinct_unguessable_ids(clock: FakeClock) -> None:
    store = SessionStore(SessionConfig(max_sessions=50, max_per_client=50, ttl=10), clock)
    ids = {store.open(AAOSEnvironment()).id for _ in range(50)}
    assert len(ids) == 50
    assert all(len(i) >= 24 and i.replace("-", "").replace("_", "").isalnum() for i in ids)


def test_the_cap_refuses_a_session_until_one_closes_or_expires(clock: FakeClock) -> None:
    store = SessionStore(SessionConfig(max_sessions=2, ttl=10, evict_after=10), clock)
    first = store.open(AAOSEnvironment())
    clock.now = 5
    second = store.open(AAOSEnvironment())
    with pytest.raises(AtCapacity, match="all 2 sessions are in use") as refused:
        store.open(AAOSEnvironment())
    assert refused.value.retry_after == 5  # first expires at 10
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


def test_a_client_holds_at_most_its_share_and_waits_for_its_own_idlest_to_expire(clock: FakeClock) -> None:
    store = SessionStore(SessionConfig(max_sessions=10, max_per_client=3, ttl=60), clock)
    mine = [store.open(AAOSEnvironment(), "10.0.0.1") for _ in range(2)]
    clock.now = 20
    mine.append(store.open(AAOSEnvironment(), "10.0.0.1"))
    store.get(mine[0].id)  # mine[1] is now the idlest (since 0)
    clock.now = 21.5
    with pytest.raises(ClientLimit, match="this client already holds 3 sessions") as refused:
        store.open(AAOSEnvironment(), "10.0.0.1")
    assert refused.value.retry_after == 39  # ceil(0 + 60 - 21.5)
    others = [store.open(AAOSEnvironment(), address) for address in ("10.0.0.2", "10.0.0.2", "10.0.0.2", None, None)]
    assert len(store) == 8 and all(store.get(s.id) is s for s in others)
    store.close(mine[2].id)
    store.open(AAOSEnvironment(), "10.0.0.1")


def test_a_full_store_evicts_its_idlest_session_once_idle_long_enough(clock: FakeClock) -> None:
    store = SessionStore(SessionConfig(max_sessions=3, ttl=600, evict_after=100), clock)
    sessions = []
    for now in (0, 10, 20):
        clock.now = now
        sessions.append(store.open(AAOSEnvironment(), f"10.0.0.{now}"))
    clock.now = 50
    store.get(sessions[0].id)  # the idlest is now sessions[1], idle since 10
    with pytest.raises(AtCapacity) as refused:
        store.open(AAOSEnvironment(), "10.0.1.1")
    assert refused.value.retry_after == 60
    clock.now = 110
    newcomer = store.open(AAOSEnvironment(), "10.0.1.1")
    with pytest.raises(UnknownSession, match="evicted"):
        store.get(sessions[1].id)
    assert [store.get(s.id) for s in (sessions[0], sessions[2], newcomer)] == [sessions[0], sessions[2], newcomer]
    with pytest.raises(AtCapacity):  # every session was just used
        store.open(AAOSEnvironment(), "10.0.1.2")


def test_a_store_that_hides_the_state_refuses_it_for_any_session(clock: FakeClock) -> None:
    shown = SessionStore(SessionConfig(), clock)
    session = shown.open(AAOSEnvironment())
    session.env.reset(seed=3)
    assert shown.ground_truth(session.id)["seed"] == 3
    hidden = SessionStore(SessionConfig(hide_state=True), clock)
    session = hidden.open(AAOSEnvironment())
    for session_id in (session.id, "nope"):
        with pytest.raises(StateHidden, match="hides the ground truth"):
            hidden.ground_truth(session_id)


CONFIG_VARIABLES = ("AAOS_MAX_SESSIONS", "AAOS_SESSION_TTL", "AAOS_MAX_SESSIONS_PER_CLIENT", "AAOS_EVICT_AFTER",
                    "AAOS_HIDE_STATE")


def test_configuration_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in CONFIG_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    assert SessionConfig.from_env() == SessionConfig(max_sessions=256, ttl=1800, max_per_client=32, evict_after=300,
                                                     hide_state=False)
    for name, value in zip(CONFIG_VARIABLES, ("12", "2.5", "4", "1.5", "yes"), strict=True):
        monkeypatch.setenv(name, value)
    assert SessionConfig.from_env() == SessionConfig(max_sessions=12, ttl=2.5, max_per_client=4, evict_after=1.5,
                                                     hide_state=True)
    monkeypatch.setenv("AAOS_HIDE_STATE", "0")
    assert not SessionConfig.from_env().hide_state
    monkeypatch.setenv("AAOS_HIDE_STATE", "please")
    with pytest.raises(ValueError, match="AAOS_HIDE_STATE must be one of 1, true"):
        SessionConfig.from_env()
    monkeypatch.setenv("AAOS_HIDE_STATE", "1")
    monkeypatch.setenv("AAOS_MAX_SESSIONS", "lots")
    with pytest.raises(ValueError, match="AAOS_MAX_SESSIONS must be a number"):
        SessionConfig.from_env()
    monkeypatch.setenv("AAOS_MAX_SESSIONS", "0")
    with pytest.raises(ValueError, match="max_sessions must be at least 1"):
        SessionConfig.from_env()
    monkeypatch.setenv("AAOS_MAX_SESSIONS", "8")
    monkeypatch.setenv("AAOS_MAX_SESSIONS_PER_CLIENT", "0")
    with pytest.raises(ValueError, match="max_per_client must be at least 1"):
        SessionConfig.from_env()


def test_a_holder_is_told_why_when_the_store_drops_its_session_and_not_when_it_closes_it(clock: FakeClock) -> None:
    store = SessionStore(SessionConfig(max_sessions=2, max_per_client=3, ttl=100, evict_after=10), clock)
    told: list[tuple[str, str]] = []

    def holder(name: str) -> Callable[[str], None]:
        return lambda why: told.append((name, why))

    store.open(AAOSEnvironment(), on_drop=holder("evicted"))
    clock.now = 5
    store.open(AAOSEnvironment(), on_drop=holder("kept"))
    clock.now = 12  # the first has been idle 12 s, past evict_after: a newcomer takes its slot
    newcomer = store.open(AAOSEnvironment(), on_drop=holder("newcomer"))
    assert told == [("evicted", "was evicted after 12 s idle to make room (all 2 sessions were in use)")]
    store.close(newcomer.id)
    assert len(told) == 1  # closing is the holder's own doing
    clock.now = 106  # kept idle 101 s > ttl
    assert len(store) == 0
    assert told[1:] == [("kept", "expired after more than 100 s idle")]
    late = store.open(AAOSEnvironment(), on_drop=holder("late"))
    clock.now = 207
    with pytest.raises(UnknownSession):
        store.get(late.id)
    assert told[2:] == [("late", "expired after more than 100 s idle")]
