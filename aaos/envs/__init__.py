"""Environment registry: every environment by id, built through one `make`."""

from __future__ import annotations

from collections.abc import Callable

from aaos.core.env import Environment
from aaos.core.spec import EnvSpec
from aaos.envs.org import OrgEnv, org_spec

_REGISTRY: dict[str, tuple[Callable[..., Environment], Callable[[], EnvSpec]]] = {
    "org": (OrgEnv, org_spec),
}


def env_ids() -> list[str]:
    return list(_REGISTRY)


def _entry(env: str) -> tuple[Callable[..., Environment], Callable[[], EnvSpec]]:
    if env not in _REGISTRY:
        raise ValueError(f"unknown environment {env!r}; choose one of: {', '.join(_REGISTRY)}")
    return _REGISTRY[env]


def spec(env: str = "org") -> EnvSpec:
    return _entry(env)[1]()


def make(task: str | None = None, scenario: str | None = None, seed: int = 0, env: str = "org") -> Environment:
    """Build an environment; task and scenario default to the environment's own defaults."""
    factory, _ = _entry(env)
    kwargs: dict[str, object] = {"seed": seed}
    if task is not None:
        kwargs["task"] = task
    if scenario is not None:
        kwargs["scenario"] = scenario
    return factory(**kwargs)
