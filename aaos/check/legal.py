"""The legal-actions check: every action `legal_actions` offers is accepted, and every view's legal_actions is
what legal_actions(role) returns."""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

from aaos.check.common import FILLER_TEXT, Subject, digest, short
from aaos.check.report import CheckFailed
from aaos.core.env import Environment
from aaos.core.seeding import rng

RETEST_EVERY = 2
"""Besides every action type the first time it is offered, the legal-actions check re-tests each role's
least-tested type (with fresh choices) every this many steps."""


def check_legal_actions(subject: Subject) -> str:
    driver = subject.driver
    env, policy, observation = driver.start()
    draw = rng("aaos check", "legal", subject.env_id, subject.seed)
    tested: dict[tuple[str, str], int] = {}
    step = 0
    while not env.done:
        where = driver.at(step)
        for role in subject.spec.roles:
            legal = env.legal_actions(role)
            shown = observation["agent_observations"][role].get("legal_actions")
            if digest(shown) != digest(legal):
                raise CheckFailed(f"{role}'s view shows legal_actions {short(shown)} but legal_actions("
                                  f"{role!r}) returns {short(legal)}; {where}")
            chosen = [name for name in sorted(legal) if (role, name) not in tested]
            if not chosen and legal and step % RETEST_EVERY == 0:
                chosen = [min(sorted(legal), key=lambda name: tested[role, name])]
            for name in chosen:
                _accepted(env, role, name, legal[name], draw, where)
                tested[role, name] = tested.get((role, name), 0) + 1
        observation = env.step(policy.act(observation)).observation
        step += 1
    return (f"{sum(tested.values())} offered actions ({len(tested)} role x action type pairs) over {step} steps "
            f"were accepted, and every view's legal_actions matches legal_actions(role)")


def _accepted(env: Environment, role: str, name: str, fields: Any, draw: random.Random, where: str) -> None:
    if not isinstance(fields, Mapping):
        raise CheckFailed(f"legal_actions({role!r})[{name!r}] must map payload fields to choices, got "
                          f"{short(fields)}; {where}")
    payload = {}
    for name_of_field, choices in fields.items():
        if choices == "text":
            payload[name_of_field] = FILLER_TEXT
        elif isinstance(choices, list) and choices:
            payload[name_of_field] = draw.choice(choices)
        else:
            raise CheckFailed(f"legal_actions({role!r})[{name!r}][{name_of_field!r}] must be a non-empty list of "
                              f"choices or 'text', got {short(choices)}; {where}")
    sent = {role: {"action_type": name, "payload": payload}}
    record = env.clone().step(sent).info["action_results"][role]
    if record["status"] == "rejected":
        raise CheckFailed(f"{role}'s offered action {short(sent[role])} was rejected ({record.get('reason')}: "
                          f"{short(record['message'])}); legal_actions must offer only what step() accepts; "
                          f"{where}; then step({short(sent)})")
