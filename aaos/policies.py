"""The public entry to policies: aaos.policies.make(name, seed=..., env=...)."""

from __future__ import annotations

from collections.abc import Callable

from aaos.agents import NoopPolicy, OrgChampion, Policy, RandomPolicy
from aaos.agents.oracle import OrgOracle

_BUILDERS: dict[str, Callable[[int, str], Policy]] = {
    "noop": lambda seed, env: NoopPolicy(),
    "random": lambda seed, env: RandomPolicy(seed),
    "heuristic": lambda seed, env: _org_only(env, "heuristic champion", OrgChampion),
    "oracle": lambda seed, env: _org_only(env, "oracle", OrgOracle),
}
READS_HIDDEN_STATE: tuple[str, ...] = ("oracle",)
"""Policies that read the ground truth (bind(env) before acting): references for calibration, never agents."""


def _org_only(env: str, what: str, build: Callable[[], Policy]) -> Policy:
    if env != "org":
        raise ValueError(f"no {what} for environment {env!r}")
    return build()


def names() -> list[str]:
    return list(_BUILDERS)


def make(name: str, seed: int = 0, env: str = "org") -> Policy:
    """Build a policy: "noop", "random" (seeded), "heuristic" (the champion) or "oracle" (the champion fed the
    ground truth; bind(env) it before acting; for calibration only)."""
    if name not in _BUILDERS:
        raise ValueError(f"unknown policy {name!r}; choose one of: {', '.join(_BUILDERS)}")
    return _BUILDERS[name](seed, env)
