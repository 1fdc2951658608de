"""The environment registry: every environment by id, built through one `make`.

    import aaos
    aaos.register("toy", "my_package.toy:KIT")   # or the EnvKit itself; imported on first use
    env = aaos.make(env="toy")

Environments are also found without code: an installed package's entry points in the group "aaos.envs"
(name = env id, value = "module:attribute"), and the AAOS_ENVS variable ("id=module:attribute,...") read
when aaos is imported, so a server or a CLI subprocess picks them up too.
"""

from __future__ import annotations

import importlib
import os
from functools import cache
from importlib.metadata import entry_points

from aaos.core.env import Environment
from aaos.core.kit import EnvKit
from aaos.core.policy import Policy
from aaos.core.scenario_files import SchemaMismatch
from aaos.core.spec import EnvSpec

DEFAULT_ENV = "org"
"""The environment used where none is named."""
ENVS_VARIABLE = "AAOS_ENVS"
_REGISTRY: dict[str, EnvKit | str] = {DEFAULT_ENV: "aaos.envs.org.kit:KIT", "inbox": "aaos.envs.inbox.kit:KIT",
                                  "chief_of_staff": "aaos.envs.chief_of_staff.kit:KIT"}


def register(env_id: str, kit: EnvKit | str) -> None:
    """Add an environment: its kit, or "module:attribute" naming it (imported on first use). Registering an id
    again replaces its kit."""
    if not isinstance(env_id, str) or not env_id.isidentifier():
        raise ValueError(f"an environment id must be a Python identifier, got {env_id!r}")
    if not isinstance(kit, EnvKit | str) or (isinstance(kit, str) and ":" not in kit):
        raise TypeError(f"register {env_id!r} with an EnvKit or a 'module:attribute' string, got {kit!r}")
    _REGISTRY[env_id] = kit
    kit_of.cache_clear()
    spec.cache_clear()


def registration(env_id: str) -> str | None:
    """The "module:attribute" an environment was registered with (what another process needs to import it), or
    None when it was registered as an EnvKit object."""
    if env_id not in _REGISTRY:
        raise ValueError(f"unknown environment {env_id!r}; choose one of: {', '.join(_REGISTRY)}")
    entry = _REGISTRY[env_id]
    return entry if isinstance(entry, str) else None


def env_ids() -> list[str]:
    return list(_REGISTRY)


@cache
def kit_of(env: str = DEFAULT_ENV) -> EnvKit:
    """The kit of a registered environment (ValueError naming the known ids for any other)."""
    if env not in _REGISTRY:
        raise ValueError(f"unknown environment {env!r}; choose one of: {', '.join(_REGISTRY)}")
    entry = _REGISTRY[env]
    if isinstance(entry, str):
        module, _, name = entry.partition(":")
        entry = getattr(importlib.import_module(module), name)
        if not isinstance(entry, EnvKit):
            raise TypeError(f"{_REGISTRY[env]} is not an EnvKit")
    return entry


def has_champion(env: str = DEFAULT_ENV) -> bool:
    return kit_of(env).champion is not None


def champion_of(env: str = DEFAULT_ENV) -> Policy:
    """A fresh champion of the environment (the "heuristic" policy); ValueError where its kit gives none."""
    build = kit_of(env).champion
    if build is None:
        raise ValueError(f"environment {env!r} has no champion (its kit sets none), so the 'heuristic' policy is not "
                         f"available for it; use 'noop' or 'random', or give the kit a champion")
    return build()


@cache
def spec(env: str = DEFAULT_ENV) -> EnvSpec:
    built = kit_of(env).spec()
    if built.id != env:
        raise ValueError(f"the environment registered as {env!r} declares the id {built.id!r}")
    return built


def make(task: str | None = None, scenario: str | None = None, seed: int = 0, env: str = DEFAULT_ENV) -> Environment:
    """Build an environment; task and scenario default to the environment's own defaults. A scenario file of
    another environment says which (SchemaMismatch)."""
    declared = spec(env)
    try:
        return kit_of(env).environment(task=task or declared.default_task,
                                       scenario=scenario or declared.default_scenario, seed=seed)
    except SchemaMismatch as error:
        hint = wrong_env(str(scenario), env)
        if hint is None:
            raise
        raise SchemaMismatch(f"{hint}\n{error}", error.problems) from error


def scenario_envs(path: str) -> list[str]:
    """The registered environments whose scenario schema the file at `path` matches (read by their kits)."""
    owners = []
    for env_id in env_ids():
        try:
            read = kit_of(env_id).scenario_file
            if read is not None:
                read(path)
        except (ImportError, OSError, TypeError, ValueError):
            continue
        if read is not None:
            owners.append(env_id)
    return owners


def wrong_env(path: str, env: str) -> str | None:
    """What to say of a scenario file that is not environment `env`'s but another's (None when it is no other's)."""
    owners = [owner for owner in scenario_envs(path) if owner != env] if path.endswith(".json") else []
    if not owners:
        return None
    return (f"{path}: this is a scenario of environment {' or '.join(map(repr, owners))}, not of {env!r}: pass "
            f"env={owners[0]!r} (aaos.make(..., env=...); --env on the command line)")


def _discover() -> None:
    for point in entry_points(group="aaos.envs"):
        register(point.name, point.value)
    for entry in filter(None, (part.strip() for part in os.environ.get(ENVS_VARIABLE, "").split(","))):
        env_id, _, target = entry.partition("=")
        try:
            register(env_id.strip(), target.strip())
        except (TypeError, ValueError) as error:
            raise ValueError(f"{ENVS_VARIABLE}: {error} (write id=module:attribute, comma-separated)") from None


_discover()
