"""Malformed joint actions for the malformed-input check, drawn (seeded) from an environment's spec: wrong
types, unknown roles and actions, bad payloads, forbidden actions, huge and deeply nested values, NaN."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from aaos.check.common import FILLER_TEXT
from aaos.core.actions import parse_joint_action
from aaos.core.env import Environment
from aaos.core.seeding import rng
from aaos.core.spec import EnvSpec


def _deep(depth: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(depth):
        value = [value]
    return value


HUGE = "x" * 100_000
NASTY: tuple[Any, ...] = (
    None, True, False, 0, -1, 2**80, 1.5, float("nan"), float("inf"), -float("inf"), "", "x", " ", "\x00", HUGE,
    [], [1, 2], ["no_op"], (), {}, {"a": 1}, {1: 2}, {None: None}, b"bytes", {1, 2}, frozenset(), complex(1, 2),
    range(3), _deep(200), {"deep": _deep(200)}, [float("nan")], {"a": float("nan")},
)
"""Values that are wrong almost anywhere: wrong types, NaN and infinities, huge and deeply nested values."""
NOT_AN_OBJECT = tuple(v for v in NASTY if v is not None and not isinstance(v, dict))
MADE_UP_IDS: tuple[str, ...] = ("no_such_id", "id_999999", "", " ", "x" * 300, "\x00", "../etc/passwd")


@dataclass(slots=True)
class Case:
    """A malformed joint action and what the spec alone says about it."""

    joint: Any
    rejected: set[str] = field(default_factory=set)  # roles the spec rejects
    errors: bool = False  # the spec reports joint-level errors (unknown roles, not an object)


class Fuzzer:
    """Draws malformed joint actions (seeded) for the environment's spec."""

    def __init__(self, spec_: EnvSpec, seed: int) -> None:
        self.spec = spec_
        self.draw = rng("aaos check", "fuzz", spec_.id, seed)
        self.names = [a.name for a in spec_.actions]

    def case(self, env: Environment) -> Case:
        kind = self.draw.choice(("not_an_object", "unknown_role", "role", "role", "role", "role", "role", "world"))
        if kind == "not_an_object":
            joint: Any = self.draw.choice(NOT_AN_OBJECT)
        else:
            joint = self._others(env)
            if kind == "unknown_role":
                for _ in range(self.draw.randint(1, 3)):
                    joint[self._unknown_role()] = self.draw.choice((*NASTY, {"action_type": self.spec.noop_action}))
            else:
                role = self.draw.choice(self.spec.roles)
                joint[role] = self._world(role) if kind == "world" else self._malformed(role)
        parsed = parse_joint_action(self.spec, joint)
        return Case(joint, set(parsed.rejected), bool(parsed.errors))

    def _others(self, env: Environment) -> dict[Any, Any]:
        """Legal actions for some roles (the malformed part is added beside them)."""
        joint: dict[Any, Any] = {}
        for role in self.spec.roles:
            if self.draw.random() < 0.3:
                legal = env.legal_actions(role)
                name = self.draw.choice(sorted(legal))
                payload = {f: self.draw.choice(c) if isinstance(c, list) and c else FILLER_TEXT
                           for f, c in legal[name].items()}
                joint[role] = {"action_type": name, "payload": payload}
        return joint

    def _unknown_role(self) -> Any:
        role = self.draw.choice(self.spec.roles)
        candidates = (role.upper(), f" {role}", f"{role}\x00", "", "nobody", HUGE, 0, None, 1.5, float("nan"), (role,))
        return self.draw.choice([c for c in candidates if c not in self.spec.roles])

    def _fields(self, name: str) -> list[str]:
        action = self.spec.action(name)
        return sorted(action.payload.model_fields) if action else []

    def _malformed(self, role: str) -> Any:
        allowed = list(self.spec.allowed_actions(role)) or self.names
        with_fields = [n for n in allowed if self._fields(n)] or allowed
        name = self.draw.choice(with_fields)
        forbidden = [n for n in self.names if n not in allowed]
        nasty = self.draw.choice(NASTY)
        form = self.draw.choice(("not_an_object", "action_type_type", "unknown_action_type", "extra_key",
                                 "payload_not_object", "field_types", "missing_fields", "extra_field", "forbidden",
                                 "huge"))
        if form == "not_an_object":
            return self.draw.choice((None, *NOT_AN_OBJECT))
        if form == "action_type_type":
            return {"action_type": self.draw.choice([v for v in NASTY if not isinstance(v, str)]), "payload": {}}
        if form == "unknown_action_type":
            typed = (name.upper(), f"{name} ", f"{name}\x00", "launch_rockets", HUGE, "")
            return {"action_type": self.draw.choice([t for t in typed if t not in self.names]), "payload": {}}
        if form == "extra_key":
            return {"action_type": name, "payload": {}, self.draw.choice(("role", "id", "", "payload ")): nasty}
        if form == "payload_not_object":
            return {"action_type": name, "payload": self.draw.choice(NOT_AN_OBJECT)}
        if form == "field_types":
            return {"action_type": name, "payload": {f: self.draw.choice(NASTY) for f in self._fields(name)}}
        if form == "missing_fields":
            return {"action_type": name, "payload": {}}
        if form == "extra_field":
            payload = {f: self.draw.choice(MADE_UP_IDS) for f in self._fields(name)}
            payload[self.draw.choice(("unexpected", "", "__class__", "x" * 1000))] = nasty
            return {"action_type": name, "payload": payload}
        if form == "forbidden" and forbidden:
            other = self.draw.choice(forbidden)
            return {"action_type": other, "payload": {f: self.draw.choice(MADE_UP_IDS) for f in self._fields(other)}}
        return {"action_type": self.draw.choice((name, HUGE)), "payload": {f: self.draw.choice((HUGE, _deep(200)))
                                                                          for f in self._fields(name)}}

    def _world(self, role: str) -> dict[str, Any]:
        """A permitted action naming things that do not exist (the world, not the spec, rejects it, if anything)."""
        name = self.draw.choice(list(self.spec.allowed_actions(role)) or self.names)
        return {"action_type": name, "payload": {f: self.draw.choice(MADE_UP_IDS) for f in self._fields(name)}}
