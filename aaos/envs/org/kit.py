"""The organisation's kit: everything the generic layers need of this environment (aaos.core.kit)."""

from __future__ import annotations

from aaos.core.env import Environment
from aaos.core.kit import EnvKit, Rendering
from aaos.envs.org import render
from aaos.envs.org.champion import OrgChampion
from aaos.envs.org.env import OrgEnv, org_spec
from aaos.envs.org.generate import write_scenarios
from aaos.envs.org.guardrails import guardrail
from aaos.envs.org.models import OrgObservation, OrgState
from aaos.envs.org.oracle import OrgOracle
from aaos.envs.org.prompting import PROMPTING
from aaos.envs.org.scenario import SCENARIOS


def hidden_ids(env: Environment) -> set[str]:
    """Risks nobody has detected yet and tasks that have not arrived: no observation may name them."""
    assert isinstance(env, OrgEnv)
    world = env.world
    return ({r.id for r in world.risks if r.status == "hidden"}
            | {w.id for w in world.work if w.status == "upcoming"})


KIT = EnvKit(
    environment=OrgEnv,
    spec=org_spec,
    champion=OrgChampion,
    oracle=OrgOracle,
    prompting=PROMPTING,
    rendering=Rendering(role_card=render.role_card, world=render.world, attention=render.attention,
                        report=render.report),
    hidden_ids=hidden_ids,
    guardrail=guardrail,
    observation_model=OrgObservation,
    state_model=OrgState,
    scenario_file=SCENARIOS.info,
    generate_scenarios=write_scenarios,
)
