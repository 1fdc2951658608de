"""The public entry to policies: aaos.policies.make(name, seed=..., env=...)."""

from __future__ import annotations

from collections.abc import Callable

from aaos.agents import NoopPolicy, Policy, RandomPolicy
from aaos.envs import DEFAULT_ENV, kit_of


def _oracle(env: str) -> Policy:
    build = kit_of(env).oracle
    if build is None:
        raise ValueError(f"environment {env!r} has no oracle")
    return build()


_BUILDERS: dict[str, Callable[[int, str], Policy]] = {
    "noop": lambda seed, env: NoopPolicy(),
    "random": lambda seed, env: RandomPolicy(seed),
    "heuristic": lambda seed, env: kit_of(env).champion(),
    "oracle": lambda seed, env: _oracle(env),
}
READS_HIDDEN_STATE: tuple[str, ...] = ("oracle",)
"""Policies that read the ground truth (bind(env) before acting): references for calibration, never agents."""


def names() -> list[str]:
    return list(_BUILDERS)


def make(name: str, seed: int = 0, env: str = DEFAULT_ENV) -> Policy:
    """Build a policy for environment `env`: "noop", "random" (seeded), "heuristic" (the environment's champion)
    or "oracle" (a reference reading the ground truth, where the environment has one; bind(env) it before acting;
    for calibration only)."""
    if name not in _BUILDERS:
        raise ValueError(f"unknown policy {name!r}; choose one of: {', '.join(_BUILDERS)}")
    return _BUILDERS[name](seed, env)
