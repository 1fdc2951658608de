"""Shared test setup: quiet third-party analytics, modest hypothesis settings, the order of a parallel run,
common fixtures."""

from __future__ import annotations

import os

os.environ["GRADIO_ANALYTICS_ENABLED"] = "False"

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import custom_scenario, shipped_scenario_data, write_scenario
from hypothesis import HealthCheck, settings

import aaos

settings.register_profile(
    "aaos",
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)
settings.load_profile(os.environ.get("AAOS_HYPOTHESIS_PROFILE", "aaos"))

LOCAL_MODEL_GROUP = "local_model"
REAL_BROWSER = "browser"
"""The fixture name of Debian's Chromium under Playwright (tests/ui_fixtures.chromium): a test that uses it is slow."""


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The slow tier, and how a parallel run (pytest-xdist's `--dist loadgroup`, as pyproject sets it) shares the
    tests out. A test of the real local model or of a real browser is marked slow (the default run leaves the slow
    tier out; `-m slow` runs it). Each file's tests stay together on one worker, so that its module-scoped fixtures
    (servers, a training run) are built once, and the tests of the real local model, about half of the slow
    tier's time, go first and together to one worker, which starts the model's server once while the other
    workers take the rest."""
    for item in items:
        if item.get_closest_marker("local_model") or REAL_BROWSER in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.slow)
        group = LOCAL_MODEL_GROUP if item.get_closest_marker("local_model") else item.nodeid.split("::")[0]
        item.add_marker(pytest.mark.xdist_group(group))
    items.sort(key=lambda item: not item.get_closest_marker("local_model"))


@pytest.fixture
def launch_env() -> Any:
    """full_episode on product_launch_failure, seed 0, reset."""
    env = aaos.make("full_episode", scenario="product_launch_failure", seed=0)
    env.reset()
    return env


@pytest.fixture
def scenario_data() -> dict[str, Any]:
    """A fresh, mutable copy of a shipped scenario file's data."""
    return shipped_scenario_data("product_launch_failure")


@pytest.fixture
def custom_scenario_data() -> dict[str, Any]:
    return custom_scenario()


@pytest.fixture
def scenario_file(tmp_path: Path) -> Callable[..., Path]:
    """Write scenario data (a dict, or raw text) to a file in tmp_path and return its path."""

    def write(data: Any, name: str = "scenario.json") -> Path:
        return write_scenario(tmp_path, data, name)

    return write


@pytest.fixture(scope="module")
def mcp_app() -> Any:
    """The API app of the MCP tests (room for 16 sessions, all from one client)."""
    from aaos.server.app import create_app
    from aaos.server.sessions import SessionConfig

    return create_app(SessionConfig(max_sessions=16, max_per_client=16))


@pytest.fixture(scope="module")
def mcp_server(mcp_app: Any) -> Iterator[Any]:
    """`mcp_app` served on loopback, once a module."""
    from aaos.server.background import BackgroundServer

    with BackgroundServer(mcp_app) as running:
        yield running


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Debian's Chromium under Playwright, once a module (REAL_BROWSER: a test that uses it is in the slow tier)."""
    from ui_fixtures import chromium

    yield from chromium()


@pytest.fixture
def page(browser: Any, space_url: str, request: pytest.FixtureRequest) -> Iterator[Any]:
    """A new page of the module's Space (its `space_url` fixture) at the module's VIEWPORT, closed afterwards."""
    from ui_fixtures import open_page

    page = open_page(browser, space_url, request.module.VIEWPORT)
    yield page
    page.context.close()


@pytest.fixture
def held_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """For a test that holds a run's generator at a yield (as Gradio does between updates) while another event
    takes over: nothing advances the run, so it cannot end, and `Session.take_over` would wait its whole
    TAKE_OVER_S each time; here it gives up at once."""
    from aaos.ui import session

    monkeypatch.setattr(session, "TAKE_OVER_S", 0.05)
