"""Shared test setup: quiet third-party analytics, modest hypothesis settings, common fixtures."""

from __future__ import annotations

import os

os.environ["GRADIO_ANALYTICS_ENABLED"] = "False"

from collections.abc import Callable
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
