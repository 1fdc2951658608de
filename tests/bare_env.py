"""Bare parcels: the toy's world (tests/toy_env.py) under a kit that gives only what the kit requires, its
`environment` and its `spec`. No champion, prompting, rendering, hidden ids or wire models: every surface must
play it on the kit's generic defaults (prompting read from the spec, the plain renderer, noop and random).

Registered as `aaos.register("bare", "bare_env:KIT")`, or AAOS_ENVS=bare=bare_env:KIT with tests/ on PYTHONPATH.
"""

from __future__ import annotations

import dataclasses

from toy_env import ToyEnv, toy_spec

from aaos.core.kit import EnvKit
from aaos.core.spec import EnvSpec


def bare_spec() -> EnvSpec:
    return dataclasses.replace(toy_spec(), id="bare", title="Parcels (bare kit)")


class BareEnv(ToyEnv):
    describe = staticmethod(bare_spec)


KIT = EnvKit(environment=BareEnv, spec=bare_spec)
