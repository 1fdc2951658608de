"""Property-based fuzzing of every HTTP operation in /openapi.json against the running server: no input
may produce a server error, and every response matches what the schema documents."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import schemathesis
from hypothesis import HealthCheck, settings

from aaos.server.app import create_app
from aaos.server.background import BackgroundServer
from aaos.server.sessions import SessionConfig


@pytest.fixture(scope="module")
def api_schema() -> Iterator[schemathesis.BaseSchema]:
    with BackgroundServer(create_app(SessionConfig(max_sessions=64, ttl=30))) as server:
        yield schemathesis.openapi.from_url(f"{server.url}/openapi.json")


schema = schemathesis.pytest.from_fixture("api_schema")


@schema.parametrize()
@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
def test_no_input_produces_a_server_error_or_an_undocumented_response(case: schemathesis.Case) -> None:
    case.call_and_validate(checks=[
        schemathesis.checks.not_a_server_error,
        schemathesis.checks.status_code_conformance,
        schemathesis.checks.content_type_conformance,
        schemathesis.checks.response_schema_conformance,
    ])
