"""The public entry to policies: aaos.policies.make(name, seed=..., env=...)."""

from __future__ import annotations

from collections.abc import Callable

from aaos.agents import NoopPolicy, OrgChampion, Policy, RandomPolicy

_BUILDERS: dict[str, Callable[[int, str], Policy]] = {
    "noop": lambda seed, env: NoopPolicy(),
    "random": lambda seed, env: RandomPolicy(seed),
    "heuristic": lambda seed, env: _champion(env),
}


def _champion(env: str) -> Policy:
    if env != "org":
        raise ValueError(f"no heuristic champion for environment {env!r}")
    return OrgChampion()


def names() -> list[str]:
    return list(_BUILDERS)


def make(name: str, seed: int = 0, env: str = "org") -> Policy:
    """Build a policy: "noop", "random" (seeded) or "heuristic" (the champion)."""
    if name not in _BUILDERS:
        raise ValueError(f"unknown policy {name!r}; choose one of: {', '.join(_BUILDERS)}")
    return _BUILDERS[name](seed, env)
