"""The Chief of Staff Arena's kit: everything the generic layers need of this environment (aaos.core.kit)."""

from __future__ import annotations

from aaos.core.env import Environment
from aaos.core.kit import EnvKit, Rendering
from aaos.envs.chief_of_staff import render
from aaos.envs.chief_of_staff.champion import CosChampion
from aaos.envs.chief_of_staff.env import ChiefOfStaffEnv, cos_spec
from aaos.envs.chief_of_staff.guardrails import guardrail
from aaos.envs.chief_of_staff.models import CosObservation, CosState
from aaos.envs.chief_of_staff.oracle import CosOracle
from aaos.envs.chief_of_staff.prompting import PROMPTING
from aaos.envs.chief_of_staff.scenario import SCENARIOS
from aaos.envs.chief_of_staff.tabular import tabular


def hidden_ids(env: Environment) -> set[str]:
    """Requests that have not arrived yet: no observation may name them."""
    assert isinstance(env, ChiefOfStaffEnv)
    return {r.id for r in env.world.requests.values() if r.status == "upcoming"}


KIT = EnvKit(
    environment=ChiefOfStaffEnv,
    spec=cos_spec,
    champion=CosChampion,
    oracle=CosOracle,
    prompting=PROMPTING,
    rendering=Rendering(role_card=render.role_card, world=render.world, attention=render.attention,
                        report=render.report),
    hidden_ids=hidden_ids,
    guardrail=guardrail,
    observation_model=CosObservation,
    state_model=CosState,
    scenario_file=SCENARIOS.info,
    tabular=tabular,
)
