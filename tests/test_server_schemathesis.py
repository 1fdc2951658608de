"""Property-based fuzzing of every HTTP operation in /openapi.json against the running server with every
Schemathesis check (the Python equivalent of `schemathesis run --checks all`): no input may produce a server
error, every response matches what the schema documents, input the schema accepts is accepted and input it
refuses is refused. schemathesis.toml (found from the repository root) holds the one documented exception:
POST /step may refuse a well-formed action that names an id the session's world does not hold.

A session id the fuzzer makes up names no session, so every case whose `session_id` is a valid one gets a live
session instead (opened for it): the bodies of POST /step are stepped for real, not stopped at a 404."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from pydantic import TypeAdapter, ValidationError
from schemathesis.checks import CHECKS, load_all_checks

from aaos.server.app import create_app
from aaos.server.background import BackgroundServer
from aaos.server.models import SessionId
from aaos.server.sessions import SessionConfig

load_all_checks()
EVERY_CHECK = CHECKS.get_all()
SESSION_IDS = TypeAdapter(SessionId)


@pytest.fixture(scope="module")
def server() -> Iterator[BackgroundServer]:
    # the fuzzer (one client) opens far more sessions than the pool holds: no share of its own stops it
    # (max_per_client above max_sessions) and, evict_after=0, the idlest session makes way
    config = SessionConfig(max_sessions=64, max_per_client=65, ttl=30, evict_after=0)
    with BackgroundServer(create_app(config)) as running:
        yield running


@pytest.fixture(scope="module")
def http(server: BackgroundServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, timeout=30) as client:
        yield client


@pytest.fixture(scope="module")
def statuses() -> Iterator[Counter[tuple[str, int]]]:
    """Each operation's answers by status; after the run, POST /step must have stepped sessions for real."""
    seen: Counter[tuple[str, int]] = Counter()
    yield seen
    stepped = seen[("POST /step", 200)]
    assert stepped >= 10, f"POST /step stepped a live session only {stepped} times: {sorted(seen.items())}"
    assert seen[("POST /step", 404)] == 0, sorted(seen.items())


@pytest.fixture(scope="module")
def api_schema(server: BackgroundServer) -> schemathesis.BaseSchema:
    return schemathesis.openapi.from_url(f"{server.url}/openapi.json")


schema = schemathesis.pytest.from_fixture("api_schema")


def with_live_session(case: schemathesis.Case, http: httpx.Client) -> None:
    """Put a freshly opened session's id in place of a valid session_id the fuzzer made up (one the schema
    refuses stays, so that the case is still refused)."""
    fields: Any = case.query if case.operation.method.upper() == "GET" else case.body
    if isinstance(fields, dict) and "session_id" in fields:
        try:
            SESSION_IDS.validate_python(fields["session_id"], strict=True)
        except ValidationError:
            return
        opened = http.post("/reset", json={})
        assert opened.status_code == 200, opened.text
        fields["session_id"] = opened.json()["session_id"]


@schema.parametrize()
@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
def test_every_check_passes_on_every_operation(case: schemathesis.Case, http: httpx.Client,
                                               statuses: Counter[tuple[str, int]]) -> None:
    with_live_session(case, http)
    response = case.call()
    statuses[(f"{case.operation.method.upper()} {case.operation.path}", response.status_code)] += 1
    assert response.status_code < 500, response.text
    case.validate_response(response, checks=EVERY_CHECK)
