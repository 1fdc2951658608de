"""Property-based fuzzing of every HTTP operation in /openapi.json against the running server with every
Schemathesis check (the Python equivalent of `schemathesis run --checks all`): no input may produce a server
error, every response matches what the schema documents, input the schema accepts is accepted and input it
refuses is refused. schemathesis.toml (found from the repository root) holds the one documented exception:
POST /step may refuse a well-formed action that names an id the session's world does not hold."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import CHECKS, load_all_checks

from aaos.server.app import create_app
from aaos.server.background import BackgroundServer
from aaos.server.sessions import SessionConfig

load_all_checks()
EVERY_CHECK = CHECKS.get_all()


@pytest.fixture(scope="module")
def api_schema() -> Iterator[schemathesis.BaseSchema]:
    # evict_after=0: the fuzzer opens far more sessions than the pool holds; the idlest makes way
    config = SessionConfig(max_sessions=64, max_per_client=64, ttl=30, evict_after=0)
    with BackgroundServer(create_app(config)) as server:
        yield schemathesis.openapi.from_url(f"{server.url}/openapi.json")


schema = schemathesis.pytest.from_fixture("api_schema")


@schema.parametrize()
@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
def test_every_check_passes_on_every_operation(case: schemathesis.Case) -> None:
    case.call_and_validate(checks=EVERY_CHECK)
