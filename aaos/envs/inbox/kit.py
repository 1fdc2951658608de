"""The Support Inbox's kit: everything the generic layers need of this environment (aaos.core.kit)."""

from __future__ import annotations

from collections.abc import Iterator

from aaos.core.env import Environment
from aaos.core.kit import EnvKit, Rendering, View
from aaos.envs.inbox import render
from aaos.envs.inbox.champion import InboxChampion
from aaos.envs.inbox.env import InboxEnv, inbox_spec
from aaos.envs.inbox.guardrails import guardrail
from aaos.envs.inbox.models import InboxObservation, InboxState
from aaos.envs.inbox.oracle import InboxOracle
from aaos.envs.inbox.prompting import PROMPTING
from aaos.envs.inbox.scenario import SCENARIOS


def labels(state: View) -> Iterator[tuple[str, str, str | None]]:
    """Each arrived email's category, priority and outcome: the true one and the agent's (its outcome once the
    email is closed)."""
    for email in state["emails"]:
        if email["arrives"] <= state["step"]:
            yield "category", email["true_category"], email["category"]
            yield "priority", email["true_priority"], email["priority"]
            yield "outcome", email["true_outcome"], None if email["status"] == "open" else email["status"]


def hidden_ids(env: Environment) -> set[str]:
    """Emails that have not arrived yet: no observation may name them."""
    assert isinstance(env, InboxEnv)
    return {e.id for e in env.emails if e.arrives > env.step_count}


KIT = EnvKit(
    environment=InboxEnv,
    spec=inbox_spec,
    champion=InboxChampion,
    oracle=InboxOracle,
    prompting=PROMPTING,
    rendering=Rendering(role_card=render.role_card, world=render.world, attention=render.attention,
                        report=render.report),
    hidden_ids=hidden_ids,
    guardrail=guardrail,
    observation_model=InboxObservation,
    state_model=InboxState,
    scenario_file=SCENARIOS.info,
    labels=labels,
    rollout_to_end=True,  # a label is graded when its email closes: a fixed horizon may end before it does
)
